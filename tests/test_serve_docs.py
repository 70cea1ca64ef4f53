"""The service's documentation, run: every `$ curl` example in docs/*.md and
service/README.md is executed as written against a real `tfsem serve` with a
token (the examples read `$TFSEM_URL` and `$TFSEM_TOKEN`), and its output
compared with the one the page shows; the systemd unit of docs/deployment.md
is checked with `systemd-analyze verify` where that is installed."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from test_serve_support import Server

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "service" / "README.md"]
TOKEN = "docs-token-0123456789abcdef"
STABLE_KEYS = ("verdict", "error", "status", "count", "message")


def _complete(command: str) -> bool:
    if command.endswith("\\"):
        return False
    try:
        shlex.split(command)
    except ValueError:  # an open quotation: the -d '...' body goes on
        return False
    return True


def curl_examples() -> list[tuple[str, str, str]]:
    """(where, command, shown output) for every `$ curl` line of the pages."""
    found = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        i = 0
        while i < len(lines):
            line = lines[i].strip()
            if not line.startswith("$ curl "):
                i += 1
                continue
            where = f"{page.relative_to(ROOT)}:{i + 1}"
            command = line[2:]
            while not _complete(command) and i + 1 < len(lines):
                i += 1
                command += "\n" + lines[i]
            output = []
            i += 1
            while i < len(lines) and lines[i].strip() and not lines[i].strip().startswith(("$ ", "```")):
                output.append(lines[i].strip())
                i += 1
            found.append((where, command, "\n".join(output)))
    return found


EXAMPLES = curl_examples()


def test_the_pages_have_curl_examples_and_each_uses_the_variables():
    pages = {w.split(":")[0] for w, _, _ in EXAMPLES}
    assert {"service/README.md", "docs/deployment.md"} <= pages, pages
    for where, command, _ in EXAMPLES:
        assert "$TFSEM_URL" in command, f"{where}: use $TFSEM_URL, not a fixed address"
        if " -X POST" in command or " -d " in command or "--data" in command:
            assert "Authorization: Bearer $TFSEM_TOKEN" in command, where


def _without_stats(value):
    if isinstance(value, dict):
        return {k: _without_stats(v) for k, v in value.items() if k not in ("stats", "seconds")}
    if isinstance(value, list):
        return [_without_stats(v) for v in value]
    return value


def _matches(shown: str, actual: str) -> bool:
    try:
        expected = json.loads(shown)
    except ValueError:
        expected = None
    if expected is not None:
        return _without_stats(expected) == _without_stats(json.loads(actual))
    # a shortened answer ("..."): its top-level verdict, error, status agree
    prefix = shown.split("...", 1)[0]
    pairs = re.findall(r'"(%s)":("(?:[^"\\]|\\.)*"|-?\d+)' % "|".join(STABLE_KEYS), prefix)
    assert pairs, f"nothing to compare in {shown!r}"
    got = json.loads(actual)
    return all(json.dumps(got.get(k), separators=(",", ":")) == v for k, v in pairs)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    env = {k: v for k, v in os.environ.items() if k != "TFSEM_TOKEN"}
    env["TFSEM_TOKEN"] = TOKEN
    s = Server(tmp_path_factory.mktemp("serve-docs"), "--workers", "1", token=TOKEN, env=env)
    yield s
    s.stop()


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
@pytest.mark.parametrize("where,command,shown", EXAMPLES, ids=[w for w, _, _ in EXAMPLES])
def test_curl_example_runs_as_written(server, where, command, shown):
    env = dict(os.environ, TFSEM_URL=server.url.rstrip("/"), TFSEM_TOKEN=TOKEN)
    r = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (where, r.stderr)
    if shown:
        assert _matches(shown, r.stdout), f"{where}: shows {shown[:200]!r}\nbut the server answered {r.stdout[:400]!r}"


def systemd_unit() -> str:
    text = (ROOT / "docs" / "deployment.md").read_text()
    return re.search(r"```ini\n(.*?)```", text, re.S).group(1)


def test_the_systemd_unit_names_the_options_the_server_has():
    unit = systemd_unit()
    exec_start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    args = shlex.split(exec_start.split("=", 1)[1])
    assert args[1] == "serve"
    from tfsem.cli import build_parser
    parsed = build_parser().parse_args(args[1:])   # every option exists and parses
    assert parsed.token_file and parsed.allowed_host and parsed.host == "127.0.0.1"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_the_systemd_unit_passes_systemd_analyze_verify(tmp_path):
    tfsem = shutil.which("tfsem") or str(Path(os.sys.executable).parent / "tfsem")
    assert Path(tfsem).exists()
    unit = tmp_path / "tfsem.service"
    unit.write_text(systemd_unit().replace("/opt/tfsem/venv/bin/tfsem", tfsem))
    r = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and not r.stderr.strip() and not r.stdout.strip(), (r.stdout, r.stderr)
