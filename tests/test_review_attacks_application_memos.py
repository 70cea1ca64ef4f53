"""Review of the memos of concrete evaluation (docs/review-memos.md): the
function applications remembered inside a check and across the checks of
one original (oracle/applications.py) and the original's canonical run
remembered per program object (checking/canonical_memo.py).

The campaign keeps ONE application memo per original across many queries,
as the checker does (a scope per check, owned by the original, kept for
its next check), and asks, in a shuffled order and twice each, for the
canonical run and the outcome set of the original and of each built-in
pass's rewrite, at σ drawn with edge values and at σ changed in its bits
only: each float's zero sign flipped, a NaN's payload or sign changed, a
subnormal put in, a value's bytes read as another dtype of the same width,
a tensor's elements in another shape, σ rebuilt from copies.  Every answer
(exact bits: NaN payloads, -0.0) is compared with the same query's answer
with no memo at all (no scope open).  A second test compares the checker's
verdicts, counterexamples and schedules with both memos on and off.

TFSEM_REVIEW_EXAMPLES sets the campaign's size (1 by default, 300 under
the nightly profile); the campaign of docs/review-memos.md ran thousands.
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.checking import canonical_memo
from tfsem.checking import check_rewrite
from tfsem.checking import refute as ref
from tfsem.generators.strategies import inputs_for, programs
from tfsem.oracle import applications as A
from tfsem.oracle import functions as fns
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.graph import graph_of
from tfsem.oracle.semantics import outcome_of, run_schedule
from tfsem.oracle.values import Error, Tensor, exact
from tfsem.rewrites import builtin_passes

NIGHTLY = settings.get_current_profile_name() == "nightly"
EXAMPLES = int(os.environ.get("TFSEM_REVIEW_EXAMPLES", 300 if NIGHTLY else 1))
SOME = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))
DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool")
SETTINGS = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]
_SAME_WIDTH = {"float32": np.int32, "int32": np.float32, "float64": np.int64,
               "int64": np.float64, "float16": np.int16, "uint8": np.bool_,
               "bool": np.uint8, "bfloat16": np.float16}
STATES = 3000
#: what the campaign compared (printed with TFSEM_REVIEW_STATS=1)
STATS = {"programs": 0, "queries": 0, "hits": 0, "checks": 0, "unsound": 0, "verdicts": {}}


def teardown_module():
    if os.environ.get("TFSEM_REVIEW_STATS"):
        print("\nreview22 campaign:", STATS)


@pytest.fixture(autouse=True)
def nothing_kept():
    A.clear()
    canonical_memo.clear()
    yield
    A.clear()
    canonical_memo.clear()


@pytest.fixture
def kernels_off_unless_asked():
    """The drawn programs' runs without TensorFlow's kernels (starting it
    takes 10-60 s), unless TFSEM_REVIEW_TF=1."""
    from tfsem.oracle import kernels
    if os.environ.get("TFSEM_REVIEW_TF"):
        yield
        return
    with kernels.use(False):
        yield


def exact_outcome(o):
    return (tuple((k, exact(v)) for k, v in o.outputs),
            None if o.state is None else tuple((k, exact(v)) for k, v in o.state))


def _variants(values: dict, rnd: random.Random) -> list[dict]:
    """σ's parts with one value changed in its bits (or its dtype or shape)
    only, and σ rebuilt from copies."""
    out = [{k: Tensor(v.array.copy()) if type(v) is Tensor else v for k, v in values.items()}]
    for name, v in values.items():
        if type(v) is not Tensor or not v.array.size:
            continue
        a = np.array(v.array)
        if a.dtype.kind == "f" or v.dtype == "bfloat16":
            flipped = np.where(a == 0, -a, a).astype(a.dtype)
            out.append({**values, name: Tensor(flipped, v.dtype)})
            if v.dtype in ("float32", "float64", "float16"):
                u = {"float32": np.uint32, "float64": np.uint64, "float16": np.uint16}[v.dtype]
                bits = a.copy().reshape(-1).view(u)
                nan = np.array(np.nan, a.dtype).view(u)
                k = rnd.randrange(bits.size)
                # a NaN of another payload or sign, then a subnormal
                bits[k] = nan | u(rnd.choice([1, 3])) | (u(1) << u(8 * a.itemsize - 1)
                                                         if rnd.random() < 0.5 else u(0))
                out.append({**values, name: Tensor(bits.view(a.dtype).reshape(a.shape))})
                bits = bits.copy()
                bits[k] = u(1) | (u(1) << u(8 * a.itemsize - 1) if rnd.random() < 0.5 else u(0))
                out.append({**values, name: Tensor(bits.view(a.dtype).reshape(a.shape))})
        other = _SAME_WIDTH.get(v.dtype)
        if other is not None:
            raw = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
            if other is np.bool_:
                raw = raw % 2
            out.append({**values, name: Tensor(raw.view(other).reshape(a.shape)
                                                if other is not np.bool_ else raw.astype(bool)
                                                .reshape(a.shape))})
        if a.ndim == 1 and a.size % 2 == 0 and a.size > 1:
            out.append({**values, name: Tensor(a.reshape(2, -1), v.dtype)})
        elif a.ndim >= 1:
            out.append({**values, name: Tensor(a.reshape(-1), v.dtype)})
    return out


def _answer(q, feeds, init, sem, obs, whole: bool):
    try:
        if whole:
            s = outcome_set(q, feeds, init, sem, obs, max_states=STATES, max_seconds=5)
            return frozenset(exact_outcome(o) for o in s)
        o, sched = ref.canonical_outcome(q, feeds, init, sem, obs)
        return exact_outcome(o), tuple(sched)
    except (fns.CannotRun, BudgetExceeded) as exc:
        return type(exc).__name__
    except Exception as exc:  # noqa: BLE001  (the same failure either way)
        return ("raised", type(exc).__name__, str(exc)[:200])


_PASSES = list(builtin_passes().values())


def _rewrites(p, limit: int) -> list:
    """The first `limit` built-in passes' rewrites of `p` that change it."""
    out = []
    for ps in _PASSES:
        try:
            q = ps.function(p)
        except Exception:  # noqa: BLE001
            continue
        if q != p:
            out.append(q)
    return out[:limit]


def _checks_off_and_on(p, rewrites: list, sem: str, obs: str, **kw) -> dict:
    """Each rewrite checked with both memos off ("0"), then on ("1": each
    rewrite twice, the second check served by the first's memos)."""
    got = {}
    for env in ("0", "1"):
        os.environ[A.ENV] = os.environ[canonical_memo.ENV] = env
        try:
            A.clear()
            canonical_memo.clear()
            got[env] = [check_rewrite(p, q, sem, obs, timeout=10, structural=False,
                                      backends=True, classify=False, **kw)
                        for q in rewrites * (2 if env == "1" else 1)]
        finally:
            os.environ.pop(A.ENV, None)
            os.environ.pop(canonical_memo.ENV, None)
    return got


@st.composite
def _cases(draw):
    dtype = draw(st.sampled_from(DTYPES))
    p = draw(programs(max_nodes=9, dtype=dtype))
    sigma = draw(inputs_for(p, edge_p=0.5))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    return p, sigma, seed


@SOME
@given(_cases())
@pytest.mark.usefixtures("kernels_off_unless_asked")
def test_queries_in_one_kept_memo_answer_as_fresh_runs(case):
    p, (feeds, init), seed = case
    rnd = random.Random(seed)
    rewrites = []
    for ps in rnd.sample(_PASSES, 4):
        try:
            q = ps.function(p)
        except Exception:  # noqa: BLE001  (a pass that does not apply)
            continue
        if q != p:
            rewrites.append(q)
    sigmas = [(feeds, init)] + [(f, init) for f in _variants(feeds, rnd)] + \
        [(feeds, i) for i in _variants(init, rnd)]
    sigmas = rnd.sample(sigmas, min(len(sigmas), 8))
    queries = [(q, f, i, *SETTINGS[rnd.randrange(4)], rnd.random() < 0.3)
               for q in [p] + rewrites for f, i in sigmas]
    fresh = {k: _answer(*query) for k, query in enumerate(queries)}
    order = list(range(len(queries))) * 2
    rnd.shuffle(order)
    # one check's scope, then the next check's: the memo kept for p
    cut = rnd.randrange(len(order) + 1)
    for part in (order[:cut], order[cut:]):
        with A.scope(owner=p):
            for k in part:
                assert _answer(*queries[k]) == fresh[k], (k, queries[k][3:])
        STATS["hits"] += A.last["hits"]
    STATS["programs"] += 1
    STATS["queries"] += len(order)
    # the canonical runs of the original, remembered across checks
    for k in order:
        q, f, i, sem, obs, _whole = queries[k]
        if q is not p:
            continue
        try:
            o, sched = canonical_memo.canonical_outcome(p, f, i, sem, obs)
            got = exact_outcome(o), tuple(sched)
        except (fns.CannotRun, BudgetExceeded) as exc:
            got = type(exc).__name__
        want = fresh[k] if not queries[k][5] else _answer(q, f, i, sem, obs, False)
        assert got == want, k


def _valid_counterexample(p, q, ce, sem, obs) -> bool:
    """The counterexample holds with no memo: its schedule of q at its σ
    gives its outcome, which no run of p at that σ gives."""
    state = run_schedule(q, ce.feeds, ce.init, list(ce.schedule), sem)
    if outcome_of(q, graph_of(q), state, obs) != ce.outcome:
        return False
    return ce.outcome not in outcome_set(p, ce.feeds, ce.init, sem, obs, max_seconds=20)


@SOME
@given(_cases())
@pytest.mark.usefixtures("kernels_off_unless_asked")
def test_check_verdicts_with_the_memos_equal_those_without(case):
    """The same verdicts with both memos on (each rewrite checked twice: the
    second check finds the first's applications and canonical runs) and
    off, where neither is `unknown` (a solver's timeout, a budget: timing);
    every counterexample holds when replayed with no memo.  (Which
    counterexample is shown may differ: minimization stops at a deadline,
    so the σ of an unread variable may be left unminimized on a slow run;
    the campaign counts those.)"""
    p, _sigma, seed = case
    rnd = random.Random(seed)
    sem, obs = SETTINGS[rnd.randrange(4)]
    rewrites = _rewrites(p, 4)
    got = _checks_off_and_on(p, rewrites, sem, obs, seed=seed % 1000)
    n = len(rewrites)
    STATS["checks"] += 3 * n
    for k, v in enumerate(got["0"]):
        STATS["verdicts"][v.verdict] = STATS["verdicts"].get(v.verdict, 0) + 1
        for w in (got["1"][k], got["1"][n + k]):
            if "unknown" in (v.verdict, w.verdict):
                # (a budget's doing: a solver's timeout, a search cut short)
                STATS["unknown_either"] = STATS.get("unknown_either", 0) + 1
                continue
            assert w.verdict == v.verdict, (k, sem, obs, v.reason, w.reason)
            if w.verdict == "unsound":
                STATS["unsound"] += 1
                assert _valid_counterexample(p, rewrites[k], w.counterexample, sem, obs), k
                a, b = w.counterexample, v.counterexample
                if (exact_outcome(a.outcome), a.schedule, sorted(a.init.items()),
                        sorted(a.feeds.items())) != (exact_outcome(b.outcome), b.schedule,
                                                     sorted(b.init.items()),
                                                     sorted(b.feeds.items())):
                    STATS["other_counterexample"] = STATS.get("other_counterexample", 0) + 1


def test_error_values_in_sigma_are_kept_apart_from_tensors():
    """(a smoke case of the campaign, always run) an uninitialized
    variable and a feed's NaN payload, in one kept memo."""
    from tfsem.oracle.jsonio import program_from_json
    p = program_from_json({
        "variables": {"x": {"dtype": "float32", "shape": [2]}},
        "feeds": {"f": {"dtype": "float32", "shape": [2]}},
        "nodes": [{"name": "v", "op": "Var", "var": "x"},
                  {"name": "r", "op": "Read", "inputs": ["v"]},
                  {"name": "s", "op": "Add", "inputs": ["r", "$f"]},
                  {"name": "w", "op": "Write", "inputs": ["v", "s"]}],
        "outputs": {"o": "s"}})
    nan = np.array([0x7FC00001, 0x80000000], np.uint32).view(np.float32)
    sigmas = [({"f": Tensor(nan)}, {"x": Error("uninitialized")}),
              ({"f": Tensor(nan)}, {"x": Tensor(np.zeros(2, np.float32))}),
              ({"f": Tensor(np.array([np.nan, 0.0], np.float32))},
               {"x": Tensor(np.zeros(2, np.float32))})]
    fresh = [_answer(p, f, i, "atomic", "outputs+state", False) for f, i in sigmas]
    for _ in range(2):
        with A.scope(owner=p):
            assert [_answer(p, f, i, "atomic", "outputs+state", False)
                    for f, i in sigmas] == fresh


@pytest.mark.skipif(not (NIGHTLY or os.environ.get("TFSEM_REVIEW_TF")),
                    reason="nightly profile or TFSEM_REVIEW_TF=1 (TensorFlow's kernels)")
def test_kernel_results_in_a_kept_memo_are_tensorflows_at_each_sigma():
    """An op with no model (tf.Bitcast) runs on TensorFlow's kernel; its
    applications kept across two checks' scopes at σ that differ only in a
    NaN's payload, a zero's sign, a subnormal: each answer is TensorFlow's
    (the bits read as int32) and the fresh run's; with kernels off in the
    same kept memo, the op cannot run (no remembered kernel result stands
    for it)."""
    pytest.importorskip("tensorflow")
    from tfsem.oracle import kernels
    from tfsem.oracle.jsonio import program_from_json
    p = program_from_json({
        "variables": {}, "feeds": {"f": {"dtype": "float32", "shape": [4]}},
        "nodes": [{"name": "b", "op": "tf.Bitcast/1/1", "inputs": ["$f"],
                   "tf_attrs": {"T": "DT_FLOAT", "type": "DT_INT32"}},
                  {"name": "n", "op": "Neg", "inputs": ["$f"]},
                  {"name": "c", "op": "tf.Bitcast/1/1", "inputs": ["n"],
                   "tf_attrs": {"T": "DT_FLOAT", "type": "DT_INT32"}}],
        "outputs": {"b": "b", "c": "c"}})
    words = [[0x3F800000, 0x7FC00000, 0x00000000, 0x00000001],
             [0x3F800000, 0x7FC00001, 0x00000000, 0x00000001],
             [0x3F800000, 0xFFC00000, 0x80000000, 0x80000001],
             [0x3F800000, 0x7FC00000, 0x80000000, 0x00000001]]
    sigmas = [{"f": Tensor(np.array(w, np.uint32).view(np.float32))} for w in words]
    with kernels.use(True):
        fresh = [ref.canonical_outcome(p, s, {}, "atomic", "outputs")[0] for s in sigmas]
        for s, o in zip(sigmas, fresh):
            bits = s["f"].array.view(np.int32)
            assert dict(o.outputs)["b"].array.tolist() == bits.tolist()
            neg = np.negative(s["f"].array).view(np.int32)    # (numpy's Neg flips the sign)
            assert dict(o.outputs)["c"] == Tensor(neg)
        for order in ([0, 1, 2, 3, 0, 1, 2, 3], [3, 2, 1, 0, 1, 3]):
            with A.scope(owner=p):
                for k in order:
                    got = ref.canonical_outcome(p, sigmas[k], {}, "atomic", "outputs")[0]
                    assert exact_outcome(got) == exact_outcome(fresh[k]), k
                    rebuilt = {"f": Tensor(sigmas[k]["f"].array.copy())}
                    got = ref.canonical_outcome(p, rebuilt, {}, "atomic", "outputs")[0]
                    assert exact_outcome(got) == exact_outcome(fresh[k]), k
            assert A.last["hits"] > 0
    with A.scope(owner=p), kernels.use(False), pytest.raises(fns.CannotRun):
        ref.canonical_outcome(p, sigmas[0], {}, "atomic", "outputs")


def test_concurrent_checks_share_one_memo_and_answer_as_alone():
    """`tfsem serve` runs checks in threads: a second check's scope, opened
    while the first is open, shares its memo (owned by the first's
    original).  Canonical runs of different originals and their rewrites,
    in four threads at once at σ of the same bits, answer as fresh runs."""
    import threading

    from tfsem.generators.strategies import random_inputs, random_programs
    cases = []
    for i, p in enumerate(random_programs(16, 2206, max_nodes=9, dtype="float32")):
        sigma = random_inputs(p, i, edge_p=0.5)
        qs = [p] + [q for ps in _PASSES[:6] for q in [ps.function(p)] if q != p]
        for q in qs:
            for sem, obs in SETTINGS:
                cases.append((q, p, sigma, sem, obs))
    fresh = [_answer(q, *sigma, sem, obs, False) for q, _p, sigma, sem, obs in cases]
    got: dict[int, object] = {}
    barrier = threading.Barrier(4)

    def worker(w: int) -> None:
        barrier.wait()
        for k in range(w, len(cases), 4):
            q, p, (feeds, init), sem, obs = cases[k]
            rebuilt = {n: Tensor(v.array.copy()) if type(v) is Tensor else v
                       for n, v in feeds.items()}
            with A.scope(owner=p):
                got[k] = _answer(q, rebuilt, init, sem, obs, False)
    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [got[k] for k in range(len(cases))] == fresh


def test_the_numpy_replay_runs_the_function_now_registered(monkeypatch):
    """The numpy back end's replay is the independent confirmation of every
    `unsound`: a registry entry changed without `register` (a test's
    monkeypatch.setitem, the fixture undoing it: functions.version as it
    was) must be replayed as the function now registered, as the oracle
    runs it (review21's explore test, review22's canonical memo), not the
    one a program's tables looked up before.  (On replay13's branch as
    reviewed, backends/execute.py `compiled` kept the tables by
    functions.version alone and replayed the old function.)"""
    from tfsem.backends import execute as backend_execute
    from tfsem.oracle.jsonio import program_from_json

    def plus(k):
        return lambda xp, args, attrs: (args[0] + xp.float32(k),)
    monkeypatch.setitem(fns._REGISTRY, "Review22Replay",
                        fns.Function("Review22Replay", 1, 1, plus(1)))
    p = program_from_json({
        "variables": {}, "feeds": {"f": {"dtype": "float32", "shape": [2]}},
        "nodes": [{"name": "u", "op": "Review22Replay", "inputs": ["$f"]}],
        "outputs": {"out": "u"}})
    feeds = {"f": Tensor(np.array([1.0, 2.0], np.float32))}
    for k in (1, 10):
        monkeypatch.setitem(fns._REGISTRY, "Review22Replay",
                            fns.Function("Review22Replay", 1, 1, plus(k)))
        oracle = ref.canonical_outcome(p, feeds, {}, "atomic", "outputs")[0]
        replayed = backend_execute.replay(p, feeds, {}, ["u"], "numpy", "atomic", "outputs")
        assert dict(oracle.outputs)["out"].array.tolist() == [1.0 + k, 2.0 + k]
        assert exact_outcome(replayed) == exact_outcome(oracle), k


@pytest.mark.skipif(not (NIGHTLY or os.environ.get("TFSEM_REVIEW_TF")),
                    reason="nightly profile or TFSEM_REVIEW_TF=1 (TensorFlow's kernels)")
def test_a_confirmation_with_kernels_off_does_not_stand_on_a_kernels_result():
    """The numpy replay of an op with no model runs TensorFlow's kernel
    only where kernels are on; a confirmation at the same σ with kernels
    off (a thread's `kernels.use(False)`) cannot run the original's witness,
    as a fresh replay cannot.  (On replay13's branch as reviewed, the
    session of σ, backends/reuse.py, kept the first confirmation's replay
    of the original and confirmed again with kernels off.)"""
    pytest.importorskip("tensorflow")
    from tfsem.backends.confirm import confirm_details
    from tfsem.oracle import kernels
    from tfsem.oracle.jsonio import program_from_json
    p = program_from_json({
        "variables": {}, "feeds": {"f": {"dtype": "float32", "shape": [1]}},
        "nodes": [{"name": "b", "op": "tf.Bitcast/1/1", "inputs": ["$f"],
                   "tf_attrs": {"T": "DT_FLOAT", "type": "DT_INT32"}}], "outputs": {"o": "b"}})
    q = program_from_json({
        "variables": {}, "feeds": {"f": {"dtype": "float32", "shape": [1]}},
        "nodes": [{"name": "b", "op": "Const", "value": {"dtype": "int32", "value": [0]}}],
        "outputs": {"o": "b"}})
    feeds = {"f": Tensor(np.array([1.0], np.float32))}
    with kernels.use(True):
        oset = outcome_set(p, feeds, {}, "atomic", "outputs")
        (c,) = confirm_details(p, q, feeds, {}, ["b"], "atomic", "outputs",
                               original_outcomes=oset, backends=["numpy"])
        assert c.confirmed, c.reason
    with kernels.use(False), pytest.raises(fns.CannotRun):
        confirm_details(p, q, feeds, {}, ["b"], "atomic", "outputs", original_outcomes=oset,
                        backends=["numpy"])


def test_a_kept_memo_does_not_keep_every_rewrites_constants():
    """One original checked against many rewrites, each with Consts of its
    own (what constant folding makes): the memo kept for the original must
    not hold every rewrite's Consts (they were interned uncounted: 120
    checks with a 4 MiB Const held 480 MiB)."""
    import dataclasses

    from tfsem.oracle.jsonio import program_from_json
    from tfsem.oracle.program import Node
    doc = {"variables": {}, "feeds": {"f": {"dtype": "float32", "shape": [1]}},
           "nodes": [{"name": "c", "op": "Const", "value": {"dtype": "float32", "value": [0.5]}},
                     {"name": "o", "op": "Add", "inputs": ["$f", "c"]}], "outputs": {"o": "o"}}
    p = program_from_json(doc)
    feeds = {"f": Tensor(np.array([1.0], np.float32))}
    sizes = []
    for k in range(30):
        big = Tensor(np.full(1 << 14, float(k), np.float32))
        q = program_from_json(doc)
        q = dataclasses.replace(q, nodes=q.nodes + (Node("big", "Const", (), {"value": big}),))
        with A.scope(owner=p):
            want = ref.canonical_outcome(p, feeds, {}, "atomic", "outputs")[0]
            assert ref.canonical_outcome(q, feeds, {}, "atomic", "outputs")[0] == want
            memo = A.active()
        sizes.append(sum(t.array.nbytes for t in memo.interned.values()))
        del q, big
    assert max(sizes[10:]) <= 3 * (1 << 16), sizes


@pytest.mark.parametrize("change", ["list", "nested", "float-sign", "array", "key"])
def test_attributes_changed_in_place_are_keyed_again(change):
    """A caller that reuses an attributes dict and changes it in place (a
    list in it, a list in a tuple, a float's sign, an array, a key added)
    gets the fresh application's answer, not the one remembered for the
    dict as it was."""
    f = fns.Function("Review22Attrs", 1, 1, lambda xp, args, attrs: (
        args[0] + xp.float64(np.sum(np.copysign(1.0, np.asarray(attrs["a"], np.float64)))
                             + 10 * len(attrs)),))
    x = Tensor(np.array([0.0]))
    attrs = {"list": {"a": [1.0]}, "nested": {"a": ([1.0],)}, "float-sign": {"a": [0.0]},
             "array": {"a": np.array([1.0])}, "key": {"a": [1.0]}}[change]
    with A.scope():
        before = f.apply([x], attrs)[0]
        if change == "nested":
            attrs["a"][0][0] = -1.0
        elif change == "float-sign":
            attrs["a"][0] = -0.0
        elif change == "key":
            attrs["b"] = 1
        else:
            attrs["a"][0] = -1.0
        after = f.apply([x], attrs)[0]
    assert after == f.apply([x], attrs)[0]     # (no scope: a fresh application)
    assert after != before


@SOME
@given(st.data())
@pytest.mark.usefixtures("kernels_off_unless_asked")
def test_control_flow_check_verdicts_with_the_memos_equal_those_without(data):
    """Programs with conditionals and loops (the control-flow engine applies
    functions through `Function.apply`, inside the check's scope): the same
    verdicts with both memos on (twice) and off."""
    from tfsem.generators.control_flow import control_flow_programs
    p = data.draw(control_flow_programs(max_blocks=2, bounded_trips=True))
    sem, obs = data.draw(st.sampled_from(SETTINGS))
    rewrites = _rewrites(p, 3)
    got = {env: [v.verdict for v in vs]
           for env, vs in _checks_off_and_on(p, rewrites, sem, obs).items()}
    n = len(rewrites)
    STATS["cf_checks"] = STATS.get("cf_checks", 0) + 3 * n
    for k, v in enumerate(got["0"]):
        STATS["verdicts"]["cf-" + v] = STATS["verdicts"].get("cf-" + v, 0) + 1
        if v == "unknown":
            continue     # (a budget's doing: the memo makes runs faster)
        assert got["1"][k] in (v, "unknown") and got["1"][n + k] in (v, "unknown"), (k, got)
