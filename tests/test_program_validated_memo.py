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
