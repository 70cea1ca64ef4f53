"""Adversarial review of the canonical run's new shortcuts, each against the
path it skips:

1. the straight line (oracle/explore.py `_Line`, `refute.canonical_outcome`:
   a component run before replays the steps a dry run recorded) against the
   engine (`explore.STRAIGHT_LINE = False`);
2. each node's last application kept by the line inside an application memo
   (arguments by identity, under the memo's serial, kernels on/off and the
   size limit) against the memo's own lookup and a fresh run;
3. the memo's attributes keyed by one number per exact key
   (oracle/applications.py `attrs_token`).

What held, as differential tests: generated programs of eight dtypes at σ
of NaN payloads, -0.0, subnormals, infinities, the largest floats, integer
extremes and uninitialized variables, in both semantics and both
observations, σ met in sequence, back and forth, and made again (the same
bits, new objects), outside and inside a memo; functions that raise
CannotRun at some σ only, give an error value at others and answer
differently with kernels on and off, with kernels forced on and off and the
tensor size limit lowered and raised between runs inside one memo; a
function replaced inside one memo (registered again, or by hand); the
attributes' numbers of a mapping freed and a new one at its address.

What broke (each fixed since, the test kept as its guard: the line's tag
holds the program's topological order, refute.canonical_outcome; the key
and its kept applications are one attribute read once, explore._Line.kept):

* the line is kept with the compiled component, which programs *equal* as
  values share (`explore._COMPILED` is keyed by program equality, and
  `Program.__eq__` ignores the order the nodes are declared in), but its
  order is the topological order of the program that built it, ties broken
  by declaration order: an equal program declared in another order replays
  the other's order, so its "canonical" run is another run (another
  schedule and, where there is a race, another outcome) than its engine's.
  No verdict found wrong by it: that run is still a run of the program (the
  same nodes and edges), and each user of the canonical run either needs a
  race-free program (one outcome, whatever the order) or confirms the
  outcome it found; what changes is which run is called canonical (the
  probe's outcome of a racy rewrite, the schedule a counterexample shows,
  what checking/canonical_memo.py remembers), by the history of the
  process;
* the line's kept applications are read in two steps (`self.keyed` checked,
  then `self.last` read): a run of another thread in between under another
  key (kernels forced off in one, on in the other) leaves this run reading
  the other's answers.  Latent: on CPython 3.11 with its GIL no thread
  switch can fall between those two statements (no eval-breaker check
  there), but one can under a free-threaded build, a trace function, or
  any call put between them.  Simulated here deterministically by a trace
  hook that runs the other thread's run at that point.
"""

from __future__ import annotations

import contextlib
import random
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.checking import check as C
from tfsem.checking import refute as ref
from tfsem.generators.strategies import inputs_for, programs, random_programs
from tfsem.oracle import applications, explore, kernels
from tfsem.oracle import functions as fns
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.program import ControlIn, Node, Program
from tfsem.oracle.values import DTYPES, UNINITIALIZED, Error, Tensor, exact
from tfsem.rewrites import builtin_passes

SETTINGS = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]


@pytest.fixture(autouse=True)
def _no_kernels(monkeypatch):
    # (TensorFlow's kernels off unless a test forces them: no child process;
    # the kernels' part of the key is exercised with use() and by functions
    # that answer by kernels.enabled())
    monkeypatch.setenv(kernels.ENV, "0")
    monkeypatch.setattr(fns, "_REGISTRY", dict(fns._REGISTRY))


def _bits(outcome):
    out = []
    for k, v in outcome.parts():
        e = exact(v)
        out.append((k, (e.array.dtype.str, e.array.shape, e.array.tobytes())
                    if isinstance(e, Tensor) else repr(e)))
    return out


def _answer(p, feeds, init, sem, obs, line: bool, monkeypatch):
    monkeypatch.setattr(explore, "STRAIGHT_LINE", line)
    try:
        o, sched = ref.canonical_outcome(p, feeds, init, sem, obs)
    except Exception as exc:  # noqa: BLE001 (compared: the same failure)
        return ("raised", type(exc).__name__, str(exc))
    return (o, tuple(sched), _bits(o))


def _same(fast, slow, where) -> None:
    if fast[0] == "raised" or slow[0] == "raised":
        assert fast == slow, where
        return
    assert fast[1] == slow[1], where            # (the schedule)
    assert fast[2] == slow[2], where            # (the outcome, bit for bit)
    assert fast[0] == slow[0], where


def _lines(p) -> int:
    """The straight lines kept with p's compiled components (whatever
    their tag: a fix may key them by more than "canonical")."""
    return sum(1 for t in (explore._COMPILED.get(p) or {}).values()
               for k, v in t.__dict__.get("_shared", {}).items()
               if type(k) is tuple and k[:1] == ("line",) and v)


def _special(t, kind: str, rng) -> Tensor:
    """A tensor of type t full of an edge value of `kind`."""
    d = np.dtype(DTYPES[t.dtype])
    shape = tuple(t.shape)
    n = int(np.prod(shape)) if shape else 1
    if t.dtype in ("float32", "float64") and kind == "nan":
        # (NaN payloads and signs: quiet, signalling, negative)
        words = ([0x7FC00001 + int(rng.integers(0, 7)), 0xFFC00003, 0x7F800001]
                 if t.dtype == "float32" else
                 [0x7FF8000000000001 + int(rng.integers(0, 7)), 0xFFF8000000000003])
        u = np.uint32 if t.dtype == "float32" else np.uint64
        arr = np.array([words[i % len(words)] for i in range(n)], u).view(d)
        return Tensor(arr.reshape(shape), t.dtype)
    if d.kind == "f":
        value = {"nan": np.nan, "negzero": -0.0, "tiny": np.finfo(d).smallest_subnormal,
                 "inf": -np.inf, "big": np.finfo(d).max}[kind]
        return Tensor(np.full(shape, value, d), t.dtype)
    if d.kind == "b":
        return Tensor(np.full(shape, kind in ("inf", "big")), "bool")
    info = np.iinfo(d)
    value = {"nan": info.min, "negzero": 0, "tiny": info.min + 1, "inf": info.max,
             "big": info.max - 1}[kind]
    return Tensor(np.full(shape, value, d), t.dtype)


def _sigmas(p, rng) -> list[tuple[dict, dict]]:
    """Three of the refutation's σ, then σ of each edge kind (each variable
    left uninitialized a fifth of the time), then one with every variable
    uninitialized."""
    gen = C._refute_sigmas(p, rng)
    out = [next(gen) for _ in range(3)]
    for kind in ("nan", "negzero", "tiny", "inf", "big"):
        feeds = {f: _special(p.feed_type(f), kind, rng) for f in p.feed_names}
        init = {x: (_special(p.variables[x], kind, rng) if rng.random() < 0.8
                    else Error(UNINITIALIZED)) for x in sorted(p.variables)}
        out.append((feeds, init))
    out.append(({f: _special(p.feed_type(f), "big", rng) for f in p.feed_names}, {}))
    return out


def _remade(sigma):
    """σ of the same bits, every tensor a new object."""
    feeds, init = sigma
    again = (lambda v: Tensor(v.array.copy(), v.dtype) if isinstance(v, Tensor) else v)
    return {k: again(v) for k, v in feeds.items()}, {k: again(v) for k, v in init.items()}


# -- 1. the straight line ------------------------------------------------------------


def _racing_writes(order: list[str]) -> Program:
    nodes = {"v": {"name": "v", "op": "Var", "var": "x"},
             "c1": {"name": "c1", "op": "Const", "value": {"dtype": "float32", "value": 1.0}},
             "c2": {"name": "c2", "op": "Const", "value": {"dtype": "float32", "value": 2.0}},
             "a1": {"name": "a1", "op": "Assign", "fn": "Snd", "inputs": ["v", "c1"]},
             "a2": {"name": "a2", "op": "Assign", "fn": "Snd", "inputs": ["v", "c2"]}}
    return program_from_json({"format": "tfsem.program/1",
                              "variables": {"x": {"dtype": "float32", "shape": []}},
                              "nodes": [nodes[k] for k in order], "outputs": {}})


def test_an_equal_program_declared_in_another_order_runs_in_its_own_order(monkeypatch):
    p1 = _racing_writes(["v", "c1", "c2", "a1", "a2"])
    p2 = _racing_writes(["v", "c2", "c1", "a2", "a1"])
    assert p1 == p2 and p1.topological_order != p2.topological_order
    # (the engine: each program in its own order, two different runs)
    engine2 = _answer(p2, {}, {}, "atomic", "outputs+state", False, monkeypatch)
    assert engine2[1][-2:] == ("a2", "a1")
    assert _answer(p1, {}, {}, "atomic", "outputs+state", False, monkeypatch)[1][-2:] == \
        ("a1", "a2")
    # p1 run twice: its line is built, in p1's order
    for _ in range(2):
        _answer(p1, {}, {}, "atomic", "outputs+state", True, monkeypatch)
    assert _lines(p1) == 1
    # p2 on the line: p1's order, x = 2.0 instead of 1.0
    _same(_answer(p2, {}, {}, "atomic", "outputs+state", True, monkeypatch), engine2, "p2")


def test_the_line_is_the_engines_run_at_edge_sigmas_of_every_dtype(monkeypatch):
    """Outside a memo and inside one (σ forward, back, and made again): the
    line's outcome bit for bit, its schedule and its failures are the
    engine's, at σ of edge values in eight dtypes."""
    compared = on_lines = 0
    cases = [(301, "int64", 14, {}), (302, "float32", 14, {}), (303, "float64", 12, {}),
             (304, "int32", 12, {}), (305, "bool", 10, {}), (306, "float16", 12, {}),
             (307, "uint8", 12, {"control_density": 0.7}),
             (308, "float32", 24, {"n_variables": 1})]
    for seed, dtype, max_nodes, options in cases:
        for i, p in enumerate(random_programs(14, seed, max_nodes=max_nodes, dtype=dtype,
                                              **options)):
            if p.has_control_flow:
                continue
            rng = np.random.default_rng([seed, i])
            sem, obs = SETTINGS[i % 4]
            sigmas = _sigmas(p, rng)
            slow = [_answer(p, f, x, sem, obs, False, monkeypatch) for f, x in sigmas]
            for _repeat in range(2):       # (the engine's run, the line's build, the line)
                for k, (f, x) in enumerate(sigmas):
                    _same(_answer(p, f, x, sem, obs, True, monkeypatch), slow[k], (seed, i, k))
                    compared += 1
            with applications.scope(p):
                for k in list(range(len(sigmas))) + list(range(len(sigmas)))[::-1]:
                    f, x = sigmas[k] if rng.random() < 0.6 else _remade(sigmas[k])
                    _same(_answer(p, f, x, sem, obs, True, monkeypatch), slow[k],
                          (seed, i, k, "memo"))
                    compared += 1
            on_lines += _lines(p) > 0
    assert compared >= 3000 and on_lines >= 100, (compared, on_lines)


def _flaky(xp, args, attrs):
    a, b = args
    if a.dtype.kind == "f" and (np.isnan(a).any() or np.isnan(b).any()) and np.signbit(a).any():
        raise fns.CannotRun("flaky: a negative NaN")
    with np.errstate(all="ignore"):
        s = a + b
    if s.size and (s.astype(np.float64) > 2).all():
        raise fns.OpError("flaky-big")
    return (s * 3 if kernels.enabled() else s,)


def _flaky1(xp, args, attrs):
    (a,) = args
    if a.size and a.dtype.kind in "iu" and (a == np.iinfo(a.dtype).min).any():
        raise fns.CannotRun("flaky1: the least integer")
    return (-a if kernels.enabled() else a,)


def _with_flaky_functions(p: Program, r: random.Random) -> Program:
    nodes = []
    for n in p.nodes:
        if n.op in ("Add", "Mul", "Sub", "Max") and r.random() < 0.5:
            n = n.replace(op="review15_flaky")
        elif n.op in ("Neg", "Identity") and r.random() < 0.5:
            n = n.replace(op="review15_flaky1")
        nodes.append(n)
    return Program(variables=p.variables, nodes=tuple(nodes), outputs=p.outputs, feeds=p.feeds)


def test_failures_at_some_sigma_kernels_and_the_size_limit_toggled_in_one_memo(monkeypatch):
    """Functions that raise CannotRun at some σ only, give an error value at
    others and answer by kernels on/off; inside one memo each run under a
    mode drawn at random (kernels forced on, off or by the environment; the
    size limit lowered so that some applications pass it): the line's
    answer is the engine's under the same mode, failures included."""
    fns.register(fns.Function("review15_flaky", 2, 1, _flaky, family="tensorflow"))
    fns.register(fns.Function("review15_flaky1", 1, 1, _flaky1, family="tensorflow"))
    modes = [(None, 1 << 24), (True, 1 << 24), (False, 1 << 24), (None, 24), (True, 4)]
    compared = raised = 0
    for seed, dtype, max_nodes in [(311, "float32", 14), (312, "int64", 14), (313, "int8", 12),
                                   (314, "float64", 18)]:
        for i, p0 in enumerate(random_programs(12, seed, max_nodes=max_nodes, dtype=dtype)):
            if p0.has_control_flow:
                continue
            r = random.Random(f"{seed}:{i}")
            p = _with_flaky_functions(p0, r)
            rng = np.random.default_rng([seed, i])
            sem, obs = SETTINGS[i % 4]
            sigmas = _sigmas(p, rng)
            slow = {}
            for on, limit in modes:
                monkeypatch.setattr(fns, "MAX_TENSOR_ELEMENTS", limit)
                with kernels.use(on) if on is not None else contextlib.nullcontext():
                    slow[(on, limit)] = [_answer(p, f, x, sem, obs, False, monkeypatch)
                                         for f, x in sigmas]
            with applications.scope(p):
                for _repeat in range(3):
                    for k in range(len(sigmas)):
                        on, limit = modes[r.randrange(len(modes))]
                        monkeypatch.setattr(fns, "MAX_TENSOR_ELEMENTS", limit)
                        f, x = sigmas[k] if r.random() < 0.7 else _remade(sigmas[k])
                        with kernels.use(on) if on is not None else contextlib.nullcontext():
                            fast = _answer(p, f, x, sem, obs, True, monkeypatch)
                        _same(fast, slow[(on, limit)][k], (seed, i, k, on, limit))
                        compared += 1
                        raised += fast[0] == "raised"
    assert compared >= 1000 and raised >= 30, (compared, raised)


def test_a_function_replaced_inside_one_memo_is_not_answered_from_the_line(monkeypatch):
    def times(k):
        return lambda xp, args, attrs: (args[0] * k,)
    fns.register(fns.Function("review15_replaced", 1, 1, times(5), family="tensorflow"))
    p = program_from_json({"format": "tfsem.program/1", "variables": {},
                           "feeds": {"a": {"dtype": "int64", "shape": [1]}},
                           "nodes": [{"name": "o", "op": "review15_replaced", "inputs": ["$a"]},
                                     {"name": "q", "op": "Identity", "inputs": ["o"]}],
                           "outputs": {"o": "q"}})
    sigma = {"a": Tensor(np.array([2]))}

    def out():
        return int(dict(_answer(p, sigma, {}, "atomic", "outputs", True, monkeypatch)[0]
                        .outputs)["o"].array[0])
    with applications.scope(p):
        assert [out() for _ in range(3)] == [10, 10, 10]
        fns.register(fns.Function("review15_replaced", 1, 1, times(7), family="tensorflow"),
                     replace=True)
        assert [out() for _ in range(3)] == [14, 14, 14]
        fns._REGISTRY["review15_replaced"] = fns.Function("review15_replaced", 1, 1, times(3),
                                                          family="tensorflow")
        assert [out() for _ in range(3)] == [6, 6, 6]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data(), st.sampled_from(["float32", "int64", "float64", "int8"]),
       st.sampled_from(SETTINGS))
def test_hypothesis_programs_at_edge_inputs_in_sequence(data, dtype, setting):
    """Hypothesis's programs (biased to races, by design) at inputs drawn
    mostly from edge values with variables often uninitialized, three in a
    row inside one memo, each met twice: the line's answers are the
    engine's."""
    p = data.draw(programs(max_nodes=12, dtype=dtype))
    if p.has_control_flow:
        return
    sem, obs = setting
    sigmas = [data.draw(inputs_for(p, uninitialized_p=0.3, edge_p=0.6)) for _ in range(3)]
    with pytest.MonkeyPatch.context() as mp:
        slow = [_answer(p, f, x, sem, obs, False, mp) for f, x in sigmas]
        with applications.scope(p):
            for k in [0, 1, 2, 0, 2, 1, 1, 0]:
                _same(_answer(p, *sigmas[k], sem, obs, True, mp), slow[k], k)


def _without_a_control_edge(p: Program, r: random.Random) -> Program | None:
    edges = [(n.name, e) for n in p.nodes for e in n.inputs if isinstance(e, ControlIn)]
    if not edges:
        return None
    name, edge = r.choice(edges)
    nodes = [Node(n.name, n.op, tuple(e for e in n.inputs if e != edge), n.attrs)
             if n.name == name else n for n in p.nodes]
    try:
        return p.replace(nodes=nodes).validated()
    except Exception:  # noqa: BLE001 (a program without it that is not valid: none)
        return None


@pytest.mark.parametrize("dtype,seed", [("int64", 406), ("float32", 407)])
def test_check_verdicts_with_the_line_and_without(dtype, seed, monkeypatch):
    """The checker's verdicts on generated pairs (the builtin passes'
    rewrites, and P without one of its control edges), the enumerating
    path (no structural rule), with the canonical run on its line and on
    the engine.  (Verdicts only: the σ a counterexample shows may differ
    between two checks of one pair in one process with the line off and
    every memo off too, so it is no measure of the line.)"""
    passes = builtin_passes()
    compared = unsound = 0
    for i, p in enumerate(random_programs(40, seed, max_nodes=10, dtype=dtype)):
        if p.has_control_flow:
            continue
        r = random.Random(i)
        rewrites = [q for ps in passes.values() for q in [ps.function(p)] if q != p]
        dropped = _without_a_control_edge(p, r)
        rewrites += [dropped] if dropped is not None else []
        for q in rewrites[:2]:
            sem, obs = SETTINGS[i % 4]
            verdicts = []
            for line in (False, True):
                monkeypatch.setattr(explore, "STRAIGHT_LINE", line)
                verdicts.append(C.check_rewrite(p, q, sem, obs, timeout=10, seed=i,
                                                backends=False, structural=False).verdict)
            assert verdicts[0] == verdicts[1], (dtype, i, sem, obs)
            compared += 1
            unsound += verdicts[0] == "unsound"
    assert compared >= 50 and unsound >= 5, (compared, unsound)


# -- 2. a node's last application ----------------------------------------------------


def test_a_line_rekeyed_by_another_thread_between_its_check_and_its_read(monkeypatch):
    def kernel_only(xp, args, attrs):
        if not kernels.enabled():
            raise fns.CannotRun("no model: a kernel only")
        return (args[0] * 2,)
    fns.register(fns.Function("review15_kernel_only", 1, 1, kernel_only, family="tensorflow"))
    p = program_from_json({"format": "tfsem.program/1", "variables": {},
                           "feeds": {"a": {"dtype": "int64", "shape": [1]}},
                           "nodes": [{"name": "o", "op": "review15_kernel_only",
                                      "inputs": ["$a"]}],
                           "outputs": {"o": "o"}})
    sigma = {"a": Tensor(np.array([3]))}
    monkeypatch.setattr(explore, "STRAIGHT_LINE", True)

    def run():
        return ref.canonical_outcome(p, sigma, {}, "atomic", "outputs")

    fired = []

    def other_thread():
        # (a run of another thread: kernels forced on there)
        with kernels.use(True):
            assert dict(run()[0].outputs)["o"] == Tensor(np.array([6]))
        fired.append(True)

    def tracer(frame, event, arg):
        if event == "call":
            inside = frame.f_code.co_name == "run" and \
                isinstance(frame.f_locals.get("self"), explore._Line)
            return tracer if inside else None
        # (the preemption: after this run's key is made and compared, at its
        # first line that does not touch `keyed`)
        if event == "line" and not fired and "key" in frame.f_locals:
            import linecache
            text = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
            if "keyed" not in text and "key =" not in text:
                other_thread()
        return tracer

    with applications.scope(p), kernels.use(False):
        for _ in range(2):                 # (the engine's run; the line's build and run)
            with pytest.raises(fns.CannotRun):
                run()
        old = sys.gettrace()
        sys.settrace(tracer)
        try:
            with pytest.raises(fns.CannotRun):
                run()
        finally:
            sys.settrace(old)
    assert fired


# -- 3. the attributes' numbers -------------------------------------------------------


class _Opaque:
    """An attribute value of a type the memo has no exact key for."""


def test_an_opaque_mapping_freed_gives_its_address_no_number_of_its_own():
    """A mapping keyed by its identity, dropped with the memo's tables, and
    a new one made at the same address: a new number, never the old one."""
    memo = applications._Memo()
    numbers = {}
    reused = 0
    for _ in range(200):
        a = {"x": _Opaque()}
        n = applications.attrs_token(memo, a)
        old = numbers.get(id(a))
        if old is not None:
            reused += 1
            assert n != old
        numbers[id(a)] = n
        applications.empty(memo)
        del a                        # (freed at once: nothing else holds it)
    if not reused:
        pytest.skip("no address was reused")
    assert len(set(numbers.values())) == len(numbers)
