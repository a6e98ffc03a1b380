"""The history database under concurrent writers and a writer killed mid-transaction."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnkata.checker.store import History, connect


def _writer(path: str, tag: str, n: int) -> None:
    with History(Path(path)) as h:
        for i in range(n):
            h.record_attempt("sdpa", "fail", i, 10, 0.1, f"{tag}-{i}.py", ["missing-scale"])
            h.record_event("sdpa", "hint", {"id": f"{tag}-{i}"})


def test_two_concurrent_writers_never_fail(tmp_path):
    db = tmp_path / "h.sqlite3"
    ctx = mp.get_context("spawn")  # fresh interpreters: no torch state shared
    procs = [ctx.Process(target=_writer, args=(str(db), tag, 150)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with History(db) as h:
        assert len(h.attempts(limit=1000)) == 300
        assert h.hints_used("sdpa") == 300
        assert h.mistake_counts() == {"missing-scale": 300}


KILLED_WRITER = """
import sys, time
from pathlib import Path
from attnkata.checker.store import connect
conn = connect(Path(sys.argv[1]))
i = 0
while True:
    conn.execute("BEGIN IMMEDIATE")
    for _ in range(200):
        conn.execute("INSERT INTO events (ts, kata, kind, detail) VALUES (?, 'sdpa', 'hint', '{}')", (time.time(),))
    i += 1
    if i == 3:
        print("writing", flush=True)
    conn.execute("COMMIT")
"""


def test_a_killed_writer_leaves_a_readable_database(tmp_path):
    db = tmp_path / "h.sqlite3"
    connect(db).close()
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(db)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
    time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    count = conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    assert count > 0 and count % 200 == 0  # whole transactions only
    conn.close()
    with History(db) as h:  # and it is still writable
        h.record_event("sdpa", "start")
        assert h.events("sdpa", "start")


@pytest.mark.slow
def test_eight_concurrent_kata_checks_never_fail_on_the_database(tmp_path):
    """Each check starts its own sandbox; all of them record into one history."""
    env = {**os.environ, "KATA_HOME": str(tmp_path)}
    reference = Path(__file__).resolve().parent.parent / "reference" / "sdpa.py"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "attnkata",
                "check",
                "sdpa",
                str(reference),
                "--json",
                "--record",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    with History(tmp_path / "history.sqlite3") as h:
        assert [a["status"] for a in h.attempts(limit=100)] == ["pass"] * 8
