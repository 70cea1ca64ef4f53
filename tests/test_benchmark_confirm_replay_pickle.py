"""benchmarks/confirm_replay.py's recording: the Functions a program holds
(the registry's, whose implementations may be local functions, the
flush-to-zero variants among them, and those an op keeps in its module)
are written as where they live and read back as the same objects."""

import pickle
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import confirm_replay as CR  # noqa: E402
from tfsem.oracle import functions as fns  # noqa: E402
from tfsem.oracle.opdefs import math as M, nn as N  # noqa: E402


def _held():
    # Transpose: an array-family op, its impl a local function (`_op`'s on_host)
    # (FloorMod's module-level Function: the registry holds its kernel's
    # fallback under that name)
    return [fns.get("Transpose"), M._FTZ["Mul"], M._FTZ["Max"], N._BIAS_ADD_FTZ,
            fns.get("Add"), M._floormod]


def test_plain_pickle_cannot_write_them():
    # (what the recording met: a local implementation has no name to pickle)
    with pytest.raises((AttributeError, pickle.PicklingError)):
        pickle.dumps(fns.get("Transpose"))


def test_functions_come_back_as_the_same_objects(tmp_path):
    held = _held()
    calls = [dict(kind="dataflow", key=("g", "opt"), args=(held, {"x": 1.5}), kwargs={})]
    path = tmp_path / "calls.pkl"
    CR.dump_calls(calls, str(path))
    back = CR.load_calls(str(path))
    assert back[0]["key"] == ("g", "opt")
    assert back[0]["args"][1] == {"x": 1.5}
    got = back[0]["args"][0]
    assert len(got) == len(held)
    assert all(a is b for a, b in zip(got, held))


def test_every_kept_function_has_a_place():
    where = CR._function_tables()
    for f in _held():
        assert CR._function_at(*where[id(f)]) is f
