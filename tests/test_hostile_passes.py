"""Passes that misbehave in every way we know (issue 18 item 7, deliverable
3): raise, hang, exit, kill their parent, exhaust memory, fork and leave
children behind, return something that is not a program, or a malformed
program.  Each must be a finding; the campaign goes on (a healthy pass in the
same campaign is fuzzed too); no process the passes started outlives the
campaign.

The passes are defined here and given to campaigns as `test_hostile_passes:NAME`
(this folder is on PYTHONPATH for the subprocesses)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import settings

from tfsem.oracle.program import ControlIn, Program
from tfsem.rewrites import Pass

TESTS = Path(__file__).resolve().parent
PID_DIR_ENV = "TFSEM_HOSTILE_PID_DIR"


def _pass(name: str, fn) -> Pass:
    return Pass(name=name, description=(fn.__doc__ or name).strip().splitlines()[0], claims={},
                doc=fn.__doc__ or name, function=fn, origin="tests/test_hostile_passes.py")


def _note_pid(pid: int) -> None:
    folder = os.environ.get(PID_DIR_ENV)
    if folder:
        Path(folder, f"{pid}.pid").write_text(str(pid))


def _raises(p: Program) -> Program:
    """Raises."""
    raise RuntimeError("a bug in the pass")


def _hangs(p: Program) -> Program:
    """Never returns."""
    while True:
        time.sleep(0.05)


def _exits(p: Program) -> Program:
    """Ends its own process."""
    os._exit(7)


def _system_exit(p: Program) -> Program:
    """Calls sys.exit."""
    sys.exit(3)


def _kills_parent(p: Program) -> Program:
    """Kills its parent process."""
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(5)
    return p


def _eats_memory(p: Program) -> Program:
    """Allocates without bound."""
    blocks = []
    while True:
        blocks.append(bytes(256 << 20))   # calloc'd, untouched pages: address space, not RAM


def _forks(p: Program) -> Program:
    """Starts a child process and a forked copy of itself that outlive it."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _note_pid(child.pid)
    pid = os.fork()
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    _note_pid(pid)
    return p


def _not_a_program(p: Program) -> Program:
    """Returns an integer."""
    return 42  # type: ignore[return-value]


def _self_loop(p: Program) -> Program:
    """Returns a program whose first node has a control edge to itself."""
    first = p.nodes[0]
    return p.replace(nodes=(first.replace(inputs=first.inputs + (ControlIn(first.name),)),) + p.nodes[1:])


def _identity(p: Program) -> Program:
    """Returns its input."""
    return p


raises = _pass("hostile-raises", _raises)
hangs = _pass("hostile-hangs", _hangs)
exits = _pass("hostile-exits", _exits)
system_exit = _pass("hostile-system-exit", _system_exit)
kills_parent = _pass("hostile-kills-parent", _kills_parent)
eats_memory = _pass("hostile-eats-memory", _eats_memory)
forks = _pass("hostile-forks", _forks)
not_a_program = _pass("hostile-not-a-program", _not_a_program)
self_loop = _pass("hostile-self-loop", _self_loop)
identity = _pass("hostile-identity", _identity)
identity_too = _pass("hostile-identity-too", _identity)

HOSTILE = {"raises": "crash", "hangs": "timeout", "exits": "crash", "system_exit": "crash",
           "kills_parent": "crash", "eats_memory": "crash", "not_a_program": "invalid",
           "self_loop": "invalid"}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(settings.get_current_profile_name() != "nightly",
                    reason="nightly profile only: a 10 s campaign of every misbehaving pass (test_campaigns_fuzz covers crashes and hangs by default)")
def test_every_misbehaving_pass_is_a_finding_and_nothing_outlives_the_campaign(tmp_path):
    out, pids = tmp_path / "campaign", tmp_path / "pids"
    pids.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
               **{PID_DIR_ENV: str(pids)})
    # the first task of each worker may lose its slice to the worker's start-up
    # on a busy machine (a slice's clock starts when it is assigned), so two
    # healthy passes go first and the campaign must go on past all the others
    names = ["identity", "identity_too"] + list(HOSTILE) + ["forks"]
    argv = [sys.executable, "-m", "tfsem", "fuzz", "--budget", "10s", "--out", str(out), "--workers", "2",
            "--pass-timeout", "0.5s", "--checker", "concrete", "--generator", "campaign_fakes:small_generator",
            "--semantics", "atomic", "--observe", "outputs+state", "--json"]
    for n in names:
        argv += ["--pass", f"test_hostile_passes:{n}"]
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=150)
    assert r.returncode == 1, r.stderr[-3000:]          # crashes and hangs fail the run
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    result = json.loads(r.stdout)
    assert result["status"] == "finished" and not result["errors"], result["errors"]
    kinds = {(f["pass"], f["kind"]) for f in result["new"] + result["known"]}
    for n, kind in HOSTILE.items():
        assert (f"hostile-{n.replace('_', '-')}", kind) in kinds, (n, sorted(kinds), result["passes"])
    programs = {t["pass"]: t["programs"] for t in result["passes"]}
    assert programs["hostile-forks"] > 0, programs     # the last pass, after all the hostile ones
    by_pass = {f["pass"]: f for f in result["new"] + result["known"]}
    assert "MemoryError" in json.dumps(by_pass["hostile-eats-memory"])
    # what the passes started is gone once the campaign has ended
    started = [int(p.stem) for p in pids.glob("*.pid")]
    assert started, "the forking pass never ran"
    # (the sandbox's keeper notices its worker's death by polling: 20 s, for
    # a whole-suite run on a loaded machine, where 5 s once ran out)
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in started if _alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"{len(left)} of {len(started)} processes started by a pass outlived the campaign"


def test_sandbox_kills_the_process_group_on_timeout(tmp_path, monkeypatch):
    from tfsem.campaigns.sandbox import TIMEOUT, PassSandbox

    def fork_then_hang(p):
        raise AssertionError("runs in the sandbox, not here")

    monkeypatch.setenv(PID_DIR_ENV, str(tmp_path))
    monkeypatch.syspath_prepend(str(TESTS))
    program = {"nodes": [{"name": "c", "op": "Const", "value": 1}], "outputs": {"o": "c"}}
    with PassSandbox("test_hostile_passes:forks", timeout=10) as sb:
        assert sb.rewrite(program).status == "ok"
        started = [int(p.stem) for p in tmp_path.glob("*.pid")]
        assert len(started) == 2 and all(_alive(p) for p in started)
    # (the sandbox's keeper notices its worker's death by polling: 20 s, for
    # a whole-suite run on a loaded machine, where 5 s once ran out)
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in started)
    with PassSandbox("test_hostile_passes:hangs", timeout=0.3) as sb:
        assert sb.rewrite(program).status == TIMEOUT
        # a fresh sandbox answers the next request
        assert sb.rewrite(program).status == TIMEOUT and sb.starts == 2


def test_sandbox_memory_cap_turns_a_runaway_allocation_into_a_crash(monkeypatch):
    from tfsem.campaigns.sandbox import CRASH, PassSandbox
    monkeypatch.syspath_prepend(str(TESTS))
    program = {"nodes": [{"name": "c", "op": "Const", "value": 1}], "outputs": {"o": "c"}}
    with PassSandbox("test_hostile_passes:eats_memory", timeout=30, memory_mb=256) as sb:
        r = sb.rewrite(program)
    assert r.status == CRASH and r.error_type == "MemoryError", r


def test_a_pass_that_kills_its_parent_kills_only_the_guard(monkeypatch):
    from tfsem.campaigns.sandbox import CRASH, PassSandbox
    monkeypatch.syspath_prepend(str(TESTS))
    program = {"nodes": [{"name": "c", "op": "Const", "value": 1}], "outputs": {"o": "c"}}
    with PassSandbox("test_hostile_passes:kills_parent", timeout=30) as sb:
        r = sb.rewrite(program)
        assert r.status == CRASH and "SIGKILL" in r.message, r
        r = sb.rewrite(program)   # this process is alive to ask again
        assert r.status == CRASH and sb.starts == 2


def _kills_worker(p: Program) -> Program:
    """Kills the campaign's worker (its grandparent, past the sandbox's guard)."""
    guard = os.getppid()
    worker = int(Path(f"/proc/{guard}/stat").read_text().rsplit(")", 1)[1].split()[1])
    os.kill(worker, signal.SIGKILL)
    time.sleep(5)
    return p


kills_worker = _pass("hostile-kills-worker", _kills_worker)


def test_a_campaign_whose_worker_died_is_incomplete_and_fails(tmp_path):
    from scaled_budgets import scaled
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    # identity first: the first task may lose its slice to the worker's start-up;
    # on a busy machine the second's slice may be gone too (nothing killed, the
    # identity's weak evidence: exit 4), and the campaign runs again, afresh,
    # with a larger budget
    for budget in scaled(6):
        out = tmp_path / f"campaign-{budget:g}"
        r = subprocess.run([sys.executable, "-m", "tfsem", "fuzz", "--budget", f"{budget:g}s", "--out", str(out),
                            "--pass", "test_hostile_passes:identity", "--pass", "test_hostile_passes:kills_worker",
                            "--checker", "concrete", "--generator", "campaign_fakes:small_generator",
                            "--semantics", "atomic", "--observe", "outputs+state"],
                           env=env, capture_output=True, text=True, timeout=120 + 3 * budget)
        assert r.returncode in (1, 4), (r.stdout, r.stderr[-2000:])
        if r.returncode == 1:
            break
    assert r.returncode == 1, (r.stdout, r.stderr[-2000:])
    assert "incomplete" in r.stdout and "worker" in r.stdout and "died" in r.stdout, r.stdout
    assert "result: pass" not in r.stdout
    from tfsem.campaigns.store import Store
    with Store(out, readonly=True) as s:
        assert s.latest_campaign()["status"] == "incomplete"


def test_killing_the_worker_kills_what_its_pass_forked(tmp_path, monkeypatch):
    """A worker killed by SIGKILL (the OOM killer, a campaign stopped hard)
    takes its sandbox's whole process group along, the pass's children too."""
    monkeypatch.setenv(PID_DIR_ENV, str(tmp_path))
    script = ("import sys, time; sys.path.insert(0, %r)\n"
              "from tfsem.campaigns.sandbox import PassSandbox\n"
              "sb = PassSandbox('test_hostile_passes:forks', timeout=30)\n"
              "print(sb.rewrite({'nodes': [{'name': 'c', 'op': 'Const', 'value': 1}], "
              "'outputs': {'o': 'c'}}).status, flush=True)\n"
              "time.sleep(600)\n") % str(TESTS)
    worker = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert worker.stdout.readline().strip() == "ok"
        started = [int(p.stem) for p in tmp_path.glob("*.pid")]
        assert len(started) == 2 and all(_alive(p) for p in started)
    finally:
        worker.kill()
        worker.wait()
    # (the sandbox's keeper notices its worker's death by polling: 20 s, for
    # a whole-suite run on a loaded machine, where 5 s once ran out)
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in started if _alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, "processes a pass forked outlived its killed worker"
