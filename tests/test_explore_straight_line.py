"""The canonical run on its straight line (oracle/explore.py `_Line`,
`refute.canonical_outcome`) against the run on the general engine
(`explore.STRAIGHT_LINE = False`): the same outcome bit for bit, the same
schedule, the same exception where the run fails, the kernels asked for
together at the same points for the same steps and arguments; on generated
programs (both semantics, both observations, feeds, variables left
uninitialized, σ of every kind) and on real graphs of the corpus."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tfsem.checking import check as C
from tfsem.checking import refute as ref
from tfsem.generators.strategies import random_programs
from tfsem.graphdef import import_path
from tfsem.oracle import explore
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor, exact
from canonical_run_support import SETTINGS, bits, programs_without_control_flow

CORPUS = Path(__file__).resolve().parent.parent / "examples" / "tensorflow" / "corpus"


def _answer(p, feeds, init, sem, obs, line: bool, monkeypatch):
    monkeypatch.setattr(explore, "STRAIGHT_LINE", line)
    try:
        o, sched = ref.canonical_outcome(p, feeds, init, sem, obs)
    except Exception as exc:  # noqa: BLE001 (compared: the same failure)
        return f"{type(exc).__name__}: {exc}"
    return o, list(sched), bits(o)


def _lines(p) -> int:
    """The compiled components of p that run on a straight line."""
    return sum(1 for t in (explore._COMPILED.get(p) or {}).values()
               for k, v in t.__dict__.get("_shared", {}).items()
               if k[0] == "line" and k[1][0] == "canonical" and v)


def _same(fast, slow, where):
    if isinstance(fast, str) or isinstance(slow, str):
        assert fast == slow, where
        return
    assert fast[0] == slow[0] and fast[1] == slow[1], where
    assert fast[2] == slow[2], where


def test_the_straight_line_is_the_engines_run_on_generated_programs(monkeypatch):
    compared = on_lines = failed = 0
    for i, p, sem, obs, sigmas in programs_without_control_flow(200, 53, max_nodes=14):
        for _ in range(3):
            feeds, init = next(sigmas)
            slow = _answer(p, feeds, init, sem, obs, False, monkeypatch)
            # (the first run of a component is the engine's, the second
            # builds its line, the third runs on it)
            for _run in range(3):
                _same(_answer(p, feeds, init, sem, obs, True, monkeypatch), slow, (i, sem, obs))
            failed += isinstance(slow, str)
            compared += 1
        on_lines += _lines(p) > 0
    assert compared >= 450, compared
    assert on_lines >= 100, on_lines       # (the line was taken, not the engine)
    assert failed < compared


def test_uninitialized_variables_and_decomposed_writes_on_the_line(monkeypatch):
    p = program_from_json({
        "variables": {"x": {"dtype": "float32", "shape": [2]},
                      "y": {"dtype": "float32", "shape": [2]}},
        "feeds": {"f": {"dtype": "float32", "shape": [2]}},
        "nodes": [{"name": "vx", "op": "Var", "var": "x"},
                  {"name": "vy", "op": "Var", "var": "y"},
                  {"name": "rx", "op": "Read", "inputs": ["vx"]},
                  {"name": "s", "op": "Add", "inputs": ["rx", "$f"]},
                  {"name": "wx", "op": "Assign", "fn": "Snd", "inputs": ["vx", "s"]},
                  {"name": "wy", "op": "Assign", "fn": "Add", "inputs": ["vy", "s", "^wx"]},
                  {"name": "ry", "op": "Read", "inputs": ["vy", "^wy"]}],
        "outputs": {"out": "s", "y": "ry"}})
    f = Tensor(np.array([1.5, np.nan], np.float32))
    inits = [{}, {"x": Tensor(np.array([1, 2], np.float32))},
             {"x": Tensor(np.array([1, 2], np.float32)),
              "y": Tensor(np.array([3, -0.0], np.float32))}]
    for sem, obs in SETTINGS:
        for init in inits:
            slow = _answer(p, {"f": f}, init, sem, obs, False, monkeypatch)
            assert not isinstance(slow, str)
            for _run in range(3):
                _same(_answer(p, {"f": f}, init, sem, obs, True, monkeypatch), slow,
                      (sem, obs, init))
    assert _lines(p) == 4      # (each semantics and observation: its own line)


def test_a_line_run_past_its_deadline_stops(monkeypatch):
    p = random_programs(1, 3, max_nodes=14)[0]
    feeds, init = next(C._refute_sigmas(p, np.random.default_rng(0)))
    for _ in range(2):
        ref.canonical_outcome(p, feeds, init, "atomic", "outputs+state")
    names, variables, outputs = explore.components(p)[0]
    comp = ref._compiled(p, names, "atomic", "outputs+state", feeds, variables, outputs,
                         cache=False)
    line = comp.straight_line(("canonical", p.topological_order), lambda u: u)
    assert line is not None and len(line.ops) >= 1
    with pytest.raises(BudgetExceeded):
        line.run(comp, init, deadline=0.0, counted=63)


def test_the_kernels_are_asked_for_at_the_same_points(monkeypatch):
    """Which steps `_prefetch` asks for together, with which arguments, in
    which order: on the line as on the engine (the kernels' answers are
    the same either way; this keeps the turns to the kernels' child)."""
    asked: list = []

    def record(self, steps, args_of):
        asked.append([(u, [exact(a) for a in args_of(u)]) for u in steps])

    monkeypatch.setattr(explore._Component, "_ask_kernels", record)
    monkeypatch.setattr(explore._kernels, "enabled", lambda: True)
    # every function "may need a kernel": many steps ready together ask
    monkeypatch.setattr(explore._Component, "kernel_step",
                        property(lambda self: [k == explore._FN for k in self.kind],
                                 lambda self, v: None), raising=False)
    groups = 0
    for i, p, sem, obs, sigmas in programs_without_control_flow(80, 61, max_nodes=14):
        feeds, init = next(sigmas)
        asked.clear()
        slow = _answer(p, feeds, init, sem, obs, False, monkeypatch)
        on_engine = list(asked)
        for _run in range(3):
            asked.clear()
            _same(_answer(p, feeds, init, sem, obs, True, monkeypatch), slow, i)
            assert asked == on_engine, i
        groups += len(on_engine)
    assert groups >= 20, groups


def _corpus(name: str):
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    (e,) = [e for e in manifest["graphs"] if e["file"].startswith(name + ".")]
    caps = str(CORPUS / e["captures"]) if e.get("captures") else None
    return import_path(CORPUS / e["file"], e["fetches"], [], e["targets"], captures=caps).program


@pytest.mark.parametrize("name", ["keras_mlp_adam", "keras_cnn_batchnorm", "tf1_mlp_sgd"])
def test_the_straight_line_is_the_engines_run_on_corpus_graphs(name, monkeypatch):
    p = _corpus(name)
    sigmas = [C._plain_sigma(p), C._plain_sigma(p, C.HUGE_FEED_SCALE)]
    gen = C._refute_sigmas(p, np.random.default_rng(5))
    sigmas += [next(gen) for _ in range(2)]
    for feeds, init in sigmas:
        slow = _answer(p, feeds, init, "atomic", "outputs+state", False, monkeypatch)
        for _run in range(3):
            _same(_answer(p, feeds, init, "atomic", "outputs+state", True, monkeypatch), slow, name)
    assert _lines(p) >= 1


def test_inside_an_application_memo_the_line_is_the_engines_run(monkeypatch):
    """Each node's last application kept by the line (`_Line`, its
    arguments by identity) inside a check's memo: runs at σ met again (the
    same tensor objects: every node answered from what it kept), at σ
    that differ, back and forth, give the engine's outcome and schedule
    bit for bit."""
    from tfsem.oracle import applications
    kept_hits = compared = 0
    for i, p, sem, obs, gen in programs_without_control_flow(120, 71, max_nodes=14):
        sigmas = [next(gen) for _ in range(3)]
        with applications.scope(p):
            for feeds, init in sigmas + sigmas[::-1] + sigmas:
                slow = _answer(p, feeds, init, sem, obs, False, monkeypatch)
                before = applications.active().hits
                fast = _answer(p, feeds, init, sem, obs, True, monkeypatch)
                _same(fast, slow, (i, sem, obs))
                compared += 1
                kept_hits += applications.active().hits > before
            lines = [v for t in (explore._COMPILED.get(p) or {}).values()
                     for k, v in t.__dict__.get("_shared", {}).items()
                     if k[0] == "line" and k[1][0] == "canonical" and v]
            assert all(line.kept_bytes <= explore.LINE_MEMO_BYTES for line in lines)
    assert compared >= 600 and kept_hits >= 200, (compared, kept_hits)


def test_a_kept_application_names_its_kernels_again(monkeypatch):
    """A node answered from its last application notes the TensorFlow ops
    that application evaluated (`kernels.note`), as the memo's hit does:
    a verdict names the same kernels."""
    from tfsem.oracle import applications, kernels
    from tfsem.oracle import functions as fns
    monkeypatch.setattr(fns, "_REGISTRY", dict(fns._REGISTRY))
    calls = []

    def impl(xp, args, attrs):
        calls.append(1)
        kernels._note("FakeKernelOp")
        return (args[0] * 2,)
    fns.register(fns.Function("line_test_noting", 1, 1, impl))
    p = program_from_json({
        "format": "tfsem.program/1", "variables": {},
        "feeds": {"a": {"dtype": "int64", "shape": [1]}},
        "nodes": [{"name": "o", "op": "line_test_noting", "inputs": ["$a"]},
                  {"name": "q", "op": "Identity", "inputs": ["o"]}],
        "outputs": {"o": "q"}})
    sigma = {"a": Tensor(np.array([3]))}
    with applications.scope(p), kernels.use(True):     # (kernels on: ops are kept)
        for _ in range(4):
            with kernels.record() as used:
                o, _ = ref.canonical_outcome(p, sigma, {}, "atomic", "outputs")
            assert used == {"FakeKernelOp"} and dict(o.outputs)["o"] == Tensor(np.array([6]))
    assert len(calls) == 1       # (computed once: the memo, then the node's own)
    with applications.scope(p), kernels.use(False):
        ref.canonical_outcome(p, sigma, {}, "atomic", "outputs")
    assert len(calls) == 2       # (kernels off: another key, computed again)


def test_kept_applications_stay_within_their_bytes(monkeypatch):
    from tfsem.oracle import applications
    monkeypatch.setattr(explore, "LINE_MEMO_BYTES", 100)
    p = program_from_json({
        "format": "tfsem.program/1", "variables": {},
        "feeds": {"a": {"dtype": "float64", "shape": [4]}},
        "nodes": [{"name": "b", "op": "Add", "inputs": ["$a", "$a"]},
                  {"name": "c", "op": "Add", "inputs": ["b", "b"]},
                  {"name": "d", "op": "Add", "inputs": ["c", "c"]}],
        "outputs": {"o": "d"}})
    sigma = {"a": Tensor(np.arange(4.0))}
    with applications.scope(p):
        for _ in range(4):
            o, _ = ref.canonical_outcome(p, sigma, {}, "atomic", "outputs")
            assert dict(o.outputs)["o"] == Tensor(np.arange(4.0) * 8)
    (template,) = explore._COMPILED[p].values()
    line = template._shared[("line", ("canonical", p.topological_order))]
    # (each Add holds two arguments and a result of 32 bytes: one fits)
    assert line.kept_bytes == 96
    assert sum(e is not None for e in line.kept[1]) == 1


def test_a_line_whose_arguments_keep_changing_rests_then_keeps_again(monkeypatch):
    """σ that change every node's arguments: after a run that found fewer
    than half unchanged, IDLE_RUNS runs apply every function (keeping
    nothing), then one keeps afresh and the next is judged; σ met again
    then find every node's last application.  Every run is the engine's."""
    from tfsem.oracle import applications
    p = program_from_json({
        "format": "tfsem.program/1", "variables": {},
        "feeds": {"a": {"dtype": "float64", "shape": [2]}},
        "nodes": [{"name": "b", "op": "Add", "inputs": ["$a", "$a"]},
                  {"name": "c", "op": "Mul", "inputs": ["b", "b"]},
                  {"name": "d", "op": "Sub", "inputs": ["c", "b"]}],
        "outputs": {"o": "d"}})
    sigmas = [{"a": Tensor(np.array([1.0, k]))} for k in range(2)]

    def line():
        (template,) = explore._COMPILED[p].values()
        return template._shared[("line", ("canonical", p.topological_order))]

    with applications.scope(p):
        # (the engine's run, the line built: kept afresh, then judged: rest)
        for k in range(3):
            _same(_answer(p, sigmas[k % 2], {}, "atomic", "outputs", True, monkeypatch),
                  _answer(p, sigmas[k % 2], {}, "atomic", "outputs", False, monkeypatch), k)
        assert line().idle == explore.IDLE_RUNS
        states = []
        for k in range(explore.IDLE_RUNS + 2):
            feeds = sigmas[0]                   # (the same σ from now on)
            before = applications.active().hits
            fast = _answer(p, feeds, {}, "atomic", "outputs", True, monkeypatch)
            slow = _answer(p, feeds, {}, "atomic", "outputs", False, monkeypatch)
            _same(fast, slow, k)
            states.append((line().idle, applications.active().hits - before))
        # resting, then kept afresh (-1 -> 0), then every node answered
        assert [s for s, _ in states[:explore.IDLE_RUNS]] == \
            list(range(explore.IDLE_RUNS - 1, 0, -1)) + [-1]
        assert states[-1][0] == 0 and states[-1][1] >= line().n_fn


def test_a_line_from_a_recorded_run_is_the_dry_runs(monkeypatch):
    """The steps and the kernels' groups recorded from the engine's first
    run at some σ (`record_steps`) make the line a dry run makes: the same
    steps, labels, groups and operations."""
    monkeypatch.setattr(explore._Component, "_ask_kernels", lambda self, steps, args_of: None)
    monkeypatch.setattr(explore._kernels, "enabled", lambda: True)
    monkeypatch.setattr(explore._Component, "kernel_step",
                        property(lambda self: [k == explore._FN for k in self.kind],
                                 lambda self, v: None), raising=False)
    built = explore._build_line
    from_records = []

    def building(comp, priority, recorded=None, *clock):
        from_records.append(recorded is not None)
        return built(comp, priority, recorded, *clock)
    monkeypatch.setattr(explore, "_build_line", building)
    recorded = grouped = 0
    for i, p, sem, obs, sigmas in programs_without_control_flow(80, 83, max_nodes=14):
        feeds, init = next(sigmas)
        slow = _answer(p, feeds, init, sem, obs, False, monkeypatch)
        for _run in range(3):
            _same(_answer(p, feeds, init, sem, obs, True, monkeypatch), slow, i)
        for names, variables, outputs in explore.components(p):
            comp = ref._compiled(p, names, sem, obs, feeds, variables, outputs, cache=False)
            line = comp.__dict__["_shared"].get(("line", ("canonical", p.topological_order)))
            if not line:
                continue
            order = {n: k for k, n in enumerate(p.topological_order)}
            table = [(order[comp.label(u).partition("@")[0]],
                      comp.label(u).partition("@")[2] == "write", u) for u in range(2 * comp.n)]
            dry = built(comp, table.__getitem__)
            assert (line.steps, line.labels, line.groups, line.ops) == \
                (dry.steps, dry.labels, dry.groups, dry.ops), i
            recorded += 1
            grouped += bool(line.groups)
    assert recorded >= 40 and grouped >= 10, (recorded, grouped)
    assert from_records and all(from_records)     # (every line here from its first run)


def _shared(p) -> dict:
    """The shared table of p's one compiled component (lines and traces)."""
    (template,) = explore._COMPILED[p].values()
    return template.__dict__.get("_shared", {})


def test_a_function_with_its_own_apply_runs_on_the_engine(monkeypatch):
    """The TensorList ops' class has its own `apply` (a TensorList is no
    tensor), which the line's `Function.remembered` would go around: such
    a component gets no line, and every run is the engine's (the review of
    the straight line found the second and later runs raising CannotRun)."""
    from tfsem.oracle import applications
    p = program_from_json({
        "format": "tfsem.program/1", "variables": {},
        "nodes": [{"name": "s", "op": "Const", "value": {"dtype": "int32", "value": [2]}},
                  {"name": "n", "op": "Const", "value": {"dtype": "int32", "value": 3}},
                  {"name": "l", "op": "TensorListReserve", "inputs": ["s", "n"],
                   "element_dtype": "float32"},
                  {"name": "o", "op": "TensorListLength", "inputs": ["l"]}],
        "outputs": {"o": "o"}})
    slow = _answer(p, {}, {}, "atomic", "outputs", False, monkeypatch)
    assert not isinstance(slow, str) and dict(slow[0].outputs)["o"] == Tensor(np.int32(3))
    with applications.scope(p):
        for _run in range(3):
            _same(_answer(p, {}, {}, "atomic", "outputs", True, monkeypatch), slow, _run)
    assert _lines(p) == 0


def _assigns(n: int):
    """n Assign-adds of a feed to one variable, its final value observed."""
    nodes = [{"name": "v", "op": "Var", "var": "x"}]
    nodes += [{"name": f"a{k}", "op": "Assign", "fn": "Add", "inputs": ["v", "$f"]}
              for k in range(n)]
    return program_from_json({"format": "tfsem.program/1",
                              "variables": {"x": {"dtype": "float32", "shape": []}},
                              "feeds": {"f": {"dtype": "float32", "shape": []}},
                              "nodes": nodes, "outputs": {}})


def test_a_dry_run_past_the_deadline_stops_and_the_line_is_built_later(monkeypatch):
    """Where the run that would have recorded the steps was cut short, the
    line's dry run reads the run's deadline (it costs the engine's
    bookkeeping: seconds on a large component): past it BudgetExceeded, as
    the run, and no line kept, neither one nor "none"; a later run builds
    it and gives the engine's outcome."""
    monkeypatch.setattr(explore, "STRAIGHT_LINE", True)
    p = _assigns(300)
    feeds, init = {"f": Tensor(np.float32(1.0))}, {"x": Tensor(np.float32(0.0))}
    tag = ("line", ("canonical", p.topological_order))
    for _run in range(2):
        with pytest.raises(BudgetExceeded):
            ref.canonical_outcome(p, feeds, init, "atomic", "outputs+state", deadline=0.0)
    assert _shared(p).get(tag) is False          # (asked, not built: the dry run was cut)
    slow = _answer(p, feeds, init, "atomic", "outputs+state", False, monkeypatch)
    fast = _answer(p, feeds, init, "atomic", "outputs+state", True, monkeypatch)
    _same(fast, slow, "after")
    assert isinstance(_shared(p).get(tag), explore._Line)
    assert dict(fast[0].state)["x"] == Tensor(np.float32(300.0))


def test_with_the_kernels_off_the_line_is_made_from_the_first_run(monkeypatch):
    """The steps of a run with TensorFlow's kernels off are recorded too (no
    groups of kernel evaluations): the line is made from them, no dry run."""
    from tfsem.oracle import kernels
    monkeypatch.setattr(explore, "STRAIGHT_LINE", True)
    p = _assigns(20)
    feeds, init = {"f": Tensor(np.float32(0.5))}, {"x": Tensor(np.float32(1.0))}
    dry = []
    real = explore._Stub
    monkeypatch.setattr(explore, "_Stub", lambda *a: dry.append(1) or real(*a))
    with kernels.use(False):
        slow = _answer(p, feeds, init, "atomic", "outputs+state", False, monkeypatch)
        for _run in range(3):
            _same(_answer(p, feeds, init, "atomic", "outputs+state", True, monkeypatch), slow,
                  _run)
    assert _lines(p) == 1 and not dry
