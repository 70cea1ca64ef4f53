"""TensorFlow's MLIR lit tests as a corpus for `tfsem mlir` (docs/mlir.md).

    python benchmarks/mlir_lit_corpus.py LIT.mlir... [--json OUT] [--timeout S]

For each lit file: the passes of its `// RUN: tf-opt %s ... -PASS ...` line
become the pipeline; the file is split at `// -----` (tf-opt's
-split-input-file); each case is brought to the syntax the installed
TensorFlow parses (`func @` -> `func.func @`, `!tf.` types -> `!tf_type.`,
`( {` -> `({`: older lit files predate them); all cases run in one
TensorFlow process (graphdef/mlir_tf.py's run_batch; a pass that needs
nesting is retried as `func.func(PASS)`); then every function of the case
that has a body and is not private is read from the input and the output and
checked in both semantics modes.  Prints one row per (case, function) and a
summary table: cases, sound, unsound, unknown/no-counterexample, not readable
(with the reasons counted by rule).  Needs TensorFlow.  The lit files are
TensorFlow's (tensorflow/compiler/mlir/tensorflow/tests/ in a TensorFlow
source tree); this script ships none of them.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from pathlib import Path


def pipeline_of(run_line: str) -> list[str]:
    passes = []
    for tok in run_line.split():
        if tok.startswith("-tf-") or tok.startswith("--tf-") or tok in ("-canonicalize", "-cse",
                                                                        "--canonicalize"):
            passes.append(tok.lstrip("-"))
    return passes


def modernize(text: str) -> str:
    text = re.sub(r"(?m)^(\s*)func @", r"\1func.func @", text)
    text = re.sub(r"(?m)^(\s*)func private @", r"\1func.func private @", text)
    text = text.replace("!tf.resource", "!tf_type.resource").replace("!tf.string", "!tf_type.string")
    text = text.replace("!tf.variant", "!tf_type.variant").replace("( {", "({")
    return text


def cases_of(path: Path) -> tuple[list[str], list[str]]:
    text = path.read_text(encoding="utf-8")
    run = " ".join(m.group(1) for m in re.finditer(r"(?m)^// RUN:(.*)$", text))
    parts = re.split(r"(?m)^// -----.*$", text) if "split-input-file" in run else [text]
    parts = [modernize(p) for p in parts if re.search(r"\bfunc(\.func)?\b", p)]
    return pipeline_of(run), parts


def entry_functions(text: str) -> list[str]:
    from tfsem.graphdef.mlir import _functions, _generic_func_args, parse
    out = []
    for f in _functions(parse(text, "case")):
        _generic_func_args(f)
        if f.regions and f.regions[0] and f.attrs.get("sym_visibility") != "private":
            out.append(f.attrs["sym_name"])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--json", default=None)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per check")
    args = ap.parse_args(argv)
    from tfsem.checking import check_case
    from tfsem.graphdef.mlir import program_of_mlir
    from tfsem.graphdef.mlir_tf import run_batch
    from tfsem.oracle.functions import CannotRun
    from tfsem.oracle.jsonio import Case, program_to_json
    from tfsem.oracle.program import ProgramError

    jobs = []      # (file, index, text, passes)
    for f in args.files:
        passes, parts = cases_of(Path(f))
        for k, text in enumerate(parts):
            jobs.append((Path(f).name, k, text, passes))
    # module-level first; a pass that must be nested is retried inside func.func
    runs = run_batch([(t, ",".join(p)) for _, _, t, p in jobs])
    retry = [i for i, r in enumerate(runs) if r.status == "error" and
             ("intend to nest" in r.message or "unsupported operation" in r.message)]
    if retry:
        again = run_batch([(jobs[i][2], "func.func(" + ",".join(jobs[i][3]) + ")")
                           for i in retry])
        for i, r in zip(retry, again):
            runs[i] = r
    rows = []
    for (fname, k, text, passes), tf in zip(jobs, runs):
        base = {"file": fname, "case": k, "pipeline": ",".join(passes),
                "resources": "resource" in text}
        if tf.status != "ok":
            rows.append(dict(base, function=None, status=f"tensorflow-{tf.status}",
                             reason=tf.message.splitlines()[0][:160] if tf.message else ""))
            continue
        try:
            names = entry_functions(tf.input_text)
        except ProgramError as exc:
            rows.append(dict(base, function=None, status="input-not-readable",
                             rule=exc.violations[0].rule, reason=str(exc.violations[0])[:160]))
            continue
        for name in names:
            row = dict(base, function=name)
            try:
                p = program_of_mlir(tf.input_text, "input", name)
            except ProgramError as exc:
                rows.append(dict(row, status="input-not-readable", rule=exc.violations[0].rule,
                                 reason=str(exc.violations[0])[:160]))
                continue
            try:
                q = program_of_mlir(tf.output_text, "output", name)
            except ProgramError as exc:
                rows.append(dict(row, status="output-not-readable", rule=exc.violations[0].rule,
                                 reason=str(exc.violations[0])[:160]))
                continue
            verdicts = {}
            for mode in ("atomic", "decomposed"):
                try:
                    v = check_case(Case(p, program_to_json(q)), timeout=args.timeout,
                                   semantics=mode)
                    verdicts[mode] = v.verdict
                except CannotRun:
                    verdicts[mode] = "unknown"
            rows.append(dict(row, status="checked", **verdicts))
    for r in rows:
        print(json.dumps(r))
    summary = collections.Counter()
    reasons = collections.Counter()
    for r in rows:
        if r["status"] == "checked":
            summary["checked"] += 1
            summary[f"atomic {r['atomic']}"] += 1
            summary[f"decomposed {r['decomposed']}"] += 1
        else:
            summary[r["status"]] += 1
            reasons[f"{r['status']}: {r.get('rule', '')} {_reason_kind(r.get('reason', ''))}"] += 1
    print("\nsummary:", dict(summary))
    for k, n in reasons.most_common():
        print(f"  {n:4d}  {k}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "summary": summary,
                                               "reasons": reasons}, indent=1))
    return 0


def _reason_kind(reason: str) -> str:
    """The reason without names and positions, for counting."""
    reason = re.sub(r"^\S+:\d+:\d+: ", "", reason)
    reason = re.sub(r"'[^']*'", "'…'", reason)
    reason = re.sub(r"\([^)]*\)", "(…)", reason)
    return reason[:90]


if __name__ == "__main__":
    sys.exit(main())
