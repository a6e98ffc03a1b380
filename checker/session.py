"""A kata's pytest session, configured and collected once and run again for each check in a
process that grades again and again (`kata watch`, batch and mock workers).

`pytest.main` builds a configuration (every builtin plugin registered, the command line
parsed) and collects the grader for each check: measured at 8 ms and 10-12 ms of a warm gqa
re-check of ~200 ms. Here that is done once per kata; each check only resets the counters
and runs the collected items again through pytest's own `pytest_runtestloop`. pytest itself
supports running an item again (pytest-rerunfailures does): after each test its fixture
request is dropped and a new one is made on the next run, and the last test of a run tears
down every fixture, session-scoped ones (`solution`) included.

This drives pytest through two private entry points (`_prepareconfig`, `Session`): a pytest
without them, a session that cannot be built, or a run that did not end normally (cancelled,
interrupted, a grader that broke) is never reused; the check then runs through `pytest.main`
as before.
"""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Callable
from typing import Any

import pytest

from attnkata.checker import plugin
from attnkata.checker.errors import CheckCancelled

MAX_KEPT = 8  # katas; a batch worker grades a set's few katas in turn


class Watcher:
    """Reports each test as it starts (the terminal's spinner) and ends the pytest session
    when the check is cancelled (pytest stops on a KeyboardInterrupt)."""

    def __init__(self, progress: Callable[[str], None] | None = None, cancel: threading.Event | None = None) -> None:
        self.progress = progress
        self.cancel = cancel

    def pytest_runtest_setup(self, item: Any) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise CheckCancelled()
        if self.progress is not None:
            self.progress(item.nodeid.rsplit("::", 1)[-1])


class KeptSession:
    """One kata's configured and collected session. `run` grades one candidate with it."""

    def __init__(self, args: list[str]) -> None:
        from _pytest.config import _prepareconfig
        from _pytest.main import Session

        self.collector = plugin.Collector()
        self.watcher = Watcher()
        # `args` leave pytest's terminal plugin out (runner.pytest_args): nobody reads its
        # report, and its writer would keep the first check's redirected stdout for good.
        self.config = _prepareconfig(args, plugins=[plugin, self.collector, self.watcher])
        try:
            self.config._do_configure()
            self.session = Session.from_config(self.config)
            self.config.hook.pytest_sessionstart(session=self.session)
            self.config.hook.pytest_collection(session=self.session)
        except BaseException:
            self.config._ensure_unconfigure()
            raise
        self.usable = not (self.collector.collect_errors or self.session.testsfailed) and bool(self.session.items)

    def run(self, candidate: Any, lang: str, progress: Callable[[str], None] | None,
            cancel: threading.Event | None) -> tuple[pytest.ExitCode, plugin.Collector]:
        self.collector.reset(candidate, lang)
        self.watcher.progress, self.watcher.cancel = progress, cancel
        session = self.session
        session.testsfailed = 0
        session.shouldfail = session.shouldstop = False
        self.usable = False  # until this run ends normally
        self.config.hook.pytest_runtestloop(session=session)
        self.usable = True
        return (pytest.ExitCode.TESTS_FAILED if session.testsfailed else pytest.ExitCode.OK), self.collector

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.config._ensure_unconfigure()


_kept: dict[str, KeptSession] = {}
_unavailable = False


def run_kept(key: str, args: list[str], candidate: Any, lang: str, progress: Callable[[str], None] | None,
             cancel: threading.Event | None) -> tuple[pytest.ExitCode, plugin.Collector] | None:
    """Grade `candidate` with the kept session of `key` (made from `args` when missing); None
    when no session can be kept (the caller runs `pytest.main`). A cancelled or interrupted
    run propagates, and its session is dropped."""
    global _unavailable
    from attnkata.checker.runner import no_plugin_autoload

    kept = _kept.pop(key, None)
    if kept is None:
        if _unavailable:
            return None
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), no_plugin_autoload():
                kept = KeptSession(args)
        except (ImportError, AttributeError, TypeError):
            _unavailable = True  # another pytest: its main() it is, for good
            return None
        except Exception:  # noqa: BLE001 - e.g. a broken grader: pytest.main reports it
            return None
        if not kept.usable:
            kept.close()
            return None
    try:
        result = kept.run(candidate, lang, progress, cancel)
    finally:
        if kept.usable:
            _kept[key] = kept  # most recently used last
            while len(_kept) > MAX_KEPT:
                _kept.pop(next(iter(_kept))).close()
        else:
            kept.close()
    return result
