"""The per-variant mutation matrix, shared by tests/test_variant_matrix_*.py (two files, so
that `-n 2 --dist loadfile` grades them on both workers)."""

from __future__ import annotations

import pytest

from attnkata.checker.catalog import all_katas, get_kata
from attnkata.checker.sets.variant_check import check_variant


def sample(kata_id: str) -> dict[str, str]:
    """The sampled variant of a kata: every parameter at its last value, every convention
    changed at once (the hardest to adapt and to diagnose)."""
    return {p.name: p.values[-1] for p in get_kata(kata_id).variants}


def half(first: bool) -> list[str]:
    ids = sorted(k for k, kata in all_katas().items() if kata.variants)
    return ids[: len(ids) // 2] if first else ids[len(ids) // 2 :]


def check(kata_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A bug in the diagnosis fails the matrix instead of becoming an informative note.
    monkeypatch.setenv("ATTNKATA_STRICT_DIAGNOSIS", "1")
    kata = get_kata(kata_id).with_variant(sample(kata_id))
    report = check_variant(kata)
    assert report.ok, f"{kata_id} {report.key}: " + "; ".join(report.problems)
    counts = report.counts
    # Every mistake spelling was checked, and every mistake of the kata fails or is absent.
    assert counts["graded_mistakes"] + counts["not_in_variant"] >= counts["mistakes"]
