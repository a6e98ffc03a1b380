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
    raise NotImplementedError("write this part")


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
    raise NotImplementedError("write this part")
