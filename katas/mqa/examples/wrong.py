# A typical first attempt: it starts from multi-head attention and shares the first key and
# value head, but k_proj and v_proj still produce d_model features (H heads' worth), so the
# parameters and the KV cache are as large as in MHA.
import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        assert d_model % n_heads == 0
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.o_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, attn_mask=None, is_causal=False):
        B, L, D = x.shape
        q = self.q_proj(x).view(B, L, self.n_heads, self.d_k).transpose(1, 2)
        k = self.k_proj(x)[..., : self.d_k].unsqueeze(1)
        v = self.v_proj(x)[..., : self.d_k].unsqueeze(1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        keep = torch.ones(L, L, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep.tril()
        if attn_mask is not None:
            keep = keep & attn_mask
        scores = scores.masked_fill(~keep, float("-inf"))
        weights = torch.nan_to_num(torch.softmax(scores, dim=-1))
        out = (weights @ v).transpose(1, 2).contiguous().view(B, L, D)
        return self.o_proj(out)
