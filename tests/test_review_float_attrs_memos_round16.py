"""Adversarial review of this round's correctness changes: float attributes
kept by their bits (oracle/float_attrs.py, functions.attrs_key, the
structural rule's key, graph import and export, the MLIR reader, the
kernels' child), the canonical-run memo's purge (checking/canonical_memo.py),
the one budgeted replay on TensorFlow (tfsem/commands), and the memory of
refused σ in minimization (checking/minimize.py).

An `xfail(strict=True)` test shows a bug (its reason says which, and how
bad); a plain test pins what held under attack.  No TensorFlow needed."""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import struct
import threading
import time
import weakref
from pathlib import Path

import numpy as np
import pytest

from tfsem.checking import canonical_memo as M
from tfsem.checking import check_rewrite
from tfsem.checking import minimize as mini
from tfsem.cli import main
from tfsem.graphdef.exporter import export_graph
from tfsem.graphdef.mlir import load_mlir
from tfsem.graphdef.proto import encode, parse_text
from tfsem.oracle import functions as fns
from tfsem.oracle.float_attrs import float32_word
from tfsem.oracle import program as P
from tfsem.oracle.jsonio import dumps, program_from_json, program_to_json
from tfsem.oracle.values import Error, Tensor

from test_graphdef_float_attribute_bits import (OLD_FILE, alpha, imported, leaky_relu_graph,
                                                leaky_relu_text, word_of)
from test_mlir_float_attribute_bits import module

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "tests" / "cases" / "pass_hoist_reads_atomic.json"


def nan64(word: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", word))[0]


#: Python's NaN, and the dict a user's attribute may hold that attrs_key
#: writes it as (its 64 bits, little-endian, in hex)
NAN = nan64(0x7FF8000000000000)
NAN_SHAPED_DICT = {"float_bits": struct.pack("<d", NAN).hex()}


# ---------------------------------------------------------------- attrs_key

@pytest.fixture
def user_pick(monkeypatch):
    """UserPick(x): x's shape filled with the attribute `value` where it is
    a float, with 2.0 where it is a tensor, 1.0 where it is anything else
    (a user's function that reads its attribute)."""
    def pick(xp, args, attrs):
        v = attrs["value"]
        fill = v if isinstance(v, float) else 2.0 if isinstance(v, Tensor) else 1.0
        return (np.full(np.shape(args[0]), fill, np.float32),)
    monkeypatch.setitem(fns._REGISTRY, "UserPick", fns.Function("UserPick", 1, 1, pick,
                                                                 casts=True))


def _picked(value) -> P.Program:
    return P.program([P.const("x", Tensor(np.array([1.0], np.float32))),
                      P.apply("f", "UserPick", "x", value=value)], {"out": "f"})


# (fixed: attrs_key's two forms) it showed a false sound: attrs_key writes a
# float NaN as {"float_bits": HEX} inside the same JSON a user's dict
# attribute is written in, so the NaN and the dict {"float_bits": HEX} give
# one key: the programs are one (Program.__eq__), 'sound: the rewritten
# program is the original', where the function gives NaN and 1.0
def test_a_nan_attribute_and_a_dict_shaped_like_its_key_are_two_programs(user_pick):
    p, q = _picked(NAN), _picked(dict(NAN_SHAPED_DICT))
    v = check_rewrite(p, q, timeout=30)
    assert v.verdict != "sound", v.describe()
    assert p != q


# (fixed: attrs_key's two forms) it showed a false sound (before this round
# too): attrs_key writes a tensor attribute as its JSON value, the key of a
# user's dict of that shape ({"dtype": "float32", "value": [1.0]}): one
# program, 'sound', where the function gives 2.0 and 1.0
def test_a_tensor_attribute_and_a_dict_shaped_like_its_json_are_two_programs(user_pick):
    from tfsem.oracle.jsonio import value_to_json
    t = Tensor(np.array([1.0], np.float32))
    p, q = _picked(t), _picked(value_to_json(t))
    v = check_rewrite(p, q, timeout=30)
    assert v.verdict != "sound", v.describe()
    assert p != q


# (fixed: attrs_key's two forms) it showed a false sound (the program
# format's reader): a tf_attrs object other than {"float": TEXT} is taken as
# it is, and attrs_key writes it as a NaN alpha's key: `tfsem check` of
# LeakyRelu alpha NaN against alpha {"float_bits": ...} says 'sound' (the
# second cannot even run on TensorFlow's kernel)
def test_a_program_file_with_a_dict_shaped_like_a_nans_key_is_not_the_nan(tmp_path, capsys):
    def write(name: str, alpha_json) -> str:
        doc = json.loads(json.dumps(OLD_FILE))
        doc["nodes"][1]["tf_attrs"] = {"T": "DT_FLOAT", "alpha": alpha_json}
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        return str(path)

    p = write("p.json", {"float": "nan"})
    q = write("q.json", dict(NAN_SHAPED_DICT))
    rc = main(["check", p, q, "--no-tensorflow"])
    out = capsys.readouterr().out
    assert rc in (0, 1, 2, 3)
    assert not out.startswith("sound"), out


# (fixed: attrs_key's two forms) it showed a false sound (a pass): the CSE
# pass keys nodes by attrs_key, so a node of a NaN attribute and one of a
# dict {"float_bits": HEX} are merged
def test_cse_keeps_a_nan_attribute_apart_from_a_dict_shaped_like_its_key(user_pick):
    from tfsem.rewrites.cse import cse
    p = P.program([P.const("x", Tensor(np.array([1.0], np.float32))),
                   P.apply("f", "UserPick", "x", value=NAN),
                   P.apply("g", "UserPick", "x", value=dict(NAN_SHAPED_DICT))],
                  {"a": "f", "b": "g"})
    assert {"f", "g"} <= set(cse(p).node)


def test_keys_of_zeros_infinities_and_nan_text_stay_apart():
    """(held) -0.0 and 0.0, inf and -inf, a NaN and the strings "nan" and
    "NaN", 1 and 1.0 and True: each its own key, at any depth."""
    key = fns.attrs_key
    values = [0.0, -0.0, float("inf"), float("-inf"), NAN, nan64(0xFFF8000000000000), "nan",
              "NaN", "-nan", 1, 1.0, True, {"float": "nan"}]
    for wrap in (lambda v: {"a": v}, lambda v: {"tf_attrs": {"alpha": v}},
                 lambda v: {"l": [2.0, v]}):
        keys = [key(wrap(v)) for v in values]
        assert len(set(keys)) == len(keys), keys


# ---------------------------------------------------------------- the program format

@pytest.mark.parametrize("text", ["nan", "0x7fc00000"])
# (fixed: the writer refuses such a dict, naming the node and attribute) it
# showed a wrong round trip (low): a tf_attrs value that is a dict {"float":
# TEXT} in memory (a pass's) is written as it is and read back as a float
# ('nan'), or not read back at all ('0x7fc00000': the reader asks for
# 'nan'): the writer should refuse such a dict
def test_a_dict_shaped_like_the_float_object_survives_the_program_file(text):
    p = P.program([P.const("x", Tensor(np.array([-1.0], np.float32))),
                   P.apply("l", fns.opaque_name("LeakyRelu", 1, 1), "x",
                           tf_attrs={"T": "DT_FLOAT", "alpha": {"float": text}})],
                  {"out": "l"})
    try:
        text = dumps(program_to_json(p))
    except (ValueError, P.ProgramError) as exc:   # (the writer refusing it is a fix too)
        assert "alpha" in str(exc) and "float" in str(exc)
        return
    assert program_from_json(json.loads(text)) == p


def test_nan_text_in_a_string_attribute_stays_a_string():
    """(held) A string whose text is "nan", "-nan" or "0x7fc00001" is a string
    after the file, never a float; a float NaN in a list and -0.0 keep their bits."""
    attrs = {"T": "DT_FLOAT", "s": "nan", "t": ["-nan", "0x7fc00001"],
             "fl": [nan64(0xFFF8002460000000), -0.0, 5e-324]}
    p = P.program([P.const("x", Tensor(np.array([-1.0], np.float32))),
                   P.apply("l", fns.opaque_name("LeakyRelu", 1, 1), "x", tf_attrs=attrs)],
                  {"out": "l"})
    q = program_from_json(json.loads(dumps(program_to_json(p))))
    got = q.node["l"].attrs["tf_attrs"]
    assert got["s"] == "nan" and got["t"] == ["-nan", "0x7fc00001"]
    assert [struct.pack("<d", x) for x in got["fl"]] == [struct.pack("<d", x) for x in attrs["fl"]]
    assert q == p


# ---------------------------------------------------------------- graph import and export

SNAN, SNAN_QUIETED = 0x7F800001, 0x7FC00001


def test_a_signalling_nan_attribute_is_imported_bit_for_bit():
    """(was a strict xfail: a binary GraphDef's float attribute was widened
    by the CPU, which quiets a signalling NaN, so two graphs differing only
    there imported as one program.)  The float is the float32's exact
    widening (struct's '<f' would quiet it again: the bits are compared)."""
    a = alpha(imported(leaky_relu_graph(SNAN)))
    assert float32_word(a) == SNAN
    assert struct.unpack("<Q", struct.pack("<d", a))[0] == 0x7FF0000020000000
    assert imported(leaky_relu_graph(SNAN)) != imported(leaky_relu_graph(SNAN_QUIETED))


def test_export_writes_an_mlir_signalling_nan_back_bit_for_bit(tmp_path):
    """(was a strict xfail: export narrowed the float by struct's '<f',
    which quiets it.)"""
    path = tmp_path / "m.mlir"
    path.write_text(module("0x7F800001 : f32"))
    data = encode("GraphDef", export_graph(load_mlir(path)))
    assert struct.pack("<I", SNAN) in data


def test_zeros_subnormals_and_nan_signs_import_as_different_programs_and_equal_bits_as_one():
    """(held) Graphs differing only in alpha's bits are different programs
    and never `sound` (no kernel: LeakyRelu cannot run, `unknown`); the
    same bits twice are one program."""
    words = [0x00000000, 0x80000000, 0x00000001, 0x00000002, 0x7F800000, 0xFF800000,
             0x7FC00000, 0xFFC00000]
    programs = [imported(leaky_relu_graph(w)) for w in words]
    assert all(p != q for i, p in enumerate(programs) for q in programs[i + 1:])
    assert check_rewrite(programs[0], programs[1], timeout=30).verdict != "sound"
    for w, p in zip(words, programs):
        assert imported(leaky_relu_graph(w)) == p
    text = imported(parse_text("GraphDef", leaky_relu_text("-0.0")))
    assert text == programs[1] and text != programs[0]


def test_an_old_files_nan_text_exports_as_the_string_its_docs_say():
    """(held, as docs/program-format.md says) A file written before the
    float object holds alpha as the string "nan": export has no OpDef and
    writes a string attribute (TensorFlow then refuses the graph, naming it)."""
    p = program_from_json(json.loads(json.dumps(OLD_FILE)))
    (node,) = [n for n in export_graph(p)["node"] if n["op"] == "LeakyRelu"]
    assert node["attr"]["alpha"] == {"s": b"nan"}


# (fixed: such a list is written as the floats it holds) it showed a wrong
# export (low, before this round too, not in the docs): an old file's list
# of floats and 'inf'/'-inf' strings ([1.0, "inf", "-inf"]) is dropped from
# the exported node without a word, where a single 'nan' is written (as a
# string) and TensorFlow names it; a dropped attribute with a default runs
# as that default
def test_an_old_files_mixed_float_list_is_not_dropped_by_export():
    p = program_from_json(json.loads(json.dumps(OLD_FILE)))
    (node,) = [n for n in export_graph(p)["node"] if n["op"] == "LeakyRelu"]
    assert "bounds" in node["attr"]
    got = node["attr"]["bounds"]["list"]["f"]
    assert got[0] == 1.0 and got[1:] == [float("inf"), float("-inf")], got


# (fixed: a decimal literal of a narrower float type is the nearest float of
# that type) it showed a false unknown (before this round too): the MLIR
# reader keeps a decimal f32 literal as the float64 it writes (2.000000e-01
# : f32 -> 0.2), not the float32 MLIR means (0.2000000029802...), so a graph
# and its MLIR form are two programs and their check is 'no-counterexample',
# not 'sound'
def test_an_mlir_decimal_f32_attribute_is_its_float32(tmp_path):
    path = tmp_path / "m.mlir"
    path.write_text(module("2.000000e-01 : f32"))
    (node,) = [n for n in load_mlir(path).nodes if n.op.startswith("tf.LeakyRelu/")]
    a = node.attrs["tf_attrs"]["alpha"]
    assert a == struct.unpack("<f", struct.pack("<f", 0.2))[0]


# ---------------------------------------------------------------- the canonical-run memo

def _const_program(v: int) -> P.Program:
    return program_from_json({
        "format": "tfsem.program/1", "variables": {}, "feeds": {},
        "nodes": [{"name": "c", "op": "Const", "value": [v]}], "outputs": {"o": "c"}})


@pytest.fixture
def fresh_memo():
    M.clear()
    yield
    M.clear()


def _bytes_agree() -> bool:
    return M._memo_bytes == sum(e[4] for e in M._memo.values()) and M._memo_bytes >= 0


def test_a_program_collected_in_another_thread_while_this_one_holds_the_lock(fresh_memo):
    """(held) The callback, in another thread, finds the lock held and
    leaves the runs to the holder, which drops them when it lets go: no
    wait, no deadlock, nothing left behind."""
    p = _const_program(3)
    o, _ = M.canonical_outcome(p, {}, {}, "atomic", "outputs")
    held = weakref.ref(dict(o.outputs)["o"].array)
    del o
    box = [p]
    del p
    with M._locked:
        t = threading.Thread(target=lambda: (box.clear(), gc.collect()))
        t.start()
        t.join(10)
        assert not t.is_alive()
        assert len(M._memo) == 1 and M._dead and held() is not None
    assert held() is None and not M._memo and M._memo_bytes == 0 and not M._dead


def test_runs_evicted_before_their_program_dies_are_not_counted_twice(fresh_memo, monkeypatch):
    """(held) An entry the byte limit evicted, whose program dies later,
    takes nothing from the bytes of the live entries."""
    first = _const_program(0)
    M.canonical_outcome(first, {}, {}, "atomic", "outputs")
    size = next(iter(M._memo.values()))[4]
    monkeypatch.setattr(M, "MEMO_BYTES", 4 * size)
    live = [first] + [_const_program(v) for v in range(1, 7)]
    for p in live[1:]:
        M.canonical_outcome(p, {}, {}, "atomic", "outputs")
        assert _bytes_agree()
    del p
    assert len(M._memo) == 4
    for _ in range(3):          # the evicted ones die first, then the others
        live.pop(0)
        gc.collect()
        assert _bytes_agree() and len(M._memo) == 4
    while live:
        live.pop(0)
        gc.collect()
        assert _bytes_agree()
    assert not M._memo and M._memo_bytes == 0


def test_an_id_shared_by_two_programs_gives_each_its_own_run(fresh_memo, monkeypatch):
    """(held) Every program given one id(), alive or dead: the entry of one
    never answers for another (the weak reference must give the very
    program), and the bytes stay those of the entries.  (The stand-in id()
    holds in the purge too: there every entry is then taken for the dead
    one's, which only drops runs.)"""
    monkeypatch.setattr(M, "id", lambda obj: 42, raising=False)
    keep = []
    for v in range(6):
        p = _const_program(v)
        o, _ = M.canonical_outcome(p, {}, {}, "atomic", "outputs")
        assert dict(o.outputs)["o"] == Tensor(np.array([v])), v
        if v % 2:
            keep.append(p)
        del p, o
        gc.collect()
        assert _bytes_agree() and len(M._memo) <= 1
    for v, p in zip((1, 3, 5), keep):
        o, _ = M.canonical_outcome(p, {}, {}, "atomic", "outputs")
        assert dict(o.outputs)["o"] == Tensor(np.array([v])), v


# ---------------------------------------------------------------- the replay's words

# (fixed: the watchdog writes `confirmed` without TensorFlow where the
# replay it writes did not confirm) it showed a wrong message (before this
# round too): `tfsem check` adds 'tensorflow' to the verdict's `confirmed`
# before it makes the replay's JSON (seconds on a large graph's outcome),
# and the watchdog, firing then, writes that verdict with the replay 'not
# replayed on TensorFlow within the time budget: ... ran out while
# TensorFlow was imported or ran the graph': confirmed by TensorFlow and not
# replayed, in one report
def test_the_watchdog_never_writes_a_confirmation_beside_a_replay_cut(monkeypatch, capsys):
    from tfsem.backends import tensorflow as tfb
    from tfsem.checking import check_case
    from tfsem.commands import grappler as command
    from tfsem.commands.check import replay_on_tensorflow, watchdog_report
    from tfsem.oracle.jsonio import load_case

    real_find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: real_find("json") if name == "tensorflow"
                        else real_find(name, *a, **k))
    # (a replay that gives what it is asked for: the counterexample's
    # outcome, then each of the original's witnesses' own, which the
    # replay of the original's side compares: backends/tensorflow.py
    # `with_original`)
    monkeypatch.setattr(tfb, "replay_program",
                        lambda p, cx, **k: tfb.Replay(True, "TensorFlow's outcome is the "
                                                      "counterexample's", "", version="2.21",
                                                      outcome=cx.outcome))
    in_json, go_on = threading.Event(), threading.Event()
    real_json = command.replay_json

    def slow_json(rep):           # a large outcome's JSON, in the main thread
        if rep.confirmed:
            in_json.set()
            go_on.wait(10)
        return real_json(rep)

    monkeypatch.setattr(command, "replay_json", slow_json)
    case = load_case(CASE)
    verdict = check_case(case, timeout=30)
    assert verdict.verdict == "unsound"
    args = argparse.Namespace(timeout=2.0, json=True, html=None, tensorflow=True,
                              rewritten=None, semantics="atomic", observe="outputs+state",
                              float_mode="exact")
    worker = threading.Thread(target=replay_on_tensorflow,
                              args=(case, verdict, args, time.monotonic() + 60))
    worker.start()
    try:
        assert in_json.wait(30)
        # the watchdog at T: the stage is the replay, no replay recorded yet
        progress = {"stage": "the replay on TensorFlow", "verdict": verdict}
        watchdog_report(args, progress, False)
    finally:
        go_on.set()
        worker.join(30)
    data = json.loads(capsys.readouterr().out)
    cut = data.get("tensorflow_replay", {}).get("status") == "not-replayed"
    assert not (cut and "tensorflow" in data["confirmed"]), (data["confirmed"],
                                                              data["tensorflow_replay"])


# ---------------------------------------------------------------- minimization

def _t(values, dtype="float32"):
    return Tensor(np.array(values, dtype=dtype), dtype)


def test_a_sigma_key_that_collides_everywhere_only_skips_steps(monkeypatch):
    """(held) Every σ given one key: after the first refusal no step is
    asked, and the σ returned is still one `confirm` accepted (or the σ
    given): a collision can cost minimization, never a σ shown."""
    monkeypatch.setattr(mini, "_sigma_key", lambda sigma: 0)
    init = {f"x{i}": _t(np.full(3, float(i + 2))) for i in range(6)}
    init["e"] = Error("uninitialized")
    accepted = []

    def confirm(sigma):
        ok = bool(np.any(sigma[1]["x2"].array)) and bool(np.any(sigma[1]["x4"].array))
        if ok:
            accepted.append({k: v for k, v in sigma[1].items()})
        return ok

    stats: dict = {}
    _, out = mini.minimize_concrete(({}, dict(init)), confirm, time.monotonic() + 30,
                                    stats=stats)
    assert stats["finished"] and stats.get("repeated", 0) >= 1
    assert out == init or any(out == a for a in accepted)
    assert confirm(({}, out))


def test_the_sigma_key_is_stable_and_tells_bits_apart():
    """(held) Within a run: equal bits made twice, an Error, a NaN of numpy's
    bits give one key; -0.0, a NaN's payload and sign, a dtype give others."""
    def sigma(x):
        return ({"f": _t([1.0])}, {"v": x, "e": Error("uninitialized")})

    key = mini._sigma_key
    assert key(sigma(_t([0.0, np.nan]))) == key(sigma(_t([0.0, np.nan])))
    variants = [_t([0.0, 1.0]), _t([-0.0, 1.0]), _t([0.0, 1.0], "float64"),
                Tensor(np.array([0, 0x7FC00000], np.uint32).view(np.float32), "float32"),
                Tensor(np.array([0, 0x7FC00001], np.uint32).view(np.float32), "float32"),
                Tensor(np.array([0, 0xFFC00000], np.uint32).view(np.float32), "float32")]
    keys = [key(sigma(v)) for v in variants]
    assert len(set(keys)) == len(keys)
