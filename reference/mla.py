"""Multi-head Latent Attention (DeepSeek-V2), written by hand.

Shapes: x (B, L, D) -> (B, L, D). Keys and values are rebuilt from a per-token latent
c_kv (kv_lora_rank values) plus one RoPE key shared by all heads, which is all a KV cache
has to keep per token.
"""

from __future__ import annotations

import math

import torch
from torch import nn

# BEGIN SOLUTION


def rope_cos_sin(
    L: int, dim: int, theta: float, dtype: torch.dtype, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin tables of shape (L, dim) for positions 0..L-1, rotate_half layout.

    inv_freq[i] = theta^(-2i/dim) for i < dim/2; both halves of the last dim repeat it,
    so feature i pairs with feature i + dim/2. Built in float64, returned in `dtype`.
    """
    inv_freq = theta ** (
        -torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim
    )  # (dim/2,)
    angles = torch.arange(L, dtype=torch.float64, device=device)[:, None] * inv_freq  # (L, dim/2)
    angles = torch.cat([angles, angles], dim=-1)  # (L, dim)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate x (..., L, dim) by position: pairs are (x[i], x[i + dim/2]), as in HF Llama."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)  # rotate_half(x)
    return x * cos + rotated * sin


def safe_softmax(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim where a row that is all -inf gives zeros, not NaN."""
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    weights = torch.exp(scores - row_max)
    denom = weights.sum(dim=-1, keepdim=True)
    return weights / torch.where(denom > 0, denom, torch.ones_like(denom))


# END SOLUTION


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
        # BEGIN SOLUTION
        self.n_heads = n_heads
        self.kv_lora_rank = kv_lora_rank
        self.nope_dim = qk_nope_head_dim
        self.rope_dim = qk_rope_head_dim
        self.v_dim = v_head_dim
        self.rope_theta = rope_theta
        qk_head_dim = qk_nope_head_dim + qk_rope_head_dim
        self.scale = 1.0 / math.sqrt(qk_head_dim)  # the rope part takes part in q.k too
        if q_lora_rank is None:
            self.q_proj = nn.Linear(d_model, n_heads * qk_head_dim, bias=False)
        else:
            self.q_a_proj = nn.Linear(d_model, q_lora_rank, bias=False)
            self.q_a_norm = nn.RMSNorm(q_lora_rank, eps=1e-6)
            self.q_b_proj = nn.Linear(q_lora_rank, n_heads * qk_head_dim, bias=False)
        self.kv_a_proj = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_a_norm = nn.RMSNorm(kv_lora_rank, eps=1e-6)
        self.kv_b_proj = nn.Linear(
            kv_lora_rank, n_heads * (qk_nope_head_dim + v_head_dim), bias=False
        )
        self.o_proj = nn.Linear(n_heads * v_head_dim, d_model, bias=False)
        # END SOLUTION

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
        # BEGIN SOLUTION
        B, L, _ = x.shape
        H, nope, rope, dv = self.n_heads, self.nope_dim, self.rope_dim, self.v_dim

        if hasattr(self, "q_proj"):
            q = self.q_proj(x)  # (B, L, H*(nope+rope))
        else:
            q = self.q_b_proj(self.q_a_norm(self.q_a_proj(x)))  # (B, L, H*(nope+rope))
        q = q.view(B, L, H, nope + rope).transpose(1, 2)  # (B, H, L, nope+rope)
        q_nope, q_rope = q.split([nope, rope], dim=-1)  # (B, H, L, nope), (B, H, L, rope)

        # What a KV cache keeps per token: c_kv (kv_lora_rank) and k_rope (rope).
        c_kv, k_rope = self.kv_a_proj(x).split(
            [self.kv_lora_rank, rope], dim=-1
        )  # (B, L, r), (B, L, rope)
        kv = self.kv_b_proj(self.kv_a_norm(c_kv))  # (B, L, H*(nope+v))
        kv = kv.view(B, L, H, nope + dv).transpose(1, 2)  # (B, H, L, nope+v), per head
        k_nope, v = kv.split([nope, dv], dim=-1)  # (B, H, L, nope), (B, H, L, v)

        cos, sin = rope_cos_sin(L, rope, self.rope_theta, x.dtype, x.device)  # (L, rope)
        q_rope = apply_rope(q_rope, cos, sin)  # (B, H, L, rope)
        k_rope = apply_rope(k_rope, cos, sin)[:, None]  # (B, 1, L, rope): one head for all

        q = torch.cat([q_nope, q_rope], dim=-1)  # (B, H, L, nope+rope)
        k = torch.cat([k_nope, k_rope.expand(B, H, L, rope)], dim=-1)  # (B, H, L, nope+rope)
        scores = (q @ k.transpose(-2, -1)) * self.scale  # (B, H, L, L)

        allowed = torch.ones(L, L, dtype=torch.bool, device=x.device)
        if is_causal:
            allowed = allowed.tril()  # L == S: bottom-right and top-left agree
        if attn_mask is not None:
            allowed = allowed & attn_mask  # broadcasts to (B, H, L, L)
        scores = scores.masked_fill(~allowed, float("-inf"))

        y = safe_softmax(scores) @ v  # (B, H, L, v)
        y = y.transpose(1, 2).reshape(B, L, H * dv)  # (B, L, H*v)
        return self.o_proj(y)  # (B, L, D)
        # END SOLUTION
