"""backends/execute.py `Tables`, the numpy replay's compiled program, made
in one pass (the flat form as the nodes come, the nested form Machine.fire
reads made from it when first asked for) against the two-pass construction
it replaced (`_reference` below, kept here as it was): every table equal,
on the corpus's cases (both programs of each), on generated programs, on
graphs of the real corpus, in both semantics; and a machine made from the
tables runs as the reference's runs (tests/test_backends_run_schedule.py
compares run_schedule with Machine.replay on top of this)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfsem.backends import execute as EX
from tfsem.generators.strategies import random_programs
from tfsem.oracle import functions as fns
from tfsem.oracle.jsonio import case_from_json, read_json_file
from tfsem.oracle.program import ControlIn, DataIn, FeedIn
from tfsem.oracle.semantics import DECOMPOSED, READ_STEP, WRITE_STEP

CASES = Path(__file__).resolve().parent / "cases"
CORPUS = Path(__file__).resolve().parent.parent / "examples" / "tensorflow" / "corpus"
SEMANTICS = ("atomic", "decomposed")


def _reference(p, semantics: str) -> dict:
    """The tables as the two-pass construction made them (backends/execute.py
    before the one-pass `Tables`), as a dict of their fields."""
    decomposed = semantics == DECOMPOSED
    names = list(p.topological_order)
    n = len(names)
    index = {name: i for i, name in enumerate(names)}
    kind = [EX._FN] * n
    fn = [None] * n
    attrs = [{}] * n
    var = [None] * n
    n_slots = [1] * n
    data_slots = [[] for _ in range(n)]
    value_slot = [-1] * n
    succ = [[] for _ in range(n)]
    fetch = [[] for _ in range(n)]
    initial = []
    looked_up = {}
    node_of = p.node
    for i, name in enumerate(names):
        node = node_of[name]
        kd = kind[i] = EX._KINDS.get(node.op, EX._FN)
        attrs[i] = node.attrs
        if kd == EX._FN or kd == EX._ASSIGN:
            fname = node.op if kd == EX._FN else node.fn
            f = looked_up.get(fname)
            fn[i] = f if f is not None else looked_up.setdefault(fname, fns.get(fname))
        if kd == EX._VAR:
            var[i] = node.var
        elif kd != EX._FN:
            var[i] = p.accessed_variable(name)
        inputs = node.inputs
        n_slots[i] = max(1, len(inputs))
        if not inputs:
            initial.append((i, 0, None))
        data_pos = 0
        for slot, inp in enumerate(inputs):
            t = type(inp)
            if t is DataIn:
                succ[index[inp.node]].append((inp.port, i, slot))
            elif t is ControlIn:
                succ[index[inp.node]].append((-1, i, slot))
            else:
                initial.append((i, slot, inp.name if t is FeedIn else None))
            if t is DataIn or t is FeedIn:
                if kd == EX._FN:
                    data_slots[i].append(slot)
                elif kd == EX._ASSIGN and data_pos == 1:
                    value_slot[i] = slot
                data_pos += 1
    for out_name, port in sorted(p.outputs.items()):
        fetch[index[port.node]].append((port.port, out_name))
    offset = [0] * n
    total = 0
    for i in range(n):
        offset[i] = total
        total += n_slots[i]
    missing = list(n_slots)
    feed_slots = []
    for i, slot, feed in initial:
        if feed is not None:
            feed_slots.append((offset[i] + slot, feed))
        missing[i] -= 1
    step = {}
    for i, name in enumerate(names):
        if decomposed and kind[i] == EX._ASSIGN:
            step[name + READ_STEP] = i
            step[name + WRITE_STEP] = n + i
        else:
            step[name] = i
    return {
        "names": names, "n": n, "index": index, "kind": kind, "fn": fn, "attrs": attrs,
        "var": var, "n_slots": n_slots, "data_slots": data_slots, "value_slot": value_slot,
        "succ": succ, "fetch": fetch, "initial": initial, "variables": sorted(p.variables),
        "n_inbox": total,
        "succ_flat": [[(port, j, offset[j] + slot) for port, j, slot in succ[i]]
                      for i in range(n)],
        "data_flat": [[offset[i] + s for s in data_slots[i]] for i in range(n)],
        "value_flat": [offset[i] + value_slot[i] if value_slot[i] >= 0 else -1
                       for i in range(n)],
        "missing0": missing, "feed_slots": feed_slots, "step": step,
    }


def _same_tables(p, semantics: str, where: str) -> None:
    ref = _reference(p, semantics)
    tables = EX.Tables(p, semantics)
    flat_first = ("names", "n", "index", "kind", "attrs", "var", "n_slots", "fetch", "initial",
                  "variables", "n_inbox", "succ_flat", "data_flat", "value_flat", "missing0",
                  "feed_slots", "step")
    for name in flat_first:
        assert getattr(tables, name) == ref[name], (where, semantics, name)
    assert all(a is b for a, b in zip(tables.fn, ref["fn"])), (where, semantics)
    assert all(a is b for a, b in zip(tables.attrs, ref["attrs"])), (where, semantics)
    # (the nested form, made when first asked for, and a machine's)
    for name in ("succ", "data_slots", "value_slot"):
        assert getattr(tables, name) == ref[name], (where, semantics, name)
    m = EX.Machine(p, semantics)
    for name in ("succ", "data_slots", "value_slot", "n_slots", "initial", "kind", "var"):
        assert getattr(m, name) == ref[name], (where, semantics, name)


def _case_programs():
    for path in sorted(CASES.glob("*.json")):
        try:
            case = case_from_json(read_json_file(str(path)), where=path.name)
            rewritten = case.rewritten()
        except Exception:   # (the invalid cases: a rewrite that does not load)
            continue
        for which, p in (("original", case.original), ("rewritten", rewritten)):
            if not p.has_control_flow:
                yield f"{path.stem}:{which}", p


def test_the_cases_tables_are_the_two_pass_ones():
    count = 0
    for where, p in _case_programs():
        for semantics in SEMANTICS:
            _same_tables(p, semantics, where)
        count += 1
    assert count >= 100, count


def test_generated_programs_tables_are_the_two_pass_ones():
    count = 0
    for i, p in enumerate(random_programs(120, 22, max_nodes=16)):
        if p.has_control_flow:
            continue
        _same_tables(p, SEMANTICS[i % 2], f"generated {i}")
        count += 1
    assert count >= 80, count


@pytest.mark.parametrize("name", ["keras_mlp_adam", "keras_cnn_batchnorm", "tf1_mlp_sgd"])
def test_corpus_graphs_tables_are_the_two_pass_ones(name):
    from tfsem.graphdef import import_path
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    (e,) = [e for e in manifest["graphs"] if e["file"].startswith(name + ".")]
    caps = str(CORPUS / e["captures"]) if e.get("captures") else None
    p = import_path(CORPUS / e["file"], e["fetches"], [], e["targets"], captures=caps).program
    for semantics in SEMANTICS:
        _same_tables(p, semantics, name)

