"""Seeded inputs and call-and-compare helpers shared by the graders (and diagnosis probes).

Every input is built from an explicit seed so diagnosis can replay it. Every check also
mixes a secret salt into the graders' random values (`salted`, set by the runner): a file
that stores the expected outputs of the published seeds (a lookup table instead of
attention) meets inputs it cannot know. Masks, shapes and block layouts stay as the tests
chose them; only the random values (`randn`) move. The salt never reaches the candidate's
process, and the result records it: `kata check --seed N` grades with the same inputs again
(bug reports, regrades). A practice check draws a fresh one; a problem set keeps one secret
salt of its own (its manifest), so every student meets the same inputs and a regrade gives
the same grade; `ATTNKATA_INPUT_SALT` fixes it for a whole session (tests, benchmarks;
0 = the seeds as written).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch

from attnkata.checker.compare import (
    assert_close,
    assert_close_parts,
    assert_no_mutation,
    jittered,
)
from attnkata.checker.proxy import Candidate, CandidateMemory, CandidateRaised, Outcome
from attnkata.checker.sandbox.autograd import backward
from attnkata.checker.seeds import secret_salt

_salt = 0  # the running check's; 0 outside a check and in the diagnosis' own probes


def new_salt(seed: int | None = None) -> int:
    """A check's salt: `seed` when the caller gives one (`kata check --seed`, a set's own),
    else ATTNKATA_INPUT_SALT when set (a number, or a secret word), else a fresh secret draw."""
    if seed is not None:
        return int(seed)
    value = os.environ.get("ATTNKATA_INPUT_SALT", "").strip()
    if not value:
        return secret_salt()
    try:
        return int(value)
    except ValueError:
        return int.from_bytes(value.encode()[:16], "big")


@contextlib.contextmanager
def salted(salt: int) -> Iterator[None]:
    """Inside the block, `randn` mixes `salt` into every seed (0: the seeds as written)."""
    global _salt
    old, _salt = _salt, salt
    try:
        yield
    finally:
        _salt = old


def randn(
    *shape: int, seed: int, dtype: torch.dtype = torch.float64, scale: float = 1.0
) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed if not _salt else (seed * 1_000_003 + _salt) % (1 << 62))
    return torch.randn(*shape, generator=g, dtype=torch.float64).mul_(scale).to(dtype)


def random_mask(*shape: int, seed: int, p: float = 0.6) -> torch.Tensor:
    """Bool mask with P(True) = p; every row keeps at least one True (its last key)."""
    g = torch.Generator().manual_seed(seed)
    m = torch.rand(*shape, generator=g) < p
    m[..., -1] = True
    return m


def causal(L: int, S: int | None = None) -> torch.Tensor:
    """Bottom-right aligned causal mask (L, S): query i (at S - L + i) may attend key j <= S - L + i."""
    S = L if S is None else S
    return torch.ones(L, S, dtype=torch.bool).tril(diagonal=S - L)


def cast(x: Any, dtype: torch.dtype) -> Any:
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.to(dtype)
    if isinstance(x, np.ndarray) and x.dtype.kind == "f":
        return x.astype(torch.empty(0, dtype=dtype).numpy().dtype)
    if isinstance(x, tuple | list):  # e.g. a KV cache (k, v)
        return type(x)(cast(v, dtype) for v in x)
    return x


def to_numpy(x: Any) -> Any:
    return x.numpy() if isinstance(x, torch.Tensor) else x


def check_call(
    solution: Candidate,
    name: str,
    reference: Callable[..., Any],
    args: tuple,
    kwargs: dict[str, Any] | None = None,
    *,
    case: str,
    dtype: torch.dtype = torch.float64,
    names: tuple[str, ...] | None = None,
    layouts: dict[Any, str] | None = None,
) -> Outcome:
    """Call the candidate and the reference on the same inputs in `dtype` and compare.

    The reference always runs in float64 (the truth) and, for other dtypes, once more in
    `dtype` (the error budget of a plain implementation in that precision). `names`: the
    reference returns a tuple with these parts (e.g. ("out", "lse")), compared one by one.
    `layouts`: inputs the candidate gets as strided views (checker/sandbox/layouts.py)."""
    kwargs = kwargs or {}
    a64 = tuple(cast(x, torch.float64) for x in args)
    k64 = {k: cast(v, torch.float64) for k, v in kwargs.items()}
    a = tuple(cast(x, dtype) for x in args)
    kw = {k: cast(v, dtype) for k, v in kwargs.items()}
    with solution.submit(name, a, kw, **({"layouts": layouts} if layouts else {})) as pending:
        # (the reference runs while the candidate does)
        expected = reference(*a64, **k64)
        baseline = spread = None
        floor = 0.0
        if dtype != torch.float64:
            baseline = reference(*a, **kw)
            spread = reference(*jittered(a64), **jittered(k64))
            floor = softmax_floor(a64, dtype)
    outcome = pending.result()
    assert_no_mutation(outcome, case=case)
    if names is not None:
        assert_close_parts(
            outcome.value,
            expected,
            case=case,
            names=names,
            baseline=baseline,
            spread=spread,
            floors=(floor,),  # the output; an lse keeps its relative tolerance
        )
    else:
        assert_close(
            outcome.value, expected, case=case, baseline=baseline, spread=spread, floor=floor
        )
    return outcome


def softmax_floor(args: tuple, dtype: torch.dtype) -> float:
    """For (q, k, v, ...) inputs: the error any correct `dtype` formula may make in an
    attention output, 4 eps |s|max |v|max. A logit s, or a log-sum-exp merged in the log
    domain, of size |s| is stored to eps |s| (1.5e-3 at 1e4 in float32), which moves a softmax
    weight by that much relatively; a plain implementation that rounds elsewhere can be far
    luckier on a given input. 0 for other inputs."""
    if len(args) < 3 or not all(
        isinstance(t, torch.Tensor) and t.is_floating_point() and t.dim() >= 2 for t in args[:3]
    ):
        return 0.0
    q, k, v = args[:3]
    if q.shape[-1] != k.shape[-1]:
        return 0.0
    try:
        s = float((q @ k.transpose(-2, -1)).abs().max()) / math.sqrt(q.shape[-1])
    except RuntimeError:  # not attention-shaped after all
        return 0.0
    return 4 * torch.finfo(dtype).eps * s * float(v.abs().max())


def expect_value_error(solution: Candidate, name: str, args: tuple, *, call: str, why: str) -> None:
    """The candidate's `name(*args)` must raise ValueError. `call` is how the message writes
    the call (e.g. "alibi_slopes(0)"), `why` the reason the contract gives."""
    try:
        out = solution.call(name, args)
    except CandidateRaised as exc:
        if exc.exc_type != "ValueError":
            raise AssertionError(
                f"{call} must raise ValueError ({why}); yours raised {exc.exc_type}: "
                f"{exc.exc_message[:200]}"
            ) from None
        return
    raise AssertionError(
        f"{call} must raise ValueError ({why}); yours returned {out.value.__class__.__name__}"
    )


def check_grads(
    solution: Candidate,
    name: str,
    reference: Callable[..., Any],
    args: tuple,
    kwargs: dict[str, Any] | None = None,
    *,
    wrt: tuple[int, ...],
    grad_output: torch.Tensor,
    case: str,
    names: str = "qkv",
) -> Outcome:
    """Backpropagate `grad_output` through candidate and reference; compare the input gradients."""
    kwargs = kwargs or {}
    with solution.submit(name, args, kwargs, grad_wrt=wrt, grad_output=grad_output) as pending:
        leaves = [
            a.detach().clone().requires_grad_(i in wrt) if isinstance(a, torch.Tensor) else a
            for i, a in enumerate(args)
        ]
        backward(reference(*leaves, **kwargs), grad_output)
    outcome = pending.result()
    for pos, got in zip(wrt, outcome.grads, strict=True):
        label = names[pos] if pos < len(names) else f"argument {pos}"
        if got is None:
            raise AssertionError(
                f"{case}: no gradient reached {label}: the output does not depend on it "
                "through differentiable ops (detach, .data or in-place writes?)"
            )
        assert_close(got, leaves[pos].grad, case=case, what=f"gradient w.r.t. {label}")
    return outcome


def call_within_memory(
    solution: Candidate,
    name: str,
    args: tuple,
    kwargs: dict[str, Any] | None = None,
    *,
    dense_bytes: int,
    fraction: float = 0.5,
    case: str,
    advice: str,
    dense_what: str = "one dense (L, S) float32 matrix",
) -> Outcome:
    """The `efficient` tiers' call: made in a process whose memory may grow by at most
    `fraction` of `dense_bytes` (what one dense (L, S) float32 score matrix of the call's sizes
    takes), a limit the kernel enforces (Candidate.call's `memory_mb`). Code that builds the
    dense matrix fails at once on allocating it, whatever the machine's load and whatever its
    own process reports; the references need a fraction of the allowance (bench/efficient_memory.py).
    `dense_what` says in the message what `dense_bytes` measures."""
    cap_mb = max(1, int(dense_bytes * fraction) >> 20)
    try:
        return solution.call(name, args, kwargs, memory_mb=cap_mb)
    except CandidateMemory as exc:
        # Where it ran out, from its own report: only words for the message, never the verdict.
        asked = re.search(r"allocate (\d+) bytes", exc.exc_message)
        where = "".join(
            (
                f" asking for {int(asked.group(1)) >> 20:,} MiB" if asked else "",
                f" at line {exc.frames[-1]['line']}" if exc.frames else "",
            )
        )
        raise AssertionError(
            f"{case}: your code ran out of the memory this test allows{where}: {cap_mb} MiB beyond its inputs, "
            f"while {dense_what} of these sizes takes {dense_bytes >> 20} MiB (the limit is "
            f"enforced by the operating system; how long the call takes plays no part). {advice}"
        ) from None


def assert_largest_below(
    outcome: Outcome, limit: int, *, case: str, advice: str, limit_name: str = ""
) -> None:
    """The `efficient` tiers' memory rule: no tensor the call allocated (views do not count)
    has `limit` elements or more; the message names the tensor, the op and the limit
    (`limit_name`, e.g. "L*S/8", says how the limit follows from the sizes)."""
    largest = outcome.trace.get("largest") or {}
    n = int(largest.get("elements", 0))
    if n >= limit:
        named = f"{limit_name} = " if limit_name else ""
        raise AssertionError(
            f"{case}: your code allocated a tensor of {n:,} elements (shape {tuple(largest.get('shape', ()))}, "
            f"{largest.get('dtype', '?')}, made by {largest.get('op', '?')}); the limit is {named}{limit:,}. {advice}"
        )


def block_table(
    lengths: list[int],
    block_size: int,
    max_blocks: int,
    num_blocks: int,
    *,
    seed: int,
    shared: int = 0,
) -> torch.Tensor:
    """(B, max_blocks) int64 block table of a paged KV cache (vLLM): sequence b's
    ceil(lengths[b] / block_size) blocks are distinct physical blocks drawn at random from
    the pool, none at its own logical index (so reading block i for logical block i shows);
    the padding after them holds random valid ids of unrelated blocks. `shared` > 0: sequence
    1 starts with sequence 0's first `shared` blocks (prefix caching)."""
    g = torch.Generator().manual_seed(seed)
    used = [-(-n // block_size) for n in lengths]
    for _ in range(100):
        pool = torch.randperm(num_blocks, generator=g).tolist()
        table = torch.randint(0, num_blocks, (len(lengths), max_blocks), generator=g)
        for b, nb in enumerate(used):
            fresh = nb - shared if b == 1 and shared else nb
            ids = (table[0, :shared].tolist() if b == 1 and shared else []) + pool[:fresh]
            del pool[:fresh]
            table[b, :nb] = torch.tensor(ids, dtype=torch.int64)
        logical = torch.arange(max_blocks).expand_as(table)
        in_use = logical < torch.tensor(used).unsqueeze(1)
        if not (in_use & (table == logical)).any():
            return table
    raise ValueError("no block table without fixed points for these sizes")


# The Triton katas: the math is the kernel's. PyTorch ops that compute it instead (the
# wrapper may allocate, view and launch; a "kernel" that only copies a torch result is not one).
TORCH_MATH_OPS = (
    "softmax",
    "_softmax",
    "log_softmax",
    "_log_softmax",
    "exp",
    "exp_",
    "logsumexp",
    "bmm",
    "mm",
    "matmul",
    "baddbmm",
    "addmm",
    "einsum",
    "amax",
    "max",
)


def assert_triton_kernel(outcome: Outcome, *, case: str) -> None:
    """The Triton katas' rules for every call: a `@triton.jit` kernel ran and did the math
    (not PyTorch), and no kernel read or wrote outside its tensors (the sandbox's guard bands
    and address trace, checker/sandbox/triton_guard.py). The message names the line."""
    report = outcome.trace.get("triton") or {}
    if not report.get("launches"):
        raise AssertionError(
            f"{case}: no Triton kernel ran: write the computation as a @triton.jit kernel and "
            "launch it from your function (kernel[grid](...))"
        )
    ops = [op.split("::")[-1].split(".")[0] for op in outcome.trace.get("ops", {})]
    used = sorted({op for op in ops if op in TORCH_MATH_OPS})
    if used:
        raise AssertionError(
            f"{case}: PyTorch computed part of the result ({', '.join(used)}): the kernel must "
            "do the math; the Python wrapper only allocates the outputs and launches it"
        )
    for e in report.get("outside", []):
        where = f" at line {e['line']}" if e.get("line") else ""
        tensor = e.get("tensor") or "?"
        label = f" ({e['label']})" if e.get("label") else ""
        side = {
            "after": "past the end of",
            "before": "before the start of",
            "gap": "between the elements (in the padding) of",
            "outside": "outside every tensor of the launch, not even near",
        }.get(e.get("region", ""), "outside")
        verb = "read" if e.get("op") == "load" else "wrote"
        how = "" if e.get("masked", True) else f" (a tl.{e.get('op', 'load')} without a mask)"
        raise AssertionError(
            f"{case}: your kernel {verb} {e.get('lanes', 0)} lane(s) {side} `{tensor}`{label}"
            f"{where}{how}, first in program {tuple(e.get('program') or ())}; on a GPU that is "
            "undefined behaviour (garbage, a fault, or another tensor overwritten). Mask every "
            f"tl.{e.get('op', 'load')} with the tensor's bounds"
        )
