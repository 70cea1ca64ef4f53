"""Minimization's box and cone tests decided again on each full
confirmation's own cost (checking/check.py `_Checker.minimized`, its
`rescale`, `MINIMIZE_RESCALE`), against the minimization without it.

The probe's measure of a confirmation is cheap where its runs were
remembered from an earlier check of the same original; the cost of the
confirmations minimization makes is then the one its box and cone tests
are decided on.  The costs here are made up (the confirmations of these
small programs take milliseconds): the probe's measure 0, every full
confirmation inside minimization DEAR seconds.  Only which steps are tried
changes: verdicts equal, and every σ shown confirmed by the enumerating
oracle."""

from __future__ import annotations

import time

from tfsem.checking import check as C
from tfsem.checking import check_rewrite

from test_check_demand_confirm import _pairs, confirmed_by_the_oracle
from test_check_one_outcome import as_if_kernels, no_solver_candidates  # noqa: F401

#: what each full confirmation inside minimization is said to cost (more
#: than MINIMIZE_CHEAP_SECONDS; the box, min(5% of the 100 s timeout,
#: 1.5 times this), leaves time for cone tests after the first step)
DEAR = 2.0


def _made_up_costs(monkeypatch):
    real_minimized, real_confirm = C._Checker.minimized, C._Checker.confirm

    def minimized(self, found):
        self.confirm_seconds = 0.0          # (the probe's measure: cheap)
        # (as on a real graph, finding the counterexample took at least one
        # dear confirmation: the minimization's box is bounded by the
        # finding time, minimize.find_box; the check's start moved back by
        # it, its deadline kept)
        self.started = min(self.started, time.monotonic() - DEAR)
        # (where the symbolic search found σ, the solver's ladder follows
        # and the box stays as before: noted for the test)
        self.stats["ladder"] = self.failing is not None
        self._minimizing = True
        try:
            return real_minimized(self, found)
        finally:
            self._minimizing = False

    def confirm(self, *a, **k):
        result = real_confirm(self, *a, **k)
        if getattr(self, "_minimizing", False):
            self.confirm_seconds = DEAR
        return result

    monkeypatch.setattr(C._Checker, "minimized", minimized)
    monkeypatch.setattr(C._Checker, "confirm", confirm)


def test_a_dear_confirmation_in_minimization_turns_the_cone_tests_on_and_verdicts_stay(
        monkeypatch, no_solver_candidates):  # noqa: F811
    # (as on a real graph: the probe and the concrete stages find the
    # differences, and no solver's ladder follows)
    _made_up_costs(monkeypatch)
    unsound = rescaled = coned = 0
    for i, name, p, q, (sem, obs) in _pairs(300, 10, 17):
        verdicts = []
        for on in (True, False):
            monkeypatch.setattr(C, "MINIMIZE_RESCALE", on)
            with as_if_kernels():
                v = check_rewrite(p, q, sem, obs, timeout=100, structural=False,
                                  backends=False, classify=False)
            verdicts.append(v.verdict)
            if v.verdict != "unsound":
                continue
            cx = v.counterexample
            confirmed_by_the_oracle(p, q, cx, sem, obs, (i, name))
            assert "final" not in v.stats.get("minimization", {}), v.stats
            record = v.stats.get("minimization", {})
            if not on:
                assert "rescaled" not in record, record
                assert v.stats["ladder"] or record.get("cone_tests", 0) == 0, record
                continue
            unsound += 1
            if record.get("full_confirmations") and not v.stats["ladder"]:
                # (a full confirmation was made: the first step, at DEAR)
                assert record.get("rescaled") == DEAR, record
                rescaled += 1
                coned += record.get("cone_tests", 0) > 0
        assert verdicts[0] == verdicts[1], (i, name, sem, obs)
    assert unsound >= 10 and rescaled >= 6 and coned >= 4, (unsound, rescaled, coned)


def test_where_the_probe_said_dear_already_nothing_is_decided_again(monkeypatch):
    real_minimized = C._Checker.minimized
    records = []

    def minimized(self, found):
        self.confirm_seconds = DEAR         # (the probe's measure: dear)
        result = real_minimized(self, found)
        records.append(dict(self.stats.get("minimization", {})))
        return result

    monkeypatch.setattr(C._Checker, "minimized", minimized)
    for i, name, p, q, (sem, obs) in _pairs(40, 10, 17):
        check_rewrite(p, q, sem, obs, timeout=100, structural=False, backends=False,
                      classify=False)
    assert records and all("rescaled" not in r for r in records), records
