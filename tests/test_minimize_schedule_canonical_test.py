"""minimize_schedule's lean test of the canonical order against a schedule
(checking/minimize.py `_commutes_to_canonical`, `CANONICAL_TEST_LEAN`;
the tables kept per program object, `SCHEDULE_TABLES_PER_PROGRAM`),
against `commutes_to`, the test it stands for:

- the same answer on random runs of generated programs in both semantics
  modes, and on sequences that are no run (steps shuffled, two exchanged,
  one repeated or dropped, a write step moved first), each against its own
  canonical order; both answers given many times;
- the same on the programs of tests/cases and on random orders of corpus
  graphs' nodes (MobileNetV2's size of schedule is what the test is for);
- `_access_blocks_lean` is `_access_blocks` on all of those, a label of an
  odd phase included;
- minimize_schedule gives the same schedule with the lean test on and off,
  and with the tables kept or made anew;
- a table kept for one program object is never another's: a program made
  anew with an Assign in place of a Read, and an equal twin made apart,
  each get their own."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest

from tfsem.checking import minimize as mini
from tfsem.graphdef import import_path
from tfsem.oracle.jsonio import case_from_json, program_from_json, read_json_file
from tfsem.oracle.program import ASSIGN

from test_minimize_schedule_commuting import _cases, _outcome, _runs

CASES = Path(__file__).resolve().parent / "cases"
CORPUS = Path(__file__).resolve().parent.parent / "examples" / "tensorflow" / "corpus"


def _variants(run: list[str], rng: random.Random) -> list[list[str]]:
    out = [list(run), list(reversed(run))]
    for _ in range(3):
        shuffled = list(run)
        rng.shuffle(shuffled)
        out.append(shuffled)
    if len(run) > 1:
        j = rng.randrange(len(run) - 1)
        out.append(run[:j] + [run[j + 1], run[j]] + run[j + 2:])
        out.append(run + [run[0]])
        out.append(run[:j] + run[j + 1:])
    writes = [k for k, s in enumerate(run) if s.endswith("@write")]
    if writes:
        moved = list(run)
        moved.insert(0, moved.pop(writes[0]))
        out.append(moved)
    return out


def _random_order(p, rng: random.Random, decomposed: bool) -> list[str]:
    """A random linear extension of p's edges (Kahn's, a random ready node
    each time), an Assign as its read and write steps where `decomposed`."""
    indeg = {n: len(p.predecessors(n)) for n in p.node}
    ready = [n for n, k in indeg.items() if k == 0]
    out: list[str] = []
    while ready:
        n = ready.pop(rng.randrange(len(ready)))
        if decomposed and p.node[n].op == ASSIGN:
            out += [n + "@read", n + "@write"]
        else:
            out.append(n)
        for s in p.successors[n]:
            indeg[s] -= 1
            if not indeg[s]:
                ready.append(s)
    return out


def _same_answers(p, schedules, answers) -> None:
    for s in schedules:
        canonical = mini.canonical_order(p, s)
        expected = mini.commutes_to(p, s, canonical)
        assert mini._commutes_to_canonical(p, s, canonical) == expected, s
        assert mini._access_blocks_lean(p, s) == mini._access_blocks(p, s), s
        answers[expected] += 1


def test_the_same_answer_as_commutes_to_on_generated_programs():
    answers = {True: 0, False: 0}
    for i, p, feeds, init, sem in _cases(120, 59):
        try:
            runs = _runs(p, feeds, init, sem, 3, i)
        except Exception:   # noqa: BLE001 (a program the backends do not run)
            continue
        rng = random.Random(i)
        for run in runs:
            _same_answers(p, _variants(run, rng), answers)
    # (both answers given many times: the comparison is not vacuous)
    assert answers[True] >= 150 and answers[False] >= 300, answers


def test_the_same_answer_on_the_cases_and_corpus_graphs():
    answers = {True: 0, False: 0}
    programs = []
    for path in sorted(CASES.rglob("*.json")):
        try:
            case = case_from_json(read_json_file(str(path)), where=path.name)
        except Exception:   # noqa: BLE001 (a case of another kind)
            continue
        programs.append(case.original)
        try:
            programs.append(case.rewritten())
        except Exception:   # noqa: BLE001 (an invalid rewrite, on purpose)
            pass
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    for name in ("keras_mlp_adam", "tf1_mlp_sgd", "keras_transformer_block"):
        (e,) = [e for e in manifest["graphs"] if e["file"].startswith(name + ".")]
        caps = str(CORPUS / e["captures"]) if e.get("captures") else None
        programs.append(import_path(CORPUS / e["file"], e["fetches"], [], e["targets"],
                                    captures=caps).program)
    rng = random.Random(5)
    for k, p in enumerate(programs):
        if p.has_control_flow:
            continue
        for decomposed in (False, True):
            order = _random_order(p, rng, decomposed)
            _same_answers(p, [order, mini.canonical_order(p, order)] +
                          _variants(order, rng)[1:4], answers)
    assert answers[True] >= 100 and answers[False] >= 100, answers


def test_a_label_of_another_phase_is_read_as_before():
    p = _program()
    odd = ["v", "c1", "a1@other", "r1@x", "a1", "r1"]
    assert mini._access_blocks_lean(p, odd) == mini._access_blocks(p, odd)


def test_minimize_schedule_is_the_same_with_the_lean_test_off(monkeypatch):
    taken = compared = 0
    for i, p, feeds, init, sem in _cases(60, 61):
        try:
            runs = _runs(p, feeds, init, sem, 3, i)
        except Exception:   # noqa: BLE001
            continue
        for schedule in runs:
            outcome = _outcome(p, feeds, init, schedule, sem)
            far = time.monotonic() + 60
            answers = []
            for lean, kept in ((True, True), (True, False), (False, True)):
                monkeypatch.setattr(mini, "CANONICAL_TEST_LEAN", lean)
                monkeypatch.setattr(mini, "SCHEDULE_TABLES_PER_PROGRAM", kept)
                answers.append(mini.minimize_schedule(p, feeds, init, schedule, outcome, sem,
                                                      "outputs+state", far))
            assert answers[0] == answers[1] == answers[2], (i, sem, schedule)
            compared += 1
            canonical = mini.canonical_order(p, schedule)
            taken += canonical != list(schedule) and \
                mini._commutes_to_canonical(p, schedule, canonical)
    assert compared >= 120 and taken >= 40, (compared, taken)


def _program(second: str = "Read"):
    nodes = [
        {"name": "v", "op": "Var", "var": "x"},
        {"name": "c1", "op": "Const", "value": 1},
        {"name": "a1", "op": "Assign", "fn": "Snd", "inputs": ["v", "c1"]},
        {"name": "r1", "op": "Read", "inputs": ["v"]},
    ]
    if second == "Read":
        nodes.append({"name": "z", "op": "Read", "inputs": ["v"]})
    else:
        nodes.append({"name": "z", "op": "Assign", "fn": "Snd", "inputs": ["v", "c1"]})
    return program_from_json({
        "variables": {"x": {"dtype": "int64", "shape": []}},
        "nodes": nodes,
        "outputs": {"o1": "r1"},
    })


@pytest.mark.parametrize("kept", [True, False])
def test_a_kept_table_is_never_another_programs(kept, monkeypatch):
    monkeypatch.setattr(mini, "SCHEDULE_TABLES_PER_PROGRAM", kept)
    p = _program("Read")
    # reads of x exchanged: commuting in p
    s, t = ["v", "c1", "a1", "r1", "z"], ["v", "c1", "a1", "z", "r1"]
    assert mini._commutes_to_canonical(p, t, mini.canonical_order(p, t)) == \
        mini.commutes_to(p, t, mini.canonical_order(p, t))
    assert mini._access_blocks_lean(p, s) == mini._access_blocks(p, s)
    # the same names, z now an Assign of x: the read and the write exchanged
    # do not commute, and the table says so (not p's, where z reads)
    q = _program("Assign")
    assert mini._access_blocks_lean(q, s) == mini._access_blocks(q, s)
    assert mini._access_blocks_lean(q, s) != mini._access_blocks_lean(p, s)
    assert mini._commutes_to_canonical(q, t, mini.canonical_order(q, t)) == \
        mini.commutes_to(q, t, mini.canonical_order(q, t))
    # an equal twin made apart: its own entry, the same answers
    twin = _program("Read")
    assert mini._access_blocks_lean(twin, s) == mini._access_blocks(twin, s)
    assert mini._topological_index(twin) == mini._topological_index(p)
    if kept:
        assert mini._schedule_tables(p) is not mini._schedule_tables(twin)
        assert mini._schedule_tables(p) is mini._schedule_tables(p)
