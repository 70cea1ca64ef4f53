"""oracle/static_shapes.py `_value_shapes`, its arguments gathered in one loop:
the same claims as the pass written argument by argument (kept here as the
reference), on the stored Grappler programs of real graphs (originals and
every optimizer's rewrite) and the stored cases, with every variable's
shape, none, and one variable's."""

from __future__ import annotations

from pathlib import Path

from tfsem.oracle import static_shapes as S
from tfsem.oracle.jsonio import load_case
from tfsem.oracle.program import ASSIGN, READ, VAR, DataIn, FeedIn
from tfsem.oracle.values import Tensor
from test_structural_original_terms import _grappler_programs

TESTS = Path(__file__).parent


def _reference(p, read_shapes, unsure=None, kernels=True):
    out, consts = {}, {}

    def arg(i):
        if isinstance(i, FeedIn):
            return S._static(p.feed_type(i.name).shape), None
        return out.get((i.node, i.port)), consts.get((i.node, i.port))

    inputs = S.data_inputs(p)
    for name in p.topological_order:
        n = p.node[name]
        if n.op in (VAR, ASSIGN):
            continue
        ins = inputs[name]
        if n.op == READ:
            if read_shapes:
                var = p.node[ins[0].node].attrs.get("var") if isinstance(ins[0], DataIn) else None
                if read_shapes is not True and var not in read_shapes:
                    continue
                sh = S._static(p.variables[var].shape) if var in p.variables else None
                if sh is not None:
                    out[(name, 0)] = sh
            continue
        if n.op == "Const":
            if unsure and name in unsure and (read_shapes is not True and (
                    not read_shapes or unsure[name] not in read_shapes)):
                continue
            v = n.attrs.get("value")
            if isinstance(v, Tensor):
                out[(name, 0)] = tuple(v.array.shape)
                consts[(name, 0)] = v
            continue
        args = [arg(i) for i in ins]
        folded = S._fold(n.op, n.attrs, [a[1] for a in args], kernels) \
            if args and all(a[1] is not None for a in args) else None
        if folded is not None:
            for k, v in enumerate(folded):
                out[(name, k)] = tuple(v.array.shape)
                consts[(name, k)] = v
            continue
        res = S.result_shapes(n.op, n.attrs, [a[0] for a in args], [a[1] for a in args])
        for k, s in enumerate(res or ()):
            if s is not None:
                out[(name, k)] = s
    return out


def _programs():
    for _name, p, rewritten in _grappler_programs():
        yield p
        yield from rewritten.values()
    for path in sorted((TESTS / "cases").rglob("*.json")):
        try:
            c = load_case(path)
            q = c.rewritten()
        except Exception:   # (not a case, or an invalid rewrite on purpose)
            continue
        if not (c.original.has_control_flow or q.has_control_flow):
            yield c.original
            yield q


def test_the_pass_claims_what_the_reference_claims():
    compared = claimed = 0
    for p in _programs():
        some = frozenset(sorted(p.variables)[:1])
        for read_shapes in (True, False, some):
            got = S._value_shapes(p, read_shapes, kernels=False)
            assert got == _reference(p, read_shapes, kernels=False)
            compared += 1
            claimed += len(got)
    assert compared > 100 and claimed > 1000
