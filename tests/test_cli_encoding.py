"""Names the terminal cannot encode are escaped, never a UnicodeEncodeError."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def test_names_an_ascii_terminal_cannot_show_are_escaped(tmp_path):
    program = {"variables": ["x"],
               "nodes": [{"name": "v", "op": "Var", "var": "x"},
                         {"name": "r\u00e9", "op": "Read", "inputs": ["v"]}],
               "outputs": {"o\u00e9": "r\u00e9"}}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(program), encoding="utf-8")
    env = dict(os.environ, PYTHONIOENCODING="ascii")
    proc = subprocess.run([sys.executable, "-m", "tfsem", "outcomes", str(path), "--init", "x=1"],
                          capture_output=True, text=True, env=env, encoding="ascii", errors="strict")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "o\\xe9 = 1" in proc.stdout
