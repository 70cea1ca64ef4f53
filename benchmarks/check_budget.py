"""Does `tfsem check --timeout T` end in time?  Wall time of the whole
process against its budget on a large real pair: MobileNetV2
(examples/tensorflow/corpus/keras_mobilenetv2_32.pb, 6,480 nodes) against
Grappler's default pipeline's output of it (docs/budgets.md).

The rewritten graph is made once with TensorFlow (`--pair-dir`, kept there
for the next run).  Each run is `python -m tfsem check ORIGINAL REWRITTEN
--fetch Identity --captures ... --timeout T [--json] [--html FILE]` in a
process of its own, timed from before its start to its exit (what a user
waits for: the interpreter's start and tfsem's imports, which come before
`check`'s clock starts, included).  With `--baseline-commit C`, tfsem at C
runs the same command, alternating with this tree run by run, so that both
see the same load.  Printed per (T, mode): the median wall time, its excess
over T, the exit statuses, the output's size, the verdict and what the
report says it left out.

    python benchmarks/check_budget.py --timeouts 8,15,30 [--repeat 3] \\
        [--modes text,json,html,json+html] [--baseline-commit c3bce7e]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from grappler_budget import timed  # noqa: E402  (the command's run, timed, as there)

CORPUS = ROOT / "examples" / "tensorflow" / "corpus"
GRAPH = CORPUS / "keras_mobilenetv2_32.pb"
CAPTURES = CORPUS / "keras_mobilenetv2_32.captures.json"
FETCH = "Identity"


def rewritten(pair_dir: Path) -> Path:
    """Grappler's default pipeline's output of MobileNetV2 (placed on the
    CPU, as `tfsem grappler` gives it), made once into `pair_dir`."""
    out = pair_dir / "keras_mobilenetv2_32.default.pb"
    if not out.exists():
        from tfsem.graphdef import grappler as g  # noqa: PLC0415
        res = g.run_grappler(GRAPH, [FETCH], g.DEFAULT_PIPELINE, place=True)
        pair_dir.mkdir(parents=True, exist_ok=True)
        out.write_bytes(res.graph_def.SerializeToString())
    return out


def run_once(env: dict, rewritten_graph: Path, timeout: float, mode: str, limit: float,
             work: Path) -> dict:
    html = work / "page.html"
    for f in (html, work / "page-steps.html"):
        if f.exists():
            f.unlink()
    cmd = [sys.executable, "-m", "tfsem", "check", str(GRAPH), str(rewritten_graph), "--fetch",
           FETCH, "--captures", str(CAPTURES), "--timeout", f"{timeout:g}"]
    if "json" in mode:
        cmd.append("--json")
    if "html" in mode:
        cmd += ["--html", str(html)]
    wall, rc, data = timed(cmd, env, limit)
    row = {"wall": wall, "rc": rc, "bytes": len(data),
           "page": html.stat().st_size if html.exists() else None}
    text = data[:4000].decode("utf-8", "replace")
    if "json" in mode and rc is not None:
        try:
            doc = json.loads(data)
        except ValueError:
            row["verdict"] = "(not JSON)"
            return row
        row["verdict"] = doc.get("verdict")
        row["cut"] = [k for k in ("report_cut", "html_cut") if doc.get(k)]
        rep = doc.get("tensorflow_replay") or {}
        row["replay"] = rep.get("status")
    else:
        row["verdict"] = text.splitlines()[0].split(":", 1)[0] if text else None
        row["cut"] = [w for w in ("left out", "ran out") if w in data.decode("utf-8", "replace")]
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeouts", default="8,15,30", help="budgets T, comma-separated (s)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--modes", default="text,json,html,json+html")
    ap.add_argument("--pair-dir", default=str(Path(tempfile.gettempdir()) / "tfsem-check-budget"),
                    help="where Grappler's output of MobileNetV2 is made once and kept")
    ap.add_argument("--baseline-commit", default=None, metavar="COMMIT")
    ap.add_argument("--limit", type=float, default=600.0,
                    help="kill a run after this many seconds (counted as rc None)")
    args = ap.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    pair = rewritten(Path(args.pair_dir))
    work = Path(tempfile.mkdtemp(prefix="tfsem-check-budget-"))
    sides = [("this", env)]
    if args.baseline_commit:
        from grappler import baseline_tree  # noqa: PLC0415
        base = baseline_tree(args.baseline_commit, work)
        sides.insert(0, (f"baseline {args.baseline_commit}", dict(env, PYTHONPATH=str(base))))
    print(f"tfsem check MobileNetV2 against Grappler's default output ({pair}); repeat "
          f"{args.repeat}; load {os.getloadavg()[0]:.1f} at the start")
    for timeout in (float(t) for t in args.timeouts.split(",")):
        for mode in args.modes.split(","):
            runs: dict[str, list[dict]] = {label: [] for label, _ in sides}
            for _ in range(args.repeat):
                for label, e in sides:
                    runs[label].append(run_once(e, pair, timeout, mode, args.limit, work))
            for label, rows in runs.items():
                walls = [r["wall"] for r in rows]
                med = statistics.median(walls)
                last = rows[-1]
                print(f"T {timeout:g} s, {mode}, {label}: wall median {med:.2f} s (past T "
                      f"{med - timeout:+.2f} s; runs {', '.join(f'{w:.2f}' for w in walls)}), "
                      f"exit {[r['rc'] for r in rows]}, output {last['bytes']} B, page "
                      f"{last['page']} B, verdict {last.get('verdict')}, cut {last.get('cut')}"
                      + (f", replay {last['replay']}" if last.get("replay") else "")
                      + f"; load {os.getloadavg()[0]:.1f}")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
