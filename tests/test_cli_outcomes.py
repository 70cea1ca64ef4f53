"""`tfsem outcomes` as a user runs it: a subprocess, its output and exit status
(bad input is read by `tfsem.cli.main` in this process, one case in a
subprocess too)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from test_campaigns_fuzz import tfsem_here
from tfsem.generators import families as F
from tfsem.oracle.jsonio import save_program

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def tfsem(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tfsem", *args], capture_output=True, text=True,
                          timeout=120)


def test_examples_folder_matches_the_families():
    # the README's examples are the seed's programs, written by the families
    for name, (p, _, _) in {"first_example.json": F.first_example(True),
                            "first_example_no_control.json": F.first_example(False),
                            "figure1_concat.json": F.figure1(2, "Concat"),
                            "load_store.json": F.load_store()}.items():
        from tfsem.oracle.jsonio import load_program
        assert load_program(EXAMPLES / name) == p


def test_text_output_lists_each_outcome_with_a_schedule():
    r = tfsem("outcomes", str(EXAMPLES / "first_example_no_control.json"), "--feed", "B=2", "--init", "x=1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("2 outcomes")
    assert "out = 2, x := 2" in r.stdout and "out = 1, x := 2" in r.stdout
    assert r.stdout.count("schedule:") == 2


def test_json_output_matches_the_spec():
    r = tfsem("outcomes", str(EXAMPLES / "figure1_concat.json"), "--feed", "B=[100]",
              "--feed", "C=[1, 10]", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["count"] == 2
    assert {tuple(o["outputs"]["out"]) for o in data["outcomes"]} == {(100, 1, 10), (100, 10, 1)}
    for o in data["outcomes"]:
        assert set(o) == {"outputs", "state", "schedule"}
        assert o["state"]["x"] == o["outputs"]["out"]
        assert len(o["schedule"]) == 11
    assert {"states", "seconds"} <= set(data["stats"])


def test_limit_lists_fewer_but_counts_all(tmp_path):
    p, feeds, init = F.racy_pairs(20)
    path = tmp_path / "racy.json"
    save_program(p, path)
    args = ["outcomes", str(path), "--json", "--limit", "3"]
    args += [f"--feed=b{i}={i + 100}" for i in range(20)] + [f"--init=x{i}={i}" for i in range(20)]
    data = json.loads(tfsem(*args).stdout)
    assert data["count"] == 2 ** 20
    assert len(data["outcomes"]) == 3


def test_observe_outputs_and_decomposed(tmp_path):
    p, _, _ = F.increments(2)
    path = tmp_path / "inc.json"
    save_program(p, path)
    atomic = json.loads(tfsem("outcomes", str(path), "--init", "x=0", "--json").stdout)
    decomposed = json.loads(tfsem("outcomes", str(path), "--init", "x=0", "--json",
                                  "--semantics", "decomposed").stdout)
    assert sorted(o["state"]["x"] for o in atomic["outcomes"]) == [2]
    assert sorted(o["state"]["x"] for o in decomposed["outcomes"]) == [1, 2]
    assert any("inc0@read" in o["schedule"] for o in decomposed["outcomes"])
    outputs_only = json.loads(tfsem("outcomes", str(path), "--init", "x=0", "--json",
                                    "--observe", "outputs").stdout)
    assert outputs_only["count"] == 1 and "state" not in outputs_only["outcomes"][0]


def test_uninitialized_variable_prints_as_an_error_value():
    r = tfsem("outcomes", str(EXAMPLES / "first_example_no_control.json"), "--feed", "B=2", "--json")
    outs = [o["outputs"]["out"] for o in json.loads(r.stdout)["outcomes"]]
    assert {"error": "uninitialized"} in outs and 2 in outs


MALFORMED = [
    ("{not json", "not valid JSON"),
    ('{"nodes": [{"name": "a", "op": "Foo"}]}', "unknown operation 'Foo' [unknown-op]"),
    ('{"nodes": [{"name": "a", "op": "Neg", "inputs": ["b"]}, {"name": "b", "op": "Neg", "inputs": ["a"]}]}',
     "[cycle]"),
    ('{"nodes": [{"name": "a", "op": "Neg", "inputs": ["zz"]}]}', "no node named 'zz' [unknown-node]"),
    ('{"nodes": [{"name": "a", "op": "Const", "value": [1, [2]]}]}', "[bad-value]"),
    ('{"nodes": "many"}', "nodes is a list"),
    ('{"nodes": [{"name": "c", "op": "Const", "value": ' + "9" * 5000 + '}]}', "not valid JSON"),
    ("[" * 100000 + "]" * 100000, "nested too deeply to read [too-deep]"),
]


@pytest.mark.parametrize("content, needle", MALFORMED)
def test_malformed_programs_exit_2_without_traceback(content, needle, tmp_path, capsys):
    # in this process (tfsem.cli.main): an exception escaping main fails the
    # test as a traceback would; the process boundary is the other tests'
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    r = tfsem_here(capsys, "outcomes", str(bad))
    assert r.returncode == 2
    assert needle in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


def test_bad_arguments_exit_2(capsys):
    good = str(EXAMPLES / "first_example.json")
    bad = (["--feed", "B"], ["--feed", "B=[1,"], ["--feed", "Q=1", "--feed", "B=1"],
           ["--init", "y=1", "--feed", "B=1"], ["--semantics", "weird"], [])
    for args in bad:
        r = tfsem_here(capsys, "outcomes", good, *args)
        assert r.returncode == 2, args
        assert "Traceback" not in r.stderr
    missing = tfsem_here(capsys, "outcomes", "/nonexistent/file.json")
    assert missing.returncode == 2 and "No such file" in missing.stderr
    # and once through a process of its own: exit 2, no traceback
    r = tfsem("outcomes", good, "--feed", "B")
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr


def test_budget_exceeded_is_unknown_exit_3(tmp_path):
    p, _, _ = F.blind_writers(6)
    path = tmp_path / "bw.json"
    save_program(p, path)
    feeds = [f"--feed=b{i}={i}" for i in range(6)]
    r = tfsem("outcomes", str(path), *feeds, "--max-states", "5", "--json")
    assert r.returncode == 3
    data = json.loads(r.stdout)
    assert data["verdict"] == "unknown" and "budget exceeded: states" in data["reason"]
