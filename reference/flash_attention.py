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
    # BEGIN SOLUTION
    B, H, L, d = q.shape
    S, dv = k.shape[-2], v.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    if mask is not None:
        mask = mask.expand(B, H, L, S)  # a view: tiles are sliced out of it, nothing is copied
    offset = S - L  # query i sits at absolute position p = offset + i
    outs, lses = [], []
    for i0 in range(0, L, block_q):
        i1 = min(i0 + block_q, L)
        qi = q[:, :, i0:i1] * scale  # (B, H, bq, d): scaling q once costs bq*d, not bq*bk
        m = torch.full(
            (B, H, i1 - i0, 1), float("-inf"), dtype=q.dtype, device=q.device
        )  # running max
        l_sum = torch.zeros(
            B, H, i1 - i0, 1, dtype=q.dtype, device=q.device
        )  # running sum of exp(s - m)
        acc = torch.zeros(B, H, i1 - i0, dv, dtype=q.dtype, device=q.device)  # unnormalised output
        # Causal: the last query of this tile sees keys up to offset + i1 - 1; later tiles are empty.
        s_end = min(S, max(0, offset + i1)) if is_causal else S
        for j0 in range(0, s_end, block_k):
            j1 = min(j0 + block_k, S)
            s = qi @ k[:, :, j0:j1].transpose(-2, -1)  # (B, H, bq, bk)
            allowed = None
            if is_causal:
                p = torch.arange(i0, i1, device=q.device).unsqueeze(1) + offset
                allowed = torch.arange(j0, j1, device=q.device).unsqueeze(0) <= p  # (bq, bk)
            if mask is not None:
                tile = mask[:, :, i0:i1, j0:j1]
                allowed = tile if allowed is None else tile & allowed
            if allowed is not None:
                s = s.masked_fill(~allowed, float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            # A row with no allowed key so far has m_new = -inf: shift it by 0 instead, so
            # exp(-inf - 0) = 0 rather than exp(-inf + inf) = NaN.
            shift = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))
            alpha = torch.exp(m - shift)  # rescales what was summed against the old max
            e = torch.exp(s - shift)  # (B, H, bq, bk)
            l_sum = alpha * l_sum + e.sum(dim=-1, keepdim=True)
            acc = alpha * acc + e @ v[:, :, j0:j1]
            m = m_new
        has_key = l_sum > 0
        outs.append(acc / torch.where(has_key, l_sum, torch.ones_like(l_sum)))
        lse = torch.where(
            has_key,
            m + torch.log(torch.where(has_key, l_sum, torch.ones_like(l_sum))),
            torch.full_like(m, float("-inf")),
        )
        lses.append(lse.squeeze(-1))
    return torch.cat(outs, dim=2), torch.cat(lses, dim=2)
    # END SOLUTION
