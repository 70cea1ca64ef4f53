"""Every registry function on the cupy back end's code path (numpy standing
in for cupy, as strict as cupy: no implicit conversion to numpy, float32
flushed as cupy's kernels flush it) gives numpy's bits on edge values
(subnormals, signed zeros, NaN, infinities, integer extremes), or the same
error; a dtype cupy lacks is refused by name.  The default run tries float32,
int64 and bool operands of two shapes; the nightly profile more dtypes and
shapes (backends/arraymodule.py, docs/backends.md)."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import settings

import tfsem.oracle.opdefs  # noqa: F401  (registers the TensorFlow families)
from tfsem.backends.arraymodule import numpy_as_cupy
from tfsem.backends.execute import apply_function
from tfsem.oracle import functions as fns
from tfsem.oracle.functions import CannotRun
from tfsem.oracle.values import Error

_TINY = np.finfo(np.float32).tiny
VALUES = {
    "float32": np.array([1e-40, -0.0, 1.5, -2.0, np.inf, np.nan, 3e38, -1e-45, _TINY, 0.0],
                        np.float32),
    "int64": np.array([0, 1, -1, 2, 2**63 - 1, -2**63, 7], np.int64),
    "bool": np.array([True, False, True, False]),
    "int32": np.array([0, 1, 2, 0, 1, 2], np.int32),
    "float64": np.array([5e-324, -1e300, 0.5, 2.0**64, -1.0, np.nan], np.float64),
    "uint8": np.array([0, 255, 7], np.uint8),
    "float16": np.array([6e-8, -0.0, 65504, 2.0**-14, np.nan, 1.5], np.float16),
}
ATTRS = {
    "Cast": [{"DstT": d} for d in ("float32", "float64", "int64", "int32", "uint8", "uint64",
                                    "bool", "float16", "int8")],
    "Reshape": [{"shape": (-1,)}], "Tile": [{"multiples": (2,)}, {"multiples": (1, 2)}],
    "ExpandDims": [{"axis": 0}], "Squeeze": [{"squeeze_dims": ()}],
    **{r: [{"axes": (0,)}] for r in ("Sum", "Max", "Min", "Prod", "All", "Any", "Mean")},
}


def _nightly() -> bool:
    return settings.get_current_profile_name() == "nightly"




def test_every_function_gives_numpys_bits_on_the_cupy_path():
    b = numpy_as_cupy()
    dtypes = list(VALUES) if _nightly() else ["float32", "int64", "bool"]
    shapes = [(), (3,), (2, 3)] if _nightly() else [(), (3,)]
    ran, differs = set(), []
    for name in sorted(fns.registered(None)):
        fn = fns.get(name)
        if name == "Const" or fn.n_in > 3:
            continue
        for dts in itertools.product(dtypes, repeat=fn.n_in):
            for shs in itertools.product(shapes, repeat=fn.n_in):
                args = [np.resize(VALUES[d], s).astype(d) for d, s in zip(dts, shs)]
                for attrs in ATTRS.get(name, ({},)):
                    try:
                        want = apply_function(fn, args, attrs, np)
                    except Exception as exc:   # noqa: BLE001
                        want = type(exc).__name__
                    try:
                        got = apply_function(fn, [b.to_device(a) for a in args], attrs, b.xp)
                    except CannotRun as exc:
                        if "cupy" in str(exc) and not isinstance(want, str):
                            continue   # refused on cupy by name (a dtype cupy lacks)
                        got = type(exc).__name__
                    except Exception as exc:   # noqa: BLE001
                        got = type(exc).__name__
                    where = f"{name} {dts} {shs} {attrs}"
                    if isinstance(want, str) or isinstance(got, str):
                        if want != got:
                            differs.append(f"{where}: numpy {want}, cupy path {got}")
                        continue
                    ran.add(name)
                    for w, g in zip(want, got):
                        if isinstance(w, Error) or isinstance(g, Error):
                            if not (isinstance(w, Error) and isinstance(g, Error) and w == g):
                                differs.append(f"{where}: {w!r:.40} vs {g!r:.40}")
                            continue
                        g, w = b.to_host([g])[0], np.asarray(w)
                        if (w.dtype, w.shape, w.tobytes()) != (g.dtype, g.shape, g.tobytes()):
                            differs.append(f"{where}: {w!r:.60} vs {g!r:.60}")
    assert not differs, "\n".join(differs[:20])
    assert len(ran) >= 80 and {"Mul", "Less", "Equal", "Cast", "Select"} <= ran
