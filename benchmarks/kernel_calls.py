"""TensorFlow's kernels as tfsem calls them, this tree against a baseline commit.

    python benchmarks/kernel_calls.py --baseline-commit C [--calls 200] [--passes 3] [--each]

Each pass is a fresh process per version (the versions alternated pass by
pass: A B, B A, ...), each version a copy laid out alike and imported
from PYTHONPATH (this tree's files as they are now, tracked or not
ignored).  A process starts the kernels' child
(oracle/kernels.py), waits for TensorFlow, then for each case makes
--calls evaluations through `kernels.evaluate`, each on inputs not seen
before (nothing is answered from the cache): the wall time of each call in
the parent, and the child's CPU time over the case (Linux: /proc's schedstat).
Printed: per case the medians over the passes of the median call and of
the child's CPU per call, and their ratios, then the same for the parent's
CPU per call (its process time over the case).  The cases are the shapes the
real corpus sends: MobileNetV2's activations (0.4-1.6 MB), an MLP's small
matrices.  Needs TensorFlow.  A pass's numbers vary by 10-15% on a loaded
machine, and the child's CPU on the 1.6 MB case is bimodal (about 0.9 or
2 ms, in either version): use passes enough (8) before reading a ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MARK = "KERNEL_CALLS "

#: (name, op, [input shapes], attrs): float32 inputs of each shape (a
#: tuple); a list is an int32 input of those values, the same in every call
CASES = [
    ("Sigmoid 64x64", "Sigmoid", [(64, 64)], {"T": "DT_FLOAT"}),
    ("MatMul 32x64 by 64x64", "MatMul", [(32, 64), (64, 64)], {"T": "DT_FLOAT"}),
    ("Sum of 32x64 over axis 0", "Sum", [(32, 64), [0]],
     {"T": "DT_FLOAT", "Tidx": "DT_INT32", "keep_dims": False}),
    ("TanhGrad 32x64", "TanhGrad", [(32, 64), (32, 64)], {"T": "DT_FLOAT"}),
    ("MatMul 64x128 by 128x64", "MatMul", [(64, 128), (128, 64)], {"T": "DT_FLOAT"}),
    ("Relu6 1x32x32x96 (0.4 MB)", "Relu6", [(1, 32, 32, 96)], {"T": "DT_FLOAT"}),
    ("Relu6Grad 4x32x32x96 (1.6 MB)", "Relu6Grad", [(4, 32, 32, 96), (4, 32, 32, 96)],
     {"T": "DT_FLOAT"}),
]


def child(calls: int) -> None:
    import numpy as np
    from tfsem.oracle import kernels
    kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)   # (TensorFlow up)
    pid = kernels._client.proc.pid

    def child_cpu() -> float:
        # (each thread's time on the CPU in nanoseconds, /proc's schedstat:
        # the stat file's clock ticks, 10 ms each, were 50 µs a call over 200)
        total = 0
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                pass
        return total / 1e9

    rng = np.random.default_rng(0)
    rows = {}
    for name, op, shapes, attrs in CASES:
        base = [np.array(s, np.int32) if isinstance(s, list)
                else rng.standard_normal(s).astype(np.float32) for s in shapes]
        walls = []
        cpu, own = child_cpu(), time.process_time()
        for k in range(calls):
            # (new inputs: no cache hit; the int32 ones stay as they are)
            inputs = [b if b.dtype == np.int32 else b + np.float32(k) for b in base]
            started = time.perf_counter()
            kernels.evaluate(op, inputs, attrs, 1)
            walls.append(time.perf_counter() - started)
        rows[name] = {"call_ms": 1e3 * statistics.median(walls),
                      "child_cpu_ms": 1e3 * (child_cpu() - cpu) / calls,
                      "parent_cpu_ms": 1e3 * (time.process_time() - own) / calls}
    kernels.shutdown()
    print(MARK + json.dumps(rows), flush=True)


def _this_tree(root: Path, into: Path) -> Path:
    """The working tree (its files tracked or not ignored, as they are now)
    laid out as `grappler.baseline_tree` lays out a commit."""
    import shutil
    import tomllib
    files = subprocess.run(["git", "-C", str(root), "ls-files", "-co", "--exclude-standard", "-z"],
                           check=True, capture_output=True).stdout.decode().split("\0")
    src = into / "src"
    for name in filter(None, files):
        if (root / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, src / name)
    dirs = tomllib.loads((src / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    pkg = into / "pkg"
    shutil.copytree(src / dirs["tfsem"], pkg / "tfsem")
    for name, folder in dirs.items():
        parts = name.split(".")
        if len(parts) == 2:
            target = pkg / "tfsem" / parts[1]
            if not target.exists():
                target.symlink_to(src / folder, target_is_directory=True)
    return pkg


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--baseline-commit", required=True, metavar="COMMIT")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--each", action="store_true",
                    help="print each pass's numbers (call / child CPU / parent CPU, ms)")
    args = ap.parse_args(argv)
    if args.child:
        child(args.calls)
        return 0
    sys.path.insert(0, str(HERE))
    from grappler import ROOT, baseline_tree
    base = baseline_tree(args.baseline_commit, Path(tempfile.mkdtemp(prefix="tfsem-kernel-calls-")))
    this = _this_tree(ROOT, Path(tempfile.mkdtemp(prefix="tfsem-kernel-calls-this-")))
    env = dict(os.environ, TFSEM_TF_KERNELS="1")
    # (both versions laid out alike and imported from PYTHONPATH: nothing
    # but their files differs, and a run of a commit against itself, A/A,
    # is the same command)
    envs = {"baseline": dict(env, PYTHONPATH=str(base)), "this": dict(env, PYTHONPATH=str(this))}
    # (each process runs in its own tree's folder, not this repository's: the
    # kernels' child starts as ``python -m tfsem.oracle.kernel_worker``, which
    # looks first in the working directory, and from this repository's
    # root the baseline's child imported this tree's worker)
    trees = {"baseline": base, "this": this}
    runs: dict[str, list] = {"baseline": [], "this": []}
    for k in range(args.passes):
        for version in (("baseline", "this") if k % 2 == 0 else ("this", "baseline")):
            out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child",
                                  "--baseline-commit", "-", "--calls", str(args.calls)],
                                 env=envs[version], capture_output=True, text=True,
                                 cwd=str(trees[version].parent))
            lines = [ln for ln in out.stdout.splitlines() if ln.startswith(MARK)]
            if not lines:
                print(f"the {version} process failed (exit {out.returncode}):\n{out.stderr[-3000:]}",
                      file=sys.stderr)
                return 1
            runs[version].append(json.loads(lines[0][len(MARK):]))
            if args.each:
                print(f"pass {k + 1}, {version}: " + ", ".join(
                    f"{name} {row['call_ms']:.3f}/{row['child_cpu_ms']:.3f}/{row['parent_cpu_ms']:.3f}"
                    for name, row in runs[version][-1].items()), flush=True)
    print(f"{args.passes} passes per version, {args.calls} calls per case; medians over the passes")
    print("| case | call, baseline | call, this tree | ratio | child CPU per call, baseline "
          "| this tree | ratio | parent CPU per call, baseline | this tree | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, *_ in CASES:
        cells = []
        for key in ("call_ms", "child_cpu_ms", "parent_cpu_ms"):
            b = statistics.median(r[name][key] for r in runs["baseline"])
            t = statistics.median(r[name][key] for r in runs["this"])
            cells += [f"{b:.3f} ms", f"{t:.3f} ms", f"{t / b:.2f}" if b else "-"]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
