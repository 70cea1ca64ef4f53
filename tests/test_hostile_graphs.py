"""Hostile TensorFlow graphs (issue 29): files that are not files, sizes
checked before reading, inlining that would grow without bound, ports of
5,000 digits, duplicate functions, cycles nothing fetches, a `check` budget
that covers import -- and a fuzzer of GraphDefs (binary and text, functions
with recursion and fan-out, shapes, ports, names, attrs, SavedModel folders
and links) asserting exit 0/2 (3 under a budget), no traceback, and each run
within its time and memory bound per input class.

The fuzzer runs each input in a child process (`tfsem import`, or `tfsem
check --timeout`), so that its time and peak memory (resource.getrusage of
the children) are its own.  Seeded; 36 inputs by default, 20 times more under
the nightly profile (TFSEM_HYPOTHESIS_PROFILE=nightly).
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import settings

from tfsem.cli import main
from tfsem.graphdef import functions as gfn
from tfsem.graphdef import import_path
from tfsem.graphdef.functions import flatten
from tfsem.graphdef.proto import encode, format_text

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "tensorflow"
NIGHTLY = settings.get_current_profile_name() == "nightly"

I64 = {"type": "DT_INT64"}


def placeholder(name: str = "x") -> dict:
    return {"name": name, "op": "Placeholder", "attr": {"dtype": I64, "shape": {"shape": {}}}}


def call(name: str, f: str, inputs: list[str]) -> dict:
    return {"name": name, "op": "PartitionedCall", "input": inputs,
            "attr": {"f": {"func": {"name": f}}, "Tin": {"list": {"type": ["DT_INT64"]}},
                     "Tout": {"list": {"type": ["DT_INT64"]}}}}


def fanout_graph(levels: int, fanout: int = 2, recursive_at: int | None = None) -> dict:
    """f0 calls f1 `fanout` times (in a chain), ..., the last adds 1; the
    graph calls f0 once.  With `recursive_at`, the last level calls f_k."""
    fns = []
    for k in range(levels):
        body = []
        if k == levels - 1 and recursive_at is None:
            body.append({"name": "one", "op": "Const", "attr": {
                "dtype": I64, "value": {"tensor": {"dtype": "DT_INT64", "int64_val": [1]}}}})
            body.append({"name": "add", "op": "AddV2", "input": ["x", "one:output:0"],
                         "attr": {"T": I64}})
            ret = "add:z:0"
        else:
            prev = "x"
            callee = f"f{k + 1}" if k < levels - 1 else f"f{recursive_at}"
            for j in range(fanout):
                body.append(call(f"c{j}", callee, [prev]))
                prev = f"c{j}:output:0"
            ret = prev
        fns.append({"signature": {"name": f"f{k}", "input_arg": [{"name": "x", "type": "DT_INT64"}],
                                  "output_arg": [{"name": "y", "type": "DT_INT64"}]},
                    "node_def": body, "ret": {"y": ret}})
    return {"node": [placeholder(), call("call", "f0", ["x"])], "library": {"function": fns}}


def run_cli(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return rc, out, err


def write(path: Path, graph: dict) -> Path:
    if path.suffix == ".pb":
        path.write_bytes(encode("GraphDef", graph))
    else:
        path.write_text(format_text("GraphDef", graph))
    return path


# ---------------------------------------------------------------- files

def test_device_link_fifo_and_sparse_file_are_refused_before_reading(tmp_path, capsys):
    zero = tmp_path / "zero.pb"
    zero.symlink_to("/dev/zero")
    fifo = tmp_path / "fifo.pb"
    os.mkfifo(fifo)  # opening it would block: it must not be opened
    sparse = tmp_path / "sparse.pb"
    with open(sparse, "wb") as f:
        f.truncate(2100 << 20)  # 2.1 GB of holes: refused by its size, not read
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "saved_model.pb").symlink_to("/dev/zero")
    expected = {zero: r"a character device \(a symbolic link to /dev/zero\)",
                fifo: r"a FIFO \(named pipe\)",
                sparse: r"2202009600 bytes: tfsem reads a binary graph file of at most",
                folder: r"saved_model\.pb: a character device"}
    for path, message in expected.items():
        t = time.monotonic()
        rc, _, err = run_cli(capsys, ["import", str(path), "-o", str(tmp_path / "o.json")])
        assert time.monotonic() - t < 5
        assert rc == 2 and re.search(message, err), err
        assert "Traceback" not in err


def test_a_file_over_the_cap_is_refused_and_one_under_it_read(tmp_path, capsys, monkeypatch):
    import tfsem.graphdef as g
    path = write(tmp_path / "g.pb", {"node": [placeholder(), {"name": "i", "op": "Identity",
                                                              "input": ["x"], "attr": {"T": I64}}]})
    monkeypatch.setattr(g, "MAX_GRAPH_BYTES", path.stat().st_size)
    assert import_path(path).program.outputs
    monkeypatch.setattr(g, "MAX_GRAPH_BYTES", path.stat().st_size - 1)
    rc, _, err = run_cli(capsys, ["import", str(path), "-o", str(tmp_path / "o.json")])
    assert rc == 2 and "[too-large]" in err and f"{path.stat().st_size} bytes" in err


# ---------------------------------------------------------------- inlining

def test_exponential_inlining_is_refused_at_once(tmp_path, capsys):
    """30 levels, each calling the next twice: 2^30 calls if inlined."""
    path = write(tmp_path / "expo.pb", fanout_graph(30, 2))
    assert path.stat().st_size < 8000
    for argv in (["import", str(path), "-o", str(tmp_path / "o.json")],
                 ["check", str(path), str(path), "--timeout", "60"]):
        t = time.monotonic()
        rc, _, err = run_cli(capsys, argv)
        assert time.monotonic() - t < 5, argv
        assert rc == 2 and "would make more than 100000 nodes" in err and "[too-large]" in err


def _inlined(graph: dict) -> int:
    return len(flatten(graph)) - len(graph["node"])


@pytest.mark.parametrize("levels, fanout", [(3, 2), (4, 3), (2, 5)])
def test_the_inlining_cap_counts_exactly_the_nodes_inlining_adds(monkeypatch, levels, fanout):
    g = fanout_graph(levels, fanout)
    added = _inlined(g)
    # a call of a level below the last adds its entry node and `fanout` calls,
    # one of the last its entry node, a Const and an AddV2
    assert added == sum(fanout ** k * (1 + fanout) for k in range(levels - 1)) \
        + fanout ** (levels - 1) * 3
    monkeypatch.setattr(gfn, "MAX_INLINED_NODES", added)
    assert _inlined(g) == added
    monkeypatch.setattr(gfn, "MAX_INLINED_NODES", added - 1)
    with pytest.raises(gfn.GraphFormatError, match=r"would make more than \d+ nodes"):
        flatten(g)


def test_recursive_function_is_refused_by_name_at_once():
    for at in (0, 2):
        g = fanout_graph(3, 2, recursive_at=at)
        t = time.monotonic()
        with pytest.raises(gfn.GraphFormatError, match=rf"the function 'f{at}' calls itself "
                                                       rf"\('f0' -> .*'f{at}'\)"):
            flatten(g)
        assert time.monotonic() - t < 1


# ---------------------------------------------------------------- names, functions, cycles

LONG_PORT = "9" * 5000


@pytest.mark.parametrize("command", ["import", "check", "export", "outcomes"])
def test_a_port_of_5000_digits_is_a_clear_error(tmp_path, capsys, command):
    path = write(tmp_path / "port.pb", {"node": [placeholder(), {
        "name": "i", "op": "Identity", "input": [f"x:{LONG_PORT}"], "attr": {"T": I64}}]})
    argv = {"import": ["import", str(path), "-o", str(tmp_path / "o.json")],
            "check": ["check", str(path), str(path)],
            "export": ["export", str(path)],
            "outcomes": ["outcomes", str(path)]}[command]
    rc, _, err = run_cli(capsys, argv)
    assert rc == 2 and "a port of 5000 digits (a port is a 32-bit integer) [bad-port]" in err
    assert "Traceback" not in err and len(err) < 2000
    rc, _, err = run_cli(capsys, ["import", str(path), "--fetch", f"x:{LONG_PORT}",
                                  "-o", str(tmp_path / "o.json")])
    assert rc == 2 and "[bad-port]" in err


def test_a_non_ascii_digit_is_part_of_the_name_as_in_tensorflow():
    from tfsem.graphdef.functions import split_ref
    assert split_ref("a:\u0661") == ("a:\u0661", 0, False)
    assert split_ref("a:12") == ("a", 12, False)


def test_two_different_functions_of_one_name_are_refused_an_identical_copy_is_not(tmp_path):
    g = fanout_graph(2, 1)
    f = g["library"]["function"][1]
    same = dict(g, library={"function": g["library"]["function"] + [f]})
    assert import_path(write(tmp_path / "same.pb", same), ["call"]).program.outputs
    other = dict(f, node_def=f["node_def"][:1] + [dict(f["node_def"][1], op="Sub")])
    bad = dict(g, library={"function": g["library"]["function"] + [other]})
    with pytest.raises(Exception, match=r"function 'f1': two different functions of the graph's "
                                        r"library have this name .*\[duplicate-function\]"):
        import_path(write(tmp_path / "bad.pb", bad), ["call"])


def test_a_cycle_nothing_fetches_is_refused_unless_through_next_iteration(tmp_path):
    ident = lambda n, i: {"name": n, "op": "Identity", "input": [i], "attr": {"T": I64}}  # noqa: E731
    base = [placeholder(), ident("out", "x")]
    cyc = {"node": base + [ident("a", "b"), ident("b", "^c"), ident("c", "a:0")]}
    with pytest.raises(Exception, match=r"3 node\(s\) are in a cycle or after one .*NextIteration"
                                        r".*\[cycle\]"):
        import_path(write(tmp_path / "cycle.pb", cyc), ["out"])
    loop = {"node": base + [{"name": "m", "op": "Merge", "input": ["x", "n"]},
                            {"name": "n", "op": "NextIteration", "input": ["m"]}]}
    assert import_path(write(tmp_path / "loop.pbtxt", loop), ["out"]).program.outputs


# ---------------------------------------------------------------- the check budget covers import

def test_check_budget_covers_reading_and_importing_the_graph(capsys):
    g = str(CORPUS / "keras_mlp_adam.pbtxt")
    rc, out, err = run_cli(capsys, ["check", g, g, "--fetch", "loss", "--timeout", "0.001", "--json"])
    data = json.loads(out)
    assert rc == 3 and data["verdict"] == "unknown", (out, err)
    assert re.match(r"the time budget ran out while (reading|parsing|decoding|importing|inlining)",
                    data["reason"]), data["reason"]
    assert "covers reading and importing the graphs" in data["reason"]
