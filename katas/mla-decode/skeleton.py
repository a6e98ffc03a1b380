"""DeepSeek MLA at inference time: a latent KV cache and weight absorption, written by hand.

Shapes: x (B, L, D) new tokens, cache (B, P, kv_lora_rank + rope) ->
(out (B, L, D), new_cache (B, P + L, kv_lora_rank + rope)). The per-head keys and values of
the cached tokens are never built: queries are moved into the latent space instead.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class LatentDecoder(nn.Module):
    """MLA decoding with the mla kata's constructor, submodules, weights, RoPE and scale.

    Submodules (all Linear layers bias=False, norms nn.RMSNorm(dim, eps=1e-6)):
        q_proj: Linear(D, H*(nope+rope))                 when q_lora_rank is None
        q_a_proj: Linear(D, q_lora_rank), q_a_norm,      when q_lora_rank is given
        q_b_proj: Linear(q_lora_rank, H*(nope+rope))
        kv_a_proj: Linear(D, kv_lora_rank + rope)        -> [c_kv | k_rope]
        kv_a_norm: RMSNorm(kv_lora_rank)                 on c_kv only
        kv_b_proj: Linear(kv_lora_rank, H*(nope+v))      per head: [k_nope | value]
        o_proj: Linear(H*v, D)
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        kv_lora_rank: int,
        qk_nope_head_dim: int,
        qk_rope_head_dim: int,
        v_head_dim: int,
        q_lora_rank: int | None = None,
        rope_theta: float = 10000.0,
    ) -> None:
        super().__init__()
        raise NotImplementedError("write this part")

    def forward(
        self, x: torch.Tensor, cache: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Attend the new tokens x, causally, to the cached tokens and to themselves.

        Args:
            x: (B, L, D), the L new tokens.
            cache: None (P = 0) or (B, P, kv_lora_rank + rope): per earlier token its
                normalised latent c_kv (after kv_a_norm) followed by its rotated rope key.

        Returns:
            out: (B, L, D), equal to the mla kata's causal forward over all P + L tokens,
                restricted to the new ones (token i at position P + i attends keys 0 .. P + i).
            new_cache: (B, P + L, kv_lora_rank + rope), the given cache followed by the new
                tokens' entries. x and the given cache are not modified.
        """
        raise NotImplementedError("write this part")
