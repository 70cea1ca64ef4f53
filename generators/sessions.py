"""Generated sessions (SPEC section 10; docs/sessions.md): small step graphs
over shared variables, optionally with critical sections and a bounded FIFO
queue, and sessions of 1 to 4 runs of them (concurrent or sequential, each
run fetching a random subset of the outputs, targeting random nodes, or
running the whole graph).

Two uses:

* :func:`sessions` — a Hypothesis strategy of `tfsem.session/1` JSON objects,
  for differential tests of the session semantics (tests/test_sessions_blocking.py);
* :func:`concurrent_steps` / :func:`one_step` / :func:`step_sessions` —
  generators for `tfsem verify --generator` and `tfsem fuzz --generator`
  (a function `(max_nodes, observe) -> strategy of (program, feeds, init)`):
  the program is a session expanded (oracle/session.py), so a campaign
  judges a pass under N concurrent runs of a graph.  The pass runs on the
  expanded program, the session's *supergraph* of rule 3 of "Concurrency
  Semantics For TensorFlow Resource Variables" (the runs' copies side by
  side); for a pass that rewrites node by node, as most do, that is the
  runs of the rewritten graph.  The step graphs of these generators are
  *sequential steps*: every variable access waits (a control edge) for the
  one before it, so a graph alone has no race, and whatever a campaign finds
  comes from the runs overlapping.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tfsem.oracle.values import Tensor

MAX_QUEUE_CAPACITY = 2


def _step_graph(draw, blocks: int, n_vars: int, chain: bool, sections: bool,
                queue: bool, batches: bool = False) -> dict:
    """A tfsem.program/1 JSON object of `blocks` blocks, each an access or
    two of one variable (or of the queue): AssignAdd, read-modify-write
    (Read, Add, Write), Read, Write, enqueue, dequeue (and with `batches`
    enqueue-many, dequeue-many, close and size).  `chain`: each
    block's first access waits for the previous block's last node."""
    variables = [f"x{i}" for i in range(n_vars)]
    nodes: list[dict[str, Any]] = []
    outputs: dict[str, str] = {}
    kinds = ["assign_add", "rmw", "read", "write"] + (["enqueue", "dequeue"] if queue else [])
    if queue and batches:
        kinds += ["enqueue_many", "dequeue_many", "close", "size"]
    last: str | None = None
    n_sections = draw(st.integers(1, 2)) if sections else 0
    for b in range(blocks):
        kind = draw(st.sampled_from(kinds))
        x = draw(st.sampled_from(variables))
        c = draw(st.integers(1, 3))
        wait = [f"^{last}"] if chain and last is not None else []
        if not chain and last is not None and draw(st.booleans()):
            wait = [f"^{last}"]
        block: list[dict[str, Any]] = []
        if kind == "assign_add":
            block = [{"name": f"v{b}", "op": "Var", "var": x},
                     {"name": f"c{b}", "op": "Const", "value": c},
                     {"name": f"a{b}", "op": "AssignAdd", "inputs": [f"v{b}", f"c{b}", *wait]}]
        elif kind == "rmw":
            block = [{"name": f"v{b}", "op": "Var", "var": x},
                     {"name": f"r{b}", "op": "Read", "inputs": [f"v{b}", *wait]},
                     {"name": f"c{b}", "op": "Const", "value": c},
                     {"name": f"s{b}", "op": "Add", "inputs": [f"r{b}", f"c{b}"]},
                     {"name": f"u{b}", "op": "Var", "var": x},
                     {"name": f"w{b}", "op": "Write", "inputs": [f"u{b}", f"s{b}"]}]
            outputs[f"o{b}"] = f"r{b}"
        elif kind == "read":
            block = [{"name": f"v{b}", "op": "Var", "var": x},
                     {"name": f"r{b}", "op": "Read", "inputs": [f"v{b}", *wait]}]
            outputs[f"o{b}"] = f"r{b}"
        elif kind == "write":
            block = [{"name": f"v{b}", "op": "Var", "var": x},
                     {"name": f"c{b}", "op": "Const", "value": c},
                     {"name": f"w{b}", "op": "Write", "inputs": [f"v{b}", f"c{b}", *wait]}]
        elif kind == "enqueue":
            block = [{"name": f"c{b}", "op": "Const", "value": c},
                     {"name": f"e{b}", "op": "QueueEnqueue", "queue": "q",
                      "inputs": [f"c{b}", *wait]}]
        elif kind == "enqueue_many":
            k = draw(st.integers(0, 3))
            block = [{"name": f"c{b}", "op": "Const", "value": [c + i for i in range(k)]},
                     {"name": f"e{b}", "op": "QueueEnqueueMany", "queue": "q",
                      "inputs": [f"c{b}", *wait]}]
        elif kind == "dequeue_many":
            block = [{"name": f"d{b}", "op": "QueueDequeueMany", "queue": "q",
                      "n": draw(st.integers(0, 3)), "inputs": wait}]
            outputs[f"o{b}"] = f"d{b}"
        elif kind == "close":
            block = [{"name": f"k{b}", "op": "QueueClose", "queue": "q", "inputs": wait,
                      "cancel_pending_enqueues": draw(st.booleans())}]
        elif kind == "size":
            block = [{"name": f"z{b}", "op": "QueueSize", "queue": "q", "inputs": wait}]
            outputs[f"o{b}"] = f"z{b}"
        else:
            block = [{"name": f"d{b}", "op": "QueueDequeue", "queue": "q", "inputs": wait}]
            outputs[f"o{b}"] = f"d{b}"
        if n_sections and draw(st.integers(0, 2)) > 0:
            sec = f"cs{draw(st.integers(0, n_sections - 1))}"
            for n in block:
                if n["op"] not in ("Var", "Const"):
                    n["critical_section"] = sec
        nodes += block
        last = block[-1]["name"]
    program: dict[str, Any] = {"format": "tfsem.program/1", "variables": variables,
                               "nodes": nodes, "outputs": outputs}
    if queue:
        program["queues"] = {"q": {"capacity": draw(st.integers(1, MAX_QUEUE_CAPACITY))}}
    return program


@st.composite
def sessions(draw, max_blocks: int = 4, max_runs: int = 3, sections: bool | None = None,
             queue: bool | None = None, orders: tuple[str, ...] = ("concurrent", "sequential"),
             chain: bool | None = None, batches: bool = False) -> dict:
    """`tfsem.session/1` objects: a step graph of 1 to `max_blocks` blocks
    over 1-2 variables, with critical sections and a queue each drawn on or
    off (or as given), and 1 to `max_runs` runs of it.  `batches`: the
    queue's blocks also enqueue and dequeue batches (QueueEnqueueMany,
    QueueDequeueMany), close it (QueueClose, cancelling pending enqueues or
    not) and read its size."""
    sections = draw(st.booleans()) if sections is None else sections
    queue = draw(st.booleans()) if queue is None else queue
    chain = draw(st.booleans()) if chain is None else chain
    program = _step_graph(draw, draw(st.integers(1, max_blocks)), draw(st.integers(1, 2)),
                          chain, sections, queue, batches)
    names = [n["name"] for n in program["nodes"] if n["op"] not in ("Var", "Const")]
    runs = []
    for k in range(draw(st.integers(1, max_runs))):
        how = draw(st.sampled_from(["whole", "fetch", "targets"]))
        run: dict[str, Any] = {"name": f"r{k}"}
        if how == "fetch" and program["outputs"]:
            run["fetch"] = draw(st.lists(st.sampled_from(sorted(program["outputs"])), min_size=1,
                                         max_size=2, unique=True))
        elif how == "targets" and names:
            run["targets"] = draw(st.lists(st.sampled_from(names), min_size=1, max_size=2,
                                           unique=True))
        runs.append(run)
    return {"format": "tfsem.session/1", "program": program, "runs": runs,
            "order": draw(st.sampled_from(orders))}


def _init(draw, variables) -> dict:
    init = {}
    for x in variables:
        v = draw(st.one_of(st.none(), st.integers(-2, 3)))
        if v is not None:
            init[x] = Tensor(v, "int64")
    return init


def step_sessions(runs: int, max_nodes: int = 12, order: str = "concurrent"):
    """A campaign generator: `runs` whole runs of a sequential step graph
    (module docstring), expanded into one program, with an initial value
    (or none) for each variable."""
    from tfsem.oracle.session import session_from_json  # noqa: PLC0415

    @st.composite
    def strategy(draw):
        # a block is 2-6 nodes; keep the expansion near max_nodes per run
        blocks = draw(st.integers(1, max(1, min(4, max_nodes // 3))))
        program = _step_graph(draw, blocks, draw(st.integers(1, 2)), True, False, False)
        data = {"format": "tfsem.session/1", "program": program, "order": order,
                "runs": [{"name": f"step{k + 1}"} for k in range(runs)]}
        p = session_from_json(data).expand()
        return p, {}, _init(draw, p.variables)
    return strategy()


def concurrent_steps(max_nodes: int, observe: str):
    """`tfsem verify PASS --generator tfsem.generators.sessions:concurrent_steps`:
    two concurrent runs of a sequential step."""
    return step_sessions(2, max_nodes)


def four_concurrent_steps(max_nodes: int, observe: str):
    """Four concurrent runs of a sequential step."""
    return step_sessions(4, max_nodes)


def one_step(max_nodes: int, observe: str):
    """One run of a sequential step (the control of concurrent_steps)."""
    return step_sessions(1, max_nodes)


def sequential_steps(max_nodes: int, observe: str):
    """Two sequential runs of a sequential step (training steps one after
    the other)."""
    return step_sessions(2, max_nodes, "sequential")
