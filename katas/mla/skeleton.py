"""Multi-head Latent Attention (DeepSeek-V2), written by hand.

Shapes: x (B, L, D) -> (B, L, D). Keys and values are rebuilt from a per-token latent
c_kv (kv_lora_rank values) plus one RoPE key shared by all heads, which is all a KV cache
has to keep per token.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class MultiHeadLatentAttention(nn.Module):
    """DeepSeek-V2 MLA: low-rank joint KV compression plus a decoupled, shared RoPE key.

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
        self, x: torch.Tensor, attn_mask: torch.Tensor | None = None, is_causal: bool = False
    ) -> torch.Tensor:
        """Self-attention over x.

        Args:
            x: (B, L, D).
            attn_mask: bool, broadcastable to (B, H, L, L); True = this query may attend
                this key. None = attend to all.
            is_causal: also forbid keys after the query (j > i); combines with attn_mask.

        Returns:
            (B, L, D) in x's dtype and device. Scores use scale 1/sqrt(nope + rope); RoPE
            (positions 0..L-1) rotates q_rope per head and the one shared k_rope. A query
            with no key it may attend gets a zero attention result before o_proj.
        """
        raise NotImplementedError("write this part")
