"""The instructor page (`kata web --set SETDIR --grades DIR`): the class report of `kata set
grade`, drawn from the results folder whenever it changes (a grading run still going fills it
in): the gradebook (sortable), the mistake histogram, the similarity pairs side by side, and
each student's code with its diagnoses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from attnkata.checker.messages import msg
from attnkata.cli.web import pages
from attnkata.cli.web.common import answer, api, error_page, html_page, result_view


def _stamp(grades: Path) -> float:
    try:
        return (grades / "results.json").stat().st_mtime
    except OSError:
        return 0.0


def _students(cr: Any, lang: str) -> list[dict[str, Any]]:
    out = []
    for student in cr.students:
        katas = []
        for kata in cr.manifest.kata_ids:
            e = cr.entry(student, kata)
            source = ""
            if e.path:
                try:
                    source = Path(e.path).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    source = ""
            view = result_view(e.result, source, lang) if e.result else None
            katas.append({"kata": kata, "e": e, "v": view, "source": source})
        out.append({"student": student, "katas": katas})
    return out


def _render(config: Any) -> str:
    from attnkata.checker.sets import report

    cr = report.load(config.set_dir, config.grades_dir)
    lang = cr.lang
    extra = (
        pages.environment()
        .get_template("_students.html")
        .render(students=_students(cr, lang), t=lambda key, **p: msg(key, lang, **p), lang=lang)
    )
    head = (
        f'<link rel="stylesheet" href="/static/app.css?v={pages.__version__}">'
        f'<script src="/static/instructor.js?v={pages.__version__}" defer></script>'
        f'<script type="application/json" id="page-data">{{"stamp": {_stamp(config.grades_dir)}}}</script>'
    )
    return report.render_html(cr, head=head, extra=str(Markup(extra)))


@html_page
async def instructor_page(request: Request) -> Response:
    config = request.app.state.config
    if not config.instructor:
        return error_page(request, 404, msg("web.no_instructor", config.lang), None)
    return HTMLResponse(await run_in_threadpool(_render, config))


@api
async def stamp(request: Request) -> Response:
    config = request.app.state.config
    return answer({"stamp": _stamp(config.grades_dir) if config.instructor else 0.0})
