"""Cost of sessions with critical sections and queues (oracle/blocking.py):
`blocking.outcomes` on the critical-section counter and on a producer /
consumer queue, for 2-4 concurrent runs, both modes; median of --repeat
runs, with the states explored, and the same sessions explored without the
one-step persistent sets (every enabled step, as a plain memoized search)
for the ratio.

    python benchmarks/sessions_blocking.py --repeat 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from tfsem.oracle import blocking
from tfsem.oracle.session import session_from_json
from tfsem.oracle.values import Tensor

ROOT = Path(__file__).resolve().parent.parent


def counter(n: int) -> dict:
    data = json.loads((ROOT / "examples" / "sessions" / "counter_critical.session.json").read_text())
    data["runs"] = [{"name": f"step{k + 1}", "fetch": ["old"], "targets": ["w"]} for k in range(n)]
    return data


def queue(n: int) -> dict:
    """n producers and n consumers of a queue of capacity 1."""
    data = json.loads((ROOT / "examples" / "sessions" / "queue_deadlock.session.json").read_text())
    data["runs"] = ([{"name": f"p{k}", "targets": ["enq"]} for k in range(n)]
                    + [{"name": f"c{k}", "fetch": ["item"]} for k in range(n)])
    return data


def batches(n: int) -> dict:
    """n producers of a batch of 3 into a queue of capacity 2, n consumers
    of a dequeue-many of 2 and n of a dequeue (queue_batches.session.json)."""
    data = json.loads((ROOT / "examples" / "sessions" / "queue_batches.session.json").read_text())
    data["runs"] = ([{"name": f"p{k}", "targets": ["put"]} for k in range(n)]
                    + [{"name": f"c{k}", "fetch": ["pair"]} for k in range(n)]
                    + [{"name": f"d{k}", "fetch": ["item"]} for k in range(n)])
    return data


def module_at(rev: str):
    """oracle/blocking.py as it was at git revision `rev` (to measure a change
    side by side with the working tree's, in one run)."""
    import importlib.util
    import subprocess
    import tempfile
    text = subprocess.run(["git", "show", f"{rev}:oracle/blocking.py"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "blocking_before.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("tfsem.oracle._blocking_before", path)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "tfsem.oracle"
    import sys
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def measure(data: dict, semantics: str, repeat: int, reduce: bool, timeout: float,
            blocking=blocking) -> dict:
    s = session_from_json(data)
    p, b = s.expand_blocking()
    init = {x: Tensor(0, "int64") for x in p.variables}
    times, states, count = [], 0, 0
    for _ in range(repeat):
        local = blocking.Machine.__init__
        t0 = time.perf_counter()
        if not reduce:   # every enabled step explored: no node counts as local
            def init_no_local(self, *a, **k):
                local(self, *a, **k)
                self.local = frozenset()
            blocking.Machine.__init__ = init_no_local
        try:
            found, states = blocking.outcomes(p, b, {}, init, semantics, max_seconds=timeout)
            count = len(found)
        except blocking.BudgetExceeded as exc:
            return {"unknown": str(exc)}
        finally:
            blocking.Machine.__init__ = local
        times.append(time.perf_counter() - t0)
    return {"median_s": round(statistics.median(times), 4), "states": states, "outcomes": count,
            "nodes": len(p.nodes)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--before", metavar="REV", default=None,
                    help="also measure oracle/blocking.py at this git revision (the reduced "
                         "search only), side by side")
    ap.add_argument("--no-plain", action="store_true", help="skip the unreduced search")
    args = ap.parse_args()
    before = module_at(args.before) if args.before else None
    for name, make, sizes in (("counter_critical", counter, (2, 3, 4)),
                              ("queue p/c", queue, (2, 3, 4)), ("batches", batches, (1, 2))):
        for n in sizes:
            for semantics in ("atomic", "decomposed"):
                row = {"session": name, "runs": len(make(n)["runs"]), "semantics": semantics}
                row["reduced"] = measure(make(n), semantics, args.repeat, True, args.timeout)
                if not args.no_plain:
                    row["plain"] = measure(make(n), semantics, args.repeat, False, args.timeout)
                if before is not None and name != "batches":
                    row["before"] = measure(make(n), semantics, args.repeat, True, args.timeout,
                                            blocking=before)
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
