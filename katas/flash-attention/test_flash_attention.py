"""Grader for the `flash-attention` kata. Run directly: pytest <this folder> --solution your_file.py

`core` and `edge` compare (out, lse) with dense attention and torch.logsumexp over the
same mask (an oracle independent of the tiled reference). Sizes: B=2, H=3, L=19, S=27,
d=8, dv=6 with 8 x 8 tiles, so L and S are not multiples of the tiles, L != S and every
query row crosses four key tiles. `edge` adds a fully masked tile and row, queries with
no key, scores all near -1e4 and large mixed logits. `efficient` runs L = S = 4096 causal
with 128 x 128 tiles and fails any call that allocates a tensor with L * S / 8 elements
or more.
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
from attnkata.reference import flash_attention as ref
from attnkata.reference import sdpa as dense_ref

FN = "flash_attention"
B, H, L, S, D, DV, T = 2, 3, 19, 27, 8, 6, 8
TILES = {"block_q": T, "block_k": T}
PARTS = ("out", "lse")
DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]


def dense(q, k, v, mask=None, is_causal=False, scale=None, block_q=64, block_k=64):
    """(out, lse) from the whole (L, S) score matrix: the oracle."""
    Lq, Sk = q.shape[-2], k.shape[-2]
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    allowed = causal(Lq, Sk) if is_causal else torch.ones(Lq, Sk, dtype=torch.bool)
    if mask is not None:
        allowed = allowed & mask
    scores = (q @ k.transpose(-2, -1) * scale).masked_fill(~allowed, float("-inf"))
    out = dense_ref.scaled_dot_product_attention(q, k, v, mask=allowed, scale=scale)
    return out, torch.logsumexp(scores, dim=-1)


def qkv(seed: int, Lq: int = L, Sk: int = S, scale: float = 1.0):
    return (
        randn(B, H, Lq, D, seed=seed, scale=scale),
        randn(B, H, Sk, D, seed=seed + 1, scale=scale),
        randn(B, H, Sk, DV, seed=seed + 2),
    )


def sizes(Lq: int = L, Sk: int = S, tiles: str = f"{T} x {T} tiles") -> str:
    return f"B={B}, H={H}, L={Lq}, S={Sk}, d={D}, dv={DV}, {tiles}"


def check(solution, args, kwargs, case, dtype=torch.float64):
    return check_call(solution, FN, dense, args, kwargs, case=case, dtype=dtype, names=PARTS)


@pytest.mark.parametrize("dtype", DTYPES)
def test_no_mask(solution, dtype):
    check(solution, qkv(1), dict(TILES), f"no mask, {sizes()}", dtype)


@pytest.mark.parametrize(("bq", "bk"), [(4, 16), (16, 4), (5, 7), (1, 27)])
def test_tile_sizes(solution, bq, bk):
    check(
        solution,
        qkv(4),
        {"block_q": bq, "block_k": bk},
        f"no mask, {sizes(tiles=f'block_q={bq}, block_k={bk}')}",
    )


def test_default_tiles(solution):
    check(solution, qkv(7), {}, f"no mask, {sizes(tiles='default tiles (64 x 64)')}")


def test_causal_kv_cache(solution):
    check(
        solution,
        qkv(10, Lq=13),
        {**TILES, "is_causal": True},
        f"is_causal=True with a KV cache (query i at p = {S - 13} + i), {sizes(Lq=13)}",
    )


def test_causal_square(solution):
    check(
        solution,
        qkv(13, Lq=21, Sk=21),
        {**TILES, "is_causal": True},
        f"is_causal=True, {sizes(21, 21)}",
    )


MASK_SHAPES = {
    "L,S": (L, S),
    "B,1,1,S": (B, 1, 1, S),
    "B,1,L,S": (B, 1, L, S),
    "B,H,L,S": (B, H, L, S),
}


@pytest.mark.parametrize("shape", list(MASK_SHAPES))
def test_mask(solution, shape):
    mask = random_mask(*MASK_SHAPES[shape], seed=16, p=0.6)
    check(solution, qkv(17), {**TILES, "mask": mask}, f"bool mask of shape ({shape}), {sizes()}")


def test_mask_and_causal(solution):
    mask = random_mask(B, 1, L, S, seed=20, p=0.7)
    check(
        solution,
        qkv(21),
        {**TILES, "mask": mask, "is_causal": True},
        f"bool mask (B, 1, L, S) and is_causal=True together, {sizes()}",
    )


def test_explicit_scale(solution):
    check(solution, qkv(24), {**TILES, "scale": 0.3}, f"scale=0.3, {sizes()}")


def masked_tiles(seed: int) -> torch.Tensor:
    """A random (B, 1, L, S) mask with a fully masked 8 x 8 tile (batch 0, queries 8..15 x
    keys 8..15), the whole first key tile masked for queries 0..3 of batch 1 (their keys
    come later) and a fully masked row (batch 0, query 4)."""
    m = random_mask(B, 1, L, S, seed=seed, p=0.6)
    m[0, 0, 8:16, 8:16] = False
    m[1, 0, 0:4, 0:T] = False
    m[1, 0, 0:4, -1] = True
    m[0, 0, 4] = False
    return m


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_masked_tile_and_row(solution, dtype):
    check(
        solution,
        qkv(27),
        {**TILES, "mask": masked_tiles(28)},
        "a fully masked 8 x 8 tile, queries whose whole first key tile is masked, and a fully masked row "
        f"(batch 0, query 4: out must be 0 and lse -inf), {sizes()}",
        dtype,
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_queries_without_keys(solution, dtype):
    check(
        solution,
        qkv(30, Lq=27, Sk=13),
        {**TILES, "is_causal": True},
        f"is_causal=True with L > S: queries 0..13 sit at p < 0 and see no key (out 0, lse -inf), {sizes(27, 13)}",
        dtype,
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_negative_logits(solution, dtype):
    q, k, v = qkv(33)
    q, k = q.abs() * 75.0, -k.abs() * 75.0  # every score is negative, of order -1e4
    check(
        solution,
        (q, k, v),
        dict(TILES),
        f"every scaled score between about -3e4 and -1e2, {sizes()}",
        dtype,
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_large_logits(solution, dtype):
    check(
        solution,
        qkv(36, scale=60.0),
        {**TILES, "is_causal": True},
        f"large logits (|q.k|/sqrt(d) up to ~1e4), is_causal=True, {sizes()}",
        dtype,
    )


EFF_N, EFF_D, EFF_T = 4096, 32, 128


@pytest.mark.tier("efficient")
def test_tiles_only(solution):
    """Causal attention over 4096 tokens in 128 x 128 tiles: a tile has 16,384 scores."""
    q, k, v = (randn(1, 1, EFF_N, EFF_D, seed=s, dtype=torch.float32) for s in (40, 41, 42))
    kwargs = {"is_causal": True, "block_q": EFF_T, "block_k": EFF_T}
    case = (
        f"efficiency: B=H=1, L=S={EFF_N}, d=dv={EFF_D}, float32, is_causal=True, "
        f"block_q=block_k={EFF_T}"
    )
    advice = (
        f"A tile of scores is {EFF_T} x {EFF_T} = {EFF_T * EFF_T:,}. Never build an (L, S) score matrix "
        "or mask: loop over query tiles and key tiles, build each tile's causal/mask block from "
        "positions, and keep only the running max, sum and output per query row"
    )
    outcome = call_within_memory(
        solution, FN, (q, k, v), kwargs, dense_bytes=EFF_N * EFF_N * 4, case=case, advice=advice
    )
    assert_no_mutation(outcome, case=case)
    assert_largest_below(outcome, EFF_N * EFF_N // 8, case=case, limit_name="L*S/8", advice=advice)
    expected = ref.flash_attention(q.double(), k.double(), v.double(), **kwargs)
    assert_close_parts(
        outcome.value,
        expected,
        case=case,
        names=PARTS,
        baseline=ref.flash_attention(q, k, v, **kwargs),
    )
