"""The repair search: for each essential diagnosis, the templates of its mistake id propose
edits of the candidate's own file (nearest the lines the diagnosis points at first), and the
first edit whose re-grade passes `verify.judge` is kept. Mistakes are repaired one after the
other, each on top of the repairs before it.

Two mistakes can hide each other: with both in the file, the tests either one explains fail
whatever the first repair does. When no mistake's repair passes, the first one that made
progress without a regression is taken *provisionally*; once every repair is made, it stands
only if the tests its mistake explains pass, else it and every repair made on top of it are
dropped. What is shown was graded either way.

The search is bounded by counts, not the clock: the same file gets the same answer on a busy
machine. "No verified fix" is an answer: nothing is shown that was not graded.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from attnkata.checker import mistakes
from attnkata.checker.catalog import Kata
from attnkata.checker.fix import templates
from attnkata.checker.fix.site import Candidate, Site
from attnkata.checker.fix.verify import QUICK_LOOK_AFTER, Regrader, Verdict, failing, passing
from attnkata.checker.models import PASS, TIMEOUT, Diagnostic, Fix, FixReport, Result
from attnkata.checker.proxy import Limits

# Candidates graded per mistake, and per file: enough for the templates' nearby search, few
# enough that `kata fix` stays within about twice a cold `kata check`.
PER_MISTAKE = 14
PER_FILE = 36


def fixable(d: Diagnostic) -> bool:
    """An essential diagnosis of a catalogued mistake that has repair templates."""
    return d.is_error and d.id in mistakes.catalogue() and templates.has(d.id)


def explained(d: Diagnostic, result: Result) -> set[str] | None:
    """The failing tests the diagnosis explains, when the diagnosis says which."""
    ex = d.data.get("explains")
    if not isinstance(ex, dict):
        return None
    ids = ex.get("ids")
    if isinstance(ids, list) and ids:
        return {str(t) for t in ids}
    if ex.get("tests") and ex.get("tests") == len(failing(result)):
        return set(failing(result))
    return None


def target_lines(d: Diagnostic) -> list[tuple[int, int]]:
    return [(ref.line, ref.end_line or ref.line) for ref in d.source if ref.line > 0]


def diff_of(before: str, after: str, name: str) -> tuple[str, list[int], int]:
    """The unified diff, the lines of `before` it changes (an insertion: the line it goes
    before) and how many lines it touches."""
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    text = "".join(difflib.unified_diff(a, b, fromfile=f"a/{name}", tofile=f"b/{name}", n=2))
    lines: list[int] = []
    touched = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        lines.extend(range(i1 + 1, i2 + 1) if i2 > i1 else [i1 + 1])
        touched += max(i2 - i1, j2 - j1)
    return text, sorted(set(lines)), touched


@dataclass
class Step:
    """One accepted repair: the mistake, the edit, its grade, and the version it edits."""

    diagnostic: Diagnostic
    candidate: Candidate
    verdict: Verdict
    before: str
    before_result: Result
    provisional: bool = False


@dataclass
class Found:
    tried: int = 0
    verified: Step | None = None
    partial: Step | None = None


def _candidates(d: Diagnostic, kata: Kata, source: str) -> Iterator[Candidate]:
    try:
        site = Site(source, target_lines(d))
    except Exception:  # libcst cannot take the file (it compiled: Python can): nothing to offer
        return
    seen = {source}
    for cand in templates.propose(d.id, site, d, kata):
        if cand.source not in seen:
            seen.add(cand.source)
            yield cand


def _required(
    d: Diagnostic, result: Result, known: dict[str, set[str] | None], done: set[str], now: Result
) -> list[str]:
    """The failing tests a repair of `d` must make pass: those `d` explains, less those
    another finding still present also explains (another mistake, a probe the code cannot
    take), among the tests failing now. A test that ran out of time in the check is left
    out: it never finished, so no mistake is shown to explain it (a slow per-token loop
    times out with the mistake repaired too); it is not counted as fixed unless it passes."""
    others: set[str] = {t.id for t in result.tests if t.status == TIMEOUT}
    for o in result.diagnostics:
        if o is not d and o.id not in done:
            others |= explained(o, result) or set()
            if o.is_error and o.id in mistakes.COST_IDS:
                # Right values, wrong cost: such a mistake explains the efficiency tier.
                others |= {t.id for t in result.tests if t.tier == "efficient"}
    return sorted(((known.get(d.id) or set()) - others) & set(failing(now)))


def _search(
    d: Diagnostic,
    kata: Kata,
    source: str,
    before: Result,
    required: list[str],
    grader: Regrader,
    limit: int,
    debug: list[str] | None,
) -> Found:
    found = Found()
    for cand in _candidates(d, kata, source):
        if found.tried >= limit:
            break
        found.tried += 1
        verdict = grader.verify(before, cand.source, required)
        if debug is not None:
            debug.append(f"{d.id}: {cand.label}: {'verified' if verdict.ok else verdict.why}")
        if verdict.ok:
            found.verified = Step(d, cand, verdict, source, before)
            return found
        if verdict.partial and found.partial is None:
            found.partial = Step(d, cand, verdict, source, before, provisional=True)
    return found


def repair(
    kata: Kata,
    path: Path,
    source: str,
    result: Result,
    *,
    limits: Limits,
    lang: str = "en",
    debug: list[str] | None = None,
) -> tuple[FixReport, str | None]:
    """Search verified repairs for `result`'s essential diagnoses. Returns the report and the
    repaired source (None when nothing was repaired)."""
    t0 = time.perf_counter()
    report = FixReport(
        kata=kata.id,
        solution=str(path),
        status=result.status,
        failing=len(failing(result)),
        lang=lang,
    )
    pending = [d for d in result.diagnostics if fixable(d)]
    without = [
        d.id
        for d in result.diagnostics
        if d.is_error and d.id in mistakes.catalogue() and not fixable(d)
    ]
    known = {d.id: explained(d, result) for d in pending}
    pending.sort(key=lambda d: -len(known[d.id] or ()))
    grader = Regrader(
        kata, path, limits, lang, slow=result.timings.get("tests", 0) > QUICK_LOOK_AFTER
    )
    steps: list[Step] = []
    current, current_result = source, result
    budget = PER_FILE
    while pending and budget > 0:
        accepted: Step | None = None
        partials: list[Step] = []
        for d in list(pending):
            done = {s.diagnostic.id for s in steps}
            required = _required(d, result, known, done, current_result)
            found = _search(
                d, kata, current, current_result, required, grader, min(PER_MISTAKE, budget), debug
            )
            budget -= found.tried
            if found.verified is not None:
                accepted = found.verified
                break
            if found.partial is not None:
                partials.append(found.partial)
        if accepted is None and partials:
            # Every mistake's repair leaves some of its tests failing: another mistake may be
            # hiding them. Take the first that made progress; its tests are checked at the end.
            accepted = partials[0]
        if accepted is None:
            break
        assert accepted.verdict.result is not None
        steps.append(accepted)
        pending.remove(accepted.diagnostic)
        current, current_result = accepted.candidate.source, accepted.verdict.result
    steps, current, current_result = _settle(steps, result, known, current, current_result, debug)
    done_ids = {s.diagnostic.id for s in steps}
    report.unfixed = [d.id for d in result.diagnostics if fixable(d) and d.id not in done_ids]
    report.unfixed += without
    name = path.name
    for step in steps:
        text, lines, touched = diff_of(step.before, step.candidate.source, name)
        after = step.verdict.result
        assert after is not None
        fixed = [t for t in failing(step.before_result) if t in passing(after)]
        report.fixes.append(
            Fix(
                mistake=step.diagnostic.id,
                title=mistakes.get(step.diagnostic.id).render("title", lang),
                diff=text,
                lines=lines,
                touched=touched,
                tests_fixed=len(fixed),
                tests_failing=report.failing,
                fixed_tests=fixed,
                template=step.candidate.label,
            )
        )
    report.graded = grader.graded
    fixed_source = current if steps else None
    if fixed_source is not None:
        report.fixed_status = current_result.status
    report.timings = {"search": round(time.perf_counter() - t0, 3)}
    return report, fixed_source


def _settle(
    steps: list[Step],
    result: Result,
    known: dict[str, set[str] | None],
    current: str,
    current_result: Result,
    debug: list[str] | None,
) -> tuple[list[Step], str, Result]:
    """Keep a provisional repair only if, with every repair made, the tests its mistake
    explains pass; else drop it and every repair made on top of it."""
    done = {s.diagnostic.id for s in steps}
    final = {t.id: t.status for t in current_result.tests}
    for i, step in enumerate(steps):
        if not step.provisional:
            continue
        needed = _required(step.diagnostic, result, known, done, result)
        if all(final.get(t) == PASS for t in needed):
            continue
        if debug is not None:
            debug.append(f"{step.diagnostic.id}: provisional repair dropped: its tests still fail")
        return steps[:i], step.before, step.before_result
    return steps, current, current_result
