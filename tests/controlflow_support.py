"""Programs and helpers shared by the control-flow engine's tests."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from tfsem.oracle import controlflow as cf
from tfsem.oracle import functions as fns
from tfsem.oracle.budget import BudgetExceeded

CORPUS = Path(__file__).resolve().parent.parent / "examples" / "tensorflow" / "corpus"


@contextlib.contextmanager
def registry_restored():
    """The function registry as it was, after the block: a function a test
    registers leaves with it (later tests' program generators in the same
    process draw from the registry, by its order too: a name deleted and
    put back by monkeypatch moves to the end, and a seeded generator then
    draws other programs).  Restored as a registration that replaces does
    it: the registry's version moves and remembered applications are
    dropped, so nothing looked up under the test's functions is kept."""
    registry = dict(fns._REGISTRY)
    try:
        yield
    finally:
        if [(k, id(v)) for k, v in fns._REGISTRY.items()] != \
                [(k, id(v)) for k, v in registry.items()]:
            fns._REGISTRY.clear()
            fns._REGISTRY.update(registry)
            fns.version += 1
            fns._applications.clear()


def counter_loop_f(trips: int) -> list[dict]:
    """The nodes of a loop F that counts from 0 while below `trips`: its
    Switch `sw` sends the counter to the body `body` (port 1, live in each
    trip) or to the Exit `exitF` (port 0, live after the last trip); the
    body adds 1 (`addF`) and sends it back through `nextF`."""
    return [
        {"name": "i0", "op": "Const", "value": 0},
        {"name": "enterF", "op": "Enter", "frame_name": "F", "inputs": ["i0"]},
        {"name": "kF", "op": "Const", "value": trips},
        {"name": "limF", "op": "Enter", "frame_name": "F", "is_constant": True, "inputs": ["kF"]},
        {"name": "mergeF", "op": "Merge", "inputs": ["enterF", "nextF"]},
        {"name": "lessF", "op": "Less", "inputs": ["mergeF", "limF"]},
        {"name": "condF", "op": "LoopCond", "inputs": ["lessF"]},
        {"name": "sw", "op": "Switch", "inputs": ["mergeF", "condF"]},
        {"name": "body", "op": "Identity", "inputs": ["sw:1"]},
        {"name": "oneF", "op": "Const", "value": 1, "inputs": ["^body"]},
        {"name": "addF", "op": "Add", "inputs": ["body", "oneF"]},
        {"name": "nextF", "op": "NextIteration", "inputs": ["addF"]},
        {"name": "exitF", "op": "Exit", "inputs": ["sw"]},
    ]


def count_replays(monkeypatch) -> dict[str, int]:
    """Nothing remembered between calls (no outcome set, no Machine, whose
    paths would carry over), replays on; and a count, kept up to date, of
    the replays that gave the answer and of those refused at a step."""
    monkeypatch.setattr(cf, "remember_outcomes", False)
    monkeypatch.setattr(cf, "replay_traces", True)
    monkeypatch.setattr(cf, "_machines", type(cf._machines)())
    return _count(monkeypatch, "_replay", {}, "replayed", "refused")


def _count(monkeypatch, name: str, counts: dict, answered: str, not_answered: str) -> dict:
    """`counts` with a count, kept up to date, of the calls of cf.`name`
    that answered (`answered`) and of those that gave None."""
    counts.update({answered: 0, not_answered: 0})
    real = getattr(cf, name)

    def counted(*a, **k):
        got = real(*a, **k)
        counts[answered if got is not None else not_answered] += 1
        return got
    monkeypatch.setattr(cf, name, counted)
    return counts


def count_paths(monkeypatch, counts: dict) -> dict[str, int]:
    """`counts` with a count, kept up to date, of the numpy replays that went
    along a kept path to its end (`along`) and of those that left it."""
    return _count(monkeypatch, "fire_path", counts, "along", "left")


def numpy_replay(p, feeds, init, schedule, mode, along: bool, bound: int):
    """The outcome of `schedule` on numpy, or the error's kind and text;
    `along` False: every step found by its label (no kept path)."""
    from tfsem.backends import controlflow as bcf
    from tfsem.oracle.functions import CannotRun
    real = cf.kept_path
    if not along:
        cf.kept_path = lambda m, schedule: None
    try:
        return bcf.replay_outcome(p, feeds, init, schedule, mode, max_iterations=bound)
    except (ValueError, CannotRun, BudgetExceeded) as exc:
        return (type(exc).__name__, str(exc))
    finally:
        cf.kept_path = real


def replay_answer(p, feeds, init, mode, bound, replay, observe="outputs+state"):
    """(outcomes with their schedules, states explored) with replays on or
    off, or the exception's kind (and a loop bound's frame)."""
    old = cf.replay_traces
    cf.replay_traces = replay
    try:
        return cf.outcomes(p, feeds, init, mode, observe, 20_000, None, bound)
    except cf.LoopBoundExceeded as exc:
        return ("bound", exc.frame, exc.limit)
    except BudgetExceeded as exc:
        return ("budget", exc.which)
    finally:
        cf.replay_traces = old


def same_as_exploring(p, feeds, init, mode="atomic", bound=6, observe="outputs+state"):
    """The answer with replays, checked against the exploration's."""
    got = replay_answer(p, feeds, init, mode, bound, True, observe)
    assert got == replay_answer(p, feeds, init, mode, bound, False, observe)
    return got


def corpus_loop_program(graph: str, monkeypatch):
    """The program imported from the real corpus's graph whose file starts
    with `graph`, its float MatMul computed by TensorFlow's kernels (the
    test is skipped without TensorFlow)."""
    import importlib.util  # noqa: PLC0415

    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("TensorFlow is not installed (its kernels compute float MatMul)")
    from tfsem.graphdef import read_graph  # noqa: PLC0415
    from tfsem.graphdef.importer import import_graph  # noqa: PLC0415
    monkeypatch.setenv("TFSEM_TF_KERNELS", "1")
    entry = next(e for e in json.loads((CORPUS / "manifest.json").read_text())["graphs"]
                 if e["file"].startswith(graph))
    caps = json.loads((CORPUS / entry["captures"]).read_text()) if entry.get("captures") else None
    graph_def, _ = read_graph(CORPUS / entry["file"])
    return import_graph(graph_def, entry["fetches"], entry["targets"], captures=caps).program
