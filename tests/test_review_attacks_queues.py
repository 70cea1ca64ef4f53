"""Review attack (target 2): queues keep errors as values (oracle/blocking.py).
A rewrite that lets a queue's close overtake an enqueue makes TensorFlow fail
the producer's run (CancelledError), which the original never does; with
only outputs observed the outcomes are the same.  Queue sessions are never
proved (`sound` only for the identical program), so this is no false
`sound`; the `no-counterexample` verdict says that it cannot see such runs."""

from __future__ import annotations

import json
from pathlib import Path

from tfsem.cli import main

SESSIONS = Path(__file__).resolve().parent.parent / "examples" / "sessions"


def _close_early(tmp_path) -> Path:
    data = json.loads((SESSIONS / "queue_close.session.json").read_text())["program"]
    for n in data["nodes"]:
        if n["name"] == "close":   # no longer behind put2, which it may now cancel
            n["inputs"] = ["^put1"]
    path = tmp_path / "close_early.json"
    path.write_text(json.dumps(data))
    return path


def test_a_rewrite_that_only_makes_a_run_fail_is_no_counterexample_that_says_so(capsys, tmp_path):
    rewritten = _close_early(tmp_path)
    session = SESSIONS / "queue_close.session.json"
    rc = main(["check", str(session), str(rewritten), "--observe", "outputs"])
    out = capsys.readouterr().out
    assert rc == 0 and out.startswith("no-counterexample"), out
    assert "a rewrite that only makes a run fail is not found" in out
    # with the queue's state observed, the cancelled put2 shows
    rc = main(["check", str(session), str(rewritten)])
    out = capsys.readouterr().out
    assert rc == 1 and out.startswith("unsound: variable 'queue:q' differs"), out


def test_without_a_close_the_verdict_has_no_caveat(capsys, tmp_path):
    data = json.loads((SESSIONS / "queue_batches.session.json").read_text())["program"]
    path = tmp_path / "same.json"
    data["nodes"].append({"name": "extra", "op": "Const", "value": 0})   # an unused node more
    path.write_text(json.dumps(data))
    main(["check", str(SESSIONS / "queue_batches.session.json"), str(path)])
    out = capsys.readouterr().out
    assert out.startswith("no-counterexample"), out
    assert "only makes a run fail" not in out, out
