"""Every command that a message of `tfsem verify` and `tfsem fuzz` offers is
run here and gives the promised result (issue 16, items 2 and 10 for the
CLI), and the command line's smaller promises: a light `tfsem --help`, shell
completion, errors naming their file, a crashing pass's traceback, one
default for --max-nodes."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from test_campaigns_fuzz import FAST, ONE_CELL, tfsem, tfsem_finished, tfsem_here, tfsem_started
from tfsem import cli

TESTS = Path(__file__).resolve().parent


def _offered(text: str, command: str) -> list[list[str]]:
    """The `tfsem COMMAND ...` lines a message offers, as argument lists."""
    return [shlex.split(m) for m in re.findall(rf"^\s*(?:\w+: )?(tfsem {command} .+?)\s*$", text, re.M)]



@pytest.mark.skipif(settings.get_current_profile_name() != "nightly",
                    reason="nightly profile only: a campaign, then every command it offers (test_report_command runs every command a report offers by default)")
def test_every_command_offered_by_verify_gives_the_promised_result(tmp_path):
    # the campaigns one after the other (each needs its budget's CPU), then
    # all the reproducers side by side (each mostly waits on its imports)
    r = tfsem("verify", "campaign_fakes:drop_assigns_claims_sound", "--budget", "3s", "--seed", "1",
              "--out", tmp_path / "v", *FAST, *ONE_CELL)
    assert r.returncode == 1, r.stdout + r.stderr  # a contradicted claim fails the run
    checks = _offered(r.stdout, "check")
    assert checks
    crash = tfsem("verify", "campaign_fakes:crash_on_add", "--budget", "4s", "--out", tmp_path / "c",
                  *FAST, *ONE_CELL)
    assert crash.returncode == 1, crash.stdout + crash.stderr
    rewrites = _offered(crash.stdout, "rewrite")
    assert rewrites
    check_runs = [(argv, tfsem_started(*argv[1:])) for argv in checks]
    rewrite_runs = [(argv, tfsem_started(*argv[1:])) for argv in rewrites]
    for argv, proc in check_runs:  # each unsound finding's reproducer: `tfsem check` says unsound, exit 1
        out = tfsem_finished(proc)
        assert out.returncode == 1 and out.stdout.startswith("unsound"), (argv, out.stdout, out.stderr)
    for argv, proc in rewrite_runs:  # a crash's reproducer: the pass crashes again, with its traceback
        out = tfsem_finished(proc)
        assert out.returncode == 1, out.stderr
        assert "ZeroDivisionError" in out.stderr and "Traceback (most recent call last)" in out.stderr


@pytest.mark.skipif(settings.get_current_profile_name() != "nightly",
                    reason="nightly profile only: a 3 s campaign and a report (~7 s); "
                           "test_report_command::test_every_command_a_page_offers_gives_what_it_promises "
                           "runs the `tfsem report DIR` that fuzz offers, and checks the report, by default")
def test_the_report_command_offered_by_fuzz_writes_the_report(tmp_path):
    out = tmp_path / "camp"
    r = tfsem("fuzz", "--pass", "campaign_fakes:drop_assigns", "--budget", "3s", "--out", out,
              "--seed", "2", *FAST, *ONE_CELL)
    assert r.returncode == 0, r.stdout + r.stderr
    offered = _offered(r.stdout, "report")
    assert offered == [["tfsem", "report", str(out)]]
    rep = tfsem(*offered[0][1:])
    assert rep.returncode == 0, rep.stderr
    assert (out / "report" / "index.html").exists()


def test_help_imports_no_command_module():
    code = ("import sys\nfrom tfsem.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'z3', 'hypothesis')"
            " or m.startswith('tfsem.commands.'))\nprint(heavy, file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "COMMAND" in r.stdout and "verify" in r.stdout
    assert r.stderr.strip() == "[]", r.stderr


def test_help_summaries_are_the_commands_own():
    full = cli.build_parser()
    sub = next(a for a in full._actions if a.__class__.__name__ == "_SubParsersAction")
    helps = {c.dest: c.help for c in sub._choices_actions}
    assert helps  # every command module's help, as `tfsem --help` reads it from the source
    for name in helps:
        assert cli.summary(name) == helps[name], name


def test_a_command_gets_its_own_full_parser():
    args = cli.build_parser("verify").parse_args(["verify", "cse", "--budget", "5s"])
    assert args.budget == 5.0 and args.pass_name == "cse"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completion_script_is_valid_and_lists_commands_and_options(tmp_path, capsys):
    r = tfsem("completion", "bash")
    assert r.returncode == 0, r.stderr
    script = tmp_path / "tfsem.bash"
    script.write_text(r.stdout)
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    # complete `tfsem verify --bu` in a real bash
    probe = (f"source {shlex.quote(str(script))}; COMP_WORDS=(tfsem verify --bu); COMP_CWORD=2; "
             "_tfsem; echo ${COMPREPLY[@]}; COMP_WORDS=(tfsem fu); COMP_CWORD=1; _tfsem; echo ${COMPREPLY[@]}")
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert out.stdout.splitlines() == ["--budget", "fuzz"], out.stdout + out.stderr
    assert tfsem_here(capsys, "completion", "fish").returncode == 2


def test_check_names_the_bad_original_file(tmp_path, capsys):
    bad = tmp_path / "a.json"
    bad.write_text('{"format": "tfsem.program/1", "nodes": [{"name": "n", "op": "Bogus"}]}')
    good = tmp_path / "b.json"
    good.write_text('{"format": "tfsem.program/1", "nodes": [{"name": "k", "op": "Const", "value": 1}], '
                    '"outputs": {"o": "k"}}')
    r = tfsem_here(capsys, "check", bad, good)
    assert r.returncode == 2 and f"{bad}: invalid original program" in r.stderr
    assert "Traceback" not in r.stderr


def test_rewrite_prints_a_crashing_pass_traceback(tmp_path):
    prog = tmp_path / "add.json"
    prog.write_text('{"format": "tfsem.program/1", "nodes": [{"name": "k", "op": "Const", "value": 1}, '
                    '{"name": "a", "op": "Add", "inputs": ["k", "k"]}], "outputs": {"o": "a"}}')
    r = tfsem("rewrite", "campaign_fakes:crash_on_add", prog)
    assert r.returncode == 1
    assert "Traceback (most recent call last)" in r.stderr and "campaign_fakes.py" in r.stderr


def test_one_default_for_max_nodes():
    from tfsem.campaigns import DEFAULT_MAX_NODES
    defaults = {}
    for name in ("generate", "verify", "fuzz"):
        p = cli.build_parser(name)
        sub = next(a for a in p._actions if a.__class__.__name__ == "_SubParsersAction")
        defaults[name] = sub.choices[name].get_default("max_nodes")
    assert set(defaults.values()) == {DEFAULT_MAX_NODES}, defaults


def test_verify_and_fuzz_help_state_the_exit_rule(capsys):
    for name in ("verify", "fuzz"):   # `tfsem NAME --help`, in this process
        with pytest.raises(SystemExit) as exc:
            cli.main([name, "--help"])
        assert exc.value.code == 0
        text = " ".join(capsys.readouterr().out.split())
        assert "claims unsound (expected)" in text and "crashes, hangs" in text, text
