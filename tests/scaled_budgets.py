"""Wall-clock budgets of tests on a machine whose load is unknown.

What a campaign, a verify run or a fuzz loop judges in a wall-clock budget
depends on the CPU it gets: a parallel run of the suite, or a shared machine,
gives it less.  A test that needs something found (a crash, a hang, a
counterexample, one judged program) runs again, afresh, with three and then
nine times the budget when the first run found nothing; it asserts after
every run what must hold at any budget, and after the last what it needed.
"""

from __future__ import annotations


def scaled(budget: float) -> tuple[float, ...]:
    """The budgets to try, in order: `budget`, then three and nine times it."""
    return (budget, 3 * budget, 9 * budget)
