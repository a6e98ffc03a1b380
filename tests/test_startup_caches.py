"""What `kata list`, `stats` and `next` keep between runs (P4 of issue 13): the katas' summaries
and the practice plan. A cache may only save time: it must answer what a fresh computation
answers, and notice every change that would make it answer otherwise."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnkata.checker import catalog, schedule
from attnkata.checker.store import History


@pytest.fixture
def two_katas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A katas folder with copies of two bundled katas, so that a test may edit them."""
    root = tmp_path / "katas"
    for kid in ("sdpa", "gqa"):
        shutil.copytree(catalog.katas_root() / kid, root / kid)
    monkeypatch.setattr(catalog, "katas_root", lambda: root)
    catalog.summaries.cache_clear()
    catalog.get_kata.cache_clear()
    yield root
    catalog.summaries.cache_clear()
    catalog.get_kata.cache_clear()


def _refused(*_: object) -> None:
    raise AssertionError("recomputed although nothing changed")


def test_summaries_are_read_back_until_a_kata_toml_changes(
    two_katas: Path, monkeypatch: pytest.MonkeyPatch
):
    first = catalog.summaries()
    assert set(first) == {"sdpa", "gqa"}
    cached = catalog._summaries_file()
    assert cached.is_file()
    # Nothing changed: read back, no TOML parsed, the same answer.
    catalog.summaries.cache_clear()
    with monkeypatch.context() as m:
        m.setattr(catalog, "_summary", _refused)
        assert catalog.summaries() == first
    # An edited title (another size and mtime): parsed again.
    toml = two_katas / "gqa" / "kata.toml"
    toml.write_text(
        toml.read_text(encoding="utf-8").replace('en = "', 'en = "Edited: ', 1), encoding="utf-8"
    )
    catalog.summaries.cache_clear()
    assert catalog.summaries()["gqa"].title.en.startswith("Edited: ")
    # A damaged cache file is not an error: the katas are parsed again.
    cached.write_text("{not json", encoding="utf-8")
    catalog.summaries.cache_clear()
    assert catalog.summaries()["gqa"].title.en.startswith("Edited: ")
    assert json.loads(cached.read_text(encoding="utf-8"))["stamp"][0] == str(two_katas)


def test_the_plan_is_recomputed_exactly_when_the_history_or_the_katas_change(
    monkeypatch: pytest.MonkeyPatch,
):
    katas = catalog.summaries()
    t = time.time() - 3 * 86400
    with History() as h:
        h.record_attempt("sdpa", "fail", 3, 10, 1.0, "sdpa.py", ["missing-scale"], ts=t)
        fresh = schedule.cached_plan(h, katas)
        assert {k: p.to_dict() for k, p in fresh.items()} == {
            k: p.to_dict() for k, p in schedule.plan(katas, *h.timeline()).items()
        }
        with monkeypatch.context() as m:  # unchanged: read back
            m.setattr(schedule, "plan", _refused)
            again = schedule.cached_plan(h, katas)
        assert [p.to_dict() for p in again.values()] == [p.to_dict() for p in fresh.values()]
        assert list(again) == list(katas)
        computed: list[int] = []
        real_plan = schedule.plan

        def counting(*args: object) -> dict:
            computed.append(1)
            return real_plan(*args)

        monkeypatch.setattr(schedule, "plan", counting)
        h.record_event("sdpa", "hint", {"id": "level:1"}, ts=t + 60)  # a hint changes the rating
        schedule.cached_plan(h, katas)
        h.record_attempt("sdpa", "pass", 10, 10, 1.0, "sdpa.py", ts=t + 120)
        after = schedule.cached_plan(h, katas)
        assert len(computed) == 2 and after["sdpa"].last_rating == "hard"
        h.record_event("sdpa", "start", {}, ts=t + 200)  # not part of the plan: still cached
        schedule.cached_plan(h, katas)
        assert len(computed) == 2
        # A kata that now exercises another mistake: recomputed.
        edited = dict(katas)
        edited["gqa"] = katas["gqa"]._replace(mistakes=(*katas["gqa"].mistakes, "missing-scale-2"))
        schedule.cached_plan(h, edited)
        assert len(computed) == 3


def test_history_fits_80_columns_without_cutting_a_mistake_id(tmp_path: Path):
    with History() as h:
        h.record_attempt(
            "flash-attention-backward",
            "fail",
            1,
            9,
            1.0,
            "f.py",
            ["flash-bwd-renormalizes-per-tile", "missing-scale"],
        )
        h.record_attempt(
            "gqa", "fail", 2, 9, 1.0, "g.py", ["kv-repeat-instead-of-interleave"], mode="mock"
        )
    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run(
        [sys.executable, "-m", "attnkata", "history"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    ).stdout
    assert max(len(line) for line in out.splitlines()) <= 80
    for whole in (
        "flash-attention-backward",
        "flash-bwd-renormalizes-per-tile",
        "missing-scale",
        "kv-repeat-instead-of-interleave",
        "fail (mock)",
    ):
        assert whole in out, out
    assert "…" not in out


def test_a_history_written_by_the_previous_version_gains_the_cache_table_and_keeps_its_rows(
    tmp_path: Path,
):
    import sqlite3

    from attnkata.checker import store

    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path)
    for script in store.SCHEMA[:2]:  # what the previous release created
        conn.executescript(script)
    conn.execute("PRAGMA user_version = 2")
    conn.execute(
        "INSERT INTO attempts (ts, kata, status, passed, total, seconds, file) "
        "VALUES (1.0, 'sdpa', 'pass', 10, 10, 1.0, 'sdpa.py')"
    )
    conn.commit()
    conn.close()
    with History(path) as h:
        assert [r["kata"] for r in h.attempts()] == ["sdpa"]
        key = h.timeline_version()
        assert h.derived("plan", key) is None
        h.store_derived("plan", key, "[]")
        assert h.derived("plan", key) == "[]"
        h.record_attempt("sdpa", "fail", 1, 10, 1.0, "sdpa.py")
        assert h.timeline_version() != key and h.derived("plan", h.timeline_version()) is None


def test_emoji_codes_in_messages_print_as_written():
    """`:name:` in a message or a candidate's code is text, not an emoji (and the emoji table
    is not loaded at start-up)."""
    from attnkata.cli.console import err, out

    for console in (out, err):
        with console.capture() as cap:
            console.print("x = y[:smile:]  # :warning: kept")
        assert ":smile:" in cap.get() and ":warning:" in cap.get()
