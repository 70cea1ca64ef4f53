"""`Program.validated()` remembers that a program was found valid (a check
validates its original every time, and one original is checked against
many rewrites): the second call validates nothing, and a change to what
validity depends on -- a function the program names replaced by hand or
registered again, `strict` -- validates again, with the answer a fresh
validation gives."""

from __future__ import annotations

import dataclasses

import pytest

from tfsem.oracle import functions as fns
from tfsem.oracle import program as program_module
from tfsem.oracle.program import DataIn, Node, Program, ProgramError, TensorType


def _program() -> Program:
    return Program({"x": TensorType("int64", ())},
                   (Node("x", "Var", (), {"var": "x"}),
                    Node("r", "Read", (DataIn("x"),), {}),
                    Node("n", "Neg", (DataIn("r"),), {}),
                    Node("a", "Assign", (DataIn("x"), DataIn("n")), {"fn": "Add"})),
                   {"out": DataIn("n")})


@pytest.fixture
def counted(monkeypatch):
    calls = []
    real = program_module.validate

    def validate(p, strict=False):
        calls.append(strict)
        return real(p, strict=strict)

    monkeypatch.setattr(program_module, "validate", validate)
    return calls


def test_a_valid_program_is_validated_once(counted):
    p = _program()
    assert p.validated() is p and p.validated() is p
    assert counted == [False]
    with pytest.raises(ProgramError):   # (another question: asked, and refused)
        p.validated(strict=True)
    assert counted == [False, True]


def test_a_function_replaced_by_hand_validates_again(counted, monkeypatch):
    p = _program()
    p.validated()
    # the same object put back: still the registry's, nothing asked
    monkeypatch.setitem(fns._REGISTRY, "Neg", fns._REGISTRY["Neg"])
    p.validated()
    assert counted == [False]
    # Neg taking two arguments now (no version change): the program is not valid
    monkeypatch.setitem(fns._REGISTRY, "Neg", dataclasses.replace(fns._REGISTRY["Neg"], n_in=2))
    with pytest.raises(ProgramError):
        p.validated()
    assert counted == [False, False]
    monkeypatch.setitem(fns._REGISTRY, "Neg", dataclasses.replace(fns._REGISTRY["Neg"], n_in=1))
    assert p.validated() is p          # (valid again: asked again)
    assert counted == [False, False, False]


def test_an_assign_function_replaced_by_hand_validates_again(counted, monkeypatch):
    p = _program()
    p.validated()
    monkeypatch.setitem(fns._REGISTRY, "Add", dataclasses.replace(fns._REGISTRY["Add"], n_in=3))
    with pytest.raises(ProgramError):
        p.validated()


def test_a_registration_validates_again(counted, monkeypatch):
    p = _program()
    p.validated()
    monkeypatch.setattr(fns, "version", fns.version + 1)
    p.validated()
    assert counted == [False, False]


def test_an_invalid_program_is_refused_every_time(counted):
    p = Program({}, (Node("n", "Neg", (DataIn("missing"),), {}),), {"out": DataIn("n")})
    for _ in range(2):
        with pytest.raises(ProgramError):
            p.validated()
    assert counted == [False, False]


# -- `validate` itself answers from the memo -----------------------------------
#
# The checker validates every rewrite it is given, which the graph importer
# has validated already: `validate` answers [] for a program
# `Program.validated` found valid while what that answer depends on is as it
# was, and works the answer out otherwise.


@pytest.fixture
def worked_out(monkeypatch):
    calls = []
    real = program_module._violations

    def violations(p, strict):
        calls.append(strict)
        return real(p, strict)

    monkeypatch.setattr(program_module, "_violations", violations)
    return calls


def _cases_and_generated() -> list[Program]:
    import json
    from pathlib import Path
    from tfsem.generators.strategies import random_programs
    from tfsem.oracle.jsonio import program_from_json
    out = []
    for path in sorted((Path(__file__).parent / "cases").glob("*.json")):
        case = json.loads(path.read_text())
        for side in ("original", "rewritten"):
            if isinstance(case.get(side), dict):
                try:
                    out.append(program_from_json(case[side]))
                except Exception:   # noqa: BLE001 (a malformed case's side: no program)
                    pass
    out.extend(random_programs(3, 40, max_nodes=12))
    return out


def test_validate_of_a_validated_program_answers_as_worked_out(worked_out):
    programs = _cases_and_generated()
    assert len(programs) > 100
    valid = 0
    for p in programs:
        fresh = program_module._violations(p, False)
        try:
            p.validated()
        except ProgramError as exc:
            assert exc.violations == fresh and program_module.validate(p) == fresh
            continue
        valid += 1
        assert fresh == []
        worked_out.clear()
        assert program_module.validate(p) == []
        assert worked_out == []            # (the memo's answer)
        strict = program_module.validate(p, strict=True)
        assert strict == program_module._violations(p, True)
        assert worked_out[0] is True       # (another question: worked out)
    assert valid > 50


def test_validate_works_the_answer_out_after_a_function_changed(worked_out, monkeypatch):
    p = _program()
    p.validated()
    worked_out.clear()
    assert program_module.validate(p) == [] and worked_out == []
    # Neg taking two arguments now, replaced by hand (no version change)
    monkeypatch.setitem(fns._REGISTRY, "Neg", dataclasses.replace(fns._REGISTRY["Neg"], n_in=2))
    found = program_module.validate(p)
    assert found and worked_out == [False]
    assert found == program_module._violations(p, False)
    # a registration (the version moves): worked out again
    monkeypatch.setitem(fns._REGISTRY, "Neg", dataclasses.replace(fns._REGISTRY["Neg"], n_in=1))
    monkeypatch.setattr(fns, "version", fns.version + 1)
    worked_out.clear()
    assert program_module.validate(p) == [] and worked_out == [False]


def test_validate_of_a_program_never_validated_works_it_out(worked_out):
    p = _program()
    assert program_module.validate(p) == [] and worked_out == [False]
    bad = Program({}, (Node("n", "Neg", (DataIn("missing"),), {}),), {"out": DataIn("n")})
    assert program_module.validate(bad) and worked_out == [False, False]
