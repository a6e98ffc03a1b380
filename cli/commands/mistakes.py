"""`kata mistakes [KATA]`: the mistake catalogue; `kata explain ID`: one mistake in full, with
a tiny demonstration that runs and shows its real output.

Listing never imports torch; only `explain`'s demonstration does (when it runs)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from attnkata.checker import catalog
from attnkata.checker.diagnose import catalogue as cat
from attnkata.checker.errors import UsageError
from attnkata.cli.console import out, print_json
from attnkata.cli.options import JsonOption, LangOption, resolve_lang

SEVERITY_STYLE = {"essential": "red", "actionable": "yellow", "informative": "blue", "celebratory": "green"}
LABELS = {
    "en": {"title": "mistake catalogue", "for": "mistakes in", "id": "id", "severity": "severity",
           "mistake": "mistake", "katas": "katas", "every": "every kata", "fix": "Fix", "hides": "Hides when",
           "where": "Read", "demo": "Demonstration", "output": "Output", "no_demo": "(no demonstration for this one)",
           "hint": "`kata explain ID` shows one in full"},
    "zh": {"title": "错误目录", "for": "适用于", "id": "id", "severity": "严重程度", "mistake": "错误",
           "katas": "题目", "every": "所有题目", "fix": "修改建议", "hides": "何时看不出来", "where": "参阅",
           "demo": "演示", "output": "输出", "no_demo": "（这一条没有演示）",
           "hint": "用 `kata explain ID` 查看某一条的完整说明"},
}


def _katas_text(m: cat.Mistake, lang: str) -> str:
    return LABELS[lang]["every"] if cat.EVERY_KATA in m.katas else ", ".join(m.katas)


def _entries(kata: str | None) -> tuple[list[cat.Mistake], str | None]:
    if kata is None:
        return list(cat.catalogue().values()), None
    k = catalog.get_kata(kata)
    listed = [cat.get(mid) for mid in k.mistakes if mid in cat.catalogue()]
    extra = [m for m in cat.for_kata(k.id) if m.id not in k.mistakes]
    return listed + extra, k.id


def mistakes(
    kata: Annotated[str | None, typer.Argument(help="Only the mistakes of this kata.", show_default=False)] = None,
    json_out: JsonOption = False,
    lang: LangOption = None,
) -> None:
    """List the catalogued mistakes `kata check` can name (optionally those of one KATA)."""
    lang = resolve_lang(lang)
    entries, kata_id = _entries(kata)
    if json_out:
        print_json([{
            "id": m.id, "severity": m.severity, "katas": list(m.katas), "title": m.render("title", lang),
            "fix": m.render("fix", lang), "link": m.link(kata_id, lang),
        } for m in entries])
        return
    labels = LABELS[lang]
    title = f"{labels['for']} {kata_id}" if kata_id else labels["title"]
    table = Table(title=title, caption=labels["hint"], caption_justify="left")
    table.add_column(labels["id"], no_wrap=True)
    table.add_column(labels["severity"])
    table.add_column(labels["mistake"], overflow="fold")  # CJK has no spaces to wrap at
    if kata_id is None:
        table.add_column(labels["katas"], style="dim", overflow="fold")
    for m in entries:
        row = [m.id, Text(m.severity, style=SEVERITY_STYLE.get(m.severity, "")), m.render("title", lang)]
        if kata_id is None:
            row.append(_katas_text(m, lang))
        table.add_row(*row)
    out.print(table)


def explain(
    mistake_id: Annotated[str, typer.Argument(metavar="ID", help="Mistake id, e.g. kv-repeat-instead-of-interleave.",
                                              show_default=False)],
    json_out: JsonOption = False,
    lang: LangOption = None,
) -> None:
    """Explain one mistake: why it is wrong, how to fix it, when it hides, and a demonstration."""
    from attnkata.checker.diagnose import demos

    lang = resolve_lang(lang)
    known = cat.catalogue()
    if mistake_id not in known:
        close = catalog.suggest(mistake_id, list(known))
        hint = f"did you mean {close[0]!r}?" if close else "run `kata mistakes` to see the ids"
        raise UsageError(f"unknown mistake {mistake_id!r}", hint)
    m = known[mistake_id]
    code = demos.code(m.id)
    demo_out = demos.run(m.id) if code else ""
    kata_id = None if cat.EVERY_KATA in m.katas else m.katas[0]
    if json_out:
        print_json({
            "id": m.id, "severity": m.severity, "katas": list(m.katas), "title": m.render("title", lang),
            "explanation": m.render("explanation", lang), "fix": m.render("fix", lang),
            "hides": m.render("hides", lang), "link": m.link(kata_id, lang), "demo": code, "demo_output": demo_out,
        })
        return
    labels = LABELS[lang]
    out.print(Text.assemble((m.render("title", lang), "bold"), "  ", (m.id, "dim"), "  ",
                            (m.severity, SEVERITY_STYLE.get(m.severity, ""))))
    out.print(Text(f"{labels['katas']}: {_katas_text(m, lang)}", style="dim"))
    out.print()
    out.print(m.render("explanation", lang))
    out.print(Text.assemble((f"{labels['fix']}: ", "bold"), m.render("fix", lang)))
    out.print(Text.assemble((f"{labels['hides']}: ", "bold"), m.render("hides", lang)))
    out.print(Text(f"{labels['where']}: {m.link(kata_id, lang)}", style="dim"))
    out.print()
    if code:
        out.print(Text(labels["demo"], style="bold"))
        out.print(Syntax(code.rstrip(), "python", theme="ansi_dark", line_numbers=False, word_wrap=True))
        out.print(Text(labels["output"], style="bold"))
        out.print(Text(demo_out))
    else:
        out.print(Text(labels["no_demo"], style="dim"))


def register(app: typer.Typer) -> None:
    app.command()(mistakes)
    app.command()(explain)
