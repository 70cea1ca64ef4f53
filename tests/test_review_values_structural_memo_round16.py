"""Review of three speed changes of the tenth round (adversarial):

* a Tensor's equality key and exact bits made when first asked for
  (oracle/values.py `Tensor._made`), its `__eq__` fast paths and its pickling;
* what the structural rule keeps of an original besides its plan
  (checking/structural.py `_of_original`, `_original_steps`): its step DAG
  and ancestor sets, its unobserved Reads, its exact term plan and whether
  it is blind to NaN payloads, and `race_free` reading the steps kept;
* the application memo's bound (oracle/applications.py MEMO_BYTES,
  ENTRY_BYTES).

Each test is an attack the change survived: equality, hashing and `exact`
against an oracle written from the bits (not from `_canonical_bytes`), in
every dtype, layout and order of first use, across processes and threads;
the structural rule with its original's memo on and off over generated
(original, rewrite) families checked in sequence under both semantics and
both observations, with the roles swapped, cut by the deadline at every
clock reading, against a stale entry at a reused id and a function replaced
between checks."""

from __future__ import annotations

import copy
import dataclasses
import os
import pickle
import random
import subprocess
import sys
import threading
import weakref

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tfsem.checking import structural
from tfsem.checking.structural import _OutOfTime, race_free, structural_refinement
from tfsem.oracle import applications as A
from tfsem.oracle import functions as fns
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import BITS_DTYPES, DTYPES, FLOAT_DTYPES, Tensor, exact, from_array

NIGHTLY = settings.get_current_profile_name() == "nightly"


# ---------------------------------------------------------------------------
# values: an oracle from the bits

def _bits(a: np.ndarray) -> np.ndarray:
    """The elements' bit patterns as unsigned integers (bool: 0 or 1, what
    the element means, whatever byte stood for it)."""
    a = np.ascontiguousarray(a)
    if a.dtype == np.bool_:
        return (a.view(np.uint8) != 0).astype(np.uint8)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def _isnan(a: np.ndarray) -> np.ndarray:
    if a.dtype == np.bool_ or a.dtype.kind in "iu":
        return np.zeros(a.shape, bool)
    with np.errstate(invalid="ignore"):
        return np.isnan(a.astype(np.float64))


def _spec_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """SPEC section 2: dtype, shape, elements bit for bit but every NaN
    equal to every NaN (of either sign and any payload)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    na, nb = _isnan(a), _isnan(b)
    if not np.array_equal(na, nb):
        return False
    return bool(np.all((_bits(a) == _bits(b)) | na))


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(_bits(a), _bits(b))


_SPECIALS = {   # quiet NaN, its negation, a signalling NaN, payloads, -0.0, 0.0, 1.0, inf
    "float16": [0x7E00, 0xFE00, 0x7C01, 0x7E01, 0xFE2A, 0x8000, 0, 0x3C00, 0x7C00],
    "bfloat16": [0x7FC0, 0xFFC0, 0x7F81, 0x7FC1, 0xFFD5, 0x8000, 0, 0x3F80, 0x7F80],
    "float32": [0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FC00001, 0xFFC0002A, 0x80000000, 0,
                0x3F800000, 0x7F800000],
    "float64": [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
                0x7FF8000000000001, 0xFFF800000000002A, 0x8000000000000000, 0,
                0x3FF0000000000000, 0x7FF0000000000000],
}


def _layout(a: np.ndarray, how: str) -> np.ndarray:
    if how == "fortran":
        return np.asfortranarray(a)
    if how == "strided" and a.ndim:
        return np.concatenate([a, a], axis=0)[::2]
    if how == "reversed" and a.ndim:
        return a[::-1]
    if how == "0d" and a.size:
        return a.reshape(-1)[:1].reshape(())
    return a


@st.composite
def _pairs(draw):
    """Two arrays of one dtype: random bytes, or special floats, the second
    the first with some elements changed (to another NaN, the other zero,
    random bytes) or another draw, each in its own layout."""
    name = draw(st.sampled_from(sorted(DTYPES)))
    dt = DTYPES[name]
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    n = int(np.prod(shape))
    if name in FLOAT_DTYPES and draw(st.booleans()):
        words = draw(st.lists(st.sampled_from(_SPECIALS[name]), min_size=n, max_size=n))
        a = np.array(words, BITS_DTYPES[name]).view(dt).reshape(shape)
    else:
        raw = draw(st.binary(min_size=n * dt.itemsize, max_size=n * dt.itemsize))
        a = np.frombuffer(raw, np.uint8).view(dt).reshape(shape).copy()
    b = a.copy()
    if n and draw(st.booleans()):
        flat = b.reshape(-1).view(np.dtype(f"u{dt.itemsize}"))
        for i in draw(st.lists(st.integers(0, n - 1), max_size=3)):
            if name in FLOAT_DTYPES:
                flat[i] = draw(st.sampled_from(_SPECIALS[name]))
            else:
                flat[i] = draw(st.integers(0, 2 ** (8 * dt.itemsize) - 1))
    layouts = st.sampled_from(["c", "fortran", "strided", "reversed", "0d"])
    how = draw(layouts)
    return _layout(a, how), _layout(b, how if draw(st.booleans()) else draw(layouts))


def _made(a: np.ndarray, first: str) -> Tensor:
    """A Tensor of `a`, with `first` asked of it first."""
    t = Tensor(a)
    if first == "hash":
        hash(t)
    elif first == "exact":
        exact(t)
    elif first == "key":
        t._key
    elif first == "pickle":
        t = pickle.loads(pickle.dumps(t))
    elif first == "copy":
        t = copy.deepcopy(t)
    return t


_FIRSTS = ("nothing", "hash", "exact", "key", "pickle", "copy")


@settings(max_examples=3000 if NIGHTLY else 600, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(_pairs(), st.sampled_from(_FIRSTS), st.sampled_from(_FIRSTS), st.booleans())
def test_equality_hash_and_exact_follow_the_bits_whatever_is_asked_first(pair, f1, f2, flip):
    a, b = pair
    x, y = _made(a, f1), _made(b, f2)
    if flip:
        x, y = y, x
        a, b = b, a
    assert (x == y) == (y == x) == _spec_equal(a, b)
    if x == y:
        assert hash(x) == hash(y)
    assert (exact(x) == exact(y)) == _same_bits(a, b)
    # (exact is the tensor itself exactly where equality already sees every bit)
    assert (exact(x) is x) == (not _isnan(a).any() or _same_bits(
        a, np.where(_isnan(a), np.array(np.nan, a.dtype), a)))
    assert x == x and exact(x) == exact(x)
    assert x.dtype == ("bool" if a.dtype == np.bool_ else
                       next(k for k, d in DTYPES.items() if d == a.dtype))
    assert x.shape == a.shape and not x.array.flags.writeable


def test_negative_zero_nan_signs_payloads_and_bool_bytes():
    def f(name, *words):
        return Tensor(np.array(words, BITS_DTYPES[name]).view(DTYPES[name]))
    for name, (qnan, neg, snan, payload, _p2, mzero, zero, _one, _inf) in _SPECIALS.items():
        assert f(name, mzero) != f(name, zero)
        assert exact(f(name, mzero)) != exact(f(name, zero))
        assert f(name, qnan) == f(name, neg) == f(name, snan) == f(name, payload)
        assert len({hash(f(name, w)) for w in (qnan, neg, snan, payload)}) == 1
        assert exact(f(name, qnan)) != exact(f(name, neg)) != exact(f(name, payload))
        assert exact(f(name, neg)) == exact(f(name, neg))
    odd = Tensor(np.frombuffer(bytes([0, 1, 2, 255]), np.uint8).view(np.bool_))
    assert odd == Tensor(np.array([False, True, True, True]))
    assert exact(odd) == exact(Tensor(np.array([False, True, True, True])))
    assert odd.array.view(np.uint8).tolist() == [0, 1, 1, 1]
    for shape in ((0,), (0, 3), (3, 0), ()):
        z = Tensor(np.zeros(shape, np.float32))
        assert z == Tensor(np.zeros(shape, np.float32)) and exact(z) is z
    assert Tensor(np.zeros((0, 3), np.float32)) != Tensor(np.zeros((3, 0), np.float32))
    assert Tensor(np.zeros((0,), np.float32)) != Tensor(np.zeros((0,), np.float64))


def test_every_constructor_owns_its_array_whatever_the_caller_writes_later():
    """The key is made late from the array: a caller's array written after
    the Tensor is made must not reach it, by any way a Tensor is made."""
    def sources():
        yield np.array([1.0, 2.0, 3.0], np.float32)
        yield np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3))
        yield np.arange(12, dtype=np.int32)[::3]
        yield np.array([True, False])
        yield np.ones(3, ml_dtypes.bfloat16)
    makers = {
        "Tensor": lambda s: Tensor(s),
        "Tensor(dtype)": lambda s: Tensor(s, next(k for k, d in DTYPES.items() if d == s.dtype)),
        "from_array": from_array,
        "copy": lambda s: copy.copy(Tensor(s)),
        "deepcopy": lambda s: copy.deepcopy(Tensor(s)),
        "pickle": lambda s: pickle.loads(pickle.dumps(Tensor(s))),
        "pickle5": lambda s: pickle.loads(pickle.dumps(Tensor(s), protocol=5)),
    }
    for name, make in makers.items():
        for s in sources():
            before = s.copy()
            t = make(s)
            s[...] = s[::-1] if s.ndim == 1 and s.dtype != np.bool_ else ~s if s.dtype == np.bool_ else 7
            assert t == Tensor(before) and exact(t) == exact(Tensor(before)), name
            assert hash(t) == hash(Tensor(before)), name
            assert not t.array.flags.writeable, name
            with pytest.raises(ValueError):
                t.array[...] = 0


def test_old_pickle_states_are_read():
    """`__setstate__` takes the three-item state and the four-item one a
    pickle of an eager-hash tensor holds, the key and bits as they were."""
    t = Tensor(np.array([np.nan, -0.0], np.float32))
    key, bits = t._key, t._bits
    for state in ((t.array.copy(), key, bits), (t.array.copy(), key, 12345, bits)):
        u = Tensor.__new__(Tensor)
        u.__setstate__(state)
        assert u == t and hash(u) == hash(t) and u.dtype == "float32"
        assert exact(u) is u and u._lazy is not None


_CHILD = r"""
import pickle, sys
import numpy as np
from tfsem.oracle.values import Tensor, exact
NAN = np.array([0x7FC00001, 0xFFC00000, 0, 0x80000000], np.uint32).view(np.float32)
ts = [Tensor(NAN), Tensor(NAN[:2]), Tensor(np.arange(5)), Tensor(np.array(True)),
      Tensor(np.zeros((0, 2), np.float16))]
hash(ts[0]); exact(ts[1]); ts[2] == ts[3]
sys.stdout.buffer.write(pickle.dumps(ts))
"""


def test_tensors_pickled_in_another_process_equal_and_hash_as_fresh_ones():
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, check=True,
                         env=dict(os.environ, PYTHONHASHSEED="12345"), timeout=120)
    theirs = pickle.loads(out.stdout)
    nan = np.array([0x7FC00001, 0xFFC00000, 0, 0x80000000], np.uint32).view(np.float32)
    ours = [Tensor(nan), Tensor(nan[:2]), Tensor(np.arange(5)), Tensor(np.array(True)),
            Tensor(np.zeros((0, 2), np.float16))]
    for t, u in zip(theirs, ours):
        assert t == u and u == t and hash(t) == hash(u)
        assert exact(t) == exact(u)
    assert len(set(theirs) | set(ours)) == len(ours)
    # (another NaN of the same place: equal, but not exactly)
    other = nan.copy().view(np.uint32)
    other[0] = 0x7FC00002
    assert theirs[0] == Tensor(other.view(np.float32)) and exact(theirs[0]) != exact(
        Tensor(other.view(np.float32)))


def test_threads_that_ask_first_at_once_see_one_key():
    rng = np.random.default_rng(16)
    for k in range(60):
        a = rng.integers(0, 2**32, 257, dtype=np.uint32)
        a[k % 7] = 0x7FC00001 + k                      # (a NaN with a payload)
        t = Tensor(a.view(np.float32))
        seen, start = [], threading.Barrier(6)

        def ask(t=t):
            start.wait()
            seen.append((hash(t), t._key, exact(t), t == Tensor(a.view(np.float32))))
        threads = [threading.Thread(target=ask) for _ in range(6)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert len({(h, key, e) for h, key, e, _ in seen}) == 1 and all(s[3] for s in seen)


# ---------------------------------------------------------------------------
# structural: the original's memo on and off


def _families(n: int, seed: int):
    """Generated originals without control flow, each with its rewrites by
    every built-in pass that changes it and by random mutations, each
    rewrite checked twice under a drawn semantics, observation and
    NaN-blindness, float arithmetic (real or not) and rule (basic or not)."""
    from tfsem.generators.draw import RandomDraw
    from tfsem.generators.mutate import mutate
    from tfsem.generators.strategies import random_programs
    from tfsem.rewrites.registry import builtin_passes
    passes = list(builtin_passes().values())
    rng = random.Random(seed)
    out = []
    for p in random_programs(n, seed, max_nodes=12):
        if p.has_control_flow:
            continue
        qs = []
        for ps in passes:
            try:
                q = ps(p)
            except Exception:      # (a pass that refuses the program)
                continue
            if q is not p:
                qs.append(q)
        for _ in range(3):
            qs.append(mutate(RandomDraw(rng), p, 16))
        rng.shuffle(qs)
        seq = [(q, rng.choice(["atomic", "decomposed"]), rng.choice(["outputs", "outputs+state"]),
                (rng.random() < 0.8, rng.random() < 0.2, rng.random() < 0.2))
               for q in qs[:8] for _ in range(2)]
        out.append((p, seq))
    return out


def _answer(p, q, s, o, flags=(True, False, False)):
    nan_blind, real, basic = flags
    r = structural_refinement(p, q, s, o, nan_blind=nan_blind, real=real, basic=basic)
    return r.proved, r.reason, {k: v for k, v in r.stats.items() if k != "seconds"}


def _run(families):
    rows = []
    for p, seq in families:
        rows.append(race_free(p))
        for q, s, o, nb in seq:
            rows.append(race_free(q))
            rows.append(_answer(p, q, s, o, nb))
            rows.append((race_free(p), race_free(q)))
            rows.append(_answer(q, p, s, o))        # (the rewrite as an original)
            rows.append((race_free(q), race_free(p)))
            rows.append(_answer(p, p, s, o))
    return rows


def test_the_original_memo_changes_no_answer_over_generated_families(monkeypatch):
    families = _families(300 if NIGHTLY else 60, seed=1616)
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    cold = _run(families)
    warm = _run(families)            # (every entry made: all answered from it)
    assert any(structural._ORIGINALS.get(id(p), (lambda: None,))[0]() is p for p, _ in families)
    kept = set()
    for p, _ in families:
        entry = structural._ORIGINALS.get(id(p))
        if entry is not None and entry[0]() is p:
            kept |= {k if isinstance(k, str) else k[0] for k in entry[3]}
    assert {"steps", "unobserved", "exact_plan", "nan_blind"} <= kept
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", False)
    off = _run(families)
    assert cold == off and warm == off
    answers = [r for r in off if isinstance(r, tuple) and len(r) == 3]
    assert any(r[0] for r in answers) and not all(r[0] for r in answers)
    reasons = " ".join(r[1] for r in answers)
    assert "unobserved Reads" in reasons and "(H)" in reasons


def test_a_check_cut_at_any_clock_reading_keeps_nothing_wrong(monkeypatch):
    """The rule's deadline met at each of its clock readings in turn (the
    original's entry new each time): the cut check proves nothing, and the
    next check, and `race_free`, answer as with the memo off."""
    families = _families(30 if NIGHTLY else 12, seed=77)
    real_tick = structural._tick
    cuts = 0
    for p, seq in families:
        for q, s, o, _nb in seq[:3]:
            monkeypatch.setattr(structural, "ORIGINAL_MEMO", False)
            want, free = _answer(p, q, s, o), race_free(p)
            monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
            ticks = [0]

            def counting():
                ticks[0] += 1
            monkeypatch.setattr(structural, "_tick", counting)
            structural._ORIGINALS.pop(id(p), None)
            _answer(p, q, s, o)
            for cut in range(ticks[0]):
                structural._ORIGINALS.pop(id(p), None)
                seen = [0]

                def cutting(cut=cut):
                    seen[0] += 1
                    if seen[0] > cut:
                        raise _OutOfTime()
                monkeypatch.setattr(structural, "_tick", cutting)
                got = _answer(p, q, s, o)
                assert not got[0] and got[2].get("budget")
                monkeypatch.setattr(structural, "_tick", real_tick)
                assert race_free(p) == free
                assert _answer(p, q, s, o) == want
                cuts += 1
    assert cuts > 100


def test_an_entry_left_at_a_reused_id_is_not_read(monkeypatch):
    """A program freed and another made at its id: the entry's weak
    reference tells them apart (planted here, as the allocator may or may
    not reuse the address)."""
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    families = _families(12, seed=5)
    (p, seq), (p2, seq2) = families[0], families[1]
    for q, s, o, nb in seq:
        _answer(p, q, s, o, nb)
    stale = structural._ORIGINALS[id(p)]
    assert stale[0]() is p
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", False)
    want = [(_answer(p2, q, s, o, nb), race_free(p2)) for q, s, o, nb in seq2]
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    # p's entry under p2's id, with p's (live) reference, then a dead one
    monkeypatch.setitem(structural._ORIGINALS, id(p2), stale)
    assert [(_answer(p2, q, s, o, nb), race_free(p2)) for q, s, o, nb in seq2] == want

    class Gone:
        pass
    g = Gone()
    dead = weakref.ref(g)
    del g
    monkeypatch.setitem(structural._ORIGINALS, id(p2), (dead, *stale[1:]))
    assert race_free(p2) == want[0][1]
    assert [(_answer(p2, q, s, o, nb), race_free(p2)) for q, s, o, nb in seq2] == want


def _swap_program(args, dead_neg: bool = True):
    """x := Add(args), and with `dead_neg` a Neg(a) nothing uses: blind to
    NaN payloads while Neg is tfsem's."""
    nodes = [{"name": "hx", "op": "Var", "var": "x"},
             {"name": "s", "op": "Add", "inputs": args},
             {"name": "w", "op": "Assign", "fn": "Snd", "inputs": ["hx", "s"]}]
    if dead_neg:
        nodes.append({"name": "n", "op": "Neg", "inputs": ["$a"]})
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {"x": {"dtype": "float32", "shape": [1]}},
        "feeds": {"a": {"dtype": "float32", "shape": [1]}, "b": {"dtype": "float32", "shape": [1]}},
        "nodes": nodes, "outputs": {}})


def _users_neg(xp, args, attrs):     # (a user's function: may see a NaN's payload)
    return (xp.negative(args[0]),)


def test_a_function_replaced_between_checks_is_seen_by_the_kept_nan_blindness(monkeypatch):
    """The swap Add(a, b) -> Add(b, a) is proved only while no function of
    the programs may show a NaN's payload ((E3)).  Kept for the original,
    that blindness must follow the registry: Neg, which only the original
    names, replaced by a user's function between two checks of the same
    program objects."""
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    p, q = _swap_program(["$a", "$b"]), _swap_program(["$b", "$a"], dead_neg=False)
    first = structural_refinement(p, q, "atomic", "outputs+state")
    assert first.proved and first.stats["assigns_up_to_error"] == 1, first.reason
    assert structural._ORIGINALS[id(p)][3].get("nan_blind") is True
    users = dataclasses.replace(fns.lookup("Neg"), impl=_users_neg, batched_impl=None)
    monkeypatch.setitem(fns._REGISTRY, "Neg", users)
    assert structural.nan_payload_observer(p) == ("n", "Neg")
    again = structural_refinement(p, q, "atomic", "outputs+state")
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", False)
    off = structural_refinement(p, q, "atomic", "outputs+state")
    assert not off.proved
    assert (again.proved, again.reason) == (off.proved, off.reason)


def test_a_program_cannot_be_changed_under_its_entry():
    """What the entry keeps rests on the program never changing: its
    fields, node tuple, attributes and maps refuse writes."""
    p = _swap_program(["$a", "$b"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.nodes = ()
    with pytest.raises(TypeError):
        p.nodes[1].attrs["zz"] = 1
    with pytest.raises(TypeError):
        p.outputs["o"] = "s"
    with pytest.raises(TypeError):
        p.variables["y"] = p.variables["x"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.nodes[1].op = "Sub"


# ---------------------------------------------------------------------------
# the application memo's bound


def test_an_entry_always_fits_and_the_bound_holds_at_the_real_sizes_ratio(monkeypatch):
    """ENTRY_BYTES below MEMO_BYTES (an entry kept fits with others), and
    the bound holds at their shipped ratio, scaled down by 2**12."""
    assert 0 < A.ENTRY_BYTES <= A.MEMO_BYTES // 8
    monkeypatch.setattr(A, "MEMO_BYTES", A.MEMO_BYTES >> 12)
    monkeypatch.setattr(A, "ENTRY_BYTES", A.ENTRY_BYTES >> 12)
    memo = A._Memo()
    rng = np.random.default_rng(3)
    kept_any = refused = 0
    for k in range(400):
        n = int(rng.integers(1, A.ENTRY_BYTES // 4))       # float32 elements
        args = (Tensor(rng.standard_normal(n).astype(np.float32)),)
        out = (Tensor(rng.standard_normal(int(rng.integers(1, n + 1))).astype(np.float32)),)
        A.store(memo, ("k", k), object(), {}, args, out, frozenset())
        assert memo.bytes <= A.MEMO_BYTES
        size = args[0].array.nbytes + out[0].array.nbytes
        if size > A.ENTRY_BYTES:
            refused += 1
            assert ("k", k) not in memo.entries
        else:
            kept_any += 1
            assert ("k", k) in memo.entries      # (the newest entry is never the one out)
    assert kept_any and refused
    assert memo.bytes == sum(t.array.nbytes + 128 for t, _n in memo.held.values())


# (fixed: docs/review-memos.md summed the kept memos with the application
# memo at 192 MiB, 384 = 192 + 64 + 128; at 384 MiB they hold up to 576 MiB)
def test_the_documented_sum_of_the_kept_memos_is_the_code_s():
    """docs/review-memos.md "Limits kept" gives what the kept application
    memo (entries and interned tensors) and the canonical memo hold while
    the original lives: the sum of the bounds the code has."""
    import re
    from pathlib import Path

    from tfsem.checking import canonical_memo
    text = (Path(__file__).resolve().parents[1] / "docs" / "review-memos.md").read_text()
    m = re.search(r"hold up to about (\d+) MiB\s+\((\d+) \+ (\d+) \+ (\d+)\)", text)
    assert m is not None
    total, parts = int(m[1]), [int(m[k]) for k in (2, 3, 4)]
    assert parts == [A.MEMO_BYTES >> 20, A.INTERN_BYTES >> 20, canonical_memo.MEMO_BYTES >> 20]
    assert total == sum(parts)


def test_a_serve_worker_caps_the_application_memo_at_a_quarter_of_its_memory(monkeypatch):
    """A worker's address-space cap (`tfsem serve --worker-memory`) also caps
    the application memo at a quarter of it, so that a memo sized for a
    large graph does not take what the computation needs."""
    from tfsem.oracle import applications
    from tfsem.service import workers
    monkeypatch.setattr(applications, "MEMO_BYTES", 384 << 20)
    monkeypatch.setattr(applications, "ENTRY_BYTES", 24 << 20)
    monkeypatch.setattr("resource.setrlimit", lambda *a: None)
    workers._limit_memory(640)
    assert applications.MEMO_BYTES == 160 << 20
    assert applications.ENTRY_BYTES == 20 << 20
    workers._limit_memory(4096)          # (never raised)
    assert applications.MEMO_BYTES == 160 << 20
