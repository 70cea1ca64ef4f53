"""A campaign on a disk that fills up (issue 29, item 4): a clear message and
exit status 2, the campaign marked `interrupted`, every finding it stored
intact and readable; and campaign workers that die are reaped at once, not
left as zombies until the campaign ends.

The disk is a real one where this test may mount a 8 MiB tmpfs (root on
Linux); elsewhere the full disk is injected (SQLite's "database or disk is
full" raised from the store) and the tmpfs test is skipped."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import settings

from tfsem.campaigns.campaign import CampaignSettings, DiskFull, run_campaign
from tfsem.campaigns.store import Store
from tfsem.campaigns.targets import CELLS

TESTS = Path(__file__).resolve().parent
FUZZ = ["--pass", "campaign_fakes:drop_assigns", "--checker", "concrete",
        "--generator", "campaign_fakes:small_generator", "--semantics", "atomic", "--observe", "outputs+state"]


def _env() -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(TESTS), e.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return e


def _findings(out: Path) -> list[dict]:
    try:
        with Store(out, readonly=True) as s:
            return s.findings()
    except Exception:
        return []


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root on Linux (the injected test covers the rest)")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode(errors='replace').strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill(directory: Path, name: str = "filler") -> Path:
    """Fill the filesystem up (the campaign may fill it first)."""
    filler = directory / name
    try:
        with open(filler, "wb") as f:
            for _ in range(1 << 16):
                f.write(bytes(4096))
                f.flush()
    except OSError:
        pass
    return filler


def test_a_disk_that_fills_under_a_running_campaign(small_disk):
    out = small_disk / "campaign"
    proc = subprocess.Popen([sys.executable, "-m", "tfsem", "fuzz", *FUZZ, "--budget", "90s", "--out", str(out),
                             "--workers", "1"], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 60
        before: list[dict] = []
        while time.monotonic() < deadline and not before and proc.poll() is None:
            time.sleep(0.3)
            before = _findings(out)
        assert before, "no finding within 60 s"
        filler = _fill(small_disk)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 2, (stdout, stderr)
    assert "Traceback" not in stderr
    message = stderr.strip().splitlines()[-1]
    assert message.startswith("tfsem fuzz: ") and "no space left on the device" in message, message
    assert "marked interrupted" in message and "What it stored is intact" in message, message
    kept = int(message.split("intact: ", 1)[1].split(" finding")[0])
    # a second campaign on the disk, full again (the first gave back its
    # reserve), does not start: the same kind of message
    filler2 = _fill(small_disk, "filler2")
    again = subprocess.run([sys.executable, "-m", "tfsem", "fuzz", *FUZZ, "--budget", "5s", "--out", str(out)],
                           env=_env(), capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "no space left" in again.stderr and "Traceback" not in again.stderr, again
    assert "did not start" in again.stderr, again.stderr
    filler.unlink(missing_ok=True)
    filler2.unlink(missing_ok=True)
    with Store(out, readonly=True) as s:
        assert [c["status"] for c in s.campaigns()] == ["interrupted"]
        assert s.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = s.findings()
    assert {f["signature"] for f in before} <= {f["signature"] for f in stored}
    assert len(stored) == kept
    assert not (out / "campaign.reserve").exists()


def _can_mount() -> bool:
    return sys.platform.startswith("linux") and os.geteuid() == 0 and Path("/proc/filesystems").exists() \
        and "tmpfs" in Path("/proc/filesystems").read_text()


@pytest.mark.skipif(_can_mount() and settings.get_current_profile_name() != "nightly",
                    reason="the real small filesystem is tested here; the injected one runs nightly")
def test_an_injected_full_disk_marks_the_campaign_interrupted(tmp_path, monkeypatch):
    """Without a small filesystem: SQLite's SQLITE_FULL raised by the store
    once the campaign has recorded a finding."""
    calls = {"n": 0}
    original = Store.record_finding

    def record(self, campaign_id, record):
        calls["n"] += 1
        if calls["n"] > 1:
            raise sqlite3.OperationalError("database or disk is full")
        return original(self, campaign_id, record)

    monkeypatch.setattr(Store, "record_finding", record)
    out = tmp_path / "campaign"
    settings = CampaignSettings(passes=["campaign_fakes:drop_assigns"], budget=60, out=str(out), workers=1,
                                cells=[c for c in CELLS if c == ("atomic", "outputs+state")],
                                checker="concrete", generator="campaign_fakes:small_generator")
    t0 = time.monotonic()
    with pytest.raises(DiskFull) as exc:
        run_campaign(settings)
    assert time.monotonic() - t0 < 60
    text = str(exc.value)
    assert "no space left" in text and "marked interrupted" in text and "1 finding(s)" in text, text
    with Store(out, readonly=True) as s:
        assert [c["status"] for c in s.campaigns()] == ["interrupted"]
        assert len(s.findings()) == 1


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc (Linux)")
def test_a_killed_worker_is_reaped_at_once(tmp_path):
    out = tmp_path / "campaign"
    proc = subprocess.Popen([sys.executable, "-m", "tfsem", "fuzz", *FUZZ, "--budget", "40s", "--out", str(out),
                             "--workers", "2"], env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while time.monotonic() < deadline and len(workers) < 2:
            time.sleep(0.3)
            workers = _children(proc.pid)
        assert len(workers) >= 2, "the campaign did not start two workers"
        time.sleep(2.0)  # both at work
        victim = workers[0]
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 3
        while _state(victim) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _state(victim) is None, f"worker {victim} is left as {_state(victim)!r} (Z: a zombie)"
        assert proc.poll() is None  # the campaign goes on
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
