"""Bug-finding benchmark: does the default `tfsem verify PASS` find each wrong
pass of benchmarks/wrong_passes.py, under every seed, and how fast?

    python benchmarks/bugfinding.py                       # the full table (long)
    python benchmarks/bugfinding.py --seeds 2 --passes drop-cross-var-edges,swap-writes
    python benchmarks/bugfinding.py --old /work/main      # beside a previous release

For each wrong pass and each seed (1..N), `tfsem verify FILE:ATTR --seed S`
runs as a user runs it, with the default budget (60 s over the four cells)
and the default program size; the run is stopped at the first finding that
contradicts the pass's claims (the status line `found ... (BUG)` on stderr)
and its time is read from that line: seconds since the command began
fuzzing (start-up and imports excluded, the same for both versions).  A run
that ends without one is a miss.  With `--old DIR`, DIR's `.venv/bin/tfsem`
(run from DIR, so its own code) is measured the same way, each seed right
after the new version's, so both see the same machine load.

The table: per pass, how many of the N seeds found it, the median and the
largest time to the first finding over the seeds that did, and the largest
shrunk counterexample among them (nodes, as the status line gives it), for
each version.  Targets
(issue 27): found under every seed, median under 10 s, for every pass.
`--json FILE` keeps every run (and `--resume` skips runs already in it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SUITE_FILE = HERE / "wrong_passes.py"

FOUND_LINE = re.compile(r"^\[\s*([0-9.]+)s\] found \S+ in .* \(BUG\).*?(?:\[(\d+) nodes\])?$")


def suite_names() -> list[str]:
    import importlib.util
    spec = importlib.util.spec_from_file_location("tfsem_wrong_passes", SUITE_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [p.name for p in module.SUITE]


def attr(name: str) -> str:
    return name.upper().replace("-", "_")


def run_once(tfsem: str, cwd: Path, name: str, seed: int, extra: list[str], cap: float) -> dict:
    """One `tfsem verify` run; stopped at the first BUG finding."""
    cmd = [tfsem, "verify", f"{SUITE_FILE}:{attr(name)}", "--seed", str(seed),
           "--status-every", "3600", *extra]
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    found_after = size = None
    try:
        for line in proc.stderr:
            m = FOUND_LINE.match(line)
            if m:
                found_after = float(m.group(1))
                size = int(m.group(2)) if m.group(2) else None
                break
            if time.monotonic() - started > cap:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        out, _ = proc.communicate()
    exit_status = proc.returncode if found_after is None else None
    weak = exit_status == 4
    return {"pass": name, "seed": seed, "found": found_after is not None,
            "found_after": found_after, "nodes": size, "exit": exit_status, "weak": weak,
            "wall": round(time.monotonic() - started, 1), "load": round(os.getloadavg()[0], 1)}


def summarize(runs: list[dict], names: list[str], versions: list[str], seeds: int) -> list[str]:
    head = f"{'wrong pass':<30}" + "".join(f"  {v + ' found':>10} {'median s':>8} {'max s':>6} {'nodes':>5}"
                                           for v in versions)
    lines = [head, "-" * len(head)]
    totals = {v: [0, []] for v in versions}
    for name in names:
        row = f"{name:<30}"
        for v in versions:
            rs = [r for r in runs if r["pass"] == name and r["version"] == v]
            hits = [r["found_after"] for r in rs if r["found"]]
            totals[v][0] += len(hits)
            totals[v][1].extend(hits)
            med = f"{statistics.median(hits):8.1f}" if hits else f"{'-':>8}"
            worst = f"{max(hits):6.1f}" if hits else f"{'-':>6}"
            sizes = [r["nodes"] for r in rs if r.get("nodes")]
            size = f"{max(sizes):5d}" if sizes else f"{'-':>5}"
            row += f"  {f'{len(hits)}/{len(rs)}':>10} {med} {worst} {size}"
        lines.append(row)
    lines.append("-" * len(head))
    row = f"{'all':<30}"
    for v in versions:
        n = sum(1 for r in runs if r["version"] == v)
        hits = totals[v][1]
        med = f"{statistics.median(hits):8.1f}" if hits else f"{'-':>8}"
        worst = f"{max(hits):6.1f}" if hits else f"{'-':>6}"
        row += f"  {f'{totals[v][0]}/{n}':>10} {med} {worst} {'':>5}"
    lines.append(row)
    lines.append("")
    for v in versions:
        rs = [r for r in runs if r["version"] == v]
        found = [r for r in rs if r["found"]]
        small = sum(1 for r in found if r.get("nodes") is not None and r["nodes"] <= 5)
        every = sum(1 for name in names
                    if (mine := [r for r in rs if r["pass"] == name])
                    and all(r["found"] for r in mine)
                    and statistics.median(r["found_after"] for r in mine) < 10)
        loads = [r["load"] for r in rs if r.get("load") is not None]
        lines.append(f"{v}: {every} of {len(names)} passes found under every seed with a median "
                     f"under 10 s; first counterexamples of at most 5 nodes: {small} of {len(found)}"
                     + (f"; load average {min(loads):.1f}-{max(loads):.1f} (median "
                        f"{statistics.median(loads):.1f})" if loads else ""))
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--passes", default=None, help="comma-separated pass names (default: the suite)")
    ap.add_argument("--old", default=None, metavar="DIR",
                    help="a previous release's checkout with its .venv (e.g. /work/main)")
    ap.add_argument("--only-old", action="store_true", help="measure the --old version only")
    ap.add_argument("--verify-args", default="", help="extra tfsem verify arguments (default none)")
    ap.add_argument("--cap", type=float, default=200.0, help="seconds before a run is given up")
    ap.add_argument("--json", default=None, metavar="FILE", help="write every run here")
    ap.add_argument("--resume", action="store_true", help="skip runs already in --json FILE")
    args = ap.parse_args(argv)

    names = suite_names()
    if args.passes:
        wanted = args.passes.split(",")
        unknown = [n for n in wanted if n not in names]
        if unknown:
            print(f"bugfinding.py: no wrong pass {', '.join(unknown)}", file=sys.stderr)
            return 2
        names = wanted
    versions: list[tuple[str, str, Path]] = []
    if not args.only_old:
        versions.append(("new", str(Path(sys.executable).with_name("tfsem")), ROOT))
    if args.old:
        old = Path(args.old)
        versions.append(("old", str(old / ".venv" / "bin" / "tfsem"), old))
    runs: list[dict] = []
    if args.resume and args.json and Path(args.json).exists():
        runs = json.loads(Path(args.json).read_text())["runs"]
    done = {(r["version"], r["pass"], r["seed"]) for r in runs}
    extra = args.verify_args.split()
    for name in names:
        for seed in range(1, args.seeds + 1):
            for label, tfsem, cwd in versions:
                if (label, name, seed) in done:
                    continue
                r = run_once(tfsem, cwd, name, seed, extra, args.cap)
                r["version"] = label
                runs.append(r)
                print(f"{label:>3} {name:<30} seed {seed}: "
                      + (f"found after {r['found_after']:.1f} s" if r["found"]
                         else f"not found (exit {r['exit']}, {r['wall']:.0f} s)"), flush=True)
                if args.json:
                    Path(args.json).write_text(json.dumps({"runs": runs}, indent=1))
    labels = [v[0] for v in versions]
    print()
    for line in summarize(runs, names, labels, args.seeds):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
