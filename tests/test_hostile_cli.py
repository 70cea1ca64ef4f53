"""A command-line fuzzer (issue 18, deliverable 1): mutated programs, cases,
`--feed` values and numeric flags for `outcomes`, `check`, `rewrite`, `run`,
`generate`, `verify`, `fuzz` and `report`.

Every run must end with exit status 0-3 and no traceback; exit status 2 must
come with a message that names what is wrong (a violation line
`WHERE: MESSAGE [rule]`, or argparse's `argument --FLAG: ...`).  Runs are in
process (tfsem.cli.main), so an exception escaping a command fails the test
with its traceback.

Bounded and seeded: `derandomize=True`, 60 examples per test by default and
20 times more under the nightly profile (TFSEM_HYPOTHESIS_PROFILE=nightly);
every computation gets a small budget.  `verify` and `fuzz` get only flag
values that must be refused at parse time (a campaign per example would take
minutes); what they do with good input is tested in test_campaigns_fuzz.py
and test_hostile_passes.py.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
CASES = sorted((ROOT / "tests" / "cases").glob("*.json"))[:12]
NIGHTLY = settings.get_current_profile_name() == "nightly"
EXAMPLES_PER_TEST = 4000 if NIGHTLY else 200

#: counts of what was tried, per command (printed by the summary test, for docs/robustness.md)
TRIED: dict[str, int] = {}
#: exit statuses seen, per command
STATUSES: dict[str, dict[int, int]] = {}

VIOLATION_LINE = re.compile(r"^\s+.+: .+ \[[a-z-]+\]$", re.M)
FLAG_LINE = re.compile(r"error: argument [-\w/]+: ")

HOSTILE_TEXT = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1e39", "9" * 5000,
                str(2 ** 63), str(-(2 ** 63) - 1), "[" * 600 + "]" * 600, '"\\ud800"', '"\\udfff x"',
                "[]", "{}", "null", "true", '"<script>"', '"' + "a" * 10000 + '"', "[[1,2],[3]]",
                '{"dtype": ["float32"], "value": 1}', '{"dtype": {"a": 1}, "value": 1}',
                '{"dtype": "float32", "value": 1e39}', '{"dtype": "float32", "value": "nan"}',
                '{"error": ""}', '{"error": 3}', "-0.0", "0", "1", '"n"', '"n:99999999999999999999"',
                '"^$"', '"$"', '"^"', '"n:-1"']
HOSTILE_NUMBERS = ["nan", "NaN", "inf", "-inf", "1e400", "-1", "0", "-0", "1e300", "1e-400", "",
                   " ", "abc", "1_000", "\u0661\u0662", "0x10", str(2 ** 63), str(2 ** 64), "9" * 400,
                   "1.5", "5m", "2h", "1e9", "-5s", "infs", "nans"]


def run_cli(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        rc = main(argv)
    except SystemExit as exc:   # argparse
        rc = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return rc, out, err


def assert_sane(rc: int, out: str, err: str, argv: list[str]) -> None:
    seen = STATUSES.setdefault(argv[0], {})
    seen[rc] = seen.get(rc, 0) + 1
    assert rc in (0, 1, 2, 3), (rc, argv, err[-2000:])
    assert "Traceback" not in err and "Traceback" not in out, (argv, err[-4000:])
    if rc == 2:
        named = VIOLATION_LINE.search(err) or FLAG_LINE.search(err) or re.search(r"^tfsem \w+: .+", err, re.M)
        assert named, ("exit 2 without a message naming what is wrong", argv, err[-2000:])


# -- mutations of JSON documents ------------------------------------------------------

def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, prefix + (i,))


def _replace(doc, path, raw_text):
    """`doc` as JSON text with the value at `path` replaced by `raw_text` (any text)."""
    marker = "\u0000MARK\u0000"
    doc = copy.deepcopy(doc)
    if not path:
        return raw_text
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = marker
    return json.dumps(doc).replace(json.dumps(marker), raw_text)


@st.composite
def mutated_json(draw, documents):
    source = draw(st.sampled_from(documents))
    doc = json.loads(source.read_text())
    n = draw(st.integers(1, 2))
    benign = draw(st.booleans())   # half the examples: mutations that often keep a valid program
    text = json.dumps(doc)
    for _ in range(n):
        doc = json.loads(text) if _parses(text) else doc
        paths = list(_paths(doc))[1:] or [()]
        # deep paths first: sampled_from shrinks (and derandomizes) towards the front
        paths.sort(key=len, reverse=True)
        path = draw(st.sampled_from(paths))
        # benign mutations first (sampled_from favours the front): they keep
        # the program valid often enough to reach the oracle, checker and passes
        how = draw(st.sampled_from(["number", "op", "rewire", "dup", "drop"] if benign else
                                   ["number", "op", "rewire", "dup", "drop", "hostile", "key", "text"]))
        value = _get(doc, path)
        if how == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
            text = _replace(doc, path, json.dumps(draw(st.sampled_from([0, 1, -1, 2, 7, 2.5, -0.0, 3.4e38]))))
        elif how == "op" and path and path[-1] == "op":
            text = _replace(doc, path, json.dumps(draw(st.sampled_from(OPS))))
        elif how == "rewire" and isinstance(value, str) and len(path) >= 2 and path[-2] == "inputs":
            names = [n.get("name") for n in doc.get("nodes", []) if isinstance(n, dict)] + ["$B", "$x"]
            prefix = draw(st.sampled_from(["", "^", "", ""]))
            text = _replace(doc, path, json.dumps(prefix + str(draw(st.sampled_from(names)))))
        elif how == "hostile":
            text = _replace(doc, path, draw(st.sampled_from(HOSTILE_TEXT)))
        elif how == "drop" and path:
            parent = doc
            for key in path[:-1]:
                parent = parent[key]
            if isinstance(parent, dict):
                parent.pop(path[-1], None)
            elif isinstance(parent, list) and path[-1] < len(parent):
                parent.pop(path[-1])
            text = json.dumps(doc)
        elif how == "key":
            text = _replace(doc, path, json.dumps({draw(st.sampled_from(["name", "op", "inputs", "dtype", "shape",
                                                                          "value", "fn", "var", "\ud800"])):
                                                  draw(st.sampled_from([1, "x", [], None, [1, -1]]))}))
        elif how == "dup":
            parent = doc
            for key in path[:-1]:
                parent = parent[key]
            if path and isinstance(parent, list):
                parent.append(copy.deepcopy(parent[path[-1]]))
            text = json.dumps(doc)
        else:
            cut = draw(st.integers(0, max(0, len(text) - 1)))
            text = text[:cut] + draw(st.sampled_from(["", "}", "]", ",", "\x00", "\\", "\"", "\udcff"])) + text[cut + 1:]
    return text


OPS = ["Const", "Identity", "Copy", "Add", "Sub", "Mul", "Neg", "Max", "Min", "Concat", "Split", "Read",
       "Var", "Assign", "Write", "AssignAdd", "AssignSub", "Snd", "NoSuchOp"]


def _get(doc, path):
    for key in path:
        doc = doc[key]
    return doc


def _parses(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, errors="surrogateescape") if False else path.write_bytes(
        text.encode("utf-8", "surrogatepass"))
    return str(path)


FUZZ = settings(max_examples=EXAMPLES_PER_TEST, derandomize=True, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])


@FUZZ
@given(text=mutated_json(EXAMPLES), command=st.sampled_from(["outcomes", "rewrite", "run", "check"]),
       feed=st.one_of(st.none(), st.sampled_from(HOSTILE_TEXT)))
def test_mutated_programs(capsys, tmp_path, text, command, feed):
    path = _write(tmp_path, "p.json", text)
    argv = {"outcomes": ["outcomes", path, "--timeout", "2", "--max-states", "20000"],
            "rewrite": ["rewrite", "const-fold", path, "-o", str(tmp_path / "out.json")],
            "run": ["run", path, "--backend", "numpy", "--runs", "3"],
            "check": ["check", str(EXAMPLES[0]), path, "--timeout", "2"]}[command]
    if command in ("outcomes", "run"):
        used = sorted(set(re.findall(r'"\^?\$([A-Za-z0-9_]+)"', text)))
        for name in used:
            argv += ["--feed", f"{name}={feed if feed is not None else '1'}"]
        if feed is not None:
            argv += ["--init", f"x={feed}"]
    TRIED[command] = TRIED.get(command, 0) + 1
    assert_sane(*run_cli(capsys, argv), argv)


@FUZZ
@given(text=mutated_json(CASES))
def test_mutated_cases(capsys, tmp_path, text):
    path = _write(tmp_path, "case.json", text)
    argv = ["check", path, "--timeout", "2"]
    TRIED["check"] = TRIED.get("check", 0) + 1
    assert_sane(*run_cli(capsys, argv), argv)


NUMERIC_FLAGS = {
    "outcomes": ["--timeout", "--limit", "--max-states"],
    "check": ["--timeout"],
    "run": ["--runs", "--seed", "--workers", "--jitter"],
    "generate": ["--count", "--seed", "--max-nodes"],
    "verify": ["--budget", "--pass-timeout", "--check-timeout", "--max-nodes", "--seed"],
    "fuzz": ["--budget", "--workers", "--pass-timeout", "--check-timeout", "--max-nodes", "--seed"],
}
#: values each flag must refuse (so that verify and fuzz never start a campaign)
REFUSED = ["nan", "NaN", "inf", "-inf", "1e400", "-1", "", "abc", "\u0661\u0662", "0x10", str(2 ** 64),
           "9" * 400, "-5s", "infs", "nans", "1_0"]


@FUZZ
@given(command=st.sampled_from(sorted(NUMERIC_FLAGS)), data=st.data())
def test_numeric_flags(capsys, tmp_path, command, data):
    flag = data.draw(st.sampled_from(NUMERIC_FLAGS[command]))
    campaign = command in ("verify", "fuzz")
    value = data.draw(st.sampled_from(REFUSED if campaign else HOSTILE_NUMBERS))
    out_dir = tmp_path / "out"
    base = {"outcomes": ["outcomes", str(EXAMPLES[0])], "check": ["check", str(EXAMPLES[0]), str(EXAMPLES[0])],
            "run": ["run", str(EXAMPLES[0]), "--backend", "numpy", "--runs", "2"],
            "generate": ["generate", "--count", "2", "--seed", "1", "--out", str(out_dir)],
            "verify": ["verify", "dce", "--out", str(out_dir)],
            "fuzz": ["fuzz", "--pass", "dce", "--budget", "1s", "--out", str(out_dir)]}[command]
    argv = base + [f"{flag}={value}"]
    TRIED[command] = TRIED.get(command, 0) + 1
    rc, out, err = run_cli(capsys, argv)
    assert_sane(rc, out, err, argv)
    if campaign:
        assert rc == 2 and f"argument {flag}" in err, (argv, err)
        assert not (out_dir / "campaign.db").exists(), "a refused flag left a campaign.db"


@FUZZ
@given(kind=st.sampled_from(["missing", "file", "empty", "garbage", "truncated-sqlite", "zero"]))
def test_report_on_hostile_directories(capsys, tmp_path_factory, kind):
    d = tmp_path_factory.mktemp("report")
    target = d / "dir"
    if kind == "file":
        target.write_text("not a directory")
    elif kind != "missing":
        target.mkdir()
        db = target / "campaign.db"
        if kind == "garbage":
            db.write_bytes(b"\x00\xff" * 3000)
        elif kind == "truncated-sqlite":
            db.write_bytes(b"SQLite format 3\x00" + b"\x10\x00\x01\x01" + b"\x00" * 80)
        elif kind == "zero":
            db.write_bytes(b"")
    argv = ["report", str(target)]
    TRIED["report"] = TRIED.get("report", 0) + 1
    assert_sane(*run_cli(capsys, argv), argv)


def test_zz_summary(capsys):
    """What the fuzzers above tried, per command (for docs/robustness.md)."""
    with capsys.disabled():
        print("\ninputs tried per command:", json.dumps(dict(sorted(TRIED.items()))))
        print("exit statuses per command:", json.dumps({c: dict(sorted(s.items())) for c, s in sorted(STATUSES.items())}))
    if TRIED:   # run with the fuzzers above: they reached past input checking
        assert any(s.get(0) or s.get(1) or s.get(3) for s in STATUSES.values())


@pytest.mark.parametrize("command", ["verify", "fuzz"])
@pytest.mark.parametrize("flag,spec,says", [("--checker", "nosuch_module_x:f", "cannot load it"),
                                            ("--checker", "foo", "module:attribute"),
                                            ("--generator", "os:sep", "not callable"),
                                            ("--generator", "json:no_such_attribute", "cannot load it")])
def test_bad_plugin_specs_are_refused_before_a_campaign(capsys, tmp_path, command, flag, spec, says):
    out_dir = tmp_path / "out"
    base = ["verify", "dce", "--budget", "2", "--out", str(out_dir)] if command == "verify" else \
        ["fuzz", "--pass", "dce", "--budget", "2", "--out", str(out_dir)]
    rc, out, err = run_cli(capsys, base + [flag, spec])
    assert rc == 2 and flag in err and says in err and "Traceback" not in err, err
    assert not (out_dir / "campaign.db").exists()
