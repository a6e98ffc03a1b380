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
import functools
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


# -- the mutants' outputs, kept between processes ------------------------------------------
# A Triton kata's diagnosis runs ~20 variants on ~10 probes in the interpreter (~0.1 s a
# launch): ~10 s, the first time. Their outputs are deterministic, so they are kept in the
# data dir (beside the summaries cache), keyed by the inputs, the variant and the code that
# computes them, and loaded as plain tensors (torch.load(weights_only=True)).
_CODE_KEY: dict[str, str] = {}


def _code_key(module: ModuleType) -> str:
    name = module.__name__
    if name not in _CODE_KEY:
        import hashlib
        from pathlib import Path

        import triton

        from attnkata.checker.sandbox import triton_guard

        h = hashlib.sha256(triton.__version__.encode())
        for path in (module.__file__, triton_guard.__file__, __file__):
            h.update(Path(str(path)).read_bytes())
        _CODE_KEY[name] = h.hexdigest()[:16]
    return _CODE_KEY[name]


def _call_key(tag: str, args: tuple, kwargs: dict[str, Any]) -> str:
    import hashlib

    import torch

    h = hashlib.sha256(tag.encode())

    def feed(value: Any) -> None:
        if isinstance(value, torch.Tensor):
            t = value.detach()
            h.update(f"T{t.dtype}{tuple(t.shape)}{t.stride()}{t.storage_offset()}".encode())
            h.update(t.contiguous().view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        elif isinstance(value, tuple | list):
            h.update(f"[{len(value)}".encode())
            for v in value:
                feed(v)
        else:
            h.update(repr(value).encode())

    feed(args)
    feed(sorted(kwargs.items()))
    return h.hexdigest()[:32]


_last_report: dict[str, Any] | None = None


def take_report() -> dict[str, Any] | None:
    """The guard's report of the last `mutant` call (once): what a replay of the grader
    against a mutant (checker/local.py) puts in the call's trace, as the child does."""
    global _last_report
    report, _last_report = _last_report, None
    return report


def mutant(fn: Callable[..., Any], module: ModuleType, tag: str) -> Callable[..., Any]:
    """`fn` (a variant or the reference of a Triton kata's mutants `module`) as the diagnosis
    calls it: under the guard, as the candidate's function ran, and its result (with the
    guard's report, `take_report`) kept on disk (`tag` names the variant: its knobs)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        global _last_report
        key = f"{_code_key(module)}-{_call_key(tag, args, kwargs)}"
        hit = _cache_read(key)
        if hit is not None:
            _last_report = hit.get("report")
            if "error" in hit:
                kind, message = hit["error"]
                raise type(str(kind), (RuntimeError,), {})(str(message))
            return hit["value"]
        try:
            with guarded(list(args), kwargs) as report:
                value = fn(*args, **kwargs)
        except Exception as exc:
            _cache_write(key, {"error": [type(exc).__name__, str(exc)]})
            raise
        _last_report = report
        _cache_write(key, {"value": value, "report": report})
        return value

    call.keywords = getattr(fn, "keywords", {})  # type: ignore[attr-defined]
    if isinstance(fn, functools.partial) and not fn.args:
        # Composable as the other katas' variants are (diagnose/pairs.compose_one): two
        # mistakes' knobs make one variant, run under the guard and kept on disk the same way.
        call.knobs = dict(fn.keywords)  # type: ignore[attr-defined]
        call.family = (_remade, module, fn.func)  # type: ignore[attr-defined]
    return call


def _remade(module: ModuleType, func: Callable[..., Any], **knobs: Any) -> Callable[..., Any]:
    return mutant(
        functools.partial(func, **knobs), module, "variant " + repr(sorted(knobs.items()))
    )


def _cache_dir() -> Any:
    """The data dir's cache/triton-mutants, or ATTNKATA_TRITON_CACHE (the test suite shares
    one between its workers, whose data dirs are each test's own)."""
    import os
    from pathlib import Path

    from attnkata.checker.store import data_dir

    shared = os.environ.get("ATTNKATA_TRITON_CACHE")
    return Path(shared) if shared else data_dir() / "cache" / "triton-mutants"


def _cache_read(key: str) -> dict[str, Any] | None:
    import torch

    path = _cache_dir() / f"{key}.pt"
    try:
        data = torch.load(path, weights_only=True)
    except Exception:  # noqa: BLE001 - missing, damaged, another version's: compute it again
        return None
    return data if isinstance(data, dict) else None


def _cache_write(key: str, data: dict[str, Any]) -> None:
    """Best effort, written whole then renamed (a reader never sees half a file)."""
    import os

    import torch

    try:
        folder = _cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"{key}.{os.getpid()}.tmp"
        torch.save(data, tmp)
        os.replace(tmp, folder / f"{key}.pt")
    except Exception:  # noqa: BLE001 - a read-only data dir only costs the time next run
        pass
