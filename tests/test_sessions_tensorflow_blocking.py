"""Sessions with queues and critical sections on TensorFlow's runtime.  The queue session
exported with real FIFOQueueV2 / QueueEnqueueV2 / QueueDequeueV2 nodes
(backends/tensorflow_blocking.py), its three runs called concurrently, each
under a timeout: one consumer is still blocked when the timeout ends, as the
oracle's deadlock outcomes say.  The critical-section counter, its section
exported as TensorFlow's mutex, never loses an update.  Skipped without
TensorFlow."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                                reason="TensorFlow is not installed")

SESSIONS = Path(__file__).resolve().parent.parent / "examples" / "sessions"


def test_tensorflow_blocks_where_the_oracle_lists_a_deadlock():
    from tfsem.backends.tensorflow_blocking import run_blocking_session_threads
    from tfsem.oracle import blocking
    from tfsem.oracle.session import load_session
    s = load_session(SESSIONS / "queue_deadlock.session.json")
    p, b = s.expand_blocking()
    found, _ = blocking.outcomes(p, b, {}, {})
    oracle = {tuple(sorted({x.split("/")[0] for x in o.blocked})) for o in found}
    assert oracle == {("consumer1",), ("consumer2",)}
    seen, done = run_blocking_session_threads(s, {}, 1, timeout_ms=1000)
    assert done == 1
    for (waiting, values), _ in seen.items():
        assert waiting in oracle                      # exactly one consumer waits
        other = "consumer2" if waiting == ("consumer1",) else "consumer1"
        assert values == ((f"{other}/item", 1),)      # the other got the one item


def test_a_session_that_cannot_block_completes_on_tensorflow():
    from tfsem.backends.tensorflow_blocking import run_blocking_session_threads
    from tfsem.oracle.session import session_from_json
    import json
    data = json.loads((SESSIONS / "queue_deadlock.session.json").read_text())
    data["runs"] = data["runs"][:2]        # one producer, one consumer
    seen, done = run_blocking_session_threads(session_from_json(data), {}, 1, timeout_ms=5000)
    assert dict(seen) == {((), (("consumer1/item", 1),)): 1}


def test_a_critical_section_exported_as_a_mutex_keeps_both_updates(capsys):
    """The section counter's Read, Add and Write under TensorFlow's MutexV2 /
    MutexLock / ConsumeMutexLock: two concurrent steps always end at 2, and
    every trial is among the oracle's outcomes (`tfsem run` exits 0)."""
    from tfsem.cli import main
    rc = main(["run", str(SESSIONS / "counter_critical.session.json"), "--backend", "tensorflow",
               "--runs", "10", "--init", "x=0"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "NOT in the oracle set" not in out
    assert "x = 2" in out and "x = 1" not in out
