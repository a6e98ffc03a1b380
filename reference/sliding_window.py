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
    # BEGIN SOLUTION
    B, H, L, d = q.shape
    S = k.shape[-2]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    left, right = window
    # Offsets beyond these reach no key, so an unbounded side is the largest useful one.
    left = S - 1 if left < 0 else min(left, S - 1)
    right = L - 1 if right < 0 else min(right, L - 1)
    W = left + 1 + right  # key slots per query
    query_pos = torch.arange(L, device=q.device) + (S - L)  # (L,) absolute positions p

    if W >= S:
        # The band is as wide as the key axis: plain (L, S) scores cost no more.
        key_pos = torch.arange(S, device=q.device).expand(L, S)  # (L, S)
        scores = q @ k.transpose(-2, -1)  # (B, H, L, S)
    else:
        # Pad the key axis so every window [p - left, p + right] is a full slice of W
        # rows; positions start at S - L, which is negative when L > S.
        pad_front = left + max(0, L - S)
        k_pad = F.pad(k, (0, 0, pad_front, right))  # (B, H, pad_front + S + right, d)
        v_pad = F.pad(v, (0, 0, pad_front, right))
        # unfold is a strided view (no copy): window u covers padded rows u .. u + W - 1,
        # and query i's window starts at padded row p - left + pad_front = first + i.
        first = max(0, S - L)
        k_win = k_pad.unfold(2, W, 1)[:, :, first : first + L]  # (B, H, L, d, W)
        v_win = v_pad.unfold(2, W, 1)[:, :, first : first + L]  # (B, H, L, dv, W)
        key_pos = (query_pos - left).unsqueeze(1) + torch.arange(W, device=q.device)  # (L, W)
        scores = (q.unsqueeze(-2) @ k_win).squeeze(-2)  # (B, H, L, W)

    p = query_pos.unsqueeze(1)  # (L, 1)
    # Slots outside the window or on padding (before key 0, after key S - 1) are not keys.
    valid = (key_pos >= 0) & (key_pos < S) & (key_pos >= p - left) & (key_pos <= p + right)
    scores = (scores * scale).masked_fill(~valid, float("-inf"))  # (B, H, L, W or S)

    # Safe softmax: a query whose window holds no key gets zeros, not NaN.
    row_max = scores.amax(dim=-1, keepdim=True)  # (B, H, L, 1)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    weights = torch.exp(scores - row_max)
    denom = weights.sum(dim=-1, keepdim=True)
    weights = weights / torch.where(denom > 0, denom, torch.ones_like(denom))
    if W >= S:
        return weights @ v  # (B, H, L, dv)
    return (v_win @ weights.unsqueeze(-1)).squeeze(-1)  # (B, H, L, dv)
    # END SOLUTION
