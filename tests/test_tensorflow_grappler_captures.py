"""`tfsem grappler --captures FILE`: a concrete function's graph (its variables
are DT_RESOURCE Placeholders named only by a capture map) checked through the
command, and a bad capture map refused with exit 2, naming file and entry.

Needs TensorFlow (the extra tfsem[tensorflow]); skipped, saying so, where it
cannot be imported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("tensorflow", reason="needs the extra tfsem[tensorflow] (tensorflow-cpu)")

from tfsem.cli import main  # noqa: E402

CORPUS = Path(__file__).resolve().parent.parent / "examples" / "tensorflow" / "corpus"
GRAPH = CORPUS / "tf_module_counter.pbtxt"        # a tf.Module's concrete function
CAPTURES = CORPUS / "tf_module_counter.captures.json"


def _grappler(capsys, *extra: str) -> tuple[int, str, str]:
    rc = main(["grappler", str(GRAPH), "--optimizer", "dependency", *extra])
    out, err = capsys.readouterr()
    return rc, out, err


def test_a_concrete_function_graph_is_checked_with_its_capture_map(capsys):
    rc, out, err = _grappler(capsys, "--fetch", "Identity", "--captures", str(CAPTURES), "--json")
    assert rc == 0, err
    data = json.loads(out)
    assert data["captures"] == str(CAPTURES)
    (row,) = data["results"]
    # the dependency optimizer removes the function's NoOp: a real change, proved
    assert row["status"] == "checked" and row["changed"]
    assert row["nodes_after"] < row["nodes_before"]
    assert row["verdict"]["verdict"] == "sound"
    assert row["real"]["verdict"] == "sound"


def test_without_the_capture_map_the_graph_is_refused_naming_captures(capsys):
    rc, out, err = _grappler(capsys, "--fetch", "Identity")
    assert rc == 2 and out == ""
    assert "uncaptured-resource" in err and "--captures FILE" in err
    assert "Traceback" not in err


def test_the_manifest_entry_gives_the_capture_map_when_it_gives_the_fetches(capsys):
    rc, out, err = _grappler(capsys)
    assert rc == 0, err
    assert f"captures from {CAPTURES}: 2 variables" in out
    assert "dependency: sound" in out


def _first(caps: dict) -> str:
    return next(iter(caps))


@pytest.mark.parametrize("change, entry, rule", [
    (lambda c: "{\"x\": 3", None, "bad-captures"),
    (lambda c: json.dumps(["count"]), None, "bad-captures"),
    (lambda c: json.dumps({_first(c): "count"}), "first", "bad-captures"),
    (lambda c: json.dumps({_first(c): dict(c[_first(c)], dtype="string")}), "first",
     "unsupported-dtype"),
    (lambda c: json.dumps({_first(c): dict(c[_first(c)], shape=[-1])}), "first",
     "unknown-shape"),
    (lambda c: json.dumps(dict(c, no_such_node={"variable": "v", "dtype": "float32",
                                                "shape": []})), "'no_such_node'", "unknown-node"),
    (lambda c: json.dumps(dict(c, Identity={"variable": "v", "dtype": "float32", "shape": []})),
     "'Identity'", "bad-captures"),
])
def test_a_bad_capture_map_exits_2_naming_file_and_entry(tmp_path, capsys, change, entry, rule):
    caps = json.loads(CAPTURES.read_text())
    bad = tmp_path / "bad.captures.json"
    bad.write_text(change(caps))
    rc, out, err = _grappler(capsys, "--fetch", "Identity", "--captures", str(bad))
    assert rc == 2 and out == ""
    assert "Traceback" not in err
    assert f"{bad}" in err and f"[{rule}]" in err
    if entry == "first":
        entry = repr(_first(caps))
    if entry:
        assert f"{bad}: {entry}:" in err


def test_a_missing_capture_map_exits_2(tmp_path, capsys):
    rc, out, err = _grappler(capsys, "--fetch", "Identity", "--captures",
                             str(tmp_path / "absent.json"))
    assert rc == 2 and "Traceback" not in err
    assert "absent.json: No such file or directory [unreadable]" in err
