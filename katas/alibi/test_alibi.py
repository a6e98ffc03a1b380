"""Grader for the `alibi` kata. Run directly: pytest <this folder> --solution your_file.py

`alibi_slopes` is checked on its own, for powers of two and for head counts that are not
(3, 6, 12, 20: where the second, interleaved half of the slopes begins). `alibi_attention`
runs with B=2, d=8, dv=6 and H = 4, 6 or 12 heads: causal with L = S and with L < S (where
the query's position p = S - L + i and its row index differ), without the causal mask (keys
after p, where the bias must be symmetric), with a random mask, an explicit scale (the bias
is not scaled), and rows with no allowed key. q and k are scaled so that q.k and the bias
are of the same size: neither hides the other.
"""

from __future__ import annotations

import pytest
import torch

from attnkata.checker.compare import assert_close, assert_no_mutation
from attnkata.checker.probes import check_call, expect_value_error, randn, random_mask
from attnkata.reference import alibi as ref

SLOPES, ATTN = "alibi_slopes", "alibi_attention"
B, D, DV = 2, 8, 6
DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]


def qkv(seed: int, H: int, L: int, S: int) -> tuple[torch.Tensor, ...]:
    return (
        randn(B, H, L, D, seed=seed, scale=0.7),
        randn(B, H, S, D, seed=seed + 1, scale=0.7),
        randn(B, H, S, DV, seed=seed + 2),
    )


def _fmt(values: torch.Tensor) -> str:
    return "[" + ", ".join(f"{float(x):.6g}" for x in values) + "]"


def check_slopes(solution, n: int) -> None:
    case = f"alibi_slopes({n})"
    outcome = solution.call(SLOPES, (n,))
    assert_no_mutation(outcome, case=case)
    want, got = ref.alibi_slopes(n), outcome.value
    if isinstance(got, torch.Tensor) and got.dtype != torch.float32:
        raise AssertionError(
            f"{case}: the slopes must be a float32 tensor (the contract: (n_heads,) float32, as "
            f"BLOOM builds them); yours is {str(got.dtype).removeprefix('torch.')}"
        )
    if (
        isinstance(got, torch.Tensor)
        and tuple(got.shape) == (n,)
        and not torch.allclose(got.detach().double(), want.double(), rtol=1e-5, atol=0)
    ):
        wrong = [h for h in range(n) if abs(float(got[h]) - float(want[h])) > 1e-5 * float(want[h])]
        raise AssertionError(
            f"{case}: {len(wrong)} of {n} slopes differ, first head {wrong[0]}: expected "
            f"{float(want[wrong[0]]):.6g}, got {float(got[wrong[0]]):.6g}; expected {_fmt(want)}, "
            f"got {_fmt(got)}"
        )
    assert_close(got, want, case=case, what="slopes")


def check(
    solution,
    H: int,
    L: int,
    S: int,
    *,
    seed: int,
    dtype: torch.dtype = torch.float64,
    what: str = "",
    **kwargs,
) -> None:
    q, k, v = qkv(seed, H, L, S)
    shown = {n: (tuple(x.shape) if isinstance(x, torch.Tensor) else x) for n, x in kwargs.items()}
    extra = "".join(f", {n}={x}" for n, x in shown.items())
    causal = kwargs.get("is_causal", True)
    case = (
        f"{str(dtype).removeprefix('torch.')} q (B={B}, H={H}, L={L}, d={D}), k, v with S={S}"
        f"{extra}{'' if 'is_causal' in kwargs else ' (is_causal=True by default)'}: "
        f"query i sits at p = S - L + i = {S - L} + i"
        + (", keys j <= p" if causal else ", every key")
        + (f"; {what}" if what else "")
    )
    check_call(solution, ATTN, ref.alibi_attention, (q, k, v), kwargs, dtype=dtype, case=case)


@pytest.mark.parametrize("n", [1, 2, 8, 16])
def test_slopes_power_of_two(solution, n):
    check_slopes(solution, n)


@pytest.mark.parametrize("n", [3, 6, 12, 20])
def test_slopes_other_head_counts(solution, n):
    check_slopes(solution, n)


@pytest.mark.parametrize("dtype", DTYPES)
def test_causal(solution, dtype):
    check(solution, 4, 6, 6, seed=1, dtype=dtype)


def test_causal_with_kv_cache(solution):
    check(solution, 4, 3, 8, seed=4, what="L < S, as when decoding with a KV cache")


def test_not_causal(solution):
    check(solution, 4, 6, 6, seed=7, is_causal=False, what="keys after p are penalised too")


def test_not_causal_chunk(solution):
    check(solution, 4, 3, 7, seed=10, is_causal=False)


@pytest.mark.parametrize("H", [6, 12])
def test_heads_not_a_power_of_two(solution, H):
    check(solution, H, 5, 5, seed=13 + H, is_causal=H == 6)


def test_mask_and_causal(solution):
    mask = random_mask(B, 1, 4, 7, seed=30)
    check(solution, 4, 4, 7, seed=31, mask=mask, what="a random (B, 1, L, S) mask")


def test_explicit_scale(solution):
    check(solution, 4, 5, 5, seed=34, scale=0.3, what="the bias is added after the scale")


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_queries_without_keys(solution, dtype):
    mask = random_mask(B, 1, 7, 4, seed=37)
    mask[0, 0, 5] = False  # query 5 of batch 0 may attend nothing (besides p < 0 rows)
    check(
        solution,
        4,
        7,
        4,
        seed=38,
        dtype=dtype,
        mask=mask,
        what="L > S: queries 0 .. 2 sit at p < 0 and have no key; they get zeros",
    )


@pytest.mark.tier("edge")
def test_slopes_reject_no_heads(solution):
    expect_value_error(
        solution, SLOPES, (0,), call="alibi_slopes(0)", why="a model has at least one head"
    )


@pytest.mark.tier("edge")
def test_single_head(solution):
    check(solution, 1, 4, 6, seed=41, is_causal=False, what="H = 1: slope 1/256")


@pytest.mark.tier("edge")
def test_mask_broadcast_over_batch_and_heads(solution):
    mask = random_mask(5, 5, seed=44)
    check(solution, 4, 5, 5, seed=45, mask=mask, is_causal=False, what="an (L, S) mask")
