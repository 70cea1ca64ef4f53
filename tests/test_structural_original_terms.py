"""The structural rule's original terms, remembered across the checks of one
original (checking/structural.py `_original_terms`, `ORIGINAL_TERMS`): the
first pass over the original's nodes, made on an empty term table, is kept
in the original's memo entry and restored (copies of the tables) when the
next check starts from the same Read leaves, shapes and modes.  Compared
with the rule building every pass (`ORIGINAL_TERMS` off): the same result,
reason and counts, on generated originals with several rewrites each, on
the stored cases, and on the stored Grappler programs of real graphs (each
original against every optimizer's output, in every mode); and what must
not reuse a kept pass (a function replaced by hand, a method of the rule
replaced, a fold that raised) does not."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pytest

from tfsem.checking import structural
from tfsem.checking.structural import structural_refinement
from tfsem.oracle import functions as fns
from tfsem.oracle.jsonio import load_case, program_from_json
from test_structural_original_memo import _families

TESTS = Path(__file__).parent
MODES = [(s, o, real) for s in ("atomic", "decomposed")
         for o in ("outputs", "outputs+state") for real in (False, True)]


def _kept(p) -> list:
    memo = structural._original_memo(p, create=False) or {}
    return [k for k in memo if isinstance(k, tuple) and k[0] == "terms"]


def _row(r) -> tuple:
    return (r.proved, r.reason, {k: v for k, v in r.stats.items() if k != "seconds"})


def _both(monkeypatch, run, switch: str = "ORIGINAL_TERMS") -> list:
    """run() with what `switch` keeps of the original kept (the original's
    terms by default), then with it made each time (the memo of the
    original's other halves on in both): equal rows."""
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    monkeypatch.setattr(structural, switch, True)
    kept = run()
    monkeypatch.setattr(structural, switch, False)
    built = run()
    assert kept == built
    return kept


def test_generated_originals_give_the_same_results(monkeypatch):
    families = _families(25, rewrites=4, seed=8811)

    def run():
        return [[_row(structural_refinement(p, q, s, o)) for q, s, o in qs]
                for p, qs in families]

    rows = _both(monkeypatch, run)
    flat = [r for row in rows for r in row]
    assert any(r[0] for r in flat) and not all(r[0] for r in flat)
    # (the passes were kept, so the later rewrites of each original took them)
    assert all(_kept(p) for p, _ in families)


def _grappler_programs():
    for path in sorted((TESTS / "grappler").glob("*.json*")):
        text = (gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz"
                else path.read_text())
        data = json.loads(text)
        if "original" in data and "rewritten" in data:
            yield (path.name, program_from_json(data["original"]),
                   {k: program_from_json(v) for k, v in sorted(data["rewritten"].items())})


def test_stored_grappler_programs_give_the_same_results(monkeypatch):
    """Each stored original of a real graph against every optimizer's
    output, in every mode, twice over (a second round takes the kept
    passes of the first): the same as building every pass."""
    programs = [g for g in _grappler_programs() if len(g[1].nodes) < 3000]
    assert programs

    def run():
        rows = []
        for _name, p, rewritten in programs:
            for s, o, real in MODES:
                for _round in range(2):
                    for opt, q in rewritten.items():
                        rows.append((opt, s, o, real, _row(structural_refinement(
                            p, q, s, o, real=real))))
        return rows

    rows = _both(monkeypatch, run)
    assert any(r[-1][0] for r in rows)


def test_stored_cases_give_the_same_results(monkeypatch):
    """Every stored case's rewrite checked twice against its original (the
    second takes the pass the first kept), and the original against
    itself: the same as building every pass."""
    cases = []
    for path in sorted((TESTS / "cases").rglob("*.json")):
        try:
            c = load_case(path)
            q = c.rewritten()
        except Exception:   # (not a case, or an invalid rewrite on purpose)
            continue
        if not (c.original.has_control_flow or q.has_control_flow):
            cases.append((c, q))
    assert len(cases) > 20

    def run():
        return [[_row(structural_refinement(c.original, q2, c.semantics, c.observe))
                 for q2 in (q, q, c.original)] for c, q in cases]

    _both(monkeypatch, run)


def test_a_replaced_function_or_method_is_not_answered_from_a_kept_pass(monkeypatch):
    """A kept pass holds for the registry's functions and the rule's code
    it was made with: a function of the original replaced by hand (no
    `register`, no version), or a method of the term table replaced, makes
    the next check build the pass again (the kept one is replaced)."""
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    monkeypatch.setattr(structural, "ORIGINAL_TERMS", True)
    (p, qs), = _families(1, rewrites=1, modes=False)
    q = qs[0]
    structural_refinement(p, q)
    key, = _kept(p)
    first = structural._original_memo(p)[key]
    structural_refinement(p, q)
    assert structural._original_memo(p)[key] is first      # (taken, not made again)
    name = next(n.op for n in p.nodes if fns.lookup(n.op) is not None)
    monkeypatch.setitem(fns._REGISTRY, name, dataclasses.replace(fns._REGISTRY[name]))
    structural_refinement(p, q)
    memo = structural._original_memo(p)
    assert memo is not None and all(memo[k] is not first for k in _kept(p))
    monkeypatch.undo()
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    monkeypatch.setattr(structural, "ORIGINAL_TERMS", True)
    structural_refinement(p, q)
    key, = _kept(p)
    second = structural._original_memo(p)[key]
    monkeypatch.setattr(structural._Terms, "reduces_nothing", lambda self, f, attrs, args: False)
    structural_refinement(p, q)
    key, = _kept(p)
    assert structural._original_memo(p)[key] is not second


def _folding_pair():
    def program(wrapped: bool):
        nodes = [{"name": "x", "op": "Var", "var": "x"},
                 {"name": "r", "op": "Read", "inputs": ["x"]},
                 {"name": "one", "op": "Const", "value": {"dtype": "float64", "value": 1.0}},
                 {"name": "two", "op": "Const", "value": {"dtype": "float64", "value": 2.0}},
                 {"name": "s", "op": "Add", "inputs": ["one", "two"]},
                 {"name": "y", "op": "Add", "inputs": ["r", "s"]}]
        if wrapped:
            nodes.append({"name": "z", "op": "Identity", "inputs": ["y"]})
        return program_from_json({"format": "tfsem.program/1",
                                  "variables": {"x": {"dtype": "float64"}}, "nodes": nodes,
                                  "outputs": {"out": "z" if wrapped else "y"}})
    return program(False), program(True)


def test_a_pass_whose_fold_raised_is_not_kept(monkeypatch):
    """A fold that raised during the pass (a kernel refused at the
    deadline may fold next time) leaves the pass unkept; one whose folds
    all answered is kept."""
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    monkeypatch.setattr(structural, "ORIGINAL_TERMS", True)
    p, q = _folding_pair()
    real_fold = structural._Terms._fold

    def failing(self, f, attrs, args):
        self.fold_failures += 1      # (as `_fold` counts a function that raised)
        return real_fold(self, f, attrs, args)

    monkeypatch.setattr(structural._Terms, "_fold", failing)
    r1 = structural_refinement(p, q)
    assert r1.proved and not _kept(p)
    monkeypatch.undo()
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    monkeypatch.setattr(structural, "ORIGINAL_TERMS", True)
    r2 = structural_refinement(p, q)
    assert _row(r1) == _row(r2) and _kept(p)


def test_the_kernels_a_kept_pass_ran_are_named_again():
    """A kept pass that folded with TensorFlow's kernel (the corpus step's
    DivNoNan) notes that kernel again when it is taken, so that a verdict
    names the same kernels with the memo as without it."""
    pytest.importorskip("tensorflow")
    from tfsem.oracle import kernels
    data = json.loads((TESTS / "grappler" / "keras_fit_one_step_on_data.json").read_text())
    p = program_from_json(data["original"])
    q = program_from_json(data["rewritten"]["constfold"])
    with kernels.use(True):
        with kernels.record() as first:
            r1 = structural_refinement(p, q)
        assert _kept(p)
        with kernels.record() as second:
            r2 = structural_refinement(p, q)
    assert r1.proved and _row(r1) == _row(r2)
    assert first and second == first


def test_checks_of_one_original_in_threads_give_the_same_results(monkeypatch):
    """Several threads checking one original at once (each keeps and takes
    passes in the same entry): each result is the one the rule gives
    alone, building every pass."""
    from concurrent.futures import ThreadPoolExecutor
    programs = [g for g in _grappler_programs() if len(g[1].nodes) < 3000]
    jobs = [(p, q, s, o) for _name, p, rewritten in programs[:3] for q in rewritten.values()
            for s, o, _real in MODES[:4]]
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    monkeypatch.setattr(structural, "ORIGINAL_TERMS", False)
    alone = [_row(structural_refinement(p, q, s, o)) for p, q, s, o in jobs]
    monkeypatch.setattr(structural, "ORIGINAL_TERMS", True)
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda job: _row(structural_refinement(*job)), jobs * 2))
    assert together == alone * 2
