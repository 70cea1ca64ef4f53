"""Adversarial review of TensorFlow's replay of the original's witness
schedules (backends/tensorflow.py `with_original`): a confirmation on
TensorFlow is claimed only where the rewritten program gives the
counterexample's outcome there and each witness schedule of the original
that the verdict lists gives the oracle's outcome of it (or fails the run
where that outcome has an error output).

Each test is one attack.  Those that found nothing guard the property;
those that found something guard its fix: the original's export named as
the rewritten program; the --html line; a wrong model off the listed
witnesses claimed (now one run per reads-from class of the original too,
oracle/readsfrom.py `class_runs`, checked here against the enumerating
reference engine).  The tests that run TensorFlow skip, saying so, where
it is not installed.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import time

import numpy as np
import pytest

from tfsem.cli import main

HAVE_TF = importlib.util.find_spec("tensorflow") is not None
needs_tf = pytest.mark.skipif(not HAVE_TF, reason="needs the extra tfsem[tensorflow] "
                              "(tensorflow-cpu): not installed here")

#: `check`'s budget covers TensorFlow's import and both replays
TIMEOUT = ["--timeout", "120"]


def _race(value_nodes: list[dict], out: str) -> dict:
    """v := 1 racing with a read of v (no edge orders them); `value_nodes`
    compute the output `out` from the read `r`."""
    return {"format": "tfsem.program/1", "variables": ["v"],
            "nodes": [{"name": "vv", "op": "Var", "var": "v"},
                      {"name": "one", "op": "Const", "value": 1},
                      {"name": "w", "op": "Write", "inputs": ["vv", "one"]},
                      {"name": "r", "op": "Read", "inputs": ["vv"]},
                      *value_nodes],
            "outputs": {"out": out}}


#: the original squares the racing read (0 or 1 at σ v = 0: out is 0 or 1);
#: the rewrite outputs 1.  Sound under a right model of Square (the
#: rewritten outcome is the original's write-first one); the tests below
#: make Square's model wrong in the original's runs
SQUARE_CASE = {"format": "tfsem.case/1", "semantics": "atomic", "observe": "outputs+state",
               "original": _race([{"name": "n", "op": "Square", "inputs": ["r"]}], "n"),
               "rewritten": _race([{"name": "c", "op": "Const", "value": 1}], "c")}


def _wrong_square(monkeypatch, wrong):
    """Square's model replaced (this test only) by `wrong(x, right)`."""
    from tfsem.oracle import functions as fns
    real = fns.get("Square")

    def impl(xp, args, attrs):
        (y,) = real.impl(xp, args, attrs)
        return (xp.asarray(wrong(args[0], y)).astype(y.dtype),)
    monkeypatch.setitem(fns._REGISTRY, "Square",
                        dataclasses.replace(real, impl=impl, batched_impl=impl))


def _check(capsys, tmp_path, case: dict, *extra: str) -> tuple[int, dict]:
    path = tmp_path / "case.json"
    path.write_text(json.dumps(case))
    rc = main(["check", str(path), *TIMEOUT, "--json", *extra])
    return rc, json.loads(capsys.readouterr().out)


def _program(doc: dict):
    from tfsem.oracle import program_from_json
    return program_from_json(doc)


def _counterexample(original, rewritten, feeds, init, observe="outputs+state"):
    """A counterexample at σ = (feeds, init) built as the checker builds one:
    the rewritten program's outcome (its first, with its witness) and every
    outcome of the original with its witness; asserts it is one (the
    rewritten outcome is none of the original's)."""
    from tfsem.checking.verdict import Counterexample
    from tfsem.oracle import outcome_set
    ours = list(outcome_set(original, feeds, init, observe=observe).as_dict().items())
    theirs = [(o, w) for o, w in outcome_set(rewritten, feeds, init, observe=observe)
              .as_dict().items() if o not in dict(ours)]
    assert theirs, "no counterexample at this σ"
    o, w = theirs[0]
    return Counterexample(dict(feeds), dict(init), list(w), o, ours, len(ours))


# --- a wrong model of an op of the original -----------------------------------------


@needs_tf
def test_a_wrong_model_on_one_of_several_witnesses_is_caught(capsys, tmp_path, monkeypatch):
    """Square's model wrong at 1 only (gives 5): at σ v = 0 the original's
    read-first witness squares 0 (right), its write-first witness squares 1
    (wrong).  The oracle lists both; TensorFlow gives 1 for the second, and
    the confirmation is withdrawn naming that witness."""
    _wrong_square(monkeypatch, lambda x, y: np.where(x == 1, 5, y))
    rc, v = _check(capsys, tmp_path, SQUARE_CASE)
    assert rc == 1 and v["verdict"] == "unsound"
    cx = v["counterexample"]
    outs = sorted(o["outputs"]["out"] for o in cx["original_outcomes"])
    assert cx["init"]["v"] == 0 and outs == [0, 5] and cx["outcome"]["outputs"]["out"] == 1
    assert "tensorflow" not in v["confirmed"]
    rep = v["tensorflow_replay"]
    assert not rep["confirmed"] and not rep["budget"]
    assert rep["outcome"] == cx["outcome"]        # the rewritten side agreed
    assert rep["original"]["agreed"] is False and rep["original"]["listed"] == 2
    which = 1 + [o["outputs"]["out"] for o in cx["original_outcomes"]].index(5)
    assert rep["reason"].startswith(
        f"TensorFlow and the oracle differ on the original: its witness schedule {which} of 2 "
        "(the original program, exported) gives output 'out' = 1 on TensorFlow, 5 in the oracle")


@needs_tf
def test_a_wrong_model_off_the_listed_witnesses_is_not_claimed(monkeypatch):
    """Square's model made 0 everywhere: the oracle's original has one
    outcome, out = 0, from both schedules, and lists the read-first
    witness, which TensorFlow runs to 0 too (the model is right at 0).
    TensorFlow's write-first schedule of the original gives out = 1, the
    rewritten program's outcome, which is then not new there.  One witness
    per outcome claimed 'tensorflow' (found by this review); the run per
    reads-from class of the original sees the write-first schedule differ
    and claims nothing."""
    from tfsem.backends import tensorflow as tfb
    from tfsem.checking import check_case
    from tfsem.oracle.jsonio import case_from_json
    _wrong_square(monkeypatch, lambda x, y: np.zeros_like(y))
    case = case_from_json(SQUARE_CASE, where="case")
    verdict = check_case(case, timeout=60)
    assert verdict.verdict == "unsound"
    cx = verdict.counterexample
    assert [o.describe() for o, _ in cx.original_outcomes] == ["out = 0, v := 1"]
    assert cx.outcome.describe() == "out = 1, v := 1"
    rep = tfb.replay_program(case.rewritten(), cx, observe=verdict.observe)
    assert rep.confirmed, rep.reason
    # TensorFlow's original gives the counterexample's outcome: its
    # write-first schedule, forced on the original exported
    write_first = tfb._Witness(cx.feeds, cx.init, ["vv", "one", "w", "r", "n"], cx.outcome)
    on_tf = tfb.replay_program(case.original, write_first, observe=verdict.observe)
    assert on_tf.outcome == cx.outcome, on_tf.reason
    out = tfb.with_original(rep, case.original, cx, observe=verdict.observe)
    assert not out.confirmed, out.reason
    assert out.original["agreed"] is False and not out.budget
    assert out.reason.startswith(
        "TensorFlow and the oracle differ on the original: its run 2 of 2 for the reads-from "
        "classes (the original program, exported; schedule vv one w r n), a schedule the "
        "verdict does not list, gives output 'out' = 1 on TensorFlow, 0 in the oracle")


# --- races, uninitialized variables, the failed-run rule -----------------------------


#: the race with v uninitialized at σ: the read-first witness reads the
#: error `uninitialized` into the output (TensorFlow fails that run), the
#: write-first one gives out = 1; the rewrite outputs 2
UNINIT_RACE = ({"format": "tfsem.program/1", "variables": ["v"],
                "nodes": [{"name": "vv", "op": "Var", "var": "v"},
                          {"name": "one", "op": "Const", "value": 1},
                          {"name": "w", "op": "Write", "inputs": ["vv", "one"]},
                          {"name": "r", "op": "Read", "inputs": ["vv"]}],
                "outputs": {"out": "r"}},
               {"format": "tfsem.program/1", "variables": ["v"],
                "nodes": [{"name": "vv", "op": "Var", "var": "v"},
                          {"name": "one", "op": "Const", "value": 1},
                          {"name": "w", "op": "Write", "inputs": ["vv", "one"]},
                          {"name": "two", "op": "Const", "value": 2}],
                "outputs": {"out": "two"}})


@needs_tf
def test_a_race_with_an_uninitialized_read_one_witness_fails_one_agrees():
    """Two witnesses at σ with v uninitialized: TensorFlow fails the one
    whose oracle outcome has the error output and gives the other's
    outcome.  Confirmed, and the JSON and the line say both, consistently."""
    from tfsem.backends import tensorflow as tfb
    from tfsem.oracle.values import Error
    original, rewritten = (_program(d) for d in UNINIT_RACE)
    cx = _counterexample(original, rewritten, {}, {})
    outs = [dict(o.outputs)["out"] for o, _ in cx.original_outcomes]
    assert len(outs) == 2 and sum(isinstance(x, Error) for x in outs) == 1
    rep = tfb.replay_program(rewritten, cx)
    assert rep.confirmed, rep.reason
    out = tfb.with_original(rep, original, cx)
    assert out.confirmed, out.reason
    failed = 1 + next(i for i, x in enumerate(outs) if isinstance(x, Error))
    assert out.original == {"graph": "the original program, exported", "outcomes": 2,
                            "listed": 2, "replayed": 2, "failed_runs": 1, "agreed": True}
    assert out.reason.endswith(
        "; the original program, exported, run with each of its 2 witness schedules forced, "
        "gave the oracle's outcomes or failed the run where the oracle's outcome has an "
        f"error value (witness schedule {failed} of 2: output 'out')")
    assert out.to_json()["original"] == out.original
    assert out.describe() == f"TensorFlow {out.version}: {out.reason}"


def _fake_runs(monkeypatch, results):
    """replay_program answering the original's witnesses in turn with the
    Replays `results` (no TensorFlow)."""
    from tfsem.backends import tensorflow as tfb
    it = iter(results)
    monkeypatch.setattr(tfb, "replay_program", lambda *a, **k: next(it))


def _error_cx(state_only: bool = False):
    """A counterexample whose one listed original outcome has an error
    output (or, `state_only`, an error only in a variable)."""
    from tfsem.checking.verdict import Counterexample
    from tfsem.oracle import Outcome, Tensor
    from tfsem.oracle.values import Error

    def t(x):
        return Tensor(np.asarray(x, np.int64))
    shown = Outcome((("out", t(0)),), (("v", Error("uninitialized")),)) if state_only else \
        Outcome((("out", Error("uninitialized")),), (("v", t(1)),))
    return Counterexample({}, {}, ["a"], Outcome((("out", t(2)),), (("v", t(1)),)),
                          [(shown, ["b"])], 1)


@pytest.mark.parametrize("run_failed, state_only, claimed", [
    (True, False, True),     # an op failed the run; the oracle has an error output
    (False, False, False),   # TensorFlow could not run it (load, feeds, export): no agreement
    (True, True, False),     # an op failed, but the oracle's outputs hold no error
])
def test_a_failed_run_agrees_only_as_an_op_failing_where_an_output_is_an_error(
        monkeypatch, run_failed, state_only, claimed):
    """The failed-run rule both ways: a run TensorFlow failed counts as the
    oracle's outcome only where an op failed it (TensorFlowRunFailed, not a
    graph TensorFlow cannot load or run as given) and the oracle's outcome
    has an output that is an error value (not a variable's)."""
    from tfsem.backends import tensorflow as tfb
    _fake_runs(monkeypatch, [tfb.Replay(False, "TensorFlow failed the run: ...",
                                        run_failed=run_failed)])
    out = tfb.with_original(tfb.Replay(True, "rewritten"), object(), _error_cx(state_only))
    assert out.confirmed is claimed
    assert out.original["failed_runs"] == (1 if claimed else 0)
    assert out.original["agreed"] is (True if claimed else None)
    if not claimed:
        assert out.reason.startswith("the original's witness schedule was not replayed "
                                     "(TensorFlow failed the run: ...)")


def test_a_failed_run_is_never_an_agreement_with_an_outcome_tensorflow_gave(monkeypatch):
    """A Replay with an outcome and run_failed (never made, but the rule
    must read the outcome first): compared as an outcome, not as a failure."""
    from tfsem.backends import tensorflow as tfb
    from tfsem.oracle import Outcome, Tensor
    got = Outcome((("out", Tensor(np.asarray(7, np.int64))),),
                  (("v", Tensor(np.asarray(1, np.int64))),))
    _fake_runs(monkeypatch, [tfb.Replay(False, "", outcome=got, run_failed=True)])
    out = tfb.with_original(tfb.Replay(True, "rewritten"), object(), _error_cx())
    assert not out.confirmed and out.original["agreed"] is False
    assert "gives output 'out' = 7 on TensorFlow, " in out.reason



@needs_tf
def test_a_truncated_listing_replays_the_listed_and_says_how_many_of_how_many():
    """Ten blind writes racing with a read, the state observed: 110
    outcomes at σ, of which a verdict lists 100 (LIST_LIMIT).  The 100
    listed witnesses are replayed (each its own session), and the line says
    they are 100 of 110; the JSON agrees."""
    from tfsem.backends import tensorflow as tfb
    from tfsem.checking.check import LIST_LIMIT
    from tfsem.checking.verdict import Counterexample
    from tfsem.oracle import Tensor, outcome_set

    def doc(last: dict) -> dict:
        nodes = [{"name": "vv", "op": "Var", "var": "v"}]
        for i in range(10):
            nodes += [{"name": f"c{i}", "op": "Const", "value": i + 1},
                      {"name": f"w{i}", "op": "Write", "inputs": ["vv", f"c{i}"]}]
        return {"format": "tfsem.program/1", "variables": ["v"], "nodes": [*nodes, last],
                "outputs": {"out": "r"}}
    original = _program(doc({"name": "r", "op": "Read", "inputs": ["vv"]}))
    rewritten = _program(doc({"name": "r", "op": "Const", "value": 99}))
    init = {"v": Tensor(np.asarray(0, np.int64))}
    ours = outcome_set(original, {}, init)
    assert ours.count == 110 > LIST_LIMIT == 100
    (o, w), *_ = outcome_set(rewritten, {}, init).as_dict().items()
    cx = Counterexample({}, init, list(w), o, list(ours.as_dict(LIST_LIMIT).items()), ours.count)
    rep = tfb.replay_program(rewritten, cx)
    assert rep.confirmed, rep.reason
    out = tfb.with_original(rep, original, cx)
    assert out.confirmed, out.reason
    assert out.original == {"graph": "the original program, exported", "outcomes": 110,
                            "listed": 100, "replayed": 100, "failed_runs": 0, "agreed": True}
    assert out.reason.endswith(
        "; the original program, exported, run with each of its 100 witness schedules forced, "
        "gave the oracle's outcomes (the 100 the verdict lists of the original's 110 outcomes "
        "at this σ) (its other schedules were not run, one per reads-from class: more than "
        "100 reads-from classes; a model wrong only on them would not show here)")
    assert out.to_json()["original_classes"] == {"not_run": "more than 100 reads-from classes"}

# --- budgets ----------------------------------------------------------------------------


@needs_tf
def test_the_budget_running_out_between_witnesses_claims_nothing(monkeypatch):
    """Six witnesses; the deadline passes after the first (the replay of
    the second is made to start late): not confirmed, `budget`, the reason
    says 1 of 6 were replayed, and no witness after the deadline ran."""
    from tfsem.backends import tensorflow as tfb
    from tfsem.oracle import Tensor
    doc = {"format": "tfsem.program/1", "variables": ["v"],
           "nodes": [{"name": "vv", "op": "Var", "var": "v"},
                     *({"name": f"c{i}", "op": "Const", "value": i + 1} for i in range(2)),
                     *({"name": f"w{i}", "op": "Write", "inputs": ["vv", f"c{i}"]}
                       for i in range(2)),
                     {"name": "r", "op": "Read", "inputs": ["vv"]}],
           "outputs": {"out": "r"}}
    rewritten = dict(doc, nodes=[*doc["nodes"][:-1], {"name": "r", "op": "Const", "value": 9}])
    original, rewritten = _program(doc), _program(rewritten)
    cx = _counterexample(original, rewritten, {}, {"v": Tensor(np.asarray(0, np.int64))})
    n = len(cx.original_outcomes)
    assert n == 6        # out 0, 1 or 2 and v 1 or 2
    rep = tfb.replay_program(rewritten, cx)
    assert rep.confirmed, rep.reason
    real, calls, deadline = tfb.replay_program, [], time.monotonic() + 60

    def late(*args, **kwargs):
        calls.append(time.monotonic())
        if len(calls) == 2:
            kwargs["deadline"] = time.monotonic() - 1    # as if the clock passed it here
        return real(*args, **kwargs)
    monkeypatch.setattr(tfb, "replay_program", late)
    out = tfb.with_original(rep, original, cx, deadline=deadline)
    assert not out.confirmed and out.budget
    assert len(calls) == 2
    assert f"during the replay of the original's witness schedules (1 of {n} replayed; " \
           "the rewritten program gave the counterexample's outcome)" in out.reason
    assert out.original["replayed"] == 1 and out.original["agreed"] is None
    assert out.describe().startswith("not replayed on TensorFlow within the time budget: ")


# --- NaN-bearing outcomes, float16 and bfloat16 ---------------------------------------


def _nan(dtype: str, bits: int):
    import ml_dtypes
    np_dtype = {"float32": np.float32, "float16": np.float16,
                "bfloat16": ml_dtypes.bfloat16}[dtype]
    return np.asarray(bits, np.uint32 if dtype == "float32" else np.uint16).view(np_dtype)


NANS = {"float32": (0x7FC00001, 0xFFC00002), "float16": (0x7E01, 0xFE02),
        "bfloat16": (0x7FC1, 0xFFC2)}


@needs_tf
@pytest.mark.parametrize("dtype", sorted(NANS))
def test_nan_outcomes_of_the_original_compare_as_outcomes_do(dtype):
    """Add of two NaNs of different payloads (and signs): TensorFlow's
    original gives a NaN, which agrees with the oracle's NaN as outcomes
    compare (every NaN equal, docs/semantics.md), whatever payload either
    has: confirmed.  The same listing made wrong (a number where the
    oracle's model gives NaN): withdrawn, naming both values."""
    from tfsem.backends import tensorflow as tfb
    from tfsem.checking.verdict import Counterexample
    from tfsem.oracle import Outcome, Tensor, outcome_set
    p = _program({"format": "tfsem.program/1",
                  "feeds": {"a": {"dtype": dtype, "shape": []}, "b": {"dtype": dtype, "shape": []}},
                  "nodes": [{"name": "s", "op": "Add", "inputs": ["$a", "$b"]}],
                  "outputs": {"out": "s"}})
    a, b = (_nan(dtype, x) for x in NANS[dtype])
    feeds = {"a": Tensor(a), "b": Tensor(b)}
    listed = list(outcome_set(p, feeds, {}).as_dict().items())
    (shown, witness), = listed
    assert np.isnan(np.asarray(dict(shown.outputs)["out"].array, np.float32))
    zero = Outcome((("out", Tensor(np.zeros((), a.dtype))),), shown.state)
    # another payload of NaN in the listing: equal as an outcome
    other = Outcome((("out", Tensor(b.copy())),), shown.state)
    assert other == shown
    for listing, claimed in [(listed, True), ([(other, witness)], True),
                             ([(Outcome((("out", Tensor(np.ones((), a.dtype))),), shown.state),
                                witness)], False)]:
        cx = Counterexample(feeds, {}, ["s"], zero, listing, 1)
        out = tfb.with_original(tfb.Replay(True, "rewritten"), p, cx)
        assert out.confirmed is claimed, out.reason
        if not claimed:
            assert out.original["agreed"] is False
            assert "gives output 'out' = nan" in out.reason and " in the oracle" in out.reason


# --- control flow, graphs, decomposed witnesses ----------------------------------------


def _cond(after_waits: bool, negate: bool) -> dict:
    """A conditional write x := 5 (taken where p), merged with the read of x
    on the other branch; `after` reads x after the merge (where
    `after_waits`); the taken branch's value negated twice (`negate`)."""
    taken = ([{"name": "n1", "op": "Neg", "inputs": ["sv:1", "^w"]},
              {"name": "t", "op": "Neg", "inputs": ["n1"]}] if negate else
             [{"name": "t", "op": "Identity", "inputs": ["sv:1", "^w"]}])
    return {"format": "tfsem.program/1", "variables": ["x"],
            "feeds": {"p": {"dtype": "bool", "shape": []}},
            "nodes": [{"name": "vx", "op": "Var", "var": "x"},
                      {"name": "sw", "op": "Switch", "inputs": ["vx", "$p"]},
                      {"name": "v", "op": "Const", "value": 5},
                      {"name": "sv", "op": "Switch", "inputs": ["v", "$p"]},
                      {"name": "w", "op": "Write", "inputs": ["sw:1", "sv:1"]},
                      {"name": "r", "op": "Read", "inputs": ["sw:0"]},
                      *taken,
                      {"name": "m", "op": "Merge", "inputs": ["r", "t"]},
                      {"name": "ra", "op": "Read", "inputs": ["vx", *(["^m"] if after_waits else [])]}],
            "outputs": {"out": "m", "after": "ra"}}


@needs_tf
@pytest.mark.parametrize("wrong", [False, True])
def test_control_flow_originals_witness_is_replayed_and_a_wrong_branch_model_caught(
        capsys, tmp_path, monkeypatch, wrong):
    """A conditional original (Switch/Merge) whose read after the merge the
    rewrite lets race.  Right models: confirmed, the original's witness run
    with the control-flow replay (its live steps outside loops forced).  Neg
    made wrong (x + 1) in the taken branch of the original: where σ takes
    it, TensorFlow's original gives 5 where the oracle says 7, and nothing
    is claimed; where σ does not take it the model never ran, and the
    confirmation stands."""
    if wrong:
        from tfsem.oracle import functions as fns
        bad = dataclasses.replace(fns.get("Neg"), impl=lambda xp, a, k: (a[0] + 1,),
                                  batched_impl=lambda xp, a, k: (a[0] + 1,))
        monkeypatch.setitem(fns._REGISTRY, "Neg", bad)
    case = {"format": "tfsem.case/1", "semantics": "atomic", "observe": "outputs+state",
            "original": _cond(True, True), "rewritten": _cond(False, False)}
    rc, v = _check(capsys, tmp_path, case)
    assert rc == 1 and v["verdict"] == "unsound"
    cx = v["counterexample"]
    rep = v["tensorflow_replay"]
    taken = cx["feeds"]["p"]["value"] is True
    if wrong and taken:
        assert [o["outputs"]["out"] for o in cx["original_outcomes"]] == [7]
        assert not rep["confirmed"] and rep["original"]["agreed"] is False
        assert "gives output 'out' = 5 on TensorFlow, 7 in the oracle" in rep["reason"]
        assert "tensorflow" not in v["confirmed"]
    else:
        assert rep["confirmed"], rep["reason"]
        assert "tensorflow" in v["confirmed"]
        assert rep["original"]["agreed"] is True
        assert ("; the original program, exported (control flow: the schedule's live steps "
                "outside every loop forced") in rep["reason"]
        assert rep["reason"].endswith(
            " (its other schedules were not run, one per reads-from class: control flow (the "
            "reads-from engine has no Switch or loop); a model wrong only on them would not "
            "show here)")


def _two_increments(second: int):
    """A GraphDef: two unordered AssignAddVariableOps of one variable (1
    and `second`), then a read after both."""
    from tfsem.backends.tensorflow import tensorflow
    tf = tensorflow()
    g = tf.Graph()
    with g.as_default():
        h = tf.raw_ops.VarHandleOp(dtype=tf.int32, shape=[], shared_name="c", name="c")
        i1 = tf.raw_ops.AssignAddVariableOp(resource=h, value=tf.constant(1, name="one"),
                                            name="inc1")
        i2 = tf.raw_ops.AssignAddVariableOp(resource=h, value=tf.constant(second, name="k"),
                                            name="inc2")
        with tf.control_dependencies([i1, i2]):
            r = tf.raw_ops.ReadVariableOp(resource=h, dtype=tf.int32, name="read")
        tf.identity(r, name="value")
    return str(g.as_graph_def())


@needs_tf
def test_a_graph_originals_witness_run_exported_is_named_as_the_original(capsys, tmp_path):
    """Decomposed semantics, ORIGINAL a GraphDef: the original's lost-update
    witness runs the reads and writes of its two increments apart, which
    the graph itself cannot be forced to follow, so that witness runs on
    the original program exported with its Assigns split.  The line names
    it as the original's export (it named it "the rewritten program,
    exported" before the fix)."""
    original, rewritten = tmp_path / "two_inc.pbtxt", tmp_path / "two_inc_k2.pbtxt"
    original.write_text(_two_increments(1))
    rewritten.write_text(_two_increments(2))
    rc = main(["check", str(original), str(rewritten), "--fetch", "value",
               "--semantics", "decomposed", *TIMEOUT, "--json"])
    v = json.loads(capsys.readouterr().out)
    assert rc == 1 and v["verdict"] == "unsound"
    rep = v["tensorflow_replay"]
    assert rep["confirmed"], rep["reason"]
    assert rep["original"]["listed"] == 2 and rep["original"]["agreed"] is True
    ours = rep["reason"].split("gave its outcome; ", 1)[1]
    assert "rewritten" not in ours
    assert ours.startswith("the original program, exported (Assign inc1, inc2 as read, compute "
                           "and write nodes: the decomposed Assign) and the graph ")
    assert ours.endswith("run with each of its 2 witness schedules forced, gave the oracle's "
                         "outcomes; its other schedules, one run per reads-from class (4 more), "
                         "gave the oracle's outcomes")
    assert rep["original_classes"] == {"runs": 4, "replayed": 4, "failed_runs": 0}


# --- the report's wording ---------------------------------------------------------------


def _page_confirmation(path) -> str:
    import html
    import re
    text = path.read_text()
    start = text.index("Where it was confirmed")
    return html.unescape(re.sub(r"<[^>]+>", " ", text[start:text.index("</ul>", start)]))


@needs_tf
def test_the_html_page_says_what_the_tensorflow_confirmation_ran(capsys, tmp_path, monkeypatch):
    """--html: a confirmation whose original's witness failed the run where
    the oracle has an error output says so under 'Where it was confirmed'
    (the page said only that the rewritten graph gave the outcome); a
    confirmation withdrawn by the original's side shows no confirmed
    TensorFlow badge and gives the reason, as the text and JSON do."""
    from pathlib import Path
    cases = Path(__file__).resolve().parent / "cases"
    page = tmp_path / "uninit.html"
    rc = main(["check", str(cases / "err_uninit_sub_self.json"), *TIMEOUT, "--json",
               "--html", str(page)])
    v = json.loads(capsys.readouterr().out)
    assert rc == 1 and "tensorflow" in v["confirmed"]
    said = " ".join(_page_confirmation(page).split())
    assert ("reproduced on TensorFlow's executor: the rewritten graph, with the schedule forced by "
            "control edges, gives the same outcome; the original, with its witness schedule "
            "forced the same way, fails the run where the oracle's outcome has an error output") \
        in said
    _wrong_square(monkeypatch, lambda x, y: np.where(x == 1, 5, y))
    page = tmp_path / "wrong.html"
    rc, v = _check(capsys, tmp_path, SQUARE_CASE, "--html", str(page))
    assert rc == 1 and "tensorflow" not in v["confirmed"]
    said = " ".join(_page_confirmation(page).split())
    assert "reproduced on TensorFlow's executor" not in said
    assert ("not replayed on TensorFlow: TensorFlow and the oracle differ on the original: its "
            "witness schedule") in said
    assert "gives output 'out' = 1 on TensorFlow, 5 in the oracle" in said


@pytest.mark.parametrize("listed, failed, said", [
    (1, 0, "; the original, with its witness schedule forced the same way, gives the oracle's "
           "outcome"),
    (3, 0, "; the original, with each of the 3 witness schedules the verdict lists for it forced "
           "the same way, gives the oracle's outcome for it"),
    (3, 1, "gives the oracle's outcome for it or fails the run where the oracle's outcome has an "
           "error output (as TensorFlow fails where tfsem carries an error value on): 1 of them"),
    (None, None, None),
])
def test_the_pages_tensorflow_line_follows_the_replays_json(listed, failed, said):
    """The page's line from the replay's JSON alone (no TensorFlow): the
    original's side is named only where the replay ran it and it agreed
    (a finding stored before that replay existed has no `original`)."""
    from tfsem.reports.finding import _confirm_text
    rep = {"status": "confirmed", "confirmed": True}
    if listed is not None:
        rep["original"] = {"graph": "g", "outcomes": listed, "listed": listed,
                           "replayed": listed, "failed_runs": failed, "agreed": True}
    text = _confirm_text("tensorflow", True, rep)
    assert text.startswith("reproduced on TensorFlow's executor: the rewritten graph, with the "
                           "schedule forced by control edges, gives the same outcome")
    if said is None:
        assert "original" not in text
    else:
        assert said in text
    assert _confirm_text("tensorflow", False, rep) == "not confirmed (not run, or unavailable)"


# --- a campaign under right models ------------------------------------------------------


@needs_tf
@pytest.mark.parametrize("semantics", ["atomic", "decomposed"])
def test_right_models_never_withdraw_a_confirmation_on_generated_programs(semantics):
    """Generated int64 programs (where TensorFlow's kernels and the models
    agree exactly) with the first control edge whose loss is unsound
    dropped: wherever the rewritten program's replay confirms, the
    original's side confirms too (a withdrawal here would be a false
    'TensorFlow and the oracle differ', a day lost), and the witnesses it
    replays are the verdict's."""
    from test_tensorflow_replay import _drop_control_edges
    from tfsem.backends.tensorflow import replay_program, with_original
    from tfsem.checking import check_rewrite
    from tfsem.generators.strategies import random_programs
    ops = frozenset(["Read", "Write", "AssignAdd", "AssignSub", "Add", "Sub", "Const", "Neg",
                     "Mul"])
    confirmed = several = 0
    for p in random_programs(100, seed=7, max_nodes=10, n_variables=2, ops=ops,
                             control_density=0.7):
        for p2 in _drop_control_edges(p):
            v = check_rewrite(p, p2, semantics, "outputs+state", timeout=5)
            if v.verdict == "unsound":
                break
        else:
            continue
        cx = v.counterexample
        rep = replay_program(p2, cx, observe=v.observe)
        if not rep.confirmed:
            continue
        out = with_original(rep, p, cx, observe=v.observe)
        assert out.confirmed, out.reason
        n = len(cx.original_outcomes)
        assert out.original["replayed"] == out.original["listed"] == n
        confirmed += 1
        several += n > 1
    assert confirmed >= 10 and several >= 3, (confirmed, several)


# --- the runs per reads-from class, against the enumerating oracle ----------------------


def _replay_ref(p, feeds, init, schedule, semantics, observe):
    from tfsem.oracle.outcomes import make_outcome
    from tfsem.oracle.semantics import graph_of, run_schedule
    g = graph_of(p)
    s = run_schedule(p, feeds, init, schedule, semantics)
    outputs = {name: s.in_transit[e.id] for name, e in g.output_edges.items()}
    return make_outcome(outputs, s.var_value, observe)


def _wrong_neg():
    """Neg's model made wrong (+7) where x % 3 == 1: a stand-in for a
    TensorFlow kernel that differs from the oracle's model."""
    from tfsem.oracle import functions as fns
    real = fns.get("Neg")

    def impl(xp, args, attrs):
        (y,) = real.impl(xp, args, attrs)
        return (xp.where(xp.asarray(args[0]) % 3 == 1, y + 7, y).astype(y.dtype),)
    return real, dataclasses.replace(real, impl=impl, batched_impl=impl)


@pytest.mark.parametrize("semantics", ["atomic", "decomposed"])
@pytest.mark.parametrize("observe", ["outputs", "outputs+state"])
def test_class_runs_stand_for_every_run_against_the_enumerating_oracle(semantics, observe,
                                                                       monkeypatch):
    """oracle/readsfrom.py `class_runs` on generated programs: each run's
    schedule replays by the reference step semantics to its outcome; the
    runs' outcomes are outcomes of the program (all of them for one
    component); and the argument the replay rests on: an implementation
    (Neg's model made wrong, standing for a kernel) that gives each run
    the oracle's outcome gives the program the oracle's whole outcome set,
    computed by the enumerating reference engine under it."""
    from tfsem.generators.strategies import random_inputs, random_programs
    from tfsem.oracle import functions as fns
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.readsfrom import Unsupported, class_runs
    ops = frozenset(["Read", "Write", "AssignAdd", "AssignSub", "Add", "Sub", "Const", "Neg",
                     "Mul"])
    real, wrong = _wrong_neg()
    agreed = caught = several = single = 0
    for i, p in enumerate(random_programs(80, seed=11, max_nodes=9, n_variables=2, ops=ops,
                                          control_density=0.3)):
        feeds, init = random_inputs(p, i)
        try:
            found = class_runs(p, feeds, init, semantics, observe, max_runs=200)
        except Unsupported:
            continue
        reference = outcome_set(p, feeds, init, semantics, observe, engine="reference")
        ref = set(reference)
        runs = found.runs
        if not runs:
            # one class in every component (no run made): one outcome, and
            # any run (the reference engine's witness) stands for every run
            assert found.one_per_outcome and len(ref) == 1
            runs = list(reference.as_dict().items())
            single += 1
        outs = set()
        for o, w in runs:
            assert _replay_ref(p, feeds, init, w, semantics, observe) == o
            outs.add(o)
        assert outs <= ref and (found.components != 1 or outs == ref)
        several += found.components > 1
        monkeypatch.setitem(fns._REGISTRY, "Neg", wrong)
        kernel = [_replay_ref(p, feeds, init, w, semantics, observe) for _, w in runs]
        kernel_set = set(outcome_set(p, feeds, init, semantics, observe, engine="reference"))
        monkeypatch.setitem(fns._REGISTRY, "Neg", real)
        if all(k == o for k, (o, _) in zip(kernel, runs)):
            assert kernel_set == ref, i
            agreed += 1
        else:
            caught += 1
    assert agreed >= 40 and caught >= 3 and several >= 3 and single >= 3, \
        (agreed, caught, several, single)


def test_class_runs_see_what_one_witness_per_outcome_does_not(monkeypatch):
    """The race of SQUARE_CASE with Square made 0 (the xfail's model): the
    oracle's one outcome has one witness, which the wrong model runs to the
    oracle's outcome; the runs per reads-from class include the other
    schedule, which it does not; and the outcome sets do differ."""
    from tfsem.oracle import Tensor
    from tfsem.oracle import functions as fns
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.readsfrom import class_runs
    p = _program(SQUARE_CASE["original"])
    init = {"v": Tensor(np.asarray(0, np.int64))}
    model = dataclasses.replace(fns.get("Square"), impl=lambda xp, a, k: (a[0] * 0,),
                                batched_impl=lambda xp, a, k: (a[0] * 0,))
    monkeypatch.setitem(fns._REGISTRY, "Square", model)   # the oracle's (wrong) model
    oracle = outcome_set(p, {}, init, engine="reference")
    found = class_runs(p, {}, init)
    monkeypatch.undo()                                     # the kernel: Square itself
    assert oracle.count == 1 and len(found.runs) == 2 and not found.one_per_outcome
    (o, w), = oracle.as_dict().items()
    assert _replay_ref(p, {}, init, w, "atomic", "outputs+state") == o
    kernel = [_replay_ref(p, {}, init, w2, "atomic", "outputs+state") for _, w2 in found.runs]
    assert [k == o2 for k, (o2, _) in zip(kernel, found.runs)].count(False) == 1
    assert set(outcome_set(p, {}, init, engine="reference")) != set(oracle)


@needs_tf
def test_a_failed_first_class_run_of_several_parts_claims_nothing():
    """Two independent parts: one reads an uninitialized u into output a
    (every run has the error there, and TensorFlow fails every run), the
    other races a write of v with a read that Mul by 0 makes one outcome of
    two classes.  The witness fails where the oracle has an error output,
    which agrees; but the runs per reads-from class all fail on account of
    the first part, so they show nothing of the second's values: nothing is
    claimed, and the line says why."""
    from tfsem.backends import tensorflow as tfb
    from tfsem.checking.verdict import Counterexample
    from tfsem.oracle import Outcome, Tensor, outcome_set
    original = _program({
        "format": "tfsem.program/1", "variables": ["u", "v"],
        "nodes": [{"name": "vu", "op": "Var", "var": "u"},
                  {"name": "ru", "op": "Read", "inputs": ["vu"]},
                  {"name": "vv", "op": "Var", "var": "v"},
                  {"name": "one", "op": "Const", "value": 1},
                  {"name": "w", "op": "Write", "inputs": ["vv", "one"]},
                  {"name": "r", "op": "Read", "inputs": ["vv"]},
                  {"name": "zero", "op": "Const", "value": 0},
                  {"name": "m", "op": "Mul", "inputs": ["r", "zero"]}],
        "outputs": {"a": "ru", "b": "m"}})
    init = {"v": Tensor(np.asarray(0, np.int64))}
    listed = list(outcome_set(original, {}, init).as_dict().items())
    assert len(listed) == 1
    cx = Counterexample({}, init, ["x"], Outcome((("a", Tensor(np.asarray(3, np.int64))),
                                                  ("b", Tensor(np.asarray(0, np.int64)))),
                                                 listed[0][0].state), listed, 1)
    out = tfb.with_original(tfb.Replay(True, "rewritten"), original, cx)
    assert not out.confirmed and not out.budget
    assert out.original["failed_runs"] == 1
    assert out.reason == ("the original's reads-from classes could not be checked: the run of "
                          "the first class of each of its independent parts failed on "
                          "TensorFlow, which does not say which part failed it")


def test_one_candidate_per_choice_is_not_one_class_when_a_no_op_write_hides_the_order():
    """x0's only possible last writer is w9, after the unordered writes w2
    and w6, but w9 writes the error read from the uninitialized x1 and so
    changes nothing: x0 ends as w2's or w6's value, two outcomes.  A
    component is taken as one class (no run made) only where, beyond one
    candidate per choice, its writes of each variable are ordered; here the
    engine runs and declines the no-op write (the witnesses alone, said)."""
    from tfsem.oracle import Tensor
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.readsfrom import Unsupported, class_runs
    p = _program({
        "format": "tfsem.program/1", "variables": ["x0", "x1"],
        "feeds": {"f0": {"dtype": "int64", "shape": []}, "f1": {"dtype": "int64", "shape": []}},
        "nodes": [{"name": "mul0", "op": "Mul", "inputs": ["$f0", "$f1"]},
                  {"name": "v1", "op": "Var", "var": "x0"},
                  {"name": "w2", "op": "Write", "inputs": ["v1", "mul0", "^v1"]},
                  {"name": "v3", "op": "Var", "var": "x1"},
                  {"name": "r4", "op": "Read", "inputs": ["v3", "^w2", "^v1"]},
                  {"name": "v5", "op": "Var", "var": "x0"},
                  {"name": "w6", "op": "Write", "inputs": ["v5", "$f1"]},
                  {"name": "r7", "op": "Read", "inputs": ["v1", "^v3"]},
                  {"name": "v8", "op": "Var", "var": "x0"},
                  {"name": "w9", "op": "Write", "inputs": ["v8", "r4", "^r7", "^w6", "^r4"]}],
        "outputs": {"out0": "mul0", "out1": "r4"}})
    feeds = {"f0": Tensor(np.asarray(3, np.int64)), "f1": Tensor(np.asarray(4, np.int64))}
    init = {"x0": Tensor(np.asarray(-3, np.int64))}
    assert outcome_set(p, feeds, init, engine="reference").count == 2
    with pytest.raises(Unsupported, match="stores an error value"):
        class_runs(p, feeds, init)
