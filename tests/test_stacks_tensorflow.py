"""TensorFlow 1's stacks (StackV2, StackPushV2, StackPopV2, StackCloseV2:
oracle/opdefs/stacks.py) against TensorFlow's kernels, a real while-loop
gradient that uses a stack, and Grappler's stack-push removal checked.
Skipped without TensorFlow."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tfsem.checking.check import check_rewrite
from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.values import Error, Tensor

tf = pytest.importorskip("tensorflow", reason="runs TensorFlow's kernels: needs the extra "
                         "tfsem[tensorflow]")
tf1 = tf.compat.v1
raw = tf.raw_ops

HERE = os.path.dirname(os.path.abspath(__file__))
STACKS = os.path.join(HERE, "..", "examples", "tensorflow", "stacks")
PUSH = "gradients/while/mul_grad/Mul_1/StackPushV2"


def _decode(g):
    from tfsem.graphdef.proto import decode
    return decode("GraphDef", g.as_graph_def().SerializeToString())


def _chain(ops):
    """Each op of `ops` (callables taking the previous op) after the one before."""
    prev = None
    for make in ops:
        with tf.control_dependencies([prev] if prev is not None else []):
            prev = make()
    return prev


def _case(max_size, dtype, steps, *, pop_type=None):
    """A graph: a stack of `dtype` and `max_size`, then `steps` in order
    (('push', value, value dtype), ('pop',), ('close',)); fetch the last
    step's output (a Const after a close)."""
    g = tf.Graph()
    with g.as_default():
        ms = tf.constant(max_size, tf.int32, name="max_size")
        s = raw.StackV2(max_size=ms, elem_type=dtype, stack_name="st", name="s")
        made = []
        for k, st in enumerate(steps):
            if st[0] == "push":
                made.append(lambda k=k, st=st: raw.StackPushV2(
                    handle=s, elem=tf.constant(st[1], st[2], name=f"v{k}"), name=f"op{k}"))
            elif st[0] == "pop":
                made.append(lambda k=k: raw.StackPopV2(handle=s, elem_type=pop_type or dtype,
                                                        name=f"op{k}"))
            else:
                made.append(lambda k=k: raw.StackCloseV2(handle=s, name=f"op{k}"))
        last = _chain(made)
        if steps[-1][0] == "close":
            with tf.control_dependencies([last]):
                last = tf.constant(7, tf.int64, name="after")
        tf.identity(last, name="out")
    return g


def _outcomes(p, feeds):
    return {o for o, _ in outcome_set(p, feeds, {}).items()}


def _session(g, grappler: bool = False):
    """A Session of `g`; without Grappler unless asked (its loop optimizer
    would remove the pushes nobody pops, the rewrite checked below)."""
    config = tf1.ConfigProto()
    if not grappler:
        config.graph_options.rewrite_options.disable_meta_optimizer = True
    return tf1.Session(graph=g, config=config)


def _tensorflow(g):
    with _session(g) as sess:
        try:
            return sess.run("out:0")
        except tf.errors.OpError as exc:
            return exc


def _tfsem(g):
    p = import_graph(_decode(g), ["out"], []).program
    outs = {dict(o.outputs)["out"] for o in _outcomes(p, {})}
    assert len(outs) == 1, outs   # the steps are ordered: one outcome
    return outs.pop()


F32 = tf.float32
I64 = tf.int64
CASES = [
    # (name, max_size, dtype, steps, pop_type, expected tfsem error or None, TensorFlow's message)
    ("lifo", -1, I64, [("push", 2**63 - 1, I64), ("push", -2**63, I64), ("pop",), ("pop",)],
     None, None, None),
    ("lifo-top", -1, I64, [("push", 1, I64), ("push", -2**63, I64), ("pop",)], None, None, None),
    ("negative-zero", -1, F32, [("push", -0.0, F32), ("pop",)], None, None, None),
    ("nan", 3, F32, [("push", float("nan"), F32), ("pop",)], None, None, None),
    ("subnormal", 3, F32, [("push", np.float32(1e-45), F32), ("pop",)], None, None, None),
    ("push-output", 2, I64, [("push", 5, I64), ("push", 6, I64)], None, None, None),
    ("empty-pop", -1, I64, [("pop",)], None, "stack-empty", "is empty"),
    ("popped-empty", -1, I64, [("push", 1, I64), ("pop",), ("pop",)], None, "stack-empty",
     "is empty"),
    ("overflow", 1, I64, [("push", 1, I64), ("push", 2, I64)], None, "stack-overflow",
     "overflowed its max_size"),
    ("max-size-0", 0, I64, [("push", 1, I64)], None, "stack-overflow", "overflowed"),
    ("no-limit", -5, I64, [("push", 1, I64), ("push", 2, I64), ("push", 3, I64), ("pop",)],
     None, None, None),
    ("push-after-close", 3, I64, [("close",), ("push", 1, I64)], None, "stack-closed",
     "has already been closed"),
    ("pop-after-close", 3, I64, [("push", 1, I64), ("close",), ("pop",)], None, "stack-closed",
     "has already been closed"),
    ("close-twice", 3, I64, [("close",), ("close",)], None, None, None),
    ("push-dtype", 3, I64, [("push", 1, tf.int32)], None, "stack-dtype", "Must have type"),
    ("pop-dtype", 3, I64, [("push", 1, I64), ("pop",)], F32, "stack-dtype", None),
]


@pytest.mark.parametrize("name,max_size,dtype,steps,pop_type,err,message", CASES,
                         ids=[c[0] for c in CASES])
def test_stack_ops_are_tensorflows_kernels(name, max_size, dtype, steps, pop_type, err, message):
    g = _case(max_size, dtype, steps, pop_type=pop_type)
    theirs = _tensorflow(g)
    ours = _tfsem(g)
    if err is None:
        assert not isinstance(theirs, Exception), theirs
        assert ours == Tensor(np.asarray(theirs)), (ours, theirs)
    else:
        # (a pop of the wrong elem_type: the kernel pops, the executor refuses
        # the output's dtype, InternalError "does not match declared output type")
        assert isinstance(theirs, tf.errors.InvalidArgumentError if message else
                          tf.errors.InternalError), theirs
        assert (message or "does not match declared output type") in str(theirs)
        assert ours == Error(err)


def test_a_max_size_that_is_no_scalar_fails_as_tensorflows_kernel():
    g = tf.Graph()
    with g.as_default():
        s = raw.StackV2(max_size=tf.constant([1], tf.int32), elem_type=I64, name="s")
        tf.identity(raw.StackPushV2(handle=s, elem=tf.constant(1, I64)), name="out")
    theirs = _tensorflow(g)
    assert isinstance(theirs, tf.errors.InvalidArgumentError) and "scalar" in str(theirs)
    assert _tfsem(g) == Error("stack-max-size")


def test_unordered_pushes_give_both_orders_and_tensorflow_one_of_them():
    g = tf.Graph()
    with g.as_default():
        s = raw.StackV2(max_size=tf.constant(-1), elem_type=I64, name="s")
        p1 = raw.StackPushV2(handle=s, elem=tf.constant(1, I64), name="p1")
        p2 = raw.StackPushV2(handle=s, elem=tf.constant(2, I64), name="p2")
        with tf.control_dependencies([p1, p2]):
            tf.identity(raw.StackPopV2(handle=s, elem_type=I64), name="out")
    p = import_graph(_decode(g), ["out"], []).program
    ours = {dict(o.outputs)["out"] for o in _outcomes(p, {})}
    assert ours == {Tensor(1, "int64"), Tensor(2, "int64")}
    assert Tensor(np.asarray(_tensorflow(g))) in ours


def test_the_ref_forms_are_refused_by_name():
    g = tf.Graph()
    with g.as_default():
        s = raw.Stack(elem_type=I64, name="s")
        tf.identity(raw.StackPush(handle=s, elem=tf.constant(1, I64)), name="out")
    with pytest.raises(GraphImportError, match="ref-stack"):
        import_graph(_decode(g), ["out"], [])


def test_a_program_with_a_stack_exports_and_tensorflow_runs_it():
    from tfsem.graphdef.exporter import export_graph
    from tfsem.graphdef.proto import encode
    g = _case(-1, I64, [("push", 3, I64), ("push", 4, I64), ("pop",)])
    p = import_graph(_decode(g), ["out"], []).program
    gd = tf1.GraphDef.FromString(encode("GraphDef", export_graph(p)))
    g2 = tf.Graph()
    with g2.as_default():
        tf.graph_util.import_graph_def(gd, name="")
    with _session(g2) as sess:
        assert sess.run("out:0") == 4


def _pb(name):
    from tfsem.graphdef.proto import decode
    from google.protobuf import text_format
    with open(os.path.join(STACKS, name)) as f:
        gd = text_format.Parse(f.read(), tf1.GraphDef())
    return gd, decode("GraphDef", gd.SerializeToString())


def test_a_while_loop_gradient_through_a_stack_is_tensorflows():
    gd, data = _pb("tf1_while_grad_stack.pbtxt")
    p = import_graph(data, ["y", "gx"], []).program
    assert {"StackV2", "StackPushV2", "StackPopV2"} <= {n.op for n in p.nodes}
    g = tf.Graph()
    with g.as_default():
        tf.graph_util.import_graph_def(gd, name="")
    with _session(g) as sess:
        y, gx = sess.run(["y:0", "gx:0"], {"x:0": 2.0, "n:0": 3})
    oc = _outcomes(p, {"x": Tensor(np.float32(2.0)), "n": Tensor(np.int32(3))})
    assert {tuple(sorted(o.outputs)) for o in oc} == {
        (("gx", Tensor(np.float32(gx))), ("y", Tensor(np.float32(y))))}


def test_grappler_removes_the_push_nobody_pops_and_the_rewrite_is_not_unsound():
    from tfsem.graphdef import grappler as gr
    from tfsem.graphdef.proto import decode
    gd, data = _pb("tf1_while_grad_stack_pruned.pbtxt")
    out = gr.run_grappler(gd.SerializeToString(), ["y", PUSH], "loop").graph_def
    assert {n.name: n.op for n in out.node}[PUSH] == "Identity"
    before = import_graph(data, ["y"], [PUSH]).program
    after = import_graph(decode("GraphDef", out.SerializeToString()), ["y"], [PUSH]).program
    assert "StackPushV2" not in {n.op for n in after.nodes}
    sigma = {"x": Tensor(np.float32(1.5)), "n": Tensor(np.int32(3))}
    assert _outcomes(after, sigma) == _outcomes(before, sigma)
    v = check_rewrite(before, after, timeout=20)
    assert v.verdict in ("no-counterexample", "unknown"), v   # a loop is never proved


def _overflowing_push():
    """StackV2(max_size 0) and one push of the feed `a` (fetched): the push
    always fails; nobody pops, so Grappler removes it."""
    g = tf.Graph()
    with g.as_default():
        a = tf1.placeholder(I64, [], name="a")
        s = raw.StackV2(max_size=tf.constant(0), elem_type=I64, name="s")
        tf.identity(raw.StackPushV2(handle=s, elem=a, name="push"), name="out")
    return g


def test_removing_a_push_that_overflows_is_unsound_and_tensorflow_shows_it():
    """The triaged finding (tests/cases/tensorflow/grappler_loop_push_overflow_removed.json):
    the original fails the step (InvalidArgument: overflow), Grappler's output
    returns the element."""
    from tfsem.graphdef import grappler as gr
    from tfsem.graphdef.proto import decode
    g = _overflowing_push()
    out = gr.run_grappler(g.as_graph_def().SerializeToString(), ["out"], "loop").graph_def
    assert {n.name: n.op for n in out.node}["push"] == "Identity"
    before = import_graph(_decode(g), ["out"], []).program
    after = import_graph(decode("GraphDef", out.SerializeToString()), ["out"], []).program
    v = check_rewrite(before, after, timeout=20)
    assert v.verdict == "unsound", v
    with _session(g) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="overflowed"):
            sess.run("out:0", {"a:0": 5})
    g2 = tf.Graph()
    with g2.as_default():
        tf.graph_util.import_graph_def(out, name="")
    with _session(g2) as sess:
        assert sess.run("out:0", {"a:0": 5}) == 5
    # and a Session with Grappler on makes the same rewrite: the original
    # graph then runs without the overflow
    with _session(g, grappler=True) as sess:
        assert sess.run("out:0", {"a:0": 5}) == 5


def test_the_campaign_target_removes_a_push_in_a_branch_and_it_is_not_unsound():
    """A push through a Switch of the handle, as stack_cases makes them:
    Grappler waits for the Switch port through a DT_RESOURCE Identity of the
    handle, which imports; with no max_size the push never fails, and the
    rewrite is never unsound."""
    from tfsem.campaigns.grappler_control_flow import optimize_with_graphs
    from tfsem.oracle.jsonio import program_from_json
    p = program_from_json({"variables": ["x"], "feeds": {"p": {"dtype": "bool", "shape": []}},
                           "nodes": [
        {"name": "ms", "op": "Const", "value": {"dtype": "int32", "value": -1}},
        {"name": "s", "op": "StackV2", "inputs": ["ms"], "elem_type": "int64", "stack_name": "s"},
        {"name": "k", "op": "Const", "value": 0},
        {"name": "sk", "op": "Switch", "inputs": ["k", "$p"]},
        {"name": "t", "op": "Identity", "inputs": ["sk:1"]},
        {"name": "ss", "op": "Switch", "inputs": ["s", "$p"]},
        {"name": "tk", "op": "Const", "value": 3, "inputs": ["^t"]},
        {"name": "push", "op": "StackPushV2", "inputs": ["ss:1", "tk"], "elem_type": "int64"},
        {"name": "vx", "op": "Var", "var": "x"},
        {"name": "sx", "op": "Switch", "inputs": ["vx", "$p"]},
        {"name": "w", "op": "Write", "inputs": ["sx:1", "tk", "^push"]},
        {"name": "m", "op": "Merge", "inputs": ["sk", "t"]}], "outputs": {"m": "m"}})
    after, given, out = optimize_with_graphs(p, "loop")
    assert given is not None
    ops = {n.name: n.op for n in out.node}
    assert ops["push"] == "Identity"
    assert any(n.op == "Identity" and n.attr["T"].type == tf.resource.as_datatype_enum
               for n in out.node)   # Grappler's wait for the Switch port
    assert "StackPushV2" not in {n.op for n in after.nodes}
    v = check_rewrite(p, after, timeout=20)
    assert v.verdict in ("sound", "no-counterexample"), v


def test_a_failure_only_a_target_waits_for_fails_tensorflows_step():
    """The review attacks of tests/test_review_attacks_stacks.py, exported
    and run (fetch `o`, target `done`, Grappler off): each original runs and
    returns a (the failing-push one fails), each rewrite fails the step
    where the original ran (and runs where it failed) -- though nothing
    fetched waits for the failed op.  tfsem calls each unsound."""
    import importlib.util
    from tfsem.graphdef.exporter import export_graph
    from tfsem.graphdef.proto import encode
    spec = importlib.util.spec_from_file_location(
        "review_attacks", os.path.join(HERE, "test_review_attacks_stacks.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def run_targets(p):
        gd = tf1.GraphDef.FromString(encode("GraphDef", export_graph(p)))
        g = tf.Graph()
        with g.as_default():
            tf.graph_util.import_graph_def(gd, name="")
        feeds = {"a:0": 5, **({"b:0": 6} if any(n.name == "b" and n.op == "Placeholder"
                                                  for n in gd.node) else {})}
        with _session(g) as sess:
            try:
                return sess.run(["o:0", "done"], feeds)[0]
            except tf.errors.OpError as exc:
                return exc

    for name, (original, rewritten) in mod.ATTACKS.items():
        before, after = run_targets(original), run_targets(rewritten)
        failing = name == "failing-push-removed"
        failed = before if failing else after
        if name == "pop-elem-type":   # the kernel pops, the executor refuses the dtype
            assert isinstance(failed, tf.errors.InternalError), (name, before, after)
            assert "does not match declared output type" in str(failed), failed
        else:
            assert isinstance(failed, tf.errors.InvalidArgumentError), (name, before, after)
            assert "Stack[" in str(failed), failed   # the stack op's own error
        assert (after if failing else before) == 5, (name, before, after)


def test_a_stack_made_in_a_loop_is_one_per_iteration_on_tensorflow():
    """tests/test_review_attacks_stacks.py's loop: a StackV2 of max_size 1 in
    the body with one push per iteration runs (a new stack each iteration);
    the StackV2 hoisted before the loop overflows at the second push."""
    import importlib.util
    from tfsem.graphdef.exporter import export_graph
    from tfsem.graphdef.proto import encode
    spec = importlib.util.spec_from_file_location(
        "review_attacks", os.path.join(HERE, "test_review_attacks_stacks.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    got = []
    for inside in (True, False):
        gd = tf1.GraphDef.FromString(encode("GraphDef", export_graph(mod.loop_program(inside))))
        g = tf.Graph()
        with g.as_default():
            tf.graph_util.import_graph_def(gd, name="")
        with _session(g) as sess:
            try:
                got.append(sess.run("n:0"))
            except tf.errors.OpError as exc:
                got.append(exc)
    assert got[0] == 2
    assert isinstance(got[1], tf.errors.InvalidArgumentError) and "overflowed" in str(got[1])
