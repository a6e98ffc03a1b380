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
    raise NotImplementedError("write this part")


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
    raise NotImplementedError("write this part")


def _safe_softmax(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis; a row that is all -inf gives zeros, not NaN."""
    raise NotImplementedError("write this part")
