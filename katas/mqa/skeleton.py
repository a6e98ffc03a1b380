"""Multi-query self-attention as an nn.Module, written by hand.

Shapes: x (B, L, D) -> (B, L, D). H query heads of size d = D // H all read the same
single key head and value head (Shazeer, 2019), so the KV cache holds 2 * d values per
token instead of 2 * D.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class MultiQueryAttention(nn.Module):
    """Self-attention with H query heads sharing one key/value head.

    Submodules (the grader loads its weights into these names):
        q_proj: nn.Linear(d_model, d_model, bias=bias)   # H heads of size d
        k_proj: nn.Linear(d_model, head_dim, bias=bias)  # one head
        v_proj: nn.Linear(d_model, head_dim, bias=bias)  # one head
        o_proj: nn.Linear(d_model, d_model, bias=bias)
    """

    def __init__(self, d_model: int, n_heads: int, bias: bool = True) -> None:
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
