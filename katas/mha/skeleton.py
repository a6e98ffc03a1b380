"""Multi-head self-attention as an nn.Module, written by hand.

Shapes: x (B, L, D) -> (B, L, D), with H heads of size d = D // H.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    """Self-attention with H query heads and H key/value heads (Vaswani et al., 2017).

    Submodules (the grader loads its weights into these names):
        q_proj, k_proj, v_proj, o_proj: nn.Linear(d_model, d_model, bias=bias).
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
