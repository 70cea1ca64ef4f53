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

import copy
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
from tfsem.graphdef.proto import encode, format_text, parse

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

def test_a_graph_of_too_many_nodes_is_refused_before_it_is_built(tmp_path, monkeypatch):
    g = fanout_graph(2, 3)  # 2 own nodes, 3 + 2 in functions
    for form in (g, encode("GraphDef", g)):
        monkeypatch.setattr(gfn, "MAX_GRAPH_NODES", 7)
        graph = form if isinstance(form, dict) else parse("GraphDef", form)
        assert flatten(graph)
        monkeypatch.setattr(gfn, "MAX_GRAPH_NODES", 6)
        with pytest.raises(gfn.GraphFormatError, match=r"7 nodes \(its functions' included\): tfsem "
                                                       r"imports graphs of at most 6 nodes"):
            flatten(graph)


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
    loop = {"node": base + [{"name": "m", "op": "Merge", "input": ["x", "n"],
                             "attr": {"T": I64, "N": {"i": 2}}},
                            {"name": "n", "op": "NextIteration", "input": ["m"],
                             "attr": {"T": I64}}]}
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


# ---------------------------------------------------------------- the fuzzer of GraphDefs
#
# Inputs are generated up front (seeded), written under tmp_path, and run by
# one worker process that imports tfsem once and forks a child per input: the
# child runs tfsem.cli.main(argv) with its output in files and an address-
# space limit; the worker waits for it with os.wait4, which gives that
# child's own CPU time and peak memory.

FUZZ_INPUTS = 720 if NIGHTLY else 36
#: every input is small: at most this many bytes (a class bound, whatever the machine)
MAX_INPUT_BYTES = 64 << 10
#: what one run may add to the worker's resident memory (a 2 KB input must not take 1 GB)
MAX_RSS_GROWTH_MB = 400
#: CPU seconds a run may take: the budget (`check --timeout`) or, for `import`,
#: this class bound; plus the margin
IMPORT_CPU_S, CHECK_TIMEOUT_S, MARGIN_S = 5.0, 2.0, 4.0
#: a run still going after this many seconds of wall time is killed (and fails the test)
KILL_AFTER_S = 90.0

_WORKER = r"""
import json, os, resource, sys, time, traceback
import tfsem.cli, tfsem.graphdef.importer, tfsem.graphdef.proto.runtime, tfsem.checking  # noqa
from tfsem.cli import main

def vm_size_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1])
    return 0

def rss_kb():  # resident now: what a child has at the fork
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024

for line in sys.stdin:
    job = json.loads(line)
    base_rss = rss_kb()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            out = os.open(job["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            err = os.open(job["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(out, 1); os.dup2(err, 2)
            limit = (vm_size_kb() << 10) + (2 << 30)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            sys.stdout = open(1, "w", closefd=False); sys.stderr = open(2, "w", closefd=False)
            try:
                if "exec" in job:  # the test of the measurement itself
                    exec(job["exec"])
                    rc = 0
                else:
                    rc = main(job["argv"])
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else 2
            sys.stdout.flush(); sys.stderr.flush()
            os._exit(rc)
        except BaseException:
            traceback.print_exc(); sys.stderr.flush()
            os._exit(99)
    killed = False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - t0 > job["kill_after"]:
            os.kill(pid, 9); killed = True
            done, status, usage = os.wait4(pid, 0)
            break
        time.sleep(0.005)
    print(json.dumps({"rc": os.waitstatus_to_exitcode(status), "killed": killed,
                      "wall": time.monotonic() - t0, "cpu": usage.ru_utime + usage.ru_stime,
                      "rss_growth_mb": max(0, usage.ru_maxrss - base_rss) / 1024}), flush=True)
"""


def _corpus_graphs() -> list[dict]:
    from tfsem.graphdef.proto import parse_text
    return [parse_text("GraphDef", p.read_text()) for p in sorted(CORPUS.glob("*.pbtxt"))
            if p.stat().st_size < 30000]


def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        r = rng.random()
        if not b:
            break
        i = rng.randrange(len(b))
        if r < 0.35:
            b[i] ^= 1 << rng.randrange(8)
        elif r < 0.5:
            b[i] = rng.choice([0x00, 0x0a, 0x12, 0x80, 0xff, 0x08, 0x3a])
        elif r < 0.6:
            del b[i:]
        elif r < 0.75:
            j = rng.randrange(len(b))
            b[i:i] = b[min(i, j):max(i, j)][:4096]   # duplicate a region
        elif r < 0.85:
            b[i:i] = bytes([rng.choice([0x0a, 0x2a, 0x12]), 0xff, 0xff, 0xff, 0xff, 0x0f])
        else:
            del b[i:i + rng.randint(1, 40)]
    return bytes(b[:MAX_INPUT_BYTES])


def _mutate_text(rng: random.Random, text: str) -> str:
    t = text
    for _ in range(rng.choice([1, 1, 2])):
        if not t:
            break
        i = rng.randrange(len(t))
        r = rng.random()
        if r < 0.3:
            t = t[:i] + rng.choice('{}<>[]:;,"\'\\#-.0123456789xe_ \n\x00\u0661') + t[i + 1:]
        elif r < 0.45:
            t = t[:i]
        elif r < 0.6:
            t = t[:i] + "node {" * rng.randint(50, 300) + t[i:]
        elif r < 0.75:
            t = t[:i] + rng.choice(['input: "x:' + "9" * 5000 + '"', 'dim { size: -7 }',
                                    'dim { size: 9223372036854775807 }', 'int64_val: 99999999999999999999',
                                    'type: DT_FOO', 'type: 4242', 's: "\\xff\\xfe"', 'f: nan',
                                    'list { type: [' + ", ".join(["DT_FLOAT"] * 500) + '] }',
                                    'unknown_field: 1', 'shape { unknown_rank: true }']) + t[i:]
        else:
            j = rng.randrange(len(t))
            t = t[:i] + t[min(i, j):max(i, j)][:3000] + t[i:]
    return t[:MAX_INPUT_BYTES]


HOSTILE_REFS = ["x:" + "9" * 5000, "x:99999999999", "x:-1", "x:\u0661", "^", "", ":", "x::1", "x:0:0",
                "^x:1", "nope", "x" * 20000, "a\x00b", "x:2147483648", "x:1", "^nope", "é/ü:0"]


def _gen_functions(rng: random.Random) -> dict:
    g = fanout_graph(rng.choice([1, 2, 3, 5, 8, 12, 20, 31, 33, 40]), rng.randint(1, 4),
                     rng.choice([None, None, None, 0, rng.randint(0, 3)]))
    fns = g["library"]["function"]
    r = rng.random() * 1.4
    if r < 0.15:
        fns.append(dict(fns[0], node_def=[]))                       # a second, different f0
    elif r < 0.3:
        g["node"][1]["attr"]["f"]["func"]["name"] = "missing"
    elif r < 0.4:
        g["node"][1]["input"] = ["x", "x"]                            # arity
    elif r < 0.5:
        fns[-1]["ret"] = {}
    elif r < 0.6:
        fns[0]["node_def"].append({"name": "bad", "op": "Identity", "input": [rng.choice(HOSTILE_REFS)]})
    elif r < 0.7:
        g["node"].extend(call(f"call{k}", "f0", ["x"]) for k in range(rng.randint(2, 60)))
    return g


def _gen_shapes(rng: random.Random) -> dict:
    dims = lambda: [{"size": rng.choice([0, 1, 3, -1, 2 ** 31, 2 ** 40, 2 ** 62, 2 ** 63 - 1])}  # noqa: E731
                    for _ in range(rng.choice([0, 1, 2, 3, 8, 200]))]
    shape = rng.choice([{"dim": dims()}, {"unknown_rank": True}, {}, {}, {"dim": [{"size": 3}]},
                        {"dim": [{"size": 2}, {"size": -1}]}])
    dtype = rng.choice(["DT_INT64", "DT_FLOAT", "DT_INT32", "DT_HALF", "DT_STRING", "DT_RESOURCE", 77])
    tensor = {"dtype": dtype, "tensor_shape": rng.choice([shape, {"dim": [{"size": rng.choice([1, 4, 1000, 65536])}]}])}
    r = rng.random()
    if r < 0.3:
        tensor["tensor_content"] = bytes(rng.choice([0, 3, 8, 64, 8000]))
    elif r < 0.6:
        tensor[rng.choice(["int64_val", "int_val", "float_val", "half_val", "bool_val"])] = \
            [rng.choice([0, 1, -1, 2 ** 31, 65535])] * rng.choice([1, 2, 5, 70000 // 8])
    nodes = [{"name": "x", "op": "Placeholder", "attr": {"dtype": {"type": rng.choice(["DT_INT64", "DT_FLOAT", "DT_BOOL"])},
                                                        "shape": {"shape": shape}}},
             {"name": "c", "op": "Const", "attr": {"dtype": {"type": "DT_INT64"}, "value": {"tensor": tensor}}},
             {"name": "v", "op": "VarHandleOp", "attr": {"dtype": {"type": "DT_INT64"}, "shape": {"shape": shape},
                                                         "shared_name": {"s": b"v"}}},
             {"name": "r", "op": "ReadVariableOp", "input": ["v"], "attr": {"dtype": {"type": "DT_INT64"}}},
             {"name": "s", "op": rng.choice(["AddV2", "Reshape", "ConcatV2", "MatMul", "Sum", "Tile"]),
              "input": rng.sample(["x", "c", "r", "c:0", "x:1"], rng.randint(1, 3)), "attr": {"T": {"type": "DT_INT64"}}}]
    return {"node": nodes}


def _gen_ports_and_names(rng: random.Random) -> dict:
    names = ["y", "a/b", "é", "n" * rng.choice([1, 300, 30000]), "a:1", "^z", "", "x"]
    nodes = [placeholder()]
    for k in range(rng.randint(1, 8)):
        nodes.append({"name": rng.choice(names) if rng.random() < 0.4 else f"n{k}",
                      "op": rng.choice(["Identity", "AddV2", "NoOp", "IdentityN"]),
                      "input": [rng.choice(HOSTILE_REFS + ["x", f"n{max(k - 1, 0)}"]) for _ in range(rng.randint(0, 3))],
                      "attr": {"T": I64}})
    return {"node": nodes}


def _gen_attrs(rng: random.Random) -> dict:
    g = copy.deepcopy(rng.choice(_CORPUS))
    values = [{"type": 4242}, {"type": "DT_STRING"}, {"list": {"type": ["DT_FLOAT"] * 300}},
              {"shape": {"unknown_rank": True}}, {"shape": {"dim": [{"size": -5}]}}, {"i": -(2 ** 63)},
              {"f": float("nan")}, {"b": True}, {"s": b"\xff"}, {"func": {"name": "nope"}},
              {"placeholder": "T"}, {}, {"tensor": {"dtype": "DT_INT64", "tensor_shape": {"dim": [{"size": 2 ** 40}]}}},
              {"list": {}}, {"list": {"i": [1] * 1000}}]
    for _ in range(rng.randint(1, 5)):
        nd = rng.choice(g["node"])
        attr = nd.setdefault("attr", {})
        key = rng.choice(list(attr) + ["T", "dtype", "shape", "value", "N", "Tidx", "axis", "f"])
        attr[key] = rng.choice(values)
    return g


_CORPUS: list[dict] = []


def _saved_model(rng: random.Random, folder: Path) -> Path:
    from tfsem.graphdef.proto import encode as enc
    folder.mkdir()
    target = folder / "saved_model.pb"
    graph = rng.choice(_CORPUS) if _CORPUS else {"node": [placeholder()]}
    r = rng.random()
    if r < 0.12:
        target.symlink_to("/dev/zero")
    elif r < 0.22:
        os.mkfifo(target)
    elif r < 0.3:
        target.mkdir()
    elif r < 0.38:
        target.symlink_to(folder / "nowhere")
    elif r < 0.46:
        (folder / "a").symlink_to(folder / "b")
        (folder / "b").symlink_to(folder / "a")
        target.symlink_to(folder / "a")
    elif r < 0.54:
        target.write_bytes(enc("GraphDef", graph))                    # the wrong message
    elif r < 0.56:
        target.symlink_to("/proc/self/mem")
    elif r < 0.62:
        target.write_bytes(enc("SavedModel", {"saved_model_schema_version": 1}))  # no meta graph
    elif r < 0.7:
        (folder / "saved_model.pbtxt").write_text(_mutate_text(rng, "meta_graphs { graph_def { } }"))
        return folder
    elif r < 0.78:  # a .pb that links to a good graph, to a folder, or to itself
        link = folder / "link.pb"
        choice = rng.randrange(3)
        if choice == 0:
            (folder / "real").write_bytes(enc("GraphDef", graph))
            link.symlink_to(folder / "real")
        elif choice == 1:
            link.symlink_to(folder)
        else:
            link.symlink_to(link)
        return link
    else:
        outs = rng.choice([{"out": {"name": rng.choice(["nope:0", "x:" + "7" * 5000, ""])}},
                           {"out": {"coo_sparse": {"values_tensor_name": "x"}}}, {}])
        sigs = {rng.choice(["serving_default", "other", ""]): {"inputs": {"x": {"name": "x:0"}}, "outputs": outs}
                for _ in range(rng.randint(0, 3))}
        data = enc("SavedModel", {"meta_graphs": [{"graph_def": graph, "signature_def": sigs}]
                                   * rng.randint(1, 2)})
        target.write_bytes(_mutate_bytes(rng, data) if rng.random() < 0.5 else data)
    return folder


def _inputs(tmp: Path, n: int, seed: int) -> list[tuple[str, list[str]]]:
    """(class, argv) of `n` hostile inputs."""
    rng = random.Random(seed)
    _CORPUS[:] = _corpus_graphs()
    classes = ["binary", "text", "functions", "shapes", "ports-names", "attrs", "saved-model"]
    out = []
    for k in range(n):
        cls = classes[k % len(classes)]
        suffix = ".pb" if rng.random() < 0.6 else ".pbtxt"
        path = tmp / f"in{k}{suffix}"
        if cls == "binary":
            path = path.with_suffix(".pb")
            path.write_bytes(_mutate_bytes(rng, encode("GraphDef", rng.choice(_CORPUS))))
        elif cls == "text":
            path = path.with_suffix(".pbtxt")
            path.write_text(_mutate_text(rng, format_text("GraphDef", rng.choice(_CORPUS))))
        elif cls == "saved-model":
            path = _saved_model(rng, tmp / f"sm{k}")
        else:
            gen = {"functions": _gen_functions, "shapes": _gen_shapes, "ports-names": _gen_ports_and_names,
                   "attrs": _gen_attrs}[cls]
            from tfsem.graphdef.proto import ProtoError
            try:
                write(path, gen(rng))
            except ProtoError:  # the generator made a dict the encoder refuses: mutate bytes instead
                path = path.with_suffix(".pb")
                path.write_bytes(_mutate_bytes(rng, encode("GraphDef", rng.choice(_CORPUS))))
        fetch = []
        if rng.random() < 0.3:
            fetch = ["--fetch", rng.choice(HOSTILE_REFS[:6] + ["call", "x", "loss", "value"])]
        if rng.random() < 0.25:
            argv = ["check", str(path), str(path), "--timeout", str(CHECK_TIMEOUT_S), *fetch]
        else:
            argv = ["import", str(path), "-o", str(tmp / f"out{k}.json"), *fetch]
        out.append((cls, argv))
    return out


def _run_all(tmp: Path, jobs: list[tuple], kill_after: float = KILL_AFTER_S) -> list[dict]:
    """Run each job, (class, argv or Python source for the measurement's own
    test[, wall seconds before it is killed]), in a child of one worker;
    their results in order."""
    proc = subprocess.Popen([sys.executable, "-c", _WORKER], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=tmp)
    results = []
    try:
        for k, (_cls, argv, *limit) in enumerate(jobs):
            job = {"argv": argv} if isinstance(argv, list) else {"exec": argv}
            proc.stdin.write(json.dumps({**job, "out": str(tmp / f"stdout{k}"),
                                         "err": str(tmp / f"stderr{k}"),
                                         "kill_after": limit[0] if limit else kill_after}) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            assert line, "the fuzz worker died"
            r = json.loads(line)
            r["stderr"] = (tmp / f"stderr{k}").read_text(errors="replace")
            r["stdout"] = (tmp / f"stdout{k}").read_text(errors="replace")
            results.append(r)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    return results


def test_fuzz_graphdefs_exit_cleanly_within_time_and_memory(tmp_path):
    jobs = _inputs(tmp_path, FUZZ_INPUTS, seed=20261127)
    results = _run_all(tmp_path, jobs)
    table: dict[str, dict] = {}
    for (cls, argv), r in zip(jobs, results):
        what = f"{cls}: {' '.join(a[:80] for a in argv)}"
        assert not r["killed"], (what, r)
        assert "Traceback" not in r["stderr"] and "Traceback" not in r["stdout"], (what, r["stderr"][-3000:])
        allowed = (0, 2, 3) if argv[0] == "check" else (0, 2)
        if argv[0] == "check":
            allowed = (0, 1, 2, 3)  # a graph against itself is sound; 1 only for `invalid`
        assert r["rc"] in allowed, (what, r["rc"], r["stderr"][-2000:])
        if r["rc"] == 2:
            assert re.search(r"^tfsem \w+: .+", r["stderr"], re.M), (what, r["stderr"][-2000:])
        budget = CHECK_TIMEOUT_S if argv[0] == "check" else IMPORT_CPU_S
        assert r["cpu"] <= budget + MARGIN_S, (what, r["cpu"])
        assert r["rss_growth_mb"] <= MAX_RSS_GROWTH_MB, (what, r["rss_growth_mb"])
        row = table.setdefault(cls, {"runs": 0, "rc": {}, "max_cpu": 0.0, "max_mb": 0.0})
        row["runs"] += 1
        row["rc"][r["rc"]] = row["rc"].get(r["rc"], 0) + 1
        row["max_cpu"] = max(row["max_cpu"], r["cpu"])
        row["max_mb"] = max(row["max_mb"], r["rss_growth_mb"])
    print("\nclass         runs  exit statuses          max CPU s  max MB")
    for cls, row in table.items():
        print(f"{cls:13} {row['runs']:>4}  {json.dumps(dict(sorted(row['rc'].items()))):22} "
              f"{row['max_cpu']:>9.2f}  {row['max_mb']:>6.0f}")
    assert len(table) == 7


def test_the_fuzzers_measurements_see_time_and_memory(tmp_path):
    """The worker's numbers are the child's own: 200 MB allocated and a
    second of CPU show up; a run past its wall limit is killed."""
    r = _run_all(tmp_path, [("m", "x = bytearray(200 << 20); x[::4096] = b'1' * len(x[::4096])"),
                            ("t", "import time\nt = time.process_time()\nwhile time.process_time() - t < 1: pass"),
                            ("ok", ["import", str(CORPUS / "counter.pbtxt"), "-o", str(tmp_path / "c.json")]),
                            ("hang", "import time\ntime.sleep(60)", 0.5)])
    assert r[0]["rc"] == 0 and 150 <= r[0]["rss_growth_mb"] <= 400, r[0]  # 200 MiB (the fork shares some)
    assert r[1]["cpu"] >= 0.9 and r[1]["rss_growth_mb"] < 50, r[1]
    assert r[2]["rc"] == 0 and "counter.pbtxt" in r[2]["stdout"] + r[2]["stderr"] and not r[2]["killed"]
    assert r[3]["killed"] and r[3]["wall"] < 10


def test_outcomes_budget_covers_reading_and_importing_the_graph(capsys):
    g = str(CORPUS / "keras_mlp_adam.pbtxt")
    rc, out, err = run_cli(capsys, ["outcomes", g, "--fetch", "loss", "--timeout", "0.001"])
    assert rc == 3 and out.startswith("unknown: the time budget ran out while "), (out, err)
    rc, out, err = run_cli(capsys, ["outcomes", str(CORPUS / "counter.pbtxt"), "--init", "counter=1",
                                    "--timeout", "30"])
    assert rc == 0 and "1 outcome" in out, (out, err)


# ---------------------------------------------------------------- what is written

def test_a_small_constant_of_a_huge_shape_is_refused_before_it_is_written(tmp_path):
    """One float repeated over 4096 x 4096 elements is a GraphDef of about 80
    bytes; written as a JSON program it was 184 MB, 29 s and 1.7 GB.  The
    cost of writing is counted before anything is converted: exit 2 at once,
    naming the node, within a small memory bound."""
    splat = {"dtype": "DT_FLOAT", "float_val": [1.5],
             "tensor_shape": {"dim": [{"size": 4096}, {"size": 4096}]}}
    graph = {"node": [{"name": "c", "op": "Const",
                       "attr": {"dtype": {"type": "DT_FLOAT"}, "value": {"tensor": splat}}}]}
    path = write(tmp_path / "splat.pb", graph)
    assert path.stat().st_size < 100
    # the command in a child that reports its own peak resident memory (KiB):
    # VmHWM of its own address space (ru_maxrss would count the forked
    # parent's pages too, before the exec)
    child = ("import sys\nfrom tfsem.cli import main\nrc = main(sys.argv[1:])\n"
             "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
             "print('MAXRSS', hwm[0], file=sys.stderr)\n"
             "sys.exit(rc)\n")
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", child, "import", str(path), "--fetch", "c",
                        "-o", str(tmp_path / "out.json")], capture_output=True, text=True, timeout=120)
    wall = time.monotonic() - t0
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    assert "node 'c'" in r.stderr and "too-large-to-write" in r.stderr, r.stderr
    assert not (tmp_path / "out.json").exists()
    # the 64 MB array itself and the interpreter, not gigabytes of Python floats
    maxrss_kib = int(re.search(r"MAXRSS (\d+)", r.stderr).group(1))
    assert maxrss_kib < 700 * 1024, maxrss_kib
    assert wall < 60, wall
