"""Static deadness: a loop-free program whose Switch predicates are known,
as the program without control flow that has its outcomes.

Section 5 of "A Computational Model for TensorFlow" and the whitepaper's
section 4.4 give a `Switch` two outputs, one of which carries a dead value;
a node with a dead input fires dead (no effect, dead outputs), and a `Merge`
forwards its live input.  When every `Switch` predicate of a program without
loops is fixed -- a constant, or computed by pure functions from constants
and from bool feeds whose values are given -- which nodes fire dead is the
same in every run, and the program is equivalent to a program *without*
control flow (:func:`specialize`):

* a live ``Switch`` becomes a node that waits for what the Switch waited for
  (its data and predicate sources, its control inputs) and outputs nothing
  used; the consumers of its taken port read its data input directly and
  wait for it (a control edge);
* a live ``Merge`` (exactly one live data input, index k) likewise: its
  consumers read the live input and wait for the Merge; its `value_index`
  is a constant k (int32) that waits for it.  A Merge with several live
  inputs makes a choice: :class:`Undecided`;
* a dead node becomes a node that waits for all of its inputs' sources (as
  the dead firing does: "each incoming edge holds content") and has no
  effect; a live Merge ignores a dead data input (it does not wait for it),
  a dead Merge (every data input dead) waits for all of them, and a Merge
  waits for its control inputs, dead or not (controlflow.py's Merge rule);
* a fetch that is dead is reported in `dead_outputs` (its value would be
  the error `dead` in every run).

Why this is exact: in the program with control flow, for the fixed
predicates every node fires exactly once in the root context, dead or live
as computed here, so a run is a sequence of the same steps; a dead firing
changes no variable, and a live one computes what its counterpart computes
from the same values.  The waits are the same: each rewired edge carries a
control edge from the node whose firing made its value available.  So the
runs of both programs correspond step for step, with the same outcomes.
(Tested against the reference semantics: tests/test_check_control_flow.py.)

`cleanup=True` (the dead-branch pass) also removes the dead nodes that no
node waits for: a node without effect or consumer changes no outcome.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from . import functions as fns
from .program import (ASSIGN, ENTER, EXIT, LOOP_COND, MERGE, NEXT_ITERATION, READ, SWITCH, VAR,
                      ControlIn, DataIn, FeedControlIn, FeedIn, Input, Node, Program, TensorType,
                      validate)
from .values import BITS_DTYPES, Tensor

LOOP_OPS = (ENTER, EXIT, NEXT_ITERATION, LOOP_COND)


class Undecided(Exception):
    """The program's deadness is not static (a loop, a predicate that is not
    fixed, a Merge with several live inputs)."""


@dataclass(frozen=True)
class Specialized:
    program: Program              # without control flow
    dead_outputs: frozenset       # fetches that are dead in every run


_DEAD = object()


@dataclass(frozen=True)
class _Port:
    """Where a port's value now comes from, what a consumer must also wait
    for, and its value when static (else None)."""
    source: Input
    waits: tuple[str, ...] = ()
    value: object = None


def predicate_feeds(p: Program) -> set[str]:
    """The bool scalar feeds among the data ancestors of Switch predicates."""
    out: set[str] = set()
    seen: set[str] = set()
    stack: list[Input] = [n.data_inputs[1] for n in p.nodes
                          if n.op == SWITCH and len(n.data_inputs) == 2]
    while stack:
        i = stack.pop()
        if isinstance(i, FeedIn):
            t = p.feed_type(i.name)
            if t.dtype == "bool" and t.shape == ():
                out.add(i.name)
            continue
        if not isinstance(i, DataIn) or i.node in seen or i.node not in p.node:
            continue
        seen.add(i.node)
        stack.extend(p.node[i.node].data_inputs)
    return out


#: Functions a computed predicate may be made of (:func:`computed_predicates`),
#: captured at import (a function re-registered under one of these names is
#: not one of them).  For each, whether it gives an error, and the dtype and
#: shape of its result, depend on its arguments' dtypes and shapes alone,
#: never on their values: Identity returns its argument; the comparisons
#: (oracle/opdefs/math.py `_comparison`) fail only on a dtype mismatch
#: (Function.apply's check), on bool operands of an ordered comparison
#: (`no-kernel`, a dtype), on shapes that do not broadcast (numpy's
#: ValueError, SHAPE_MISMATCH) or on a result past the element limit (a
#: shape), and give a bool tensor of the broadcast shape otherwise; the
#: logical ops fail only on a non-bool operand (`_bool_only`) or the same
#: shape conditions.  None of them reads a value to decide an error (no
#: division, no index, no conversion).
_CASE_FUNCTIONS = {name: fns.lookup(name) for name in (
    "Identity", "Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual",
    "LogicalAnd", "LogicalOr", "LogicalNot")}


def computed_predicates(p: Program, real: bool = False) -> dict[tuple[str, int], tuple]:
    """The Switch predicates of `p` that a proof by cases may case on as
    bool-valued terms (issue 23; docs/checking-control-flow.md, "Computed
    predicates"): port -> its term, a hashable key that is equal for two
    ports (of either program) computing the same function of σ.

    A predicate port qualifies when its data ancestors are only Consts,
    feeds (at least one that is not a bool scalar: those are cased on by
    :func:`predicate_feeds`) and nodes of the functions in
    `_CASE_FUNCTIONS`, without attributes.  Then at every σ

     (a) its value is the same in every run and every program that computes
         the same term: no Read, Assign or control-flow node is among its
         ancestors, and the functions are deterministic (seed 000, 3.1.1);
     (b) it is a bool scalar, never an error, when it is one at the σ whose
         feeds are all zeros: σ gives every feed a value of its declared
         type (SPEC section 2), so every ancestor has the same dtype and
         shape at every σ by induction, and by the choice of functions
         whether each is an error, and its result's dtype and shape, are
         then the same at every σ too.

    So every σ falls in exactly one case of the product of {false, true}
    over the distinct terms, and in that case each such port has the
    static value the case gives it, as a bool feed has in :func:`specialize`
    (`predicates`): the specialization's argument holds unchanged.  With `real`
    (--float real) a term with a float anywhere is refused (numpy's IEEE
    comparison may not be the real one)."""
    memo: dict[tuple[str, int], tuple | None] = {}

    def term(i: Input) -> tuple | None:
        """(key, value at the all-zeros σ, uses a feed that is no bool scalar) or None."""
        if isinstance(i, FeedIn):
            t = p.feed_type(i.name)
            try:
                zero = Tensor(np.zeros(tuple(t.shape), dtype=np.dtype(t.dtype)), t.dtype)
            except (TypeError, ValueError):
                return None
            if real and t.dtype in BITS_DTYPES:
                return None
            return ("feed", i.name, t.dtype, tuple(t.shape)), zero, not (t.dtype == "bool" and
                                                                        tuple(t.shape) == ())
        if not isinstance(i, DataIn) or i.node not in p.node:
            return None
        k = (i.node, i.port)
        if k in memo:
            return memo[k]
        memo[k] = None          # (a cycle: none in a valid loop-free program)
        n = p.node[i.node]
        result = None
        if n.op == "Const" and i.port == 0 and isinstance(n.attrs.get("value"), Tensor):
            v = n.attrs["value"]
            if not (real and v.dtype in BITS_DTYPES):
                result = (("const", v.dtype, tuple(v.array.shape), v.array.tobytes()), v, False)
        elif (n.op in _CASE_FUNCTIONS and fns.lookup(n.op) is _CASE_FUNCTIONS[n.op]
              and not n.attrs and len(n.data_inputs) == _CASE_FUNCTIONS[n.op].n_in):
            args = [term(a) for a in n.data_inputs]
            if all(a is not None for a in args):
                try:
                    values = _CASE_FUNCTIONS[n.op].apply([a[1] for a in args], {})
                except Exception:   # (no value at the zeros σ: not cased)
                    values = ()
                if i.port < len(values) and isinstance(values[i.port], Tensor) and not (
                        real and values[i.port].dtype in BITS_DTYPES):
                    result = ((n.op, i.port, tuple(a[0] for a in args)), values[i.port],
                              any(a[2] for a in args))
        memo[k] = result
        return result

    out: dict[tuple[str, int], tuple] = {}
    for n in p.nodes:
        if n.op != SWITCH or len(n.data_inputs) != 2 or not isinstance(n.data_inputs[1], DataIn):
            continue
        pred = n.data_inputs[1]
        try:
            t = term(pred)
        except RecursionError:
            # (a chain of functions deeper than Python's stack: not cased;
            # the nodes left half-done hold None in `memo`, not cased either)
            continue
        if (t is not None and t[2] and t[1].dtype == "bool"
                and tuple(t[1].array.shape) == ()):
            out[(pred.node, pred.port)] = t[0]
    return out


def term_value(term: tuple, feeds: Mapping[str, Tensor]) -> object:
    """The value at feeds `feeds` of a term of :func:`computed_predicates`
    (None when a feed it uses is missing)."""
    kind = term[0]
    if kind == "feed":
        return feeds.get(term[1])
    if kind == "const":
        _, dtype, shape, raw = term
        return Tensor(np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape).copy(), dtype)
    op, port, args = term
    values = [term_value(a, feeds) for a in args]
    if any(v is None for v in values):
        return None
    return _CASE_FUNCTIONS[op].apply(values, {})[port]


def term_leaves(term: tuple) -> tuple[dict[str, tuple], list[Tensor]]:
    """(feed name -> (dtype, shape), the constants) of a computed predicate's term."""
    feeds: dict[str, tuple] = {}
    consts: list[Tensor] = []
    stack = [term]
    while stack:
        t = stack.pop()
        if t[0] == "feed":
            feeds[t[1]] = (t[2], t[3])
        elif t[0] == "const":
            consts.append(term_value(t, {}))
        else:
            stack.extend(t[2])
    return feeds, consts


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _waits_for(port: _Port) -> tuple[Input, ...]:
    first = (ControlIn(port.source.node),) if isinstance(port.source, DataIn) else ()
    return first + tuple(ControlIn(w) for w in port.waits)


def _canonical(inputs) -> tuple[Input, ...]:
    inputs = tuple(inputs)
    data = [i for i in inputs if isinstance(i, (DataIn, FeedIn))]
    control = list(dict.fromkeys(i for i in inputs if isinstance(i, (ControlIn, FeedControlIn))))
    return tuple(data + control)


def _waiter(name: str, inputs) -> Node:
    """A node that waits for `inputs` (control edges) and does nothing else."""
    return Node(name, "Const", _canonical(inputs), {"value": Tensor(np.int64(0), "int64")})


def _floats(values) -> bool:
    return any(isinstance(v, Tensor) and v.dtype in BITS_DTYPES for v in values)


def specialize(p: Program, fixed: Mapping[str, bool] | None = None,
               cleanup: bool = False, partial: bool = False,
               real: bool = False,
               predicates: Mapping[tuple[str, int], bool] | None = None) -> Specialized:
    """P with the bool feeds `fixed` set, as a program without control flow
    (see the module docstring); raises :class:`Undecided`.

    `partial=True` (the dead-branch pass) rewrites only the Switches whose
    predicate is fixed and what they make dead, and keeps the rest of the
    control flow (loops, Switches on computed predicates) as it is: the
    result may have control flow.  A node that is dead whenever it fires
    (statically dead) becomes a waiter as above, which fires dead exactly
    when the original node would fire (its inputs are the same); a Merge
    drops its statically dead data inputs (it never forwards them), which
    is refused when its value_index is used and two inputs stay; a loop
    primitive that is statically dead is refused (a waiter would change
    the frames).

    `real=True` (a check under --float real, where float arithmetic is real
    arithmetic): no static value is computed by a function with a float
    input or result, since numpy computes it in IEEE arithmetic and
    `Equal(0.1 + 0.2, 0.3)` is false there and true over the reals; a
    predicate that needs one is not fixed (:class:`Undecided`).

    `predicates`: computed predicates (:func:`computed_predicates`) with the
    value of the case, (node, port) -> bool: the port keeps its node; its
    consumers read a constant of that value that waits for the node (a
    Switch it decides waits for it as before), as a fixed bool feed's read
    the feed's constant.  The caller answers only for the σ at which the
    port computes that value."""
    fixed = dict(fixed or {})
    fixed_ports = dict(predicates or {})
    if not partial:
        for n in p.nodes:
            if n.op in LOOP_OPS:
                raise Undecided(f"node {n.name!r} ({n.op}) is part of a loop")
    taken = set(p.node)
    nodes: dict[str, Node] = {}
    feed_const: dict[str, str] = {}
    case_const: dict[tuple[str, int], str] = {}   # (a fixed predicate port -> its constant)
    for f, b in sorted(fixed.items()):
        name = _fresh(f"{f}/fixed", taken)
        feed_const[f] = name
        nodes[name] = Node(name, "Const", (), {"value": Tensor(np.bool_(b), "bool")})
    ports: dict[tuple[str, int], object] = {}     # (node, port) -> _Port or _DEAD
    dead: set[str] = set()
    consumed = {(i.node, i.port) for n in p.nodes for i in n.data_inputs if isinstance(i, DataIn)}
    consumed |= {(o.node, o.port) for o in p.outputs.values()}

    def resolve(i: Input) -> object:
        if isinstance(i, FeedIn):
            if i.name in feed_const:
                return _Port(DataIn(feed_const[i.name]), (), Tensor(np.bool_(fixed[i.name]), "bool"))
            return _Port(i)
        if i.node in dead:
            return _DEAD
        r = ports.get((i.node, i.port))
        r = _Port(i) if r is None else r
        b = fixed_ports.get((i.node, i.port))
        if b is not None:
            # (a computed predicate the case fixes: its consumers read the
            # constant b, which waits for the port's node, so that they wait
            # for it as before; at every σ of the case the port holds b, so
            # they read what they read in P, and at the other σ the case's
            # programs do not depend on the predicate's value, which the
            # checker of the case would otherwise have to find a σ of the
            # case for: a Cast(p) added to a variable in a branch differs
            # only where it is 1)
            name = case_const.get((i.node, i.port))
            if name is None:
                name = _fresh(f"{i.node}/case", taken)
                case_const[(i.node, i.port)] = name
                nodes[name] = Node(name, "Const", _canonical(_waits_for(r)),
                                   {"value": Tensor(np.bool_(b), "bool")})
            r = _Port(DataIn(name), (), Tensor(np.bool_(b), "bool"))
        return r

    def keep(n: Node, data: list) -> None:
        """n as it is, its data inputs rewired; its static value if any."""
        inputs: list[Input] = [r.source for r in data]
        for r in data:
            inputs.extend(ControlIn(w) for w in r.waits)
        nodes[n.name] = n.replace(inputs=_canonical(inputs + list(n.control_inputs)))
        if n.op == "Const":
            ports[(n.name, 0)] = _Port(DataIn(n.name), (), n.attrs["value"])
        elif n.op == ENTER and data[0].value is not None:
            ports[(n.name, 0)] = _Port(DataIn(n.name), (), data[0].value)
        elif (n.op not in (VAR, READ, ASSIGN, SWITCH, MERGE) and n.op not in LOOP_OPS
              and data and all(r.value is not None for r in data)):
            f = fns.lookup(n.op)
            if f is not None:
                try:
                    results = f.apply([r.value for r in data], n.attrs)
                except Exception:  # (no static value; the node stays as it is)
                    results = ()
                if real and (_floats(r.value for r in data) or _floats(results)):
                    results = ()   # (IEEE, not real, arithmetic: see the docstring)
                for k, value in enumerate(results):
                    ports[(n.name, k)] = _Port(DataIn(n.name, k), (), value)

    for name in p.topological_order:
        n = p.node[name]
        data = [resolve(i) for i in n.data_inputs]
        controls = n.control_inputs
        dead_control = any(isinstance(c, ControlIn) and c.node in dead for c in controls)
        if n.op == MERGE:
            live = [k for k, r in enumerate(data) if r is not _DEAD]
            # (partial: a live input may still be dead at run time, and then
            # the Merge fires dead only once every input has arrived: it
            # keeps waiting for the dropped inputs' sources.  When it is
            # live that wait is one it did not have: a restriction of its
            # runs, never a new one)
            late = tuple(ControlIn(i.node) for i, r in zip(n.data_inputs, data)
                         if r is _DEAD and isinstance(i, DataIn)) if partial else ()
            controls = controls + late
            if len(live) > 1 and not partial:
                raise Undecided(f"Merge {name!r} has {len(live)} live inputs (a choice)")
            if len(live) > 1:
                if len(live) < len(data) and (name, 1) in consumed:
                    raise Undecided(f"Merge {name!r} loses inputs and its value_index is used")
                keep(n.replace(inputs=_canonical(tuple(i for k, i in enumerate(n.data_inputs)
                                                       if k in live) + controls)),
                     [data[k] for k in live])
                ports.pop((name, 0), None)
                continue
            if live:
                k = live[0]
                r = data[k]
                nodes[name] = _waiter(name, _waits_for(r) + controls)
                ports[(name, 0)] = _Port(r.source, (name,), r.value)
                index = Tensor(np.int32(k), "int32")
                if (name, 1) in consumed:
                    idx = _fresh(f"{name}/value_index", taken)
                    nodes[idx] = Node(idx, "Const", (ControlIn(name),), {"value": index})
                    ports[(name, 1)] = _Port(DataIn(idx), (), index)
                continue
        elif n.op == SWITCH and not dead_control and _DEAD not in data:
            value_in, pred = data
            v = pred.value
            if not (isinstance(v, Tensor) and v.dtype == "bool" and v.shape == ()):
                if partial:
                    keep(n, data)
                    continue
                raise Undecided(f"the predicate of Switch {name!r} is not fixed by constants "
                                f"and the bool feeds given" if v is None else
                                f"the predicate of Switch {name!r} is not a bool scalar")
            port = 1 if bool(v.array) else 0
            nodes[name] = _waiter(name, _waits_for(value_in) + _waits_for(pred) + controls)
            ports[(name, port)] = _Port(value_in.source, (name,), value_in.value)
            ports[(name, 1 - port)] = _DEAD
            continue
        elif not dead_control and _DEAD not in data:
            keep(n, data)
            continue
        # a dead node: it waits for every input's source, and does nothing
        if n.op in LOOP_OPS:
            raise Undecided(f"{n.op} {name!r} is dead whenever it fires (a loop in a dead branch)")
        # (a dead Merge is one whose data inputs are all dead: it fires only
        # once every one of them holds DEAD (controlflow.py's Merge rule), so
        # it waits for each dead source like any dead node.  Not waiting for
        # them lets a live Merge with a control input from it, and what waits
        # for that, fire before the live nodes the dead sources waited for:
        # runs P lacks, tests/test_check_control_flow_attacks.py)
        waits: list[Input] = []
        for i, r in zip(n.data_inputs, data):
            if r is _DEAD:
                waits.append(ControlIn(i.node))
            else:
                waits.extend(_waits_for(r))
        nodes[name] = _waiter(name, waits + list(controls))
        dead.add(name)

    outputs: dict[str, DataIn] = {}
    dead_outputs = set()
    for out, o in p.outputs.items():
        r = resolve(o)
        if r is _DEAD:
            dead_outputs.add(out)
            continue
        if isinstance(r.source, FeedIn):
            ident = _fresh(f"{out}/fetch", taken)
            nodes[ident] = Node(ident, "Identity", (r.source,))
            outputs[out] = DataIn(ident)
        else:
            outputs[out] = r.source
    if cleanup:
        _remove_unused_dead(nodes, dead, outputs)
    feeds = {f: p.feed_type(f) for f in p.feed_names if f not in fixed}
    result = Program(p.variables, tuple(nodes.values()), outputs, feeds)
    violations = validate(result)
    if violations:
        raise Undecided("the specialized program is malformed: " + "; ".join(map(str, violations[:3])))
    return Specialized(result, frozenset(dead_outputs))


def _remove_unused_dead(nodes: dict[str, Node], dead: set[str], outputs: Mapping[str, DataIn]) -> None:
    while True:
        used = {i.node for n in nodes.values() for i in n.inputs if isinstance(i, (DataIn, ControlIn))}
        used |= {o.node for o in outputs.values()}
        gone = [name for name in nodes if name in dead and name not in used]
        if not gone:
            return
        for name in gone:
            del nodes[name]


__all__ = ["Specialized", "Undecided", "computed_predicates", "predicate_feeds", "specialize",
           "term_leaves", "term_value", "TensorType"]
