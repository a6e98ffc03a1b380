"""Grader for the `sliding-window` kata. Run directly: pytest <this folder> --solution your_file.py

`core` and `edge` compare with dense attention under an explicit window mask (an oracle
independent of the banded reference). Sizes are all different (B=2, H=3, L=9, S=13, d=8,
dv=6): L != S exercises the bottom-right alignment, windows narrower than L make an
off-by-one visible, and asymmetric windows make a swapped side visible. `efficient` runs
L = S = 8192 and fails any call that allocates a tensor with L * S / 2 elements or more.
"""

import pytest
import torch

from attnkata.checker.compare import assert_close, assert_no_mutation
from attnkata.checker.probes import (
    assert_largest_below,
    call_within_memory,
    causal,
    check_call,
    check_grads,
    randn,
)
from attnkata.reference import sdpa as dense_ref
from attnkata.reference import sliding_window as ref

FN = "sliding_window_attention"
B, H, L, S, D, DV = 2, 3, 9, 13, 8, 6
DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]


def window_mask(L: int, S: int, window: tuple[int, int]) -> torch.Tensor:
    """(L, S) bool: query i at p = S - L + i may attend key j iff p - left <= j <= p + right."""
    left, right = window
    p = torch.arange(L).unsqueeze(1) + (S - L)
    j = torch.arange(S).unsqueeze(0)
    allowed = torch.ones(L, S, dtype=torch.bool)
    if left >= 0:
        allowed &= j >= p - left
    if right >= 0:
        allowed &= j <= p + right
    return allowed


def dense(q, k, v, window, scale=None):
    return dense_ref.scaled_dot_product_attention(
        q, k, v, mask=window_mask(q.shape[-2], k.shape[-2], window), scale=scale
    )


def qkv(seed: int, L: int = L, S: int = S, scale: float = 1.0):
    return (
        randn(B, H, L, D, seed=seed, scale=scale),
        randn(B, H, S, D, seed=seed + 1, scale=scale),
        randn(B, H, S, DV, seed=seed + 2),
    )


def describe_window(window: tuple[int, int], L: int = L, S: int = S) -> str:
    left, right = window
    lo = "p - inf" if left < 0 else f"p - {left}"
    hi = "p + inf" if right < 0 else f"p + {right}"
    return (
        f"window {window} (query at p sees keys {lo} .. {hi}), B={B}, H={H}, L={L}, S={S} "
        f"(query i at p = {S - L} + i), d={D}, dv={DV}"
    )


WINDOWS = {
    "mistral-W4": (3, 0),  # 4 keys including itself
    "longformer-w4": (2, 2),
    "left4-right1": (4, 1),
    "left1-right4": (1, 4),
    "self-only": (0, 0),
    "left-unbounded-right2": (-1, 2),
    "left2-right-unbounded": (2, -1),
}


@pytest.mark.parametrize("name", list(WINDOWS))
def test_window(solution, name):
    q, k, v = qkv(1)
    window = WINDOWS[name]
    check_call(solution, FN, dense, (q, k, v, window), case=describe_window(window))


@pytest.mark.parametrize("name", ["mistral-W4", "left4-right1"])
def test_window_float32(solution, name):
    q, k, v = qkv(4)
    window = WINDOWS[name]
    check_call(
        solution,
        FN,
        dense,
        (q, k, v, window),
        dtype=torch.float32,
        case="float32, " + describe_window(window),
    )


def test_square(solution):
    q, k, v = qkv(7, L=11, S=11)
    window = (3, 0)
    check_call(solution, FN, dense, (q, k, v, window), case=describe_window(window, L=11, S=11))


def test_unbounded_left_is_causal(solution):
    q, k, v = qkv(10)
    window = (-1, 0)
    check_call(
        solution,
        FN,
        lambda q, k, v, w: dense_ref.scaled_dot_product_attention(q, k, v, mask=causal(L, S)),
        (q, k, v, window),
        case=describe_window(window) + ": plain bottom-right causal attention",
    )


def test_unbounded_both_is_full_attention(solution):
    q, k, v = qkv(13)
    window = (-1, -1)
    check_call(
        solution,
        FN,
        lambda q, k, v, w: dense_ref.scaled_dot_product_attention(q, k, v),
        (q, k, v, window),
        case=describe_window(window) + ": full attention, no mask",
    )


def test_explicit_scale(solution):
    q, k, v = qkv(16)
    window = (4, 1)
    check_call(
        solution,
        FN,
        dense,
        (q, k, v, window),
        {"scale": 0.3},
        case="scale=0.3, " + describe_window(window),
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_query_without_keys(solution, dtype):
    # L > S: queries 0..3 sit at p = -4..-1; with window (2, 1) queries 0..2 see no key.
    q, k, v = qkv(19, L=12, S=8)
    window = (2, 1)
    check_call(
        solution,
        FN,
        dense,
        (q, k, v, window),
        dtype=dtype,
        case=describe_window(window, L=12, S=8)
        + ": queries 0, 1, 2 have no key in range and must give zeros",
    )


@pytest.mark.tier("edge")
def test_window_wider_than_sequence(solution):
    q, k, v = qkv(22)
    window = (20, 30)
    check_call(
        solution,
        FN,
        dense,
        (q, k, v, window),
        case=describe_window(window) + ": wider than the sequence on both sides",
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_large_logits(solution, dtype):
    q, k, v = qkv(25, scale=60.0)  # logits of order 1e4
    window = (3, 1)
    check_call(
        solution,
        FN,
        dense,
        (q, k, v, window),
        dtype=dtype,
        case="large logits (|q.k|/sqrt(d) up to ~1e4), " + describe_window(window),
    )


@pytest.mark.tier("edge")
def test_gradients(solution):
    q, k, v = qkv(28, L=12, S=8)
    window = (2, 1)
    check_grads(
        solution,
        FN,
        dense,
        (q, k, v, window),
        wrt=(0, 1, 2),
        grad_output=randn(B, H, 12, DV, seed=31),
        case="gradients, "
        + describe_window(window, L=12, S=8)
        + " (queries 0..2 see no key: keep them finite)",
    )


EFF_L = 8192
EFF_D = 16
EFF_WINDOW = (127, 0)


@pytest.mark.tier("efficient")
def test_band_only(solution):
    """Mistral-style window of 128 keys over 8192 tokens: the band has 8192 x 128 scores."""
    window = EFF_WINDOW
    q, k, v = (randn(1, 1, EFF_L, EFF_D, seed=s, dtype=torch.float32) for s in (40, 41, 42))
    case = (
        f"efficiency: B=H=1, L=S={EFF_L}, d=dv={EFF_D}, float32, window {window} "
        f"(each query sees {window[0] + 1} keys)"
    )
    band = EFF_L * (window[0] + 1 + window[1])
    advice = (
        f"Only the band matters: {EFF_L} queries x {window[0] + 1 + window[1]} keys = {band:,} scores. "
        "Do not build an (L, S) score matrix or mask: pad K and V and take one window of keys per "
        "query (unfold / gather), or loop over blocks of queries with only the keys their windows reach"
    )
    outcome = call_within_memory(
        solution, FN, (q, k, v, window), dense_bytes=EFF_L * EFF_L * 4, case=case, advice=advice
    )
    assert_no_mutation(outcome, case=case)
    assert_largest_below(outcome, EFF_L * EFF_L // 2, case=case, limit_name="L*S/2", advice=advice)
    expected = ref.sliding_window_attention(q.double(), k.double(), v.double(), window)
    assert_close(
        outcome.value, expected, case=case, baseline=ref.sliding_window_attention(q, k, v, window)
    )
