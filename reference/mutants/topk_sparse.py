"""Wrong variants of reference/topk_sparse.py: one knobbed function, each knob a catalogued
mistake (all off = the reference's behaviour), so mistakes compose for the pair search."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import torch

from attnkata.checker.diagnose.inputs import Probe, resized, strict_mask, with_empty_rows
from attnkata.checker.probes import randn
from attnkata.reference import topk_sparse as ref

ENTRY = "topk_attention"
NEG = float("-inf")


def _sdpa_scale(q: torch.Tensor) -> float:
    return 1.0 / math.sqrt(q.shape[-1])


def _d_model_scale(q: torch.Tensor, heads_dim: int = -3) -> float:
    # (B, H, L, d) read as if the model width H * d were the head dim: H taken as
    # q.shape[-3] (4-D inputs only) or, as often written, q.shape[1] (any batched input).
    lead = q.dim() >= (4 if heads_dim == -3 else 3)
    width = q.shape[heads_dim] * q.shape[-1] if lead else q.shape[-1]
    return 1.0 / math.sqrt(width)


def _shape1_scale(q: torch.Tensor) -> float:
    return _d_model_scale(q, heads_dim=1)


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    top_k: int,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
    *,
    default_scale: Callable[[torch.Tensor], float] = _sdpa_scale,
    honour_scale: bool = True,
    select: str = "masked",
    dim: int = -1,
    k_shift: int = 0,
    renormalize: bool = True,
    softmax: str = "safe",
    smallest: str | None = None,
    unguarded: bool = False,
) -> torch.Tensor:
    """Top-k attention with knobs. select: "masked" (top-k of the masked scores), "raw"
    (top-k of the unmasked scores, masked afterwards: topk-before-mask) or "raw-values"
    (indices from the masked scores, values from the unmasked ones: topk-keeps-masked)."""
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    s = default_scale(q) if scale is None or not honour_scale else scale
    raw = (q @ k.transpose(-2, -1)) * s  # (..., L, S)
    allowed = torch.ones_like(raw, dtype=torch.bool) if mask is None else mask.expand_as(raw)
    masked = raw.masked_fill(~allowed, NEG)
    n = max(0, min(top_k + k_shift, raw.shape[dim]))
    ranked = raw if select == "raw" else masked
    if smallest == "allowed" and select != "raw":  # disallowed scores never chosen
        ranked = raw.masked_fill(~allowed, float("inf"))
    # smallest "masked": topk(largest=False) of the masked scores, -inf first; with
    # select "raw" either spelling ranks the raw scores upwards (before the mask).
    idx = ranked.topk(n, dim=dim, largest=smallest is None).indices
    keep = torch.zeros_like(allowed).scatter(dim, idx, True)
    if select == "raw-values":
        sparse = raw.masked_fill(~keep, NEG)
    else:
        sparse = masked.masked_fill(~keep, NEG)
    if unguarded:  # an empty row's 0 / 0 left as NaN, whatever else the softmax does
        softmax = {"safe": "torch", "naive": "naive-unguarded"}.get(softmax, softmax)
    if not renormalize:  # softmax over every allowed key, then the dropped weights zeroed
        return (_softmax(masked, softmax) * keep) @ v
    return _softmax(sparse, softmax) @ v


def _softmax(scores: torch.Tensor, kind: str) -> torch.Tensor:
    """kind: "safe" (the contract's), "torch" (torch.softmax: NaN for an empty row), "naive"
    (no max shift, empty rows guarded) or "naive-unguarded" (exp / sum: both)."""
    if kind == "torch":
        return torch.softmax(scores, dim=-1)
    if kind.startswith("naive"):  # no max shift
        e = torch.exp(scores)
        z = e.sum(dim=-1, keepdim=True)
        return e / z if kind == "naive-unguarded" else e / torch.where(z > 0, z, torch.ones_like(z))
    m = scores.amax(dim=-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(scores - m)
    z = e.sum(dim=-1, keepdim=True)
    return e / torch.where(z > 0, z, torch.ones_like(z))


def _m(**knobs: object) -> Callable[..., torch.Tensor]:
    return partial(attention, **knobs)


MUTANTS = {
    "topk-before-mask": _m(select="raw"),
    "topk-softmax-not-renormalized": _m(renormalize=False),
    "topk-wrong-dim": _m(dim=-2),
    "topk-keeps-masked": _m(select="raw-values"),
    "topk-off-by-one": [_m(k_shift=1), _m(k_shift=-1)],
    "topk-keeps-smallest": [_m(smallest="allowed"), _m(smallest="masked")],
    "scale-by-d-model": [
        _m(default_scale=f, honour_scale=h)
        for f in (_d_model_scale, _shape1_scale)
        for h in (True, False)
    ],
    "missing-scale": [
        _m(default_scale=lambda q: 1.0),
        _m(default_scale=lambda q: 1.0, honour_scale=False),
    ],
    "fully-masked-row-nan": [_m(softmax="torch"), _m(unguarded=True)],
    "unstable-softmax": _m(softmax="naive"),
}

B, H, L, S, d, dv = 2, 3, 5, 9, 8, 6
SIZES = {"B": B, "H": H, "L": L, "S": S, "d": d, "dv": dv, "D": H * d}


def _qkv(
    seed: int, lead: tuple[int, ...] = (B, H), scale: float = 1.0, dv_: int = dv
) -> tuple[torch.Tensor, ...]:
    return (
        randn(*lead, L, d, seed=seed, scale=scale),
        randn(*lead, S, d, seed=seed + 1, scale=scale),
        randn(*lead, S, dv_, seed=seed + 2),
    )


def short_rows(seed: int) -> torch.Tensor:
    """(B, 1, L, S): queries 0, 1, 2 may attend 1, 2 and 3 keys; the others about 6."""
    m = strict_mask(B, 1, L, S, seed=seed, p=0.7)
    for row, n in enumerate((1, 2, 3)):
        m[..., row, :] = False
        m[..., row, 2 * row : 2 * row + n] = True
    return m


def best_key_masked(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """(B, H, L, S): every query's two highest-scoring keys are disallowed (the rest allowed)."""
    top2 = (q @ k.transpose(-2, -1)).topk(2, dim=-1).indices
    return torch.ones(*q.shape[:-1], k.shape[-2], dtype=torch.bool).scatter(-1, top2, False)


def probes() -> list[Probe]:
    """No mask (4-D and 3-D), rows allowing fewer keys than top_k, masks that hide each
    query's best keys, fully masked rows, large logits, an explicit scale, top_k > S, and a
    grid (V = I: each output row is that query's weights, so the kept keys are drawn)."""
    hidden_q, hidden_k, hidden_v = _qkv(404)
    grid_q, grid_k, _ = _qkv(420)
    grid_v = torch.eye(S, dtype=torch.float64).expand(B, H, S, S).clone()
    return [
        Probe(
            "no mask, top_k=3",
            ENTRY,
            (*_qkv(401), 3),
            params={**SIZES, "top_k": 3},
            repeat=True,
            name_zh="无 mask，top_k=3",
        ),
        Probe(
            "3-D inputs (B, L, d), top_k=4",
            ENTRY,
            (*_qkv(402, lead=(4,)), 4),
            params={**SIZES, "top_k": 4},
            name_zh="三维输入 (B, L, d)，top_k=4",
        ),
        Probe(
            "rows allowing 1, 2, 3 keys, top_k=3",
            ENTRY,
            (*_qkv(403), 3),
            {"mask": short_rows(403)},
            params={**SIZES, "top_k": 3},
            name_zh="只允许 1、2、3 个键的行，top_k=3",
        ),
        Probe(
            "each query's two best keys masked, top_k=2",
            ENTRY,
            (hidden_q, hidden_k, hidden_v, 2),
            {"mask": best_key_masked(hidden_q, hidden_k)},
            params={**SIZES, "top_k": 2},
            name_zh="每个查询分数最高的两个键被遮掩，top_k=2",
        ),
        Probe(
            "fully masked rows, top_k=3",
            ENTRY,
            (*_qkv(405), 3),
            {"mask": with_empty_rows(short_rows(406), [(0, 0, 4), (1, 0, 3)])},
            params={**SIZES, "top_k": 3},
            name_zh="整行被遮掩，top_k=3",
        ),
        Probe(
            "large logits (~1e4), top_k=3",
            ENTRY,
            (*_qkv(407, scale=60.0), 3),
            {"mask": short_rows(408)},
            params={**SIZES, "top_k": 3},
            name_zh="大 logits（约 1e4），top_k=3",
        ),
        Probe(
            "explicit scale=0.3, top_k=4",
            ENTRY,
            (*_qkv(409), 4),
            {"scale": 0.3},
            params={**SIZES, "top_k": 4, "scale": 0.3},
            name_zh="显式 scale=0.3，top_k=4",
        ),
        Probe(
            "top_k=20 > S",
            ENTRY,
            (*_qkv(411), 20),
            {"mask": short_rows(412)},
            params={**SIZES, "top_k": 20},
            name_zh="top_k=20 > S",
        ),
        Probe(
            "kept-keys grid, top_k=3 (V = I)",
            ENTRY,
            (grid_q, grid_k, grid_v, 3),
            {"mask": short_rows(421)},
            params={**SIZES, "top_k": 3, "dv": S},
            grid="weights",
            name_zh="保留键网格，top_k=3（V = I）",
        ),
    ]


def alternatives(probe: Probe) -> list[Probe]:
    """For code that takes only dv == d: the probes with dv = d (not the grid, whose V = I)."""
    if probe.grid is not None or probe.args[2].shape[-1] == probe.args[0].shape[-1]:
        return []
    return [resized(probe, dv=probe.args[0].shape[-1], label="dv = d", label_zh="dv = d")]


REFERENCE = ref
