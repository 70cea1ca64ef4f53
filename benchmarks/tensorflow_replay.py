"""Benchmark of replaying `unsound` verdicts on TensorFlow (needs TensorFlow).

    python benchmarks/tensorflow_replay.py [--cases DIR] [--timeout 20] [--json FILE]

For every case of tests/cases/ (recursively) that expects `unsound`: the
check's time (`tfsem.checking.check_case`), then the replay's
(`backends.tensorflow.replay_program`: export, force the schedule, load the
graph into a session, one run), then, where that confirmed, the replay of
the original's witness schedules that `tfsem check` adds to it
(`backends.tensorflow.with_original`: the same per witness), each timed on
its own, side by side in one run, and whether TensorFlow confirmed the
counterexample or why not.  The first replay also pays TensorFlow's import,
reported on its own line.  Prints a Markdown table; --json also writes every
row.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tfsem.backends import tensorflow as tfb
from tfsem.checking import check_case
from tfsem.oracle.jsonio import case_from_json

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=str(ROOT / "tests" / "cases"), help="a folder of cases")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per check")
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    tf = tfb.tensorflow()
    import_s = time.perf_counter() - t
    rows = []
    for path in sorted(Path(args.cases).rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except ValueError:
            continue
        if not isinstance(data, dict) or data.get("expect") != "unsound":
            continue
        case = case_from_json(data, where=str(path))
        t = time.perf_counter()
        v = check_case(case, timeout=args.timeout)
        check_s = time.perf_counter() - t
        row = {"case": str(path.relative_to(args.cases)), "semantics": v.semantics,
               "verdict": v.verdict, "check_s": round(check_s, 4)}
        if v.verdict == "unsound" and v.counterexample is not None:
            t = time.perf_counter()
            rep = tfb.replay_program(case.rewritten(), v.counterexample, observe=v.observe)
            row.update(replay_s=round(time.perf_counter() - t, 4), split=rep.split,
                       forced=len(rep.forced))
            t = time.perf_counter()
            rep = tfb.with_original(rep, case.original, v.counterexample, observe=v.observe)
            row.update(original_s=round(time.perf_counter() - t, 4),
                       witnesses=(rep.original or {}).get("replayed", 0),
                       confirmed=rep.confirmed, why=None if rep.confirmed else rep.reason)
        rows.append(row)
    print(f"TensorFlow {tf.__version__}: import {import_s:.2f} s")
    print("| case | semantics | check (s) | replay (s) | original's witnesses (s) | "
          "witnesses | forced nodes | TensorFlow |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        if "replay_s" not in r:
            print(f"| {r['case']} | {r['semantics']} | {r['check_s']:.3f} | - | - | - | - | "
                  f"(verdict {r['verdict']}) |")
            continue
        what = "confirmed" + (f" (split {', '.join(r['split'])})" if r["split"] else "") \
            if r["confirmed"] else f"not confirmed: {r['why'][:70]}"
        print(f"| {r['case']} | {r['semantics']} | {r['check_s']:.3f} | {r['replay_s']:.3f} | "
              f"{r['original_s']:.3f} | {r['witnesses']} | {r['forced']} | {what} |")
    replayed = [r for r in rows if "replay_s" in r]
    if replayed:
        def median(key: str) -> float:
            times = sorted(r[key] for r in replayed)
            return times[len(times) // 2]
        print(f"\n{sum(r['confirmed'] for r in replayed)} of {len(replayed)} confirmed; "
              f"replay median {median('replay_s'):.3f} s, max "
              f"{max(r['replay_s'] for r in replayed):.3f} s (the first includes loading "
              f"TensorFlow's runtime); the original's witnesses median "
              f"{median('original_s'):.3f} s, max {max(r['original_s'] for r in replayed):.3f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"tensorflow": tf.__version__,
                                               "import_s": round(import_s, 3), "rows": rows},
                                              indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
