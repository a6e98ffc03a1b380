"""Mock interview pages over the same session model, scoring and follow-ups as `kata mock`:
start, the interview (a plain editor, the countdown, Run = the public samples, Submit = the
hidden tests, hints that cost points), the follow-up questions, the scorecard and the replay.
Every save, run, submit and paste goes on the problem's timeline (checker/mock/replay.py)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from attnkata.checker import catalog
from attnkata.checker.messages import msg
from attnkata.checker.mock import followups, grading, picker, replay
from attnkata.checker.mock import session as sess
from attnkata.checker.mock.session import Session
from attnkata.cli.web import files, pages
from attnkata.cli.web.common import (
    BadInput,
    answer,
    api,
    body,
    html_page,
    lang_of,
    page,
    result_view,
    text_field,
)

PAGE_TEXTS = (
    "web.saving",
    "web.saved",
    "web.running",
    "web.submitting",
    "web.finish_confirm",
    "web.hint_confirm",
    "web.time_up",
    "web.grader_failed",
    "web.superseded",
    "web.grading_session",
)


def _samples_cache(s: Session, kata: str) -> Path:
    return s.meta / "samples" / f"{kata}.json"


def _session(request: Request) -> Session:
    s = sess.find(request.path_params["sid"], lang_of(request))
    return sess.close_if_due(s.folder)


# -- start --------------------------------------------------------------------------------
@html_page
async def start_page(request: Request) -> Response:
    found = await run_in_threadpool(sess.open_session)
    if found is not None:
        return RedirectResponse(f"/mock/{found.id}", status_code=303)
    lang = lang_of(request)
    past = [dict(r) for r in await run_in_threadpool(sess.rows, 10)]
    katas = list(catalog.summaries().values())
    return page(
        request,
        "mock_start.html",
        katas=[(k.id, k.title.get(lang), k.difficulty, k.minutes) for k in katas],
        past=past,
        default_minutes=picker.DEFAULT_MINUTES,
        data={"texts": pages.texts(lang, "web.starting")},
    )


def _start(data: dict[str, Any], lang: str) -> Session:
    chosen = data.get("katas") or None
    if chosen is not None and not (
        isinstance(chosen, list) and all(isinstance(x, str) for x in chosen)
    ):
        raise BadInput("web.bad_json")
    minutes = data.get("minutes")
    if minutes is not None and not isinstance(minutes, int):
        raise BadInput("web.bad_minutes")
    count = data.get("count") if isinstance(data.get("count"), int) else None
    difficulty = data.get("difficulty") or None
    seed = secrets.randbelow(2**31)
    picks, minutes = picker.choose(
        chosen, count=count, difficulty=difficulty, minutes=minutes, seed=seed
    )
    drawn = bool(data.get("variants"))
    return sess.create(
        [picker.in_variant(p.kata, seed) if drawn else p.kata for p in picks],
        {p.kata.id: p.reason for p in picks},
        minutes=minutes,
        seed=seed,
        lang=lang,
    )


@api
async def start(request: Request) -> Response:
    s = await run_in_threadpool(_start, await body(request), lang_of(request))
    grader = request.app.state.config.grader
    for p in s.problems:  # the public samples are made while the candidate reads
        grader.background(
            "samples",
            kata=p.kata,
            path=None,
            cache=str(_samples_cache(s, p.kata)),
            seed=s.seed,
            variant=p.variant,
        )
    return answer({"id": s.id, "url": f"/mock/{s.id}"})


# -- the interview ---------------------------------------------------------------------------
@html_page
async def session_page(request: Request) -> Response:
    s = await run_in_threadpool(_session, request)
    lang = lang_of(request)
    if s.state == sess.ACTIVE:
        return _interview(request, s, lang)
    if s.state == sess.SUBMITTED:
        return page(
            request,
            "mock_grading.html",
            s=s,
            data={"session": s.id, "texts": pages.texts(lang, *PAGE_TEXTS)},
        )
    if s.state == sess.FOLLOWUPS:
        return _followups(request, s, lang)
    if s.state == sess.DONE:
        return _scorecard(request, s, lang)
    return page(
        request, "error.html", status=410, message=msg("web.abandoned", lang, id=s.id), hint=None
    )


def _interview(request: Request, s: Session, lang: str) -> Response:
    problems = []
    for p in s.problems:
        state = files.read(s.file_path(p))
        statement = s.folder / p.statement
        problems.append(
            {
                "kata": p.kata,
                "title": p.title.get(lang, p.title["en"]),
                "difficulty": p.difficulty,
                "minutes": p.minutes,
                "reason": p.reason.get(lang, p.reason["en"]),
                "statement": statement.read_text(encoding="utf-8") if statement.is_file() else "",
                "file": state.to_dict(),
                "hints": len(p.hints),
            }
        )
    return page(
        request,
        "mock.html",
        s=s,
        problems=problems,
        data={
            "session": s.id,
            "deadline": s.deadline,
            "now": sess.now(),
            "problems": [{"kata": p["kata"], "file": p["file"]} for p in problems],
            "texts": pages.texts(lang, *PAGE_TEXTS),
        },
    )


def _edit(
    request: Request, data: dict[str, Any], kind: str | None = None
) -> tuple[Session, sess.Problem, files.Saved | None]:
    """Save the editor's text for one problem of a running session (a SAVE event when it
    changed; `kind` adds another event with the same text, e.g. a paste)."""
    s = _session(request)
    if s.state != sess.ACTIVE:
        raise BadInput("web.session_over", 409, id=s.id)
    kata = data.get("kata")
    if not isinstance(kata, str):
        raise BadInput("web.bad_json")
    p = s.problem(kata)
    saved = None
    if "text" in data:
        text = text_field(data)
        base = data.get("base") if isinstance(data.get("base"), str) else None
        saved = files.save(s.file_path(p), text, base)
        with sess.mutate(s.folder) as s:
            p = s.problem(kata)
            at = sess.now()
            if saved.changed:
                replay.record(s, p, replay.SAVE, text, at)
            if kind == replay.PASTE:
                chars = data.get("chars") if isinstance(data.get("chars"), int) else 0
                replay.record(s, p, replay.PASTE, text, at, chars=max(0, chars))
    return s, p, saved


def _saved(saved: files.Saved | None, lang: str) -> dict[str, Any]:
    if saved is None:
        return {}
    return {
        "sha": saved.sha,
        "message": msg("web.backup_kept", lang, path=saved.backup) if saved.backup else None,
    }


@api
async def file_put(request: Request) -> Response:
    data = await body(request)
    _, _, saved = await run_in_threadpool(_edit, request, data)
    return answer(_saved(saved, lang_of(request)))


@api
async def paste(request: Request) -> Response:
    data = await body(request)
    _, _, saved = await run_in_threadpool(_edit, request, data, replay.PASTE)
    return answer(_saved(saved, lang_of(request)))


@api
async def run(request: Request) -> Response:
    """Run: the public samples only, on the file as saved now."""
    lang = lang_of(request)
    data = await body(request)
    s, p, saved = await run_in_threadpool(_edit, request, data)
    grader = request.app.state.config.grader
    reply = await grader.request(
        "samples",
        key=f"run:{s.id}:{p.kata}",
        kata=p.kata,
        path=str(s.file_path(p)),
        cache=str(_samples_cache(s, p.kata)),
        seed=s.seed,
        lang=lang,
        variant=p.variant,
    )
    if not reply.get("ok"):
        return answer(_failed(reply, lang))
    outcome = reply["run"]
    text = s.file_path(p).read_text(encoding="utf-8", errors="replace")

    def note() -> None:
        with sess.mutate(s.folder) as cur:
            if cur.state == sess.ACTIVE:
                replay.record(
                    cur,
                    cur.problem(p.kata),
                    replay.RUN,
                    text,
                    sess.now(),
                    status=outcome["status"],
                    passed=outcome["passed"],
                    total=outcome["total"],
                )

    await run_in_threadpool(note)
    html = (
        pages.environment()
        .get_template("_run.html")
        .render(run=outcome, t=lambda key, **q: msg(key, lang, **q))
    )
    return answer({"status": outcome["status"], "html": html} | _saved(saved, lang))


def _failed(reply: dict[str, Any], lang: str) -> dict[str, Any]:
    if reply.get("cancelled"):
        return {"cancelled": True, "message": msg("web.superseded", lang)}
    if reply.get("dead"):
        return {"error": msg("web.grader_died", lang, log=reply.get("error", ""))}
    return {"error": reply.get("error") or "", "hint": reply.get("hint")}


@api
async def submit(request: Request) -> Response:
    """Submit: the hidden tests, as `kata mock check` (a recorded check: the time to first pass,
    and what a file edited after the deadline falls back to)."""
    lang = lang_of(request)
    data = await body(request)
    s, p, saved = await run_in_threadpool(_edit, request, data)

    def checkpoint() -> tuple[Path, float]:
        with sess.mutate(s.folder) as cur:
            path = sess.take_checkpoint(cur, cur.problem(p.kata), sess.now())
            return path, cur.problem(p.kata).checkpoint["t"]

    path, taken = await run_in_threadpool(checkpoint)
    reply = await request.app.state.config.grader.request(
        "mock-check",
        key=f"submit:{s.id}:{p.kata}",
        kata=p.kata,
        path=str(path),
        lang=lang,
        variant=p.variant,
    )
    if not reply.get("ok"):
        return answer(_failed(reply, lang))
    result = reply["result"]

    def note() -> None:
        with sess.mutate(s.folder) as cur:
            if cur.state == sess.ACTIVE:
                check = sess.record_check(cur, p.kata, result, taken)
                replay.record(
                    cur,
                    cur.problem(p.kata),
                    replay.SUBMIT,
                    reply.get("source", ""),
                    taken,
                    status=check["status"],
                    passed=check["passed"],
                    total=check["total"],
                )

    await run_in_threadpool(note)
    view = result_view(result, reply.get("source", ""), lang)
    html = (
        pages.environment()
        .get_template("_submit.html")
        .render(v=view, t=lambda key, **q: msg(key, lang, **q))
    )
    return answer({"status": result["status"], "html": html} | _saved(saved, lang))


@api
async def hint(request: Request) -> Response:
    lang = lang_of(request)
    data = await body(request)
    s = await run_in_threadpool(_session, request)
    kata = data.get("kata")
    got = await run_in_threadpool(sess.take_hint, s.folder, kata if isinstance(kata, str) else None)
    if got is None:
        return answer({"html": msg("mock.cli.no_more_hints", lang, kata=kata)})
    p, _, text = got
    return answer(
        {"label": msg("web.hint_cost", lang, n=len(p.hints)), "html": str(pages.markdown(text))}
    )


@api
async def finish(request: Request) -> Response:
    """End the coding part (or grade a session the deadline ended): the snapshot is graded
    against the hidden tests and the follow-up questions are drawn."""
    s = await run_in_threadpool(_session, request)

    def stop() -> None:
        with sess.mutate(s.folder) as cur:
            sess.submit(cur, sess.now(), "manual")

    if s.state == sess.ACTIVE:
        await run_in_threadpool(stop)
    if s.state in (sess.ACTIVE, sess.SUBMITTED):
        reply = await request.app.state.config.grader.request(
            "grade-session", key=f"finish:{s.id}", folder=str(s.folder)
        )
        if not reply.get("ok"):
            return answer(_failed(reply, lang_of(request)))
    return answer({"url": f"/mock/{s.id}"})


# -- after the coding part --------------------------------------------------------------------
def _followups(request: Request, s: Session, lang: str) -> Response:
    todo = [
        q
        for q in s.questions
        if q["id"] not in s.answers or s.answers[q["id"]]["status"] == "unrated"
    ]
    return page(
        request,
        "followups.html",
        s=s,
        questions=todo,
        letters=followups.LETTERS,
        data={"session": s.id, "texts": pages.texts(lang, "web.answers_incomplete")},
    )


@api
async def answers(request: Request) -> Response:
    """The follow-up answers. Open questions first come back with their model answer to rate
    (the model answers appear only once the answers are in); `finalize` scores what is left
    unanswered as 0 and makes the scorecard final."""
    lang = lang_of(request)
    data = await body(request)
    given = data.get("answers")
    if not isinstance(given, dict):
        raise BadInput("web.bad_json")
    s = await run_in_threadpool(_session, request)
    if s.state != sess.FOLLOWUPS:
        raise BadInput("web.no_followups", 409, id=s.id)
    kinds = {q["id"]: q["kind"] for q in s.questions}
    # An open answer without its self-rating is held back: its model answer comes back to rate
    # it against, and it is graded with the rating.
    held = {
        qid: text
        for qid, text in given.items()
        if kinds.get(qid) == "open" and isinstance(text, str) and text.strip()
    }
    graded = {qid: raw for qid, raw in given.items() if qid not in held}
    finalize = data.get("finalize") is True and not held
    s = await run_in_threadpool(grading.answer, s.folder, graded, finalize=finalize)
    by_id = {q["id"]: q for q in s.questions}
    rate = [
        {
            "id": qid,
            "prompt": by_id[qid]["prompt"][lang],
            "given": text,
            "model": str(pages.markdown((by_id[qid].get("answer") or {}).get(lang, ""))),
        }
        for qid, text in held.items()
    ]
    return answer({"state": s.state, "rate": rate, "url": f"/mock/{s.id}"})


def _scorecard(request: Request, s: Session, lang: str) -> Response:
    from attnkata.checker.mock.scorecard import to_markdown

    pasted = {p.kata: replay.pastes(p) for p in s.problems}
    return page(
        request,
        "scorecard.html",
        s=s,
        card=s.card,
        card_md=to_markdown(s.card, lang) if s.card else "",
        pasted=pasted,
    )


@html_page
async def replay_page(request: Request) -> Response:
    s = await run_in_threadpool(_session, request)
    lang = lang_of(request)
    if s.state == sess.ACTIVE:
        return page(
            request, "error.html", status=409, message=msg("web.replay_after", lang), hint=None
        )
    problems = [
        {"kata": p.kata, "title": p.title.get(lang, p.title["en"]), "frames": replay.frames(s, p)}
        for p in s.problems
    ]
    return page(
        request,
        "replay.html",
        s=s,
        problems=problems,
        data={
            "problems": problems,
            "texts": pages.texts(
                lang,
                "web.replay_pasted",
                "web.replay_kind_save",
                "web.replay_kind_run",
                "web.replay_kind_submit",
                "web.replay_kind_paste",
            ),
        },
    )
