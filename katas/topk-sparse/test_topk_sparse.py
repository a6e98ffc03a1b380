"""Grader for the `topk-sparse` kata. Run directly: pytest <this folder> --solution your_file.py

The oracle is independent of the reference: dense attention under an explicit "kept keys"
mask, built by sorting each row's allowed scores. Sizes all differ (B=2, H=3, L=7, S=11,
d=8, dv=6) so top-k over the wrong axis changes the result; the masks leave some rows
fewer allowed keys than top_k, so selecting before masking (or letting masked keys fill
the top_k places) shows; scores have no ties.
"""

import math

import pytest
import torch

from attnkata.checker.probes import check_call, check_grads, randn, random_mask
from attnkata.checker.proxy import CandidateRaised
from attnkata.reference import sdpa as dense_ref

FN = "topk_attention"
B, H, L, S, D, DV = 2, 3, 7, 11, 8, 6
DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]


def kept_mask(q, k, top_k, mask=None, scale=None):
    """(..., L, S) bool: the allowed keys whose scaled score is among the row's top_k."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale
    allowed = torch.ones_like(scores, dtype=torch.bool) if mask is None else mask.expand_as(scores)
    ranked = scores.masked_fill(~allowed, float("-inf"))
    # Rank of each score within its row (0 = largest); ties do not occur in graded inputs.
    rank = ranked.argsort(dim=-1, descending=True).argsort(dim=-1)
    return allowed & (rank < top_k)


def dense(q, k, v, top_k, mask=None, scale=None):
    keep = kept_mask(q.detach(), k.detach(), top_k, mask, scale)
    return dense_ref.scaled_dot_product_attention(q, k, v, mask=keep, scale=scale)


def qkv(seed: int, lead: tuple[int, ...] = (B, H), L: int = L, S: int = S, scale: float = 1.0):
    return (
        randn(*lead, L, D, seed=seed, scale=scale),
        randn(*lead, S, D, seed=seed + 1, scale=scale),
        randn(*lead, S, DV, seed=seed + 2),
    )


def few_keys_mask(seed: int, lead: tuple[int, ...] = (B, 1)) -> torch.Tensor:
    """A random mask in which rows 0..2 of every batch entry allow only 1, 2 and 3 keys."""
    m = random_mask(*lead, L, S, seed=seed, p=0.7)
    for row, n in enumerate((1, 2, 3)):
        m[..., row, :] = False
        m[..., row, S - 1 - 3 * row : S - 1 - 3 * row + n] = True
    return m


def describe(top_k: int, what: str = "", L: int = L, S: int = S) -> str:
    return f"top_k={top_k}, B={B}, H={H}, L={L}, S={S}, d={D}, dv={DV}" + (
        f", {what}" if what else ""
    )


@pytest.mark.parametrize("top_k", [1, 3, 5])
def test_no_mask(solution, top_k):
    check_call(solution, FN, dense, (*qkv(1), top_k), case=describe(top_k, "no mask"))


def test_three_dim_inputs(solution):
    check_call(
        solution,
        FN,
        dense,
        (*qkv(4, lead=(4,)), 4),
        case=f"3-D inputs (B=4, L={L}, d={D}), top_k=4, no mask",
    )


@pytest.mark.parametrize("top_k", [2, 4])
def test_mask_with_rows_shorter_than_top_k(solution, top_k):
    mask = few_keys_mask(7)
    check_call(
        solution,
        FN,
        dense,
        (*qkv(8), top_k),
        {"mask": mask},
        case=describe(
            top_k,
            "mask (B, 1, L, S) in which queries 0, 1, 2 may attend only 1, 2 and 3 keys: "
            "they keep every allowed key and nothing else",
        ),
    )


def test_top_k_at_least_s_is_plain_attention(solution):
    mask = random_mask(L, S, seed=11)
    check_call(
        solution,
        FN,
        lambda q, k, v, t, mask: dense_ref.scaled_dot_product_attention(q, k, v, mask=mask),
        (*qkv(12), 2 * S),
        {"mask": mask},
        case=describe(
            2 * S,
            "(L, S) mask: top_k larger than S keeps every allowed key, plain masked attention",
        ),
    )


def test_explicit_scale(solution):
    # The selection does not depend on a positive scale, but the weights do.
    check_call(solution, FN, dense, (*qkv(15), 3), {"scale": 0.3}, case=describe(3, "scale=0.3"))


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_masked_rows(solution, dtype):
    mask = few_keys_mask(18)
    mask[0, 0, 4] = False
    mask[1, 0, 6] = False
    check_call(
        solution,
        FN,
        dense,
        (*qkv(19), 3),
        {"mask": mask},
        dtype=dtype,
        case=describe(3, "query 4 of batch 0 and query 6 of batch 1 may attend no key: zeros"),
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_large_logits(solution, dtype):
    check_call(
        solution,
        FN,
        dense,
        (*qkv(22, scale=60.0), 3),
        {"mask": few_keys_mask(23)},
        dtype=dtype,
        case=describe(3, "large logits (|q.k|/sqrt(d) up to ~1e4)"),
    )


@pytest.mark.tier("edge")
def test_gradients(solution):
    mask = few_keys_mask(26)
    mask[1, 0, 5] = False  # a query with no key: its gradients are zero, not NaN
    check_grads(
        solution,
        FN,
        dense,
        (*qkv(27), 3),
        {"mask": mask},
        wrt=(0, 1, 2),
        grad_output=randn(B, H, L, DV, seed=30),
        case=describe(3, "gradients through the kept scores (query 5 of batch 1 has no key)"),
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize("top_k", [0, -2])
def test_top_k_below_one_raises(solution, top_k):
    case = describe(top_k, "top_k < 1 must raise ValueError")
    try:
        out = solution.call(FN, (*qkv(33), top_k))
    except CandidateRaised as exc:
        if exc.exc_type != "ValueError":
            raise AssertionError(f"{case}: raised {exc.exc_type}: {exc.exc_message}") from None
        return
    raise AssertionError(
        f"{case}: returned {type(out.value).__name__} instead of raising ValueError"
    )
