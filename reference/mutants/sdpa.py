"""Wrong variants of reference/sdpa.py, one per catalogued mistake (several spellings where
candidates write the same mistake in ways that behave differently).

Every mutant is the reference formula with one knob turned, so a candidate matching a
mutant exactly has that mistake and no other.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import torch

from attnkata.checker.diagnose.inputs import Probe, attention_probes
from attnkata.checker.diagnose.module_probes import fill_value, uniform_family
from attnkata.reference import sdpa as ref

ENTRY = "scaled_dot_product_attention"


def _safe_softmax(scores: torch.Tensor, dim: int = -1, guard: bool = True) -> torch.Tensor:
    row_max = scores.amax(dim=dim, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    weights = torch.exp(scores - row_max)
    denom = weights.sum(dim=dim, keepdim=True)
    return weights / (torch.where(denom > 0, denom, torch.ones_like(denom)) if guard else denom)


def _naive_softmax(
    scores: torch.Tensor,
    guarded: bool,
    keep: torch.Tensor | None = None,
    how: str = "",
    shift: str = "none",
) -> torch.Tensor:
    """No per-row max subtraction: overflows on large logits; shift "global" subtracts the
    whole tensor's max instead (rows far below it underflow)."""
    if shift == "global" and scores.isfinite().any():
        scores = scores - scores[scores.isfinite()].max()
    weights = torch.exp(scores)
    if keep is not None:  # the mask applied to the exponentials ("exp-mul" / "exp-where")
        weights = (
            weights * keep
            if how == "exp-mul"
            else torch.where(keep, weights, torch.zeros_like(weights))
        )
    denom = weights.sum(dim=-1, keepdim=True)
    if guarded:
        denom = torch.where(denom > 0, denom, torch.ones_like(denom))
    return weights / denom


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
    *,
    default_scale: Callable[[int], float] = lambda d: 1.0 / math.sqrt(d),
    honour_scale: bool = True,
    transpose: str = "last2",  # "T", "t", "01": the 2-D spellings
    softmax: str = "safe",  # "torch", "naive", "naive-guarded"
    dim: int = -1,
    mask_mode: str = "fill",  # "flipped", "ignored", "added", "after", "add-big", "add-inf", "exp-mul", "exp-where"
    fill: float | str = float("-inf"),  # or "min" (finfo of the scores' dtype), "min32" (float32's)
    softmax_dtype: str | None = None,  # "float32": the softmax computed in float32, cast back
    hide_nan: str | None = None,  # "nan_to_num", "where": the NaN is computed, then hidden
    unguarded: bool = False,  # a zero sum is divided by as is: 0 / 0 (see module_probes.Knobs)
    shift: str = "none",  # "global": the naive softmaxes subtract the whole tensor's max
    returns: str = "output",  # "weights", "both": (output, weights) as tutorials do
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """The reference formula with knobs for the catalogued mistakes (all off = correct)."""
    d = q.shape[-1]
    s = default_scale(d) if scale is None or not honour_scale else scale
    kt = {
        "last2": lambda: k.transpose(-2, -1),
        "T": lambda: k.T,
        "t": lambda: k.t(),
        "01": lambda: k.transpose(0, 1),
    }[transpose]()
    scores = (q @ kt) * s
    fill = fill_value(fill, scores.dtype)
    if mask is not None:
        if mask_mode == "fill":
            scores = scores.masked_fill(~mask, fill)
        elif mask_mode == "flipped":
            scores = scores.masked_fill(mask, fill)
        elif mask_mode == "added":
            scores = scores + mask
        elif mask_mode == "add-big":
            scores = scores + (~mask).to(scores.dtype) * fill
        elif mask_mode == "add-inf":  # an additive float mask of 0 / -inf
            scores = scores + torch.zeros_like(scores).masked_fill(~mask, float("-inf"))
    out_dtype = scores.dtype
    if softmax_dtype == "float32":
        scores = scores.float()
    if softmax == "safe":
        weights = _safe_softmax(scores, dim, guard=not unguarded)
    elif softmax == "torch":
        weights = torch.softmax(scores, dim=dim)
    else:
        keep = mask if mask is not None and mask_mode in ("exp-mul", "exp-where") else None
        weights = _naive_softmax(
            scores,
            guarded=softmax == "naive-guarded" and not unguarded,
            keep=keep,
            how=mask_mode,
            shift=shift,
        )
    weights = weights.to(out_dtype)
    if mask is not None and mask_mode == "after":
        weights = weights * mask
    if hide_nan == "nan_to_num":
        weights = torch.nan_to_num(weights, nan=0.0)
    elif hide_nan == "where" and mask is not None:
        weights = torch.where(mask.any(dim=-1, keepdim=True), weights, torch.zeros_like(weights))
    if returns == "weights":
        return weights
    return (weights @ v, weights) if returns == "both" else weights @ v


def _m(**knobs: object) -> Callable[..., torch.Tensor]:
    return partial(attention, **knobs)


MUTANTS = {
    # Scale: the default wrong, the explicit `scale` honoured or not (candidates do both).
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
        _m(dim=dim, softmax=kind) for dim in (-2, 1, 0) for kind in ("torch", "safe")
    ],
    # Guarded spellings only: an unguarded exp / sum is `fully-masked-row-nan` as well.
    "unstable-softmax": [
        *(_m(softmax="naive-guarded", mask_mode=mode) for mode in ("fill", "exp-mul", "exp-where")),
        _m(softmax="naive-guarded", shift="global"),
    ],
    "mask-polarity-flipped": [_m(mask_mode="flipped"), _m(mask_mode="flipped", softmax="torch")],
    "mask-ignored": _m(mask_mode="ignored"),
    "mask-added-as-float": [_m(mask_mode="added"), _m(mask_mode="added", softmax="torch")],
    "mask-applied-after-softmax": _m(mask_mode="after", softmax="torch"),
    # An additive 0 / -inf mask lets the NaN reach the gradients too (masked_fill does not).
    "fully-masked-row-nan": [
        _m(softmax="torch"),
        _m(mask_mode="add-inf", softmax="torch"),
        _m(unguarded=True),
    ],
    "fully-masked-row-uniform": [_m(**knobs) for knobs in uniform_family("softmax", "torch")],
    # Filling with -inf kills the NaN's gradient in masked_fill's backward; only an additive
    # -inf mask lets it through to q and k.
    "fully-masked-row-nan-gradient": [
        _m(mask_mode="add-inf", softmax="torch", hide_nan="nan_to_num"),
        _m(mask_mode="add-inf", softmax="torch", hide_nan="where"),
    ],
    "transpose-2d-on-batched": [_m(transpose="T"), _m(transpose="t"), _m(transpose="01")],
    "returns-attention-weights": [
        _m(returns="weights"),
        _m(returns="weights", softmax="torch"),
        _m(returns="both"),
        _m(returns="both", softmax="torch"),
    ],
}


def probes() -> list[Probe]:
    return attention_probes(ENTRY)


REFERENCE = ref
