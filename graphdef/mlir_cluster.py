"""Hand-built `tf_device.cluster`s in a module TensorFlow imported from a
GraphDef (`tfsem fuzz --target mlir-cluster:PIPELINE`).  Needs no TensorFlow.

TensorFlow's importer puts every op in an island of its own, and the wheel
has no pass that forms XLA clusters from attributes (docs/mlir.md), so the
passes that act on clusters (`tf-resource-op-lifting`,
`tf-device-decompose-resource-ops-in-cluster`) would never see one in a
generated program.  `wrap_cluster(text)` moves a run of the imported islands
into one island holding a `tf_device.cluster` whose region runs them in
program order: the islands from the `start`-th to the `stop`-th resource
access (`ReadVariableOp`, `AssignVariableOp`, `Assign{Add,Sub}VariableOp`)
in the printed order, chosen from a hash of the text (the same module always
gets the same cluster), with every island between them except those with no
operand at all (`Const`, `VarHandleOp`), which stay where they are.

Why the result is a program: the printed order of an imported graph is a
topological order, and a contiguous run of a topological order is convex
(a path between two of its islands passes only through islands printed
between them); the islands left out have no operands, so no path runs
through them.  So no op outside the cluster needs one inside and is needed
by another inside: one island can hold them all.  Its control operands are
the control operands of its members that come from outside; its results are
the members' data results (uses outside are renamed) and its control token
stands for each member's.  Ordering the members in program order only
removes interleavings: the module read back by tfsem (the campaign's
original) already has the cluster, so the pipeline is judged against the
program with the cluster, not against the imported one.
"""

from __future__ import annotations

import hashlib
import re

RESOURCE_OPS = ("tf.ReadVariableOp", "tf.AssignVariableOp", "tf.AssignAddVariableOp",
                "tf.AssignSubVariableOp")

_ISLAND = re.compile(r"^(?P<indent>\s*)(?P<lhs>%[\w$.-]+(?:, %[\w$.-]+)*) = "
                     r"tf_executor\.island(?:\((?P<ctl>[^)]*)\))? wraps (?P<op>\"[\w.]+\"\(.*)$")
_CONTROLS = re.compile(r"tf_executor\.island\(([^)]*)\)")
_VALUE = re.compile(r"%[\w$.-]+(?:#\d+)?")


class _Island:
    def __init__(self, k: int, m: re.Match):
        self.line = k
        names = [x.strip() for x in m.group("lhs").split(",")]
        self.outputs, self.control = names[:-1], names[-1]
        self.controls = [x.strip() for x in (m.group("ctl") or "").split(",") if x.strip()]
        self.op = m.group("op")
        self.op_name = self.op[1:self.op.index('"', 1)]
        head, _, result = self.op.rpartition(" -> ")
        self.result_type = result.strip()
        args = self.op[self.op.index("(") + 1:]
        self.has_operands = bool(self.controls) or not args.startswith(")")
        self.indent = m.group("indent")


def islands(text: str) -> list[_Island] | None:
    """The `wraps` islands of the (only) executor graph, or None when the
    module is not one TensorFlow imported (an island with a region, a
    multi-result value, more than one graph)."""
    out = []
    lines = text.split("\n")
    if sum("tf_executor.graph" in ln for ln in lines) != 1:
        return None
    for k, ln in enumerate(lines):
        m = _ISLAND.match(ln)
        if m is None:
            if "tf_executor.island" in ln:
                return None
            continue
        isl = _Island(k, m)
        if any(":" in o for o in isl.outputs) or len(isl.outputs) > 1:
            return None
        if isl.outputs and isl.result_type.startswith("("):
            return None
        out.append(isl)
    return out


def choose(text: str, accesses: int) -> tuple[int, int]:
    """(start, stop): the resource accesses the cluster spans, inclusive,
    from a hash of the text."""
    h = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    start = h % accesses
    stop = start + (h >> 16) % (accesses - start)
    return start, stop


def wrap_cluster(text: str, span: tuple[int, int] | None = None) -> str | None:
    """`text` with a run of its islands in one `tf_device.cluster` (see the
    module docstring); None when the module has fewer than two resource
    accesses or is not in the form TensorFlow's importer writes.  `span`:
    (start, stop) of the accesses to cover, instead of the hash's choice."""
    isl = islands(text)
    if not isl:
        return None
    access = [k for k, i in enumerate(isl) if i.op_name in RESOURCE_OPS]
    if len(access) < 2:
        return None
    start, stop = span if span is not None else choose(text, len(access))
    if not 0 <= start <= stop < len(access):
        raise ValueError(f"span {span} outside the {len(access)} resource accesses")
    run = isl[access[start]:access[stop] + 1]
    members = [i for i in run if i.has_operands or i.op_name in RESOURCE_OPS]
    inside = {i.control for i in members} | {o for i in members for o in i.outputs}
    lines = text.split("\n")
    indent = members[-1].indent
    ctl_in = list(dict.fromkeys(c for i in members for c in i.controls if c not in inside))
    rename: dict[str, str] = {}
    body, results, types = [], [], []
    for n, i in enumerate(members):
        op = _VALUE.sub(lambda m: rename.get(m.group(0), m.group(0)), i.op)
        if i.outputs:
            v = f"%tfsem_v{n}"
            rename[i.outputs[0]] = v
            body.append(f"{indent}    {v} = {op}")
            results.append((i.outputs[0], v))
            types.append(i.result_type)
        else:
            body.append(f"{indent}    {op}")
    ctl = "%tfsem_cluster_ctl"
    outside: dict[str, str] = {i.control: ctl for i in members}
    n = len(results)
    if n == 0:
        lhs, c, yld, ret = ctl, "", f"{indent}  tf_executor.yield", f"{indent}    tf_device.return"
        sig = "() -> ()"
    else:
        tlist = ", ".join(types)
        vals = ", ".join(v for _, v in results)
        if n == 1:
            lhs, c = f"%tfsem_cluster, {ctl}", "%tfsem_c = "
            outside[results[0][0]] = "%tfsem_cluster"
            yld = f"{indent}  tf_executor.yield %tfsem_c : {tlist}"
            sig = f"() -> {tlist}"
        else:
            lhs, c = f"%tfsem_cluster:{n}, {ctl}", f"%tfsem_c:{n} = "
            for k, (old, _) in enumerate(results):
                outside[old] = f"%tfsem_cluster#{k}"
            yld = f"{indent}  tf_executor.yield " + ", ".join(
                f"%tfsem_c#{k}" for k in range(n)) + f" : {tlist}"
            sig = f"() -> ({tlist})"
        ret = f"{indent}    tf_device.return {vals} : {tlist}"
    ctl_ops = f"({', '.join(ctl_in)})" if ctl_in else ""
    block = [f"{indent}{lhs} = tf_executor.island{ctl_ops} {{",
             f"{indent}  {c}\"tf_device.cluster\"() ({{", *body, ret,
             f"{indent}  }}) : {sig}", yld, f"{indent}}}"]
    drop = {i.line for i in members}
    last = members[-1].line
    out = []
    for k, ln in enumerate(lines):
        if k in drop:
            if k == last:
                out.extend(block)
            continue
        if k > last:
            ln = _VALUE.sub(lambda m: outside.get(m.group(0), m.group(0)), ln)
            ln = _CONTROLS.sub(lambda m: "tf_executor.island(" + ", ".join(
                dict.fromkeys(x.strip() for x in m.group(1).split(","))) + ")", ln)
        out.append(ln)
    return "\n".join(out)
