"""An example rewrite pass, written as docs/writing-a-pass.md describes:
remove `Identity` nodes, sending their consumers to the Identity's input.

Claims: sound in every cell. Identity(v) = v, errors included, so a
consumer that read the Identity's output now reads the same value one step
earlier. An Identity fires only after all its inputs, control inputs
included, so every node that waited for it, through a data edge or a control
edge, now waits for the Identity's own predecessors: no ordering is lost.
(An earlier version kept only the data edge for a consumer of the value:
`Assign(x, Identity(v, ^Write(x)))` then no longer waited for the Write, and
tfsem verify found the lost ordering in decomposed mode.) Identity touches no
variable, so the mode does not matter.
"""

from tfsem.oracle.program import ControlIn, DataIn, Program
from tfsem.rewrites import SOUND, Pass, claims
from tfsem.rewrites.edit import canonical_inputs, rebuild


def drop_identity(p: Program) -> Program:
    identities = {n.name: n for n in p.nodes if n.op == "Identity"}
    if not identities:
        return p

    def source(port: DataIn) -> DataIn:
        # follow chains of Identity nodes back to a real producer
        while port.node in identities:
            port = identities[port.node].data_inputs[0]
        return port

    def waits(name: str) -> list:
        # waiting for an Identity becomes waiting for everything it waited for
        found = []
        for i in identities[name].inputs:
            if isinstance(i, (DataIn, ControlIn)) and i.node in identities:
                found.extend(waits(i.node))
            elif isinstance(i, DataIn):
                found.append(ControlIn(i.node))
            elif isinstance(i, ControlIn):
                found.append(i)
        return found

    if any(not isinstance(n.data_inputs[0], DataIn) for n in identities.values()):
        return p  # an Identity of a feed: leave the program as it is (kept simple)
    nodes = []
    for n in p.nodes:
        if n.name in identities:
            continue
        inputs = []
        for i in n.inputs:
            if isinstance(i, DataIn):
                inputs.append(source(i))
                if i.node in identities:   # and everything the Identity waited for
                    inputs.extend(w for w in waits(i.node) if w.node != source(i).node)
            elif isinstance(i, ControlIn) and i.node in identities:
                inputs.extend(waits(i.node))
            else:
                inputs.append(i)
        nodes.append(n.replace(inputs=canonical_inputs(inputs)))
    outputs = {name: source(port) for name, port in p.outputs.items()}
    return rebuild(p, nodes, outputs)


PASS = Pass(
    name="drop-identity",
    description="remove Identity nodes (an example pass from docs/writing-a-pass.md)",
    claims=claims(atomic=(SOUND, SOUND), decomposed=(SOUND, SOUND)),
    doc=__doc__,
    function=drop_identity,
)
