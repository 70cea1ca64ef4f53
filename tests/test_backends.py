"""Execution on real arrays (issue 6): backends, schedules, the thread pool,
confirmation of counterexamples, and `tfsem run`.

Every test that runs the cupy backend runs it twice where there is no GPU:
once as numpy, once as the cupy backend's own code with numpy substituted
(`numpy_as_cupy`).  Tests that need CUDA skip with the reason.
"""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from tfsem.backends import arraymodule as am
from tfsem.backends.arraymodule import BackendUnavailable, get_backend, numpy_as_cupy
from tfsem.backends.confirm import confirm_counterexample, confirm_details
from tfsem.backends.execute import ScheduleError, apply_function, replay, run_random
from tfsem.backends.threads import _ThreadedRun, run_threads
from tfsem.cli import main
from tfsem.generators import families as F
from tfsem.oracle import functions as fns
from tfsem.oracle import program as P
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded
from tfsem.oracle.jsonio import save_program
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.oracle.values import Error, Tensor

try:  # the project's generator of programs (issue "generators"), once it exists
    from tfsem.generators.strategies import inputs_for, programs
except ImportError:  # pragma: no cover - depends on the state of the repository
    programs = inputs_for = None

SEMANTICS = ("atomic", "decomposed")
NEEDS_CUDA = pytest.mark.skipif(not am.cuda_available(),
                                reason=f"needs cupy and a CUDA GPU: {am.cuda_unavailable_reason()}")


def _examples(n: int) -> int:
    """Hypothesis examples: small by default, 20x under the `nightly` profile."""
    return n * 20 if settings.get_current_profile_name() == "nightly" else n


def backends():
    """numpy, and the cupy backend's code path (numpy substituted without a GPU)."""
    return [get_backend("numpy"), get_backend("cupy") if am.cuda_available() else numpy_as_cupy()]


FAMILY_CASES = [
    ("first_example", F.first_example(False)), ("racy_pairs", F.racy_pairs(3)),
    ("blind_writers", F.blind_writers(3)), ("lost_update", F.lost_update(3)),
    ("assign_adds", F.assign_adds(3)), ("figure1_concat", F.figure1(3, "Concat")),
    ("writes_reads", F.writes_reads()), ("load_store", F.load_store()), ("chain", F.chain(4)),
]


def hoisted_load_store():
    """Seed 002's load/store example with the read of Y hoisted above the
    write of X (its control edge dropped): (r0 = 0, X = 1) becomes possible."""
    p, feeds, init = F.load_store()
    nodes = [P.read("r0", "vy") if n.name == "r0" else n for n in p.nodes]
    return p, P.program(nodes, {"r0": "r0"}, ["X", "Y"]), feeds, init


# ---------------------------------------------------------------------------
# Backends


def test_numpy_backend_uses_numpy():
    b = get_backend("numpy")
    assert b.xp is np and b.label == "numpy" and not b.substituted


@pytest.mark.skipif(am.cuda_available(), reason="cupy and CUDA are present here")
def test_selecting_cupy_without_it_is_a_clear_error():
    with pytest.raises(BackendUnavailable) as exc:
        get_backend("cupy")
    assert "cupy" in str(exc.value) and ("not installed" in str(exc.value) or "CUDA" in str(exc.value))


def test_cupy_installed_without_cuda_names_cuda(monkeypatch):
    class NoDevice(Exception):
        pass

    def count():
        raise NoDevice("cudaErrorNoDevice: no CUDA-capable device is detected")

    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=count))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    with pytest.raises(BackendUnavailable, match="CUDA is not usable.*no CUDA-capable device"):
        get_backend("cupy")
    fake.cuda.runtime.getDeviceCount = lambda: 0
    with pytest.raises(BackendUnavailable, match="no CUDA device was found"):
        get_backend("cupy")


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend"):
        get_backend("jax")


def test_substituted_cupy_is_the_cupy_code_path():
    b = numpy_as_cupy()
    assert isinstance(b, am.CupyBackend) and b.substituted and b.name == "cupy"
    host = np.arange(3)
    dev = b.to_device(host)
    host[0] = 7                                    # cupy.asarray copies
    assert b.to_host([dev])[0].tolist() == [0, 1, 2]
    with am.substitute_cupy():
        assert get_backend("cupy").substituted
    assert not am._substitute


def test_the_stand_in_is_as_strict_as_cupy():
    """What fails on a GPU fails on the stand-in: a device array never
    becomes a numpy array implicitly (cupy's TypeError), a host array is
    not an operand, a name cupy lacks is missing; numpy's functions dispatch
    to the device, and float()/bool()/iteration work as on cupy."""
    b = numpy_as_cupy()
    xp = b.xp
    dev = b.to_device(np.array([1.5, -2.0], np.float32))
    for implicit in (np.asarray, np.array, lambda a: np.asarray(a, dtype=np.bool_),
                     lambda a: np.concatenate([np.zeros(1, np.float32), a.get()]) + a,
                     lambda a: np.shares_memory(a, np.zeros(2)), memoryview):
        with pytest.raises(TypeError):
            implicit(dev)
    with pytest.raises(TypeError, match="Unsupported type"):
        xp.add(dev, np.ones(2, np.float32))
    with pytest.raises(TypeError, match="Unsupported type"):
        xp.where(dev > 0, dev, np.zeros(2, np.float32))
    with pytest.raises(AttributeError):
        xp.errstate   # noqa: B018 (numpy has it, cupy does not)
    with pytest.raises(TypeError):
        [0, 1][dev[0].astype(np.int64)]   # cupy has no __index__
    got = np.where(dev > 0, dev, np.float32(0))    # numpy's function, the device's array
    assert type(got) is am.DeviceArray and got.get().tolist() == [1.5, 0.0]
    assert type(dev.sum()) is am.DeviceArray and dev.sum().shape == ()   # 0-d, as cupy
    assert type(dev[0]) is am.DeviceArray
    assert float(dev[0]) == 1.5 and bool(dev[1]) and [float(x) for x in dev] == [1.5, -2.0]
    assert xp.asnumpy(dev * 2).tolist() == [3.0, -4.0] and (2 * dev).dtype == np.float32


@pytest.mark.parametrize("backend", backends(), ids=lambda b: b.label)
def test_to_host_is_one_transfer_and_exact(backend):
    host = [np.array(5), np.array([1.5, -0.0, np.nan], dtype=np.float32), np.zeros((2, 0), dtype=np.int64),
            np.array([[1, 2], [3, 4]]), np.array(np.float32(np.inf))]
    dev = [backend.to_device(a) for a in host]
    before = backend.transfers.to_host
    back = backend.to_host(dev)
    assert backend.transfers.to_host == before + 1
    for a, b in zip(host, back):
        assert Tensor(a) == Tensor(b) and a.dtype == b.dtype and a.shape == b.shape
    # (copies: no host value shares memory with a device array, nor with
    # the array it was uploaded from, on numpy where the packed buffer is
    # not copied again, arraymodule `_download_fresh`)
    for d, a, b in zip(dev, host, back):
        assert not np.shares_memory(b, a)
        if isinstance(d, np.ndarray):
            assert not np.shares_memory(b, d)


# ---------------------------------------------------------------------------
# Functions on device values keep the oracle's error discipline

POOL = [Tensor(3), Tensor(-2), Tensor([1, 2]), Tensor([4, 5, 6, 7]), Tensor([[1], [2]]),
        Tensor(1.5, "float32"), Tensor([np.nan, -0.0], "float32"), Tensor(np.inf, "float32"),
        Tensor(np.iinfo(np.int64).max), Error("uninitialized"), Error("shape-mismatch")]


@settings(max_examples=_examples(150), deadline=None)
@given(st.sampled_from(sorted(n for n in fns.registered() if n != "Const")),
       st.lists(st.sampled_from(POOL), min_size=2, max_size=2), st.sampled_from([0, 1]))
def test_device_apply_equals_function_apply(name, args, which):
    fn = fns.get(name)
    args = args[:fn.n_in]
    b = backends()[which]
    dev = [a if isinstance(a, Error) else b.to_device(a.array) for a in args]
    got = apply_function(fn, dev, {}, b.xp)
    want = fn.apply(args, {})
    arrays = iter(b.to_host([g for g in got if not isinstance(g, Error)]))
    assert tuple(g if isinstance(g, Error) else Tensor(next(arrays)) for g in got) == want


# ---------------------------------------------------------------------------
# Replaying schedules


@pytest.mark.parametrize("name,case", FAMILY_CASES, ids=[c[0] for c in FAMILY_CASES])
@pytest.mark.parametrize("semantics", SEMANTICS)
def test_replaying_witnesses_gives_the_oracle_outcomes(name, case, semantics):
    p, feeds, init = case
    oset = outcome_set(p, feeds, init, semantics)
    for backend in backends():
        for outcome, witness in oset.items():
            assert replay(p, feeds, init, witness, backend, semantics) == outcome


def test_replay_refuses_a_schedule_the_program_cannot_follow():
    p, feeds, init = F.first_example(True)
    with pytest.raises(ScheduleError, match="step 0 \\(r\\) is not enabled"):
        replay(p, feeds, init, ["r", "vx", "vx2", "w"])
    with pytest.raises(ScheduleError, match="ends before the run does"):
        replay(p, feeds, init, ["vx", "vx2"])
    with pytest.raises(ScheduleError, match="not a step label"):
        replay(p, feeds, init, ["vx", "vx2", "w@read"], semantics="atomic")


def test_replaying_many_schedules_shares_prefixes_and_agrees_with_one_by_one():
    from tfsem.backends.classes import schedule_classes
    from tfsem.backends.execute import device_machine, download_outcome, upload
    p, feeds, init = F.blind_writers(3)
    b = get_backend("numpy")
    m = device_machine(p, b, "decomposed")
    schedules = schedule_classes(p, "decomposed")
    calls = []
    apply = m.apply
    m.apply = lambda fn, args, attrs: calls.append(fn.name) or apply(fn, args, attrs)
    finals = m.replay_all(m.start(upload(feeds, b), upload(init, b)), schedules)
    assert [download_outcome(st, b, "outputs+state") for st in finals] == \
        [replay(p, feeds, init, w, "numpy", "decomposed") for w in schedules]
    assert len(calls) < len(schedules) * 3   # 3 Writes per run, most shared
    with pytest.raises(ScheduleError, match="not enabled"):
        m.replay_all(m.start(upload(feeds, b), upload(init, b)), [schedules[0][::-1]])


def test_values_stay_on_the_device_until_the_end():
    p, feeds, init = F.racy_pairs(3)
    b = get_backend("numpy")
    run_random(p, feeds, init, 7, seed=1, backend=b)
    assert b.transfers.to_host == 7                       # one copy back per run
    assert b.transfers.to_device == len(feeds) + len(init)  # σ uploaded once for all runs


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_random_runs_find_every_outcome_of_small_families(semantics):
    for name, (p, feeds, init) in FAMILY_CASES:
        oset = outcome_set(p, feeds, init, semantics)
        for backend in backends():
            seen = run_random(p, feeds, init, 300, seed=7, backend=backend, semantics=semantics)
            assert seen.runs == 300 and sum(seen.counts.values()) == 300
            assert all(o in oset for o in seen.counts), name
            assert len(seen.counts) == oset.count, name  # 300 runs reach all of <= 15 outcomes
            for o, _n, schedule in seen.items():
                assert replay(p, feeds, init, schedule, "numpy", semantics) == o


def test_random_runs_are_reproducible_from_the_seed():
    p, feeds, init = F.blind_writers(4)
    a = run_random(p, feeds, init, 50, seed=3)
    b = run_random(p, feeds, init, 50, seed=3, backend=numpy_as_cupy())
    assert a.counts == b.counts and a.schedules == b.schedules


# ---------------------------------------------------------------------------
# The thread pool


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_thread_pool_outcomes_are_oracle_outcomes_and_its_log_replays(semantics):
    for name, (p, feeds, init) in FAMILY_CASES:
        oset = outcome_set(p, feeds, init, semantics)
        for backend in backends():
            seen = run_threads(p, feeds, init, 8, backend, semantics, jitter=0.0005, seed=2)
            assert seen.runs == 8
            for o, _n, schedule in seen.items():
                assert o in oset, name
                # the log is a schedule of the step semantics giving the same outcome
                state = run_schedule(p, feeds, init, schedule, semantics)
                assert outcome_of(p, graph_of(p), state, "outputs+state") == o, name


def test_thread_pool_interleaves_decomposed_assigns():
    """Lost updates need a read of x between another Assign's read and write:
    with jitter the pool shows more than the one atomic outcome."""
    p, feeds, init = F.assign_adds(3)
    atomic = run_threads(p, feeds, init, 30, semantics="atomic", jitter=0.002, seed=0)
    decomposed = run_threads(p, feeds, init, 30, semantics="decomposed", jitter=0.002, seed=0)
    assert len(atomic.counts) == 1
    oset = outcome_set(p, feeds, init, "decomposed")
    assert all(o in oset for o in decomposed.counts)
    assert len(decomposed.counts) > 1


def test_a_failing_node_fails_the_run_instead_of_hanging():
    from concurrent.futures import ThreadPoolExecutor

    from tfsem.backends.execute import device_machine
    p, feeds, init = F.chain(3)
    m = device_machine(p, get_backend("numpy"))

    def boom(fn, args, attrs):
        raise RuntimeError("device lost")
    m.apply = boom
    import random
    with ThreadPoolExecutor(2) as pool:
        run = _ThreadedRun(m, pool, m.start({"a": np.array(7)}, {}), random.Random(0), 0.0)
        with pytest.raises(RuntimeError, match="device lost"):
            run.run()


# ---------------------------------------------------------------------------
# Generated programs: every outcome any executor observes is an oracle outcome


def _generated_cases():
    if programs is None:  # pragma: no cover
        return st.sampled_from([c for _, c in FAMILY_CASES])
    return programs(max_nodes=9).flatmap(
        lambda p: inputs_for(p).map(lambda s: (p, s[0], s[1])))


@settings(max_examples=_examples(60), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_generated_cases(), st.sampled_from(SEMANTICS), st.integers(0, 2**16))
def test_every_observed_outcome_is_in_the_outcome_set(case, semantics, seed):
    p, feeds, init = case
    try:
        oset = outcome_set(p, feeds, init, semantics, max_states=20_000, max_seconds=2)
    except BudgetExceeded:
        reject()
    for backend in backends():
        seen = run_random(p, feeds, init, 12, seed, backend, semantics)
        assert all(o in oset for o in seen.counts), (backend.label, seen.counts)
        for outcome, witness in oset.as_dict(8).items():
            assert replay(p, feeds, init, witness, backend, semantics) == outcome
    threaded = run_threads(p, feeds, init, 3, backends()[seed % 2], semantics, seed=seed)
    assert all(o in oset for o in threaded.counts)


# ---------------------------------------------------------------------------
# Confirmation


def test_confirms_the_hoisted_read_counterexample():
    original, rewritten, feeds, init = hoisted_load_store()
    mine = outcome_set(rewritten, feeds, init)
    theirs = outcome_set(original, feeds, init)
    new = [(o, w) for o, w in mine.items() if o not in theirs]
    assert [o.describe() for o, _ in new] == ["r0 = 0, X := 1, Y := 5"]
    outcome, schedule = new[0]
    assert confirm_counterexample(original, rewritten, feeds, init, schedule) == \
        am.available_backends()
    details = confirm_details(original, rewritten, feeds, init, schedule, outcome=outcome,
                              backends=backends())
    assert [d.confirmed for d in details] == [True, True]
    assert details[1].backend.startswith("cupy") and all(d.outcome == outcome for d in details)


def test_rejects_fake_counterexamples():
    original, rewritten, feeds, init = hoisted_load_store()
    theirs = outcome_set(original, feeds, init)
    mine = outcome_set(rewritten, feeds, init)
    shared = [(o, w) for o, w in mine.items() if o in theirs]
    assert shared
    for outcome, schedule in shared:   # the original has these outcomes too
        assert confirm_counterexample(original, rewritten, feeds, init, schedule) == []
        details = confirm_details(original, rewritten, feeds, init, schedule, backends=backends())
        assert len(details) == 2   # numpy and the cupy path (a GPU's, or numpy substituted)
        for d in details:
            assert not d.confirmed and "the original has this outcome too" in d.reason
    real_outcome, real = next((o, w) for o, w in mine.items() if o not in theirs)
    # a claimed outcome that the schedule does not give
    wrong = next(iter(theirs))
    for d in confirm_details(original, rewritten, feeds, init, real, outcome=wrong,
                             backends=backends()):
        assert not d.confirmed and "not the claimed" in d.reason
    # a schedule the rewritten program cannot follow
    assert confirm_counterexample(original, rewritten, feeds, init, list(reversed(real))) == []
    # a program never refutes itself
    for _o, w in theirs.items():
        assert confirm_counterexample(original, original, feeds, init, w) == []


def test_confirmation_gives_up_beyond_its_witness_budget():
    original, rewritten, feeds, init = hoisted_load_store()
    schedule = next(w for o, w in outcome_set(rewritten, feeds, init).items()
                    if o not in outcome_set(original, feeds, init))
    # (one Confirmation per back end that runs here: numpy, and cupy on a GPU)
    details = confirm_details(original, rewritten, feeds, init, schedule, max_witnesses=1)
    assert [d.backend for d in details] == am.available_backends()
    assert all(not d.confirmed and "witnesses" in d.reason for d in details)
    details = confirm_details(original, rewritten, feeds, init, schedule, max_states=1,
                              backends=backends())
    assert len(details) == 2
    assert all(not d.confirmed and "out of reach" in d.reason for d in details)


# ---------------------------------------------------------------------------
# tfsem run


@pytest.fixture
def load_store_file(tmp_path):
    path = tmp_path / "load_store.json"
    save_program(F.load_store()[0], path)
    return str(path)


def test_run_json_counts_runs_and_lists_oracle_outcomes(load_store_file, capsys):
    rc = main(["run", load_store_file, "--backend", "numpy", "--runs", "40", "--seed", "5",
               "--init", "X=0", "--init", "Y=0", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["runs"] == 40
    assert sum(o["runs"] for o in out["outcomes"]) == 40
    p, feeds, init = F.load_store()
    expected = {json.dumps(o.to_json(), sort_keys=True) for o in outcome_set(p, feeds, init)}
    got = {json.dumps({"outputs": o["outputs"], "state": o["state"]}, sort_keys=True)
           for o in out["outcomes"]}
    assert got == expected                # 40 runs find all 3
    for o in out["outcomes"]:
        assert set(o) >= {"outputs", "state", "runs", "schedule"}
        state = run_schedule(p, feeds, init, o["schedule"])
        assert outcome_of(p, graph_of(p), state, "outputs+state").to_json() == \
            {"outputs": o["outputs"], "state": o["state"]}


def test_run_text_and_threads(load_store_file, capsys):
    rc = main(["run", load_store_file, "--backend", "numpy", "--executor", "threads",
               "--runs", "5", "--init", "X=0", "--init", "Y=0", "--observe", "outputs"])
    text = capsys.readouterr().out
    assert rc == 0 and text.startswith("5 runs on numpy (thread pool, atomic):")
    assert "r0 = " in text and "X :=" not in text and "schedule: " in text


def test_run_cupy_path_with_numpy_substituted_matches_numpy(load_store_file, capsys):
    argv = ["run", load_store_file, "--runs", "30", "--seed", "9", "--semantics", "decomposed",
            "--init", "X=0", "--init", "Y=0", "--json", "--backend"]
    assert main(argv + ["numpy"]) == 0
    plain = json.loads(capsys.readouterr().out)
    with am.substitute_cupy():
        assert main(argv + ["cupy"]) == 0
    substituted = json.loads(capsys.readouterr().out)
    assert substituted["backend"] == "cupy (numpy substituted)"
    assert substituted["outcomes"] == plain["outcomes"]


@pytest.mark.skipif(am.cuda_available(), reason="cupy and CUDA are present here")
def test_run_cupy_without_cuda_exits_2(load_store_file, capsys):
    rc = main(["run", load_store_file, "--backend", "cupy", "--init", "X=0", "--init", "Y=0"])
    err = capsys.readouterr().err
    assert rc == 2 and "cupy" in err and "Traceback" not in err


def test_run_bad_input_exits_2(load_store_file, capsys):
    assert main(["run", load_store_file, "--backend", "numpy", "--init", "Z=0"]) == 2
    assert "no such variable" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# On a GPU


@NEEDS_CUDA
@pytest.mark.parametrize("name,case", FAMILY_CASES, ids=[c[0] for c in FAMILY_CASES])
def test_cuda_replays_equal_numpy(name, case):  # pragma: no cover - needs a GPU
    p, feeds, init = case
    for semantics in SEMANTICS:
        for outcome, witness in outcome_set(p, feeds, init, semantics).items():
            assert replay(p, feeds, init, witness, "cupy", semantics) == outcome


@NEEDS_CUDA
def test_cuda_confirms_the_hoisted_read():  # pragma: no cover - needs a GPU
    original, rewritten, feeds, init = hoisted_load_store()
    schedule = next(w for o, w in outcome_set(rewritten, feeds, init).items()
                    if o not in outcome_set(original, feeds, init))
    assert confirm_counterexample(original, rewritten, feeds, init, schedule) == ["numpy", "cupy"]
