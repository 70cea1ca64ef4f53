"""`tfsem generate --count N --seed S --out DIR`: random valid programs as files."""

from __future__ import annotations

import argparse
from pathlib import Path

from tfsem.cli import EXIT_OK, UsageError

from .common import MAX_NODES as DEFAULT_MAX_NODES
from .common import DTYPES, bounded_int, positive_int, print_json, seed_int


def add_parser(sub) -> None:
    p = sub.add_parser("generate", help="write random valid programs (the fuzzers' generator)",
                       description="Write N random valid tfsem.program/1 files.  The same "
                                   "seed and options give byte-identical files; program i "
                                   "depends only on the seed and i.")
    p.add_argument("--count", type=bounded_int(1, 1_000_000), required=True, help="how many programs")
    p.add_argument("--seed", type=seed_int, required=True, help="random seed (an integer)")
    p.add_argument("--out", required=True, help="directory to write prog_NNNN.json into")
    p.add_argument("--max-nodes", type=bounded_int(1, 10_000), default=DEFAULT_MAX_NODES,
                   help=f"at most K nodes per program (default {DEFAULT_MAX_NODES}, as verify and fuzz)")
    p.add_argument("--dtype", choices=DTYPES, default="int64",
                   help="dtype of variables, feeds and constants (default int64; --shape "
                        "grappler: int64, int32 or float32)")
    p.add_argument("--shape", choices=("general", "grappler"), default="general",
                   help="general: tfsem's fuzzers' generator (the default); grappler: programs "
                        "shaped like what Grappler's optimizers rewrite (arithmetic identities, "
                        "constant subgraphs, control dependencies, tf.group, Identity chains; "
                        "generators/grappler.py)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tfsem.generators.stats import summarize  # noqa: PLC0415
    from tfsem.generators.strategies import random_programs  # noqa: PLC0415
    from tfsem.oracle.jsonio import dumps, program_to_json  # noqa: PLC0415
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    shape = getattr(args, "shape", "general")
    if shape == "grappler":
        from tfsem.generators import grappler
        # (the "float32-edges" programs are the Grappler campaigns' own, not a --dtype)
        dtypes = [d for d in grappler.DTYPES if d in DTYPES]
        if args.dtype not in dtypes:
            raise UsageError(f"--shape grappler makes {', '.join(dtypes)} programs, "
                             f"not {args.dtype} (the general shape makes every dtype)")
        programs = grappler.random_programs(args.count, args.seed, args.max_nodes, args.dtype)
    else:
        programs = random_programs(args.count, args.seed, args.max_nodes, dtype=args.dtype)
    width = max(4, len(str(args.count - 1)))
    files = []
    for i, p in enumerate(programs):
        path = out / f"prog_{i:0{width}d}.json"
        path.write_text(dumps(program_to_json(p)) + "\n")
        files.append(str(path))
    summary = summarize(programs)
    if args.json:
        print_json({"out": str(out), "seed": args.seed, "max_nodes": args.max_nodes,
                    "dtype": args.dtype, "shape": shape, "summary": summary.to_json(),
                    "files": [Path(f).name for f in files]})
        return EXIT_OK
    print(f"wrote {len(files)} programs to {out}/ (seed {args.seed}, "
          f"max {args.max_nodes} nodes, {args.dtype}"
          + (", Grappler-shaped" if shape == "grappler" else "") + ")")
    for line in summary.lines():
        print(f"  {line}")
    return EXIT_OK
