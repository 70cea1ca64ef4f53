"""The campaign database, `DIR/campaign.db` (SQLite).

Tables (schema version :data:`SCHEMA_VERSION`, kept in `PRAGMA user_version`):

- `campaigns`: one row per `tfsem fuzz` run: start, end (NULL while running
  or when killed), last activity, budget, settings (JSON: passes with their
  claims, cells, workers, seeds, limits), tfsem version, status (`running`,
  `finished`, `interrupted`).
- `pass_stats`: per campaign, pass and (semantics, observe) cell: programs
  tested, seconds, verdict counts, errors of the checker or generator, and
  `shapes`, the number of distinct change shapes (campaigns/steer.py) of the
  programs the pass changed there (NULL where none were kept: a runtime
  target, or a campaign stored before schema 3).
- `pass_shapes`: the distinct change shapes themselves, per campaign, pass
  and cell, so that slices fuzzing one cell on several workers count a
  shape once.
- `findings`: one row per distinct finding (by signature, see
  signature.py): pass, kind, cell, the minimized case (`tfsem.case/1`, what
  `tfsem check` replays), σ, schedule, verdict JSON, first and last seen, how
  often seen, status (`new`, `known`, `fixed`) and the campaigns involved.
- `finding_campaigns`: which campaigns saw which finding, how often.

Durability: WAL journal, `synchronous=FULL`, one transaction per finding,
so a campaign killed with SIGKILL loses nothing it recorded.  Readers (the
report, the service) may read while a campaign writes.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterable

from .findings import KINDS, FindingRecord
from .signature import canonical_program, group_key, record_signature

#: 1: the first; 2: findings.group_key (one bug, one group: signature.group_key);
#: 3: pass_stats.shapes and pass_shapes (the distinct change shapes per cell)
SCHEMA_VERSION = 3
DB_NAME = "campaign.db"

NEW, KNOWN, FIXED = "new", "known", "fixed"

_SCHEMA = """
CREATE TABLE campaigns (
    id        INTEGER PRIMARY KEY,
    started   REAL NOT NULL,
    ended     REAL,
    updated   REAL,
    budget    REAL,
    status    TEXT NOT NULL DEFAULT 'running',
    settings  TEXT NOT NULL,
    version   TEXT NOT NULL,
    host      TEXT,
    pid       INTEGER
);
CREATE TABLE pass_stats (
    campaign_id       INTEGER NOT NULL REFERENCES campaigns(id),
    pass              TEXT NOT NULL,
    semantics         TEXT NOT NULL,
    observe           TEXT NOT NULL,
    claim             TEXT,
    programs          INTEGER NOT NULL DEFAULT 0,
    seconds           REAL NOT NULL DEFAULT 0,
    sound             INTEGER NOT NULL DEFAULT 0,
    no_counterexample INTEGER NOT NULL DEFAULT 0,
    unknown           INTEGER NOT NULL DEFAULT 0,
    identical         INTEGER NOT NULL DEFAULT 0,
    checker_errors    INTEGER NOT NULL DEFAULT 0,
    generator_errors  INTEGER NOT NULL DEFAULT 0,
    rounds            INTEGER NOT NULL DEFAULT 0,
    pass_seconds      REAL NOT NULL DEFAULT 0,
    check_seconds     REAL NOT NULL DEFAULT 0,
    last_error        TEXT NOT NULL DEFAULT '',
    shapes            INTEGER,
    PRIMARY KEY (campaign_id, pass, semantics, observe)
);
CREATE TABLE findings (
    id              INTEGER PRIMARY KEY,
    signature       TEXT NOT NULL UNIQUE,
    pass            TEXT NOT NULL,
    pass_spec       TEXT NOT NULL DEFAULT '',
    kind            TEXT NOT NULL,
    semantics       TEXT NOT NULL,
    observe         TEXT NOT NULL,
    claim           TEXT,
    differs         TEXT,
    message         TEXT NOT NULL DEFAULT '',
    nodes           INTEGER NOT NULL,
    original        TEXT NOT NULL,
    rewritten       TEXT,
    case_json       TEXT,
    canonical       TEXT NOT NULL,
    feeds           TEXT NOT NULL,
    init            TEXT NOT NULL,
    schedule        TEXT,
    verdict         TEXT,
    detail          TEXT NOT NULL,
    first_seen      REAL NOT NULL,
    last_seen       REAL NOT NULL,
    times_seen      INTEGER NOT NULL DEFAULT 1,
    status          TEXT NOT NULL DEFAULT 'new',
    first_campaign  INTEGER REFERENCES campaigns(id),
    last_campaign   INTEGER REFERENCES campaigns(id),
    fixed_campaign  INTEGER REFERENCES campaigns(id),
    group_key       TEXT
);
CREATE INDEX findings_by_pass ON findings(pass, kind);
CREATE TABLE finding_campaigns (
    finding_id  INTEGER NOT NULL REFERENCES findings(id),
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    times       INTEGER NOT NULL DEFAULT 0,
    first_seen  REAL NOT NULL,
    last_seen   REAL NOT NULL,
    PRIMARY KEY (finding_id, campaign_id)
);
"""

_PASS_SHAPES = """CREATE TABLE IF NOT EXISTS pass_shapes (
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    pass        TEXT NOT NULL,
    semantics   TEXT NOT NULL,
    observe     TEXT NOT NULL,
    shape       TEXT NOT NULL,
    PRIMARY KEY (campaign_id, pass, semantics, observe, shape)
)"""

#: Counters of pass_stats that statistics deltas add to.
STAT_COUNTERS = ("programs", "seconds", "sound", "no_counterexample", "unknown", "identical",
                 "checker_errors", "generator_errors", "rounds", "pass_seconds", "check_seconds")

_JSON_COLUMNS = ("differs", "original", "rewritten", "case_json", "canonical", "feeds", "init",
                 "schedule", "verdict", "detail")


class StoreError(RuntimeError):
    """The database cannot be used (written by a newer tfsem, or corrupt)."""


_SQLITE_FULL, _SQLITE_IOERR = 13, 10
#: a filesystem with less free space than this, where SQLite reports an I/O
#: error (its shared-memory index cannot grow), is taken as full
_LOW_SPACE = 1 << 20


def _little_space(directory: str | os.PathLike | None) -> bool:
    if directory is None:
        return False
    try:
        st = os.statvfs(directory)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < _LOW_SPACE


def is_disk_full(exc: BaseException, directory: str | os.PathLike | None = None) -> bool:
    """A write failed for want of space: ENOSPC or EDQUOT from the system,
    SQLITE_FULL ("database or disk is full") from SQLite, or SQLite's "disk
    I/O error" where `directory`'s filesystem has (almost) no space left."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        primary = code & 0xff if isinstance(code, int) else None
        if primary == _SQLITE_FULL or "disk is full" in str(exc):
            return True
        return (primary == _SQLITE_IOERR or "disk I/O error" in str(exc)) and _little_space(directory)
    return False


def _dumps(obj: Any) -> str | None:
    return None if obj is None else json.dumps(obj, sort_keys=True, allow_nan=False)


class Store:
    """A campaign database.  One connection per Store; create one per process."""

    def __init__(self, directory: str | os.PathLike, *, readonly: bool = False):
        self.directory = Path(directory)
        self.path = self.directory / DB_NAME
        if readonly:
            if not self.path.exists():
                raise StoreError(f"no campaign database at {self.path}")
            self.conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30)
        else:
            self.directory.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(self.path, timeout=30)
        self.conn.row_factory = sqlite3.Row
        try:
            self.conn.execute("PRAGMA busy_timeout = 30000")
            if not readonly:
                self.conn.execute("PRAGMA journal_mode = WAL")
                self.conn.execute("PRAGMA synchronous = FULL")
                self.conn.execute("PRAGMA foreign_keys = ON")
            self._migrate(readonly)
        except sqlite3.DatabaseError as exc:  # not a database, or a corrupt one
            self.conn.close()
            if is_disk_full(exc, self.directory):
                raise StoreError(f"{self.path}: no space left on the device ({exc})") from None
            code = getattr(exc, "sqlite_errorcode", None)
            if isinstance(code, int) and code & 0xff == _SQLITE_IOERR:
                raise StoreError(f"{self.path}: cannot be read or written ({exc}); check the disk, "
                                 "its free space and the permissions") from None
            raise StoreError(f"{self.path}: not a readable campaign database ({exc}); "
                             "move it away to start a new one") from None

    # -- schema -----------------------------------------------------------------

    def _migrate(self, readonly: bool) -> None:
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path} has schema version {version}; this tfsem reads up to "
                             f"{SCHEMA_VERSION} (upgrade tfsem)")
        if version == SCHEMA_VERSION:
            return
        if readonly:
            # a reader takes an older database as it is: what a later schema
            # added is computed when read (_finding_row), nothing is written
            if version >= 1:
                return
            raise StoreError(f"{self.path} has schema version {version}, not {SCHEMA_VERSION}")
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if version == 0 and not tables:
            self.conn.executescript("BEGIN;" + _SCHEMA + _PASS_SHAPES + ";"
                                    + f"PRAGMA user_version = {SCHEMA_VERSION};COMMIT;")
            return
        if version == 1:  # 1 -> 2: findings get their group; every row is kept as it was
            with self.conn:
                cols = {r[1] for r in self.conn.execute("PRAGMA table_info(findings)")}
                if "group_key" not in cols:
                    self.conn.execute("ALTER TABLE findings ADD COLUMN group_key TEXT")
                for r in self.conn.execute("SELECT * FROM findings").fetchall():
                    key = _group_of(self._finding_row(r, compute_group=False))
                    self.conn.execute("UPDATE findings SET group_key = ? WHERE id = ?", (key, r["id"]))
                self.conn.execute("PRAGMA user_version = 2")
            version = 2
        if version == 2:  # 2 -> 3: change shapes per cell; stored rows kept, their shapes NULL (not kept)
            with self.conn:
                cols = {r[1] for r in self.conn.execute("PRAGMA table_info(pass_stats)")}
                if "shapes" not in cols:
                    self.conn.execute("ALTER TABLE pass_stats ADD COLUMN shapes INTEGER")
                self.conn.execute(_PASS_SHAPES)
                self.conn.execute("PRAGMA user_version = 3")
            version = 3
        if version == SCHEMA_VERSION:
            return
        raise StoreError(f"{self.path}: unknown schema (user_version {version}, tables {sorted(tables)})")

    @property
    def schema_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- campaigns ----------------------------------------------------------------

    def start_campaign(self, budget: float | None, settings: dict, version: str) -> int:
        """Record a new campaign; campaigns left `running` by a killed process
        become `interrupted` (the caller holds DIR's lock, so none is alive)."""
        now = time.time()
        with self.conn:
            self.conn.execute("UPDATE campaigns SET status = 'interrupted', ended = COALESCE(updated, started) "
                              "WHERE status = 'running'")
            cur = self.conn.execute(
                "INSERT INTO campaigns (started, updated, budget, status, settings, version, host, pid) "
                "VALUES (?, ?, ?, 'running', ?, ?, ?, ?)",
                (now, now, budget, _dumps(settings), version, socket.gethostname(), os.getpid()))
        return int(cur.lastrowid)

    def finish_campaign(self, campaign_id: int, status: str = "finished") -> None:
        now = time.time()
        with self.conn:
            self.conn.execute("UPDATE campaigns SET ended = ?, updated = ?, status = ? WHERE id = ?",
                              (now, now, status, campaign_id))

    def touch(self, campaign_id: int) -> None:
        with self.conn:
            self.conn.execute("UPDATE campaigns SET updated = ? WHERE id = ?", (time.time(), campaign_id))

    def campaigns(self) -> list[dict]:
        return [self._campaign_row(r) for r in self.conn.execute("SELECT * FROM campaigns ORDER BY id")]

    def campaign(self, campaign_id: int) -> dict | None:
        r = self.conn.execute("SELECT * FROM campaigns WHERE id = ?", (campaign_id,)).fetchone()
        return self._campaign_row(r) if r else None

    def latest_campaign(self) -> dict | None:
        r = self.conn.execute("SELECT * FROM campaigns ORDER BY id DESC LIMIT 1").fetchone()
        return self._campaign_row(r) if r else None

    @staticmethod
    def _campaign_row(r: sqlite3.Row) -> dict:
        d = dict(r)
        d["settings"] = json.loads(d["settings"])
        return d

    # -- statistics ----------------------------------------------------------------

    def add_stats(self, campaign_id: int, pass_name: str, semantics: str, observe: str,
                  delta: dict, claim: str | None = None) -> None:
        """Add a statistics delta (LoopStats.minus) to a pass's cell."""
        self.add_stats_many(campaign_id, [(pass_name, semantics, observe, delta, claim)])

    def add_stats_many(self, campaign_id: int,
                       items: Iterable[tuple[str, str, str, dict, str | None]]) -> None:
        """Add each delta to its cell.  A delta's `new_shapes` (change shapes,
        each a list of tags) are stored once per cell, and the cell's
        `shapes` becomes their number; a cell whose deltas never carry
        `new_shapes` keeps NULL there (its shapes are not kept)."""
        sets = ", ".join(f"{c} = {c} + ?" for c in STAT_COUNTERS)
        with self.conn:
            for pass_name, semantics, observe, delta, claim in items:
                key = (campaign_id, pass_name, semantics, observe)
                if delta.get("new_shapes") is not None:
                    self.conn.execute(
                        "INSERT OR IGNORE INTO pass_stats (campaign_id, pass, semantics, observe, claim) "
                        "VALUES (?, ?, ?, ?, ?)", (*key, claim))
                    self.conn.executemany(
                        "INSERT OR IGNORE INTO pass_shapes (campaign_id, pass, semantics, observe, shape) "
                        "VALUES (?, ?, ?, ?, ?)",
                        [(*key, json.dumps(list(shape))) for shape in delta["new_shapes"]])
                    self.conn.execute(
                        "UPDATE pass_stats SET shapes = (SELECT COUNT(*) FROM pass_shapes WHERE "
                        "campaign_id = ? AND pass = ? AND semantics = ? AND observe = ?) "
                        "WHERE campaign_id = ? AND pass = ? AND semantics = ? AND observe = ?", key + key)
                self.conn.execute(
                    "INSERT OR IGNORE INTO pass_stats (campaign_id, pass, semantics, observe, claim) "
                    "VALUES (?, ?, ?, ?, ?)", (campaign_id, pass_name, semantics, observe, claim))
                values = [delta.get(c, 0) or 0 for c in STAT_COUNTERS]
                self.conn.execute(
                    f"UPDATE pass_stats SET {sets}, last_error = CASE WHEN ? != '' THEN ? ELSE last_error END "
                    "WHERE campaign_id = ? AND pass = ? AND semantics = ? AND observe = ?",
                    (*values, delta.get("last_error", "") or "", delta.get("last_error", "") or "",
                     campaign_id, pass_name, semantics, observe))
            self.conn.execute("UPDATE campaigns SET updated = ? WHERE id = ?", (time.time(), campaign_id))

    def pass_statistics(self, campaign_id: int) -> list[dict]:
        """Per pass and cell: the counters, `changed` (programs the pass
        changed: programs - identical), programs per second, and the distinct
        findings of this campaign by kind."""
        rows = [dict(r) for r in self.conn.execute(
            "SELECT * FROM pass_stats WHERE campaign_id = ? ORDER BY pass, semantics, observe",
            (campaign_id,))]
        found = self._findings_by_kind(campaign_id, by_cell=True)
        for r in rows:
            r["programs_per_second"] = r["programs"] / r["seconds"] if r["seconds"] else 0.0
            r["changed"] = max(0, r["programs"] - r["identical"])
            r["findings"] = found.get((r["pass"], r["semantics"], r["observe"]), {k: 0 for k in KINDS})
            r.setdefault("shapes", None)   # a schema-2 database read as it is: not kept
        return rows

    def cell_shapes(self, campaign_id: int, pass_name: str, semantics: str,
                    observe: str) -> list[tuple[str, ...]]:
        """The distinct change shapes stored for one cell (none before schema 3)."""
        if not self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'pass_shapes'").fetchone():
            return []
        return [tuple(json.loads(r[0])) for r in self.conn.execute(
            "SELECT shape FROM pass_shapes WHERE campaign_id = ? AND pass = ? AND semantics = ? "
            "AND observe = ? ORDER BY shape", (campaign_id, pass_name, semantics, observe))]

    def pass_totals(self, campaign_id: int) -> list[dict]:
        """Per pass (cells added up), with `changed` and distinct findings by kind."""
        totals: dict[str, dict] = {}
        for r in self.conn.execute("SELECT * FROM pass_stats WHERE campaign_id = ? ORDER BY pass",
                                   (campaign_id,)):
            t = totals.setdefault(r["pass"], {"pass": r["pass"], **{c: 0 for c in STAT_COUNTERS},
                                              "claims": {}})
            for c in STAT_COUNTERS:
                t[c] += r[c]
            if r["claim"]:
                t["claims"][f"{r['semantics']}/{r['observe']}"] = r["claim"]
        found = self._findings_by_kind(campaign_id, by_cell=False)
        for name, t in totals.items():
            t["programs_per_second"] = t["programs"] / t["seconds"] if t["seconds"] else 0.0
            t["changed"] = max(0, t["programs"] - t["identical"])
            t["findings"] = found.get((name,), {k: 0 for k in KINDS})
        return list(totals.values())

    def _findings_by_kind(self, campaign_id: int, by_cell: bool) -> dict[tuple, dict[str, int]]:
        out: dict[tuple, dict[str, int]] = {}
        for r in self.conn.execute(
                "SELECT f.pass, f.kind, f.semantics, f.observe FROM findings f "
                "JOIN finding_campaigns fc ON fc.finding_id = f.id WHERE fc.campaign_id = ?",
                (campaign_id,)):
            key = (r["pass"], r["semantics"], r["observe"]) if by_cell else (r["pass"],)
            out.setdefault(key, {k: 0 for k in KINDS})[r["kind"]] += 1
        return out

    # -- findings ------------------------------------------------------------------

    def record_finding(self, campaign_id: int, record: FindingRecord) -> tuple[int, str]:
        """Store a finding (one transaction).  Returns (finding id, what it
        is for this campaign): "new" (never seen before), "known" (seen in an
        earlier campaign) or "repeat" (already seen in this campaign)."""
        signature = record_signature(record)
        now = record.found_at or time.time()
        with self.conn:
            row = self.conn.execute("SELECT id, first_campaign, status FROM findings WHERE signature = ?",
                                    (signature,)).fetchone()
            if row is None:
                cur = self.conn.execute(
                    "INSERT INTO findings (signature, pass, pass_spec, kind, semantics, observe, claim, "
                    "differs, message, nodes, original, rewritten, case_json, canonical, feeds, init, "
                    "schedule, verdict, detail, first_seen, last_seen, times_seen, status, "
                    "first_campaign, last_campaign, group_key) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 'new', ?, ?, ?)",
                    (signature, record.pass_name, record.pass_spec, record.kind, record.semantics,
                     record.observe, record.claim, _dumps(record.differs), record.message, record.size,
                     _dumps(record.original), _dumps(record.rewritten), _dumps(record.case()),
                     _dumps(canonical_program(record.original)), _dumps(record.feeds),
                     _dumps(record.init), _dumps(record.schedule), _dumps(record.verdict),
                     _dumps(record.detail), now, now, campaign_id, campaign_id, group_key(record)))
                finding_id, seen_as = int(cur.lastrowid), NEW
            else:
                finding_id = int(row["id"])
                earlier = row["first_campaign"] != campaign_id
                in_this = self.conn.execute(
                    "SELECT 1 FROM finding_campaigns WHERE finding_id = ? AND campaign_id = ?",
                    (finding_id, campaign_id)).fetchone() is not None
                seen_as = "repeat" if in_this else (KNOWN if earlier else NEW)
                status = KNOWN if earlier else NEW
                self.conn.execute(
                    "UPDATE findings SET last_seen = ?, times_seen = times_seen + 1, status = ?, "
                    "last_campaign = ? WHERE id = ?", (now, status, campaign_id, finding_id))
            self.conn.execute(
                "INSERT INTO finding_campaigns (finding_id, campaign_id, times, first_seen, last_seen) "
                "VALUES (?, ?, 1, ?, ?) ON CONFLICT (finding_id, campaign_id) DO UPDATE SET "
                "times = times + 1, last_seen = excluded.last_seen",
                (finding_id, campaign_id, now, now))
        return finding_id, seen_as

    def mark_fixed(self, finding_id: int, campaign_id: int) -> None:
        with self.conn:
            self.conn.execute("UPDATE findings SET status = 'fixed', fixed_campaign = ? WHERE id = ?",
                              (campaign_id, finding_id))

    def finding(self, finding_id: int) -> dict | None:
        r = self.conn.execute("SELECT * FROM findings WHERE id = ?", (finding_id,)).fetchone()
        return self._finding_row(r) if r else None

    def finding_by_signature(self, signature: str) -> dict | None:
        r = self.conn.execute("SELECT * FROM findings WHERE signature = ?", (signature,)).fetchone()
        return self._finding_row(r) if r else None

    def findings(self, *, status: str | None = None, pass_name: str | None = None,
                 kind: str | None = None) -> list[dict]:
        sql, args = "SELECT * FROM findings WHERE 1", []
        for col, val in (("status", status), ("pass", pass_name), ("kind", kind)):
            if val is not None:
                sql += f" AND {col} = ?"
                args.append(val)
        return [self._finding_row(r) for r in self.conn.execute(sql + " ORDER BY id", args)]

    def open_findings(self, pass_names: Iterable[str] | None = None) -> list[dict]:
        """Findings not marked fixed (optionally of some passes only)."""
        rows = [f for f in self.findings() if f["status"] != FIXED]
        if pass_names is not None:
            wanted = set(pass_names)
            rows = [f for f in rows if f["pass"] in wanted or f["pass_spec"] in wanted]
        return rows

    def campaign_findings(self, campaign_id: int) -> dict[str, list[dict]]:
        """This campaign's findings: `new` (first seen in it), `known` (seen in
        it and in an earlier one) and `fixed` (found fixed by it)."""
        seen = [self._finding_row(r) for r in self.conn.execute(
            "SELECT f.* FROM findings f JOIN finding_campaigns fc ON fc.finding_id = f.id "
            "WHERE fc.campaign_id = ? ORDER BY f.id", (campaign_id,))]
        fixed = [self._finding_row(r) for r in self.conn.execute(
            "SELECT * FROM findings WHERE fixed_campaign = ? AND status = 'fixed' ORDER BY id",
            (campaign_id,))]
        return {NEW: [f for f in seen if f["first_campaign"] == campaign_id],
                KNOWN: [f for f in seen if f["first_campaign"] != campaign_id],
                FIXED: fixed}

    def history(self) -> list[dict]:
        """Per campaign: programs, seconds, programs per second, and findings
        new/known/fixed, for a plot over the nights."""
        out = []
        for c in self.campaigns():
            s = self.conn.execute("SELECT COALESCE(SUM(programs), 0) AS programs, "
                                  "COALESCE(SUM(seconds), 0) AS seconds FROM pass_stats "
                                  "WHERE campaign_id = ?", (c["id"],)).fetchone()
            groups = self.campaign_findings(c["id"])
            out.append({"campaign": c["id"], "started": c["started"], "status": c["status"],
                        "programs": s["programs"], "seconds": s["seconds"],
                        "programs_per_second": s["programs"] / s["seconds"] if s["seconds"] else 0.0,
                        **{k: len(v) for k, v in groups.items()}})
        return out

    def finding_groups(self, campaign_id: int | None = None) -> list[dict]:
        """One bug, one entry: the findings (of one campaign, or all) grouped
        by `group_key`, each group with its smallest finding as
        `representative` and every finding's id in `members` (the
        representative first).  Groups are ordered by their first finding."""
        if campaign_id is None:
            rows = self.findings()
        else:
            rows = [self._finding_row(r) for r in self.conn.execute(
                "SELECT f.* FROM findings f JOIN finding_campaigns fc ON fc.finding_id = f.id "
                "WHERE fc.campaign_id = ? ORDER BY f.id", (campaign_id,))]
        groups: dict[str, list[dict]] = {}
        for f in rows:
            groups.setdefault(f["group_key"], []).append(f)
        out = []
        for key, members in groups.items():
            members = sorted(members, key=lambda f: (f["nodes"], len(json.dumps(f["original"])), f["id"]))
            rep = members[0]
            out.append({"group": key, "pass": rep["pass"], "kind": rep["kind"],
                        "semantics": rep["semantics"], "observe": rep["observe"], "claim": rep["claim"],
                        "representative": rep, "members": [f["id"] for f in members],
                        "times_seen": sum(f["times_seen"] for f in members),
                        "first_id": min(f["id"] for f in members)})
        return sorted(out, key=lambda g: g["first_id"])

    @staticmethod
    def _finding_row(r: sqlite3.Row, compute_group: bool = True) -> dict:
        d = dict(r)
        for c in _JSON_COLUMNS:
            if d.get(c) is not None:
                d[c] = json.loads(d[c])
        if compute_group and not d.get("group_key"):  # a row of a schema-1 database read as it is
            d["group_key"] = _group_of(d)
        return d

    @staticmethod
    def record_of(row: dict) -> FindingRecord:
        """The FindingRecord a stored finding row came from."""
        return FindingRecord(pass_name=row["pass"], pass_spec=row["pass_spec"], kind=row["kind"],
                             semantics=row["semantics"], observe=row["observe"],
                             original=row["original"], rewritten=row["rewritten"],
                             verdict=row["verdict"], message=row["message"], feeds=row["feeds"],
                             init=row["init"], schedule=row["schedule"], detail=row["detail"],
                             claim=row["claim"], found_at=row["last_seen"])


def _group_of(row: dict) -> str:
    """The group of a stored finding row (signature.group_key of its record)."""
    return group_key(Store.record_of(row))
