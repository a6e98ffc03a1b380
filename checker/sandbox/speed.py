"""The `speed` tier's clock: a call timed on a CUDA GPU with CUDA events, after warm-up, with
the L2 cache flushed before every repetition, repeated until the mean is stable.

Used on both sides: the candidate's process (checker/sandbox/child.py, the "speed" request of
a process whose Triton kernels are compiled for the GPU) times the candidate's function, and
the grading process times the baseline (PyTorch's SDPA, torch.softmax) the same way on the
same GPU. Informative only: what the candidate's process reports about its own time is its
word, and no verdict depends on it.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from typing import Any

FLUSH_BYTES = 256 << 20  # more than any GPU's L2 (H100: 50 MiB)
WARMUP = 3  # calls before timing: the first compiles the kernel, the next settle clocks
MIN_REPS, MAX_REPS = 10, 500
MAX_SECONDS = 5.0
STABLE = 0.01  # stop once the standard error of the mean is within 1% of the mean


def time_cuda(fn: Callable[[], Any]) -> dict[str, float]:
    """Milliseconds per call of `fn` on the current CUDA device: {"ms", "median_ms",
    "sem_ms", "reps"}. Each repetition flushes L2 (zeroing a buffer larger than it) outside
    the timed events, then times one call between two events."""
    import torch

    flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    times: list[float] = []
    t0 = time.perf_counter()
    while len(times) < MAX_REPS:
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
        if len(times) >= MIN_REPS:
            mean = statistics.fmean(times)
            sem = statistics.stdev(times) / math.sqrt(len(times))
            if sem <= STABLE * mean or time.perf_counter() - t0 > MAX_SECONDS:
                break
    mean = statistics.fmean(times)
    return {
        "ms": mean,
        "median_ms": statistics.median(times),
        "sem_ms": statistics.stdev(times) / math.sqrt(len(times)) if len(times) > 1 else 0.0,
        "reps": float(len(times)),
    }


def to_device(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, tuple | list):
        return type(value)(to_device(v, device) for v in value)
    return value


def measure(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The candidate's side: its function on the inputs moved to the GPU, called once for its
    output (returned on the CPU, for the grader to check), then timed."""
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device in this process")
    args_d, kwargs_d = to_device(list(args), "cuda"), to_device(dict(kwargs), "cuda")
    value = fn(*args_d, **kwargs_d)
    torch.cuda.synchronize()
    timing = time_cuda(lambda: fn(*args_d, **kwargs_d))
    return {"value": to_device(value, "cpu"), **timing}
