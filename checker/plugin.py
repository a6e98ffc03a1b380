"""The pytest side of grading (registered through the `pytest11` entry point).

Gives every grader `--solution PATH` and the `solution` fixture (a `Candidate` proxy), so a
grader runs the same under `kata check` and under plain `pytest katas/sdpa --solution x.py`.
`Collector` turns pytest reports into typed `TestResult`s (Exercism's python-test-runner
does the same with a plugin object).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from attnkata.checker.models import ERROR, FAIL, PASS, SKIP, TIMEOUT, TestResult
from attnkata.checker.proxy import Candidate, CandidateFailure, Limits
from attnkata.checker.triton_speed import SPEED_PROPERTY

if TYPE_CHECKING:
    from attnkata.checker.local import CandidateAPI

COLLECTOR_NAME = "attnkata-collector"

# Graders ask torch.cuda.is_available() at collection time; through NVML that does not
# initialise CUDA in this process, so a candidate child forked later can still use it.
os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("attnkata", "attnkata grading")
    group.addoption("--solution", default=None, help="candidate file to grade")
    group.addoption("--kata-call-timeout", type=float, default=None, help="seconds per call")
    group.addoption("--kata-total-timeout", type=float, default=None, help="seconds in all")
    group.addoption(
        "--kata-memory-mb", type=int, default=None, help="memory limit of the candidate"
    )
    group.addoption("--kata-report", default=None, help="write one JSON line per test to this file")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "tier(name): core, edge, efficient or speed (default core; speed: a GPU's)"
    )
    report = config.getoption("--kata-report", None)
    if report and find_collector(config) is None:
        config.pluginmanager.register(Collector(report=Path(report)), COLLECTOR_NAME)


def find_collector(config: pytest.Config) -> Collector | None:
    return next((p for p in config.pluginmanager.get_plugins() if isinstance(p, Collector)), None)


def _limits(config: pytest.Config) -> Limits:
    base = Limits()
    return Limits(
        call_timeout=config.getoption("--kata-call-timeout") or base.call_timeout,
        total_timeout=config.getoption("--kata-total-timeout") or base.total_timeout,
        memory_mb=config.getoption("--kata-memory-mb") or base.memory_mb,
    )


@pytest.fixture(scope="session")
def solution(request: pytest.FixtureRequest) -> Any:
    """The candidate under test, running in its own child process."""
    collector = find_collector(request.config)
    if collector is not None and collector.candidate is not None:
        yield collector.candidate  # owned by the runner
        return
    path = request.config.getoption("--solution")
    if not path:
        pytest.fail(
            "no solution given: run pytest with --solution path/to/your_file.py", pytrace=False
        )
    candidate = Candidate(Path(path), _limits(request.config))
    candidate.start()
    yield candidate
    candidate.close()


def test_id(item: pytest.Item) -> str:
    name = getattr(item, "originalname", item.name).removeprefix("test_")
    callspec = getattr(item, "callspec", None)
    return f"{name}[{callspec.id}]" if callspec is not None else name


def tier_of(item: pytest.Item) -> str:
    marker = item.get_closest_marker("tier")
    return marker.args[0] if marker else "core"


def _exception_line(excinfo: pytest.ExceptionInfo[BaseException], style: str | None = None) -> str:
    return f"{excinfo.typename}: {excinfo.value}"[:2000]


def _message(excinfo: pytest.ExceptionInfo[BaseException], lang: str = "en") -> tuple[str, str]:
    exc = excinfo.value
    if isinstance(exc, CandidateFailure):
        return exc.status, exc.text(lang)
    if isinstance(exc, AssertionError):
        # Keep the grader's own message; drop pytest's rewritten "assert ..." explanation.
        text = str(exc).split("\nassert ")[0].strip()
        return FAIL, text or "assertion failed"
    if isinstance(exc, pytest.fail.Exception):
        return FAIL, str(exc)
    return (
        ERROR,
        f"grader error ({type(exc).__name__}: {exc}); this is attnkata's fault, please report it",
    )


class Collector:
    """Collects one `TestResult` per test; optionally appends each as a flushed JSON line."""

    def __init__(
        self, candidate: CandidateAPI | None = None, report: Path | None = None, lang: str = "en"
    ) -> None:
        self.candidate = candidate
        self.lang = lang
        self.results: list[TestResult] = []
        self.failures: list[CandidateFailure] = []
        self.collect_errors: list[str] = []
        self.report = report
        self.speed: dict[str, float] = {}  # the `speed` tier's figures (checker/triton_speed.py)

    def reset(self, candidate: CandidateAPI, lang: str) -> None:
        """Collect the results of another run (checker/driver.py runs a session again)."""
        self.candidate, self.lang = candidate, lang
        self.results, self.failures, self.speed = [], [], {}

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        if self.report is None:
            # Graded by attnkata's runner (--tb=no): nobody reads pytest's own failure report,
            # and building it (a path lookup per frame of every traceback, torch's included)
            # was most of the pathlib time in a profiled failing gqa re-check. The result comes
            # from the exception itself.
            for item in items:
                item.repr_failure = _exception_line  # type: ignore[method-assign]

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]):  # noqa: ANN201
        outcome = yield
        rep = outcome.get_result()
        if rep.when == "call" or (rep.when == "setup" and not rep.passed):
            self._record(item, rep, call)

    def _record(
        self, item: pytest.Item, rep: pytest.TestReport, call: pytest.CallInfo[None]
    ) -> None:
        if rep.passed:
            status, message = PASS, ""
            for key, value in rep.user_properties:
                if key == SPEED_PROPERTY and isinstance(value, dict):
                    message = str(value.get("note", ""))
                    self.speed = {k: v for k, v in value.items() if k != "note"}
        elif rep.skipped:
            status = SKIP
            message = str(call.excinfo.value) if call.excinfo else "skipped"
        else:
            assert call.excinfo is not None
            status, message = _message(call.excinfo, self.lang)
            if isinstance(call.excinfo.value, CandidateFailure):
                self.failures.append(call.excinfo.value)
        result = TestResult(test_id(item), tier_of(item), status, message, round(rep.duration, 4))
        self.results.append(result)
        if self.report is not None:
            with self.report.open("a", encoding="utf-8") as f:
                f.write(json.dumps(result.__dict__) + "\n")
                f.flush()

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_errors.append(str(report.longrepr)[-2000:])


__all__ = ["Collector", "solution", "ERROR", "TIMEOUT"]
