"""Regenerate the cases in this directory from the corpus examples/tensorflow/
(needs TensorFlow: Grappler makes the rewrites).

    python tests/cases/tensorflow/make_cases.py

Each case is a tfsem.case/1 file whose original is a corpus graph imported by
tfsem (for its manifest's fetches and targets) and whose rewritten program is
either TensorFlow's own Grappler output, imported the same way, or a
hand-broken graph that has the shape of an optimizer bug.  The note says which,
with the TensorFlow version.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tfsem.commands.grappler import _import
from tfsem.graphdef import grappler as g
from tfsem.oracle.jsonio import case_to_json, make_case

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent.parent.parent / "examples" / "tensorflow"


def entry(file: str) -> dict:
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    return next(e for e in manifest["graphs"] if e["file"] == file)


def write(name: str, original, rewritten, expect: str, note: str) -> None:
    case = make_case(original, rewritten, expect=expect, note=note)
    (HERE / f"{name}.json").write_text(json.dumps(case_to_json(case), indent=1) + "\n")
    print(f"wrote {name}.json ({expect})")


def grappler_case(file: str, optimizer: str, fetches=None, targets=None) -> None:
    e = entry(file)
    fetches = e["fetches"] if fetches is None else fetches
    targets = e["targets"] if targets is None else targets
    gd = g.as_graph_def(CORPUS / file)
    res = g.run_grappler(gd, fetches + targets, optimizer)
    write(f"grappler_{optimizer}_{Path(file).stem}", _import(gd, fetches, targets, file),
          _import(res.graph_def, fetches, targets, file), "sound",
          f"TensorFlow {g.tensorflow().__version__} Grappler, {optimizer} alone, on "
          f"examples/tensorflow/{file} (fetches {fetches}, targets {targets}): "
          f"{res.summary()}. Proved sound.")


def corpus_case(name: str, optimizer: str, why: str) -> None:
    """Grappler's `optimizer` alone on the real-graphs corpus graph `name`
    (examples/tensorflow/corpus/), imported with its capture map."""
    from tfsem.graphdef import read_captures
    from tfsem.graphdef.importer import import_graph
    from tfsem.graphdef.proto import decode

    corpus = CORPUS / "corpus"
    e = next(e for e in json.loads((corpus / "manifest.json").read_text())["graphs"] if e["name"] == name)
    captures = read_captures(corpus / e["captures"]) if e.get("captures") else None

    def imported(graph_def):
        graph = decode("tensorflow.GraphDef", graph_def.SerializeToString())
        return import_graph(graph, e["fetches"], e["targets"], captures=captures).program

    gd = g.as_graph_def(corpus / e["file"])
    res = g.run_grappler(gd, e["fetches"] + e["targets"], optimizer)
    write(f"grappler_{optimizer}_{name}", imported(gd), imported(res.graph_def), "sound",
          f"TensorFlow {g.tensorflow().__version__} Grappler, {optimizer} alone, on "
          f"examples/tensorflow/corpus/{e['file']} (fetches {e['fetches']}, targets {e['targets']}"
          f"{', with its capture map' if captures else ''}): {res.summary()}. Proved sound. {why}")


def broken_case(file: str, name: str, node: str, edge: str, fetches, targets, note: str) -> None:
    gd = g.as_graph_def(CORPUS / file)
    original = _import(gd, fetches, targets, file)
    n = next(n for n in gd.node if n.name == node)
    n.input.remove(edge)
    write(name, original, _import(gd, fetches, targets, file), "unsound",
          f"Hand-broken, on examples/tensorflow/{file} (TensorFlow "
          f"{g.tensorflow().__version__}): the control edge {edge} removed from {node!r}. {note}")


def hoist_loop_read(gd, read: str) -> str:
    """Move the ReadVariableOp `read` out of its while loop, in place, as a
    wrong loop-invariant code motion would: the read now reads the variable
    once, before the loop (from the handle its Enter forwarded), and its
    value enters the loop by a constant Enter of the same frame, which
    every former use of the read now takes.  Returns the Enter's name."""
    by = {n.name: n for n in gd.node}
    node = by[read]
    enter = by[node.input[0].split(":")[0]]
    if node.op != "ReadVariableOp" or enter.op != "Enter" or not enter.attr["is_constant"].b:
        raise ValueError(f"{read!r} is no ReadVariableOp of a loop-constant Enter of a handle")
    hoisted = gd.node.add()
    hoisted.CopyFrom(node)
    hoisted.name = f"{read}/hoisted"
    del hoisted.input[:]
    hoisted.input.append(enter.input[0])       # the handle outside the loop
    value = gd.node.add()
    value.CopyFrom(enter)
    value.name = f"{read}/hoisted/enter"
    del value.input[:]
    value.input.append(hoisted.name)
    value.attr["T"].type = node.attr["dtype"].type
    for n in gd.node:
        for k, i in enumerate(n.input):
            if i.lstrip("^").split(":")[0] == read:
                n.input[k] = ("^" if i.startswith("^") else "") + value.name
    gd.node.remove(node)
    return value.name


def loop_read_hoisted_case() -> None:
    """tf1_while_read_assign through Grappler's default pipeline (which
    lowers its While to Enter/Merge/Switch/Exit/NextIteration), then the
    body's read of x moved out of the loop by hand (hoist_loop_read)."""
    from tfsem.graphdef.importer import import_graph
    from tfsem.graphdef.proto import decode

    corpus = CORPUS / "corpus"
    e = next(e for e in json.loads((corpus / "manifest.json").read_text())["graphs"]
             if e["name"] == "tf1_while_read_assign")

    def imported(graph_def):
        graph = decode("tensorflow.GraphDef", graph_def.SerializeToString())
        return import_graph(graph, e["fetches"], e["targets"]).program

    gd = g.as_graph_def(corpus / e["file"])
    out = g.run_grappler(gd, e["fetches"] + e["targets"], g.DEFAULT_PIPELINE).graph_def
    read = next(n.name for n in out.node if n.op == "ReadVariableOp")
    hoist_loop_read(out, read)
    write("grappler_default_tf1_while_read_assign_read_hoisted", imported(gd), imported(out),
          "unsound",
          f"Hand-broken Grappler output (TensorFlow {g.tensorflow().__version__}): the default "
          f"pipeline on examples/tensorflow/corpus/{e['file']} lowers the While to "
          f"Enter/Merge/Switch/Exit; then {read!r}, the body's read of x, is moved out of the "
          "loop (read once before it, its value entering by a constant Enter), as a wrong "
          "loop-invariant code motion would move a read of a variable the loop writes. "
          "From n = 2 and x = 0: the original sums 0 + 1 and leaves x = 2, the broken graph "
          "sums 0 + 0 and leaves x = 1 (TensorFlow confirms it with the schedule forced, "
          "tests/test_tensorflow_grappler_control_flow.py).")


def main() -> int:
    grappler_case("counter_function.pbtxt", "dependency")
    grappler_case("group_fanin.pbtxt", "common_subgraph_elimination")
    grappler_case("keras_mlp_adam.pbtxt", "dependency")
    grappler_case("v1_mlp_sgd.pbtxt", "dependency")
    corpus_case("keras_mlp_sgd_momentum", "dependency",
                "From the corpus run of docs/grappler-findings.md: the dependency optimizer "
                "removes Identity/NoOp nodes and rewires control edges of a Keras 3 SGD step.")
    corpus_case("tf1_mlp_adam", "pruning",
                "From the corpus run of docs/grappler-findings.md: pruning forwards "
                "Identity nodes of a TF1 Adam step.")
    broken_case("counter.pbtxt", "counter_drop_control_dependency", "read", "^increment",
                ["value"], ["increment"],
                "The shape of a dependency-optimizer bug: `read` may now run before "
                "`increment` and fetch the initial value (TensorFlow confirms it with the "
                "schedule forced, tests/test_tensorflow_grappler.py).")
    broken_case("seed002_load_store.pbtxt", "seed002_load_store_hoisted_load", "load_y",
                "^store_x1", ["r0"], ["store_x2", "store_x1"],
                "Seed 002's load/store reordering on the graph TensorFlow made: the load of "
                "Y hoisted above *X = 1, as an unsafe XLA cluster would; X can end as 1 "
                "with r0 = 0. (store_x1 is a target: without the edge no fetch needs it, and "
                "TensorFlow would not run it at all.)")
    loop_read_hoisted_case()
    return 0


if __name__ == "__main__":
    sys.exit(main())
