"""Top-k (content-based) sparse attention: each query keeps only its top_k best keys.

Shapes: q (..., L, d), k (..., S, d), v (..., S, dv) -> (..., L, dv).
"""

from __future__ import annotations

import math

import torch


def topk_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    top_k: int,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    """Attention in which each query attends only its top_k highest-scoring allowed keys.

    Among the keys a query may attend (mask True, or every key when mask is None), it keeps
    the top_k with the largest scaled scores, or all of them when fewer are allowed. The
    softmax runs over the kept keys only; every other key gets weight 0.

    Args:
        q: (..., L, d) queries.
        k: (..., S, d) keys.
        v: (..., S, dv) values.
        top_k: how many keys each query keeps, >= 1.
        mask: bool, broadcastable to (..., L, S); True = may attend. None = no mask.
        scale: multiplies the scores; None means 1 / sqrt(d).

    Returns:
        (..., L, dv) in q's dtype and device; zeros for a query with no allowed key.
        Differentiable w.r.t. q, k and v through the kept scores.

    Raises:
        ValueError: if top_k < 1.
    """
    # BEGIN SOLUTION
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    d, S = q.shape[-1], k.shape[-2]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale  # (..., L, S)
    if mask is not None:
        # Mask first: a disallowed key must never take one of the top_k places.
        scores = scores.masked_fill(~mask, float("-inf"))
    # Disallowed keys score -inf, so a row with fewer than top_k allowed keys picks them
    # last and they stay -inf after the scatter: weight 0.
    kept, idx = scores.topk(min(top_k, S), dim=-1)  # (..., L, k)
    sparse = torch.full_like(scores, float("-inf")).scatter(-1, idx, kept)  # (..., L, S)

    # Safe softmax over the kept keys: a row with no allowed key gets zeros, not NaN.
    row_max = sparse.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    weights = torch.exp(sparse - row_max)
    denom = weights.sum(dim=-1, keepdim=True)
    weights = weights / torch.where(denom > 0, denom, torch.ones_like(denom))
    return weights @ v  # (..., L, dv)
    # END SOLUTION
