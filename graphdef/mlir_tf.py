"""TensorFlow's side of `tfsem mlir`: import a GraphDef into the
`tf_executor` dialect and run an MLIR pass pipeline, in a child process.

`run_pipeline(...)` starts `python -m tfsem.graphdef.mlir_tf` with a JSON
request on stdin.  The child writes the imported module to `input.mlir`
before it runs the pipeline and the result to `output.mlir` after, so a
pipeline that aborts the process (an `LLVM ERROR` of a wrongly nested pass,
a crash of a pass) still leaves the input behind, and the crash is reported
as what TensorFlow did, never as a crash of tfsem.  Only the child imports
TensorFlow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class PipelineRun:
    """What TensorFlow did: `status` is `ok`, `error` (TensorFlow refused the
    graph or the pipeline with a message), `crash` (the process died: a
    signal or an abort), `timeout`, or `no-tensorflow`."""
    status: str
    input_text: str | None = None
    output_text: str | None = None
    message: str = ""
    returncode: int | None = None
    seconds: float = 0.0
    stderr_tail: str = ""
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"status": self.status, "message": self.message, "returncode": self.returncode,
                "seconds": round(self.seconds, 3), "stderr_tail": self.stderr_tail}


def run_pipeline(pipeline: str, *, graph_bytes: bytes | None = None,
                 mlir_text: str | None = None, outputs: list[str] = (),
                 timeout: float = 300.0, graph_is_text: bool = False,
                 targets: list[str] = ()) -> PipelineRun:
    """Import `graph_bytes` (a serialized GraphDef), pruned to what `outputs`
    and `targets` need when any is given, with these outputs, or take
    `mlir_text`, and run `pipeline` on it in a child process."""
    import importlib.util
    if importlib.util.find_spec("tensorflow") is None:
        return PipelineRun("no-tensorflow", message="TensorFlow is not installed "
                           "(the extra tfsem[tensorflow])")
    with tempfile.TemporaryDirectory(prefix="tfsem-mlir-") as tmp:
        d = Path(tmp)
        req = {"pipeline": pipeline, "outputs": list(outputs), "targets": list(targets),
               "dir": str(d)}
        if graph_bytes is not None:
            (d / "graph.pb").write_bytes(graph_bytes)
            req["graph"] = str(d / "graph.pb")
            req["text"] = graph_is_text
        else:
            (d / "given.mlir").write_text(mlir_text or "", encoding="utf-8")
            req["mlir"] = str(d / "given.mlir")
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
        t0 = time.monotonic()
        try:
            proc = subprocess.run([sys.executable, "-m", "tfsem.graphdef.mlir_tf"],
                                  input=json.dumps(req).encode(), capture_output=True,
                                  timeout=timeout, env=env)
        except subprocess.TimeoutExpired as exc:
            run = PipelineRun("timeout", message=f"TensorFlow ran past {timeout:g} s",
                              seconds=time.monotonic() - t0,
                              stderr_tail=_tail(exc.stderr or b""))
            run.input_text = _read(d / "input.mlir")
            return run
        seconds = time.monotonic() - t0
        stderr = _tail(proc.stderr)
        result = {}
        try:
            result = json.loads((d / "result.json").read_text())
        except (OSError, ValueError):
            pass
        run = PipelineRun("ok", _read(d / "input.mlir"), _read(d / "output.mlir"),
                          returncode=proc.returncode, seconds=seconds, stderr_tail=stderr)
        if proc.returncode != 0 and not result:
            run.status = "crash"
            sig = -proc.returncode if proc.returncode < 0 else None
            llvm = [ln for ln in proc.stderr.decode("utf-8", "replace").splitlines()
                    if "LLVM ERROR" in ln or "Check failed" in ln or "Aborted" in ln]
            run.message = ("TensorFlow's process died" + (f" with signal {sig}" if sig else
                                                          f" with status {proc.returncode}")
                           + (f": {llvm[0].strip()}" if llvm else ""))
            if run.input_text is None:
                run.message += " (while importing the graph)"
            else:
                run.message += " (while running the pipeline)"
        elif result.get("status") == "error":
            run.status = "error"
            run.message = result.get("message", "")
            run.extra["stage"] = result.get("stage")
        elif run.output_text is None:
            run.status = "crash"
            run.message = "TensorFlow wrote no output"
        return run


def run_batch(cases: list[tuple[str, str]], timeout: float = 600.0) -> list[PipelineRun]:
    """Run each (mlir_text, pipeline) in one child process, in order (TensorFlow
    is imported once).  A case that kills the process is a `crash`; the child
    is started again after it.  `timeout` bounds each child process."""
    import importlib.util
    if importlib.util.find_spec("tensorflow") is None:
        return [PipelineRun("no-tensorflow", message="TensorFlow is not installed")
                for _ in cases]
    out: list[PipelineRun] = []
    with tempfile.TemporaryDirectory(prefix="tfsem-mlir-batch-") as tmp:
        d = Path(tmp)
        for k, (text, _) in enumerate(cases):
            (d / f"given_{k}.mlir").write_text(text, encoding="utf-8")
        start = 0
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
        while start < len(cases):
            req = {"dir": str(d), "batch": [[k, cases[k][1]] for k in range(start, len(cases))]}
            t0 = time.monotonic()
            timed_out = False
            try:
                proc = subprocess.run([sys.executable, "-m", "tfsem.graphdef.mlir_tf"],
                                      input=json.dumps(req).encode(), capture_output=True,
                                      timeout=timeout, env=env)
                stderr = proc.stderr
            except subprocess.TimeoutExpired as exc:
                timed_out, stderr = True, exc.stderr or b""
            for k in range(start, len(cases)):
                res = d / f"result_{k}.json"
                if not res.is_file():
                    break
                r = json.loads(res.read_text())
                run = PipelineRun(r["status"], _read(d / f"input_{k}.mlir"),
                                  _read(d / f"output_{k}.mlir"), message=r.get("message", ""),
                                  seconds=r.get("seconds", 0.0))
                run.extra["stage"] = r.get("stage")
                out.append(run)
                start = k + 1
            else:
                break
            if start < len(cases):     # case `start` killed the process or ran too long
                run = PipelineRun("timeout" if timed_out else "crash",
                                  _read(d / f"input_{start}.mlir"),
                                  seconds=time.monotonic() - t0, stderr_tail=_tail(stderr))
                llvm = [ln for ln in stderr.decode("utf-8", "replace").splitlines()
                        if "LLVM ERROR" in ln or "Check failed" in ln]
                run.message = llvm[0].strip() if llvm else "the process died"
                out.append(run)
                start += 1
    return out


def _read(p: Path) -> str | None:
    try:
        return p.read_text(encoding="utf-8")
    except OSError:
        return None


def _tail(b: bytes, n: int = 2000) -> str:
    text = b.decode("utf-8", "replace")
    lines = [ln for ln in text.splitlines()
             if not any(x in ln for x in ("cpu_feature_guard", "oneDNN custom operations",
                                          "rebuild TensorFlow", "AVX", "TF_ENABLE_ONEDNN"))]
    return "\n".join(lines)[-n:]


def _dtype_name(enum: int) -> str:
    from tensorflow.core.framework import types_pb2  # noqa: PLC0415
    return types_pb2.DataType.Name(enum)


def import_graph_def(data: bytes, outputs: list[str], targets: list[str] = ()) -> str:
    """A serialized GraphDef as a `tf_executor` module (MLIR text), imported
    *in this process* by TensorFlow's `ImportGraphDef`: pruned first to what
    `outputs` and `targets` need (Session.run's pruning; with neither,
    whole), its Placeholders the arguments of `@main`, `outputs` its
    results.  ImportGraphDef takes no control outputs, so a target `T` is
    fetched as `T/_tfsem_target`, an int64 constant 0 with a control edge
    from `T` (else graph pruning may delete T, which nothing fetches).
    Imports TensorFlow; importing a graph does not run MLIR passes, so it is
    safe in a process that must not die (`tfsem fuzz --target mlir:...`'s
    worker)."""
    from tensorflow.core.framework import graph_pb2  # noqa: PLC0415
    from tensorflow.python import _pywrap_mlir  # noqa: PLC0415
    g = graph_pb2.GraphDef()
    g.ParseFromString(data)
    # Session.run's pruning: what the fetches and targets need (every op of
    # the module then runs: docs/mlir.md, "Every op runs")
    targets = list(targets)
    outputs = list(outputs)
    dest = [o.split(":")[0] for o in outputs] + targets
    for t in targets:
        c = g.node.add()
        c.name, c.op = f"{t}/_tfsem_target", "Const"
        c.input.append(f"^{t}")
        c.attr["dtype"].type = 9                              # DT_INT64
        c.attr["value"].tensor.dtype = 9
        c.attr["value"].tensor.int64_val.append(0)
        outputs.append(c.name)
        dest.append(c.name)
    if dest:
        from tensorflow.python.framework import graph_util_impl  # noqa: PLC0415
        g = graph_util_impl.extract_sub_graph(g, dest)
    data = g.SerializeToString()
    # Placeholders become the arguments of @main, named after them
    names, types, shapes = [], [], []
    for n in g.node:
        if n.op != "Placeholder":
            continue
        names.append(n.name)
        types.append(_dtype_name(n.attr["dtype"].type))
        dims = n.attr["shape"].shape.dim if "shape" in n.attr else []
        shapes.append(",".join(str(d.size) for d in dims))
    return _pywrap_mlir.ImportGraphDef(data, "", False, ",".join(names), ",".join(types),
                                       ":".join(shapes), ",".join(outputs))


def _child() -> int:
    req = json.loads(sys.stdin.read())
    d = Path(req["dir"])

    def done(status: str, stage: str = "", message: str = "") -> int:
        (d / "result.json").write_text(json.dumps({"status": status, "stage": stage,
                                                   "message": message}))
        return 0

    if "batch" in req:
        return _child_batch(d, req["batch"])
    stage = "import"
    try:
        from tensorflow.python import pywrap_mlir  # noqa: PLC0415
        if "graph" in req:
            data = Path(req["graph"]).read_bytes()
            if req.get("text"):
                from google.protobuf import text_format  # noqa: PLC0415
                from tensorflow.core.framework import graph_pb2  # noqa: PLC0415
                g = graph_pb2.GraphDef()
                text_format.Parse(data.decode("utf-8"), g)
                data = g.SerializeToString()
            text = import_graph_def(data, list(req["outputs"]), list(req.get("targets", [])))
        else:
            text = Path(req["mlir"]).read_text(encoding="utf-8")
        (d / "input.mlir").write_text(text, encoding="utf-8")
        stage = "pipeline"
        sys.stderr.flush()
        out = pywrap_mlir.experimental_run_pass_pipeline(text, req["pipeline"], False)
        (d / "output.mlir").write_text(out, encoding="utf-8")
        return done("ok")
    except Exception as exc:  # TensorFlow's own errors: reported, not raised
        msg = str(exc)
        if len(msg) > 4000:
            msg = msg[:4000] + " ..."
        return done("error", stage, f"{type(exc).__name__}: {msg}")


def _child_batch(d: Path, batch: list) -> int:
    from tensorflow.python import pywrap_mlir  # noqa: PLC0415
    for k, pipeline in batch:
        text = (d / f"given_{k}.mlir").read_text(encoding="utf-8")
        (d / f"input_{k}.mlir").write_text(text, encoding="utf-8")
        t0 = time.monotonic()
        sys.stderr.flush()
        try:
            out = pywrap_mlir.experimental_run_pass_pipeline(text, pipeline, False)
            (d / f"output_{k}.mlir").write_text(out, encoding="utf-8")
            r = {"status": "ok"}
        except Exception as exc:
            r = {"status": "error", "stage": "pipeline", "message": str(exc)[:2000]}
        r["seconds"] = time.monotonic() - t0
        (d / f"result_{k}.json").write_text(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(_child())
