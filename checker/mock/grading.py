"""Grading a submitted session, answering its follow-ups, and writing the scorecard files.

Every state change goes through `session.mutate` (locked, atomic), and grading itself runs
outside the lock: `kata mock status` in another terminal never waits for torch.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attnkata.checker import catalog
from attnkata.checker.errors import UsageError
from attnkata.checker.mock import followups, scorecard
from attnkata.checker.mock import session as sess
from attnkata.checker.mock.session import Session
from attnkata.checker.store import History


def jsonable(data: dict[str, Any]) -> dict[str, Any]:
    # Diagnostics may carry renderer extras in `data`; the session file keeps plain JSON only.
    return json.loads(json.dumps(data, default=str))


def check_result(
    kata_id: str,
    path: Path,
    lang: str,
    limits: Any = None,
    cancel: Any = None,
    variant: dict[str, str] | None = None,
) -> Any:
    """Grade one file in this process (imports torch); the `Result`. An interview enforces
    the static policy: a file that imports `os` or reaches `torch._C` fails without running.
    `cancel`: a threading.Event that stops the check (CheckCancelled) when set; `variant`:
    the problem's (`Problem.variant`), graded in its conventions."""
    from attnkata.checker.runner import check

    # keep_session: the live screen's worker re-checks on every save (checker/driver.py).
    return check(
        catalog.get_kata(kata_id).with_variant(variant or None),
        path,
        limits=limits,
        lang=lang,
        policy="enforce",
        keep_session=True,
        cancel=cancel,
    )


def check_file(
    kata_id: str,
    path: Path,
    lang: str,
    limits: Any = None,
    variant: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Grade one file in this process; the Result as plain JSON."""
    return jsonable(check_result(kata_id, path, lang, limits, variant=variant).to_dict())


def grade_session(
    folder: Path, *, progress: Callable[[str], None] | None = None, limits: Any = None
) -> Session:
    """Grade the snapshot of a submitted session, record the attempts, draw the follow-ups."""
    s = sess.load(folder)
    if s.state != sess.SUBMITTED:
        return s
    graded: dict[str, tuple[dict[str, Any], float]] = {}
    for p in s.problems:
        if progress is not None:
            progress(p.kata)
        t0 = time.time()
        graded[p.kata] = (
            check_file(p.kata, s.snapshot_path(p), s.lang, limits, p.variant),
            time.time() - t0,
        )
    with sess.mutate(folder) as s:
        if s.state != sess.SUBMITTED:  # graded meanwhile by another process
            return s
        with History() as h:
            for p in s.problems:
                result, seconds = graded[p.kata]
                s.results[p.kata] = result
                summary = sess.check_summary(result, s.submitted or sess.now())
                # `kata stats` counts time to pass from a kata's first start: the interview's
                # start is one, and a pass is dated when the clock first saw it (the card's
                # "first pass"), not at submission (which read as "to pass 0s").
                h.record_event(p.kata, "start", {"session": s.id}, ts=s.started)
                passed_at = (
                    p.first_pass if result["status"] == "pass" and p.first_pass else s.submitted
                )
                h.record_attempt(
                    p.kata,
                    result["status"],
                    summary["passed"],
                    summary["total"],
                    seconds,
                    str(s.snapshot_path(p)),
                    [d["id"] for d in result["diagnostics"] if d["severity"] == "essential"],
                    mode="mock",
                    session=s.id,
                    ts=passed_at,
                )
        s.questions = [
            q
            for p in s.problems
            if sess.attempted(s, p)
            for q in followups.questions_for(p.kata_object, s.seed)
        ]
        s.state = sess.FOLLOWUPS if s.questions else sess.DONE
        s.card = scorecard.build(s)
    write_card_files(s)
    return s


def answer(folder: Path, answers: dict[str, Any], *, finalize: bool) -> Session:
    """Grade answers ({question id: raw answer}); `finalize` scores the unanswered ones 0."""
    with sess.mutate(folder) as s:
        if s.state != sess.FOLLOWUPS:
            raise UsageError(
                f"session {s.id} is not waiting for follow-up answers (state: {s.state})"
            )
        by_id = {q["id"]: q for q in s.questions}
        for qid, raw in followups.match_answers(s.questions, answers).items():
            s.answers[qid] = followups.grade(by_id[qid], raw)
        if finalize:
            for q in s.questions:
                s.answers.setdefault(q["id"], followups.grade(q, None))
        if all(q["id"] in s.answers for q in s.questions):
            s.state = sess.DONE
        s.card = scorecard.build(s)
    write_card_files(s)
    return s


def abandon(folder: Path) -> Session:
    """End a session: before grading nothing is scored; while follow-ups wait, the unanswered
    ones score 0 and the card becomes final."""
    s = sess.load(folder)
    if s.state == sess.FOLLOWUPS:
        return answer(folder, {}, finalize=True)
    with sess.mutate(folder) as s:
        if s.state in (sess.ACTIVE, sess.SUBMITTED):
            if s.submitted is None:
                s.submitted = min(sess.now(), s.deadline)
            s.state = sess.ABANDONED
    return s


def write_card_files(s: Session) -> None:
    if s.card is None:
        return
    (s.folder / "scorecard.md").write_text(scorecard.to_markdown(s.card, s.lang), encoding="utf-8")
    (s.folder / "scorecard.json").write_text(
        json.dumps(s.card, ensure_ascii=False, indent=2), encoding="utf-8"
    )
