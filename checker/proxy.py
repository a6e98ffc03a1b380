"""The grading process's handle on a candidate file that runs in a child process.

The grader calls `Candidate.call(...)` / `Candidate.new(...)`; the candidate's code runs in
a forked child with a per-call and a total time limit and an address-space limit. Every
way the candidate can go wrong comes back as a `CandidateFailure` (or as data in the
`Outcome`), never as a crash of the grading process.
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Pipe
from pathlib import Path
from typing import Any

from attnkata.checker import wire
from attnkata.checker.messages import Phrase, phrase

DEFAULT_CALL_TIMEOUT = 10.0
DEFAULT_TOTAL_TIMEOUT = 60.0
DEFAULT_MEMORY_MB = 4096


@dataclass(frozen=True)
class Limits:
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    total_timeout: float = DEFAULT_TOTAL_TIMEOUT
    memory_mb: int = DEFAULT_MEMORY_MB


class CandidateFailure(Exception):
    """The candidate's code did not produce a value; `status` is the test status it implies.

    `message` is English (test results, logs); `text(lang)` says the same in the user's language."""

    status = "error"

    def __init__(self, what: Phrase, *, frames: list[dict[str, Any]] | None = None,
                 exc_type: str = "", exc_message: str = "") -> None:
        self.what = what
        self.message = what.render("en")
        super().__init__(self.message)
        self.frames = frames or []
        self.exc_type = exc_type
        self.exc_message = exc_message

    def text(self, lang: str) -> str:
        return self.what.render(lang)


class CandidateTimeout(CandidateFailure):
    status = "timeout"


class CandidateCrashed(CandidateFailure):
    """The interpreter running the candidate ended (os._exit, a signal, a segfault)."""


class CandidateExited(CandidateFailure):
    """sys.exit / SystemExit raised from candidate code."""


class CandidateMemory(CandidateFailure):
    pass


class CandidateRaised(CandidateFailure):
    pass


class CandidateBanned(CandidateFailure):
    status = "fail"


@dataclass
class Outcome:
    """What one call of candidate code produced."""

    value: Any
    grads: Any = None
    warnings: list[dict[str, Any]] = field(default_factory=list)
    trace: dict[str, Any] = field(default_factory=dict)
    mutated: list[str] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class RemoteModule:
    """A candidate nn.Module instance living in the child."""

    candidate: Candidate
    handle: int
    generation: int
    structure: dict[str, Any]

    @property
    def params(self) -> dict[str, tuple[int, ...]]:
        return {k: tuple(v) for k, v in self.structure["params"].items()}

    @property
    def modules(self) -> list[dict[str, Any]]:
        return self.structure["modules"]

    def to(self, dtype: Any) -> RemoteModule:
        """Cast the module's floating-point parameters and buffers (e.g. to torch.float64)."""
        reply = self.candidate._module_request(self, {"op": "to", "dtype": dtype})
        self.structure = reply["structure"]
        return self

    def load_state(self, state: dict[str, Any]) -> None:
        self.candidate._module_request(self, {"op": "load_state", "state": state})

    def call(self, args: tuple = (), kwargs: dict[str, Any] | None = None, *,
             grad_wrt: tuple[int, ...] = (), grad_output: Any = None, method: str | None = None) -> Outcome:
        reply = self.candidate._module_request(self, {
            "op": "call", "method": method, "args": tuple(args), "kwargs": kwargs or {},
            "grad_wrt": grad_wrt, "grad_output": grad_output,
        })
        return self.candidate._outcome(reply)


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


class Candidate:
    """A candidate file loaded in a child process. Use as a context manager or call close()."""

    def __init__(self, path: Path | str, limits: Limits | None = None) -> None:
        self.path = Path(path).resolve()
        self.limits = limits or Limits()
        self.used = 0.0  # seconds of candidate time spent, against limits.total_timeout
        self.generation = 0
        self.names: dict[str, str] = {}
        self.load_banned: list[str] = []
        self._pid: int | None = None
        self._conn: Connection | None = None
        self._log = tempfile.NamedTemporaryFile(prefix="attnkata-child-", suffix=".log", delete=False)  # noqa: SIM115
        self._log.close()
        self.load_error: CandidateFailure | None = None

    # -- lifecycle ---------------------------------------------------------------
    def start(self) -> None:
        """Fork the child and load the file; a load failure is kept in `load_error`."""
        from attnkata.checker.child import child_main

        parent_end, child_end = Pipe(duplex=True)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            parent_end.close()
            child_main(child_end, str(self.path), self.limits.memory_mb, self._log.name)
        child_end.close()
        self._pid, self._conn = pid, parent_end
        self.generation += 1
        try:
            reply = self._receive(self.limits.call_timeout, phrase("doing_load"))
        except CandidateFailure as exc:
            self.load_error = exc
            return
        if not reply["ok"]:
            self.load_error = self._failure(reply, phrase("doing_load"))
            return
        self.load_error = None
        self.names = reply["names"]
        self.load_banned = reply.get("banned", [])

    def ensure_started(self) -> None:
        if self._pid is None:
            self.start()
        if self.load_error is not None:
            raise self.load_error

    def close(self) -> None:
        self._kill()
        try:
            os.unlink(self._log.name)
        except OSError:
            pass

    def __enter__(self) -> Candidate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _kill(self) -> None:
        if self._pid is None:
            return
        for target in (-self._pid, self._pid):  # its process group first: no orphans
            try:
                os.kill(target, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._reap(block=True)
        if self._conn is not None:
            self._conn.close()
        self._pid, self._conn = None, None

    def _reap(self, block: bool) -> int | None:
        if self._pid is None:
            return None
        try:
            pid, status = os.waitpid(self._pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return None
        return status if pid else None

    # -- calls -------------------------------------------------------------------
    def has(self, name: str) -> bool:
        self.ensure_started()
        return name in self.names

    def call(self, name: str, args: tuple = (), kwargs: dict[str, Any] | None = None, *,
             grad_wrt: tuple[int, ...] = (), grad_output: Any = None) -> Outcome:
        """Call the candidate's top-level `name(*args, **kwargs)` in the child."""
        self._require(name)
        reply = self._request({
            "op": "call", "name": name, "args": tuple(args), "kwargs": kwargs or {},
            "grad_wrt": grad_wrt, "grad_output": grad_output,
        }, phrase("doing_call", name=name))
        return self._outcome(reply)

    def new(self, name: str, args: tuple = (), kwargs: dict[str, Any] | None = None) -> RemoteModule:
        """Construct the candidate's class `name(*args, **kwargs)` in the child (in eval mode)."""
        self._require(name)
        reply = self._request({"op": "new", "name": name, "args": tuple(args), "kwargs": kwargs or {}},
                              phrase("doing_new", name=name))
        return RemoteModule(self, reply["handle"], self.generation, reply["structure"])

    def _require(self, name: str) -> None:
        self.ensure_started()
        if name not in self.names:
            found = ", ".join(sorted(self.names)) or "-"
            raise CandidateRaised(phrase("fail_missing_name", name=name, found=found))

    def _module_request(self, module: RemoteModule, req: dict[str, Any]) -> dict[str, Any]:
        if module.generation != self.generation or self._pid is None:
            raise CandidateCrashed(phrase("fail_module_lost"))
        return self._request({**req, "handle": module.handle}, phrase("doing_module"))

    def _request(self, req: dict[str, Any], doing: Phrase) -> dict[str, Any]:
        self.ensure_started()
        remaining = self.limits.total_timeout - self.used
        if remaining <= 0:
            raise CandidateTimeout(phrase("fail_not_run", limit=self.limits.total_timeout))
        assert self._conn is not None
        try:
            self._conn.send_bytes(wire.encode_request(req))
        except (BrokenPipeError, OSError):
            raise self._crashed(doing) from None
        reply = self._receive(min(self.limits.call_timeout, remaining), doing)
        if not reply.get("ok"):
            raise self._failure(reply, doing)
        return reply

    def _receive(self, wait: float, doing: Phrase) -> dict[str, Any]:
        assert self._conn is not None
        t0 = time.monotonic()
        ready = self._conn.poll(wait)
        self.used += time.monotonic() - t0
        if not ready:
            self._kill()
            total = self.used >= self.limits.total_timeout
            limit = self.limits.total_timeout if total else wait
            raise CandidateTimeout(phrase("fail_total_timeout" if total else "fail_timeout", limit=limit, doing=doing))
        try:
            data = self._conn.recv_bytes()
        except (EOFError, OSError):
            raise self._crashed(doing) from None
        try:
            reply = wire.decode_reply(data)
        except Exception as exc:  # noqa: BLE001 - anything unreadable is the child's fault
            self._kill()
            raise CandidateCrashed(phrase("fail_unreadable", doing=doing, detail=str(exc))) from None
        if not isinstance(reply, dict) or "ok" not in reply:
            self._kill()
            raise CandidateCrashed(phrase("fail_unexpected", doing=doing))
        return reply

    def _crashed(self, doing: Phrase) -> CandidateCrashed:
        status = self._reap(block=True)
        self._pid = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if status is None:
            how = phrase("how_gone")
        elif os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            how = phrase("how_segfault" if sig == signal.SIGSEGV else "how_signal", signal=_signal_name(sig))
        else:
            how = phrase("how_exit", code=os.WEXITSTATUS(status))
        tail = self.output_tail()
        last = phrase("fail_last_output", tail=tail) if tail else ""
        return CandidateCrashed(phrase("fail_crashed", doing=doing, how=how, last=last))

    def output_tail(self, chars: int = 300) -> str:
        try:
            text = Path(self._log.name).read_text(errors="replace")
        except OSError:
            return ""
        return text[-chars:].strip()

    def _failure(self, reply: dict[str, Any], doing: Phrase) -> CandidateFailure:
        kind, typ, msg = reply.get("kind"), reply.get("type", ""), reply.get("message", "")
        frames = reply.get("frames", [])
        where = phrase("where", line=frames[-1]["line"]) if frames else ""
        extra = {"frames": frames, "exc_type": typ, "exc_message": msg}
        if kind == "exit":
            return CandidateExited(phrase("fail_exit", call=msg, doing=doing, where=where), **extra)
        if kind == "memory":
            return CandidateMemory(phrase("fail_memory", mb=self.limits.memory_mb, doing=doing, where=where,
                                          detail=msg[:200]), **extra)
        if kind == "banned-import":
            return CandidateBanned(phrase("fail_banned_import", detail=msg), **extra)
        if kind == "banned-call":
            return CandidateBanned(phrase("fail_banned_call", api=msg), **extra)
        if kind == "protocol":
            return CandidateRaised(phrase("fail_protocol", detail=msg, doing=doing), **extra)
        return CandidateRaised(phrase("fail_raised", type=typ, detail=msg, doing=doing, where=where), **extra)

    def _outcome(self, reply: dict[str, Any]) -> Outcome:
        trace = reply.get("trace", {})
        banned = trace.get("banned", [])
        if banned:
            raise CandidateBanned(phrase("fail_banned_ops", apis=", ".join(banned)))
        grads = reply.get("grads")
        if isinstance(grads, str):
            raise CandidateRaised(phrase("fail_no_grads", detail=grads))
        return Outcome(
            value=reply["value"], grads=grads, warnings=reply.get("warnings", []),
            trace=trace, mutated=reply.get("mutated", []), seconds=reply.get("seconds", 0.0),
        )
