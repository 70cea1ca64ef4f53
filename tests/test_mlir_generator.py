"""The generator of `tf_executor` modules (generators/mlir.py) and the writer
that prints its programs as MLIR (graphdef/mlir_writer.py): docs/mlir.md,
"A generator that writes modules".

Without TensorFlow: every module of a few hundred drawn programs is read by
tfsem's MLIR reader, with the structure the generator promises (islands of
several ops, control tokens, dead islands, second handles, clusters); the
writer's rules on hand-written programs; the size bound; shrinking.  With
TensorFlow (skipped where it is missing): TensorFlow's `run_pass_pipeline`
accepts a few hundred drawn modules, graph pruning deletes their dead
islands, and the campaign target judges a written module.
"""

from __future__ import annotations

import importlib.util
import re

import pytest
from hypothesis import HealthCheck, find, settings

from tfsem.generators import mlir as gen
from tfsem.graphdef.mlir import program_of_mlir
from tfsem.graphdef.mlir_writer import is_direct, write_module
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.program import ASSIGN, READ

NIGHTLY = settings.get_current_profile_name() == "nightly"
needs_tf = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                              reason="needs the extra tfsem[tensorflow] (tensorflow-cpu)")


def islands(text: str) -> list[dict]:
    """Each island of a written module: its ops (lines of `tf.` ops), its
    control operands, whether it holds a cluster, its token."""
    out, cur = [], None
    for line in text.splitlines():
        m = re.match(r"^      (.*) = tf_executor\.island(?:\((.*)\))? \{$", line)
        if m:
            cur = {"results": m.group(1).split(", "), "controls": (m.group(2) or "").split(", ")
                   if m.group(2) else [], "ops": [], "cluster": False}
            out.append(cur)
        elif line == "      }":
            cur = None
        elif cur is not None:
            if '"tf_device.cluster"' in line:
                cur["cluster"] = True
            op = re.search(r'"(tf\.[A-Za-z0-9]+)"', line)
            if op:
                cur["ops"].append(op.group(1))
    return out


def fetch_operands(text: str) -> list[str]:
    line = next(ln for ln in text.splitlines() if "tf_executor.fetch" in ln)
    operands = line.split("tf_executor.fetch", 1)[1].split(" : ")[0].strip()
    return [o for o in operands.split(", ") if o]


def ordered(p, a: str, b: str) -> bool:
    """Whether node a is before node b in program p (a path of edges)."""
    todo, seen = [b], set()
    while todo:
        n = todo.pop()
        for i in p.node[n].inputs:
            src = getattr(i, "node", None)
            if src == a:
                return True
            if src is not None and src not in seen:
                seen.add(src)
                todo.append(src)
    return False


# ---------------------------------------------------------------------------
# Drawn modules, read back


@pytest.fixture(scope="module")
def drawn():
    """300 programs (a fifth of the islands with clusters) and 100 of the
    cluster flavour, with their modules."""
    progs = gen.random_programs(300, 26) + gen.random_programs(100, 27, cluster_p=0.7)
    return [(p, write_module(p)) for p in progs]


def test_every_drawn_module_is_read_back(drawn):
    for p, text in drawn:
        assert text is not None, p
        q = program_of_mlir(text, "drawn.mlir", None, "all")
        # the same variables, resource accesses and outputs
        assert sorted(q.variables) == sorted({n.var for n in p.nodes if n.op == "Var"})
        assert sorted(n.op for n in q.nodes if n.op in (READ, ASSIGN)) == \
            sorted(n.op for n in p.nodes if n.op in (READ, ASSIGN))
        assert list(q.outputs) == list(p.outputs)


def test_the_drawn_modules_have_the_promised_structure(drawn):
    n = len(drawn)
    several = controls = clusters = dead = dead_reads = handles = inline = kept_by_control = 0
    for p, text in drawn:
        isl = islands(text)
        fetched = set(fetch_operands(text))
        several += any(len(i["ops"]) >= 3 for i in isl)
        controls += any(i["controls"] for i in isl)
        clusters += any(i["cluster"] for i in isl)
        names = [v for v in re.findall(r'shared_name = "(\w+)"', text)]
        handles += len(names) > len(set(names))
        inline += any("tf.VarHandleOp" in i["ops"] and len(i["ops"]) > 1 for i in isl)
        # an island that reads, writes nothing and whose results and token
        # nothing uses is dead code
        unused = [i for i in isl if not any(o.startswith("tf.Assign") for o in i["ops"])
                  and all(len(re.findall(re.escape(r) + r"\b", text)) == 1
                          for r in i["results"])]
        dead += bool(unused)
        dead_reads += any("tf.ReadVariableOp" in i["ops"] for i in unused)
        # a writing island whose token another island takes, not fetched itself
        for i in isl:
            token = i["results"][-1]
            if any(o.startswith("tf.Assign") for o in i["ops"]) and token not in fetched and \
                    not set(i["results"][:-1]) & fetched and \
                    any(token in j["controls"] for j in isl):
                kept_by_control += 1
                break
    assert several > n // 2, several          # islands of three ops or more
    assert controls > n // 5, controls        # control tokens between islands
    assert clusters > n // 5, clusters        # tf_device.cluster regions
    assert dead > n // 4, dead                # islands that nothing uses
    assert dead_reads > n // 20, dead_reads   # ... among them islands that read
    assert handles > n // 5, handles          # two VarHandleOps of one variable
    assert inline > n // 10, inline           # a VarHandleOp among an island's ops
    assert kept_by_control > 0


def test_the_size_bound_counts_nodes_and_accesses():
    for max_nodes in (4, 10, 16):
        for p in gen.random_programs(60, max_nodes, max_nodes=max_nodes):
            accesses = sum(n.op in (READ, ASSIGN) for n in p.nodes)
            assert len(p.nodes) <= max_nodes + 1        # + a final read (outputs only)
            assert accesses <= gen.max_accesses(max_nodes) + 1
    assert gen.max_accesses(10) == 6 and gen.max_accesses(3) == 2


def test_programs_of_other_generators_take_the_graphdef_route():
    from tfsem.generators.grappler import random_programs
    assert not any(is_direct(p) for p in random_programs(20, 1))
    assert all(is_direct(p) for p in gen.random_programs(20, 1))


def test_the_mlir_targets_default_to_the_module_generator():
    from tfsem.campaigns.mlir_target import generator
    assert generator("mlir:func.func(tf-executor-graph-pruning)") == \
        "tfsem.generators.mlir:mixed_strategy"
    assert generator("mlir-cluster:tf-resource-op-lifting") == \
        "tfsem.generators.mlir:mixed_cluster_strategy"


# ---------------------------------------------------------------------------
# The writer's rules, on hand-written programs

ISLANDS = {
    "format": "tfsem.program/1", "variables": ["x"],
    "nodes": [{"name": "island1/h", "op": "Var", "var": "x"},
              {"name": "island2/one", "op": "Const", "value": 1},
              # island 3: a read, then an AssignAdd in a cluster with a read
              {"name": "island3/r", "op": "Read", "inputs": ["island1/h"]},
              {"name": "island3/cluster1/a", "op": "Assign", "fn": "Add",
               "inputs": ["island1/h", "island2/one"]},
              {"name": "island3/cluster1/r2", "op": "Read", "inputs": ["island1/h"]},
              {"name": "island3/n", "op": "Neg", "inputs": ["island3/cluster1/r2"]},
              # island 4: a write that island 5 waits for (kept alive by control)
              {"name": "island4/w", "op": "Write", "inputs": ["island1/h", "island3/r"]},
              {"name": "island5/r3", "op": "Read", "inputs": ["island1/h", "^island4/w"]},
              # island 6: dead (a read and a Mul nobody fetches)
              {"name": "island6/r4", "op": "Read", "inputs": ["island1/h"]},
              {"name": "island6/m", "op": "Mul", "inputs": ["island6/r4", "island6/r4"]},
              # island 7: a write nothing waits for
              {"name": "island7/s", "op": "Assign", "fn": "Sub",
               "inputs": ["island1/h", "island2/one"]}],
    "outputs": {"neg": "island3/n", "last": "island5/r3"},
}


def test_islands_clusters_tokens_and_fetches_are_written_as_named():
    text = write_module(program_from_json(ISLANDS))
    isl = islands(text)
    assert [i["ops"] for i in isl] == [
        ["tf.VarHandleOp"], ["tf.Const"],
        ["tf.ReadVariableOp", "tf.AssignAddVariableOp", "tf.ReadVariableOp", "tf.Neg"],
        ["tf.AssignVariableOp"], ["tf.ReadVariableOp"], ["tf.ReadVariableOp", "tf.Mul"],
        ["tf.AssignSubVariableOp"]]
    assert [i["cluster"] for i in isl] == [False, False, True, False, False, False, False]
    assert isl[4]["controls"] == [isl[3]["results"][-1]]       # island 5 waits for 4
    fetched = fetch_operands(text)
    # the two outputs, then island 7's token (a write no fetch reaches); island
    # 4 is kept by island 5's control alone, island 6 is dead
    assert fetched[2:] == [isl[6]["results"][-1]]
    assert isl[3]["results"][-1] not in fetched and isl[5]["results"][-1] not in fetched
    assert 'tf.entry_function = {control_outputs = "", inputs = "", outputs = "neg,last"}' in text


def test_an_island_runs_its_ops_in_program_order_when_read():
    q = program_of_mlir(write_module(program_from_json(ISLANDS)), "i.mlir", None, "all")
    reads = [n.name for n in q.nodes if n.op == READ]
    assign_add = next(n.name for n in q.nodes if n.op == ASSIGN and n.fn == "Add")
    write = next(n.name for n in q.nodes if n.op == ASSIGN and n.fn == "Snd")
    first, in_cluster = reads[0], reads[1]
    assert ordered(q, first, assign_add) and ordered(q, assign_add, in_cluster)
    assert ordered(q, write, reads[2])                         # the control token
    assert not ordered(q, write, reads[3]) and not ordered(q, reads[3], write)


@pytest.mark.parametrize("change", ["cycle", "op", "dtype", "cluster-cycle"])
def test_what_cannot_be_written_is_none(change):
    nodes = [{"name": "island1/h", "op": "Var", "var": "x"},
             {"name": "island2/r", "op": "Read", "inputs": ["island1/h"]},
             {"name": "island3/n", "op": "Neg", "inputs": ["island2/r"]},
             {"name": "island2/m", "op": "Neg", "inputs": ["island3/n"]}]
    variables = ["x"]
    if change == "cycle":           # island 2 -> island 3 -> island 2
        pass
    elif change == "op":
        nodes = nodes[:2] + [{"name": "island3/n", "op": "Abs", "inputs": ["island2/r"]}]
    elif change == "dtype":
        nodes = nodes[:3]
        variables = {"x": {"dtype": "float32", "shape": []}}
    else:                           # a cluster around r and m, n between them
        nodes = [nodes[0], dict(nodes[1], name="island2/cluster1/r"),
                 {"name": "island2/n", "op": "Neg", "inputs": ["island2/cluster1/r"]},
                 {"name": "island2/cluster1/m", "op": "Neg", "inputs": ["island2/n"]}]
    p = program_from_json({"format": "tfsem.program/1", "variables": variables, "nodes": nodes,
                           "outputs": {"o": nodes[-1]["name"]}})
    assert write_module(p) is None


def test_a_node_the_reducer_made_is_an_island_of_its_own():
    p = program_from_json(dict(ISLANDS, nodes=ISLANDS["nodes"] + [
        {"name": "c", "op": "Const", "value": 3},
        {"name": "island8/w", "op": "Write", "inputs": ["island1/h", "c"]}]))
    isl = islands(write_module(p))
    assert ["tf.Const"] in [i["ops"] for i in isl] and len(isl) == 9


# ---------------------------------------------------------------------------
# The Hypothesis strategy: drawn and shrunk


@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only: Hypothesis finds and shrinks, "
                                        "5-20 s")
def test_a_found_program_shrinks_to_a_small_module():
    """Shrinking works: the smallest program with an AssignAdd in a cluster
    and a read after it in the same cluster is a handle, a constant and the
    two."""
    def shape(case):
        nodes = case[0].nodes
        return any(n.op == ASSIGN and n.fn == "Add" and "/cluster" in n.name and
                   any(m.op == READ and m.name.rpartition("/")[0] == n.name.rpartition("/")[0]
                       for m in nodes[k:]) for k, n in enumerate(nodes))

    p, _, _ = find(gen.cluster_strategy(8, "outputs+state"), shape,
                   settings=settings(max_examples=1000, database=None, derandomize=True,
                                     suppress_health_check=list(HealthCheck)))
    assert len(p.nodes) <= 4, [n.name for n in p.nodes]
    assert write_module(p) is not None


# ---------------------------------------------------------------------------
# With TensorFlow


@needs_tf
def test_tensorflow_runs_pipelines_on_the_drawn_modules(drawn):
    """TensorFlow parses 200 drawn modules and runs graph pruning on each
    (which deletes the dead islands of some), and island coarsening and
    resource-op lifting on a quarter of them; the outputs are read back."""
    from tensorflow.python import pywrap_mlir

    from tfsem.campaigns.mlir_target import printed
    pruned = 0
    drawn = drawn[::2]
    for k, (_, text) in enumerate(drawn):
        before = printed(text)
        out = pywrap_mlir.experimental_run_pass_pipeline(
            text, "func.func(tf-executor-graph-pruning)", False)
        program_of_mlir(out, "pruned.mlir", None, "all")
        pruned += out != before
        if k % 4 == 0:
            for pipeline in ("func.func(tf-executor-island-coarsening)",
                             "tf-resource-op-lifting"):
                out = pywrap_mlir.experimental_run_pass_pipeline(text, pipeline, False)
                program_of_mlir(out, "out.mlir", None, "all")
    assert pruned > len(drawn) // 4, pruned


@needs_tf
def test_the_target_judges_a_written_module():
    """mlir:func.func(tf-executor-graph-pruning) on ISLANDS: the dead island
    goes, and the rewrite is sound; mlir-cluster:tf-resource-op-lifting on a
    cluster's AssignAdd through one handle and read through another (finding
    A, written directly) is unsound."""
    from test_mlir_fuzz_target import _loop

    from tfsem.campaigns.findings import UNSOUND
    import numpy as np

    from tfsem.oracle.values import Tensor
    sigma = ({}, {"x": Tensor(np.array(0, dtype=np.int64))})
    loop = _loop("mlir:func.func(tf-executor-graph-pruning)", ("atomic", "outputs+state"))
    assert loop.evaluate(program_from_json(ISLANDS), *sigma) is None
    assert loop.stats.sound == 1 and loop.stats.identical == 0
    two_handles = program_from_json({
        "format": "tfsem.program/1", "variables": ["x"],
        "nodes": [{"name": "island1/h1", "op": "Var", "var": "x"},
                  {"name": "island2/h2", "op": "Var", "var": "x"},
                  {"name": "island3/one", "op": "Const", "value": 1},
                  {"name": "island4/cluster1/a", "op": "Assign", "fn": "Add",
                   "inputs": ["island1/h1", "island3/one"]},
                  {"name": "island4/cluster1/r", "op": "Read", "inputs": ["island2/h2"]}],
        "outputs": {"out": "island4/cluster1/r"}})
    rec = _loop("mlir-cluster:tf-resource-op-lifting", ("atomic", "outputs")).evaluate(
        two_handles, *sigma)
    assert rec is not None and rec.kind == UNSOUND, rec
    assert rec.differs == {"output": "out"}


def test_the_mixed_default_takes_both_routes():
    """The targets' default generator: most programs name their islands, the
    others are the Grappler generator's (the GraphDef route)."""
    from hypothesis import given

    seen = set()

    @settings(max_examples=40, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(gen.mixed_strategy(8, "outputs+state"))
    def draw(case):
        seen.add(is_direct(case[0]))

    draw()
    assert seen == {True, False}


def test_a_pipeline_that_wants_one_op_islands_takes_the_graphdef_route():
    from tfsem.campaigns.mlir_target import generator
    assert generator("mlir:tf-executor-update-control-dependencies") == \
        "tfsem.generators.grappler:mixed_strategy"


def test_with_outputs_only_observed_every_program_fetches_something():
    """(A final read once added its node after the program was made: an
    output of a node the program did not have.)"""
    import random

    from tfsem.generators.draw import RandomDraw
    for i in range(300):
        p = gen.build(RandomDraw(random.Random(i)), 6, observe_state=False)
        assert p.outputs and all(r.node in p.node for r in p.outputs.values())


def test_a_variable_left_out_of_a_counterexample_is_uninitialized():
    """A target that speaks only of initialized variables (the MLIR and
    Grappler targets) re-checks a counterexample that leaves a variable out
    of its initial values (uninitialized) with every variable initialized:
    the lifting campaign stored one such (x1 left out; its read an error
    value that lifting forwarded), which TensorFlow would have failed."""
    from tfsem.campaigns.loop import _needs_uninitialized
    p = program_from_json({"format": "tfsem.program/1", "variables": ["x0", "x1"],
                           "nodes": [{"name": "h", "op": "Var", "var": "x1"},
                                     {"name": "r", "op": "Read", "inputs": ["h"]}],
                           "outputs": {"o": "r"}})
    left_out = {"verdict": "unsound", "counterexample": {"init": {"x0": -2}}}
    assert _needs_uninitialized(left_out, p)
    given = {"verdict": "unsound", "counterexample": {"init": {"x0": 1, "x1": 0}}}
    assert not _needs_uninitialized(given, p)
    error = {"verdict": "unsound", "counterexample": {"init": {"x0": {"error": "uninitialized"},
                                                               "x1": 0}}}
    assert _needs_uninitialized(error, p)


#: finding F: in one cluster, x := a; x -= a; read x.  Lifting forwards the
#: stored a to the read past the AssignSub it does not lift: the read gives a
#: where the program gives 0 (no concurrency involved)
FORWARD_PAST_UPDATE = {
    "format": "tfsem.program/1", "variables": ["x0"], "feeds": {"a": {"dtype": "int64", "shape": []}},
    "nodes": [{"name": "island1/handle1", "op": "Var", "var": "x0"},
              {"name": "island2/cluster1/write2", "op": "Write", "inputs": ["island1/handle1", "$a"]},
              {"name": "island2/cluster1/assignsub3", "op": "Assign", "fn": "Sub",
               "inputs": ["island1/handle1", "$a"]},
              {"name": "island2/cluster1/read4", "op": "Read", "inputs": ["island1/handle1"]}],
    "outputs": {"out0": "island2/cluster1/read4"},
}


#: finding G: a cluster writes x := a, x += b, x := c; another island reads
#: x.  Lifting deletes the first store, which the AssignAdd it leaves reads:
#: the reader can see x_init + b
DELETED_STORE = {
    "format": "tfsem.program/1", "variables": ["x0"],
    "feeds": {f: {"dtype": "int64", "shape": []} for f in ("a", "b", "c")},
    "nodes": [{"name": "island1/handle1", "op": "Var", "var": "x0"},
              {"name": "island2/cluster1/write2", "op": "Write", "inputs": ["island1/handle1", "$a"]},
              {"name": "island2/cluster1/assignadd3", "op": "Assign", "fn": "Add",
               "inputs": ["island1/handle1", "$b"]},
              {"name": "island2/cluster1/write4", "op": "Write", "inputs": ["island1/handle1", "$c"]},
              {"name": "island3/cluster2/read5", "op": "Read", "inputs": ["island1/handle1"]}],
    "outputs": {"out0": "island3/cluster2/read5"},
}


@needs_tf
@pytest.mark.parametrize("program", [FORWARD_PAST_UPDATE, DELETED_STORE], ids=["F", "G"])
def test_lifting_forwards_a_store_past_an_update_it_does_not_lift(program):
    """Findings F and G of the module generator's lifting campaign
    (docs/mlir.md): unsound in both modes (F sequentially); with the
    cluster's updates decomposed first (as TensorFlow's bridge does) the
    same program is sound."""
    from tensorflow.python import pywrap_mlir

    from tfsem.campaigns.mlir_target import both_modes, printed, read
    from tfsem.oracle.jsonio import program_to_json
    text = printed(write_module(program_from_json(program)))
    lifted = pywrap_mlir.experimental_run_pass_pipeline(text, "tf-resource-op-lifting", False)
    assert lifted.count("tf.AssignVariableOp") == 1      # all stores but the last are gone
    before = program_to_json(read(text, "in.mlir"))
    assert both_modes(before, program_to_json(read(lifted, "out.mlir")), "outputs") == \
        {"verdicts": {"atomic": "unsound", "decomposed": "unsound"},
         "finding_kind": "both-semantics"}
    decomposed = pywrap_mlir.experimental_run_pass_pipeline(
        text, "tf-device-decompose-resource-ops-in-cluster,tf-resource-op-lifting", False)
    assert both_modes(before, program_to_json(read(decomposed, "out.mlir")), "outputs")[
        "verdicts"] == {"atomic": "sound", "decomposed": "sound"}


def test_the_example_of_finding_f_is_the_pinned_program():
    """examples/mlir/lifting_forward_past_update.mlir, as the campaign stored
    it, reads as FORWARD_PAST_UPDATE does (its cluster's ops in order)."""
    from pathlib import Path

    from tfsem.graphdef.mlir import load_mlir
    path = Path(__file__).resolve().parent.parent / "examples" / "mlir" / \
        "lifting_forward_past_update.mlir"
    q = load_mlir(path, None, "all")
    p = program_of_mlir(write_module(program_from_json(FORWARD_PAST_UPDATE)), "f.mlir", None, "all")
    for prog in (p, q):
        accesses = [n for n in prog.nodes if n.op in (READ, ASSIGN)]
        assert [(n.op, getattr(n, "attrs").get("fn")) for n in accesses] == \
            [(ASSIGN, "Snd"), (ASSIGN, "Sub"), (READ, None)]
        assert ordered(prog, accesses[0].name, accesses[1].name)
        assert ordered(prog, accesses[1].name, accesses[2].name)


@needs_tf
@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TFSEM_HYPOTHESIS_PROFILE=nightly): "
                                        "a campaign with TensorFlow in a worker and a sandbox, "
                                        "~60-180 s")
def test_a_lifting_campaign_on_written_modules_stores_its_findings(tmp_path, capsys):
    """`tfsem fuzz --target mlir-cluster:tf-resource-op-lifting --generator
    tfsem.generators.mlir:cluster_strategy`: findings (two handles, the
    forwarded store, ...) stored with the modules before and after the
    pipeline, written directly (a cluster of the generator's), and both
    verdicts."""
    import json
    import sqlite3

    from tfsem.cli import main
    out = tmp_path / "campaign"
    status = main(["fuzz", "--target", "mlir-cluster:tf-resource-op-lifting",
                   "--generator", "tfsem.generators.mlir:cluster_strategy",
                   "--budget", "60s", "--out", str(out), "--semantics", "atomic",
                   "--observe", "outputs", "--seed", "7", "--pass-timeout", "60", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert status == 1, summary
    with sqlite3.connect(out / "campaign.db") as db:
        rows = db.execute("select detail from findings where kind = 'unsound'").fetchall()
    assert rows
    for (detail,) in rows:
        d = json.loads(detail)
        assert is_direct(program_from_json(d["program_given"], validate=False))
        mlir = d["mlir"]
        assert "tf_device.cluster" in mlir["input_mlir"] and mlir["output_mlir"]
        assert set(mlir["verdicts"]) == {"atomic", "decomposed"}
        assert mlir["verdicts"]["atomic"] == "unsound"
