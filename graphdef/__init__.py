"""TensorFlow graphs in and out: GraphDef, MetaGraphDef and SavedModel import,
export of tfsem programs as GraphDefs, and the op table between the two.

Reading a graph needs no TensorFlow: `graphdef.proto` decodes the protobuf
wire and text formats from descriptors of the few messages tfsem reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from tfsem.oracle.program import Program, ProgramError, Violation

#: File suffixes read as TensorFlow graphs (anything else is a tfsem JSON program).
GRAPH_SUFFIXES = (".pb", ".pbtxt", ".meta", ".pbtext")


def is_graph_path(path: str | Path) -> bool:
    """Whether `path` names a TensorFlow graph (by suffix) or a SavedModel directory."""
    p = Path(path)
    return p.suffix.lower() in GRAPH_SUFFIXES or p.is_dir()


def _bad(path: str | Path, message: str, rule: str = "bad-graph") -> ProgramError:
    return ProgramError([Violation(str(path), rule, message)])


def read_graph(path: str | Path, signature: str | None = None) -> tuple[object, dict | None]:
    """(GraphDef, SignatureDef dict or None) of a .pb/.pbtxt GraphDef, a
    .meta MetaGraphDef (binary or text), or a SavedModel directory.  The
    GraphDef is a dict (text) or a protobuf message of tfsem's descriptors
    (binary: graphdef.proto.parse); `importer.import_graph` takes both.  A
    malformed file raises ProgramError naming the file, the field and the
    offset."""
    from .proto import ProtoError, parse, parse_text, to_dict
    p = Path(path)
    if p.is_dir():
        for name, text in (("saved_model.pb", False), ("saved_model.pbtxt", True)):
            if (p / name).is_file():
                p = p / name
                message = "SavedModel"
                break
        else:
            raise _bad(path, "a directory that holds no saved_model.pb or saved_model.pbtxt",
                       "unreadable")
    else:
        text = p.suffix.lower() in (".pbtxt", ".pbtext")
        message = "MetaGraphDef" if p.suffix.lower() == ".meta" else "GraphDef"
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise _bad(path, exc.strerror or str(exc), "unreadable") from None
    try:
        if text:
            try:
                source = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _bad(p, f"not UTF-8 text at byte {exc.start} (a binary graph? name it "
                           ".pb)") from None
            if message == "GraphDef" and _looks_like_meta(source):
                message = "MetaGraphDef"
            msg = parse_text(message, source)
        else:
            msg = parse(message, data)
            if message == "SavedModel":
                if not msg.meta_graphs:
                    raise _bad(p, "the SavedModel holds no MetaGraphDef")
                msg, message = msg.meta_graphs[0], "MetaGraphDef"
            if message == "MetaGraphDef":
                # the graph stays a message; the signatures become dicts
                graph = msg.graph_def
                msg = {"signature_def": {k: to_dict(v) for k, v in msg.signature_def.items()}}
                msg["graph_def"] = graph
    except ProtoError as exc:
        raise _bad(p, f"not a valid {message}: {exc}") from None
    if message == "SavedModel":
        metas = msg.get("meta_graphs", [])
        if not metas:
            raise _bad(p, "the SavedModel holds no MetaGraphDef")
        msg, message = metas[0], "MetaGraphDef"
    if message == "GraphDef":
        if signature is not None:
            raise _bad(p, "--signature needs a MetaGraphDef or a SavedModel, this is a GraphDef",
                       "usage")
        return msg, None
    graph = msg.get("graph_def", {})
    sigs = msg.get("signature_def", {})
    if signature is None:
        if not sigs:
            return graph, None
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
    return graph, sigs[signature]


def _looks_like_meta(text: str) -> bool:
    for line in text.splitlines():
        s = line.strip()
        if s and not s.startswith("#"):
            word = s.split()[0].rstrip(":{")
            return word in ("meta_info_def", "graph_def", "saver_def", "collection_def",
                            "signature_def", "asset_file_def", "object_graph_def")
    return False


def import_path(path: str | Path, fetch: Sequence[str] = (), feed: Sequence[str] = (),
                target: Sequence[str] = (), signature: str | None = None):
    """`graphdef.importer.Imported` of the graph at `path` (see read_graph)."""
    from .importer import GraphImportError, import_graph
    graph, sig = read_graph(path, signature)
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
    try:
        return import_graph(graph, fetch, target, feed, output_names=names)
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
                          validate: bool = True) -> Program:
    """The program at `path`: a tfsem JSON program, or a TensorFlow graph
    (GraphDef .pb/.pbtxt, MetaGraphDef .meta, SavedModel directory) imported
    with these fetches, feeds and targets.  Every command that takes a
    program reads it through here."""
    if is_graph_path(path):
        return import_path(path, fetch, feed, target, signature).program
    if fetch or feed or target or signature:
        raise ProgramError([Violation(str(path), "usage", "--fetch, --feed, --target and "
                                      "--signature apply to TensorFlow graphs (.pb, .pbtxt, "
                                      ".meta, a SavedModel directory), not to a JSON program")])
    from tfsem.oracle.jsonio import load_program
    return load_program(path, validate=validate)


#: The fields of a graph given where JSON takes a program (the HTTP service):
#: {"graph": TEXT-FORMAT GRAPHDEF, "fetch": [...], "target": [...], "feed": [...]}
GRAPH_FIELDS = ("graph", "fetch", "target", "feed")
MAX_GRAPH_TEXT = 8 << 20


def program_json_of(obj, where: str = "program"):
    """`obj` unchanged, unless it is a graph object (GRAPH_FIELDS): then the
    JSON of the program imported from it.  Bad graphs raise ProgramError
    naming `where`."""
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
        graph = parse_text("GraphDef", text)
        imported = import_graph(graph, lists["fetch"], lists["target"], lists["feed"])
    except ProtoError as exc:
        raise _bad(f"{where}.graph", f"not a valid GraphDef: {exc}") from None
    except GraphImportError as exc:
        raise ProgramError([Violation(f"{where}.graph: {v.where}", v.rule, v.message)
                            for v in exc.violations]) from None
    except RecursionError:
        raise _bad(f"{where}.graph", "nested too deeply") from None
    return program_to_json(imported.program)
