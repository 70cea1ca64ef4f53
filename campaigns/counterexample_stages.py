"""The stages after a counterexample, checked on generated rewrites
(docs/review-counterexample-stages.md).

For each generated program P (generators/strategies.py `random_programs`,
several dtypes) and each rewrite P' of it (the built-in loop-free passes
of rewrites/, and P with one control edge dropped), `check_rewrite` in
both semantics modes; for every `unsound` verdict:

1. the rewritten schedule shown, replayed on P' by the reference semantics
   (oracle/semantics.py `run_schedule`), gives the outcome shown;
2. each witness shown, replayed on P, gives the outcome shown beside it;
3. the outcome shown is not in Outcomes(P, σ), enumerated by the
   reference semantics (`behaviours`, every run) where that is small, and
   the listed originals are exactly that set (when all are listed);
4. σ read back from the verdict's JSON (`value_from_json`) is σ bit for bit
   (`values.exact`), and (1) and (3) hold at it;
5. the first difference (`differs`) is in full in the JSON: its value
   there reads back to the outcome's value (SPEC equality; a NaN whose
   sign or payload the format does not write is counted, "nan-bits");
6. the check again with the commuting shortcut off
   (minimize.COMMUTE_WITHOUT_REPLAY) shows the same schedules at the same σ
   (where neither check's minimization was cut by its budget).

Run:  python -m tfsem.campaigns.counterexample_stages COUNT SEED [MAX_NODES]
(prints one line of counts; every failure with its program pair).
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import time
from typing import Any

from tfsem.checking import check_rewrite
from tfsem.checking import minimize as mini
from tfsem.generators.strategies import random_programs
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.jsonio import program_to_json
from tfsem.oracle.program import Program
from tfsem.oracle.semantics import behaviours, graph_of, outcome_of, run_schedule
from tfsem.oracle.values import exact, value_from_json

DTYPES = ("int64", "int32", "float32", "float16", "bfloat16")
PASSES = ("prune", "prune-keep-state", "cse", "cse-ignore-control", "cse-stateful",
          "hoist-reads", "hoist-reads-safe", "split-assign", "fuse-assign", "reduce-control",
          "const-fold", "dce")


def drop_control_edge(p: Program, rng: random.Random) -> Program | None:
    """P with one control edge (node to node) dropped, or None without one."""
    from tfsem.oracle.program import ControlIn
    edges = [(n.name, i) for n in p.nodes for i in n.inputs if isinstance(i, ControlIn)]
    if not edges:
        return None
    name, gone = rng.choice(edges)
    nodes = [n if n.name != name else
             dataclasses.replace(n, inputs=tuple(i for i in n.inputs if i != gone))
             for n in p.nodes]
    try:
        return p.replace(nodes=tuple(nodes)).validated()
    except Exception:   # noqa: BLE001 (not a program)
        return None


def rewrites_of(p: Program, rng: random.Random):
    from tfsem.rewrites.registry import builtin_passes
    passes = builtin_passes()
    for name in PASSES:
        try:
            q = passes[name](p)
        except Exception:   # noqa: BLE001 (the pass refuses the program)
            continue
        if q != p:
            yield name, q
    q = drop_control_edge(p, rng)
    if q is not None:
        yield "drop-control-edge", q


def _outcome(p, feeds, init, schedule, sem, observe):
    return outcome_of(p, graph_of(p), run_schedule(p, feeds, init, list(schedule), sem), observe)


def _reference_set(p, feeds, init, sem, observe, max_states=20_000):
    out = set()
    g = graph_of(p)
    for _, s in behaviours(p, feeds, init, sem, True, max_states):
        out.add(outcome_of(p, g, s, observe))
    return out


def audit(p: Program, q: Program, v, sem: str, observe: str,
          notes: list[str] | None = None) -> list[str]:
    """The problems of an `unsound` verdict's counterexample (empty: none);
    `notes` gets what is no problem but worth counting ("nan-bits": the
    first difference a NaN whose sign or payload the JSON does not write)."""
    problems: list[str] = []
    notes = [] if notes is None else notes
    c = v.counterexample
    try:
        if _outcome(q, c.feeds, c.init, c.schedule, sem, observe) != c.outcome:
            problems.append("the rewritten schedule shown does not give the outcome shown")
    except ValueError as exc:
        problems.append(f"the rewritten schedule shown is no run of P': {exc}")
    for o, w in c.original_outcomes:
        try:
            if _outcome(p, c.feeds, c.init, w, sem, observe) != o:
                problems.append(f"a witness shown does not give its outcome: {' '.join(w)}")
        except ValueError as exc:
            problems.append(f"a witness shown is no run of P: {exc}")
    try:
        ref = _reference_set(p, c.feeds, c.init, sem, observe)
    except BudgetExceeded:
        ref = None
    if ref is not None:
        if c.outcome in ref:
            problems.append("the outcome shown IS an outcome of P (reference semantics)")
        if c.original_count <= len(c.original_outcomes) and \
                {o for o, _ in c.original_outcomes} != ref:
            problems.append("the original outcomes listed are not Outcomes(P, σ)")
    data = json.loads(json.dumps(v.to_json()))
    cx = data["counterexample"]
    for table, mine in (("feeds", c.feeds), ("init", c.init)):
        back = {k: value_from_json(x) for k, x in cx[table].items()}
        if set(back) != set(mine) or any(exact(back[k]) != exact(mine[k]) for k in mine):
            problems.append(f"σ's {table} read back from the JSON are not σ bit for bit")
    if v.differs:
        ((kind, name),) = v.differs.items()
        mine = dict(c.outcome.parts()).get((kind, name))
        raw = cx["outcome"]["outputs" if kind == "output" else "state"].get(name)
        try:
            back = value_from_json(raw)
            if mine is None or back != mine:
                problems.append(f"the first difference {kind} {name!r} is not in full in the JSON")
            elif exact(back) != exact(mine):
                # (SPEC equality: every NaN one NaN; the value format writes
                # "nan" for a NaN of any sign or payload)
                notes.append("nan-bits")
        except Exception as exc:   # noqa: BLE001
            problems.append(f"the first difference {kind} {name!r} does not read back: {exc}")
    return problems


def campaign(count: int, seed: int, timeout: float = 2.0, shortcut_off: bool = True,
             max_nodes: int = 9) -> dict:
    counts: dict[str, Any] = {"programs": 0, "checks": 0, "unsound": 0, "audited": 0,
                              "failures": [], "confirmed_numpy": 0, "shortcut_compared": 0}
    rng = random.Random(seed)
    t0 = time.monotonic()
    for k in range(count):
        dtype = DTYPES[k % len(DTYPES)]
        (p,) = random_programs(1, seed * 100_003 + k, max_nodes=max_nodes, dtype=dtype)
        if p.has_control_flow:
            continue
        counts["programs"] += 1
        for name, q in rewrites_of(p, rng):
            sem = ("atomic", "decomposed")[rng.randrange(2)]
            observe = "outputs+state"
            counts["checks"] += 1
            try:
                v = check_rewrite(p, q, timeout=timeout, semantics=sem, observe=observe)
            except Exception as exc:   # noqa: BLE001
                counts["failures"].append((name, f"check raised {type(exc).__name__}: {exc}",
                                           program_to_json(p), program_to_json(q), sem))
                continue
            if v.verdict != "unsound" or v.counterexample is None:
                continue
            counts["unsound"] += 1
            counts["confirmed_numpy"] += "numpy" in v.confirmed
            notes: list[str] = []
            problems = audit(p, q, v, sem, observe, notes)
            for n in notes:
                counts[n] = counts.get(n, 0) + 1
            if shortcut_off:
                # the whole check again with the commuting shortcut off: at
                # the same σ, the same schedule shown (the replaying path)
                c = v.counterexample
                mini.COMMUTE_WITHOUT_REPLAY = False
                try:
                    w = check_rewrite(p, q, timeout=timeout, semantics=sem, observe=observe)
                finally:
                    mini.COMMUTE_WITHOUT_REPLAY = True
                wc = w.counterexample
                # (compared where neither check's minimization was cut by
                # its budget: on a loaded machine a 2 s check may skip it)
                cut = any(x.stats.get(k) for x in (v, w)
                          for k in ("minimize", "minimize_witnesses"))
                if wc is not None and not cut and {k: exact(x) for k, x in wc.feeds.items()} == \
                        {k: exact(x) for k, x in c.feeds.items()} and \
                        {k: exact(x) for k, x in wc.init.items()} == \
                        {k: exact(x) for k, x in c.init.items()}:
                    counts["shortcut_compared"] += 1
                    if list(wc.schedule) != list(c.schedule) or \
                            [list(x) for _, x in wc.original_outcomes] != \
                            [list(x) for _, x in c.original_outcomes]:
                        problems.append("the check with the shortcut off shows other schedules")
            counts["audited"] += 1
            if problems:
                counts["failures"].append((name, problems, program_to_json(p),
                                           program_to_json(q), sem))
    counts["seconds"] = round(time.monotonic() - t0, 1)
    return counts


if __name__ == "__main__":
    n, s = int(sys.argv[1]), int(sys.argv[2])
    result = campaign(n, s, max_nodes=int(sys.argv[3]) if len(sys.argv) > 3 else 9)
    failures = result.pop("failures")
    print(json.dumps(result))
    for f in failures:
        print(json.dumps(f)[:3000])
