"""Trusted code served in this process with the candidate API graders use (`CandidateAPI`,
which `proxy.Candidate`, the sandboxed candidate, satisfies too).

Two users, one class: the diagnosis' replay runs the grader against a mistake's mutant (which
tests does that mistake explain?) and the problem-set builder runs it against the reference to
record every request the grader makes (the public samples). Both are our own code, so no
child process is needed; calls behave as in the child (outputs detached, gradients with
respect to `grad_wrt`, inputs changed in place reported, an exception becomes the
candidate's failure), and `record` is told of every request and its reply.
"""

from __future__ import annotations

import copy
import functools
import sys
import time
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import torch

from attnkata.checker.compare import clone_tree, unchanged
from attnkata.checker.messages import phrase
from attnkata.checker.proxy import (
    CandidateFailure,
    CandidateRaised,
    Limits,
    Outcome,
    Ready,
    RemoteModule,
)
from attnkata.checker.sandbox.autograd import backward
from attnkata.checker.sandbox.child import CallLog, _structure
from attnkata.checker.sandbox.layouts import apply as apply_layouts
from attnkata.checker.sandbox.layouts import normal as normal_layouts

Recorder = Callable[[dict[str, Any], dict[str, Any]], None]  # (request, reply)


class CandidateAPI(Protocol):
    """What graders (and the plugin's `solution` fixture) may use of a candidate."""

    limits: Limits
    load_error: CandidateFailure | None

    def has(self, name: str) -> bool: ...

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
    ) -> Outcome: ...

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
    ) -> Any: ...

    def new(
        self, name: str, args: tuple = (), kwargs: dict[str, Any] | None = None, dtype: Any = None
    ) -> RemoteModule: ...

    def new_later(
        self, name: str, args: tuple = (), kwargs: dict[str, Any] | None = None, dtype: Any = None
    ) -> Any: ...


def _raised(exc: Exception) -> CandidateRaised:
    return CandidateRaised(
        phrase("fail_raised", type=type(exc).__name__, detail=str(exc), doing="a mutant", where=""),
        exc_type=type(exc).__name__,
        exc_message=str(exc),
    )


def _recording(fn: Any, log: CallLog) -> Any:
    """`fn` (a function, or a functools.partial of one) looking its global names up in a
    private copy of its module's namespace, which `log` rebinds as the child rebinds them in
    the candidate's module: the module itself is never touched (another thread may be
    calling it)."""
    if isinstance(fn, functools.partial):
        return functools.partial(_recording(fn.func, log), *fn.args, **fn.keywords)
    if not isinstance(fn, types.FunctionType):
        return fn
    copy_ = types.FunctionType(
        fn.__code__, log.namespace, fn.__name__, fn.__defaults__, fn.__closure__
    )
    copy_.__kwdefaults__ = fn.__kwdefaults__
    return copy_


def _namespace(fn: Any) -> dict[str, Any]:
    """A private copy of `fn`'s module namespace in which the module's own functions look
    their globals up too: a recorded name called from a helper (a variant's entry point calls
    the standard one, which calls `combine`) is seen, as the child sees it in the module."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    module = getattr(fn, "__globals__", None)
    if module is None:
        return {}
    copy_ = dict(module)
    for name, value in module.items():
        if isinstance(value, types.FunctionType) and value.__globals__ is module:
            g = types.FunctionType(
                value.__code__, copy_, value.__name__, value.__defaults__, value.__closure__
            )
            g.__kwdefaults__ = value.__kwdefaults__
            copy_[name] = g
    return copy_


def _run(
    fn: Any,
    args: tuple,
    kwargs: dict[str, Any],
    grad_wrt: tuple[int, ...],
    grad_output: Any,
    record: tuple[str, ...] = (),
    layouts: dict[Any, str] | None = None,
) -> Outcome:
    """Call like the candidate's child does: inputs in the `layouts` asked for, outputs
    detached, gradients w.r.t. `grad_wrt`, in-place changes to the arguments reported, the
    calls of `record`'s names recorded;
    exceptions become CandidateRaised."""
    args_l, kwargs_l = list(clone_tree(args)), clone_tree(kwargs)
    apply_layouts(args_l, kwargs_l, normal_layouts(layouts))
    pristine = clone_tree((args_l, kwargs_l))
    log = CallLog(_namespace(fn) if record else {}, record)
    if record:
        fn = _recording(fn, log)
    t0, c0 = time.perf_counter(), time.process_time()
    with log, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            grads = None
            if grad_wrt:
                for i in grad_wrt:
                    args_l[i] = args_l[i].detach().clone().requires_grad_(True)
                out = fn(*args_l, **kwargs_l)
                backward(out[0] if isinstance(out, tuple | list) else out, grad_output)
                grads = tuple(args_l[i].grad for i in grad_wrt)
            else:
                with torch.no_grad():
                    out = fn(*args_l, **kwargs_l)
        except Exception as exc:  # noqa: BLE001 - the code raising is what the grader sees
            raise _raised(exc) from None
    trace = {}
    if "attnkata.checker.triton_support" in sys.modules:  # a Triton kata's mutant ran
        from attnkata.checker import triton_support

        report = triton_support.take_report()
        if report is not None:
            trace["triton"] = report
    value = out.detach() if isinstance(out, torch.Tensor) else out
    mutated = (
        []
        if grad_wrt
        else [
            f"argument {i}"
            for i, (b, a) in enumerate(zip(pristine[0], args_l, strict=True))
            if not unchanged(b, a)
        ]
    )
    return Outcome(
        value=value,
        grads=grads,
        mutated=mutated,
        trace=trace,
        seconds=time.perf_counter() - t0,
        cpu=time.process_time() - c0,
        calls=log.calls,
    )


class LocalModule(RemoteModule):
    """A module instance of trusted code in this process, with RemoteModule's API."""

    def __init__(
        self, candidate: LocalCandidate, handle: int, module: torch.nn.Module, name: str
    ) -> None:
        super().__init__(candidate, handle, candidate.generation, _structure(module), name)  # type: ignore[arg-type]
        self.module = module.eval()
        self.local = candidate

    def to(self, dtype: Any) -> LocalModule:
        self.local._served(
            {"op": "to", "handle": self.handle, "dtype": dtype}, lambda: self.module.to(dtype)
        )
        return self

    def load_state(self, state: dict[str, Any]) -> None:
        def load() -> None:
            own = dict(self.module.named_parameters()) | dict(self.module.named_buffers())
            with torch.no_grad():
                for name, value in state.items():
                    own[name].copy_(value)

        self.local._served({"op": "load_state", "handle": self.handle, "state": state}, load)

    def call(
        self,
        args: tuple = (),
        kwargs: dict[str, Any] | None = None,
        *,
        grad_wrt: tuple[int, ...] = (),
        grad_output: Any = None,
        method: str | None = None,
    ) -> Outcome:
        fn = getattr(self.module, method) if method else self.module
        req = {
            "op": "call",
            "method": method,
            "args": tuple(args),
            "kwargs": kwargs or {},
            "grad_wrt": grad_wrt,
            "grad_output": grad_output,
            "handle": self.handle,
        }
        return self.local._served(
            req, lambda: _run(fn, tuple(args), kwargs or {}, grad_wrt, grad_output)
        )

    def submit(
        self,
        args: tuple = (),
        kwargs: dict[str, Any] | None = None,
        *,  # type: ignore[override]
        grad_wrt: tuple[int, ...] = (),
        grad_output: Any = None,
        method: str | None = None,
    ) -> Ready:
        return Ready(
            lambda: self.call(
                args, kwargs, grad_wrt=grad_wrt, grad_output=grad_output, method=method
            )
        )


class LocalCandidate:
    """Trusted code with `proxy.Candidate`'s API: the entry points of `variant` first, then of
    `namespace` (a mutant over the reference; or the reference itself). `record`, when given,
    is called with every request and its reply (a failure as {"ok": False, ...})."""

    def __init__(
        self,
        namespace: Any,
        variant: dict[str, Any] | None = None,
        *,
        record: Recorder | None = None,
        path: Path | None = None,
    ) -> None:
        self.namespace, self.variant, self.record = namespace, variant or {}, record
        self.path = path
        self.generation = 1
        self.limits = Limits()
        self.load_error: CandidateFailure | None = None
        self.load_banned: list[str] = []
        self.handles = 0

    def _get(self, name: str) -> Any:
        return self.variant.get(name) or getattr(self.namespace, name)

    def has(self, name: str) -> bool:
        return name in self.variant or hasattr(self.namespace, name)

    def _served(self, req: dict[str, Any], work: Callable[[], Any]) -> Any:
        """Run `work` for request `req`, telling the recorder of both."""
        try:
            result = work()
        except CandidateFailure as exc:
            if self.record is not None:
                self.record(
                    req,
                    {
                        "ok": False,
                        "kind": "exception",
                        "type": exc.exc_type,
                        "message": exc.exc_message,
                    },
                )
            raise
        if self.record is not None:
            reply: dict[str, Any] = {"ok": True}
            if isinstance(result, Outcome):
                reply.update(value=result.value, grads=result.grads)
            elif isinstance(result, LocalModule):
                reply.update(handle=result.handle)
            self.record(req, reply)
        return result

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
        """(`memory_mb` is the sandbox's; trusted code runs without it.)"""
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
        return self._served(
            req,
            lambda: _run(
                self._get(name),
                tuple(args),
                kwargs or {},
                grad_wrt,
                grad_output,
                record,
                layouts,
            ),
        )

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
    ) -> Ready:
        return Ready(
            lambda: self.call(
                name,
                args,
                kwargs,
                grad_wrt=grad_wrt,
                grad_output=grad_output,
                record=record,
                layouts=layouts,
            )
        )

    def new(
        self, name: str, args: tuple = (), kwargs: dict[str, Any] | None = None, dtype: Any = None
    ) -> LocalModule:
        req: dict[str, Any] = {
            "op": "new",
            "name": name,
            "args": tuple(args),
            "kwargs": kwargs or {},
        }
        if dtype is not None:
            req["dtype"] = dtype

        def build() -> LocalModule:
            try:
                module = self._get(name)(*copy.deepcopy(args), **copy.deepcopy(kwargs or {}))
            except Exception as exc:  # noqa: BLE001 - the code raising is what the grader sees
                raise _raised(exc) from None
            if dtype is not None:
                module.to(dtype)
            self.handles += 1
            return LocalModule(self, self.handles, module, name)

        return self._served(req, build)

    def new_later(
        self, name: str, args: tuple = (), kwargs: dict[str, Any] | None = None, dtype: Any = None
    ) -> Ready:
        return Ready(lambda: self.new(name, args, kwargs, dtype))  # type: ignore[arg-type,return-value]

    def close(self) -> None:
        return None
