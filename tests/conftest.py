"""Shared test fixtures. Every test runs with its own history database and workspace, so
nothing a test does touches the developer's real ~/attnkata or data dir."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "kata-home"
    monkeypatch.setenv("KATA_HOME", str(home))
    monkeypatch.setenv("KATA_WORKSPACE", str(tmp_path / "workspace"))
    monkeypatch.setenv("KATA_LANG", "en")
    # The graders' inputs as published (a check otherwise draws a secret salt of its own):
    # tests compare messages and scores. The draw is tested where it matters
    # (tests/test_sandbox_round3.py, tests/test_input_seeds.py).
    monkeypatch.setenv("ATTNKATA_INPUT_SALT", "0")
    return home


@pytest.fixture(scope="session", autouse=True)
def shared_triton_mutants(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The Triton katas' mutant outputs (~10 s of Triton's interpreter to compute) shared by
    this run's workers (each test has a data dir of its own): checker/triton_support.py."""
    import os

    base = tmp_path_factory.getbasetemp()
    run = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    os.environ["ATTNKATA_TRITON_CACHE"] = str(run / "triton-mutants")


@pytest.fixture(scope="session", autouse=True)
def warm_sandbox() -> None:
    """One zygote for the whole run, warmed for the meta device that the mask katas' graders use
    (otherwise every candidate that builds a mask there would load ~800 modules)."""
    from attnkata.checker.sandbox import host

    host.prestart(warm=tuple(host.WARM_UPS))
