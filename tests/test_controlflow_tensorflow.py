"""TensorFlow 1 control flow (tf.cond, tf.while_loop with control_flow_v2
disabled: the Switch/Merge/Enter/Exit/NextIteration/LoopCond primitives),
imported and explored by the reference semantics, against what TensorFlow's
executor computes: outputs and the final value of the variable, with an
assignment in a branch or in the loop body.  Skipped without TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.oracle.controlflow import LoopBoundExceeded
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.values import Tensor

tf = pytest.importorskip("tensorflow", reason="runs TensorFlow's executor: needs the extra "
                         "tfsem[tensorflow]")
tf1 = tf.compat.v1


def build_v1(build):
    """A graph built with control flow v1; the global switch restored after."""
    from tfsem.graphdef.proto import decode
    g = tf.Graph()
    tf1.disable_control_flow_v2()
    try:
        with g.as_default():
            handles = build()
    finally:
        tf1.enable_control_flow_v2()
    return g, handles, decode("GraphDef", g.as_graph_def().SerializeToString())


def cond_graph():
    x = tf1.get_variable("x", initializer=tf.constant(1, tf.int64), use_resource=True)
    p = tf1.placeholder(tf.bool, shape=[], name="p")

    def taken():
        a = x.assign_add(tf.constant(10, tf.int64))
        with tf.control_dependencies([a]):
            return tf.identity(x.read_value())

    def other():
        a = x.assign(tf.constant(-4, tf.int64))
        with tf.control_dependencies([a]):
            return x.read_value() * 2

    out = tf.identity(tf1.cond(p, taken, other, name="cond"), name="out")
    return x, {"p": p}, out


def loop_graph():
    x = tf1.get_variable("x", initializer=tf.constant(0, tf.int64), use_resource=True)
    n = tf1.placeholder(tf.int64, shape=[], name="n")

    def body(i):
        a = x.assign_add(tf.constant(3, tf.int64))
        with tf.control_dependencies([a]):
            return i + 1

    r = tf1.while_loop(lambda i: i < n, body, [tf.constant(0, tf.int64)], name="loop")
    return x, {"n": n}, tf.identity(r, name="out")


def tensorflow_run(g, handles, feeds: dict, x0: int):
    x, phs, out = handles
    with tf1.Session(graph=g) as s:
        s.run(x.initializer, {x.initial_value: x0})
        got = s.run(out, {phs[k]: v for k, v in feeds.items()})
        return np.asarray(got), np.asarray(s.run(x.read_value()))


def tfsem_outcomes(graph_def, feeds: dict, x0: int, mode: str, **kw):
    p = import_graph(graph_def, ["out"]).program
    assert p.has_control_flow
    vals = {k: Tensor(np.asarray(v)) for k, v in feeds.items()}
    return outcome_set(p, vals, {"x": Tensor(np.int64(x0))}, mode, **kw)


@pytest.mark.parametrize("mode", ["atomic", "decomposed"])
def test_cond_with_assignments_in_both_branches(mode):
    g, handles, gd = build_v1(cond_graph)
    for pred in (True, False):
        for x0 in (1, 7):
            out, x = tensorflow_run(g, handles, {"p": pred}, x0)
            got = tfsem_outcomes(gd, {"p": np.bool_(pred)}, x0, mode)
            [o] = list(got)
            assert dict(o.outputs)["out"] == Tensor(out) and dict(o.state)["x"] == Tensor(x)


@pytest.mark.parametrize("mode", ["atomic", "decomposed"])
def test_while_loop_with_an_assignment_in_the_body(mode):
    g, handles, gd = build_v1(loop_graph)
    for n in (0, 1, 5):
        out, x = tensorflow_run(g, handles, {"n": np.int64(n)}, 2)
        got = tfsem_outcomes(gd, {"n": np.int64(n)}, 2, mode)
        [o] = list(got)
        assert dict(o.outputs)["out"] == Tensor(out) and dict(o.state)["x"] == Tensor(x)


def test_a_trip_count_beyond_the_bound_is_unknown_naming_the_loop():
    _, _, gd = build_v1(loop_graph)
    with pytest.raises(LoopBoundExceeded) as info:
        tfsem_outcomes(gd, {"n": np.int64(40)}, 0, "atomic", max_iterations=10)
    assert info.value.frame == "loop/while_context" and info.value.limit == 10


def v2_cond_graph():
    """TensorFlow 2's functional conditionals (control flow v2): an If with
    assignments in both branches (the variable captured as a resource
    argument) and a StatelessIf."""
    x = tf1.get_variable("x", initializer=tf.constant(1, tf.int64), use_resource=True)
    p = tf1.placeholder(tf.bool, shape=[], name="p")

    def taken():
        a = x.assign_add(tf.constant(10, tf.int64))
        with tf.control_dependencies([a]):
            return tf.identity(x.read_value())

    def other():
        a = x.assign(tf.constant(-4, tf.int64))
        with tf.control_dependencies([a]):
            return x.read_value() * 2

    out = tf.cond(p, taken, other, name="cond")
    pure = tf.cond(p, lambda: tf.constant(3, tf.int64), lambda: tf.constant(4, tf.int64), name="c2")
    return x, {"p": p}, tf.identity(out + 100 * pure, name="out")


@pytest.mark.parametrize("mode", ["atomic", "decomposed"])
def test_functional_if_is_lowered_as_tensorflow_runs_it(mode):
    from tfsem.graphdef.proto import decode
    g = tf.Graph()
    with g.as_default():   # control flow v2: If and StatelessIf ops
        handles = v2_cond_graph()
    ops = {n.op for n in g.as_graph_def().node}
    assert {"If", "StatelessIf"} <= ops
    gd = decode("GraphDef", g.as_graph_def().SerializeToString())
    for pred in (True, False):
        out, x = tensorflow_run(g, handles, {"p": pred}, 1)
        [o] = list(tfsem_outcomes(gd, {"p": np.bool_(pred)}, 1, mode))
        assert dict(o.outputs)["out"] == Tensor(out) and dict(o.state)["x"] == Tensor(x)


def v2_function_graph():
    """A tf.function (control flow v2) holding a tf.while_loop with an
    assign_add in its body, a tf.switch_case of three branches, each
    assigning, and, in the loop body, a tf.cond and an inner loop that
    assign too: While, Case, If inside a function body, nested."""
    x = tf1.get_variable("x", initializer=tf.constant(0, tf.int64), use_resource=True)
    n = tf1.placeholder(tf.int64, shape=[], name="n")
    m = tf1.placeholder(tf.int64, shape=[], name="m")
    k = tf1.placeholder(tf.int32, shape=[], name="k")

    @tf.function
    def fn(n, m, k):
        def body(i):
            x.assign_add(tf.constant(3, tf.int64))
            return i + 1
        loop = tf.while_loop(lambda i: i < n, body, [tf.constant(0, tf.int64)])[0]

        def branch(v):
            def f():
                x.assign(x.read_value() * 10 + v)
                return tf.constant(v, tf.int64)
            return f
        case = tf.switch_case(k, [branch(1), branch(2), branch(3)])

        def outer(i):
            tf.cond(i < 1, lambda: x.assign_add(tf.constant(100, tf.int64)),
                    lambda: x.assign_add(tf.constant(1000, tf.int64)))

            def inner(j):
                x.assign_add(tf.constant(1, tf.int64))
                return j + 1
            done = tf.while_loop(lambda j: j < m, inner, [tf.constant(0, tf.int64)])[0]
            return i + 1 + 0 * done
        nested = tf.while_loop(lambda i: i < 2, outer, [tf.constant(0, tf.int64)])[0]
        return loop * 100 + case * 10 + nested
    out = tf.identity(fn(n, m, k), name="out")
    return x, {"n": n, "m": m, "k": k}, out


@pytest.fixture(scope="module")
def v2_function():
    from tfsem.graphdef.proto import decode
    g = tf.Graph()
    with g.as_default():
        handles = v2_function_graph()
    gd = g.as_graph_def()
    ops = {nd.op for f in gd.library.function for nd in f.node_def}
    assert {"While", "Case"} <= ops and ({"If", "StatelessIf"} & ops)
    return g, handles, decode("GraphDef", gd.SerializeToString())


#: (n, m, k) feeds of the v2 function graph per mode: one atomic by default
#: (the reference semantics takes 1-3 s on its 235 nodes), all under the
#: nightly profile
V2_FEEDS = ((0, 0, 0), (1, 2, 1), (3, 1, 2), (2, 0, 7), (1, 1, -1))
V2_DEFAULT = {"atomic": ((1, 1, -1),), "decomposed": ()}


@pytest.mark.parametrize("mode", ["atomic", "decomposed"])
def test_functional_while_and_case_are_lowered_as_tensorflow_runs_them(v2_function, mode):
    import os
    g, handles, gd = v2_function
    p = import_graph(gd, ["out"]).program
    frames = {f for fs in p.frames.values() for f in fs}
    assert "StatefulPartitionedCall/while" in frames   # the While's name is its frame
    nightly = os.environ.get("TFSEM_HYPOTHESIS_PROFILE") == "nightly"
    for n, m, k in (V2_FEEDS if nightly else V2_DEFAULT[mode]):
        feeds = {"n": np.int64(n), "m": np.int64(m), "k": np.int32(k)}
        out, x = tensorflow_run(g, handles, feeds, 2)
        got = outcome_set(p, {q: Tensor(v) for q, v in feeds.items()},
                          {"x": Tensor(np.int64(2))}, mode)
        assert {(dict(o.outputs)["out"], dict(o.state)["x"]) for o in got} == \
            {(Tensor(out), Tensor(x))}, (n, m, k)


def test_a_functional_while_beyond_the_bound_is_unknown_naming_the_loop(v2_function):
    _, _, gd = v2_function
    p = import_graph(gd, ["out"]).program
    feeds = {"n": Tensor(np.int64(40)), "m": Tensor(np.int64(0)), "k": Tensor(np.int32(0))}
    with pytest.raises(LoopBoundExceeded) as info:
        outcome_set(p, feeds, {"x": Tensor(np.int64(0))}, "atomic", max_iterations=3)
    assert info.value.frame == "StatefulPartitionedCall/while" and info.value.limit == 3
    assert "'StatefulPartitionedCall/while'" in str(info.value) and "bound of 3" in str(info.value)


def nested_graph():
    """An outer loop whose body holds a conditional and an inner loop, with
    assignments in both."""
    x = tf1.get_variable("x", initializer=tf.constant(0, tf.int64), use_resource=True)
    n = tf1.placeholder(tf.int64, shape=[], name="n")
    m = tf1.placeholder(tf.int64, shape=[], name="m")

    def inner(j):
        a = x.assign_add(tf.constant(1, tf.int64))
        with tf.control_dependencies([a]):
            return j + 1

    def outer(i):
        def big():
            a = x.assign_add(tf.constant(100, tf.int64))
            with tf.control_dependencies([a]):
                return tf.identity(i)

        def small():
            a = x.assign_add(tf.constant(10, tf.int64))
            with tf.control_dependencies([a]):
                return tf.identity(i)

        c = tf1.cond(i < 1, big, small, name="pick")
        done = tf1.while_loop(lambda j: j < m, inner, [tf.constant(0, tf.int64)], name="inner")
        with tf.control_dependencies([done]):
            return c + 1

    r = tf1.while_loop(lambda i: i < n, outer, [tf.constant(0, tf.int64)], name="outer")
    return x, {"n": n, "m": m}, tf.identity(r, name="out")


def test_nested_loops_and_a_conditional_in_a_loop():
    g, handles, gd = build_v1(nested_graph)
    for n, m in ((0, 2), (1, 0), (2, 3), (3, 1)):
        feeds = {"n": np.int64(n), "m": np.int64(m)}
        out, x = tensorflow_run(g, handles, feeds, 0)
        p = import_graph(gd, ["out"]).program
        got = outcome_set(p, {k: Tensor(v) for k, v in feeds.items()}, {"x": Tensor(np.int64(0))})
        assert {dict(o.state)["x"] for o in got} == {Tensor(x)}, (n, m)
        assert {dict(o.outputs)["out"] for o in got} == {Tensor(out)}, (n, m)
    # schedules name the inner loop's iterations inside the outer's
    [schedule] = got.as_dict().values()
    assert any("@outer/while_context:2/outer/inner/while_context:0" in s for s in schedule)


def test_an_if_inside_a_function_body_is_lowered_too():
    from tfsem.graphdef.proto import decode
    g = tf.Graph()
    with g.as_default():
        x = tf1.get_variable("x", initializer=tf.constant(1, tf.int64), use_resource=True)
        p = tf1.placeholder(tf.bool, shape=[], name="p")

        @tf.function
        def fn(q):
            def taken():
                x.assign_add(tf.constant(10, tf.int64))
                return tf.constant(1, tf.int64)

            def other():
                x.assign(tf.constant(-4, tf.int64))
                return tf.constant(2, tf.int64)
            return tf.cond(q, taken, other)
        out = tf.identity(fn(p), name="out")
    assert "StatefulPartitionedCall" in {n.op for n in g.as_graph_def().node}
    gd = decode("GraphDef", g.as_graph_def().SerializeToString())
    for pred in (True, False):
        want, wx = tensorflow_run(g, (x, {"p": p}, out), {"p": pred}, 1)
        [o] = list(tfsem_outcomes(gd, {"p": np.bool_(pred)}, 1, "atomic"))
        assert dict(o.outputs)["out"] == Tensor(want) and dict(o.state)["x"] == Tensor(wx)


def test_an_assignment_nothing_waits_for_in_a_graph_mode_loop_body_does_not_run():
    """Graph mode (no tf.function: no automatic control dependencies): the
    body's assign_add is no control output of the body function and nothing
    depends on it, so after lowering and inlining nothing fetched needs it
    and TensorFlow does not run it; neither does tfsem."""
    def build():
        x = tf1.get_variable("x", initializer=tf.constant(0, tf.int64), use_resource=True)

        def body(i):
            x.assign_add(tf.constant(1, tf.int64))
            return i + 1
        r = tf.while_loop(lambda i: i < 3, body, [tf.constant(0, tf.int64)], name="loop")[0]
        return x, {}, tf.identity(r, name="out")
    from tfsem.graphdef.proto import decode
    g = tf.Graph()
    with g.as_default():
        handles = build()
    out, x = tensorflow_run(g, handles, {}, 0)
    assert int(x) == 0          # TensorFlow did not run the assignment
    p = import_graph(decode("GraphDef", g.as_graph_def().SerializeToString()), ["out"]).program
    [o] = list(outcome_set(p, {}, {}))
    assert dict(o.outputs)["out"] == Tensor(out) and "x" not in p.variables


# -- an error as a predicate (docs/semantics.md, "An error as a predicate") ----------

def _state_after(graph_def, fetches: dict, targets: list, init: dict):
    """Run `graph_def` once on TensorFlow's executor from `init` (a variable
    absent is uninitialized): (whether the run failed, every variable's
    value after it, None for uninitialized)."""
    from tfsem.backends.tensorflow import GraphRunner
    with GraphRunner(graph_def, fetches, targets, optimize=False) as r:
        r._set_state({k: Tensor(np.int64(v)) for k, v in init.items()})
        try:
            r.session.run([r.outputs[k] for k in r.outputs] + r.targets)
            failed = False
        except tf.errors.OpError:
            failed = True
        inited = r.session.run(r._is_init)
        values = r.session.run({v: r._read[v] for v, ok in inited.items() if ok})
        return failed, {v: (int(values[v]) if v in values else None) for v in inited}


def test_an_error_predicate_runs_neither_branch_on_tensorflow():
    """The predicate !(Read x == Read x) with x uninitialized: TensorFlow
    fails the run, and the write y := 2 that waits for the else pivot never
    runs, while the same write with no wait does: tfsem's outcomes say the
    same (y := 0 against y := 2), so the rewrite dropping the wait is
    unsound (tests/test_controlflow_semantics.py checks the verdict)."""
    import sys
    from pathlib import Path
    from tfsem.graphdef.exporter import export_graph
    from tfsem.graphdef.proto import encode
    from tfsem.oracle.values import Error
    sys.path.insert(0, str(Path(__file__).parent))
    from test_controlflow_semantics import _error_predicate_program
    for wait, y_after in ((True, 0), (False, 2)):
        p = _error_predicate_program(wait)
        graph = export_graph(p)
        targets = [n["name"] for n in graph["node"] if n["name"] not in p.outputs]
        gd = tf1.GraphDef.FromString(encode("GraphDef", graph))
        failed, state = _state_after(gd, {"o": "o:0"}, targets, {"y": 0})
        assert failed and state == {"x": None, "y": y_after}
        [o] = outcome_set(p, {}, {"x": Error("uninitialized"), "y": Tensor(np.int64(0))},
                          "atomic")
        assert dict(o.state)["y"] == Tensor(np.int64(y_after))


def test_an_if_whose_predicate_fails_has_no_effect_in_either_lowering():
    """A functional If (tf.cond, control flow v2) on Read(x) < 0 that writes
    y in each branch (y a captured handle, an input of the If).  With x
    uninitialized TensorFlow fails the run and y keeps its value.  tfsem's
    own lowering of the If and its reading of Grappler's lowering (the
    default pipeline) agree: y keeps its value (the error predicate runs
    neither branch), so Grappler's output is no longer `unsound` there."""
    from tfsem.checking import check_rewrite
    from tfsem.graphdef import grappler
    from tfsem.graphdef.proto import decode
    from tfsem.oracle.values import Error
    g = tf.Graph()
    with g.as_default():
        x = tf1.get_variable("x", initializer=tf.constant(0, tf.int64), use_resource=True)
        y = tf1.get_variable("y", initializer=tf.constant(0, tf.int64), use_resource=True)

        def write(v):
            def branch():
                with tf.control_dependencies([y.assign(tf.constant(v, tf.int64))]):
                    return tf.constant(v, tf.int64)
            return branch
        tf.identity(tf.cond(x.read_value() < 0, write(1), write(2), name="cond"), name="out")
    gd = g.as_graph_def()
    assert "If" in {n.op for n in gd.node}
    failed, state = _state_after(gd, {"out": "out:0"}, [], {"y": 5})
    assert failed and state == {"x": None, "y": 5}
    failed, state = _state_after(gd, {"out": "out:0"}, [], {"x": 3, "y": 5})
    assert not failed and state == {"x": 3, "y": 2}
    ours = import_graph(decode("GraphDef", gd.SerializeToString()), ["out"]).program
    lowered = grappler.run_grappler(gd, ["out"], grappler.DEFAULT_PIPELINE).graph_def
    assert "If" not in {n.op for n in lowered.node}
    theirs = import_graph(decode("GraphDef", lowered.SerializeToString()), ["out"]).program
    sigma = {"x": Error("uninitialized"), "y": Tensor(np.int64(5))}
    for p in (ours, theirs):
        [o] = outcome_set(p, {}, sigma, "atomic")
        assert dict(o.state)["y"] == Tensor(np.int64(5))
        # (the error TensorFlow fails the step with: the Read's)
        assert dict(o.outputs)["out"] == Error("uninitialized")
    v = check_rewrite(ours, theirs, "atomic", "outputs+state", timeout=20, backends=False)
    assert v.verdict != "unsound", v.reason


def test_a_predicate_that_is_no_scalar_runs_neither_branch_on_tensorflow():
    """A [2] bool fed to a Switch whose predicate's shape is unknown until the
    run: TensorFlow's Switch fails ("The second input must be a scalar") and
    the write through its false port does not run; in tfsem both ports are
    dead, so the write fires dead too."""
    g = tf.Graph()
    with g.as_default():
        y = tf.raw_ops.VarHandleOp(dtype=tf.int64, shape=[], shared_name="y", name="y")
        p = tf1.placeholder(tf.bool, None, name="p")
        s_f, _ = tf.raw_ops.Switch(data=y, pred=p, name="sy")
        tf.raw_ops.AssignVariableOp(resource=s_f, value=np.int64(2), name="w")
    gd = g.as_graph_def()
    from tfsem.backends.tensorflow import GraphRunner
    with GraphRunner(gd, {}, ["w"], optimize=False) as r:
        r._set_state({"y": Tensor(np.int64(0))})
        with pytest.raises(tf.errors.InvalidArgumentError, match="must be a scalar"):
            r.session.run(["w"], {"p:0": np.array([True, False])})
        assert int(r.session.run(r._read["y"])) == 0
    # tfsem needs a feed's static shape: the [2] predicate is computed here
    from tfsem.oracle.jsonio import program_from_json

    def prog(a, k):
        return program_from_json({"format": "tfsem.program/1", "variables": ["y"], "outputs": {},
                                  "nodes": [{"name": "a", "op": "Const", "value": a},
                                            {"name": "b", "op": "Const", "value": k},
                                            {"name": "p", "op": "Less", "inputs": ["a", "b"]},
                                            {"name": "vy", "op": "Var", "var": "y"},
                                            {"name": "sy", "op": "Switch", "inputs": ["vy", "p"]},
                                            {"name": "two", "op": "Const", "value": 2},
                                            {"name": "w", "op": "Assign", "fn": "Snd",
                                             "inputs": ["sy:0", "two"]}]})
    for a, k, y in (([1, 2], [2, 2], 0), (1, 0, 2)):   # a [2] predicate; a scalar false one
        [o] = outcome_set(prog(a, k), {}, {"y": Tensor(np.int64(0))}, "atomic")
        assert dict(o.state)["y"] == Tensor(np.int64(y))
