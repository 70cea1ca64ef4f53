"""The node names of an export (graphdef/exporter.py): each once, each one
TensorFlow takes, the graph importable again.

The export adds nodes of its own (a Const operand `N/shape` of a Reshape
`N`, a Split `N/split` of a Split part, an output's Identity) and used to
name them without looking at the program's names: a program with a node
`reshape2/shape` beside the Reshape `reshape2` (the Grappler case
`grappler_remap_fused_batchnorm_relu_signed_zero`) exported two nodes
`reshape2/shape`, which TensorFlow and tfsem's importer refuse.  And an
output named after a tensor (`s:1`, what the importer names an output
fetched at a port) was written as an Identity named `s:1`, a name
TensorFlow refuses; it is now an Identity `s_1`, the export's `fetches`
saying so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_graphdef_export_state import outcomes, sinks
from tfsem.generators import grappler as gen
from tfsem.graphdef.exporter import ExportError, export_graph, valid_node_name
from tfsem.graphdef.importer import import_graph
from tfsem.graphdef.proto import encode, format_text
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

ROOT = Path(__file__).parents[1]
CASES = ROOT / "tests" / "cases"


def case_programs() -> list:
    """(case file, side) of every program under tests/cases: the
    `original` and `rewritten` of a case, or the file itself where it is a
    program; the invalid ones (invalid_*.json, meant to be refused) left out."""
    found = []
    for f in sorted(CASES.rglob("*.json")):
        data = json.loads(f.read_text())
        if not isinstance(data, dict):
            continue
        sides = [k for k in ("original", "rewritten") if k in data] if "original" in data \
            else ["program"] if "nodes" in data else []
        for side in sides:
            try:
                program_from_json(data if side == "program" else data[side])
            except Exception:   # noqa: BLE001 - an invalid program: nothing to export
                continue
            found.append((str(f.relative_to(CASES)), side))
    return found


CASE_PROGRAMS = case_programs()


def load(case: str, side: str):
    data = json.loads((CASES / case).read_text())
    return program_from_json(data if side == "program" else data[side])


def export(p) -> tuple[dict, dict[str, str]]:
    """(export(p), output -> the node fetched for it), checked: every node
    name once and one TensorFlow takes, every input naming a node."""
    fetches: dict[str, str] = {}
    g = export_graph(p, fetches=fetches)
    names = [n["name"] for n in g["node"]]
    twice = [n for n, k in Counter(names).items() if k > 1]
    assert not twice, f"node names written twice: {twice}"
    invalid = [n for n in names if not valid_node_name(n)]
    assert not invalid, f"node names TensorFlow refuses: {invalid}"
    dangling = {i.lstrip("^").split(":")[0] for n in g["node"] for i in n.get("input", [])} \
        - set(names)
    assert not dangling, f"inputs naming no node: {dangling}"
    assert set(fetches) == set(p.outputs) and set(fetches.values()) <= set(names)
    return g, fetches


def reimport(g: dict, fetches: dict[str, str]):
    """The export imported by tfsem: each output fetched at its node, under
    the program's output name."""
    return import_graph(g, list(fetches.values()), sinks(g, fetches.values()),
                        output_names=list(fetches)).program


def test_every_case_program_is_in_the_table():
    """(the table below is every program of tests/cases: a case file that
    holds none would drop out unseen)"""
    assert len(CASE_PROGRAMS) >= 200
    assert ("tensorflow/grappler_remap_fused_batchnorm_relu_signed_zero.json",
            "original") in CASE_PROGRAMS


@pytest.mark.parametrize("case,side", CASE_PROGRAMS)
def test_a_case_program_exports_each_name_once_and_imports_again(case, side):
    p = load(case, side)
    try:
        g, fetches = export(p)
    except ExportError:     # refused by name (what TensorFlow would not build)
        return
    q = reimport(g, fetches)
    assert list(q.outputs) == list(p.outputs)


def test_the_grappler_case_keeps_its_constants_and_the_reshapes_their_shapes():
    """The case's program has Consts `reshapeK/shape` of its own beside the
    Reshapes `reshapeK`: the Reshape's shape operand is `reshapeK/shape_1`,
    the program's Const keeps its name, and the export imports back as the
    program itself (its FusedBatchNormV3 has no concrete model, so outcome
    sets cannot be enumerated: the programs are compared node for node)."""
    case = "tensorflow/grappler_remap_fused_batchnorm_relu_signed_zero.json"
    for side in ("original", "rewritten"):
        p = load(case, side)
        g, fetches = export(p)
        by = {n["name"]: n for n in g["node"]}
        assert by["reshape2/shape"]["op"] == "Const"
        assert by["reshape2"]["input"] == ["r1", "reshape2/shape_1"]
        q = reimport(g, fetches)
        assert q == p
        # and the second round writes the same graph
        assert export_graph(q) == g


def test_an_export_is_the_same_bytes_whatever_the_hash_seed():
    """Deterministic: made-up names are chosen in the program's order, not
    a set's (a set of strings iterates by hash, which changes per process)."""
    case = "tensorflow/grappler_remap_fused_batchnorm_relu_signed_zero.json"
    script = ("import json, sys; from tfsem.oracle.jsonio import program_from_json; "
              "from tfsem.graphdef.exporter import export_text; "
              f"d = json.load(open({str(CASES / case)!r})); "
              "sys.stdout.write(export_text(program_from_json(d['original'])))")
    texts = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
             for seed in ("1", "2")}
    assert texts == {format_text("GraphDef", export_graph(load(case, "original")))}


@settings(max_examples=settings.default.max_examples // 4, deadline=None)
@given(gen.strategy(8, "outputs+state"))
def test_a_generated_program_exports_each_name_once_and_imports_again(case):
    p, feeds, init = case
    try:
        g, fetches = export(p)
    except ExportError:
        return
    q = reimport(g, fetches)
    assert outcomes(q, init, feeds) == outcomes(p, init, feeds)


# Each function whose export adds nodes (graphdef/exporter.py `fresh`): its
# node N reading feed x (int32 [2, 2]) or y (int32 [4]), and the names of
# the nodes its export adds
ADDING = {
    "rs": ({"op": "Reshape", "shape": [4], "inputs": ["x"]}, ["rs/shape"]),
    "tl": ({"op": "Tile", "multiples": [1, 2], "inputs": ["x"]}, ["tl/multiples"]),
    "ed": ({"op": "ExpandDims", "axis": 0, "inputs": ["x"]}, ["ed/dim"]),
    "sm": ({"op": "Sum", "axes": [0], "keep_dims": False, "inputs": ["x"]}, ["sm/reduction_indices"]),
    "ca": ({"op": "ConcatAxis", "axis": 1, "inputs": ["x", "x"]}, ["ca/axis"]),
    "cc": ({"op": "Concat", "inputs": ["y", "y"]}, ["cc/axis"]),
    "sp": ({"op": "SplitPart", "axis": 0, "num_split": 2, "index": 1, "inputs": ["x"]},
           ["sp/split_dim", "sp/split"]),
    "up": ({"op": "UnpackPart", "axis": 1, "num": 2, "index": 0, "inputs": ["x"]},
           ["up/unpack"]),
    "fl": ({"op": "Fill", "dims": [3], "inputs": ["x0"]}, ["fl/dims"]),
}


@st.composite
def clashing_programs(draw):
    """Programs of some of ADDING's nodes where the program's own names
    take what the export would add: a Const of that name (or of it and
    `NAME_1`), an output of that name, an output named after a node."""
    chosen = draw(st.lists(st.sampled_from(sorted(ADDING)), min_size=1, max_size=4, unique=True))
    nodes = [{"name": "x", "op": "Identity", "inputs": ["$x"]},
             {"name": "y", "op": "Identity", "inputs": ["$y"]},
             {"name": "x0", "op": "Const", "value": 5}]
    outputs: dict[str, str] = {}
    for k, key in enumerate(chosen):
        node, added = ADDING[key]
        nodes.append({"name": key, **node})
        outputs[draw(st.sampled_from([key, f"o{k}", f"{key}:0"]))] = key
        for j, name in enumerate(added):
            how = draw(st.sampled_from(["none", "const", "const_1", "output", "const_out"]))
            if how in ("const", "const_1", "const_out"):
                nodes.append({"name": name, "op": "Const", "value": 10 * k + j})
            if how == "const_1":
                nodes.append({"name": f"{name}_1", "op": "Const", "value": 10 * k + j + 1})
            if how == "output":
                outputs[name] = key
            if how == "const_out":
                outputs[f"c{k}_{j}"] = name
    return program_from_json({
        "format": "tfsem.program/1", "variables": [],
        "feeds": {"x": {"dtype": "int32", "shape": [2, 2]}, "y": {"dtype": "int32", "shape": [4]}},
        "nodes": nodes, "outputs": outputs})


FEEDS = {"x": Tensor(np.asarray([[1, 2], [3, 4]], dtype=np.int32)),
         "y": Tensor(np.asarray([5, 6, 7, 8], dtype=np.int32))}


@settings(max_examples=150, deadline=None, database=None)
@given(clashing_programs())
def test_names_the_export_adds_are_apart_from_the_programs_names(p):
    """Whatever program nodes and outputs take the names of the nodes the
    export adds: each name once, and the export imported again has the
    program's outcomes (an operand that read the program's Const of its
    name, or the reverse, would change a value); from the second export on
    the graph stays the same (the first may name a lone Split part's
    constants otherwise: tests/test_graphdef_export_round_trip.py)."""
    g, fetches = export(p)
    q = reimport(g, fetches)
    assert outcomes(q, {}, FEEDS) == outcomes(p, {}, FEEDS)
    g2, fetches2 = export(q)
    assert fetches2 == fetches
    assert export(reimport(g2, fetches2)) == (g2, fetches2)


@settings(max_examples=15, deadline=None, database=None)
@given(clashing_programs())
def test_tensorflow_imports_and_runs_such_an_export_to_the_oracles_outcome(p):
    pytest.importorskip("tensorflow", reason="needs the extra tfsem[tensorflow]")
    from tfsem.backends.tensorflow import GraphRunner
    from tfsem.oracle.dispatch import outcome_set

    g, fetches = export(p)
    (want,) = outcome_set(p, FEEDS, {}, "atomic", "outputs+state").as_dict(5)
    with GraphRunner(format_text("GraphDef", g), fetches, sinks(g, fetches.values())) as runner:
        got = runner.run_once(FEEDS, {})
    assert got == want, (got.describe(), want.describe())


#: exports of case programs that TensorFlow refuses for another reason than
#: their names: (case, side) -> what its error says
TENSORFLOW_REFUSES = {
    # the rewritten graph of Grappler's remapper: _FusedBatchNormEx's shape
    # function wants a channel dimension divisible by 4 (the case's has 1)
    ("tensorflow/grappler_remap_fused_batchnorm_relu_signed_zero.json", "rewritten"):
        "channel dimension must be divisible by 4",
}


def test_tensorflow_imports_every_case_programs_export():
    """`tf.compat.v1.import_graph_def` takes every export of a case program
    (one test, not one per case: each loads TensorFlow's graph machinery)."""
    tf = pytest.importorskip("tensorflow", reason="needs the extra tfsem[tensorflow]")
    refused = {}
    for case, side in CASE_PROGRAMS:
        try:
            g, _ = export(load(case, side))
        except ExportError:
            continue
        graph_def = tf.compat.v1.GraphDef.FromString(encode("GraphDef", g))
        try:
            with tf.Graph().as_default():
                tf.compat.v1.import_graph_def(graph_def, name="")
        except ValueError as exc:
            refused[(case, side)] = str(exc)
    assert set(refused) == set(TENSORFLOW_REFUSES), refused
    for key, why in TENSORFLOW_REFUSES.items():
        assert why in refused[key]


PORT_OUTPUT = {
    "format": "tfsem.program/1", "variables": [],
    "feeds": {"x": {"dtype": "float32", "shape": [4]}},
    "nodes": [{"name": "x", "op": "Identity", "inputs": ["$x"]},
              {"name": "s/output_1", "op": "SplitPart", "axis": 0, "num_split": 2, "index": 1,
               "inputs": ["x"]}],
    "outputs": {"s:1": "s/output_1"}}


def test_the_export_command_says_where_an_output_is_fetched(tmp_path, capsys):
    from tfsem.cli import main
    from tfsem.graphdef.proto import parse_text
    src, out = tmp_path / "p.json", tmp_path / "g.pbtxt"
    src.write_text(json.dumps(PORT_OUTPUT))
    assert main(["export", str(src), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "output 's:1'" in err and "'s_1'" in err
    g = parse_text("GraphDef", out.read_text())
    assert [n["op"] for n in g["node"] if n["name"] == "s_1"] == ["Identity"]


def test_a_feed_whose_name_tensorflow_refuses_is_refused_by_name(tmp_path, capsys):
    """A feed is the Placeholder of its name, which its users feed: it is
    not renamed, and a name TensorFlow refuses is an error (exit 2, no
    traceback) naming the feed."""
    from tfsem.cli import main
    src = tmp_path / "p.json"
    src.write_text(json.dumps({**PORT_OUTPUT, "feeds": {"x:0": {"dtype": "float32",
                                                               "shape": [4]}},
                               "nodes": [{**PORT_OUTPUT["nodes"][0], "inputs": ["$x:0"]},
                                         PORT_OUTPUT["nodes"][1]]}))
    assert main(["export", str(src)]) == 2
    err = capsys.readouterr().err
    assert "feed $x:0" in err and "Traceback" not in err


def test_tfsem_run_of_a_program_with_such_an_output_runs_on_tensorflow(tmp_path, capsys):
    """`tfsem run --backend tensorflow` of a program exports it and fetches
    each output: output `s:1` at node `s_1` (TensorFlow refused the graph
    with a node named `s:1`), its value the oracle's."""
    pytest.importorskip("tensorflow", reason="needs the extra tfsem[tensorflow]")
    from tfsem.cli import main
    src = tmp_path / "p.json"
    src.write_text(json.dumps(PORT_OUTPUT))
    assert main(["run", str(src), "--backend", "tensorflow", "--runs", "2",
                 "--feed", "x=[1,2,3,4]"]) == 0
    out = capsys.readouterr().out
    assert "1 distinct outcome; the oracle allows 1" in out
    # (shown under the program's name for the output, not the node fetched)
    assert "s:1 = f32 [3.0, 4.0]" in out and "s_1 =" not in out and "in the oracle's set" in out


def test_tfsem_run_json_names_each_output_as_the_program_does(tmp_path, capsys):
    """--json's outcomes name the outputs as the program does (`s:1`, `é`),
    while `fetches` lists the nodes TensorFlow fetched for them (`s_1`, and
    a name TensorFlow takes for `é`); each outcome judged in the oracle's
    set as before."""
    pytest.importorskip("tensorflow", reason="needs the extra tfsem[tensorflow]")
    from tfsem.cli import main
    program = json.loads(json.dumps(PORT_OUTPUT))
    program["nodes"].append({"name": "n", "op": "Neg", "inputs": ["x"]})
    program["outputs"]["é"] = "n"
    src = tmp_path / "p.json"
    src.write_text(json.dumps(program))
    assert main(["run", str(src), "--backend", "tensorflow", "--runs", "2", "--json",
                 "--feed", "x=[1,2,3,4]"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "s_1" in report["fetches"] and "é" not in report["fetches"]
    (outcome,) = report["outcomes"]
    assert sorted(outcome["outputs"]) == ["s:1", "é"] and outcome["in_oracle"] is True
    assert outcome["outputs"]["é"]["value"] == [-1.0, -2.0, -3.0, -4.0]
