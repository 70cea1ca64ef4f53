"""Critical sections and blocking queues in sessions (oracle/blocking.py)
against a brute force, on generated sessions (generators/sessions.py) and on
the examples: the same outcome set, deadlocks included, in both modes and
both orders.

The brute force reads the session's JSON itself and shares no code with the
oracle: it prunes each run itself, interprets the few ops the generator
writes (Var, Read, Const, Add, Write, AssignAdd, QueueEnqueue, QueueDequeue)
on Python ints, and enumerates the total orders of the runs' steps as the
paper's rules state them: (1) each step after the steps it depends on, (2)
no step of section S of one run while another run has begun S and not
finished it, (3) sequential runs one after the other, (4) a dequeue only
from a non-empty queue, an enqueue only into a queue below its capacity.  A
prefix no step can extend, with steps left, is a deadlock: the steps whose
dependencies are done wait."""

from __future__ import annotations

import os
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, assume, given, settings

from tfsem.generators.sessions import sessions
from tfsem.oracle import blocking
from tfsem.oracle.session import SessionError, session_from_json
from tfsem.oracle.values import Error, Tensor

NIGHTLY = os.environ.get("TFSEM_HYPOTHESIS_PROFILE") == "nightly"
EXAMPLES = 100 if NIGHTLY else 12
#: states the brute force may visit before an example is set aside (too large)
BRUTE_FORCE_STATES = 100_000
SIZE = 3 if NIGHTLY else 2   # blocks per graph and runs per session
ERR = "err"


def _deps(node: dict) -> list[str]:
    return [i.lstrip("^").partition(":")[0] for i in node.get("inputs", []) if not i.startswith("$")]


class TooLarge(Exception):
    pass


def brute_force(session: dict, init: dict, semantics: str) -> set:
    prog = session["program"]
    nodes = {n["name"]: n for n in prog["nodes"]}
    queues = prog.get("queues", {})
    outputs = prog.get("outputs", {})
    runs = []
    for r in session["runs"]:
        fetch, targets = r.get("fetch", []), r.get("targets", [])
        whole = not fetch and not targets
        roots = list(nodes) if whole else [outputs[f] for f in fetch] + targets
        keep, stack = set(), list(roots)
        while stack:
            n = stack.pop()
            if n not in keep:
                keep.add(n)
                stack.extend(_deps(nodes[n]))
        fetched = sorted(outputs) if whole else fetch
        runs.append((r["name"], keep, [f for f in fetched if outputs[f] in keep]))
    split = semantics == "decomposed"
    steps = []
    for k, (_, keep, _) in enumerate(runs):
        for n in sorted(keep):
            if split and nodes[n]["op"] in ("Write", "AssignAdd"):
                steps += [(k, n, "read"), (k, n, "write")]
            else:
                steps.append((k, n, ""))
    index = {s: i for i, s in enumerate(steps)}

    def last_step(k, n):
        return index[(k, n, "write")] if (k, n, "write") in index else index[(k, n, "")]

    sec_steps = {}   # (section, run) -> step indices
    for i, (k, n, _) in enumerate(steps):
        s = nodes[n].get("critical_section")
        if s:
            sec_steps.setdefault((s, k), set()).add(i)
    run_steps = [{i for i, s in enumerate(steps) if s[0] == k} for k in range(len(runs))]
    qnames = sorted(queues)
    var_names = sorted(prog["variables"])
    results = set()

    def ready(fired, i):
        k, n, phase = steps[i]
        if session.get("order") == "sequential" and any(not run_steps[j] <= fired for j in range(k)):
            return False
        if phase == "write":
            return index[(k, n, "read")] in fired
        return all(last_step(k, d) in fired for d in _deps(nodes[n]))

    def allowed(fired, i, qs):
        k, n, _ = steps[i]
        s = nodes[n].get("critical_section")
        if s:
            for (s2, k2), idx in sec_steps.items():
                if s2 == s and k2 != k and idx & fired and not idx <= fired:
                    return False
        op = nodes[n]["op"]
        if op == "QueueDequeue" and not qs[qnames.index(nodes[n]["queue"])]:
            return False
        if op == "QueueEnqueue" and len(qs[qnames.index(nodes[n]["queue"])]) >= \
                queues[nodes[n]["queue"]]["capacity"]:
            return False
        return True

    def val(env, k, name):
        return env[(k, name)]

    def add(a, b):
        return ERR if ERR in (a, b) else a + b

    visited = [0]

    @lru_cache(maxsize=None)
    def explore(fired, env_items, var_items, qs, pending_items):
        visited[0] += 1
        if visited[0] > BRUTE_FORCE_STATES:
            raise TooLarge
        env, var, pending = dict(env_items), dict(var_items), dict(pending_items)
        candidates = [i for i in range(len(steps)) if i not in fired and ready(fired, i)]
        moves = [i for i in candidates if allowed(fired, i, qs)]
        if not moves:
            if candidates:
                blocked = tuple(sorted(f"{runs[steps[i][0]][0]}/{steps[i][1]}"
                                       + (f"@{steps[i][2]}" if steps[i][2] else "")
                                       for i in candidates))
                results.add(("deadlock", blocked))
                return
            outs = tuple(sorted((f"{runs[k][0]}/{f}", env[(k, outputs[f])])
                                for k in range(len(runs)) for f in runs[k][2]))
            state = tuple(sorted(tuple(var.items()) + tuple(
                (f"queue:{q}", ERR if ERR in items else items) for q, items in zip(qnames, qs))))
            results.add((outs, state))
            return
        for i in moves:
            k, n, phase = steps[i]
            node = nodes[n]
            op = node["op"]
            e2, v2, q2, p2 = dict(env), dict(var), list(qs), dict(pending)
            ins = [i for i in node.get("inputs", []) if not i.startswith("^")]
            if op == "Var":
                e2[(k, n)] = node["var"]
            elif op == "Const":
                e2[(k, n)] = node["value"]
            elif op == "Read":
                e2[(k, n)] = var[val(env, k, ins[0])]
            elif op == "Add":
                e2[(k, n)] = add(val(env, k, ins[0]), val(env, k, ins[1]))
            elif op in ("Write", "AssignAdd"):
                x, v = val(env, k, ins[0]), val(env, k, ins[1])
                if phase == "read":
                    p2[(k, n)] = var[x]
                else:
                    w = p2.pop((k, n)) if phase == "write" else var[x]
                    new = v if op == "Write" else add(w, v)
                    if v != ERR and new != ERR:
                        v2[x] = new
            elif op == "QueueEnqueue":
                j = qnames.index(node["queue"])
                q2[j] = q2[j] + (val(env, k, ins[0]),)
            elif op == "QueueDequeue":
                j = qnames.index(node["queue"])
                e2[(k, n)], q2[j] = q2[j][0], q2[j][1:]
            else:
                raise AssertionError(op)
            explore(fired | {i}, tuple(sorted(e2.items())), tuple(sorted(v2.items())), tuple(q2),
                    tuple(sorted(p2.items())))

    explore(frozenset(), (), tuple(sorted((x, init.get(x, ERR)) for x in var_names)),
            tuple(() for _ in qnames), ())
    explore.cache_clear()
    return results


def _py(v):
    if isinstance(v, Error):
        return ERR
    a = v.array
    return int(a) if a.ndim == 0 else tuple(int(e) for e in a.reshape(-1))


def oracle_outcomes(data: dict, init: dict, semantics: str) -> set:
    s = session_from_json(data)
    p, b = s.expand_blocking()
    found, _ = blocking.outcomes(p, b, {}, {x: Tensor(v, "int64") for x, v in init.items()},
                                 semantics, max_states=200_000, max_seconds=30)
    out = set()
    for o in found:
        if isinstance(o, blocking.Deadlock):
            out.add(("deadlock", o.blocked))
        else:
            out.add((tuple((k, _py(v)) for k, v in o.outputs),
                     tuple((k, _py(v)) for k, v in o.state)))
    return out


@pytest.mark.parametrize("semantics", ["atomic", "decomposed"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=sessions(max_blocks=SIZE, max_runs=SIZE))
def test_generated_sessions_with_sections_and_queues_agree_with_the_brute_force(data, semantics):
    # a queue op inside a section holds it from when it starts, waiting
    # included (as TensorFlow's MutexLock does), which this brute force's
    # one step per op cannot say: tests/test_sessions_queues.py's brute
    # force, which starts and completes queue ops, judges those sessions
    assume(not any(n.get("critical_section") and n["op"].startswith("Queue")
                   for n in data["program"]["nodes"]))
    init = {x: 1 for x in data["program"]["variables"][:1]}
    try:
        expected = brute_force(data, init, semantics)
    except TooLarge:
        assume(False)   # past what the brute force enumerates in reasonable time
    assert oracle_outcomes(data, init, semantics) == expected


def _example(name: str) -> dict:
    import json
    from pathlib import Path
    return json.loads((Path(__file__).parent.parent / "examples" / "sessions" / name).read_text())


def test_two_consumers_of_one_item_deadlock_with_the_schedule_that_reaches_it():
    data = _example("queue_deadlock.session.json")
    s = session_from_json(data)
    p, b = s.expand_blocking()
    found, _ = blocking.outcomes(p, b, {}, {})
    assert {o.blocked for o in found} == {("consumer1/deq",), ("consumer2/deq",)}
    for o, schedule in found.items():
        assert isinstance(o, blocking.Deadlock) and "queue q is empty" in o.describe()
        # a schedule lists each queue op when it starts (joins its queue's line):
        # both dequeues start, the producer's one item completes one of them
        assert "producer/enq" in schedule and len([s for s in schedule if s.endswith("/deq")]) == 2
    assert oracle_outcomes(data, {}, "atomic") == brute_force(data, {}, "atomic")


def test_a_critical_section_keeps_the_read_modify_write_of_two_steps_whole():
    data = _example("counter_critical.session.json")
    with_section = oracle_outcomes(data, {"x": 0}, "decomposed")
    assert {dict(st)["x"] for _, st in with_section} == {2}
    for n in data["program"]["nodes"]:
        n.pop("critical_section", None)
    without = oracle_outcomes(data, {"x": 0}, "decomposed")
    assert {dict(st)["x"] for _, st in without} == {1, 2}   # the lost update
    assert with_section < without


def test_sections_of_different_names_held_crosswise_deadlock():
    """Run A takes S then needs T, run B takes T then needs S (nested
    sections): the lock model waits forever, as TensorFlow's mutexes would."""
    nodes = [{"name": "c", "op": "Const", "value": 1},
             {"name": "a1", "op": "Identity", "inputs": ["c"], "critical_section": "S"},
             {"name": "a2", "op": "Identity", "inputs": ["a1"], "critical_section": "T"},
             {"name": "a3", "op": "Identity", "inputs": ["a2"], "critical_section": "S"},
             {"name": "b1", "op": "Identity", "inputs": ["c"], "critical_section": "T"},
             {"name": "b2", "op": "Identity", "inputs": ["b1"], "critical_section": "S"},
             {"name": "b3", "op": "Identity", "inputs": ["b2"], "critical_section": "T"}]
    data = {"format": "tfsem.session/1",
            "program": {"format": "tfsem.program/1", "variables": [], "nodes": nodes,
                        "outputs": {"a": "a3", "b": "b3"}},
            "runs": [{"name": "A", "fetch": ["a"]}, {"name": "B", "fetch": ["b"]}]}
    s = session_from_json(data)
    p, b = s.expand_blocking()
    found, _ = blocking.outcomes(p, b, {}, {})
    deadlocks = [o for o in found if isinstance(o, blocking.Deadlock)]
    assert [o.blocked for o in deadlocks] == [("A/a2", "B/b2")]
    assert len(found) == 2   # and the run in which one goes first


@pytest.mark.parametrize("field,value,rule", [
    ("queues", {"q": {"capacity": 0}}, "bad-value"),
    ("queues", {"q": {"capacity": 2, "dtype": "int65"}}, "bad-value"),
])
def test_malformed_queues_are_refused_naming_the_field(field, value, rule):
    data = _example("queue_deadlock.session.json")
    data["program"][field] = value
    with pytest.raises(SessionError) as exc:
        session_from_json(data)
    assert any(v.rule == rule and "queues.q" in v.where for v in exc.value.violations)


def test_a_queue_op_of_an_undeclared_queue_and_a_read_of_an_enqueue_are_refused():
    data = _example("queue_deadlock.session.json")
    data["program"]["nodes"][2]["queue"] = "nope"
    with pytest.raises(SessionError) as exc:
        session_from_json(data)
    assert [v.rule for v in exc.value.violations] == ["unknown-queue"]
    data = _example("queue_deadlock.session.json")
    data["program"]["outputs"]["bad"] = "enq"
    with pytest.raises(SessionError) as exc:
        session_from_json(data)
    assert "has no output" in str(exc.value)


def test_the_plain_expansion_refuses_a_session_with_queues():
    s = session_from_json(_example("queue_deadlock.session.json"))
    with pytest.raises(SessionError, match="critical sections or queues"):
        s.expand()


def test_program_json_round_trips_sections_and_queues():
    data = _example("queue_deadlock.session.json")
    p, b = blocking.program_from_json(data["program"])
    again = blocking.program_to_json(p, b)
    assert again["queues"] == {"q": {"capacity": 1, "dtype": "int64", "shape": []}}
    assert blocking.program_from_json(again) == (p, b)


@pytest.mark.parametrize("op", ["QueueDequeueUpToV2", "QueueIsClosedV2", "MutexLock"])
def test_unmodelled_queue_and_mutex_ops_are_refused_by_name(op):
    data = _example("queue_deadlock.session.json")
    data["program"]["nodes"].append({"name": "extra", "op": op, "queue": "q"})
    with pytest.raises(SessionError) as exc:
        session_from_json(data)
    assert [(v.rule, v.where) for v in exc.value.violations] == [("unmodelled-op", "node 'extra'")]
    assert op in str(exc.value)


def test_an_enqueue_of_another_dtype_is_refused_when_it_fires():
    data = _example("queue_deadlock.session.json")
    data["program"]["nodes"][0]["value"] = {"dtype": "float32", "value": 1.5}
    p, b = session_from_json(data).expand_blocking()
    with pytest.raises(blocking.BlockingError, match="enqueues a float32"):
        blocking.outcomes(p, b, {}, {})


def test_a_sequential_session_deadlocks_when_the_consumer_runs_first():
    """Rule 3 and rule 4 together: run after run, a consumer before its
    producer waits forever (the producer never starts); the other way round
    the item is there."""
    data = _example("queue_deadlock.session.json")
    data["order"] = "sequential"
    data["runs"] = [{"name": "c", "fetch": ["item"]}, {"name": "p", "targets": ["enq"]}]
    p, b = session_from_json(data).expand_blocking()
    found, _ = blocking.outcomes(p, b, {}, {})
    assert [o.blocked for o in found] == [("c/deq",)]
    data["runs"].reverse()
    p, b = session_from_json(data).expand_blocking()
    found, _ = blocking.outcomes(p, b, {}, {})
    (o,) = found
    assert not isinstance(o, blocking.Deadlock) and _py(dict(o.outputs)["c/item"]) == 1


def test_a_dequeue_inside_a_section_holds_it_while_it_waits():
    """The consumer's dequeue starts inside section S and waits there for an
    item, holding S (as a tf.CriticalSection's MutexLock, taken before the
    dequeue runs, holds the mutex): the producer's enqueue, in S too, waits
    for S — a deadlock — unless the producer takes S first."""
    data = {"format": "tfsem.session/1", "program": {
        "format": "tfsem.program/1", "variables": [], "queues": {"q": {"capacity": 1}},
        "nodes": [{"name": "c", "op": "Const", "value": 7},
                  {"name": "enq", "op": "QueueEnqueue", "queue": "q", "inputs": ["c"],
                   "critical_section": "S"},
                  {"name": "deq", "op": "QueueDequeue", "queue": "q", "critical_section": "S"}],
        "outputs": {"item": "deq"}},
        "runs": [{"name": "producer", "targets": ["enq"]},
                 {"name": "consumer", "fetch": ["item"]}]}
    found = oracle_outcomes(data, {}, "atomic")
    assert found == {((("consumer/item", 7),), (("queue:q", ()),)),
                     ("deadlock", ("consumer/deq", "producer/enq"))}
