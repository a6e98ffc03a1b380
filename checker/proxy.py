"""The grading process's handle on a candidate file that runs in the sandbox.

The grader calls `Candidate.call(...)` / `Candidate.new(...)`; the candidate's code runs in a
process forked from the sandbox's zygote (checker/sandbox/), in namespaces of its own, with a
per-call and a total time limit and memory, file-size and process limits. Every way the
candidate can go wrong comes back as a `CandidateFailure` (or as data in the `Outcome`),
never as a crash of the grading process. Replies are framed data (checker/sandbox/wire.py) read with
a deadline on the whole reply and a size cap; nothing in them is executed or unpickled, and
what the child says about itself (its trace) is evidence, not proof: input mutation is
decided here, from the inputs as the child returns them.
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from attnkata.checker import replies
from attnkata.checker.compare import unchanged
from attnkata.checker.errors import CheckCancelled
from attnkata.checker.messages import Phrase, phrase
from attnkata.checker.sandbox import wire
from attnkata.checker.sandbox.layouts import normal as normal_layouts

DEFAULT_CALL_TIMEOUT = 10.0
DEFAULT_TOTAL_TIMEOUT = 60.0
DEFAULT_MEMORY_MB = 4096
LOG_TAIL_BYTES = 64 * 1024  # of the candidate's output, only the end is ever read back
# Code that has run into the per-call limit once and is called again (the diagnosis' probes,
# tiny inputs where the tests' took too long) gets this much: a second full wait is what put
# a hang's verdict 2 s past the limit. Slow but finite code takes the probes in milliseconds.
RETRY_CALL_TIMEOUT = 0.3
# A call's time is what it would take on an idle machine: the CPU seconds the kernel counts
# for the sandbox's processes, plus the time they all sleep (a wait, a sleep, a stopped
# process). Time spent ready to run while other programs hold the CPUs is not the candidate's,
# so the same file gets the same verdict on a busy machine (a grading server, `--jobs` equal to
# the cores). The wall clock still bounds a call, at STRETCH times its limit; where the kernel's
# counts cannot be read (not Linux) the limit is wall-clock time.
STRETCH = 10.0
POLL_SECONDS = 0.05


@dataclass(frozen=True)
class Limits:
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    total_timeout: float = DEFAULT_TOTAL_TIMEOUT
    memory_mb: int = DEFAULT_MEMORY_MB
    reply_mb: int = (
        64  # the largest reply read back (graders need ~1 MiB); a larger one is a failure
    )
    file_mb: int = 16  # the largest file (its log included) the candidate may write
    processes: int = 64  # processes and threads of the candidate's whole tree
    # memory_mb also bounds the address space (RLIMIT_AS); not for CUDA, which reserves far
    # more than it uses (the `speed` tier's process: the cgroup's limit still applies).
    address_space: bool = True

    def for_sandbox(self) -> dict[str, Any]:
        return {
            "address_space": self.address_space,
            "memory_mb": self.memory_mb,
            "file_mb": self.file_mb,
            "nproc": self.processes,
            "cpu_seconds": int(self.total_timeout + self.call_timeout) + 5,
        }


class CandidateFailure(Exception):
    """The candidate's code did not produce a value; `status` is the test status it implies.

    `message` is English (test results, logs); `text(lang)` says the same in the user's language."""

    status = "error"

    def __init__(
        self,
        what: Phrase,
        *,
        frames: list[dict[str, Any]] | None = None,
        exc_type: str = "",
        exc_message: str = "",
    ) -> None:
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


class CandidateHungUp(CandidateCrashed):
    """It closed its channel to the grader and stayed alive (a hang in disguise): stopped."""


class CandidateGarbled(CandidateCrashed):
    """It sent back a reply that is too large, malformed or of the wrong shape: stopped, and
    the same code is not run again (such a reply is built on purpose, and rebuilding a 60 MB
    one for every test only wastes the grader's time)."""


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
    cpu: float = 0.0  # the child's own CPU seconds for the call: a budget, never a verdict
    # name -> {"count": n, "calls": [{"args": [...], "kwargs": {...}}, ...]}: the calls of
    # the candidate's own top-level functions the grader asked to record (`record=`); a report
    # from the candidate's process, like `trace`: graders judge the recorded values.
    calls: dict[str, Any] = field(default_factory=dict)


@dataclass
class RemoteModule:
    """A candidate nn.Module instance living in the child."""

    candidate: Candidate
    handle: int
    generation: int
    structure: dict[str, Any]
    name: str = ""  # the candidate's class
    staged: dict[str, Any] | None = None  # weights to load before its next request (load_state)

    @property
    def params(self) -> dict[str, tuple[int, ...]]:
        return {k: tuple(v) for k, v in self.structure["params"].items()}

    @property
    def modules(self) -> list[dict[str, Any]]:
        return self.structure["modules"]

    def to(self, dtype: Any) -> RemoteModule:
        """Cast the module's floating-point parameters and buffers (e.g. to torch.float64)."""
        reply = self.candidate._module_request(self, self._carry({"op": "to", "dtype": dtype}))
        self.structure = reply["structure"]
        return self

    def load_state(self, state: dict[str, Any]) -> None:
        """Copy `state` ({name: tensor}) into the module's parameters and buffers, in the child,
        before its next request: the weights travel with that request (a built module is called
        right after its weights are loaded; a gqa check saves 22 round trips). A load that
        fails is that request's failure."""
        self.staged = {**(self.staged or {}), **state}

    def _carry(self, req: dict[str, Any]) -> dict[str, Any]:
        if self.staged is not None:
            req["state"], self.staged = self.staged, None
        return req

    def call(
        self,
        args: tuple = (),
        kwargs: dict[str, Any] | None = None,
        *,
        grad_wrt: tuple[int, ...] = (),
        grad_output: Any = None,
        method: str | None = None,
    ) -> Outcome:
        with self.submit(
            args, kwargs, grad_wrt=grad_wrt, grad_output=grad_output, method=method
        ) as pending:
            pass
        return pending.result()

    def submit(
        self,
        args: tuple = (),
        kwargs: dict[str, Any] | None = None,
        *,
        grad_wrt: tuple[int, ...] = (),
        grad_output: Any = None,
        method: str | None = None,
    ) -> Pending:
        """Send the call now and read its reply when the `with` block ends (see Pending)."""
        if self.candidate._module_lost(self):
            raise CandidateCrashed(phrase("fail_module_lost"))
        req = self._carry(
            {
                "op": "call",
                "method": method,
                "args": tuple(args),
                "kwargs": kwargs or {},
                "grad_wrt": grad_wrt,
                "grad_output": grad_output,
                "handle": self.handle,
            }
        )
        return Pending(self.candidate, req, phrase("doing_module"), self.name)


class Pending:
    """A call sent to the child whose reply is read when the `with` block ends: the grader
    computes the reference's answer meanwhile, on the other core, instead of before sending.
    The reply is always read at the end of the block, also when the block raises, so the
    channel never holds a stale reply; result() then returns the Outcome or raises the
    candidate's failure."""

    def __init__(
        self, candidate: Candidate, req: dict[str, Any], doing: Phrase, target: str | None
    ) -> None:
        self.candidate, self.req, self.doing, self.target = candidate, req, doing, target
        self._outcome: Outcome | None = None
        self._error: BaseException | None = None
        candidate._send_request(req, target, doing)

    def __enter__(self) -> Pending:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        try:
            reply = self.candidate._finish_request(self.doing, self.target)
            self._outcome = self._answer(reply)
        except CandidateFailure as exc:
            self._error = exc
        except BaseException:
            if exc_type is None:
                raise  # cancelled or interrupted while waiting: that is what the caller hears
        # An exception from the block itself propagates (returning None).

    def _answer(self, reply: dict[str, Any]) -> Any:
        return self.candidate._outcome(reply, self.req)

    def result(self) -> Outcome:
        if self._error is not None:
            raise self._error
        assert self._outcome is not None, "result() is read after the with block"
        return self._outcome


class PendingModule(Pending):
    """Candidate.new(), sent now and read when the `with` block ends (see Pending); result()
    is the RemoteModule."""

    def _answer(self, reply: dict[str, Any]) -> RemoteModule:
        return RemoteModule(
            self.candidate,
            reply["handle"],
            self.candidate.generation,
            reply["structure"],
            self.target or "",
        )

    def result(self) -> RemoteModule:  # type: ignore[override]
        return super().result()  # type: ignore[return-value]


class Ready(Pending):
    """Pending's interface for a call answered at once, in this process (the diagnosis'
    mutants, the recorded reference): `run` is called now; its CandidateFailure is kept for
    result()."""

    def __init__(self, run: Callable[[], Outcome]) -> None:
        self._outcome, self._error = None, None
        try:
            self._outcome = run()
        except CandidateFailure as exc:
            self._error = exc

    def __exit__(self, *_: object) -> None:
        return None


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


class Candidate:
    """A candidate file loaded in a sandboxed process. Use as a context manager or call close().

    `source`: the text to grade (read from `path` when omitted); the sandbox gets a copy of it,
    so what runs is exactly what the grader checked, whatever happens to the file meanwhile."""

    def __init__(
        self,
        path: Path | str,
        limits: Limits | None = None,
        *,
        source: str | None = None,
        native: bool = False,
    ) -> None:
        self.path = Path(path).resolve()
        # Triton kernels compiled for the GPU instead of interpreted (the `speed` tier).
        self.native = native
        self.limits = limits or Limits()
        self.source = source
        self.used = 0.0  # seconds of candidate time spent, against limits.total_timeout
        self.generation = 0
        self.names: dict[str, str] = {}
        self.load_banned: list[str] = []
        self.isolation: dict[str, Any] = {}
        # Entry points that already ran into the per-call limit: later calls of the same code
        # are reported as not run at once, instead of each waiting out the limit again.
        self.timed_out: set[str] = set()
        # Every entry point that ever timed out here (timed_out may be cleared by a caller
        # that wants one more try; this one is not): later tries get RETRY_CALL_TIMEOUT.
        self.ran_out: set[str] = set()
        # The same for code that closed its channel to the grader and stayed alive, and for
        # code that sent back a reply that could not be read.
        self.hung_up: set[str] = set()
        self.garbled: set[str] = set()
        self._zygote: Any = None
        self._spawn: Any = None
        self._log_path: str | None = None
        self._op = "load"  # the kind of the request in flight: its reply is checked for it
        self.load_error: CandidateFailure | None = None
        # Set from another thread (a save during `kata watch`): the current call is abandoned,
        # the candidate killed and CheckCancelled raised.
        self.cancel: threading.Event | None = None

    # -- lifecycle ---------------------------------------------------------------
    def start(self) -> None:
        """Start the sandboxed process and load the file; a load failure is kept in `load_error`."""
        from attnkata.checker.sandbox import host

        self._drop_log()
        if self.source is None:
            self.source = self.path.read_text(encoding="utf-8-sig")
        self.generation += 1
        # SandboxUnavailable (a KataError: exit 3) propagates: no sandbox is not the
        # candidate's fault, and grading without one is not an option.
        self._zygote = host.native_zygote() if self.native else host.zygote()
        self.isolation = self._zygote.isolation
        self._spawn = self._zygote.spawn(self.source, self.path.name, self.limits.for_sandbox())
        self._log_path = self._spawn.log_path
        self._op = "load"
        try:
            reply = self._receive(self.limits.call_timeout, phrase("doing_load"))
        except CandidateFailure as exc:
            self.load_error = exc
            return
        if not reply["ok"]:
            self.load_error = self._failure(reply, phrase("doing_load"))
            return
        self.load_error = None
        self.names = {str(k): str(v) for k, v in dict(reply.get("names", {})).items()}
        self.load_banned = [str(b) for b in reply.get("banned", [])]

    def ensure_started(self) -> None:
        if self._spawn is None and self.load_error is None:
            self.start()
        if self.load_error is not None:
            raise self.load_error

    def close(self) -> None:
        """Done with this candidate: its process tree is killed now; the zygote confirms the
        death before it starts another candidate or at exit (Zygote.release)."""
        if self._spawn is not None:
            spawn, self._spawn = self._spawn, None
            spawn.sock.close()
            self._zygote.release(spawn.token)
        self._drop_log()

    def __enter__(self) -> Candidate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _drop_log(self) -> None:
        if self._log_path:
            try:
                os.unlink(self._log_path)
            except OSError:
                pass
            self._log_path = None

    def _kill(self) -> int | None:
        """End the candidate's whole process tree; its wait status when known."""
        if self._spawn is None:
            return None
        spawn, self._spawn = self._spawn, None
        spawn.sock.close()
        return self._zygote.kill(spawn.token)

    # -- calls -------------------------------------------------------------------
    def has(self, name: str) -> bool:
        self.ensure_started()
        return name in self.names

    def call(
        self,
        name: str,
        args: tuple = (),
        kwargs: dict[str, Any] | None = None,
        *,
        grad_wrt: tuple[int, ...] = (),
        grad_output: Any = None,
        memory_mb: int | None = None,
        record: tuple[str, ...] = (),
        layouts: dict[Any, str] | None = None,
    ) -> Outcome:
        """Call the candidate's top-level `name(*args, **kwargs)` in the child.

        `record`: top-level names of the candidate's module whose calls during this call are
        recorded (`Outcome.calls`; see sandbox/child.CallLog).
        `layouts`: {argument position or name: layout} (checker/sandbox/layouts.py): those
        inputs reach the code as transposed or padded views, not contiguous tensors.

        `memory_mb`: the call runs in a fresh process of its own, loaded from the same source,
        whose address space may grow by at most that many MiB past what the sandbox's
        interpreter maps (RLIMIT_AS, enforced by the kernel): the efficient tiers' judge of
        "does not materialize", which neither the machine's load nor anything the candidate's
        process reports can change. Going past it is CandidateMemory (or whatever the code
        raises when an allocation fails)."""
        if memory_mb is not None:
            return self._call_capped(name, args, kwargs or {}, memory_mb)
        with self.submit(
            name,
            args,
            kwargs,
            grad_wrt=grad_wrt,
            grad_output=grad_output,
            record=record,
            layouts=layouts,
        ) as pending:
            pass
        return pending.result()

    def _call_capped(
        self, name: str, args: tuple, kwargs: dict[str, Any], memory_mb: int
    ) -> Outcome:
        self._require(name)
        with Candidate(
            self.path, replace(self.limits, memory_mb=memory_mb), source=self.source
        ) as capped:
            # One candidate to the grader: the same time budget, and code that ran out of
            # time (or hung up) here is not run again there, nor the other way round.
            capped.used, capped.timed_out, capped.ran_out, capped.hung_up, capped.garbled = (
                self.used,
                self.timed_out,
                self.ran_out,
                self.hung_up,
                self.garbled,
            )
            try:
                capped.start()
                if capped.load_error is not None:
                    raise capped.load_error
                return capped.call(name, args, kwargs)
            finally:
                self.used = capped.used

    def submit(
        self,
        name: str,
        args: tuple = (),
        kwargs: dict[str, Any] | None = None,
        *,
        grad_wrt: tuple[int, ...] = (),
        grad_output: Any = None,
        record: tuple[str, ...] = (),
        layouts: dict[Any, str] | None = None,
    ) -> Pending:
        """call(), sent now and read when the `with` block ends (see Pending)."""
        self._require(name)
        req = {
            "op": "call",
            "name": name,
            "args": tuple(args),
            "kwargs": kwargs or {},
            "grad_wrt": grad_wrt,
            "grad_output": grad_output,
        }
        if record:
            req["record"] = list(record)
        if layouts:
            req["layouts"] = normal_layouts(layouts)
        return Pending(self, req, phrase("doing_call", name=name), name)

    def speed(
        self,
        name: str,
        args: tuple = (),
        kwargs: dict[str, Any] | None = None,
        *,
        layouts: dict[Any, str] | None = None,
    ) -> dict[str, Any]:
        """Time `name(*args, **kwargs)` on the GPU in this (native) process: {"value" (on the
        CPU), "ms", "median_ms", "sem_ms", "reps"} (checker/sandbox/speed.py). The candidate's
        word about its own time: informative, never a verdict."""
        self._require(name)
        req: dict[str, Any] = {"op": "speed", "name": name, "args": tuple(args)}
        req["kwargs"] = kwargs or {}
        if layouts:
            req["layouts"] = normal_layouts(layouts)
        return self._request(req, phrase("doing_call", name=name))

    def new(
        self, name: str, args: tuple = (), kwargs: dict[str, Any] | None = None, dtype: Any = None
    ) -> RemoteModule:
        """Construct the candidate's class `name(*args, **kwargs)` in the child (in eval mode),
        cast to `dtype` when given (one round trip instead of two: `watch` re-checks make ~20)."""
        with self.new_later(name, args, kwargs, dtype) as building:
            pass
        return building.result()

    def new_later(
        self, name: str, args: tuple = (), kwargs: dict[str, Any] | None = None, dtype: Any = None
    ) -> PendingModule:
        """new(), sent now and read when the `with` block ends (see Pending)."""
        self._require(name)
        req = {"op": "new", "name": name, "args": tuple(args), "kwargs": kwargs or {}}
        if dtype is not None:
            req["dtype"] = dtype
        return PendingModule(self, req, phrase("doing_new", name=name), name)

    def _require(self, name: str) -> None:
        self.ensure_started()
        if name not in self.names:
            found = ", ".join(sorted(self.names)) or "-"
            raise CandidateRaised(phrase("fail_missing_name", name=name, found=found))

    def _module_lost(self, module: RemoteModule) -> bool:
        """The process that built `module` is gone (a crash or timeout restarted the child)."""
        return module.generation != self.generation or self._spawn is None

    def _module_request(self, module: RemoteModule, req: dict[str, Any]) -> dict[str, Any]:
        if self._module_lost(module):
            raise CandidateCrashed(phrase("fail_module_lost"))
        return self._request(
            {**req, "handle": module.handle}, phrase("doing_module"), target=module.name
        )

    def _request(
        self, req: dict[str, Any], doing: Phrase, target: str | None = None
    ) -> dict[str, Any]:
        target = target or req.get("name")
        self._send_request(req, target, doing)
        return self._finish_request(doing, target)

    def _send_request(self, req: dict[str, Any], target: str | None, doing: Phrase) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise CheckCancelled()
        if target in self.timed_out:
            raise CandidateTimeout(phrase("fail_after_timeout", name=target))
        if target in self.hung_up:
            raise CandidateCrashed(phrase("fail_after_hang_up", name=target))
        if target in self.garbled:
            raise CandidateCrashed(phrase("fail_after_garbled", name=target))
        self.ensure_started()  # (re)starts a process stopped by an earlier failure
        remaining = self.limits.total_timeout - self.used
        if remaining <= 0:
            raise CandidateTimeout(phrase("fail_not_run", limit=self.limits.total_timeout))
        self._op = str(req["op"])
        try:
            wire.send(self._spawn.sock, req)
        except OSError:
            raise self._crashed(doing) from None

    def _finish_request(self, doing: Phrase, target: str | None) -> dict[str, Any]:
        wait = min(self.limits.call_timeout, self.limits.total_timeout - self.used)
        if target in self.ran_out:
            wait = min(wait, RETRY_CALL_TIMEOUT)
        try:
            reply = self._receive(wait, doing)
        except CandidateTimeout:
            if target:
                self.timed_out.add(target)
                self.ran_out.add(target)
            raise
        except CandidateHungUp:
            if target:
                self.hung_up.add(target)  # a hang in disguise: not waited for again
            raise
        except CandidateGarbled:
            if target:
                self.garbled.add(target)
            raise
        if not reply.get("ok"):
            raise self._failure(reply, doing)
        return reply

    def _await_reply(self, t0: float, wait: float) -> float:
        """Wait for the first byte of a reply, in short slices (a cancelled check does not wait
        for a slow call to finish); the call's time so far (see STRETCH). Raises FrameTimeout
        when it reaches `wait`."""
        sock = self._spawn.sock
        # Most calls answer within the first slice: they read no /proc at all.
        if select.select([sock], [], [], min(wait, POLL_SECONDS))[0]:
            return time.monotonic() - t0
        base = self._zygote.usage() if self._zygote is not None else None
        last = time.monotonic()
        spent = last - t0
        while True:
            if self.cancel is not None and self.cancel.is_set():
                self._kill()
                raise CheckCancelled()
            if spent >= wait or last - t0 >= wait * STRETCH:
                raise wire.FrameTimeout("no reply within the call's time")
            ready = select.select([sock], [], [], min(POLL_SECONDS, wait - spent))[0]
            now = time.monotonic()
            usage = self._zygote.usage() if base is not None else None
            if usage is None or base is None:
                spent += now - last  # the wall clock
            else:
                # CPU since the last look, or the whole slice where nothing was runnable
                spent += max(usage.cpu - base.cpu, 0.0 if usage.running else now - last)
                base = usage
            last = now
            if ready:
                return spent

    def _receive(self, wait: float, doing: Phrase) -> dict[str, Any]:
        t0 = time.monotonic()
        try:
            spent = self._await_reply(t0, wait)
            # The reply has begun: the rest of the frame comes within the limit, wall clock.
            t1 = time.monotonic()
            reply = wire.recv(
                self._spawn.sock, deadline=t1 + wait, max_bytes=self.limits.reply_mb << 20
            )
            spent += time.monotonic() - t1
        except wire.FrameTimeout:
            # A call that timed out used its whole allowance, however the clocks drifted (its
            # CPU time may run ahead of the wall clock: the tree has several threads).
            self.used += wait
            self._kill()
            total = self.used >= self.limits.total_timeout
            limit = self.limits.total_timeout if total else wait
            raise CandidateTimeout(
                phrase("fail_total_timeout" if total else "fail_timeout", limit=limit, doing=doing)
            ) from None
        except wire.PeerClosed:
            self.used += time.monotonic() - t0
            raise self._crashed(doing) from None
        except wire.FrameTooLarge as exc:
            self._kill()
            raise CandidateGarbled(phrase("fail_too_large", doing=doing, detail=str(exc))) from None
        except wire.WireError as exc:
            self._kill()
            raise CandidateGarbled(
                phrase("fail_unreadable", doing=doing, detail=str(exc)[:200])
            ) from None
        self.used += spent  # the call's time, as judged against its limit
        try:
            return replies.clean(reply, self._op)
        except replies.BadReply as exc:
            self._kill()
            raise CandidateGarbled(
                phrase("fail_unreadable", doing=doing, detail=str(exc))
            ) from None

    def _crashed(self, doing: Phrase) -> CandidateCrashed:
        spawn = self._spawn
        # A process that really ended is reported at once (the zygote wakes on SIGCHLD); one
        # that only closed its end of the channel is not waited for long: it is killed below,
        # and later calls of the same code are not run (see _finish_request).
        status = self._zygote.exit_status(spawn.token, wait=0.5) if spawn is not None else None
        closed = False
        if spawn is not None:
            if status is None:
                closed = True
                status = self._kill()  # closed its channel but stayed alive: it goes now
            else:
                spawn.sock.close()
                self._spawn = None
        if closed:
            how = phrase("how_closed")
        elif status is None:
            how = phrase("how_gone")
        elif os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            how = phrase(
                "how_segfault" if sig == signal.SIGSEGV else "how_signal", signal=_signal_name(sig)
            )
        else:
            how = phrase("how_exit", code=os.WEXITSTATUS(status))
        tail = self.output_tail()
        last = phrase("fail_last_output", tail=tail) if tail else ""
        return (CandidateHungUp if closed else CandidateCrashed)(
            phrase("fail_crashed", doing=doing, how=how, last=last)
        )

    def output_tail(self, chars: int = 300) -> str:
        """The end of what the candidate printed (only the last LOG_TAIL_BYTES are read)."""
        if not self._log_path:
            return ""
        try:
            with open(self._log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - LOG_TAIL_BYTES))
                text = f.read().decode("utf-8", errors="replace")
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
            return CandidateMemory(
                phrase(
                    "fail_memory",
                    mb=self.limits.memory_mb,
                    doing=doing,
                    where=where,
                    detail=msg[:200],
                ),
                **extra,
            )
        if kind == "banned-import":
            return CandidateBanned(phrase("fail_banned_import", detail=msg), **extra)
        if kind == "banned-call":
            return CandidateBanned(phrase("fail_banned_call", api=msg), **extra)
        if kind == "protocol":
            return CandidateRaised(phrase("fail_protocol", detail=msg, doing=doing), **extra)
        return CandidateRaised(
            phrase("fail_raised", type=typ, detail=msg, doing=doing, where=where), **extra
        )

    def _outcome(self, reply: dict[str, Any], req: dict[str, Any]) -> Outcome:
        trace = reply.get("trace", {})
        banned = trace.get("banned", [])
        if banned:
            raise CandidateBanned(phrase("fail_banned_ops", apis=", ".join(banned)))
        grads = reply.get("grads")
        if isinstance(grads, str):
            raise CandidateRaised(phrase("fail_no_grads", detail=grads))
        return Outcome(
            value=reply["value"],
            grads=grads,
            warnings=reply.get("warnings", []),
            trace=trace,
            mutated=_mutated(req, reply.get("inputs_after")),
            seconds=reply.get("seconds", 0.0),
            cpu=reply.get("cpu", 0.0),
            calls=reply.get("calls", {}),
        )


def _mutated(req: dict[str, Any], after: Any) -> list[str]:
    """Which inputs the call modified, judged here from what was sent and what came back."""
    args, kwargs = list(req.get("args", ())), dict(req.get("kwargs", {}))
    names = [f"argument {i}" for i in range(len(args))] + [f"argument {k!r}" for k in kwargs]
    sent = args + list(kwargs.values())
    if not isinstance(after, list) or len(after) != len(sent):
        return [
            n for n, v in zip(names, sent, strict=True) if isinstance(v, torch.Tensor | np.ndarray)
        ]
    return [
        n for n, before, now in zip(names, sent, after, strict=True) if not unchanged(before, now)
    ]
