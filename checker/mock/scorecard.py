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

SCALE = {
    "en": [
        f"strong hire: every problem passes its required tiers, total >= {STRONG_TOTAL}, "
        f"follow-ups >= {STRONG_FOLLOWUPS}% and at most {STRONG_MAX_HINTS} hint",
        f"hire: every problem passes its required tiers and total >= {HIRE_TOTAL}",
        f"lean no: total >= {LEAN_TOTAL}, or at least one problem passes",
        "no hire: otherwise",
    ],
    "zh": [
        f"强烈推荐录用：每道题都通过必需层级，总分 >= {STRONG_TOTAL}，追问 >= {STRONG_FOLLOWUPS}%，"
        f"提示不超过 {STRONG_MAX_HINTS} 次",
        f"推荐录用：每道题都通过必需层级，且总分 >= {HIRE_TOTAL}",
        f"倾向不录用：总分 >= {LEAN_TOTAL}，或至少一道题通过",
        "不录用：其他情况",
    ],
}
SCORING = {
    "en": [
        "Per problem: tests passed per tier, weighted core 60 / edge 30 / efficient 10 over the tiers "
        f"the kata has, minus {HINT_COST} points per hint (not below 0); an untouched skeleton scores 0.",
        f"Coding = mean over problems. Total = {CODING_SHARE:.0%} coding + {1 - CODING_SHARE:.0%} "
        "follow-ups (coding alone when there were no follow-ups).",
        "Follow-ups: 2 points each; numeric within tolerance 2 (within 10%: 1), choice 2, order 2 "
        "(two items swapped: 1), open questions self-rated 0-2.",
    ],
    "zh": [
        "每道题：按层级统计通过的测试，权重 core 60 / edge 30 / efficient 10（只算该题有的层级），"
        f"每用一次提示扣 {HINT_COST} 分（最低 0 分）；没改动的骨架代码得 0 分。",
        f"编码分 = 各题平均。总分 = {CODING_SHARE:.0%} 编码分 + {1 - CODING_SHARE:.0%} 追问分"
        "（没有追问时只算编码分）。",
        "追问：每题 2 分；数值题在容差内得 2 分（误差 10% 内得 1 分），选择题 2 分，排序题 2 分"
        "（恰好两项颠倒得 1 分），开放题自评 0-2 分。",
    ],
}
VERDICT_NAMES = {"strong hire": "强烈推荐录用", "hire": "推荐录用", "lean no": "倾向不录用", "no hire": "不录用"}


def tier_score(tiers: dict[str, list[int]]) -> float:
    """0..100 from {tier: [passed, total]}, weights renormalised over the tiers present."""
    present = {tier: pt for tier, pt in tiers.items() if pt[1] > 0}
    weight = sum(TIER_WEIGHTS.get(tier, 0) for tier in present)
    if not weight:
        return 0.0
    return 100.0 * sum(TIER_WEIGHTS.get(tier, 0) * p / n for tier, (p, n) in present.items()) / weight


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
        "failed_tests": [t["id"] for t in result.get("tests", []) if t["status"] not in ("pass", "skip")],
        "time_to_first_pass": None if first_pass is None else round(first_pass - s.started, 1),
        "hints": len(p.hints),
        "hint_ids": list(p.hints),
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
    return [{"id": mid, "title": title, "fixed": mid not in final["diagnoses"]} for mid, title in seen.items()]


def followup_card(s: Session) -> dict[str, Any]:
    items = []
    for q in s.questions:
        a = s.answers.get(q["id"])
        items.append({
            "id": q["id"], "kata": q["kata"], "kind": q["kind"], "prompt": q["prompt"],
            "options": q["options"], "unit": q["unit"],
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
        })
    points = sum(i["points"] for i in items)
    most = MAX_POINTS * len(items)
    return {
        "questions": items,
        "points": points,
        "max": most,
        "percent": round(100.0 * points / most, 1) if most else None,
        "pending": sum(not i["answered"] for i in items),
    }


def decide(problems: list[dict[str, Any]], total: float, followups: float | None,
           hints: int) -> tuple[str, dict[str, str]]:
    """The verdict and the rule that produced it, with this session's numbers filled in."""
    n, n_pass = len(problems), sum(p["passed"] for p in problems)
    all_pass = n > 0 and n_pass == n
    fu_ok = followups is None or followups >= STRONG_FOLLOWUPS
    fu_en = "no follow-ups" if followups is None else f"follow-ups {followups:.0f}%"
    fu_zh = "无追问" if followups is None else f"追问 {followups:.0f}%"
    if all_pass and total >= STRONG_TOTAL and fu_ok and hints <= STRONG_MAX_HINTS:
        return "strong hire", {
            "en": f"strong hire: all {n} problem(s) pass, total {total:.0f} >= {STRONG_TOTAL}, "
                  f"{fu_en}, {hints} hint(s) <= {STRONG_MAX_HINTS}",
            "zh": f"强烈推荐录用：{n} 道题全部通过，总分 {total:.0f} >= {STRONG_TOTAL}，{fu_zh}，"
                  f"提示 {hints} 次 <= {STRONG_MAX_HINTS}",
        }
    if all_pass and total >= HIRE_TOTAL:
        return "hire", {
            "en": f"hire: all {n} problem(s) pass and total {total:.0f} >= {HIRE_TOTAL} (strong hire also "
                  f"needs total >= {STRONG_TOTAL}, follow-ups >= {STRONG_FOLLOWUPS}%, <= {STRONG_MAX_HINTS} hint; "
                  f"here: {fu_en}, {hints} hint(s))",
            "zh": f"推荐录用：{n} 道题全部通过且总分 {total:.0f} >= {HIRE_TOTAL}（强烈推荐还需总分 >= "
                  f"{STRONG_TOTAL}、追问 >= {STRONG_FOLLOWUPS}%、提示不超过 {STRONG_MAX_HINTS} 次；本场：{fu_zh}，"
                  f"提示 {hints} 次）",
        }
    if total >= LEAN_TOTAL or n_pass >= 1:
        why_en = f"{n_pass} of {n} problem(s) pass" + ("" if all_pass else ", so not hire")
        why_zh = f"{n} 道题中通过 {n_pass} 道" + ("" if all_pass else "，所以不是推荐录用")
        return "lean no", {
            "en": f"lean no: {why_en}; total {total:.0f} (>= {LEAN_TOTAL} or a problem passes; "
                  f"hire needs every problem passing and total >= {HIRE_TOTAL})",
            "zh": f"倾向不录用：{why_zh}；总分 {total:.0f}（>= {LEAN_TOTAL} 或至少一道题通过；"
                  f"推荐录用需所有题通过且总分 >= {HIRE_TOTAL}）",
        }
    return "no hire", {
        "en": f"no hire: no problem passes and total {total:.0f} < {LEAN_TOTAL}",
        "zh": f"不录用：没有题目通过，且总分 {total:.0f} < {LEAN_TOTAL}",
    }


def build(s: Session) -> dict[str, Any]:
    problems = [problem_card(s, p) for p in s.problems]
    fu = followup_card(s)
    coding = sum(p["score"] for p in problems) / len(problems) if problems else 0.0
    total = coding if fu["percent"] is None else CODING_SHARE * coding + (1 - CODING_SHARE) * fu["percent"]
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
LABELS = {
    "en": {
        "title": "Mock interview scorecard", "session": "Session", "date": "Date", "time": "Time used",
        "of": "of", "min": "min", "manual": "submitted by you", "deadline": "submitted at the deadline",
        "verdict": "Verdict", "pending": "pending: answer the follow-up questions (`kata mock resume` "
        "or `kata mock answer --answers FILE`)", "rule": "Rule applied", "total": "total",
        "coding": "coding", "followups": "follow-ups", "problems": "Problems", "problem": "Problem",
        "status": "Status", "ttp": "Time to first pass", "hints": "Hints", "score": "Score",
        "mistakes": "Diagnosed mistakes", "none": "none", "notes": "Notes",
        "fu_title": "Follow-up questions", "question": "Question", "answer": "Your answer",
        "expected": "Expected", "points": "Points", "model": "Model answer", "scale": "Verdict scale",
        "fixed": "fixed before the end",
        "scoring": "How the score is computed", "not_attempted": "not attempted", "pts": "points",
        "no_questions": "No follow-up questions (no problem was attempted).", "failed": "failing tests",
        "tests": "tests",
    },
    "zh": {
        "title": "模拟面试评分卡", "session": "场次", "date": "日期", "time": "用时",
        "of": "/", "min": "分钟", "manual": "你主动交卷", "deadline": "到时自动交卷",
        "verdict": "结论", "pending": "待定：请先回答追问（`kata mock resume` 或 "
        "`kata mock answer --answers FILE`）", "rule": "适用规则", "total": "总分",
        "coding": "编码", "followups": "追问", "problems": "题目", "problem": "题目",
        "status": "状态", "ttp": "首次通过用时", "hints": "提示", "score": "得分",
        "mistakes": "诊断出的错误", "none": "无", "notes": "备注",
        "fu_title": "追问", "question": "问题", "answer": "你的回答",
        "expected": "参考答案", "points": "得分", "model": "参考答案", "scale": "结论标准",
        "fixed": "结束前已改正",
        "scoring": "计分方式", "not_attempted": "未作答", "pts": "分",
        "no_questions": "没有追问（没有作答任何题目）。", "failed": "未通过的测试",
        "tests": "测试",
    },
}


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def verdict_name(verdict: str | None, lang: str) -> str:
    if verdict is None:
        return "-"
    return VERDICT_NAMES[verdict] if lang == "zh" else verdict


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
    L = LABELS[lang]
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(card["started"]))
    how = L["deadline"] if card["submit_reason"] == "deadline" else L["manual"]
    lines = [
        f"# {L['title']}", "",
        f"- {L['session']}: `{card['session']}`",
        f"- {L['date']}: {when}",
        f"- {L['time']}: {card['minutes_used']} {L['of']} {card['minutes']} {L['min']} ({how})",
        "",
    ]
    fu = card["followups"]
    fu_pct = "-" if fu["percent"] is None else f"{fu['percent']:.0f}%"
    if card["final"]:
        lines += [f"## {L['verdict']}: **{verdict_name(card['verdict'], lang).upper()}**", "",
                  f"{L['total']} {card['total']:.0f}/100 ({L['coding']} {card['coding']:.0f}, "
                  f"{L['followups']} {fu_pct})", "",
                  f"> {L['rule']}: {card['rule'][lang]}", ""]
    else:
        lines += [f"## {L['verdict']}: {L['pending']}", "",
                  f"{L['coding']} {card['coding']:.0f}/100", ""]
    lines += [f"## {L['problems']}", "",
              f"| {L['problem']} | {L['status']} | {L['tests']} | {L['ttp']} | {L['hints']} | {L['score']} |",
              "|---|---|---|---|---|---|"]
    for p in card["problems"]:
        status = p["status"] if p["attempted"] else f"{p['status']} ({L['not_attempted']})"
        penalty = f" (-{p['hint_penalty']})" if p["hint_penalty"] else ""
        lines.append(f"| {_cell(p['title'][lang])} (`{p['kata']}`) | {status} | {tiers_text(p['tiers'])} | "
                     f"{fmt_duration(p['time_to_first_pass'])} | {p['hints']} | {p['score']:.0f}{penalty} |")
    lines += ["", f"### {L['mistakes']}", ""]
    for p in card["problems"]:
        found = ", ".join(f"`{m['id']}`" + (f" ({m['title']})" if m["title"] else "")
                          + (f" ({L['fixed']})" if m.get("fixed") else "") for m in p["mistakes"])
        lines.append(f"- `{p['kata']}`: {found or L['none']}")
        if p["failed_tests"] and p["attempted"]:
            tests = ", ".join(f"`{x}`" for x in p["failed_tests"][:8])
            more = f" (+{len(p['failed_tests']) - 8})" if len(p["failed_tests"]) > 8 else ""
            lines.append(f"  - {L['failed']}: {tests}{more}")
    notes = [p for p in card["problems"] if p["note"]]
    if notes:
        lines += ["", f"### {L['notes']}", ""] + [f"- `{p['kata']}`: {p['note']}" for p in notes]
    lines += ["", f"## {L['fu_title']} ({fu['points']}/{fu['max']} {L['pts']}, {fu_pct})", ""]
    if not fu["questions"]:
        lines.append(L["no_questions"])
    for i, q in enumerate(fu["questions"], 1):
        lines.append(f"{i}. **{q['prompt'][lang]}** (`{q['id']}`, {q['kind']})")
        for j, opt in enumerate(q["options"]):
            lines.append(f"   - {LETTERS[j]}) {opt[lang]}")
        lines.append(f"   - {L['answer']}: {given_text(q)}")
        if q["expected"] and q["kind"] != "open":
            lines.append(f"   - {L['expected']}: {q['expected'][lang]}")
        if q["model_answer"]:
            lines.append(f"   - {L['model']}: {q['model_answer'][lang]}")
        fb = q["feedback"][lang] if q["feedback"] else ""
        lines.append(f"   - {L['points']}: {q['points']}/{q['max']} {fb}".rstrip())
    lines += ["", f"## {L['scoring']}", ""] + [f"- {x}" for x in card["scoring"][lang]]
    lines += ["", f"## {L['scale']}", ""] + [f"- {x}" for x in card["scale"][lang]]
    return "\n".join(lines) + "\n"
