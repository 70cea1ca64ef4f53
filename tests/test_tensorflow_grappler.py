"""TensorFlow's real Grappler (graphdef/grappler.py) and `tfsem grappler`.

Needs TensorFlow (the extra tfsem[tensorflow]); skipped, saying so, where it
cannot be imported.  TensorFlow is imported once for the whole module.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow", reason="needs the extra tfsem[tensorflow] (tensorflow-cpu)")

from tfsem.backends.tensorflow import GraphRunner  # noqa: E402
from tfsem.graphdef import grappler  # noqa: E402
from tfsem.oracle.values import Tensor  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "tensorflow"


def test_dependency_optimizer_changes_the_fanin_graph_and_keeps_its_fetch():
    res = grappler.run_grappler(CORPUS / "group_fanin.pbtxt", ["total"], "dependency")
    assert res.changed and res.nodes_after < res.nodes_before
    assert set(res.graph.removed) <= {n.name for n in grappler.as_graph_def(
        CORPUS / "group_fanin.pbtxt").node}
    assert "total" in {n.name for n in res.graph_def.node}
    # the optimized graph still runs on TensorFlow, with the original's outcome
    init = {v: Tensor(np.int64(k)) for k, v in enumerate("abc")}
    with GraphRunner(res.graph_def, {"total": "total"}) as opt, \
            GraphRunner(CORPUS / "group_fanin.pbtxt", {"total": "total"}) as orig:
        assert opt.run_once({}, init) == orig.run_once({}, init)


def test_an_optimizer_that_does_nothing_reports_no_change():
    res = grappler.run_grappler(CORPUS / "counter.pbtxt", ["value"], "loop")
    assert not res.changed and res.nodes_after == res.nodes_before
    assert res.summary().startswith("nodes 9 -> 9")


def test_unknown_optimizer_and_missing_fetch_are_errors():
    with pytest.raises(ValueError, match="unknown Grappler optimizer 'nope'"):
        grappler.run_grappler(CORPUS / "counter.pbtxt", ["value"], "nope")
    with pytest.raises(ValueError, match="'absent' is not a node"):
        grappler.run_grappler(CORPUS / "counter.pbtxt", ["absent:0"], "dependency")
    with pytest.raises(ValueError, match="at least one fetch"):
        grappler.run_grappler(CORPUS / "counter.pbtxt", [], "dependency")


# --- tfsem grappler: Grappler's output checked, and a hand-broken output ----------

def test_cli_dependency_optimizer_changes_the_function_graph_and_is_proved_sound(capsys):
    """On counter_function.pbtxt the dependency optimizer rewrites the
    tf.function's body (it removes Identity/NoOp nodes and rewires control
    edges); tfsem imports the result and proves it sound."""
    from tfsem.cli import main
    status = main(["grappler", str(CORPUS / "counter_function.pbtxt"),
                   "--optimizer", "dependency", "--json"])
    import json
    out = json.loads(capsys.readouterr().out)
    (row,) = out["results"]
    assert row["optimizer"] == "dependency" and row["status"] == "checked"
    assert row["changed"] and row["function_nodes_after"] < row["function_nodes_before"]
    assert row["verdict"]["verdict"] == "sound"
    assert status == 0 and out["fetches"] == ["value"]


def test_cli_text_names_each_optimizer_and_what_changed(capsys):
    from tfsem.cli import main
    status = main(["grappler", str(CORPUS / "group_fanin.pbtxt"),
                   "--optimizer", "common_subgraph_elimination", "--optimizer", "loop"])
    text = capsys.readouterr().out
    assert status == 0
    assert "  common_subgraph_elimination: sound" in text
    assert "removed Const_1, Const_2" in text
    assert "  loop: sound\n    changed: nothing (nodes 27)" in text


def test_hand_broken_dropped_control_dependency_is_unsound_and_tensorflow_confirms():
    """A hand-broken "optimizer output": Grappler's dependency-optimized
    counter with the control edge ^increment dropped from `read`.  tfsem says
    unsound, and the counterexample, replayed on TensorFlow with its schedule
    forced, gives the same outcome there."""
    from tfsem.commands.grappler import _import, check_graph
    fetches, targets = ["value"], ["increment"]
    original_gd = grappler.as_graph_def(CORPUS / "counter.pbtxt")
    optimized = grappler.run_grappler(original_gd, fetches + targets, "dependency").graph_def
    read = next(n for n in optimized.node if n.name == "read")
    assert "^increment" in read.input
    read.input.remove("^increment")
    original = _import(original_gd, fetches, targets, "counter.pbtxt")
    row = check_graph(original, optimized, fetches, targets, where="counter.pbtxt after broken",
                      original_graph_def=original_gd)
    assert row["status"] == "checked"
    v = row["verdict"]
    assert v["verdict"] == "unsound"
    assert v["differs"] == {"output": "value"}
    assert "tensorflow" in v["confirmed"], row.get("tensorflow_replay")
    assert row["tensorflow_replay"]["confirmed"]
    # and the original graph, with each witness schedule of it forced, gave
    # the oracle's outcome of it
    assert row["tensorflow_replay"]["original"] == {
        "graph": "the original graph counter.pbtxt", "outcomes": 1, "listed": 1,
        "replayed": 1, "failed_runs": 0, "agreed": True}
    cex = v["counterexample"]
    # the rewritten run read the counter before the increment
    assert cex["outcome"]["outputs"]["value"] == cex["init"]["counter"]


@pytest.mark.parametrize("content, message", [
    (b'node {\n  name: "a"\n  op: "Const"\n', "not a GraphDef"),
    (None, "not a GraphDef"),
])
def test_cli_malformed_graph_is_bad_input(tmp_path, capsys, content, message):
    from tfsem.cli import main
    if content is None:       # a truncated binary GraphDef
        path = tmp_path / "g.pb"
        path.write_bytes(grappler.as_graph_def(CORPUS / "counter.pbtxt").SerializeToString()[:-7])
    else:
        path = tmp_path / "g.pbtxt"
        path.write_bytes(content)
    assert main(["grappler", str(path), "--fetch", "value"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_cli_unknown_fetch_is_bad_input(capsys):
    from tfsem.cli import main
    assert main(["grappler", str(CORPUS / "counter.pbtxt"), "--fetch", "nope"]) == 2
    assert "no node named 'nope'" in capsys.readouterr().err


def test_rewrite_with_a_grappler_name_offers_commands_that_do_what_they_say(tmp_path, capsys, monkeypatch):
    """`tfsem rewrite grappler:OPT P` is refused (Grappler works on GraphDefs)
    and names the commands that run it; the offered export-then-grappler line,
    run as written, writes the optimized graph and checks it."""
    import shlex

    from tfsem.cli import main
    program = ROOT / "examples" / "first_example.json"
    assert main(["rewrite", "grappler:dependency", str(program)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "not a tfsem pass" in err
    line = err.split("Run it and check its result with: ", 1)[1].split(" (DIR/", 1)[0]
    monkeypatch.chdir(tmp_path)
    for command in line.split(" && "):
        argv = shlex.split(command)
        assert argv[0] == "tfsem"
        assert main(argv[1:]) == 0, command
    out = capsys.readouterr().out
    assert "dependency: sound" in out
    assert (tmp_path / "DIR" / "dependency.pbtxt").is_file()
    assert main(["import", str(tmp_path / "DIR" / "dependency.pbtxt"), "--fetch", "out",
                 "-o", str(tmp_path / "opt.json")]) == 0
    # the offered fuzz command is a whole campaign: checked to be one tfsem takes as written
    from tfsem.cli import build_parser
    fuzz = shlex.split(err.split("fuzz it with: ", 1)[1].strip())
    assert fuzz[:2] == ["tfsem", "fuzz"]
    args = build_parser("fuzz").parse_args(fuzz[1:])
    assert args.targets == ["grappler:dependency"] and args.budget == 600 and args.out == "DIR"
