"""The Triton katas' `speed` tier: on a CUDA GPU, the candidate's kernel (compiled for the GPU
in a sandboxed process of its own, not interpreted) against a PyTorch baseline on the same
shapes and dtype, both timed by checker/sandbox/speed.py. Informative, never required: the
test passes with the speed-up and the achieved TFLOP/s as its message, which the runner keeps
in the result (`timings["speed_*"]`) and the history as the kata's best time. Without a GPU it
is skipped: "not run: no CUDA device".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
import torch

from attnkata.checker.proxy import Candidate
from attnkata.checker.sandbox.speed import time_cuda, to_device

SPEED_PROPERTY = "attnkata-speed"
COMPILE_TIMEOUT = 180.0  # a first Triton compile (ptxas) on a cold cache, plus CUDA's start


def no_gpu_reason() -> str | None:
    """Why the tier cannot run here, or None."""
    return None if torch.cuda.is_available() else "not run: no CUDA device"


def require_gpu() -> None:
    """Skip the test (before it builds its large inputs) where the tier cannot run."""
    reason = no_gpu_reason()
    if reason:
        pytest.skip(reason)


def speed_test(
    request: pytest.FixtureRequest,
    solution: Any,
    name: str,
    args: tuple,
    kwargs: dict[str, Any],
    *,
    baseline: Callable[..., Any],
    baseline_name: str,
    flops: float,
    check: Callable[[Any], None],
) -> dict[str, float]:
    """Time `name(*args, **kwargs)` against `baseline(*args, **kwargs)` on the GPU. `check`
    judges the GPU output (on the CPU) first: a wrong kernel's time means nothing. `flops`:
    the useful floating-point operations of one call, for TFLOP/s."""
    require_gpu()
    if not isinstance(solution, Candidate):
        pytest.skip("not run: the speed tier times the candidate's own sandboxed process")
    limits = replace(
        solution.limits,
        call_timeout=max(solution.limits.call_timeout, COMPILE_TIMEOUT),
        total_timeout=max(solution.limits.total_timeout, 2 * COMPILE_TIMEOUT),
        memory_mb=16384,  # the cgroup's: CUDA's host-side memory, Triton's compiler
        address_space=False,  # CUDA reserves far more address space than it uses
    )
    with Candidate(solution.path, limits, source=solution.source, native=True) as native:
        native.start()
        if native.load_error is not None:
            raise native.load_error
        got = native.speed(name, args, kwargs)
    check(got["value"])
    args_d, kwargs_d = to_device(list(args), "cuda"), to_device(dict(kwargs), "cuda")
    base = time_cuda(lambda: baseline(*args_d, **kwargs_d))
    result = {
        "speed_ms": round(got["ms"], 5),
        "speed_baseline_ms": round(base["ms"], 5),
        "speed_speedup": round(base["ms"] / got["ms"], 3) if got["ms"] > 0 else 0.0,
        "speed_tflops": round(flops / (got["ms"] * 1e-3) / 1e12, 2) if got["ms"] > 0 else 0.0,
    }
    note = (
        f"{got['ms']:.3f} ms (±{got['sem_ms']:.3f}, {int(got['reps'])} runs) against "
        f"{baseline_name} {base['ms']:.3f} ms: {result['speed_speedup']:.2f}x, "
        f"{result['speed_tflops']:.1f} TFLOP/s on {torch.cuda.get_device_name()}"
    )
    request.node.user_properties.append((SPEED_PROPERTY, {**result, "note": note}))
    return result
