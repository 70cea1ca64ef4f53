"""The documentation a user reads stands on its own: README.md and docs/ point
at nothing outside the repository, their relative links resolve, and the
example pass that docs/writing-a-pass.md walks through does what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tfsem.checking import check_rewrite
from tfsem.oracle.jsonio import program_from_json
from tfsem.rewrites.registry import get_pass

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# What a user who cloned the repository does not have: the team's shared folder,
# its planning vocabulary, and the papers by file number instead of by title.
OUTSIDE = re.compile(r"\.\./shared|\bthe card\b|\bseed 00[0-9]\b|\bseed00[0-9]\b(?!_)|"
                     r"\bthe (?:oracle|rewrites|GraphDef) issue\b|\bSPEC\b")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_refers_to_nothing_outside_the_repository(page):
    bad = [f"{page.name}:{n}: {line.strip()}"
           for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
           if OUTSIDE.search(line)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page):
    text = page.read_text(encoding="utf-8")
    missing = [target for target in LINK.findall(text)
               if "://" not in target and not (page.parent / target).exists()]
    assert not missing, f"{page.name} links to files that do not exist: {missing}"


def test_docs_index_lists_every_page():
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    assert pages <= set(LINK.findall(index))


def test_no_content_was_lost_moving_the_readme_into_docs():
    """The README's sections moved to docs/ (one screen per user's route):
    a sentence from each moved section is still found in docs/."""
    docs = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md"))
    for sentence in ("The folders are the architecture; data flows one way",       # layout
                     "`Assign-f` sets x to `f(w, v)`; it changes nothing",          # semantics
                     "without enumerating firing orders: steps that conflict",      # oracle
                     "lost_update(5)         outputs+state                 5",      # benchmarks
                     "## Checking at scale",
                     "How a verdict is reached (`checking/`), in stages like Alive2",
                     "**Why no protobuf dependency.**",
                     "What real XLA does with the examples of",
                     "Bad input of any kind — a malformed program or graph",
                     "tensorflow-cpu (extra `tensorflow`): only for `tfsem grappler`",
                     "runs the default suite (Hypothesis profile `default`)",
                     "`tfsem reduce CASE -o SMALLER`",
                     "Shell completion: `source <(tfsem completion bash)`"):
        assert sentence in docs, sentence


def _identity_chain():
    return program_from_json({
        "variables": ["x"],
        "nodes": [
            {"name": "vx", "op": "Var", "var": "x"},
            {"name": "r", "op": "Read", "inputs": ["vx"]},
            {"name": "i1", "op": "Identity", "inputs": ["r"]},
            {"name": "i2", "op": "Identity", "inputs": ["i1"]},
            {"name": "vx2", "op": "Var", "var": "x"},
            {"name": "w", "op": "Write", "inputs": ["vx2", "$B", "^i2"]},
        ],
        "outputs": {"out": "i2"},
    })


def test_example_pass_removes_identities_and_is_proved_sound():
    p = _identity_chain()
    example = get_pass(str(ROOT / "examples" / "passes" / "drop_identity.py") + ":PASS")
    assert example.name == "drop-identity"
    q = example(p)
    assert [n.op for n in q.nodes].count("Identity") == 0
    # the Write still waits for the Read: the ordering the Identity carried is kept
    assert "r" in {i.node for i in q.node["w"].control_inputs}
    for semantics in ("atomic", "decomposed"):
        assert check_rewrite(p, q, semantics=semantics).verdict == "sound"
