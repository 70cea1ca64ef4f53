"""The MLIR reader (graphdef/mlir.py): the generic and the pretty form,
islands, control tokens, clusters, calls, what is refused, hostile text, and
`tfsem check A.mlir B.mlir` on the outputs TensorFlow's passes gave
(examples/mlir/, saved by `tfsem mlir --save`).  Needs no TensorFlow."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import numpy as np
import pytest

from tfsem.cli import main
from tfsem.checking import check_case
from tfsem.graphdef.mlir import MlirError, load_mlir, program_of_mlir
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import Case, program_to_json
from tfsem.oracle.program import ProgramError
from tfsem.oracle.values import Tensor

EX = Path(__file__).resolve().parent.parent / "examples" / "mlir"

R = "tensor<!tf_type.resource<tensor<i64>>>"


def i64(**values):
    return {k: Tensor(np.array(v, dtype=np.int64)) for k, v in values.items()}


def outcomes(p, init, semantics="atomic", feeds=None):
    r = outcome_set(p, feeds or {}, init, semantics, "outputs+state")
    return {(tuple((k, v.array.item()) for k, v in o.outputs),
             tuple((k, v.array.item()) for k, v in o.state)) for o in r.as_dict(1000)}


def fn(body: str, results: str = "", outputs: str = "") -> str:
    """A module with @main(x, y: resources) in the executor form."""
    ret = f" -> ({results})" if results else ""
    attrs = (f' attributes {{tf.entry_function = {{inputs = "x,y", outputs = "{outputs}"}}}}'
             if outputs else "")
    return f"""module {{
  func.func @main(%x: {R} {{tf.resource_name = "x"}}, %y: {R} {{tf.resource_name = "y"}}){ret}{attrs} {{
{body}
  }}
}}"""


# -- the two forms ------------------------------------------------------------


def test_pretty_and_generic_forms_read_as_the_same_program():
    a = load_mlir(EX / "imported_pretty.mlir")
    b = load_mlir(EX / "imported_generic.mlir")
    assert sorted(a.variables) == ["x"] and list(a.outputs) == ["s"]
    assert list(a.feed_names) == ["p"] == list(b.feed_names)
    assert sorted(n.op for n in a.nodes) == sorted(n.op for n in b.nodes)
    for p, q in ((a, b), (b, a)):
        v = check_case(Case(p, program_to_json(q)), timeout=30)
        assert v.verdict in ("sound", "no-counterexample"), v.describe()


def _s_and_x(p):
    r = outcome_set(p, {"p": Tensor(np.array(0.0, dtype=np.float32), "float32")},
                    {"x": Tensor(np.array(0.0, dtype=np.float32), "float32")}, "atomic",
                    "outputs+state")
    return {(float(o.outputs[0][1].array), float(dict(o.state)["x"].array))
            for o in r.as_dict(100)}


def test_imported_v1_graph_runs_what_its_fetches_need_with_graph_runs_fetched():
    """@main with tf.entry_function (a GraphDef imported with its fetches),
    read as Session.run's partial execution (`tfsem import --fetch s`): the
    second AssignAdd, which s does not need, does not run; the read follows
    the first AssignAdd (a control token).  By default every op runs."""
    assert _s_and_x(load_mlir(EX / "imported_pretty.mlir", graph_runs="fetched")) == \
        {(1.0, 1.0)}
    assert _s_and_x(load_mlir(EX / "imported_pretty.mlir")) == {(1.0, 2.0), (2.0, 2.0)}


def test_without_entry_function_every_op_runs():
    text = (EX / "imported_pretty.mlir").read_text()
    text = text.replace(' attributes {tf.entry_function = {control_outputs = "", inputs = "p", '
                        'outputs = "s"}}', "")
    assert "entry_function" not in text
    p = program_of_mlir(text.replace("%arg0: tensor<f32>", "%p: tensor<f32>")
                        .replace("%arg0)", "%p)"))
    # the second AssignAdd runs too, before or after the read
    assert {(s, x) for s, x in _s_and_x(p)} == {(1.0, 2.0), (2.0, 2.0)}


def test_island_runs_its_ops_in_program_order():
    body = """    %0 = tf_executor.graph {
      %c, %cc = tf_executor.island wraps "tf.Const"() <{value = dense<7> : tensor<i64>}> : () -> tensor<i64>
      %r, %ctl = tf_executor.island {
        "tf.AssignVariableOp"(%x, %c) : (%R, tensor<i64>) -> ()
        %v = "tf.ReadVariableOp"(%x) : (%R) -> tensor<i64>
        tf_executor.yield %v : tensor<i64>
      }
      tf_executor.fetch %r : tensor<i64>
    }
    return %0 : tensor<i64>""".replace("%R", R)
    p = program_of_mlir(fn(body, "tensor<i64>", "r"))
    assert outcomes(p, i64(x=0, y=0)) == {((("r", 7),), (("x", 7), ("y", 0)))}


def test_two_islands_interleave():
    body = """    %0 = tf_executor.graph {
      %c, %cc = tf_executor.island wraps "tf.Const"() <{value = dense<7> : tensor<i64>}> : () -> tensor<i64>
      %ctl1 = tf_executor.island wraps "tf.AssignVariableOp"(%x, %c) : (%R, tensor<i64>) -> ()
      %r, %ctl2 = tf_executor.island wraps "tf.ReadVariableOp"(%x) : (%R) -> tensor<i64>
      tf_executor.fetch %r, %ctl1 : tensor<i64>, !tf_executor.control
    }
    return %0 : tensor<i64>""".replace("%R", R)
    p = program_of_mlir(fn(body, "tensor<i64>", "r"))
    assert {o[0][0][1] for o in outcomes(p, i64(x=0, y=0))} == {0, 7}


def test_functional_form_runs_in_program_order_and_inlines_calls():
    text = f"""module {{
  func.func private @bump(%v: {R}, %d: tensor<i64>) -> tensor<i64> {{
    "tf.AssignAddVariableOp"(%v, %d) : ({R}, tensor<i64>) -> ()
    %r = "tf.ReadVariableOp"(%v) : ({R}) -> tensor<i64>
    return %r : tensor<i64>
  }}
  func.func @main(%x: {R} {{tf.resource_name = "x"}}) -> tensor<i64> {{
    %c = "tf.Const"() <{{value = dense<2> : tensor<i64>}}> : () -> tensor<i64>
    %a = func.call @bump(%x, %c) : ({R}, tensor<i64>) -> tensor<i64>
    %b = "tf.StatefulPartitionedCall"(%x, %a) <{{config = "", config_proto = "", executor_type = "", f = @bump}}> : ({R}, tensor<i64>) -> tensor<i64>
    return %b : tensor<i64>
  }}
}}"""
    p = program_of_mlir(text)
    # x=1: +2 -> 3 (a = 3), then +3 -> 6
    assert outcomes(p, i64(x=1)) == {((("output_0", 6),), (("x", 6),))}


def test_a_cluster_runs_in_order_but_is_not_atomic():
    """The cluster's write then read may see the other island's write in between."""
    p = load_mlir(EX / "cluster_store_load.mlir")
    got = outcomes(p, i64(x=0, y=0))
    pairs = {(dict(o)["r_cluster"], dict(o)["r_island"]) for o, _ in got}
    assert pairs == {(0, 1), (1, 0), (1, 1)}      # never (0, 0): program order holds


def test_entry_function_names_outputs_and_resource_names_variables():
    p = load_mlir(EX / "cluster_store_load.mlir")
    assert sorted(p.variables) == ["x", "y"] and sorted(p.outputs) == ["r_cluster", "r_island"]


# -- the outputs of TensorFlow's passes (saved by tfsem mlir --save) ------------


@pytest.mark.parametrize("original,rewritten,atomic,decomposed", [
    ("concurrent_assign_add.mlir", "concurrent_assign_add.decomposed-by-tf.mlir", 1, 0),
    ("concurrent_assign_add.mlir", "concurrent_assign_add_decomposed.mlir", 1, 0),
    ("cluster_assign_add.mlir", "cluster_assign_add.lifted.mlir", 1, 0),
    ("cluster_store_load.mlir", "cluster_store_load.lifted.mlir", 1, 1),
    # tf-executor-break-up-islands drops the island's order between a write of
    # y and a read of x (different resources): store buffering again
    ("cluster_store_load.mlir", "cluster_store_load.broken-up.mlir", 1, 1),
])
def test_check_of_mlir_files_gives_the_verdicts_of_docs(original, rewritten, atomic,
                                                        decomposed, capsys):
    for mode, want in (("atomic", atomic), ("decomposed", decomposed)):
        rc = main(["check", str(EX / original), str(EX / rewritten), "--semantics", mode,
                   "--json", "--no-tensorflow", "--timeout", "30"])
        data = json.loads(capsys.readouterr().out)
        assert rc == want, (mode, data["verdict"])
        assert data["verdict"] == ("unsound" if want else "sound"), (mode, data)


# -- refused by name ----------------------------------------------------------


@pytest.mark.parametrize("op,rule", [
    ('"tf.RandomShuffle"(%s) : (tensor<1xi64>) -> tensor<1xi64>', "unmodelled-op"),
    ('"tf.While"(%c) <{body = @b, cond = @c, is_stateless = false}> : (tensor<i64>) -> tensor<i64>',
     "control-flow"),
    ('"arith.addi"(%c, %c) : (tensor<i64>, tensor<i64>) -> tensor<i64>', "unsupported-op"),
])
def test_unmodelled_ops_are_refused_with_line_and_column(op, rule):
    text = f"""func.func @main() -> tensor<i64> {{
  %c = "tf.Const"() <{{value = dense<1> : tensor<i64>}}> : () -> tensor<i64>
  %s = "tf.Const"() <{{value = dense<[1]> : tensor<1xi64>}}> : () -> tensor<1xi64>
  %r = {op}
  return %r : tensor<i64>
}}"""
    with pytest.raises(ProgramError) as exc:
        program_of_mlir(text, "t.mlir")
    v = exc.value.violations[0]
    assert v.where.startswith("t.mlir:4:") and v.rule == rule, v


def test_a_pure_unmodelled_op_is_an_uninterpreted_function():
    text = """func.func @main(%a: tensor<f32>) -> tensor<f32> {
  %r = "tf.Exp"(%a) : (tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}"""
    p = program_of_mlir(text)
    assert any(n.op.startswith("tf.Exp/") for n in p.nodes)


# -- hostile text --------------------------------------------------------------


@pytest.mark.parametrize("text,where", [
    ('func.func @main() {\n  %r = "tf.Const"() <{value = dense<1> : tensor<i64>\n', "t.mlir:"),
    ("func.func @main() {\n  return %nope : tensor<i64>\n}", "t.mlir:2:"),
    ("module {\n  func.func @main() {\n    %r = tf.Foo %x\n  }\n}", "t.mlir:3:"),
    ('"builtin.module"() ({' * 500, "t.mlir:1:"),
    ("func.func @main() -> tensor<i64> { %a = \"tf.Const\"() <{value = dense<99999999999999999999> : tensor<i64>}> : () -> tensor<i64>\n return %a : tensor<i64> }", "t.mlir:1:"),
])
def test_hostile_text_is_an_error_with_line_and_column(text, where):
    with pytest.raises(MlirError) as exc:
        program_of_mlir(text, "t.mlir")
    assert exc.value.violations[0].where.startswith(where), exc.value


def test_cli_exit_2_without_traceback_on_bad_mlir(tmp_path, capsys):
    bad = tmp_path / "bad.mlir"
    bad.write_bytes(b"func.func @main() {\n  %0 = \"tf.Const\"() <{value = dense<\x00\xff")
    rc = main(["check", str(bad), str(EX / "concurrent_assign_add.mlir"), "--no-tensorflow"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and "bad.mlir:2:" in err


def test_fuzz_reader_never_crashes():
    """Truncations, byte flips, random bytes and deep nesting: a program or an
    MlirError/ProgramError with a line, never another exception."""
    rng = random.Random(26)
    seeds = [(EX / f).read_text() for f in ("imported_pretty.mlir", "imported_generic.mlir",
                                            "cluster_store_load.mlir")]
    texts: list[str] = []
    for s in seeds:
        texts += [s[:k] for k in sorted(rng.sample(range(len(s)), 40))]
        for _ in range(40):
            b = list(s)
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(len(b))] = rng.choice('{}()<>[]%#"^@:,=x0 \n-')
            texts.append("".join(b))
    texts += ["".join(chr(rng.randrange(1, 0x250)) for _ in range(200)) for _ in range(40)]
    texts += ["[" * 5000, "{" * 5000, "tensor<" * 3000, "func.func @f() {" * 1000,
              "%0 = \"tf.Const\"() <{value = " + "[" * 3000]
    t0 = time.monotonic()
    for t in texts:
        try:
            program_of_mlir(t, "f.mlir")
        except ProgramError as exc:
            assert exc.violations and exc.violations[0].where.startswith("f.mlir"), exc
    assert time.monotonic() - t0 < 30


@pytest.mark.parametrize("rewritten,fetched,all_", [
    ("unfetched_write.pruned.mlir", "sound", "unsound"),
    ("unfetched_write.control-deps-updated.mlir", "unsound", "sound"),
])
def test_passes_disagree_on_what_an_imported_v1_graph_runs(rewritten, fetched, all_):
    """tf-executor-graph-pruning deletes an unfetched AssignVariableOp (sound
    when only what the fetches need runs); tf-executor-update-control-
    dependencies fetches its control token (sound when every op runs)."""
    for runs, want in (("fetched", fetched), ("all", all_)):
        p = load_mlir(EX / "unfetched_write.mlir", graph_runs=runs)
        q = load_mlir(EX / rewritten, graph_runs=runs)
        v = check_case(Case(p, program_to_json(q)), timeout=30)
        assert v.verdict == want, (runs, v.describe())
        if want == "unsound":
            assert v.differs == {"variable": "x"}


@pytest.mark.parametrize("argv,says", [
    (["mlir", "nothere.mlir", "--pipeline", "cse"], "nothere.mlir"),
    (["mlir", "prog.json", "--pipeline", "cse"], "GraphDef"),
    (["mlir", str(EX / "unfetched_write.mlir"), "--pipeline", "cse", "--fetch", "r"], "--fetch"),
])
def test_mlir_command_bad_usage_is_exit_2_without_traceback(argv, says, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_result_number_zero_of_a_single_value():
    """`%r#0` names `%r` itself (TensorFlow's lit tests write it)."""
    text = f"""func.func @main(%x: {R}) -> tensor<i64> {{
  %0 = tf_executor.graph {{
    %r, %c = tf_executor.island wraps "tf.ReadVariableOp"(%x) : ({R}) -> tensor<i64>
    tf_executor.fetch %r#0 : tensor<i64>
  }}
  return %0 : tensor<i64>
}}"""
    p = program_of_mlir(text)
    assert outcomes(p, i64(x=5)) == {((("output_0", 5),), (("x", 5),))}
