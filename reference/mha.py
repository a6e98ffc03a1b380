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
        # BEGIN SOLUTION
        if d_model % n_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.o_proj = nn.Linear(d_model, d_model, bias=bias)
        # END SOLUTION

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
        # BEGIN SOLUTION
        B, L, D = x.shape
        H, d = self.n_heads, self.head_dim
        q = self.q_proj(x).view(B, L, H, d).transpose(1, 2)  # (B, H, L, d)
        k = self.k_proj(x).view(B, L, H, d).transpose(1, 2)  # (B, H, L, d)
        v = self.v_proj(x).view(B, L, H, d).transpose(1, 2)  # (B, H, L, d)
        mask = _combine_masks(attn_mask, is_causal, L, L, x.device)
        y = _attend(q, k, v, mask)  # (B, H, L, d)
        y = y.transpose(1, 2).contiguous().view(B, L, D)  # (B, L, D): heads side by side again
        return self.o_proj(y)
        # END SOLUTION


# BEGIN SOLUTION
def _combine_masks(
    attn_mask: torch.Tensor | None, is_causal: bool, L: int, S: int, device: torch.device
) -> torch.Tensor | None:
    """The boolean "may attend" mask for (L, S) scores, or None when everything may attend.

    With `is_causal`, query i (at position S - L + i) may attend key j only if j <= S - L + i
    (bottom-right alignment); `attn_mask` and the causal mask then both apply.
    """
    if not is_causal:
        return attn_mask
    causal = torch.ones(L, S, dtype=torch.bool, device=device).tril(diagonal=S - L)  # (L, S)
    return causal if attn_mask is None else attn_mask & causal


def _attend(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None
) -> torch.Tensor:
    """softmax(q @ k^T / sqrt(d), masked) @ v over the last two dims.

    q: (..., L, d), k: (..., S, d), v: (..., S, dv), mask: bool broadcastable to (..., L, S).
    Returns (..., L, dv); a query row with no allowed key gives zeros (not NaN, not mean(v)).
    """
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])  # (..., L, S)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    # A row with no allowed key has max -inf; shifting it by 0 keeps every exp() at 0.
    row_max = scores.amax(dim=-1, keepdim=True)  # (..., L, 1)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    weights = torch.exp(scores - row_max)  # (..., L, S)
    denom = weights.sum(dim=-1, keepdim=True)  # (..., L, 1)
    weights = weights / torch.where(denom > 0, denom, torch.ones_like(denom))
    return weights @ v  # (..., L, dv)


# END SOLUTION
