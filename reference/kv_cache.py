"""Grouped-query attention with RoPE and a KV cache: prefill and decoding, written by hand.

Shapes: x (B, L, D) new tokens, cache (k, v) each (B, Hkv, P, d) ->
(out (B, L, D), (k', v') each (B, Hkv, P + L, d)).
"""

from __future__ import annotations

import math

import torch
from torch import nn

# BEGIN SOLUTION


def rotate(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """rotate_half RoPE of x (..., L, d) at the given (L,) positions: pair i is (x[i], x[i + d/2])."""
    d = x.shape[-1]
    inv_freq = theta ** (-torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)  # (d/2,)
    angles = positions.to(torch.float64)[:, None] * inv_freq  # (L, d/2)
    angles = torch.cat([angles, angles], dim=-1)  # (L, d): both halves use pair i's angle
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    half = d // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)  # rotate_half(x)
    return x * cos + rotated * sin


# END SOLUTION


class CachedAttention(nn.Module):
    """GQA self-attention for decoding: RoPE on queries and keys, a cache of past keys/values.

    Submodules (bias as given): q_proj: Linear(D, H*d); k_proj, v_proj: Linear(D, Hkv*d);
    o_proj: Linear(H*d, D); d = D // H.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_kv_heads: int,
        rope_theta: float = 10000.0,
        bias: bool = False,
    ) -> None:
        super().__init__()
        # BEGIN SOLUTION
        if d_model % n_heads or n_heads % n_kv_heads:
            raise ValueError("n_heads must divide d_model and n_kv_heads must divide n_heads")
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.head_dim = d_model // n_heads
        if self.head_dim % 2:
            raise ValueError("RoPE needs an even head dim")
        self.rope_theta = rope_theta
        self.q_proj = nn.Linear(d_model, n_heads * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(n_heads * self.head_dim, d_model, bias=bias)
        # END SOLUTION

    def forward(
        self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """Attend the new tokens x to the cached ones and to themselves.

        Args:
            x: (B, L, D), the L new tokens.
            cache: None (P = 0) or (k_cache, v_cache), each (B, Hkv, P, d): the rotated
                keys and the values of the P earlier tokens.

        Returns:
            out: (B, L, D). New token i sits at position P + i and attends keys 0 .. P + i.
            (k_cache', v_cache'): each (B, Hkv, P + L, d), the given cache followed by the
                new tokens' rotated keys and values (Hkv heads, not repeated). x and the
                given cache are not modified.
        """
        # BEGIN SOLUTION
        B, L, _ = x.shape
        H, Hkv, d = self.n_heads, self.n_kv_heads, self.head_dim
        P = 0 if cache is None else cache[0].shape[2]
        positions = torch.arange(P, P + L, device=x.device)  # (L,)

        q = self.q_proj(x).view(B, L, H, d).transpose(1, 2)  # (B, H, L, d)
        k = self.k_proj(x).view(B, L, Hkv, d).transpose(1, 2)  # (B, Hkv, L, d)
        v = self.v_proj(x).view(B, L, Hkv, d).transpose(1, 2)  # (B, Hkv, L, d)
        q = rotate(q, positions, self.rope_theta)
        k = rotate(
            k, positions, self.rope_theta
        )  # rotated once, here; cached keys stay as they are
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)  # (B, Hkv, P + L, d)
            v = torch.cat([cache[1], v], dim=2)
        new_cache = (k, v)

        g = H // Hkv
        k_all = k.repeat_interleave(g, dim=1)  # (B, H, P + L, d): query head h reads KV head h // g
        v_all = v.repeat_interleave(g, dim=1)
        scores = (q @ k_all.transpose(-2, -1)) / math.sqrt(d)  # (B, H, L, P + L)
        allowed = torch.ones(L, P + L, dtype=torch.bool, device=x.device).tril(P)  # bottom-right
        scores = scores.masked_fill(~allowed, float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v_all  # (B, H, L, d); every row has key 0..P
        y = y.transpose(1, 2).reshape(B, L, H * d)  # (B, L, H*d)
        return self.o_proj(y), new_cache
        # END SOLUTION
