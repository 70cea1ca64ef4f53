"""Benchmark of tfsem's checks of Grappler's rewrites (needs TensorFlow).

    python benchmarks/grappler.py [--corpus examples|real] [--graphs a,b]
                                  [--optimizers dependency,...] [--timeout 10]
                                  [--kernels on|off] [--baseline-commit COMMIT]
                                  [--repeat 1] [--json FILE] [--no-place]

For every graph of the corpus (`examples`: examples/tensorflow/manifest.json;
`real`: the real-graphs corpus examples/tensorflow/corpus/manifest.json, its
concrete functions and TF1 graphs with their capture maps, SavedModels left
out) and every optimizer (default: those `tfsem grappler` runs by default on
`examples`; constant folding, arithmetic, dependency, common-subgraph
elimination and the default pipeline on `real`): Grappler's own time for the
optimizer (`GrapplerResult.seconds`), the time to check its imported output
against the original (`tfsem.checking.check_rewrite`, --timeout per check,
the import not counted), and the verdict.

Grappler is given each graph placed on the CPU, as `tfsem grappler` gives
it (graphdef/grappler.py `placed`); `--no-place` gives it unplaced.  A row
names the ops Grappler's output has that the graph had not (e.g. the
remapper's `_FusedMatMul`).

`--kernels on|off` sets TFSEM_TF_KERNELS for the checks (on: ops with no
numpy model run on TensorFlow's kernels, docs/kernels.md).
`--baseline-commit C` runs the same checks with tfsem at commit C (its
tree exported with `git archive` into a temporary folder) side by side in
the same run: one worker process per version, each check of the baseline
and of this tree one after the other (alternating which goes first), so
both see the same load.  `--repeat N` checks each pair N times and reports
medians.  Prints a Markdown row per (graph, optimizer) and the totals:
Grappler's time, the check time, their ratio, the longest check, and the
verdicts of each version.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "tensorflow"
REAL = EXAMPLES / "corpus"
REAL_OPTIMIZERS = ("constfold", "arithmetic", "dependency", "common_subgraph_elimination",
                   "default")
#: the worker's answers on stdout start with this (TensorFlow may print too)
MARK = "@@grappler-bench "


# -- the worker: one tfsem version, jobs on stdin -------------------------------


def _entries(which: str) -> list[dict]:
    out = []
    if which == "examples":
        for e in json.loads((EXAMPLES / "manifest.json").read_text())["graphs"]:
            out.append(dict(e, base=str(EXAMPLES)))
    else:
        for e in json.loads((REAL / "manifest.json").read_text())["graphs"]:
            if e["kind"] == "saved_model":
                continue
            out.append(dict(e, base=str(REAL)))
    return out


def _import(graph_def, e: dict):
    from tfsem.graphdef.importer import import_graph
    from tfsem.graphdef.proto import decode
    caps = (json.loads((Path(e["base"]) / e["captures"]).read_text())
            if e.get("captures") else None)
    graph = decode("tensorflow.GraphDef", graph_def.SerializeToString())
    return import_graph(graph, e["fetches"], e["targets"], captures=caps).program


def worker() -> int:
    """Reads jobs ({"entry", "optimizer", "timeout"}) as JSON lines, answers
    each with one marked JSON line."""
    import tfsem
    from tfsem.checking import check_rewrite
    from tfsem.graphdef import grappler as g
    tf = g.tensorflow()
    # TensorFlow's start in the kernels' child (2-60 s) is not a check's
    # time: one evaluation before the first job waits for it
    from tfsem.oracle import kernels
    if kernels.enabled():
        import numpy as np
        kernels.evaluate("Exp", [np.ones(2, np.float32)], {"T": "DT_FLOAT"}, 1)
    originals: dict[str, object] = {}
    graph_defs: dict[str, object] = {}
    print(MARK + json.dumps({"ready": True, "tfsem": str(Path(tfsem.__file__).parent.parent),
                             "tensorflow": tf.__version__}), flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        e, opt = job["entry"], job["optimizer"]
        row: dict = {"graph": e["file"], "optimizer": opt}
        try:
            if e["file"] not in originals:
                graph_defs[e["file"]] = g.as_graph_def(Path(e["base"]) / e["file"])
                originals[e["file"]] = _import(graph_defs[e["file"]], e)
            gd, original = graph_defs[e["file"]], originals[e["file"]]
            # (a baseline tree older than `placed` runs Grappler on the graph unplaced)
            given = g.placed(gd) if job.get("place", True) and hasattr(g, "placed") else gd
            res = g.run_grappler(given, e["fetches"] + e["targets"], opt)
            new_ops = sorted({n.op for n in res.graph_def.node} - {n.op for n in gd.node})
            row.update(grappler_s=res.seconds, nodes=f"{res.nodes_before} -> {res.nodes_after}",
                       new_ops=new_ops)
            rewritten = _import(res.graph_def, e)
        except Exception as exc:  # noqa: BLE001 (a row that says why)
            row.update(status=f"{type(exc).__name__}: {str(exc)[:100]}")
            print(MARK + json.dumps(row), flush=True)
            continue
        t, cpu = time.perf_counter(), time.process_time()
        try:
            v = check_rewrite(original, rewritten, timeout=job["timeout"])
            row.update(status="checked", verdict=v.verdict, reason=v.reason[:300],
                       path=v.stats.get("path"), difference=getattr(v, "difference", None),
                       confirmed=list(v.confirmed), replay_s=v.stats.get("replay_seconds"),
                       backends=v.stats.get("backends"), sigmas_compared=v.stats.get("tried"),
                       # (the probe's own seconds and what minimization did:
                       # a time-boxed stage is compared by its work too)
                       probe_s=(v.stats.get("probe") or {}).get("seconds"),
                       minimization=v.stats.get("minimization"))
        except Exception as exc:  # noqa: BLE001
            row.update(status=f"check failed: {type(exc).__name__}: {str(exc)[:100]}")
        row["check_s"] = time.perf_counter() - t
        # (this process's CPU: not the TensorFlow kernels' child's, nor the
        # machine's other load, which the wall time includes)
        row["check_cpu_s"] = time.process_time() - cpu
        print(MARK + json.dumps(row), flush=True)
    return 0


# -- the driver -----------------------------------------------------------------


class Worker:
    """A benchmark's worker process (by default this script's `--worker`),
    answering each JSON job with one line marked `mark`; the other
    benchmarks' workers (structural.py, controlflow_runs.py) are this with
    their own command line and mark."""

    def __init__(self, label: str, env: dict, argv: list[str] | None = None,
                 mark: str = MARK):
        self.label, self.mark = label, mark
        # (run in an empty folder: a child the worker starts with `python -m
        # tfsem...` -- the kernels' child of a tree older than this one --
        # looks in its working directory first, and from the repository's
        # root a baseline's worker ran this tree's kernels' child)
        self.cwd = tempfile.mkdtemp(prefix="tfsem-bench-cwd-")
        self.proc = subprocess.Popen(argv or [sys.executable, str(Path(__file__).resolve()),
                                              "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env, cwd=self.cwd)
        self.info = self._answer()

    def _answer(self) -> dict:
        for line in self.proc.stdout:
            if line.startswith(self.mark):
                return json.loads(line[len(self.mark):])
        raise RuntimeError(f"the {self.label} worker ended (exit {self.proc.wait()})")

    def run(self, job: dict) -> dict:
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        return self._answer()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()
        shutil.rmtree(self.cwd, ignore_errors=True)


def alternating(workers: list, job: dict, repeat: int, turn: int) -> tuple[list[list[dict]], int]:
    """Each worker's answers to `job`, `repeat` times, the workers' order
    reversed every other turn (A B, B A, ...) so that none always runs first
    on a machine whose load changes; and the next turn."""
    results: list[list[dict]] = [[] for _ in workers]
    for _ in range(repeat):
        order = list(range(len(workers)))
        if turn % 2:
            order.reverse()
        turn += 1
        for i in order:
            results[i].append(workers[i].run(job))
    return results, turn


def baseline_tree(commit: str, into: Path) -> Path:
    """tfsem at `commit`, importable: the tree from `git archive`, and a
    folder `pkg` laid out as its pyproject's package-dir maps the packages."""
    src = into / "src"
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    conf = tomllib.loads((src / "pyproject.toml").read_text())
    dirs = conf["tool"]["setuptools"]["package-dir"]
    pkg = into / "pkg"
    shutil.copytree(src / dirs["tfsem"], pkg / "tfsem")
    for name, folder in dirs.items():
        parts = name.split(".")
        if len(parts) == 2:        # tfsem.X -> folder (deeper ones follow their parent)
            target = pkg / "tfsem" / parts[1]
            if not target.exists():
                target.symlink_to(src / folder, target_is_directory=True)
    return pkg


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--corpus", choices=("examples", "real"), default="examples")
    ap.add_argument("--graphs", default=None, help="comma-separated file stems (default: all)")
    ap.add_argument("--optimizers", default=None, help="comma-separated")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per check")
    ap.add_argument("--kernels", choices=("on", "off"), default=None,
                    help="TensorFlow's kernels for ops with no numpy model (default: as installed)")
    ap.add_argument("--baseline-commit", default=None, metavar="COMMIT")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-place", dest="place", action="store_false",
                    help="give Grappler the graphs unplaced (default: placed on the CPU)")
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args(argv)
    if args.worker:
        return worker()
    from tfsem.graphdef import grappler as g
    entries = _entries(args.corpus)
    if args.graphs:
        wanted = set(args.graphs.split(","))
        entries = [e for e in entries if Path(e["file"]).stem in wanted]
    optimizers = (args.optimizers.split(",") if args.optimizers else
                  list(REAL_OPTIMIZERS if args.corpus == "real" else g.DEFAULT_OPTIMIZERS))
    g.check_optimizer_names(optimizers)
    env = dict(os.environ)
    if args.kernels:
        env["TFSEM_TF_KERNELS"] = "1" if args.kernels == "on" else "0"
    tmp = Path(tempfile.mkdtemp(prefix="tfsem-bench-"))
    workers = []
    try:
        if args.baseline_commit:
            base = baseline_tree(args.baseline_commit, tmp)
            workers.append(Worker("baseline", dict(env, PYTHONPATH=str(base))))
        this_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
        workers.append(Worker("this", this_env))
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        labels = ([f"baseline {args.baseline_commit}"] if args.baseline_commit else []) + \
            [f"this tree ({head}{', modified' if _dirty() else ''})"]
        print(f"TensorFlow {workers[-1].info['tensorflow']}; corpus {args.corpus}; check timeout "
              f"{args.timeout:g} s; kernels {args.kernels or 'as installed'}; repeat {args.repeat}")
        for label, w in zip(labels, workers):
            print(f"  {label}: tfsem from {w.info['tfsem']}")
        print()
        cols = " | ".join(f"check s ({lab.split()[0]}) | verdict ({lab.split()[0]})" for lab in labels)
        print(f"| graph | optimizer | nodes | Grappler s | {cols} |")
        print("|---|---|---|---|" + "---|---|" * len(workers))
        rows = []
        k = 0
        for e in entries:
            for opt in optimizers:
                job = {"entry": e, "optimizer": opt, "timeout": args.timeout, "place": args.place}
                results, k = alternating(workers, job, args.repeat, k)
                row = {"graph": e["file"], "optimizer": opt, "versions": []}
                for res in results:
                    first = res[0]
                    ok = first.get("status") == "checked"
                    row["versions"].append({
                        "status": first.get("status"), "verdict": first.get("verdict"),
                        "reason": first.get("reason"), "path": first.get("path"),
                        "nodes": first.get("nodes"), "new_ops": first.get("new_ops"),
                        "verdicts": [r.get("verdict") for r in res],
                        # (per repeat: where an unsound one was confirmed, and
                        # the seconds of the control-flow replay on the back ends)
                        "confirmed": [r.get("confirmed") for r in res],
                        "replay_s": [r.get("replay_s") for r in res],
                        "backends": [r.get("backends") for r in res],
                        "probe_s": [r.get("probe_s") for r in res],
                        "minimization": [r.get("minimization") for r in res],
                        "grappler_s": statistics.median(r.get("grappler_s", 0.0) for r in res),
                        "check_s": statistics.median(r.get("check_s", 0.0) for r in res) if ok
                        else None,
                        "check_cpu_s": statistics.median(r.get("check_cpu_s", 0.0) for r in res)
                        if ok else None,
                        "sigmas_compared": first.get("sigmas_compared")})
                rows.append(row)
                v0 = row["versions"][-1]
                cells = " | ".join(
                    (f"{v['check_s']:.2f} | {v['verdict']}" if v["check_s"] is not None
                     else f"- | {v['status']}") for v in row["versions"])
                print(f"| {e['file']} | {opt} | {v0['nodes'] or '-'}"
                      + (f" (+{', '.join(v0['new_ops'])})" if v0.get("new_ops") else "") + " | "
                      f"{statistics.median(v['grappler_s'] for v in row['versions']):.3f} | "
                      f"{cells} |", flush=True)
        print()
        summary = []
        for i, label in enumerate(labels):
            checked = [r["versions"][i] for r in rows if r["versions"][i]["check_s"] is not None]
            grappler = sum(v["grappler_s"] for v in checked)
            check = sum(v["check_s"] for v in checked)
            check_cpu = sum(v["check_cpu_s"] or 0.0 for v in checked)
            counts: dict[str, int] = {}
            for v in checked:
                counts[v["verdict"]] = counts.get(v["verdict"], 0) + 1
            longest = max((v["check_s"] for v in checked), default=0.0)
            over = sum(v["check_s"] >= 10.0 for v in checked)
            s = {"label": label, "checks": len(checked), "grappler_s": round(grappler, 3),
                 "check_s": round(check, 2), "check_cpu_s": round(check_cpu, 2),
                 "ratio": round(check / grappler, 2) if grappler else None,
                 "longest_s": round(longest, 2), "checks_10s_or_more": over, "verdicts": counts}
            summary.append(s)
            print(f"{label}: {len(checked)} checks; Grappler {grappler:.2f} s; checks {check:.1f} s "
                  f"(x{s['ratio']}; CPU {check_cpu:.1f} s); longest {longest:.2f} s; {over} of 10 s or more; "
                  f"{', '.join(f'{n} {k}' for k, n in sorted(counts.items()))}")
        if len(workers) == 2:
            same = sum(r["versions"][0]["verdict"] == r["versions"][1]["verdict"] for r in rows)
            print(f"verdicts equal in {same} of {len(rows)} rows; changed: " + "; ".join(
                f"{r['graph']}/{r['optimizer']}: {r['versions'][0]['verdict']} -> "
                f"{r['versions'][1]['verdict']}" for r in rows
                if r["versions"][0]["verdict"] != r["versions"][1]["verdict"]))
        if args.json:
            Path(args.json).write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))
    finally:
        for w in workers:
            w.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def _dirty() -> bool:
    out = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                         capture_output=True, text=True).stdout
    return bool(out.strip())


if __name__ == "__main__":
    sys.exit(main())
