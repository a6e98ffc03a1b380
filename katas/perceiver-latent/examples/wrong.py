# A typical first attempt: right shapes, right heads, right scale, but padded scores are
# filled with -1e9. That is harmless while a row has at least one real token; a batch row
# that is all padding then attends uniformly to the padding and returns its mean.
import torch
from torch import nn


class PerceiverLatentAttention(nn.Module):
    def __init__(self, d_model, n_heads, n_latents, latent_dim=None):
        super().__init__()
        self.e = latent_dim or d_model
        self.h, self.n = n_heads, n_latents
        self.latents = nn.Parameter(torch.randn(n_latents, self.e))
        self.q_proj = nn.Linear(self.e, self.e)
        self.k_proj = nn.Linear(d_model, self.e)
        self.v_proj = nn.Linear(d_model, self.e)
        self.o_proj = nn.Linear(self.e, d_model)

    def forward(self, x, key_padding_mask=None):
        B, S, _ = x.shape
        d = self.e // self.h
        q = self.q_proj(self.latents).view(self.n, self.h, d).transpose(0, 1)
        k = self.k_proj(x).view(B, S, self.h, d).transpose(1, 2)
        v = self.v_proj(x).view(B, S, self.h, d).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / d**0.5
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask[:, None, None, :] == 0, -1e9)
        y = torch.softmax(scores, dim=-1) @ v
        return self.o_proj(y.transpose(1, 2).reshape(B, self.n, self.e))
