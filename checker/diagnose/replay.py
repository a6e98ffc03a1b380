"""Which of the candidate's failing tests a catalogued mistake explains: the kata's grader is
run again, on those tests only, against the mistake's mutant served in this process through
the candidate API (mutants are ours and trusted: no child process needed).

A mistake explains a failing test when its mutant fails that test too. With two mistakes
found, each gets its own count ("explains 14 of 16 failing tests").
"""

from __future__ import annotations

import copy
import time
import warnings
from pathlib import Path
from typing import Any

import torch

from attnkata.checker.catalog import Kata
from attnkata.checker.compare import clone_tree, unchanged
from attnkata.checker.messages import phrase
from attnkata.checker.models import PASS, SKIP, TestResult
from attnkata.checker.proxy import CandidateRaised, Limits, Outcome, Ready, RemoteModule
from attnkata.checker.sandbox.autograd import backward


def _raised(exc: Exception) -> CandidateRaised:
    return CandidateRaised(phrase("fail_raised", type=type(exc).__name__, detail=str(exc), doing="a mutant", where=""),
                           exc_type=type(exc).__name__, exc_message=str(exc))


def _run(fn: Any, args: tuple, kwargs: dict[str, Any], grad_wrt: tuple[int, ...], grad_output: Any) -> Outcome:
    """Call like the candidate's child does: outputs detached, gradients w.r.t. `grad_wrt`,
    in-place changes to the arguments reported; exceptions become CandidateRaised."""
    args_l, kwargs_l = list(clone_tree(args)), clone_tree(kwargs)
    pristine = clone_tree((args_l, kwargs_l))
    t0 = time.perf_counter()
    with warnings.catch_warnings():
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
        except Exception as exc:  # noqa: BLE001 - the mutant raising is what the grader sees
            raise _raised(exc) from None
    value = out.detach() if isinstance(out, torch.Tensor) else out
    mutated = [] if grad_wrt else [f"argument {i}" for i, (b, a) in enumerate(zip(pristine[0], args_l, strict=True))
                                   if not unchanged(b, a)]
    return Outcome(value=value, grads=grads, mutated=mutated, seconds=time.perf_counter() - t0)


class LocalModule(RemoteModule):
    """A mutant module instance in this process, with RemoteModule's API."""

    def __init__(self, candidate: LocalCandidate, module: torch.nn.Module) -> None:
        from attnkata.checker.sandbox.child import _structure

        super().__init__(candidate, 0, candidate.generation, _structure(module))  # type: ignore[arg-type]
        self.module = module.eval()

    def to(self, dtype: Any) -> LocalModule:
        self.module.to(dtype)
        return self

    def load_state(self, state: dict[str, Any]) -> None:
        own = dict(self.module.named_parameters()) | dict(self.module.named_buffers())
        with torch.no_grad():
            for name, value in state.items():
                own[name].copy_(value)

    def call(self, args: tuple = (), kwargs: dict[str, Any] | None = None, *,
             grad_wrt: tuple[int, ...] = (), grad_output: Any = None, method: str | None = None) -> Outcome:
        fn = getattr(self.module, method) if method else self.module
        return _run(fn, tuple(args), kwargs or {}, grad_wrt, grad_output)

    def submit(self, args: tuple = (), kwargs: dict[str, Any] | None = None, *,  # type: ignore[override]
               grad_wrt: tuple[int, ...] = (), grad_output: Any = None, method: str | None = None) -> Ready:
        return Ready(lambda: self.call(args, kwargs, grad_wrt=grad_wrt, grad_output=grad_output, method=method))


class LocalCandidate:
    """A mutant ({entry point: variant}, the reference for the other names) with the API of
    `proxy.Candidate` that graders use."""

    def __init__(self, variant: dict[str, Any], reference: Any) -> None:
        self.variant, self.reference = variant, reference
        self.generation = 1
        self.limits = Limits()
        self.load_error = None
        self.load_banned: list[str] = []

    def _get(self, name: str) -> Any:
        return self.variant.get(name) or getattr(self.reference, name)

    def has(self, name: str) -> bool:
        return name in self.variant or hasattr(self.reference, name)

    def call(self, name: str, args: tuple = (), kwargs: dict[str, Any] | None = None, *,
             grad_wrt: tuple[int, ...] = (), grad_output: Any = None, memory_mb: int | None = None) -> Outcome:
        return _run(self._get(name), tuple(args), kwargs or {}, grad_wrt, grad_output)

    def submit(self, name: str, args: tuple = (), kwargs: dict[str, Any] | None = None, *,
               grad_wrt: tuple[int, ...] = (), grad_output: Any = None) -> Ready:
        return Ready(lambda: self.call(name, args, kwargs, grad_wrt=grad_wrt, grad_output=grad_output))

    def new(self, name: str, args: tuple = (), kwargs: dict[str, Any] | None = None,
            dtype: Any = None) -> LocalModule:
        try:
            module = self._get(name)(*copy.deepcopy(args), **copy.deepcopy(kwargs or {}))
        except Exception as exc:  # noqa: BLE001 - the mutant raising is what the grader sees
            raise _raised(exc) from None
        local = LocalModule(self, module)
        return local.to(dtype) if dtype is not None else local

    def new_later(self, name: str, args: tuple = (), kwargs: dict[str, Any] | None = None,
                  dtype: Any = None) -> Ready:
        return Ready(lambda: self.new(name, args, kwargs, dtype))  # type: ignore[arg-type,return-value]


def failing_tests(kata: Kata, path: Path, variant: dict[str, Any], reference: Any, tests: list[str]) -> set[str] | None:
    """Which of `tests` (ids as in TestResult) the mutant fails; None when the grader could
    not be run that way."""
    import pytest

    from attnkata.checker import driver

    if not tests:
        return set()
    nodes = [f"{kata.grader_path}::test_{t}" for t in tests]
    code, collector, _ = driver.run(kata, path, LocalCandidate(variant, reference), nodes=nodes)
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) or collector.collect_errors:
        return None
    return {r.id for r in collector.results if r.status not in (PASS, SKIP)}


def failing_ids(results: list[TestResult]) -> list[str]:
    return [t.id for t in results if t.status not in (PASS, SKIP)]
