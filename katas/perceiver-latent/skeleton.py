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
        raise NotImplementedError("write this part")

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
        raise NotImplementedError("write this part")
