"""A sound pass that changes almost nothing: it adds an unused Const to
about one generated program in a hundred (chosen by a checksum of the
program, which no steering can learn).  `tfsem verify` must call a run over
it weak (exit status 4), not green (tests/test_campaigns_evidence.py)."""

from __future__ import annotations

import zlib

from tfsem.oracle.jsonio import dumps, program_to_json
from tfsem.oracle.program import Node, Program
from tfsem.oracle.values import Tensor
from tfsem.rewrites import SOUND, Pass, claims
from tfsem.rewrites.edit import fresh_name, rebuild


def almost_nothing(p: Program) -> Program:
    if zlib.crc32(dumps(program_to_json(p)).encode()) % 100:
        return p
    name = fresh_name("unused", set(p.node))
    return rebuild(p, p.nodes + (Node(name, "Const", (), {"value": Tensor(0)}),))


PASS = Pass(name="almost-nothing", description="adds an unused Const to one program in a hundred",
            claims=claims(atomic=(SOUND, SOUND), decomposed=(SOUND, SOUND)), doc=__doc__,
            function=almost_nothing)
