"""Grader for the `flash-attention-triton` kata. Run directly: pytest <this folder> --solution your_file.py

The candidate's kernel runs in Triton's interpreter inside the sandbox, which checks every
load and store lane against its tensor (checker/sandbox/triton_guard.py); every call must
launch a kernel, leave the math to it, and stay inside its tensors (`assert_triton_kernel`).
(out, lse) are compared with dense attention and torch.logsumexp in float64, within a few
times the error of the same dense formula in the input's dtype; lse may be float32 or q's
dtype.

Sizes: B = 1, H = 2, L = 45, S = 77, d = 16 (neither L nor S a multiple of any block from 16
to 128), float16 with d = 32, 300 keys with d = 64 (several key blocks even for BLOCK_N =
128), transposed (B, L, H, d) and padded inputs, causal with L > S. The `speed` tier runs
only on a CUDA GPU.
"""

import math

import pytest
import torch

from attnkata.checker import triton_support
from attnkata.checker.compare import assert_close, assert_no_mutation, describe
from attnkata.checker.probes import assert_triton_kernel, causal, randn
from attnkata.checker.triton_speed import require_gpu, speed_test

# (Never `import triton` here: this process runs our own kernels in Triton's interpreter.)
pytestmark = pytest.mark.skipif(not triton_support.available(), reason="needs attnkata[triton]")

FN = "flash_attention_triton"
B, H, L, S, D = 1, 2, 45, 77, 16


def dense(q, k, v, is_causal=False, scale=None):
    """(out, lse) from the whole (L, S) score matrix: the oracle in float64, and for other
    dtypes the error budget of a plain implementation (computed in float32, rounded to q's
    dtype, as a kernel's float32 accumulators are)."""
    Lq, Sk = q.shape[-2], k.shape[-2]
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    work = torch.float64 if q.dtype == torch.float64 else torch.float32
    scores = q.to(work) @ k.to(work).transpose(-2, -1) * scale
    if is_causal:
        scores = scores.masked_fill(~causal(Lq, Sk), float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # a query with no key: out = 0
    return (weights @ v.to(work)).to(q.dtype), torch.logsumexp(scores, dim=-1).to(q.dtype)


def qkv(seed, Lq=L, Sk=S, d=D, dtype=torch.float32, heads=(B, H), scale=1.0):
    return (
        randn(*heads, Lq, d, seed=seed, dtype=dtype, scale=scale),
        randn(*heads, Sk, d, seed=seed + 1, dtype=dtype, scale=scale),
        randn(*heads, Sk, d, seed=seed + 2, dtype=dtype),
    )


def sizes(q, k, extra=""):
    (b, h, lq, d), sk = q.shape, k.shape[-2]
    dtype = str(q.dtype).removeprefix("torch.")
    return f"B={b}, H={h}, L={lq}, S={sk}, d={d}, {dtype}{extra}"


def check(solution, args, kwargs, case, layouts=None):
    """Call the candidate, then: a kernel ran inside its bounds, the inputs are unchanged,
    out and lse match dense attention in float64."""
    q = args[0]
    extra = {"layouts": layouts} if layouts else {}
    with solution.submit(FN, args, kwargs, **extra) as pending:
        expected = dense(*(t.double() for t in args), **kwargs)
        baseline = dense(*args, **kwargs)
    outcome = pending.result()
    assert_no_mutation(outcome, case=case)
    assert_triton_kernel(outcome, case=case)
    got = outcome.value
    if not isinstance(got, tuple | list) or len(got) != 2:
        raise AssertionError(f"{case}: expected a tuple (out, lse), got {describe(got)}")
    assert_close(got[0], expected[0], case=case, what="out", baseline=baseline[0])
    lse = got[1]
    # lse may be float32 whatever q's dtype: its baseline is then the float32 formula's.
    if isinstance(lse, torch.Tensor) and lse.dtype == torch.float32 and q.dtype != torch.float32:
        lse_baseline = dense(*(t.float() for t in args), **kwargs)[1]
    else:
        lse_baseline = baseline[1]
    assert_close(lse, expected[1], case=case, what="lse", baseline=lse_baseline)
    return outcome


def test_no_mask(solution):
    q, k, v = qkv(1)
    check(solution, (q, k, v), {}, f"no mask, {sizes(q, k)}")


def test_float16(solution):
    q, k, v = qkv(4, d=32, dtype=torch.float16)
    check(solution, (q, k, v), {}, f"no mask, {sizes(q, k)}")


def test_causal_kv_cache(solution):
    q, k, v = qkv(7)
    check(
        solution,
        (q, k, v),
        {"is_causal": True},
        f"is_causal=True with a KV cache (query i at p = {S - L} + i), {sizes(q, k)}",
    )


def test_causal_square(solution):
    q, k, v = qkv(10, Lq=50, Sk=50, d=32)
    check(solution, (q, k, v), {"is_causal": True}, f"is_causal=True, {sizes(q, k)}")


def test_explicit_scale(solution):
    q, k, v = qkv(13)
    check(solution, (q, k, v), {"scale": 0.3}, f"scale=0.3, {sizes(q, k)}")


def test_long_keys(solution):
    q, k, v = qkv(16, Lq=20, Sk=300, d=64, heads=(1, 1))
    check(solution, (q, k, v), {}, f"300 keys (several key blocks at any BLOCK_N), {sizes(q, k)}")


LAYOUTS = {
    "transposed": ("swap:1,2", "q, k, v laid out (B, L, H, d) and seen as (B, H, L, d)"),
    "padded": ("pad:8", "q, k, v rows padded to d + 8 elements (x.stride(2) = d + 8)"),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_strides(solution, layout):
    spec, what = LAYOUTS[layout]
    q, k, v = qkv(19, heads=(1, 2))
    check(
        solution,
        (q, k, v),
        {"is_causal": True},
        f"{what}, is_causal=True, {sizes(q, k)}",
        layouts={0: spec, 1: spec, 2: spec},
    )


@pytest.mark.tier("edge")
def test_queries_without_keys(solution):
    q, k, v = qkv(22, Lq=27, Sk=13)
    check(
        solution,
        (q, k, v),
        {"is_causal": True},
        f"is_causal=True with L > S: queries 0..13 see no key (out 0, lse -inf), {sizes(q, k)}",
    )


@pytest.mark.tier("edge")
def test_large_logits(solution):
    q, k, v = qkv(25, scale=8.0)  # |q . k| / sqrt(d) up to about 1e3
    check(
        solution,
        (q, k, v),
        {"is_causal": True},
        f"logits up to about 1e3, is_causal=True, {sizes(q, k)}",
    )


@pytest.mark.tier("edge")
def test_negative_logits(solution):
    q, k, v = qkv(28)
    q, k = q.abs() * 8.0, -k.abs() * 8.0  # every score negative, down to about -1e3
    check(solution, (q, k, v), {}, f"every scaled score between about -1e3 and -10, {sizes(q, k)}")


@pytest.mark.tier("edge")
def test_float16_causal(solution):
    q, k, v = qkv(31, Lq=37, Sk=37, d=64, dtype=torch.float16)
    check(solution, (q, k, v), {"is_causal": True}, f"is_causal=True, {sizes(q, k)}")


@pytest.mark.tier("efficient")
def test_causal_skips_masked_blocks(solution):
    """Informative here (not a required tier): with is_causal=True and L = S, a query block
    never sees the key blocks after its last query, so a kernel that skips them loads fewer
    elements of k than without is_causal (the guard counts the lanes each call loads)."""
    q, k, v = qkv(37, Lq=128, Sk=128, heads=(1, 1))
    loads = {}
    for is_causal in (False, True):
        outcome = solution.call(FN, (q, k, v), {"is_causal": is_causal})
        report = outcome.trace.get("triton") or {}
        loads[is_causal] = report.get("loaded", {}).get("argument 1", 0)
        grid = (report.get("grids") or [[1]])[0]
        programs = math.prod(max(int(g), 1) for g in grid)
    if programs < 2 or not loads[False]:
        return  # one query block per head: there is nothing to skip
    if loads[True] >= loads[False]:
        raise AssertionError(
            f"causal, B=1, H=1, L=S=128, d={D}: your kernel loaded {loads[True]:,} elements of k "
            f"with is_causal=True and {loads[False]:,} without it ({programs} query blocks): the "
            "key blocks after a query block's last query are fully masked; end the key loop at "
            "S - L + (pid_m + 1) * BLOCK_M to skip them (about half the work when L = S)"
        )


@pytest.mark.tier("speed")
def test_speed(request, solution):
    """On a CUDA GPU: against SDPA, causal, B=4, H=16, L=S=2048, d=64, float16 (informative).
    The output is checked first, within float16's tolerance."""
    require_gpu()
    b, h, n, d = 4, 16, 2048, 64
    q, k, v = (randn(b, h, n, d, seed=s, dtype=torch.float16) for s in (34, 35, 36))
    case = f"speed: causal, B={b}, H={h}, L=S={n}, d={d}, float16 on the GPU"

    def sdpa(q, k, v, is_causal):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=is_causal)

    def judge(got):
        if not isinstance(got, tuple | list) or len(got) != 2:
            raise AssertionError(f"{case}: expected a tuple (out, lse), got {describe(got)}")
        reference = sdpa(*(t.cuda() for t in (q, k, v)), True).cpu()
        # float16 on both sides: SDPA's own error is the budget (as in FlashAttention's tests)
        assert_close(got[0], reference.double(), case=case, what="out", baseline=reference)

    speed_test(
        request,
        solution,
        FN,
        (q, k, v),
        {"is_causal": True},
        baseline=sdpa,
        baseline_name="scaled_dot_product_attention",
        flops=0.5 * 4 * b * h * n * n * d,  # q k^T and p v, half the matrix (causal)
        check=judge,
    )
