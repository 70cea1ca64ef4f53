"""The command line starts fast and stays quiet.

`tfsem COMMAND --help` imports neither numpy, the oracle, the checker (z3),
Hypothesis nor TensorFlow: the constants a parser shows are written in
`tfsem/commands/common.py` and held here to the modules they come from
(benchmarks/cli.py measures the times).  TensorFlow is imported with its
start-up logging silenced unless `--verbose` is given."""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys

import pytest

from tfsem.cli import COMMANDS

HEAVY = ("numpy", "z3", "hypothesis", "tensorflow", "tfsem.oracle", "tfsem.checking",
         "tfsem.campaigns.campaign", "tfsem.generators.strategies")


def test_the_parsers_constants_are_their_modules():
    from tfsem import campaigns
    from tfsem.campaigns import loop, sandbox
    from tfsem.checking import DEFAULT_TIMEOUT
    from tfsem.commands import common
    from tfsem.oracle import explore, jsonio, readsfrom, values
    assert (common.SEMANTICS, common.OBSERVE, common.CASE_FORMAT) == \
        (jsonio.SEMANTICS, jsonio.OBSERVE, jsonio.CASE_FORMAT)
    assert common.CHECK_TIMEOUT == DEFAULT_TIMEOUT
    assert common.MAX_NODES == campaigns.DEFAULT_MAX_NODES
    assert common.FUZZ_CHECK_TIMEOUT == loop.DEFAULT_CHECK_TIMEOUT
    assert common.PASS_TIMEOUT == sandbox.DEFAULT_PASS_TIMEOUT
    assert (common.MAX_STATES, common.MAX_SECONDS_OUTCOMES) == \
        (explore.DEFAULT_MAX_STATES, explore.DEFAULT_MAX_SECONDS)
    assert common.ENGINES == readsfrom.ENGINES
    assert common.DTYPES == tuple(values.DTYPES)


def _options(add) -> list[tuple]:
    p = argparse.ArgumentParser()
    add(p)
    return [(tuple(a.option_strings), a.dest, a.default, a.metavar, a.help) for a in p._actions]


def test_the_graph_options_are_graphdefs_own():
    from tfsem.commands.common import add_graph_options
    from tfsem.graphdef.cliopts import add_graph_options as graphdefs
    assert _options(add_graph_options) == _options(graphdefs)
    assert _options(lambda p: add_graph_options(p, "--feed")) == \
        _options(lambda p: graphdefs(p, "--feed"))


@pytest.mark.parametrize("command", COMMANDS)
def test_help_imports_nothing_heavy(command):
    code = ("import sys\nfrom tfsem.cli import main\ntry:\n    main([%r, '--help'])\n"
            "except SystemExit as e:\n    assert e.code == 0, e.code\n"
            "print(' '.join(m for m in %r if m in sys.modules), file=sys.stderr)" % (command, HEAVY))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "usage: tfsem " + command in r.stdout
    assert r.stderr.strip() == "", f"tfsem {command} --help imported: {r.stderr.strip()}"


def test_tensorflow_is_silenced_unless_verbose(monkeypatch):
    from tfsem import cli
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    # set, not deleted: monkeypatch restores only what it saw, and an absent
    # variable it deleted would come back as the "1" that verbose=True sets
    # below (every later subprocess of the suite would then show TensorFlow's logs)
    monkeypatch.setenv("TFSEM_VERBOSE", "0")
    saved = list(sys.meta_path)
    try:
        cli.quiet_tensorflow()               # as an earlier command in this process did
        monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL")
        cli.quiet_tensorflow(verbose=True)
        assert "TF_CPP_MIN_LOG_LEVEL" not in os.environ
        assert not any(isinstance(f, cli._QuietTensorFlow) for f in sys.meta_path)
        monkeypatch.delenv("TFSEM_VERBOSE")
        cli.quiet_tensorflow()
        assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "2"
        if "tensorflow" not in sys.modules:
            assert isinstance(sys.meta_path[0], cli._QuietTensorFlow)
            cli.quiet_tensorflow()  # twice: one finder
            assert sum(isinstance(f, cli._QuietTensorFlow) for f in sys.meta_path) == 1
            if importlib.util.find_spec("tensorflow") is not None:
                # found through the finder, not imported: its loader silences the import
                spec = importlib.util.find_spec("tensorflow")
                assert type(spec.loader).__name__ == "Quiet"
                assert "tensorflow" not in sys.modules
        monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")   # the user's own setting is kept
        cli.quiet_tensorflow()
        assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"
    finally:
        sys.meta_path[:] = saved


def test_a_failing_import_under_the_quiet_loader_shows_what_it_wrote(tmp_path):
    """What a module writes to file descriptor 2 while it fails to import is
    not lost: it comes back on stderr with the exception."""
    (tmp_path / "tensorflow").mkdir()
    (tmp_path / "tensorflow" / "__init__.py").write_text(
        "import os\nos.write(2, b'loud C++ log line\\n')\nraise ImportError('broken build')\n")
    (tmp_path / "ok").mkdir()
    code = ("import sys\nsys.path.insert(0, %r)\nfrom tfsem.cli import quiet_tensorflow\n"
            "quiet_tensorflow()\ntry:\n    import tensorflow\nexcept ImportError as e:\n"
            "    print('caught', e)\n" % str(tmp_path))
    env = dict(os.environ)
    env.pop("TFSEM_VERBOSE", None)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=env)
    assert "caught broken build" in r.stdout
    assert "loud C++ log line" in r.stderr
    quiet = code.replace("raise", "pass")
    (tmp_path / "tensorflow" / "__init__.py").write_text(
        "import os\nos.write(2, b'loud C++ log line\\n')\n")
    r = subprocess.run([sys.executable, "-c", quiet], capture_output=True, text=True, timeout=60,
                       env=env)
    assert r.returncode == 0 and r.stderr == "", r.stderr


@pytest.mark.parametrize("command", ["check", "grappler", "run"])
def test_the_commands_that_run_tensorflow_take_verbose(command):
    from tfsem.cli import build_parser
    words = {"check": ["a.json", "b.json"], "grappler": ["g.pbtxt"],
             "run": ["p.json", "--backend", "tensorflow"]}[command]
    args = build_parser(command).parse_args([command, *words, "--verbose"])
    assert args.verbose is True
