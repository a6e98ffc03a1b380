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
    raise NotImplementedError("write this part")
