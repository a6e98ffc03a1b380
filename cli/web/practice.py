"""Practice pages: the katas (status, what is due, what `kata next` recommends), one kata with
its statement, the editor on the workspace file, Check, hints, the solution and the history.
Every answer comes from the checker; the grading itself from the grading process."""

from __future__ import annotations

import json
import time
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from attnkata.checker import catalog, workspace
from attnkata.checker.messages import msg
from attnkata.checker.store import History
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
    "web.checking",
    "web.superseded",
    "web.changed_on_disk",
    "web.conflict",
    "web.solution_confirm",
    "web.not_utf8_readonly",
    "web.grader_failed",
    "web.backup_kept",
)


def _kata_list(lang: str) -> dict[str, Any]:
    from attnkata.checker import schedule
    from attnkata.cli.commands.practice import _plans, kata_rows

    rows = kata_rows(lang)
    with History() as h:
        plans, now = _plans(h)
    rec = schedule.recommend(catalog.summaries(), plans, now)
    return {
        "rows": rows,
        "recommended": None if rec is None else rec.kata,
        "reason": None if rec is None else rec.reason.get(lang, rec.reason["en"]),
    }


@html_page
async def list_page(request: Request) -> Response:
    lang = lang_of(request)
    return page(request, "list.html", **await run_in_threadpool(_kata_list, lang))


@html_page
async def kata_page(request: Request) -> Response:
    lang = lang_of(request)
    k = _kata(request)
    state = files.read(workspace.solution_path(k), fallback=k.skeleton_path)
    config = request.app.state.config
    config.grader.warm(k.id)
    statements = {code: k.statement(code) for code in catalog.LANGS}
    return page(
        request,
        "kata.html",
        k=k,
        title=k.title.get(lang),
        statements=statements,
        file=state,
        data={
            "kata": k.id,
            "file": state.to_dict(),
            "texts": pages.texts(lang, *PAGE_TEXTS),
        },
    )


def _kata(request: Request) -> catalog.Kata:
    """The kata as the workspace file was started: in its variant (`kata start --variant`),
    whose statement and skeleton the page shows and whose conventions the check grades."""
    from attnkata.checker import api

    k = catalog.get_kata(request.path_params["kata"])
    return api.started_variant(k, workspace.solution_path(k))


@api
async def file_get(request: Request) -> Response:
    """The workspace file now (the page polls it: a save from another editor shows up)."""
    k = _kata(request)
    state = files.read(workspace.solution_path(k), fallback=k.skeleton_path)
    if request.query_params.get("sha") == state.sha:
        return answer({"same": True, "sha": state.sha})
    return answer(state.to_dict())


def _save(k: catalog.Kata, text: str, base: str | None, lang: str) -> dict[str, Any]:
    path = workspace.solution_path(k)
    saved = files.save(path, text, base)
    if saved.created:
        with History() as h:  # as `kata start` does: the file is the candidate's own practice
            h.record_event(k.id, "start", {"file": str(path)})
    return {
        "sha": saved.sha,
        "backup": str(saved.backup) if saved.backup else None,
        "message": msg("web.backup_kept", lang, path=saved.backup) if saved.backup else None,
    }


@api
async def file_put(request: Request) -> Response:
    k = _kata(request)
    data = await body(request)
    base = data.get("base")
    saved = await run_in_threadpool(
        _save, k, text_field(data), base if isinstance(base, str) else None, lang_of(request)
    )
    return answer(saved)


@api
async def check(request: Request) -> Response:
    """Save the editor's text to the workspace file and grade that file, as `kata check` does
    (recorded in the history with mode "web"). A newer check of the same file cancels this one;
    the same text checked from two tabs is graded once."""
    k = _kata(request)
    lang = lang_of(request)
    data = await body(request)
    saved: dict[str, Any] = {}
    if "text" in data:
        base = data.get("base")
        saved = await run_in_threadpool(
            _save, k, text_field(data), base if isinstance(base, str) else None, lang
        )
    path = workspace.solution_path(k)
    state = files.read(path)
    if not state.exists:
        raise BadInput("web.no_file", 404, path=str(path))
    grader = request.app.state.config.grader
    t0 = time.perf_counter()
    reply = await grader.request(
        "check", key=f"check:{path}", share=state.sha, kata=k.id, path=str(path), lang=lang
    )
    return answer(
        _verdict(reply, lang) | {"saved": saved, "seconds": round(time.perf_counter() - t0, 3)}
    )


def _verdict(reply: dict[str, Any], lang: str) -> dict[str, Any]:
    if reply.get("cancelled"):
        return {"cancelled": True, "message": msg("web.superseded", lang)}
    if not reply.get("ok"):
        error = reply.get("error") or ""
        if reply.get("dead"):
            return {"error": msg("web.grader_died", lang, log=error)}
        return {"error": error, "hint": reply.get("hint")}
    view = result_view(reply["result"], reply.get("source", ""), lang)
    html = (
        pages.environment()
        .get_template("_result.html")
        .render(v=view, t=lambda key, **p: msg(key, lang, **p), lang=lang)
    )
    return {"status": view["r"].status, "html": html, "marks": view["marks"]}


@api
async def hint(request: Request) -> Response:
    k = _kata(request)
    lang = lang_of(request)
    # In the grading process: the ladder's rungs may grade the file and verify a fix.
    reply = await request.app.state.config.grader.request("hint", kata=k.id, lang=lang)
    if not reply.get("ok"):
        if reply.get("dead"):
            return answer({"error": msg("web.grader_died", lang, log=reply.get("error", ""))}, 500)
        return answer({"error": reply.get("error", ""), "hint": reply.get("hint")}, 400)
    return answer({"label": reply["label"], "html": str(pages.markdown(reply["text"]))})


class _Ask(Exception):
    """The candidate has not passed the kata: the page asks before showing the solution."""


@api
async def solution(request: Request) -> Response:
    from attnkata.cli.commands.practice import reveal_solution

    k = _kata(request)
    data = await body(request)

    def confirmed() -> bool:
        if data.get("confirm") is True:
            return True
        raise _Ask()

    try:
        code = await run_in_threadpool(reveal_solution, k, confirmed)
    except _Ask:
        return answer({"confirm": msg("web.solution_confirm", lang_of(request))})
    return answer({"code": code})


@api
async def history(request: Request) -> Response:
    k = _kata(request)
    with History() as h:
        rows = [dict(r) for r in h.attempts(k.id, 50)]
    for r in rows:
        r["diagnoses"] = json.loads(r["diagnoses"])
        r["when"] = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["ts"]))
    return answer({"attempts": rows})
