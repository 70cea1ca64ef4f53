"""Review of the numpy replay's memo key of a node's attributes
(backends/execute.py `_exact_key`: the `repr` of plain attributes, a Const's
tensor by `Tensor.exact`, the rest by `functions.attrs_key`) and of numpy's
`to_host`, which no longer copies the packed buffer `concatenate` made.

The memo shares an application between two nodes when their functions,
their argument objects and their attribute keys are equal: a key that
conflated two different attribute sets would hand one node the other's
result (a wrong replay: a false confirmation of `unsound`, or none of a
real one).  So the key must tell apart every pair `functions.attrs_key`
tells apart; these tests attack it with values whose repr, JSON or numpy
text collide across kinds, and run the memo end to end with a function
whose result shows its attributes bit for bit.  `to_host` must hand back
arrays that nothing else holds: not the device arrays, not each other, not
what a later transfer returns."""

from __future__ import annotations

import enum
import hashlib
import importlib.util
import itertools
import math
import struct

import numpy as np
import pytest

from tfsem.backends.arraymodule import get_backend, numpy_as_cupy
from tfsem.backends.confirm import confirm_details
from tfsem.backends.execute import (Memo, _exact_key, compiled, device_machine, download, replay,
                                    run_schedule, upload)
from tfsem.oracle import functions as fns
from tfsem.oracle import program as P
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.program import _FrozenDict
from tfsem.oracle.values import Error, Tensor


def _f32(word: int) -> np.float32:
    return np.frombuffer(struct.pack("<I", word), np.float32)[0]


def _f64(word: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", word))[0]


class _List(list):
    pass


class _Str(str):
    pass


class _Int(int):
    pass


class _Color(enum.IntEnum):
    ONE = 1


_LONG = np.zeros(3000, np.float32)
_LONG_MID = _LONG.copy()
_LONG_MID[1500] = 1.0            # (numpy's repr of both: the same '...' text)
_LONG_NEG = _LONG.copy()
_LONG_NEG[1500] = -0.0

#: values whose repr, str, JSON or numpy text collide across kinds or bits
HOSTILE = [
    1, True, 1.0, "1", "True", np.int32(1), np.int64(1), np.bool_(True), np.float32(1.0),
    0, False, 0.0, -0.0, "0", None, "None", "null",
    "a", "'a'", '"a"', "a'b\"c", "[1]", "(1,)", "F[('a', 1)]", "{\"a\": 1}", "\\", "\x00", "\ud800",
    [1], (1,), [[1]], [(1,)], ((1,),), [1, True], [True, 1], [1, 1.0], [], (), [[]], [()],
    _List([1]), _Str("a"), _Int(1), _Color.ONE, 2 ** 64, -2 ** 63, 10 ** 40,
    float("nan"), -float("nan"), _f64(0x7FF8000000000001), 5e-324, -5e-324, float("inf"),
    np.float32(np.nan), _f32(0x7FC00001), _f32(0x00000001), np.float16(-0.0),
    np.array([1], np.int32), np.array([1], np.int64), np.array(1, np.int32), _LONG, _LONG_MID,
    {"b": 1, "c": 2}, {"c": 2, "b": 1}, {"b": True}, {"b": 1.0}, {"b": [1]}, {"b": (1,)},
    Error("1"), Error("a"),
    Tensor(np.float32(0.0)), Tensor(np.float32(-0.0)), Tensor(np.int32(0)), Tensor(np.uint32(0)),
    Tensor(np.array([0.0], np.float32)), Tensor(np.array([[0.0]], np.float32)),
    Tensor(np.zeros((0,), np.float32)), Tensor(np.zeros((0, 2), np.float32)),
    Tensor(np.zeros((2, 0), np.float32)), Tensor(np.zeros((0,), np.int32)),
    Tensor(np.array([True])), Tensor(np.array([1], np.uint8)), Tensor(np.array([1], np.int8)),
    Tensor(_LONG), Tensor(_LONG_MID), Tensor(_LONG_NEG),
    Tensor(np.array([_f32(0x7FC00000)])), Tensor(np.array([_f32(0x7FC00001)])),
    Tensor(np.array([_f32(0xFFC00000)])), Tensor(np.array([_f32(0x7F800001)])),
    Tensor(np.array([_f32(0x00000001)])), Tensor(np.array([np.float16(np.nan)])),
    Tensor(np.array([0x7E01], np.uint16).view(np.float16)),
    Tensor(np.array([1.0], np.float64)), Tensor(np.array([1.0], "bfloat16")),
    Tensor(np.array([0x7FC1], np.uint16).view("bfloat16")),
    Tensor(np.array([0x7FC0], np.uint16).view("bfloat16")),
    [Tensor(np.float32(0.0))], [Tensor(np.float32(-0.0))],
]


def _attribute_sets():
    """Single attributes of every hostile value, pairs of them under two
    names (the plain, tensor and other forms mixed), and the same pairs
    written in the other order."""
    sets = [{"a": v} for v in HOSTILE] + [{"value": v} for v in HOSTILE]
    picks = HOSTILE[::3]
    for v, w in itertools.product(picks, picks[::4]):
        sets.append({"value": v, "k": w})
        sets.append({"k": w, "value": v})       # (equal: another order)
    sets += [{"a'": 1}, {"a": "'1"}, {"a": 1, "b": 2}, {"a": (1, ("b", 2))}, {"": 1},
             {"a": 1, "": 1}, {1: 1}, {"1": 1}]
    return sets


def _conflated(pairs) -> list:
    """The keys paired with two attrs_keys: two different attribute sets
    that would share the memo's entries (a wrong replay)."""
    by_key: dict = {}
    for k, e in pairs:
        by_key.setdefault(k, set()).add(e)
    return [(k, es) for k, es in by_key.items() if len(es) > 1]


def _split(pairs) -> list:
    """The attrs_keys paired with two keys: equal attribute sets that would
    not share the memo's entries (a lost hit, never a wrong result)."""
    by_exact: dict = {}
    for k, e in pairs:
        by_exact.setdefault(e, set()).add(k)
    return [(e, ks) for e, ks in by_exact.items() if len(ks) > 1]


def _subclassed(v) -> bool:
    """Whether `v` holds a subclass of int, str or list (`_Int`, an enum)."""
    if isinstance(v, dict):
        return any(_subclassed(x) for x in v.values())
    if isinstance(v, (list, tuple)):
        return type(v) not in (list, tuple) or any(_subclassed(x) for x in v)
    return isinstance(v, (int, str)) and type(v) not in (int, str, bool)


def test_the_key_tells_apart_what_attrs_key_tells_apart_over_hostile_values():
    """Every attribute set, as a dict and frozen: no `_exact_key` is paired
    with two `functions.attrs_key`s (no two different attribute sets share
    the memo's entries), and equal sets written in another order share one.

    Found, harmless: attrs_key's tagged form (the one a tensor among the
    attributes forces) writes an int subclass's value as the int's, ["i",
    1]; `_exact_key`'s tensor form keeps the plain repr only for exact
    types and hands the set with the subclass to attrs_key, so the two sets
    get two keys: the memo runs the function once more, with the right
    result either way."""
    sets = _attribute_sets()
    pairs = []
    for a in sets:
        e = fns.attrs_key(a)
        pairs.append((_exact_key(a), e))
        pairs.append((_exact_key(_FrozenDict(a)), e))
    assert _conflated(pairs) == []
    plain = [(_exact_key(a), fns.attrs_key(a)) for a in sets if not _subclassed(a)]
    assert _split(plain) == []
    assert _split(pairs) != []     # (the subclass's split: see above)
    keys = {k for k, _ in pairs}
    # (the attack reached the three forms: plain "F", tensors, the rest)
    assert any(type(k) is tuple for k in keys)
    assert any(type(k) is str and k.startswith("F") for k in keys)
    assert any(type(k) is str and k[:1] in "{#" for k in keys)
    # the kinds that must differ do, the equal sets written otherwise do not
    assert _exact_key({"a": 1}) != _exact_key({"a": True}) != _exact_key({"a": np.int32(1)})
    assert _exact_key({"value": Tensor(_LONG)}) != _exact_key({"value": Tensor(_LONG_NEG)})
    assert _exact_key({"value": Tensor(_LONG)}) == _exact_key({"value": Tensor(_LONG.copy())})
    assert _exact_key({"a": 1, "b": 2}) == _exact_key({"b": 2, "a": 1})
    # (what attrs_key refuses, the key refuses alike: no key made up)
    for v in (b"1", bytearray(b"1"), {1j}):
        with pytest.raises(TypeError):
            fns.attrs_key({"a": v})
        with pytest.raises(TypeError):
            _exact_key({"a": v})
    # (an int past Python's digits limit for text: both refuse it alike)
    for key in (fns.attrs_key, _exact_key):
        with pytest.raises(ValueError):
            key({"a": 10 ** 5000})


def test_a_key_stays_exact_for_nested_and_subclassed_plain_values():
    """A subclass of list, str or int (its repr may be its own, or the
    base's) never takes the plain form, whatever it holds: an enum whose
    repr is another int's, a list whose repr lies."""
    class Lying(list):
        def __repr__(self):
            return "[1]"

    for v in (_List([1]), _Str("a"), _Int(1), _Color.ONE, Lying([2]), [Lying([2])], (_Int(1),)):
        assert not (type(_exact_key({"a": v})) is str and _exact_key({"a": v}).startswith("F")), v
    assert _exact_key({"a": Lying([2])}) != _exact_key({"a": [1]})
    assert _exact_key({"a": [Lying([2])]}) != _exact_key({"a": [[1]]})


# -- the memo end to end: a function that shows its attributes --------------

def _digest(attrs) -> np.ndarray:
    return np.frombuffer(hashlib.sha256(fns.attrs_key(dict(attrs)).encode()).digest(), np.uint8)


@pytest.fixture
def shown_attrs(monkeypatch):
    """UserShow(x): the bytes of a digest of its attributes' exact key
    (`functions.attrs_key`): two applications to the same argument give
    the same result only when their attributes are equal bit for bit."""
    monkeypatch.setitem(fns._REGISTRY, "UserShow", fns.Function(
        "UserShow", 1, 1, lambda xp, args, attrs: (_digest(attrs).copy(),)))


def _shown(attr_sets, prefix="s"):
    x = P.const("x", Tensor(np.array([1], np.uint8)))
    nodes = [x] + [P.apply(f"{prefix}{i}", "UserShow", "x", **a) for i, a in enumerate(attr_sets)]
    return P.program(nodes, {f"o{i}": f"{prefix}{i}" for i in range(len(attr_sets))})


def _buildable(sets):
    """The attribute sets a program's node takes (a node refuses none of
    these today; kept in case validation grows)."""
    out = []
    for a in sets:
        try:
            _shown([a])
        except Exception:   # noqa: BLE001
            continue
        out.append(a)
    return out


def test_the_memo_gives_every_node_its_own_attributes_result(shown_attrs):
    """Every hostile attribute set on a node of one program, each applied
    to the same argument object through one memo (`run_schedule`, as a
    confirmation runs it): each output is its own attributes' digest, so no
    two different sets shared an entry; equal sets written otherwise did
    (the memo's hits)."""
    sets = _buildable([a for a in _attribute_sets() if all(type(k) is str for k in a)])
    assert len(sets) > 200
    p = _shown(sets)
    b = get_backend("numpy")
    for semantics in ("atomic", "decomposed"):
        m = device_machine(p, b, semantics)
        memo = Memo(np)
        schedule = ["x"] + [f"s{i}" for i in range(len(sets))]
        outs, _ = run_schedule(m, {}, {}, schedule, None, memo)
        for i, a in enumerate(sets):
            assert np.array_equal(np.asarray(outs[f"o{i}"]), _digest(a)), (i, a)
        assert memo.hits > 0     # (the same sets written in another order)


def test_one_attributes_object_on_nodes_of_two_functions(shown_attrs, monkeypatch):
    """The same frozen attributes on a node of UserShow and one of another
    function (its digest inverted): one table key for both, and each node
    its own function's result (the memo's key holds the function too)."""
    monkeypatch.setitem(fns._REGISTRY, "UserShowNot", fns.Function(
        "UserShowNot", 1, 1, lambda xp, args, attrs: (255 - _digest(attrs),)))
    frozen = _FrozenDict({"a": [1, (2, "3")], "value": Tensor(_LONG_MID)})
    p = P.program([P.const("x", Tensor(np.array([1], np.uint8))),
                   P.Node("s", "UserShow", (P.DataIn("x", 0),), frozen),
                   P.Node("t", "UserShowNot", (P.DataIn("x", 0),), frozen)],
                  {"s": "s", "t": "t"})
    tables = compiled(p, "atomic")
    assert tables.attrs_key(tables.index["s"]) == tables.attrs_key(tables.index["t"])
    m = device_machine(p, get_backend("numpy"), "atomic")
    outs, _ = run_schedule(m, {}, {}, ["x", "s", "t"], None, Memo(np))
    assert np.array_equal(outs["s"], _digest(frozen))
    assert np.array_equal(outs["t"], 255 - _digest(frozen))


def test_two_programs_sharing_the_memo_keep_their_attributes_apart(shown_attrs):
    """The original's node and the rewritten's, of attributes that collide
    in repr or numpy's text only, replayed through one memo (as
    confirm_details shares it): the rewritten program's outcome is its own,
    so the confirmation of `unsound` happens exactly when the attributes
    differ, and a claimed outcome the schedule does not give fails."""
    pairs = [({"a": 1}, {"a": True}), ({"a": 1}, {"a": np.int32(1)}), ({"a": [1]}, {"a": (1,)}),
             ({"a": "1"}, {"a": 1}), ({"a": _LONG}, {"a": _LONG_MID}),
             ({"value": Tensor(_LONG)}, {"value": Tensor(_LONG_NEG)}),
             ({"value": Tensor(np.array([_f32(0x7FC00001)]))},
              {"value": Tensor(np.array([_f32(0x7FC00002)]))}),
             ({"value": Tensor(np.zeros((0, 2), np.float32))},
              {"value": Tensor(np.zeros((2, 0), np.float32))}),
             ({"a": 0.0}, {"a": -0.0}), ({"a": _List([1])}, {"a": [1]}),
             ({"a": {"b": 1, "c": 2}}, {"a": {"c": 2, "b": 1}}),
             ({"a": 1, "b": [2]}, {"b": [2], "a": 1}),
             ({"value": Tensor(_LONG), "k": 1}, {"k": 1, "value": Tensor(_LONG.copy())})]
    for a, b in pairs:
        p, q = _shown([a]), _shown([b])
        same = fns.attrs_key(a) == fns.attrs_key(b)
        theirs = outcome_set(p, {}, {})
        (outcome, schedule), = outcome_set(q, {}, {}).items()
        details = confirm_details(p, q, {}, {}, schedule, outcome=outcome, backends=["numpy"],
                                  original_outcomes=theirs)
        assert [d.confirmed for d in details] == [not same], (a, b, details[0].reason)
        if not same:
            wrong = next(iter(theirs))
            details = confirm_details(p, q, {}, {}, schedule, outcome=wrong, backends=["numpy"],
                                      original_outcomes=theirs)
            assert [d.confirmed for d in details] == [False], (a, b)


# -- to_host: every outcome its own copy --------------------------------------

def _hostile_arrays():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    return [base, base.T, base[::2, ::3], base[1:, 2:], np.float32(3.5), np.array(2.0, np.float32),
            np.zeros((0,), np.float32), np.zeros((0, 3), np.float32), np.zeros((2, 0), np.int32),
            np.array([True, False, True]), np.array(True), np.bool_(False),
            np.array([1, -2], np.int64), np.int64(7), np.array([-0.0, np.nan], np.float64),
            np.array([1.5, -0.0], "bfloat16"), np.array([np.nan, 6e-8], np.float16),
            np.array([_f32(0x7FC00001), _f32(0x00000001)]), base[:, 0]]


def test_to_host_hands_back_arrays_nothing_else_holds():
    """numpy, where the packed buffer is no longer copied: views,
    non-contiguous, zero-size and 0-d arrays, bool, bfloat16, float16 and
    NaN payloads, several of one dtype, one array alone: the values come
    back bit for bit, shaped and typed as they were, and share no memory
    with the device arrays, with each other, or with a later transfer's
    results; writing the device arrays afterwards changes nothing returned."""
    b = get_backend("numpy")
    dev = [b.to_device(np.array(a)) if isinstance(a, np.ndarray) else a for a in _hostile_arrays()]
    dev[1] = dev[0].T                    # (views of another device array)
    dev[-1] = dev[0][:, 0]
    for group in (dev, dev[:1], dev[1:2], [dev[0], dev[0]], [dev[6], dev[7]]):
        snap = [np.array(d, copy=True) for d in group]
        host = b.to_host(group)
        again = b.to_host(group)
        for d, s, h in zip(group, snap, host):
            assert type(h) is np.ndarray and h.dtype == s.dtype and h.shape == np.shape(s)
            assert h.tobytes() == np.ascontiguousarray(s).tobytes()
            if isinstance(d, np.ndarray):
                assert not np.shares_memory(h, d)
        for (i, h), (j, g) in itertools.product(enumerate(host), enumerate(host)):
            if i < j and h.size and g.size:
                assert not np.shares_memory(h, g), (i, j)
        for h, g in zip(host, again):
            assert not np.shares_memory(h, g)
        for d in group:
            if isinstance(d, np.ndarray) and d.flags.writeable and d.size:
                d[...] = True if d.dtype == np.bool_ else d.dtype.type(0)
        for s, h in zip(snap, host):
            assert h.tobytes() == np.ascontiguousarray(s).tobytes()


def test_the_cupy_path_hands_back_what_numpy_does():
    """The cupy backend (numpy substituted: its download still copies) and
    numpy give the same bytes, dtypes and shapes for the same arrays."""
    arrays = [a for a in _hostile_arrays() if a.dtype.kind in "biufc"]   # (cupy: no bfloat16)
    got = []
    for b in (get_backend("numpy"), numpy_as_cupy()):
        got.append([(h.dtype, h.shape, h.tobytes())
                    for h in b.to_host([b.to_device(np.array(a)) for a in arrays])])
    assert got[0] == got[1]


def test_a_later_replay_does_not_change_an_outcome_returned(shown_attrs):
    """Two replays of one program at two σ on numpy, the first outcome kept:
    the second (whose packed buffer is another fresh one) leaves it as it
    was; and an outcome of a program whose output is a variable's value,
    σ's own array, is not that array."""
    p = P.program([P.var("v", "X"), P.read("r", "v"), P.apply("n", "Neg", "r")],
                  {"out": "n", "raw": "r"}, variables=["X"])
    first = replay(p, {}, {"X": Tensor(np.array([1.0, -0.0], np.float32))}, ["v", "r", "n"])
    kept = {k: v.array.tobytes() for k, v in first.outputs}
    init = {"X": Tensor(np.array([7.0, 8.0], np.float32))}
    second = replay(p, {}, init, ["v", "r", "n"])
    assert {k: v.array.tobytes() for k, v in first.outputs} == kept
    raw = dict(second.outputs)["raw"]
    assert raw == init["X"] and not np.shares_memory(raw.array, init["X"].array)
    b = get_backend("numpy")
    dev = upload(init, b)
    m = device_machine(p, b, "atomic")
    out = download(*run_schedule(m, {}, dev, ["v", "r", "n"]), b, "outputs+state")
    assert not np.shares_memory(dict(out.outputs)["raw"].array, dev["X"])
    assert not np.shares_memory(dict(out.state)["X"].array, dev["X"])


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                    reason="TensorFlow's kernels (MatMul): needs the extra tfsem[tensorflow]")
def test_a_tensorflow_graphs_const_changed_in_its_bits_is_confirmed_by_the_replay(monkeypatch):
    """v1_mlp_sgd's learning rate (a Const, keyed by its tensor's exact
    bits) replaced by a NaN of another payload, or by another number: the
    numpy replay confirms the rewritten program's outcome as new, which it
    could not if the rewritten Const's key were the original's (the memo,
    shared by the two programs' replays, would hand the rewritten run the
    original's value); an equal value, another object, confirms nothing.
    (The budgets are generous and no verdict is asked for, so that a
    loaded machine cannot turn the answer into `unknown`.)"""
    import argparse
    from pathlib import Path

    from tfsem.checking import check as C
    from tfsem.graphdef.cliopts import load_from_args
    from tfsem.oracle import kernels
    from tfsem.oracle.program import Node, Program
    monkeypatch.setenv(kernels.ENV, "1")     # (MatMul runs on TensorFlow's kernel)
    graph = Path(__file__).resolve().parent.parent / "examples" / "tensorflow" / "v1_mlp_sgd.pbtxt"
    ns = argparse.Namespace(fetch=["loss"], target=["train"], feed_nodes=[], signature=None,
                            captures=None, shapes=[], import_deadline=None)
    p = load_from_args(str(graph), ns)
    rate = p.node["train/learning_rate"].attrs["value"]

    def with_rate(arr):
        nodes = tuple(Node(n.name, n.op, n.inputs, dict(n.attrs) | {"value": Tensor(arr)})
                      if n.name == "train/learning_rate" else n for n in p.nodes)
        return Program(p.variables, nodes, p.outputs, p.feeds)

    # (σ of small finite values: the loss and the updates are finite, and
    # a changed learning rate shows in the final variables)
    feeds = {"x": Tensor(np.full((2, 4), 0.5, np.float32)), "y": Tensor(np.zeros((2, 2), np.float32))}
    init = {x: Tensor(np.full(t.shape, 0.25, np.float32)) for x, t in p.variables.items()}
    theirs = outcome_set(p, feeds, init, max_seconds=600)
    nan = np.full_like(rate.array, _f32(0x7FC00001))
    for arr, changed in ((nan, True), (rate.array + np.float32(1), True),
                         (rate.array.copy(), False)):
        q = with_rate(arr)
        mine = outcome_set(q, feeds, init, max_seconds=600)
        assert any(o not in theirs for o in mine) == changed
        for outcome, schedule in mine.items():
            (d,) = confirm_details(p, q, feeds, init, schedule, outcome=outcome,
                                   backends=["numpy"], original_outcomes=theirs,
                                   max_seconds=600)
            assert d.confirmed == (outcome not in theirs), d.reason
