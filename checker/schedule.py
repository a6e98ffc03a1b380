"""What to practise next: spaced repetition over katas (FSRS) and over the user's mistakes.

Each practice session of a kata is one FSRS review. A session is the attempts at one kata with
less than SESSION_GAP between them; its rating comes from how it went:

    passed, first attempt, no hint    -> Easy
    passed without a hint             -> Good
    passed after a hint or solution   -> Hard
    never passed                      -> Again

Replaying the sessions through an FSRS scheduler (no fuzzing: the same history always gives the
same plan) gives each kata a due date. Mistakes count too: a mistake diagnosed in two or more
sessions is *recurring*, and every kata that exercises it (its kata.toml `mistakes`) is due at
most RECURRING_DELAY after the last time it was made, so it comes back sooner.

Only the stdlib, the `fsrs` package and the history: `kata next`, `stats` and `list` never
import torch. The plan is kept in the history database (`cached_plan`) until the history or the
katas change, so those commands replay FSRS, and import it, once per new attempt, not every time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from attnkata.checker.catalog import KataSummary
from attnkata.checker.messages import both

if TYPE_CHECKING:
    from attnkata.checker.store import History

PLAN_VERSION = "1"  # bump when the rules below change: cached plans are then recomputed
SESSION_GAP = timedelta(hours=2)
RECURRING_DELAY = timedelta(days=1)
RECURRING_AFTER = 2  # sessions with the same diagnosed mistake
RATINGS = ("again", "hard", "good", "easy")  # FSRS's 1..4


@dataclass
class Session:
    kata: str
    start: datetime
    end: datetime
    attempts: int = 0
    passed: bool = False
    passed_first: bool = False
    helped: bool = False  # a hint or the solution before it passed
    mistakes: set[str] = field(default_factory=set)

    @property
    def rating(self) -> str:
        if not self.passed:
            return "again"
        if self.helped:
            return "hard"
        return "easy" if self.passed_first else "good"


@dataclass
class KataPlan:
    kata: str
    due: datetime | None  # None: never practised
    last: datetime | None = None
    last_rating: str | None = None
    sessions: int = 0
    recurring: list[tuple[str, int]] = field(
        default_factory=list
    )  # (mistake, sessions) it exercises

    def is_due(self, now: datetime) -> bool:
        return self.due is not None and self.due <= now

    def to_dict(self) -> dict[str, Any]:
        return {
            "kata": self.kata,
            "due": self.due.isoformat() if self.due else None,
            "last_practised": self.last.isoformat() if self.last else None,
            "last_rating": self.last_rating,
            "sessions": self.sessions,
            "recurring_mistakes": [{"id": m, "sessions": n} for m, n in self.recurring],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> KataPlan:
        def when(s: str | None) -> datetime | None:
            return datetime.fromisoformat(s) if s else None

        return cls(
            d["kata"],
            when(d["due"]),
            when(d["last_practised"]),
            d["last_rating"],
            d["sessions"],
            [(r["id"], r["sessions"]) for r in d["recurring_mistakes"]],
        )


@dataclass
class Recommendation:
    kata: str
    reason: dict[str, str]  # {"en": ..., "zh": ...}
    plan: KataPlan


def _utc(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def sessions(attempts: list[Any], events: list[Any]) -> list[Session]:
    """Attempts (oldest first) grouped into sessions per kata; hints and solutions mark help."""
    open_: dict[str, Session] = {}
    done: list[Session] = []
    helps: dict[str, list[datetime]] = {}
    for e in events:
        helps.setdefault(e["kata"], []).append(_utc(e["ts"]))
    for a in attempts:
        kata, at = a["kata"], _utc(a["ts"])
        s = open_.get(kata)
        if s is None or at - s.end > SESSION_GAP or s.passed:
            if s is not None:
                done.append(s)
            s = open_[kata] = Session(kata, at, at)
        s.end = at
        s.attempts += 1
        if not s.passed and any(s.start - SESSION_GAP <= h <= at for h in helps.get(kata, [])):
            s.helped = True
        if a["status"] == "pass" and not s.passed:
            s.passed = True
            s.passed_first = s.attempts == 1
        try:
            s.mistakes.update(json.loads(a["diagnoses"] or "[]"))
        except ValueError:
            pass  # a row written by a broken version: its mistakes are lost, not the plan
    done.extend(open_.values())
    return sorted(done, key=lambda s: s.end)


def plan(
    katas: dict[str, KataSummary], attempts: list[Any], events: list[Any]
) -> dict[str, KataPlan]:
    """Every kata's due date from its sessions (FSRS) and the recurring mistakes it exercises."""
    from fsrs import Card, Rating, Scheduler

    scheduler = Scheduler(enable_fuzzing=False)
    cards: dict[str, Any] = {}
    plans = {k: KataPlan(k, None) for k in katas}
    mistake_sessions: dict[str, list[datetime]] = {}
    for s in sessions(attempts, events):
        if s.kata not in plans:
            continue  # a kata that no longer exists
        # An explicit id: without one, fsrs stamps the card with the clock and sleeps 1 ms so
        # that the next id differs (8 katas: 9 ms of `kata list` asleep).
        card = cards.get(s.kata) or Card(card_id=len(cards) + 1)
        cards[s.kata], _ = scheduler.review_card(card, Rating(RATINGS.index(s.rating) + 1), s.end)
        p = plans[s.kata]
        p.due, p.last, p.last_rating = cards[s.kata].due, s.end, s.rating
        p.sessions += 1
        for m in s.mistakes:
            mistake_sessions.setdefault(m, []).append(s.end)
    recurring = {m: times for m, times in mistake_sessions.items() if len(times) >= RECURRING_AFTER}
    for kid, summary in katas.items():
        p = plans[kid]
        hits = sorted(
            ((m, len(recurring[m])) for m in summary.mistakes if m in recurring),
            key=lambda x: (-x[1], x[0]),
        )
        p.recurring = hits
        if hits and p.due is not None:
            sooner = max(max(recurring[m]) for m, _ in hits) + RECURRING_DELAY
            p.due = min(p.due, max(sooner, p.last or sooner))
    return plans


def cached_plan(history: History, katas: dict[str, KataSummary]) -> dict[str, KataPlan]:
    """plan() over the whole history, from the database's cache when
    neither the history nor the katas' mistake lists changed since it was computed."""
    from zlib import crc32  # hashlib would load OpenSSL: this only has to notice an edit

    shape = json.dumps([(k, sorted(s.mistakes)) for k, s in katas.items()]).encode()
    key = f"{PLAN_VERSION}|{history.timeline_version()}|{crc32(shape):08x}"
    stored = history.derived("plan", key)
    if stored is not None:
        try:
            return {d["kata"]: KataPlan.from_dict(d) for d in json.loads(stored)}
        except (ValueError, KeyError, TypeError):
            pass  # written by another version: recompute
    plans = plan(katas, *history.timeline())
    history.store_derived("plan", key, json.dumps([p.to_dict() for p in plans.values()]))
    return plans


def _days(delta: timedelta) -> str:
    days = delta.total_seconds() / 86400
    return f"{days:.0f}" if days >= 1 else f"{days:.1f}"


def recommend(
    katas: dict[str, KataSummary], plans: dict[str, KataPlan], now: datetime
) -> Recommendation | None:
    """Due katas first (most overdue; recurring mistakes break ties), then a new kata (one that
    exercises a recurring mistake first, else the teaching order), else the one due soonest."""
    due = sorted(
        (p for p in plans.values() if p.is_due(now)), key=lambda p: (p.due, -len(p.recurring))
    )
    if due:
        p = due[0]
        ago = _days(now - p.last) if p.last else "?"
        reason = both("schedule.due", ago=ago, rating=p.last_rating)
        if p.recurring:
            m, n = p.recurring[0]
            more = both("schedule.recurring", mistake=m, n=n)
            reason = {lang: reason[lang] + more[lang] for lang in reason}
        return Recommendation(p.kata, reason, p)
    new = [plans[k] for k in katas if plans[k].due is None]
    if new:
        with_mistake = [p for p in new if p.recurring]
        if with_mistake:
            p = max(with_mistake, key=lambda p: p.recurring[0][1])
            m, n = p.recurring[0]
            return Recommendation(p.kata, both("schedule.new_with_mistake", mistake=m, n=n), p)
        p = new[0]
        return Recommendation(p.kata, both("schedule.next_new"), p)
    if not plans:
        return None
    p = min(plans.values(), key=lambda p: p.due or now)
    wait = _days(p.due - now) if p.due else "0"
    return Recommendation(p.kata, both("schedule.nothing_due", wait=wait), p)
