# A typical first attempt: everything is right except the KV expansion. .repeat gives the
# shape (B, H, L, d) that repeat_interleave gives, but query head h reads KV head h % Hkv
# instead of h // (H // Hkv). Tests with Hkv = 1 or Hkv = H cannot see the difference.
import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads, bias=True):
        super().__init__()
        assert d_model % n_heads == 0 and n_heads % n_kv_heads == 0
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.d_k = d_model // n_heads
        self.q_proj = nn.Linear(d_model, n_heads * self.d_k, bias=bias)
        self.k_proj = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)
        self.v_proj = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)
        self.o_proj = nn.Linear(n_heads * self.d_k, d_model, bias=bias)

    def forward(self, x, attn_mask=None, is_causal=False):
        B, L, _ = x.shape
        g = self.n_heads // self.n_kv_heads
        q = self.q_proj(x).view(B, L, self.n_heads, self.d_k).transpose(1, 2)
        k = self.k_proj(x).view(B, L, self.n_kv_heads, self.d_k).transpose(1, 2).repeat(1, g, 1, 1)
        v = self.v_proj(x).view(B, L, self.n_kv_heads, self.d_k).transpose(1, 2).repeat(1, g, 1, 1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        keep = torch.ones(L, L, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep.tril()
        if attn_mask is not None:
            keep = keep & attn_mask
        scores = scores.masked_fill(~keep, float("-inf"))
        weights = torch.nan_to_num(torch.softmax(scores, dim=-1))
        out = (weights @ v).transpose(1, 2).contiguous().view(B, L, -1)
        return self.o_proj(out)
