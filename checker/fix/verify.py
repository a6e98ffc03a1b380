"""Every candidate repair is graded like a `kata check`: the same checker API, the same
sandbox and limits, the kata's own grader. A repair is shown only when that grade says:

- every test the repaired mistake explains passes now (those another diagnosed mistake also
  explains may wait for that one's repair),
- no test that passed before fails now (skipped tests stay skipped),
- at least one failing test passes now.

A process that repairs keeps the kata's pytest session and a spare sandboxed process
(`keep_session`, as `kata watch` does), so a candidate costs about what a warm re-check costs
(~0.2 s for gqa). Where the grader is slow (flash attention's efficient tiers), a candidate is
first run on the tests it must fix only, stopping at the first failure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from attnkata.checker.catalog import Kata
from attnkata.checker.errors import KataDefinitionError
from attnkata.checker.models import PASS, SKIP, Result
from attnkata.checker.proxy import Limits

# A grader slower than this (seconds of tests) gets the quick first look at each candidate.
QUICK_LOOK_AFTER = 1.5


def passing(result: Result) -> set[str]:
    return {t.id for t in result.tests if t.status == PASS}


def failing(result: Result) -> list[str]:
    return [t.id for t in result.tests if t.status not in (PASS, SKIP)]


@dataclass
class Verdict:
    ok: bool
    result: Result | None = None
    fixed: list[str] = field(default_factory=list)  # failing before, passing now
    why: str = ""  # why not (for --debug)
    # Progress without a regression, but some tests this mistake explains still fail: the
    # repair may be right and another mistake hide it (search.py tries it provisionally).
    partial: bool = False


def judge(before: Result, after: Result, required: Iterable[str]) -> Verdict:
    """Does `after` (the repaired file's grade) show the repair works, against `before`?"""
    if not after.tests:
        return Verdict(
            False, after, why="not graded: " + ", ".join(d.id for d in after.diagnostics)
        )
    now = {t.id: t.status for t in after.tests}
    lost = [t.id for t in before.tests if t.status == PASS and now.get(t.id) != PASS]
    if lost:
        return Verdict(False, after, why=f"breaks {lost[:3]}")
    fixed = [t for t in failing(before) if now.get(t) == PASS]
    missing = [t for t in required if now.get(t) != PASS]
    if missing:
        why = f"still fails {missing[:3]}"
        return Verdict(False, after, fixed=fixed, why=why, partial=bool(fixed))
    if not fixed:
        return Verdict(False, after, why="fixes no test")
    return Verdict(True, after, fixed=fixed)


class Regrader:
    """Grades candidate sources for one file of one kata (never the diagnosis: a repair is
    judged by the grader's tests alone)."""

    def __init__(self, kata: Kata, path: Path, limits: Limits, lang: str, slow: bool) -> None:
        self.kata, self.path, self.limits, self.lang = kata, path, limits, lang
        self.slow = slow
        self.graded = 0

    def grade(self, source: str, nodes: list[str] | None = None) -> Result:
        from attnkata.checker.runner import check

        self.graded += nodes is None
        return check(
            self.kata,
            self.path,
            limits=self.limits,
            lang=self.lang,
            diagnose=False,
            keep_session=nodes is None,
            preread=(source, []),
            nodes=nodes,
            maxfail=1 if nodes else None,
        )

    def verify(self, before: Result, source: str, required: list[str]) -> Verdict:
        try:
            compile(source, str(self.path), "exec")
        except (SyntaxError, ValueError):
            return Verdict(False, why="does not compile")
        if self.slow and required:
            try:
                quick = self.grade(source, nodes=required[:8])
            except KataDefinitionError:
                quick = None  # a test id pytest cannot select: the full grade decides
            if (
                quick is not None
                and quick.tests
                and any(t.status not in (PASS, SKIP) for t in quick.tests)
            ):
                return Verdict(False, quick, why="quick look: still fails")
        return judge(before, self.grade(source), required)
