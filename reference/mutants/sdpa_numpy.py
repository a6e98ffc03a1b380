"""Wrong variants of reference/sdpa_numpy.py, one per catalogued mistake (several spellings
where candidates write the same mistake in ways that behave differently).

NumPy emits RuntimeWarnings on the way to the NaNs some of these produce; the diagnosis
compares values only, so they are silenced here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import numpy as np

from attnkata.checker.diagnose.inputs import Probe, attention_probes
from attnkata.checker.diagnose.module_probes import uniform_family
from attnkata.reference import sdpa_numpy as ref

ENTRY = "scaled_dot_product_attention"


def _safe_softmax(scores: np.ndarray, axis: int = -1, guard: bool = True) -> np.ndarray:
    row_max = scores.max(axis=axis, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    weights = np.exp(scores - row_max)
    denom = weights.sum(axis=axis, keepdims=True)
    return weights / (np.where(denom > 0, denom, 1.0) if guard else denom)


def _textbook_softmax(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """Max subtracted, no guard: a row of -inf becomes NaN."""
    weights = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return weights / weights.sum(axis=axis, keepdims=True)


def _naive_softmax(
    scores: np.ndarray,
    guarded: bool,
    keep: np.ndarray | None = None,
    how: str = "",
    shift: str = "none",
) -> np.ndarray:
    """No per-row max subtraction: overflows on large logits; shift "global" subtracts the
    whole array's max instead (rows far below it underflow)."""
    if shift == "global" and np.isfinite(scores).any():
        scores = scores - scores[np.isfinite(scores)].max()
    weights = np.exp(scores)
    if keep is not None:  # the mask applied to the exponentials ("exp-mul" / "exp-where")
        weights = weights * keep if how == "exp-mul" else np.where(keep, weights, 0.0)
    denom = weights.sum(axis=-1, keepdims=True)
    return weights / (np.where(denom > 0, denom, 1.0) if guarded else denom)


def attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: np.ndarray | None = None,
    scale: float | None = None,
    *,
    default_scale: Callable[[int], float] = lambda d: 1.0 / math.sqrt(d),
    honour_scale: bool = True,
    transpose: str = "last2",  # "T", "np.transpose": the 2-D spellings
    softmax: str = "safe",  # "textbook", "naive", "naive-guarded"
    axis: int = -1,
    mask_mode: str = "fill",  # "flipped", "ignored", "added", "after", "add-big", "exp-mul", "exp-where"
    fill: float | str = -np.inf,  # or "min" (finfo of the scores' dtype), "min32" (float32's)
    softmax_dtype: str | None = None,  # "float32": the softmax computed in float32, cast back
    unguarded: bool = False,  # a zero sum is divided by as is: 0 / 0 (see module_probes.Knobs)
    shift: str = "none",  # "global": the naive softmaxes subtract the whole array's max
    keep_dtype: bool = True,
    returns: str = "output",  # "weights", "both": (output, weights) as tutorials do
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """The reference formula with knobs for the catalogued mistakes (all off = correct)."""
    with np.errstate(all="ignore"):
        d = q.shape[-1]
        s = default_scale(d) if scale is None or not honour_scale else scale
        kt = {
            "last2": lambda: np.swapaxes(k, -1, -2),
            "T": lambda: k.T,
            "np.transpose": lambda: np.transpose(k),
        }[transpose]()
        scores = (q @ kt) * s
        fill = {"min": np.finfo(scores.dtype).min, "min32": np.finfo(np.float32).min}.get(
            fill, fill
        )  # type: ignore[call-overload]
        if mask is not None:
            if mask_mode == "fill":
                scores = np.where(mask, scores, fill)
            elif mask_mode == "flipped":
                scores = np.where(mask, fill, scores)
            elif mask_mode == "added":
                scores = scores + mask
            elif mask_mode == "add-big":
                scores = scores + (~mask) * fill
        out_dtype = scores.dtype
        if softmax_dtype == "float32":
            scores = scores.astype(np.float32)
        if softmax == "safe":
            weights = _safe_softmax(scores, axis, guard=not unguarded)
        elif softmax == "textbook":
            weights = _textbook_softmax(scores, axis)
        else:
            keep = mask if mask is not None and mask_mode in ("exp-mul", "exp-where") else None
            weights = _naive_softmax(
                scores,
                guarded=softmax == "naive-guarded" and not unguarded,
                keep=keep,
                how=mask_mode,
                shift=shift,
            )
        weights = weights.astype(out_dtype, copy=False)
        if mask is not None and mask_mode == "after":
            weights = weights * mask
        out = weights @ v
        out = out.astype(q.dtype, copy=False) if keep_dtype else out
        if returns == "weights":
            return weights
        return (out, weights) if returns == "both" else out


def _m(**knobs: object) -> Callable[..., np.ndarray]:
    return partial(attention, **knobs)


MUTANTS = {
    "missing-scale": [
        _m(default_scale=lambda d: 1.0, honour_scale=False),
        _m(default_scale=lambda d: 1.0),
    ],
    "scale-not-sqrt": [
        _m(default_scale=lambda d: 1.0 / d),
        _m(default_scale=lambda d: 1.0 / d, honour_scale=False),
    ],
    "scale-inverted": [
        _m(default_scale=lambda d: math.sqrt(d)),
        _m(default_scale=lambda d: math.sqrt(d), honour_scale=False),
    ],
    "scale-argument-ignored": _m(honour_scale=False),
    "softmax-wrong-dim": [
        _m(axis=axis, softmax=kind) for axis in (-2, 1, 0) for kind in ("textbook", "safe")
    ],
    # Guarded spellings only: an unguarded exp / sum is `fully-masked-row-nan` as well.
    "unstable-softmax": [
        *(_m(softmax="naive-guarded", mask_mode=mode) for mode in ("fill", "exp-mul", "exp-where")),
        _m(softmax="naive-guarded", shift="global"),
    ],
    "mask-polarity-flipped": [_m(mask_mode="flipped"), _m(mask_mode="flipped", softmax="textbook")],
    "mask-ignored": _m(mask_mode="ignored"),
    "mask-added-as-float": [_m(mask_mode="added"), _m(mask_mode="added", softmax="textbook")],
    "mask-applied-after-softmax": _m(mask_mode="after", softmax="textbook"),
    "fully-masked-row-nan": [_m(softmax="textbook"), _m(unguarded=True)],
    "fully-masked-row-uniform": [_m(**knobs) for knobs in uniform_family("softmax", "textbook")],
    "transpose-2d-on-batched": [_m(transpose="T"), _m(transpose="np.transpose")],
    "returns-attention-weights": [
        _m(returns="weights"),
        _m(returns="weights", softmax="textbook"),
        _m(returns="both"),
        _m(returns="both", softmax="textbook"),
    ],
}


def probes() -> list[Probe]:
    return attention_probes(ENTRY, numpy=True)


REFERENCE = ref
