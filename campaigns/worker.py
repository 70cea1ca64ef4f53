"""A campaign's local worker process: `python -m tfsem.campaigns.worker`.

It reads a hello line (the campaign settings and the coordinator's sys.path)
and then one task per line on stdin, and writes messages (JSON arrays) on its
real stdout: ["start", id, pid], ["stats", ...], ["finding", record],
["replay", ...], then ["done", id, summary] or ["error", id, traceback].
What the code under test prints goes to /dev/null.

Workers are started with `subprocess`, not `multiprocessing`, so that a
campaign started from any program (a script without a `__main__` guard, a
notebook, `python -m tfsem`) never re-runs that program in its workers.  On
Linux a worker is killed when the coordinator dies, and end of input makes it
exit.
"""

from __future__ import annotations

import json
import os
import sys
import traceback


def main() -> None:
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)

    from .sandbox import _set_parent_death_signal
    _set_parent_death_signal()

    hello = json.loads(sys.stdin.readline() or "{}")
    if hello.get("parent") and os.getppid() != hello["parent"]:
        return
    sys.path[:] = list(hello.get("sys_path", sys.path))

    from .campaign import CampaignSettings, open_example_db, run_task

    raw = dict(hello["settings"])
    raw["cells"] = [tuple(c) for c in raw.get("cells", [])]
    settings = CampaignSettings(**raw)
    database = open_example_db(settings)

    def emit(msg) -> None:
        proto.write(json.dumps(list(msg)) + "\n")
        proto.flush()

    for line in sys.stdin:
        if not line.strip():
            continue
        task = json.loads(line)
        emit(["start", task["id"], os.getpid()])
        try:
            summary = run_task(task, emit, database, stop_at=task.get("stop_at"))
            emit(["done", task["id"], summary])
        except Exception:
            emit(["error", task["id"], traceback.format_exc()[-4000:]])


if __name__ == "__main__":
    main()
