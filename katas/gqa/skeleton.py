"""Grouped-query self-attention as an nn.Module, written by hand.

Shapes: x (B, L, D) -> (B, L, D). H query heads of size d = D // H are split into Hkv
consecutive groups of g = H // Hkv heads; group j reads key/value head j (Ainslie et al.,
2023). Hkv = H is multi-head attention, Hkv = 1 is multi-query attention.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    """Self-attention with H query heads and Hkv key/value heads; query head h reads KV head
    h // (H // Hkv), the order of `repeat_interleave` (as in HF's `repeat_kv` and flash-attn).

    Submodules (the grader loads its weights into these names):
        q_proj: nn.Linear(d_model, n_heads * head_dim, bias=bias)
        k_proj: nn.Linear(d_model, n_kv_heads * head_dim, bias=bias)
        v_proj: nn.Linear(d_model, n_kv_heads * head_dim, bias=bias)
        o_proj: nn.Linear(n_heads * head_dim, d_model, bias=bias)
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, bias: bool = True) -> None:
        super().__init__()
        raise NotImplementedError("write this part")

    def forward(
        self,
        x: torch.Tensor,
        attn_mask: torch.Tensor | None = None,
        is_causal: bool = False,
    ) -> torch.Tensor:
        """Attend every position of `x` to the positions its mask allows.

        Args:
            x: (B, L, D) input.
            attn_mask: bool, broadcastable to (B, H, L, L); True = this query may attend this key.
            is_causal: also forbid attending to later positions (applied together with attn_mask).

        Returns:
            (B, L, D) in x's dtype and device. A query with no key it may attend gets a zero
            attention result, so its output is o_proj's bias. The input is not modified.
        """
        raise NotImplementedError("write this part")
