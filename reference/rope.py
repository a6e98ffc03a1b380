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
    # BEGIN SOLUTION
    d = x.shape[-1]
    if d % 2:
        raise ValueError(f"RoPE needs an even feature dim, got d = {d}")
    # Angles in float64, then cast: exact enough for any position a test uses.
    inv_freq = theta ** (-torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)  # (d/2,)
    pos = positions.to(device=x.device, dtype=torch.float64)  # (L,) or (B, L)
    angles = pos[..., None] * inv_freq  # (L, d/2) or (B, L, d/2)
    if angles.dim() == 3:
        angles = angles[:, None]  # (B, 1, L, d/2): the same angles for every head
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    if interleaved:
        a, b = x[..., 0::2], x[..., 1::2]  # (B, H, L, d/2) each
        # stack + flatten puts each rotated pair back side by side: (a0', b0', a1', b1', ...)
        return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
    a, b = x[..., : d // 2], x[..., d // 2 :]  # (B, H, L, d/2) each
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
    # END SOLUTION
