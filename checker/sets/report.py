"""What `kata set grade` writes: a CSV gradebook, a JSON of every result, one Markdown feedback
file per student, and a self-contained HTML class report (score distribution, pass rate per
kata, the class-wide mistake histogram). Everything here reads `ClassResults` only; nothing
shows hidden test code or the reference."""

from __future__ import annotations

import csv
import html
import io
import json
import os
import re
import statistics
from pathlib import Path
from typing import Any

from attnkata.checker.messages import clip, label, msg
from attnkata.checker.models import SEVERITIES
from attnkata.checker.sets.grade import MISSING, ClassResults, Entry
from attnkata.checker.sets.handout import CJK_FONTS
from attnkata.checker.textsafe import clean, json_text

NEEDS_REVIEW = (
    "policy-needs-review"  # checker/policy.py's NEEDS_REVIEW (not imported: no policy code here)
)

COUNTED_SEVERITIES = ("essential", "actionable")  # what counts as a mistake in the histogram
MAX_FEEDBACK_DIAGNOSTICS = 3
MAX_FEEDBACK_MESSAGE = 300  # characters of one test's message
MAX_FEEDBACK_TESTS = 8


def percent(cr: ClassResults, student: str) -> float:
    m = cr.manifest.max_points
    return round(100.0 * cr.total(student) / m, 2) if m else 0.0


# -- summaries -----------------------------------------------------------------------------
def kata_stats(cr: ClassResults) -> list[dict[str, Any]]:
    rows = []
    for k in cr.manifest.katas:
        es = [cr.entry(s, k.id) for s in cr.students]
        n = len(es)
        submitted = [e for e in es if e.status != MISSING]
        passed = sum(e.status == "pass" for e in es)
        rows.append(
            {
                "kata": k.id,
                "title": k.title,
                "students": n,
                "submitted": len(submitted),
                "passed": passed,
                "pass_rate": round(passed / n, 4) if n else 0.0,
                "mean_score": round(statistics.fmean(e.score for e in es), 3) if es else 0.0,
                "points": cr.manifest.points(k.id),
                "missing": n - len(submitted),
                "late": sum(e.late for e in es),
                "timeouts": sum(e.status == "timeout" for e in es),
                "errors": sum(e.status == "error" for e in es),
            }
        )
    return rows


def mistake_histogram(cr: ClassResults) -> list[dict[str, Any]]:
    """Per kata and diagnosis id: how many of the graded submissions show it (each student
    counted once), most common first."""
    rows = []
    for k in cr.manifest.katas:
        graded = [cr.entry(s, k.id) for s in cr.students if cr.entry(s, k.id).result is not None]
        counts: dict[str, dict[str, Any]] = {}
        for e in graded:
            seen = set()
            for d in (e.result or {}).get("diagnostics", []):
                if d.get("severity") not in COUNTED_SEVERITIES or d["id"] in seen:
                    continue
                seen.add(d["id"])
                c = counts.setdefault(d["id"], {"title": d.get("title") or d["id"], "students": []})
                c["students"].append(e.student)
        for mid, c in counts.items():
            n = len(graded)
            rows.append(
                {
                    "kata": k.id,
                    "id": mid,
                    "title": c["title"],
                    "count": len(c["students"]),
                    "of": n,
                    "share": round(len(c["students"]) / n, 4) if n else 0.0,
                    "students": c["students"],
                }
            )
    rows.sort(key=lambda r: (-r["share"], -r["count"], r["kata"], r["id"]))
    return rows


def needs_review(cr: ClassResults) -> list[dict[str, Any]]:
    """Each graded file with constructs the static policy could not resolve: student, kata
    and the uses found (`line N: what`), for a person to read."""
    rows = []
    for s in cr.students:
        for k in cr.manifest.kata_ids:
            e = cr.entry(s, k)
            for d in (e.result or {}).get("diagnostics", []):
                if d.get("id") == NEEDS_REVIEW:
                    rows.append(
                        {
                            "student": s,
                            "kata": k,
                            "uses": [clean(str(x)) for x in d.get("evidence", [])],
                        }
                    )
    return rows


def mistake_sentence(row: dict[str, Any], lang: str = "en") -> str:
    """`40% (2 of 5) in sdpa: Time limit exceeded [timeout]`."""
    return (
        f"{row['share']:.0%} ({row['count']} {msg('report.of', lang)} {row['of']}) {msg('report.in', lang)} {row['kata']}: "
        f"{row['title']} [{row['id']}]"
    )


def distribution(cr: ClassResults, bins: int = 10) -> list[int]:
    counts = [0] * bins
    for s in cr.students:
        counts[min(int(percent(cr, s) // (100 / bins)), bins - 1)] += 1
    return counts


def write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file and rename: a killed run leaves the old file or the new
    one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with tmp.open("w", encoding="utf-8", newline="") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# -- CSV -----------------------------------------------------------------------------------
def _cell(text: str) -> str:
    # A spreadsheet runs a cell starting with = + - @ as a formula: student-chosen folder
    # names must stay text.
    text = clean(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def variant_key(kata_id: str, variant: dict[str, str] | None) -> str:
    """The name of a student's variant ("standard" for the standard kata)."""
    from attnkata.checker import variants as vs
    from attnkata.checker.sets.manifest import load_set_kata

    return vs.key(load_set_kata(kata_id).variants, variant or {})


def variant_lines(kata_id: str, variant: dict[str, str] | None, lang: str) -> list[str]:
    """What the variant changes, one sentence per parameter (empty for the standard kata)."""
    from attnkata.checker import variants as vs
    from attnkata.checker.sets.manifest import load_set_kata

    return vs.summary(load_set_kata(kata_id).variants, variant or {}, lang)


def write_csv(cr: ClassResults, path: Path) -> Path:
    ids = cr.manifest.kata_ids
    f = io.StringIO(newline="")
    w = csv.writer(f)
    with_variants = bool(cr.manifest.variants)
    w.writerow(
        [
            "student",
            *ids,
            "total",
            "max",
            "percent",
            *[f"{k} status" for k in ids],
            "late",
            "missing",
            *([f"{k} variant" for k in ids] if with_variants else []),
        ]
    )
    for s in cr.students:
        es = [cr.entry(s, k) for k in ids]
        w.writerow(
            [
                _cell(s),
                *[f"{e.score:g}" for e in es],
                f"{cr.total(s):g}",
                f"{cr.manifest.max_points:g}",
                f"{percent(cr, s):g}",
                *[e.status for e in es],
                " ".join(e.kata for e in es if e.late),
                " ".join(e.kata for e in es if e.status == MISSING),
                *(
                    [variant_key(k, cr.manifest.variant_of(s, k)) for k in ids]
                    if with_variants
                    else []
                ),
            ]
        )
    write_atomic(path, f.getvalue())
    return path


# -- JSON ----------------------------------------------------------------------------------
def to_json(cr: ClassResults) -> dict[str, Any]:
    m = cr.manifest
    return {
        "format": 1,
        "set": {
            "title": m.title,
            "katas": [
                {
                    "id": k.id,
                    "title": k.title,
                    "hash": k.hash,
                    "version": k.version,
                    "points": m.points(k.id),
                }
                for k in m.katas
            ],
            "grading": {"tier_weights": m.grading.tier_weights, "due": m.grading.due},
        },
        "graded_at": cr.graded_at,
        "lang": cr.lang,
        "stats": cr.stats,
        "warnings": cr.warnings,
        "students": [
            {
                "student": s,
                "total": cr.total(s),
                "max": m.max_points,
                "percent": percent(cr, s),
                "katas": {
                    k: {
                        f: getattr(cr.entry(s, k), f)
                        for f in (
                            "status",
                            "score",
                            "points",
                            "late",
                            "path",
                            "sha256",
                            "notes",
                            "reused",
                            "seconds",
                            "result",
                            "fix",
                        )
                    }
                    for k in m.kata_ids
                },
            }
            for s in cr.students
        ],
        "katas": kata_stats(cr),
        "mistakes": mistake_histogram(cr),
        "needs_review": needs_review(cr),
    }


def write_json(cr: ClassResults, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    # JSON escapes C0 itself; DEL and C1 too, so that `cat results.json` is safe.
    write_atomic(path, json_text(json.dumps(to_json(cr), ensure_ascii=False, indent=1)) + "\n")
    return path


# -- Markdown feedback ---------------------------------------------------------------------
def _fence(text: str, lang: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


_BACKTICKS = re.compile(r"`+")


def _inline(text: str, limit: int | None = None) -> str:
    """One line of untrusted text, safe inside Markdown prose (no HTML, no broken layout, no
    terminal control characters); clipped at a word with an ellipsis to `limit` characters.

    Only a `<` can open HTML (a tag, a comment, an autolink): outside code spans it is
    backslash-escaped, which every CommonMark renderer shows as `<`. Nothing else is turned
    into entities: `->` stays `->`, in the raw file as on the page, and inside a code span,
    where an entity would show literally."""
    text = " ".join(clean(str(text)).split())
    if limit is not None:
        text = clip(text, limit)
    out, i = [], 0
    while i < len(text):
        m = _BACKTICKS.search(text, i)
        if m is None:
            out.append(text[i:].replace("<", "\\<"))
            break
        out.append(text[i : m.start()].replace("<", "\\<"))
        # A run of n backticks opens a code span only if a run of exactly n closes it.
        close = next(
            (c for c in _BACKTICKS.finditer(text, m.end()) if len(c.group()) == len(m.group())),
            None,
        )
        end = close.end() if close is not None else m.end()
        out.append(text[m.start() : end])
        i = end
    return "".join(out)


def _source_lines(path: str | None) -> list[str]:
    if not path:
        return []
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def _ordered(diags: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Most severe first, one per id (a timeout repeated by every later test says nothing new)."""
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    seen: set[str] = set()
    out = []
    for d in sorted(diags, key=lambda d: rank.get(d.get("severity", ""), 9)):
        if d["id"] not in seen:
            seen.add(d["id"])
            out.append(d)
    return out


def quoted_lines(ref: dict[str, Any], lines: list[str]) -> str | None:
    """The student's own lines a diagnosis points at, numbered (at most 8), or None."""
    lo, hi = ref["line"], ref.get("end_line") or ref["line"]
    if lines and 0 < lo <= len(lines):
        return "\n".join(
            f"{n:>4} | {clean(lines[n - 1])}" for n in range(lo, min(hi, lo + 7, len(lines)) + 1)
        )
    if ref.get("text"):
        return f"{lo:>4} | {clean(str(ref['text']))}"
    return None


def diagnosis_markdown(d: dict[str, Any], lines: list[str], lang: str) -> list[str]:
    """One diagnosis as Markdown lines: title, explanation, fix and the student's own lines."""
    severity = label("report.severities", d.get("severity", ""), lang)
    out = [f"**{_inline(d.get('title', d['id']))}** (`{d['id']}`, {severity})", ""]
    if d.get("explanation"):
        out += [_inline(d["explanation"]), ""]
    if d.get("fix"):
        out += [msg("report.fix_line", lang, fix=_inline(d["fix"])), ""]
    for ref in d.get("source", [])[:3]:
        snippet = quoted_lines(ref, lines)
        if snippet is not None:
            out += [msg("report.code_line", lang, line=ref["line"]), "", _fence(snippet), ""]
    return out


def failed_test_line(test: dict[str, Any], lang: str) -> str:
    """One failed test in a student's feedback; its message clipped at a word boundary."""
    message = _inline(test.get("message", ""), MAX_FEEDBACK_MESSAGE)
    return (
        f"- `{test['id']}` ({label('report.tiers', test['tier'], lang)}, "
        f"{label('report.statuses', test['status'], lang)})" + (f": {message}" if message else "")
    )


def fix_markdown(fix: dict[str, Any] | None, lang: str) -> list[str]:
    """The verified fixes of a student's file (only with `kata set grade --feedback fixes`)."""
    fixes = (fix or {}).get("fixes") or []
    if not fixes:
        return []
    out = [f"### {msg('fix.notebook_heading', lang)}", "", msg("fix.report_intro", lang), ""]
    for n, f in enumerate(fixes, 1):
        head = msg("fix.header", lang, n=n, total=len(fixes), id=f.get("mistake", ""))
        out += [
            f"**{_inline(head)}** — {_inline(f.get('title', ''))}",
            "",
            _inline(
                msg("fix.fixes_tests", lang, n=f.get("tests_fixed", 0), m=f.get("tests_failing", 0))
            ),
            "",
            _fence(clean(str(f.get("diff", ""))).rstrip("\n"), "diff"),
            "",
        ]
    return out


def feedback_markdown(cr: ClassResults, student: str) -> str:
    lang = cr.lang
    m = cr.manifest
    out = [
        f"# {msg('report.title_line', lang, student=_inline(student))}",
        "",
        f"**{_inline(m.title)}**",
        "",
        msg(
            "report.total_line",
            lang,
            total=f"{cr.total(student):g}",
            max=f"{m.max_points:g}",
            pct=f"{percent(cr, student):g}",
        ),
        "",
    ]
    for k in m.katas:
        e = cr.entry(student, k.id)
        status = label("report.statuses", e.status, lang)
        out += [
            f"## {k.title.get(cr.lang, k.title['en'])} (`{k.id}`)",
            "",
            msg(
                "report.status_line",
                lang,
                status=status,
                score=f"{e.score:g}",
                points=f"{e.points:g}",
            )
            + (f" · {msg('report.late_note', lang)}" if e.late else ""),
            "",
        ]
        variant = m.variant_of(student, k.id)
        if variant:  # the conventions this student was graded in
            out += [f"{msg('variant.graded', lang)}: `{variant_key(k.id, variant)}`", ""]
            out += [f"- {_inline(line)}" for line in variant_lines(k.id, variant, lang)] + [""]
        for note in e.notes:
            out.append(f"- {_inline(note)}")
        if e.notes:
            out.append("")
        if e.status == MISSING:
            out += [msg("report.missing_file", lang), ""]
            continue
        result = e.result or {}
        tests = result.get("tests", [])
        if tests:
            from attnkata.checker.sets.manifest import tier_fractions

            out += [
                f"| {msg('report.tier', lang)} | {msg('report.tests_passed', lang)} |",
                "|---|---|",
            ]
            out += [
                f"| {label('report.tiers', tier, lang)} | {p}/{n} |"
                for tier, (p, n) in tier_fractions(tests).items()
            ]
            out.append("")
        diags = _ordered(result.get("diagnostics", []))[:MAX_FEEDBACK_DIAGNOSTICS]
        if diags:
            lines = _source_lines(e.path)
            out += [f"### {msg('report.what_went_wrong', lang)}", ""]
            for d in diags:
                out += diagnosis_markdown(d, lines, lang)
        out += fix_markdown(e.fix, lang)
        failed = [x for x in tests if x["status"] not in ("pass", "skip")]
        if failed:
            out += [f"### {msg('report.failed_tests', lang)}", ""]
            out += [failed_test_line(x, lang) for x in failed[:MAX_FEEDBACK_TESTS]]
            if len(failed) > MAX_FEEDBACK_TESTS:
                out.append(
                    f"- {msg('report.more_tests', lang, n=len(failed) - MAX_FEEDBACK_TESTS)}"
                )
            out.append("")
        elif e.status == "pass":
            out += [msg("report.all_pass", lang), ""]
        review = [d for d in result.get("diagnostics", []) if d.get("id") == NEEDS_REVIEW]
        if review:
            out += [
                f"### {msg('report.needs_review', lang)}",
                "",
                msg("report.needs_review_feedback", lang),
                "",
            ]
            out += [f"- {_inline(x)}" for d in review for x in d.get("evidence", [])]
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def safe_name(student: str) -> str:
    name = re.sub(r"[^\w.@+-]+", "_", student, flags=re.UNICODE).strip("._") or "student"
    return name[:120]


def write_feedback(cr: ClassResults, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written, used = [], set()
    for s in cr.students:
        name = safe_name(s)
        while name in used:
            name += "_"
        used.add(name)
        p = folder / f"{name}.md"
        write_atomic(p, feedback_markdown(cr, s))
        written.append(p)
    return written


# -- HTML class report -----------------------------------------------------------------------
CSS = """
:root { --ink:#1d2330; --muted:#5d6675; --rule:#d5d9e0; --accent:#2457c5; --pass:#1f8a4c; --fail:#c23b3b;
        --warn:#b7791f; --bg:#f7f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, CJK_FONTS, sans-serif;
       color: var(--ink); margin: 0; background: #fff; }
:lang(zh) { font-family: CJK_FONTS, "Noto Sans", Helvetica, Arial, sans-serif; }
main { max-width: 1080px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; } h2 { font-size: 19px; margin: 28px 0 8px; }
.meta { color: var(--muted); margin: 0 0 14px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 14px 0; }
.card { background: var(--bg); border: 1px solid var(--rule); border-radius: 8px; padding: 10px 14px; min-width: 150px; }
.card .v { font-size: 24px; font-weight: 600; } .card .k { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; width: 100%; margin: 8px 0 16px; }
th, td { border-bottom: 1px solid var(--rule); padding: 5px 8px; text-align: left; vertical-align: top; }
th { background: var(--bg); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.bar { background: #e7ebf2; border-radius: 3px; height: 10px; width: 140px; display: inline-block; vertical-align: middle; }
.bar > span { display: block; height: 100%; border-radius: 3px; background: var(--accent); }
.s-pass { color: var(--pass); } .s-fail, .s-error { color: var(--fail); } .s-timeout { color: var(--warn); }
.s-missing { color: var(--muted); }
code { font-family: "DejaVu Sans Mono", Menlo, Consolas, CJK_FONTS, monospace; font-size: 12px; }
svg text { font-family: inherit; }
@page { size: A4; margin: 14mm; }
@media print { main { max-width: none; padding: 0; } table, .cards, svg { break-inside: avoid; }
  h2 { break-after: avoid; } }
""".replace("CJK_FONTS", CJK_FONTS)


def _bar(share: float) -> str:
    return f'<span class="bar"><span style="width:{max(0.0, min(1.0, share)) * 100:.1f}%"></span></span>'


def _histogram_svg(counts: list[int], label: str) -> str:
    width, height, pad = 640, 220, 30
    n = len(counts)
    top = max(counts) or 1
    bw = (width - 2 * pad) / n
    parts = [
        f'<svg role="img" aria-label="{html.escape(label)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">'
    ]
    parts.append(
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#999"/>'
    )
    for i, c in enumerate(counts):
        h = (height - 2 * pad - 14) * c / top
        x = pad + i * bw
        y = height - pad - h
        parts.append(
            f'<rect x="{x + 3:.1f}" y="{y:.1f}" width="{bw - 6:.1f}" height="{h:.1f}" fill="#2457c5">'
            f"<title>{i * 100 // n}-{(i + 1) * 100 // n}%: {c}</title></rect>"
        )
        if c:
            parts.append(
                f'<text x="{x + bw / 2:.1f}" y="{y - 4:.1f}" text-anchor="middle" font-size="12">{c}</text>'
            )
        parts.append(
            f'<text x="{x + bw / 2:.1f}" y="{height - pad + 14}" text-anchor="middle" font-size="11" '
            f'fill="#5d6675">{i * 100 // n}-{(i + 1) * 100 // n}%</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _of(score: float | str, points: float) -> str:
    """`20 / 20` that never wraps, whatever the column's width (no-break spaces; the cells'
    CSS says nowrap too, for the ones that hold words)."""
    value = score if isinstance(score, str) else f"{score:g}"
    return f"{value}\u00a0/\u00a0{points:g}"


def _esc(text: str) -> str:
    """Untrusted text (a student's folder name, a message) in HTML: escaped and cleaned."""
    return html.escape(clean(str(text)))


def render_html(cr: ClassResults, *, head: str = "", extra: str = "") -> str:
    """The class report as one HTML document; `head` and `extra` (trusted markup) go at the end
    of its head and of its body (`kata web` adds its script and the students' code)."""
    lang = cr.lang
    m = cr.manifest
    esc = _esc
    pct = [percent(cr, s) for s in cr.students]
    graded = sum(1 for e in cr.entries.values() if e.status != MISSING)
    body = [
        f"<h1>{esc(m.title)}</h1>",
        f'<p class="meta">{msg("report.report", lang)} · {msg("report.graded", lang)} {esc(cr.graded_at)}</p>',
        '<div class="cards">',
    ]
    cards = [
        (msg("report.students", lang), str(len(cr.students))),
        (msg("report.katas", lang), str(len(m.katas))),
        (msg("report.submissions", lang), str(graded)),
        (msg("report.mean", lang), f"{statistics.fmean(pct):.1f}%" if pct else "-"),
        (msg("report.median", lang), f"{statistics.median(pct):.1f}%" if pct else "-"),
    ]
    body += [
        f'<div class="card"><div class="v">{esc(v)}</div><div class="k">{esc(k)}</div></div>'
        for k, v in cards
    ]
    body.append("</div>")
    body += [
        f"<h2>{msg('report.distribution', lang)}</h2>",
        _histogram_svg(distribution(cr), msg("report.distribution", lang)),
    ]
    body += [
        f'<h2>{msg("report.per_kata", lang)}</h2><table><thead><tr><th>{msg("report.kata", lang)}</th><th class="num">{msg("report.submitted", lang)}</th>'
        f'<th class="num">{msg("report.passed", lang)}</th><th>{msg("report.pass_rate", lang)}</th><th class="num">{msg("report.mean_points", lang)}</th>'
        f'<th class="num">{msg("report.missing", lang)}</th><th class="num">{msg("report.late", lang)}</th>'
        f'<th class="num">{msg("report.timeouts", lang)}</th><th class="num">{msg("report.errors", lang)}</th></tr></thead><tbody>'
    ]
    for r in kata_stats(cr):
        title = r["title"].get(cr.lang, r["title"]["en"])
        body.append(
            f'<tr class="kata-row" data-kata="{esc(r["kata"])}"><td><code>{esc(r["kata"])}</code> {esc(title)}</td>'
            f'<td class="num">{r["submitted"]}/{r["students"]}</td><td class="num">{r["passed"]}</td>'
            f'<td>{_bar(r["pass_rate"])} <span class="pass-rate">{r["pass_rate"]:.0%}</span></td>'
            f'<td class="num">{_of(format(r["mean_score"], ".2f"), r["points"])}</td><td class="num">{r["missing"]}</td>'
            f'<td class="num">{r["late"]}</td><td class="num">{r["timeouts"]}</td><td class="num">{r["errors"]}</td></tr>'
        )
    body.append("</tbody></table>")
    hist = mistake_histogram(cr)
    body.append(f"<h2>{msg('report.mistakes', lang)}</h2>")
    if hist:
        body.append(
            f'<table class="mistakes"><thead><tr><th>{msg("report.share", lang)}</th><th>{msg("report.kata", lang)}</th>'
            f"<th>{msg('report.mistake', lang)}</th><th>{msg('report.who', lang)}</th></tr></thead><tbody>"
        )
        for r in hist:
            who = ", ".join(esc(s) for s in r["students"][:8]) + (
                " ..." if len(r["students"]) > 8 else ""
            )
            body.append(
                f'<tr class="mistake" data-id="{esc(r["id"])}" data-kata="{esc(r["kata"])}">'
                f"<td>{_bar(r['share'])} <strong>{r['share']:.0%}</strong> ({r['count']} {msg('report.of', lang)} {r['of']})</td>"
                f"<td><code>{esc(r['kata'])}</code></td><td>{esc(r['title'])} <code>{esc(r['id'])}</code></td>"
                f"<td>{who}</td></tr>"
            )
        body.append("</tbody></table>")
    else:
        body.append(f"<p>{msg('report.no_mistakes', lang)}</p>")
    body.append(
        f'<h2>{msg("report.students_h", lang)}</h2><table class="students"><thead><tr><th>{msg("report.student", lang)}</th>'
        + "".join(f'<th class="num"><code>{esc(k)}</code></th>' for k in m.kata_ids)
        + f'<th class="num">{msg("report.total", lang)}</th><th class="num">{msg("report.percent", lang)}</th><th>{msg("report.notes", lang)}</th></tr></thead><tbody>'
    )
    for s in cr.students:
        cells = []
        notes = []
        for k in m.kata_ids:
            e: Entry = cr.entry(s, k)
            status = label("report.statuses", e.status, lang)
            variant = m.variant_of(s, k)
            shown = (
                f"<br><small><code>{esc(variant_key(k, variant))}</code></small>" if variant else ""
            )
            cells.append(
                f'<td class="num s-{esc(e.status)}" title="{esc(status)}">{e.score:g} '
                f"<small>{esc(status)}</small>{shown}</td>"
            )
            notes += [
                f"{k}: {clip(n, 120)}" for n in e.notes
            ]  # a late file's note says so (grade.py)
            top = _ordered((e.result or {}).get("diagnostics", []))
            if top and e.status not in ("pass", MISSING) and top[0].get("severity") == "essential":
                notes.append(
                    f"{k}: {clip(top[0].get('title', top[0]['id']), 100)} ({top[0]['id']})"
                )
        body.append(
            f'<tr class="student"><td>{esc(s)}</td>{"".join(cells)}<td class="num">{_of(cr.total(s), m.max_points)}'
            f'</td><td class="num">{percent(cr, s):g}%</td><td>{esc("; ".join(notes))}</td></tr>'
        )
    body.append("</tbody></table>")
    review = needs_review(cr)
    if review:
        body.append(
            f'<h2>{msg("report.needs_review", lang)}</h2><p class="meta">{msg("report.needs_review_intro", lang)}</p>'
            f'<table class="needs-review"><thead><tr><th>{msg("report.student", lang)}</th><th>{msg("report.kata", lang)}</th>'
            f"<th>{msg('report.needs_review', lang)}</th></tr></thead><tbody>"
        )
        for r in review:
            uses = "<br>".join(f"<code>{esc(u)}</code>" for u in r["uses"])
            body.append(
                f'<tr class="review" data-kata="{esc(r["kata"])}"><td>{esc(r["student"])}</td>'
                f"<td><code>{esc(r['kata'])}</code></td><td>{uses}</td></tr>"
            )
        body.append("</tbody></table>")
    from attnkata.checker.sets.similarity import render_section

    body.append(render_section(cr))
    lim = cr.stats.get("limits", {})
    weights = ", ".join(f"{k} {v:g}" for k, v in m.grading.tier_weights.items())
    body.append(
        f'<h2>{msg("report.config", lang)}</h2><p class="meta">{msg("report.weights", lang)}: {esc(weights)} · {msg("report.limits", lang)}: '
        f"{lim.get('timeout', '-')} s {msg('report.per_submission', lang)}, {lim.get('call_timeout', '-')} s {msg('report.per_call', lang)}, "
        f"{lim.get('memory_mb', '-')} MiB · {msg('report.deadline', lang)}: {esc(cr.stats.get('deadline') or msg('report.none', lang))} · "
        f"{msg('report.penalty', lang)}: {cr.stats.get('late_penalty', 0):.0%}</p>"
    )
    doc_lang = "zh" if cr.lang == "zh" else "en"
    return (
        f'<!DOCTYPE html>\n<html lang="{doc_lang}"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{esc(m.title)} · '
        f"{msg('report.report', lang)}</title><style>{CSS}</style>{head}</head><body><main>\n"
        + "\n".join(body)
        + f"\n{extra}</main></body></html>\n"
    )


def load(bundle: Path, out: Path) -> ClassResults:
    """The class results that `kata set grade` wrote to `out` (its results.json), read back for
    a report drawn again (`kata web --set SETDIR --grades DIR`)."""
    from attnkata.checker.errors import UsageError
    from attnkata.checker.sets.manifest import verify_bundle

    path = Path(out) / "results.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(
            f"{path} is missing", "give --grades the folder `kata set grade` wrote"
        ) from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is damaged: {exc}") from None
    manifest, warnings = verify_bundle(Path(bundle))
    entries: dict[tuple[str, str], Entry] = {}
    students = []
    for row in data.get("students", []):
        students.append(row["student"])
        for kata, e in row["katas"].items():
            entries[(row["student"], kata)] = Entry(student=row["student"], kata=kata, **e)
    graded = {kata for _, kata in entries}
    manifest.katas = [k for k in manifest.katas if k.id in graded]
    return ClassResults(
        manifest=manifest,
        bundle=Path(bundle),
        submissions=Path(out),
        out=Path(out),
        students=students,
        entries=entries,
        lang=data.get("lang", "en"),
        warnings=[*data.get("warnings", []), *warnings],
        stats=data.get("stats", {}),
        graded_at=data.get("graded_at", ""),
    )


def write_html(cr: ClassResults, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, render_html(cr))
    return path


def write_all(
    cr: ClassResults,
    *,
    csv_path: Path | None = None,
    json_path: Path | None = None,
    html_path: Path | None = None,
    feedback_dir: Path | None = None,
) -> dict[str, Path]:
    """Every output; a path left out goes to the results folder."""
    out = cr.out
    paths = {
        "csv": write_csv(cr, csv_path or out / "gradebook.csv"),
        "json": write_json(cr, json_path or out / "results.json"),
        "html": write_html(cr, html_path or out / "report.html"),
    }
    fb = feedback_dir or out / "feedback"
    write_feedback(cr, fb)
    paths["feedback"] = fb
    return paths
