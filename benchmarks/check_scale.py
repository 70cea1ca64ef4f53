"""Benchmark: the checker on generated programs of 20 to 160 nodes (issue 17).

    python benchmarks/check_scale.py [--sizes 20,40,80,160] [--programs 10]
        [--timeout 10] [--seed 0] [--no-structural | --compare | --engines E,...]
        [--baseline-max-size 40] [--per-pass]

Programs are `tfsem generate --max-nodes K` programs
(`random_programs(n, seed, max_nodes=K)`), rewritten by every built-in pass;
a rewrite that leaves the program unchanged is not checked (the checker
answers those at once) and is counted apart.  The four cells (atomic /
decomposed x outputs+state / outputs) are rotated over (program, pass), as in
the issue's measurement.  For each size and engine: median and p90 time to
verdict, the share of `unknown` and of `no-counterexample`, the share decided
by the structural rule (checking/structural.py), and, among the checks of a
pass that claims `sound` in that cell, how many ended `sound`.

`--baseline GITREF` checks every rewrite a second time with the checker of
an earlier commit (the previous release), side by side in the same run: that
commit's tree is extracted with `git archive` and its checker runs in a child
process, fed the same programs and rewrites (as JSON) right after this
release's check of each, so both see the same load; its rows are labelled
`baseline GITREF`.

Engines (`--engines`, comma-separated): `refute` (the checker as it is: the
structural rule with its second-round extensions, the refutation stage of
checking/refute.py, the symbolic search), `round1` (the same with the
structural rule's first round only: no atomic splits, moved or unobserved
Reads, or Reads merged by data inputs; `structural.EXTENSIONS` off),
`structural` (the first-round rule without the refutation stage), `previous`
(neither the rule nor the stage: the engine before issue 17).
`--no-structural` runs `previous` only; `--compare` runs `refute` and
`round1` on the same checks, one after the other, so the tables come from one
run (engines other than the first only up to `--baseline-max-size` nodes,
since beyond it most of their checks run into the timeout).  A last column
says how many checks the refutation stage decided (`unsound` found by it; how many by its first run, before the
symbolic search, and how many list projections of the original's outcomes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter, defaultdict

import subprocess
import tempfile
from pathlib import Path

from tfsem.checking import check as check_module
from tfsem.checking import structural as structural_module
from tfsem.checking import check_rewrite
from tfsem.generators.strategies import random_programs
from tfsem.rewrites import builtin_passes

SETTINGS = [("atomic", "outputs+state"), ("atomic", "outputs"),
            ("decomposed", "outputs+state"), ("decomposed", "outputs")]


ROOT = Path(__file__).resolve().parent.parent

#: the child that checks with the baseline's checker: one JSON request per
#: line, one JSON answer per line
_WORKER = r"""
import json, sys, time
from tfsem.checking import check_rewrite
from tfsem.oracle.jsonio import program_from_json
for line in sys.stdin:
    r = json.loads(line)
    p = program_from_json(r["original"])
    t = time.perf_counter()
    v = check_rewrite(p, r["rewritten"], r["semantics"], r["observe"], timeout=r["timeout"],
                      backends=False)
    seconds = time.perf_counter() - t
    print(json.dumps({"verdict": v.verdict, "reason": v.reason, "seconds": seconds,
                      "stats": json.loads(json.dumps(v.stats, default=str))}), flush=True)
"""


class Baseline:
    """The checker of commit `ref`, in a child process."""

    def __init__(self, ref: str, into: str):
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True)
        if archive.returncode != 0:
            raise SystemExit(f"--baseline {ref}: git archive failed: "
                             f"{archive.stderr.decode().strip()}")
        tree = Path(into) / "tree"
        tree.mkdir()
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
        # the installed layout: tfsem/ with its subpackages (pyproject's package-dir)
        pkg = Path(into) / "path" / "tfsem"
        pkg.parent.mkdir()
        pkg.symlink_to(tree / "tfsem")
        for sub in ("oracle", "generators", "rewrites", "checking", "backends", "campaigns",
                    "reports", "service", "graphdef"):
            if (tree / sub).is_dir() and not (tree / "tfsem" / sub).exists():
                (tree / "tfsem" / sub).symlink_to(tree / sub)
        env = dict(os.environ, PYTHONPATH=str(pkg.parent))
        self.proc = subprocess.Popen([sys.executable, "-c", _WORKER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env,
                                     cwd=str(into))
        self.ref = ref

    def check(self, p, q, semantics: str, observe: str, timeout: float):
        from tfsem.oracle.jsonio import program_to_json
        request = {"original": program_to_json(p), "rewritten": program_to_json(q),
                   "semantics": semantics, "observe": observe, "timeout": timeout}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"--baseline {self.ref}: its checker exited "
                             f"(status {self.proc.wait()})")
        answer = json.loads(line)
        return answer["seconds"], _Answer(answer["verdict"], answer["reason"], answer["stats"])

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


class _Answer:
    def __init__(self, verdict: str, reason: str, stats: dict):
        self.verdict, self.reason, self.stats = verdict, reason, stats


def p90(values: list[float]) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))] if values else 0.0


class Tally:
    def __init__(self) -> None:
        self.times: list[float] = []
        self.verdicts: Counter = Counter()
        self.structural = 0
        self.refuted = 0
        self.refuted_first = 0     # ... by its first run, before the symbolic search
        self.projected = 0         # ... listing projections of the original's outcomes
        self.claimed = 0
        self.claimed_sound = 0

    def add(self, seconds: float, verdict, claim: str | None) -> None:
        self.times.append(seconds)
        self.verdicts[verdict.verdict] += 1
        self.structural += verdict.stats.get("path") == "structural"
        found = verdict.stats.get("refute", {}).get("found")
        self.refuted += bool(found)
        self.refuted_first += found == "first"
        self.projected += bool(found) and "original_projected" in verdict.stats
        if claim == "sound":
            self.claimed += 1
            self.claimed_sound += verdict.verdict == "sound"

    def row(self, label: str) -> str:
        n = len(self.times)
        if not n:
            return f"| {label} | 0 | | | | | | | | |"
        pct = lambda k: f"{100.0 * k / n:.1f}%"   # noqa: E731
        return (f"| {label} | {n} | {1000 * statistics.median(self.times):.1f} | "
                f"{1000 * p90(self.times):.1f} | {pct(self.verdicts['unknown'])} | "
                f"{pct(self.verdicts['no-counterexample'])} | {pct(self.structural)} | "
                f"{self.claimed_sound}/{self.claimed} | "
                f"S{self.verdicts['sound']} U{self.verdicts['unsound']} | {pct(self.refuted)} "
                f"({self.refuted_first} first, {self.projected} projected) |")


HEADER = ("| size, engine | checks | median ms | p90 ms | unknown | no-counterexample | "
          "structural | claimed sound -> sound | verdicts | refuted |\n"
          "|---|---|---|---|---|---|---|---|---|---|")
ENGINES = ("refute", "round1", "structural", "previous")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="20,40,80,160")
    ap.add_argument("--programs", type=int, default=10, help="programs per size (1-1000)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per check (0.1-600)")
    ap.add_argument("--seed", type=int, default=0)
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--no-structural", action="store_true",
                       help="the previous engine only (the structural rule disabled)")
    group.add_argument("--compare", action="store_true",
                       help="refute and round1 on the same checks, side by side")
    group.add_argument("--engines", default=None,
                       help=f"comma-separated, from {', '.join(ENGINES)} (default: refute)")
    ap.add_argument("--baseline-max-size", type=int, default=40,
                    help="with --compare, run the previous engine up to this size only")
    ap.add_argument("--per-pass", action="store_true", help="also a table per pass")
    ap.add_argument("--baseline", metavar="GITREF", default=None,
                    help="also check each rewrite with the checker of commit GITREF (the "
                         "previous release), side by side")
    ap.add_argument("--log", metavar="FILE", default=None,
                    help="write one JSON line per check (size, program, pass, cell, engine, "
                         "verdict, reason, seconds, σ tried) to FILE")
    args = ap.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        ap.error(f"--sizes: comma-separated integers, got {args.sizes!r}")
    if any(not 1 <= s <= 2000 for s in sizes):
        ap.error("--sizes: each size between 1 and 2000")
    if not 1 <= args.programs <= 1000:
        ap.error("--programs: between 1 and 1000")
    if not 0.1 <= args.timeout <= 600:
        ap.error("--timeout: between 0.1 and 600 seconds")

    if args.engines is not None:
        engines = [e.strip() for e in args.engines.split(",") if e.strip()]
        bad = [e for e in engines if e not in ENGINES]
        if bad or not engines or len(set(engines)) != len(engines):
            ap.error(f"--engines: distinct names from {', '.join(ENGINES)}, got {args.engines!r}")
    else:
        engines = ["previous"] if args.no_structural else \
            ["refute", "round1"] if args.compare else ["refute"]
    passes = builtin_passes()
    baseline = None
    tmp = None
    if args.baseline is not None:
        tmp = tempfile.TemporaryDirectory()
        baseline = Baseline(args.baseline, tmp.name)
        engines = engines + [f"baseline {args.baseline}"]
    started = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"timeout {args.timeout:g} s, {args.programs} programs per size, seed {args.seed}, "
          f"{len(passes)} passes, cells rotated, load average {load:.1f} at start")
    print(HEADER)
    per_pass: dict[tuple[int, str, str], Tally] = defaultdict(Tally)
    log = open(args.log, "w") if args.log else None
    for size in sizes:
        programs = random_programs(args.programs, args.seed, max_nodes=size)
        nodes = statistics.median(len(p.nodes) for p in programs)
        tallies = {e: Tally() for e in engines}
        unchanged = 0
        for i, p in enumerate(programs):
            for j, (name, ps) in enumerate(passes.items()):
                q = ps.function(p)
                if q == p:
                    unchanged += 1
                    continue
                semantics, observe = SETTINGS[(i + j) % 4]
                claim = ps.claim(semantics, observe)
                for engine in engines:
                    if engine.startswith("baseline "):
                        seconds, v = baseline.check(p, q, semantics, observe, args.timeout)
                        tallies[engine].add(seconds, v, claim)
                        per_pass[(size, name, engine)].add(seconds, v, claim)
                        if log is not None:
                            log.write(json.dumps({
                                "size": size, "program": i, "nodes": len(p.nodes), "pass": name,
                                "semantics": semantics, "observe": observe, "engine": engine,
                                "verdict": v.verdict, "reason": v.reason,
                                "seconds": round(seconds, 4), "tried": v.stats.get("tried"),
                                "refute_tried": v.stats.get("refute_tried"),
                                "path": v.stats.get("path"), "refute": v.stats.get("refute")}) + "\n")
                            log.flush()
                        continue
                    if engine != engines[0] and size > args.baseline_max_size:
                        continue
                    check_module.REFUTE = engine in ("refute", "round1")
                    structural_module.EXTENSIONS = engine == "refute"
                    t = time.perf_counter()
                    try:
                        v = check_rewrite(p, q, semantics, observe, timeout=args.timeout,
                                          structural=engine != "previous", backends=False)
                    finally:
                        check_module.REFUTE = True
                        structural_module.EXTENSIONS = True
                    seconds = time.perf_counter() - t
                    tallies[engine].add(seconds, v, claim)
                    if log is not None:
                        log.write(json.dumps({
                            "size": size, "program": i, "nodes": len(p.nodes), "pass": name,
                            "semantics": semantics, "observe": observe, "engine": engine,
                            "verdict": v.verdict, "reason": v.reason, "seconds": round(seconds, 4),
                            "tried": v.stats.get("tried"), "refute_tried": v.stats.get("refute_tried"),
                            "path": v.stats.get("path"), "refute": v.stats.get("refute")}) + "\n")
                        log.flush()
                    per_pass[(size, name, engine)].add(seconds, v, claim)
                    if v.verdict == "unsound" and claim == "sound":
                        print(f"  CONTRADICTION: {name} on program {i} ({semantics}, {observe}), "
                              f"{engine}", file=sys.stderr)
        for engine in engines:
            if tallies[engine].times:
                print(tallies[engine].row(f"{size} ({nodes:g}), {engine}"), flush=True)
        print(f"|   ({unchanged} unchanged rewrites not checked) |||||||||", flush=True)
    if args.per_pass:
        print()
        print(HEADER.replace("size, engine", "size, pass, engine"))
        for (size, name, engine), tally in sorted(per_pass.items()):
            print(tally.row(f"{size}, {name}, {engine}"))
    if baseline is not None:
        baseline.close()
        tmp.cleanup()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"(total {time.perf_counter() - started:.0f} s, load average {load:.1f} at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
