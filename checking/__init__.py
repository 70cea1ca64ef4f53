"""Refinement checking: is a rewrite sound for every input (SPEC section 3)?

Layout: `symbolic` (the oracle's search over terms), `encode` (terms in Z3,
with numpy's semantics), `check` (the verdict pipeline), `minimize` (readable
counterexamples), `verdict` (the Verdict and its JSON form).

    from tfsem.checking import check_rewrite
    verdict = check_rewrite(original, rewritten)      # Program or its JSON
    verdict.verdict, verdict.to_json()
"""

from .check import DEFAULT_TIMEOUT, check_case, check_rewrite, interface_problems
from .verdict import (INVALID, NO_COUNTEREXAMPLE, SOUND, UNKNOWN, UNSOUND, VERDICTS,
                      Counterexample, Verdict)

__all__ = ["DEFAULT_TIMEOUT", "INVALID", "NO_COUNTEREXAMPLE", "SOUND", "UNKNOWN", "UNSOUND",
           "VERDICTS", "Counterexample", "Verdict", "check_case", "check_rewrite",
           "interface_problems"]
