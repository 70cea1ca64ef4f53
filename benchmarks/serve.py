"""Load benchmark of `tfsem serve` on loopback.

    python benchmarks/serve.py [--clients 4] [--seconds 10] [--workers 2]

Starts `tfsem serve` on 127.0.0.1 (a free port, an empty campaign directory),
then, for each request kind in turn, runs N client threads for T seconds, each
sending its request again and again over one keep-alive connection, and
prints one table row per kind: requests, requests per second, p50 and p99
latency, and errors (any answer but 200 with the expected result, or a
connection error; the benchmark exits 1 when there is one).  It stops by
itself: T is capped at 120 s and every client at 100,000 requests, and the
server is stopped with SIGTERM at the end.  Traffic goes to loopback only.

Request kinds:
- `health`: GET /v1/health (the framework and the event loop alone);
- `outcomes`: POST /v1/outcomes, seed 002's load/store program in decomposed
  mode (3 outcomes);
- `check-sound`: POST /v1/check, the same program against itself (proved
  sound with Z3);
- `check-unsound`: POST /v1/check, the corpus case that hoists a Read above its
  control edge (a counterexample, minimized and replayed on numpy).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tfsem.generators import families
from tfsem.oracle.jsonio import program_to_json
from tfsem.oracle.values import value_to_json

ROOT = Path(__file__).resolve().parent.parent
MAX_SECONDS = 120.0
MAX_REQUESTS_PER_CLIENT = 100_000


def request_kinds() -> dict[str, tuple[str, str, bytes | None, callable]]:
    p, feeds, init = families.load_store()
    program = program_to_json(p)
    outcomes = {"program": program, "init": {k: value_to_json(v) for k, v in init.items()},
                "semantics": "decomposed"}
    case = json.loads((ROOT / "tests" / "cases" / "seed002_load_store_hoist_reads.json").read_text())
    return {
        "health": ("GET", "/v1/health", None, lambda a: a.get("status") == "ok"),
        "outcomes": ("POST", "/v1/outcomes", json.dumps(outcomes).encode(), lambda a: a.get("count") == 3),
        "check-sound": ("POST", "/v1/check", json.dumps({"original": program, "rewritten": program}).encode(),
                        lambda a: a.get("verdict") == "sound"),
        "check-unsound": ("POST", "/v1/check", json.dumps(case).encode(),
                          lambda a: a.get("verdict") == "unsound"),
    }


def start_server(directory: str, workers: int) -> tuple[subprocess.Popen, str, int]:
    proc = subprocess.Popen([sys.executable, "-m", "tfsem", "serve", directory, "--host", "127.0.0.1",
                             "--port", "0", "--workers", str(workers)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 0.2)[0]:
            line = proc.stdout.readline().decode()
            if "listening on" in line:
                url = line.split("listening on ", 1)[1].split()[0]
                host, port = url.split("//", 1)[1].rstrip("/").rsplit(":", 1)
                assert host == "127.0.0.1"
                return proc, host, int(port)
        if proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit("the server did not start")


def run_kind(host: str, port: int, method: str, path: str, body: bytes | None, ok, clients: int,
             seconds: float) -> dict:
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client() -> None:
        conn = http.client.HTTPConnection(host, port, timeout=60)
        mine: list[float] = []
        bad: list[str] = []
        headers = {"Content-Type": "application/json"} if body is not None else {}
        for _ in range(MAX_REQUESTS_PER_CLIENT):
            if time.monotonic() >= stop_at:
                break
            t = time.perf_counter()
            try:
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                mine.append(time.perf_counter() - t)
                if resp.status != 200 or not ok(json.loads(data)):
                    bad.append(f"{resp.status}: {data[:200]!r}")
            except (OSError, http.client.HTTPException, ValueError) as exc:
                bad.append(f"{type(exc).__name__}: {exc}")
                conn.close()
                conn = http.client.HTTPConnection(host, port, timeout=60)
        conn.close()
        with lock:
            latencies.extend(mine)
            errors.extend(bad)

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    latencies.sort()

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000 if latencies else float("nan")

    return {"requests": len(latencies), "rps": len(latencies) / elapsed, "p50": pct(0.50),
            "p99": pct(0.99), "mean": statistics.fmean(latencies) * 1000 if latencies else float("nan"),
            "errors": len(errors), "first_error": errors[0] if errors else ""}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=4, help="concurrent clients (default 4)")
    ap.add_argument("--seconds", type=float, default=10.0, help="seconds per request kind (default 10)")
    ap.add_argument("--workers", type=int, default=2, help="server worker processes (default 2)")
    ap.add_argument("--kinds", default="health,outcomes,check-sound,check-unsound",
                    help="comma-separated request kinds")
    args = ap.parse_args(argv)
    seconds = min(args.seconds, MAX_SECONDS)
    kinds = request_kinds()
    chosen = [k.strip() for k in args.kinds.split(",") if k.strip()]
    for k in chosen:
        if k not in kinds:
            ap.error(f"unknown kind {k!r} (one of {', '.join(kinds)})")

    with tempfile.TemporaryDirectory() as directory:
        proc, host, port = start_server(directory, args.workers)
        try:
            print(f"tfsem serve on {host}:{port}, {args.workers} worker(s); {args.clients} clients, "
                  f"{seconds:g} s per kind; {platform.python_implementation()} {platform.python_version()}, "
                  f"{os.cpu_count()} CPUs")
            print()
            print("| request | clients | requests | requests/s | p50 ms | p99 ms | errors |")
            print("|---|---:|---:|---:|---:|---:|---:|")
            failed = False
            for k in chosen:
                method, path, body, ok = kinds[k]
                run_kind(host, port, method, path, body, ok, 1, min(1.0, seconds))  # warm up
                r = run_kind(host, port, method, path, body, ok, args.clients, seconds)
                print(f"| {k} ({method} {path}) | {args.clients} | {r['requests']} | {r['rps']:.1f} | "
                      f"{r['p50']:.1f} | {r['p99']:.1f} | {r['errors']} |", flush=True)
                if r["errors"]:
                    failed = True
                    print(f"  first error: {r['first_error']}", file=sys.stderr)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = "killed"
        print()
        print(f"server stopped with SIGTERM: exit status {code}")
    return 1 if failed or code != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
