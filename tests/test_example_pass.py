"""The example pass of docs/writing-a-pass.md (examples/passes/drop_identity.py)
keeps every ordering an Identity carried."""

from __future__ import annotations

from pathlib import Path

from tfsem.checking import check_rewrite
from tfsem.oracle.jsonio import program_from_json
from tfsem.rewrites.registry import get_pass

ROOT = Path(__file__).resolve().parent.parent


def test_a_consumer_of_an_identity_still_waits_for_its_control_inputs():
    """Found by `tfsem verify` in decomposed/outputs: an Assign that reads an
    Identity waiting for a Write to the same variable lost that wait."""
    drop = get_pass(str(ROOT / "examples" / "passes" / "drop_identity.py") + ":PASS")
    p = program_from_json({
        "format": "tfsem.program/1", "variables": ["x1"],
        "nodes": [{"name": "v0", "op": "Var", "var": "x1"},
                  {"name": "w1", "op": "Write", "inputs": ["v0", "$f0"]},
                  {"name": "add2", "op": "Add", "inputs": ["$f1", "$f0"]},
                  {"name": "identity3", "op": "Identity", "inputs": ["add2", "^w1"]},
                  {"name": "a6", "op": "Assign", "fn": "Mul", "inputs": ["v0", "identity3"]},
                  {"name": "mr14", "op": "Read", "inputs": ["v0"]}],
        "outputs": {"mo14": "mr14"}})
    q = drop(p)
    assert "identity3" not in q.node
    assert "w1" in {i.node for i in q.node["a6"].inputs}
    for semantics in ("atomic", "decomposed"):
        for observe in ("outputs", "outputs+state"):
            verdict = check_rewrite(p, q, semantics, observe, timeout=20)
            assert verdict.verdict == "sound", (semantics, observe, verdict.describe())
