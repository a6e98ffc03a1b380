# A typical first attempt: heads, scale and masks are right, and it passes the plain tests,
# but torch.softmax over a row that is all -inf (a fully padded sequence) returns NaN.
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
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
        k = self.k_proj(x).view(B, L, self.n_heads, self.d_k).transpose(1, 2)
        v = self.v_proj(x).view(B, L, self.n_heads, self.d_k).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if is_causal:
            causal = torch.tril(torch.ones(L, L, dtype=torch.bool, device=x.device))
            scores = scores.masked_fill(~causal, float("-inf"))
        if attn_mask is not None:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).contiguous().view(B, L, D)
        return self.o_proj(out)
