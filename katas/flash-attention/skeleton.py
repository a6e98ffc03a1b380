"""FlashAttention's forward pass: tiles of queries against tiles of keys, with an online
softmax, so the L x S score matrix never exists.

Shapes: q (B, H, L, d), k (B, H, S, d), v (B, H, S, dv) -> out (B, H, L, dv), lse (B, H, L).
"""

from __future__ import annotations

import math

import torch


def flash_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    block_q: int = 64,
    block_k: int = 64,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact attention computed tile by tile with an online softmax.

    Args:
        q: (B, H, L, d) queries.
        k: (B, H, S, d) keys.
        v: (B, H, S, dv) values.
        mask: bool, broadcastable to (B, H, L, S); True = this query may attend this key.
        is_causal: bottom-right causal (query i at p = S - L + i sees keys j <= p); applies
            together with `mask`.
        scale: multiplies the scores; None means 1 / sqrt(d).
        block_q: queries per tile (L need not be a multiple).
        block_k: keys per tile (S need not be a multiple).

    Returns:
        (out, lse): out (B, H, L, dv) = softmax(scale * q k^T, masked) @ v and
        lse (B, H, L) = log sum over allowed j of exp(scale * q_i . k_j), both in q's dtype
        and device. A query with no allowed key gets out 0 and lse -inf. No tensor with
        L x S elements is ever built; the inputs are not modified.
    """
    raise NotImplementedError("write this part")
