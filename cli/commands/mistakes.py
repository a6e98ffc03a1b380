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
from attnkata.checker import mistakes as cat
from attnkata.checker.errors import UsageError
from attnkata.checker.messages import msg
from attnkata.cli.console import out, print_json
from attnkata.cli.options import JsonOption, LangOption, resolve_lang

SEVERITY_STYLE = {
    "essential": "red",
    "actionable": "yellow",
    "informative": "blue",
    "celebratory": "green",
}


def _katas_text(m: cat.Mistake, lang: str) -> str:
    return msg("mistakes.every", lang) if cat.EVERY_KATA in m.katas else ", ".join(m.katas)


def _entries(kata: str | None) -> tuple[list[cat.Mistake], str | None]:
    if kata is None:
        return list(cat.catalogue().values()), None
    k = catalog.get_kata(kata)
    listed = [cat.get(mid) for mid in k.mistakes if mid in cat.catalogue()]
    extra = [m for m in cat.for_kata(k.id) if m.id not in k.mistakes]
    return listed + extra, k.id


def mistakes(
    kata: Annotated[
        str | None, typer.Argument(help="Only the mistakes of this kata.", show_default=False)
    ] = None,
    json_out: JsonOption = False,
    lang: LangOption = None,
) -> None:
    """List the catalogued mistakes `kata check` can name (optionally those of one KATA)."""
    lang = resolve_lang(lang)
    entries, kata_id = _entries(kata)
    if json_out:
        print_json(
            [
                {
                    "id": m.id,
                    "severity": m.severity,
                    "katas": list(m.katas),
                    "title": m.render("title", lang, kata=kata_id),
                    "fix": m.render("fix", lang, kata=kata_id),
                    "link": m.link(kata_id, lang),
                }
                for m in entries
            ]
        )
        return
    title = f"{msg('mistakes.for', lang)} {kata_id}" if kata_id else msg("mistakes.title", lang)
    table = Table(title=title, caption=msg("mistakes.hint", lang), caption_justify="left")
    table.add_column(msg("mistakes.id", lang), no_wrap=True)
    table.add_column(msg("mistakes.severity", lang))
    table.add_column(msg("mistakes.mistake", lang), overflow="fold")  # CJK has no spaces to wrap at
    if kata_id is None:
        table.add_column(msg("mistakes.katas", lang), style="dim", overflow="fold")
    for m in entries:
        row = [
            m.id,
            Text(m.severity, style=SEVERITY_STYLE.get(m.severity, "")),
            m.render("title", lang, kata=kata_id),
        ]
        if kata_id is None:
            row.append(_katas_text(m, lang))
        table.add_row(*row)
    out.print(table)


def explain(
    mistake_id: Annotated[
        str,
        typer.Argument(
            metavar="ID",
            help="Mistake id, e.g. kv-repeat-instead-of-interleave.",
            show_default=False,
        ),
    ],
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
        print_json(
            {
                "id": m.id,
                "severity": m.severity,
                "katas": list(m.katas),
                "title": m.render("title", lang),
                "explanation": m.render("explanation", lang),
                "fix": m.render("fix", lang),
                "hides": m.render("hides", lang),
                "link": m.link(kata_id, lang),
                "demo": code,
                "demo_output": demo_out,
            }
        )
        return
    out.print(
        Text.assemble(
            (m.render("title", lang), "bold"),
            "  ",
            (m.id, "dim"),
            "  ",
            (m.severity, SEVERITY_STYLE.get(m.severity, "")),
        )
    )
    out.print(Text(f"{msg('mistakes.katas', lang)}: {_katas_text(m, lang)}", style="dim"))
    out.print()
    out.print(m.render("explanation", lang))
    out.print(Text.assemble((f"{msg('mistakes.fix', lang)}: ", "bold"), m.render("fix", lang)))
    out.print(Text.assemble((f"{msg('mistakes.hides', lang)}: ", "bold"), m.render("hides", lang)))
    out.print(Text(f"{msg('mistakes.where', lang)}: {m.link(kata_id, lang)}", style="dim"))
    out.print()
    if code:
        out.print(Text(msg("mistakes.demo", lang), style="bold"))
        out.print(
            Syntax(code.rstrip(), "python", theme="ansi_dark", line_numbers=False, word_wrap=True)
        )
        out.print(Text(msg("mistakes.output", lang), style="bold"))
        out.print(Text(demo_out))
    else:
        out.print(Text(msg("mistakes.no_demo", lang), style="dim"))


def register(app: typer.Typer) -> None:
    app.command()(mistakes)
    app.command()(explain)
