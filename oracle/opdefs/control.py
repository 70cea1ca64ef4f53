"""The control family: TensorFlow's control-flow ops (one OpDef each: its
import, where its semantics lives, how the checker treats it, its export;
oracle/opdefs, docs/writing-an-op-model.md).

* The v1 primitives `Switch`, `Merge`, `Enter`, `Exit`, `NextIteration` and
  `LoopCond` become the language's control-flow nodes of the same names
  (SPEC section 9), not functions: their semantics is the reference
  semantics with execution contexts and dead values (oracle/controlflow.py),
  the checker treats them by proof by cases and refutation
  (checking/control_flow.py), and each is exported as the TensorFlow op of
  its name (`node_exports`, read by graphdef/exporter.py).
* TensorFlow 2's functional ops `If`, `While`, `Case` and their `Stateless`
  forms are lowered to the primitives when the graph is read, as
  TensorFlow's LowerFunctionalOpsPass lowers them (`lowering`: the key of
  graph import's lowering, graphdef/functions.py; `function_attrs`: the
  attributes naming their functions); one left over (never lowered) is
  refused by name at import.
* The function calls `PartitionedCall` and `StatefulPartitionedCall` are
  inlined from the graph's library when it is read (graphdef/functions.py,
  `lowering="call"`); one left over is refused by name.
* The reference-typed primitives (`RefSwitch`, ...) and `ControlTrigger`
  are refused by name.
"""

from __future__ import annotations

from ..program import (ENTER, EXIT, LOOP_COND, MERGE, NEXT_ITERATION, SWITCH, DataIn)
from .registry import OpDef, define

FAMILY = "control"

_SEMANTICS = ("oracle/controlflow.py: SPEC section 9, execution contexts (frame, iteration) "
              "and dead values")
_Z3 = ("checking/control_flow.py: proof by cases on the predicates (loop-free programs), "
       "refutation by the reference semantics; loops are never proved")


def _export(e) -> dict:
    """A primitive as the TensorFlow op of its name: `e.T()` is the type of
    the value it forwards (DT_RESOURCE for a variable's handle)."""
    return {"name": e.name, "op": e.op, "input": e.data + e.ctrl, "attr": {"T": e.T()}}


def _export_merge(e) -> dict:
    node = _export(e)
    node["attr"]["N"] = {"i": len(e.data)}
    return node


def _export_enter(e) -> dict:
    node = _export(e)
    node["attr"].update({"frame_name": {"s": str(e.attrs["frame_name"]).encode()},
                         "is_constant": {"b": bool(e.attrs.get("is_constant", False))},
                         "parallel_iterations": {"i": int(e.attrs.get("parallel_iterations",
                                                                      10))}})
    return node


def _export_loop_cond(e) -> dict:
    return {"name": e.name, "op": e.op, "input": e.data + e.ctrl, "attr": {}}


def _primitive(kind: str, doc: str, export, output_args: tuple[str, ...] = ()):
    """Decorator: `build` is the import of TensorFlow's primitive `kind`,
    which becomes the language's node of the same name."""
    def deco(build):
        define(OpDef(kind, doc, build, FAMILY, output_args=output_args,
                     semantics=_SEMANTICS, z3=_Z3, node_exports={kind: export}))
        return build
    return deco


@_primitive(SWITCH, "Switch (output 0: pred false, output 1: pred true; the other is dead)",
            _export, output_args=("output_false", "output_true"))
def _switch(b):
    ref = b.add("Switch", [b.flow_input(0), b.input(1)])
    return [DataIn(ref.node, 0), DataIn(ref.node, 1)]


@_primitive(MERGE, "Merge (output 0: the first live input, output 1: its index, int32)",
            _export_merge, output_args=("output", "value_index"))
def _merge(b):
    ref = b.add("Merge", [b.flow_input(i) for i in range(b.n_inputs)])
    return [DataIn(ref.node, 0), DataIn(ref.node, 1)]


@_primitive(ENTER, "Enter (frame_name, is_constant, parallel_iterations)", _export_enter)
def _enter(b):
    attrs = {"frame_name": b.attr("frame_name"),
             "is_constant": bool(b.attr("is_constant", False)),
             "parallel_iterations": int(b.attr("parallel_iterations", 10))}
    return [b.add("Enter", [b.flow_input(0)], attrs)]


@_primitive(EXIT, "Exit (leaves the innermost loop)", _export)
def _exit(b):
    return [b.add("Exit", [b.flow_input(0)])]


@_primitive(NEXT_ITERATION, "NextIteration (the loop's back edge)", _export)
def _next_iteration(b):
    return [b.add("NextIteration", [b.flow_input(0)])]


@_primitive(LOOP_COND, "LoopCond (the loop's predicate)", _export_loop_cond)
def _loop_cond(b):
    return [b.add("LoopCond", [b.input(0)])]


def _refused_control_flow(b):
    b.reject(f"control flow ({b.node.op}) is not modelled", "control-flow")


def _left_over(tf_op: str, lowering: str, doc: str, function_attrs: tuple[str, ...] = (),
               build=_refused_control_flow) -> None:
    """An op graph import rewrites before the op table is read (`lowering`);
    the table refuses one left over by name.  Its effects are its
    functions' (which may have any), so it never counts as free of effects
    (a function body keeps it: graphdef/functions.py `_needed`)."""
    define(OpDef(tf_op, doc, build, FAMILY, lowering=lowering,
                 function_attrs=function_attrs,
                 stateful="its functions' effects (lowered or inlined when the graph is read)",
                 semantics="its lowering's (graphdef/functions.py), then the primitives'",
                 z3="its lowering's primitives'"))


def _refused_call(b):
    b.reject(f"op {b.node.op} has no model in tfsem and is not known to be free of effects: "
             "it is refused (a call is inlined from the graph's function library when the "
             "graph is read)", "unmodelled-op")


#: TensorFlow 2's functional control flow: lowered as LowerFunctionalOpsPass
#: lowers it (graphdef/functions.py `lower_functional`), then imported as
#: the primitives.
for _op in ("If", "StatelessIf"):
    _left_over(_op, "if", "lowered to Switch/Merge when the graph is read (LowerIfOp); one "
               "left over is refused", ("then_branch", "else_branch"))
for _op in ("While", "StatelessWhile"):
    _left_over(_op, "while", "lowered to Enter/Merge/Switch/Exit/NextIteration/LoopCond when "
               "the graph is read (LowerWhileHelper); one left over is refused",
               ("cond", "body"))
for _op in ("Case", "StatelessCase"):
    _left_over(_op, "case", "lowered to Switch/Merge when the graph is read (CaseBuilder); one "
               "left over is refused", ("branches",))

#: Function calls, inlined from the graph's library when it is read.
for _op in ("PartitionedCall", "StatefulPartitionedCall"):
    _left_over(_op, "call", "inlined from the graph's function library when the graph is "
               "read; one left over is refused", ("f",), _refused_call)

#: Reference-typed v1 primitives and ControlTrigger: refused by name.
for _op in ("RefSwitch", "RefMerge", "RefEnter", "RefExit", "RefNextIteration",
            "ControlTrigger"):
    define(OpDef(_op, "refused: control flow not modelled", _refused_control_flow, FAMILY,
                 stateful="refused (its effect is not modelled)",
                 semantics="none: refused by name at import",
                 z3="not encoded: refused at import"))


#: The ops that start a loop's frame and those that close its cycle (the
#: back edge into a Merge), plain and reference-typed: graph import's loop
#: detection and its cycle check read these.
LOOP_ENTRIES = (ENTER, "RefEnter")
LOOP_EXITS = (EXIT, "RefExit")
BACK_EDGES = (NEXT_ITERATION, "RefNextIteration")
#: The Switches and Merges, plain and reference-typed.
SWITCHES = (SWITCH, "RefSwitch")
MERGES = (MERGE, "RefMerge")


#: The MLIR tf dialect's region forms of the functional ops and their
#: terminator (`tf.IfRegion`, ...): the MLIR reader (graphdef/mlir.py)
#: refuses them by name with the functional ops (`mlir_control_flow`).
MLIR_REGION_FORMS = ("IfRegion", "WhileRegion", "CaseRegion", "Yield")


def mlir_control_flow() -> frozenset[str]:
    """The tf dialect ops the MLIR reader refuses as control flow: the
    functional ops this family lowers in a GraphDef (If, While, Case and
    their Stateless forms), which it does not lower in MLIR, and their
    region forms."""
    return frozenset(f"tf.{op}" for op in lowered() if lowered_by(op) != "call") \
        | frozenset(f"tf.{op}" for op in MLIR_REGION_FORMS)


def mlir_calls() -> frozenset[str]:
    """The tf dialect calls the MLIR reader inlines (`lowering="call"`)."""
    return frozenset(f"tf.{op}" for op in lowered("call"))


def lowered_by(op: str) -> str | None:
    """The lowering key of `op` (None: not lowered)."""
    from .registry import lookup
    d = lookup(op)
    return d.lowering if d is not None else None


def primitives() -> tuple[str, ...]:
    """The v1 primitives graph import builds as the language's nodes."""
    from .registry import ops_where
    return ops_where(lambda d: d.family == FAMILY and bool(d.node_exports))


def lowered(key: str | None = None) -> tuple[str, ...]:
    """The ops graph import lowers before the op table is read (of lowering
    `key`: "if", "while", "case", "call"; None: every one)."""
    from .registry import ops_where
    return ops_where(lambda d: d.lowering is not None and (key is None or d.lowering == key))


def refused() -> tuple[str, ...]:
    """The control-flow ops refused by name (left over or never modelled)."""
    from .registry import ops_where
    return ops_where(lambda d: d.family == FAMILY and not d.node_exports)
