"""Benchmark of the numpy replay that confirms `unsound` verdicts (needs TensorFlow).

    python benchmarks/confirm_replay.py --capture FILE [--bench-json ROWS.json]
                                        [--graphs a,b] [--optimizers x,y] [--timeout 10]
    python benchmarks/confirm_replay.py --calls FILE [--baseline-commit COMMIT]
                                        [--repeat 3] [--graphs a,b]

`--capture` checks Grappler's rewrites of the real corpus (the unsound rows
of a grappler.py `--json` file, or every pair of --graphs x --optimizers)
with `check_rewrite` (--timeout per check, TensorFlow's kernels on), and
records the arguments of every confirmation the checker asks of the array
back ends (backends/confirm.py `confirm_details`, backends/controlflow.py
`confirm_control_flow`) into FILE (a pickle: programs, σ, schedules, the
oracle's outcome sets), each original one object for its checks, as the
checker has it.

Each check's CPU and its confirmations' are printed, and in total the
confirmations' CPU and the cyclic collector's inside them.

`--calls FILE` runs those confirmations again, on numpy, in the order they
were made (one pass = every check's confirmation, sessions and tables
started cold), `--repeat` passes per version: this tree's back ends and,
with `--baseline-commit C`, those of commit C (its backends/ exported with
`git archive`, imported under another package name, on this tree's oracle)
in the same process, alternating which goes first (A B, B A, ...).  Each
confirmation must give the same answers (confirmed or not, and why) in
both.  TensorFlow's kernel cache is warmed by one unmeasured pass first (in
a check the oracle has run those kernels on the same arguments before).
Prints, per check and in total, the median CPU seconds of this process
(`time.process_time`, less sensitive to the machine's other load than the
wall clock, which is printed too) per version and their ratio.  The
recorded data stays in the garbage collector's generations, as a check's
heap is (a collection walks it); `--freeze` freezes it out of them once
loaded (`gc.freeze`), as a process that froze objects of its own: then
each confirmation counts those millions of frozen objects
(`gc.get_freeze_count` walks them: oracle/collector.py asks whether any
are frozen, not to thaw them).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _frozen_maps():
    """The program's immutable dict classes: unpickled with dict's
    __setitem__ (pickle fills a dict subclass item by item)."""
    from tfsem.oracle import program as PG
    return [c for c in vars(PG).values()
            if isinstance(c, type) and issubclass(c, dict) and c is not dict]


def _function_tables() -> dict:
    """id(Function) -> where to find it again, for every Function a program
    may hold: the registry's (by name, the flush-to-zero variants among
    them) and those an op of oracle/opdefs keeps in its module that the
    registry holds no longer under their name (FloorMod's, whose registered
    entry is the kernel's fallback).  Their implementations are local
    functions, which pickle cannot name: a Function is pickled as where it
    lives (`_function_at`) instead."""
    import importlib
    import pkgutil
    from tfsem.oracle import functions as fns
    from tfsem.oracle import opdefs
    where: dict = {}
    for name, f in fns.registered(None).items():
        where[id(f)] = ("registry", name)
    for info in pkgutil.iter_modules(opdefs.__path__):
        module = importlib.import_module(f"tfsem.oracle.opdefs.{info.name}")
        for attr, value in vars(module).items():
            if isinstance(value, fns.Function):
                where.setdefault(id(value), ("module", module.__name__, attr))
            elif isinstance(value, dict):
                for key, item in value.items():
                    if isinstance(item, fns.Function):
                        where.setdefault(id(item), ("table", module.__name__, attr, key))
    return where


def _function_at(kind: str, *path):
    """The Function `_function_tables` noted at `path` (unpickling)."""
    import importlib
    from tfsem.oracle import functions as fns
    if kind == "registry":
        return fns.get(path[0])
    value = getattr(importlib.import_module(path[0]), path[1])
    return value if kind == "module" else value[path[2]]


def dump_calls(calls: list, path: str) -> None:
    """`calls` pickled into `path`, each Function by where it lives."""
    from tfsem.oracle import functions as fns
    where = _function_tables()

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj):
            if isinstance(obj, fns.Function):
                at = where.get(id(obj))
                if at is not None:
                    return _function_at, at
            return NotImplemented

    with open(path, "wb") as f:
        Pickler(f, protocol=pickle.HIGHEST_PROTOCOL).dump(calls)


def load_calls(path: str) -> list[dict]:
    classes = _frozen_maps()
    saved = [(c, c.__setitem__) for c in classes]
    for c in classes:
        c.__setitem__ = dict.__setitem__
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    finally:
        for c, setitem in saved:
            c.__setitem__ = setitem


def capture(args) -> int:
    import grappler as B
    import numpy as np
    from tfsem.checking import check_rewrite
    from tfsem.graphdef import grappler as g
    from tfsem.oracle import kernels
    import tfsem.backends.confirm as BC
    import tfsem.backends.controlflow as BCF
    g.tensorflow()
    if kernels.enabled():
        kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)
    entries = {e["file"]: e for e in B._entries("real")}
    if args.bench_json:
        rows = json.loads(Path(args.bench_json).read_text())["rows"]
        pairs = [(r["graph"], r["optimizer"]) for r in rows
                 if r["versions"][-1].get("verdict") == "unsound"]
    else:
        stems = args.graphs.split(",") if args.graphs else None
        files = [f for f in entries if stems is None or Path(f).stem in stems]
        pairs = [(f, o) for f in files
                 for o in (args.optimizers.split(",") if args.optimizers
                           else B.REAL_OPTIMIZERS)]
    calls: list[dict] = []
    current: dict = {}
    real_details, real_cf = BC.confirm_details, BCF.confirm_control_flow
    # (the confirmations' share of each check's CPU, and the collections
    # of the cyclic collector that fall inside them)
    spent = {"confirm": 0.0, "gc": 0.0, "collections": 0, "inside": False, "start": 0.0}

    def collections(phase, _info):
        if phase == "start":
            spent["start"] = time.process_time()
        elif spent["inside"]:
            spent["gc"] += time.process_time() - spent["start"]
            spent["collections"] += 1
    gc.callbacks.append(collections)

    def timed(real, *a, **k):
        cpu = time.process_time()
        spent["inside"] = True
        try:
            return real(*a, **k)
        finally:
            spent["inside"] = False
            spent["confirm"] += time.process_time() - cpu

    def details(*a, **k):
        r = timed(real_details, *a, **k)
        calls.append(dict(kind="dataflow", key=current["key"], args=a, kwargs=k,
                          result=[(c.backend, c.confirmed) for c in r]))
        return r

    def control_flow(*a, **k):
        r = timed(real_cf, *a, **k)
        calls.append(dict(kind="control-flow", key=current["key"], args=a, kwargs=k,
                          result=[(c.backend, c.confirmed) for c in r]))
        return r
    BC.confirm_details, BCF.confirm_control_flow = details, control_flow
    originals: dict = {}
    totals = {"checks": 0.0, "unsound": 0.0}
    for name, opt in pairs:
        e = entries[name]
        gd = g.as_graph_def(Path(e["base"]) / e["file"])
        if name not in originals:
            originals[name] = B._import(gd, e)
        res = g.run_grappler(g.placed(gd), e["fetches"] + e["targets"], opt)
        rewritten = B._import(res.graph_def, e)
        current["key"] = (name, opt)
        before, cpu = spent["confirm"], time.process_time()
        v = check_rewrite(originals[name], rewritten, timeout=args.timeout)
        cpu = time.process_time() - cpu
        totals["checks"] += cpu
        totals["unsound"] += cpu if v.verdict == "unsound" else 0.0
        print(f"{name} {opt}: {v.verdict} ({v.stats.get('path')}), confirmed on "
              f"{', '.join(v.confirmed)}; CPU {cpu:.3f} s, confirmations "
              f"{spent['confirm'] - before:.3f} s", flush=True)
    dump_calls(calls, args.capture)
    print(f"{len(calls)} confirmations recorded in {args.capture}")
    print(f"CPU: checks {totals['checks']:.2f} s (the unsound ones {totals['unsound']:.2f} s), "
          f"of it the confirmations on the array back ends {spent['confirm']:.2f} s, of "
          f"those the cyclic collector {spent['gc']:.2f} s in {spent['collections']} "
          f"collections")
    return 0


def _baseline_backends(commit: str, into: Path):
    """The backends package of `commit`, importable as tfsem_baseline_backends."""
    src = into / "src"
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "backends"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    name = "tfsem_baseline_backends"
    spec = importlib.util.spec_from_file_location(
        name, src / "backends" / "__init__.py",
        submodule_search_locations=[str(src / "backends")])
    pkg = importlib.util.module_from_spec(spec)
    sys.modules[name] = pkg
    spec.loader.exec_module(pkg)
    return (importlib.import_module(f"{name}.confirm"),
            importlib.import_module(f"{name}.controlflow"))


def _answers(results) -> list:
    return [(c.backend, c.confirmed, c.reason) for c in results]


def replay(args) -> int:
    import numpy as np
    from tfsem.oracle import kernels
    import tfsem.backends.confirm as BC
    import tfsem.backends.controlflow as BCF
    if kernels.enabled():
        kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)
    calls = load_calls(args.calls)
    # (the recorded programs and outcome sets, millions of objects, are
    # moved out of the collector's generations: a full collection walked
    # them all, ~0.5 s, wherever it fell, in either version's row)
    if args.freeze:
        gc.collect()
        gc.freeze()
    if args.graphs:
        stems = set(args.graphs.split(","))
        calls = [c for c in calls if Path(c["key"][0]).stem in stems]
    versions = [("this tree", BC, BCF)]
    tmp = tempfile.TemporaryDirectory()
    if args.baseline_commit:
        base_c, base_cf = _baseline_backends(args.baseline_commit, Path(tmp.name))
        versions.insert(0, (f"baseline {args.baseline_commit}", base_c, base_cf))

    def one_pass(confirm, confirm_cf, times: dict, answers: dict) -> tuple[float, float]:
        # (the version's own tables and session, cold: the baseline's
        # backends are other modules, whose caches clearing this tree's
        # left warm from its previous pass)
        pkg = confirm.__package__
        importlib.import_module(f"{pkg}.execute")._COMPILED.clear()
        importlib.import_module(f"{pkg}.reuse").clear()
        gc.collect()
        cpu_total = wall_total = 0.0
        for k, c in enumerate(calls):
            a, kw = list(c["args"]), dict(c["kwargs"])
            if c["kind"] == "control-flow":
                fn = confirm_cf.confirm_control_flow
                # (confirm_on_backends passes backends and the check's
                # deadline by position: numpy, and no deadline here)
                for pos, name, value in ((10, "backends", ["numpy"]), (11, "deadline", None)):
                    if len(a) > pos:
                        a[pos] = value
                    else:
                        kw[name] = value
            else:
                fn = confirm.confirm_details
                kw["deadline"] = None
                kw["backends"] = ["numpy"]
            cpu, wall = time.process_time(), time.perf_counter()
            got = fn(*a, **kw)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            cpu_total += cpu
            wall_total += wall
            times.setdefault(k, []).append(cpu)
            answers[k] = _answers(got)
        return cpu_total, wall_total

    one_pass(BC, BCF, {}, {})   # (TensorFlow's kernel cache, as the oracle leaves it)
    per = {label: {} for label, _, _ in versions}
    answers = {label: {} for label, _, _ in versions}
    totals = {label: [] for label, _, _ in versions}
    for rep in range(args.repeat):
        order = versions if rep % 2 == 0 else list(reversed(versions))
        for label, c_mod, cf_mod in order:
            totals[label].append(one_pass(c_mod, cf_mod, per[label], answers[label]))
    labels = [label for label, _, _ in versions]
    differ = [k for k in range(len(calls))
              if len({json.dumps(answers[label][k]) for label in labels}) > 1]
    print(f"{len(calls)} confirmations, {args.repeat} passes per version "
          f"(process CPU seconds, medians)\n")
    print("| check | path | " + " | ".join(labels) + (" | ratio |" if len(labels) > 1 else " |"))
    print("|---|---|" + "---:|" * (len(labels) + (len(labels) > 1)))
    for k, c in enumerate(calls):
        med = [statistics.median(per[label][k]) for label in labels]
        ratio = f" {med[-1] / med[0]:.2f} |" if len(labels) > 1 and med[0] else ""
        print(f"| {Path(c['key'][0]).stem} {c['key'][1]} | {c['kind']} | " +
              " | ".join(f"{m:.3f}" for m in med) + " |" + ratio)
    cpu = [statistics.median(t[0] for t in totals[label]) for label in labels]
    wall = [statistics.median(t[1] for t in totals[label]) for label in labels]
    print(f"\ntotal CPU s: " + ", ".join(f"{label} {x:.2f} {[round(t[0], 2) for t in totals[label]]}"
                                         for label, x in zip(labels, cpu)))
    print(f"total wall s: " + ", ".join(f"{label} {x:.2f}" for label, x in zip(labels, wall)))
    if len(labels) > 1:
        print(f"ratio (this tree / baseline): CPU {cpu[-1] / cpu[0]:.2f}, wall {wall[-1] / wall[0]:.2f}")
        print(f"answers that differ: {len(differ)}" +
              "".join(f"\n  {calls[k]['key']}: " + "; ".join(
                  f"{label}: {answers[label][k]}" for label in labels) for k in differ))
    tmp.cleanup()
    return 1 if differ else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--capture", metavar="FILE")
    ap.add_argument("--bench-json", metavar="ROWS.json")
    ap.add_argument("--calls", metavar="FILE")
    ap.add_argument("--graphs", default=None, help="comma-separated file stems")
    ap.add_argument("--optimizers", default=None)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--baseline-commit", default=None, metavar="COMMIT")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--freeze", action="store_true",
                    help="freeze the recorded data out of the collector's generations")
    ap.add_argument("--no-freeze", dest="freeze", action="store_false",
                    help="(the default) leave the recorded data in the collector's "
                         "generations, as a check's programs and outcome sets are")
    args = ap.parse_args(argv)
    if bool(args.capture) == bool(args.calls):
        ap.error("one of --capture FILE or --calls FILE")
    return capture(args) if args.capture else replay(args)


if __name__ == "__main__":
    sys.exit(main())
