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
    assert dict(seen) == {((), (("consumer1/item", 1),) + (("queue:q", ()),)): 1}


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


def _trials(name: str, trials: int, timeout_ms: int, change=None):
    """TensorFlow's trials of an example session and the oracle's outcomes."""
    from tfsem.backends.tensorflow_blocking import run_blocking_session_threads
    from tfsem.oracle import blocking
    from tfsem.oracle.session import session_from_json
    import json
    data = json.loads((SESSIONS / name).read_text())
    if change:
        change(data)
    s = session_from_json(data)
    p, b = s.expand_blocking()
    found, _ = blocking.outcomes(p, b, {}, {})
    seen, done = run_blocking_session_threads(s, {}, trials, timeout_ms=timeout_ms)
    assert done == trials
    return seen, found


def test_tensorflow_streams_a_batch_and_keeps_the_dequeue_line_as_the_oracle_says():
    from tfsem.backends.tensorflow_blocking import among_oracle
    seen, found = _trials("queue_batches.session.json", 4, 3000)
    for (waiting, values), _ in seen.items():
        assert not waiting                            # the batch of 3 fits a queue of 2
        assert among_oracle(found, waiting, values), values
        assert dict(values)["pairs/pair"] in ((1, 2), (2, 3))


def test_tensorflow_fails_the_dequeue_many_a_close_starves_and_restores_its_elements():
    from tfsem.backends.tensorflow_blocking import among_oracle
    seen, found = _trials("queue_close.session.json", 2, 3000)
    assert {v for v, _ in seen.items()} == {((), (("consumer/!error", "out-of-range"),
                                                 ("closed:q", True), ("queue:q", (1, 2))))}
    assert all(among_oracle(found, w, v) for w, v in seen)


def test_tensorflow_cancels_a_pending_batch_or_blocks_a_close_behind_it_as_the_oracle_says():
    from tfsem.backends.tensorflow_blocking import among_oracle
    seen, found = _trials("queue_cancel.session.json", 3, 3000)
    for (waiting, values), _ in seen.items():
        assert not waiting and among_oracle(found, waiting, values), values
        assert dict(values)["producer/!error"] == "cancelled"
        assert dict(values)["queue:q"] in ((), (1,))
    # without cancel_pending_enqueues the close waits behind the batch: both
    # runs wait at their timeouts, or the close came first and the batch failed
    seen, found = _trials("queue_cancel.session.json", 2, 1500,
                          lambda d: d["program"]["nodes"][2].pop("cancel_pending_enqueues"))
    assert any(isinstance(o, __import__("tfsem").oracle.blocking.Deadlock) for o in found)
    for (waiting, values), _ in seen.items():
        assert among_oracle(found, waiting, values), (waiting, values)


def test_tensorflow_blocks_a_dequeue_many_that_no_close_ends_as_the_oracle_says():
    """queue_close without its close: the consumer's dequeue-many of 3 holds
    the 2 elements and waits forever (the oracle's one outcome, a
    deadlock); on TensorFlow its call is still waiting at the timeout."""
    from tfsem.backends.tensorflow_blocking import among_oracle

    def no_close(d):
        d["runs"][0]["targets"] = ["put2"]
    seen, found = _trials("queue_close.session.json", 1, 600, no_close)
    assert [o.blocked for o in found] == [("consumer/three",)]
    assert list(seen) == [(("consumer",), ())]
    assert among_oracle(found, ("consumer",), ())
