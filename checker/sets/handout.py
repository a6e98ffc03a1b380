"""The printable handout: one self-contained HTML file (no scripts, fonts or images from
elsewhere) with the conventions and shape legend once, then per kata its statement, the
signatures to implement and the file to hand in. Print CSS starts each kata on a new page."""

from __future__ import annotations

import ast
import html
import re
from datetime import datetime

from markdown_it import MarkdownIt

from attnkata.checker.catalog import CONVENTIONS_MARK, Kata, conventions
from attnkata.checker.messages import label, msg

# Chinese text needs a font with CJK glyphs, named explicitly: a minimal Debian with Chromium
# has none by default and draws empty boxes (README: install fonts-noto-cjk). Linux, macOS and
# Windows names, most common first.
CJK_FONTS = (
    '"Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "WenQuanYi Micro Hei", '
    '"WenQuanYi Zen Hei", "Droid Sans Fallback", "PingFang SC", "Hiragino Sans GB", "Microsoft YaHei"'
)

CSS = """
:root { --ink: #1d2330; --muted: #5d6675; --rule: #d5d9e0; --accent: #2457c5; --code: #f5f6f8; }
* { box-sizing: border-box; }
body { font: 15px/1.55 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, CJK_FONTS, sans-serif;
       color: var(--ink); margin: 0; background: #fff; }
:lang(zh) { font-family: CJK_FONTS, "Noto Sans", Helvetica, Arial, sans-serif; }
main { max-width: 860px; margin: 0 auto; padding: 28px 32px 48px; }
h1 { font-size: 28px; margin: 0 0 6px; } h2 { font-size: 22px; margin: 28px 0 8px; }
h3 { font-size: 17px; margin: 20px 0 6px; }
.meta { color: var(--muted); margin: 0 0 18px; }
table { border-collapse: collapse; margin: 10px 0 16px; width: 100%; }
th, td { border: 1px solid var(--rule); padding: 5px 8px; text-align: left; vertical-align: top; }
th { background: #eef1f6; }
code { font-family: "JetBrains Mono", "DejaVu Sans Mono", Menlo, Consolas, CJK_FONTS, monospace; font-size: 13px;
       background: var(--code); padding: 0 3px; border-radius: 3px; }
pre { background: var(--code); border: 1px solid var(--rule); border-radius: 6px; padding: 10px 12px;
      white-space: pre-wrap; word-break: break-word; overflow-wrap: anywhere; }
pre code { background: none; padding: 0; }
section.kata { border-top: 3px solid var(--accent); margin-top: 36px; padding-top: 8px; }
.badge { display: inline-block; border: 1px solid var(--rule); border-radius: 10px; padding: 0 8px;
         margin-right: 6px; font-size: 13px; color: var(--muted); }
.handin { background: #eef4ff; border-left: 4px solid var(--accent); padding: 6px 10px; margin: 12px 0; }
@page { size: A4; margin: 16mm 14mm; }
@media print {
  body { font-size: 11pt; } main { max-width: none; padding: 0; }
  section.kata { break-before: page; border-top: none; margin-top: 0; }
  pre, table, .handin { break-inside: avoid; }
  h2, h3 { break-after: avoid; }
  a { color: inherit; text-decoration: none; }
}
""".replace("CJK_FONTS", CJK_FONTS)


def markdown() -> MarkdownIt:
    """CommonMark with tables; raw HTML in the source is escaped, code is highlighted inline."""
    return MarkdownIt("commonmark", {"html": False, "highlight": _highlight}).enable("table")


def _highlight(code: str, lang: str, _attrs: str) -> str:
    if lang not in ("python", "py"):
        return ""  # markdown-it escapes it itself
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return highlight(
        code, PythonLexer(), HtmlFormatter(nowrap=True, noclasses=True, style="default")
    )


def legend(lang: str) -> list[tuple[str, str]]:
    """(letter, meaning) pairs parsed from the conventions' first bullet (the letters)."""
    text = conventions(lang)
    first = next((b for b in re.split(r"\n- ", text) if "B =" in b), "")
    first = re.sub(r"\s+", " ", first.split("**", 2)[-1]).strip(" :：")
    pairs = re.findall(
        r"(\b[A-Za-z]{1,4}) = (.+?)(?:[,，。;；](?= ?[A-Za-z]{1,4} =)|[.。]?$)", first
    )
    return [(a, b.strip(" .。,，")) for a, b in pairs]


def signatures(source: str, entry_points: tuple[str, ...]) -> list[str]:
    """The def/class headers and docstrings of the entry points, as they appear in the file."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines()
    blocks = []

    def header(
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, indent: int = 0
    ) -> list[str]:
        body0 = node.body[0]
        has_doc = (
            isinstance(body0, ast.Expr)
            and isinstance(getattr(body0, "value", None), ast.Constant)
            and isinstance(body0.value.value, str)
        )
        start = min([d.lineno for d in node.decorator_list] + [node.lineno])
        end = body0.end_lineno if has_doc else body0.lineno - 1
        return [ln[indent:] if ln[:indent].isspace() else ln for ln in lines[start - 1 : end]]

    for node in tree.body:
        if getattr(node, "name", None) not in entry_points:
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            blocks.append("\n".join(header(node)))
        elif isinstance(node, ast.ClassDef):
            out = header(node)
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    not item.name.startswith("_") or item.name == "__init__"
                ):
                    out.append("")
                    out.extend(header(item))
                    out.append("        ...")
            blocks.append("\n".join(out))
    return blocks


def statement_without_conventions(kata: Kata, lang: str) -> str:
    text = kata.statement_path(lang).read_text(encoding="utf-8")
    text = text.replace(CONVENTIONS_MARK, msg("handout.see_conventions", lang))
    if kata.variant:  # a student's own variant: its conventions first
        from attnkata.checker.variant_text import statement

        text = statement(kata, text, lang)
    return text


def _langs(lang: str) -> list[str]:
    return ["en", "zh"] if lang == "both" else [lang]


def render_handout(
    title: str,
    katas: list[Kata],
    *,
    lang: str,
    level: str,
    due: str | None = None,
    created: str | None = None,
) -> str:
    md = markdown()
    langs = _langs(lang)
    lang0 = langs[0]
    esc = html.escape
    parts = [f"<h1>{esc(title)}</h1>"]
    meta = [
        f"{msg('handout.generated', lang0)} {esc(created or datetime.now().strftime('%Y-%m-%d'))}"
    ]
    if due:
        meta.append(f"{msg('handout.due', lang0)}: <strong>{esc(due)}</strong>")
    parts.append(f'<p class="meta">{" · ".join(meta)}</p>')
    parts.append(
        f"<h2>{msg('handout.contents', lang0)}</h2><table><thead><tr><th>#</th><th>{msg('handout.kata', lang0)}</th>"
        f"<th>{msg('handout.difficulty', lang0)}</th><th>{msg('handout.minutes', lang0)}</th><th>{msg('handout.file', lang0)}</th></tr></thead><tbody>"
    )
    for i, k in enumerate(katas, 1):
        title_text = " / ".join(esc(k.title.get(lng)) for lng in langs)
        parts.append(
            f'<tr><td>{i}</td><td><a href="#kata-{esc(k.id)}">{title_text}</a> <code>{esc(k.id)}</code></td>'
            f"<td>{esc(label('handout.difficulty_names', k.difficulty, lang0))}</td><td>{k.minutes}</td>"
            f"<td><code>{esc(k.solution_file)}</code></td></tr>"
        )
    parts.append("</tbody></table>")
    for lng in langs:
        parts.append(
            f'<section class="conventions" lang="{lng}"><h2>{msg("handout.conventions", lng)}</h2>'
        )
        pairs = legend(lng)
        if pairs:
            parts.append(
                f'<h3>{msg("handout.legend", lng)}</h3><table class="legend"><thead><tr><th>{msg("handout.letter", lng)}</th>'
                f"<th>{msg('handout.meaning', lng)}</th></tr></thead><tbody>"
            )
            parts.extend(
                f"<tr><td><code>{esc(a)}</code></td><td>{esc(b)}</td></tr>" for a, b in pairs
            )
            parts.append("</tbody></table>")
        body = re.sub(r"^##[^\n]*\n", "", conventions(lng), count=1)
        parts.append(md.render(body))
        parts.append("</section>")
    for i, k in enumerate(katas, 1):
        skeleton = k.skeleton_path.read_text(encoding="utf-8") if k.skeleton_path.is_file() else ""
        sigs = signatures(skeleton, k.entry_points)
        parts.append(f'<section class="kata" id="kata-{esc(k.id)}">')
        for lng in langs:
            parts.append(
                f'<div lang="{lng}"><p class="meta"><span class="badge">{i} · <code>{esc(k.id)}</code></span>'
                f'<span class="badge">{esc(label("handout.difficulty_names", k.difficulty, lng))}</span>'
                f'<span class="badge">{k.minutes} min</span></p>'
            )
            parts.append(md.render(statement_without_conventions(k, lng)))
            parts.append("</div>")
        if sigs:
            parts.append(f"<h3>{' / '.join(msg('handout.signatures', lng) for lng in langs)}</h3>")
            for block in sigs:
                parts.append(
                    f'<pre><code class="language-python">{_highlight(block, "python", "")}</code></pre>'
                )
        level_note = " ".join(md.renderInline(msg(f"handout.level_{level}", lng)) for lng in langs)
        parts.append(
            f'<p class="handin">{" / ".join(msg("handout.hand_in", lng) for lng in langs)}: '
            f"<code>{esc(k.solution_file)}</code>. {level_note}</p>"
        )
        parts.append("</section>")
    doc_lang = "zh" if langs == ["zh"] else "en"
    return (
        f'<!DOCTYPE html>\n<html lang="{doc_lang}"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body><main>\n"
        + "\n".join(parts)
        + "\n</main></body></html>\n"
    )
