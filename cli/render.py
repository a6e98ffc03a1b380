"""Terminal rendering of the result model (the only thing it reads)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from attnkata.checker.messages import msg
from attnkata.checker.models import (
    SEVERITIES,
    Diagnostic,
    FixReport,
    Result,
    excerpt_blocks,
    explained_tests,
    localized,
)
from attnkata.checker.textsafe import clean, clean_data

STATUS_STYLE = {"pass": "green", "fail": "red", "error": "red", "timeout": "yellow", "skip": "dim"}
STATUS_MARK = {"pass": "✓", "fail": "✗", "error": "!", "timeout": "⏱", "skip": "-"}


def isolation_line(result: Result) -> Text | None:
    """Which sandbox ran the code (and why a weaker one, if so)."""
    iso = result.isolation
    if not iso:
        return None
    label = msg("render.isolation", result.lang)
    text = f"{label}: {iso.get('backend')}"
    if iso.get("namespaces"):
        text += f" ({', '.join(iso['namespaces'])}; {iso.get('uid')}; memory: {iso.get('memory')})"
    if iso.get("note"):
        text += f" — {iso['note']}"
    lim = result.limits or {}
    if lim.get("call_timeout"):
        text += "\n" + msg(
            "render.limit_words",
            result.lang,
            call=lim["call_timeout"],
            total=lim.get("total_timeout", 0),
        )
    if result.seed is not None:
        text += "\n" + msg("render.seed", result.lang, seed=result.seed)
    return Text(text, style="dim")


MAX_DIAGNOSTICS = 3


def summary_line(result: Result) -> Text:
    counts = result.tier_counts()
    passed = sum(p for p, _ in counts.values())
    total = sum(t for _, t in counts.values())
    tiers = ", ".join(f"{tier} {p}/{t}" for tier, (p, t) in counts.items())
    text = Text()
    text.append(
        f" {result.status.upper()} ", style=f"bold reverse {STATUS_STYLE.get(result.status, 'red')}"
    )
    text.append(f"  {result.kata}  ")
    if total:
        text.append(f"{passed}/{total} {msg('render.passed', result.lang)} ({tiers})")
    text.append(f"  {result.timings.get('total', 0):.1f}s", style="dim")
    return text


def test_table(result: Result) -> Table:
    table = Table(show_header=False, box=None, pad_edge=False, padding=(0, 1))
    table.add_column(width=1)
    table.add_column(style="dim")
    table.add_column(overflow="fold")  # a long CJK message has no spaces to wrap at
    first_with: dict[str, str] = {}
    for t in result.tests:
        style = STATUS_STYLE.get(t.status, "red")
        line = Text(t.id, style=style if t.status != "pass" else "")
        if t.message and t.status != "pass":
            # The same failure in many tests (e.g. a TypeError on every call) is shown once,
            # under the first test that has it; the others point there.
            first = first_with.get(t.message)
            if first is None:
                first_with[t.message] = t.id
                line.append("\n" + t.message, style="default")
            else:
                line.append("  " + msg("render.same_as", result.lang, test=first), style="dim")
        table.add_row(Text(STATUS_MARK.get(t.status, "?"), style=style), t.tier, line)
    return table


def ordered(diags: list[Diagnostic]) -> list[Diagnostic]:
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(diags, key=lambda d: rank.get(d.severity, 9))


def _grid_text(grid: list[list[int | None]], other: list[list[int | None]] | None) -> Text:
    text = Text()
    for i, row in enumerate(grid):
        for j, cell in enumerate(row):
            differs = (
                other is not None and i < len(other) and j < len(other[i]) and other[i][j] != cell
            )
            if cell is None:
                text.append("? ", style="bold yellow")
            elif cell:
                text.append("■ ", style="bold red" if differs else "green")
            else:
                text.append("· ", style="bold red" if differs else "dim")
        if i < len(grid) - 1:
            text.append("\n")
    return text


def mask_grids(data: dict, lang: str) -> Group:
    """The expected and the candidate's effective mask side by side; cells that differ in red."""
    expected, got = data["mask_expected"], data.get("mask_got")
    caption = (
        localized(data["grid_caption"], lang)
        if data.get("grid_caption")
        else msg("grid.caption", lang)
    )
    table = Table(box=None, show_edge=False, padding=(0, 3, 0, 0))
    table.add_column(msg("grid.expected", lang), no_wrap=True)
    table.add_column(msg("grid.got", lang), no_wrap=True)
    right = _grid_text(got, expected) if got else Text(msg("grid.not_run", lang), style="dim")
    table.add_row(_grid_text(expected, None), right)
    return Group(Text(caption, style="dim"), table)


def head_maps(data: dict, lang: str) -> Group:
    """Which KV head each query head read: expected row and the candidate's row."""
    expected, got = data["head_map_expected"], data.get("head_map_got") or []
    table = Table(box=None, show_edge=False, padding=(0, 1, 0, 0))
    table.add_column("", style="dim", no_wrap=True)
    for h in range(len(expected)):
        table.add_column(str(h), justify="right")
    table.add_row(msg("grid.expected", lang), *[str(x) for x in expected])
    if got:
        table.add_row(
            msg("grid.got", lang),
            *[
                Text(str(x), style="bold red" if i < len(expected) and x != expected[i] else "")
                for i, x in enumerate(got)
            ],
        )
    return Group(Text(msg("grid.heads", lang), style="dim"), table)


def picture_tables(data: dict, lang: str) -> list[Group]:
    """A kata's own pictures (e.g. the online softmax per key block, theirs beside the
    reference's): small tables with marked rows and cells that differ in red."""
    out = []
    for pic in data.get("pictures") or []:
        if not isinstance(pic, dict) or not pic.get("rows"):
            continue
        marked = set(pic.get("marked") or [])
        differs = {(r, c) for r, c in pic.get("differs") or []}
        table = Table(box=None, show_edge=False, padding=(0, 2, 0, 0), header_style="dim")
        for col in pic.get("columns") or []:
            table.add_column(localized(col, lang), overflow="fold")
        for i, row in enumerate(pic["rows"]):
            cells = [
                Text(
                    localized(v, lang) if v is not None else "—",
                    style="bold red" if (i, j) in differs else ("bold" if i in marked else ""),
                )
                for j, v in enumerate(row)
            ]
            table.add_row(*cells)
        out.append(Group(Text(localized(pic.get("caption"), lang), style="dim"), table))
    return out


def diagnostic_panel(d: Diagnostic, source_lines: list[str], lang: str) -> Panel:
    # The title is the panel's first line, where it wraps: in the border rich cuts it to one
    # line ("…" at 80 columns). The border keeps what is short: the severity and the id.
    parts: list = [Text(d.title, style="bold")]
    if d.explanation:
        parts.append(Text(d.explanation))
    if d.fix:
        parts.append(Text.assemble((f"{msg('render.fix', lang)}: ", "bold"), d.fix))
    refs = d.source[:3]
    for lo, hi, marked in excerpt_blocks(refs, len(source_lines)):
        parts.append(
            Syntax(
                "\n".join(source_lines[lo - 1 : hi]),
                "python",
                line_numbers=True,
                start_line=lo,
                highlight_lines=marked,
                theme="ansi_dark",
                word_wrap=True,
            )
        )
    for ref in refs:
        if not (source_lines and 0 < ref.line <= len(source_lines)) and ref.text:
            parts.append(Text(f"{msg('render.line', lang)} {ref.line}: {ref.text}", style="cyan"))
    if d.data.get("mask_expected"):
        parts.append(mask_grids(d.data, lang))
    if d.data.get("head_map_expected"):
        parts.append(head_maps(d.data, lang))
    parts.extend(picture_tables(d.data, lang))
    if d.evidence:
        parts.append(Text(f"{msg('render.evidence', lang)}: " + "; ".join(d.evidence), style="dim"))
    if d.link:
        parts.append(Text(f"→ {d.link}", style="dim"))
    color = {
        "essential": "red",
        "actionable": "yellow",
        "informative": "blue",
        "celebratory": "green",
    }
    title = Text.assemble((f"[{d.severity}] ", color.get(d.severity, "red")), (d.id, "dim"))
    return Panel(
        Group(*parts),
        title=title,
        title_align="left",
        border_style=color.get(d.severity, "red"),
    )


def fold_line(tests: list[str], lang: str, shown: int = 4) -> Text:
    """One line under a diagnosis: the tests it explains ("explains 20 failing tests: a, b,
    c, d … and 16 more")."""
    names = ", ".join(tests[:shown])
    if len(tests) > shown:
        names += " " + msg("fold.more", lang, n=len(tests) - shown)
    return Text("  ↳ " + msg("fold.explains", lang, n=len(tests), tests=names), style="dim")


def render_result(
    console: Console, result: Result, source: str | None = None, all_tests: bool = False
) -> None:
    """The verdict, then the diagnosis (at most three, most severe first), each followed by
    one line that folds the failing tests it explains; then the failing tests no diagnosis
    explains. `all_tests` (`kata check --tests`) lists every test after the diagnosis. What the
    candidate chose (messages quoting its output and exceptions, its file's name and lines)
    is shown without control characters, whatever the console (textsafe.py)."""
    result = clean_data(result)
    lines = clean(source).splitlines() if source else []
    console.print(summary_line(result))
    console.print(Text(result.solution, style="dim"))
    iso = isolation_line(result)
    if iso is not None:
        console.print(iso)
    if result.variant:  # graded in a variant's conventions: say which, and in what frame
        key = ",".join(f"{k}={v}" for k, v in result.variant.items())
        console.print(
            Text(
                f"{msg('variant.graded', result.lang)}: {key} ({msg('variant.frame_note', result.lang)})",
                style="magenta",
            )
        )
    folded, unexplained = explained_tests(result)
    under = {id(d): tests for d, tests in folded}
    diags = ordered(result.diagnostics)[:MAX_DIAGNOSTICS]
    if diags:
        console.print(Text(msg("render.diagnosis", result.lang), style="bold"))
        for d in diags:
            console.print(diagnostic_panel(d, lines, result.lang))
            if id(d) in under:
                console.print(fold_line(under[id(d)], result.lang))
    failing = len({t for _, ts in folded for t in ts}) + len(unexplained)
    if all_tests and result.tests:
        console.print(Text(msg("fold.tests", result.lang), style="bold"))
        console.print(test_table(result))
    elif unexplained:
        if folded:
            console.print(Text(msg("fold.other", result.lang), style="bold"))
        console.print(test_table(replace(result, tests=unexplained)))
    if not all_tests and failing and (folded or len(result.tests) > len(unexplained)):
        console.print(Text(msg("fold.tests_hint", result.lang, n=failing), style="dim"))
    if not diags and result.passed:
        console.print(Text(msg("render.all_pass", result.lang), style="green"))


def render_fix_report(console: Console, report: FixReport, kata: str, file_arg: str = "") -> None:
    """`kata fix`: the check's verdict and diagnosis names, each verified fix as a diff with
    what it fixes, the mistakes without one, and how to apply (or undo) them."""
    result = report.result
    lang = report.lang
    if result is not None:
        console.print(summary_line(clean_data(result)))
        console.print(Text(result.solution, style="dim"))
    name = Path(report.solution).name
    if result is not None and result.passed:
        console.print(Text(msg("fix.passes", lang, file=name), style="green"))
        return
    if result is not None and not result.tests:
        why = ", ".join(d.title for d in result.diagnostics[:2]) or result.status
        console.print(Text(msg("fix.not_graded", lang, file=name, why=why, kata=kata)))
        return
    if result is not None and not report.fixes and not report.unfixed:
        ids = [d.id for d in result.diagnostics if d.is_error or d.id == "no-known-mistake"]
        if result.status == "timeout":
            why = next((d.title for d in result.diagnostics if d.id == "timeout"), result.status)
            console.print(Text(msg("fix.timed_out", lang, why=why, kata=kata)))
        elif "no-known-mistake" in ids or not ids:
            console.print(Text(msg("fix.only_unknown", lang, kata=kata)))
        else:
            console.print(Text(msg("fix.nothing_catalogued", lang, ids=", ".join(ids), kata=kata)))
        return
    total = len(report.fixes)
    for n, f in enumerate(report.fixes, 1):
        console.print(
            Text.assemble(
                (msg("fix.header", lang, n=n, total=total, id=f.mistake), "bold"),
                (" — " + f.title, ""),
            )
        )
        console.print(
            Text(msg("fix.fixes_tests", lang, n=f.tests_fixed, m=f.tests_failing), style="green")
        )
        console.print(Syntax(clean(f.diff).rstrip("\n"), "diff", theme="ansi_dark", word_wrap=True))
    if total > 1:
        console.print(Text(msg("fix.in_order", lang), style="dim"))
    from attnkata.checker import mistakes

    for mid in report.unfixed:
        title = mistakes.get(mid).render("title", lang) if mid in mistakes.catalogue() else mid
        console.print(Text(msg("fix.unfixed", lang, id=mid, title=title), style="yellow"))
    console.print(Text(msg("fix.searched", lang, n=report.graded), style="dim"))
    if not report.fixes:
        return
    if report.fixed_status:
        state = (
            msg("fix.after_pass", lang)
            if report.fixed_status == "pass"
            else msg("fix.after_fail", lang, n=_still_failing(report))
        )
        console.print(Text(msg("fix.after", lang, status=state)))
    if report.written:
        console.print(
            Text(msg("fix.written", lang, file=report.written, backup=report.backup), style="green")
        )
        console.print(Text(msg("fix.undo_hint", lang, kata=kata, file=file_arg), style="dim"))
    else:
        console.print(Text(msg("fix.write_hint", lang, kata=kata, file=file_arg), style="dim"))


def _still_failing(report: FixReport) -> int:
    fixed = {t for f in report.fixes for t in f.fixed_tests}
    return max(0, report.failing - len(fixed))
