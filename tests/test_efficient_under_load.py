"""The efficient tiers judge memory with a limit the kernel enforces, not time: a dense
solution gets the same verdict and diagnosis on a quiet machine and beside two CPU-bound
processes (before, a dense sliding-window file graded on a busy machine timed out instead of
being named `window-materializes-full-scores`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from attnkata.checker.catalog import get_kata
from attnkata.checker.runner import check

FIXTURES = Path(__file__).parent / "fixtures"
DENSE = [
    (
        "sliding-window",
        FIXTURES / "alt" / "sliding-window" / "full_mask.py",
        "window-materializes-full-scores",
    ),
    (
        "flash-attention",
        FIXTURES / "mistakes" / "flash-attention" / "materializes-full-scores.py",
        "materializes-full-scores",
    ),
    (
        "block-sparse",
        FIXTURES / "mistakes" / "block-sparse" / "materializes-full-scores.py",
        "materializes-full-scores",
    ),
]


def _view(result) -> tuple:  # noqa: ANN001
    return (
        result.status,
        {t.id: t.status for t in result.tests},
        [d.id for d in result.diagnostics if d.severity == "essential"],
    )


@pytest.mark.slow
@pytest.mark.parametrize(("kata", "path", "mistake"), DENSE, ids=[k for k, _, _ in DENSE])
def test_a_dense_solution_gets_the_same_verdict_on_a_busy_machine(
    kata: str, path: Path, mistake: str
) -> None:
    quiet = check(get_kata(kata), path)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        loaded = check(get_kata(kata), path)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert _view(quiet) == _view(loaded)
    status, tests, essential = _view(loaded)
    assert status == "fail" and mistake in essential, essential
    efficient = [t for t in loaded.tests if t.tier == "efficient"]
    assert efficient and all(t.status == "fail" for t in efficient)
    assert all("memory this test allows" in t.message for t in efficient), [
        t.message for t in efficient
    ]
