"""TensorFlow graphs in and out: GraphDef, MetaGraphDef and SavedModel import,
export of tfsem programs as GraphDefs, and the op table between the two.

Reading a graph needs no TensorFlow: `graphdef.proto` decodes the protobuf
wire and text formats from descriptors of the few messages tfsem reads.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Sequence

from tfsem.oracle.program import Program, ProgramError, Violation

from . import ops
from .functions import ImportTimeout  # noqa: F401  (graphdef.ImportTimeout)

#: File suffixes read as TensorFlow graphs (anything else is a tfsem JSON program).
GRAPH_SUFFIXES = (".pb", ".pbtxt", ".meta", ".pbtext")


def is_graph_path(path: str | Path) -> bool:
    """Whether `path` names a TensorFlow graph (by suffix) or a SavedModel directory."""
    p = Path(path)
    return p.suffix.lower() in GRAPH_SUFFIXES or p.is_dir()


def _bad(path: str | Path, message: str, rule: str = "bad-graph") -> ProgramError:
    return ProgramError([Violation(str(path), rule, message)])


#: The most bytes of a binary graph file tfsem reads (protobuf's own limit is 2 GiB).
MAX_GRAPH_BYTES = 1 << 30
#: The most bytes of a text graph file tfsem reads (the text parser holds every
#: token in memory: about 15 bytes of Python objects per byte of text).
MAX_TEXT_GRAPH_BYTES = 64 << 20

_NOT_REGULAR = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                (stat.S_ISSOCK, "a socket"))


def read_capped(path: str | Path, limit: int, what: str = "graph") -> bytes:
    """The bytes of the regular file `path`, if it holds at most `limit`.

    The file is `stat`ed before it is opened: a device (a link to
    /dev/zero), a FIFO or a socket is refused by name without being opened,
    a file larger than `limit` (a sparse 2 GB file) without a byte read; it
    is opened non-blocking, checked again, and read with the cap in force
    (a file that grows meanwhile is refused, not read to its end)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        raise _bad(path, getattr(exc, "strerror", None) or str(exc), "unreadable") from None
    _check_regular(path, st.st_mode)
    if st.st_size > limit:
        raise _bad(path, f"{st.st_size} bytes: tfsem reads a {what} file of at most {limit} "
                   "bytes", "too-large")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise _bad(path, exc.strerror or str(exc), "unreadable") from None
    try:
        _check_regular(path, os.fstat(fd).st_mode)  # replaced between stat and open?
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 24, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise _bad(path, exc.strerror or str(exc), "unreadable") from None
    finally:
        os.close(fd)
    if size > limit:
        raise _bad(path, f"more than {limit} bytes (it grew while it was read): tfsem reads a "
                   f"{what} file of at most {limit} bytes", "too-large")
    return b"".join(chunks)


def _check_regular(path, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _NOT_REGULAR if test(mode)), "not a regular file")
    link = ""
    try:
        if os.path.islink(path):
            link = f" (a symbolic link to {os.path.realpath(path)})"
    except OSError:
        pass
    raise _bad(path, f"{kind}{link}: tfsem reads graphs from regular files only", "unreadable")


def read_graph(path: str | Path, signature: str | None = None,
               deadline: float | None = None) -> tuple[object, dict | None]:
    """(GraphDef, SignatureDef dict or None) of a .pb/.pbtxt GraphDef, a
    .meta MetaGraphDef or a SavedModel directory: _read_graph's first two."""
    graph, sig, _ = _read_graph(path, signature, deadline)
    return graph, sig


def _read_graph(path: str | Path, signature: str | None = None,
                deadline: float | None = None) -> tuple[object, dict | None, object]:
    """(GraphDef, SignatureDef dict or None) of a .pb/.pbtxt GraphDef, a
    .meta MetaGraphDef (binary or text), or a SavedModel directory.  The
    GraphDef is a dict (text) or a protobuf message of tfsem's descriptors
    (binary: graphdef.proto.parse); `importer.import_graph` takes both.  A
    malformed file raises ProgramError naming the file, the field and the
    offset.  Past `deadline` (a time.monotonic() value), ImportTimeout.
    The third: the MetaGraphDef's SavedObjectGraph (dict or message), or None."""
    from .functions import check_deadline
    from .proto import ProtoError, parse, parse_text, to_dict
    p = Path(path)
    if p.is_dir():
        for name, text in (("saved_model.pb", False), ("saved_model.pbtxt", True)):
            if os.path.lexists(p / name):  # a link to a device is refused by name below
                p = p / name
                message = "SavedModel"
                break
        else:
            raise _bad(path, "a directory that holds no saved_model.pb or saved_model.pbtxt",
                       "unreadable")
    else:
        text = p.suffix.lower() in (".pbtxt", ".pbtext")
        message = "MetaGraphDef" if p.suffix.lower() == ".meta" else "GraphDef"
    data = read_capped(p, MAX_TEXT_GRAPH_BYTES if text else MAX_GRAPH_BYTES,
                       "text graph" if text else "binary graph")
    check_deadline(deadline, "reading the graph")
    try:
        if text:
            try:
                source = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _bad(p, f"not UTF-8 text at byte {exc.start} (a binary graph? name it "
                           ".pb)") from None
            if message == "GraphDef" and _looks_like_meta(source):
                message = "MetaGraphDef"
            msg = parse_text(message, source, deadline=deadline)
        else:
            msg = parse(message, data)
            if message == "SavedModel":
                if not msg.meta_graphs:
                    raise _bad(p, "the SavedModel holds no MetaGraphDef")
                msg, message = msg.meta_graphs[0], "MetaGraphDef"
            if message == "MetaGraphDef":
                # the graph stays a message; the signatures become dicts
                graph = msg.graph_def
                objects = msg.object_graph_def if msg.HasField("object_graph_def") else None
                msg = {"signature_def": {k: to_dict(v) for k, v in msg.signature_def.items()}}
                msg["graph_def"] = graph
                msg["object_graph_def"] = objects
    except ProtoError as exc:
        raise _bad(p, f"not a valid {message}: {exc}") from None
    check_deadline(deadline, "decoding the graph")
    if message == "SavedModel":
        metas = msg.get("meta_graphs", [])
        if not metas:
            raise _bad(p, "the SavedModel holds no MetaGraphDef")
        msg, message = metas[0], "MetaGraphDef"
    if message == "GraphDef":
        if signature is not None:
            raise _bad(p, "--signature needs a MetaGraphDef or a SavedModel, this is a GraphDef",
                       "usage")
        return msg, None, None
    graph = msg.get("graph_def", {})
    objects = msg.get("object_graph_def")
    sigs = msg.get("signature_def", {})
    if signature is None:
        if not sigs:
            return graph, None, objects
        if "serving_default" in sigs:
            signature = "serving_default"
        elif len(sigs) == 1:
            signature = next(iter(sigs))
        else:
            raise _bad(p, f"choose a signature with --signature: {', '.join(sorted(sigs))}",
                       "usage")
    if signature not in sigs:
        raise _bad(p, f"no signature {signature!r} (there are: "
                   f"{', '.join(sorted(sigs)) or 'none'})", "usage")
    return graph, sigs[signature], objects


def saved_variable_names(graph, objects) -> dict[str, str]:
    """{VarHandleOp node: the variable's name} of a SavedModel's graph, found
    through its object graph: a call of a saved concrete function passes the
    handles of the objects it captures (`bound_inputs`, in order) as its last
    inputs, and a variable object holds the variable's name (the graph's
    `shared_name` is one made unique in the exported graph: `dense/kernel_1`
    for `dense/kernel`).  A handle given two names, or a name given to two
    handles, keeps its shared_name (and the importer keeps it too where the
    name is the shared_name of another handle the import reaches)."""
    if objects is None:
        return {}
    from .proto import to_dict
    if not isinstance(objects, dict):
        objects = to_dict(objects)
    nodes = objects.get("nodes", [])
    funcs = objects.get("concrete_functions", {})
    gnodes = graph.get("node", []) if isinstance(graph, dict) else graph.node
    handles, calls = {}, []
    for n in gnodes:
        n = n if isinstance(n, dict) else {"name": n.name, "op": n.op, "input": list(n.input),
                                            "attr": n.attr}
        op = n.get("op")
        if op == "VarHandleOp":
            attr = n.get("attr", {})
            sh = attr.get("shared_name")
            shared = (sh.get("s", "") if isinstance(sh, dict) else sh.s) if sh else ""
            if isinstance(shared, bytes):
                shared = shared.decode("utf-8", "replace")
            handles[n["name"]] = shared or n["name"]
        elif op in ops.CALLS:
            attr = n.get("attr", {})
            f = attr.get("f")
            fname = (f.get("func", {}).get("name") if isinstance(f, dict) else f.func.name) \
                if f else None
            calls.append((fname, [i for i in n.get("input", []) if not i.startswith("^")]))
    named: dict[str, set[str]] = {}
    for fname, inputs in calls:
        bound = funcs.get(fname, {}).get("bound_inputs", []) if fname else []
        if not bound or len(bound) > len(inputs):
            continue
        for ref, k in zip(inputs[len(inputs) - len(bound):], bound):
            h = ref.partition(":")[0]
            var = nodes[k].get("variable", {}) if 0 <= k < len(nodes) else {}
            if h in handles and var.get("name"):
                named.setdefault(h, set()).add(var["name"])
    out = {h: next(iter(v)) for h, v in named.items() if len(v) == 1}
    count: dict[str, int] = {}
    for v in out.values():
        count[v] = count.get(v, 0) + 1
    return {h: v for h, v in out.items() if count[v] == 1}


def _looks_like_meta(text: str) -> bool:
    for line in text.splitlines():
        s = line.strip()
        if s and not s.startswith("#"):
            word = s.split()[0].rstrip(":{")
            return word in ("meta_info_def", "graph_def", "saver_def", "collection_def",
                            "signature_def", "asset_file_def", "object_graph_def")
    return False


def import_path(path: str | Path, fetch: Sequence[str] = (), feed: Sequence[str] = (),
                target: Sequence[str] = (), signature: str | None = None,
                deadline: float | None = None, captures: str | Path | dict | None = None,
                session: bool = False, shapes: dict | Sequence[str] | None = None):
    """`graphdef.importer.Imported` of the graph at `path` (see read_graph).
    Past `deadline` (a time.monotonic() value), raises ImportTimeout.
    `captures`: the capture map of a concrete function's graph (a dict, or
    the path of its JSON file; importer.parse_captures).  `shapes`: the
    shapes of feeds whose graph shape has unknown dimensions, {name: [dims]}
    or `--shape` strings `NAME=DIMS` (parse_shapes); a name is a Placeholder
    or a signature input's key."""
    from .importer import gc_paused
    with gc_paused():
        return _import_path(path, fetch, feed, target, signature, deadline, captures, session,
                            shapes)


def parse_shapes(shapes: dict | Sequence[str] | None) -> dict[str, list[int]]:
    """`--shape NAME=DIMS` options (DIMS: `8,28,28,1`, `[8, 28, 28, 1]`, or
    empty for a scalar) as {name: [dims]}; a dict is checked and returned."""
    if not shapes:
        return {}
    if isinstance(shapes, dict):
        items = list(shapes.items())
    else:
        items = []
        for s in shapes:
            name, eq, dims = str(s).partition("=")
            if not eq or not name:
                raise ProgramError([Violation(f"--shape {s}", "usage", "write NAME=DIMS, e.g. "
                                              "--shape x=8,28,28,1")])
            text = dims.strip().strip("[]").strip()
            try:
                items.append((name, [int(d) for d in text.split(",")] if text else []))
            except ValueError:
                raise ProgramError([Violation(f"--shape {s}", "usage", "DIMS must be "
                                              "comma-separated sizes, e.g. 8,28,28,1")]) from None
    out: dict[str, list[int]] = {}
    for name, dims in items:
        if not isinstance(dims, (list, tuple)) or not all(
                isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 31
                for d in dims):
            raise ProgramError([Violation(f"--shape {name}", "usage", "the shape must be a list "
                                          f"of sizes from 0 to 2**31-1, not {dims!r}")])
        out[str(name)] = list(dims)
    return out


def read_captures(path: str | Path) -> dict:
    """The JSON capture map at `path` ({placeholder: {"variable", "dtype", "shape"}})."""
    import json
    raw = read_capped(path, 64 << 20, "capture map")   # unreadable: ProgramError as it is
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise _bad(path, f"the capture map is not JSON: {exc}", "bad-captures") from None
    if not isinstance(data, dict):
        raise _bad(path, "the capture map must be a JSON object {placeholder: {\"variable\", "
                   "\"dtype\", \"shape\"}}", "bad-captures")
    return data


def _import_path(path, fetch, feed, target, signature, deadline, captures=None, session=False,
                 shapes=None):
    from .importer import GraphImportError, import_graph
    shapes = parse_shapes(shapes)
    graph, sig, objects = _read_graph(path, signature, deadline)
    variable_names = saved_variable_names(graph, objects)
    names = None
    feed = list(feed)
    if sig is not None and not fetch and not target:
        outs = sig.get("outputs", {})
        if not outs:
            raise _bad(path, "the signature has no outputs")
        names = sorted(outs)
        fetch = [_tensor_name(outs[k], path) for k in names]
        for k, info in sorted(sig.get("inputs", {}).items()):
            node = _tensor_name(info, path).partition(":")[0]
            if node not in feed:
                feed.append(node)
            if k in shapes and node not in shapes:   # --shape KEY=DIMS of a signature input
                shapes[node] = shapes.pop(k)
    if isinstance(captures, (str, Path)):
        captures = read_captures(captures)
    try:
        return import_graph(graph, fetch, target, feed, output_names=names, deadline=deadline,
                            captures=captures, variable_names=variable_names,
                            session=session, shapes=shapes)
    except GraphImportError as exc:
        raise ProgramError([Violation(f"{path}: {v.where}", v.rule, v.message)
                            for v in exc.violations]) from None
    except RecursionError:
        raise _bad(path, "the graph is nested too deeply to import") from None


def _tensor_name(info: dict, path) -> str:
    name = info.get("name")
    if not name:
        raise _bad(path, "a signature tensor is not given by name (sparse and composite "
                   "tensors are not modelled)")
    return name[:-2] if name.endswith(":0") else name


def load_program_or_graph(path: str | Path, fetch: Sequence[str] = (), feed: Sequence[str] = (),
                          target: Sequence[str] = (), signature: str | None = None,
                          validate: bool = True, deadline: float | None = None,
                          captures: str | Path | dict | None = None,
                          shapes: dict | Sequence[str] | None = None) -> Program:
    """The program at `path`: a tfsem JSON program, or a TensorFlow graph
    (GraphDef .pb/.pbtxt, MetaGraphDef .meta, SavedModel directory) imported
    with these fetches, feeds and targets.  Every command that takes a
    program reads it through here.  A graph's import past `deadline` (a
    time.monotonic() value) raises ImportTimeout."""
    if is_graph_path(path):
        return import_path(path, fetch, feed, target, signature, deadline, captures,
                           shapes=shapes).program
    if fetch or feed or target or signature or captures or shapes:
        raise ProgramError([Violation(str(path), "usage", "--fetch, --feed, --target, "
                                      "--captures, --shape and --signature apply to TensorFlow graphs (.pb, .pbtxt, "
                                      ".meta, a SavedModel directory), not to a JSON program")])
    from tfsem.oracle.jsonio import load_program
    return load_program(path, validate=validate)


#: The fields of a graph given where JSON takes a program (the HTTP service):
#: {"graph": TEXT-FORMAT GRAPHDEF, "fetch": [...], "target": [...], "feed": [...]}
GRAPH_FIELDS = ("graph", "fetch", "target", "feed")
MAX_GRAPH_TEXT = 8 << 20


def program_json_of(obj, where: str = "program", deadline: float | None = None):
    """`obj` unchanged, unless it is a graph object (GRAPH_FIELDS): then the
    JSON of the program imported from it.  Bad graphs raise ProgramError
    naming `where`; an import past `deadline` (a time.monotonic() value)
    raises ImportTimeout."""
    if not (isinstance(obj, dict) and "graph" in obj and "format" not in obj):
        return obj
    from tfsem.oracle.jsonio import program_to_json
    from .importer import GraphImportError, import_graph
    from .proto import ProtoError, parse_text
    extra = sorted(set(obj) - set(GRAPH_FIELDS))
    if extra:
        raise _bad(where, f"unknown field(s) {extra} in a graph (allowed: "
                   f"{', '.join(GRAPH_FIELDS)})", "unknown-field")
    text = obj["graph"]
    if not isinstance(text, str):
        raise _bad(f"{where}.graph", "a graph is a GraphDef in protobuf text format (a string)",
                   "format")
    if len(text) > MAX_GRAPH_TEXT:
        raise _bad(f"{where}.graph", f"{len(text)} characters; at most {MAX_GRAPH_TEXT}",
                   "too-large")
    lists = {}
    for key in ("fetch", "target", "feed"):
        v = obj.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
            raise _bad(f"{where}.{key}", "a list of node names", "format")
        lists[key] = v
    try:
        graph = parse_text("GraphDef", text, deadline=deadline)
        imported = import_graph(graph, lists["fetch"], lists["target"], lists["feed"],
                                deadline=deadline)
    except ProtoError as exc:
        raise _bad(f"{where}.graph", f"not a valid GraphDef: {exc}") from None
    except GraphImportError as exc:
        raise ProgramError([Violation(f"{where}.graph: {v.where}", v.rule, v.message)
                            for v in exc.violations]) from None
    except RecursionError:
        raise _bad(f"{where}.graph", "nested too deeply") from None
    return program_to_json(imported.program)
