"""Sliding-window (local) attention that never builds the L x S score matrix.

Shapes: q (B, H, L, d), k (B, H, S, d), v (B, H, S, dv) -> (B, H, L, dv).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def sliding_window_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    window: tuple[int, int],
    scale: float | None = None,
) -> torch.Tensor:
    """Attention where each query sees only the keys in a band around its position.

    Query i sits at p = S - L + i (bottom-right alignment) and may attend key j iff
    p - left <= j <= p + right, with (left, right) = window in flash-attn's convention;
    -1 on a side means unbounded on that side. Mistral's window of W keys is (W - 1, 0);
    Longformer's w is (w // 2, w // 2); (-1, 0) is plain causal attention.

    Args:
        q: (B, H, L, d) queries.
        k: (B, H, S, d) keys.
        v: (B, H, S, dv) values.
        window: (left, right), each >= 0 or -1.
        scale: multiplies the scores; None means 1 / sqrt(d).

    Returns:
        (B, H, L, dv) in q's dtype and device; zeros for a query with no key in its window.
        Extra memory is O(B * H * L * (left + 1 + right) * d), not O(L * S).
    """
    raise NotImplementedError("write this part")
