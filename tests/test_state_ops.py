"""The state and random families (oracle/opdefs/state.py, oracle/opdefs/random.py) against
TensorFlow's kernels, bit for bit, in both semantics modes: every optimizer
update, the scatters and gathers on a variable's slices, VarIsInitializedOp,
and the stateful random ops' state in σ; the refusals by name (ref
variables, tf.random.Generator, an update that races).

TensorFlow runs each graph in a Session with Grappler off (its rewrites are
what tfsem checks, not the kernels).  Without TensorFlow the comparisons skip;
the structural tests run anyway."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.oracle import state_ops as so
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.values import Error, Tensor

F32 = np.float32
MODES = ("atomic", "decomposed")


@pytest.fixture(scope="module")
def tf():
    tf = pytest.importorskip("tensorflow")
    return tf


def _config(tf):
    from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
    return config_pb2.ConfigProto(graph_options=config_pb2.GraphOptions(
        rewrite_options=rewriter_config_pb2.RewriterConfig(disable_meta_optimizer=True),
        optimizer_options=config_pb2.OptimizerOptions(opt_level=config_pb2.OptimizerOptions.L0)))


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtype, shape and bits (all NaNs equal, SPEC section 2)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        na, nb = np.isnan(a), np.isnan(b)
        if not np.array_equal(na, nb):
            return False
        a, b = np.where(na, 0, a), np.where(nb, 0, b)
    return a.tobytes() == b.tobytes()


def run_both(tf, variables: dict, build, fetches=()):
    """Run `build(handles)` once on TensorFlow from `variables` (name ->
    initial numpy value, or None: uninitialized) and import the same graph
    into tfsem: returns (TensorFlow's final state, its fetched values or None
    if the run failed, tfsem's single outcome per mode)."""
    from tfsem.graphdef.proto import decode
    tf1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        handles, inits = {}, []
        for name, val in variables.items():
            dt = tf.as_dtype(val.dtype if val is not None else np.float32)
            shape = val.shape if val is not None else (3,)
            h = tf.raw_ops.VarHandleOp(dtype=dt, shape=shape, shared_name=name, name=name)
            handles[name] = h
            if val is not None:
                inits.append(tf.raw_ops.AssignVariableOp(resource=h, value=tf.constant(val)))
        target, outs = build(handles)
        outs = [tf.identity(o, name=f"out{k}") for k, o in enumerate(outs)]
        reads = {n: tf.raw_ops.ReadVariableOp(resource=h, dtype=h.op.get_attr("dtype"))
                 for n, h in handles.items() if variables[n] is not None}
    with tf1.Session(graph=g, config=_config(tf)) as s:
        s.run(inits)
        try:
            got = s.run([target] + outs if target is not None else outs)
            fetched = got[1:] if target is not None else got
        except tf.errors.OpError:
            fetched = None
        after = s.run(reads)
    graph = decode("GraphDef", g.as_graph_def().SerializeToString())
    p = import_graph(graph, [f"out{k}" for k in range(len(outs))],
                     [target.name] if target is not None else []).program
    init = {n: Tensor(v) for n, v in variables.items() if v is not None}
    mine = {}
    for mode in MODES:
        r = list(outcome_set(p, {}, init, mode, "outputs+state").as_dict(10))
        assert len(r) == 1, (mode, r)
        mine[mode] = r[0]
    return after, fetched, mine, p


def assert_state(after, mine):
    for mode, o in mine.items():
        state = dict(o.state)
        for name, want in after.items():
            have = state[name]
            assert isinstance(have, Tensor) and _same(have.array, want), \
                (mode, name, want, have)


# -- optimizers -------------------------------------------------------------

#: Values with the float edge cases (±0, a subnormal, huge, NaN, ±inf) in a
#: few places; the sizes (9 elements, 4x3 for sparse) mix Eigen's packets and
#: its tail.
def _vec(seed: int, n: int = 9, positive: bool = False, edges: bool = False, dtype=F32):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(n).astype(dtype)
    if positive:
        v = np.abs(v) + dtype(0.05)
    if edges:
        tiny = np.finfo(dtype).tiny / 4   # a subnormal
        v[:6] = np.array([0.0, -0.0, tiny, np.finfo(dtype).max / 3, np.nan, -np.inf],
                         dtype)[:min(6, n)]
    return v


HYPER = {"lr": 0.01, "alpha": 0.02, "momentum": 0.9, "beta1": 0.9, "beta2": 0.999,
         "beta1_power": 0.729, "beta2_power": 0.997, "epsilon": 1e-7, "rho": 0.95, "l1": 0.001,
         "l2": 0.002, "l2_shrinkage": 0.01, "lr_power": -0.5, "logbase": 0.7,
         "sign_decay": 0.99, "beta": 0.9}


def _optimizer_case(tf, spec: so.Optimizer, edges: bool, nesterov: bool = False, dtype=F32):
    shape = (4, 3) if spec.sparse else (9,)
    n = int(np.prod(shape))
    variables = {}
    for k, v in enumerate(spec.variables):
        variables[f"{spec.op}_{v}"] = _vec(10 + k, n, positive=k > 0, dtype=dtype).reshape(shape)
    grad = _vec(3, 2 * shape[1] if spec.sparse else n, edges=edges, dtype=dtype)
    if spec.sparse:
        grad = grad.reshape(2, shape[1])

    def build(h):
        kw = {v: h[f"{spec.op}_{v}"] for v in spec.variables}
        for name in spec.inputs:
            if name in ("grad", "delta"):
                kw[name] = tf.constant(grad)
            elif name == "indices":
                kw[name] = tf.constant(np.int32([2, 0]))
            elif name == "global_step":
                kw[name] = tf.constant(np.int64(3))
            else:
                kw[name] = tf.constant(dtype(HYPER[name]))
        if "use_nesterov" in spec.attrs:
            kw["use_nesterov"] = nesterov
        return getattr(tf.raw_ops, spec.op)(**kw), []
    after, _, mine, p = run_both(tf, variables, build)
    assert_state(after, mine)
    return p


DENSE = [s for s in so.OPTIMIZERS.values() if not s.sparse]
SPARSE = [s for s in so.OPTIMIZERS.values() if s.sparse]


def test_every_optimizer_of_keras_and_tf_compat_v1_train_is_modelled():
    """The ops tf.compat.v1.train's optimizers emit (Keras 3's emit plain
    arithmetic and AssignVariableOp, imported already)."""
    from tfsem.graphdef import ops as opt
    for name in ["ResourceApplyGradientDescent", "ResourceApplyMomentum", "ResourceApplyAdam",
                 "ResourceApplyAdagrad", "ResourceApplyAdagradV2", "ResourceApplyAdadelta",
                 "ResourceApplyRMSProp", "ResourceApplyCenteredRMSProp", "ResourceApplyFtrl",
                 "ResourceApplyFtrlV2", "ResourceApplyProximalAdagrad",
                 "ResourceApplyProximalGradientDescent", "ResourceApplyAdagradDA",
                 "ResourceApplyAdaMax", "ResourceApplyAdamWithAmsgrad", "ResourceApplyAddSign",
                 "ResourceApplyPowerSign", "ResourceApplyKerasMomentum",
                 "ResourceSparseApplyAdagrad", "ResourceSparseApplyMomentum",
                 "ResourceSparseApplyFtrl", "ResourceSparseApplyRMSProp",
                 "ResourceSparseApplyProximalGradientDescent", "ResourceScatterAdd",
                 "ResourceGather"]:
        m = opt.lookup(name)
        assert m is not None and m.stateful, name


def test_every_optimizer_op_tensorflow_registers_is_in_the_table_and_tested(tf):
    from tfsem.graphdef import ops as opt
    names = {n for n in dir(tf.raw_ops)
             if n.startswith(("ResourceApply", "ResourceSparseApply"))}
    assert len(names) >= 30
    assert not [n for n in names if opt.lookup(n) is None]
    # the tests below run every one of them against its kernel
    assert names <= {s.op for s in DENSE + SPARSE} | {"ResourceApplyGradientDescent"}


@pytest.mark.parametrize("edges", [False, True], ids=["plain", "edge-values"])
def test_dense_optimizer_updates_equal_tensorflows_kernels(tf, edges):
    """float32 for all; float64 too where the model is tfsem's own (the
    TensorFlow-evaluated ones are refused on other dtypes than float32)."""
    bad = []
    for spec in DENSE:
        for dtype in ([F32, np.float64] if spec.exact else [F32]):
            for nesterov in ([False, True] if "use_nesterov" in spec.attrs else [False]):
                try:
                    _optimizer_case(tf, spec, edges, nesterov, dtype)
                except AssertionError as exc:
                    bad.append((spec.op, dtype.__name__, nesterov, str(exc)[:300]))
    assert not bad, bad


def test_sparse_optimizer_updates_equal_tensorflows_kernels(tf):
    for spec in SPARSE:
        _optimizer_case(tf, spec, edges=True)


def test_a_sparse_update_with_an_index_out_of_range_leaves_what_the_kernel_leaves(tf):
    spec = so.OPTIMIZERS["ResourceSparseApplyMomentum"]
    var0, acc0 = _vec(1, 12).reshape(4, 3), _vec(2, 12, positive=True).reshape(4, 3)

    def build(h):
        return tf.raw_ops.ResourceSparseApplyMomentum(
            var=h["var"], accum=h["accum"], lr=tf.constant(F32(0.1)),
            grad=tf.constant(_vec(3, 9).reshape(3, 3)), indices=tf.constant(np.int32([1, 9, 2])),
            momentum=tf.constant(F32(0.9))), []
    after, fetched, mine, _ = run_both(tf, {"var": var0, "accum": acc0}, build)
    assert fetched is None   # TensorFlow failed the run
    assert_state(after, mine)
    assert spec.sparse


def test_a_parallel_scatter_with_duplicates_cannot_run():
    """TensorFlow's CPU scatter of 1,024 indices or more runs in parallel:
    with duplicates its result varies, so it does not run concretely;
    without them every row is updated once and it does."""
    from tfsem.oracle import functions as fns
    pack, add = fns.get("PackScatter"), fns.get("ScatterAdd")
    w = Tensor(np.zeros((2048, 1), F32))
    ones = Tensor(np.ones((so.PARALLEL_SCATTER, 1), F32))
    (distinct,) = pack.apply((Tensor(np.arange(so.PARALLEL_SCATTER, dtype=np.int64)), ones))
    (out,) = add.apply((w, distinct))
    assert float(out.array.sum()) == so.PARALLEL_SCATTER
    (dups,) = pack.apply((Tensor(np.zeros(so.PARALLEL_SCATTER, np.int64)), ones))
    with pytest.raises(fns.CannotRun, match="parallel"):
        add.apply((w, dups))


def test_optimizer_model_is_read_update_write_refused_when_raced():
    """A ResourceApplyRMSProp is a Read of each variable, ApplyRMSProp and a
    Write of each: exact only while nothing else touches its variables, so
    a graph where another node may is refused, naming that node."""
    from test_graphdef_ops import const, node, var
    nodes = [var("w", (2,)), var("ms", (2,)), var("mom", (2,)),
             const("lr", 0.1), const("rho", 0.9), const("m", 0.5), const("eps", 1e-7),
             const("g", [1.0, 2.0]),
             node("up", "ResourceApplyRMSProp", ["w", "ms", "mom", "lr", "rho", "m", "eps", "g"])]
    p = import_graph({"node": nodes}, [], ["up"]).program
    ops = sorted(n.op for n in p.nodes if n.name.startswith("up"))
    assert ops.count("Read") == 3 and ops.count("Assign") == 3 and "ApplyRMSProp" in ops
    racing = nodes + [{"name": "poke", "op": "AssignAddVariableOp", "input": ["ms", "g"],
                       "attr": {"dtype": {"type": "DT_FLOAT"}}}]
    with pytest.raises(GraphImportError) as info:
        import_graph({"node": racing}, [], ["up", "poke"])
    assert info.value.violations[0].rule == "racing-update"
    assert "poke" in info.value.violations[0].message


def test_a_session_whose_runs_race_on_an_update_is_refused_sequential_is_not():
    """Two concurrent runs of one training step: TensorFlow's kernel (without
    use_locking) races element by element, which tfsem's several Reads and
    Writes do not describe: refused by name; run one after the other, fine."""
    from test_graphdef_ops import const, node, var
    from tfsem.oracle.session import Run, SessionError, expand
    nodes = [var("w", (2,)), var("ms", (2,)), var("mom", (2,)),
             const("lr", 0.1), const("rho", 0.9), const("m", 0.5), const("eps", 1e-7),
             const("g", [1.0, 2.0]),
             node("up", "ResourceApplyRMSProp", ["w", "ms", "mom", "lr", "rho", "m", "eps", "g"])]
    p = import_graph({"node": nodes}, [], ["up"]).program
    runs = [Run("a", (), ("up",)), Run("b", (), ("up",))]
    with pytest.raises(SessionError) as info:
        expand(p, runs, "concurrent")
    v = info.value.violations[0]
    assert v.rule == "racing-update" and "run 'a'" in v.where
    both = expand(p, runs, "sequential")
    assert sum(n.op == "ApplyRMSProp" for n in both.nodes) == 2
    expand(p, runs[:1], "concurrent")   # one run: nothing to race with


def test_a_read_beside_the_updates_reads_is_allowed_one_beside_its_writes_is_not():
    """A Read of one of the update's variables commutes with the update's
    own Reads (the forward pass's read of a weight, which the gradient
    waits for); one that may run between the update's Writes could see
    some variables new and others old, so it is refused."""
    from test_graphdef_ops import const, node, var
    read = {"name": "r", "op": "ReadVariableOp", "input": ["w"],
            "attr": {"dtype": {"type": "DT_FLOAT"}}}
    nodes = [var("w", (2,)), var("acc", (2,)), const("lr", 0.1), const("m", 0.9), read,
             node("g", "Mul", ["r", "r"]),
             node("up", "ResourceApplyMomentum", ["w", "acc", "lr", "g", "m"],
                  use_nesterov={"b": True})]
    p = import_graph({"node": nodes}, ["r"], ["up"]).program
    w0, a0 = F32([1.5, -2.0]), F32([0.25, 0.5])
    for mode in MODES:
        outs = list(outcome_set(p, {}, {"w": Tensor(w0), "acc": Tensor(a0)}, mode,
                                "outputs+state").as_dict(5))
        assert len(outs) == 1 and _same(dict(outs[0].outputs)["r"].array, w0)
    peek = [var("w", (2,)), var("acc", (2,)), const("lr", 0.1), const("m", 0.9),
            const("g", [1.0, 2.0]), {**read, "input": ["acc"]},
            node("up", "ResourceApplyMomentum", ["w", "acc", "lr", "g", "m"],
                 use_nesterov={"b": True})]
    with pytest.raises(GraphImportError) as info:
        import_graph({"node": peek}, ["r"], ["up"])
    assert info.value.violations[0].rule == "racing-update"


def test_tf_compat_v1_training_steps_import_and_self_check_sound(tf):
    """Each tf.compat.v1.train optimizer's training step of a small model:
    the forward pass reads the weights the update writes."""
    from tfsem.checking import check_rewrite
    from tfsem.graphdef.proto import decode
    from tfsem.oracle.jsonio import program_to_json
    tf1, T = tf.compat.v1, tf.compat.v1.train
    makers = {
        "ResourceApplyGradientDescent": lambda: T.GradientDescentOptimizer(0.1),
        "ResourceApplyMomentum": lambda: T.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
        "ResourceApplyAdam": lambda: T.AdamOptimizer(0.01),
        "ResourceApplyAdagrad": lambda: T.AdagradOptimizer(0.1),
        "ResourceApplyAdagradDA": lambda: T.AdagradDAOptimizer(
            0.1, T.get_or_create_global_step()),
        "ResourceApplyAdadelta": lambda: T.AdadeltaOptimizer(0.1),
        "ResourceApplyRMSProp": lambda: T.RMSPropOptimizer(0.1),
        "ResourceApplyCenteredRMSProp": lambda: T.RMSPropOptimizer(0.1, momentum=0.5,
                                                                   centered=True),
        "ResourceApplyFtrl": lambda: T.FtrlOptimizer(0.1),
        "ResourceApplyFtrlV2": lambda: T.FtrlOptimizer(
            0.1, l2_shrinkage_regularization_strength=0.1),
        "ResourceApplyProximalAdagrad": lambda: T.ProximalAdagradOptimizer(0.1),
        "ResourceApplyProximalGradientDescent": lambda: T.ProximalGradientDescentOptimizer(
            0.1, l1_regularization_strength=0.01)}
    for op, make in makers.items():
        g = tf.Graph()
        with g.as_default():
            x = tf1.placeholder(tf.float32, [4, 3], name="x")
            w = tf1.get_variable("w", [3, 2], use_resource=True)
            y = tf.matmul(x, w)
            loss = tf.identity(tf.reduce_sum(y * y), name="loss")
            make().minimize(loss, name="train")
        gd = g.as_graph_def()
        assert op in {n.op for n in gd.node}, op
        p = import_graph(decode("GraphDef", gd.SerializeToString()), ["loss"], ["train"]).program
        assert check_rewrite(p, program_to_json(p), "atomic", "outputs+state", 30.0).verdict \
            == "sound", op


def test_an_update_on_an_uninitialized_variable_changes_nothing():
    from test_graphdef_ops import const, node, var
    nodes = [var("w", (2,)), var("acc", (2,)), const("lr", 0.1), const("g", [1.0, 2.0]),
             const("m", 0.9),
             node("up", "ResourceApplyKerasMomentum", ["w", "acc", "lr", "g", "m"])]
    p = import_graph({"node": nodes}, [], ["up"]).program
    for mode in MODES:
        (o,) = outcome_set(p, {}, {"w": Tensor(F32([1, 2]))}, mode, "outputs+state").as_dict(5)
        assert _same(dict(o.state)["w"].array, F32([1, 2]))


# -- slices: gather and scatter ---------------------------------------------

def _scatter_values(dtype):
    if dtype == np.float32:
        var0 = np.array([[1.5, -0.0, 3e38], [np.nan, 2.0, 1e-39], [4.0, -5.0, 0.0],
                         [7.0, np.inf, -1.0]], F32)
        upd = np.array([[1e38, 0.0, 3e38], [-1e-39, np.nan, 2.0], [0.5, -0.0, -np.inf]], F32)
    else:
        info = np.iinfo(dtype)
        var0 = np.array([[info.max, -3, 7], [info.min, 2, 9], [4, -5, 0], [1, 6, -1]], dtype)
        upd = np.array([[2, info.min, 3], [-1, 5, 2], [3, -2, info.max]], dtype)
    return var0, upd


@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=["float32", "int32"])
def test_scatters_equal_tensorflows_kernels(tf, dtype):
    """Duplicates apply in order; a scalar update broadcasts; an index out of
    range stops the kernel with the rows before it applied (TensorFlow's
    CPU kernel, measured); integer ScatterDiv by zero changes nothing."""
    var0, upd = _scatter_values(dtype)
    cases = [([1, 3, 1], upd), ([2, 0], upd[0, 1]), ([0, 7, 2], upd), ([3, -1], upd[:2])]
    bad = []
    for kind in so.SCATTER_KINDS:
        for indices, updates in cases:
            if kind == "Div":   # a zero (or a float subnormal) fails the whole op: below
                updates = np.where(np.abs(updates) < 1e-30, 3, updates).astype(dtype)
                updates = np.where(updates == -1, 2, updates).astype(dtype)

            def build(h, kind=kind, indices=indices, updates=updates):
                return getattr(tf.raw_ops, f"ResourceScatter{kind}")(
                    resource=h["v"], indices=tf.constant(np.int32(indices)),
                    updates=tf.constant(updates)), []
            after, _, mine, _ = run_both(tf, {"v": var0}, build)
            try:
                assert_state(after, mine)
            except AssertionError as exc:
                bad.append((kind, indices, str(exc)[:200]))
    zero = 1e-39 if dtype == np.float32 else 0   # a float subnormal counts as zero
    def build(h):
        return tf.raw_ops.ResourceScatterDiv(
            resource=h["v"], indices=tf.constant(np.int32([0, 1])),
            updates=tf.constant(np.array([[1, 1, 1], [1, zero, 1]], dtype))), []
    after, _, mine, _ = run_both(tf, {"v": var0}, build)
    assert _same(after["v"], var0)
    assert_state(after, mine)
    assert not bad, bad


def test_scatters_on_every_dtype_equal_tensorflows_kernels(tf):
    """float16 (not flushed), bfloat16, float64, and narrow and unsigned
    integers (wrapping), with duplicate indices."""
    from tfsem.oracle.values import DTYPES
    bad = []
    for name in ("float16", "bfloat16", "float64", "int8", "uint8", "int64", "uint32"):
        dt = np.dtype(DTYPES[name])
        if dt.kind == "f" or name == "bfloat16":
            tiny = float(np.finfo(np.float32 if name == "bfloat16" else dt).tiny) / 4
            var0 = np.array([[1.5, -0.0, 300.0], [np.nan, 2.0, tiny], [4.0, -5.0, 0.0]], dt)
            upd = np.array([[100.0, 0.5, 60000.0], [-tiny, np.nan, 2.0]], dt)
        else:
            info = np.iinfo(dt)
            var0 = np.array([[info.max, 3, 7], [info.min, 2, 9], [4, 5, 0]], dt)
            upd = np.array([[2, info.max, 3], [7, 5, 2]], dt)
        for kind in ("Add", "Sub", "Mul", "Div", "Min", "Max", "Update"):
            u = upd if kind != "Div" else np.where(np.abs(upd.astype(np.float64)) < 1e-30, 3,
                                                   upd).astype(dt)

            def build(h, kind=kind, u=u):
                return getattr(tf.raw_ops, f"ResourceScatter{kind}")(
                    resource=h["v"], indices=tf.constant(np.int64([2, 2])),
                    updates=tf.constant(u)), []
            after, _, mine, _ = run_both(tf, {"v": var0}, build)
            try:
                assert_state(after, mine)
            except AssertionError as exc:
                bad.append((name, kind, str(exc)[:200]))
    assert not bad, bad


def test_integer_scatter_div_that_traps_in_tensorflow_cannot_run():
    """ResourceScatterDiv of INT32_MIN by -1 kills TensorFlow's process
    (SIGFPE, measured); int8 wraps (the C++ division is in int)."""
    from tfsem.oracle import functions as fns
    pack, div = fns.get("PackScatter"), fns.get("ScatterDiv")
    w = Tensor(np.array([[np.iinfo(np.int32).min, 7]], np.int32))
    (packed,) = pack.apply((Tensor(np.int64([0])), Tensor(np.array([[-1, -2]], np.int32))))
    with pytest.raises(fns.CannotRun, match="SIGFPE"):
        div.apply((w, packed))
    w8 = Tensor(np.array([[-128, 7]], np.int8))
    (packed,) = pack.apply((Tensor(np.int64([0])), Tensor(np.array([[-1, -2]], np.int8))))
    (out,) = div.apply((w8, packed))
    assert out.array.tolist() == [[-128, -3]]


def test_scatter_nd_equals_tensorflows_kernels(tf):
    var0, _ = _scatter_values(np.float32)
    bad = []
    for kind in so.SCATTER_ND_KINDS:
        for indices, updates in [([[0, 1], [3, 2], [0, 1]], F32([5.0, -0.0, np.nan])),
                                 ([[2], [1]], np.array([[1, 2, 3], [4, 5, 6]], F32)),
                                 ([[0, 0], [9, 9], [1, 1]], F32([1.0, 2.0, 3.0]))]:
            def build(h, kind=kind, indices=indices, updates=updates):
                return getattr(tf.raw_ops, f"ResourceScatterNd{kind}")(
                    ref=h["v"], indices=tf.constant(np.int32(indices)),
                    updates=tf.constant(updates)), []
            after, _, mine, _ = run_both(tf, {"v": var0}, build)
            try:
                assert_state(after, mine)
            except AssertionError as exc:
                bad.append((kind, indices, str(exc)[:200]))
    assert not bad, bad


def test_strided_slice_assignment_equals_tensorflows_kernel(tf):
    """`v[0::2, 1::2].assign(...)`: ResourceStridedSliceAssign, the value
    broadcast to the slice; masks; a value that does not fit changes nothing."""
    var0 = np.arange(12, dtype=F32).reshape(3, 4)
    bad = []
    for begin, end, strides, value, masks in [
            ([0, 1], [3, 4], [2, 2], F32([[-1, np.nan], [-0.0, 1e-39]]), {}),
            ([0, 1], [3, 4], [2, 2], F32(7), {}),
            ([0, 1], [3, 4], [2, 2], F32([5, 6]), {}),
            ([1], [2], [1], F32([9, 9, 9, 9]), {"shrink_axis_mask": 1}),
            ([0, -1], [0, 0], [1, -1], F32([1, 2, 3]), {"begin_mask": 1, "end_mask": 3}),
            ([0, 1], [3, 4], [2, 2], F32([1, 2, 3]), {})]:
        def build(h, begin=begin, end=end, strides=strides, value=value, masks=masks):
            return tf.raw_ops.ResourceStridedSliceAssign(
                ref=h["v"], begin=tf.constant(np.int32(begin)), end=tf.constant(np.int32(end)),
                strides=tf.constant(np.int32(strides)), value=tf.constant(value), **masks), []
        after, _, mine, _ = run_both(tf, {"v": var0}, build)
        try:
            assert_state(after, mine)
        except AssertionError as exc:
            bad.append((begin, end, strides, masks, str(exc)[:200]))
    assert not bad, bad


def test_resource_gathers_equal_tensorflows_kernels(tf):
    var0 = np.arange(24, dtype=F32).reshape(4, 3, 2)
    for build in [
        lambda h: (None, [tf.raw_ops.ResourceGather(resource=h["v"], dtype=tf.float32,
                                                    indices=tf.constant(np.int64([[2, 0], [3, 3]])))]),
        lambda h: (None, [tf.raw_ops.ResourceGatherNd(resource=h["v"], dtype=tf.float32,
                                                      indices=tf.constant(np.int32([[1, 2], [0, 0]])))]),
        lambda h: (None, [tf.raw_ops.ResourceGatherNd(resource=h["v"], dtype=tf.float32,
                                                      indices=tf.constant(np.zeros((2, 0), np.int32)))]),
        lambda h: (None, [tf.raw_ops.ResourceGatherNd(resource=h["v"], dtype=tf.float32,
                                                      indices=tf.constant(np.int32([[3, 3]])))]),
        lambda h: (None, [tf.raw_ops.ResourceGather(resource=h["v"], dtype=tf.float32,
                                                    indices=tf.constant(np.int32([0, 4])))]),
        lambda h: (None, [tf.raw_ops.ResourceGather(resource=h["v"], dtype=tf.float32, batch_dims=1,
                                                    indices=tf.constant(np.int32([[2, 0], [1, 1],
                                                                                  [0, 2], [2, 2]])))]),
    ]:
        after, fetched, mine, _ = run_both(tf, {"v": var0}, build)
        for mode, o in mine.items():
            out = dict(o.outputs)["out0"]
            if fetched is None:   # TensorFlow failed: an error value in tfsem
                assert isinstance(out, Error), (mode, out)
            else:
                assert _same(out.array, fetched[0]), (mode, out, fetched)
        assert_state(after, mine)


def test_a_read_that_no_longer_waits_for_a_scatter_is_unsound_in_both_modes():
    """The end-to-end use: a rewrite that drops the control edge from a
    ResourceScatterAdd to a later read of the variable is found unsound
    (tfsem check; docs/stateful-ops.md shows it confirmed on TensorFlow)."""
    from test_graphdef_ops import placeholder, var
    from tfsem.checking import check_rewrite
    from tfsem.oracle.jsonio import program_to_json

    def graph(dep: bool):
        return {"node": [
            var("emb", (3, 2)), placeholder("ids", (2,), "DT_INT32"),
            placeholder("u", (2, 2)),
            {"name": "scatter", "op": "ResourceScatterAdd", "input": ["emb", "ids", "u"],
             "attr": {"dtype": {"type": "DT_FLOAT"}, "Tindices": {"type": "DT_INT32"}}},
            {"name": "after", "op": "ReadVariableOp",
             "input": ["emb"] + (["^scatter"] if dep else []),
             "attr": {"dtype": {"type": "DT_FLOAT"}}}]}
    p = import_graph(graph(True), ["after"], ["scatter"]).program
    q = import_graph(graph(False), ["after"], ["scatter"]).program
    for mode in MODES:
        assert check_rewrite(p, program_to_json(p), mode, "outputs+state", 30.0).verdict == "sound"
        v = check_rewrite(p, program_to_json(q), mode, "outputs+state", 30.0)
        assert v.verdict == "unsound", (mode, v)


def test_var_is_initialized_is_a_read_that_sees_the_error_value(tf):
    def build(h):
        return None, [tf.raw_ops.VarIsInitializedOp(resource=h["a"]),
                      tf.raw_ops.VarIsInitializedOp(resource=h["b"])]
    after, fetched, mine, _ = run_both(tf, {"a": F32([1, 2, 3]), "b": None}, build)
    assert [bool(x) for x in fetched] == [True, False]
    for o in mine.values():
        outs = dict(o.outputs)
        assert [bool(outs["out0"].array), bool(outs["out1"].array)] == [True, False]


# -- random ops ---------------------------------------------------------------

def test_stateful_random_ops_are_the_stateless_op_of_their_philox_state(tf):
    """The claim the import rests on: a stateful random op's first run, op
    seeds (seed, seed2), equals the stateless V2 op at key [seed], counter
    [0, seed2] (later runs: a larger counter, which σ ranges over)."""
    tf1, R = tf.compat.v1, tf.raw_ops
    g = tf.Graph()
    with g.as_default():
        shape = tf.constant([3, 5])
        stateful = [R.RandomUniform(shape=shape, dtype=tf.float32, seed=7, seed2=11),
                    R.RandomStandardNormal(shape=shape, dtype=tf.float32, seed=7, seed2=11),
                    R.TruncatedNormal(shape=shape, dtype=tf.float64, seed=7, seed2=11),
                    R.RandomUniformInt(shape=shape, minval=-5, maxval=100, seed=7, seed2=11)]
        key, ctr = tf.constant(np.uint64([7])), tf.constant(np.uint64([0, 11]))
        stateless = [
            R.StatelessRandomUniformV2(shape=shape, key=key, counter=ctr, alg=1, dtype=tf.float32),
            R.StatelessRandomNormalV2(shape=shape, key=key, counter=ctr, alg=1, dtype=tf.float32),
            R.StatelessTruncatedNormalV2(shape=shape, key=key, counter=ctr, alg=1,
                                         dtype=tf.float64),
            R.StatelessRandomUniformIntV2(shape=shape, key=key, counter=ctr, alg=1, minval=-5,
                                          maxval=100)]
    with tf1.Session(graph=g, config=_config(tf)) as s:
        a, b = s.run([stateful, stateless])
    for x, y in zip(a, b):
        assert _same(x, y)


def test_a_stateful_random_op_imports_with_its_state_in_sigma():
    from test_graphdef_ops import const
    seeded = {"name": "r", "op": "RandomUniform", "input": ["shape"],
              "attr": {"T": {"type": "DT_INT32"}, "dtype": {"type": "DT_FLOAT"},
                       "seed": {"i": 7}, "seed2": {"i": 11}}}
    unseeded = {**seeded, "name": "q", "attr": {**seeded["attr"], "seed": {"i": 0},
                                                 "seed2": {"i": 0}}}
    nodes = [const("shape", [3, 5], "DT_INT32"), seeded, unseeded]
    p = import_graph({"node": nodes}, ["r", "q"]).program
    assert {k: (t.dtype, t.shape) for k, t in p.feeds.items()} == {
        "r/counter_low": ("uint64", (1,)), "q/key": ("uint64", (1,)),
        "q/counter": ("uint64", (2,))}
    assert p.node["r"].op == "tf.StatelessRandomUniformV2/4/1"
    # two random ops are two draws: merging them is not a sound rewrite
    # (their states in σ differ), whatever the values


def test_stateless_random_ops_are_pure_uninterpreted_functions():
    from test_graphdef_ops import const
    nodes = [const("seed", [1, 2], "DT_INT64"),
             {"name": "kca", "op": "StatelessRandomGetKeyCounterAlg", "input": ["seed"],
              "attr": {"Tseed": {"type": "DT_INT64"}}},
             const("shape", [2], "DT_INT32"),
             {"name": "u", "op": "StatelessRandomUniformFullIntV2",
              "input": ["shape", "kca", "kca:1", "kca:2"],
              "attr": {"Tshape": {"type": "DT_INT32"}, "dtype": {"type": "DT_INT64"}}}]
    p = import_graph({"node": nodes}, ["u", "kca:2"]).program
    assert p.node["kca"].op == "tf.StatelessRandomGetKeyCounterAlg/1/3"
    assert p.node["u"].op == "tf.StatelessRandomUniformFullIntV2/4/1"
    assert not p.feeds   # a function of its seed: nothing in σ


# -- refused by name ------------------------------------------------------------

@pytest.mark.parametrize("op, rule", [("VariableV2", "ref-variable"),
                                      ("RngReadAndSkip", "random-generator"),
                                      ("StatefulUniform", "random-generator"),
                                      ("RandomShuffle", "unmodelled-op")])
def test_ref_variables_and_generators_are_refused_with_the_reason(op, rule):
    n = {"name": "x", "op": op, "input": [], "attr": {
        "dtype": {"type": "DT_FLOAT"}, "shape": {"shape": {"dim": [{"size": 2}]}}}}
    with pytest.raises(GraphImportError) as info:
        import_graph({"node": [n]}, ["x"])
    v = info.value.violations[0]
    assert v.rule == rule and f"({op})" in v.where
    if rule == "ref-variable":
        assert "snapshot" in v.message and "use_resource=True" in v.message


def test_recorded_updates_survive_the_json_program_form():
    """A session whose program arrives as tfsem.program/1 JSON (the HTTP
    service, `tfsem import` then a session file) keeps the imported
    updates (`updates`), so it is refused where the imported graph is; a
    program without the field loads as before; a hand-written one whose
    update races is refused at load, as the importer refuses it."""
    import json

    from test_graphdef_ops import const, node, var
    from tfsem.oracle.jsonio import program_from_json, program_to_json
    from tfsem.oracle.program import ProgramError
    from tfsem.oracle.session import SessionError, session_from_json
    nodes = [var("w", (2,)), var("ms", (2,)), var("mom", (2,)),
             const("lr", 0.1), const("rho", 0.9), const("m", 0.5), const("eps", 1e-7),
             const("g", [1.0, 2.0]),
             node("up", "ResourceApplyRMSProp", ["w", "ms", "mom", "lr", "rho", "m", "eps", "g"])]
    p = import_graph({"node": nodes}, [], ["up"]).program
    data = json.loads(json.dumps(program_to_json(p)))
    assert data["updates"] and set(data["updates"][0]["variables"]) == {"w", "ms", "mom"}
    session = {"format": "tfsem.session/1", "program": data,
               "runs": [{"name": "a", "targets": ["up"]}, {"name": "b", "targets": ["up"]}]}
    with pytest.raises(SessionError) as info:
        session_from_json(session)
    assert info.value.violations[0].rule == "racing-update"
    session_from_json(dict(session, order="sequential"))
    # old files (no `updates`) stay readable, and mean what they meant
    old = {k: v for k, v in data.items() if k != "updates"}
    session_from_json(dict(session, program=old))
    assert "updates" not in program_to_json(program_from_json(old))
    # round trip: the field is written back as read
    assert program_to_json(program_from_json(data))["updates"] == data["updates"]
    # a hand-written race on an update is refused at load, by name
    poke = {"name": "poke", "op": "Write", "inputs": ["poke_v", "$x"]}
    raced = dict(data, feeds={"x": {"dtype": "float32", "shape": [2]}},
                 nodes=data["nodes"] + [{"name": "poke_v", "op": "Var", "var": "w"}, poke])
    with pytest.raises(ProgramError) as info:
        program_from_json(raced)
    assert info.value.violations[0].rule == "racing-update"
    bad = dict(data, updates=[{"nodes": ["nowhere"], "variables": ["w"]}])
    with pytest.raises(ProgramError) as info:
        program_from_json(bad)
    assert info.value.violations[0].rule == "unknown-name"


def test_the_services_graph_conversion_keeps_the_updates():
    """The HTTP service turns a posted graph into program JSON
    (graphdef.program_json_of): the updates are in it, so a session built on
    that JSON is refused as the CLI refuses the graph's session."""
    from test_graphdef_ops import const, node, var
    from tfsem.graphdef import program_json_of
    from tfsem.graphdef.proto import format_text
    from tfsem.oracle.session import SessionError, session_from_json
    nodes = [var("w", (2,)), var("ms", (2,)), var("mom", (2,)),
             const("lr", 0.1), const("rho", 0.9), const("m", 0.5), const("eps", 1e-7),
             const("g", [1.0, 2.0]),
             node("up", "ResourceApplyRMSProp", ["w", "ms", "mom", "lr", "rho", "m", "eps", "g"])]
    data = program_json_of({"graph": format_text("GraphDef", {"node": nodes}), "target": ["up"]})
    assert [sorted(u["variables"]) for u in data["updates"]] == [["mom", "ms", "w"]]
    runs = [{"name": "a", "targets": ["up"]}, {"name": "b", "targets": ["up"]}]
    with pytest.raises(SessionError) as info:
        session_from_json({"format": "tfsem.session/1", "program": data, "runs": runs})
    assert info.value.violations[0].rule == "racing-update"


@pytest.mark.parametrize("validate", [True, False])
def test_assign_variable_op_validate_shape_is_tensorflows(tf, validate):
    """AssignVariableOp of a value whose run-time shape ([3], a feed of
    shape [None] given `--shape`) is not the variable's ([2]): with
    validate_shape=true TensorFlow fails the op and an initialized variable
    keeps its value, an uninitialized one takes the value; with
    validate_shape=false the variable takes it.  tfsem imports the first as
    Assign-SndSameShape and gives the same final states, in both modes; a
    value of the variable's shape is written either way."""
    from tfsem.graphdef.proto import decode
    tf1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        x = tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=[2], shared_name="x", name="x")
        u = tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=[2], shared_name="u", name="u")
        init = tf.raw_ops.AssignVariableOp(resource=x, value=tf.constant([1.0, 2.0]), name="init")
        v = tf1.placeholder(tf.float32, [None], name="v")
        ax = tf.raw_ops.AssignVariableOp(resource=x, value=v, validate_shape=validate, name="ax")
        au = tf.raw_ops.AssignVariableOp(resource=u, value=v, validate_shape=validate, name="au")
        rx = tf.raw_ops.ReadVariableOp(resource=x, dtype=tf.float32)
        ru = tf.raw_ops.ReadVariableOp(resource=u, dtype=tf.float32)
    graph = decode("GraphDef", g.as_graph_def().SerializeToString())
    for value in ([5.0, 6.0, 7.0], [5.0, 6.0]):
        want = {}
        with tf1.Session(graph=g, config=_config(tf)) as s:
            s.run(init)
            for op in (ax, au):
                try:
                    s.run(op, {v: value})
                except tf.errors.InvalidArgumentError:
                    assert validate and len(value) == 3
            want = {"x": s.run(rx), "u": s.run(ru)}
        p = import_graph(graph, [], ["ax", "au"], shapes={"v": [len(value)]}).program
        fns = {n.attrs.get("fn") for n in p.nodes if n.op == "Assign"}
        assert fns == {"SndSameShape" if validate else "Snd"}
        feeds = {"v": Tensor(np.array(value, dtype=F32))}
        for mode in MODES:
            (o,) = outcome_set(p, feeds, {"x": Tensor(F32([1, 2]))}, mode,
                               "outputs+state").as_dict(5)
            state = dict(o.state)
            for name in ("x", "u"):
                assert _same(state[name].array, want[name]), (mode, value, name, state[name])


def test_validate_shape_survives_export_and_a_rewrite_dropping_it_is_unsound():
    """Assign-SndSameShape exports as AssignVariableOp(validate_shape=true)
    and imports back as itself (a value of another static shape is refused
    by export, as TensorFlow refuses to build it); a rewrite that turns it into a plain Write is
    unsound (for an initialized variable and a value of another shape) --
    and, where the shapes are equal, sound."""
    from tfsem.checking import check_rewrite
    from tfsem.graphdef.exporter import export_graph
    from tfsem.oracle.jsonio import program_to_json

    def prog(fn, n):
        return {"format": "tfsem.program/1",
                "variables": {"x": {"dtype": "float32", "shape": [2]}},
                "feeds": {"v": {"dtype": "float32", "shape": [n]}},
                "nodes": [{"name": "h", "op": "Var", "var": "x"},
                          {"name": "w", "op": "Assign", "fn": fn, "inputs": ["h", "$v"]}],
                "outputs": {}}
    from tfsem.oracle.jsonio import program_from_json
    p = program_from_json(prog("SndSameShape", 2))
    gd = export_graph(p)
    (w,) = [n for n in gd["node"] if n["op"] == "AssignVariableOp"]
    assert w["attr"]["validate_shape"] == {"b": True}
    back = import_graph(gd, [], ["w"]).program
    assert {n.attrs.get("fn") for n in back.nodes if n.op == "Assign"} == {"SndSameShape"}
    assert check_rewrite(p, program_to_json(back), "atomic", "outputs+state",
                         30.0).verdict == "sound"
    for n, verdict in ((3, "unsound"), (2, "sound")):
        v = check_rewrite(program_from_json(prog("SndSameShape", n)), prog("Snd", n), "atomic",
                          "outputs+state", 30.0)
        assert v.verdict == verdict, (n, v)
