"""The real corpus's messages to TensorFlow's kernels' child, replayed: this
tree against a baseline commit.

    python benchmarks/kernel_replay.py --record FILE
    python benchmarks/kernel_replay.py --calls FILE --baseline-commit C [--passes 6]

``--record`` runs every check of the real corpus (timeout 10 s, kernels on)
and writes each message its checks sent to the kernels' child (a call or a
batch: op, input arrays, attributes, outputs) to FILE (about 300 MB).
``--calls`` replays them: each pass is a fresh process per version (the
versions alternated pass by pass: A B, B A, ...), run in an empty folder
with the version's tfsem on PYTHONPATH (`grappler.baseline_tree`), which
starts its kernels' child, sends the first 300 messages once to warm it,
then every message through the client (`_Client.call`, `call_batch`: no
cache in between).  Printed per version: medians over the passes of the
replay's wall time, the parent's CPU, the child's CPU (Linux: /proc's
schedstat) and the median message's round trip, and their ratios; and
whether every pass of both versions gave the same answers, bit for bit (a
digest of every answer's kind, dtypes, shapes and bytes).  Needs
TensorFlow.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MARK = "KERNEL_REPLAY "


def record(path: str) -> None:
    sys.path.insert(0, str(HERE))
    import grappler as B
    import numpy as np
    from tfsem.checking import check_rewrite
    from tfsem.graphdef import grappler as g
    from tfsem.oracle import kernels
    g.tensorflow()
    kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)
    cls = kernels._Client
    one, batch = cls.call, cls.call_batch
    messages = []

    def call(self, op, arrays, attrs, n_out):
        messages.append([(op, [a.copy() for a in arrays], dict(attrs), n_out)])
        return one(self, op, arrays, attrs, n_out)

    def call_batch(self, calls):
        messages.append([(op, [a.copy() for a in arrays], dict(attrs), n)
                         for op, arrays, attrs, n in calls])
        return batch(self, calls)

    cls.call, cls.call_batch = call, call_batch
    for e in B._entries("real"):
        gd = g.as_graph_def(os.path.join(e["base"], e["file"]))
        original = B._import(gd, e)
        for o in B.REAL_OPTIMIZERS:
            rw = B._import(g.run_grappler(g.placed(gd), e["fetches"] + e["targets"], o).graph_def,
                           e)
            check_rewrite(original, rw, timeout=10)
    with open(path, "wb") as f:
        pickle.dump(messages, f, protocol=5)
    print(f"{len(messages)} messages, {sum(map(len, messages))} evaluations written to {path}")


def replay(path: str) -> None:
    import numpy as np
    import tfsem
    from tfsem.oracle import kernels
    with open(path, "rb") as f:
        messages = pickle.load(f)
    kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)
    c = kernels._get_client()

    def child_cpu() -> float:
        total = 0
        for task in Path(f"/proc/{c.proc.pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                pass
        return total / 1e9

    def send(calls):
        return [c.call(*calls[0])] if len(calls) == 1 else c.call_batch(calls)

    for calls in messages[:300]:
        send(calls)
    child, own, started = child_cpu(), time.process_time(), time.perf_counter()
    walls, answers = [], []
    for calls in messages:
        t = time.perf_counter()
        answers.append(send(calls))
        walls.append(time.perf_counter() - t)
    wall = time.perf_counter() - started
    own, child = time.process_time() - own, child_cpu() - child
    h, ok = hashlib.sha256(), 0
    for answer in answers:
        for a in answer:
            h.update(repr(a[0]).encode())
            if a[0] != "ok":
                h.update(repr(a[1:]).encode())
                continue
            ok += 1
            for r in a[1]:
                h.update(f"{r.dtype}{r.shape}".encode())
                h.update(repr(list(r.reshape(-1))).encode() if r.dtype.kind == "O"
                         else r.tobytes())
    kernels.shutdown()
    print(MARK + json.dumps({"tfsem": tfsem.__file__, "wall": wall, "parent_cpu": own,
                             "child_cpu": child, "median_ms": statistics.median(walls) * 1e3,
                             "ok": ok, "digest": h.hexdigest()}), flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", metavar="FILE")
    ap.add_argument("--calls", metavar="FILE")
    ap.add_argument("--replay", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--baseline-commit", metavar="COMMIT")
    ap.add_argument("--passes", type=int, default=6)
    args = ap.parse_args(argv)
    if args.record:
        record(args.record)
        return 0
    if not args.calls:
        ap.error("--record FILE or --calls FILE")
    if args.replay:
        replay(args.calls)
        return 0
    if not args.baseline_commit:
        ap.error("--calls needs --baseline-commit")
    if not os.path.exists(args.calls):
        print(f"kernel_replay: {args.calls}: no such file (write it with --record)",
              file=sys.stderr)
        return 2
    sys.path.insert(0, str(HERE))
    import grappler as B
    base = B.baseline_tree(args.baseline_commit, Path(tempfile.mkdtemp(prefix="tfsem-replay-")))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    versions = {"baseline": dict(env, PYTHONPATH=str(base)), "this tree": env}
    rows: dict = {name: [] for name in versions}
    cwd = tempfile.mkdtemp(prefix="tfsem-replay-cwd-")
    for k in range(args.passes):
        order = list(versions) if k % 2 == 0 else list(versions)[::-1]
        for name in order:
            out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--replay",
                                  "--calls", os.path.abspath(args.calls)],
                                 env=versions[name], cwd=cwd, capture_output=True, text=True)
            line = next((x for x in out.stdout.splitlines() if x.startswith(MARK)), None)
            if line is None:
                print(out.stderr[-2000:], file=sys.stderr)
                return 1
            rows[name].append(json.loads(line[len(MARK):]))
    print(f"{args.passes} passes per version; medians over the passes")
    print("| | baseline | this tree | ratio |")
    print("|---|---:|---:|---:|")
    for key, label in (("wall", "replay's wall, s"), ("parent_cpu", "parent's CPU, s"),
                       ("child_cpu", "child's CPU, s"), ("median_ms", "median message, ms")):
        a = statistics.median(r[key] for r in rows["baseline"])
        b = statistics.median(r[key] for r in rows["this tree"])
        print(f"| {label} | {a:.3f} | {b:.3f} | {b / a:.2f} |")
    for name, rs in rows.items():
        print(f"{name}, each pass (wall, parent CPU, child CPU): " +
              ", ".join(f"({r['wall']:.2f}, {r['parent_cpu']:.2f}, {r['child_cpu']:.2f})"
                        for r in rs))
    digests = {r["digest"] for rs in rows.values() for r in rs}
    oks = {r["ok"] for rs in rows.values() for r in rs}
    print(f"answers: {'the same, bit for bit' if len(digests) == 1 else 'DIFFERENT'} in every "
          f"pass of both versions ({', '.join(map(str, sorted(oks)))} results)")
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
