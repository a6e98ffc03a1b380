"""Boolean attention masks built by hand: bottom-right causal and key padding.

Masks mean "may attend": True = this query may look at this key.
"""

from __future__ import annotations

import torch


def causal_mask(
    L: int, S: int | None = None, device: torch.device | str | None = None
) -> torch.Tensor:
    """Bottom-right aligned causal mask.

    Query i sits at absolute position p = S - L + i and may attend key j iff j <= p.

    Args:
        L: number of queries.
        S: number of keys; None means S = L.
        device: where to build the mask; None means the default device (CPU).

    Returns:
        (L, S) bool tensor on `device`. With L == S it is the lower triangle including the
        diagonal; with L < S (a KV cache) the last query sees every key; with L > S the
        first L - S rows (p < 0) are all False.
    """
    raise NotImplementedError("write this part")


def padding_mask(lengths: torch.Tensor, S: int) -> torch.Tensor:
    """Key padding mask for a batch of right-padded sequences.

    Args:
        lengths: (B,) integer tensor; sequence b has lengths[b] real keys (0 <= lengths[b] <= S)
            followed by padding.
        S: padded key length.

    Returns:
        (B, 1, 1, S) bool tensor on lengths' device, True where key index < lengths[b], so it
        broadcasts against (B, H, L, S) scores.
    """
    raise NotImplementedError("write this part")
