"""Review attack (target 5): tf.data iterator draws (oracle/opdefs/data.py).
The element a draw gets is part of σ (feeds ITERATOR/next_K); the draw
itself advances the iterator, and the next step gets the next element.
That position was not in the outcome, so a rewrite that removed a draw
whose element no fetch needs (what a dead-code pass that does not know
IteratorGetNext is stateful does) was judged `sound`.  Fixed: the
iterator's position is a variable, ITERATOR/position (int64 scalar), that
each draw adds 1 to, so under outputs+state a rewrite that drops, repeats
or adds a draw is refuted by a counterexample on it; under `outputs` a
dropped draw whose element nothing needs stays sound (the state is not
observed)."""

from __future__ import annotations

import pytest

from tfsem.checking import check_rewrite
from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.oracle.jsonio import program_to_json

from test_graphdef_dataset_ops import get_next, handle, iterator, node

POS = "iterator/position"


def _const(name, *control):
    return node(name, "Const", [f"^{c}" for c in control], dtype={"type": "DT_INT64"},
                value={"tensor": {"dtype": "DT_INT64", "tensor_shape": {}, "int64_val": ["1"]}})


def _with_draw():
    return import_graph({"node": [iterator(), get_next(), _const("out", "IteratorGetNext")]},
                        ["out"]).program


def _without_draw():
    """The rewrite a dead-code pass makes: the draw gone, the function's
    iterator argument left (nothing reads it)."""
    return import_graph({"node": [iterator(), _const("out")]}, ["out"]).program


def _check(p, q, observe="outputs+state", mode="atomic"):
    return check_rewrite(p, q if isinstance(q, dict) else program_to_json(q), mode, observe, 10.0)


def _counterexample_on_the_position(v):
    assert v.verdict == "unsound", v.reason
    assert f"variable {POS!r}" in v.reason, v.reason


def test_the_draw_is_feeds_and_an_advance_of_the_position():
    p = _with_draw()
    assert {"iterator/next_0", "iterator/next_1"} <= set(p.feeds)
    assert (p.variables[POS].dtype, p.variables[POS].shape) == ("int64", ())
    (adv,) = [n for n in p.nodes if n.op == "Assign"]
    assert adv.attrs["fn"] == "Add"
    # the iterator argument nothing reads still has its position: same interface
    assert set(_without_draw().variables) == {POS}


@pytest.mark.parametrize("mode", ["atomic", "decomposed"])
def test_a_rewrite_that_drops_a_draw_is_unsound_and_the_identity_sound(mode):
    p, q = _with_draw(), _without_draw()
    _counterexample_on_the_position(_check(p, q, mode=mode))
    assert _check(p, p, mode=mode).verdict == "sound"
    assert _check(q, q, mode=mode).verdict == "sound"
    # only the outputs observed: the element nobody needs, and no state
    assert _check(p, q, "outputs", mode).verdict == "sound"


def test_a_draw_no_fetch_reaches_any_more_is_unsound():
    """The draw left in the graph, but the fetch no longer waits for it:
    TensorFlow's run does not execute it, so the iterator stays."""
    p = _with_draw()
    q = import_graph({"node": [iterator(), get_next(), _const("out")]}, ["out"]).program
    assert set(q.variables) == {POS} and not q.feeds
    _counterexample_on_the_position(_check(p, q))


def _advance(prog: dict, k: int) -> dict:
    prog = dict(prog, nodes=list(prog["nodes"]))
    prog["nodes"] += [{"name": f"pos{k}", "op": "Var", "var": POS},
                      {"name": f"one{k}", "op": "Const", "value": 1},
                      {"name": f"adv{k}", "op": "Assign", "fn": "Add",
                       "inputs": [f"pos{k}", f"one{k}"]}]
    return prog


def test_a_rewrite_that_repeats_or_adds_a_draw_is_unsound():
    """As programs (an imported graph with two draws from one iterator is
    refused: which draw gets which element depends on the schedule)."""
    p, q = _with_draw(), _without_draw()
    _counterexample_on_the_position(_check(p, _advance(program_to_json(p), 2)))
    _counterexample_on_the_position(_check(q, _advance(program_to_json(q), 2)))
    # an advance is an advance: the draw's own nodes moved into the rewrite's
    assert _check(p, _advance(program_to_json(q), 2)).verdict == "sound"


def test_the_position_name_is_no_other_variables():
    g = {"node": [iterator(), get_next(), _const("out", "IteratorGetNext"),
                  handle(POS, "DT_INT64", ()),
                  node("r", "ReadVariableOp", [POS], dtype={"type": "DT_INT64"})]}
    for fetches in (["out", "r"], ["r", "out"], ["r"]):
        with pytest.raises(GraphImportError) as info:
            import_graph(g, fetches)
        assert info.value.violations[0].rule == "name-clash", fetches
