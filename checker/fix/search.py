"""The repair search: for each essential diagnosis, the templates of its mistake id propose
edits of the candidate's own file (nearest the lines the diagnosis points at first), and the
first edit whose re-grade passes `verify.judge` is kept. Mistakes are repaired one after the
other, each on top of the repairs before it (a mistake whose repair shows nothing while
another mistake hides it is tried again once that one is repaired).

The search is bounded by counts, not the clock: the same file gets the same answer on a busy
machine. "No verified fix" is an answer: nothing is shown that was not graded.
"""

from __future__ import annotations

import difflib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from attnkata.checker import mistakes
from attnkata.checker.catalog import Kata
from attnkata.checker.fix import templates
from attnkata.checker.fix.site import Candidate, Site
from attnkata.checker.fix.verify import QUICK_LOOK_AFTER, Regrader, Verdict, failing
from attnkata.checker.models import Diagnostic, Fix, FixReport, Result
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
class Attempt:
    """One mistake's search on one version of the file."""

    diagnostic: Diagnostic
    tried: int = 0


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
    report.unfixed = [
        d.id
        for d in result.diagnostics
        if d.is_error and d.id in mistakes.catalogue() and not fixable(d)
    ]
    known = {d.id: explained(d, result) for d in pending}
    pending.sort(key=lambda d: -len(known[d.id] or ()))
    grader = Regrader(
        kata, path, limits, lang, slow=result.timings.get("tests", 0) > QUICK_LOOK_AFTER
    )
    current, current_result = source, result
    name = path.name
    budget = PER_FILE
    done: set[str] = set()
    progress = True
    while pending and progress and budget > 0:
        progress = False
        for d in list(pending):
            # Tests another finding also explains (another mistake still there, a probe the
            # code cannot take) may go on failing after this repair.
            others: set[str] = set()
            for o in result.diagnostics:
                if o is not d and o.id not in done:
                    others |= explained(o, result) or set()
            still = set(failing(current_result))
            required = sorted(((known[d.id] or set()) - others) & still)
            found = _search(
                d, kata, current, current_result, required, grader, min(PER_MISTAKE, budget), debug
            )
            budget -= found[1]
            if found[0] is None:
                continue
            cand, verdict = found[0], found[2]
            assert verdict is not None and verdict.result is not None
            text, lines, touched = diff_of(current, cand.source, name)
            m = mistakes.get(d.id) if d.id in mistakes.catalogue() else None
            report.fixes.append(
                Fix(
                    mistake=d.id,
                    title=m.render("title", lang) if m else d.title,
                    diff=text,
                    lines=lines,
                    touched=touched,
                    tests_fixed=len(verdict.fixed),
                    tests_failing=report.failing,
                    fixed_tests=verdict.fixed,
                    template=cand.label,
                )
            )
            current, current_result = cand.source, verdict.result
            pending.remove(d)
            done.add(d.id)
            progress = True
            break
    report.unfixed = [d.id for d in pending] + report.unfixed
    report.graded = grader.graded
    fixed = current if report.fixes else None
    if fixed is not None:
        report.fixed_status = current_result.status
        current_result.attach_source(current)
    report.timings = {"search": round(time.perf_counter() - t0, 3)}
    return report, fixed


def _search(
    d: Diagnostic,
    kata: Kata,
    source: str,
    before: Result,
    required: list[str],
    grader: Regrader,
    limit: int,
    debug: list[str] | None,
) -> tuple[Candidate | None, int, Verdict | None]:
    tried = 0
    for cand in _candidates(d, kata, source):
        if tried >= limit:
            break
        tried += 1
        verdict = grader.verify(before, cand.source, required)
        if debug is not None:
            debug.append(f"{d.id}: {cand.label}: {'verified' if verdict.ok else verdict.why}")
        if verdict.ok:
            return cand, tried, verdict
    return None, tried, None


def strict() -> bool:
    return bool(os.environ.get("ATTNKATA_STRICT_FIX"))
