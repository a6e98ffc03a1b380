"""Rustlings' rule for every kata: the reference passes, the skeleton fails, and the skeleton
is exactly what the reference's solution markers produce."""

from __future__ import annotations

import pytest

from attnkata.checker.catalog import get_kata, kata_ids
from attnkata.checker.proxy import Limits
from attnkata.checker.runner import check
from attnkata.checker.skeleton import reference_path, skeleton_for

KATAS = kata_ids()
LIMITS = Limits(call_timeout=30, total_timeout=120)


@pytest.mark.parametrize("kata_id", KATAS)
def test_skeleton_matches_the_reference_markers(kata_id):
    kata = get_kata(kata_id)
    assert kata.skeleton_path.read_text(encoding="utf-8") == skeleton_for(kata_id), (
        f"{kata.skeleton_path} drifted from {reference_path(kata_id)}: "
        "run `python -m attnkata.checker.skeleton`"
    )


@pytest.mark.parametrize("kata_id", KATAS)
def test_reference_passes(kata_id):
    kata = get_kata(kata_id)
    result = check(kata, reference_path(kata_id), limits=LIMITS)
    failing = [(t.id, t.message) for t in result.tests if t.status not in ("pass", "skip")]
    assert result.status == "pass", failing or result.diagnostics
    assert not [d for d in result.diagnostics if d.is_error]
    assert {t.tier for t in result.tests} >= set(kata.required_tiers)


@pytest.mark.parametrize("kata_id", KATAS)
def test_skeleton_fails_every_test(kata_id):
    kata = get_kata(kata_id)
    result = check(kata, kata.skeleton_path, limits=LIMITS, diagnose=False)
    assert result.status != "pass"
    assert result.tests
    passing = [t.id for t in result.tests if t.status == "pass"]
    assert not passing, f"the skeleton passes {passing}: those tests cannot fail"
