"""Choose a mock interview's problems: random, reproducible with a seed, and weighted towards
what the history says this candidate has not done, has not passed, or keeps getting wrong."""

from __future__ import annotations

import random
from dataclasses import dataclass

from attnkata.checker import catalog
from attnkata.checker.catalog import Kata
from attnkata.checker.errors import UsageError
from attnkata.checker.messages import both, msg
from attnkata.checker.store import KataStats

MAX_PROBLEMS = 3
# Base weights: a kata never passed is four times as likely as one passed before.
W_NEW, W_FAILING, W_PASSED = 3.0, 4.0, 1.0


@dataclass(frozen=True)
class Pick:
    kata: Kata
    weight: float
    reason: dict[str, str]


def weigh(
    k: Kata, stats: KataStats | None, mistakes: dict[str, int]
) -> tuple[float, dict[str, str]]:
    """The kata's weight and the reason, in both languages."""
    if stats is None or stats.attempts == 0:
        weight, key = W_NEW, "mock.pick.new"
    elif stats.passes == 0:
        weight, key = W_FAILING, "mock.pick.failing"
    else:
        weight, key = W_PASSED, "mock.pick.passed"
    attempts = stats.attempts if stats else 0
    # Mistakes this kata tests that the candidate made anywhere: practising them again is the point.
    extra: list[tuple[str, list[str] | int]] = []
    seen = sorted((m for m in k.mistakes if mistakes.get(m)), key=lambda m: -mistakes[m])
    if seen:
        weight += min(3.0, sum(mistakes[m] for m in seen) / 3)
        extra.append(("mock.pick.mistakes", seen[:3]))
    if stats is not None and stats.hints >= 2:
        weight += 0.5
        extra.append(("mock.pick.hints", stats.hints))

    def reason(lang: str) -> str:
        text = msg(key, lang, n=attempts)
        for part, v in extra:
            text += (
                msg(part, lang, mistakes=msg("list_sep", lang).join(v))
                if isinstance(v, list)
                else msg(part, lang, n=v)
            )
        return text

    return weight, {lang: reason(lang) for lang in catalog.LANGS}


def candidates(difficulty: str | None = None) -> list[Kata]:
    # (a kata whose extra is not installed here cannot be graded: not a problem to pick)
    katas = [k for k in catalog.all_katas().values() if not catalog.missing_extras(k)]
    if difficulty is None:
        return katas
    if difficulty not in catalog.DIFFICULTIES:
        raise UsageError(
            f"unknown difficulty {difficulty!r}", f"use one of {', '.join(catalog.DIFFICULTIES)}"
        )
    return [k for k in katas if k.difficulty == difficulty]


def pick(
    katas: list[Kata],
    stats: dict[str, KataStats],
    mistakes: dict[str, int],
    *,
    seed: int,
    count: int | None = None,
    minutes: int = 45,
) -> list[Pick]:
    """`count` problems, or (without a count) as many as fit in `minutes` by the katas' own
    estimates, at least one and at most three. The same seed and history give the same picks."""
    if not katas:
        raise UsageError("no kata matches", "drop --difficulty, or see `kata list`")
    if count is not None:
        if not 1 <= count <= MAX_PROBLEMS:
            raise UsageError(f"--count must be between 1 and {MAX_PROBLEMS}")
        if count > len(katas):
            raise UsageError(
                f"only {len(katas)} kata(s) match, cannot pick {count}",
                "lower --count or drop --difficulty",
            )
    rng = random.Random(seed)
    weighted = [Pick(k, *weigh(k, stats.get(k.id), mistakes)) for k in katas]
    # Weighted sampling without replacement (Efraimidis & Spirakis): sort by u ** (1 / w).
    order = sorted(
        weighted, key=lambda p: (rng.random() ** (1.0 / p.weight), p.kata.id), reverse=True
    )
    if count is not None:
        return order[:count]
    chosen: list[Pick] = []
    used = 0
    for p in order:
        if len(chosen) < MAX_PROBLEMS and used + p.kata.minutes <= minutes:
            chosen.append(p)
            used += p.kata.minutes
    if not chosen:  # nothing fits: the shortest one, so a short session still has a problem
        chosen = [min(order, key=lambda p: (p.kata.minutes, -p.weight))]
    return chosen


def chosen_by_user(names: list[str]) -> list[Pick]:
    if not 1 <= len(names) <= MAX_PROBLEMS:
        raise UsageError(f"--katas takes 1 to {MAX_PROBLEMS} kata ids")
    picks = [catalog.get_kata(n) for n in names]
    if len({k.id for k in picks}) != len(picks):
        raise UsageError("--katas lists a kata twice")
    return [Pick(k, 1.0, both("mock.chosen_by_you")) for k in picks]


DEFAULT_MINUTES = 45


def choose(
    katas: list[str] | None,
    *,
    count: int | None,
    difficulty: str | None,
    minutes: int | None,
    seed: int,
) -> tuple[list[Pick], int]:
    """The problems of a new session and its length, as `kata mock start` and `kata web` take
    them: the katas named (their estimates give the minutes, 30-60, when not given), else
    picked from the history (weighted towards what is new or keeps going wrong)."""
    from attnkata.checker.store import History

    if katas is not None:
        if count is not None or difficulty is not None:
            raise UsageError("--katas chooses the problems: leave out --count and --difficulty")
        picks = chosen_by_user(katas)
        if minutes is None:
            minutes = min(60, max(30, -(-sum(p.kata.minutes for p in picks) // 5) * 5))
        return picks, minutes
    minutes = DEFAULT_MINUTES if minutes is None else minutes
    with History() as h:
        stats, mistakes = h.stats(), h.mistake_counts()
    return pick(
        candidates(difficulty), stats, mistakes, seed=seed, count=count, minutes=minutes
    ), minutes


def in_variant(kata: Kata, seed: int) -> Kata:
    """`kata` in a variant drawn from the interview's seed (`kata mock start --variants`)."""
    from attnkata.checker import variants

    return kata.with_variant(variants.seeded_draw(kata.variants, seed, kata.id))
