"""Adversarial review of the control-flow replay's kernel evaluations asked
for ahead (oracle/controlflow.py `_prefetch_ahead` and the `_ahead` hook of
`Machine.apply_function`, switched by REPLAY_PREFETCH): where a replayed
function step misses the memo of applications and its function has a
TensorFlow kernel form, the kernel requests of the function steps planned
in the next REPLAY_PREFETCH_STEPS whose data inputs are tensors now go to
the kernels' child in one message.  The argument: answers only fill the
kernels' exact-keyed cache, so nothing a replay computes changes.

Every answer is compared with REPLAY_PREFETCH on and off (and with no
replay at all) σ after σ on one Machine:

- a loop whose body holds independent float MatMuls (TensorFlow's kernel)
  of the loop's matrix by several constant matrices, at σ of NaN, ±0,
  infinities, subnormals, the largest float, and shapes [0,0] [1,1] [2,2];
  trip counts from σ so that replays switch paths (`_other_path`) while
  the steps asked for were indexed in the old plan;
- a plugin function with a kernel form whose numpy model counts its calls
  and refuses (so the kernel stands for it);
- the hook's lifetime: reset after a replay runs out of seconds and after
  a function's CannotRun in the middle of a replay; never set for a
  Machine subclass that runs functions its own way (the array back ends)
  nor with the kernels off; a hook of one thread's Machine never runs in
  another thread (machine_for gives each thread its own);
- the kernels a run names (`kernels.record()`): a remembered application
  looked up while the requests are only collected must not note its
  kernels (nothing of it is used);
- the corpus's Keras GRU loop graph at the checker's σ, and its check
  against Grappler's constant folding;
- a batch's wait for its answer (CALL_SECONDS per evaluation, fixed in
  oracle/kernels.py), and batches the child dies on.

Needs TensorFlow (float MatMul runs on its kernel); skipped without it.
"""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest

from tfsem.oracle import applications
from tfsem.oracle import controlflow as cf
from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.functions import CannotRun
from tfsem.oracle.graph import graph_of
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor, exact

from controlflow_support import corpus_loop_program, count_replays, registry_restored

BOUND = 8


@pytest.fixture(autouse=True)
def tf_kernels(monkeypatch):
    pytest.importorskip("tensorflow", reason="TensorFlow's kernels compute float MatMul")
    monkeypatch.setenv("TFSEM_TF_KERNELS", "1")
    kernels.prestart()
    cf._APPLIED.clear()
    cf._OUTCOMES.clear()
    yield
    cf._APPLIED.clear()
    cf._OUTCOMES.clear()


def _fresh():
    """Nothing remembered that answers a replay's steps: the memo of
    applications and the kernels' cache (and its count of bytes)."""
    cf._APPLIED.clear()
    with kernels._cache_lock:
        kernels._cache.clear()
        kernels._cache_bytes = 0


def _spy(monkeypatch):
    """Calls of `_prefetch_ahead` (machine id, thread id) and the kernel
    batches sent (their sizes), kept up to date."""
    calls, batches = [], []
    real_ahead, real_prefetch = cf._prefetch_ahead, kernels.prefetch

    def ahead(m, *a):
        calls.append((id(m), threading.get_ident()))
        return real_ahead(m, *a)

    def prefetch(requests):
        sent = real_prefetch(requests)
        batches.append(sent)
        return sent
    monkeypatch.setattr(cf, "_prefetch_ahead", ahead)
    monkeypatch.setattr(kernels, "prefetch", prefetch)
    return calls, batches


def matmul_loop(width: int = 3, tf_op: str | None = None, dtype: str = "float32"):
    """A loop F of `$k` trips carrying a float matrix x; each trip adds up
    MatMul(x, w_j) and MatMul(w_j, x) for the constant matrices w_0 ..
    w_{width-1} (feeds): the 2 * width products of a trip are independent,
    their inputs there as soon as the trip's x is.  `tf_op`: the products'
    function instead of MatMul (a plugin's name)."""
    mm = {"op": tf_op} if tf_op else {"op": "MatMul", "transpose_a": False, "transpose_b": False}
    nodes = [
        {"name": "i0", "op": "Const", "value": 0},
        {"name": "enterI", "op": "Enter", "frame_name": "F", "inputs": ["i0"]},
        {"name": "enterX", "op": "Enter", "frame_name": "F", "inputs": ["$x"]},
        {"name": "limF", "op": "Enter", "frame_name": "F", "is_constant": True, "inputs": ["$k"]},
        {"name": "mergeI", "op": "Merge", "inputs": ["enterI", "nextI"]},
        {"name": "mergeX", "op": "Merge", "inputs": ["enterX", "nextX"]},
        {"name": "lessF", "op": "Less", "inputs": ["mergeI", "limF"]},
        {"name": "condF", "op": "LoopCond", "inputs": ["lessF"]},
        {"name": "swI", "op": "Switch", "inputs": ["mergeI", "condF"]},
        {"name": "swX", "op": "Switch", "inputs": ["mergeX", "condF"]},
        {"name": "bodyI", "op": "Identity", "inputs": ["swI:1"]},
        {"name": "bodyX", "op": "Identity", "inputs": ["swX:1"]},
        {"name": "oneF", "op": "Const", "value": 1, "inputs": ["^bodyI"]},
        {"name": "addI", "op": "Add", "inputs": ["bodyI", "oneF"]},
        {"name": "nextI", "op": "NextIteration", "inputs": ["addI"]},
    ]
    prev = None
    for j in range(width):
        nodes.append({"name": f"wF{j}", "op": "Enter", "frame_name": "F", "is_constant": True,
                      "inputs": [f"$w{j}"]})
        nodes.append({"name": f"mm{j}", **mm, "inputs": ["bodyX", f"wF{j}"]})
        nodes.append({"name": f"mt{j}", **mm, "inputs": [f"wF{j}", "bodyX"]})
        nodes.append({"name": f"s{j}", "op": "Add",
                      "inputs": [f"mm{j}", f"mt{j}"] if prev is None else [prev, f"mm{j}"]})
        prev = f"s{j}"
    nodes += [
        {"name": "nextX", "op": "NextIteration", "inputs": [prev]},
        {"name": "exitX", "op": "Exit", "inputs": ["swX"]},
        {"name": "exitI", "op": "Exit", "inputs": ["swI"]},
    ]
    # (the matrices' shapes not declared: the engine runs on what σ holds,
    # and the σ of one Machine hold [0,0], [1,1] and [2,2] matrices)
    feeds = {"x": {"dtype": dtype}, "k": {"dtype": "int64", "shape": []},
             **{f"w{j}": {"dtype": dtype} for j in range(width)}}
    return program_from_json({"format": "tfsem.program/1", "variables": {}, "feeds": feeds,
                              "nodes": nodes, "outputs": {"x": "exitX", "i": "exitI"}})


HOSTILE = [np.nan, -0.0, 0.0, np.inf, -np.inf, np.float32(1.4e-45), np.finfo(np.float32).max,
           -np.finfo(np.float32).max, 1.0, -1.0]


def _sigmas(width: int, seed: int = 0):
    """σ of the matmul loop: drawn matrices, hostile values, shapes [0,0]
    [1,1] [2,2], trip counts 0 to 3 in an order that makes replays switch
    paths."""
    rng = np.random.default_rng(seed)
    out = []
    for n, k in [(2, 2), (2, 3), (2, 0), (1, 2), (2, 1), (0, 2), (2, 3), (2, 2), (1, 3)]:
        def draw():
            a = rng.standard_normal((n, n)).astype(np.float32)
            if a.size:
                a.flat[rng.integers(0, a.size)] = rng.choice(HOSTILE)
            return Tensor(a)
        feeds = {"x": draw(), "k": Tensor(np.int64(k)),
                 **{f"w{j}": draw() for j in range(width)}}
        out.append((feeds, {}))
    return out


def _bits(answer):
    if type(answer) is tuple and answer and answer[0] in ("bound", "budget", "cannot"):
        return answer
    found, explored = answer
    return (sorted(repr((tuple((k, exact(v)) for k, v in o.outputs),
                         tuple((k, exact(v)) for k, v in (o.state or ())), s))
                   for o, s in found.items()), explored)


def _answer(p, feeds, init, bound=BOUND):
    try:
        return _bits(cf.outcomes(p, feeds, init, "atomic", "outputs+state", 20_000, None, bound))
    except cf.LoopBoundExceeded as exc:
        return ("bound", exc.frame, exc.limit)
    except BudgetExceeded as exc:
        return ("budget", exc.which)
    except CannotRun as exc:
        return ("cannot", str(exc))


def _run(p, sigmas, monkeypatch, ahead: bool, replay: bool = True, bound: int = BOUND):
    """Each σ's answer (exact bits, schedules, states explored) on one
    fresh Machine, nothing but its kept paths carried from σ to σ, and the
    kernels each run named; the replay counts."""
    with monkeypatch.context() as mp:
        counts = count_replays(mp)
        mp.setattr(cf, "replay_traces", replay)
        mp.setattr(cf, "REPLAY_PREFETCH", ahead)
        got, named = [], []
        for feeds, init in sigmas:
            _fresh()
            with kernels.record() as used:
                got.append(_answer(p, feeds, init, bound))
            named.append(sorted(used))
        return got, named, dict(counts)


# -- the same answers with the switch on and off ----------------------------------

@pytest.mark.parametrize("width", [1, 3])
def test_a_loop_of_independent_matmuls_answers_the_same_asked_ahead_or_not(width, monkeypatch):
    p = matmul_loop(width)
    sigmas = _sigmas(width, seed=width)
    calls, batches = _spy(monkeypatch)
    on, on_named, on_counts = _run(p, sigmas, monkeypatch, True)
    assert calls and any(b >= 2 for b in batches), (calls, batches)   # (not vacuous)
    assert on_counts["replayed"] >= 3 and on_counts["refused"] >= 1, on_counts
    off, off_named, off_counts = _run(p, sigmas, monkeypatch, False)
    explored, _, _ = _run(p, sigmas, monkeypatch, False, replay=False)
    assert on == off
    assert on_named == off_named
    assert on_counts == off_counts
    assert [a[0] if a[0] not in ("bound", "budget", "cannot") else a for a in on] == \
        [a[0] if a[0] not in ("bound", "budget", "cannot") else a for a in explored]


def test_a_replay_that_switches_paths_after_asking_ahead_answers_as_without(monkeypatch):
    """Trip counts 3, 1, 3, 0, 2 ... on one Machine: a replay follows the
    kept 3-trip path, asks ahead in its plan, then leaves it for the
    1-trip path at the loop's predicate (`_other_path`) with `asked`
    holding indices of the old plan.  A step of the new plan at such an
    index is not asked for again: it makes its own request."""
    p = matmul_loop(2)
    rng = np.random.default_rng(7)
    sigmas = []
    for k in (3, 1, 3, 0, 2, 3, 1, 2):
        feeds = {"x": Tensor(rng.standard_normal((2, 2)).astype(np.float32)),
                 "k": Tensor(np.int64(k)),
                 **{f"w{j}": Tensor(rng.standard_normal((2, 2)).astype(np.float32))
                    for j in range(2)}}
        sigmas.append((feeds, {}))
    switched = []
    real = cf._other_path

    def other(paths, tr, i, got):
        switched.append(i)
        return real(paths, tr, i, got)
    monkeypatch.setattr(cf, "_other_path", other)
    calls, _ = _spy(monkeypatch)
    on, _, on_counts = _run(p, sigmas, monkeypatch, True)
    assert switched and calls
    off, _, off_counts = _run(p, sigmas, monkeypatch, False)
    assert on == off and on_counts == off_counts


# -- a plugin function whose model refuses and counts --------------------------------

def test_a_plugin_function_with_a_kernel_form_answers_the_same(monkeypatch):
    """A user's function with a kernel form (TensorFlow's MatMul) whose
    numpy model counts its calls and refuses, so the kernel stands for it
    (`_kernel_fallback`).  Asked ahead, the model runs once more per step
    asked for (its calls are counted, not its answers: the registry's
    functions are functions of their arguments); the answers and the
    kernels named are the same."""
    seen = [0]

    def impl(xp, args, attrs):
        seen[0] += 1
        raise CannotRun("no numpy model: the kernel stands for it")
    with registry_restored():
        fns.register(fns.Function(
            "PlugMatMul", 2, 1, impl, family=fns.TENSORFLOW,
            tf_kernel=lambda a, attrs: ("MatMul", list(a),
                                        {"transpose_a": False, "transpose_b": False})))
        p = matmul_loop(2, tf_op="PlugMatMul")
        sigmas = _sigmas(2, seed=11)
        calls, batches = _spy(monkeypatch)
        on, on_named, _ = _run(p, sigmas, monkeypatch, True)
        assert calls and any(b >= 2 for b in batches)
        off, off_named, _ = _run(p, sigmas, monkeypatch, False)
        assert on == off and on_named == off_named
        assert any(named == ["MatMul"] for named in on_named)
        assert seen[0] > 0


# -- the hook's lifetime ------------------------------------------------------------

def _kept_machine(p, width, monkeypatch):
    """A Machine of p with a kept path (one run explored) and a σ of that
    path's length."""
    monkeypatch.setattr(cf, "remember_outcomes", False)
    monkeypatch.setattr(cf, "replay_traces", True)
    monkeypatch.setattr(cf, "_machines", type(cf._machines)())
    sigmas = _sigmas(width, seed=3)
    feeds, init = sigmas[0]
    cf.outcomes(p, feeds, init, "atomic", "outputs+state", 20_000, None, BOUND)
    m = cf.machine_for(p, "atomic", BOUND)
    assert m.__dict__.get("_traces")
    return m, sigmas[7]   # (2 trips, the same shape: the path replays)


def test_the_hook_is_dropped_when_a_replay_runs_out_of_seconds(monkeypatch):
    p = matmul_loop(3)
    m, (feeds, init) = _kept_machine(p, 3, monkeypatch)
    _fresh()
    calls, _ = _spy(monkeypatch)
    seen = []
    real = cf.Machine.apply_function

    def apply(self, n, data):
        seen.append(self._ahead is not None)
        return real(self, n, data)
    monkeypatch.setattr(cf.Machine, "apply_function", apply)
    # (spied through the class attribute: the replay's test that the
    # Machine's apply_function is the class's own still holds)
    with pytest.raises(BudgetExceeded):
        cf._replay(m, list(m._traces), feeds, init, 0.0, 0.0, clock_steps=40)
    assert any(seen) and calls          # (the hook was set, and asked ahead)
    assert m._ahead is None


def test_the_hook_is_set_during_a_replay_and_dropped_after_it(monkeypatch):
    p = matmul_loop(3)
    m, (feeds, init) = _kept_machine(p, 3, monkeypatch)
    _fresh()
    calls, batches = _spy(monkeypatch)
    got = cf._replay(m, list(m._traces), feeds, init, 0.0, None)
    assert got is not None and calls and any(b >= 2 for b in batches)
    assert m._ahead is None


def test_the_hook_is_dropped_when_a_function_cannot_run_mid_replay(monkeypatch):
    p = matmul_loop(3)
    m, (feeds, init) = _kept_machine(p, 3, monkeypatch)
    _fresh()
    _spy(monkeypatch)
    fired = [0]
    real = cf.Machine.apply_function

    def apply(self, n, data):
        if n.name == "mm1":
            fired[0] += 1
            if fired[0] == 2:
                raise CannotRun("refused in the second trip")
        return real(self, n, data)
    m.apply_function = apply.__get__(m)
    # (an instance attribute: the replay's `apply` is this one, the class's
    # apply_function unchanged, so the hook is set)
    with pytest.raises(CannotRun):
        cf._replay(m, list(m._traces), feeds, init, 0.0, None)
    assert m._ahead is None
    del m.apply_function
    # (the Machine replays as before afterwards)
    assert cf._replay(m, list(m._traces), feeds, init, 0.0, None) is not None


def test_no_hook_for_a_machine_that_runs_functions_its_own_way(monkeypatch):
    """A Machine subclass with its own apply_function (backends/controlflow.py's
    DeviceMachine runs functions on an array back end) never asks ahead:
    its functions are no kernel evaluations of oracle/kernels.py."""
    class Own(cf.Machine):
        def apply_function(self, n, data):
            return cf.Machine.apply_function(self, n, data)
    monkeypatch.setattr(cf, "machine_for", lambda p, s="atomic", b=BOUND:
                        _own(Own, p, s, b))
    p = matmul_loop(3)
    calls, _ = _spy(monkeypatch)
    got, _, counts = _run(p, _sigmas(3, seed=5), monkeypatch, True)
    assert counts["replayed"] >= 3
    assert not calls


_OWN: dict = {}


def _own(cls, p, s, b):
    key = (id(p), s, b)
    if key not in _OWN or _OWN[key].p is not p:
        _OWN[key] = cls(p, graph_of(p), s, b)
    m = _OWN[key]
    m.explored = 0
    return m


def _int_sigmas(width: int):
    """σ of the matmul loop in int64, wrapping extremes included."""
    rng = np.random.default_rng(17)
    big = np.iinfo(np.int64)
    out = []
    for k in (2, 3, 2, 1, 2, 3, 2, 0, 3):
        def draw():
            a = rng.integers(-3, 4, (2, 2)).astype(np.int64)
            a.flat[rng.integers(0, 4)] = rng.choice([big.max, big.min, -1, 0])
            return Tensor(a)
        out.append(({"x": draw(), "k": Tensor(np.int64(k)),
                     **{f"w{j}": draw() for j in range(width)}}, {}))
    return out


def test_no_hook_with_the_kernels_off(monkeypatch):
    """With the kernels off (integer MatMul has a numpy model, so the
    path is kept and replayed) the hook is never set; with them on, the
    hook runs for the step itself (its function has a kernel form) but
    asks for no integer step ahead (a model with a kernel takes it for
    floats only): no batch, and the same answers."""
    p = matmul_loop(2, dtype="int64")
    sigmas = _int_sigmas(2)
    calls, batches = _spy(monkeypatch)
    with kernels.use(False):
        off, off_named, counts = _run(p, sigmas, monkeypatch, True)
    assert counts["replayed"] >= 3
    assert not calls and not batches
    on, on_named, on_counts = _run(p, sigmas, monkeypatch, True)
    assert calls and not any(batches)
    assert on == off and on_counts == counts
    assert on_named == off_named == [[]] * len(sigmas)


def test_each_threads_hook_runs_in_its_own_machine_only(monkeypatch):
    """Two threads replay the same program object at once: machine_for
    gives each its own Machine, so the hook set on one never runs inside
    the other's apply_function; every answer is the one thread's alone."""
    p = matmul_loop(3)
    per_thread = [_sigmas(3, seed=13), _sigmas(3, seed=14)]
    monkeypatch.setattr(cf, "remember_outcomes", False)
    monkeypatch.setattr(cf, "replay_traces", True)
    monkeypatch.setattr(cf, "REPLAY_PREFETCH", True)
    calls, _ = _spy(monkeypatch)
    want = [[_answer(p, f, i) for f, i in sigmas] for sigmas in per_thread]
    _fresh()
    calls.clear()
    machines, answers, errors = {}, {}, []

    def work(t):
        try:
            machines[t] = id(cf.machine_for(p, "atomic", BOUND))
            answers[t] = [_answer(p, f, i) for f, i in per_thread[t]]
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert machines[0] != machines[1]
    assert calls
    by_machine: dict = {}
    for mid, tid in calls:
        by_machine.setdefault(mid, set()).add(tid)
    assert all(len(tids) == 1 for tids in by_machine.values()), by_machine
    for t in range(2):
        # (the outcomes and schedules; states explored count the thread's
        # own Machine's runs)
        assert [a[0] if type(a[0]) is list else a for a in answers[t]] == \
            [a[0] if type(a[0]) is list else a for a in want[t]]


# -- the kernels a run names ------------------------------------------------------------

def test_a_remembered_application_looked_up_while_collecting_names_no_kernel(monkeypatch):
    """Inside a check (applications.scope) an application remembered with
    the kernels it used is noted (`kernels.note`) where it answers.  Asked
    ahead under `kernels.collecting()`, its answer is thrown away: a step
    that never fires (its path left, the replay out of seconds) must not
    make the verdict name kernels the check did not use."""
    mm = fns.get("MatMul")
    attrs = {"transpose_a": False, "transpose_b": False}
    a = Tensor(np.float32([[1.0, 2.0], [3.0, 4.0]]))
    b = Tensor(np.float32([[0.5, -0.0], [np.nan, 1.0]]))
    with applications.scope():
        if applications._active is None:
            pytest.skip("the memo of applications is off")
        with kernels.record() as first:
            mm.apply([a, b], attrs)
        assert first == {"MatMul"}
        with kernels.record() as used:
            with kernels.collecting() as requests:
                mm.apply([a, b], attrs)
        assert not requests          # (remembered: nothing to ask)
        assert used == set()
        with kernels.record() as again:
            mm.apply([a, b], attrs)
        assert again == {"MatMul"}   # (a use outside collecting still names it)


# -- the corpus ---------------------------------------------------------------------------

def test_the_gru_loop_graph_answers_the_same_asked_ahead_or_not(monkeypatch):
    from tfsem.checking import check as chk
    p = corpus_loop_program("keras_gru_loop", monkeypatch)
    rng = np.random.default_rng(21)
    sigmas = list(itertools.islice(chk._generated_sigmas(p, rng), 2))
    sigmas += [s for _, s in chk._float_sigmas(p)]
    calls, _ = _spy(monkeypatch)
    bound = cf.DEFAULT_MAX_ITERATIONS
    on, on_named, on_counts = _run(p, sigmas, monkeypatch, True, bound=bound)
    assert calls and on_counts["replayed"] >= 1, (on_counts, [a[0] for a in on])
    off, off_named, off_counts = _run(p, sigmas, monkeypatch, False, bound=bound)
    assert on == off and on_named == off_named and on_counts == off_counts


# -- a batch's time -------------------------------------------------------------------------

def test_a_batch_waits_for_its_answer_the_time_each_evaluation_would_alone(monkeypatch):
    """A batch asked ahead holds up to REPLAY_PREFETCH_STEPS + 1
    evaluations.  It waited CALL_SECONDS for all of them together: 64
    MatMuls of two [4096, 4096] matrices, 2.5 s each, were refused as one,
    and the evaluations after it, queued behind the child still computing
    them, past their own CALL_SECONDS: a CannotRun where each alone is
    answered.  Now it waits CALL_SECONDS per evaluation (`call_batch`);
    the time each waits is read where it is given to the reader (no
    evaluation is timed)."""
    import time
    attrs = {"transpose_a": False, "transpose_b": False}
    one = np.float32([[1.0, 2.0], [3.0, 4.0]])
    kernels.evaluate("MatMul", [one, one], attrs, 1)      # (the child up)
    monkeypatch.setattr(kernels, "CALL_SECONDS", 1000.0)
    waits = []
    real = kernels._Client._read

    def read(self, until):
        waits.append(until - time.monotonic())
        return real(self, until)
    monkeypatch.setattr(kernels._Client, "_read", read)
    _fresh()
    mm = fns.get("MatMul")
    args = [Tensor(np.float32([[v, 0.0], [-0.0, np.nan]])) for v in (5.0, 6.0, 7.0)]
    with kernels.collecting() as requests:
        for a in args:
            with pytest.raises(CannotRun):      # (deferred: noted, not made)
                mm.impl(np, (a.array, a.array), attrs)
    assert kernels.prefetch(requests) == 3
    assert waits and min(waits) > 2000.0       # (3 evaluations: up to 3000 s)
    waits.clear()
    kernels.evaluate("MatMul", [one, -one], attrs, 1)
    assert waits and max(waits) <= 1000.0
    # (the answers asked ahead are those of the evaluations alone)
    for a in args:
        got = kernels.evaluate("MatMul", [a.array, a.array], attrs, 1)
        with kernels.use(True):
            with monkeypatch.context() as mp:
                mp.setattr(kernels, "_cache", type(kernels._cache)())
                alone = kernels.evaluate("MatMul", [a.array, a.array], attrs, 1)
        assert exact(Tensor(got[0])) == exact(Tensor(alone[0]))


# -- a check of Grappler's rewrite --------------------------------------------------------

def test_a_check_of_grapplers_constant_folding_of_the_gru_loop_is_the_same(monkeypatch):
    """check_rewrite of keras_gru_loop against Grappler's constant folding
    of it, with the switch on and off: the same verdict (`unsound`, the
    overflow of `sub * 2` at the largest float, docs/grappler-findings.md),
    reason, counterexample, confirmations and kernels named."""
    import json
    from controlflow_support import CORPUS
    from tfsem.checking import check_rewrite
    from tfsem.graphdef import grappler as g
    from tfsem.graphdef.importer import import_graph
    from tfsem.graphdef.proto import decode
    pytest.importorskip("tensorflow")
    entry = next(e for e in json.loads((CORPUS / "manifest.json").read_text())["graphs"]
                 if e["file"].startswith("keras_gru_loop"))
    caps = json.loads((CORPUS / entry["captures"]).read_text()) if entry.get("captures") else None

    def program(graph_def):
        graph = decode("tensorflow.GraphDef", graph_def.SerializeToString())
        return import_graph(graph, entry["fetches"], entry["targets"], captures=caps).program
    gd = g.as_graph_def(CORPUS / entry["file"])
    original = program(gd)
    res = g.run_grappler(g.placed(gd), entry["fetches"] + entry["targets"], "constfold")
    rewritten = program(res.graph_def)
    got = {}
    calls, _ = _spy(monkeypatch)
    for ahead in (True, False):
        monkeypatch.setattr(cf, "REPLAY_PREFETCH", ahead)
        cf._OUTCOMES.clear()
        _fresh()
        v = check_rewrite(original, rewritten, timeout=120)
        got[ahead] = (v.verdict, v.reason, repr(getattr(v, "difference", None)),
                      tuple(v.confirmed), (v.stats.get("tensorflow_kernels") or {}).get("ops"))
    assert calls
    assert got[True] == got[False]
    assert got[True][0] == "unsound"


def test_a_batch_the_child_dies_on_is_left_to_each_step(monkeypatch):
    """Every batch asked ahead refused as the child's death is
    (KernelCrashed, as a kernel's CHECK failure): nothing is cached, and
    each step then makes its own request.  The answers are those with the
    switch off."""
    p = matmul_loop(3)
    sigmas = _sigmas(3, seed=23)
    off, off_named, off_counts = _run(p, sigmas, monkeypatch, False)
    died = [0]

    def batch(self, calls):
        died[0] += 1
        raise kernels.KernelCrashed("the TensorFlow kernel process exited (status -6)")
    monkeypatch.setattr(kernels._Client, "call_batch", batch)
    on, on_named, on_counts = _run(p, sigmas, monkeypatch, True)
    assert died[0] > 0
    assert on == off and on_named == off_named and on_counts == off_counts
