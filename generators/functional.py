"""The control-flow generator's blocks raised to TensorFlow 2's functional
control flow (the form `tf.cond` and `tf.while_loop` take in a
`tf.function`), for the Grappler target of its lowering
(campaigns/grappler_functional.py, docs/grappler-control-flow.md).

generators/control_flow.py writes TensorFlow 1's primitives and names each
block's nodes by the block (`c0/...`, `l1/...`).  `raise_graph` takes the
program's export (graphdef/exporter.py) and replaces

- each conditional `cN` by an `If` on its predicate whose inputs are the
  handles of the variables its branches access, with a then and an else
  function (each makes its branch's accesses, in their order, and returns
  the branch's value: its last Read, or 0); the Merge becomes an Identity
  of the If's output;
- each loop `lN` by a `While` over (counter, sum, trip count, handles...)
  with a cond function (`counter < trip count`) and a body function (the
  body's accesses, in their order, the counter plus one after the last of
  them, the sum plus each Read and the loop-invariant value); its Exits
  become Identities of the While's outputs.

Every branch and body function is stateful and lists its accesses as
control outputs, and every `If`/`While` has `_lower_using_switch_merge`
set, as TensorFlow 2 writes them.  A block whose shape is not the
generator's (a shrunk one, say) is left in primitives.  No TensorFlow is
needed here.
"""

from __future__ import annotations

import re

_INT = {"type": "DT_INT64"}


def _split(ref: str) -> tuple[bool, str, int]:
    """(control, node, port) of a GraphDef input."""
    if ref.startswith("^"):
        return True, ref[1:], 0
    node, sep, port = ref.rpartition(":")
    if sep and port.isdigit():
        return False, node, int(port)
    return False, ref, 0


def _const_int(name: str, node: dict) -> dict:
    """A Const of a function body: `node` (an exported Const) without inputs."""
    return {"name": name, "op": "Const", "attr": node["attr"]}


def _zero(name: str) -> dict:
    return {"name": name, "op": "Const",
            "attr": {"dtype": _INT, "value": {"tensor": {"dtype": "DT_INT64", "tensor_shape": {},
                                                         "int64_val": [0]}}}}


def _fn_name(prefix: str, what: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", prefix) + "_" + what


class _Graph:
    def __init__(self, graph: dict):
        self.graph = graph
        self.by = {n["name"]: n for n in graph["node"]}
        self.users: dict[str, list[tuple[str, bool, int]]] = {}
        for n in graph["node"]:
            for ref in n.get("input", []):
                ctrl, src, port = _split(ref)
                self.users.setdefault(src, []).append((n["name"], ctrl, port))

    def outside_uses_only(self, block: set[str], allowed: dict[str, set[int]]) -> bool:
        """No node outside `block` uses a node of it, except data ports in
        `allowed[node]` and control edges from the nodes of `allowed`."""
        for name in block:
            for user, ctrl, port in self.users.get(name, []):
                if user in block:
                    continue
                if name not in allowed or (not ctrl and port not in allowed[name]):
                    return False
        return True


def _accesses(g: _Graph, prefix: str, side: str, handle_of: dict[str, str],
              port: int, pivot: str) -> tuple[list[str], list[str]] | None:
    """The accesses `{prefix}/{side}{a}` of one branch or body, in order, with
    their constants; None when one is not of the generator's shape.
    `handle_of`: the node each access's handle input must name (by the
    variable's handle node), `port` the port it must use."""
    names, consts = [], []
    a = 0
    while f"{prefix}/{side}{a}" in g.by:
        name = f"{prefix}/{side}{a}"
        n = g.by[name]
        inputs = [_split(r) for r in n.get("input", [])]
        data = [(s, p) for c, s, p in inputs if not c]
        ctrl = [s for c, s, _ in inputs if c]
        if not data or data[0] not in {(h, port) for h in handle_of.values()}:
            return None
        if any(not (s == pivot or s.startswith(f"{prefix}/{side}") and s in names) for s in ctrl):
            return None
        if n["op"] == "ReadVariableOp":
            if len(data) != 1:
                return None
        elif n["op"] in ("AssignAddVariableOp", "AssignVariableOp", "AssignSubVariableOp"):
            k = g.by.get(f"{name}k")
            if len(data) != 2 or data[1] != (f"{name}k", 0) or k is None or k["op"] != "Const" \
                    or any(r != f"^{pivot}" for r in k.get("input", [])):
                return None
            consts.append(f"{name}k")
        else:
            return None
        names.append(name)
        a += 1
    return names, consts


def _body_nodes(g: _Graph, names: list[str], arg_of: dict[tuple[str, int], str],
                skip_ctrl: str) -> list[dict]:
    """The accesses (and their constants) as nodes of a function body: a
    handle input becomes its argument, a Const's output `name:output:0`,
    the control edge from the pivot is dropped."""
    out = []
    for name in names:
        n = dict(g.by[name])
        inputs = []
        for ref in n.get("input", []):
            ctrl, src, port = _split(ref)
            if ctrl:
                if src != skip_ctrl:
                    inputs.append(ref)
            elif (src, port) in arg_of:
                inputs.append(arg_of[(src, port)])
            else:
                inputs.append(f"{src}:output:0")
        n["input"] = inputs
        if n["op"] != "ReadVariableOp" and f"{name}k" in g.by:
            out.append(_const_int(f"{name}k", g.by[f"{name}k"]))
        out.append(n)
    return out


def _function(name: str, args: list[tuple[str, str]], outs: list[tuple[str, str, str]],
              nodes: list[dict], control: list[str]) -> dict:
    return {"signature": {"name": name,
                          "input_arg": [{"name": a, "type": t} for a, t in args],
                          "output_arg": [{"name": o, "type": t} for o, t, _ in outs],
                          "is_stateful": True, "control_output": list(control)},
            "node_def": nodes, "ret": {o: r for o, _, r in outs},
            "control_ret": {c: c for c in control}}


def _raise_cond(g: _Graph, c: str) -> tuple[set[str], list[dict], list[dict]] | None:
    """(the nodes replaced, the new nodes, the functions) of conditional `c`."""
    by = g.by
    sk, m = by.get(f"{c}/sk"), by.get(f"{c}/m")
    k, f, t = by.get(f"{c}/k"), by.get(f"{c}/f"), by.get(f"{c}/t")
    if None in (sk, m, k, f, t) or sk["op"] != "Switch" or m["op"] != "Merge" \
            or k["op"] != "Const" or k.get("input") or len(sk.get("input", [])) != 2:
        return None
    pred = sk["input"][1]
    if _split(sk["input"][0]) != (False, f"{c}/k", 0) or pred.startswith("^") \
            or f.get("input") != [f"{c}/sk"] and f.get("input") != [f"{c}/sk:0"] \
            or t.get("input") != [f"{c}/sk:1"]:
        return None
    handles: dict[str, str] = {}          # switch node -> handle node
    for name, n in by.items():
        mm = re.fullmatch(re.escape(c) + r"/s(.+)", name)
        if mm and n["op"] == "Switch" and name != f"{c}/sk":
            v = by.get(f"{c}/v{mm.group(1)}")
            if v is None or v["op"] != "VarHandleOp" or v.get("input") \
                    or n.get("input") != [f"{c}/v{mm.group(1)}", pred]:
                return None
            handles[name] = f"{c}/v{mm.group(1)}"
    order = sorted(handles)
    args = [(f"h{i}", "DT_RESOURCE") for i in range(len(order))]
    replaced = {f"{c}/sk", f"{c}/k", f"{c}/f", f"{c}/t", f"{c}/m", *handles}
    functions, values = [], {}
    for side, port, pivot in (("f", 0, f"{c}/f"), ("t", 1, f"{c}/t")):
        found = _accesses(g, c, side, {s: s for s in handles}, port, pivot)
        if found is None:
            return None
        names, consts = found
        replaced |= set(names) | set(consts)
        arg_of = {(s, port): f"h{order.index(s)}" for s in handles}
        nodes = _body_nodes(g, names, arg_of, pivot)
        values[side] = (names, nodes)
    merged = [_split(r) for r in m.get("input", [])]
    if len(merged) != 2 or any(ctrl for ctrl, _, _ in merged):
        return None
    for (side, (names, nodes)), (_, src, port) in zip(values.items(), merged):
        pivot = f"{c}/{side}"
        if src == pivot and port == 0:
            nodes = nodes + [_zero(f"{c}/{side}_zero")]
            ret = f"{c}/{side}_zero:output:0"
        elif src in names and by[src]["op"] == "ReadVariableOp" and port == 0:
            ret = f"{src}:value:0"
        else:
            return None
        functions.append(_function(_fn_name(c, "then" if side == "t" else "else"), args,
                                   [("value", "DT_INT64", ret)], nodes, names))
    block = replaced - {f"{c}/m"}
    if not g.outside_uses_only(block | {f"{c}/m"}, {f"{c}/m": {0}}):
        return None
    then_fn, else_fn = functions[1]["signature"]["name"], functions[0]["signature"]["name"]
    new = [
        {"name": f"{c}/if", "op": "If", "input": [pred, *[handles[s] for s in order]],
         "attr": {"Tcond": {"type": "DT_BOOL"},
                  "Tin": {"list": {"type": ["DT_RESOURCE"] * len(order)}},
                  "Tout": {"list": {"type": ["DT_INT64"]}},
                  "then_branch": {"func": {"name": then_fn}},
                  "else_branch": {"func": {"name": else_fn}},
                  "output_shapes": {"list": {"shape": [{}]}},
                  "_lower_using_switch_merge": {"b": True}}},
        {"name": f"{c}/m", "op": "Identity", "input": [f"{c}/if"], "attr": {"T": _INT}},
    ]
    return replaced, new, functions


def _raise_loop(g: _Graph, lp: str) -> tuple[set[str], list[dict], list[dict]] | None:
    """(the nodes replaced, the new nodes, the functions) of loop `lp`."""
    by = g.by

    def node(suffix, op, inputs=None):
        n = by.get(f"{lp}/{suffix}")
        if n is None or n["op"] != op or (inputs is not None and n.get("input", []) != inputs):
            raise LookupError(suffix)
        return n

    try:
        i0 = node("i0", "Const")
        enter = node("enter", "Enter", [f"{lp}/i0"])
        frame = enter["attr"]["frame_name"]
        lim = node("lim", "Enter")
        node("merge", "Merge", [f"{lp}/enter", f"{lp}/next"])
        node("less", "Less", [f"{lp}/merge", f"{lp}/lim"])
        node("cond", "LoopCond", [f"{lp}/less"])
        node("sw", "Switch", [f"{lp}/merge", f"{lp}/cond"])
        node("body", "Identity", [f"{lp}/sw:1"])
        node("one", "Const", [f"^{lp}/body"])
        add = node("add", "AddV2")
        node("next", "NextIteration", [f"{lp}/add"])
        node("exit", "Exit", [f"{lp}/sw"])
    except LookupError:
        return None
    if any(r.startswith("^") is False for r in i0.get("input", [])) or len(lim["input"]) != 1 \
            or not lim["attr"].get("is_constant", {}).get("b") \
            or lim["attr"]["frame_name"] != frame:
        return None
    limit_src = lim["input"][0]
    if limit_src.startswith("^"):
        return None
    # the handles: constant Enters of VarHandleOps
    handles: dict[str, str] = {}          # Enter -> handle node
    for name, n in by.items():
        mm = re.fullmatch(re.escape(lp) + r"/h(.+)", name)
        if mm and n["op"] == "Enter":
            v = by.get(f"{lp}/v{mm.group(1)}")
            if v is None or v["op"] != "VarHandleOp" or v.get("input") \
                    or n.get("input") != [f"{lp}/v{mm.group(1)}"] \
                    or not n["attr"].get("is_constant", {}).get("b"):
                return None
            handles[name] = f"{lp}/v{mm.group(1)}"
    order = sorted(handles)
    found = _accesses(g, lp, "a", {h: h for h in handles}, 0, f"{lp}/body")
    if found is None:
        return None
    names, consts = found
    # Reads also wait for the body (^body); it is the pivot the check allows
    add_in = [_split(r) for r in add.get("input", [])]
    if add_in[:2] != [(False, f"{lp}/body", 0), (False, f"{lp}/one", 0)] \
            or any(not (c and s in names) for c, s, _ in add_in[2:]):
        return None
    replaced = {f"{lp}/{s}" for s in ("enter", "lim", "merge", "less", "cond", "sw", "body",
                                      "one", "add", "next", "exit")}
    replaced |= set(handles) | set(names) | set(consts)
    # the loop-invariant value and the sum, when there
    inv = by.get(f"{lp}/inv")
    if inv is not None:
        try:
            cst = node("c", "Const", [])
            node("ce", "Enter", [f"{lp}/c"])
            node("inv", "AddV2", [f"{lp}/ce", f"{lp}/lim"])
        except LookupError:
            return None
        replaced |= {f"{lp}/c", f"{lp}/ce", f"{lp}/inv"}
    has_sum = f"{lp}/s_exit" in by
    terms: list[str] = []
    if has_sum:
        try:
            node("s0", "Const", [])
            node("s_enter", "Enter", [f"{lp}/s0"])
            node("s_merge", "Merge", [f"{lp}/s_enter", f"{lp}/s_next"])
            node("s_sw", "Switch", [f"{lp}/s_merge", f"{lp}/cond"])
            node("s_body", "Identity", [f"{lp}/s_sw:1"])
            node("s_exit", "Exit", [f"{lp}/s_sw"])
            nxt = node("s_next", "NextIteration")
        except LookupError:
            return None
        acc, k = f"{lp}/s_body", 0
        while f"{lp}/s_add{k}" in by:
            a = by[f"{lp}/s_add{k}"]
            if a["op"] != "AddV2" or len(a.get("input", [])) != 2 or a["input"][0] != acc:
                return None
            terms.append(a["input"][1])
            replaced.add(f"{lp}/s_add{k}")
            acc, k = f"{lp}/s_add{k}", k + 1
        if nxt.get("input") != [acc] or any(
                t not in names and t != f"{lp}/inv" for t in terms):
            return None
        replaced |= {f"{lp}/{s}" for s in ("s_enter", "s_merge", "s_sw", "s_body", "s_next",
                                           "s_exit")}
    elif inv is not None:
        return None           # (the generator sums the invariant value)
    outputs = {f"{lp}/exit": {0}, **({f"{lp}/s_exit": {0}} if has_sum else {})}
    if not g.outside_uses_only(replaced, outputs):
        return None
    # loop variables: counter, [sum], trip count, handles
    lv = [("i", f"{lp}/i0")] + ([("s", f"{lp}/s0")] if has_sum else []) \
        + [("n", limit_src)] + [(f"h{j}", handles[h]) for j, h in enumerate(order)]
    types = ["DT_INT64"] * (len(lv) - len(order)) + ["DT_RESOURCE"] * len(order)
    args = [(a, t) for (a, _), t in zip(lv, types)]
    arg_of = {(h, 0): f"h{order.index(h)}" for h in handles}
    body_nodes = _body_nodes(g, names, arg_of, f"{lp}/body")
    after = [f"^{s}" for c, s, _ in add_in[2:]]
    body_nodes.append(_zero(f"{lp}/one"))
    body_nodes[-1]["attr"]["value"]["tensor"]["int64_val"] = [1]
    body_nodes.append({"name": f"{lp}/add", "op": "AddV2",
                       "input": ["i", f"{lp}/one:output:0", *after], "attr": {"T": _INT}})
    outs = [("i_out", "DT_INT64", f"{lp}/add:z:0")]
    if has_sum:
        if inv is not None:
            body_nodes.append(_const_int(f"{lp}/c", cst))
            body_nodes.append({"name": f"{lp}/inv", "op": "AddV2",
                               "input": [f"{lp}/c:output:0", "n"], "attr": {"T": _INT}})
        acc = "s"
        for k, term in enumerate(terms):
            ref = f"{term}:value:0" if term in names else f"{term}:z:0"
            body_nodes.append({"name": f"{lp}/s_add{k}", "op": "AddV2", "input": [acc, ref],
                               "attr": {"T": _INT}})
            acc = f"{lp}/s_add{k}:z:0"
        outs.append(("s_out", "DT_INT64", acc))
    outs.append(("n_out", "DT_INT64", "n"))
    outs += [(f"h{j}_out", "DT_RESOURCE", f"h{j}") for j in range(len(order))]
    body = _function(_fn_name(lp, "body"), args, outs, body_nodes, names)
    cond = _function(_fn_name(lp, "cond"), args, [("going", "DT_BOOL", f"{lp}/less:z:0")],
                     [{"name": f"{lp}/less", "op": "Less", "input": ["i", "n"],
                       "attr": {"T": _INT}}], [])
    cond["signature"]["is_stateful"] = False
    ctrl = [r for r in i0.get("input", []) if r.startswith("^")]
    new = [{"name": f"{lp}/while", "op": "While", "input": [s for _, s in lv] + ctrl,
            "attr": {"T": {"list": {"type": types}},
                     "cond": {"func": {"name": cond["signature"]["name"]}},
                     "body": {"func": {"name": body["signature"]["name"]}},
                     "output_shapes": {"list": {"shape": [{} for _ in lv]}},
                     "parallel_iterations": {"i": enter["attr"].get("parallel_iterations",
                                                                    {}).get("i", 10)},
                     "_num_original_outputs": {"i": len(lv)},
                     "_lower_using_switch_merge": {"b": True}}},
           {"name": f"{lp}/exit", "op": "Identity", "input": [f"{lp}/while"],
            "attr": {"T": _INT}}]
    if has_sum:
        new.append({"name": f"{lp}/s_exit", "op": "Identity", "input": [f"{lp}/while:1"],
                    "attr": {"T": _INT}})
    return replaced, new, [cond, body]


def raise_graph(graph: dict) -> tuple[dict, list[str]]:
    """The exported GraphDef `graph` (a dict) with each of the generator's
    conditionals and loops raised to an If or a While (see the module
    docstring), and the names of the blocks raised."""
    out = {k: v for k, v in graph.items() if k != "node"}
    nodes = list(graph["node"])
    functions = list(graph.get("library", {}).get("function", []))
    raised = []
    prefixes = sorted({m.group(1) for n in nodes
                       if (m := re.fullmatch(r"([cl]\d+)/(m|exit)", n["name"]))})
    for prefix in prefixes:
        g = _Graph({"node": nodes})
        got = (_raise_cond if prefix[0] == "c" else _raise_loop)(g, prefix)
        if got is None:
            continue
        replaced, new, fns = got
        nodes = [n for n in nodes if n["name"] not in replaced] + new
        functions += fns
        raised.append(prefix)
    out["node"] = nodes
    if functions:
        out["library"] = {"function": functions}
    return out, raised


def stateful(op: str) -> bool:
    """Whether graphdef/ops.py models TensorFlow op `op` as stateful (a
    variable handle, a read, a write: the nodes the Grappler targets of
    control flow keep)."""
    from tfsem.graphdef.ops import lookup  # noqa: PLC0415
    m = lookup(op)
    return m is not None and bool(m.stateful)


def raised(program) -> tuple[bytes, list[str], list[str]] | None:
    """(the serialized raised GraphDef, fetches, targets) of `program`, or
    None when it cannot be exported or no block was raised.  The targets
    are the stateful nodes outside functions (handles, reads, writes) and
    every If and While: a tf.function runs them for their effects (its
    automatic control dependencies make them control outputs), where a
    Session run that only fetches an If's value runs none of its branch's
    writes (TensorFlow 2.21 prunes them, and so does tfsem's import)."""
    from tfsem.graphdef.exporter import export_fetched_by_name  # noqa: PLC0415
    from tfsem.graphdef.proto import encode  # noqa: PLC0415
    graph = export_fetched_by_name(program)
    if graph is None:    # (nothing to hand to Grappler)
        return None
    graph, blocks = raise_graph(graph)
    if not blocks:
        return None
    fetches = list(program.outputs)
    targets = [n["name"] for n in graph["node"]
               if n["name"] not in program.outputs
               and (stateful(n["op"]) or n["op"] in ("If", "While"))]
    return encode("GraphDef", graph), fetches, targets


def _imported(data: bytes, fetches, targets):
    from tfsem.graphdef.importer import import_graph  # noqa: PLC0415
    from tfsem.graphdef.proto import decode  # noqa: PLC0415
    return import_graph(decode("tensorflow.GraphDef", data), fetches, targets).program


def tfsem_reading(program):
    """tfsem's own reading of the raised graph (its lowering of If/While);
    None when nothing was raised."""
    r = raised(program)
    return None if r is None else _imported(*r)


