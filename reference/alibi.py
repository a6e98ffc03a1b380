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
    # BEGIN SOLUTION
    if n_heads < 1:
        raise ValueError(f"ALiBi needs at least one head, got n_heads = {n_heads}")
    c = 2 ** math.floor(math.log2(n_heads))  # the closest power of two <= n
    first = [2.0 ** (-8.0 * (h + 1) / c) for h in range(c)]
    # The 2c-head slopes interleave between these; every other one (even indices) fills up.
    extra = [2.0 ** (-4.0 * (2 * t + 1) / c) for t in range(n_heads - c)]
    return torch.tensor(first + extra, dtype=torch.float32)  # (n_heads,)
    # END SOLUTION


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
    # BEGIN SOLUTION
    B, H, L, d = q.shape
    S = k.shape[-2]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    slopes = alibi_slopes(H).to(device=q.device, dtype=q.dtype)  # (H,)
    pos_q = torch.arange(S - L, S, device=q.device)  # (L,): p_i = S - L + i
    pos_k = torch.arange(S, device=q.device)  # (S,)
    distance = (pos_q[:, None] - pos_k[None, :]).abs().to(q.dtype)  # (L, S), symmetric
    bias = -slopes[:, None, None] * distance  # (H, L, S)
    scores = (q @ k.transpose(-2, -1)) * scale + bias  # (B, H, L, S): bias after the scale
    allowed = torch.ones(L, S, dtype=torch.bool, device=q.device)
    if is_causal:
        allowed = allowed.tril(S - L)  # j <= p_i
    if mask is not None:
        allowed = allowed & mask.to(q.device)  # (..., L, S) broadcast
    scores = scores.masked_fill(~allowed, float("-inf"))
    # A safe softmax: a row with no allowed key has max -inf; shift by 0 and divide by 1.
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    weights = torch.exp(scores - row_max)  # (B, H, L, S)
    total = weights.sum(dim=-1, keepdim=True)
    weights = weights / torch.where(total > 0, total, torch.ones_like(total))
    return weights @ v  # (B, H, L, dv)
    # END SOLUTION
