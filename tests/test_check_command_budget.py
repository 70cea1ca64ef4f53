"""`tfsem check --timeout T`: the report (text, --json, --html) is made
against the same clock as the check, and a report cut for time says so
(tfsem/commands/check.py, docs/budgets.md).  Each test makes one stage of
the report slow (monkeypatch), as MobileNetV2's counterexample is (136 MB
of JSON, a 122 MB page), and checks that the command ends in time with the
verdict standing and the exit status unchanged.  The last two run the
command as a process of its own, where a watchdog writes the report at T
when a stage (a check that ignores its clock, a replay) overruns."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import settings

from tfsem.cli import EXIT_FOUND, EXIT_UNKNOWN, main

CASES = Path(__file__).resolve().parent / "cases"
CASE = CASES / "pass_cse_ignore_control.json"
#: the command ends within T and this much (the report's writing, the
#: machine's load)
MARGIN = 0.5


@pytest.fixture(scope="module", autouse=True)
def warm():
    """The checker's and the reports' modules imported before any test's
    clock starts (their first import takes seconds)."""
    import tfsem.reports.finding  # noqa: F401
    main(["check", str(CASE), "--timeout", "5", "--json", "--no-tensorflow"])


def _check(capsys, *argv: str):
    capsys.readouterr()
    t = time.monotonic()
    rc = main(["check", str(CASE), "--no-tensorflow", *argv])
    return rc, capsys.readouterr().out, time.monotonic() - t


def test_a_slow_json_is_written_without_its_counterexample(monkeypatch, capsys):
    from tfsem.checking.verdict import Counterexample
    rc, out, _ = _check(capsys, "--timeout", "5", "--json")
    full = json.loads(out)
    assert rc == EXIT_FOUND and full["counterexample"] and "report_cut" not in full

    def slow(self, *args, **kwargs):
        time.sleep(3.0)
        return {}

    monkeypatch.setattr(Counterexample, "to_json", slow)
    rc, out, seconds = _check(capsys, "--timeout", "0.6", "--json")
    assert seconds < 0.6 + MARGIN
    data = json.loads(out)
    assert rc == EXIT_FOUND and data["verdict"] == "unsound"      # the verdict stands
    assert data["counterexample"] is None and "left out" in data["report_cut"]
    assert data["differs"] == full["differs"] and data["reason"] == full["reason"]


def test_a_slow_text_is_written_without_its_counterexample(monkeypatch, capsys):
    from tfsem.checking.verdict import Counterexample
    rc, out, _ = _check(capsys, "--timeout", "5")
    assert "rewritten schedule:" in out

    def slow(self, *args, **kwargs):
        time.sleep(3.0)
        return ""

    monkeypatch.setattr(Counterexample, "describe", slow)
    rc, out, seconds = _check(capsys, "--timeout", "0.6")
    assert seconds < 0.6 + MARGIN
    lines = out.splitlines()
    assert rc == EXIT_FOUND and lines[0] == "unsound: output 'o2' differs"
    assert "rewritten schedule:" not in out
    assert lines[-1].startswith("  (counterexample left out: the time budget ran out")


def test_a_slow_page_holds_the_verdict_and_says_it_was_cut(monkeypatch, capsys, tmp_path):
    from tfsem.reports import finding
    page = tmp_path / "case.html"
    rc, out, _ = _check(capsys, "--timeout", "5", "--html", str(page), "--json")
    assert rc == EXIT_FOUND and "html_cut" not in json.loads(out)
    drawn = page.read_text()
    assert (tmp_path / "case-steps.html").exists()

    def slow(*args, **kwargs):
        time.sleep(3.0)
        return "<html>too late</html>"

    monkeypatch.setattr(finding, "render_finding_page", slow)
    for f in tmp_path.iterdir():
        f.unlink()
    rc, out, seconds = _check(capsys, "--timeout", "0.6", "--html", str(page), "--json")
    assert seconds < 0.6 + MARGIN
    data = json.loads(out)
    assert rc == EXIT_FOUND and data["verdict"] == "unsound"
    assert "ran out while the page was drawn" in data["html_cut"]
    assert data["counterexample"]              # the JSON had the time for it
    cut = page.read_text()
    assert "UNSOUND" in cut and "ran out while this page was drawn" in cut and cut != drawn
    assert sorted(f.name for f in tmp_path.iterdir()) == ["case.html"]   # whole, no temp file
    rc, out, seconds = _check(capsys, "--timeout", "0.6", "--html", str(page))
    assert seconds < 0.6 + MARGIN and rc == EXIT_FOUND
    assert out.splitlines()[-1] == f"  (--html {page}: the time budget ran out while the page " \
                                   "was drawn: it holds the verdict alone; a longer --timeout " \
                                   "draws it)"


WATCHDOG_SCRIPT = r'''
import sys, time
import tfsem.commands.check as command
import tfsem.checking.structural as rule
stage = sys.argv[1]
if stage == "proof":
    real_rule = rule.structural_refinement
    def late(*a, **k):           # a proof the checker finishes long past its deadline
        result = real_rule(*a, **k)
        time.sleep(30)
        return result
    rule.structural_refinement = late
else:
    def stuck(*a, **k):          # a stage after the verdict that ignores its clock
        time.sleep(30)
    command.replay_on_tensorflow = stuck
import tfsem.reports.finding
from tfsem.commands.common import Deadline
# (the clock from main(): the process's start and these imports, 1-3 s
# under load, are not what is tested here)
Deadline.of_process = classmethod(lambda cls, seconds: cls(seconds))
from tfsem.cli import main
sys.argv = ["tfsem", "check", sys.argv[2], "--timeout", sys.argv[3]] + sys.argv[4:]
print(f"main at {time.monotonic()!r}", file=sys.stderr, flush=True)
try:
    main()
finally:
    print("main returned", file=sys.stderr)
'''


def _watchdog(stage: str, case: Path, budget: float, *argv: str):
    """The command's output and the seconds from its main() call (the
    modules imported before it) to the process's end (CLOCK_MONOTONIC is
    the system's: the same in both processes)."""
    out = subprocess.run([sys.executable, "-c", WATCHDOG_SCRIPT, stage, str(case), str(budget),
                          *argv], capture_output=True, text=True, timeout=120)
    end = time.monotonic()
    started = [float(line.split()[-1]) for line in out.stderr.splitlines()
               if line.startswith("main at ")]
    assert started, out.stderr[-2000:]
    return out, end - started[0]


def test_the_watchdog_ends_a_check_whose_proof_comes_past_the_deadline(tmp_path):
    """The structural rule's proof of a sound rewrite (cse) comes 30 s past
    the check's deadline: a stage that does not look at the clock.  At T the
    watchdog writes `unknown` (true: no verdict was reached in time), naming
    the stage, writes the page, and ends the process, exit 3; the late
    `sound` is never written."""
    page = tmp_path / "p.html"
    out, wall = _watchdog("proof", CASES / "pass_cse.json", 1.0, "--json", "--html", str(page),
                          "--no-tensorflow")
    assert out.returncode == EXIT_UNKNOWN, out.stderr[-2000:]
    assert "main returned" not in out.stderr          # ended by the watchdog
    assert wall < 1.0 + 1.0
    data = json.loads(out.stdout)
    assert data["verdict"] == "unknown"
    assert data["reason"] == ("the time budget of 1 s ran out during the check, which overran "
                              "its share of it: no verdict (a longer --timeout may decide it)")
    assert "UNKNOWN" in page.read_text()


@pytest.mark.skipif(settings.get_current_profile_name() != "nightly",
                    reason="a 4 s process: nightly profile (the default suite runs the "
                           "watchdog in the test before this one)")
def test_the_watchdog_keeps_a_verdict_already_reached():
    """Cut in the replay on TensorFlow (which ignores its clock here): the
    verdict stands, exit 1, its lines already printed, and the replay says
    it was not made within the budget."""
    out, wall = _watchdog("replay", CASE, 2.0)
    assert out.returncode == EXIT_FOUND, out.stderr[-2000:]
    assert "main returned" not in out.stderr and wall < 2.0 + 1.0
    lines = out.stdout.splitlines()
    assert lines[0] == "unsound: output 'o2' differs"
    assert "  rewritten schedule: vx r1 w" in lines             # printed before the replay
    assert lines[-2] == ("  (the time budget of 2 s ran out during the replay on TensorFlow, "
                         "after the verdict: the verdict stands; what came after it is left "
                         "out)")
    assert lines[-1].startswith("  not replayed on TensorFlow within the time budget")


def test_a_verdict_before_the_programs_were_read_still_writes_its_page(capsys, tmp_path):
    """The budget ran out while a large graph was read (MobileNetV2, 6,480
    nodes): `unknown`, and --html writes the page of that verdict, saying
    why it draws nothing (before, no page was written)."""
    corpus = Path(__file__).resolve().parent.parent / "examples" / "tensorflow" / "corpus"
    graph = str(corpus / "keras_mobilenetv2_32.pb")
    page = tmp_path / "p.html"
    t = time.monotonic()
    # (a budget far shorter than reading it takes on any machine: at 0.2 s a
    # quiet machine read the graph in time, and the check went on to its
    # missing capture map, exit 2)
    rc = main(["check", graph, graph, "--fetch", "Identity", "--timeout", "0.001", "--html",
               str(page)])
    assert time.monotonic() - t < 0.001 + MARGIN
    out = capsys.readouterr().out
    # (reading the file or decoding it: which, the machine's speed decides)
    assert rc == EXIT_UNKNOWN and re.match(
        r"unknown: the time budget ran out while (reading|decoding) the graph", out), out
    html = page.read_text()
    assert "UNKNOWN" in html and "came before the programs could be drawn" in html
