"""Critical sections and FIFO queues imported from graphs TensorFlow wrote
(oracle/opdefs/queues.py; examples/sessions/make_blocking_graphs.py): the
section is exactly the nodes between the MutexLock and the ConsumeMutexLock,
the outcome sets are the session semantics', and TensorFlow's runtime,
running the same graph's runs on threads under a timeout, shows only
outcomes the oracle lists (and blocks where it lists a deadlock).  What
cannot be imported exactly is refused by name."""

from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path

import pytest
from hypothesis import settings

from tfsem.graphdef.cliopts import session_graph_loader
from tfsem.oracle import blocking
from tfsem.oracle.program import ProgramError
from tfsem.oracle.session import SessionError, load_session
from tfsem.oracle.values import Tensor

SESSIONS = Path(__file__).resolve().parent.parent / "examples" / "sessions"
CS = SESSIONS / "critical_section_two_steps.session.json"
FIFO = SESSIONS / "fifo_queue_two_consumers.session.json"
has_tf = importlib.util.find_spec("tensorflow") is not None


def _load(path):
    return load_session(path, load_graph=session_graph_loader())


def _outcomes(s, init=None):
    import numpy as np
    p, b = s.expand_blocking()
    init = {k: Tensor(np.array(v, dtype=np.int64), "int64") for k, v in (init or {}).items()}
    return blocking.outcomes(p, b, {}, init)[0]


@pytest.fixture(scope="module")
def cs_session():
    return _load(CS)


@pytest.fixture(scope="module")
def fifo_session():
    return _load(FIFO)


def test_the_section_is_the_nodes_between_lock_and_consume(cs_session):
    b = cs_session.blocking
    prefix = "critical_section_execute/"
    assert set(b.sections.values()) == {"cs"}
    inside = {n[len(prefix):] for n in b.sections}
    assert inside == {"MutexLock", "Read/ReadVariableOp", "Identity", "add/y", "add",
                      "AssignVariableOp", "Identity_1/ReadVariableOp", "Identity_1",
                      "ConsumeMutexLock"}
    # the read of the returned value depends on the lock but not the consume on it
    assert prefix + "tuple/control_dependency/ReadVariableOp" not in b.sections
    assert prefix + "ReadVariableOp" not in b.sections


def test_the_section_keeps_the_increment_and_the_returned_read_may_see_both(cs_session):
    found = _outcomes(cs_session, {"x": 0})
    got = {(o.outputs, o.state) for o in found}
    finals = {dict(o.state)["x"] for o in found}
    outs = {tuple(int(v.array) for _, v in o.outputs) for o in found}
    assert len(got) == 3
    assert {int(x.array) for x in finals} == {2}             # no lost update
    assert outs == {(1, 2), (2, 1), (2, 2)}                  # out is read after the release
    # without the section the update can be lost
    p, b = cs_session.expand_blocking()
    import numpy as np
    bare = blocking.Blocking(b.queues, b.queue_ops, {})
    lost = blocking.outcomes(p, bare, {}, {"x": Tensor(np.array(0, dtype=np.int64), "int64")})[0]
    assert 1 in {int(dict(o.state)["x"].array) for o in lost}


def test_a_queue_with_two_consumers_and_one_item_deadlocks(fifo_session):
    found = _outcomes(fifo_session)
    assert all(isinstance(o, blocking.Deadlock) for o in found)
    assert {o.blocked for o in found} == {("consumer1/deq",), ("consumer2/deq",)}
    assert fifo_session.blocking.queues == {"q": blocking.Queue(1, "int64", ())}


def test_queue_size_is_int32_and_sees_the_enqueue_or_not(tmp_path):
    data = {"format": "tfsem.session/1", "program": {"graph": str(SESSIONS / "fifo_queue.pbtxt")},
            "runs": [{"name": "p", "targets": ["enq"]}, {"name": "c", "fetch": ["deq", "sz"]}]}
    path = tmp_path / "s.session.json"
    path.write_text(json.dumps(data))
    found = _outcomes(_load(path))
    assert {tuple((k, v.dtype, int(v.array)) for k, v in o.outputs) for o in found} == {
        (("c/deq", "int64", 7), ("c/sz", "int32", 0)), (("c/deq", "int64", 7), ("c/sz", "int32", 1))}


def _variant(tmp_path, graph: str, old: str, new: str, runs) -> Path:
    text = (SESSIONS / graph).read_text()
    assert old in text
    (tmp_path / graph).write_text(text.replace(old, new, 1))
    path = tmp_path / "s.session.json"
    path.write_text(json.dumps({"format": "tfsem.session/1", "program": {"graph": graph},
                                "runs": runs}))
    return path


@pytest.mark.parametrize("old,new,why", [
    ("i: 1\n", "i: -1\n", "capacity -1"),
    ("timeout_ms\"\n    value {\n      i: -1", "timeout_ms\"\n    value {\n      i: 50",
     "timeout_ms=50"),
    ("    key: \"shapes\"\n    value {\n      list {\n        shape {\n        }",
     "    key: \"shapes\"\n    value {\n      list {\n        shape {\n          unknown_rank: true\n        }",
     "not fully defined"),
])
def test_queues_that_cannot_be_imported_exactly_are_refused(tmp_path, old, new, why):
    path = _variant(tmp_path, "fifo_queue.pbtxt", old, new,
                    [{"name": "p", "targets": ["enq"]}, {"name": "c", "fetch": ["deq"]}])
    with pytest.raises(ProgramError) as e:
        _load(path)
    assert why in str(e.value)


def _values(found) -> set:
    out = set()
    for o in found:
        if isinstance(o, blocking.Deadlock):
            out.add(("deadlock", tuple(sorted({b.split("/")[0] for b in o.blocked}))))
        else:
            out.add(tuple(sorted((k.rpartition("/")[0], str(v.array.tolist()))
                                 for k, v in o.outputs)) +
                    tuple(sorted((k, str(v.array.tolist())) for k, v in o.state)))
    return out


@pytest.mark.parametrize("graph_session, inline, change", [
    ("fifo_batches.session.json", "queue_batches.session.json", None),
    ("fifo_batches_cancel.session.json", "queue_cancel.session.json", None),
    # a close that does not cancel: it waits behind the batch that waits for room
    ("fifo_batches_cancel.session.json", "queue_cancel.session.json", "close")])
def test_enqueue_many_dequeue_many_and_close_import_as_the_inline_sessions(
        tmp_path, graph_session, inline, change):
    """TensorFlow's QueueEnqueueManyV2, QueueDequeueManyV2 (n a Const) and
    QueueCloseV2 of make_blocking_graphs.py's fifo_batches graph: the
    session over the graph has the outcomes of the same session written
    inline (the queue's capacity there made the graph's, 2)."""
    data = json.loads((SESSIONS / graph_session).read_text())
    data["program"]["graph"] = str(SESSIONS / "fifo_batches.pbtxt")
    want = json.loads((SESSIONS / inline).read_text())
    want["program"]["queues"]["q"]["capacity"] = 2
    if change == "close":
        data["runs"][1]["targets"] = ["close"]
        want["program"]["nodes"][2].pop("cancel_pending_enqueues")
    path = tmp_path / "s.session.json"
    path.write_text(json.dumps(data))
    s = _load(path)
    kinds = sorted(k for k, _ in s.blocking.queue_ops.values())
    assert blocking.DEQUEUE_MANY in kinds or blocking.CLOSE in kinds
    from tfsem.oracle.session import session_from_json
    assert _values(_outcomes(s)) == _values(_outcomes(session_from_json(want)))


def test_a_dequeue_many_of_a_computed_count_is_refused(tmp_path):
    text = (SESSIONS / "fifo_batches.pbtxt").read_text()
    # the count of pair/n computed by an Identity of the constant
    text = text.replace('  name: "pair"\n  op: "QueueDequeueManyV2"\n  input: "q"\n'
                        '  input: "pair/n"', '  name: "pair"\n  op: "QueueDequeueManyV2"\n'
                        '  input: "q"\n  input: "count"')
    text += ('node {\n  name: "count"\n  op: "Size"\n  input: "Const"\n  attr {\n'
             '    key: "T"\n    value {\n      type: DT_INT64\n    }\n  }\n  attr {\n'
             '    key: "out_type"\n    value {\n      type: DT_INT32\n    }\n  }\n}\n')
    (tmp_path / "g.pbtxt").write_text(text)
    path = tmp_path / "s.session.json"
    path.write_text(json.dumps({"format": "tfsem.session/1", "program": {"graph": "g.pbtxt"},
                                "runs": [{"name": "c", "fetch": ["pair"]}]}))
    with pytest.raises(ProgramError) as e:
        _load(path)
    assert "pair" in str(e.value) and "must be a constant" in str(e.value)


def test_a_run_that_takes_the_lock_without_releasing_it_is_refused(tmp_path):
    path = _variant(tmp_path, "critical_section.pbtxt", "x", "x",
                    [{"name": "a", "fetch": ["out"]},
                     {"name": "b", "targets": ["critical_section_execute/AssignVariableOp"]}])
    with pytest.raises(SessionError) as e:
        _load(path)
    (v,) = e.value.violations
    assert v.where.endswith("runs[1]") and v.rule == "unmodelled-session-op"
    assert "does not run its ConsumeMutexLock" in v.message


def test_a_graph_with_a_queue_is_refused_outside_a_session():
    from tfsem.graphdef import import_path
    with pytest.raises(ProgramError) as e:
        import_path(SESSIONS / "fifo_queue.pbtxt", ["deq"])
    assert "FIFOQueueV2" in str(e.value) and "only in a session" in str(e.value)


# -- TensorFlow's runtime on the same graphs ---------------------------------------


def _tf_trials(graph_file, calls, trials, timeout_ms, init_targets=()):
    """Per trial: (runs still blocked at the timeout, values fetched by the others).
    `timeout_ms`: one for every call, or per run name."""
    import numpy as np
    import tensorflow as tf
    from google.protobuf import text_format
    gd = text_format.Parse((SESSIONS / graph_file).read_text(), tf.compat.v1.GraphDef())
    seen = set()
    for _ in range(trials):
        g = tf.Graph()
        with g.as_default():
            tf.compat.v1.import_graph_def(gd, name="")
        config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=len(calls) + 2)
        with tf.compat.v1.Session(graph=g, config=config) as sess:
            for t in init_targets:
                sess.run(t)
            each = timeout_ms if isinstance(timeout_ms, dict) else {c[0]: timeout_ms for c in calls}
            barrier = threading.Barrier(len(calls))
            results, waiting = {}, []

            def call(name, fetch, targets):
                barrier.wait()
                try:
                    options = tf.compat.v1.RunOptions(timeout_in_ms=each[name])
                    results[name] = sess.run([f"{f}:0" for f in fetch] + targets,
                                             options=options)[:len(fetch)]
                except tf.errors.DeadlineExceededError:
                    waiting.append(name)
            threads = [threading.Thread(target=call, args=c) for c in calls]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            state = ()
            if not waiting and init_targets:
                state = (int(sess.run("x/Read/ReadVariableOp:0")),)
        seen.add((tuple(sorted(waiting)),
                  tuple(sorted((n, tuple(np.asarray(v).tolist() for v in r))
                               for n, r in results.items())), state))
    return seen


@pytest.mark.skipif(not has_tf, reason="TensorFlow is not installed")
def test_tensorflow_blocks_one_consumer_as_the_oracle_says(fifo_session):
    oracle = {tuple(x.split("/")[0] for x in o.blocked) for o in _outcomes(fifo_session)}
    seen = _tf_trials("fifo_queue.pbtxt", [("producer", [], ["enq"]), ("consumer1", ["deq"], []),
                                            ("consumer2", ["deq"], [])], 2, 500)
    for waiting, values, _ in seen:
        assert waiting in oracle
        assert values == tuple(sorted([({"consumer1": "consumer2", "consumer2": "consumer1"}
                                        [waiting[0]], (7,)), ("producer", ())]))


@pytest.mark.skipif(not has_tf, reason="TensorFlow is not installed")
def test_tensorflow_critical_section_outcomes_are_among_the_oracles(cs_session):
    oracle = {(tuple(int(v.array) for _, v in o.outputs), int(dict(o.state)["x"].array))
              for o in _outcomes(cs_session, {"x": 0})}
    seen = _tf_trials("critical_section.pbtxt", [("step1", ["out"], []), ("step2", ["out"], [])],
                      20, 5000, init_targets=["x/Assign"])
    for waiting, values, state in seen:
        assert waiting == ()
        outs = tuple(r[0] for _, r in values)
        assert (outs, state[0]) in oracle, (outs, state)


@pytest.fixture(scope="module")
def fn_session(tmp_path_factory):
    path = tmp_path_factory.mktemp("fn") / "s.session.json"
    path.write_text(json.dumps({"format": "tfsem.session/1", "program": {
        "graph": str(SESSIONS / "critical_section_function.pbtxt")},
        "runs": [{"name": "step1", "fetch": ["out"]}, {"name": "step2", "fetch": ["out"]}]}))
    return _load(path)


def test_a_section_inside_a_tf_function_holds_its_assign_add(fn_session):
    inside = {n.rpartition("critical_section_execute/")[2] for n in fn_session.blocking.sections}
    assert {"MutexLock", "AssignAddVariableOp", "ConsumeMutexLock"} <= inside
    assert not any("control_dependency" in n for n in fn_session.blocking.sections)
    import numpy as np
    p, b = fn_session.expand_blocking()
    zero = {"x": Tensor(np.array(0, dtype=np.int64), "int64")}
    for mode, lost in (("atomic", False), ("decomposed", True)):
        kept = blocking.outcomes(p, b, {}, zero, mode)[0]
        assert {int(dict(o.state)["x"].array) for o in kept} == {2}
        bare = blocking.outcomes(p, blocking.Blocking(b.queues, b.queue_ops, {}), {}, zero, mode)[0]
        assert (1 in {int(dict(o.state)["x"].array) for o in bare}) == lost


@pytest.mark.skipif(not has_tf, reason="TensorFlow is not installed")
def test_tensorflow_runs_the_function_section_within_the_oracles_outcomes(fn_session):
    oracle = {(tuple(int(v.array) for _, v in o.outputs), int(dict(o.state)["x"].array))
              for o in _outcomes(fn_session, {"x": 0})}
    seen = _tf_trials("critical_section_function.pbtxt",
                      [("step1", ["out"], []), ("step2", ["out"], [])], 10, 5000,
                      init_targets=["x/Assign"])
    for waiting, values, state in seen:
        assert waiting == ()
        assert (tuple(r[0] for _, r in values), state[0]) in oracle


SQ = SESSIONS / "section_queue.session.json"


@pytest.fixture(scope="module")
def sq_session():
    return _load(SQ)


def test_two_executes_of_one_section_around_a_queue_can_deadlock(sq_session):
    assert set(sq_session.blocking.sections.values()) == {"cs"}
    found = _outcomes(sq_session)
    done = [o for o in found if not isinstance(o, blocking.Deadlock)]
    (dead,) = [o for o in found if isinstance(o, blocking.Deadlock)]
    assert [tuple(int(v.array) for _, v in o.outputs) for o in done] == [(7,)]
    assert dead.blocked == ("consumer/get/q_Dequeue", "producer/put/MutexLock")


def test_a_run_that_takes_one_mutex_twice_is_refused(tmp_path):
    path = tmp_path / "s.session.json"
    path.write_text(json.dumps({"format": "tfsem.session/1", "program": {
        "graph": str(SESSIONS / "section_queue.pbtxt")},
        "runs": [{"name": "both", "fetch": ["item"], "targets": ["put/group_deps_2"]}]}))
    with pytest.raises(SessionError) as e:
        _load(path)
    (v,) = e.value.violations
    assert v.rule == "unmodelled-session-op" and "takes the mutex of section 'cs' twice" in v.message


#: a trial that deadlocks waits out the consumer's 1.2 s timeout: 3 trials by
#: default, 12 in the nightly profile (the claim, every outcome seen is the
#: oracle's, holds per trial; more trials see more of the outcomes)
DEADLOCK_TRIALS = 12 if settings.get_current_profile_name() == "nightly" else 3


@pytest.mark.skipif(not has_tf, reason="TensorFlow is not installed")
def test_tensorflow_deadlocks_or_completes_as_the_oracle_says(sq_session):
    oracle = set()
    for o in _outcomes(sq_session):
        if isinstance(o, blocking.Deadlock):
            oracle.add((tuple(sorted({n.split("/")[0] for n in o.blocked})), ()))
        else:
            oracle.add(((), (("consumer", tuple(int(v.array) for _, v in o.outputs)),
                             ("producer", ()))))
    # the producer gives up first: a consumer cancelled at its timeout frees the
    # section, and a producer still waiting would then get in and complete
    seen = _tf_trials("section_queue.pbtxt", [("producer", [], ["put/group_deps_2"]),
                                               ("consumer", ["item"], [])], DEADLOCK_TRIALS,
                      {"producer": 400, "consumer": 1200})
    for waiting, values, _ in seen:
        assert (waiting, values if not waiting else ()) in oracle, (waiting, values)


def test_tfsem_outcomes_of_a_graph_session_lists_its_deadlock_and_import_refuses_it(capsys):
    from tfsem.cli import main
    assert main(["outcomes", str(SQ), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    dead = [o for o in data["outcomes"] if "deadlock" in o]
    assert [sorted(o["deadlock"]) for o in dead] == [["consumer/get/q_Dequeue",
                                                      "producer/put/MutexLock"]]
    assert main(["import", str(SESSIONS / "section_queue.pbtxt"), "--fetch", "item"]) == 2
    err = capsys.readouterr().err
    assert "unmodelled-session-op" in err and "only in a session" in err


def test_check_of_a_rewritten_graph_that_moves_the_read_out_of_the_lock(tmp_path, capsys):
    from tfsem.cli import main
    text = (SESSIONS / "critical_section.pbtxt").read_text()
    edge = '  input: "x"\n  input: "^critical_section_execute/MutexLock"'
    assert text.count(edge) == 1          # the section's Read waits for the lock
    (tmp_path / "same.pbtxt").write_text(text)
    (tmp_path / "moved.pbtxt").write_text(text.replace(edge, '  input: "x"'))
    assert main(["check", str(CS), str(tmp_path / "same.pbtxt")]) == 0
    assert main(["check", str(CS), str(tmp_path / "moved.pbtxt"), "--json"]) == 1
    out = capsys.readouterr().out
    data = json.loads(out[out.index("{"):])
    assert data["verdict"] == "unsound"
    assert data["counterexample"]["outcome"]["state"]["x"] == 1      # the lost update
