"""The rule "loop frames unchanged" (checking/structural_loops.py): every
`sound` it gives is checked against the reference control-flow engine's
outcome sets (oracle/controlflow.py) on generated programs with loops and
rewrites of them outside the loops, sound and not (control edges dropped,
among them those from a root write to a loop's Enter and from an Exit to a
root write; Identities inserted; bodies changed); the rewrites that break a
condition are refused and, where they are unsound, refuted by the reference.
On the real-graphs corpus: Grappler's arithmetic optimizer on keras_lstm_loop
is proved, and a rewrite of keras_gru_loop outside its loops.
A few examples by default; many more under the nightly profile."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.checking import structural_loops
from tfsem.checking.check import check_rewrite
from tfsem.checking.structural_loops import loops_unchanged
from tfsem.generators.control_flow import control_flow_programs
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded
from tfsem.oracle.jsonio import program_from_json, program_to_json
from tfsem.oracle.program import ProgramError
from tfsem.oracle.values import UNINITIALIZED, Error, Tensor

MODES = ("atomic", "decomposed")
OBSERVE = ("outputs+state", "outputs")
NIGHTLY = settings.get_current_profile_name() == "nightly"
FEW = settings(max_examples=100 if NIGHTLY else 4, deadline=None, database=None,
               derandomize=not NIGHTLY, suppress_health_check=list(HealthCheck))
CORPUS = Path(__file__).parent / "grappler" / "keras_recurrent_loops.json.gz"


def i64(v: int) -> Tensor:
    return Tensor(v, "int64")


def sigmas(p):
    """σ of small values, a trip-count feed among them (0-4 trips), one
    variable uninitialized in the last."""
    out = []
    for k, v in enumerate((0, 1, 2, -1, 3)):
        feeds = {f: Tensor(v > 0, "bool") if p.feed_type(f).dtype == "bool" else i64(abs(v) % 5)
                 for f in p.feed_names}
        init = {x: (Error(UNINITIALIZED) if k == 3 and j == 0 else i64(v + 2 * j))
                for j, x in enumerate(sorted(p.variables))}
        out.append((feeds, init))
    return out


def refines(p, q, mode, observe, seconds=5.0) -> tuple[bool, int]:
    """(Outcomes(q, σ) ⊆ Outcomes(p, σ) at every σ compared, how many σ
    were compared; a σ whose outcome sets take more than `seconds` each
    is not compared)."""
    compared = 0
    for feeds, init in sigmas(p):
        try:
            mine = set(outcome_set(q, feeds, init, mode, observe, max_seconds=seconds))
            theirs = set(outcome_set(p, feeds, init, mode, observe, max_seconds=seconds))
        except BudgetExceeded:
            continue
        compared += 1
        if not mine <= theirs:
            return False, compared
    return True, compared


def edited(p, edit):
    """p's JSON changed by edit(raw) in place; None when invalid."""
    raw = program_to_json(p)
    if edit(raw) is False:
        return None
    try:
        return program_from_json(raw)
    except ProgramError:
        return None


def root_nodes(p) -> list[str]:
    fr = p.frames
    return [n.name for n in p.nodes if not fr.get(n.name) and n.op != "Enter"]


def rewrites(p) -> list[tuple[str, object]]:
    """Rewrites outside the loops, sound and unsound: each control edge of a
    root node or top-level Enter dropped; an Identity put on each data input
    of a root node or Enter; both (an Identity, then an edge dropped); a
    constant of a loop body changed."""
    out = []
    fr = p.frames
    raw = program_to_json(p)
    outside = {n["name"] for n in raw["nodes"] if not fr.get(n["name"])}
    for k, node in enumerate(raw["nodes"]):
        if node["name"] not in outside:
            if node.get("op") == "Const" and fr.get(node["name"]):
                def body(r, k=k):
                    r["nodes"][k]["value"] = int(r["nodes"][k]["value"]) + 1
                q = edited(p, body)
                if q is not None:
                    out.append((f"body constant {node['name']}", q))
            continue
        for j, inp in enumerate(node.get("inputs", [])):
            if inp.startswith("^"):
                def drop(r, k=k, j=j):
                    del r["nodes"][k]["inputs"][j]
                q = edited(p, drop)
                if q is not None:
                    out.append((f"drop {inp} of {node['name']}", q))
            elif not inp.startswith("$") and node.get("op") not in ("Read", "Assign", "Var") \
                    or (node.get("op") == "Assign" and j == 1):
                def ident(r, k=k, j=j):
                    name = f"id{k}_{j}"
                    r["nodes"].append({"name": name, "op": "Identity",
                                       "inputs": [r["nodes"][k]["inputs"][j]]})
                    r["nodes"][k]["inputs"][j] = name
                q = edited(p, ident)
                if q is not None:
                    out.append((f"Identity on {inp} into {node['name']}", q))
    return out


# ---------------------------------------------------------------------------
# Every proof against the reference


@FEW
@given(control_flow_programs(max_blocks=3 if NIGHTLY else 2, kinds=("loop",),
                             others=("plain", "race", "loop")),
       st.sampled_from(MODES), st.sampled_from(OBSERVE), st.data())
def test_every_proof_agrees_with_the_reference(p, mode, observe, data):
    candidates = rewrites(p)
    if not candidates:
        return
    picked = data.draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=3,
                                unique_by=lambda c: c[0]), label="rewrites")
    for name, q in picked:
        r = loops_unchanged(p, q, mode, observe)
        if r.proved:
            ok, _ = refines(p, q, mode, observe, seconds=5.0 if NIGHTLY else 0.5)
            assert ok, ("a false sound", name, mode, observe, r.reason)


# ---------------------------------------------------------------------------
# Known cases: a loop that reads x, a root write before it and one after it


def reading_loop(before=True, after="s_exit", trips="3", inside_const=1):
    """w1: x := 5, then a loop of `trips` trips summing Read x (through a
    constant Enter of x's handle) and counting by `inside_const`; w2: x := 7
    after the loop's Exit `after` (the sum's Exit: its value needs every
    Read; the counter's `exit`: a Read of an earlier trip may still come
    after it), s fetched."""
    lim = [{"name": "n", "op": "Const", "value": int(trips)}] if trips.isdigit() else []
    raw = {"format": "tfsem.program/1", "variables": ["x"],
           "nodes": lim + [
               {"name": "vx", "op": "Var", "var": "x"},
               {"name": "five", "op": "Const", "value": 5},
               {"name": "w1", "op": "Assign", "fn": "Snd", "inputs": ["vx", "five"]},
               {"name": "i0", "op": "Const", "value": 0,
                "inputs": ["^w1"] if before == "i0" or before is True else []},
               {"name": "s0", "op": "Const", "value": 0},
               {"name": "enter", "op": "Enter", "frame_name": "L", "inputs": ["i0"]},
               {"name": "s_enter", "op": "Enter", "frame_name": "L", "inputs": ["s0"]},
               {"name": "lim", "op": "Enter", "frame_name": "L", "is_constant": True,
                "inputs": ["n" if trips.isdigit() else trips]},
               {"name": "hx", "op": "Enter", "frame_name": "L", "is_constant": True,
                "inputs": ["vx"] + (["^w1"] if before == "hx" else [])},
               {"name": "merge", "op": "Merge", "inputs": ["enter", "next"]},
               {"name": "s_merge", "op": "Merge", "inputs": ["s_enter", "s_next"]},
               {"name": "less", "op": "Less", "inputs": ["merge", "lim"]},
               {"name": "cond", "op": "LoopCond", "inputs": ["less"]},
               {"name": "sw", "op": "Switch", "inputs": ["merge", "cond"]},
               {"name": "s_sw", "op": "Switch", "inputs": ["s_merge", "cond"]},
               {"name": "body", "op": "Identity", "inputs": ["sw:1"]},
               {"name": "k", "op": "Const", "value": inside_const, "inputs": ["^body"]},
               {"name": "read", "op": "Read", "inputs": ["hx", "^body"]},
               {"name": "s_add", "op": "Add", "inputs": ["s_sw:1", "read"]},
               {"name": "s_next", "op": "NextIteration", "inputs": ["s_add"]},
               {"name": "inc", "op": "Add", "inputs": ["body", "k"]},
               {"name": "next", "op": "NextIteration", "inputs": ["inc"]},
               {"name": "exit", "op": "Exit", "inputs": ["sw"]},
               {"name": "s_exit", "op": "Exit", "inputs": ["s_sw"]},
               {"name": "seven", "op": "Const", "value": 7},
               {"name": "w2", "op": "Assign", "fn": "Snd",
                "inputs": ["vx", "seven"] + ([f"^{after}"] if after else [])}],
           "outputs": {"s": "s_exit"}}
    if not trips.isdigit():
        raw["feeds"] = {trips[1:]: {"dtype": "int64", "shape": []}}
    return program_from_json(raw)


def with_identity(p):
    """The fetch and the sum's start through new root Identities."""
    def edit(raw):
        raw["nodes"].append({"name": "id_out", "op": "Identity", "inputs": ["s_exit"]})
        raw["nodes"].append({"name": "id_s0", "op": "Identity", "inputs": ["s0"]})
        for n in raw["nodes"]:
            if n["name"] == "s_enter":
                n["inputs"] = ["id_s0"]
        raw["outputs"]["s"] = "id_out"
    return edited(p, edit)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("after", ("s_exit", "exit"))
def test_a_rewrite_outside_the_loop_is_proved(mode, after):
    p = reading_loop(after=after)
    q = with_identity(p)
    v = check_rewrite(p, q, mode, timeout=5, backends=False)
    assert v.verdict == "sound", v.reason
    assert v.stats["path"] == "control-flow/loops-unchanged"
    assert "loop frames unchanged" in v.reason
    ok, compared = refines(p, q, mode, "outputs+state")
    assert ok and compared == len(sigmas(p))
    if after == "exit":
        # (the counter's Exit does not wait for every Read: w2 may come
        # between the Reads, in P as in P', which the proof maps run to run)
        feeds, init = sigmas(p)[1]
        assert len(set(outcome_set(p, feeds, init, mode))) > 1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("before", ("i0", "hx"))
def test_a_dropped_edge_from_a_root_write_to_a_loop_is_refused(mode, before):
    """The root write no longer comes before the loop (its edge to the
    counter's start or to the handle's Enter dropped): the loop may read x
    before it."""
    p = reading_loop(before=before)
    q = reading_loop(before=False)
    r = loops_unchanged(p, q, mode)
    assert not r.proved and "w1" in r.reason
    assert not refines(p, q, mode, "outputs+state")[0]


@pytest.mark.parametrize("mode", MODES)
def test_a_dropped_edge_from_an_exit_to_a_root_write_is_refused(mode):
    """w2 no longer waits for the sum's Exit, after every Read: a Read of
    any trip may now see 7."""
    p = reading_loop(after="s_exit")
    q = reading_loop(after=None)
    r = loops_unchanged(p, q, mode)
    assert not r.proved and "(L4)" in r.reason and "s_exit" in r.reason
    assert not refines(p, q, mode, "outputs+state")[0]
    # the counter's Exit instead of the sum's: not the same waiting either
    r = loops_unchanged(p, reading_loop(after="exit"), mode)
    assert not r.proved and "(L4)" in r.reason


@pytest.mark.parametrize("mode", MODES)
def test_a_changed_body_is_refused(mode):
    p = reading_loop()
    q = reading_loop(inside_const=2)
    r = loops_unchanged(p, q, mode)
    assert not r.proved and "'k'" in r.reason
    assert not refines(p, q, mode, "outputs+state")[0]


def test_a_trip_count_fed_is_proved_whatever_the_bound():
    """The proof holds for every σ, including those at which the loop
    reaches the iteration bound (the refutation stage says unknown there):
    both programs run the same iterations."""
    p = reading_loop(trips="$n")
    v = check_rewrite(p, with_identity(p), timeout=5, backends=False)
    assert v.verdict == "sound" and v.stats["path"] == "control-flow/loops-unchanged"


def test_an_exit_that_fires_several_times_is_refused():
    """An Exit on the body's side (port 1) fires live in every trip: a root
    node between two of its firings could read either value (L6)."""
    def edit(raw):
        raw["nodes"].append({"name": "xb", "op": "Exit", "inputs": ["body"]})
        raw["nodes"].append({"name": "out", "op": "Identity", "inputs": ["xb"]})
        raw["outputs"]["b"] = "out"
    p = edited(reading_loop(), edit)
    q = edited(with_identity(reading_loop()), edit)
    r = loops_unchanged(p, q)
    assert not r.proved and "(L6)" in r.reason and "xb" in r.reason


def test_the_rule_is_off_without_the_structural_rule():
    p = reading_loop()
    v = check_rewrite(p, with_identity(p), timeout=2, backends=False, structural=False)
    assert v.verdict != "sound" and v.stats["path"] != "control-flow/loops-unchanged"
    structural_loops.ENABLED = False
    try:
        assert not loops_unchanged(p, with_identity(p)).proved
    finally:
        structural_loops.ENABLED = True


# ---------------------------------------------------------------------------
# The real-graphs corpus (Grappler's outputs, TensorFlow 2.21, stored)


def corpus():
    with gzip.open(CORPUS, "rt") as f:
        return json.load(f)


def test_grappler_arithmetic_on_the_lstm_loop_is_proved():
    """keras_lstm_loop: Grappler's arithmetic optimizer changes nodes outside
    the two While frames (the LSTM's and its gradient's, 328 nodes) and
    leaves the frames as they were.  Before this rule: `no-counterexample`
    after 5.9 s of refutation (issue 23)."""
    d = corpus()["keras_lstm_loop"]
    p = program_from_json(d["original"])
    q = program_from_json(d["rewritten"]["arithmetic"])
    v = check_rewrite(p, q, timeout=10, backends=False)
    assert v.verdict == "sound", v.reason
    assert v.stats["path"] == "control-flow/loops-unchanged"
    assert "loop frames unchanged: 2 loops" in v.reason


def _without_root_identities(p):
    """p with every Identity outside the loops spliced out (its consumers
    read its input), as Grappler's dependency and arithmetic optimizers
    remove the gradient tape's Identities."""
    raw = program_to_json(p)
    fr = p.frames
    gone = {}
    for n in raw["nodes"]:
        ins = n.get("inputs", [])
        if (n["op"] == "Identity" and not fr.get(n["name"]) and len(ins) == 1
                and not ins[0].startswith(("^", "$"))
                and not fr.get(ins[0].split(":")[0])):
            gone[n["name"]] = ins[0]

    def final(i):
        while i in gone:
            i = gone[i]
        return i
    raw["nodes"] = [n for n in raw["nodes"] if n["name"] not in gone]
    for n in raw["nodes"]:
        n["inputs"] = [("^" + final(i[1:]).split(":")[0] if i[1:] in gone else i)
                       if i.startswith("^") else final(i) for i in n.get("inputs", [])]
    raw["outputs"] = {k: final(v) for k, v in raw["outputs"].items()}
    return program_from_json(raw), len(gone)


def test_a_rewrite_outside_the_gru_loops_is_proved_and_grapplers_are_refused_by_name():
    """keras_gru_loop: its root Identities spliced out is proved.  Grappler's
    own rewrites are not: constant folding reassociates a float product
    outside the loops (c1*(sub*2) to sub*(2*c1), which differs at overflow:
    not the same term, rightly), arithmetic folds two Reshapes of the
    gradient loop's body, and the default pipeline and CSE rewrite the
    bodies too."""
    d = corpus()["keras_gru_loop"]
    p = program_from_json(d["original"])
    q, spliced = _without_root_identities(p)
    assert spliced >= 10
    v = check_rewrite(p, q, timeout=10, backends=False)
    assert v.verdict == "sound" and v.stats["path"] == "control-flow/loops-unchanged", v.reason
    why = {opt: loops_unchanged(p, program_from_json(raw)).reason
           for opt, raw in d["rewritten"].items()}
    assert "(V) the value assigned by" in why["constfold"]
    assert "Squeeze_1_grad/Reshape" in why["arithmetic"]
    for opt in ("dependency", "common_subgraph_elimination", "default"):
        assert "in a loop of one program only" in why[opt], (opt, why[opt])


def trips_read(after="s_exit"):
    """reading_loop whose trip count is Read a, outside the loop: with `a`
    uninitialized the loop's predicate is an error, its Switches send dead
    values both ways, its Exits are sent dead when it is done, and w2,
    after the sum's Exit, fires dead (writes nothing)."""
    raw = program_to_json(reading_loop(after=after))
    raw["variables"] = (["a"] + raw["variables"] if isinstance(raw["variables"], list)
                        else {"a": {"dtype": "int64", "shape": []}, **raw["variables"]})
    raw["nodes"][:0] = [{"name": "va", "op": "Var", "var": "a"},
                        {"name": "ra", "op": "Read", "inputs": ["va"]}]
    for n in raw["nodes"]:
        if n["name"] == "lim":
            n["inputs"] = ["ra"]
    return program_from_json(raw)


@pytest.mark.parametrize("mode", MODES)
def test_dead_exits_are_the_same_event_in_both_programs(mode):
    p = trips_read()
    q = with_identity(p)
    feeds, init = sigmas(p)[3]
    assert init["a"] == Error(UNINITIALIZED)
    (only,) = set(outcome_set(p, feeds, init, mode))
    assert dict(only.state)["x"] == Tensor(5, "int64")      # w2 fired dead
    r = loops_unchanged(p, q, mode)
    assert r.proved, r.reason
    ok, compared = refines(p, q, mode, "outputs+state")
    assert ok and compared == len(sigmas(p))
    # w2 no longer after the sum's Exit: live when the loop is dead
    r = loops_unchanged(p, trips_read(after=None), mode)
    assert not r.proved and "(L4)" in r.reason
    assert not refines(p, trips_read(after=None), mode, "outputs+state")[0]
