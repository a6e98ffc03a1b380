"""FlashAttention's forward pass as one Triton kernel: a program per block of queries of one
(batch, head), looping over blocks of keys with an online softmax.

Shapes: q (B, H, L, d), k (B, H, S, d), v (B, H, S, d) -> out (B, H, L, d), lse (B, H, L).
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl


@triton.jit
def flash_fwd_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    lse_ptr,
    stride_qb,
    stride_qh,
    stride_ql,
    stride_qd,
    stride_kb,
    stride_kh,
    stride_ks,
    stride_kd,
    stride_vb,
    stride_vh,
    stride_vs,
    stride_vd,
    stride_ob,
    stride_oh,
    stride_ol,
    stride_od,
    stride_lb,
    stride_lh,
    stride_ll,
    H,
    L,
    S,
    scale,
    IS_CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    D: tl.constexpr,
):
    """Queries [pid_m * BLOCK_M, +BLOCK_M) of head (b, h) = divmod(program_id(1), H) against
    every key block they may see; writes their output rows and log-sum-exp."""
    # BEGIN SOLUTION
    pid_m = tl.program_id(0)
    b = tl.program_id(1) // H
    h = tl.program_id(1) % H
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,) query rows
    offs_n = tl.arange(0, BLOCK_N)  # (BLOCK_N,)
    offs_d = tl.arange(0, D)  # (D,)
    row_ok = offs_m < L
    q = tl.load(
        q_ptr
        + b * stride_qb
        + h * stride_qh
        + offs_m[:, None] * stride_ql
        + offs_d[None, :] * stride_qd,
        mask=row_ok[:, None],
        other=0.0,
    )  # (BLOCK_M, D)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)  # running max
    l_i = tl.zeros([BLOCK_M], tl.float32)  # running sum of exp(s - m_i)
    acc = tl.zeros([BLOCK_M, D], tl.float32)  # running sum of exp(s - m_i) * v
    offset = S - L  # query i sits at position offset + i (bottom-right causal)
    hi = S
    if IS_CAUSAL:
        # This block's last query sees keys up to offset + (pid_m + 1) * BLOCK_M - 1: later
        # key blocks are fully masked and are not visited at all.
        hi = tl.minimum(S, tl.maximum(0, offset + (pid_m + 1) * BLOCK_M))
    for start in range(0, hi, BLOCK_N):
        cols = start + offs_n  # (BLOCK_N,) key positions
        col_ok = cols < S
        k = tl.load(
            k_ptr
            + b * stride_kb
            + h * stride_kh
            + cols[None, :] * stride_ks
            + offs_d[:, None] * stride_kd,
            mask=col_ok[None, :],
            other=0.0,
        )  # (D, BLOCK_N): k transposed by its pointers
        s = tl.dot(q, k) * scale  # (BLOCK_M, BLOCK_N), float32
        allowed = col_ok[None, :]
        if IS_CAUSAL:
            allowed = allowed & (cols[None, :] <= offs_m[:, None] + offset)
        s = tl.where(allowed, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        # A row with no allowed key yet has m_new = -inf: shift it by 0, so exp(-inf - 0) = 0
        # instead of exp(-inf + inf) = NaN.
        shift = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp(m_i - shift)  # rescales what was summed against the old max
        p = tl.exp(s - shift[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(
            v_ptr
            + b * stride_vb
            + h * stride_vh
            + cols[:, None] * stride_vs
            + offs_d[None, :] * stride_vd,
            mask=col_ok[:, None],
            other=0.0,
        )  # (BLOCK_N, D)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    has_key = l_i > 0
    out = acc / tl.where(has_key, l_i, 1.0)[:, None]
    lse = tl.where(has_key, m_i + tl.log(tl.where(has_key, l_i, 1.0)), float("-inf"))
    tl.store(
        o_ptr
        + b * stride_ob
        + h * stride_oh
        + offs_m[:, None] * stride_ol
        + offs_d[None, :] * stride_od,
        out.to(o_ptr.dtype.element_ty),
        mask=row_ok[:, None],
    )
    tl.store(lse_ptr + b * stride_lb + h * stride_lh + offs_m * stride_ll, lse, mask=row_ok)
    # END SOLUTION


def flash_attention_triton(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    is_causal: bool = False,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact attention by `flash_fwd_kernel`.

    Args:
        q: (B, H, L, d) queries, float32 or float16, any strides; d in {16, 32, 64}.
        k: (B, H, S, d) keys; v: (B, H, S, d) values (same dtype and device as q).
        is_causal: bottom-right causal: query i (at p = S - L + i) sees keys j <= p.
        scale: multiplies the scores; None means 1 / sqrt(d).

    Returns:
        (out, lse): out (B, H, L, d) in q's dtype; lse (B, H, L) float32 (or q's dtype), the
        log-sum-exp of the scaled scores each query may see. A query with no key: out 0,
        lse -inf.
    """
    # BEGIN SOLUTION
    B, H, L, d = q.shape
    S = k.shape[2]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    out = torch.empty((B, H, L, d), dtype=q.dtype, device=q.device)
    lse = torch.empty((B, H, L), dtype=torch.float32, device=q.device)
    block_m, block_n = 32, 32  # >= 16: tl.dot's inner size on a GPU (p @ v sums BLOCK_N terms)
    grid = (triton.cdiv(L, block_m), B * H)  # cdiv: the last block takes the leftover queries
    flash_fwd_kernel[grid](
        q,
        k,
        v,
        out,
        lse,
        *q.stride(),
        *k.stride(),
        *v.stride(),
        *out.stride(),
        *lse.stride(),
        H,
        L,
        S,
        scale,
        IS_CAUSAL=is_causal,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        D=d,
    )
    return out, lse
    # END SOLUTION
