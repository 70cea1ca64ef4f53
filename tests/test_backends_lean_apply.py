"""backends/execute.py `_apply_numpy`, the lean path of `apply_function` on
numpy for functions whose every argument is strict, against the general
path (`LEAN_NUMPY_APPLY = False`): on every registry function, on edge
values of several dtypes and shapes (mixed dtypes, broadcasts that fail,
error values among the arguments), and with a flushed variant's `impl`,
the same results bit for bit (dtype, shape, bytes; the same error
values), or the same exception with the same message; and replays of
generated programs give the same outcomes either way."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tfsem.oracle.opdefs  # noqa: F401  (registers the TensorFlow families)
from tfsem.backends import execute as EX
from tfsem.oracle import functions as fns
from tfsem.oracle.values import Error

_TINY = np.finfo(np.float32).tiny
VALUES = {
    "float32": np.array([1e-40, -0.0, 1.5, -2.0, np.inf, np.nan, 3e38, -1e-45, _TINY, 0.0],
                        np.float32),
    "int64": np.array([0, 1, -1, 2, 2**63 - 1, -2**63, 7], np.int64),
    "bool": np.array([True, False, True, False]),
    "int32": np.array([0, 1, 2, 0, 1, 2], np.int32),
}
ATTRS = {
    "Cast": [{"DstT": d} for d in ("float32", "int64", "bool")],
    "Reshape": [{"shape": (-1,)}], "Tile": [{"multiples": (2,)}],
    "ExpandDims": [{"axis": 0}], "Squeeze": [{"squeeze_dims": ()}],
    **{r: [{"axes": (0,)}] for r in ("Sum", "Max", "Min", "Prod", "All", "Any", "Mean")},
}
ERR = Error("uninitialized")


def _answer(fn, args, attrs, lean: bool, impl=None):
    EX.LEAN_NUMPY_APPLY = lean
    try:
        got = EX.apply_function(fn, args, attrs, np, impl=impl)
    except Exception as exc:   # noqa: BLE001
        return (type(exc).__name__, str(exc), getattr(exc, "function", None))
    finally:
        EX.LEAN_NUMPY_APPLY = True
    return tuple(("error", r.reason) if isinstance(r, Error) else
                 ("array", type(r).__name__, r.dtype.str, r.shape, r.tobytes()) for r in got)


def _arguments(n_in: int):
    dtypes = ["float32", "int64", "bool", "int32"]
    shapes = [(), (3,), (2, 3)]
    for dts in itertools.product(dtypes, repeat=n_in):
        for shs in itertools.product(shapes, repeat=n_in):
            if n_in > 1 and len(set(dts)) > 1 and len(set(shs)) > 1:
                continue   # (mixed dtypes are tried on one shape: enough for the discipline)
            yield dts, [np.resize(VALUES[d], s).astype(d) for d, s in zip(dts, shs)]


def test_the_lean_path_is_the_general_one_on_every_function():
    compared, lean_taken, differs = 0, set(), []
    for name in sorted(fns.registered(None)):
        fn = fns.get(name)
        if name == "Const" or fn.n_in > 3:
            continue
        if fn.strict_args is None:
            lean_taken.add(name)
        for dts, args in _arguments(fn.n_in):
            variants = [args]
            if args:   # an error value first, last (the first error is the answer)
                variants.append([ERR] + args[1:])
                variants.append(args[:-1] + [Error("shape-mismatch")])
            for attrs in ATTRS.get(name, ({},)):
                for v in variants:
                    want, got = _answer(fn, v, attrs, False), _answer(fn, v, attrs, True)
                    compared += 1
                    if want != got:
                        differs.append(f"{name} {dts} {attrs}: {want!r:.80} vs {got!r:.80}")
    assert not differs, "\n".join(differs[:20])
    assert compared > 5000 and len(lean_taken) >= 80, (compared, len(lean_taken))
    assert {"Mul", "Add", "Identity", "Less", "Select"} <= lean_taken


def test_the_lean_path_with_a_flushed_variants_impl():
    memo = EX.Memo(np)
    for name in ("Mul", "Add", "Sub", "RealDiv"):
        fn = fns.get(name + ".ftz")
        base = EX._flushed_base(fn)
        assert base is not None
        impl = (lambda xp, arrays, at, base=base: memo._flushed_impl(base, xp, arrays, at))
        for dts, args in _arguments(2):
            assert _answer(fn, args, {}, False, impl) == _answer(fn, args, {}, True, impl), \
                (name, dts)


def test_a_function_that_breaks_its_contract_fails_alike(monkeypatch):
    """Results of the wrong count, or of a dtype tfsem lacks, and the
    implementation's own failures (a CannotRun names the function)."""
    from dataclasses import replace
    base = fns.get("Identity")
    a = np.ones(3, np.float32)
    cases = {
        "count": lambda xp, arrays, attrs: (arrays[0], arrays[0]),
        "dtype": lambda xp, arrays, attrs: (arrays[0].astype(np.complex64),),   # (casts)
        "scalar": lambda xp, arrays, attrs: (np.float32(2.0),),
        "cast": lambda xp, arrays, attrs: (arrays[0].astype(np.int64),),
        "cannot": lambda xp, arrays, attrs: (_ for _ in ()).throw(fns.CannotRun("no")),
        "shape": lambda xp, arrays, attrs: (_ for _ in ()).throw(ValueError("operands could "
                                                                           "not be broadcast")),
        "op": lambda xp, arrays, attrs: (_ for _ in ()).throw(fns.OpError("bad")),
    }
    answers = set()
    for what, impl in cases.items():
        fn = replace(base, impl=impl, casts=what == "dtype")
        want = _answer(fn, [a], {}, False)
        assert want == _answer(fn, [a], {}, True), what
        answers.add(want[0] if isinstance(want[0], str) else want)
    # (each failure seen: the comparisons compared failures, not successes)
    assert {"RuntimeError", "ValueFormatError", "CannotRun"} <= answers, answers


@pytest.mark.parametrize("seed", [3, 4])
def test_generated_programs_replay_alike(seed):
    from tfsem.backends.arraymodule import get_backend
    from tfsem.backends.execute import compiled, device_machine, download, run_schedule, upload
    from tfsem.checking import check as C
    from tfsem.generators.strategies import random_programs
    from tfsem.oracle.semantics import graph_of
    b = get_backend("numpy")
    count = 0
    for i, p in enumerate(random_programs(40, seed, max_nodes=12)):
        if p.has_control_flow:
            continue
        feeds, init = next(C._refute_sigmas(p, np.random.default_rng(i)))
        m = device_machine(p, b)
        schedule = [m.label(t) for t in range(compiled(p).n)]
        answers = []
        for lean in (False, True):
            EX.LEAN_NUMPY_APPLY = lean
            try:
                answers.append(download(*run_schedule(m, upload(feeds, b), upload(init, b),
                                                      schedule), b, "outputs+state"))
            except Exception as exc:   # noqa: BLE001
                answers.append((type(exc).__name__, str(exc)))
            finally:
                EX.LEAN_NUMPY_APPLY = True
        assert answers[0] == answers[1], i
        count += 1
    assert count >= 25
