"""The interactive mock screen in a real terminal (tmux, else pexpect): the countdown ticks,
the check key and a save both grade, and a session killed with SIGKILL resumes with the same
deadline. Skipped when neither tmux nor pexpect is available."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnkata.checker.mock import session as sess
from attnkata.cli.app import app

REPO = Path(__file__).resolve().parent.parent
REFERENCE = (REPO / "reference" / "sdpa.py").read_text(encoding="utf-8")
WAIT = 120.0  # a first check imports torch in the grading worker; 2 shared cores can be slow


def kata_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "attnkata", *args]


class Tmux:
    """One private tmux server (its own socket), one pane that commands are respawned in."""

    name = "tmux"

    def __init__(self) -> None:
        self.socket = f"attnkata-test-{uuid.uuid4().hex[:8]}"
        self.started = False

    def _tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], check=True, capture_output=True, text=True
        ).stdout

    def start(self, args: list[str]) -> None:
        env = " ".join(
            f"{k}={shlex.quote(os.environ[k])}"
            for k in ("KATA_HOME", "KATA_WORKSPACE", "KATA_LANG")
        )
        command = f"exec env {env} TERM=xterm-256color {shlex.join(args)}"
        if not self.started:
            self._tmux("new-session", "-d", "-s", "t", "-x", "120", "-y", "40")
            self._tmux("set-option", "-t", "t", "remain-on-exit", "on")
            self.started = True
        self._tmux("respawn-pane", "-k", "-t", "t", command)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "t")

    def wait_for(self, pattern: str, timeout: float = WAIT) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            text = self.screen()
            if re.search(pattern, text):
                return text
            time.sleep(0.2)
        raise AssertionError(f"{pattern!r} never appeared; the screen was:\n{self.screen()}")

    def send(self, key: str) -> None:
        self._tmux("send-keys", "-t", "t", key)

    def send_line(self, text: str) -> None:
        self._tmux("send-keys", "-t", "t", text, "Enter")

    def kill9(self) -> None:
        """SIGKILL the program in the pane, as a closed laptop or an OOM killer would."""
        pid = int(self._tmux("list-panes", "-t", "t", "-F", "#{pane_pid}").split()[0])
        os.kill(pid, signal.SIGKILL)
        assert _gone(pid)

    def close(self) -> None:
        if self.started:
            subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-B]|\x1b[=>78]")


class Pexpect:
    """The same interface over a pexpect pty: `wait_for` searches the output stream with the
    terminal's escape sequences removed, from where the last match ended."""

    name = "pexpect"

    def __init__(self) -> None:
        self.child = None

    def start(self, args: list[str]) -> None:
        import pexpect

        self.close()
        env = {**os.environ, "TERM": "xterm-256color"}
        self.child = pexpect.spawn(
            args[0], args[1:], env=env, dimensions=(40, 120), encoding="utf-8"
        )
        self.raw, self.pos = "", 0

    def screen(self) -> str:
        return ANSI.sub("", self.raw)[-4000:]

    def wait_for(self, pattern: str, timeout: float = WAIT) -> str:
        import pexpect

        end = time.monotonic() + timeout
        while True:
            text = ANSI.sub("", self.raw)
            found = re.search(pattern, text[self.pos :])
            if found:
                self.pos += found.end()
                return text[-4000:]
            if time.monotonic() > end:
                raise AssertionError(
                    f"{pattern!r} never appeared; the output ended with:\n{text[-2000:]}"
                )
            try:
                self.raw += self.child.read_nonblocking(65536, timeout=0.2)
            except pexpect.TIMEOUT:
                pass
            except pexpect.EOF:
                time.sleep(0.2)

    def send(self, key: str) -> None:
        self.child.send(key)

    def send_line(self, text: str) -> None:
        self.child.send(text + "\r")

    def kill9(self) -> None:
        os.kill(self.child.pid, signal.SIGKILL)
        self.child.wait()  # our own child: reap it

    def close(self) -> None:
        if self.child is not None and self.child.isalive():
            self.child.terminate(force=True)


@pytest.fixture
def term():
    # ATTNKATA_TEST_TERM=pexpect exercises the fallback on a machine that has tmux.
    if shutil.which("tmux") and os.environ.get("ATTNKATA_TEST_TERM", "tmux") == "tmux":
        backend = Tmux()
    else:
        pytest.importorskip("pexpect", reason="neither tmux nor pexpect is available")
        backend = Pexpect()
    yield backend
    backend.close()


def _gone(pid: int, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # dead but not yet reaped by its parent (tmux, under load) is gone too
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except (OSError, IndexError):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
def test_screen_checks_then_survives_kill_and_resumes(tmp_path, term):
    folder = tmp_path / "session"
    term.start(
        kata_command(
            "mock",
            "start",
            "--katas",
            "sdpa",
            "--minutes",
            "30",
            "--seed",
            "5",
            "--dir",
            str(folder),
        )
    )
    first = term.wait_for(r"Time left\s+\d\d:\d\d")
    assert "sdpa.py" in first or term.name == "pexpect"
    deadline = sess.load(folder).deadline
    if term.name == "tmux":  # the countdown moves by itself
        clock = re.search(r"Time left\s+(\d\d:\d\d)", first)[1]
        term.wait_for(r"Time left\s+(?!" + clock + r")\d\d:\d\d", timeout=5)

    term.send("v")  # the statement in a pager, then back to the countdown
    statement = (folder / "sdpa.statement.md").read_text(encoding="utf-8").splitlines()
    prose = next(line for line in statement if line[:1].isalpha())
    # less shows the top of the statement; a plain pager prints it all and asks for Enter
    term.wait_for(
        re.escape(" ".join(re.sub(r"[`*]", "", prose).split()[:2])) + "|Press Enter to return"
    )
    term.send_line("q")  # q leaves less; Enter leaves the plain pager where there is no less
    term.wait_for(r"Time left\s+\d\d:\d\d")

    term.send("c")  # check the untouched skeleton: it raises NotImplementedError
    term.wait_for(r"ERROR core 0/\d+")
    (folder / "sdpa.py").write_text(REFERENCE, encoding="utf-8")  # saving re-checks
    term.wait_for(r"PASS core (\d+)/\1")
    s = sess.load(folder)
    assert [c["status"] for c in s.problems[0].checks] == ["error", "pass"]

    term.kill9()
    status = json.loads(CliRunner().invoke(app, ["mock", "status", "--json"]).stdout)
    assert status["state"] == "active" and status["deadline"] == deadline
    assert 0 < status["seconds_left"] <= 1800
    assert status["problems"][0]["status"] == "pass"

    term.start(kata_command("mock", "resume"))
    screen = term.wait_for(r"Time left\s+\d\d:\d\d")
    term.wait_for("PASS core")  # the earlier check is still there
    if term.name == "tmux":
        shown = re.search(r"deadline\s+(\d\d:\d\d)", screen)
        assert shown, screen
        shown = shown[1]
        assert shown == time.strftime("%H:%M", time.localtime(deadline))
    term.send("q")
    term.wait_for("kata mock resume")  # left; the clock keeps running
    s = sess.load(folder)
    assert s.state == sess.ACTIVE and s.deadline == deadline
