"""One result as self-contained HTML (notebooks: registered by cli/notebook.py): the verdict, the tests
by tier, and each diagnosis with its explanation, fix, the candidate's own lines and the
pictures (mask grids, head maps) as HTML tables."""

from __future__ import annotations

from html import escape
from typing import Any

from attnkata.checker import mistakes
from attnkata.checker.messages import msg
from attnkata.checker.models import (
    SEVERITIES,
    Diagnostic,
    FixReport,
    Result,
    TestResult,
    excerpt_blocks,
    explained_tests,
    localized,
)
from attnkata.checker.textsafe import clean, clean_data

MAX_DIAGNOSTICS = 3
_COLOURS = {
    "pass": "#1a7f37",
    "fail": "#cf222e",
    "error": "#cf222e",
    "timeout": "#9a6700",
    "skip": "#6e7781",
}
_MARKS = {"pass": "✓", "fail": "✗", "error": "!", "timeout": "⏱", "skip": "-"}


def _grid(grid: list[list[int | None]], other: list[list[int | None]] | None) -> str:
    rows = []
    for i, row in enumerate(grid):
        cells = []
        for j, cell in enumerate(row):
            differs = (
                other is not None and i < len(other) and j < len(other[i]) and other[i][j] != cell
            )
            colour = "#e3b341" if cell is None else ("#2da44e" if cell else "#eaeef2")
            border = "2px solid #cf222e" if differs else "1px solid #d0d7de"
            cells.append(
                f'<td style="width:12px;height:12px;padding:0;background:{colour};border:{border}"></td>'
            )
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f'<table style="border-collapse:collapse">{"".join(rows)}</table>'


def _pictures(d: Diagnostic, lang: str) -> str:
    parts = []
    expected, got = d.data.get("mask_expected"), d.data.get("mask_got")
    if expected:
        right = _grid(got, expected) if got else "—"
        caption = (
            localized(d.data["grid_caption"], lang)
            if d.data.get("grid_caption")
            else msg("html.grid", lang)
        )
        parts.append(
            f'<div style="color:#57606a">{escape(caption)}</div><table><tr>'
            f"<th>{escape(msg('html.expected', lang))}</th><th>{escape(msg('html.got', lang))}</th></tr>"
            f"<tr><td>{_grid(expected, None)}</td><td>{right}</td></tr></table>"
        )
    heads, heads_got = d.data.get("head_map_expected"), d.data.get("head_map_got") or []
    if heads:

        def row(name: str, values: list[Any], ref: list[Any] | None) -> str:
            cells = "".join(
                f'<td style="color:{"#cf222e" if ref and i < len(ref) and v != ref[i] else "inherit"}">'
                f"{escape(str(v))}</td>"
                for i, v in enumerate(values)
            )
            return f"<tr><th>{escape(name)}</th>{cells}</tr>"

        parts.append(
            f'<div style="color:#57606a">{escape(msg("html.heads", lang))}</div><table>'
            f"{row(msg('html.expected', lang), heads, None)}{row(msg('html.got', lang), heads_got, heads) if heads_got else ''}"
            "</table>"
        )
    for pic in d.data.get("pictures") or []:
        parts.append(_picture(pic, lang))
    return "".join(parts)


def pictures_html(d: Diagnostic, lang: str) -> str:
    """A diagnosis' pictures (mask grids, head maps, a kata's own tables) as HTML tables, for
    pages that lay out the rest themselves (`kata web`)."""
    return _pictures(d, lang)


def _picture(pic: Any, lang: str) -> str:
    """A kata's own table picture: marked rows in bold, differing cells in red."""
    if not isinstance(pic, dict) or not pic.get("rows"):
        return ""
    marked = set(pic.get("marked") or [])
    differs = {(r, c) for r, c in pic.get("differs") or []}
    head = "".join(
        f'<th style="color:#57606a;padding:0 8px">{escape(localized(c, lang))}</th>'
        for c in pic.get("columns") or []
    )
    body = []
    for i, row in enumerate(pic["rows"]):
        cells = "".join(
            f'<td style="padding:0 8px;{"color:#cf222e;font-weight:bold" if (i, j) in differs else ""}">'
            f"{escape(localized(v, lang) if v is not None else '—')}</td>"
            for j, v in enumerate(row)
        )
        body.append(f'<tr style="{"font-weight:bold" if i in marked else ""}">{cells}</tr>')
    return (
        f'<div style="color:#57606a">{escape(localized(pic.get("caption"), lang))}</div>'
        f'<table style="border-collapse:collapse;font-family:monospace"><tr>{head}</tr>{"".join(body)}</table>'
    )


def _excerpt(d: Diagnostic, lines: list[str], lang: str) -> str:
    out = []
    refs = d.source[:3]
    for lo, hi, marked in excerpt_blocks(refs, len(lines)):
        body = "".join(
            f'<span style="background:{"#fff8c5" if n in marked else "transparent"}">'
            f"{n:4d}  {escape(lines[n - 1])}</span>\n"
            for n in range(lo, hi + 1)
        )
        out.append(f'<pre style="margin:4px 0;padding:4px;background:#f6f8fa">{body}</pre>')
    for ref in refs:
        if not (lines and 0 < ref.line <= len(lines)) and ref.text:
            out.append(
                f"<div><code>{escape(msg('html.line', lang))} {ref.line}: {escape(ref.text)}</code></div>"
            )
    return "".join(out)


def _diagnostic(d: Diagnostic, lines: list[str], lang: str) -> str:
    colour = (
        "#cf222e"
        if d.severity == "essential"
        else "#9a6700"
        if d.severity == "actionable"
        else "#57606a"
    )
    parts = [
        f'<div style="border-left:4px solid {colour};padding:4px 10px;margin:8px 0">',
        f'<div><b>{escape(d.title)}</b> <code style="color:#57606a">{escape(d.id)}</code> '
        f'<span style="color:{colour}">[{escape(d.severity)}]</span></div>',
    ]
    if d.explanation:
        parts.append(f"<p>{escape(d.explanation)}</p>")
    if d.fix:
        parts.append(f"<p><b>{escape(msg('html.fix', lang))}:</b> {escape(d.fix)}</p>")
    parts.append(_excerpt(d, lines, lang))
    parts.append(_pictures(d, lang))
    if d.evidence:
        items = "".join(f"<li>{escape(e)}</li>" for e in d.evidence[:4])
        parts.append(
            f"<details><summary>{escape(msg('html.evidence', lang))}</summary><ul>{items}</ul></details>"
        )
    parts.append("</div>")
    return "".join(parts)


def _fold(tests: list[str], lang: str, shown: int = 4) -> str:
    names = ", ".join(tests[:shown])
    if len(tests) > shown:
        names += " " + msg("fold.more", lang, n=len(tests) - shown)
    return (
        f'<div style="color:#57606a;margin:-4px 0 8px 14px">↳ '
        f"{escape(msg('fold.explains', lang, n=len(tests), tests=names))}</div>"
    )


def _test_rows(tests: list[TestResult]) -> str:
    return "".join(
        f'<tr><td style="color:{_COLOURS.get(t.status, "#cf222e")}">{_MARKS.get(t.status, "?")}</td>'
        f"<td><code>{escape(t.id)}</code></td><td>{escape(t.message if t.status != 'pass' else '')}</td></tr>"
        for t in tests
    )


def result_html(result: Result, source: str | None = None) -> str:
    """The verdict, the diagnosis (each with one line folding the failing tests it explains),
    the failing tests no diagnosis explains, and every test by tier in a fold-out."""
    # html.escape handles markup, not control characters: candidate text is cleaned first.
    result = clean_data(result)
    lang = result.lang
    lines = clean(source).splitlines() if source else []
    colour = _COLOURS.get(result.status, "#cf222e")
    counts = result.tier_counts()
    tiers = ", ".join(f"{tier} {p}/{t}" for tier, (p, t) in counts.items())
    passed, total = sum(p for p, _ in counts.values()), sum(t for _, t in counts.values())
    head = (
        f'<div><span style="background:{colour};color:white;padding:2px 8px;border-radius:4px">'
        f"<b>{escape(result.status.upper())}</b></span> <b>{escape(result.kata)}</b> "
        f"{passed}/{total} {escape(msg('html.passed', lang))} ({escape(tiers)}) "
        f'<span style="color:#57606a">{result.timings.get("total", 0):.1f}s</span></div>'
    )
    iso = result.isolation.get("backend") if result.isolation else None
    if iso:
        head += f'<div style="color:#57606a;font-size:small">{escape(msg("html.isolation", lang))}: {escape(str(iso))}</div>'
    folded, unexplained = explained_tests(result)
    under = {id(d): tests for d, tests in folded}
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    diags = sorted(result.diagnostics, key=lambda d: rank.get(d.severity, 9))[:MAX_DIAGNOSTICS]
    body = "".join(
        _diagnostic(d, lines, lang) + (_fold(under[id(d)], lang) if id(d) in under else "")
        for d in diags
    )
    other = ""
    if unexplained:
        title = f"<div><b>{escape(msg('fold.other', lang))}</b></div>" if folded else ""
        other = f"{title}<table>{_test_rows(unexplained)}</table>"
    tier_blocks = []
    for tier in counts:
        p, n = counts[tier]
        tier_blocks.append(
            f"<details><summary>{escape(tier)} {p}/{n}</summary>"
            f"<table>{_test_rows([t for t in result.tests if t.tier == tier])}</table></details>"
        )
    every = (
        f'<details class="attnkata-tests"><summary>{escape(msg("fold.every_test", lang, n=total))}</summary>'
        f'<div style="margin-left:12px">{"".join(tier_blocks)}</div></details>'
        if result.tests
        else ""
    )
    return f'<div class="attnkata-result">{head}{body}{other}{every}</div>'


def _diff_html(diff: str) -> str:
    rows = []
    for line in diff.splitlines():
        colour = (
            "#1a7f37"
            if line.startswith("+") and not line.startswith("+++")
            else "#cf222e"
            if line.startswith("-") and not line.startswith("---")
            else "#57606a"
        )
        rows.append(f'<span style="color:{colour}">{escape(line)}</span>')
    return '<pre style="margin:4px 0;padding:4px;background:#f6f8fa">' + "\n".join(rows) + "</pre>"


def fix_html(report: FixReport) -> str:
    """`%%kata KATA --fix` / `attnkata.fix(...)`: each verified fix as a diff with what it fixes,
    and the mistakes without one."""
    checked = report.result
    report = clean_data(report)
    lang = report.lang
    parts = [f"<div><b>{escape(msg('fix.notebook_heading', lang))}</b></div>"]
    total = len(report.fixes)
    for n, f in enumerate(report.fixes, 1):
        parts.append(
            f"<div><b>{escape(msg('fix.header', lang, n=n, total=total, id=f.mistake))}</b> — {escape(f.title)}</div>"
            f'<div style="color:#1a7f37">{escape(msg("fix.fixes_tests", lang, n=f.tests_fixed, m=f.tests_failing))}</div>'
            + _diff_html(f.diff)
        )
    for mid in report.unfixed:
        title = mistakes.get(mid).render("title", lang) if mid in mistakes.catalogue() else mid
        parts.append(
            f'<div style="color:#9a6700">{escape(msg("fix.unfixed", lang, id=mid, title=title))}</div>'
        )
    if checked is not None and checked.passed:
        parts.append(f"<div>{escape(msg('fix.passes', lang, file=report.solution))}</div>")
    elif not report.fixes and not report.unfixed:
        parts.append(f"<div>{escape(msg('fix.only_unknown', lang, kata=report.kata))}</div>")
    else:
        parts.append(
            f'<div style="color:#57606a">{escape(msg("fix.searched", lang, n=report.graded))}</div>'
        )
    return f'<div class="attnkata-fix">{"".join(parts)}</div>'
