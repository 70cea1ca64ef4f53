"""`fuse-assign`: Read → f → Write of one variable becomes Assign-f.

What it models.  The inverse of `split-assign`, as an optimizer fusing a
read-modify-write into a resource update op (AssignAdd, ResourceApply*).  The
pattern, for a Write `w`:

    r = Read x          f = F(r, v)          w = Write x := f

where r's only use is f's first argument, f's only use is w's value (neither
is fetched nor has control successors), F is a binary function with one
result and no attributes that propagates errors in its second argument, and
r and w access the same variable x.  It becomes

    w = Assign-F x, v   ^(control inputs of r, f and w)

keeping w's name and handle.  If r's Var node is another node than w's and is
used by nothing else, it goes too and w inherits its control inputs;
otherwise w waits for it.  Nothing that was ordered before r, f or w is
ordered less.

Claims: sound in every cell.  Every input that r, f and w needed in the
original is an input (or an ancestor) of the fused Assign.
* atomic: where the fused Assign fires, the original fires r, f, w back to
  back: r reads the same w0, f computes F(w0, v), w stores it — or stores
  nothing when v or F(w0, v) is an error (F propagates an error in v, and a
  Write of an error changes nothing), exactly like Assign-F.
* decomposed: the original fires r and f at the fused Assign's read step and
  w (both of its steps) at the fused Assign's write step, with the same
  effect.
Fusing removes behaviours (the interleavings between r and w) and adds none.
"""

from __future__ import annotations

from tfsem.oracle import functions as fns
from tfsem.oracle.program import ASSIGN, READ, ControlIn, DataIn, Node, Program

from .api import SOUND, Pass, claims
from .edit import canonical_inputs, control_successors, fetched, rebuild


def _fusible_function(name: str) -> bool:
    f = fns.lookup(name)
    return f is not None and f.assignable and not f.attrs and 1 in f.strict()


def matches(p: Program) -> list[tuple[str, str, str]]:
    """Every (read, function, write) triple that fuses, in declaration order."""
    ctrl = control_successors(p)
    out_nodes = fetched(p)

    def only_use(name: str, consumer: tuple[str, int]) -> bool:
        return (list(p.consumers.get((name, 0), ())) == [consumer]
                and not ctrl[name] and name not in out_nodes)

    found = []
    for w in p.nodes:
        if w.op != ASSIGN or w.fn != "Snd":
            continue
        value = w.data_inputs[1]
        if not isinstance(value, DataIn) or value.port != 0:
            continue
        f = p.node[value.node]
        if f.kind != "function" or not _fusible_function(f.op):
            continue
        arg = f.data_inputs[0]
        if not isinstance(arg, DataIn):
            continue
        r = p.node[arg.node]
        if r.op != READ or p.accessed_variable(r.name) != p.accessed_variable(w.name):
            continue
        if only_use(r.name, (f.name, f.inputs.index(arg))) and only_use(f.name, (w.name, 1)):
            found.append((r.name, f.name, w.name))
    return found


def fuse_assign(p: Program) -> Program:
    found = matches(p)
    if not found:
        return p
    ctrl = control_successors(p)
    removed = {name for r, f, _ in found for name in (r, f)}
    # A Read's Var node goes when the fused Reads were its only users.
    dropped_vars: set[str] = set()
    for r, _, _ in found:
        v = p.node[r].data_inputs[0].node
        users = [c for c, _ in p.consumers.get((v, 0), ())] + ctrl[v]
        if all(u in removed for u in users):
            dropped_vars.add(v)
    fused: dict[str, Node] = {}
    for r, f, w in found:
        rn, fn, wn = p.node[r], p.node[f], p.node[w]
        handle = wn.data_inputs[0]
        waits = list(wn.control_inputs) + list(fn.control_inputs) + list(rn.control_inputs)
        rv = rn.data_inputs[0].node
        if rv != handle.node:
            waits += list(p.node[rv].control_inputs) if rv in dropped_vars else [ControlIn(rv)]
        # r may have waited for its own Var node (now dropped): wait for what it waited for
        waits = [x for i in waits for x in (p.node[i.node].control_inputs
                 if isinstance(i, ControlIn) and i.node in dropped_vars else (i,))]
        fused[w] = Node(w, ASSIGN, canonical_inputs((handle, fn.data_inputs[1], *waits)), {"fn": fn.op})
    nodes = [fused.get(n.name, n) for n in p.nodes
             if n.name not in removed and n.name not in dropped_vars]
    return rebuild(p, nodes)


PASS = Pass(
    name="fuse-assign",
    description="Read -> f -> Write of one variable becomes Assign-f when nothing else uses them",
    claims=claims(atomic=(SOUND, SOUND), decomposed=(SOUND, SOUND)),
    doc=__doc__,
    function=fuse_assign,
)
