"""Which of the candidate's failing tests a catalogued mistake explains: the kata's grader is
run again, on those tests only, against the mistake's mutant served in this process through
the candidate API (mutants are ours and trusted: no child process needed).

A mistake explains a failing test when its mutant fails that test too. With two mistakes
found, each gets its own count ("explains 14 of 16 failing tests").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attnkata.checker.catalog import Kata
from attnkata.checker.local import LocalCandidate
from attnkata.checker.models import PASS, SKIP, TestResult


def failing_tests(
    kata: Kata, path: Path, variant: dict[str, Any], reference: Any, tests: list[str]
) -> set[str] | None:
    """Which of `tests` (ids as in TestResult) the mutant fails; None when the grader could
    not be run that way."""
    import pytest

    from attnkata.checker import driver

    if not tests:
        return set()
    nodes = [f"{kata.grader_path}::test_{t}" for t in tests]
    code, collector, _ = driver.run(kata, path, LocalCandidate(reference, variant), nodes=nodes)
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) or collector.collect_errors:
        return None
    return {r.id for r in collector.results if r.status not in (PASS, SKIP)}


def failing_ids(results: list[TestResult]) -> list[str]:
    return [t.id for t in results if t.status not in (PASS, SKIP)]
