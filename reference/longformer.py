"""Longformer attention: a symmetric sliding window plus global tokens, without L x L scores.

Shapes: q, k (B, H, L, d), v (B, H, L, dv) -> (B, H, L, dv).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def longformer_mask(
    L: int, window: int, global_idx: torch.Tensor, device: torch.device | str | None = None
) -> torch.Tensor:
    """The (L, L) "may attend" mask: query i may attend key j iff |i - j| <= window, or i is
    a global position, or j is a global position.

    Args:
        L: sequence length (self-attention).
        window: keys on each side, w >= 0 (Longformer's "attention window 512" is w = 256).
        global_idx: LongTensor (G,) of distinct positions in [0, L); G may be 0.
        device: where to build the mask; None = the default device.

    Returns:
        (L, L) bool tensor on `device`.
    """
    # BEGIN SOLUTION
    pos = torch.arange(L, device=device)
    is_global = torch.zeros(L, dtype=torch.bool, device=device)
    is_global[global_idx.to(device=pos.device, dtype=torch.long)] = True  # (L,)
    band = (pos.unsqueeze(1) - pos.unsqueeze(0)).abs() <= window  # (L, L)
    # Global attention is symmetric: a global token sees everything and is seen by everything.
    return band | is_global.unsqueeze(1) | is_global.unsqueeze(0)
    # END SOLUTION


def longformer_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    window: int,
    global_idx: torch.Tensor,
    key_padding: torch.Tensor | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    """Dense attention under `longformer_mask` (and key padding), computed as a band.

    Args:
        q: (B, H, L, d) queries.
        k: (B, H, L, d) keys.
        v: (B, H, L, dv) values.
        window: keys on each side, w >= 0.
        global_idx: LongTensor (G,) of distinct global positions; G may be 0.
        key_padding: bool (B, L), True = real token; a padded key is never attended, global
            or not. None = no padding.
        scale: multiplies the scores; None means 1 / sqrt(d).

    Returns:
        (B, H, L, dv) in q's dtype and device; zeros for a query with no allowed key. Memory
        is O(L * (2 * window + 1 + G)), never O(L * L).
    """
    # BEGIN SOLUTION
    B, H, L, d = q.shape
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    w = min(window, L - 1)  # a wider window reaches no more keys
    W = 2 * w + 1  # band slots per query
    gidx = global_idx.to(device=q.device, dtype=torch.long)  # (G,)
    real = (
        torch.ones(B, L, dtype=torch.bool, device=q.device)
        if key_padding is None
        else key_padding.to(q.device)
    )  # (B, L)
    pos = torch.arange(L, device=q.device)

    # Band: pad the key axis by w on both sides; unfold is a strided view (no copy).
    k_win = F.pad(k, (0, 0, w, w)).unfold(2, W, 1)  # (B, H, L, d, W)
    v_win = F.pad(v, (0, 0, w, w)).unfold(2, W, 1)  # (B, H, L, dv, W)
    key_pos = pos.unsqueeze(1) + torch.arange(-w, w + 1, device=q.device)  # (L, W)
    inside = (key_pos >= 0) & (key_pos < L)
    real_pad = F.pad(real, (w, w)).unfold(1, W, 1)  # (B, L, W): padded keys stay out
    band_ok = (inside & real_pad).unsqueeze(1)  # (B, 1, L, W)
    band = (q.unsqueeze(-2) @ k_win).squeeze(-2) * scale  # (B, H, L, W)
    band = band.masked_fill(~band_ok, float("-inf"))

    # Global keys, for every query; one already inside a query's band is counted there only.
    k_g, v_g = k[..., gidx, :], v[..., gidx, :]  # (B, H, G, d), (B, H, G, dv)
    far = (pos.unsqueeze(1) - gidx.unsqueeze(0)).abs() > w  # (L, G)
    glob_ok = far.unsqueeze(0) & real[:, gidx].unsqueeze(1)  # (B, L, G)
    glob = (q @ k_g.transpose(-2, -1)) * scale  # (B, H, L, G)
    glob = glob.masked_fill(~glob_ok.unsqueeze(1), float("-inf"))

    weights = _safe_softmax(torch.cat([band, glob], dim=-1))  # (B, H, L, W + G)
    out = (v_win @ weights[..., :W].unsqueeze(-1)).squeeze(-1) + weights[
        ..., W:
    ] @ v_g  # (B, H, L, dv)

    # Global queries see every real key: G full rows, recomputed densely.
    scores_g = (q[..., gidx, :] @ k.transpose(-2, -1)) * scale  # (B, H, G, L)
    scores_g = scores_g.masked_fill(~real[:, None, None, :], float("-inf"))
    out_g = _safe_softmax(scores_g) @ v  # (B, H, G, dv)
    # index_copy returns a new tensor: nothing the caller passed is written to.
    return out.index_copy(2, gidx, out_g.to(out.dtype))
    # END SOLUTION


def _safe_softmax(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis; a row that is all -inf gives zeros, not NaN."""
    # BEGIN SOLUTION
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    weights = torch.exp(scores - row_max)
    denom = weights.sum(dim=-1, keepdim=True)
    return weights / torch.where(denom > 0, denom, torch.ones_like(denom))
    # END SOLUTION
