"""Diagnosis: name the mistake behind a failing result (filled in by the diagnosis engine)."""

from __future__ import annotations

from pathlib import Path

from attnkata.checker.catalog import Kata
from attnkata.checker.models import Diagnostic, Result
from attnkata.checker.proxy import Candidate


def diagnose_result(kata: Kata, path: Path, source: str, result: Result, candidate: Candidate,
                    lang: str) -> list[Diagnostic]:
    """Diagnostics for a failing result, most severe first. No catalogue yet: nothing to add."""
    return []
