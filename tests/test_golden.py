"""Golden results: fixture solutions with their expected JSON (status, per-test statuses,
diagnostic ids). Regenerate after an intended change with ATTNKATA_REGEN_GOLDEN=1."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from attnkata.checker.catalog import get_kata
from attnkata.checker.models import Result
from attnkata.checker.runner import check

GOLDEN = Path(__file__).parent / "fixtures" / "golden"
CASES = sorted(GOLDEN.glob("*/*.py"))


def stable_view(result: Result) -> dict:
    return {
        "status": result.status,
        "tests": {t.id: t.status for t in result.tests},
        "diagnostics": [d.id for d in result.diagnostics],
    }


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_golden(path: Path):
    result = check(get_kata(path.parent.name), path)
    assert Result.from_dict(json.loads(json.dumps(result.to_dict()))) == result  # JSON round trip
    expected_file = path.with_suffix(".json")
    got = stable_view(result)
    if os.environ.get("ATTNKATA_REGEN_GOLDEN") or not expected_file.exists():
        expected_file.write_text(json.dumps(got, indent=2) + "\n", encoding="utf-8")
        if not os.environ.get("ATTNKATA_REGEN_GOLDEN"):
            pytest.fail(f"wrote missing golden file {expected_file}; review and commit it")
    assert got == json.loads(expected_file.read_text(encoding="utf-8"))
