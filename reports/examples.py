"""A worked example for previewing the report without a campaign, and for the
report's tests: seed 002's load/store reordering, broken by hoisting a Read
above its control dependency (what XLA's read hoisting does).

The verdict is computed here from the fast oracle (`outcome_set`), in the
shape `tfsem check --json` prints (SPEC 4), so the pages are exercised on real
outcomes and real witness schedules, in either semantics mode.
"""

from __future__ import annotations

from typing import Any

from tfsem.generators.families import load_store
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import Case, make_case
from tfsem.oracle.program import ASSIGN, READ, ControlIn, Program
from tfsem.oracle.values import value_to_json


def drop_control_inputs(p: Program, node: str) -> Program:
    """`node` without its control inputs: the Read may now happen first."""
    nodes = tuple(n.replace(inputs=tuple(i for i in n.inputs if not isinstance(i, ControlIn)))
                  if n.name == node else n for n in p.nodes)
    return p.replace(nodes=nodes).validated()


def unsound_verdict(original: Program, rewritten: Program, feeds: dict, init: dict,
                    semantics: str = "atomic", observe: str = "outputs+state",
                    confirmed: tuple[str, ...] = ("oracle", "numpy")) -> dict[str, Any]:
    """The unsound verdict object for the first outcome of `rewritten` that
    `original` lacks at σ = (feeds, init); raises ValueError if there is none."""
    orig = outcome_set(original, feeds, init, semantics, observe)
    rew = outcome_set(rewritten, feeds, init, semantics, observe)
    originals = list(orig.items())
    for outcome, schedule in rew.items():
        if outcome not in orig:
            return {
                "verdict": "unsound",
                "differs": outcome.first_difference([o for o, _ in originals]),
                "counterexample": {
                    "feeds": {k: value_to_json(v) for k, v in feeds.items()},
                    "init": {k: value_to_json(v) for k, v in init.items()},
                    "schedule": list(schedule),
                    "key_steps": [t for t in schedule if rewritten.node[t.partition("@")[0]].op in (READ, ASSIGN)],
                    "outcome": outcome.to_json(),
                    "original_outcomes": [dict(o.to_json(), schedule=list(w)) for o, w in originals],
                    "original_count": orig.count,
                },
                "confirmed": list(confirmed),
                "semantics": semantics,
                "observe": observe,
            }
    raise ValueError("no outcome of the rewrite is missing from the original's")


def load_store_finding(semantics: str = "atomic") -> tuple[Case, dict[str, Any]]:
    """(case, verdict): the Read r0 of seed 002's load/store example hoisted
    above `*X = 1`; (r0 = 0, X = 1) becomes possible."""
    p, feeds, init = load_store()
    q = drop_control_inputs(p, "r0")
    case = make_case(p, q, semantics=semantics, expect="unsound",
                     note="load/store reordering (Concurrency Semantics for TensorFlow Resource Variables): "
                          "Read r0 hoisted above its control edge from wx1")
    return case, unsound_verdict(p, q, feeds, init, semantics)


def sample_index_data() -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    """Plain data in the shapes `render_index` documents (invented figures,
    for previews and tests only)."""
    campaigns = [
        {"id": 3, "started": "2025-01-03T02:00:00Z", "ended": "2025-01-03T02:10:00Z", "budget_s": 600,
         "settings": {"semantics": ["atomic", "decomposed"], "observe": "outputs+state", "workers": 2,
                      "max_nodes": 12, "seed": 3},
         "version": "0.1.0", "host": "ci-runner"},
        {"id": 2, "started": "2025-01-02T02:00:00Z", "ended": "2025-01-02T02:10:00Z", "budget_s": 600,
         "settings": {"workers": 2}, "version": "0.1.0"},
    ]
    pass_stats = [
        {"pass": "hoist-reads", "programs": 4210, "seconds": 150.0,
         "findings": {"unsound": 1, "invalid": 0, "crash": 0, "timeout": 0},
         "claims": {"atomic": "unsound", "decomposed": "unsound"}},
        {"pass": "cse", "programs": 6120, "seconds": 150.0,
         "findings": {"unsound": 0, "invalid": 0, "crash": 0, "timeout": 0},
         "claims": {"atomic": "sound", "decomposed": "sound"}},
    ]
    findings = [
        {"id": "f1", "pass": "hoist-reads", "kind": "unsound", "status": "new", "semantics": "atomic",
         "observe": "outputs+state", "differs": {"variable": "X"}, "nodes": 11,
         "first_seen": "2025-01-03T02:01:12Z", "last_seen": "2025-01-03T02:01:12Z", "seen": 1,
         "page": "findings/f1.html"},
        {"id": "f0", "pass": "hoist-reads", "kind": "unsound", "status": "known", "semantics": "decomposed",
         "observe": "outputs+state", "differs": {"variable": "X"}, "nodes": 11,
         "first_seen": "2025-01-02T02:03:40Z", "last_seen": "2025-01-03T02:02:00Z", "seen": 4,
         "page": "findings/f0.html"},
    ]
    history = [
        {"campaign": 1, "started": "2025-01-01T02:00:00Z", "findings": 0, "new": 0, "programs_per_second": 31.5},
        {"campaign": 2, "started": "2025-01-02T02:00:00Z", "findings": 1, "new": 1, "programs_per_second": 33.0},
        {"campaign": 3, "started": "2025-01-03T02:00:00Z", "findings": 2, "new": 1, "programs_per_second": 34.4},
    ]
    return campaigns, pass_stats, findings, history
