"""The moving parts behind the interactive screen, without any drawing: the controller (keys,
saves, check results, the deadline), the client of the grading worker, the file watcher and
raw key input. `cli/commands/mock.py` draws the controller's state with rich.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from attnkata.checker.errors import UsageError
from attnkata.checker.messages import msg
from attnkata.checker.mock import session as sess
from attnkata.checker.mock.scorecard import HINT_COST
from attnkata.checker.mock.session import Session

QUIT, SUBMIT, DEADLINE, ELSEWHERE = "quit", "submit", "deadline", "elsewhere"


def clock_text(seconds: float) -> str:
    seconds = max(0, int(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class Grader:
    """Client of `python -m attnkata.checker.mock.worker`; replies arrive on `replies`."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.proc: subprocess.Popen[str] | None = None
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self.ready = threading.Event()
        self._reader: threading.Thread | None = None
        self._next = 0

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            # Its own session: Ctrl-C in the terminal is for the screen, not for a running check.
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "attnkata.checker.mock.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                encoding="utf-8",
                bufsize=1,
                start_new_session=True,
            )
        self.ready.clear()
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            try:
                reply = json.loads(line)
            except json.JSONDecodeError:
                continue
            if reply.get("ready"):
                self.ready.set()
            else:
                self.replies.put(reply)
        self.replies.put(
            {"ok": False, "dead": True, "error": f"the grading process ended (log: {self.log})"}
        )

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def submit(
        self, kata: str, path: Path, lang: str, variant: dict[str, str] | None = None
    ) -> None:
        if not self.alive:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        self._next += 1
        line = json.dumps(
            {"id": self._next, "kata": kata, "path": str(path), "lang": lang, "variant": variant}
        )
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.replies.put({"ok": False, "error": f"the grading process ended (log: {self.log})"})

    def drain(self) -> list[dict[str, Any]]:
        out = []
        while True:
            try:
                out.append(self.replies.get_nowait())
            except queue.Empty:
                return out

    def close(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=2)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None


class Watcher:
    """Reports saves of the session's files (watchfiles in a background thread)."""

    def __init__(self, folder: Path, files: list[Path]) -> None:
        self.folder = folder
        self.files = {f.resolve() for f in files}
        self.saved: queue.Queue[Path] = queue.Queue()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        from watchfiles import watch

        for changes in watch(
            self.folder, stop_event=self.stop, debounce=300, recursive=False, raise_interrupt=False
        ):
            for _, raw in changes:
                path = Path(raw).resolve()
                if path in self.files:
                    self.saved.put(path)

    def drain(self) -> set[Path]:
        out = set()
        while True:
            try:
                out.add(self.saved.get_nowait())
            except queue.Empty:
                return out

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=3)


class Keys:
    """Single key presses from a terminal (cbreak mode: no Enter needed, Ctrl-C still works)."""

    ARROWS = {"\x1b[A": "up", "\x1b[B": "down", "\x1b[C": "right", "\x1b[D": "left"}

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.fd = (stream or sys.stdin).fileno()
        self._old: Any = None

    def __enter__(self) -> Keys:
        import termios
        import tty

        self._old = termios.tcgetattr(self.fd)
        tty.setcbreak(self.fd)
        return self

    def __exit__(self, *exc: object) -> None:
        import termios

        if self._old is not None:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._old)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Normal line mode for a while (a pager, a prompt), then single keys again."""
        self.__exit__()
        try:
            yield
        finally:
            import tty

            tty.setcbreak(self.fd)

    def read(self, timeout: float) -> str | None:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return None
        data = os.read(self.fd, 32).decode("utf-8", errors="ignore")
        if not data:
            return None
        if data in self.ARROWS:
            return self.ARROWS[data]
        return data[0] if data[0] in "\r\n\t " else data[0].lower()


@dataclass
class Message:
    title: str
    body: str = ""
    style: str = "default"


@dataclass
class Controller:
    """The screen's state and everything a key, a save or a tick does to the session."""

    folder: Path
    grader: Grader
    s: Session = field(init=False)
    selected: int = 0
    message: Message | None = None
    confirm: str | None = None
    checking: str | None = None
    queued: list[str] = field(default_factory=list)
    ended: str | None = None
    view: str | None = None  # a statement file the screen should show next
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # kata -> last Result dict
    _stamp: float = 0.0

    def __post_init__(self) -> None:
        self.s = sess.load(self.folder)
        self.selected = self.s.current
        self._stamp = self._mtime()

    @property
    def lang(self) -> str:
        return self.s.lang

    def _mtime(self) -> float:
        try:
            return sess.state_path(self.folder).stat().st_mtime
        except OSError:
            return 0.0

    def _reload(self) -> None:
        stamp = self._mtime()
        if stamp != self._stamp:
            self.s = sess.load(self.folder)
            self._stamp = stamp
            if self.s.state != sess.ACTIVE:
                self.ended = ELSEWHERE

    @property
    def current_kata(self) -> str:
        return self.s.problems[self.selected].kata

    def _save_selection(self) -> None:
        with sess.mutate(self.folder) as s:
            s.current = self.selected
        self.s = s
        self._stamp = self._mtime()

    # -- inputs ----------------------------------------------------------------------
    def on_key(self, key: str) -> None:
        confirm, self.confirm = self.confirm, None
        n = len(self.s.problems)
        if key == "q":
            self.ended = QUIT
        elif key == "s":
            if confirm == "s":
                self.submit()
            else:
                self.confirm = "s"
                left = clock_text(self.s.remaining())
                self.message = Message(
                    msg("mock.screen.submit_confirm", self.lang, left=left), style="yellow"
                )
        elif key == "h":
            if confirm == "h":
                self.hint()
            else:
                self.confirm = "h"
                self.message = Message(
                    msg("mock.screen.hint_confirm", self.lang, cost=HINT_COST), style="yellow"
                )
        elif key == "c":
            self.check(self.selected)
        elif key in ("n", "down", "right", "\t"):
            self.selected = (self.selected + 1) % n
            self._save_selection()
        elif key in ("p", "up", "left"):
            self.selected = (self.selected - 1) % n
            self._save_selection()
        elif key.isdigit() and 1 <= int(key) <= n:
            self.selected = int(key) - 1
            self._save_selection()
        elif key == "v":
            self.view = self.s.problems[self.selected].statement
        elif key == "?":
            self.message = Message(msg("mock.screen.help", self.lang))
        elif confirm is not None:
            self.message = None  # any other key cancels a pending confirmation

    def on_saved(self, paths: set[Path]) -> None:
        for i, p in enumerate(self.s.problems):
            path = self.s.file_path(p).resolve()
            if path in paths and path.is_file():
                cp = p.checkpoint
                if cp is None or cp["sha"] != sess.sha(path.read_bytes()):
                    self.check(i)

    # -- actions ------------------------------------------------------------------------
    def check(self, index: int) -> None:
        if self.ended or self.s.state != sess.ACTIVE:
            return
        p = self.s.problems[index]
        if self.checking is not None:
            if p.kata != self.checking and p.kata not in self.queued:
                self.queued.append(p.kata)
            self.message = Message(msg("mock.screen.queued", self.lang, kata=p.kata), style="dim")
            return
        try:
            with sess.mutate(self.folder) as s:
                path = sess.take_checkpoint(s, s.problems[index], sess.now())
        except UsageError:
            self.message = Message(
                msg("mock.screen.file_missing", self.lang, file=p.file), style="red"
            )
            return
        self.s = s
        self._stamp = self._mtime()
        self.checking = p.kata
        self.grader.submit(p.kata, path, self.lang, **({"variant": p.variant} if p.variant else {}))
        self.message = Message(msg("mock.screen.checking", self.lang, kata=p.kata), style="dim")

    def hint(self) -> None:
        kata = self.s.problems[self.selected].kata
        got = sess.take_hint(self.folder, kata)
        self._reload()
        if got is None:
            self.message = Message(
                msg("mock.screen.no_more_hints", self.lang, kata=kata), style="yellow"
            )
            return
        p, _, text = got
        self.message = Message(
            msg("mock.screen.hint", self.lang, kata=kata, n=len(p.hints), cost=HINT_COST),
            text,
            "cyan",
        )

    def submit(self, reason: str = "manual") -> None:
        with sess.mutate(self.folder) as s:
            sess.submit(s, sess.now(), reason)
        self.s = s
        self._stamp = self._mtime()
        self.ended = DEADLINE if s.submit_reason == "deadline" else SUBMIT

    def tick(self) -> None:
        """Apply check results and enforce the deadline; call a few times a second."""
        self._reload()
        if self.ended:
            return
        if self.s.is_due():
            self.submit("deadline")
            return
        for reply in self.grader.drain():
            if reply.get("dead") and self.checking is None:
                continue
            kata, self.checking = self.checking, None
            if kata is None:
                continue
            if not reply.get("ok"):
                self.message = Message(
                    msg("mock.screen.grader_failed", self.lang, error=reply.get("error")),
                    style="red",
                )
                continue
            result = reply["result"]
            with sess.mutate(self.folder) as s:
                if s.state != sess.ACTIVE:
                    continue
                p = s.problem(kata)
                # The time of a check is when the file was taken, not when grading finished.
                summary = sess.record_check(
                    s, kata, result, (p.checkpoint or {}).get("t", sess.now())
                )
            self.s = s
            self._stamp = self._mtime()
            self.results[kata] = result
            self.message = (
                None
                if summary["status"] == "pass" or kata == self.current_kata
                else Message(f"{kata}: {summary['status']} {summary['passed']}/{summary['total']}")
            )
        if self.checking is None and self.queued:
            kata = self.queued.pop(0)
            self.check(next(i for i, p in enumerate(self.s.problems) if p.kata == kata))
