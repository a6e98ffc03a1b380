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
    # BEGIN SOLUTION
    B, H, L, d = q.shape
    S = k.shape[-2]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    if mask is not None:
        mask = mask.expand(B, H, L, S)  # a view: tiles are sliced out of it
    offset = S - L  # query i sits at absolute position p = offset + i
    delta = (dout * out).sum(dim=-1, keepdim=True)  # (B, H, L, 1): D_i = rowsum(dO_i * O_i)
    # A row with no allowed key has lse = -inf and every score -inf: subtracting 0 instead
    # keeps P = exp(-inf) = 0 there (exp(-inf + inf) would be NaN).
    lse = torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse)).unsqueeze(-1)  # (B, H, L, 1)
    dq = torch.zeros_like(q)
    dks, dvs = [], []
    for j0 in range(0, S, block_k):  # FA-2: keys outside, so dK_j and dV_j stay local
        j1 = min(j0 + block_k, S)
        kj, vj = k[:, :, j0:j1], v[:, :, j0:j1]  # (B, H, bk, d), (B, H, bk, dv)
        dk_j = torch.zeros_like(kj)
        dv_j = torch.zeros_like(vj)
        # Causal: queries before the one at p = j0 see none of these keys.
        i_start = max(0, j0 - offset) if is_causal else 0
        i_start -= i_start % block_q  # keep the query tiles aligned to the forward's
        for i0 in range(i_start, L, block_q):
            i1 = min(i0 + block_q, L)
            qi, do_i = q[:, :, i0:i1], dout[:, :, i0:i1]
            s = (qi @ kj.transpose(-2, -1)) * scale  # (B, H, bq, bk)
            allowed = None
            if is_causal:
                p = torch.arange(i0, i1, device=q.device).unsqueeze(1) + offset
                allowed = torch.arange(j0, j1, device=q.device).unsqueeze(0) <= p
            if mask is not None:
                tile = mask[:, :, i0:i1, j0:j1]
                allowed = tile if allowed is None else tile & allowed
            if allowed is not None:
                s = s.masked_fill(~allowed, float("-inf"))
            prob = torch.exp(s - lse[:, :, i0:i1])  # (B, H, bq, bk): P, already normalised
            dv_j = dv_j + prob.transpose(-2, -1) @ do_i  # dV_j += P^T dO_i
            dp = do_i @ vj.transpose(-2, -1)  # (B, H, bq, bk): dP = dO_i V_j^T
            ds = prob * (dp - delta[:, :, i0:i1])  # softmax's Jacobian, through D
            dq[:, :, i0:i1] += (ds @ kj) * scale
            dk_j = dk_j + (ds.transpose(-2, -1) @ qi) * scale
        dks.append(dk_j)
        dvs.append(dv_j)
    return dq, torch.cat(dks, dim=2), torch.cat(dvs, dim=2)
    # END SOLUTION
