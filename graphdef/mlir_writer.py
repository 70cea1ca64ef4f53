"""A tfsem program written directly as a `tf_executor` module (docs/mlir.md,
"A generator that writes modules").

TensorFlow's importer makes every island of one op.  This writer groups a
program's nodes into islands by their names, so that a generator
(generators/mlir.py) can write modules with islands of several ops, control
tokens between islands, dead islands and `tf_device.cluster` regions:

- a node named ``islandK/NAME`` is an op of island K; one named
  ``islandK/clusterJ/NAME`` an op of cluster J, a `tf_device.cluster` inside
  island K; any other node is an island of its own (a node the reducer made);
- an island runs its ops in the program's topological order (ties in
  declaration order), a cluster's ops are contiguous in it (a cluster is
  placed as one op among the island's);
- an edge between islands (data or control) is the consumer island's use of
  the value the producer island yields, or of its control token; the islands
  are printed in a topological order of those edges;
- the program's outputs are fetched and are `@main`'s results (named by
  `tf.entry_function`'s `outputs`), its feeds `@main`'s arguments (its
  `inputs`);
- an island that writes a variable and that no fetch reaches (through data
  and control tokens) has its control token fetched, so that every write
  runs under TensorFlow's reading of a V1 graph too (graph pruning keeps it);
  an island that only reads and computes and that no fetch reaches is dead
  code, which `tf-executor-graph-pruning` deletes.

`write_module(program)` is the module's text, or None when the program
cannot be written so: an op outside the subset (Var, Read, Assign-Snd/Add/Sub,
Const, Add, Sub, Mul, Neg, Identity), a dtype other than int64, an unknown
type, or islands (clusters) whose edges form a cycle once grouped.  No
TensorFlow is needed: the text is what tfsem's MLIR reader
(graphdef/mlir.py) and TensorFlow's `run_pass_pipeline` both read.
"""

from __future__ import annotations

import re

import numpy as np

from tfsem.oracle.program import ASSIGN, READ, VAR, ControlIn, DataIn, FeedIn, Program

#: islandK/NAME or islandK/clusterJ/NAME
NAME = re.compile(r"^island(\d+)/(?:cluster(\d+)/)?[^/]+$")
#: tfsem function -> TensorFlow op
FUNCTIONS = {"Add": "tf.AddV2", "Sub": "tf.Sub", "Mul": "tf.Mul", "Neg": "tf.Neg",
             "Identity": "tf.Identity"}
#: Assign-f -> TensorFlow op
ASSIGNS = {"Snd": "tf.AssignVariableOp", "Add": "tf.AssignAddVariableOp",
           "Sub": "tf.AssignSubVariableOp"}
_ELEMENT = {"int64": "i64"}


class _Skip(Exception):
    """The program cannot be written as a module (write_module returns None)."""


def is_direct(program: Program) -> bool:
    """Whether `program` names its islands (a program of generators/mlir.py,
    or one reduced from it): it is then written by `write_module`, not
    exported and imported by TensorFlow."""
    return any(NAME.match(n.name) for n in program.nodes)


def _tensor(t) -> str:
    if t is None or t.shape is None or t.dtype not in _ELEMENT:
        raise _Skip(f"type {t!r}")
    dims = "".join(f"{d}x" for d in t.shape)
    return f"tensor<{dims}{_ELEMENT[t.dtype]}>"


def _resource(t) -> str:
    return f"tensor<!tf_type.resource<{_tensor(t)}>>"


def _dense(value, t) -> str:
    arr = np.asarray(getattr(value, "array", value))
    if arr.dtype != np.int64 or tuple(arr.shape) != tuple(t.shape):
        raise _Skip("constant")
    flat = arr.reshape(-1)
    if arr.ndim == 0 or (flat.size and (flat == flat[0]).all()):
        body = str(int(flat[0])) if flat.size else "[]"
    else:
        def nest(a):
            return "[" + ", ".join(nest(x) if isinstance(x, list) else str(int(x)) for x in a) + "]"
        body = nest(arr.tolist())
    return f"dense<{body}> : {_tensor(t)}"


def _key(name: str) -> tuple[tuple, tuple | None]:
    """(island key, cluster key) of a node."""
    m = NAME.match(name)
    if not m:
        return ("node", name), None
    island = ("island", int(m.group(1)))
    return island, ((island, int(m.group(2))) if m.group(2) is not None else None)


def _toposort(items: list, deps: dict, rank: dict) -> list:
    """Kahn's algorithm over `items` (deps: item -> set of items before it),
    ties broken by `rank`; raises _Skip on a cycle."""
    indeg = {i: len(deps[i]) for i in items}
    succs: dict = {i: [] for i in items}
    for i in items:
        for j in deps[i]:
            succs[j].append(i)
    ready = sorted((i for i in items if not indeg[i]), key=rank.__getitem__)
    out = []
    while ready:
        i = ready.pop(0)
        out.append(i)
        for s in succs[i]:
            indeg[s] -= 1
            if not indeg[s]:
                ready.append(s)
        ready.sort(key=rank.__getitem__)
    if len(out) != len(items):
        raise _Skip("cycle")
    return out


def write_module(program: Program) -> str | None:
    """The `tf_executor` module of `program` (see the module docstring), or
    None when it cannot be written so."""
    try:
        return _Writer(program).text()
    except _Skip:
        return None


class _Writer:
    def __init__(self, p: Program):
        from .exporter import infer_types  # noqa: PLC0415 - the exporter's type inference
        self.p = p
        for n in p.nodes:
            self._check(n)
        try:
            self.types = infer_types(p)
        except Exception as exc:  # noqa: BLE001 - not a program this writer can write
            raise _Skip(str(exc)) from None
        # program order: a topological order, ties in declaration order
        declared = {n.name: i for i, n in enumerate(p.nodes)}
        preds = {n.name: {i.node for i in n.inputs if not isinstance(i, FeedIn)}
                 for n in p.nodes}
        self.order = _toposort(list(declared), preds, declared)
        self.pos = {n: i for i, n in enumerate(self.order)}
        self.island = {}
        self.cluster = {}
        for n in p.nodes:
            self.island[n.name], self.cluster[n.name] = _key(n.name)
        self.feeds = {f: f"%arg{i}" for i, f in enumerate(p.feeds)}
        self.counter = 0

    def _check(self, n) -> None:
        if n.op == VAR:
            _resource(self.p.variables.get(n.var))
        elif n.op == READ:
            pass
        elif n.op == ASSIGN:
            if n.fn not in ASSIGNS:
                raise _Skip(f"Assign-{n.fn}")
        elif n.op != "Const" and n.op not in FUNCTIONS:
            raise _Skip(n.op)
        if any(not isinstance(i, (DataIn, FeedIn, ControlIn)) for i in n.inputs):
            raise _Skip("input")
        if n.op in (READ, ASSIGN):
            h = n.data_inputs[0] if n.data_inputs else None
            if not isinstance(h, DataIn) or self.p.node[h.node].op != VAR:
                raise _Skip("a resource access not on a Var node")

    # -- types and names -------------------------------------------------------

    def type_of(self, ref) -> str:
        if isinstance(ref, FeedIn):
            return _tensor(self.p.feed_type(ref.name))
        n = self.p.node[ref.node]
        if n.op == VAR:
            return _resource(self.p.variables[n.var])
        return _tensor(self.types.get((ref.node, ref.port)))

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"%{stem}{self.counter}"

    # -- the module ---------------------------------------------------------------

    def text(self) -> str:
        p = self.p
        islands = list(dict.fromkeys(self.island[n] for n in self.order))
        rank = {k: min(self.pos[n] for n in self.order if self.island[n] == k) for k in islands}
        deps: dict = {k: set() for k in islands}
        cdeps: dict = {k: set() for k in islands}     # control tokens used
        uses: dict = {}                                 # (node, port) -> consumers
        for n in p.nodes:
            for i in n.inputs:
                if isinstance(i, FeedIn):
                    continue
                src = i.node
                if self.island[src] != self.island[n.name]:
                    deps[self.island[n.name]].add(self.island[src])
                    if isinstance(i, ControlIn):
                        cdeps[self.island[n.name]].add(self.island[src])
                if isinstance(i, DataIn):
                    uses.setdefault((src, i.port), []).append(n.name)
        islands = _toposort(islands, deps, rank)
        fetched = list(p.outputs.values())
        for name in p.outputs:
            if "," in name or '"' in name or "\\" in name:
                raise _Skip("output name")
        for f in p.feeds:
            if "," in f or '"' in f or "\\" in f:
                raise _Skip("feed name")
        # islands a fetch reaches; a writing island none reaches has its token fetched
        live: set = set()
        todo = [self.island[r.node] for r in fetched]
        while todo:
            k = todo.pop()
            if k not in live:
                live.add(k)
                todo.extend(deps[k])
        writes = {self.island[n.name] for n in p.nodes if n.op == ASSIGN}
        fetch_tokens = [k for k in islands if k in writes and k not in live]

        outside: dict = {}          # (node, port) -> its name outside its island
        tokens: dict = {}           # island -> its control token
        body: list[str] = []
        for k in islands:
            members = [n for n in self.order if self.island[n] == k]
            body += self._island(k, members, uses, fetched, outside, tokens,
                                 sorted(cdeps[k], key=islands.index))
        refs = [outside[(r.node, r.port)] for r in fetched]
        ftypes = [self.type_of(r) for r in fetched]
        ctl = [tokens[k] for k in fetch_tokens]
        operands = ", ".join(refs + ctl)
        kinds = ", ".join(ftypes + ["!tf_executor.control"] * len(ctl))
        body.append(f"      tf_executor.fetch {operands} : {kinds}" if operands
                    else "      tf_executor.fetch")
        args = ", ".join(f"{self.feeds[f]}: {_tensor(p.feed_type(f))}" for f in p.feeds)
        if len(ftypes) == 1:
            results, graph, ret = f" -> {ftypes[0]}", "%graph = ", "%graph"
        elif ftypes:
            results = " -> (" + ", ".join(ftypes) + ")"
            graph = f"%graph:{len(ftypes)} = "
            ret = ", ".join(f"%graph#{i}" for i in range(len(ftypes)))
        else:
            results, graph, ret = "", "", ""
        entry = (f'{{tf.entry_function = {{control_outputs = "", inputs = "{",".join(p.feeds)}", '
                 f'outputs = "{",".join(p.outputs)}"}}}}')
        lines = ["module {",
                 f"  func.func @main({args}){results} attributes {entry} {{",
                 f"    {graph}tf_executor.graph {{", *body, "    }",
                 f"    return {ret} : {', '.join(ftypes)}" if ftypes else "    return",
                 "  }", "}", ""]
        return "\n".join(lines)

    def _island(self, k, members, uses, fetched, outside, tokens, controls) -> list[str]:
        """The lines of island `k` (its members in program order, each
        cluster contracted to one op)."""
        inside = set(members)
        # items: a node, or a cluster (its members)
        items: list = list(dict.fromkeys(self.cluster[n] or n for n in members))
        item_of = {n: self.cluster[n] or n for n in members}
        rank = {it: min(self.pos[n] for n in members if item_of[n] == it) for it in items}
        deps: dict = {it: set() for it in items}
        for n in members:
            for i in self.p.node[n].inputs:
                if not isinstance(i, FeedIn) and i.node in inside and item_of[i.node] != item_of[n]:
                    deps[item_of[n]].add(item_of[i.node])
        items = _toposort(items, deps, rank)
        fetched_refs = {(r.node, r.port) for r in fetched}

        def used_outside_island(ref) -> bool:
            return ref in fetched_refs or any(c not in inside for c in uses.get(ref, ()))

        local: dict = {}            # (node, port) -> its name inside the island
        lines: list[str] = []
        for it in items:
            if isinstance(it, str):
                lines += self._op(it, local, outside, "        ")
                continue
            cmembers = [n for n in members if item_of[n] == it]
            inner: dict = {}
            body: list[str] = []
            for n in cmembers:
                body += self._op(n, inner, {**outside, **local}, "          ")
            crefs = [ref for n in cmembers for ref in self._outputs(n)
                     if used_outside_island(ref)
                     or any(c in inside and item_of[c] != it for c in uses.get(ref, ()))]
            names = [self.fresh("c") for _ in crefs]
            types = [self.type_of(DataIn(*r)) for r in crefs]
            if crefs:
                body.append("          tf_device.return " + ", ".join(inner[r] for r in crefs)
                            + " : " + ", ".join(types))
                head = ", ".join(names) + " = "
                sig = "(" + ", ".join(types) + ")" if len(types) != 1 else types[0]
            else:
                body.append("          tf_device.return")
                head, sig = "", "()"
            lines.append(f'        {head}"tf_device.cluster"() ({{')
            lines += body
            lines.append(f"        }}) : () -> {sig}")
            local.update(zip(crefs, names))
        yields = [ref for n in members for ref in self._outputs(n) if used_outside_island(ref)]
        ynames = [self.fresh("r") for _ in yields]
        ytypes = [self.type_of(DataIn(*r)) for r in yields]
        token = self.fresh("ctl")
        tokens[k] = token
        if yields:
            lines.append("        tf_executor.yield " + ", ".join(local[r] for r in yields)
                         + " : " + ", ".join(ytypes))
        else:
            lines.append("        tf_executor.yield")
        operands = "(" + ", ".join(tokens[c] for c in controls) + ")" if controls else ""
        head = ", ".join(ynames + [token])
        outside.update(zip(yields, ynames))
        return [f"      {head} = tf_executor.island{operands} {{", *lines, "      }"]

    def _outputs(self, name: str) -> list[tuple[str, int]]:
        n = self.p.node[name]
        return [] if n.op == ASSIGN else [(name, 0)]

    def _op(self, name: str, local: dict, outer: dict, indent: str) -> list[str]:
        """One op's line; its result's name recorded in `local`."""
        n = self.p.node[name]

        def ref(i) -> str:
            if isinstance(i, FeedIn):
                return self.feeds[i.name]
            r = (i.node, i.port)
            return local[r] if r in local else outer[r]

        data = [ref(i) for i in n.data_inputs]
        argtypes = ", ".join(self.type_of(i) for i in n.data_inputs)
        if n.op == VAR:
            t = _resource(self.p.variables[n.var])
            res = self.fresh("h")
            line = (f'{res} = "tf.VarHandleOp"() <{{container = "", shared_name = '
                    f'"{_escape(n.var)}"}}> : () -> {t}')
        elif n.op == ASSIGN:
            res = None
            line = f'"{ASSIGNS[n.fn]}"({", ".join(data)}) : ({argtypes}) -> ()'
        elif n.op == "Const":
            res = self.fresh("k")
            t = self.types.get((name, 0))
            line = f'{res} = "tf.Const"() <{{value = {_dense(n.attrs["value"], t)}}}> : () -> {_tensor(t)}'
        else:
            res = self.fresh("v")
            op = "tf.ReadVariableOp" if n.op == READ else FUNCTIONS[n.op]
            line = (f'{res} = "{op}"({", ".join(data)}) : ({argtypes}) -> '
                    f'{self.type_of(DataIn(name, 0))}')
        if res is not None:
            local[(name, 0)] = res
        return [indent + line]


def _escape(s: str) -> str:
    if any(c in s for c in '"\\\n') or not s.isprintable():
        raise _Skip("name")
    return s
