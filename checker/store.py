"""The practice history: SQLite in the user's data dir (KATA_HOME overrides).

WAL mode, one transaction per write and a busy timeout: two `kata check` runs at once
never fail on a locked database, and a process killed mid-write leaves it readable
(SQLite rolls the unfinished transaction back on the next open).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

SCHEMA = [
    # version 1
    """
    CREATE TABLE attempts (
        id INTEGER PRIMARY KEY,
        ts REAL NOT NULL,
        kata TEXT NOT NULL,
        status TEXT NOT NULL,
        passed INTEGER NOT NULL,
        total INTEGER NOT NULL,
        seconds REAL NOT NULL,
        file TEXT NOT NULL,
        mode TEXT NOT NULL DEFAULT 'practice',
        session TEXT,
        diagnoses TEXT NOT NULL DEFAULT '[]'
    );
    CREATE INDEX attempts_kata ON attempts(kata, ts);
    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        ts REAL NOT NULL,
        kata TEXT NOT NULL,
        kind TEXT NOT NULL,
        detail TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX events_kata ON events(kata, kind, ts);
    """,
    # version 2: timed mock interviews (checker/mock). The session folder holds the full state
    # (session.json); this row lets `kata mock status/resume/history` find it from anywhere.
    """
    CREATE TABLE mock_sessions (
        id TEXT PRIMARY KEY,
        started REAL NOT NULL,
        deadline REAL NOT NULL,
        minutes INTEGER NOT NULL,
        seed INTEGER NOT NULL,
        lang TEXT NOT NULL,
        folder TEXT NOT NULL,
        katas TEXT NOT NULL,
        state TEXT NOT NULL,
        ended REAL,
        score REAL,
        followup_score REAL,
        verdict TEXT,
        card TEXT
    );
    CREATE INDEX mock_sessions_started ON mock_sessions(started);
    """,
    # version 3: what is computed from the history and costly to recompute on every `kata list`
    # (the practice plan): a cache, valid while `key` matches; losing it loses nothing.
    """
    CREATE TABLE derived (
        name TEXT PRIMARY KEY,
        key TEXT NOT NULL,
        value TEXT NOT NULL
    );
    """,
]


# The events the practice plan reads (checker/schedule.py): help taken before a pass.
_HELP_EVENTS = "('hint', 'mock-hint', 'solution')"


def data_dir() -> Path:
    home = os.environ.get("KATA_HOME")
    if home:
        return Path(home).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("attnkata", appauthor=False))


def db_path() -> Path:
    return data_dir() / "history.sqlite3"


def connect(path: Path | None = None) -> sqlite3.Connection:
    path = path or db_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA busy_timeout = 30000")
    _use_wal(conn)
    conn.execute("PRAGMA synchronous = NORMAL")
    _migrate(conn)
    return conn


def _use_wal(conn: sqlite3.Connection, wait: float = 30.0) -> None:
    """Switch to WAL (persistent in the file, so usually already on). The switch needs the
    database to itself and SQLite answers "locked" at once, not after the busy timeout, when a
    second process opens a new database at the same moment: retry until the wait is over."""
    deadline = time.monotonic() + wait
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _migrate(conn: sqlite3.Connection) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version >= len(SCHEMA):
        return
    conn.execute("BEGIN IMMEDIATE")  # one migrator at a time
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        for i in range(version, len(SCHEMA)):
            for stmt in SCHEMA[i].split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            conn.execute(f"PRAGMA user_version = {i + 1}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


class History:
    """All reads and writes of the practice history."""

    def __init__(self, path: Path | None = None) -> None:
        self.conn = connect(path)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes ------------------------------------------------------------------
    def record_attempt(
        self,
        kata: str,
        status: str,
        passed: int,
        total: int,
        seconds: float,
        file: str,
        diagnoses: list[str] | None = None,
        mode: str = "practice",
        session: str | None = None,
        ts: float | None = None,
    ) -> None:
        with transaction(self.conn):
            self.conn.execute(
                "INSERT INTO attempts (ts, kata, status, passed, total, seconds, file, mode, session, diagnoses)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    ts or time.time(),
                    kata,
                    status,
                    passed,
                    total,
                    seconds,
                    file,
                    mode,
                    session,
                    json.dumps(diagnoses or []),
                ),
            )

    def record_event(
        self, kata: str, kind: str, detail: dict[str, Any] | None = None, ts: float | None = None
    ) -> None:
        with transaction(self.conn):
            self.conn.execute(
                "INSERT INTO events (ts, kata, kind, detail) VALUES (?, ?, ?, ?)",
                (ts or time.time(), kata, kind, json.dumps(detail or {})),
            )

    # -- reads -------------------------------------------------------------------
    def attempts(self, kata: str | None = None, limit: int = 50) -> list[sqlite3.Row]:
        q = (
            "SELECT * FROM attempts"
            + (" WHERE kata = ?" if kata else "")
            + " ORDER BY ts DESC, id DESC LIMIT ?"
        )
        return self.conn.execute(q, ((kata,) if kata else ()) + (limit,)).fetchall()

    def events(self, kata: str, kind: str) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT * FROM events WHERE kata = ? AND kind = ? ORDER BY ts, id", (kata, kind)
        ).fetchall()

    def best_speeds(self) -> dict[str, dict[str, Any]]:
        """The fastest `speed` tier result per kata (the Triton katas on a GPU): the "speed"
        events `record_speed` wrote, smallest time first."""
        best: dict[str, dict[str, Any]] = {}
        for row in self.conn.execute("SELECT kata, detail FROM events WHERE kind = 'speed'"):
            try:
                detail = json.loads(row["detail"])
                ms = float(detail["speed_ms"])
            except (ValueError, KeyError, TypeError):
                continue
            if ms > 0 and (row["kata"] not in best or ms < best[row["kata"]]["speed_ms"]):
                best[row["kata"]] = {**detail, "speed_ms": ms}
        return best

    def record_speed(self, kata: str, figures: dict[str, float]) -> None:
        """A `speed` tier result (checker/triton_speed.py): kept as an event per check."""
        self.record_event(
            kata, "speed", {k: v for k, v in figures.items() if k.startswith("speed_")}
        )

    def hints_used(self, kata: str) -> int:
        return len(self.events(kata, "hint"))

    def solution_viewed(self, kata: str) -> bool:
        return bool(self.events(kata, "solution"))

    def stats(self) -> dict[str, KataStats]:
        out: dict[str, KataStats] = {}
        rows = self.conn.execute(
            "SELECT kata, COUNT(*) n, SUM(status = 'pass') passes, MIN(ts) first_ts,"
            " MIN(CASE WHEN status = 'pass' THEN ts END) first_pass FROM attempts GROUP BY kata"
        ).fetchall()
        starts = dict(
            self.conn.execute(
                "SELECT kata, MIN(ts) FROM events WHERE kind = 'start' GROUP BY kata"
            ).fetchall()
        )
        hints = dict(
            self.conn.execute(
                "SELECT kata, COUNT(*) FROM events WHERE kind = 'hint' GROUP BY kata"
            ).fetchall()
        )
        for r in rows:
            began = min(x for x in (starts.get(r["kata"]), r["first_ts"]) if x is not None)
            ttp = (r["first_pass"] - began) if r["first_pass"] is not None else None
            out[r["kata"]] = KataStats(
                r["kata"], r["n"], r["passes"] or 0, ttp, hints.get(r["kata"], 0)
            )
        for kata in starts.keys() | hints.keys():
            out.setdefault(kata, KataStats(kata, 0, 0, None, hints.get(kata, 0)))
        return out

    def timeline(self) -> tuple[list[sqlite3.Row], list[sqlite3.Row]]:
        """Every attempt (oldest first) and every hint / solution event: what the practice
        schedule (checker/schedule.py) replays."""
        attempts = self.conn.execute(
            "SELECT ts, kata, status, diagnoses, mode FROM attempts ORDER BY ts, id"
        ).fetchall()
        events = self.conn.execute(
            f"SELECT ts, kata, kind FROM events WHERE kind IN {_HELP_EVENTS} ORDER BY ts, id"
        ).fetchall()
        return attempts, events

    def timeline_version(self) -> str:
        """Changes whenever timeline() would answer differently (rows are only ever added, and a
        removed row changes the count): the key of what is derived from it."""
        a = self.conn.execute("SELECT COUNT(*), MAX(id) FROM attempts").fetchone()
        e = self.conn.execute(
            f"SELECT COUNT(*), MAX(id) FROM events WHERE kind IN {_HELP_EVENTS}"
        ).fetchone()
        return f"{a[0]}:{a[1]}:{e[0]}:{e[1]}"

    def derived(self, name: str, key: str) -> str | None:
        row = self.conn.execute(
            "SELECT value FROM derived WHERE name = ? AND key = ?", (name, key)
        ).fetchone()
        return row[0] if row else None

    def store_derived(self, name: str, key: str, value: str) -> None:
        with transaction(self.conn):
            self.conn.execute(
                "INSERT OR REPLACE INTO derived (name, key, value) VALUES (?, ?, ?)",
                (name, key, value),
            )

    def mistake_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for (raw,) in self.conn.execute("SELECT diagnoses FROM attempts"):
            for mid in json.loads(raw):
                counts[mid] = counts.get(mid, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


class KataStats(NamedTuple):  # a NamedTuple: a frozen dataclass costs ~1 ms of every start-up
    kata: str
    attempts: int
    passes: int
    time_to_first_pass: float | None
    hints: int

    @property
    def status(self) -> str:
        if self.passes:
            return "passed"
        return "attempted" if self.attempts else "started"
