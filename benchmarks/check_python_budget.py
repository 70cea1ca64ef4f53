"""How far past its timeout does a check called from Python end?
`check_rewrite` of MobileNetV2 (examples/tensorflow/corpus/
keras_mobilenetv2_32.pb, 6,480 nodes) against Grappler's default
pipeline's output of it (made once with TensorFlow, as
benchmarks/check_budget.py makes it), at --timeout T (docs/budgets.md:
no process to end, so the check's own stages must keep to the clock).

Each round runs, per side, a process that imports the pair, checks it once
to warm up (TensorFlow's kernels' child starts), then checks it `--checks`
times, timing each call of check_rewrite.  With `--baseline-commit C`,
tfsem at C runs the same, alternating with this tree round by round.
Printed per side: every check's excess over T, the median and the largest,
and the verdicts.

    python benchmarks/check_python_budget.py --timeout 2 --rounds 5 --checks 2 \\
        [--baseline-commit e4db0ec]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

CHILD = r'''
import argparse, json, sys, time
from tfsem.graphdef.cliopts import load_from_args
from tfsem.checking import check_rewrite
graph, pair, captures, timeout, checks = sys.argv[1:6]
ns = argparse.Namespace(fetch=["Identity"], target=[], feed_nodes=[], signature=None,
                        captures=captures, shapes=[], import_deadline=None)
p1, p2 = load_from_args(graph, ns), load_from_args(pair, ns)
check_rewrite(p1, p2, timeout=float(timeout))          # (warm: the kernels' child)
for _ in range(int(checks)):
    t = time.monotonic()
    v = check_rewrite(p1, p2, timeout=float(timeout))
    print(json.dumps({"wall": time.monotonic() - t, "verdict": v.verdict}), flush=True)
'''


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--checks", type=int, default=2, help="timed checks per process")
    ap.add_argument("--pair-dir", default=str(Path(tempfile.gettempdir()) / "tfsem-check-budget"))
    ap.add_argument("--baseline-commit", default=None, metavar="COMMIT")
    args = ap.parse_args(argv)
    import check_budget as cb  # noqa: PLC0415
    pair = cb.rewritten(Path(args.pair_dir))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sides = [("this", env)]
    if args.baseline_commit:
        from grappler import baseline_tree  # noqa: PLC0415
        base = baseline_tree(args.baseline_commit, Path(tempfile.mkdtemp(prefix="tfsem-base-")))
        sides.insert(0, (f"baseline {args.baseline_commit}", dict(env, PYTHONPATH=str(base))))
    rows: dict[str, list[dict]] = {label: [] for label, _ in sides}
    print(f"check_rewrite MobileNetV2 against Grappler's default output, T {args.timeout:g} s; "
          f"load {os.getloadavg()[0]:.1f} at the start")
    for _ in range(args.rounds):
        for label, e in sides:
            out = subprocess.run([sys.executable, "-c", CHILD, str(cb.GRAPH), str(pair),
                                  str(cb.CAPTURES), str(args.timeout), str(args.checks)],
                                 env=e, capture_output=True, text=True,
                                 cwd=tempfile.gettempdir())
            got = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
            if not got:
                print(f"{label}: failed: {out.stderr[-800:]}")
            rows[label] += got
    for label, got in rows.items():
        over = [r["wall"] - args.timeout for r in got]
        verdicts = {v: sum(1 for r in got if r["verdict"] == v) for v in {r["verdict"] for r in got}}
        print(f"{label}: past T median {statistics.median(over):+.2f} s, largest {max(over):+.2f} "
              f"s ({len(over)} checks: {', '.join(f'{o:+.2f}' for o in over)}); verdicts "
              f"{verdicts}; load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
