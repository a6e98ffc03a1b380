"""Triton in the grading process: the Triton katas' references and mutants run in Triton's
interpreter here, exactly as candidates' kernels run in their sandbox (checker/sandbox/).

`TRITON_INTERPRET` is read when `@triton.jit` decorates a function (and when
`triton.language` is first imported: its own helpers are jitted then), so the env var is
only set while triton and our modules are imported, and restored afterwards: a process that
imports attnkata (a notebook) keeps compiling its own kernels for its GPU. The guard of
checker/sandbox/triton_guard.py (guard bands, address tracing, NaN-filled outputs, the GPU's
`tl.dot` sizes) is installed for our kernels as it is in the candidate's process, so a mutant
that reads past a tensor reads the same sentinels as the candidate's code did.

The graders never need this: their oracles are dense PyTorch. Only the diagnosis runs
Triton code here; in a process that imported triton for a GPU first, it cannot (and says so).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any, TypeVar

from attnkata.checker.sandbox.triton_guard import install, interpreter_usable, interpreting

F = TypeVar("F", bound=Callable[..., Any])


def available() -> bool:
    """Is triton installed (the `attnkata[triton]` extra)? Found without importing it: an
    import here, before the interpreter is asked for, would make it unusable."""
    import importlib.util

    try:
        return importlib.util.find_spec("triton") is not None
    except (ImportError, ValueError):
        return False


class InterpreterUnavailable(RuntimeError):
    """triton was imported in this process without TRITON_INTERPRET=1 (for a GPU)."""


def load() -> tuple[ModuleType, ModuleType]:
    """(triton, triton.language), imported for the interpreter."""
    if not interpreter_usable():
        raise InterpreterUnavailable(
            "triton was imported in this process for a GPU before attnkata needed its "
            "interpreter: the Triton katas' diagnosis runs in a fresh process (kata check)"
        )
    with interpreting():
        import triton
        import triton.language as tl
    install()
    return triton, tl


def import_interpreted(name: str) -> ModuleType:
    """`importlib.import_module(name)` with its kernels interpreted (imported again if
    something imported it before without the interpreter)."""
    load()
    from triton.runtime.jit import JITFunction

    with interpreting():
        module = importlib.import_module(name)
        if any(isinstance(v, JITFunction) for v in vars(module).values()):
            module = importlib.reload(module)
    return module


def jit(fn: F) -> F:
    """`triton.jit`, always interpreted: for the mutants modules' kernels."""
    triton, _ = load()
    with interpreting():
        return triton.jit(fn)  # type: ignore[no-any-return]


@contextlib.contextmanager
def guarded(args: list[Any], kwargs: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """One call of our own kernels under the guard (outputs start as NaN, bands around every
    tensor), as the candidate's call went. Yields the guard's report."""
    from attnkata.checker.sandbox import triton_guard

    load()
    with triton_guard.call(triton_guard.input_labels(args, kwargs)) as report:
        yield report
