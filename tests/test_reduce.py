"""Counterexamples as small as they can be (issue 16, item 7): the campaign
reducer shrinks shapes (a scalar where a scalar does) and merges variables,
and `tfsem reduce CASE -o SMALLER` shrinks a user's own failing pair while
keeping its verdict, with the exit statuses of `tfsem check`."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from test_campaigns_fuzz import tfsem_here
from tfsem.campaigns.checks import concrete_check
from tfsem.campaigns.findings import UNSOUND, FindingRecord
from tfsem.campaigns.reduce import reduce_finding, scalarize, shrink_value
from tfsem.checking import check_case
from tfsem.oracle.jsonio import case_from_json, program_from_json, program_to_json
from tfsem.oracle.values import Tensor

TESTS = Path(__file__).resolve().parent


def _prog(nodes, outputs, shape=(3,), variables=("x", "y")):
    t = {"dtype": "int64", "shape": list(shape)}
    return {"format": "tfsem.program/1", "variables": {x: t for x in variables}, "feeds": {"f": t},
            "nodes": nodes, "outputs": outputs}


#: a Read hoisted above the Write it depended on, padded with a second
#: variable, a Const, an Add and an extra output, all of shape [3]
ORIGINAL = [{"name": "v", "op": "Var", "var": "x"}, {"name": "u", "op": "Var", "var": "y"},
            {"name": "w", "op": "Assign", "fn": "Snd", "inputs": ["v", "$f"]},
            {"name": "r", "op": "Read", "inputs": ["v", "^w"]},
            {"name": "k", "op": "Const", "value": [1, 2, 3]},
            {"name": "a", "op": "Add", "inputs": ["r", "k"]},
            {"name": "ry", "op": "Read", "inputs": ["u"]}]
REWRITTEN = [ORIGINAL[0], ORIGINAL[1], {"name": "r", "op": "Read", "inputs": ["v"]},
             {"name": "w", "op": "Assign", "fn": "Snd", "inputs": ["v", "$f", "^r"]}, *ORIGINAL[4:]]
OUTPUTS = {"o": "a", "c": "k", "d": "ry"}


def big_case() -> dict:
    return {"format": "tfsem.case/1", "semantics": "atomic", "observe": "outputs+state",
            "original": _prog(ORIGINAL, OUTPUTS), "rewritten": _prog(REWRITTEN, OUTPUTS)}


def tfsem(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tfsem", *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def test_shrink_value_keeps_the_first_elements_and_pads_with_zeros():
    v = Tensor(np.array([[5, 6], [7, 8]]), "int64")
    assert shrink_value(v, ()) == Tensor(np.int64(5), "int64")
    assert shrink_value(v, (3,)) == Tensor(np.array([5, 6, 7]), "int64")
    assert shrink_value(Tensor(np.array([1]), "int64"), (3,)) == Tensor(np.array([1, 0, 0]), "int64")


def test_scalarize_makes_every_type_and_const_scalar():
    p = scalarize(program_from_json(_prog(ORIGINAL, OUTPUTS)), ("all",))
    assert all(t.shape == () for t in [*p.variables.values(), *p.feeds.values()])
    assert p.node["k"].attrs["value"].shape == ()


def test_campaign_reducer_reaches_scalars_and_one_variable():
    """The campaign's reducer with the real pass run (here: the rewrite is
    fixed, the hoisted Read) and the concrete check at σ."""
    original = program_from_json(_prog(ORIGINAL, OUTPUTS))
    rewritten_of = {}

    def hoist(p):  # the rewrite: the Read before the Write, edge flipped
        j = program_to_json(p)
        for n in j["nodes"]:
            if n["op"] == "Read" and any(i.startswith("^") for i in n.get("inputs", [])):
                gone = [i[1:] for i in n["inputs"] if i.startswith("^")]
                n["inputs"] = [i for i in n["inputs"] if not i.startswith("^")]
                for m in j["nodes"]:
                    if m["name"] in gone:
                        m["inputs"] = m.get("inputs", []) + ["^" + n["name"]]
        return program_from_json(j)

    def evaluate(p, feeds, init):
        r = hoist(p)
        v = concrete_check(p, r, feeds, init, "atomic", "outputs+state")
        if v["verdict"] != "unsound":
            return None
        rewritten_of[id(p)] = r
        return FindingRecord(pass_name="hoist", kind=UNSOUND, semantics="atomic", observe="outputs+state",
                             original=program_to_json(p), rewritten=program_to_json(r), verdict=v,
                             feeds={k: x.array.tolist() for k, x in feeds.items()},
                             init={k: x.array.tolist() for k, x in init.items()})

    feeds = {"f": Tensor(np.array([0, 0, 0]), "int64")}
    init = {"x": Tensor(np.array([1, 1, 1]), "int64"), "y": Tensor(np.array([0, 0, 0]), "int64")}
    start = evaluate(original, feeds, init)
    assert start is not None
    reduced, tried = reduce_finding(original, feeds, init, start, evaluate, lambda r: True,
                                    time.monotonic() + 30)
    p = program_from_json(reduced.original)
    assert len(p.nodes) == 3 and len(p.variables) == 1, reduced.original
    assert all(t.shape == () for t in [*p.variables.values(), *p.feeds.values()])
    # the reduced finding is real: its own σ shows it
    assert all(np.asarray(v).shape == () for v in reduced.feeds.values())


def test_tfsem_reduce_shrinks_a_users_pair_and_keeps_its_verdict(tmp_path, capsys):
    case = tmp_path / "big.case.json"
    case.write_text(json.dumps(big_case()))
    small = tmp_path / "small.case.json"
    r = tfsem("reduce", case, "-o", small, "--budget", "60s")
    assert r.returncode == 1, r.stdout + r.stderr  # like check: unsound
    assert "verdict unsound kept" in r.stdout and f"tfsem check {small}" in r.stdout
    data = json.loads(small.read_text())
    got = case_from_json(data)
    assert len(got.original.nodes) == 3 and len(got.original.variables) == 1
    assert all(t.shape == () for t in got.original.variables.values())
    # the written case reproduces: the offered command gives the promised result
    assert check_case(got).verdict == "unsound" and data["expect"] == "unsound"
    # (by tfsem.cli.main in this process: the unsound verdict's TensorFlow
    # replay reuses this process's TensorFlow, not a fresh import)
    check = tfsem_here(capsys, "check", small)
    assert check.returncode == 1 and check.stdout.startswith("unsound")
    # the part that differs is still an output, as in the case given
    assert check_case(case_from_json(big_case())).differs.keys() == check_case(got).differs.keys()


def test_tfsem_reduce_on_a_case_that_does_not_fail_writes_nothing(tmp_path):
    sound = tmp_path / "sound.case.json"
    sound.write_text(json.dumps({**big_case(), "rewritten": _prog(ORIGINAL, OUTPUTS)}))
    out = tmp_path / "out.json"
    r = tfsem("reduce", sound, "-o", out)
    assert r.returncode == 0 and "nothing to reduce" in r.stdout and not out.exists()


def test_tfsem_reduce_bad_input_names_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "tfsem.program/1", "nodes": [{"name": "a", "op": "Bogus"}]}')
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_prog(ORIGINAL, OUTPUTS)))
    r = tfsem("reduce", bad, good, "-o", tmp_path / "o.json")
    assert r.returncode == 2 and str(bad) in r.stderr and "Traceback" not in r.stderr


# ---------------------------------------------------------------------------
# Edits that take a node away while the bug stays (issue 27: at most 5 nodes)


def test_a_const_becomes_a_feed_holding_its_value():
    from tfsem.campaigns.reduce import _const_to_feed
    from tfsem.oracle import program as P
    p = P.program([P.var("v", "x"), P.const("c", 3), P.write("w", "v", "c"), P.read("r", "v", "^w")],
                  {"out": "r"}, ["x"])
    q, feed, value = _const_to_feed(p, "c")
    assert "c" not in q.node and len(q.nodes) == 3 and value == Tensor(np.int64(3))
    assert q.node["w"].data_inputs[1] == P.FeedIn(feed) and q.feeds[feed].dtype == "int64"
    q.validated()
    # fetched, or waited for: not a pure value
    assert _const_to_feed(p.replace(outputs={"c": P.DataIn("c")}), "c") is None
    waited = P.program([P.const("c", 3), P.var("v", "x", "^c")], {}, ["x"])
    assert _const_to_feed(waited, "c") is None


def test_an_assign_nothing_waits_for_gives_way_to_its_value_fetched():
    from tfsem.campaigns.reduce import _fetch_assigned
    from tfsem.oracle import program as P
    p = P.program([P.var("vx", "x"), P.read("r", "vx"), P.var("vy", "y"), P.assign("a", "Add", "vy", "r"),
                   P.const("k", 5), P.write("w", "vx", "k", "^r")], {}, ["x", "y"])
    q = _fetch_assigned(p, "a")
    assert "a" not in q.node and q.outputs == {"a_value": P.DataIn("r")}
    assert _fetch_assigned(p, "w") is None or "w" not in _fetch_assigned(p, "w").node
    waited = p.replace(nodes=p.nodes + (P.read("r2", "vx", "^a"),))
    assert _fetch_assigned(waited, "a") is None


def test_a_read_used_as_a_value_becomes_a_feed_of_the_initial_value():
    from tfsem.campaigns.reduce import _read_to_feed
    from tfsem.oracle import program as P
    p = P.program([P.var("v", "x"), P.const("c", 4), P.write("w", "v", "c"), P.read("r", "v", "^w"),
                   P.assign("a", "Sub", "v", "r"), P.read("r2", "v", "^r")], {"out": "r2"}, ["x"])
    q, feed, value = _read_to_feed(p, "r", {"x": Tensor(np.int64(7))})
    assert "r" not in q.node and value == Tensor(np.int64(7))
    assert q.node["a"].data_inputs[1] == P.FeedIn(feed)
    assert P.ControlIn("w") in q.node["r2"].inputs     # r2 still waits for what r waited for
    q.validated()
    assert _read_to_feed(p, "r2", {}) is None           # fetched


def test_reducer_sweeps_cost_one_check_per_edit_not_per_edit_and_node():
    """A failure that needs 2 of 14 nodes: the reducer gets there in a few
    sweeps of one check per edit, far fewer than starting over after each
    kept edit (about 14 * 14 / 2 deletions alone)."""
    from tfsem.oracle import program as P
    nodes = [P.var("v", "x"), P.const("c", 1), P.write("w", "v", "c")]
    nodes += [P.const(f"k{i}", i) for i in range(11)]
    padded = P.program(nodes, {f"o{i}": f"k{i}" for i in range(11)}, ["x"])

    def evaluate(p, feeds, init):
        writes = any(n.op == "Assign" for n in p.nodes)
        return _record(padded, p) if writes else None

    def _record(_, p):
        return FindingRecord(pass_name="t", kind=UNSOUND, semantics="atomic", observe="outputs+state",
                             original=program_to_json(p), verdict={"differs": {"variable": "x"}})

    reduced, tried = reduce_finding(padded, {}, {}, _record(None, padded), evaluate, lambda r: True,
                                    time.monotonic() + 20)
    assert reduced.size == 2 and tried < 70, (reduced.size, tried)
