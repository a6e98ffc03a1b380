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
    # BEGIN SOLUTION
    lse_c = partial_lse.to(partial_out.dtype)  # (..., N)
    top = lse_c.amax(dim=-1, keepdim=True)  # (..., 1)
    # Every chunk empty: the max is -inf; shift by 0 so exp(-inf - 0) = 0, never NaN.
    shift = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    w = torch.exp(lse_c - shift)  # (..., N), each <= 1
    total = w.sum(dim=-1, keepdim=True)  # (..., 1)
    has_keys = total > 0
    safe = torch.where(has_keys, total, torch.ones_like(total))
    out = ((w / safe).unsqueeze(-1) * partial_out).sum(dim=-2)  # (..., dv)
    lse = torch.where(has_keys, shift + torch.log(safe), torch.full_like(total, float("-inf")))
    return out, lse.squeeze(-1)
    # END SOLUTION


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
    # BEGIN SOLUTION
    if num_splits < 1:
        raise ValueError(f"num_splits must be >= 1, got {num_splits}")
    B, H, d = q.shape
    Hkv, S, dv = k.shape[1], k.shape[2], v.shape[-1]
    g = H // Hkv
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    cs = -(-S // num_splits)  # ceil(S / N): the last splits may be short or empty
    qg = q.view(B, Hkv, g, d)  # query head h = kv * g + i reads KV head kv = h // g
    keys = torch.arange(S, device=q.device)
    outs, lses = [], []
    for c in range(num_splits):
        j0, j1 = min(c * cs, S), min((c + 1) * cs, S)
        if j1 == j0:  # a split past S: no keys at all
            outs.append(torch.zeros(B, H, dv, dtype=q.dtype, device=q.device))
            lses.append(torch.full((B, H), float("-inf"), dtype=q.dtype, device=q.device))
            continue
        s = torch.einsum("bkgd,bksd->bkgs", qg, k[:, :, j0:j1]) * scale  # (B, Hkv, g, n)
        if lengths is not None:
            allowed = keys[j0:j1].unsqueeze(0) < lengths.to(q.device).unsqueeze(1)  # (B, n)
            s = s.masked_fill(~allowed[:, None, None, :], float("-inf"))
        m = s.amax(dim=-1, keepdim=True)  # (B, Hkv, g, 1)
        shift = torch.where(torch.isfinite(m), m, torch.zeros_like(m))  # no key: shift by 0
        e = torch.exp(s - shift)
        total = e.sum(dim=-1, keepdim=True)
        has_keys = total > 0
        safe = torch.where(has_keys, total, torch.ones_like(total))
        o = torch.einsum("bkgs,bksd->bkgd", e / safe, v[:, :, j0:j1])  # (B, Hkv, g, dv)
        lse = torch.where(has_keys, shift + torch.log(safe), torch.full_like(total, float("-inf")))
        outs.append(o.reshape(B, H, dv))
        lses.append(lse.reshape(B, H))
    partial_out = torch.stack(outs, dim=2)  # (B, H, N, dv)
    partial_lse = torch.stack(lses, dim=2)  # (B, H, N)
    out, _ = combine(partial_out, partial_lse)  # the module-level name, looked up now
    return out
    # END SOLUTION
