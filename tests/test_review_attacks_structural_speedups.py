"""Review 18: attacks on the structural rule's fifth round (the deadline, the
product by one as one rule, the speedups; docs/review-structural-speedups.md).

- The deadline: a clock that jumps past the deadline at its k-th reading,
  for every k up to the number of readings a proof takes: the rule never
  proves anything once it has read a time past its deadline (an
  `_OutOfTime` swallowed anywhere would let a proof through).
- Attribute keys (`_exact`'s fast path by exact type): 1, 1.0, True, -0.0,
  0.0, [1], (1,) are all distinct keys, as before the fast path.
- The applications' memo (`_Terms.apply`): on generated program pairs
  (benchmarks/review_structural_campaign.py's generator: products by ones
  of several kinds, Reshapes to the argument's own shape, Identity), the
  rule with the memo gives the same result as computing every application,
  and every proof agrees with the enumerating oracle at σ of edge values.
"""

from __future__ import annotations

import importlib.util
import random
import time
import types
from pathlib import Path

import pytest
from hypothesis import settings

from tfsem.checking import structural
from tfsem.checking.structural import NO_PROOF_BUDGET, _exact, structural_refinement
from tfsem.oracle.jsonio import program_from_json

NIGHTLY = settings.get_current_profile_name() == "nightly"


def _campaign():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "review_structural_campaign.py"
    spec = importlib.util.spec_from_file_location("review_structural_campaign", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _pair():
    """A chain over a Read with flushed sums, products by one of flushed
    values (removed in the rewrite, (R4)), a Reshape to its own shape and
    a write back: the rule proves it only by (R4) and (S)."""
    def prog(with_ones: bool):
        nodes = [{"name": "v", "op": "Var", "var": "x"},
                 {"name": "r", "op": "Read", "inputs": ["v"]},
                 {"name": "one", "op": "Const", "value": {"dtype": "float32", "value": 1.0}}]
        prev = "r"
        for i in range(150):
            nodes.append({"name": f"s{i}", "op": "Add.ftz", "inputs": [prev, "$b"]})
            prev = f"s{i}"
            if with_ones and i % 3 == 0:
                nodes.append({"name": f"m{i}", "op": "Mul.ftz", "inputs": ["one", prev]})
                prev = f"m{i}"
            if with_ones and i % 5 == 0:
                nodes.append({"name": f"h{i}", "op": "Reshape", "shape": [4], "inputs": [prev]})
                prev = f"h{i}"
        nodes.append({"name": "w", "op": "Write", "inputs": ["v", prev, "^r"]})
        return program_from_json({
            "format": "tfsem.program/1", "variables": {"x": {"dtype": "float32", "shape": [4]}},
            "feeds": {"b": {"dtype": "float32", "shape": [4]}},
            "nodes": nodes, "outputs": {"out": prev}})
    return prog(True), prog(False)


class _Clock:
    """time.monotonic past the deadline (1.0) from its `jump`-th reading on."""

    def __init__(self, jump: float) -> None:
        self.jump, self.reads = jump, 0

    def monotonic(self) -> float:
        self.reads += 1
        return 0.0 if self.reads < self.jump else 10.0


def _with_clock(monkeypatch, clock: _Clock) -> None:
    fake = types.SimpleNamespace(monotonic=clock.monotonic, perf_counter=time.perf_counter)
    monkeypatch.setattr(structural, "time", fake)


@pytest.mark.parametrize("warm", [False, True])
def test_no_proof_once_the_clock_has_passed_the_deadline(monkeypatch, warm):
    """`warm`: the original's half remembered from an earlier call (the
    rule's memo per original), else the memo off: every call computes it."""
    p, q = _pair()
    if warm:
        assert structural_refinement(p, q).proved
    else:
        monkeypatch.setattr(structural, "ORIGINAL_MEMO", False)
    free = _Clock(float("inf"))
    _with_clock(monkeypatch, free)
    r = structural_refinement(p, q, deadline=1.0)
    assert r.proved, r.reason
    readings = free.reads
    assert readings >= 20               # (the rule reads the clock all along)
    step = 1 if NIGHTLY else max(1, readings // 40)
    for jump in range(1, readings + 1, step):
        clock = _Clock(jump)
        _with_clock(monkeypatch, clock)
        r = structural_refinement(p, q, deadline=1.0)
        assert not r.proved, (jump, readings)
        assert r.reason == NO_PROOF_BUDGET and r.stats.get("budget") is True, jump
        # (stopped at the first reading past the deadline)
        assert clock.reads == jump, (jump, clock.reads)


@pytest.mark.parametrize("a, b", [(1, 1.0), (1, True), (0, False), (1.0, True), (0.0, -0.0),
                                  ([1], (1,)), ([1], [1.0]), ({"k": 1}, {"k": True}),
                                  ("1", 1), (None, 0), (float("inf"), float("-inf"))])
def test_attribute_keys_tell_apart_what_python_finds_equal(a, b):
    assert _exact(a) != _exact(b)
    assert _exact(a) == _exact(a) and hash(_exact(a)) == hash(_exact(a))


def test_the_memo_changes_no_result_and_every_proof_agrees_with_the_oracle(monkeypatch):
    camp = _campaign()
    rng = random.Random(1818)
    pairs = []
    while len(pairs) < (400 if NIGHTLY else 40):
        nodes, outputs, writes = camp._gen(rng)
        opts = [x["name"] for x in nodes if x.get("opt")]
        if not opts:
            continue
        keep_p = {o for o in opts if rng.random() < 0.5}
        keep_q = (keep_p ^ {rng.choice(opts)})
        pairs.append((camp._instance(nodes, outputs, writes, keep_p),
                      camp._instance(nodes, outputs, writes, keep_q),
                      rng.choice(["atomic", "decomposed"]),
                      rng.choice(["outputs", "outputs+state"])))
    with_memo = [structural_refinement(p, q, s, o) for p, q, s, o in pairs]
    monkeypatch.setattr(structural._Terms, "apply",
                        lambda self, op, attrs, args, n_out: self._apply(op, attrs, args, n_out))
    without = [structural_refinement(p, q, s, o) for p, q, s, o in pairs]
    assert [(r.proved, r.reason) for r in with_memo] == [(r.proved, r.reason) for r in without]
    proved = 0
    for (p, q, s, o), r in zip(pairs, with_memo):
        if r.proved:
            proved += 1
            assert camp.new_outcome(p, q, s, o, rng) is None, (p, q, s, o)
    assert proved >= len(pairs) // 5


def _chain(op: str, n: int):
    nodes = [{"name": "v", "op": "Var", "var": "x"}, {"name": "r", "op": "Read", "inputs": ["v"]}]
    prev = "r"
    for i in range(n):
        nodes.append({"name": f"a{i}", "op": op, "inputs": [prev, "$b"]})
        prev = f"a{i}"
    return program_from_json({
        "format": "tfsem.program/1", "variables": {"x": {"dtype": "float32", "shape": [4]}},
        "feeds": {"b": {"dtype": "float32", "shape": [4]}},
        "nodes": nodes, "outputs": {"out": prev}})


def test_the_data_inputs_cache_never_answers_for_a_dead_program_with_the_same_id():
    """`oracle/static_shapes.data_inputs` is keyed by id(program): a Program
    freed and another allocated at the same address gets its own data
    inputs, not the dead one's.  (CPython reuses addresses, though not
    reliably here: the collision is made by hand, the dead program's entry
    put under the live one's id.)"""
    from tfsem.oracle import static_shapes as ss
    a = _chain("Add", 3)
    ss.data_inputs(a)
    stale = ss._DATA_INPUTS[id(a)]
    b = _chain("Sub", 5)
    try:
        del a
        assert stale[0]() is None                      # (a is gone)
        ss._DATA_INPUTS[id(b)] = stale
        got = ss.data_inputs(b)
        assert set(got) == {n.name for n in b.nodes}
        assert all(got[n.name] == n.data_inputs for n in b.nodes)
        assert ss.data_inputs(b) is got                # (and kept for b)
    finally:
        ss._DATA_INPUTS.pop(id(b), None)


def test_loops_unchanged_no_proof_once_the_clock_has_passed_the_deadline(monkeypatch):
    """The same for the rule on programs with loops (its own readings and
    the structural rule's on the parts outside the loops, one clock)."""
    import importlib

    from tfsem.checking import structural_loops
    loops = importlib.import_module("test_check_structural_loops")
    p = loops.reading_loop()
    q = loops.with_identity(p)

    def use(clock: _Clock) -> None:
        fake = types.SimpleNamespace(monotonic=clock.monotonic, perf_counter=time.perf_counter)
        monkeypatch.setattr(structural, "time", fake)
        monkeypatch.setattr(structural_loops, "time", fake)
    free = _Clock(float("inf"))
    use(free)
    assert structural_loops.loops_unchanged(p, q, deadline=1.0).proved
    readings = free.reads
    assert readings >= 3
    for jump in range(1, readings + 1):
        clock = _Clock(jump)
        use(clock)
        r = structural_loops.loops_unchanged(p, q, deadline=1.0)
        assert not r.proved and r.reason == NO_PROOF_BUDGET and r.stats.get("budget"), jump
