"""Grader for the `sdpa` kata. Run directly: pytest <this folder> --solution your_file.py

Sizes are all different (B=2, H=3, L=5, S=7, d=8, dv=6) so a swapped axis, a missing
transpose or a scale by the wrong dimension cannot hide behind a coincidence of shapes.
"""

import pytest
import torch

from attnkata.checker.compare import assert_close, describe_inputs
from attnkata.checker.probes import causal, check_call, check_grads, randn, random_mask
from attnkata.reference import sdpa as ref

FN = "scaled_dot_product_attention"
B, H, L, S, D, DV = 2, 3, 5, 7, 8, 6
DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]
SIZES = f"B={B}, H={H}, L={L}, S={S}, d={D}, dv={DV}"


def qkv(seed: int, lead: tuple[int, ...] = (B, H), scale: float = 1.0):
    return (
        randn(*lead, L, D, seed=seed, scale=scale),
        randn(*lead, S, D, seed=seed + 1, scale=scale),
        randn(*lead, S, DV, seed=seed + 2),
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_no_mask(solution, dtype):
    q, k, v = qkv(1)
    check_call(
        solution,
        FN,
        ref.scaled_dot_product_attention,
        (q, k, v),
        dtype=dtype,
        case=f"no mask, {describe_inputs(q=q, k=k, v=v)}",
    )


@pytest.mark.parametrize(
    "lead",
    [pytest.param((), id="2d"), pytest.param((4,), id="3d"), pytest.param((2, 3, 2), id="5d")],
)
def test_leading_dims(solution, lead):
    q, k, v = qkv(4, lead=lead)
    check_call(
        solution,
        FN,
        ref.scaled_dot_product_attention,
        (q, k, v),
        case=f"leading dims {lead}, {describe_inputs(q=q, k=k, v=v)}",
    )


def test_explicit_scale(solution):
    q, k, v = qkv(7)
    check_call(
        solution,
        FN,
        ref.scaled_dot_product_attention,
        (q, k, v),
        {"scale": 0.3},
        case=f"scale=0.3, {SIZES}",
    )


MASK_SHAPES = {
    "L,S": (L, S),
    "B,1,1,S": (B, 1, 1, S),
    "B,1,L,S": (B, 1, L, S),
    "B,H,L,S": (B, H, L, S),
}


@pytest.mark.parametrize("shape", list(MASK_SHAPES))
def test_mask(solution, shape):
    q, k, v = qkv(10)
    mask = random_mask(*MASK_SHAPES[shape], seed=11, p=0.5)
    check_call(
        solution,
        FN,
        ref.scaled_dot_product_attention,
        (q, k, v),
        {"mask": mask},
        case=f"bool mask of shape ({shape}) = {tuple(mask.shape)}, {SIZES}",
    )


def test_causal_mask_with_kv_cache(solution):
    q, k, v = qkv(13)
    mask = causal(L, S)  # bottom-right: the last query sees all S keys
    check_call(
        solution,
        FN,
        ref.scaled_dot_product_attention,
        (q, k, v),
        {"mask": mask},
        case=f"bottom-right causal mask (L={L} < S={S}), {SIZES}",
    )


def test_gradients(solution):
    q, k, v = qkv(16)
    mask = random_mask(B, 1, L, S, seed=17)
    check_grads(
        solution,
        FN,
        ref.scaled_dot_product_attention,
        (q, k, v),
        {"mask": mask},
        wrt=(0, 1, 2),
        grad_output=randn(B, H, L, DV, seed=18),
        case=f"gradients with a (B,1,L,S) mask, {SIZES}",
    )


def _with_empty_rows(mask: torch.Tensor) -> torch.Tensor:
    mask = mask.clone()
    mask[0, :, 2, :] = False  # batch 0, query 2: no key at all
    mask[1, :, 0, :] = False
    return mask


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_masked_row(solution, dtype):
    q, k, v = qkv(19)
    mask = _with_empty_rows(random_mask(B, 1, L, S, seed=20))
    check_call(
        solution,
        FN,
        ref.scaled_dot_product_attention,
        (q, k, v),
        {"mask": mask},
        dtype=dtype,
        case=f"fully masked rows (batch 0 query 2, batch 1 query 0) must give zeros, {SIZES}",
    )


@pytest.mark.tier("edge")
def test_gradients_fully_masked_row(solution):
    q, k, v = qkv(22)
    mask = _with_empty_rows(random_mask(B, 1, L, S, seed=23))
    check_grads(
        solution,
        FN,
        ref.scaled_dot_product_attention,
        (q, k, v),
        {"mask": mask},
        wrt=(0, 1, 2),
        grad_output=randn(B, H, L, DV, seed=24),
        case=f"gradients with fully masked rows (must stay finite), {SIZES}",
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_large_logits(solution, dtype):
    q, k, v = qkv(25, scale=60.0)  # logits of order 1e4
    mask = random_mask(B, 1, L, S, seed=26)
    check_call(
        solution,
        FN,
        ref.scaled_dot_product_attention,
        (q, k, v),
        {"mask": mask},
        dtype=dtype,
        case=f"large logits (|q.k|/sqrt(d) up to ~1e4), {SIZES}",
    )


@pytest.mark.tier("edge")
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda(solution):
    q, k, v = (t.float().cuda() for t in qkv(28))
    mask = random_mask(B, 1, L, S, seed=29).cuda()
    out = solution.call(FN, (q, k, v), {"mask": mask})
    assert_close(
        out.value,
        ref.scaled_dot_product_attention(q.double(), k.double(), v.double(), mask=mask),
        case=f"CUDA float32 inputs, {SIZES}",
        baseline=ref.scaled_dot_product_attention(q, k, v, mask=mask),
    )
