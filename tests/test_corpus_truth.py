"""The case corpus's expectations, checked with the concrete oracle only.

This test does not use the checker: it keeps the corpus honest on its own, so
that a disagreement between `tfsem check` and a case can be blamed on the
checker.  For every case in tests/cases/:

* `unsound`: a counterexample σ recorded below (WITNESSES) at which some
  outcome of the rewritten program is not among the original's;
* `sound`: no such σ on a grid of inputs (0, ±1, 2, the int64 extremes; for
  float32 also -0.0, 0.5, NaN, ±inf, 1e30, ±1e8, the largest and the smallest
  floats; every variable also uninitialized).  A grid cannot prove soundness
  (the Z3 checker does that); it catches a wrong expectation cheaply;
* `invalid`: the rewritten program does not load, or its interface differs;

and tests/cases/make_cases.py reproduces every file exactly.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import decode_inputs, load_case
from tfsem.oracle.program import Program, ProgramError, TensorType
from tfsem.oracle.values import UNINITIALIZED, Error, Tensor, Value

CASES_DIR = Path(__file__).parent / "cases"
CASE_FILES = sorted(CASES_DIR.glob("*.json"))

#: Case file -> σ (feeds and initial values, as JSON values of SPEC section 1)
#: at which the rewritten program has an outcome the original lacks.  A
#: variable left out of "init" starts uninitialized.
WITNESSES: dict[str, dict] = {
    "seed000_first_example_drop_control.json": {"feeds": {"B": 2}, "init": {"x": 1}},
    "seed000_footnote7_prune_outputs_state.json": {"feeds": {"B": 2}, "init": {"x": 1}},
    "seed000_figure1_concat_forward_store.json": {"feeds": {"B": [100], "C": [1, 2]}, "init": {}},
    "seed000_figure1_float_merge_replicas.json": {
        "feeds": {"B": [1.0], "C": [1e8, -1e8]}, "init": {}},
    "seed000_figure4_split_atomic.json": {"feeds": {"B": [0], "C": [1, 2]}, "init": {}},
    "seed002_writes_reads_unorder_stores.json": {"feeds": {}, "init": {"X": 0, "Y": 0}},
    "seed002_writes_reads_unorder_loads.json": {"feeds": {}, "init": {"X": 0, "Y": 0}},
    "seed002_two_increments_split_atomic.json": {"feeds": {}, "init": {"x": 0}},
    "seed002_load_store_hoist_reads.json": {"feeds": {}, "init": {"X": 0, "Y": 0}},
    "seed002_load_store_hoist_reads_decomposed.json": {"feeds": {}, "init": {"X": 0, "Y": 0}},
    "pass_prune_outputs_state.json": {"feeds": {"a": 0, "b": 1}, "init": {"x": 0, "y": 0}},
    "pass_cse_ignore_control.json": {"feeds": {"b": 1}, "init": {"x": 0}},
    "pass_cse_stateful_atomic.json": {"feeds": {}, "init": {"x": 0}},
    "pass_hoist_reads_atomic.json": {"feeds": {"d": 1}, "init": {"x": 0}},
    "pass_hoist_reads_decomposed.json": {"feeds": {"d": 1}, "init": {"x": 0}},
    "pass_hoist_reads_safe_store_buffer.json": {"feeds": {}, "init": {"x": 0, "y": 0}},
    "pass_split_assign_atomic.json": {"feeds": {"b": 5, "d": 1}, "init": {"x": 0}},
    "pass_const_fold_drops_control.json": {"feeds": {"a": 1}, "init": {"x": 0}},
    "pass_dce_drops_control.json": {"feeds": {"a": 1, "b": 2}, "init": {"x": 0}},
    "alg_float_add_self_vs_mul_int2.json": {"feeds": {"a": 0.0}, "init": {}},
    "alg_float_sub_self_vs_zero.json": {"feeds": {"a": {"dtype": "float32", "value": "inf"}}, "init": {}},
    "alg_float_reassociate.json": {"feeds": {"a": 1.0, "b": 1e8, "c": -1e8}, "init": {}},
    "alg_float_mul_zero.json": {"feeds": {"a": -1.0}, "init": {}},
    "alg_float_add_zero.json": {"feeds": {"a": {"dtype": "float32", "value": "-0.0"}}, "init": {}},
    "alg_float_sub_antisymmetry.json": {"feeds": {"a": 1.0, "b": 1.0}, "init": {}},
    "err_uninit_sub_self.json": {"feeds": {}, "init": {}},
    "err_assign_error_is_noop.json": {"feeds": {}, "init": {"x": 5}},
    "err_drop_initializing_write.json": {"feeds": {"b": 0, "d": 0}, "init": {}},
    "state_add_write_back.json": {"feeds": {"b": 1}, "init": {"x": 0}},
    "state_float_drop_add_zero.json": {"feeds": {}, "init": {"x": {"dtype": "float32", "value": "-0.0"}}},
}

# ---------------------------------------------------------------------------
# The grid of σ for sound cases

INT_GRID = [0, 1, -1, 2, np.iinfo(np.int64).min, np.iinfo(np.int64).max]
FLOAT_GRID = [0.0, -0.0, 1.0, -1.0, 0.5, math.nan, math.inf, -math.inf, 1e30, 1e8, -1e8,
              float(np.finfo(np.float32).max), float(np.finfo(np.float32).smallest_subnormal)]
#: Above this many grid points a case is checked on a fixed random sample of
#: them (every input still takes every grid value somewhere in the sample).
MAX_POINTS = 1000


def values_of(t: TensorType) -> list[Value]:
    """Grid values of one type: each scalar of the grid, or for a 1-D type of
    length n, n consecutive grid scalars starting at each position."""
    scalars = INT_GRID if t.dtype == "int64" else FLOAT_GRID
    if t.shape == ():
        return [Tensor(v, t.dtype) for v in scalars]
    if len(t.shape) != 1:
        raise NotImplementedError("the grid covers scalars and 1-D tensors")
    n, m = t.shape[0], len(scalars)
    return [Tensor([scalars[(i + j) % m] for j in range(n)], t.dtype) for i in range(m)]


def grid(p: Program, seed: str) -> list[tuple[dict[str, Value], dict[str, Value]]]:
    """σ points for program p: feeds over their declared types, variables over
    theirs plus uninitialized."""
    names = [("feed", f) for f in p.feed_names] + [("var", x) for x in p.variables]
    axes = [values_of(p.feed_type(f)) for f in p.feed_names]
    axes += [values_of(t) + [Error(UNINITIALIZED)] for t in p.variables.values()]
    total = math.prod(len(a) for a in axes)
    if total <= MAX_POINTS:
        points = list(itertools.product(*axes))
    else:
        rng = random.Random(seed)
        # a Latin-style sweep (each value of each axis appears) plus random points
        sweep = [tuple(a[i % len(a)] for a in axes) for i in range(max(map(len, axes)))]
        points = sweep + [tuple(rng.choice(a) for a in axes) for _ in range(MAX_POINTS - len(sweep))]
    out = []
    for point in points:
        feeds = {n: v for (kind, n), v in zip(names, point) if kind == "feed"}
        init = {n: v for (kind, n), v in zip(names, point) if kind == "var"}
        out.append((feeds, init))
    return out


def new_outcomes(original: Program, rewritten: Program, feeds, init, semantics: str, observe: str):
    """The outcomes of `rewritten` at σ that `original` lacks."""
    orig = outcome_set(original, feeds, init, semantics, observe, max_seconds=20)
    rew = outcome_set(rewritten, feeds, init, semantics, observe, max_seconds=20)
    return [o for o in rew if o not in orig]


def case_id(path: Path) -> str:
    return path.stem


def cases_expecting(expect: str) -> list[Path]:
    return [p for p in CASE_FILES if json.loads(p.read_text()).get("expect") == expect]


# ---------------------------------------------------------------------------


def test_corpus_is_large_and_annotated():
    assert len(CASE_FILES) >= 40
    for path in CASE_FILES:
        c = load_case(path)  # the original must be a valid program
        assert c.expect in ("sound", "unsound", "invalid"), path.name
        assert len(c.note) > 40, f"{path.name}: the note must say what the case shows and why"
        if c.expect != "invalid":
            c.rewritten()  # a valid program


def test_every_unsound_case_has_a_witness_and_only_those():
    unsound = {p.name for p in cases_expecting("unsound")}
    assert unsound == set(WITNESSES), (
        f"unsound cases without a witness: {sorted(unsound - set(WITNESSES))}; "
        f"witnesses for cases that are not unsound: {sorted(set(WITNESSES) - unsound)}")


@pytest.mark.parametrize("path", cases_expecting("unsound"), ids=case_id)
def test_unsound_case_has_a_counterexample(path):
    c = load_case(path)
    w = WITNESSES[path.name]
    feeds, init = decode_inputs(c.original, w["feeds"], w["init"])
    extra = new_outcomes(c.original, c.rewritten(), feeds, init, c.semantics, c.observe)
    assert extra, f"{path.name}: no outcome of the rewrite at σ = {w} is new"


@pytest.mark.parametrize("path", cases_expecting("sound"), ids=case_id)
def test_sound_case_has_no_counterexample_on_the_grid(path):
    c = load_case(path)
    rewritten = c.rewritten()
    assert set(rewritten.feed_names) <= set(c.original.feed_names)
    points = grid(c.original, path.name)
    assert points
    for feeds, init in points:
        extra = new_outcomes(c.original, rewritten, feeds, init, c.semantics, c.observe)
        assert not extra, (f"{path.name}: at feeds={feeds} init={init} the rewrite has "
                           f"{[o.describe() for o in extra]}")


@pytest.mark.parametrize("path", cases_expecting("invalid"), ids=case_id)
def test_invalid_case_is_malformed_or_changes_the_interface(path):
    c = load_case(path)
    try:
        rewritten = c.rewritten()
    except ProgramError as exc:
        assert exc.violations
        return
    o = c.original
    interface_differs = (set(rewritten.variables) != set(o.variables)
                         or set(rewritten.outputs) != set(o.outputs)
                         or not set(rewritten.feed_names) <= set(o.feed_names))
    assert interface_differs, f"{path.name}: the rewrite is well formed with the same interface"


def test_make_cases_reproduces_the_files():
    spec = importlib.util.spec_from_file_location("make_cases", CASES_DIR / "make_cases.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built = module.build()
    on_disk = {p.name: p.read_text() for p in CASE_FILES}
    assert set(built) == set(on_disk)
    for name, text in built.items():
        assert on_disk[name] == text, f"{name} differs from what make_cases.py builds"


@pytest.mark.parametrize("path", cases_expecting("unsound"), ids=case_id)
def test_the_grid_finds_every_unsound_case(path):
    """The grid is strong enough to find every unsound case of the corpus on
    its own, so a wrongly expected `sound` of the same kind (float corner
    values, uninitialized variables, orders of steps) would fail above."""
    c = load_case(path)
    rewritten = c.rewritten()
    assert any(new_outcomes(c.original, rewritten, f, i, c.semantics, c.observe)
               for f, i in grid(c.original, path.name))
