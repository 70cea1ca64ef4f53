"""Component signatures compared by their names first (checking/symbolic.py
`_Signature`, switch `NAMES_FIRST`): equal exactly when the frozensets of
their nodes, with the variables and outputs, are equal (the signature the
switch off makes).  Compared pair by pair over generated programs and their
rewrites, the stored cases, the stored Grappler programs of real graphs,
and mutated copies whose nodes keep their names but change one value (a
constant's sign of zero, a NaN's payload, an attribute, an input); and the
checker's verdicts, reasons and unchanged-component counts with the switch
on and off."""

from __future__ import annotations

import copy
import gzip
import itertools
import json
import re
from pathlib import Path

import pytest

from tfsem.checking import symbolic
from tfsem.checking.check import check_rewrite
from tfsem.oracle.jsonio import load_case, program_from_json, program_to_json
from test_structural_original_memo import _families

TESTS = Path(__file__).parent


def _signatures(p, on: bool, monkeypatch) -> list:
    monkeypatch.setattr(symbolic, "NAMES_FIRST", on)
    return [sig for sig, _ in symbolic.components(p)]


def _agree(programs, monkeypatch) -> int:
    """Every pair of components of the programs (a program with itself
    included): equal with the names first exactly when equal as node
    frozensets; equal ones hash alike.  The number of equal pairs."""
    on = [(k, s) for k, p in enumerate(programs) for s in _signatures(p, True, monkeypatch)]
    off = [(k, s) for k, p in enumerate(programs) for s in _signatures(p, False, monkeypatch)]
    assert [k for k, _ in on] == [k for k, _ in off]
    equal = 0
    for (a, b), (c, d) in zip(itertools.product(on, repeat=2), itertools.product(off, repeat=2)):
        same = a[1] == b[1]
        assert same == (c[1] == d[1]), (a[0], b[0])
        assert (a[1] != b[1]) == (not same)
        if same:
            assert hash(a[1]) == hash(b[1])
            equal += a[0] != b[0]
    # (the checker's intersection: as many unchanged components either way)
    for x, y in itertools.combinations(range(len(programs)), 2):
        fs_on = [frozenset(s for k, s in on if k == i) for i in (x, y)]
        fs_off = [frozenset(s for k, s in off if k == i) for i in (x, y)]
        assert len(fs_on[0] & fs_on[1]) == len(fs_off[0] & fs_off[1])
    return equal


def _mutants(p) -> list:
    """Copies of p, node names kept, each with one node's definition changed."""
    d = program_to_json(p)
    out = []
    for k, node in enumerate(d["nodes"]):
        v = node.get("value")
        if isinstance(v, dict) and v.get("dtype") in ("float32", "float64") \
                and isinstance(v.get("value"), (int, float)):
            for new in (-0.0 if v["value"] == 0 else 0.0, "nan"):
                m = copy.deepcopy(d)
                m["nodes"][k]["value"] = dict(v, value=new)
                out.append(m)
        if len(node.get("inputs", [])) == 2 and node["op"] in ("Sub", "Sub.ftz", "RealDiv"):
            m = copy.deepcopy(d)
            m["nodes"][k]["inputs"] = node["inputs"][::-1]
            out.append(m)
        if node["op"] in ("Add", "Mul"):
            m = copy.deepcopy(d)
            m["nodes"][k]["op"] = {"Add": "Mul", "Mul": "Add"}[node["op"]]
            out.append(m)
    progs = []
    for m in out:
        try:
            progs.append(program_from_json(m))
        except Exception:   # (a mutant that is no valid program)
            continue
    return progs


def test_generated_programs_and_rewrites(monkeypatch):
    equal = 0
    for p, qs in _families(40, rewrites=3, seed=2323, modes=False):
        equal += _agree([p, *qs, *_mutants(p)[:4]], monkeypatch)
    assert equal > 0      # (some components were unchanged: both answers were met)


def _cases():
    for path in sorted((TESTS / "cases").rglob("*.json")):
        try:
            c = load_case(path)
            q = c.rewritten()
        except Exception:   # (not a case, or an invalid rewrite on purpose)
            continue
        yield c, q


def test_stored_cases_and_their_mutants(monkeypatch):
    equal = 0
    n = 0
    for c, q in _cases():
        equal += _agree([c.original, q, *_mutants(c.original)[:3]], monkeypatch)
        n += 1
    assert n > 20 and equal > 0


def test_stored_grappler_programs(monkeypatch):
    for path in sorted((TESTS / "grappler").glob("*.json*")):
        text = (gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz"
                else path.read_text())
        data = json.loads(text)
        if "original" not in data or "rewritten" not in data:
            continue
        p = program_from_json(data["original"])
        qs = [program_from_json(v) for _, v in sorted(data["rewritten"].items())]
        _agree([p, *qs, *_mutants(p)[:2]], monkeypatch)


def test_a_mutant_with_the_same_names_is_not_the_same_component(monkeypatch):
    """A copy whose nodes keep their names but whose constant is -0.0 for
    0.0 (equal as numbers, different nodes) has another signature; an
    equal copy (another object) has the same."""
    base = {"format": "tfsem.program/1", "variables": {}, "feeds": {"a": {"dtype": "float32",
                                                                            "shape": []}},
            "nodes": [{"name": "z", "op": "Const", "value": {"dtype": "float32", "value": 0.0}},
                      {"name": "s", "op": "Add", "inputs": ["$a", "z"]}],
            "outputs": {"out": "s"}}
    p, same = program_from_json(base), program_from_json(copy.deepcopy(base))
    neg = copy.deepcopy(base)
    neg["nodes"][0]["value"]["value"] = -0.0
    q = program_from_json(neg)
    for on in (True, False):
        (sp,), (ss,), (sq,) = (_signatures(x, on, monkeypatch) for x in (p, same, q))
        assert sp == ss and hash(sp) == hash(ss)
        assert sp != sq and not (sp == sq)


#: the verdicts a check's budget may decide (a search that runs to it)
_BUDGET_BOUND = ("unknown", "no-counterexample")


def assert_same_rows(on: list, off: list) -> None:
    """Rows (verdict, reason, unchanged components, flagged, ...) of the
    same checks with the switch on and off: the components' figures, made
    before any search, equal; the verdicts and reasons equal wherever
    neither check's verdict is one a budget decides (a search that runs
    to its 2 s may stop at another σ when the machine is loaded, under one
    switch and not the other), and never `sound` against `unsound`."""
    assert len(on) == len(off)
    for a, b in zip(on, off):
        assert a[2:4] == b[2:4], (a, b)
        assert {a[0], b[0]} != {"sound", "unsound"}, (a, b)
        if a[0] not in _BUDGET_BOUND and b[0] not in _BUDGET_BOUND:
            assert a == b, (a, b)


def _verdict_row(v) -> tuple:
    # (a search that runs to the budget says how many σ it tried: the
    # reason's numbers are the clock's, not the components')
    return (v.verdict, re.sub(r"\d+", "N", v.reason), v.stats.get("unchanged_components"),
            v.stats.get("flagged"), v.counterexample is not None)


@pytest.mark.parametrize("structural", [False])
def test_verdicts_with_names_first_on_and_off(monkeypatch, structural):
    """The enumerating checker (the structural rule off, so that the
    components decide) on the stored cases and generated rewrites: the same
    verdicts, reasons and unchanged-component counts either way."""
    pairs = [(c.original, q, c.semantics, c.observe) for c, q in _cases()
             if not (c.original.has_control_flow or q.has_control_flow)][:40]
    pairs += [(p, q, s, o) for p, qs in _families(8, rewrites=2, seed=77) for q, s, o in qs]
    rows = {}
    for on in (True, False):
        monkeypatch.setattr(symbolic, "NAMES_FIRST", on)
        rows[on] = [_verdict_row(check_rewrite(p, q, s, o, timeout=2, structural=structural,
                                               minimize=False, backends=False))
                    for p, q, s, o in pairs]
    assert_same_rows(rows[True], rows[False])
    assert any(r[2] for r in rows[True])      # (unchanged components were met)
