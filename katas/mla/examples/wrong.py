# A typical first attempt: every shape works out, but kv_b_proj's output is cut into one
# H*nope block for the keys and one H*v block for the values. Its layout is per head
# ([k_nope | value] for head 0, then head 1, ...), so for H > 1 heads read each other's features.
import math

import torch
from torch import nn


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(
        self,
        d_model,
        n_heads,
        kv_lora_rank,
        qk_nope_head_dim,
        qk_rope_head_dim,
        v_head_dim,
        q_lora_rank=None,
        rope_theta=10000.0,
    ):
        super().__init__()
        self.h, self.r, self.nope, self.rope, self.dv = (
            n_heads,
            kv_lora_rank,
            qk_nope_head_dim,
            qk_rope_head_dim,
            v_head_dim,
        )
        self.theta = rope_theta
        qk = qk_nope_head_dim + qk_rope_head_dim
        if q_lora_rank is None:
            self.q_proj = nn.Linear(d_model, n_heads * qk, bias=False)
        else:
            self.q_a_proj = nn.Linear(d_model, q_lora_rank, bias=False)
            self.q_a_norm = nn.RMSNorm(q_lora_rank, eps=1e-6)
            self.q_b_proj = nn.Linear(q_lora_rank, n_heads * qk, bias=False)
        self.kv_a_proj = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_a_norm = nn.RMSNorm(kv_lora_rank, eps=1e-6)
        self.kv_b_proj = nn.Linear(
            kv_lora_rank, n_heads * (qk_nope_head_dim + v_head_dim), bias=False
        )
        self.o_proj = nn.Linear(n_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attn_mask=None, is_causal=False):
        B, L, _ = x.shape
        q = (
            self.q_proj(x)
            if hasattr(self, "q_proj")
            else self.q_b_proj(self.q_a_norm(self.q_a_proj(x)))
        )
        q = q.view(B, L, self.h, self.nope + self.rope).transpose(1, 2)
        q_nope, q_rope = q.split([self.nope, self.rope], dim=-1)
        c_kv, k_rope = self.kv_a_proj(x).split([self.r, self.rope], dim=-1)
        kv = self.kv_b_proj(self.kv_a_norm(c_kv))
        k_nope = kv[..., : self.h * self.nope].view(B, L, self.h, self.nope).transpose(1, 2)
        v = kv[..., self.h * self.nope :].view(B, L, self.h, self.dv).transpose(1, 2)

        inv_freq = self.theta ** (-torch.arange(0, self.rope, 2, dtype=x.dtype) / self.rope)
        ang = torch.arange(L, dtype=x.dtype)[:, None] * inv_freq
        cos, sin = torch.cat([ang, ang], -1).cos(), torch.cat([ang, ang], -1).sin()
        q_rope = q_rope * cos + rotate_half(q_rope) * sin
        k_rope = (k_rope * cos + rotate_half(k_rope) * sin)[:, None].expand(B, self.h, L, self.rope)

        q = torch.cat([q_nope, q_rope], -1)
        k = torch.cat([k_nope, k_rope], -1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.nope + self.rope)
        allowed = torch.ones(L, L, dtype=torch.bool)
        if is_causal:
            allowed = allowed.tril()
        if attn_mask is not None:
            allowed = allowed & attn_mask
        scores = scores.masked_fill(~allowed, float("-inf"))
        w = torch.softmax(scores, dim=-1)
        w = torch.where(allowed.any(-1, keepdim=True), w, torch.zeros_like(w))
        y = (w @ v).transpose(1, 2).reshape(B, L, self.h * self.dv)
        return self.o_proj(y)
