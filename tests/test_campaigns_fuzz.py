"""`tfsem fuzz` and `tfsem verify` end to end, with the deliberately faulty
passes of campaign_fakes.py: killing a campaign loses nothing, crashing and
hanging passes become findings while the campaign goes on, fixed findings are
reported fixed, and claims are judged."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scaled_budgets import scaled
from tfsem.campaigns.campaign import CampaignSettings, run_campaign
from tfsem.campaigns.store import Store, StoreError
from tfsem.campaigns.verify import CONFIRMED, CONTRADICTED, NO_COUNTEREXAMPLE, NOT_CONFIRMED, verify_pass

TESTS = Path(__file__).resolve().parent
FAST = ["--checker", "concrete", "--generator", "campaign_fakes:small_generator"]
ONE_CELL = ["--semantics", "atomic", "--observe", "outputs+state"]


def env(**extra: str) -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(TESTS), e.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    e.update(extra)
    return e


def tfsem(*args: str, timeout: float = 120, **env_extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tfsem", *map(str, args)], env=env(**env_extra),
                          capture_output=True, text=True, timeout=timeout)


def tfsem_started(*args) -> subprocess.Popen:
    """`tfsem ARGS` started, not waited for: several run side by side, each
    collected by tfsem_finished."""
    return subprocess.Popen([sys.executable, "-m", "tfsem", *map(str, args)], env=env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def tfsem_finished(proc: subprocess.Popen, timeout: float = 120) -> subprocess.CompletedProcess:
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def tfsem_here(capsys, *args) -> subprocess.CompletedProcess:
    """`tfsem ARGS` run by `tfsem.cli.main` in this process, for what needs no
    process of its own (usage errors: nothing runs, and no start-up is paid);
    an exception escaping main fails the test as a traceback would."""
    from tfsem.cli import main
    capsys.readouterr()
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:   # argparse's usage errors
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    said = capsys.readouterr()
    return subprocess.CompletedProcess(["tfsem", *map(str, args)], code, said.out, said.err)


def findings_in(out: Path) -> list[dict]:
    try:
        with Store(out, readonly=True) as s:
            return s.findings()
    except (StoreError, Exception):
        return []


def session_processes(sid: int) -> list[int]:
    """Processes of a session (Linux /proc), to check nothing is left behind."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[3]) == sid and fields[0] != "Z":  # field 6 of stat: session id
            pids.append(int(entry))
    return pids


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and SIGKILL semantics of Linux")
def test_sigkill_loses_no_recorded_finding_and_a_restart_continues(tmp_path):
    out = tmp_path / "campaign"
    cmd = [sys.executable, "-m", "tfsem", "fuzz", "--pass", "campaign_fakes:drop_assigns",
           "--budget", "120s", "--out", str(out), "--workers", "2", *FAST, *ONE_CELL]
    proc = subprocess.Popen(cmd, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        before: list[dict] = []
        while time.monotonic() < deadline and not before:
            time.sleep(0.3)
            before = findings_in(out)
        assert before, "the campaign recorded no finding within 60 s"
        assert proc.poll() is None, "the campaign ended before it was killed"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    # the workers and the pass sandboxes die with the coordinator
    deadline = time.monotonic() + 10
    while session_processes(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert session_processes(proc.pid) == []
    # everything committed is there, readable
    after_kill = findings_in(out)
    assert {f["signature"] for f in before} <= {f["signature"] for f in after_kill}
    with Store(out, readonly=True) as s:
        assert s.campaigns()[0]["status"] == "running"  # killed: never finished
    # running again on the same DIR continues
    r = tfsem("fuzz", "--pass", "campaign_fakes:drop_assigns", "--budget", "3s", "--out", out,
              *FAST, *ONE_CELL)
    assert r.returncode == 0, r.stderr  # the pass claims unsound: findings are expected
    with Store(out, readonly=True) as s:
        campaigns = s.campaigns()
        assert [c["status"] for c in campaigns] == ["interrupted", "finished"]
        rows = {f["signature"]: f for f in s.findings()}
        assert {f["signature"] for f in after_kill} <= set(rows)
        # replayed first: what the killed campaign found is known now, not new
        for f in after_kill:
            assert rows[f["signature"]]["status"] == "known"
            assert rows[f["signature"]]["times_seen"] > f["times_seen"]
        assert s.campaign_findings(campaigns[1]["id"])["known"]


#: The passes of the crash-and-hang campaign: each misbehaves on a program
#: with one kind of node, and the identity is healthy.
MISBEHAVING = {"fake-crash-on-add": "crash", "fake-hang-on-assign": "timeout", "fake-die-on-read": "crash"}


def test_crashing_and_hanging_passes_become_findings_and_the_campaign_goes_on(tmp_path):
    # What a campaign finds in a wall-clock budget depends on the machine's
    # load: on a busy machine 10 s once judged one program of two passes and
    # none of the others.  So the budget scales: a campaign that has not yet
    # fuzzed every pass and found every fault runs again, in a fresh folder,
    # with three times the budget and the pass timeout.  What must hold at any
    # load is checked after every run: the campaign finishes, and each pass's
    # findings are its own fault or a timeout (a timeout of a pass that does
    # not hang can only be the load, at 0.5 s: a run that has one is not taken
    # as the answer, and the last run, at 4.5 s, must have none).
    for attempt, (budget, pass_timeout) in enumerate(((10, 0.5), (30, 1.5), (90, 4.5))):
        out = tmp_path / f"campaign-{attempt}"
        r = tfsem("fuzz", "--pass", "campaign_fakes:crash_on_add", "--pass", "campaign_fakes:hang_on_assign",
                  "--pass", "campaign_fakes:die_on_read", "--pass", "campaign_fakes:identity",
                  "--budget", f"{budget}s", "--out", out, "--workers", "2", "--pass-timeout", f"{pass_timeout}s",
                  *FAST, *ONE_CELL, "--json", timeout=120 + 3 * budget)
        assert r.returncode in (1, 4), r.stderr   # crashes and timeouts are bugs; 4: too little judged
        result = json.loads(r.stdout)
        assert result["status"] == "finished"
        kinds = {(f["pass"], f["kind"]) for f in result["new"]}
        assert all(k in (MISBEHAVING.get(p), "timeout") for p, k in kinds), kinds
        programs = {t["pass"]: t["programs"] for t in result["passes"]}
        if (set(MISBEHAVING.items()) <= kinds and kinds <= set(MISBEHAVING.items())
                and all(programs.get(p, 0) > 0 for p in (*MISBEHAVING, "fake-identity"))):
            break
    assert r.returncode == 1, r.stderr
    assert kinds == set(MISBEHAVING.items()), (attempt, kinds)
    # every pass was fuzzed, the healthy one too, despite the others
    assert all(programs.get(p, 0) > 0 for p in (*MISBEHAVING, "fake-identity")), (attempt, programs)
    with Store(out, readonly=True) as s:
        crash = next(f for f in s.findings(kind="crash") if f["pass"] == "fake-crash-on-add")
        assert crash["detail"]["error_type"] == "ZeroDivisionError"
        died = next(f for f in s.findings(kind="crash") if f["pass"] == "fake-die-on-read")
        assert "status 7" in died["message"]
        assert s.findings(pass_name="fake-identity") == []


def test_fixed_findings_are_reported_fixed_on_the_next_night(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    # a loaded machine may judge no program in 3 s: the first night gets a
    # longer budget (in a fresh folder) until it has found something
    for budget in (3.0, 8.0, 20.0):
        out = tmp_path / f"night1-{budget:g}"
        settings = dict(passes=["campaign_fakes:toggled"], out=str(out), cells=[("atomic", "outputs+state")],
                        checker="concrete", generator="campaign_fakes:small_generator")
        log = io.StringIO()
        night1 = run_campaign(CampaignSettings(budget=budget, **settings), stream=log, live=False)
        if night1.new:
            break
    assert night1.new and not night1.known and not night1.fixed
    assert "finding #1 new unsound in fake-toggled" in log.getvalue()
    monkeypatch.setenv("TFSEM_FAKE_FIXED", "1")
    night2 = run_campaign(CampaignSettings(budget=1.0, **settings), stream=io.StringIO(), live=False)
    assert {f["id"] for f in night2.fixed} == {f["id"] for f in night1.new}
    assert not night2.new and not night2.known
    with Store(out, readonly=True) as s:
        assert all(f["status"] == "fixed" for f in s.findings())
        assert s.history()[1]["fixed"] == len(night1.new)


def test_a_second_campaign_on_the_same_dir_is_refused_while_one_runs(tmp_path):
    out = tmp_path / "campaign"
    proc = subprocess.Popen([sys.executable, "-m", "tfsem", "fuzz", "--pass", "campaign_fakes:identity",
                             "--budget", "30s", "--out", str(out), *FAST, *ONE_CELL],
                            env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            time.sleep(0.2)
            try:
                with Store(out, readonly=True) as s:
                    if s.campaigns():
                        break
            except Exception:
                pass
        r = tfsem("fuzz", "--pass", "campaign_fakes:identity", "--budget", "1s", "--out", out, *FAST)
        assert r.returncode == 2 and "another campaign is running" in r.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    with Store(out, readonly=True) as s:
        assert s.campaigns()[0]["status"] == "interrupted"  # SIGTERM is a clean stop


def test_fuzz_usage_errors(tmp_path, capsys):
    r = tfsem_here(capsys, "fuzz", "--pass", "no-such-pass", "--budget", "1s", "--out", tmp_path)
    assert r.returncode == 2 and "no-such-pass" in r.stderr
    r = tfsem_here(capsys, "fuzz", "--pass", "campaign_fakes:identity", "--budget", "soon", "--out", tmp_path)
    assert r.returncode == 2 and "--budget" in r.stderr


# ---------------------------------------------------------------------------
# verify and claims


def test_verify_judges_claims(monkeypatch):
    """Claims against findings, with the passes run in this process (the
    sandbox is tested on its own) to keep the test fast."""
    monkeypatch.syspath_prepend(str(TESTS))
    import campaign_fakes as fakes
    from test_campaigns_loop import InlineRunner

    cell = [("atomic", "outputs+state")]
    kw = dict(checker="concrete", generator="campaign_fakes:small_generator", seed=3)
    wrong = verify_pass("campaign_fakes:drop_assigns_claims_sound", 2.5, cell,
                        runner=InlineRunner(fakes._drop_assigns), **kw)
    assert [c.judgement for c in wrong.cells] == [CONTRADICTED]
    assert wrong.bugs and all(f.record.claim == "sound" for f in wrong.bugs)

    right = verify_pass("campaign_fakes:drop_assigns", 2.5, cell, runner=InlineRunner(fakes._drop_assigns), **kw)
    assert [c.judgement for c in right.cells] == [CONFIRMED]
    assert right.findings and not right.bugs

    unconfirmed = verify_pass("campaign_fakes:identity_claims_unsound", 0.7, cell,
                              runner=InlineRunner(fakes._identity), **kw)
    assert [c.judgement for c in unconfirmed.cells] == [NOT_CONFIRMED] and not unconfirmed.findings

    sound = verify_pass("campaign_fakes:identity", 0.7, cell, runner=InlineRunner(fakes._identity), **kw)
    assert [c.judgement for c in sound.cells] == [NO_COUNTEREXAMPLE] and not sound.findings


def test_verify_prints_minimized_counterexamples_with_reproducers(tmp_path, capsys):
    for budget in scaled(3):
        out = tmp_path / f"v{budget:g}"
        r = tfsem("verify", "campaign_fakes:drop_assigns_claims_sound", "--budget", f"{budget:g}s", "--seed", "1",
                  "--out", out, *FAST, *ONE_CELL, timeout=120 + 3 * budget)
        assert r.returncode in (1, 4), r.stderr   # 4: nothing found yet, too little judged
        if r.returncode == 1:
            break
    assert r.returncode == 1, r.stderr
    assert re.search(r"^finding \d+: unsound", r.stdout, re.M) and "BUG: the pass claims sound here" in r.stdout
    assert "contradicted" in r.stdout
    shown = re.findall(r"tfsem check (\S+)", r.stdout)
    assert shown and all(Path(p).parent == out for p in shown)
    case = json.loads(Path(shown[0]).read_text())
    assert case["format"] == "tfsem.case/1" and case["expect"] == "unsound"
    assert len(case["original"]["nodes"]) <= 4  # shrunk
    # the reproducer reproduces with the real checker, run by tfsem.cli.main in
    # this process (its TensorFlow replay of the unsound verdict reuses this
    # process's TensorFlow, not a fresh import) while the next verify runs
    ok_run = tfsem_started("verify", "campaign_fakes:identity", "--budget", "1s", "--out", tmp_path / "ok",
                           *FAST, *ONE_CELL, "--json")
    try:
        check = tfsem_here(capsys, "check", shown[0])
        ok = tfsem_finished(ok_run)
    finally:
        if ok_run.poll() is None:
            ok_run.kill()
            ok_run.communicate()
    assert check.returncode == 1 and "unsound" in check.stdout, check.stdout + check.stderr
    for budget in scaled(1)[1:]:
        if json.loads(ok.stdout)["cells"][0]["programs"] > 0:
            break   # (a busy second may judge none)
        ok = tfsem("verify", "campaign_fakes:identity", "--budget", f"{budget:g}s", "--out",
                   tmp_path / f"ok{budget:g}", *FAST, *ONE_CELL, "--json", timeout=120 + 3 * budget)
    assert ok.returncode == 4, ok.stderr   # the identity changes nothing: weak evidence
    data = json.loads(ok.stdout)
    assert data["findings"] == [] and data["cells"][0]["result"] == NO_COUNTEREXAMPLE
    assert data["cells"][0]["programs"] > 0


def test_verify_reports_a_crash_with_its_reproducer(tmp_path):
    # under heavy load 2 s once gave 29 programs and none with an Add
    for budget in scaled(4):
        r = tfsem("verify", "campaign_fakes:crash_on_add", "--budget", f"{budget:g}s", "--out",
                  tmp_path / f"v{budget:g}", *FAST, *ONE_CELL, "--json", timeout=120 + 3 * budget)
        assert r.returncode in (1, 4), r.stderr
        if r.returncode == 1:
            break
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    crash = next(f for f in data["findings"] if f["kind"] == "crash")
    assert crash["detail"]["error_type"] == "ZeroDivisionError"
    assert crash["command"].startswith("tfsem rewrite campaign_fakes:crash_on_add ")
    assert Path(crash["reproducer"]).exists()


def test_verify_unknown_pass_is_a_usage_error(capsys):
    r = tfsem_here(capsys, "verify", "no-such-pass", "--budget", "1s")
    assert r.returncode == 2 and "no-such-pass" in r.stderr
