"""Start-up and `check` times of the `tfsem` command, side by side with
another build of tfsem (the previous release).

    python benchmarks/cli.py [--runs 7] [--baseline /path/to/other/venv/bin/tfsem]

Measures, for this tree (`python -m tfsem` with this interpreter) and the
baseline command, interleaved run by run so that both see the same load:

- the interpreter alone (`python -c "print()"`, the floor under every row);
- `tfsem COMMAND --help` for every command (start-up: what is imported before
  the parser can print);
- the README's first command, `tfsem check
  tests/cases/tensorflow/counter_drop_control_dependency.json` (an `unsound`
  verdict): with TensorFlow (its counterexample replayed on TensorFlow's
  executor when TensorFlow is installed) and with `--no-tensorflow`; `verdict
  s` is the time until the verdict's first line was printed, `total s` until
  the command ended.

Prints one Markdown table: medians of N runs (seconds) and the ratio new /
baseline.  Nothing is written anywhere.  The baseline is skipped when absent.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASE = "tests/cases/tensorflow/counter_drop_control_dependency.json"
COMMANDS = ["outcomes", "passes", "rewrite", "check", "generate", "run", "verify", "fuzz",
            "report", "serve", "import", "export", "grappler", "reduce", "completion"]


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """(seconds to the first line of stdout, seconds to the end, exit status,
    stderr) of one run."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdout.readline()
    first = time.perf_counter() - start
    _, err = proc.communicate(timeout=600)
    return first, time.perf_counter() - start, proc.returncode, err


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="runs per cell (median reported)")
    ap.add_argument("--baseline", default="/work/main/.venv/bin/tfsem",
                    help="the other tfsem command to compare with (default: the previous "
                         "release's, where it is installed)")
    ap.add_argument("--commands", default=",".join(COMMANDS),
                    help="the commands whose --help is timed (comma-separated)")
    ap.add_argument("--no-check", action="store_true", help="time --help only")
    args = ap.parse_args(argv)
    env = dict(os.environ)
    env.pop("TFSEM_VERBOSE", None)
    builds = {"new": [sys.executable, "-m", "tfsem"]}
    if Path(args.baseline).exists():
        builds["baseline"] = [args.baseline]
    else:
        print(f"(no baseline: {args.baseline} is absent)", file=sys.stderr)
    has_tf = importlib.util.find_spec("tensorflow") is not None
    cells: list[tuple[str, list[str]]] = [(f"`{c} --help`", [c, "--help"])
                                         for c in args.commands.split(",") if c]
    if not args.no_check:
        cells.append(("`check` README case, with TensorFlow" if has_tf else
                      "`check` README case (TensorFlow not installed)", ["check", CASE]))
        cells.append(("`check` README case, `--no-tensorflow`", ["check", CASE, "--no-tensorflow"]))
    print(f"{args.runs} runs per cell, medians; TensorFlow "
          f"{'installed' if has_tf else 'not installed'}; load {os.getloadavg()[0]:.1f} at start")
    head = "| command | new verdict s | new total s |"
    rule = "|---|---:|---:|"
    if "baseline" in builds:
        head += " previous verdict s | previous total s | new/previous (total) |"
        rule += "---:|---:|---:|"
    print(head)
    print(rule)
    failed = False
    # the floor: the interpreter and its site packages alone, nothing of tfsem
    floor = {"new": [sys.executable, "-c", "print()"]}
    if "baseline" in builds:
        python = Path(args.baseline).with_name("python3")
        floor["baseline"] = [str(python), "-c", "print()"] if python.exists() else floor["new"]
    for label, words in [("python alone (the floor)", None), *cells]:
        results: dict[str, list[tuple[float, float]]] = {b: [] for b in builds}
        for _ in range(args.runs):
            for b, cmd in builds.items():  # interleaved: both see the same load
                first, total, rc, err = timed(floor[b] if words is None else cmd + words, env)
                if rc not in (0, 1):
                    print(f"{b}: {label} exited {rc}: {err[-400:]}", file=sys.stderr)
                    failed = True
                results[b].append((first, total))
        med = {b: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs))
               for b, rs in results.items()}
        row = f"| {label} | {med['new'][0]:.2f} | {med['new'][1]:.2f} |"
        if "baseline" in med:
            ratio = med["new"][1] / med["baseline"][1] if med["baseline"][1] else float("nan")
            row += f" {med['baseline'][0]:.2f} | {med['baseline'][1]:.2f} | {ratio:.2f} |"
        print(row, flush=True)
    print(f"load {os.getloadavg()[0]:.1f} at the end")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
