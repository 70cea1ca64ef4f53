"""backends/execute.py `HostValues`: the host values of device arrays seen
before (σ's, and those downloaded), which a confirmation's downloads take
instead of copying the array again.  Against downloads without it, on
random programs and their CSE rewrite sharing a memo as a confirmation
does, and on a σ of NaN payloads, signed zeros and bools that no step
writes: the same outcomes, bit for bit; an unwritten variable comes back
as σ's own Tensor, and a result two runs share as one Tensor."""

from __future__ import annotations

import random

import numpy as np

from tfsem.backends.arraymodule import get_backend, numpy_as_cupy
from tfsem.backends.execute import HostValues, Memo, device_machine, download, run_schedule, upload
from tfsem.checking import check as C
from tfsem.generators.strategies import random_programs
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor
from tfsem.rewrites import get_pass
from test_check_canonical_memo import exact_outcome


def _both(m, b, dev, schedule, memo, known, observe="outputs+state"):
    """The outcome downloaded with `known` and without, from one run."""
    outputs, variables = run_schedule(m, *dev, schedule, None, memo)
    fresh = download(outputs, variables, b, observe)
    return download(outputs, variables, b, observe, known), fresh


def test_known_host_values_are_fresh_downloads_bit_for_bit():
    cse = get_pass("cse")
    compared = from_sigma = shared = 0
    for backend in (get_backend("numpy"), numpy_as_cupy()):
        for i, p in enumerate(random_programs(60, 29, max_nodes=12)):
            if p.has_control_flow:
                continue
            feeds, init = next(C._refute_sigmas(p, np.random.default_rng(i)))
            sem = ("atomic", "decomposed")[i % 2]
            rng = random.Random(i)
            try:
                m, mq = device_machine(p, backend, sem), device_machine(cse(p), backend, sem)
                dev = (upload(feeds, backend), upload(init, backend))
            except Exception:   # noqa: BLE001 (a program the backends do not run)
                continue
            known, memo = HostValues(), Memo(backend.xp)
            known.add_sigma(dev[0], feeds)
            known.add_sigma(dev[1], init)
            sigma_tensors = {id(v) for v in list(feeds.values()) + list(init.values())}
            seen = {}
            for mm in (mq, m, m):
                schedule = mm.run_random(mm.start(*dev), rng).schedule
                for observe in ("outputs+state", "outputs"):
                    got, want = _both(mm, backend, dev, schedule, memo, known,
                                      observe)
                    assert exact_outcome(got) == exact_outcome(want), (i, sem, observe)
                    compared += 1
                    for _k, v in got.parts():
                        from_sigma += id(v) in sigma_tensors
                        shared += seen.get(id(v), v) is v and id(v) in seen and \
                            id(v) not in sigma_tensors
                        seen[id(v)] = v
    assert compared >= 150 and from_sigma >= 50 and shared >= 20, (compared, from_sigma, shared)


def test_an_unwritten_variable_is_sigmas_own_value():
    """NaN payloads, -0.0 and bools, in σ and never written: the outcome
    holds σ's Tensors themselves, equal bit for bit to a fresh download;
    the variable an Assign writes is downloaded."""
    b = get_backend("numpy")
    p = program_from_json({
        "variables": {"n": {"dtype": "float32", "shape": [3]},
                      "z": {"dtype": "float64", "shape": [2]},
                      "t": {"dtype": "bool", "shape": [2]},
                      "w": {"dtype": "float32", "shape": [3]}},
        "feeds": {"f": {"dtype": "float32", "shape": [3]}},
        "nodes": [{"name": "vw", "op": "Var", "var": "w"},
                  {"name": "a", "op": "Assign", "fn": "Add", "inputs": ["vw", "$f"]},
                  {"name": "vn", "op": "Var", "var": "n"},
                  {"name": "r", "op": "Read", "inputs": ["vn"]},
                  {"name": "o", "op": "Identity", "inputs": ["r"]}],
        "outputs": {"o": "o"}})
    nan_bits = np.array([0x7FC00001, 0xFFC00000, 0x7FA00000], np.uint32).view(np.float32)
    init = {"n": Tensor(nan_bits), "z": Tensor(np.array([-0.0, 0.0])),
            "t": Tensor(np.array([True, False])), "w": Tensor(np.zeros(3, np.float32))}
    feeds = {"f": Tensor(np.array([1.0, -0.0, 2.5], np.float32))}
    dev = (upload(feeds, b), upload(init, b))
    known = HostValues()
    known.add_sigma(dev[0], feeds)
    known.add_sigma(dev[1], init)
    m = device_machine(p, b, "atomic")
    got, want = _both(m, b, dev, ["vw", "a", "vn", "r", "o"], Memo(np), known)
    assert exact_outcome(got) == exact_outcome(want)
    state = dict(got.state)
    assert all(state[x] is init[x] for x in ("n", "z", "t"))
    assert dict(got.outputs)["o"] is init["n"]            # (Read and Identity pass it on)
    assert state["w"] is not init["w"] and state["w"].array.tolist() == [1.0, -0.0, 2.5]
    # the bound: past max_bytes nothing more is kept (the values are the same)
    small = HostValues(max_bytes=0)
    got2, _ = _both(m, b, dev, ["vw", "a", "vn", "r", "o"], Memo(np), small)
    assert exact_outcome(got2) == exact_outcome(want) and small.bytes == 0
