"""Sessions against a brute force: on generated programs and sessions of 2-3
runs (random fetches, targets, whole runs, feeds given or left free), the
outcome set of the session's expansion (oracle/session.py, every engine of
`outcome_set`) equals an enumeration written here directly over the
interleavings of the runs' pruned node lists, in both modes and both orders.

The brute force shares nothing with the expansion but the op registry: it
prunes each run itself (ancestors of its fetched outputs and targets), keeps
each run's values apart by run, orders the runs itself (sequential: run k+1
starts when every step of run k has fired) and enumerates every interleaving
(memoized on the whole state: fired steps, values produced, variables,
pending decomposed writes)."""

from __future__ import annotations

import os
import random
from functools import lru_cache

import pytest

from tfsem.generators.strategies import random_inputs, random_programs
from tfsem.oracle import functions as fns
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_to_json
from tfsem.oracle.outcomes import make_outcome
from tfsem.oracle.program import ASSIGN, READ, VAR, ControlIn, DataIn, FeedIn, Program
from tfsem.oracle.session import session_from_json
from tfsem.oracle.values import Error, value_to_json

NIGHTLY = os.environ.get("TFSEM_HYPOTHESIS_PROFILE") == "nightly"
COUNT = 400 if NIGHTLY else 20


def _ancestors(p: Program, roots) -> set[str]:
    keep, stack = set(), list(roots)
    while stack:
        n = stack.pop()
        if n not in keep:
            keep.add(n)
            stack.extend(i.node for i in p.node[n].inputs if isinstance(i, (DataIn, ControlIn)))
    return keep


def brute_force(p: Program, runs, order: str, free_feeds, init, semantics: str, observe: str):
    """The set of outcomes of the session, by enumeration.  `runs`: (name,
    node set, fetched output names, feed values given by the session);
    `free_feeds`: RUN/f -> value for the feeds the session leaves free."""
    steps = []   # (run index, node, phase)
    for k, (_, nodes, _, _) in enumerate(runs):
        for n in sorted(nodes):
            if p.node[n].op == ASSIGN and semantics == "decomposed":
                steps += [(k, n, "read"), (k, n, "write")]
            else:
                steps.append((k, n, ""))
    index = {s: i for i, s in enumerate(steps)}
    run_steps = [frozenset(i for i, s in enumerate(steps) if s[0] == k) for k in range(len(runs))]
    variables = sorted(p.variables)

    def done(fired, k, n):
        last = (k, n, "write") if (k, n, "write") in index else (k, n, "")
        return index[last] in fired

    def enabled(fired, i):
        k, n, phase = steps[i]
        if i in fired:
            return False
        if order == "sequential" and any(not run_steps[j] <= fired for j in range(k)):
            return False
        if phase == "write":
            return index[(k, n, "read")] in fired
        return all(done(fired, k, i.node) for i in p.node[n].inputs
                   if isinstance(i, (DataIn, ControlIn)))

    def value_in(env, k, inp):
        if isinstance(inp, FeedIn):
            given = runs[k][3]
            return given[inp.name] if inp.name in given else free_feeds[f"{runs[k][0]}/{inp.name}"]
        return env[(k, inp.node)][inp.port]

    def assigned(fn, w, v, current):
        if isinstance(v, Error):
            return current
        (new,) = fns.get(fn).apply((w, v))
        return current if isinstance(new, Error) else new

    @lru_cache(maxsize=None)
    def explore(fired, env_items, state_items, pending_items):
        env, state, pending = dict(env_items), dict(state_items), dict(pending_items)
        if len(fired) == len(steps):
            outs = {f"{runs[k][0]}/{o}": env[(k, p.outputs[o].node)][p.outputs[o].port]
                    for k, r in enumerate(runs) for o in r[2]}
            return frozenset([make_outcome(outs, state, observe)])
        found = set()
        for i in range(len(steps)):
            if not enabled(fired, i):
                continue
            k, n, phase = steps[i]
            node = p.node[n]
            e2, s2, p2 = dict(env), dict(state), dict(pending)
            data = [value_in(env, k, x) for x in node.data_inputs]
            if node.op == VAR:
                e2[(k, n)] = (node.var,)
            elif node.op == READ:
                e2[(k, n)] = (state[data[0]],)
            elif node.op == ASSIGN and phase == "read":
                p2[(k, n)] = state[data[0]]
            elif node.op == ASSIGN:
                x = data[0]
                w = p2.pop((k, n)) if phase == "write" else state[x]
                s2[x] = assigned(node.fn, w, data[1], state[x])
            else:
                e2[(k, n)] = tuple(fns.get(node.op).apply(data, node.attrs))
            found |= explore(fired | {i}, frozenset(e2.items()), tuple(sorted(s2.items())),
                             frozenset(p2.items()))
        return frozenset(found)

    start = tuple(sorted((x, init.get(x, Error("uninitialized"))) for x in variables))
    return explore(frozenset(), frozenset(), start, frozenset())


def draw_session(p: Program, rng: random.Random, sigma_feeds):
    """A session JSON over `p` and the brute force's view of its runs."""
    runs_json, runs = [], []
    nodes = [n.name for n in p.nodes]
    for k in range(rng.choice((2, 2, 3))):
        name = f"r{k}"
        kind = rng.random()
        fetch = sorted(rng.sample(sorted(p.outputs), rng.randint(1, len(p.outputs)))) \
            if p.outputs and kind < 0.6 else []
        targets = sorted(rng.sample(nodes, rng.randint(1, min(2, len(nodes))))) \
            if kind >= 0.4 or not fetch else []
        if kind >= 0.9:
            fetch, targets = [], []
        whole = not fetch and not targets
        keep = set(nodes) if whole else _ancestors(p, [p.outputs[f].node for f in fetch] + targets)
        used = sorted({i.name for n in keep for i in p.node[n].inputs if isinstance(i, FeedIn)})
        given = {f: sigma_feeds[f] for f in used if rng.random() < 0.5}
        r = {"name": name}
        if fetch:
            r["fetch"] = fetch
        if targets:
            r["targets"] = targets
        if given:
            r["feeds"] = {f: value_to_json(v) for f, v in given.items()}
        runs_json.append(r)
        runs.append((name, keep, sorted(p.outputs) if whole else fetch, given))
    return runs_json, runs


def racy_program(rng: random.Random) -> Program:
    """A small program of reads and updates of one or two variables (the
    generator's programs rarely race): Reads, Writes and AssignAdds of
    constants, feeds or values read, an Add, random control edges; outputs
    are Reads."""
    from tfsem.oracle.program import apply, assign, const, program, read, var
    xs = ["x", "y"][:rng.choice((1, 1, 2))]
    nodes, values, made = [], [], []
    for x in xs:
        nodes.append(var(f"v{x}", x))
    nodes.append(const("c", rng.choice((1, 2, 5))))
    values += ["c", "$f"]
    outputs = {}
    for k in range(rng.randint(2, 4)):
        x = rng.choice(xs)
        ctrl = [f"^{rng.choice(made)}"] if made and rng.random() < 0.3 else []
        kind = rng.random()
        if kind < 0.35:
            nodes.append(read(f"r{k}", f"v{x}", *ctrl))
            values.append(f"r{k}")
            outputs[f"o{k}"] = f"r{k}"
        elif kind < 0.5 and len(values) >= 2:
            a, b = rng.sample(values, 2)
            nodes.append(apply(f"a{k}", "Add", a, b, *ctrl))
            values.append(f"a{k}")
        else:
            fn = rng.choice(("Snd", "Add"))
            nodes.append(assign(f"w{k}", fn, f"v{x}", rng.choice(values), *ctrl))
        made.append(nodes[-1].name)
    if not outputs:
        nodes.append(read("rl", f"v{xs[0]}", f"^{made[-1]}"))
        outputs["last"] = "rl"
    return program(nodes, outputs, xs)


def _cases(count: int, seed: str):
    """(program, feeds, init): the generator's programs and racy ones."""
    from tfsem.oracle.values import Tensor
    rng = random.Random(seed)
    for i, p in enumerate(random_programs(count // 2, seed=25, max_nodes=5)):
        yield (p, *random_inputs(p, seed=i))
    for i in range(count - count // 2):
        p = racy_program(rng)
        yield p, {"f": Tensor(rng.choice((-1, 3)), "int64")}, \
            {x: Tensor(rng.choice((0, 10)), "int64") for x in p.variables}


@pytest.mark.parametrize("semantics", ["atomic", "decomposed"])
@pytest.mark.parametrize("order", ["concurrent", "sequential"])
def test_expansion_equals_brute_force(semantics, order):
    rng = random.Random(f"sessions:{semantics}:{order}")
    checked = several = 0
    for i, (p, sigma_feeds, init) in enumerate(_cases(COUNT, f"racy:{semantics}:{order}")):
        runs_json, runs = draw_session(p, rng, sigma_feeds)
        data = {"format": "tfsem.session/1", "program": program_to_json(p), "runs": runs_json,
                "order": order}
        session = session_from_json(data)
        expanded = session.expand()
        free = {f: sigma_feeds[f.partition("/")[2]] for f in expanded.feed_names}
        observe = rng.choice(("outputs+state", "outputs"))
        want = brute_force(p, runs, order, free, init, semantics, observe)
        for engine in ("reference", "auto"):
            got = set(outcome_set(expanded, free, init, semantics, observe, engine=engine))
            assert got == set(want), (i, engine, runs_json, program_to_json(p))
        checked += 1
        several += len(want) > 1
    assert checked == COUNT
    if order == "concurrent":  # the races are there to be found
        assert several >= COUNT // 6, several


def test_two_identical_runs_use_the_symmetry_engine_and_agree():
    # the lost update of two concurrent increments: identical runs are
    # symmetric threads; the symmetry engine gives the brute force's set
    from tfsem.oracle.program import apply, assign, const, program, read, var
    p = program([var("v", "x"), const("one", 1), read("r", "v"),
                 apply("s", "Add", "r", "one"), assign("w", "Snd", "v", "s"), read("out", "v", "^w")],
                {"out": "out"}, ["x"])
    from tfsem.oracle.values import Tensor
    init = {"x": Tensor(0, "int64")}
    for n in (2, 3):
        data = {"format": "tfsem.session/1", "program": program_to_json(p),
                "runs": [{"name": f"t{k}", "fetch": ["out"]} for k in range(n)]}
        expanded = session_from_json(data).expand()
        res = outcome_set(expanded, {}, init, "atomic", "outputs+state", engine="auto")
        assert "symmetry" in res.engines
        runs = [(f"t{k}", set(p.node), ["out"], {}) for k in range(n)]
        want = brute_force(p, runs, "concurrent", {}, init, "atomic", "outputs+state")
        assert set(res) == set(want)
        finals = {dict(o.state)["x"] for o in want}
        assert Tensor(1, "int64") in finals   # the lost update is among them
