"""The interviewer's follow-up questions: choose them, instantiate them for one session, and
grade answers typed in the terminal or given in an answers file.

Numeric questions draw their parameters from the session's seed, so two sessions ask different
numbers; choice options and order items are shuffled the same way. Every question is worth
`MAX_POINTS`; open questions are self-rated 0/1/2 after seeing the model answer.
"""

from __future__ import annotations

import json
import random
import re
import tomllib
from pathlib import Path
from typing import Any

from attnkata.checker.arith import ArithmeticError_, evaluate
from attnkata.checker.catalog import FollowUp, Kata
from attnkata.checker.errors import UsageError
from attnkata.checker.messages import both

MAX_POINTS = 2
PER_PROBLEM = 3  # an interviewer asks a few questions per problem, not the whole list
CLOSE = 0.10  # a numeric answer within 10% earns half the points
LETTERS = "abcdefghijklmnopqrstuvwxyz"
_SUFFIX = {"k": 1e3, "m": 1e6, "g": 1e9, "b": 1e9, "t": 1e12}


class AnswerError(ValueError):
    """An answer that cannot be read (re-asked in the terminal; 0 points from a file)."""

    def __init__(self, key: str, **params: object) -> None:
        self.text = both(key, **params)
        super().__init__(self.text["en"])


def select(kata: Kata, seed: int, limit: int = PER_PROBLEM) -> list[FollowUp]:
    """Up to `limit` of the kata's follow-ups, always including a numeric one when there is
    one (those are the ones that change between sessions); kept in the kata's order."""
    pool = list(kata.followups)
    if len(pool) <= limit:
        return pool
    rng = random.Random(f"{seed}:{kata.id}:select")
    numeric = [f for f in pool if f.kind == "numeric"]
    chosen = [rng.choice(numeric)] if numeric else []
    rest = [f for f in pool if f not in chosen]
    chosen += rng.sample(rest, limit - len(chosen))
    return [f for f in pool if f in chosen]


def fmt_num(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}"


def _fill(text: str, values: dict[str, float]) -> str:
    # Only {param} placeholders: other braces in a prompt (a set, a dict) stay as written.
    return re.sub(r"\{(\w+)\}", lambda m: fmt_num(values[m[1]]) if m[1] in values else m[0], text)


def instantiate(kata_id: str, fu: FollowUp, seed: int) -> dict[str, Any]:
    """One question as asked in this session (plain JSON: it is stored in session.json)."""
    rng = random.Random(f"{seed}:{kata_id}:{fu.id}")
    q: dict[str, Any] = {
        "id": f"{kata_id}.{fu.id}",
        "kata": kata_id,
        "kind": fu.kind,
        "prompt": {"en": fu.prompt.en, "zh": fu.prompt.zh},
        "answer": {"en": fu.answer.en, "zh": fu.answer.zh} if fu.answer else None,
        "options": [],
        "correct": None,
        "order": None,
        "params": {},
        "expected": None,
        "tolerance": fu.tolerance,
        "unit": fu.unit,
    }
    if fu.kind == "numeric":
        values = {name: rng.choice(choices) for name, choices in sorted(fu.params.items())}
        try:
            expected = evaluate(fu.formula or "", values)
        except (ArithmeticError_, ZeroDivisionError, OverflowError):
            # kata.toml is validated with the first choices only; those are known to work
            values = {name: choices[0] for name, choices in sorted(fu.params.items())}
            expected = evaluate(fu.formula or "", values)
        q["params"] = values
        q["expected"] = expected
        q["prompt"] = {lang: _fill(text, values) for lang, text in q["prompt"].items()}
    elif fu.kind in ("choice", "order"):
        perm = list(range(len(fu.options)))
        rng.shuffle(perm)
        if fu.kind == "order" and perm == sorted(perm):
            perm.reverse()  # an order question must not be shown already solved
        q["options"] = [{"en": fu.options[i].en, "zh": fu.options[i].zh} for i in perm]
        if fu.kind == "choice":
            q["correct"] = perm.index(fu.correct or 0)
        else:
            q["order"] = [perm.index(i) for i in range(len(perm))]
    return q


def questions_for(kata: Kata, seed: int) -> list[dict[str, Any]]:
    return [instantiate(kata.id, fu, seed) for fu in select(kata, seed)]


# -- reading answers ----------------------------------------------------------------------
def parse_number(raw: Any, unit: str = "") -> float:
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    s = str(raw).strip()
    if unit and s.lower().endswith(unit.lower()):
        s = s[: -len(unit)].strip()
    s = s.replace(",", "").replace("_", "").replace(" ", "").replace("^", "**").replace("×", "*")
    mult = 1.0
    if len(s) > 1 and s[-1].lower() in _SUFFIX and (s[-2].isdigit() or s[-2] in ".)"):
        mult, s = _SUFFIX[s[-1].lower()], s[:-1]
    if not s:
        raise AnswerError("mock.ans_empty")
    try:
        return evaluate(s, {}) * mult
    except (ArithmeticError_, ZeroDivisionError, OverflowError, TypeError):
        raise AnswerError("mock.ans_not_number", raw=str(raw)) from None


def _index(token: str, n: int) -> int:
    tok = token.strip().lower().rstrip(").")
    if len(tok) == 1 and tok in LETTERS:
        idx = LETTERS.index(tok)
    elif tok.isdigit():
        idx = int(tok) - 1
    else:
        raise AnswerError("mock.ans_bad_label", token=token, last=LETTERS[n - 1])
    if not 0 <= idx < n:
        raise AnswerError("mock.ans_bad_label", token=token, last=LETTERS[n - 1])
    return idx


def parse_choice(q: dict[str, Any], raw: Any) -> int:
    n = len(q["options"])
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = str(raw)
    text = str(raw).strip()
    for i, opt in enumerate(q["options"]):  # the option's own text is accepted too
        if text.lower() in (opt["en"].lower(), opt["zh"].lower()):
            return i
    return _index(text, n)


def parse_order(q: dict[str, Any], raw: Any) -> list[int]:
    n = len(q["options"])
    tokens = (
        [str(x) for x in raw]
        if isinstance(raw, list)
        else re.split(r"[\s,;>/-]+", str(raw).strip())
    )
    tokens = [x for x in tokens if x.strip()]
    if len(tokens) == 1 and len(tokens[0]) == n and tokens[0].isalpha():
        tokens = list(tokens[0])  # "cabed"
    order = [_index(x, n) for x in tokens]
    if sorted(order) != list(range(n)):
        raise AnswerError("mock.ans_not_permutation", n=n, last=LETTERS[n - 1])
    return order


def parse_rating(raw: Any) -> int:
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise AnswerError("mock.ans_bad_rating") from None
    if value not in (0, 1, 2):
        raise AnswerError("mock.ans_bad_rating")
    return value


def expected_text(q: dict[str, Any], lang: str) -> str:
    if q["kind"] == "numeric":
        value = q["expected"]
        text = (
            f"{value:,.0f}" if float(value).is_integer() and abs(value) < 1e15 else f"{value:.6g}"
        )
        if abs(value) >= 1e5:
            text += f" (≈ {value:.3g})"
        return f"{text} {q['unit']}".strip()
    if q["kind"] == "choice":
        return f"{LETTERS[q['correct']]}) {q['options'][q['correct']][lang]}"
    if q["kind"] == "order":
        return " ".join(LETTERS[i] for i in q["order"])
    return (q["answer"] or {}).get(lang, "")


def grade(q: dict[str, Any], raw: Any) -> dict[str, Any]:
    """Score one answer. Unreadable answers score 0 with the reason (never raise)."""
    out: dict[str, Any] = {
        "id": q["id"],
        "max": MAX_POINTS,
        "points": 0,
        "given": raw,
        "expected": {lang: expected_text(q, lang) for lang in ("en", "zh")},
    }
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return out | {"status": "unanswered", "feedback": both("mock.fb_unanswered")}
    try:
        return out | _grade(q, raw)
    except AnswerError as exc:
        return out | {"status": "invalid", "feedback": exc.text}


def _grade(q: dict[str, Any], raw: Any) -> dict[str, Any]:
    kind = q["kind"]
    if kind == "numeric":
        given, expected = parse_number(raw, q["unit"]), q["expected"]
        rel = abs(given - expected) / max(abs(expected), 1e-12)
        if rel <= q["tolerance"]:
            return {"points": 2, "status": "correct", "feedback": both("mock.fb_correct")}
        if rel <= CLOSE:
            return {
                "points": 1,
                "status": "partial",
                "feedback": both("mock.fb_close", pct=f"{rel:.1%}"),
            }
        ratio = given / expected if expected else 0.0
        for factor, key in (
            (2.0, "mock.fb_factor2"),
            (1024.0, "mock.fb_units"),
            (1000.0, "mock.fb_units"),
        ):
            for k in (1, 2, 3) if factor > 2 else (1,):
                f = factor**k
                if any(abs(ratio - r) / r <= max(q["tolerance"], 1e-3) for r in (f, 1 / f)):
                    return {"points": 0, "status": "wrong", "feedback": both(key)}
        return {"points": 0, "status": "wrong", "feedback": both("mock.fb_wrong")}
    if kind == "choice":
        idx = parse_choice(q, raw)
        ok = idx == q["correct"]
        return {
            "points": 2 if ok else 0,
            "status": "correct" if ok else "wrong",
            "choice": idx,
            "feedback": both("mock.fb_correct" if ok else "mock.fb_wrong"),
        }
    if kind == "order":
        order = parse_order(q, raw)
        right = sum(a == b for a, b in zip(order, q["order"], strict=True))
        if right == len(order):
            return {"points": 2, "status": "correct", "feedback": both("mock.fb_correct")}
        if right == len(order) - 2:  # exactly two items swapped
            return {"points": 1, "status": "partial", "feedback": both("mock.fb_one_swap")}
        return {"points": 0, "status": "wrong", "feedback": both("mock.fb_wrong")}
    # open: the candidate compares with the model answer and rates themselves
    text, rating = raw, None
    if isinstance(raw, dict):
        text, rating = raw.get("answer", ""), raw.get("rating")
    elif (isinstance(raw, int) and not isinstance(raw, bool)) or str(raw).strip() in (
        "0",
        "1",
        "2",
    ):
        text, rating = "", raw
    if rating is None:
        return {
            "points": 0,
            "status": "unrated",
            "answer_text": str(text),
            "feedback": both("mock.fb_unrated"),
        }
    rating = parse_rating(rating)
    return {
        "points": rating,
        "status": "rated",
        "answer_text": str(text or ""),
        "feedback": both("mock.fb_rated", n=rating),
    }


def load_answers(path: Path) -> dict[str, Any]:
    """{question_id: answer} from a JSON or TOML file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read the answers file {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        kind = "TOML" if path.suffix.lower() == ".toml" else "JSON"
        raise UsageError(
            f"{path} is not valid {kind}: {exc}", 'expected {"question-id": answer, ...}'
        ) from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a table of question id -> answer")
    return _flatten(data)


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    # TOML reads an unquoted `sdpa.score-flops = 1` as {"sdpa": {"score-flops": 1}}: undo that,
    # but keep an open question's {answer, rating} table whole.
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict) and not ({"answer", "rating"} & set(value)):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def match_answers(questions: list[dict[str, Any]], answers: dict[str, Any]) -> dict[str, Any]:
    """Key answers by full question id; a bare follow-up id works when it is unambiguous."""
    by_id = {q["id"]: q for q in questions}
    short: dict[str, list[str]] = {}
    for q in questions:
        short.setdefault(q["id"].split(".", 1)[1], []).append(q["id"])
    out: dict[str, Any] = {}
    unknown = []
    for key, value in answers.items():
        if key in by_id:
            out[key] = value
        elif len(short.get(key, [])) == 1:
            out[short[key][0]] = value
        else:
            unknown.append(key)
    if unknown:
        raise UsageError(
            f"the answers file names unknown question(s): {', '.join(unknown)}",
            f"this session's questions: {', '.join(by_id) or 'none'}",
        )
    return out
