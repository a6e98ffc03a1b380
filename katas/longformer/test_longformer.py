"""Grader for the `longformer` kata. Run directly: pytest <this folder> --solution your_file.py

Both entry points are graded on their own: `longformer_mask` exactly against a mask built
from the definition, `longformer_attention` against dense attention under that mask and
the key padding, so a right mask with wrong attention (or the reverse) fails only the
tests of that function. Global positions sit at both ends and in the middle; a window
narrower than the sequence makes a halved or off-by-one window visible; key padding
covers a global token. `efficient` runs L = 8192 and fails any call that allocates a
tensor with L*L/8 elements or more.
"""

import pytest
import torch

from attnkata.checker.compare import assert_close, assert_equal_mask, assert_no_mutation
from attnkata.checker.probes import assert_largest_below, call_within_memory, check_call, randn
from attnkata.reference import longformer as ref
from attnkata.reference import sdpa as dense_ref

MASK, ATTN = "longformer_mask", "longformer_attention"
B, H, D, DV = 2, 3, 8, 6


def oracle_mask(L: int, window: int, global_idx: torch.Tensor) -> torch.Tensor:
    g = set(global_idx.tolist())
    return torch.tensor(
        [[abs(i - j) <= window or i in g or j in g for j in range(L)] for i in range(L)]
    )


def dense(q, k, v, window, global_idx, key_padding=None, scale=None):
    mask = oracle_mask(q.shape[-2], window, global_idx)
    if key_padding is not None:
        mask = mask & key_padding[:, None, None, :]
    return dense_ref.scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)


CASES = {  # name: (L, window, global positions)
    "L14-w2-ends-and-middle": (14, 2, [0, 6, 13]),
    "L12-w3-middle": (12, 3, [5]),
    "L11-w1-no-global": (11, 1, []),
    "L9-w0-first": (9, 0, [0, 4]),
}


def case_args(name: str):
    L, window, glob = CASES[name]
    return L, window, torch.tensor(glob, dtype=torch.long)


def describe(L: int, window: int, gidx: torch.Tensor, extra: str = "") -> str:
    return (
        f"L={L}, window={window} (query i sees keys i - {window} .. i + {window}), "
        f"global_idx={gidx.tolist()}" + (f", {extra}" if extra else "")
    )


def qkv(seed: int, L: int, scale: float = 1.0):
    return (
        randn(B, H, L, D, seed=seed, scale=scale),
        randn(B, H, L, D, seed=seed + 1, scale=scale),
        randn(B, H, L, DV, seed=seed + 2),
    )


def padding(L: int, lengths: list[int]) -> torch.Tensor:
    return torch.arange(L)[None, :] < torch.tensor(lengths)[:, None]  # (B, L), True = real


@pytest.mark.parametrize("name", list(CASES))
def test_mask(solution, name):
    L, window, gidx = case_args(name)
    case = f"{MASK}: " + describe(L, window, gidx)
    outcome = solution.call(MASK, (L, window, gidx))
    assert_no_mutation(outcome, case=case)
    assert_equal_mask(outcome.value, oracle_mask(L, window, gidx), case=case)


@pytest.mark.parametrize("name", list(CASES))
def test_attention(solution, name):
    L, window, gidx = case_args(name)
    check_call(
        solution,
        ATTN,
        dense,
        (*qkv(1, L), window, gidx),
        case=f"{ATTN}: B={B}, H={H}, d={D}, dv={DV}, " + describe(L, window, gidx),
    )


def test_attention_key_padding(solution):
    L, window, gidx = case_args("L14-w2-ends-and-middle")
    pad = padding(L, [14, 10])  # batch 1: the last 4 keys, global 13 among them, are padding
    check_call(
        solution,
        ATTN,
        dense,
        (*qkv(4, L), window, gidx, pad),
        case=f"{ATTN}: "
        + describe(
            L,
            window,
            gidx,
            "key_padding lengths [14, 10]: the padded keys of "
            "batch 1 include global position 13 and are never attended",
        ),
    )


def test_attention_explicit_scale(solution):
    L, window, gidx = case_args("L12-w3-middle")
    check_call(
        solution,
        ATTN,
        dense,
        (*qkv(7, L), window, gidx),
        {"scale": 0.3},
        case=f"{ATTN}: scale=0.3, " + describe(L, window, gidx),
    )


@pytest.mark.tier("edge")
def test_mask_device(solution):
    case = f"{MASK}(9, 1, tensor([0, 8]), device='meta')"
    got = solution.call(MASK, (9, 1, torch.tensor([0, 8])), {"device": "meta"}).value
    if (
        not isinstance(got, torch.Tensor)
        or got.device.type != "meta"
        or got.shape != (9, 9)
        or got.dtype != torch.bool
    ):
        raise AssertionError(
            f"{case}: expected a (9, 9) bool tensor on device meta, got {got!r:.80}"
        )


@pytest.mark.tier("edge")
@pytest.mark.parametrize(
    "dtype", [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]
)
def test_query_without_keys(solution, dtype):
    # Batch 1 keeps only keys 0 and 1; both global positions are padding there, so queries
    # 4..12 (window 2, not global) have no real key, while global queries 3 and 13 see 0 and 1.
    L, window, gidx = 14, 2, torch.tensor([13, 3])
    pad = padding(L, [14, 2])
    check_call(
        solution,
        ATTN,
        dense,
        (*qkv(10, L), window, gidx, pad),
        dtype=dtype,
        case=f"{ATTN}: "
        + describe(
            L,
            window,
            gidx,
            "key_padding lengths [14, 2]: in batch 1 both global "
            "keys are padding and queries 4..12 have no real key: queries with no real key give zeros",
        ),
    )


@pytest.mark.tier("edge")
def test_window_wider_than_sequence(solution):
    L, window, gidx = 8, 20, torch.tensor([2])
    check_call(
        solution,
        ATTN,
        dense,
        (*qkv(13, L), window, gidx),
        case=f"{ATTN}: " + describe(L, window, gidx),
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize(
    "dtype", [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]
)
def test_large_logits(solution, dtype):
    L, window, gidx = case_args("L14-w2-ends-and-middle")
    check_call(
        solution,
        ATTN,
        dense,
        (*qkv(16, L, scale=60.0), window, gidx, padding(L, [14, 11])),
        dtype=dtype,
        case=f"{ATTN}: large logits (~1e4), "
        + describe(L, window, gidx, "key_padding lengths [14, 11]"),
    )


EFF = {"L": 8192, "window": 64, "global": [0, 1000, 4097, 8191], "d": 32}


@pytest.mark.tier("efficient")
def test_attention_memory(solution):
    L, w, dd = EFF["L"], EFF["window"], EFF["d"]
    gidx = torch.tensor(EFF["global"])
    q, k, v = (randn(1, 1, L, dd, seed=s, dtype=torch.float32) for s in (40, 41, 42))
    pad = torch.ones(1, L, dtype=torch.bool)
    pad[0, -100:] = False  # the last global token is padding
    args = (q, k, v, w, gidx, pad)
    case = (
        f"efficiency: B=H=1, L={L}, window={w}, global_idx={EFF['global']}, d=dv={dd}, float32, "
        "the last 100 keys padded"
    )
    advice = (
        f"A non-global query needs only its 2*window + 1 = {2 * w + 1} window keys plus the {len(gidx)} global "
        "keys: do not build an (L, L) score matrix or mask. Score the band (pad + unfold, or chunks of queries "
        "with the keys they reach), score the global keys as extra columns, and compute the few global rows "
        "densely."
    )
    outcome = call_within_memory(
        solution, ATTN, args, dense_bytes=L * L * 4, case=case, advice=advice
    )
    assert_no_mutation(outcome, case=case)
    assert_largest_below(outcome, L * L // 8, case=case, advice=advice)
    expected = ref.longformer_attention(q.double(), k.double(), v.double(), w, gidx, pad)
    assert_close(outcome.value, expected, case=case, baseline=ref.longformer_attention(*args))
