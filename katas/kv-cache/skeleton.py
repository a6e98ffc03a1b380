"""Grouped-query attention with RoPE and a KV cache: prefill and decoding, written by hand.

Shapes: x (B, L, D) new tokens, cache (k, v) each (B, Hkv, P, d) ->
(out (B, L, D), (k', v') each (B, Hkv, P + L, d)).
"""

from __future__ import annotations

import math

import torch
from torch import nn


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
        raise NotImplementedError("write this part")

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
        raise NotImplementedError("write this part")
