"""Synthetic TensorFlow GraphDefs of any size, for measuring import
(benchmarks/graphdef.py --synthetic) and testing that it grows linearly
(tests/test_import_linear.py).

Both are GraphDefs in the dict form of `graphdef.proto` (encode them with
``graphdef.proto.encode("GraphDef", g)``), built without TensorFlow, of the
ops TensorFlow writes for a training step:

* `chain_graphdef(n)`: about `n` nodes: 16 resource variables, a chain of
  ``ReadVariableOp -> AddV2`` and an ``AssignAddVariableOp`` of the running
  sum every 4th step; fetch ``out``.
* `optimizer_graphdef(k)`: ``6k + 8`` nodes: `k` float variables, each with
  its Adam slots `m` and `v`, read into a running sum (the "gradient"), and
  one ``ResourceApplyAdam`` per variable (an update of three variables that
  TensorFlow runs as one kernel: the importer checks that nothing races with
  it); target ``train``, a NoOp after every update.
"""

from __future__ import annotations

_F32 = {"type": "DT_FLOAT"}
_I64 = {"type": "DT_INT64"}


def _const(name: str, value, dtype: str = "DT_FLOAT") -> dict:
    field = "float_val" if dtype == "DT_FLOAT" else "int64_val"
    return {"name": name, "op": "Const",
            "attr": {"dtype": {"type": dtype},
                     "value": {"tensor": {"dtype": dtype, "tensor_shape": {}, field: [value]}}}}


def _var(name: str, dtype: dict) -> dict:
    return {"name": name, "op": "VarHandleOp",
            "attr": {"dtype": dtype, "shape": {"shape": {}}, "shared_name": {"s": name.encode()}}}


def chain_graphdef(n: int) -> dict:
    """About `n` nodes (at least 18): see the module's doc."""
    nodes = [_var(f"h{k}", _I64) for k in range(16)]
    nodes.append(_const("c0", 0, "DT_INT64"))
    acc, i = "c0", 0
    while len(nodes) < n - 1:
        nodes.append({"name": f"r{i}", "op": "ReadVariableOp", "input": [f"h{i % 16}"],
                      "attr": {"dtype": _I64}})
        nodes.append({"name": f"a{i}", "op": "AddV2", "input": [acc, f"r{i}"],
                      "attr": {"T": _I64}})
        acc = f"a{i}"
        if i % 4 == 3:
            nodes.append({"name": f"w{i}", "op": "AssignAddVariableOp",
                          "input": [f"h{(i * 7) % 16}", acc], "attr": {"dtype": _I64}})
        i += 1
    nodes.append({"name": "out", "op": "Identity", "input": [acc], "attr": {"T": _I64}})
    return {"node": nodes}


def optimizer_graphdef(k: int) -> dict:
    """`6k + 8` nodes: see the module's doc."""
    nodes = [_const(n, v) for n, v in (("lr", .01), ("beta1", .9), ("beta2", .999),
                                        ("epsilon", 1e-7), ("beta1_power", .9),
                                        ("beta2_power", .999), ("g0", 0.0))]
    grad = "g0"
    for i in range(k):
        nodes += [_var(f"var{i}", _F32), _var(f"m{i}", _F32), _var(f"v{i}", _F32)]
        nodes.append({"name": f"read{i}", "op": "ReadVariableOp", "input": [f"var{i}"],
                      "attr": {"dtype": _F32}})
        nodes.append({"name": f"g{i + 1}", "op": "AddV2", "input": [grad, f"read{i}"],
                      "attr": {"T": _F32}})
        grad = f"g{i + 1}"
        nodes.append({"name": f"adam{i}", "op": "ResourceApplyAdam",
                      "input": [f"var{i}", f"m{i}", f"v{i}", "beta1_power", "beta2_power", "lr",
                                "beta1", "beta2", "epsilon", grad], "attr": {"T": _F32}})
    nodes.append({"name": "train", "op": "NoOp", "input": [f"^adam{i}" for i in range(k)]})
    return {"node": nodes}
