"""Latent-query cross-attention (Perceiver / Set Transformer pooling), written by hand.

Shapes: x (B, S, D) -> (B, N, D): N learned latent vectors ask the questions, the input
tokens answer, so the output has N rows whatever S is.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class PerceiverLatentAttention(nn.Module):
    """N learned latent queries cross-attend to the input sequence.

    Parameters and submodules (all Linear layers with bias):
        latents: nn.Parameter (n_latents, latent_dim)
        q_proj: Linear(latent_dim, latent_dim)     applied to the latents, never to x
        k_proj, v_proj: Linear(d_model, latent_dim)
        o_proj: Linear(latent_dim, d_model)
    latent_dim defaults to d_model; head dim = latent_dim // n_heads.
    """

    def __init__(
        self, d_model: int, n_heads: int, n_latents: int, latent_dim: int | None = None
    ) -> None:
        super().__init__()
        # BEGIN SOLUTION
        latent_dim = d_model if latent_dim is None else latent_dim
        if latent_dim % n_heads:
            raise ValueError(f"latent_dim {latent_dim} is not divisible by n_heads {n_heads}")
        self.n_heads = n_heads
        self.n_latents = n_latents
        self.latent_dim = latent_dim
        self.head_dim = latent_dim // n_heads
        self.latents = nn.Parameter(torch.randn(n_latents, latent_dim))
        self.q_proj = nn.Linear(latent_dim, latent_dim)
        self.k_proj = nn.Linear(d_model, latent_dim)
        self.v_proj = nn.Linear(d_model, latent_dim)
        self.o_proj = nn.Linear(latent_dim, d_model)
        # END SOLUTION

    def forward(
        self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Pool x into n_latents vectors.

        Args:
            x: (B, S, D) input tokens.
            key_padding_mask: bool (B, S); True = a real token, False = padding that no
                latent may attend. None = every token is real.

        Returns:
            (B, n_latents, D) in x's dtype and device. Scale 1/sqrt(head dim). A batch row
            with no real token gets a zero attention result, so o_proj's bias comes out.
        """
        # BEGIN SOLUTION
        B, S, _ = x.shape
        N, H, d = self.n_latents, self.n_heads, self.head_dim

        q = self.q_proj(self.latents)  # (N, E): the same queries for every batch row
        q = q.view(N, H, d).transpose(0, 1)  # (H, N, d)
        k = self.k_proj(x).view(B, S, H, d).transpose(1, 2)  # (B, H, S, d)
        v = self.v_proj(x).view(B, S, H, d).transpose(1, 2)  # (B, H, S, d)

        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)  # (B, H, N, S)
        if key_padding_mask is not None:
            # Padding hides keys (the last axis), for every head and every latent.
            scores = scores.masked_fill(~key_padding_mask[:, None, None, :], float("-inf"))
        row_max = scores.amax(dim=-1, keepdim=True)  # (B, H, N, 1)
        # A fully padded row has max -inf: shift by 0 so every exp() is exactly 0, not NaN.
        row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
        weights = torch.exp(scores - row_max)  # (B, H, N, S)
        denom = weights.sum(dim=-1, keepdim=True)  # (B, H, N, 1)
        weights = weights / torch.where(denom > 0, denom, torch.ones_like(denom))

        y = weights @ v  # (B, H, N, d)
        y = y.transpose(1, 2).reshape(B, N, H * d)  # (B, N, E)
        return self.o_proj(y)  # (B, N, D)
        # END SOLUTION
