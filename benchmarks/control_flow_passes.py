"""The control-flow passes under `tfsem verify` (docs/checking-control-flow.md).

    python benchmarks/control_flow_passes.py                  # 3 seeds, 60 s each
    python benchmarks/control_flow_passes.py --seeds 1 --budget 30 --passes xla-lift

For each built-in pass that acts on control flow and each seed, runs
`verify_pass(PASS, budget, seed=S)` (the four cells, the pass's own
generator) and prints one row: the claim, the judgement per cell, the time
to the first unsound finding (the unsound passes: target under 60 s), and
the programs judged, changed and proved sound (the sound passes: no
counterexample, and how much the campaign rested on).
"""

from __future__ import annotations

import argparse
import statistics

from tfsem.campaigns.verify import verify_pass
from tfsem.rewrites import builtin_passes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--passes", default="")
    args = ap.parse_args()
    passes = [n for n, p in builtin_passes().items() if p.control_flow]
    if args.passes:
        passes = [n for n in passes if n in args.passes.split(",")]
    print("pass          seed  first finding  programs  changed  proved  judgements")
    for name in passes:
        firsts = []
        for seed in range(1, args.seeds + 1):
            r = verify_pass(name, args.budget, seed=seed)
            first = min((f.first_after for f in r.findings if f.record.kind == "unsound"),
                        default=None)
            if first is not None:
                firsts.append(first)
            programs = sum(c.stats.programs for c in r.cells)
            changed = sum(c.stats.programs - c.stats.identical for c in r.cells)
            proved = sum(c.stats.sound for c in r.cells)
            print(f"{name:13s} {seed:4d}  {'-' if first is None else f'{first:.1f} s':>13s}  "
                  f"{programs:8d}  {changed:7d}  {proved:6d}  "
                  + ", ".join(f"{c.cell[0][0]}/{c.cell[1]}: {c.judgement}" for c in r.cells),
                  flush=True)
        if firsts:
            print(f"{name:13s} found under {len(firsts)} of {args.seeds} seeds, median "
                  f"{statistics.median(firsts):.1f} s", flush=True)


if __name__ == "__main__":
    main()
