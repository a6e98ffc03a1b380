"""The hint ladder: for a diagnosed mistake, `kata hint` climbs three rungs, one per call.

1. the property the code breaks, in words, without code (`ladder.property.<id>` in the
   message catalogue);
2. where: the line the diagnosis points at, what it computes there and the evidence on the
   diagnosis' own small input (which KV head a query head read, which key a query attended);
3. the fix, verified on the candidate's own code (`kata fix`, checker/fix/), or an honest "no
   verified fix" with the catalogue's general advice.

Rungs 1 and 2 read the last recorded check (kept with the history, `remember`); rung 3 grades
the file again. Without a diagnosis, `kata hint` climbs the kata's own hints as before.
Each rung shown is a `hint` event `rung:<id>:<n>`: `kata history`, `kata stats` and the
practice plan count it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from attnkata.checker.catalog import Kata
from attnkata.checker.messages import MESSAGES, msg
from attnkata.checker.models import Diagnostic, Fix, Result
from attnkata.checker.store import History

RUNGS = 3
_LAST = "last-check:"  # the history's derived entry holding a kata's last recorded check
MAX_WORDS = 120


@dataclass
class Rung:
    mistake: str
    level: int
    text: str
    fixes: list[Fix] | None = None  # rung 3: the verified fixes up to this mistake's


# -- what the ladder reads --------------------------------------------------------------------
def remember(h: History, result: Result, source: str | None) -> None:
    """Keep the last recorded check of a kata (its diagnoses' lines and evidence, and the text
    that was graded) for the ladder's second and third rungs."""
    h.store_derived(
        _LAST + result.kata, "1", json.dumps({"result": result.to_dict(), "source": source})
    )


def last_check(h: History, kata: str) -> tuple[Result, str | None] | None:
    raw = h.derived(_LAST + kata, "1")
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        return Result.from_dict(data["result"]), data.get("source")
    except (ValueError, KeyError, TypeError):
        return None


def shown(h: History, kata: str) -> dict[str, int]:
    """The highest rung shown so far for each mistake of `kata`."""
    out: dict[str, int] = {}
    for e in h.events(kata, "hint"):
        hid = str(json.loads(e["detail"]).get("id", ""))
        if hid.startswith("rung:"):
            _, mid, n = hid.split(":", 2)
            if n.isdigit():
                out[mid] = max(out.get(mid, 0), int(n))
    return out


def ladder_mistakes(ids: list[str]) -> list[str]:
    """The diagnosed mistakes a ladder climbs: catalogued, essential, with a first rung."""
    if not ids:
        return []  # (without parsing the catalogue: `kata hint` stays quick)
    from attnkata.checker import mistakes  # (not at import: `kata history` needs none of it)

    cat = mistakes.catalogue()
    return [
        i
        for i in ids
        if i in cat and cat[i].severity == "essential" and f"ladder.property.{i}" in MESSAGES
    ]


def next_rung(h: History, kata: str, diagnosed: list[str]) -> tuple[str, int] | None:
    """(mistake, rung) the next `kata hint` shows; None once every rung was shown."""
    done = shown(h, kata)
    for mid in ladder_mistakes(diagnosed):
        if done.get(mid, 0) < RUNGS:
            return mid, done.get(mid, 0) + 1
    return None


# -- the rungs ---------------------------------------------------------------------------------
def _clip_words(text: str, limit: int = MAX_WORDS) -> str:
    words = text.split()
    return text if len(words) <= limit else " ".join(words[:limit]) + " …"


def property_text(mid: str, lang: str) -> str:
    return msg(f"ladder.property.{mid}", lang)


def where_text(d: Diagnostic, lang: str, evidence: bool = True) -> str:
    """Rung 2: the line, what it computes there, the evidence on one small input."""
    parts: list[str] = []
    ref = next((r for r in d.source if r.line > 0), None)
    if ref is not None and ref.text:
        parts.append(msg("ladder.where_line", lang, line=ref.line, text=ref.text.strip()))
    else:
        parts.append(msg("ladder.where_nowhere", lang))
    picture = _picture_sentence(d, lang)
    if picture:
        parts.append(picture)
    said = [e for e in d.evidence if not _is_count(e)] if evidence else []
    if said:
        parts.append(msg("ladder.evidence", lang, evidence=said[0]))
    return _clip_words(" ".join(parts))


def _is_count(evidence: str) -> bool:
    """The "explains 20 of 20 failing tests" line: about the tests, not the code."""
    return evidence.startswith(("explains ", "解释了"))


def _picture_sentence(d: Diagnostic, lang: str) -> str | None:
    data = d.data if isinstance(d.data, dict) else {}
    want, got = data.get("head_map_expected"), data.get("head_map_got")
    if isinstance(want, list) and isinstance(got, list):
        for h, (w, g) in enumerate(zip(want, got, strict=False)):
            if w != g and g is not None:
                return msg("ladder.heads", lang, n=len(want), h=h, got=g, want=w)
    grid, mine = data.get("mask_expected"), data.get("mask_got")
    if isinstance(grid, list) and isinstance(mine, list):
        for i, (row_w, row_g) in enumerate(zip(grid, mine, strict=False)):
            for j, (w, g) in enumerate(zip(row_w, row_g, strict=False)):
                if g is not None and bool(w) != bool(g):
                    key = "ladder.mask_extra" if g else "ladder.mask_missing"
                    return msg(key, lang, i=i, j=j)
    return None


@dataclass
class FixAnswer:
    text: str
    fixes: list[Fix]


def fix_text(kata: Kata, mid: str, path: Path | None, source: str | None, lang: str) -> FixAnswer:
    """Rung 3: the verified fix of `mid` on the candidate's file as it is now (the graded text
    of the last check when the file is gone, e.g. a notebook cell)."""
    from attnkata.checker import api

    if path is not None and path.is_file():
        report = api.fix(kata, path, lang=lang)
    elif source is not None:
        report = api.fix_source(kata.id, source, lang=lang)
    else:
        return FixAnswer(msg("ladder.no_source", lang, kata=kata.id), [])
    result = report.result
    if result is not None and not result.tests:
        why = ", ".join(d.title for d in result.diagnostics[:1]) or result.status
        return FixAnswer(msg("ladder.fix_not_graded", lang, why=why), [])
    upto: list[Fix] = []
    for f in report.fixes:
        upto.append(f)
        if f.mistake == mid:
            return FixAnswer(msg("fix.fixes_tests", lang, n=f.tests_fixed, m=f.tests_failing), upto)
    if result is None or mid not in {d.id for d in result.diagnostics}:
        return FixAnswer(msg("ladder.fix_gone", lang, kata=kata.id), [])
    # The kata's own advice for this mistake, else the catalogue's.
    from attnkata.checker import mistakes

    written = kata.hint_for(mid)
    general = (
        written.text.get(lang)
        if written is not None
        else mistakes.get(mid).render("fix", lang)
        if mid in mistakes.catalogue()
        else ""
    )
    return FixAnswer(msg("ladder.fix_none", lang, n=report.graded, fix=general), [])


def rung(
    kata: Kata,
    mid: str,
    level: int,
    lang: str,
    checked: tuple[Result, str | None] | None,
) -> Rung:
    """The text of rung `level` for mistake `mid`."""
    if level == 1:
        return Rung(mid, 1, property_text(mid, lang))
    if level == 2:
        d = None
        if checked is not None:
            d = next((x for x in checked[0].diagnostics if x.id == mid), None)
        if d is None:
            return Rung(mid, 2, msg("ladder.no_source", lang, kata=kata.id))
        # The evidence is in the language the check ran in: only a matching one is quoted.
        return Rung(mid, 2, where_text(d, lang, evidence=checked[0].lang == lang))
    path = Path(checked[0].solution) if checked is not None else None
    source = checked[1] if checked is not None else None
    answer = fix_text(kata, mid, path, source, lang)
    return Rung(mid, 3, answer.text, answer.fixes)


def rungs_before(h: History, kata: str | None = None) -> list[tuple[float, str]]:
    """(time, kata) of every rung shown, oldest first: `kata history` counts them per attempt."""
    rows = h.conn.execute(
        "SELECT ts, kata, detail FROM events WHERE kind = 'hint'"
        + (" AND kata = ?" if kata else "")
        + " ORDER BY ts, id",
        (kata,) if kata else (),
    ).fetchall()
    return [
        (r["ts"], r["kata"])
        for r in rows
        if str(json.loads(r["detail"]).get("id", "")).startswith("rung:")
    ]
