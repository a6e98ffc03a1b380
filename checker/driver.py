"""The one place that drives pytest: the kata's grader run against a candidate, for a check
(`checker/runner.py`), for the diagnosis' replay of a mistake's mutant (`diagnose/replay.py`)
and for recording the public samples from the reference (`sets/samples.py`). Whoever asks, the
same command line, the same plugins and the same quiet output.

A process that grades again and again (`kata watch`, batch and mock workers) keeps each kata's
pytest session, configured and collected once, and runs it again for each check.
`pytest.main` builds a configuration (every builtin plugin registered, the command line
parsed) and collects the grader for each check: measured at 8 ms and 10-12 ms of a warm gqa
re-check of ~200 ms. A kept session only resets the counters and runs the collected items
again through pytest's own `pytest_runtestloop`. pytest itself supports running an item again
(pytest-rerunfailures does): after each test its fixture request is dropped and a new one is
made on the next run, and the last test of a run tears down every fixture, session-scoped
ones (`solution`) included. That drives pytest through two private entry points
(`_prepareconfig`, `Session`): a pytest without them, a session that cannot be built, or a
run that did not end normally (cancelled, interrupted, a grader that broke) is never reused;
the check then runs through `pytest.main` as before.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pytest

from attnkata.checker import plugin
from attnkata.checker.errors import CheckCancelled, KataDefinitionError

if TYPE_CHECKING:
    from attnkata.checker.catalog import Kata


@contextlib.contextmanager
def no_plugin_autoload() -> Iterator[None]:
    """Grade with our plugin only: whatever else is installed (hypothesis, xdist...) must
    neither slow grading down nor change it. Our plugin is passed to pytest.main directly."""
    old = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        yield
    finally:
        if old is None:
            del os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]
        else:
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = old


_UNUSED_PLUGINS = (
    "logging",
    "warnings",
    "junitxml",
    "pastebin",
    "doctest",
    "stepwise",
    "faulthandler",
    "setuponly",
    "setupplan",
    "subtests",
    "unittest",
    "recwarn",
)


def pytest_args(kata: Kata, path: Path, *, terminal: bool = True) -> list[str]:
    """pytest's command line for grading `path`; `terminal=False`: for a session without
    pytest's terminal plugin, whose options the others are (KeptSession)."""
    return [
        str(kata.grader_path),
        "--solution",
        str(path),
        "-p",
        "no:cacheprovider",
        # Both run gc.collect() several times at session end: ~0.4 s with torch's heap.
        # Candidate code cannot leak unraisable exceptions here: it runs in its own process.
        "-p",
        "no:unraisableexception",
        "-p",
        "no:threadexception",
        # Graders use none of these (no logs, warnings checks, doctests, unittest classes or
        # fixtures like recwarn), and the output is not shown: each costs per-test hooks, ~8 ms
        # of a gqa check (a `kata watch` re-check is ~250 ms).
        *[arg for name in _UNUSED_PLUGINS for arg in ("-p", f"no:{name}")],
        "--capture=no",  # stdout/stderr are already redirected; the candidate prints in its sandbox
        "--assert=plain",  # graders raise their own messages; rewriting costs ~0.5 s
        "--import-mode=importlib",
        "--rootdir",
        str(kata.folder),
        "-c",
        os.devnull,  # no ini file: a project's pytest settings must not leak in
        *(("-q", "--no-header", "-rN", "--tb=no") if terminal else ("-p", "no:terminal")),
    ]


class Run(NamedTuple):
    code: int  # pytest's exit code
    collector: plugin.Collector  # the typed results
    output: str  # what pytest printed (read only when the grader itself is broken)


def run(
    kata: Kata,
    path: Path,
    candidate: Any,
    lang: str = "en",
    *,
    nodes: Iterable[str] | None = None,
    plugins: Iterable[Any] = (),
    maxfail: int | None = None,
    cancel: threading.Event | None = None,
    progress: Callable[[str], None] | None = None,
    keep_session: bool = False,
    first_failure: bool = False,
) -> Run:
    """The kata's grader run on `candidate` (`path` is what `--solution` names): every test,
    or only `nodes` (pytest node ids); `plugins` are added to ours. With `keep_session`, a
    kept session when one can serve (all tests, no extra plugins, no maxfail).
    `first_failure`: the tests after the first failing one are skipped, not run (for callers
    that only need "it fails", like maxfail=1, but a kept session can serve it)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        if keep_session and not maxfail and nodes is None and not plugins:
            try:
                kept = run_kept(
                    str(kata.grader_path),
                    pytest_args(kata, path, terminal=False),
                    candidate,
                    lang,
                    progress,
                    cancel,
                    first_failure,
                )
            except Exception as exc:  # noqa: BLE001 - a hook that raised: pytest.main calls that an internal error
                raise KataDefinitionError(
                    f"the grader of {kata.id} is broken: {type(exc).__name__}: {exc}"
                ) from exc
            if kept is not None:
                return Run(*kept, output=out.getvalue())
        collector = plugin.Collector(candidate, lang=lang)
        args = pytest_args(kata, path) + ([f"--maxfail={maxfail}"] if maxfail else [])
        if nodes is not None:
            args = [*args[1:], *nodes]  # the test ids instead of the whole grader
        with no_plugin_autoload():
            watcher = Watcher(progress, cancel, collector if first_failure else None)
            code = pytest.main(args, plugins=[plugin, collector, watcher, *plugins])
    return Run(code, collector, out.getvalue())


MAX_KEPT = 8  # katas; a batch worker grades a set's few katas in turn


class Watcher:
    """Reports each test as it starts (the terminal's spinner) and ends the pytest session
    when the check is cancelled (pytest stops on a KeyboardInterrupt)."""

    def __init__(
        self,
        progress: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
        stop_after: plugin.Collector | None = None,
    ) -> None:
        self.progress = progress
        self.cancel = cancel
        self.stop_after = stop_after  # skip every test once this collector has a failure

    def pytest_runtest_setup(self, item: Any) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise CheckCancelled()
        if self.stop_after is not None and any(
            r.status not in ("pass", "skip") for r in self.stop_after.results
        ):
            pytest.skip("not run: an earlier test failed")
        if self.progress is not None:
            self.progress(item.nodeid.rsplit("::", 1)[-1])


class KeptSession:
    """One kata's configured and collected session. `run` grades one candidate with it."""

    def __init__(self, args: list[str]) -> None:
        from _pytest.config import _prepareconfig
        from _pytest.main import Session

        self.collector = plugin.Collector()
        self.watcher = Watcher()
        # `args` leave pytest's terminal plugin out (pytest_args): nobody reads its
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
        self.usable = not (self.collector.collect_errors or self.session.testsfailed) and bool(
            self.session.items
        )

    def run(
        self,
        candidate: Any,
        lang: str,
        progress: Callable[[str], None] | None,
        cancel: threading.Event | None,
        first_failure: bool = False,
    ) -> tuple[pytest.ExitCode, plugin.Collector]:
        self.collector.reset(candidate, lang)
        self.watcher.progress, self.watcher.cancel = progress, cancel
        self.watcher.stop_after = self.collector if first_failure else None
        session = self.session
        session.testsfailed = 0
        session.shouldfail = session.shouldstop = False
        self.usable = False  # until this run ends normally
        self.config.hook.pytest_runtestloop(session=session)
        self.usable = True
        return (
            pytest.ExitCode.TESTS_FAILED if session.testsfailed else pytest.ExitCode.OK
        ), self.collector

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.config._ensure_unconfigure()


_kept: dict[str, KeptSession] = {}
_unavailable = False


def run_kept(
    key: str,
    args: list[str],
    candidate: Any,
    lang: str,
    progress: Callable[[str], None] | None,
    cancel: threading.Event | None,
    first_failure: bool = False,
) -> tuple[pytest.ExitCode, plugin.Collector] | None:
    """Grade `candidate` with the kept session of `key` (made from `args` when missing); None
    when no session can be kept (the caller runs `pytest.main`). A cancelled or interrupted
    run propagates, and its session is dropped."""
    global _unavailable

    kept = _kept.pop(key, None)
    if kept is None:
        if _unavailable:
            return None
        out = io.StringIO()
        try:
            with (
                contextlib.redirect_stdout(out),
                contextlib.redirect_stderr(out),
                no_plugin_autoload(),
            ):
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
        result = kept.run(candidate, lang, progress, cancel, first_failure)
    finally:
        if kept.usable:
            _kept[key] = kept  # most recently used last
            while len(_kept) > MAX_KEPT:
                _kept.pop(next(iter(_kept))).close()
        else:
            kept.close()
    return result
