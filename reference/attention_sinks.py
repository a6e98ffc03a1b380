"""StreamingLLM attention sinks: a KV cache of sink tokens plus a rolling window of recent
tokens, RoPE positions assigned within the cache, written by hand.

Shapes: q (B, H, L, d), k (B, Hkv, L, d), v (B, Hkv, L, dv), cache (k, v) each
(B, Hkv, C, .) -> (out (B, H, L, dv), (k', v') each (B, Hkv, min(C + L, n_sink + window), .)).
"""

from __future__ import annotations

import math

import torch

# BEGIN SOLUTION


def rotate(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """rotate_half RoPE of x (..., n, d) at the given (n,) positions (any integers, negative
    ones included: rotating by -e moves a key e positions back)."""
    d = x.shape[-1]
    inv_freq = theta ** (-torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)  # (d/2,)
    angles = positions.to(device=x.device, dtype=torch.float64)[:, None] * inv_freq  # (n, d/2)
    angles = torch.cat([angles, angles], dim=-1)  # (n, d): pair i is (x[i], x[i + d/2])
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    half = d // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin


# END SOLUTION


def sink_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cache: tuple[torch.Tensor, torch.Tensor] | None = None,
    n_sink: int = 4,
    window: int = 1020,
    theta: float = 10000.0,
    scale: float | None = None,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """Attend L new tokens to a StreamingLLM cache and to themselves, then evict.

    Positions are indices in the cache: cached key j was rotated at position j, new token i
    sits at position C + i (rotate_half RoPE on q and on the new k, inv_freq_i =
    theta^(-2i/d)). New token i attends keys 0 .. C + i of [k_cache | new keys] (values
    [v_cache | v]); query head h reads KV head h // (H // Hkv); scale 1/sqrt(d) unless given.

    Eviction, after attention, with N = n_sink + window and T = C + L: if T <= N the new cache
    is the concatenation. Otherwise the first n_sink tokens (the sinks) and the last `window`
    tokens are kept; the e = T - N tokens at indices n_sink .. n_sink + e - 1 are dropped, and
    each kept window key moves from index j to j - e and is rotated by -e to its new position
    (R(j - e) = R(-e) R(j)). Sink keys and all values are copied unchanged.

    Args:
        q: (B, H, L, d) queries of the new tokens, before RoPE; d even.
        k: (B, Hkv, L, d) keys of the new tokens, before RoPE.
        v: (B, Hkv, L, dv) values of the new tokens.
        cache: None (C = 0) or (k_cache (B, Hkv, C, d), v_cache (B, Hkv, C, dv)),
            0 <= C <= n_sink + window: the kept tokens in stream order (sinks first), each key
            already rotated at its index in the cache, values never rotated.
        n_sink: sink tokens kept forever, >= 0.
        window: recent tokens kept in the returned cache, >= 1.
        theta: the RoPE base.
        scale: multiplies q.k; None means 1 / sqrt(d).

    Returns:
        out: (B, H, L, dv) in q's dtype: the new queries attend the whole concatenation
            (nothing is evicted before attending).
        (k_cache', v_cache'): each (B, Hkv, min(T, N), .) in k's and v's dtype. q, k, v and
            the given cache are not modified.
    """
    # BEGIN SOLUTION
    B, H, L, d = q.shape
    Hkv = k.shape[1]
    C = 0 if cache is None else cache[0].shape[2]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    new_pos = torch.arange(C, C + L, device=q.device)  # (L,): positions within the cache
    q = rotate(q, new_pos, theta)  # (B, H, L, d)
    keys = rotate(k, new_pos, theta)  # (B, Hkv, L, d): only the new keys are rotated here
    values = v
    if cache is not None:
        keys = torch.cat([cache[0], keys], dim=2)  # (B, Hkv, T, d)
        values = torch.cat([cache[1], values], dim=2)  # (B, Hkv, T, dv)
    T = C + L

    g = H // Hkv  # query head h reads KV head h // g
    scores = (q @ keys.repeat_interleave(g, dim=1).transpose(-2, -1)) * scale  # (B, H, L, T)
    allowed = torch.ones(L, T, dtype=torch.bool, device=q.device).tril(C)  # i sees 0 .. C + i
    scores = scores.masked_fill(~allowed, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ values.repeat_interleave(g, dim=1)  # (B, H, L, dv)

    N = n_sink + window
    if T > N:  # evict the e oldest tokens after the sinks; the window moves e slots back
        e = T - N
        recent = keys[:, :, n_sink + e :]  # (B, Hkv, window, d): the last `window` keys
        recent = rotate(recent, torch.full((window,), -e, device=q.device), theta)
        keys = torch.cat([keys[:, :, :n_sink], recent], dim=2)  # (B, Hkv, N, d)
        values = torch.cat([values[:, :, :n_sink], values[:, :, n_sink + e :]], dim=2)
    return out.to(q.dtype), (keys, values)
    # END SOLUTION
