"""DeepSeek MLA at inference time: a latent KV cache and weight absorption, written by hand.

Shapes: x (B, L, D) new tokens, cache (B, P, kv_lora_rank + rope) ->
(out (B, L, D), new_cache (B, P + L, kv_lora_rank + rope)). The per-head keys and values of
the cached tokens are never built: queries are moved into the latent space instead.
"""

from __future__ import annotations

import math

import torch
from torch import nn

# BEGIN SOLUTION


def rotate(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """rotate_half RoPE of x (..., L, dim) at the given (L,) positions, as in the mla kata."""
    dim = x.shape[-1]
    inv_freq = theta ** (
        -torch.arange(0, dim, 2, dtype=torch.float64, device=x.device) / dim
    )  # (dim/2,)
    angles = positions.to(torch.float64)[:, None] * inv_freq  # (L, dim/2)
    angles = torch.cat([angles, angles], dim=-1)  # (L, dim)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    half = dim // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin


# END SOLUTION


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
        # BEGIN SOLUTION
        self.n_heads = n_heads
        self.kv_lora_rank = kv_lora_rank
        self.nope_dim = qk_nope_head_dim
        self.rope_dim = qk_rope_head_dim
        self.v_dim = v_head_dim
        self.rope_theta = rope_theta
        qk_head_dim = qk_nope_head_dim + qk_rope_head_dim
        self.scale = 1.0 / math.sqrt(qk_head_dim)  # as in training: the rope part is in q.k too
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
        # BEGIN SOLUTION
        B, L, _ = x.shape
        H, nope, rope, dv, r = (
            self.n_heads,
            self.nope_dim,
            self.rope_dim,
            self.v_dim,
            self.kv_lora_rank,
        )
        P = 0 if cache is None else cache.shape[1]
        positions = torch.arange(P, P + L, device=x.device)  # (L,)

        if hasattr(self, "q_proj"):
            q = self.q_proj(x)  # (B, L, H*(nope+rope))
        else:
            q = self.q_b_proj(self.q_a_norm(self.q_a_proj(x)))
        q = q.view(B, L, H, nope + rope).transpose(1, 2)  # (B, H, L, nope+rope)
        q_nope, q_rope = q.split([nope, rope], dim=-1)  # (B, H, L, nope), (B, H, L, rope)
        q_rope = rotate(q_rope, positions, self.rope_theta)

        c_kv, k_rope = self.kv_a_proj(x).split([r, rope], dim=-1)  # (B, L, r), (B, L, rope)
        entry = torch.cat(
            [self.kv_a_norm(c_kv), rotate(k_rope, positions, self.rope_theta)], dim=-1
        )
        new_cache = entry if cache is None else torch.cat([cache, entry], dim=1)  # (B, P+L, r+rope)
        c_all, k_rope_all = new_cache.split([r, rope], dim=-1)  # (B, S, r), (B, S, rope)

        # kv_b_proj.weight is (H*(nope+v), r), per head [W_UK (nope rows) | W_UV (v rows)].
        w = self.kv_b_proj.weight.view(H, nope + dv, r)
        w_uk, w_uv = w[:, :nope], w[:, nope:]  # (H, nope, r), (H, v, r)
        # q_nope . (W_UK c) = (W_UK^T q_nope) . c: the query moves into the latent space.
        q_lat = torch.einsum("bhln,hnr->bhlr", q_nope, w_uk)  # (B, H, L, r)
        scores = q_lat @ c_all[:, None].transpose(-2, -1)  # (B, H, L, S)
        scores = scores + q_rope @ k_rope_all[:, None].transpose(-2, -1)  # shared rope key
        scores = scores * self.scale
        S = P + L
        allowed = torch.ones(L, S, dtype=torch.bool, device=x.device).tril(P)  # bottom-right
        scores = scores.masked_fill(~allowed, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, H, L, S); every row has keys 0 .. P
        o_lat = weights @ c_all[:, None]  # (B, H, L, r): weights applied to the latents
        y = torch.einsum("bhlr,hvr->bhlv", o_lat, w_uv)  # (B, H, L, v): then W_UV
        y = y.transpose(1, 2).reshape(B, L, H * dv)  # (B, L, H*v)
        return self.o_proj(y), new_cache
        # END SOLUTION
