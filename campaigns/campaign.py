"""`tfsem fuzz`: a campaign over many passes, on local worker processes or on
a Dask cluster, recorded in `DIR/campaign.db`.

The coordinator (this process) owns the database; workers (worker.py, each a
`python -m tfsem.campaigns.worker` process) only compute and send messages
back: statistics, findings (each committed on arrival), and the outcome of
replaying stored findings.  The plan:

1. **Replay.**  Every open finding of the passes in this campaign is run
   again (the pass on its stored program, the check at its stored σ): still
   there, it is seen again (and *known*); gone, it is marked *fixed*.
2. **Fuzz.**  The budget is split evenly over the (pass, cell) units; with
   more workers than units a unit is split into several slices with distinct
   seeds.  Locally, a slice's time is set when a worker takes it: the time
   left, shared among the slices still waiting, so that a slice that ran
   over (shrinking) or ended early never starves the others.  Each slice runs a :class:`~tfsem.campaigns.loop.FuzzLoop`, whose
   Hypothesis database lives under DIR (`DIR/hypothesis`), so failures saved
   on an earlier night are replayed first.

Killing a campaign loses nothing recorded: findings are committed one by one,
and a campaign left `running` is marked `interrupted` by the next one on the
same DIR.  `DIR/campaign.lock` keeps two campaigns from sharing a DIR at once.

On Dask (`--dask ADDRESS`) the same tasks run on the cluster's workers;
findings and statistics stream back through a `distributed.Queue`, and the
Hypothesis database entries of each unit travel with its task and come back
with its result, so the cluster needs no access to DIR.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import select
import selectors
import signal
import sqlite3
import subprocess
import sys
import time
import traceback
import uuid
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, TextIO

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, InMemoryExampleDatabase

from . import DEFAULT_MAX_NODES
from .findings import UNSOUND, FindingRecord
from .loop import FIXED, PRESENT, FuzzLoop, LoopConfig, replay
from .progress import Progress
from .sandbox import DEFAULT_PASS_TIMEOUT, PassSandbox
from .store import Store, StoreError, is_disk_full
from .text import counted
from .targets import CELLS, Cell, Target, cell_label, resolve_pass

HYPOTHESIS_DIR = "hypothesis"
LOCK_NAME = "campaign.lock"
WORKER_LOG = "workers.log"
#: space set aside while a campaign runs (DIR/campaign.reserve): on a full
#: disk it is given back so that the campaign can still be marked interrupted
RESERVE_NAME = "campaign.reserve"
RESERVE_BYTES = 64 << 10


class CampaignError(RuntimeError):
    """A campaign that cannot start (DIR in use, bad settings)."""


class DiskFull(CampaignError):
    """DIR's disk filled up: the campaign stopped, marked interrupted, with
    what it had stored intact (the message says what)."""


@dataclass
class CampaignSettings:
    """Everything a campaign run is given; stored with the campaign."""

    passes: list[str]
    budget: float
    out: str
    workers: int = 1
    cells: list[Cell] = field(default_factory=lambda: list(CELLS))
    seed: int | None = None
    max_nodes: int = DEFAULT_MAX_NODES
    pass_timeout: float = DEFAULT_PASS_TIMEOUT
    check_timeout: float = 5.0
    checker: str = "auto"
    generator: str | None = None
    dask: str | None = None
    #: None: DIR/hypothesis; "redis://HOST:PORT[/DB]": a Redis-backed one,
    #: shared by every machine that points at it; a folder path (e.g. on a
    #: shared file system); "none": no database
    example_db: str | None = None
    replay: bool = True
    round_seconds: float = 20.0
    #: runs of each program on a runtime target (`--target xla`)
    runtime_runs: int = 20
    #: pass spec -> the generator for that pass only (`--target grappler`'s
    #: own generator); the others use `generator`
    pass_generators: dict[str, str] = field(default_factory=dict)

    def unit_configs(self) -> list[LoopConfig]:
        """One LoopConfig per (pass, cell), passes interleaved so that a
        campaign cut short has touched every pass."""
        out = []
        for cell in self.cells:
            for spec in self.passes:
                out.append(LoopConfig(spec, cell[0], cell[1], max_nodes=self.max_nodes,
                                      pass_timeout=self.pass_timeout, check_timeout=self.check_timeout,
                                      checker=self.checker,
                                      generator=self.pass_generators.get(spec, self.generator),
                                      round_seconds=self.round_seconds,
                                      runtime_runs=self.runtime_runs))
        return out


@dataclass
class CampaignResult:
    campaign_id: int
    seconds: float
    status: str
    new: list[dict]
    known: list[dict]
    fixed: list[dict]
    totals: list[dict]
    errors: list[str]
    #: per pass and cell (Store.pass_statistics)
    cells: list[dict] = field(default_factory=list)
    #: this campaign's findings grouped by bug (Store.finding_groups)
    groups: list[dict] = field(default_factory=list)

    @property
    def weak_cells(self) -> list[dict]:
        """Cells without an unsound finding whose evidence is weak (evidence.py)."""
        from .evidence import weak_rows
        return weak_rows(self.cells)

    @property
    def weak(self) -> bool:
        """Finished with no finding against a claim, but some cell's evidence is weak."""
        return self.status == "finished" and not self.bugs and bool(self.weak_cells)

    @property
    def bugs(self) -> list[dict]:
        """Findings of this campaign that contradict a claim (or that claim
        nothing): crashes, timeouts, invalid output, unsound where claimed sound."""
        return [f for f in self.new + self.known if f["kind"] != UNSOUND or f["claim"] != "unsound"]


# ---------------------------------------------------------------------------
# Example databases


class JournaledDatabase(InMemoryExampleDatabase):
    """An in-memory example database that remembers what was saved and
    deleted, so that a Dask task can bring its changes home."""

    def __init__(self, entries: dict[bytes, list[bytes]] | None = None):
        super().__init__()
        for k, vs in (entries or {}).items():
            self.data[k] = set(vs)
        self.journal: list[tuple[str, bytes, bytes]] = []

    def save(self, key: bytes, value: bytes) -> None:
        super().save(key, value)
        self.journal.append(("save", key, bytes(value)))

    def delete(self, key: bytes, value: bytes) -> None:
        super().delete(key, value)
        self.journal.append(("delete", key, bytes(value)))


def _related_keys(key: bytes) -> list[bytes]:
    return [key, key + b".secondary", key + b".pareto"]


def open_example_db(settings: CampaignSettings) -> ExampleDatabase | None:
    spec = settings.example_db
    if spec == "none":
        return None
    if spec and spec.startswith("redis://"):
        try:
            import redis
            from hypothesis.extra.redis import RedisExampleDatabase
        except ImportError as exc:
            raise CampaignError(f"--example-db {spec} needs the redis package: {exc}") from None
        from datetime import timedelta
        return RedisExampleDatabase(redis.Redis.from_url(spec), key_prefix=b"tfsem:",
                                    expire_after=timedelta(days=60))
    if spec:  # a folder, e.g. on a file system every machine mounts
        return DirectoryBasedExampleDatabase(spec)
    return DirectoryBasedExampleDatabase(str(Path(settings.out) / HYPOTHESIS_DIR))


# ---------------------------------------------------------------------------
# Tasks: what a worker runs


def _unit_key(cfg: LoopConfig) -> bytes:
    return f"tfsem.fuzz/1:{cfg.pass_spec}:{cfg.semantics}/{cfg.observe}".encode()


def run_task(task: dict, emit: Callable[[tuple], None], database: ExampleDatabase | None,
             stop_at: float | None = None) -> dict:
    """Run one task (a fuzz slice or a replay), sending messages with `emit`:
    ("stats", pass_spec, semantics, observe, delta), ("finding", record JSON),
    ("replay", finding_id, status, record JSON or None).  `stop_at` is a
    wall-clock time (time.time()) after which the task winds down."""
    stop = (lambda: time.time() > stop_at) if stop_at else (lambda: False)
    if task["type"] == "replay":
        return _run_replay(task, emit)
    cfg = LoopConfig(**task["config"])
    seconds = min(task["seconds"], task["deadline"] - time.time())
    if seconds < 0.5:
        return {"skipped": True}

    def on_stats(delta: dict) -> None:
        emit(("stats", cfg.pass_spec, cfg.semantics, cfg.observe, delta))

    loop = FuzzLoop(cfg, database=database, on_finding=lambda r: emit(("finding", r.to_json())),
                    on_stats=on_stats, should_stop=stop)
    found = loop.run(seconds, shrink_seconds=task.get("shrink_seconds"))
    return {"findings": len(found), "programs": loop.stats.programs}


def _run_replay(task: dict, emit: Callable[[tuple], None]) -> dict:
    spec = task["pass_spec"]
    outcome = {"present": 0, "fixed": 0, "undecided": 0}
    with PassSandbox(spec, timeout=task["pass_timeout"]) as runner:
        loops: dict[tuple[str, str], FuzzLoop] = {}
        target = resolve_pass(spec)
        for item in task["findings"]:
            record = FindingRecord.from_json(item["record"])
            key = (record.semantics, record.observe)
            if key not in loops:
                cfg = LoopConfig(spec, record.semantics, record.observe, pass_timeout=task["pass_timeout"],
                                 check_timeout=task["check_timeout"], checker=task["checker"],
                                 generator=task.get("generator"),
                                 runtime_runs=task.get("runtime_runs", 20))
                loops[key] = FuzzLoop(cfg, target=target, runner=runner)
            status, again = replay(loops[key], record)
            outcome[status] += 1
            emit(("replay", item["finding_id"], status, again.to_json() if again else None))
    return outcome


# ---------------------------------------------------------------------------
# The coordinator


class _Lock:
    def __init__(self, directory: Path):
        self.path = directory / LOCK_NAME
        self.fd: int | None = None

    def acquire(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            self.fd = None
            raise CampaignError(f"another campaign is running on {self.path.parent} "
                                f"(it holds {self.path})") from None
        try:
            os.ftruncate(self.fd, 0)
            os.write(self.fd, f"{os.getpid()}\n".encode())
        except OSError as exc:
            self.release()
            raise (DiskFull if is_disk_full(exc, self.path.parent) else CampaignError)(
                f"cannot write {self.path}: {exc.strerror or exc}; the campaign did not start") from None

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


class _WorkerProcess:
    """A local worker (`python -m tfsem.campaigns.worker`) and its line protocol."""

    def __init__(self, hello: dict, log: Any = None):
        self.proc = subprocess.Popen([sys.executable, "-m", "tfsem.campaigns.worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=log if log is not None else subprocess.DEVNULL,
                                     close_fds=True)
        self.pid = self.proc.pid
        self.stdout = self.proc.stdout
        self.buf = b""
        self.eof = False
        self.task: int | None = None
        self._write(hello)

    @property
    def alive(self) -> bool:
        return not self.eof

    def _write(self, obj: dict) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(obj).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # it died: its stdout reaches end of file and the loop sees it

    def send(self, task: dict) -> None:
        self.task = task["id"]
        self._write(task)

    def finish(self) -> None:
        """No more tasks: closing its input makes it exit."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except OSError:
            pass

    def read(self) -> list[list]:
        chunk = os.read(self.stdout.fileno(), 1 << 16)
        if not chunk:
            self.eof = True
        self.buf += chunk
        out = []
        while b"\n" in self.buf:
            line, _, self.buf = self.buf.partition(b"\n")
            if line.strip():
                out.append(json.loads(line))
        return out

    def drain(self) -> None:
        """The process has exited: take what is left in its pipe without
        waiting, then count it as ended (end of file or not)."""
        fd = self.stdout.fileno()
        for _ in range(1024):
            if not select.select([fd], [], [], 0)[0]:
                break
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            self.buf += chunk
        self.eof = True

    def take_lines(self) -> list[list]:
        out = []
        while b"\n" in self.buf:
            line, _, self.buf = self.buf.partition(b"\n")
            if line.strip():
                out.append(json.loads(line))
        return out

    def reap(self) -> int | None:
        try:
            return self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


class Campaign:
    """One run of `tfsem fuzz` (build it, then call :meth:`run`)."""

    def __init__(self, settings: CampaignSettings, *, stream: TextIO | None = None,
                 live: bool | None = None, version: str | None = None):
        if settings.workers < 1:
            raise CampaignError("--workers must be at least 1")
        if not settings.passes:
            raise CampaignError("no passes to fuzz")
        self.settings = settings
        self.out = Path(settings.out)
        self.targets: dict[str, Target] = {spec: resolve_pass(spec) for spec in settings.passes}
        self.stream = stream
        self.live = live
        if version is None:
            from tfsem import __version__ as version
        self.version = version
        self.errors: list[str] = []
        #: workers that died during a task (a pass killed them, or the OOM
        #: killer did): the campaign is then "incomplete", not "finished"
        self.lost_workers = 0
        #: counters per (pass spec, semantics, observe) over the whole campaign
        self._cell_totals: dict[tuple, dict] = {}

    # -- plan -------------------------------------------------------------------------

    def settings_json(self) -> dict:
        s = asdict(self.settings)
        s["cells"] = [cell_label(c) for c in self.settings.cells]
        s["passes"] = {spec: {"name": t.name, "description": t.description,
                              "claims": t.claims_json()} for spec, t in self.targets.items()}
        s["example_db"] = self.settings.example_db or str(self.out / HYPOTHESIS_DIR)
        s["argv"] = sys.argv[1:]
        return s

    def _tasks(self, store: Store, deadline: float, shrink_seconds: float) -> list[dict]:
        tasks: list[dict] = []
        s = self.settings
        if s.replay:
            for spec, target in self.targets.items():
                rows = [f for f in store.open_findings()
                        if f["pass_spec"] == spec or (not f["pass_spec"] and f["pass"] == target.name)]
                if rows:
                    tasks.append({"type": "replay", "pass_spec": spec, "pass_timeout": s.pass_timeout,
                                  "check_timeout": s.check_timeout, "checker": s.checker,
                                  "generator": s.pass_generators.get(spec, s.generator),
                                  "runtime_runs": s.runtime_runs,
                                  "findings": [{"finding_id": f["id"], "record": Store.record_of(f).to_json()}
                                               for f in rows]})
        units = s.unit_configs()
        per_unit = max(1, math.ceil(s.workers / len(units)))
        seconds = s.budget * s.workers / (len(units) * per_unit)
        for k in range(per_unit):
            for i, cfg in enumerate(units):
                cfg = LoopConfig(**asdict(cfg))
                if s.seed is not None:
                    cfg.seed = hash_seed(s.seed, cfg.pass_spec, cfg.semantics, cfg.observe, k)
                tasks.append({"type": "fuzz", "config": asdict(cfg), "seconds": seconds,
                              "deadline": deadline, "shrink_seconds": shrink_seconds,
                              "stop_at": deadline + shrink_seconds})
        for i, t in enumerate(tasks):
            t["id"] = i
        return tasks

    # -- run ---------------------------------------------------------------------------

    def run(self) -> CampaignResult:
        old_term = None
        if _in_main_thread():  # SIGTERM stops a campaign as cleanly as Ctrl-C
            old_term = signal.signal(signal.SIGTERM, _raise_interrupt)
        try:
            return self._run()
        finally:
            if old_term is not None:
                signal.signal(signal.SIGTERM, old_term)

    def _run(self) -> CampaignResult:
        self.out.mkdir(parents=True, exist_ok=True)
        lock = _Lock(self.out)
        lock.acquire()
        try:
            store = Store(self.out)
        except StoreError as exc:
            lock.release()
            raise StoreError(f"{exc}; the campaign did not start") from None
        except BaseException:
            lock.release()
            raise
        started = time.time()
        reserve = self.out / RESERVE_NAME
        try:
            with open(reserve, "wb") as f:
                f.write(bytes(RESERVE_BYTES))
                f.flush()
                os.fsync(f.fileno())
            campaign_id = store.start_campaign(self.settings.budget, self.settings_json(), self.version)
        except (OSError, sqlite3.Error) as exc:
            store.close()
            reserve.unlink(missing_ok=True)
            lock.release()
            if is_disk_full(exc, self.out):
                raise DiskFull(f"{self.out}: no space left on the device ({exc}); "
                               "the campaign did not start") from None
            raise StoreError(f"{self.out}: cannot start a campaign ({exc})") from None
        self.campaign_id = campaign_id
        names = [t.name for t in self.targets.values()]
        self.progress = Progress(names, self.settings.budget, self.settings.workers,
                                 stream=self.stream, live=self.live)
        self.progress.note(f"campaign {campaign_id} on {self.out} ({', '.join(names)}; "
                           f"{len(self.settings.cells)} cell(s); budget {self.settings.budget:g} s)")
        self._pending_stats: dict[tuple, dict] = {}
        self._last_flush = time.monotonic()
        status = "finished"
        full: BaseException | None = None
        try:
            deadline = started + self.settings.budget
            shrink = min(30.0, max(3.0, 0.1 * self.settings.budget))
            tasks = self._tasks(store, deadline, shrink)
            if self.settings.dask:
                self._run_dask(store, tasks, deadline + shrink + 30)
            else:
                self._run_local(store, tasks, deadline + shrink + 30)
            for (spec, sem, obs), acc in self._cell_totals.items():
                if acc.get("generator_errors") and not acc.get("programs"):
                    self.errors.append(f"{self.targets[spec].name} {sem}/{obs}: the generator failed "
                                       f"{acc['generator_errors']} times and gave no program "
                                       f"({acc.get('last_error', 'no message')})")
            if self.lost_workers or self.errors:
                # a worker died, or a task failed: some passes were tried less
                # than planned, so the campaign did not finish as asked
                status = "incomplete"
        except KeyboardInterrupt:
            status = "interrupted"
            self.progress.note("interrupted: findings recorded so far are kept")
        except (OSError, sqlite3.Error) as exc:
            if not is_disk_full(exc, self.out):
                raise
            full, status = exc, "interrupted"
            self.progress.note(f"disk full ({exc}): stopped; findings recorded so far are kept")
        finally:
            marked = True
            try:
                try:
                    self._flush_stats(store, force=True)
                except (OSError, sqlite3.Error) as exc:
                    if not is_disk_full(exc, self.out):
                        raise
                    full, status = full or exc, "interrupted"
                    self._pending_stats = {}
                if full is not None:
                    reserve.unlink(missing_ok=True)   # room for the status below
                try:
                    store.finish_campaign(campaign_id, status)
                except (OSError, sqlite3.Error) as exc:
                    if full is None or not is_disk_full(exc, self.out):
                        raise
                    marked = False   # still `running`: the next campaign on DIR marks it
                self.progress.close()
                groups = store.campaign_findings(campaign_id)
                result = CampaignResult(campaign_id, time.time() - started, status, groups["new"],
                                        groups["known"], groups["fixed"], store.pass_totals(campaign_id),
                                        self.errors, store.pass_statistics(campaign_id),
                                        store.finding_groups(campaign_id))
                from .evidence import attach_shapes
                attach_shapes(result.cells, self._cell_totals,
                              {spec: t.name for spec, t in self.targets.items()},
                              {t.name for t in self.targets.values() if t.kind == "runtime"})
            finally:
                store.close()
                reserve.unlink(missing_ok=True)
                lock.release()
        if full is not None:
            n_new, n_known = len(result.new), len(result.known)
            tried = sum(int(t.get("programs") or 0) for t in result.totals)
            raise DiskFull(
                f"{self.out}: no space left on the device ({full}); campaign {campaign_id} stopped "
                + ("and is marked interrupted" if marked else
                   "(it could not even be marked interrupted: the next campaign on DIR marks it)")
                + f". What it stored is intact: {n_new + n_known} finding(s) ({n_new} new, {n_known} known) "
                f"and the statistics of {tried} program(s); free some space, then read them with "
                f"`tfsem report {self.out}` or run the campaign again")
        return result

    # -- messages ----------------------------------------------------------------------

    def _handle(self, store: Store, msg: tuple) -> None:
        kind = msg[0]
        if kind == "stats":
            _, spec, sem, obs, delta = msg
            key = (spec, sem, obs)
            for acc in (self._pending_stats.setdefault(key, {}), self._cell_totals.setdefault(key, {})):
                for k, v in delta.items():
                    if k == "shapes":
                        continue   # a slice's own count: the cell's is counted from new_shapes
                    if k == "new_shapes":
                        acc.setdefault(k, []).extend(v)
                        known = acc.setdefault("shape_set", set())
                        known.update(tuple(x) for x in v)
                        acc["shapes"] = len(known)
                    elif isinstance(v, (int, float)):
                        acc[k] = acc.get(k, 0) + v
                    elif k == "last_error" and v:
                        acc[k] = v
            self.progress.stats(self.targets[spec].name, delta)
            self._flush_stats(store)
        elif kind == "finding":
            record = FindingRecord.from_json(msg[1])
            fid, seen_as = store.record_finding(self.campaign_id, record)
            self.progress.finding(record.pass_name, record.kind, seen_as, record.message, record.size,
                                  fid, expected=not record.contradicts_claim)
        elif kind == "replay":
            _, fid, status, again = msg
            row = store.finding(fid)
            if status == PRESENT and again is not None:
                record = FindingRecord.from_json(again)
                nid, seen_as = store.record_finding(self.campaign_id, record)
                self.progress.finding(record.pass_name, record.kind, seen_as, f"{record.message} (replayed)",
                                      record.size, nid, expected=not record.contradicts_claim)
            elif status == FIXED and row is not None:
                store.mark_fixed(fid, self.campaign_id)
                self.progress.note(f"finding #{fid} ({row['pass']}, {row['kind']}) is fixed")
                if again is not None:
                    record = FindingRecord.from_json(again)
                    nid, seen_as = store.record_finding(self.campaign_id, record)
                    self.progress.finding(record.pass_name, record.kind, seen_as, record.message,
                                          record.size, nid, expected=not record.contradicts_claim)
        elif kind == "error":
            _, task_id, tb = msg
            self.errors.append(tb)
            self.progress.note(f"task {task_id} failed: {tb.strip().splitlines()[-1]}")

    def _flush_stats(self, store: Store, force: bool = False) -> None:
        if not self._pending_stats or (not force and time.monotonic() - self._last_flush < 2.0):
            return
        items = []
        for (spec, sem, obs), delta in self._pending_stats.items():
            t = self.targets[spec]
            items.append((t.name, sem, obs, delta, t.claim((sem, obs))))
        store.add_stats_many(self.campaign_id, items)
        self._pending_stats = {}
        self._last_flush = time.monotonic()

    # -- local workers -----------------------------------------------------------------

    def _run_local(self, store: Store, tasks: list[dict], hard_stop: float) -> None:
        hello = {"settings": asdict(self.settings), "sys_path": sys.path, "parent": os.getpid()}
        pending = deque(tasks)
        sel = selectors.DefaultSelector()
        workers: list[_WorkerProcess] = []
        restarts = 2 * self.settings.workers

        def assign(w: _WorkerProcess) -> None:
            if not pending:
                w.finish()
                return
            task = pending.popleft()
            if task["type"] == "fuzz":
                # the time left, shared fairly among the fuzz tasks still to
                # run: a task that ran over (shrinking) or ended early moves
                # the others' share, and none is starved
                left = task["deadline"] - time.time()
                waiting = 1 + sum(1 for t in pending if t["type"] == "fuzz")
                share = left * min(self.settings.workers, waiting) / waiting
                seconds = max(1.0, min(left, share))
                task = dict(task, seconds=seconds, deadline=time.time() + seconds,
                            shrink_seconds=min(30.0, max(1.0, 0.25 * seconds)))
            w.send(task)

        log = open(self.out / WORKER_LOG, "ab")  # what workers print on stderr, for diagnosis

        def start() -> None:
            w = _WorkerProcess(hello, log)
            workers.append(w)
            sel.register(w.stdout, selectors.EVENT_READ, w)
            assign(w)

        try:
            for _ in range(min(self.settings.workers, len(tasks))):
                start()
            while any(w.alive for w in workers):
                if time.time() > hard_stop:
                    self.progress.note("hard stop: workers still running were stopped")
                    break
                ready = [key.data for key, _ in sel.select(timeout=0.25)]
                # a worker that died is reaped now, not when the campaign ends:
                # its pipe may stay open (a child of it still holds it), so its
                # end of file is not waited for
                exited = [w for w in workers if w.alive and w not in ready and w.proc.poll() is not None]
                for w in ready + exited:
                    if w in exited:
                        w.drain()
                    messages = w.read() if w in ready else w.take_lines()
                    for msg in messages:
                        if msg[0] in ("done", "error"):
                            if msg[0] == "error":
                                self._handle(store, tuple(msg))
                            w.task = None
                            assign(w)
                        elif msg[0] != "start":
                            self._handle(store, tuple(msg))
                    if w.eof:
                        sel.unregister(w.stdout)
                        code = w.reap()
                        if w.task is not None:
                            why = (f"worker {w.pid} died (exit status {code}) during task {w.task}; "
                                   "its findings so far are kept; see DIR/workers.log")
                            self.errors.append(why)
                            self.lost_workers += 1
                            self.progress.note(why)
                            w.task = None
                            if pending and restarts > 0:
                                restarts -= 1
                                start()
                self.progress.draw()
        finally:
            for w in workers:
                w.kill()
            sel.close()
            log.close()

    # -- Dask --------------------------------------------------------------------------

    def _run_dask(self, store: Store, tasks: list[dict], hard_stop: float) -> None:
        try:
            from distributed import Client, Queue
        except ImportError:
            raise CampaignError("--dask needs dask's distributed package: "
                                "pip install 'tfsem[campaign]' (or dask[distributed])") from None
        local_db = open_example_db(self.settings)
        # Redis, or a folder every worker sees: the workers use it directly;
        # otherwise DIR/hypothesis entries travel with the tasks
        shared = bool(self.settings.example_db and self.settings.example_db != "none")
        client = Client(self.settings.dask, timeout=30)
        qname = f"tfsem-campaign-{self.campaign_id}-{uuid.uuid4().hex[:8]}"
        q = Queue(qname, client=client)
        futures = {}
        try:
            for t in tasks:
                entries = None
                if t["type"] == "fuzz" and local_db is not None and not shared:
                    key = _unit_key(LoopConfig(**t["config"]))
                    entries = {k: list(local_db.fetch(k)) for k in _related_keys(key)}
                fut = client.submit(_dask_task, t, qname, entries, self.settings.example_db if shared else None,
                                    pure=False, key=f"tfsem-{self.campaign_id}-{t['id']}-{uuid.uuid4().hex[:6]}")
                futures[fut.key] = fut
            pending = dict(futures)
            while pending:
                if time.time() > hard_stop:
                    self.progress.note("hard stop: Dask tasks still running were cancelled")
                    break
                for msg in q.get(batch=True):
                    self._handle(store, tuple(json.loads(msg)))
                for k, fut in list(pending.items()):
                    if fut.status == "finished":
                        result = fut.result()
                        for op, key, value in result.get("journal", []):
                            if local_db is not None:
                                (local_db.save if op == "save" else local_db.delete)(key, value)
                        del pending[k]
                    elif fut.status in ("error", "cancelled"):
                        try:
                            fut.result()
                        except Exception:
                            tb = traceback.format_exc()[-4000:]
                            self._handle(store, ("error", k, tb))
                        del pending[k]
                self.progress.draw()
                time.sleep(0.2)
            time.sleep(0.5)
            for msg in q.get(batch=True):
                self._handle(store, tuple(json.loads(msg)))
        finally:
            for fut in futures.values():
                if fut.status == "pending":
                    fut.cancel()
            client.close()


def _dask_task(task: dict, queue_name: str, entries: dict | None, shared_db: str | None) -> dict:
    """A task on a Dask worker: messages go back through the named queue."""
    from distributed import Queue, get_client

    q = Queue(queue_name, client=get_client())

    def emit(msg: tuple) -> None:
        q.put(json.dumps(list(msg)))  # as text: Dask's serialization turns lists into tuples

    if shared_db:
        database: ExampleDatabase | None = open_example_db(CampaignSettings([], 0, "", example_db=shared_db))
        journaled = None
    else:
        journaled = JournaledDatabase(entries) if entries is not None else None
        database = journaled
    summary = run_task(task, emit, database, stop_at=task.get("stop_at"))
    summary["journal"] = journaled.journal if journaled is not None else []
    return summary


# ---------------------------------------------------------------------------


def hash_seed(*parts: Any) -> int:
    import hashlib
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big")


def _in_main_thread() -> bool:
    import threading
    return threading.current_thread() is threading.main_thread()


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run_campaign(settings: CampaignSettings, **kw: Any) -> CampaignResult:
    return Campaign(settings, **kw).run()



def _without_cell(f: dict) -> str:
    """A finding's message without the trailing "(semantics, observe)" the
    loop stores, where the line already names the cell in brackets."""
    suffix = f" ({f['semantics']}, {f['observe']})"
    message = f["message"] or ""
    return message[: -len(suffix)] if message.endswith(suffix) else message

def summarize(result: CampaignResult, out: Path, stream: TextIO) -> None:
    """The text printed at the end of `tfsem fuzz`: how hard each pass was
    tried per cell, the findings grouped by bug (the smallest of each group
    shown, the others as members), the verdict of the exit rule, and where to
    read the report."""
    from .text import effort_text, rarely_changes_warning

    p = lambda *a: print(*a, file=stream)  # noqa: E731
    p(f"campaign {result.campaign_id} {result.status} in {result.seconds:.1f} s; database {out / 'campaign.db'}")
    if result.cells:
        width = max(len(c["pass"]) for c in result.cells)
        p(f"  {'pass':<{width}}  {'cell':<24}  {'claim':<8}  {'prog/s':>7}  tried")
        for c in result.cells:
            cell = f"{c['semantics']}/{c['observe']}"
            kinds = ", ".join(f"{k} {n}" for k, n in c["findings"].items() if n)
            p(f"  {c['pass']:<{width}}  {cell:<24}  {c['claim'] or '-':<8}  "
              f"{c['programs_per_second']:>7.1f}  {effort_text(c)}" + (f"; findings: {kinds}" if kinds else ""))
    for t in result.totals:
        warning = rarely_changes_warning(t["pass"], t)
        if warning:
            p(warning)
    statuses = {f["id"]: label for label, rows in (("new", result.new), ("known", result.known))
                for f in rows}
    groups = [g for g in result.groups if any(m in statuses for m in g["members"])]
    if groups:
        n = sum(len(g["members"]) for g in groups)
        p(f"findings: {len(groups)} distinct ({counted(n, 'program')})")
        for g in groups:
            f = g["representative"]
            expected = f["kind"] == UNSOUND and f["claim"] == "unsound"
            tag = "expected" if expected else "BUG"
            status = "new" if any(statuses.get(m) == "new" for m in g["members"]) else "known"
            p(f"  #{f['id']} {status} {f['pass']} {f['kind']} [{f['semantics']}/{f['observe']}] "
              f"{f['nodes']} nodes, seen {g['times_seen']}x ({tag}): {_without_cell(f)}")
            others = [m for m in g["members"] if m != f["id"]]
            if others:
                p(f"     same bug: {', '.join(f'#{m}' for m in others)}")
    if result.fixed:
        p(f"fixed findings ({len(result.fixed)}):")
        for f in result.fixed:
            p(f"  #{f['id']} {f['pass']} {f['kind']} [{f['semantics']}/{f['observe']}]: {_without_cell(f)}")
    for e in result.errors:
        p(f"error: {e.strip().splitlines()[-1]}")
    bugs = result.bugs
    if result.status == "interrupted":
        p("result: interrupted (exit status 130)")
    elif result.status == "incomplete":
        n = len(result.errors)
        why = "a worker died during a task" if any(" died " in e for e in result.errors) else \
            f"{n} error{'s' if n != 1 else ''} stopped work as planned (see the error lines above)"
        p(f"result: FAIL, {why}, so some passes were tried less than planned (exit status 1)")
    elif bugs:
        ids = {f["id"] for f in bugs}
        n = sum(1 for g in groups if ids & set(g["members"])) or len(bugs)
        p(f"result: FAIL, {n} distinct "
          + ("finding contradicts a claim or shows" if n == 1 else "findings contradict a claim or show")
          + " a pass crash, hang or return an invalid program (exit status 1)")
    elif result.weak:
        from .evidence import WEAK_ADVICE, weak_reason
        weak = result.weak_cells
        p(f"result: WEAK, no finding contradicts a claim, but in {len(weak)} of {len(result.cells)} "
          "cells a pass changed too little to say so (exit status 4):")
        for c in weak:
            p(f"  {c['pass']} {c['semantics']}/{c['observe']}: {weak_reason(c)}")
        p(f"  {WEAK_ADVICE}")
    else:
        p("result: pass, no finding contradicts a claim (exit status 0)")
    p(f"report: tfsem report {out}")
