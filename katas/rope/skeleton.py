"""Rotary position embedding (RoPE), written by hand, in both pair layouts.

Shapes: x (B, H, L, d), positions (L,) or (B, L) -> (B, H, L, d).
"""

from __future__ import annotations

import torch


def apply_rope(
    x: torch.Tensor, positions: torch.Tensor, theta: float = 10000.0, interleaved: bool = False
) -> torch.Tensor:
    """Rotate each pair of features of x by an angle proportional to its token's position.

    inv_freq_i = theta^(-2i/d) for i = 0 .. d/2 - 1 and angle = position * inv_freq_i.
    Pair i is (x[..., i], x[..., i + d/2]) when interleaved is False (GPT-NeoX, HF's
    rotate_half) and (x[..., 2i], x[..., 2i + 1]) when it is True (GPT-J, Meta's Llama,
    DeepSeek). Each pair (a, b) becomes (a cos - b sin, a sin + b cos).

    Args:
        x: (B, H, L, d) with d even.
        positions: integer tensor (L,) (the same for every batch row) or (B, L); any
            non-negative integers, not necessarily starting at 0 or consecutive.
        theta: the RoPE base.
        interleaved: the pair layout (see above).

    Returns:
        (B, H, L, d) in x's dtype and device; x itself is not modified.

    Raises:
        ValueError: d is odd.
    """
    raise NotImplementedError("write this part")
