"""Scaled dot-product attention in PyTorch, written by hand.

Shapes: q (..., L, d), k (..., S, d), v (..., S, dv) -> (..., L, dv).
"""

from __future__ import annotations

import math

import torch


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    """softmax(q @ k^T * scale, masked) @ v over the last two dimensions.

    Args:
        q: (..., L, d) queries.
        k: (..., S, d) keys.
        v: (..., S, dv) values.
        mask: bool, broadcastable to (..., L, S); True = this query may attend this key.
        scale: multiplies the scores; None means 1 / sqrt(d).

    Returns:
        (..., L, dv) in q's dtype and device. A query with no key it may attend gets zeros.
        Differentiable w.r.t. q, k and v; the inputs are not modified.
    """
    # BEGIN SOLUTION
    d = q.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale  # (..., L, S)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    # Subtract the row max so exp() cannot overflow; a row with no allowed key has max
    # -inf, and shifting it by 0 instead keeps every exp() at exactly 0 (no NaN).
    row_max = scores.amax(dim=-1, keepdim=True)  # (..., L, 1)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    weights = torch.exp(scores - row_max)  # (..., L, S)
    denom = weights.sum(dim=-1, keepdim=True)  # (..., L, 1)
    weights = weights / torch.where(denom > 0, denom, torch.ones_like(denom))
    return weights @ v  # (..., L, dv)
    # END SOLUTION
