"""Load benchmark of `tfsem serve` on loopback.

    python benchmarks/serve.py [--clients 4] [--seconds 10] [--workers 2]
    python benchmarks/serve.py --crowd 500,1000 [--workers 2] [--baseline GITREF] [--repeat R]

`--crowd N,...`: for each N, N clients connect at once and send one request
each (Connection: close), a mix of small outcome queries and checks (80 %),
checks that run past their timeout (10 %), and hostile graphs whose
functions each call the next level twice (10 %); meanwhile a separate
process asks GET /v1/health every 50 ms.  Printed per N: how many requests got
an HTTP answer (and which statuses), how many got none (a reset, silence),
the health latency (median, p99, max), and the server process's peak RSS
(VmHWM; and its front door process's, which the servers before
service/door.py did not have), and the load average when the crowd began.  `--baseline GITREF`
runs a second server whose service/ is GITREF's (extracted with `git
archive`), the two alternating crowd by crowd, the order swapped each round;
`--repeat R` runs R rounds and then pools every round's health polls per
server and crowd size.  Bounded: each client waits at most 120 s, each crowd
at most 300 s.

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


#: runs `tfsem` with `tfsem.service` loaded from another folder (argv[1]): the
#: service of an older commit, for `--baseline`
_BOOT_OTHER_SERVICE = r"""
import importlib.util, sys
folder = sys.argv.pop(1)
spec = importlib.util.spec_from_file_location("tfsem.service", folder + "/__init__.py",
                                              submodule_search_locations=[folder])
module = importlib.util.module_from_spec(spec)
sys.modules["tfsem.service"] = module
spec.loader.exec_module(module)
import tfsem
tfsem.service = module
from tfsem.cli import main
sys.exit(main())
"""


def start_server(directory: str, workers: int, service: str | None = None) -> tuple[subprocess.Popen, str, int]:
    """`tfsem serve` on a free loopback port; `service`: a folder holding
    another version of service/ to run instead of this one (the workers'
    own module stays this checkout's)."""
    head = [sys.executable, "-m", "tfsem"] if service is None else [sys.executable, "-c", _BOOT_OTHER_SERVICE, service]
    proc = subprocess.Popen(head + ["serve", directory, "--host", "127.0.0.1", "--port", "0",
                                    "--workers", str(workers)],
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


CROWD_CLIENT_SECONDS = 120.0
CROWD_SECONDS = 300.0
MAX_CROWD = 2000

_HEALTH_POLLER = r"""
import http.client, json, sys, time
host, port, stop_file, limit = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
import os
lat, failed = [], 0
end = time.monotonic() + limit
while time.monotonic() < end and not os.path.exists(stop_file):
    t = time.perf_counter()
    try:
        c = http.client.HTTPConnection(host, port, timeout=30)
        c.request("GET", "/v1/health")
        r = c.getresponse(); r.read(); c.close()
        if r.status == 200:
            lat.append(time.perf_counter() - t)
        else:
            failed += 1
    except OSError:
        failed += 1
    time.sleep(0.05)
print(json.dumps({"latencies": lat, "failed": failed}))
"""


def crowd_requests() -> list[tuple[str, bytes, str]]:
    """(kind, HTTP request bytes, path) of the crowd's mix, 10 per cycle."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_serve_robustness import exponential_graph  # the test's hostile graph

    kinds = request_kinds()
    p, _, _ = families.writer_reader_pairs(7)
    slow = json.dumps({"original": program_to_json(p), "rewritten": program_to_json(p),
                       "semantics": "decomposed", "timeout": 0.5}).encode()
    hostile = json.dumps({"program": exponential_graph(24), "timeout": 2}).encode()

    def post(path: str, body: bytes) -> bytes:
        return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body

    small = [("outcomes", post("/v1/outcomes", kinds["outcomes"][2])),
             ("check", post("/v1/check", kinds["check-unsound"][2]))]
    mix = [small[i % 2] for i in range(8)]
    mix.append(("timeout", post("/v1/check", slow)))
    mix.append(("hostile", post("/v1/outcomes", hostile)))
    return mix


async def _crowd_client(host: str, port: int, request: bytes) -> str:
    import asyncio
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), CROWD_CLIENT_SECONDS)
    except (OSError, asyncio.TimeoutError) as exc:
        return f"connect {type(exc).__name__}"
    try:
        writer.write(request)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), CROWD_CLIENT_SECONDS)
    except (OSError, asyncio.TimeoutError) as exc:
        return f"no answer ({type(exc).__name__})"
    finally:
        writer.close()
    if not data.startswith(b"HTTP/1.1 "):
        return "no answer (closed)"
    return data[9:12].decode()


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def door_peak_rss_mb(pid: int) -> float | None:
    """Peak RSS of the server's front door process (service/door.py), if
    it has one (the servers before it had the door as a thread)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"tfsem.service.door" in cmdline:
            return peak_rss_mb(int(entry.name))
    return None


def run_crowd(proc: subprocess.Popen, host: str, port: int, clients: int) -> dict:
    import asyncio
    mix = crowd_requests()
    with tempfile.TemporaryDirectory() as tmp:
        stop = Path(tmp) / "stop"
        poller = subprocess.Popen([sys.executable, "-c", _HEALTH_POLLER, host, str(port), str(stop),
                                   str(CROWD_SECONDS)], stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)

        async def crowd() -> list[str]:
            return await asyncio.wait_for(asyncio.gather(*(
                _crowd_client(host, port, mix[i % len(mix)][1]) for i in range(clients))), CROWD_SECONDS)

        started = time.perf_counter()
        results = asyncio.run(crowd())
        wall = time.perf_counter() - started
        time.sleep(0.5)
        stop.touch()
        out, _ = poller.communicate(timeout=60)
    health = json.loads(out)
    lat = sorted(health["latencies"])

    def pct(q: float) -> float:
        return lat[min(len(lat) - 1, int(q * len(lat)))] * 1000 if lat else float("nan")

    statuses: dict[str, int] = {}
    for r in results:
        statuses[r] = statuses.get(r, 0) + 1
    answered = sum(n for k, n in statuses.items() if k.isdigit())
    return {"clients": clients, "answered": answered, "statuses": statuses, "wall": wall,
            "latencies": lat, "health_n": len(lat), "health_failed": health["failed"], "health_p50": pct(0.5),
            "health_p99": pct(0.99), "health_max": lat[-1] * 1000 if lat else float("nan"),
            "peak_rss": peak_rss_mb(proc.pid), "door_rss": door_peak_rss_mb(proc.pid)}


def baseline_service(ref: str, into: str) -> str:
    """service/ as it was at git revision `ref`, extracted under `into`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "service"], capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"--baseline {ref}: git archive failed: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", into], input=archive.stdout, check=True)
    return str(Path(into) / "service")


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000 if values else float("nan")


def main_crowd(sizes: list[int], workers: int, baseline: str | None = None, repeat: int = 1) -> int:
    failed = False
    codes: list = []
    with tempfile.TemporaryDirectory() as directory, tempfile.TemporaryDirectory() as old_dir:
        servers: list[tuple[str, subprocess.Popen, str, int]] = []
        try:
            if baseline is not None:
                proc, host, port = start_server(directory, workers, baseline_service(baseline, old_dir))
                servers.append((f"old ({baseline})", proc, host, port))
            proc, host, port = start_server(directory, workers)
            servers.append(("new" if baseline is not None else "this", proc, host, port))
            print(f"tfsem serve on 127.0.0.1, {workers} worker(s) each; crowds of {sizes}, {repeat} round(s)"
                  f"{', the servers alternating' if len(servers) > 1 else ''}; "
                  f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, "
                  f"load average {os.getloadavg()[0]:.1f} at start")
            print()
            print("| server | clients | load | answered | statuses | no answer | wall s | health p50 ms "
                  "| health p99 ms | health max ms | health polls | server peak RSS MiB | door process peak RSS MiB |")
            print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
            pooled: dict[tuple[str, int], list[float]] = {}
            for round_ in range(repeat):
                order = servers if round_ % 2 == 0 else servers[::-1]
                for n in sizes:
                    for label, proc, host, port in order:
                        load = os.getloadavg()[0]
                        r = run_crowd(proc, host, port, n)
                        pooled.setdefault((label, n), []).extend(r["latencies"])
                        codes_ = ", ".join(f"{k}: {v}" for k, v in sorted(r["statuses"].items()) if k.isdigit())
                        print(f"| {label} | {n} | {load:.1f} | {r['answered']} | {codes_} | {n - r['answered']} | "
                              f"{r['wall']:.1f} | {r['health_p50']:.1f} | {r['health_p99']:.1f} | "
                              f"{r['health_max']:.1f} | {r['health_n']} ({r['health_failed']} failed) | "
                              f"{r['peak_rss']:.0f} | "
                              f"{'-' if r['door_rss'] is None else format(r['door_rss'], '.0f')} |", flush=True)
                        if r["answered"] != n or r["health_failed"]:
                            failed = True
                            print("  unanswered:", {k: v for k, v in r["statuses"].items() if not k.isdigit()},
                                  file=sys.stderr)
            if repeat > 1 or len(servers) > 1:
                print()
                print("All rounds pooled (every health poll of every crowd of that size):")
                print()
                print("| server | clients | health polls | p50 ms | p90 ms | p99 ms | max ms |")
                print("|---|---:|---:|---:|---:|---:|---:|")
                for n in sizes:
                    for label, *_ in servers:
                        lat = pooled[(label, n)]
                        print(f"| {label} | {n} | {len(lat)} | {_pct(lat, 0.5):.1f} | {_pct(lat, 0.9):.1f} | "
                              f"{_pct(lat, 0.99):.1f} | {max(lat) * 1000 if lat else float('nan'):.1f} |")
        finally:
            print()
            for label, proc, _, _ in servers:
                proc.send_signal(signal.SIGTERM)
                t = time.monotonic()
                try:
                    code = proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    code = "killed"
                codes.append(code)
                print(f"{label}: stopped with SIGTERM in {time.monotonic() - t:.1f} s: exit status {code}")
    return 1 if failed or any(c != 0 for c in codes) else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=4, help="concurrent clients (default 4)")
    ap.add_argument("--seconds", type=float, default=10.0, help="seconds per request kind (default 10)")
    ap.add_argument("--workers", type=int, default=2, help="server worker processes (default 2)")
    ap.add_argument("--kinds", default="health,outcomes,check-sound,check-unsound",
                    help="comma-separated request kinds")
    ap.add_argument("--crowd", metavar="N,...",
                    help="instead: crowds of N simultaneous clients with a hostile mix (e.g. 500,1000)")
    ap.add_argument("--baseline", metavar="GITREF",
                    help="with --crowd: also run service/ as it was at GITREF, the two servers alternating")
    ap.add_argument("--repeat", type=int, default=1, help="with --crowd: rounds (default 1, at most 20)")
    args = ap.parse_args(argv)
    if args.crowd:
        try:
            sizes = [int(x) for x in args.crowd.split(",") if x.strip()]
        except ValueError:
            ap.error("--crowd takes comma-separated client counts")
        if not sizes or not all(1 <= n <= MAX_CROWD for n in sizes):
            ap.error(f"--crowd: each count is 1 .. {MAX_CROWD}")
        if not 1 <= args.repeat <= 20:
            ap.error("--repeat: 1 .. 20")
        return main_crowd(sizes, args.workers, args.baseline, args.repeat)
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
