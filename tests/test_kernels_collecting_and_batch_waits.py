"""Kernel evaluations asked for ahead (oracle/kernels.py `collecting`,
`prefetch`, as the explorer's `_Component._prefetch` asks for them): an
application the memo of applications answers while requests are only being
collected names no kernel (nothing of it is used), and a batch waits for its
answer CALL_SECONDS per evaluation, the time each would have alone.

Found by the adversarial review of a control-flow replay that asked ahead
(measured and not kept: docs/benchmarks.md); both fixes hold for the
explorer's batches.  Needs TensorFlow; skipped without it."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.oracle import applications
from tfsem.oracle import controlflow as cf
from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.functions import CannotRun
from tfsem.oracle.values import Tensor, exact


@pytest.fixture(autouse=True)
def tf_kernels(monkeypatch):
    pytest.importorskip("tensorflow", reason="TensorFlow's kernels compute float MatMul")
    monkeypatch.setenv("TFSEM_TF_KERNELS", "1")
    kernels.prestart()
    cf._APPLIED.clear()
    yield
    cf._APPLIED.clear()


def _fresh():
    """Nothing remembered that answers an evaluation: the memo of
    applications and the kernels' cache (and its count of bytes)."""
    cf._APPLIED.clear()
    with kernels._cache_lock:
        kernels._cache.clear()
        kernels._cache_bytes = 0


def test_a_remembered_application_looked_up_while_collecting_names_no_kernel(monkeypatch):
    """Inside a check (applications.scope) an application remembered with
    the kernels it used is noted (`kernels.note`) where it answers.  Asked
    ahead under `kernels.collecting()` (the explorer's `_prefetch`), its
    answer is thrown away: a step that never fires must not make the
    verdict name kernels the check did not use."""
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


def test_a_batch_waits_for_its_answer_the_time_each_evaluation_would_alone(monkeypatch):
    """A batch (the explorer's `_prefetch`: every eager step that needs a
    kernel) waited CALL_SECONDS for all of its evaluations together: 64
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
