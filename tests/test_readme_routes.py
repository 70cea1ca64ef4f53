"""The README's routes run as written.

Each route of README.md is a code block after a `<!-- route: NAME -->`
comment: commands after `$ ` (a line ending in `\\` goes on, a `<<'EOF'` here
document runs to its `EOF`), each followed by what it printed.  This test runs
every route's commands in order in one shell (the routes side by side), in
a temporary folder that holds the repository's `examples/` and `tests/` (as
a clone would), with a timeout, and checks each command's exit status and
the first and last lines it showed (numbers and spacing may differ from run
to run; a line ending in `...` is a prefix; `...` alone stands for lines left
out).  The route needing TensorFlow skips, saying so, where TensorFlow is not
installed.  The port of `tfsem serve` is replaced by a free one."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
ROUTE = re.compile(r"<!-- route: ([\w-]+) -->\n```[\w]*\n(.*?)\n```", re.S)
#: exit statuses other than 0 that a route's command is shown with (the README
#: says so beside each): an `unsound` verdict, a campaign whose evidence is
#: weak.  Where a second status is allowed
#: (a campaign's evidence depends on how many programs the machine judges in
#: its budget: WEAK on a busy machine, 0 on an idle one), output of the second
#: kind is held to the shown first line only.
STATUS = {"tfsem check tests/cases/tensorflow/counter_drop_control_dependency.json": (1,),
          "tfsem verify examples/passes/drop_identity.py:PASS": (4, 0),
          "tfsem fuzz --pass prune --pass cse": (4, 0)}
NEEDS_TENSORFLOW = {"tensorflow"}
#: the first command's own lines (the venv and pip install) are not rerun here:
#: the route runs its `tfsem check`, as the test suite's environment has tfsem


@dataclass
class Command:
    text: str
    shown: list[str] = field(default_factory=list)

    @property
    def statuses(self) -> tuple[int, ...]:
        """The status the README shows, then any other allowed."""
        one_line = " ".join(self.text.replace("\\\n", " ").split())
        return next((s for prefix, s in STATUS.items() if one_line.startswith(prefix)), (0,))


def routes(text: str | None = None) -> dict[str, list[Command]]:
    text = README.read_text(encoding="utf-8") if text is None else text
    out = {}
    for name, body in ROUTE.findall(text):
        commands: list[Command] = []
        lines = body.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.startswith("$ "):
                cmd = [line[2:]]
                if "<<'EOF'" in line:
                    while lines[i] != "EOF":
                        i += 1
                        cmd.append(lines[i])
                while cmd[-1].endswith("\\"):
                    i += 1
                    cmd.append(lines[i])
                commands.append(Command("\n".join(cmd)))
            elif commands:
                commands[-1].shown.append(line)
            i += 1
        out[name] = commands
    return out


def _normal(text: str) -> str:
    return " ".join(re.sub(r"\d+(?:\.\d+)?", "N", text).split())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_readme_is_short_and_its_code_does_not_scroll():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 250
    wide, inside = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            inside = not inside
        elif inside and len(line) > 100:
            wide.append(f"README.md:{n}: {len(line)} columns")
    assert not wide, "\n".join(wide)
    found = routes(text)
    assert {"first", "pass", "tensorflow", "nightly"} <= set(found)
    assert all(found[name] for name in found)
    # the README's two commands: the one CI runs, and the first route
    assert "  && python -m pytest -q\n" in text
    assert "  && tfsem check tests/cases/tensorflow/counter_drop_control_dependency.json\n" in text


def test_routes_are_parsed_with_here_documents_and_continuations():
    text = ("<!-- route: r -->\n```\n$ a \\\n    b\nout 1\n...\nlast\n$ python - <<'EOF'\n"
            "x = 1\nEOF\n$ c\n```\n")
    (r,) = routes(text).values()
    assert [c.text for c in r] == ["a \\\n    b", "python - <<'EOF'\nx = 1\nEOF", "c"]
    assert r[0].shown == ["out 1", "...", "last"] and r[2].shown == []


def _start_route(name: str, where: Path) -> subprocess.Popen:
    """Route NAME's commands in order in one shell in WHERE (a folder holding
    links to the repository's `examples/` and `tests/`), started, not waited
    for: each command's output to outI, its exit status to rcI."""
    for folder in ("examples", "tests"):
        (where / folder).symlink_to(ROOT / folder)
    port = str(_free_port())
    script = ["set +e"]
    for i, c in enumerate(routes()[name]):
        text = c.text.replace("8787", port)
        script.append(f"{{ {text}\n}} > out{i} 2>&1; echo $? > rc{i}")
    script.append("kill %1 2>/dev/null; wait")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.Popen(["bash", "-c", "\n".join(script)], cwd=where, env=env, start_new_session=True)


def _runnable(name: str) -> bool:
    return name not in NEEDS_TENSORFLOW or importlib.util.find_spec("tensorflow") is not None


@pytest.fixture(scope="module")
def route_runs(request, tmp_path_factory):
    """The routes this session selected, all started at once by whichever
    test needs one first (each is mostly start-ups, TensorFlow imports and a
    campaign's budget: side by side they take about as long as the longest),
    each then waited for by its own test: name -> (its folder, its shell)."""
    selected = {item.callspec.params["name"] for item in request.session.items
                if item.originalname == "test_route_runs_as_written" and hasattr(item, "callspec")
                and item.module is request.module}
    runs = {}
    for name in sorted(n for n in selected if _runnable(n)):
        where = tmp_path_factory.mktemp(f"route-{name}")
        runs[name] = (where, _start_route(name, where))
    yield runs
    for _, proc in runs.values():
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.parametrize("name", sorted(routes()))
def test_route_runs_as_written(name, route_runs):
    if not _runnable(name):
        pytest.skip("this route needs TensorFlow (pip install -e '.[tensorflow]')")
    tmp_path, proc = route_runs[name]
    commands = routes()[name]
    try:
        proc.wait(timeout=420)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    for i, c in enumerate(commands):
        out = (tmp_path / f"out{i}").read_text(errors="replace")
        if c.text.rstrip().endswith("&"):
            continue  # a server in the background: the next command asks it
        rc = int((tmp_path / f"rc{i}").read_text())
        assert rc in c.statuses, f"$ {c.text}\nexit status {rc}, expected {c.statuses[0]}:\n{out}"
        if c.text.startswith("tfsem "):  # TensorFlow's own logs are silenced
            assert "absl::InitializeLog" not in out and "oneDNN" not in out, out
        shown = [line for line in c.shown if line.strip() != "..."]
        for line in shown[:1] + (shown[-1:] if rc == c.statuses[0] else []):
            expect = _normal(line[:-3] if line.endswith("...") else line)
            assert expect in _normal(out), f"$ {c.text}\nprinted no line like {line!r}:\n{out}"
