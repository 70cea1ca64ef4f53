"""Helpers of the tests that compare the op models' NaN bits with
TensorFlow's: arrays made from bit patterns, and their bits back."""

from __future__ import annotations

import numpy as np

from tfsem.oracle.values import DTYPES

#: the unsigned integer of each float width
UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def arr(dt: str, raw) -> np.ndarray:
    """An array of dtype `dt` (tfsem's name) whose elements have the bits `raw`."""
    d = DTYPES[dt]
    return np.asarray(raw, dtype=UINT[d.itemsize]).view(d)


def bits(a) -> list:
    """The bits of every element of `a`, flat, as Python ints."""
    a = np.asarray(a)
    return a.view(UINT[a.dtype.itemsize]).reshape(-1).tolist()


def runs(labels) -> str:
    """Labels as runs: "F3 S2" for F, F, F, S, S."""
    labels = list(labels)
    out, i = [], 0
    while i < len(labels):
        j = i
        while j < len(labels) and labels[j] == labels[i]:
            j += 1
        out.append(f"{labels[i]}{j - i}")
        i = j
    return " ".join(out)
