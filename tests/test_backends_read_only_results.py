"""backends/execute.py `Memo.apply` makes its numpy results read-only
(`READ_ONLY_RESULTS`), so that what remembers arrays by identity only
where they are read-only and own their data (the kernels' input digests,
the subnormal searches' marks) remembers the replay's own arrays too.
With the switch on and off: replays of generated programs through a memo
give the same outcomes, bit for bit (float and integer programs, NaN σ);
the results a memo hands out own their data and are read-only where the
switch is on; a view is left as it is; and the confirmations of stored
Grappler checks give the same answers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tfsem.oracle.opdefs  # noqa: F401  (registers the TensorFlow families)
from tfsem.backends import execute as EX
from tfsem.backends.arraymodule import get_backend
from tfsem.oracle import functions as fns
from tfsem.oracle.values import Tensor, exact


def _exact_outcome(o):
    return [(k, exact(v)) for k, v in o.outputs] + [(k, exact(v)) for k, v in (o.state or ())]


def _nan_sigma(values):
    out = {}
    for k, v in values.items():
        if isinstance(v, Tensor) and v.dtype in ("float32", "float64") and v.array.size:
            a = v.array.copy()
            a.reshape(-1)[::2] = np.nan
            out[k] = Tensor(a)
        else:
            out[k] = v
    return out


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_generated_programs_replay_alike(dtype, monkeypatch):
    from tfsem.backends.execute import compiled, device_machine, download, run_schedule, upload
    from tfsem.checking import check as C
    from tfsem.generators.strategies import random_programs
    b = get_backend("numpy")
    count = 0
    for i, p in enumerate(random_programs(60, 7, max_nodes=14, dtype=dtype)):
        if p.has_control_flow:
            continue
        feeds, init = next(C._refute_sigmas(p, np.random.default_rng(i)))
        for f, s in ((feeds, init), (_nan_sigma(feeds), _nan_sigma(init))):
            m = device_machine(p, b)
            schedule = [m.label(t) for t in range(compiled(p).n)]
            answers = []
            for on in (False, True):
                monkeypatch.setattr(EX, "READ_ONLY_RESULTS", on)
                memo = EX.Memo(np)
                try:
                    # (twice through one memo: the second run is its hits)
                    for _ in range(2):
                        got = download(*run_schedule(m, upload(f, b), upload(s, b), schedule,
                                                     memo=memo), b, "outputs+state")
                    answers.append(_exact_outcome(got))
                except Exception as exc:   # noqa: BLE001 (the same failure both ways)
                    answers.append((type(exc).__name__, str(exc)))
            assert answers[0] == answers[1], i
            count += 1
    assert count >= 60, count


def test_results_are_read_only_and_own_their_data(monkeypatch):
    memo = EX.Memo(np)
    a = np.arange(6, dtype=np.float32)
    b = np.ones(6, np.float32)
    add = fns.get("Add.ftz")
    identity = fns.get("Identity")

    def apply(fn, args, attrs):
        return EX.apply_function(fn, args, attrs, np)
    monkeypatch.setattr(EX, "READ_ONLY_RESULTS", True)
    (r,) = memo.apply(apply, add, "", (a, b), {}, numpy_apply=True)
    assert r.base is None and not r.flags.writeable
    with pytest.raises(ValueError):
        r[0] = 7.0
    # (a view passed through is left as it is: it does not own its data)
    base = np.arange(12, dtype=np.float32)
    view = base[::2]
    (v,) = memo.apply(apply, identity, "", (view,), {})
    assert v is view and v.flags.writeable
    monkeypatch.setattr(EX, "READ_ONLY_RESULTS", False)
    (w,) = EX.Memo(np).apply(apply, add, "", (a, b), {}, numpy_apply=True)
    assert w.flags.writeable
    assert np.array_equal(w.view(np.uint32), r.view(np.uint32))


GRAPPLER = Path(__file__).parent / "grappler"


def test_confirmations_of_grappler_checks_answer_alike(monkeypatch):
    """A stored Grappler check's counterexample confirmed on numpy with the
    switch off and on: the same answers (TensorFlow's kernels on, where
    TensorFlow is installed: then the kernels' digests are the ones kept)."""
    pytest.importorskip("tensorflow")
    from tfsem.backends import reuse
    from tfsem.backends.confirm import confirm_details
    from tfsem.checking import check_rewrite
    from tfsem.oracle import kernels
    from tfsem.oracle.jsonio import program_from_json
    compared = 0
    for stem in ("keras_cnn_batchnorm", "keras_mlp_adagrad"):
        doc = json.loads((GRAPPLER / f"{stem}.json").read_text())
        for opt, rewritten_doc in doc["rewritten"].items():
            p, q = program_from_json(doc["original"]), program_from_json(rewritten_doc)
            with kernels.use(True):
                v = check_rewrite(p, q, timeout=10, minimize=False, backends=False,
                                  classify=False)
                cx = v.counterexample
                if cx is None:
                    continue
                got = []
                for on in (False, True):
                    monkeypatch.setattr(EX, "READ_ONLY_RESULTS", on)
                    reuse.clear()
                    res = confirm_details(p, q, cx.feeds, cx.init or {}, list(cx.schedule),
                                          backends=["numpy"])
                    got.append([(c.backend, c.confirmed, c.reason,
                                 _exact_outcome(c.outcome) if c.outcome else None) for c in res])
                assert got[0] == got[1], (stem, opt)
                compared += 1
    assert compared >= 1, compared
