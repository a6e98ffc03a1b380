"""Whole mock interviews driven without a terminal (CliRunner), graded for real against the
`sdpa` kata, with the mock clock injected through KATA_MOCK_NOW."""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from attnkata.checker import catalog, store
from attnkata.checker.messages import msg
from attnkata.checker.mock import followups, scorecard
from attnkata.checker.mock import session as sess
from attnkata.cli.app import app

REPO = Path(__file__).resolve().parent.parent
REFERENCE = (REPO / "reference" / "sdpa.py").read_text(encoding="utf-8")
# Right everywhere except that it refuses an explicit scale: one core test fails with an exception.
WRONG = (
    REFERENCE
    + """

_reference = scaled_dot_product_attention


def scaled_dot_product_attention(q, k, v, mask=None, scale=None):
    if scale is not None:
        raise ValueError("custom scales are not supported")
    return _reference(q, k, v, mask=mask, scale=scale)
"""
)
SDPA = catalog.get_kata("sdpa")
runner = CliRunner()


def kata(*args: str, code: int | None = 0) -> Any:
    res = runner.invoke(app, list(args))
    if code is not None:
        assert res.exit_code == code, f"exit {res.exit_code}: {res.output}"
    return res


def at(monkeypatch: pytest.MonkeyPatch, value: float | str) -> None:
    monkeypatch.setenv(sess.NOW_ENV, str(value))


def start(tmp_path: Path, seed: int = 11) -> dict[str, Any]:
    res = kata(
        "mock",
        "start",
        "--katas",
        "sdpa",
        "--seed",
        str(seed),
        "--no-interactive",
        "--json",
        "--dir",
        str(tmp_path / "session"),
    )
    return json.loads(res.stdout)


def answers_for(
    seed: int, tmp_path: Path, *, wrong_choice: bool, open_rating: int
) -> tuple[Path, list[int]]:
    """An answers file for this seed's questions and the points each answer should earn."""
    answers: dict[str, Any] = {}
    points = []
    for q in followups.questions_for(SDPA, seed):
        if q["kind"] == "numeric":
            answers[q["id"]] = q["expected"]
            points.append(2)
        elif q["kind"] == "choice":
            pick = (q["correct"] + 1) % len(q["options"]) if wrong_choice else q["correct"]
            answers[q["id"]] = followups.LETTERS[pick]
            points.append(0 if wrong_choice else 2)
        elif q["kind"] == "order":
            answers[q["id"]] = " ".join(followups.LETTERS[i] for i in q["order"])
            points.append(2)
        else:
            answers[q["id"]] = {"answer": "variance grows like d", "rating": open_rating}
            points.append(open_rating)
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers), encoding="utf-8")
    return path, points


def test_full_session_with_a_wrong_solution(tmp_path, monkeypatch):
    t0 = time.time()
    at(monkeypatch, t0)
    info = start(tmp_path)
    assert info["minutes"] == 30 and info["deadline"] - info["started"] == 1800
    assert [p["kata"] for p in info["problems"]] == ["sdpa"]
    file = Path(info["problems"][0]["file"])
    assert file.read_bytes() == SDPA.skeleton_path.read_bytes()
    file.write_text(WRONG, encoding="utf-8")

    at(monkeypatch, t0 + 120)
    checked = json.loads(kata("mock", "check", "--json", code=1).stdout)[0]
    assert checked["status"] == "fail"
    assert "exception" in [d["id"] for d in checked["diagnostics"]]
    hint = kata("mock", "hint")
    # The hint follows the diagnosis: this code cannot take a custom scale.
    assert "10 points" in hint.output and "mistake:input-not-supported" in hint.output

    answers, points = answers_for(info["seed"], tmp_path, wrong_choice=True, open_rating=1)
    at(monkeypatch, t0 + 600)
    card = json.loads(kata("mock", "submit", "--answers", str(answers), "--json").stdout)

    assert card["session"] == info["id"] and card["final"] and card["submit_reason"] == "manual"
    assert card["minutes_used"] == 10.0
    p = card["problems"][0]
    assert p["status"] == "fail" and p["attempted"] and not p["passed"]
    assert "explicit_scale" in p["failed_tests"]
    core_failed = sum(
        1 for t in checked["tests"] if t["tier"] == "core" and t["status"] not in ("pass", "skip")
    )
    assert p["tiers"]["core"][0] == p["tiers"]["core"][1] - core_failed and core_failed >= 1
    assert "exception" in [m["id"] for m in p["mistakes"]]
    assert (p["hints"], p["checks"], p["time_to_first_pass"]) == (1, 1, None)
    assert p["score"] == pytest.approx(
        round(scorecard.tier_score(p["tiers"]) - scorecard.HINT_COST, 1)
    )

    fu = card["followups"]
    assert [q["points"] for q in fu["questions"]] == points
    assert fu["percent"] == pytest.approx(100 * sum(points) / (2 * len(points)), abs=0.1)
    assert card["coding"] == p["score"]
    assert card["total"] == pytest.approx(0.75 * card["coding"] + 0.25 * fu["percent"], abs=0.1)
    expected = "lean no" if card["total"] >= scorecard.LEAN_TOTAL else "no hire"
    assert card["verdict"] == expected
    assert card["rule"]["en"].startswith(expected + ":")
    if expected == "lean no":
        assert "0 of 1 problem(s) pass" in card["rule"]["en"]

    folder = Path(info["folder"])
    md = (folder / "scorecard.md").read_text(encoding="utf-8")
    assert f"**{expected.upper()}**" in md and card["rule"]["en"] in md
    assert "`exception`" in md and "`explicit_scale`" in md and "Verdict scale" in md
    assert json.loads((folder / "scorecard.json").read_text(encoding="utf-8")) == card
    assert (folder / ".mock" / "snapshot" / "sdpa.py").read_text(encoding="utf-8") == WRONG

    with contextlib.closing(store.connect()) as conn:
        attempts = conn.execute("SELECT * FROM attempts WHERE mode = 'mock'").fetchall()
        row = conn.execute("SELECT * FROM mock_sessions WHERE id = ?", (info["id"],)).fetchone()
    assert [(a["kata"], a["status"], a["session"]) for a in attempts] == [
        ("sdpa", "fail", info["id"])
    ]
    assert "exception" in json.loads(attempts[0]["diagnoses"])
    assert (row["state"], row["verdict"], row["score"]) == ("done", expected, card["total"])

    hist = json.loads(kata("mock", "history", "--json").stdout)
    assert hist["sessions"][0]["id"] == info["id"] and hist["trend"]["last"] == card["total"]
    assert "strong hire" not in kata("mock", "history").output
    assert kata("mock", "card", "--json").stdout.strip() == json.dumps(
        card, ensure_ascii=False, indent=2
    )
    assert kata("solution", "sdpa", "--yes").exit_code == 0  # the session is over
    kata("mock", "submit", code=2)


def test_correct_solution_answers_later_and_is_a_strong_hire(tmp_path, monkeypatch):
    t0 = time.time()
    at(monkeypatch, t0)
    info = start(tmp_path, seed=23)
    Path(info["problems"][0]["file"]).write_text(REFERENCE, encoding="utf-8")
    at(monkeypatch, t0 + 300)
    kata("mock", "check", "sdpa")
    status = json.loads(kata("mock", "status", "--json").stdout)
    assert (
        status["problems"][0]["status"] == "pass"
        and status["problems"][0]["time_to_first_pass"] == 300
    )

    at(monkeypatch, t0 + 900)
    pending = json.loads(kata("mock", "submit", "--json").stdout)
    assert not pending["final"] and pending["verdict"] is None
    assert pending["followups"]["pending"] == len(pending["followups"]["questions"]) == 3
    assert all(
        q["prompt"]["en"] and "{" not in q["prompt"]["en"]
        for q in pending["followups"]["questions"]
    )
    text = kata("mock", "card").output
    assert "pending" in text
    kata("mock", "start", "--katas", "sdpa", "--no-interactive", code=2)  # follow-ups still open

    answers, points = answers_for(23, tmp_path, wrong_choice=False, open_rating=2)
    card = json.loads(kata("mock", "answer", "--answers", str(answers), "--json").stdout)
    assert card["final"] and card["followups"]["percent"] == 100
    p = card["problems"][0]
    assert (
        p["passed"]
        and p["tiers"]["core"][0] == p["tiers"]["core"][1]
        and p["time_to_first_pass"] == 300
    )
    assert (card["total"], card["verdict"]) == (100, "strong hire")
    assert card["rule"]["en"].startswith("strong hire: all 1 problem(s) pass, total 100 >= 85")
    kata("mock", "answer", "--answers", str(answers), code=2)  # nothing left to answer


def test_deadline_snapshot_ignores_later_edits(tmp_path, monkeypatch):
    at(monkeypatch, "+0")
    info = start(tmp_path)
    file = Path(info["problems"][0]["file"])
    file.write_text(WRONG, encoding="utf-8")
    at(monkeypatch, "+1801")  # the deadline passes; any mock command notices and takes the snapshot
    assert "submitted" in kata("mock", "status").output
    file.write_text(REFERENCE, encoding="utf-8")  # too late
    card = json.loads(kata("mock", "submit", "--json").stdout)
    p = card["problems"][0]
    assert card["submit_reason"] == "deadline" and card["minutes_used"] == 30.0
    assert p["status"] == "fail" and "explicit_scale" in p["failed_tests"] and p["note"] == ""


def test_file_saved_after_an_unwatched_deadline_counts_as_last_checked(tmp_path, monkeypatch):
    at(monkeypatch, "+0")
    info = start(tmp_path)
    file = Path(info["problems"][0]["file"])
    file.write_text(WRONG, encoding="utf-8")
    at(monkeypatch, "+60")
    kata("mock", "check", code=1)
    # Nobody was around at the deadline; the file was fixed afterwards (its mtime says so).
    file.write_text(REFERENCE, encoding="utf-8")
    late = info["deadline"] + 100
    os.utime(file, (late, late))
    at(monkeypatch, "+2000")
    card = json.loads(kata("mock", "submit", "--json").stdout)
    p = card["problems"][0]
    assert p["status"] == "fail" and "explicit_scale" in p["failed_tests"]
    assert "after the deadline" in p["note"] and "last check" in p["note"]
    assert card["submit_reason"] == "deadline"


def test_model_answers_appear_only_once_answered_and_mid_session_mistakes_stay(
    tmp_path, monkeypatch
):
    t0 = time.time()
    at(monkeypatch, t0)
    info = start(tmp_path, seed=31)
    path = Path(info["problems"][0]["file"])
    unscaled = REFERENCE.replace(
        "scale = 1.0 / math.sqrt(d) if scale is None else scale",
        "scale = 1.0 if scale is None else scale",
    )
    assert unscaled != REFERENCE, "the reference's scale line changed: update this test"
    at(monkeypatch, t0 + 60)
    kata(
        "mock", "check", "sdpa", code=None
    )  # the untouched skeleton: its NotImplementedError is no mistake
    path.write_text(unscaled, encoding="utf-8")
    at(monkeypatch, t0 + 200)
    assert "missing-scale" in kata("mock", "check", "sdpa", code=None).output
    path.write_text(REFERENCE, encoding="utf-8")  # fixed before the end
    at(monkeypatch, t0 + 600)
    kata("mock", "check", "sdpa")
    at(monkeypatch, t0 + 900)
    pending = json.loads(kata("mock", "submit", "--no-interactive", "--json").stdout)
    assert pending["followups"]["pending"] == 3
    assert all(q["model_answer"] is None for q in pending["followups"]["questions"])
    model_label = msg("scorecard.model", "en")
    assert model_label not in kata("mock", "card").output
    for md in (tmp_path / "session").glob("*.md"):
        assert model_label not in md.read_text(encoding="utf-8"), md
    mistakes = pending["problems"][0]["mistakes"]
    assert [m["id"] for m in mistakes] == ["missing-scale"] and mistakes[0]["fixed"]
    answers, _ = answers_for(31, tmp_path, wrong_choice=False, open_rating=1)
    card = json.loads(kata("mock", "answer", "--answers", str(answers), "--json").stdout)
    model = {q["id"]: q["answer"] for q in followups.questions_for(SDPA, 31)}
    assert any(model.values())
    assert all(q["model_answer"] == model[q["id"]] for q in card["followups"]["questions"])
    assert card["problems"][0]["mistakes"] == [
        {"id": "missing-scale", "title": mistakes[0]["title"], "fixed": True}
    ]
    assert "fixed before the end" in (tmp_path / "session" / "scorecard.md").read_text(
        encoding="utf-8"
    )
    assert "missing-scale" in kata("mock", "card").output


def test_a_chosen_kata_longer_than_the_interview_is_warned_about(tmp_path):
    res = runner.invoke(
        app,
        [
            "mock",
            "start",
            "--katas",
            "mla",
            "--minutes",
            "30",
            "--no-interactive",
            "--json",
            "--dir",
            str(tmp_path / "s1"),
        ],
    )
    assert res.exit_code == 0, res.output
    want = catalog.get_kata("mla").minutes
    assert want > 30
    assert (
        f"mla ({want} min) suggest {want} minutes in all, more than this 30-minute interview"
        in " ".join(res.stderr.split())
    )
    json.loads(res.stdout)  # stdout stays pure JSON
    kata("mock", "abandon", "--yes")
    ok = runner.invoke(
        app,
        [
            "mock",
            "start",
            "--katas",
            "sdpa",
            "--minutes",
            "30",
            "--no-interactive",
            "--dir",
            str(tmp_path / "s2"),
        ],
    )
    assert ok.exit_code == 0 and "warning" not in ok.stderr
