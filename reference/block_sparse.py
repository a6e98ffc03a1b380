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
    # BEGIN SOLUTION
    i = torch.arange(nb, device=device).unsqueeze(1)  # (nb, 1) query blocks
    j = torch.arange(nb, device=device).unsqueeze(0)  # (1, nb) key blocks
    # Global blocks work both ways: they see every block and every block sees them.
    layout = ((i - j).abs() <= window) | (i < n_global) | (j < n_global)  # (nb, nb)
    if random_blocks is not None and random_blocks.numel() > 0:
        # Row i gains the key blocks random_blocks[i]; repeats and blocks already in the
        # window change nothing (it is a set).
        layout = layout.scatter(1, random_blocks.to(device=layout.device, dtype=torch.long), True)
    return layout
    # END SOLUTION


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
    # BEGIN SOLUTION
    nb = -(-L // block)  # ceil: a short last block is still a block
    layout = block_layout(nb, window, n_global, random_blocks, device)  # (nb, nb)
    blk = torch.arange(L, device=device) // block  # (L,) block of each token
    return layout[blk.unsqueeze(1), blk.unsqueeze(0)]  # (L, L)
    # END SOLUTION


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
    # BEGIN SOLUTION
    L, d = q.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    nb = -(-L // block)
    layout = block_layout(nb, window, n_global, random_blocks, q.device)  # (nb, nb): tiny
    offsets = torch.arange(block, device=q.device)  # (block,)
    outs = []
    for i in range(nb):
        # Token indices of the allowed key blocks; the short last block is clipped to L.
        keys = (
            layout[i].nonzero().squeeze(1).unsqueeze(1) * block + offsets
        ).flatten()  # (n * block,)
        keys = keys[keys < L]
        q_i = q[..., i * block : (i + 1) * block, :]  # (B, H, bq, d), bq <= block
        scores = (q_i @ k[..., keys, :].transpose(-2, -1)) * scale  # (B, H, bq, n_keys)
        # Every query block sees at least its own block, so no row is empty.
        weights = torch.softmax(scores, dim=-1)
        outs.append(weights @ v[..., keys, :])  # (B, H, bq, dv)
    return torch.cat(outs, dim=-2)  # (B, H, L, dv)
    # END SOLUTION
