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
    raise NotImplementedError("write this part")
