"""Grader for the `rope` kata. Run directly: pytest <this folder> --solution your_file.py

Sizes B=2, H=3, L=5, d=8 all differ. Positions start away from 0 (at position 0 every
rotation is the identity) and a (B, L) positions tensor gives each batch row its own; the two
pair layouts run on the same input (they differ once d >= 4 and a position is > 0); theta is
varied so every frequency counts. float64 inputs use positions below 16, where float32 angles
(as HF computes them) are still within 1e-5; positions up to 4095 are judged in float32,
against the error of a plain float32 implementation with float32 angles.
"""

from __future__ import annotations

import pytest
import torch

from attnkata.checker.compare import assert_close, assert_like, assert_no_mutation
from attnkata.checker.probes import check_call, check_grads, expect_value_error, randn
from attnkata.reference import rope as ref

FN = "apply_rope"
B, H, L, D = 2, 3, 5, 8
DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]
LAYOUTS = [pytest.param(False, id="half"), pytest.param(True, id="interleaved")]
START = 3  # positions START .. START + L - 1 unless a test says otherwise


def layout_name(interleaved: bool) -> str:
    return (
        "interleaved=True: pairs (x[2i], x[2i+1])"
        if interleaved
        else "interleaved=False: pairs (x[i], x[i + d/2])"
    )


def describe(positions: torch.Tensor, interleaved: bool, theta: float = 10000.0, d: int = D) -> str:
    pos = positions.tolist()
    return (
        f"x (B={B}, H={H}, L={positions.shape[-1]}, d={d}), positions {tuple(positions.shape)} = {pos}, "
        f"theta={theta:g}, {layout_name(interleaved)}"
    )


def call(x: torch.Tensor, positions: torch.Tensor, theta: float, interleaved: bool) -> torch.Tensor:
    return ref.apply_rope(x, positions, theta, interleaved)


def check(
    solution,
    x: torch.Tensor,
    positions: torch.Tensor,
    *,
    theta: float = 10000.0,
    interleaved: bool = False,
    dtype: torch.dtype = torch.float64,
    what: str = "",
) -> None:
    case = describe(positions, interleaved, theta, x.shape[-1]) + (f", {what}" if what else "")
    check_call(
        solution,
        FN,
        call,
        (x, positions, theta, interleaved),
        dtype=dtype,
        case=f"{str(dtype).removeprefix('torch.')} " + case,
    )


@pytest.mark.parametrize("interleaved", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_positions_not_from_zero(solution, dtype, interleaved):
    check(
        solution,
        randn(B, H, L, D, seed=1),
        torch.arange(START, START + L),
        interleaved=interleaved,
        dtype=dtype,
    )


def test_positions_from_zero(solution):
    check(solution, randn(B, H, L, D, seed=2), torch.arange(L), what="position 0 is the identity")


@pytest.mark.parametrize("interleaved", LAYOUTS)
def test_batched_positions(solution, interleaved):
    # Each batch row has its own, non-consecutive positions (left padding, packed sequences).
    positions = torch.tensor([[0, 1, 2, 3, 4], [9, 4, 7, 12, 6]])
    check(
        solution,
        randn(B, H, L, D, seed=3),
        positions,
        interleaved=interleaved,
        what="a (B, L) positions tensor: row b of x uses positions[b]",
    )


@pytest.mark.parametrize("interleaved", LAYOUTS)
def test_theta(solution, interleaved):
    check(
        solution,
        randn(B, H, L, D, seed=4),
        torch.arange(START, START + L),
        theta=100.0,
        interleaved=interleaved,
        what="theta=100 (the slow frequencies turn too)",
    )


def test_wider_head(solution):
    check(
        solution,
        randn(B, H, L, 16, seed=5),
        torch.tensor([1, 6, 2, 11, 8]),
        interleaved=True,
        what="d=16, positions not sorted",
    )


def _hf_float32(x: torch.Tensor, positions: torch.Tensor, interleaved: bool) -> torch.Tensor:
    """A plain float32 implementation with float32 angles, as HF computes them: the error
    budget for float32 results at large positions."""
    d = x.shape[-1]
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    angles = positions.float()[:, None] * inv_freq  # (L, d/2)
    cos, sin = angles.cos(), angles.sin()
    a, b = (x[..., 0::2], x[..., 1::2]) if interleaved else (x[..., : d // 2], x[..., d // 2 :])
    ra, rb = a * cos - b * sin, a * sin + b * cos
    return torch.stack([ra, rb], -1).flatten(-2) if interleaved else torch.cat([ra, rb], -1)


@pytest.mark.parametrize("interleaved", LAYOUTS)
def test_large_positions_float32(solution, interleaved):
    positions = torch.tensor([100, 1000, 2047, 3001, 4095])
    x = randn(B, H, L, D, seed=6, dtype=torch.float32)
    case = "float32 " + describe(positions, interleaved) + " (large positions)"
    outcome = solution.call(FN, (x, positions, 10000.0, interleaved))
    assert_no_mutation(outcome, case=case)
    expected = ref.apply_rope(x.double(), positions, 10000.0, interleaved)
    assert_close(
        outcome.value, expected, case=case, baseline=_hf_float32(x, positions, interleaved)
    )


def test_keyword_arguments(solution):
    x, positions = randn(B, H, L, D, seed=7), torch.arange(START, START + L)
    case = (
        describe(positions, True, 500.0)
        + ", called as apply_rope(x, positions, theta=500.0, interleaved=True)"
    )
    outcome = solution.call(FN, (x, positions), {"theta": 500.0, "interleaved": True})
    assert_no_mutation(outcome, case=case)
    assert_close(outcome.value, ref.apply_rope(x, positions, 500.0, True), case=case)


@pytest.mark.tier("edge")
def test_odd_dim_raises(solution):
    x, positions = randn(B, H, L, 7, seed=8), torch.arange(L)
    expect_value_error(
        solution,
        FN,
        (x, positions),
        call="apply_rope on x with d = 7",
        why="features are rotated in pairs",
    )


@pytest.mark.tier("edge")
def test_scores_depend_on_relative_position(solution):
    # Shifting every position by the same amount must leave q.k unchanged: RoPE's point.
    q, k = randn(1, 1, L, D, seed=9), randn(1, 1, L, D, seed=10)
    base, shifted = torch.arange(START, START + L), torch.arange(START, START + L) + 11

    def scores(pos: torch.Tensor) -> torch.Tensor:
        rq = solution.call(FN, (q, pos)).value
        rk = solution.call(FN, (k, pos)).value
        for got, x in ((rq, q), (rk, k)):  # before anything is computed with them here
            assert_like(got, x, case=f"RoPE of (1, 1, {L}, {D}) at p = {pos.tolist()}")
        return rq @ rk.transpose(-2, -1)

    assert_close(
        scores(shifted),
        scores(base),
        case=f"q, k (1, 1, {L}, {D}): RoPE(q, p + 11) @ RoPE(k, p + 11)^T against p = {base.tolist()}",
        what="rotated scores (they may depend only on the difference of positions)",
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize("interleaved", LAYOUTS)
def test_gradients(solution, interleaved):
    x, positions = randn(B, H, L, D, seed=11), torch.arange(START, START + L)
    check_grads(
        solution,
        FN,
        call,
        (x, positions, 10000.0, interleaved),
        wrt=(0,),
        grad_output=randn(B, H, L, D, seed=12),
        names=("x",),
        case="gradient w.r.t. x, " + describe(positions, interleaved),
    )
