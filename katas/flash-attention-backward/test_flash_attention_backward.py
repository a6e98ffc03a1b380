"""Grader for the `flash-attention-backward` kata. Run directly:
pytest <this folder> --solution your_file.py

`core` and `edge` compare (dq, dk, dv) with autograd through dense attention in float64
(an oracle independent of the tiled reference); out and lse are the dense forward's.
Sizes: B=2, H=3, L=19, S=27, d=8, dv=6 with 8 x 8 tiles (L, S not multiples; L != S), plus
square full tiles. `edge` adds rows with no allowed key (their gradients are 0, never
NaN) and large logits. `efficient` runs L = S = 4096 causal with 128 x 128 tiles and fails
any call that allocates a tensor with L * S / 8 elements or more.
"""

import math

import pytest
import torch

from attnkata.checker.compare import assert_close_parts, assert_no_mutation
from attnkata.checker.probes import (
    assert_largest_below,
    call_within_memory,
    causal,
    check_call,
    randn,
    random_mask,
)
from attnkata.reference import flash_attention as fwd
from attnkata.reference import flash_attention_backward as ref
from attnkata.reference import sdpa as dense_ref

FN = "flash_attention_backward"
B, H, L, S, D, DV, T = 2, 3, 19, 27, 8, 6, 8
TILES = {"block_q": T, "block_k": T}
PARTS = ("dq", "dk", "dv")
DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]


def allowed_of(Lq: int, Sk: int, mask=None, is_causal=False) -> torch.Tensor:
    allowed = causal(Lq, Sk) if is_causal else torch.ones(Lq, Sk, dtype=torch.bool)
    return allowed if mask is None else allowed & mask


def dense_forward(q, k, v, mask=None, is_causal=False, scale=None):
    """(out, lse) of dense attention: what the backward receives."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    allowed = allowed_of(q.shape[-2], k.shape[-2], mask, is_causal)
    scores = (q @ k.transpose(-2, -1) * scale).masked_fill(~allowed, float("-inf"))
    out = dense_ref.scaled_dot_product_attention(q, k, v, mask=allowed, scale=scale)
    return out, torch.logsumexp(scores, dim=-1)


def dense_grads(
    q, k, v, out, lse, dout, mask=None, is_causal=False, scale=None, block_q=64, block_k=64
):
    """The oracle: autograd of sum(out * dout) through dense attention."""
    leaves = [t.detach().clone().requires_grad_(True) for t in (q, k, v)]
    allowed = allowed_of(q.shape[-2], k.shape[-2], mask, is_causal)
    o = dense_ref.scaled_dot_product_attention(*leaves, mask=allowed, scale=scale)
    return torch.autograd.grad(o, leaves, dout)


def inputs(seed: int, Lq: int = L, Sk: int = S, magnitude: float = 1.0, **fwd_kwargs):
    """(q, k, v, out, lse, dout) in float64; out and lse from the dense forward."""
    q, k, v = (
        randn(B, H, Lq, D, seed=seed, scale=magnitude),
        randn(B, H, Sk, D, seed=seed + 1, scale=magnitude),
        randn(B, H, Sk, DV, seed=seed + 2),
    )
    out, lse = dense_forward(q, k, v, **fwd_kwargs)
    return q, k, v, out, lse, randn(B, H, Lq, DV, seed=seed + 3)


def sizes(Lq: int = L, Sk: int = S, tiles: str = f"{T} x {T} tiles") -> str:
    return f"B={B}, H={H}, L={Lq}, S={Sk}, d={D}, dv={DV}, {tiles}"


def truth_and_budget(*args, **kwargs):
    """float64: the dense oracle. Other dtypes (the error budget): the contract's own tiled
    formula in that dtype, since P = exp(s - lse) with an lse of ~1e4 rounded to float32
    errs more than a dense softmax does, for any correct solution."""
    if args[0].dtype == torch.float64:
        return dense_grads(*args, **kwargs)
    return ref.flash_attention_backward(*args, **kwargs)


def check(solution, seed, kwargs, case, dtype=torch.float64, **shape):
    fwd_kwargs = {k: v for k, v in kwargs.items() if k in ("mask", "is_causal", "scale")}
    return check_call(
        solution,
        FN,
        truth_and_budget,
        inputs(seed, **shape, **fwd_kwargs),
        kwargs,
        case=case,
        dtype=dtype,
        names=PARTS,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_no_mask(solution, dtype):
    check(solution, 1, dict(TILES), f"no mask, {sizes()}", dtype)


@pytest.mark.parametrize(("bq", "bk"), [(4, 16), (16, 4), (5, 7)])
def test_tile_sizes(solution, bq, bk):
    check(
        solution,
        5,
        {"block_q": bq, "block_k": bk},
        f"no mask, {sizes(tiles=f'block_q={bq}, block_k={bk}')}",
    )


def test_default_tiles(solution):
    check(solution, 9, {}, f"no mask, {sizes(tiles='default tiles (64 x 64)')}")


def test_square_full_tiles(solution):
    check(
        solution,
        13,
        dict(TILES),
        f"no mask, {sizes(16, 16)} (every tile full and square)",
        Lq=16,
        Sk=16,
    )


def test_causal_kv_cache(solution):
    check(
        solution,
        17,
        {**TILES, "is_causal": True},
        f"is_causal=True with a KV cache (query i at p = {S - 13} + i), {sizes(Lq=13)}",
        Lq=13,
    )


def test_mask_and_causal(solution):
    mask = random_mask(B, 1, L, S, seed=21, p=0.7)
    check(
        solution,
        22,
        {**TILES, "mask": mask, "is_causal": True},
        f"bool mask (B, 1, L, S) and is_causal=True together, {sizes()}",
    )


def test_mask_broadcast(solution):
    mask = random_mask(L, S, seed=25, p=0.6)
    check(solution, 26, {**TILES, "mask": mask}, f"bool mask (L, S), {sizes()}")


def test_explicit_scale(solution):
    check(solution, 29, {**TILES, "scale": 0.3}, f"scale=0.3, {sizes()}")


def empty_rows_mask(seed: int) -> torch.Tensor:
    """Random (B, 1, L, S) with a fully masked 8 x 8 tile and two rows with no allowed key."""
    m = random_mask(B, 1, L, S, seed=seed, p=0.6)
    m[0, 0, 8:16, 8:16] = False
    m[0, 0, 4] = False
    m[1, 0, 11] = False
    return m


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_without_keys(solution, dtype):
    check(
        solution,
        33,
        {**TILES, "mask": empty_rows_mask(34)},
        "queries (batch 0, query 4) and (batch 1, query 11) have no allowed key (lse = -inf: they contribute "
        f"nothing) and a fully masked tile, {sizes()}",
        dtype,
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_causal_queries_without_keys(solution, dtype):
    check(
        solution,
        37,
        {**TILES, "is_causal": True},
        f"is_causal=True with L > S: queries 0..13 see no key (lse = -inf), {sizes(27, 13)}",
        dtype,
        Lq=27,
        Sk=13,
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_large_logits(solution, dtype):
    check(
        solution,
        41,
        {**TILES, "is_causal": True},
        f"large logits (|q.k|/sqrt(d) up to ~1e4), is_causal=True, {sizes()}",
        dtype,
        magnitude=60.0,
    )


EFF_N, EFF_D, EFF_T = 4096, 32, 128


@pytest.mark.tier("efficient")
def test_tiles_only(solution):
    """Causal, 4096 tokens, 128 x 128 tiles: a tile has 16,384 scores."""
    q, k, v, dout = (
        randn(1, 1, EFF_N, EFF_D, seed=s, dtype=torch.float32) for s in (50, 51, 52, 53)
    )
    kwargs = {"is_causal": True, "block_q": EFF_T, "block_k": EFF_T}
    out, lse = fwd.flash_attention(q, k, v, **kwargs)
    case = (
        f"efficiency: B=H=1, L=S={EFF_N}, d=dv={EFF_D}, float32, is_causal=True, "
        f"block_q=block_k={EFF_T}"
    )
    advice = (
        f"A tile is {EFF_T} x {EFF_T} = {EFF_T * EFF_T:,}. Never build (L, S) probabilities, scores or "
        "masks: recompute P = exp(s - lse) one tile at a time and accumulate dq, dk, dv tile by tile"
    )
    # Three quarters: dq, dk, dv and their per-tile terms need more than the forward's half.
    outcome = call_within_memory(
        solution,
        FN,
        (q, k, v, out, lse, dout),
        kwargs,
        dense_bytes=EFF_N * EFF_N * 4,
        fraction=0.75,
        case=case,
        advice=advice,
    )
    assert_no_mutation(outcome, case=case)
    assert_largest_below(outcome, EFF_N * EFF_N // 8, case=case, limit_name="L*S/8", advice=advice)
    q64, k64, v64, dout64 = (t.double() for t in (q, k, v, dout))
    out64, lse64 = fwd.flash_attention(q64, k64, v64, **kwargs)
    expected = ref.flash_attention_backward(q64, k64, v64, out64, lse64, dout64, **kwargs)
    assert_close_parts(
        outcome.value,
        expected,
        case=case,
        names=PARTS,
        baseline=ref.flash_attention_backward(q, k, v, out, lse, dout, **kwargs),
    )
