"""A function with no concrete model (an op of an imported graph that tfsem
only knows as an uninterpreted function) never turns into a wrong verdict or
an exception out of the library: where a counterexample would have to be run
concretely, check_rewrite answers `unknown` and names the node; where the
proof needs no run, the proof stands."""

from __future__ import annotations

from tfsem.checking import check_rewrite
from tfsem.oracle.jsonio import program_from_json


def _program(nodes, outputs):
    return program_from_json({"variables": ["x"], "nodes": nodes, "outputs": outputs})


OPAQUE = "tf.Mystery/1/1"   # an op with no model: tf.OP/N_IN/N_OUT


def test_a_difference_through_an_opaque_op_is_unknown_naming_the_node():
    # P: out = Mystery(x + 1); P': out = Mystery(x): Z3 finds a candidate (the
    # uninterpreted function may differ), but confirming it needs Mystery run
    p = _program([{"name": "v", "op": "Var", "var": "x"},
                  {"name": "r", "op": "Read", "inputs": ["v"]},
                  {"name": "one", "op": "Const", "value": 1},
                  {"name": "s", "op": "Add", "inputs": ["r", "one"]},
                  {"name": "m", "op": OPAQUE, "inputs": ["s"], "tf_attrs": {}}], {"out": "m"})
    q = _program([{"name": "v", "op": "Var", "var": "x"},
                  {"name": "r", "op": "Read", "inputs": ["v"]},
                  {"name": "m", "op": OPAQUE, "inputs": ["r"], "tf_attrs": {}}], {"out": "m"})
    v = check_rewrite(p, q, timeout=10)
    assert v.verdict == "unknown", (v.verdict, v.reason)
    assert "m" in v.reason and "Mystery" in v.reason


def test_a_proof_through_an_opaque_op_needs_no_run():
    # the same argument on both sides: equal whatever Mystery computes
    nodes = [{"name": "v", "op": "Var", "var": "x"},
             {"name": "r", "op": "Read", "inputs": ["v"]},
             {"name": "m", "op": OPAQUE, "inputs": ["r"], "tf_attrs": {}}]
    p = _program(nodes, {"out": "m"})
    q = _program(nodes + [{"name": "dead", "op": OPAQUE, "inputs": ["r"], "tf_attrs": {}}], {"out": "m"})
    assert check_rewrite(p, q, timeout=10).verdict == "sound"


def _mystery_pair():
    p = _program([{"name": "v", "op": "Var", "var": "x"},
                  {"name": "r", "op": "Read", "inputs": ["v"]},
                  {"name": "one", "op": "Const", "value": 1},
                  {"name": "s", "op": "Add", "inputs": ["r", "one"]},
                  {"name": "m", "op": OPAQUE, "inputs": ["s"], "tf_attrs": {}}], {"out": "m"})
    q = _program([{"name": "v", "op": "Var", "var": "x"},
                  {"name": "r", "op": "Read", "inputs": ["v"]},
                  {"name": "m", "op": OPAQUE, "inputs": ["r"], "tf_attrs": {}}], {"out": "m"})
    return p, q


def test_an_unknown_names_its_cause_in_text_json_and_html(tmp_path, capsys):
    # issue 23: the op with no concrete model is the cause, never "the check
    # ran out of budget"
    import json

    from tfsem.cli import main
    from tfsem.oracle.jsonio import program_to_json

    p, q = _mystery_pair()
    (tmp_path / "p.json").write_text(json.dumps(program_to_json(p)))
    (tmp_path / "q.json").write_text(json.dumps(program_to_json(q)))
    html = tmp_path / "page.html"
    assert main(["check", str(tmp_path / "p.json"), str(tmp_path / "q.json"),
                 "--html", str(html)]) == 3
    head = capsys.readouterr().out.splitlines()[0]
    assert head.startswith("unknown: ") and "Mystery" in head and "budget" not in head, head
    assert main(["check", str(tmp_path / "p.json"), str(tmp_path / "q.json"), "--json"]) == 3
    data = json.loads(capsys.readouterr().out)
    assert "Mystery" in data["stats"]["cause"] and "budget" not in data["stats"]["cause"]
    assert data["reason"].startswith(data["stats"]["cause"])
    page = html.read_text()
    h1 = page[page.index("<h1>"):page.index("</h1>")]
    assert "Mystery" in h1 and "ran out of budget" not in page, h1


def test_the_cause_of_an_unknown_is_its_reason_first_clause():
    from tfsem.checking.verdict import Verdict, cause_of

    assert cause_of("the time budget (2 s) ran out during the symbolic search of the original "
                    "program (12 states explored in 1.2 s); and no σ could be tried concretely") \
        == ("the time budget (2 s) ran out during the symbolic search of the original program "
            "(12 states explored in 1.2 s)")
    assert Verdict("unknown", "cannot run op X concretely: no model; more").cause \
        == "cannot run op X concretely: no model"
    assert Verdict("sound", "proved").cause is None
