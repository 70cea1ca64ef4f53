"""Adversarial review of "a race-free original's outcome set from one run"
(checking/check.py `_Checker.original_outcomes`, the probe's reuse of P's
one run, `both_race_free`; docs/review-race-free-shortcut.md).

The shortcut takes the outcome of one run of P, in its canonical order, as
the whole Outcomes(P, σ) where checking/structural.py `race_free(P)` holds.
A wrong `race_free` (or an engine whose one run is not every run) would make
the set too small, and an outcome of P' that P has too would be called a
counterexample: a false `unsound`.  Each program below is one of the
suspicions the review went through: update functions other than Snd
(AssignAdd, a scatter), decomposed updates, ordering by control edges only
and through NoOp groups, two handles of one variable, uninitialized reads
and error values reaching an Assign, NaN payloads shown through
PackScatter's bytes, a feed shared by several accesses and an input
control edge.  For each:

- `race_free` classifies it as the hb relation says (every two conflicting
  accesses ordered, or not);
- where it is race-free, every engine's enumeration has exactly one outcome
  at every σ tried (small, wide, uninitialized, every edge value, NaNs of
  two payloads), in both semantics modes and both observe settings, and the
  checker's one-run set is that outcome;
- the checker's verdict on each rewrite is the same with the shortcut on
  and off (with the probe forced on, as where TensorFlow's kernels are
  needed), and every `unsound` counterexample's outcome is outside the
  enumerated Outcomes(P, σ).

None of them found a false verdict (the review's campaigns neither); the
tests keep it so.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import settings

from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.checking import refute as ref
from tfsem.checking.structural import race_free
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json, program_to_json
from tfsem.oracle.readsfrom import Unsupported
from tfsem.oracle.values import Tensor

from test_check_one_outcome import as_if_kernels

NIGHTLY = settings.get_current_profile_name() == "nightly"
SETTINGS = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]
ENGINES = ("reference", "readsfrom", "symmetry", "auto")
F32 = {"dtype": "float32", "shape": [2]}
NAN1, NAN2 = 0x7FC00001, 0x7FC00002


def prog(nodes, outputs, variables=("x",), feeds=("a", "b"), dtype=F32, extra=None):
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {x: dtype for x in variables},
        "feeds": {**{f: dtype for f in feeds}, **(extra or {})},
        "nodes": nodes, "outputs": outputs})


def var(name, x="x"):
    return {"name": name, "op": "Var", "var": x}


def without(p, node, edge):
    """`p` with the input `edge` ("^n", "n", "$f") of `node` removed."""
    data = program_to_json(p)
    for n in data["nodes"]:
        if n["name"] == node:
            n["inputs"] = [i for i in n["inputs"] if i != edge]
    return program_from_json(data)


# ---------------------------------------------------------------------------
# The suspicions: (name, P, rewrites of P, whether P is race-free)

# AssignAdd and a Write of x unordered, a Read after both: racy (the Write
# may come first or last).  Its rewrite orders them: one of P's outcomes.
_ADD_VS_WRITE = prog([var("h0"), var("h1"), var("h2"),
                      {"name": "inc", "op": "AssignAdd", "inputs": ["h0", "$a"]},
                      {"name": "w", "op": "Write", "inputs": ["h1", "$b"]},
                      {"name": "r", "op": "Read", "inputs": ["h2", "^inc", "^w"]}],
                     {"out": "r"})
_ADD_VS_WRITE_ORDERED = prog([var("h0"), var("h1"), var("h2"),
                              {"name": "inc", "op": "AssignAdd", "inputs": ["h0", "$a", "^w"]},
                              {"name": "w", "op": "Write", "inputs": ["h1", "$b"]},
                              {"name": "r", "op": "Read", "inputs": ["h2", "^inc", "^w"]}],
                             {"out": "r"})

# two AssignAdds ordered by a control edge only: race-free.  Dropping the
# edge loses an update in decomposed mode (both read x before either
# writes), and in atomic mode the sums' rounding order shows at some σ.
_TWO_ADDS = prog([var("h0"), var("h1"), var("h2"),
                  {"name": "a1", "op": "AssignAdd", "inputs": ["h0", "$a"]},
                  {"name": "a2", "op": "AssignAdd", "inputs": ["h1", "$b", "^a1"]},
                  {"name": "r", "op": "Read", "inputs": ["h2", "^a2"]}],
                 {"out": "r"})

# Write, then a NoOp group waiting for it, then a Read waiting for the group:
# ordered through the NoOp only.  Dropping ^w from the group races them.
_NOOP_GROUP = prog([var("h0"), var("h1"), var("h2"),
                    {"name": "r0", "op": "Read", "inputs": ["h0"]},
                    {"name": "w", "op": "Write", "inputs": ["h1", "$a", "^r0"]},
                    {"name": "g", "op": "NoOp", "inputs": ["^w"]},
                    {"name": "r", "op": "Read", "inputs": ["h2", "^g"]}],
                   {"before": "r0", "out": "r"})

# one variable through two handles (two Var nodes): the Write through one,
# the Read through the other, ordered by ^w.  Without it: racy.
_TWO_HANDLES = prog([var("h1"), var("h2"),
                     {"name": "w", "op": "Write", "inputs": ["h1", "$a"]},
                     {"name": "r", "op": "Read", "inputs": ["h2", "^w"]}],
                    {"out": "r"})
_TWO_HANDLES_RACY = without(_TWO_HANDLES, "r", "^w")

# an uninitialized y read and written into x (an error value reaching an
# Assign leaves x unchanged), then x += $b, then a Read: race-free with
# error outcomes at σ where y starts uninitialized.  Rewrites: the Read
# moved before the update (drop its edge), the error Write unordered with
# the AssignAdd (decomposed: "x as it is then" at the write step).
_ERROR_WRITE = prog([var("g", "y"), var("h0"), var("h1"), var("h2"),
                     {"name": "ry", "op": "Read", "inputs": ["g"]},
                     {"name": "w", "op": "Write", "inputs": ["h0", "ry"]},
                     {"name": "inc", "op": "AssignAdd", "inputs": ["h1", "$b", "^w"]},
                     {"name": "r", "op": "Read", "inputs": ["h2", "^inc"]}],
                    {"out": "r", "y": "ry"}, variables=("x", "y"))

# a scatter update (ResourceScatterUpdate's import: Assign-ScatterUpdate of a
# packed operand) and a read of the row, ordered; and the order dropped
_SCATTER = prog([var("h0"), var("h1"),
                 {"name": "i", "op": "Const", "value": [1]},
                 {"name": "pk", "op": "PackScatter", "inputs": ["i", "$b"]},
                 {"name": "sc", "op": "Assign", "fn": "ScatterUpdate", "inputs": ["h0", "pk"]},
                 {"name": "r", "op": "Read", "inputs": ["h1", "^sc"]}],
                {"out": "r"}, feeds=(), extra={"b": {"dtype": "float32", "shape": [1]}})

# NaN payloads: x := $a then x := $b (ordered), the final value's bytes shown
# by PackScatter (SPEC equality forgets a NaN's payload; the bytes do not).
# Swapping the order shows $a's bytes instead.
_PAYLOADS = prog([var("h0"), var("h1"), var("h2"),
                  {"name": "wa", "op": "Write", "inputs": ["h0", "$a"]},
                  {"name": "wb", "op": "Write", "inputs": ["h1", "$b", "^wa"]},
                  {"name": "r", "op": "Read", "inputs": ["h2", "^wb"]},
                  {"name": "i", "op": "Const", "value": [0]},
                  {"name": "o", "op": "PackScatter", "inputs": ["i", "r"]}],
                 {"o": "o"})
_PAYLOADS_SWAPPED = prog([var("h0"), var("h1"), var("h2"),
                          {"name": "wa", "op": "Write", "inputs": ["h0", "$a", "^wb"]},
                          {"name": "wb", "op": "Write", "inputs": ["h1", "$b"]},
                          {"name": "r", "op": "Read", "inputs": ["h2", "^wa"]},
                          {"name": "i", "op": "Const", "value": [0]},
                          {"name": "o", "op": "PackScatter", "inputs": ["i", "r"]}],
                         {"o": "o"})

# one feed into two variables' Writes and a Read of each, everything hanging
# off an input control edge ^$go: race-free (two variables, each ordered)
_SHARED_FEED = prog([var("h0"), var("h1"), var("g0", "y"), var("g1", "y"),
                     {"name": "wx", "op": "Write", "inputs": ["h0", "$a", "^$go"]},
                     {"name": "wy", "op": "AssignAdd", "inputs": ["g0", "$a", "^$go"]},
                     {"name": "rx", "op": "Read", "inputs": ["h1", "^wx"]},
                     {"name": "ry", "op": "Read", "inputs": ["g1", "^wy"]},
                     {"name": "s", "op": "Add", "inputs": ["rx", "ry"]}],
                    {"s": "s"}, variables=("x", "y"), feeds=("a",))

# a Read unordered with an AssignAdd of its variable: racy
_READ_VS_ADD = prog([var("h0"), var("h1"),
                     {"name": "inc", "op": "AssignAdd", "inputs": ["h0", "$a"]},
                     {"name": "r", "op": "Read", "inputs": ["h1"]}],
                    {"out": "r"})

CASES = [
    ("assign-add vs write", _ADD_VS_WRITE, [_ADD_VS_WRITE_ORDERED], False),
    ("assign-add vs write, ordered", _ADD_VS_WRITE_ORDERED, [_ADD_VS_WRITE], True),
    ("two assign-adds by a control edge", _TWO_ADDS, [without(_TWO_ADDS, "a2", "^a1")], True),
    ("NoOp group", _NOOP_GROUP, [without(_NOOP_GROUP, "g", "^w")], True),
    ("two handles", _TWO_HANDLES, [_TWO_HANDLES_RACY], True),
    ("two handles, racy", _TWO_HANDLES_RACY, [_TWO_HANDLES], False),
    ("error value written", _ERROR_WRITE,
     [without(_ERROR_WRITE, "inc", "^w"), without(_ERROR_WRITE, "r", "^inc")], True),
    ("scatter update", _SCATTER, [without(_SCATTER, "r", "^sc")], True),
    ("NaN payloads", _PAYLOADS, [_PAYLOADS_SWAPPED, without(_PAYLOADS, "wb", "^wa")], True),
    ("shared feed, input control edge", _SHARED_FEED,
     [without(_SHARED_FEED, "rx", "^wx"), without(_SHARED_FEED, "ry", "^wy")], True),
    ("read vs assign-add", _READ_VS_ADD, [], False),
]


def _nan_pair(p):
    """Every float feed NaN of payload 1, every variable NaN of payload 2
    (and the reverse): states keyed by exact bits must keep them apart."""
    def filled(t, bits):
        return Tensor(np.full(t.shape, bits, np.uint32).view(np.float32), "float32")
    for f_bits, x_bits in ((NAN1, NAN2), (NAN2, NAN1)):
        yield ({f: filled(p.feed_type(f), f_bits) for f in p.feed_names},
               {x: filled(p.variables[x], x_bits) for x in p.variables})


def sigmas(p):
    """Small and wide values, every edge value in the feeds and the variables
    at once (each alone too in the nightly profile), the plain σ, NaNs of two
    payloads, and each variable uninitialized."""
    rng = np.random.default_rng(7)
    yield from itertools.islice(C._refute_sigmas(p, rng), 4 if NIGHTLY else 2)
    for k, sigma in enumerate(C._edge_sigmas(p)):
        if NIGHTLY or k % 3 == 2:
            yield sigma
    yield C._plain_sigma(p)
    yield from _nan_pair(p)
    yield from C._uninitialized_sigmas(p, sorted(p.variables))


@pytest.mark.parametrize("name, p, rewrites, expected", CASES, ids=[c[0] for c in CASES])
def test_race_free_classifies_the_attack_programs(name, p, rewrites, expected):
    assert race_free(p) is expected, name


@pytest.mark.parametrize("name, p, rewrites, expected",
                         [c for c in CASES if c[3]], ids=[c[0] for c in CASES if c[3]])
def test_a_race_free_attack_program_has_one_outcome_on_every_engine(name, p, rewrites, expected):
    checked = 0
    for k, (feeds, init) in enumerate(sigmas(p)):
        for i, (sem, obs) in enumerate(SETTINGS):
            one, _ = ref.canonical_outcome(p, feeds, init, sem, obs)
            # (every engine on every σ in the nightly profile; else the
            # reference engine and one other, by turns)
            for engine in ENGINES if NIGHTLY else ("reference", ENGINES[1 + (i + k) % 3]):
                try:
                    full = outcome_set(p, feeds, init, sem, obs, max_seconds=5, engine=engine)
                except Unsupported:
                    continue
                assert full.count == 1 and one in full, (name, k, sem, obs, engine)
                checked += 1
            checker = C._Checker(p, p, sem, obs, 0.0, 10.0, False, 0, False)
            mine = checker.original_outcomes(feeds, init, 5.0)
            assert list(mine) == [one] and checker.stats["race_free_confirmations"] == 1
    assert checked >= 80, checked


def _verdicts(p, q, sem, obs, kernels, monkeypatch):
    out = []
    for on in (True, False):
        monkeypatch.setattr(C, "RACE_FREE_CONFIRM", on)
        monkeypatch.setattr(C, "PROBE_PLAIN", on)
        with as_if_kernels(kernels):
            out.append(check_rewrite(p, q, sem, obs, timeout=10, structural=False,
                                     backends=False, classify=False))
    return out


@pytest.mark.parametrize("name, p, rewrites, expected", CASES, ids=[c[0] for c in CASES])
def test_verdicts_with_the_shortcut_equal_the_enumerations(name, p, rewrites, expected,
                                                            monkeypatch):
    monkeypatch.setattr(C, "REFUTE_FIRST_MIN_ACCESSES", 0)   # (the probe runs on these)
    for j, q in enumerate(rewrites):
        for i, (sem, obs) in enumerate(SETTINGS):
            if not NIGHTLY and (i + j) % 2:
                continue    # (two of the four settings per rewrite, by turns)
            kernels = i // 2 == 0
            v, w = _verdicts(p, q, sem, obs, kernels, monkeypatch)
            assert v.verdict in ("sound", "unsound") and v.verdict == w.verdict, \
                (name, j, sem, obs, kernels, v.reason, w.reason)
            assert ("race_free_confirmations" in v.stats) <= expected
            if v.verdict == "unsound":
                cx = v.counterexample
                full = outcome_set(p, cx.feeds, cx.init, sem, obs, max_seconds=5)
                assert cx.outcome not in full, (name, j, sem, obs)
