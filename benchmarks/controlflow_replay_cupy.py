"""The control-flow replay's TensorList ops on a real GPU (cupy), against the
reference engine: a device check, for a machine with cupy and a CUDA GPU.

    python benchmarks/controlflow_replay_cupy.py [--json FILE]

1. every TensorList case of tests/test_tensor_lists.py run by the ops'
   array definitions on cupy (`backends/controlflow.py` apply_values) gives
   the oracle's value bit for bit, errors included;
2. tf2_tensor_array_loop (tests/cases/controlflow): every witness schedule
   of every outcome, in both modes, replayed on cupy gives the oracle's
   outcome (a list fetched, so one comes back from the device);
3. its rewrite with the read's control edge dropped: an outcome of the
   rewrite missing from the original's at σ is confirmed on cupy and on
   numpy (`confirm_control_flow`), and the medians of 5 confirmations on
   each are printed side by side.

Needs no TensorFlow and no Z3.  Exit 0 when every check holds, else 1.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None)
    ap.add_argument("--substitute", action="store_true",
                    help="numpy standing in for cupy (to try the script without a GPU)")
    args = ap.parse_args()
    if args.substitute:
        from tfsem.backends.arraymodule import substitute_cupy
        with substitute_cupy():
            return run(args)
    return run(args)


def run(args) -> int:
    from tfsem.backends import controlflow as bcf
    from tfsem.backends.arraymodule import get_backend
    from tfsem.graphdef import import_path
    from tfsem.oracle import functions as fns
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.jsonio import program_from_json, program_to_json
    from tfsem.oracle.opdefs.lists import ArrayList
    from tfsem.oracle.values import Tensor
    import test_tensor_lists as cases

    cupy = get_backend("cupy")
    if cupy.substituted:
        cp = np
        print("numpy standing in for cupy")
    else:
        import cupy as cp
        print(f"cupy {cp.__version__}, device "
              f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    report: dict = {"cases": {}, "witnesses": 0, "failures": []}

    # 1. the ops, case by case
    for name, steps in sorted(cases.CASES.items()):
        results = []
        for op, inputs, attrs in steps:
            vals = [results[i[0]][i[1]] if isinstance(i, tuple) else Tensor(np.asarray(i))
                    for i in inputs]
            results.append(bcf.apply_values(cupy, fns.get(op), vals, attrs))
        got = results[-1][0]
        if isinstance(got, ArrayList):
            assert isinstance(got.items[0], cp.ndarray) if got.items and got.items[0] is not None \
                else True
            got = bcf.list_to_host(got, cupy)
        want = cases.run_tfsem(steps)
        ok = got == want and getattr(got, "exact", got) == getattr(want, "exact", want)
        report["cases"][name] = ok
        if not ok:
            report["failures"].append(f"case {name}: cupy {got!r}, oracle {want!r}")
    print(f"1. {sum(report['cases'].values())} of {len(report['cases'])} list cases equal on cupy")

    # 2. every witness of the loop, both modes
    case = ROOT / "tests" / "cases" / "controlflow" / "tf2_tensor_array_loop.pbtxt"
    p_list = import_path(case, fetch=["out", "loop/Identity_3"]).program
    feeds = {"v": Tensor(np.array([2**63 - 1, -2**63, -1], np.int64))}
    init = {"x": Tensor(np.int64(1))}
    for semantics in ("atomic", "decomposed"):
        for o, w in outcome_set(p_list, feeds, init, semantics).items():
            report["witnesses"] += 1
            got = bcf.replay_outcome(p_list, feeds, init, w, semantics, backend=cupy)
            if got != o:
                report["failures"].append(f"witness {semantics}: {w[:5]}...")
    print(f"2. {report['witnesses']} witness replays on cupy")

    # 3. the dropped control edge: confirmed on cupy and numpy, timed
    p = import_path(case, fetch=["out"]).program
    raw = program_to_json(p)
    for n in raw["nodes"]:
        if n["name"] == "loop/body/Read/ReadVariableOp":
            n["inputs"] = [i for i in n["inputs"] if i != "^loop/body/AssignAddVariableOp"]
    q = program_from_json(raw)
    feeds = {"v": Tensor(np.array([1, 5, -3], np.int64))}
    init = {"x": Tensor(np.int64(2))}
    original = outcome_set(p, feeds, init)
    found = [(o, w) for o, w in outcome_set(q, feeds, init).items() if o not in original]
    assert found, "the rewrite has no outcome the original lacks at this σ"
    outcome, schedule = found[0]
    times: dict[str, list[float]] = {"numpy": [], "cupy": []}
    for _ in range(5):
        for label in ("numpy", "cupy"):
            b = get_backend(label)
            t = time.perf_counter()
            (c,) = bcf.confirm_control_flow(p, q, feeds, init, schedule, outcome, original,
                                            backends=[b])
            times[label].append(time.perf_counter() - t)
            if not c.confirmed:
                report["failures"].append(f"not confirmed on {label}: {c.reason}")
    med = {k: statistics.median(v) for k, v in times.items()}
    report["confirm_median_s"] = med
    report["schedule_steps"] = len(schedule)
    print(f"3. confirmed on numpy and cupy; median of 5: numpy {med['numpy']:.3f} s, "
          f"cupy {med['cupy']:.3f} s ({len(schedule)} steps)")
    for f in report["failures"]:
        print("FAIL", f)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
