"""The program model, its step semantics, and the fast outcome-set oracle.

Layout: `values` (TF values and errors), `functions` (the function registry),
`program` (programs and validation), `jsonio` (the JSON formats),
`semantics` (section 3.2.1 transcribed: the reference), `explore` (the fast
oracle), `outcomes` (what a run yields)."""

from . import opdefs  # noqa: F401  (registers the op registry's families: math, array, list)
from . import state_ops  # noqa: F401  (multi-variable updates; the state family is opdefs.state)
from .dispatch import outcome_set
from .explore import BudgetExceeded, OutcomeSet
from .jsonio import (Case, case_from_json, case_to_json, load_case, load_program,
                     program_from_json, program_to_json)
from .outcomes import Outcome
from .program import Node, Program, ProgramError, TensorType, Violation, validate
from .semantics import ATOMIC, DECOMPOSED, reference_outcomes, run_schedule
from .values import Error, Tensor, Value

__all__ = ["ATOMIC", "DECOMPOSED", "BudgetExceeded", "Case", "Error", "Node", "Outcome",
           "OutcomeSet", "Program", "ProgramError", "Tensor", "TensorType", "Value",
           "Violation", "case_from_json", "case_to_json", "load_case", "load_program",
           "outcome_set", "program_from_json", "program_to_json", "reference_outcomes",
           "run_schedule", "validate"]
