"""Do `tfsem check SESSION REWRITTEN --timeout T` and `tfsem run SESSION
--timeout T` of a session with critical sections or queues end in time?
Wall time of the whole process against its budget (docs/budgets.md).

- check: a session of 5 concurrent runs, each reading x, writing x + 1 and
  enqueueing what it read (one σ's enumeration takes about a minute),
  against the same program with a node renamed (no proof is attempted:
  every σ is enumerated);
- run-tensorflow: examples/sessions/queue_deadlock.session.json, --runs
  1000 on TensorFlow (each trial waits out a consumer's 2 s timeout);
- run-numpy: the same session, --runs 10000000 on the session machine.

Each run is `python -m tfsem ...` in a process of its own, timed from
before its start to its exit.  With `--baseline-commit C`, tfsem at C runs
the same command, alternating with this tree run by run (a command it
refuses says so).  Printed per (command, T): the median wall time, its
excess over T, every run's, the exit statuses, and the verdict or what the
report says.

    python benchmarks/session_budget.py --timeouts 2,5 --repeat 5 \\
        [--commands check,run-tensorflow,run-numpy] [--baseline-commit e4db0ec]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from grappler_budget import alternated, compared_sides, timed  # noqa: E402  (as there)

sys.path.insert(0, str(ROOT / "tests"))
# the test's queue session of n runs, and its rewrite with a node renamed
from test_check_blocking_session_budget import queue_session  # noqa: E402

SESSIONS = ROOT / "examples" / "sessions"


def command(which: str, timeout: float, work: Path) -> list[str]:
    base = [sys.executable, "-m", "tfsem"]
    if which == "check":
        s, r = queue_session(work, 5)
        return base + ["check", str(s), str(r), "--timeout", f"{timeout:g}", "--json"]
    runs = "1000" if which == "run-tensorflow" else "10000000"
    backend = "tensorflow" if which == "run-tensorflow" else "numpy"
    return base + ["run", str(SESSIONS / "queue_deadlock.session.json"), "--backend", backend,
                   "--runs", runs, "--timeout", f"{timeout:g}", "--json"]


def run_once(env: dict, which: str, timeout: float, limit: float, work: Path) -> dict:
    wall, rc, data = timed(command(which, timeout, work), env, limit)
    row = {"wall": wall, "rc": rc}
    try:
        doc = json.loads(data)
    except ValueError:
        row["says"] = "(no JSON: refused)" if rc == 2 else "(not JSON)"
        return row
    if which == "check":
        row["says"] = f"{doc.get('verdict')}, {doc.get('tried')} σ"
    else:
        n = doc.get("trials", doc.get("runs"))
        row["says"] = (f"{n} {'trials' if which == 'run-tensorflow' else 'runs'}"
                       if n is not None else doc.get("verdict"))
    if doc.get("reason") and (doc.get("budget") or doc.get("verdict") == "unknown"):
        row["says"] += f" ({doc['reason'][:90]})"
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeouts", default="2,5", help="budgets T, comma-separated (s)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--commands", default="check,run-tensorflow,run-numpy")
    ap.add_argument("--baseline-commit", default=None, metavar="COMMIT")
    ap.add_argument("--limit", type=float, default=300.0,
                    help="kill a run after this many seconds (counted as rc None)")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="tfsem-session-budget-"))
    sides = compared_sides(args.baseline_commit, work / "baseline")
    print(f"repeat {args.repeat}; load {os.getloadavg()[0]:.1f} at the start")
    for which in args.commands.split(","):
        for timeout in (float(t) for t in args.timeouts.split(",")):
            runs = alternated(sides, args.repeat,
                              lambda e: run_once(e, which, timeout, args.limit, work))
            for label, rows in runs.items():
                walls = [r["wall"] for r in rows]
                med = statistics.median(walls)
                print(f"{which}, T {timeout:g} s, {label}: wall median {med:.2f} s (past T "
                      f"{med - timeout:+.2f} s; runs {', '.join(f'{w:.2f}' for w in walls)}), "
                      f"exit {[r['rc'] for r in rows]}, {rows[-1].get('says')}; load "
                      f"{os.getloadavg()[0]:.1f}")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
