"""`xla-lift`: XLA-style lifting of variable accesses out of a loop: reads
before it, writes sunk after it (what compiling a `tf.while_loop` into one
XLA cluster does with resource variables: "hoist all the resource variable
reads to the beginning of the computation and sink all the writes to the
end", the concurrency semantics of resource variables).

What it does, per loop (a frame with one LoopCond, not nested) and per
variable x that the loop accesses only through constant Enters of x's
handle:

* x is read once before the loop (waiting for what the handle's Enter
  waited for), and its value becomes a loop variable (Enter, Merge, Switch
  on the loop's LoopCond, NextIteration, Exit);
* inside the body the accesses of x, in the program's topological order,
  act on that loop variable: a Read becomes an Identity of the current
  value, an Assign-f becomes the function f of the current value and its
  input (keeping the node's name and control inputs);
* if the loop assigns x, the loop variable's final value is written back
  after the loop, and whatever waits for an Exit of the loop waits for that
  write too (as a cluster's consumers wait for the cluster).

Claims: unsound in every cell ("in general": when nothing else touches the
loop's variables while it runs, it is what the loop does).  Smallest
counterexample (docs/checking-control-flow.md):

    loop of zero trips whose body assigns x   beside   Write x := 5

The original ends with x = 5.  The rewrite reads x0 before the loop and
writes it back after it: the Write may come between, and x ends x0 -- a
lost update (the state differs; observed by outputs only, a Read of x after
both shows it).
"""

from __future__ import annotations

from tfsem.oracle.program import (ASSIGN, ENTER, EXIT, LOOP_COND, MERGE, NEXT_ITERATION, READ,
                                  SWITCH, VAR, ControlIn, DataIn, Node, Program)

from .api import UNSOUND, Pass, claims
from .edit import canonical_inputs, fresh_name, rebuild
from .licm import constant_enter


def _variable_of(p: Program, n: Node, frame: str) -> str | None:
    """x when access n goes through a constant Enter of `frame` of a Var(x)."""
    e = constant_enter(p, n.data_inputs[0], frame)
    if e is None or not isinstance(e.data_inputs[0], DataIn):
        return None
    src = p.node[e.data_inputs[0].node]
    return src.var if src.op == VAR else None


def lift_loop(p: Program, frame: str) -> Program:
    conds = [n for n in p.nodes if n.op == LOOP_COND and p.frames.get(n.name) == (frame,)]
    if len(conds) != 1:
        return p
    cond = conds[0].name
    order = {name: k for k, name in enumerate(p.topological_order)}
    inside = [n for n in p.nodes if frame in p.frames.get(n.name, ())]
    accesses: dict[str, list[Node]] = {}
    for n in inside:
        if n.op not in (READ, ASSIGN):
            continue
        x = _variable_of(p, n, frame) if p.frames[n.name] == (frame,) else None
        if x is None:   # (an access this pass cannot follow: leave the loop alone)
            return p
        accesses.setdefault(x, []).append(n)
    taken = set(p.node)
    replaced: dict[str, Node] = {}
    added: list[Node] = []
    writes: list[str] = []
    parallel = next((n.attrs.get("parallel_iterations", 10) for n in p.nodes
                     if n.op == ENTER and n.attrs.get("frame_name") == frame), 10)
    for x in sorted(accesses):
        nodes = sorted(accesses[x], key=lambda n: order[n.name])
        handle = constant_enter(p, nodes[0].data_inputs[0], frame)
        base = f"{frame}/{x}"
        r0, e, m, s, b, nx, xo = (fresh_name(f"{base}/{k}", taken)
                                  for k in ("read", "enter", "merge", "switch", "body", "next", "exit"))
        added += [Node(r0, READ, canonical_inputs((handle.data_inputs[0],) + handle.control_inputs)),
                  Node(e, ENTER, (DataIn(r0),), {"frame_name": frame, "is_constant": False,
                                                 "parallel_iterations": parallel}),
                  Node(m, MERGE, (DataIn(e), DataIn(nx))),
                  Node(s, SWITCH, (DataIn(m), DataIn(cond))),
                  Node(b, "Identity", (DataIn(s, 1),))]
        cur = b
        for n in nodes:
            if n.op == READ:
                replaced[n.name] = Node(n.name, "Identity", (DataIn(cur),) + n.control_inputs)
            else:
                replaced[n.name] = Node(n.name, n.fn, (DataIn(cur), n.data_inputs[1])
                                        + n.control_inputs)
                cur = n.name
        added += [Node(nx, NEXT_ITERATION, (DataIn(cur),)), Node(xo, EXIT, (DataIn(s, 0),))]
        if any(n.op == ASSIGN for n in nodes):
            v, w = fresh_name(f"{base}/var", taken), fresh_name(f"{base}/write", taken)
            added += [Node(v, VAR, (), {"var": x}), Node(w, ASSIGN, (DataIn(v), DataIn(xo)),
                                                       {"fn": "Snd"})]
            writes.append(w)
    if not replaced:
        return p
    exits = {n.name for n in p.nodes if n.op == EXIT and p.frames.get(n.name) == (frame,)}
    out = []
    for n in p.nodes:
        n = replaced.get(n.name, n)
        if writes and any(isinstance(i, (DataIn, ControlIn)) and i.node in exits for i in n.inputs):
            n = n.replace(inputs=canonical_inputs(n.inputs + tuple(ControlIn(w) for w in writes)))
        out.append(n)
    return rebuild(p, out + added)


def xla_lift(p: Program) -> Program:
    if not p.has_control_flow:
        return p
    frames = sorted({f[0] for f in p.frames.values() if len(f) == 1}
                    - {f[0] for f in p.frames.values() if len(f) > 1})
    for frame in frames:
        p = lift_loop(p, frame)
    return p


PASS = Pass(
    name="xla-lift",
    description="XLA-style: a loop's variable reads lifted before it, its writes sunk after it",
    claims=claims(atomic=(UNSOUND, UNSOUND), decomposed=(UNSOUND, UNSOUND)),
    doc=__doc__,
    function=xla_lift,
    control_flow=True,
    generator="tfsem.generators.control_flow:loop_cases",
)
