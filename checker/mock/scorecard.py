"""The scorecard: the scoring rule, the verdict and the rule that produced it, and its Markdown.

The card is plain JSON data built from the session (graded results + follow-up answers); the
terminal, Markdown and `--json` renderings all read only the card.

Scoring, also printed on every card:
- per problem, tests passed per tier weighted core 60 / edge 30 / efficient 10 (over the tiers
  the kata has), minus 10 points per hint, floored at 0; an untouched skeleton scores 0;
- coding = the mean over problems; total = 75% coding + 25% follow-ups (coding alone when
  there were no follow-up questions);
- verdict: the first rule of `decide` that holds.
"""

from __future__ import annotations

import time
from typing import Any

from attnkata.checker import catalog
from attnkata.checker.messages import both, msg, phrase
from attnkata.checker.mock import session as sess
from attnkata.checker.mock.followups import LETTERS, MAX_POINTS
from attnkata.checker.mock.session import Session

CARD_VERSION = 1
TIER_WEIGHTS = {"core": 60, "edge": 30, "efficient": 10}
HINT_COST = 10
CODING_SHARE = 0.75
STRONG_TOTAL, HIRE_TOTAL, LEAN_TOTAL = 85, 70, 50
STRONG_FOLLOWUPS, STRONG_MAX_HINTS = 75, 1
VERDICTS = ("strong hire", "hire", "lean no", "no hire")

# The numbers the scale, the scoring text and the rules quote.
_LIMITS = {
    "strong_total": STRONG_TOTAL,
    "hire_total": HIRE_TOTAL,
    "lean_total": LEAN_TOTAL,
    "strong_followups": STRONG_FOLLOWUPS,
    "strong_max_hints": STRONG_MAX_HINTS,
}
SCALE = {
    lang: [msg(f"scorecard.scale.{v.replace(' ', '_')}", lang, **_LIMITS) for v in VERDICTS]
    for lang in catalog.LANGS
}
SCORING = {
    lang: [
        msg("scorecard.scoring.problem", lang, hint_cost=HINT_COST),
        msg(
            "scorecard.scoring.total",
            lang,
            coding_share=CODING_SHARE,
            followup_share=1 - CODING_SHARE,
        ),
        msg("scorecard.scoring.followups", lang),
    ]
    for lang in catalog.LANGS
}


def tier_score(tiers: dict[str, list[int]]) -> float:
    """0..100 from {tier: [passed, total]}, weights renormalised over the tiers present."""
    present = {tier: pt for tier, pt in tiers.items() if pt[1] > 0}
    weight = sum(TIER_WEIGHTS.get(tier, 0) for tier in present)
    if not weight:
        return 0.0
    return (
        100.0 * sum(TIER_WEIGHTS.get(tier, 0) * p / n for tier, (p, n) in present.items()) / weight
    )


def problem_card(s: Session, p: sess.Problem) -> dict[str, Any]:
    result = s.results.get(p.kata) or {"status": "error", "tests": [], "diagnostics": []}
    final = sess.check_summary(result, s.submitted or s.deadline)
    attempted = sess.attempted(s, p)
    raw = tier_score(final["tiers"]) if attempted else 0.0
    penalty = HINT_COST * len(p.hints)
    first_pass = p.first_pass
    if first_pass is None and final["status"] == "pass":
        first_pass = s.submitted
    return {
        "kata": p.kata,
        "title": p.title,
        "difficulty": p.difficulty,
        "status": final["status"],
        "passed": final["status"] == "pass",
        "attempted": attempted,
        "tiers": final["tiers"],
        "required_tiers": result.get("required_tiers", ["core", "edge"]),
        "tests_passed": final["passed"],
        "tests_total": final["total"],
        # Every mistake diagnosed during the session, fixed or not (a mistake fixed before the
        # end is still what the interviewer saw); the untouched skeleton raising
        # NotImplementedError is not a mistake worth naming.
        "mistakes": session_mistakes(p, final) if attempted else [],
        "failed_tests": [
            t["id"] for t in result.get("tests", []) if t["status"] not in ("pass", "skip")
        ],
        "time_to_first_pass": None if first_pass is None else round(first_pass - s.started, 1),
        "hints": len(p.hints),
        "hint_ids": list(p.hints),
        # The hint ladder's rungs taken: a mock allows rung 1 per diagnosed mistake (its
        # targeted hint), never a fix (sess.MOCK_MAX_RUNG).
        "rungs": sum(1 for h in p.hints if h.startswith("mistake:")),
        "checks": len(p.checks),
        "raw_score": round(raw, 1),
        "hint_penalty": penalty,
        "score": round(max(0.0, raw - penalty), 1),
        "note": p.snapshot_note,
    }


def session_mistakes(p: sess.Problem, final: dict[str, Any]) -> list[dict[str, Any]]:
    """The problem's diagnosed mistakes over all its checks and the graded version, in the order
    they first appeared; `fixed`: absent from the graded version."""
    seen: dict[str, str] = {}
    for check in [*p.checks, final]:
        if p.skeleton_sha and check.get("sha", "").startswith(p.skeleton_sha):
            continue  # the untouched skeleton, checked as it was handed out
        for mid in check["diagnoses"]:
            seen.setdefault(mid, check["titles"].get(mid, ""))
    return [
        {"id": mid, "title": title, "fixed": mid not in final["diagnoses"]}
        for mid, title in seen.items()
    ]


def followup_card(s: Session) -> dict[str, Any]:
    items = []
    for q in s.questions:
        a = s.answers.get(q["id"])
        items.append(
            {
                "id": q["id"],
                "kata": q["kata"],
                "kind": q["kind"],
                "prompt": q["prompt"],
                "options": q["options"],
                "unit": q["unit"],
                "answered": a is not None,
                "points": a["points"] if a else 0,
                "max": MAX_POINTS,
                "status": a["status"] if a else "pending",
                "given": a["given"] if a else None,
                "expected": a["expected"] if a else None,
                "feedback": a["feedback"] if a else None,
                # Shown once the question is answered or given up for good (never on a card that
                # still asks for the answer).
                "model_answer": q["answer"] if a is not None else None,
            }
        )
    points = sum(i["points"] for i in items)
    most = MAX_POINTS * len(items)
    return {
        "questions": items,
        "points": points,
        "max": most,
        "percent": round(100.0 * points / most, 1) if most else None,
        "pending": sum(not i["answered"] for i in items),
    }


def decide(
    problems: list[dict[str, Any]], total: float, followups: float | None, hints: int
) -> tuple[str, dict[str, str]]:
    """The verdict and the rule that produced it, with this session's numbers filled in."""
    n, n_pass = len(problems), sum(p["passed"] for p in problems)
    all_pass = n > 0 and n_pass == n
    fu_ok = followups is None or followups >= STRONG_FOLLOWUPS
    fu = (
        phrase("scorecard.rule.no_followups")
        if followups is None
        else phrase("scorecard.rule.followups", pct=followups)
    )
    numbers = dict(_LIMITS, n=n, total=total, hints=hints, fu=fu)
    if all_pass and total >= STRONG_TOTAL and fu_ok and hints <= STRONG_MAX_HINTS:
        return "strong hire", both("scorecard.rule.strong_hire", **numbers)
    if all_pass and total >= HIRE_TOTAL:
        return "hire", both("scorecard.rule.hire", **numbers)
    if total >= LEAN_TOTAL or n_pass >= 1:
        why = phrase(
            "scorecard.rule.why" if all_pass else "scorecard.rule.why_not_hire", n_pass=n_pass, n=n
        )
        return "lean no", both("scorecard.rule.lean_no", **numbers, why=why)
    return "no hire", both("scorecard.rule.no_hire", **numbers)


def build(s: Session) -> dict[str, Any]:
    problems = [problem_card(s, p) for p in s.problems]
    fu = followup_card(s)
    coding = sum(p["score"] for p in problems) / len(problems) if problems else 0.0
    total = (
        coding
        if fu["percent"] is None
        else CODING_SHARE * coding + (1 - CODING_SHARE) * fu["percent"]
    )
    hints = sum(p["hints"] for p in problems)
    card: dict[str, Any] = {
        "version": CARD_VERSION,
        "session": s.id,
        "folder": str(s.folder),
        "lang": s.lang,
        "seed": s.seed,
        "minutes": s.minutes,
        "started": s.started,
        "deadline": s.deadline,
        "submitted": s.submitted,
        "submit_reason": s.submit_reason,
        "minutes_used": round(((s.submitted or s.deadline) - s.started) / 60, 1),
        "problems": problems,
        "followups": fu,
        "hints": hints,
        "coding": round(coding, 1),
        "total": round(total, 1),
        "final": fu["pending"] == 0,
        "verdict": None,
        "rule": None,
        "scale": SCALE,
        "scoring": SCORING,
    }
    if card["final"]:
        card["verdict"], card["rule"] = decide(problems, total, fu["percent"], hints)
    return card


# -- Markdown ---------------------------------------------------------------------------


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def verdict_name(verdict: str | None, lang: str) -> str:
    if verdict is None:
        return "-"
    return msg(f"scorecard.verdict.{verdict.replace(' ', '_')}", lang)


def tiers_text(tiers: dict[str, list[int]]) -> str:
    return ", ".join(f"{tier} {p}/{n}" for tier, (p, n) in tiers.items()) or "-"


def given_text(item: dict[str, Any]) -> str:
    given = item["given"]
    if given is None:
        return "-"
    if item["kind"] == "order" and isinstance(given, list):
        return " ".join(str(x) for x in given)
    if item["kind"] == "open":
        if isinstance(given, dict):
            text = str(given.get("answer", "")).strip()
            return text or "-"
        return "-" if str(given).strip() in ("0", "1", "2") else str(given)
    return str(given)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(card: dict[str, Any], lang: str | None = None) -> str:
    lang = lang or card["lang"]
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(card["started"]))
    how = (
        msg("scorecard.deadline", lang)
        if card["submit_reason"] == "deadline"
        else msg("scorecard.manual", lang)
    )
    lines = [
        f"# {msg('scorecard.title', lang)}",
        "",
        f"- {msg('scorecard.session', lang)}: `{card['session']}`",
        f"- {msg('scorecard.date', lang)}: {when}",
        f"- {msg('scorecard.time', lang)}: {card['minutes_used']} {msg('scorecard.of', lang)} {card['minutes']} {msg('scorecard.min', lang)} ({how})",
        "",
    ]
    fu = card["followups"]
    fu_pct = "-" if fu["percent"] is None else f"{fu['percent']:.0f}%"
    if card["final"]:
        lines += [
            f"## {msg('scorecard.verdict', lang)}: **{verdict_name(card['verdict'], lang).upper()}**",
            "",
            f"{msg('scorecard.total', lang)} {card['total']:.0f}/100 ({msg('scorecard.coding', lang)} {card['coding']:.0f}, "
            f"{msg('scorecard.followups', lang)} {fu_pct})",
            "",
            f"> {msg('scorecard.rule', lang)}: {card['rule'][lang]}",
            "",
        ]
    else:
        lines += [
            f"## {msg('scorecard.verdict', lang)}: {msg('scorecard.pending', lang)}",
            "",
            f"{msg('scorecard.coding', lang)} {card['coding']:.0f}/100",
            "",
        ]
    lines += [
        f"## {msg('scorecard.problems', lang)}",
        "",
        f"| {msg('scorecard.problem', lang)} | {msg('scorecard.status', lang)} | {msg('scorecard.tests', lang)} | {msg('scorecard.ttp', lang)} | {msg('scorecard.hints', lang)} | {msg('scorecard.score', lang)} |",
        "|---|---|---|---|---|---|",
    ]
    for p in card["problems"]:
        status = (
            p["status"]
            if p["attempted"]
            else f"{p['status']} ({msg('scorecard.not_attempted', lang)})"
        )
        penalty = f" (-{p['hint_penalty']})" if p["hint_penalty"] else ""
        lines.append(
            f"| {_cell(p['title'][lang])} (`{p['kata']}`) | {status} | {tiers_text(p['tiers'])} | "
            f"{fmt_duration(p['time_to_first_pass'])} | {p['hints']} | {p['score']:.0f}{penalty} |"
        )
    lines += ["", f"### {msg('scorecard.mistakes', lang)}", ""]
    for p in card["problems"]:
        found = ", ".join(
            f"`{m['id']}`"
            + (f" ({m['title']})" if m["title"] else "")
            + (f" ({msg('scorecard.fixed', lang)})" if m.get("fixed") else "")
            for m in p["mistakes"]
        )
        lines.append(f"- `{p['kata']}`: {found or msg('scorecard.none', lang)}")
        if p.get("rungs"):
            lines.append(f"  - {msg('ladder.scorecard', lang, n=p['rungs'])}")
        if p["failed_tests"] and p["attempted"]:
            tests = ", ".join(f"`{x}`" for x in p["failed_tests"][:8])
            more = f" (+{len(p['failed_tests']) - 8})" if len(p["failed_tests"]) > 8 else ""
            lines.append(f"  - {msg('scorecard.failed', lang)}: {tests}{more}")
    notes = [p for p in card["problems"] if p["note"]]
    if notes:
        lines += ["", f"### {msg('scorecard.notes', lang)}", ""] + [
            f"- `{p['kata']}`: {p['note']}" for p in notes
        ]
    lines += [
        "",
        f"## {msg('scorecard.fu_title', lang)} ({fu['points']}/{fu['max']} {msg('scorecard.pts', lang)}, {fu_pct})",
        "",
    ]
    if not fu["questions"]:
        lines.append(msg("scorecard.no_questions", lang))
    for i, q in enumerate(fu["questions"], 1):
        lines.append(f"{i}. **{q['prompt'][lang]}** (`{q['id']}`, {q['kind']})")
        for j, opt in enumerate(q["options"]):
            lines.append(f"   - {LETTERS[j]}) {opt[lang]}")
        lines.append(f"   - {msg('scorecard.answer', lang)}: {given_text(q)}")
        if q["expected"] and q["kind"] != "open":
            lines.append(f"   - {msg('scorecard.expected', lang)}: {q['expected'][lang]}")
        if q["model_answer"]:
            lines.append(f"   - {msg('scorecard.model', lang)}: {q['model_answer'][lang]}")
        fb = q["feedback"][lang] if q["feedback"] else ""
        lines.append(
            f"   - {msg('scorecard.points', lang)}: {q['points']}/{q['max']} {fb}".rstrip()
        )
    lines += ["", f"## {msg('scorecard.scoring', lang)}", ""] + [
        f"- {x}" for x in card["scoring"][lang]
    ]
    lines += ["", f"## {msg('scorecard.scale', lang)}", ""] + [
        f"- {x}" for x in card["scale"][lang]
    ]
    return "\n".join(lines) + "\n"
