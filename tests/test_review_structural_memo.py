"""Adversarial review of the structural rule's memo of the original's half
(checking/structural.py `ORIGINAL_MEMO`: the original's term plan, static-
shape passes and accesses, per program object).  A stale entry could give a
false `sound`; each test changes one input the remembered values could
depend on, on the same original objects, and compares the rule's answers
with the memo on against the rule computing everything (memo off)."""

from __future__ import annotations

import time

from tfsem.checking import structural
from tfsem.checking.structural import structural_refinement
from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from test_structural_original_memo import _families as structural_original_families


def _families(n: int, rewrites: int = 3, seed: int = 14143):
    return structural_original_families(n, rewrites, seed=seed, modes=False)


MODES = [(s, o, real) for s in ("atomic", "decomposed")
         for o in ("outputs", "outputs+state") for real in (False, True)]


def _answers(families, modes=MODES):
    return [(r.proved, r.reason) for p, qs in families for q in qs for s, o, real in modes
            for r in [structural_refinement(p, q, s, o, real=real)]]


def test_every_mode_on_one_original_matches_the_memo_off(monkeypatch):
    """The same original objects under both semantics, both observations
    and both float settings, in turn: nothing of one mode is answered for
    another."""
    fam = _families(15)
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    on = _answers(fam)
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", False)
    off = _answers(fam)
    assert on == off
    assert any(a for a, _ in on) and not all(a for a, _ in on)


def test_kernels_toggled_in_the_thread_renew_the_entry(monkeypatch):
    """kernels.use() (a thread-local switch) between checks of one original:
    the entry made with kernels on is not used with them off, and back."""
    fam = _families(8)
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    got = []
    for on in (True, False, True):
        with kernels.use(on):
            got.append(_answers(fam, MODES[:2]))
            entries = {id(p): structural._ORIGINALS[id(p)] for p, _ in fam}
            assert all(e[1][1] is on for e in entries.values())
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", False)
    for i, on in enumerate((True, False, True)):
        with kernels.use(on):
            assert _answers(fam, MODES[:2]) == got[i]


def test_size_limits_and_registry_version_renew_the_entry(monkeypatch):
    from tfsem.oracle import static_shapes
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    fam = _families(3, rewrites=1)
    _answers(fam, MODES[:1])
    p = fam[0][0]
    first = structural._ORIGINALS[id(p)][3]
    for mod, name, value in ((fns, "MAX_TENSOR_ELEMENTS", 4),
                             (static_shapes, "FOLD_MAX_ELEMENTS", 1),
                             (fns, "version", fns.version + 1)):
        monkeypatch.setattr(mod, name, value)
        _answers(fam, MODES[:1])
        now = structural._ORIGINALS[id(p)][3]
        assert now is not first, name
        first = now


def test_a_shape_pass_past_the_request_deadline_is_not_remembered(monkeypatch):
    """A pass that ended after the kernels' request deadline may have had a
    fold refused for time: it is not kept for the next check."""
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    (p, qs), = _families(1, rewrites=1)
    with kernels.request_deadline(time.monotonic() - 1.0):
        structural_refinement(p, qs[0], "atomic", "outputs")
    entry = structural._ORIGINALS.get(id(p))
    assert entry is None or not any(isinstance(k, tuple) and k[0] == "shapes"
                                    for k in entry[3])
    structural_refinement(p, qs[0], "atomic", "outputs")
    if structural.RESHAPES_BY_SHAPE:
        assert any(isinstance(k, tuple) and k[0] == "shapes"
                   for k in structural._ORIGINALS[id(p)][3])


def test_a_shape_pass_in_which_a_fold_raised_is_not_remembered(monkeypatch):
    """A fold that raised (a kernel refused, its child gone) may succeed in a
    later pass and claim more shapes: a pass during which one raised is
    computed again next time, never remembered weaker."""
    from tfsem.oracle import static_shapes
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    (p, qs), = _families(1, rewrites=1, seed=14144)
    real = static_shapes._value_shapes

    def a_fold_raised(q, read_shapes, tick=None):
        static_shapes.fold_failures += 1
        return real(q, read_shapes, tick=tick)
    monkeypatch.setattr(static_shapes, "_value_shapes", a_fold_raised)
    structural_refinement(p, qs[0], "atomic", "outputs")
    entry = structural._ORIGINALS.get(id(p))
    assert entry is None or not any(isinstance(k, tuple) and k[0] == "shapes"
                                    for k in entry[3])
    monkeypatch.setattr(static_shapes, "_value_shapes", real)
    structural_refinement(p, qs[0], "atomic", "outputs")
    if structural.RESHAPES_BY_SHAPE:
        assert any(isinstance(k, tuple) and k[0] == "shapes"
                   for k in structural._ORIGINALS[id(p)][3])


def test_remembered_values_are_not_changed_by_a_check(monkeypatch):
    """A check must not write into the remembered plan, info, accesses or
    shapes (they are shared by the next checks of the original)."""
    import copy
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    fam = _families(6)
    for p, qs in fam:
        structural_refinement(p, qs[0], "atomic", "outputs+state")
        memo = structural._ORIGINALS[id(p)][3]
        # (the functions, and the nodes' attribute mappings the original's
        # terms name, immutable, are kept as they are)
        keep = {id(f): f for f in fns._REGISTRY.values()}
        keep.update((id(n.attrs), n.attrs) for n in p.nodes)
        snap = {k: copy.deepcopy(v, dict(keep))
                if k != "plan" else copy.copy(v[0]) for k, v in memo.items()}
        # (the original's terms among them: checking/structural.py `_original_terms`)
        assert any(isinstance(k, tuple) and k[0] == "terms" for k in snap)
        for q in qs[1:]:
            for s, o, real in MODES:
                structural_refinement(p, q, s, o, real=real)
        for k, v in snap.items():
            if k == "plan":
                assert memo[k][0] == v
            else:
                assert memo[k] == v, k
