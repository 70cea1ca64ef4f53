"""Batches and closing of FIFO queues in sessions (oracle/blocking.py:
QueueEnqueueMany, QueueDequeueMany, QueueClose, QueueSize) against a brute
force, on generated sessions (generators/sessions.py with `batches`) in both
modes, and the kernel behaviours TensorFlow 2.21 shows (each test names
the one it pins; tests/test_sessions_tensorflow_queues.py replays them on
TensorFlow's runtime).

The brute force reads the session's JSON itself and shares no code with the
oracle.  It enumerates the total orders of the runs' steps; a queue op's step
*starts* it, and the queue then settles as TensorFlow's QueueBase settles
under its lock (queue_base.cc FlushUnlocked): written here as single-element
moves (the head of the enqueue line puts one element in, the head of the
dequeue line takes one, a close at the head of the enqueue line closes, a
head that cannot succeed on a closed queue fails) applied in *every* order
until none applies; the brute force asserts that every order settles in the
same state, so the oracle's one fixed order of flushing loses nothing."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings

from tfsem.generators.sessions import sessions
from tfsem.oracle import blocking
from tfsem.oracle.session import SessionError, session_from_json
from tfsem.oracle.values import Error, Tensor

NIGHTLY = os.environ.get("TFSEM_HYPOTHESIS_PROFILE") == "nightly"
EXAMPLES = 400 if NIGHTLY else 50
BRUTE_FORCE_STATES = 60_000
SIZE = 3 if NIGHTLY else 2
ERR = "err"
OOR = "out-of-range"


class TooLarge(Exception):
    pass


def _deps(node: dict) -> list[str]:
    return [i.lstrip("^").partition(":")[0] for i in node.get("inputs", []) if not i.startswith("$")]


def _settle(q, nodes, cap, env_of, results_out):
    """Every state the queue `q` = (items, closed, enq line, deq line) settles
    in, moving one element (or closing, or failing one head) at a time in any
    order; with the completed ops and their outputs."""
    finals = set()
    seen = set()
    stack = [(q, ())]
    while stack:
        (items, closed, enq, deq), done = stack.pop()
        key = ((items, closed, enq, deq), done)
        if key in seen:
            continue
        seen.add(key)
        moves = []
        if enq:
            (node, k), rest = enq[0], enq[1:]
            op = nodes[node]["op"]
            if op == "QueueClose":
                moves.append(((items, True, rest, deq), done + ((node, None),)))
            elif closed:
                moves.append(((items, closed, rest, deq), done + ((node, None),)))
            else:
                batch = env_of(node)
                if k < len(batch) and len(items) < cap:
                    k2 = k + 1
                    if k2 == len(batch):
                        moves.append(((items + (batch[k],), closed, rest, deq),
                                      done + ((node, None),)))
                    else:
                        moves.append(((items + (batch[k],), closed, ((node, k2),) + rest, deq), done))
        if deq:
            (node, taken), rest = deq[0], deq[1:]
            n = nodes[node].get("n", 1) if nodes[node]["op"] == "QueueDequeueMany" else 1
            if closed and len(items) < n - len(taken):
                moves.append(((taken + items, closed, enq, rest), done + ((node, OOR),)))
            elif items:
                t2 = taken + (items[0],)
                if len(t2) == n:
                    out = t2[0] if nodes[node]["op"] == "QueueDequeue" else (
                        ERR if ERR in t2 else t2)
                    moves.append(((items[1:], closed, enq, rest), done + ((node, out),)))
                else:
                    moves.append(((items[1:], closed, enq, ((node, t2),) + rest), done))
        if not moves:
            finals.add(((items, closed, enq, deq), tuple(sorted(done))))
        stack.extend(moves)
    assert len(finals) == 1, f"the queue settles in {len(finals)} different states: {finals}"
    return finals.pop()


def brute_force(session: dict, init: dict, semantics: str) -> set:
    prog = session["program"]
    nodes = {n["name"]: n for n in prog["nodes"]}
    outputs = prog.get("outputs", {})
    cap = prog["queues"]["q"]["capacity"] if "queues" in prog else 0
    closes = any(n["op"] == "QueueClose" for n in prog["nodes"])
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
        runs.append((r["name"], keep, [f for f in (sorted(outputs) if whole else fetch)
                                       if outputs[f] in keep]))
    split = semantics == "decomposed"
    steps = []
    for k, (_, keep, _) in enumerate(runs):
        for n in sorted(keep):
            if split and nodes[n]["op"] in ("Write", "AssignAdd"):
                steps += [(k, n, "read"), (k, n, "write")]
            else:
                steps.append((k, n, ""))
    index = {s: i for i, s in enumerate(steps)}
    run_steps = [{i for i, s in enumerate(steps) if s[0] == k} for k in range(len(runs))]
    sec_steps = {}
    for i, (k, n, _) in enumerate(steps):
        s = nodes[n].get("critical_section")
        if s:
            sec_steps.setdefault((s, k), set()).add(i)
    var_names = sorted(prog["variables"])
    queue_ops = {"QueueEnqueue", "QueueEnqueueMany", "QueueDequeue", "QueueDequeueMany",
                 "QueueClose"}
    results = set()
    visited = [0]

    def last_step(k, n):
        return index[(k, n, "write")] if (k, n, "write") in index else index[(k, n, "")]

    def add(a, b):
        return ERR if ERR in (a, b) else a + b

    @lru_cache(maxsize=None)
    def explore(fired, completed, env_items, var_items, queue, pending_items):
        # fired: steps taken; completed: steps whose node has finished (a
        # queue op may start, then finish later when the queue settles)
        visited[0] += 1
        if visited[0] > BRUTE_FORCE_STATES:
            raise TooLarge
        env, var, pending = dict(env_items), dict(var_items), dict(pending_items)

        def ready(i):
            k, n, phase = steps[i]
            if session.get("order") == "sequential" and \
                    any(not run_steps[j] <= completed for j in range(k)):
                return False
            if phase == "write":
                return index[(k, n, "read")] in fired
            return all(last_step(k, d) in completed for d in _deps(nodes[n]))

        def section_free(i):
            k, n, _ = steps[i]
            s = nodes[n].get("critical_section")
            return not s or not any(s2 == s and k2 != k and idx & fired and not idx <= completed
                                    for (s2, k2), idx in sec_steps.items())

        candidates = [i for i in range(len(steps)) if i not in fired and ready(i)]
        moves = [i for i in candidates if section_free(i)]
        if not moves:
            waiting = [i for i in fired if i not in completed] + candidates
            if waiting:
                results.add(("deadlock", tuple(sorted(
                    f"{runs[steps[i][0]][0]}/{steps[i][1]}" + (f"@{steps[i][2]}" if steps[i][2]
                                                               else "") for i in waiting))))
                return
            outs = tuple(sorted((f"{runs[k][0]}/{f}", env[(k, outputs[f])])
                                for k in range(len(runs)) for f in runs[k][2]))
            state = dict(var)
            if "queues" in prog:
                items = queue[0]
                state["queue:q"] = ERR if ERR in items else items
                if closes:
                    state["closed:q"] = queue[1]
            results.add((outs, tuple(sorted(state.items()))))
            return
        for i in moves:
            k, n, phase = steps[i]
            node = nodes[n]
            op = node["op"]
            e2, v2, p2 = dict(env), dict(var), dict(pending)
            ins = [x for x in node.get("inputs", []) if not x.startswith("^")]
            done = {i}
            q2 = queue
            if op == "Const" and isinstance(node["value"], list):
                e2[(k, n)] = tuple(node["value"])

            def val(name):
                return env[(k, name)]
            if op == "Var":
                e2[(k, n)] = node["var"]
            elif op == "Const":
                e2.setdefault((k, n), node["value"])
            elif op == "Read":
                e2[(k, n)] = var[val(ins[0])]
            elif op == "Add":
                e2[(k, n)] = add(val(ins[0]), val(ins[1]))
            elif op in ("Write", "AssignAdd"):
                x, v = val(ins[0]), val(ins[1])
                if phase == "read":
                    p2[(k, n)] = var[x]
                else:
                    w = p2.pop((k, n)) if phase == "write" else var[x]
                    new = v if op == "Write" else add(w, v)
                    if v != ERR and new != ERR:
                        v2[x] = new
            elif op == "QueueSize":
                e2[(k, n)] = len(queue[0])
            elif op in queue_ops:
                items, closed, enq, deq = queue
                name = (k, n)
                immediate = []
                if op == "QueueDequeueMany" and node["n"] == 0:
                    immediate = [(name, ())]
                elif op == "QueueEnqueueMany" and not val(ins[0]):
                    immediate = [(name, None)]
                elif op == "QueueClose" and node.get("cancel_pending_enqueues"):
                    immediate = [(m, None) for m, _ in enq] + [(name, None)]
                    closed, enq = True, ()
                elif op in ("QueueEnqueue", "QueueEnqueueMany", "QueueClose"):
                    enq = enq + ((name, 0),)
                else:
                    deq = deq + ((name, ()),)

                def env_of(m):
                    kk, nn = m
                    v = env[(kk, [x for x in nodes[nn]["inputs"] if not x.startswith("^")][0])]
                    return tuple(v) if nodes[nn]["op"] == "QueueEnqueueMany" else (v,)
                q2, finished = _settle((items, closed, enq, deq), _Keyed(nodes), cap,
                                       env_of, None)
                done = set()   # the ops that finish now (this one may finish later)
                for m, out in immediate + list(finished):
                    done.add(index[(m[0], m[1], "")])
                    if out is not None:
                        e2[m] = out
            else:
                raise AssertionError(op)
            explore(fired | {i}, completed | frozenset(done), tuple(sorted(e2.items())),
                    tuple(sorted(v2.items())), q2, tuple(sorted(p2.items())))

    explore(frozenset(), frozenset(), (), tuple(sorted((x, init.get(x, ERR)) for x in var_names)),
            ((), False, (), ()), ())
    explore.cache_clear()
    return results


class _Keyed(dict):
    """Node JSON by (run, node) key, as the queue lines name them."""

    def __init__(self, nodes):
        super().__init__()
        self.nodes = nodes

    def __getitem__(self, key):
        return self.nodes[key[1]]


def _py(v):
    if isinstance(v, Error):
        return OOR if v.reason == blocking.OUT_OF_RANGE else ERR
    a = v.array
    if a.dtype == bool:
        return bool(a)
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
@given(data=sessions(max_blocks=SIZE + 1, max_runs=SIZE, queue=True, batches=True))
def test_generated_sessions_with_batches_and_close_agree_with_the_brute_force(data, semantics):
    init = {x: 1 for x in data["program"]["variables"][:1]}
    try:
        expected = brute_force(data, init, semantics)
    except TooLarge:
        assume(False)
    assert oracle_outcomes(data, init, semantics) == expected


SESSIONS = Path(__file__).resolve().parent.parent / "examples" / "sessions"


def _outcomes(data: dict, init=None, semantics="atomic") -> dict:
    p, b = session_from_json(data).expand_blocking()
    found, _ = blocking.outcomes(p, b, {}, init or {}, semantics)
    return found


def _summary(found) -> set:
    out = set()
    for o in found:
        if isinstance(o, blocking.Deadlock):
            out.add(("deadlock",) + o.blocked)
        else:
            out.add(tuple((k, _py(v)) for k, v in (*o.outputs, *o.state)))
    return out


def _example(name: str) -> dict:
    return json.loads((SESSIONS / name).read_text())


def _session(nodes, runs, capacity=2, outputs=None) -> dict:
    return {"format": "tfsem.session/1",
            "program": {"format": "tfsem.program/1", "variables": [],
                        "queues": {"q": {"capacity": capacity}}, "nodes": nodes,
                        "outputs": outputs or {}},
            "runs": runs, "order": "concurrent"}


def test_a_batch_streams_into_a_smaller_queue_and_a_dequeue_many_holds_the_line():
    """TensorFlow 2.21: enqueue_many of 3 into capacity 2 completes once a
    consumer frees room; a dequeue_many(3) started first takes each element
    as it arrives and a later dequeue waits behind it (fifo_queue.cc)."""
    found = _outcomes(_example("queue_batches.session.json"))
    assert _summary(found) == {(("pairs/pair", (1, 2)), ("single/item", 3), ("queue:q", ())),
                               (("pairs/pair", (2, 3)), ("single/item", 1), ("queue:q", ()))}
    for semantics in ("atomic", "decomposed"):
        data = _example("queue_batches.session.json")
        assert oracle_outcomes(data, {}, semantics) == brute_force(data, {}, semantics)


def test_a_close_fails_a_dequeue_many_that_cannot_complete_and_gives_its_elements_back():
    found = _outcomes(_example("queue_close.session.json"))
    assert _summary(found) == {(("consumer/batch", OOR), ("closed:q", True), ("queue:q", (1, 2)))}


def test_a_close_that_cancels_pending_enqueues_keeps_what_a_batch_put_in():
    found = _outcomes(_example("queue_cancel.session.json"))
    assert _summary(found) == {(("closed:q", True), ("queue:q", (1,))),
                               (("closed:q", True), ("queue:q", ()))}


def test_a_close_without_cancelling_waits_behind_a_blocked_enqueue():
    data = _example("queue_cancel.session.json")
    data["program"]["nodes"][2].pop("cancel_pending_enqueues")
    found = _outcomes(data)
    # the close comes first (the batch then fails: cancelled), or it waits
    # forever behind the batch that waits for room
    assert _summary(found) == {(("closed:q", True), ("queue:q", ())),
                               ("deadlock", "closer/cancel", "producer/put")}
    dead = next(o for o in found if isinstance(o, blocking.Deadlock))
    assert "closer/cancel waits behind producer/put in queue q's enqueue line" in dead.why
    assert any("queue q is full (1 elements, 1 of its batch enqueued)" in w for w in dead.why)


def test_a_closed_queue_fails_a_dequeue_it_cannot_serve_and_ignores_later_enqueues_and_closes():
    """TensorFlow 2.21: dequeue from a closed empty queue is OutOfRange,
    enqueue on a closed queue and a second close are Cancelled (no effect);
    dequeue_many(0) and an empty enqueue_many complete even when closed."""
    nodes = [{"name": "close", "op": "QueueClose", "queue": "q"},
             {"name": "again", "op": "QueueClose", "queue": "q", "inputs": ["^close"]},
             {"name": "c", "op": "Const", "value": 5},
             {"name": "put", "op": "QueueEnqueue", "queue": "q", "inputs": ["c", "^again"]},
             {"name": "get", "op": "QueueDequeue", "queue": "q", "inputs": ["^put"]},
             {"name": "none", "op": "QueueDequeueMany", "queue": "q", "n": 0, "inputs": ["^get"]},
             {"name": "size", "op": "QueueSize", "queue": "q", "inputs": ["^none"]}]
    found = _outcomes(_session(nodes, [{"name": "r", "fetch": ["got", "empty", "n"]}],
                               outputs={"got": "get", "empty": "none", "n": "size"}))
    assert _summary(found) == {(("r/empty", ()), ("r/got", OOR), ("r/n", 0), ("closed:q", True),
                                ("queue:q", ()))}


def test_the_size_does_not_count_the_elements_a_waiting_dequeue_many_holds():
    nodes = [{"name": "c", "op": "Const", "value": 1},
             {"name": "put", "op": "QueueEnqueue", "queue": "q", "inputs": ["c"]},
             {"name": "size", "op": "QueueSize", "queue": "q", "inputs": ["^put"]},
             {"name": "three", "op": "QueueDequeueMany", "queue": "q", "n": 3}]
    found = _outcomes(_session(nodes, [{"name": "p", "fetch": ["n"]},
                                       {"name": "c", "fetch": ["batch"]}],
                               outputs={"n": "size", "batch": "three"}))
    # the dequeue-many never completes (a deadlock); the size read 1 or 0
    # before that, which only the witness schedules show
    assert _summary(found) == {("deadlock", "c/three")}
    data = _session(nodes + [{"name": "more", "op": "QueueEnqueueMany", "queue": "q",
                              "inputs": ["pair", "^size"]},
                             {"name": "pair", "op": "Const", "value": [2, 3]}],
                    [{"name": "p", "fetch": ["n"], "targets": ["more"]},
                     {"name": "c", "fetch": ["batch"]}], capacity=4,
                    outputs={"n": "size", "batch": "three"})
    assert {dict(o)["p/n"] for o in _summary(_outcomes(data))} == {0, 1}
    assert {dict(o)["c/batch"] for o in _summary(_outcomes(data))} == {(1, 2, 3)}


def test_the_program_format_round_trips_batches_and_closes():
    data = _example("queue_close.session.json")["program"]
    data["nodes"][4]["cancel_pending_enqueues"] = True
    p, b = blocking.program_from_json(data)
    assert b.params == {"three": 3, "close": 1}
    again = blocking.program_to_json(p, b)
    assert [n for n in again["nodes"] if n["name"] == "three"][0]["n"] == 3
    assert [n for n in again["nodes"] if n["name"] == "close"][0]["cancel_pending_enqueues"] is True
    assert blocking.program_from_json(again) == (p, b)


@pytest.mark.parametrize("change, rule", [
    ({"n": -1}, "bad-value"), ({"n": "3"}, "bad-value"), ({"n": None}, "bad-value")])
def test_a_dequeue_many_without_a_count_is_refused_naming_the_node(change, rule):
    data = _example("queue_close.session.json")
    data["program"]["nodes"][5].update(change)
    with pytest.raises(SessionError) as exc:
        session_from_json(data)
    assert [v.rule for v in exc.value.violations] == [rule]
    assert "three" in str(exc.value) and "'n'" in str(exc.value)


def test_a_batch_of_the_wrong_element_shape_is_refused_when_it_starts():
    data = _example("queue_batches.session.json")
    data["program"]["nodes"][0]["value"] = 4       # a scalar, not a batch
    p, b = session_from_json(data).expand_blocking()
    with pytest.raises(blocking.BlockingError, match="wants int64 \\[k\\]"):
        blocking.outcomes(p, b, {}, {})
