"""Adversarial review (issue 23, the comparisons' encodings): TensorFlow's
Equal and NotEqual have an attribute `incompatible_shape_error`; false (what
`x == y` builds in a tf.function) makes them give a scalar false (Equal) or
true (NotEqual) on shapes that do not broadcast, where true gives an error
(measured on TensorFlow 2.21's CPU kernels: Equal([1, 2], [1, 2, 3]) is
False).  tfsem ignored the attribute, so the two forms were one program: a
rewrite of the lenient form into the strict one was `sound` although
TensorFlow's rewritten graph fails where the original gives a value, and
the lenient form against its constant was `unsound`."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.checking import check_rewrite
from tfsem.checking.symbolic import MAX_ELEMENTS
from tfsem.graphdef.importer import import_graph
from tfsem.graphdef.proto import parse_text
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.values import Error, Tensor


def graph(op: str, lenient: bool | None, n: int = 2, m: int = 3, const: str | None = None) -> str:
    ph = ('node {{ name: "{n}" op: "Placeholder" attr {{ key: "dtype" value {{ type: DT_FLOAT }} }} '
          'attr {{ key: "shape" value {{ shape {{ dim {{ size: {k} }} }} }} }} }}')
    text = ph.format(n="a", k=n) + ph.format(n="b", k=m)
    if const is not None:
        return text + (f'node {{ name: "e" op: "Const" attr {{ key: "dtype" value {{ type: DT_BOOL }} }} '
                       f'attr {{ key: "value" value {{ tensor {{ dtype: DT_BOOL tensor_shape {{ }} '
                       f'bool_val: {const} }} }} }} }}')
    attr = "" if lenient is None else \
        f'attr {{ key: "incompatible_shape_error" value {{ b: {str(lenient is False).lower()} }} }}'
    return text + (f'node {{ name: "e" op: "{op}" input: "a" input: "b" '
                   f'attr {{ key: "T" value {{ type: DT_FLOAT }} }} {attr} }}')


def prog(*args, **kw):
    return import_graph(parse_text("GraphDef", graph(*args, **kw)), ["e"]).program


def outcome(p, n=2, m=3):
    feeds = {"a": Tensor(np.ones(n, np.float32)), "b": Tensor(np.ones(m, np.float32))}
    (o,) = outcome_set(p, feeds, {}, "atomic", "outputs").items()
    return o[0].outputs[0][1]


@pytest.mark.parametrize("op,value", [("Equal", False), ("NotEqual", True)])
def test_the_lenient_form_is_a_scalar_on_shapes_that_do_not_broadcast(op, value):
    v = outcome(prog(op, True))
    assert isinstance(v, Tensor) and v.dtype == "bool" and v.shape == () and bool(v.array) is value
    assert isinstance(outcome(prog(op, False)), Error)
    assert isinstance(outcome(prog(op, None)), Error)      # (the default is true)
    # lenient into strict: TensorFlow's rewritten graph fails where the original does not
    assert check_rewrite(prog(op, True), prog(op, False), timeout=10).verdict == "unsound"
    # the lenient form is its constant
    c = prog(op, None, const=str(value).lower())
    assert check_rewrite(prog(op, True), c, timeout=10).verdict == "sound"
    assert check_rewrite(prog(op, False), c, timeout=10).verdict == "unsound"


@pytest.mark.parametrize("n", [3, MAX_ELEMENTS + 1])
def test_on_shapes_that_broadcast_the_forms_are_one_function(n):
    # element terms and the generic element both prove it (the lenient
    # form is Equal's encoding there)
    p, q = prog("Equal", True, n, n), prog("Equal", False, n, n)
    assert outcome(p, n, n) == outcome(q, n, n)
    v = check_rewrite(p, q, timeout=20)
    assert v.verdict == "sound", v.reason
    assert check_rewrite(q, p, timeout=20).verdict == "sound"


def test_the_lenient_form_is_exported_with_its_attribute():
    from tfsem.graphdef.exporter import export_text
    p = prog("NotEqual", True)
    text = export_text(p)
    assert "incompatible_shape_error" in text
    back = import_graph(parse_text("GraphDef", text), ["e"]).program
    assert outcome(back) == outcome(p)
    assert bool(outcome(back).array) is True
