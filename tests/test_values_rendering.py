"""How values are written (oracle/values.py): a float tensor's JSON form,
built whole arrays at a time, is the element-by-element one; a large tensor
of one value is shown as its shape and that value."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tfsem.oracle.values import DTYPES, Tensor, _float_to_json, value_to_json


@pytest.mark.parametrize("values", [
    1.5, float("nan"), -0.0, [-0.0, float("inf"), float("-inf"), float("nan"), 1e-45, 3.4e38],
    [[float("nan"), 1.0], [2.0, float("-inf")]], [[1.0, 2.0], [3.0, 4.0]]])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_float_json_by_arrays_is_the_element_by_element_form(values, dtype):
    with np.errstate(all="ignore"):
        t = Tensor(np.asarray(values, np.float64).astype(DTYPES[dtype]), dtype)
    got = value_to_json(t)
    want = {"dtype": dtype, "value": _float_to_json(t.array.astype(np.float64).tolist())}
    assert json.dumps(got) == json.dumps(want)
    # (plain Python numbers and strings: what json writes without a default)
    assert json.loads(json.dumps(got)) == json.loads(json.dumps(want))


@pytest.mark.parametrize("dtype, fill, shown", [
    ("float32", 0.0, "f32 [32, 20], all 0.0f"), ("float32", float("nan"), "f32 [32, 20], all nanf"),
    ("bfloat16", 1.5, "bf16 [32, 20], all 1.5bf"), ("int64", 7, "int64 [32, 20], all 7"),
    ("bool", True, "bool [32, 20], all true")])
def test_a_large_tensor_of_one_value_is_shown_as_its_shape_and_that_value(dtype, fill, shown):
    from tfsem.oracle.values import format_value
    assert format_value(Tensor(np.full((32, 20), fill, DTYPES[dtype]), dtype)) == shown
    # (one element different, or -0.0 among 0.0, and it is written out)
    mixed = np.full((32, 20), 0.0, np.float32)
    mixed[3, 4] = -0.0
    assert "all" not in format_value(Tensor(mixed, "float32"))
    # (small tensors as before)
    assert format_value(Tensor(np.zeros(3, np.float32), "float32")) == "f32 [0.0, 0.0, 0.0]"
