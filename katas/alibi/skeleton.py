"""ALiBi (Attention with Linear Biases): per-head slopes and attention with a linear distance
penalty instead of position embeddings, written by hand.

Shapes: q (B, H, L, d), k (B, H, S, d), v (B, H, S, dv) -> (B, H, L, dv); slopes (H,).
"""

from __future__ import annotations

import math

import torch


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """The ALiBi slope of each head (the paper's get_slopes, BLOOM's build_alibi_tensor).

    n a power of two: m_h = 2^(-8(h+1)/n), h = 0 .. n-1 (n = 8: 1/2, 1/4, ..., 1/256).
    Otherwise, with c = 2^floor(log2 n): the c slopes of c heads, then the slopes of 2c heads
    at even indices 0, 2, 4, ..., the first n - c of them: 2^(-4(2t+1)/c), t = 0 .. n-c-1.

    Args:
        n_heads: n >= 1.

    Returns:
        (n_heads,) float32.

    Raises:
        ValueError: n_heads < 1.
    """
    raise NotImplementedError("write this part")


def alibi_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    is_causal: bool = True,
    scale: float | None = None,
) -> torch.Tensor:
    """Attention whose logits carry ALiBi's linear distance penalty.

    Head h uses m_h = alibi_slopes(H)[h]. Query i sits at p_i = S - L + i (bottom-right, as
    the causal convention) and
        logits[b, h, i, j] = scale * q_i . k_j - m_h * |p_i - j|
    (the bias is added after the scale). `mask` and `is_causal` (j <= p_i) both apply; a
    query with no allowed key gets zeros.

    Args:
        q: (B, H, L, d) queries.
        k: (B, H, S, d) keys.
        v: (B, H, S, dv) values.
        mask: bool broadcastable to (B, H, L, S), True = may attend; None = no mask.
        is_causal: bottom-right causal mask (default True).
        scale: multiplies q.k; None means 1 / sqrt(d).

    Returns:
        (B, H, L, dv) in q's dtype and device; the inputs are not modified.
    """
    raise NotImplementedError("write this part")
