"""vLLM-style decoding over a paged KV cache: one new query per sequence attends its keys,
which live in fixed-size blocks scattered over a shared pool and found through a block table.

Shapes: q (B, H, d), k_cache (num_blocks, block_size, Hkv, d), v_cache (num_blocks,
block_size, Hkv, dv), block_table (B, max_blocks), context_lens (B,) -> out (B, H, dv).
"""

from __future__ import annotations

import math

import torch


def paged_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_table: torch.Tensor,
    context_lens: torch.Tensor,
    scale: float | None = None,
) -> torch.Tensor:
    """Single-query attention of every sequence over its paged keys and values.

    Args:
        q: (B, H, d), the one new query token of each sequence.
        k_cache: (num_blocks, block_size, Hkv, d), the pool of key blocks.
        v_cache: (num_blocks, block_size, Hkv, dv), the pool of value blocks.
        block_table: int32 or int64 (B, max_blocks). Token t of sequence b is stored at
            k_cache[block_table[b, t // block_size], t % block_size] (and the same slot of
            v_cache). Entries after the first ceil(context_lens[b] / block_size) are
            padding: valid ids of unrelated blocks. Blocks may be shared between sequences.
        context_lens: int32 or int64 (B,), the tokens of each sequence, the new one included
            (its key and value are already in the cache, at t = context_lens[b] - 1);
            0 <= context_lens[b] <= max_blocks * block_size.
        scale: multiplies the scores; None means 1 / sqrt(d).

    Returns:
        (B, H, dv) in q's dtype: out[b, h] = sum over t < context_lens[b] of
        softmax_t(scale * q[b, h] . k_t) v_t, with query head h reading KV head
        h // (H // Hkv); a sequence of length 0 gets zeros. Slots past a sequence's length
        and padding blocks are never attended; no input is modified.
    """
    # BEGIN SOLUTION
    B, H, d = q.shape
    block_size, Hkv = k_cache.shape[1], k_cache.shape[2]
    dv = v_cache.shape[-1]
    g = H // Hkv  # query heads per KV head
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    out = torch.zeros(B, H, dv, dtype=q.dtype, device=q.device)  # length 0 -> zeros
    lengths = context_lens.tolist()
    for b in range(B):
        n = int(lengths[b])
        if n == 0:
            continue
        n_blocks = -(-n // block_size)  # ceil: a partly filled last block counts
        blocks = block_table[b, :n_blocks].long()  # (n_blocks,) physical ids, in logical order
        # Only this sequence's blocks are gathered: (n, Hkv, d), never the whole padded batch.
        k = k_cache[blocks].reshape(n_blocks * block_size, Hkv, d)[:n]
        v = v_cache[blocks].reshape(n_blocks * block_size, Hkv, dv)[:n]
        qb = q[b].view(Hkv, g, d)  # query head h = kv * g + i reads KV head kv = h // g
        scores = torch.einsum("kgd,tkd->kgt", qb, k) * scale  # (Hkv, g, n)
        weights = torch.softmax(scores, dim=-1)  # every row has n >= 1 keys
        out[b] = torch.einsum("kgt,tkd->kgd", weights, v).reshape(H, dv)
    return out
    # END SOLUTION
