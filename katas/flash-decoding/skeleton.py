"""Flash-decoding: one query per sequence attends S keys split into N chunks; each chunk
gives a partial output and its log-sum-exp, and a log-sum-exp merge combines them exactly.

Shapes: q (B, H, d), k (B, Hkv, S, d), v (B, Hkv, S, dv) -> partials (B, H, N, dv) and
(B, H, N) -> out (B, H, dv).
"""

from __future__ import annotations

import math

import torch


def combine(
    partial_out: torch.Tensor, partial_lse: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge N partial attention results into one, exactly.

    Args:
        partial_out: (..., N, dv), each chunk's softmax-weighted average of its values
            (finite; 0 for a chunk without keys).
        partial_lse: (..., N), each chunk's log sum exp of its scores (-inf without keys).

    Returns:
        (out (..., dv), lse (...)) in partial_out's dtype: lse = log sum_c exp(lse_c) and
        out = sum_c exp(lse_c - lse) out_c. If every lse_c is -inf, out is 0 and lse -inf.
        Stable for |lse_c| up to 1e4. The inputs are not modified.
    """
    raise NotImplementedError("write this part")


def flash_decode(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    num_splits: int,
    lengths: torch.Tensor | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    """Split-K decoding attention: N partials, merged with one call of `combine`.

    Args:
        q: (B, H, d), one query per sequence.
        k: (B, Hkv, S, d) keys; query head h reads KV head h // (H // Hkv).
        v: (B, Hkv, S, dv) values.
        num_splits: N >= 1 (else ValueError). With cs = ceil(S / N), split c covers keys
            [c * cs, min((c + 1) * cs, S)): splits past S are empty.
        lengths: None (every sequence has S keys) or int (B,) with 0 <= lengths[b] <= S:
            query b attends keys j < lengths[b].
        scale: multiplies the scores; None means 1 / sqrt(d).

    Returns:
        out (B, H, dv) in q's dtype: softmax attention over the allowed keys (0 where a
        sequence has none), computed as N partials (partial_out (B, H, N, dv): each split's
        softmax average over its allowed keys, 0 when it has none; partial_lse (B, H, N):
        their log-sum-exp, -inf when none) merged by one call of this module's `combine`.
        Stable for logits up to 1e4 in magnitude; the inputs are not modified.
    """
    raise NotImplementedError("write this part")
