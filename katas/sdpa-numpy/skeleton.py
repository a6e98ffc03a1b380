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
    raise NotImplementedError("write this part")
