"""Scaled dot-product attention in NumPy, written by hand.

Shapes: q (..., L, d), k (..., S, d), v (..., S, dv) -> (..., L, dv).
"""

from __future__ import annotations

import math

import numpy as np


def scaled_dot_product_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: np.ndarray | None = None,
    scale: float | None = None,
) -> np.ndarray:
    """softmax(q @ k^T * scale, masked) @ v over the last two axes, with NumPy only.

    Args:
        q: (..., L, d) queries.
        k: (..., S, d) keys.
        v: (..., S, dv) values.
        mask: bool, broadcastable to (..., L, S); True = this query may attend this key.
        scale: multiplies the scores; None means 1 / sqrt(d).

    Returns:
        (..., L, dv) with q's dtype. A query with no key it may attend gets zeros.
        Never emits a NumPy RuntimeWarning (no overflow, no inf - inf, no 0 / 0), and the
        inputs are not modified.
    """
    # BEGIN SOLUTION
    d = q.shape[-1]
    # A Python float, not np.sqrt(d): a float64 NumPy scalar would promote float32 inputs.
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    scores = (q @ np.swapaxes(k, -1, -2)) * scale  # (..., L, S)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    # Shift by the row max so exp() cannot overflow. A row with no allowed key has max
    # -inf; shifting it by 0 instead keeps exp() at exactly 0 and never computes inf - inf.
    row_max = scores.max(axis=-1, keepdims=True)  # (..., L, 1)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    weights = np.exp(scores - row_max)  # (..., L, S)
    denom = weights.sum(axis=-1, keepdims=True)  # (..., L, 1)
    # Empty rows have denom 0 and weights 0: dividing by 1 there leaves zeros, not 0 / 0.
    weights = weights / np.where(denom > 0, denom, 1.0)
    return (weights @ v).astype(q.dtype, copy=False)  # (..., L, dv)
    # END SOLUTION
