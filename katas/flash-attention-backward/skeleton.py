"""FlashAttention's backward pass (FA-2): the gradients of attention recomputed tile by tile
from the forward's output and log-sum-exp, so the L x S probabilities are never stored.

Shapes: q (B, H, L, d), k (B, H, S, d), v (B, H, S, dv), out and dout (B, H, L, dv),
lse (B, H, L) -> dq (B, H, L, d), dk (B, H, S, d), dv (B, H, S, dv).
"""

from __future__ import annotations

import math

import torch


def flash_attention_backward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    dout: torch.Tensor,
    mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    block_q: int = 64,
    block_k: int = 64,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients of sum(out * dout) w.r.t. q, k and v, where out = softmax(scale * q k^T,
    masked) @ v, computed tile by tile.

    Args:
        q, k, v: the forward's inputs, (B, H, L, d), (B, H, S, d), (B, H, S, dv).
        out: (B, H, L, dv) the forward's output.
        lse: (B, H, L) the forward's log-sum-exp of the allowed scaled scores (-inf for a
            query with no allowed key).
        dout: (B, H, L, dv) the gradient of the loss w.r.t. out.
        mask, is_causal, scale, block_q, block_k: as in the forward.

    Returns:
        (dq, dk, dv) with the shapes of q, k and v, in q's dtype and device. Per tile:
        P = exp(scale * q k^T - lse), D = rowsum(dout * out), dS = P * (dout v^T - D).
        A query with no allowed key contributes nothing (never NaN). No tensor with
        L x S elements is ever built; the inputs are not modified.
    """
    raise NotImplementedError("write this part")
