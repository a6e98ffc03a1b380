"""BigBird-style block-sparse attention: a window of blocks, global blocks and random blocks.

Token t is in block t // block; nb = ceil(L / block) blocks, the last one may be shorter.
Shapes: q, k (B, H, L, d), v (B, H, L, dv) -> (B, H, L, dv).
"""

from __future__ import annotations

import math

import torch


def block_layout(
    nb: int,
    window: int,
    n_global: int,
    random_blocks: torch.Tensor | None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """(nb, nb) bool: query block i may attend key block j."""
    raise NotImplementedError("write this part")


def block_sparse_mask(
    L: int,
    block: int,
    window: int,
    n_global: int,
    random_blocks: torch.Tensor | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The token-level (L, L) "may attend" mask of the block layout.

    Query block i may attend key block j iff |i - j| <= window, or i < n_global, or
    j < n_global, or j is in random_blocks[i].

    Args:
        L: sequence length (self-attention).
        block: tokens per block; nb = ceil(L / block), the last block may be shorter.
        window: blocks on each side of the diagonal block.
        n_global: the first n_global blocks are global.
        random_blocks: LongTensor (nb, r) of key blocks in [0, nb), r >= 0; None = none.
        device: where to build the mask; None = the default device.

    Returns:
        (L, L) bool tensor on `device`.
    """
    raise NotImplementedError("write this part")


def block_sparse_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    block: int,
    window: int,
    n_global: int,
    random_blocks: torch.Tensor | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    """Dense attention under `block_sparse_mask`, computed block by block.

    Args:
        q: (B, H, L, d) queries.
        k: (B, H, L, d) keys.
        v: (B, H, L, dv) values.
        block, window, n_global, random_blocks: as in `block_sparse_mask`.
        scale: multiplies the scores; None means 1 / sqrt(d).

    Returns:
        (B, H, L, dv) in q's dtype and device. No tensor grows with L * L: each query block
        only meets the keys of its allowed key blocks.
    """
    raise NotImplementedError("write this part")
