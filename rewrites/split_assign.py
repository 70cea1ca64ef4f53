"""`split-assign`: Assign-f becomes Read, f, Write.

What it models.  Seed 000, section 3.2.2 (Figure 4): "replace each node
Assign-Add with a little graph that comprises separate Read, Add, and Write
nodes".  Seed 002 models TensorFlow's resource updates exactly this way ("a
read, compute, write sequence which does not execute atomically").  Here, each
Assign-f node `a` (f other than Snd: a Write already is a single store)
becomes

    a/read = Read handle  ^(a's control inputs)  ^(producer of a's value)
    a/f    = f(a/read, value)
    a      = Write handle := a/f

The Write keeps the name `a`, so control edges out of `a` still wait for the
store.  The Read also waits for the producer of the value: the original
Assign reads x only once its value has arrived, and a Read that could run
ahead of it would add behaviours even under `decomposed` (it could read x
before an Assign that the value's computation is ordered after).  An Assign
whose f ignores errors in its second argument is left alone (the split would
store f(w, error), where the Assign stores nothing).

Claims.
* `atomic` — unsound, both observe settings: the lost update of Figure 4.
  Two unordered AssignAdds of 1 to x always add 2; split, both Reads may run
  before either Write and x gains only 1.  A Read of x ordered after both and
  fetched shows it with `outputs` only.
* `decomposed` — sound, both observe settings.  Under seed 002 the Assign is
  itself a read step and a later write step.  Map a run of the rewrite to the
  original: `a@read` where `a/read` fires (its inputs are all there: the
  handle, the control inputs, and the value, whose producer has finished),
  reading the same w; `a@write` where the Write's write step fires, storing
  f(w, v) — or nothing when v or f(w, v) is an error, as the Write does when
  given the error f propagates.  `a/f` and the Write's read step touch no
  variable that anyone observes.  Same outcome.
"""

from __future__ import annotations

from tfsem.oracle import functions as fns
from tfsem.oracle.program import ASSIGN, READ, ControlIn, DataIn, Node, Program

from .api import SOUND, UNSOUND, Pass, claims
from .edit import canonical_inputs, fresh_name, rebuild


def splittable(n: Node) -> bool:
    if n.op != ASSIGN or n.fn == "Snd":
        return False
    f = fns.lookup(n.fn)
    return f is not None and f.assignable and not f.attrs and 1 in f.strict()


def split_assign(p: Program) -> Program:
    taken = set(p.node)
    out: list[Node] = []
    for n in p.nodes:
        if not splittable(n):
            out.append(n)
            continue
        handle, value = n.data_inputs
        waits = list(n.control_inputs)
        if isinstance(value, DataIn):
            waits.append(ControlIn(value.node))
        read = Node(fresh_name(f"{n.name}/read", taken), READ, canonical_inputs((handle, *waits)))
        compute = Node(fresh_name(f"{n.name}/{n.fn}", taken), n.fn, (DataIn(read.name), value))
        write = Node(n.name, ASSIGN, (handle, DataIn(compute.name)), {"fn": "Snd"})
        out += [read, compute, write]
    return rebuild(p, out)


PASS = Pass(
    name="split-assign",
    description="Assign-f becomes Read, f, Write (the lost update of the paper's Figure 4)",
    claims=claims(atomic=(UNSOUND, UNSOUND), decomposed=(SOUND, SOUND)),
    doc=__doc__,
    function=split_assign,
)
