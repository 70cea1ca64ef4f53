"""Shared by the tests of the structural rule's shape rules (R3)-(R5):
tests/test_structural_shape_rules.py and tests/test_review_attacks_shape_rules.py."""

from __future__ import annotations

import pytest

from tfsem.checking import structural


@pytest.fixture(autouse=True)
def these_rules_alone(monkeypatch):
    """(R3)-(R5) without (S): a reshape to the shape its argument has
    (checking/static_shapes.py) proves some of the same rewrites from the
    declared shapes of SPEC's σ (tests/test_static_shapes.py); these tests
    hold R3-R5 to their own, stronger claim, at σ of every shape.  ((R4)
    was two rules, the other one, (F1), switched off here too; they are one
    rule now, checking/product_by_one.py, tested with them.)"""
    monkeypatch.setattr(structural, "RESHAPES_BY_SHAPE", False)
