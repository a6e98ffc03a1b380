"""Wrong variants of reference/sliding_window.py. They are written densely (a full (L, S)
window mask): behaviour is all that is compared; memory is judged from the candidate's
trace by the probe with a `budget`."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import torch

from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.probes import randn
from attnkata.reference import sliding_window as ref

ENTRY = "sliding_window_attention"


def window_allowed(
    L: int,
    S: int,
    window: tuple[int, int],
    *,
    left_shift: int = 0,
    right_shift: int = 0,
    swap: bool = False,
    top_left: bool = False,
    device: torch.device | None = None,
) -> torch.Tensor:
    """(L, S) bool: key j allowed for query i at p iff p - left <= j <= p + right, with knobs
    for the mistakes (a side widened or narrowed by one, sides swapped, p = i)."""
    left, right = window
    if swap:
        left, right = right, left
    p = torch.arange(L, device=device).unsqueeze(1) + (0 if top_left else S - L)
    j = torch.arange(S, device=device).unsqueeze(0)
    allowed = torch.ones(L, S, dtype=torch.bool, device=device)
    if left >= 0:
        allowed &= j >= p - (left + left_shift)
    if right >= 0:
        allowed &= j <= p + (right + right_shift)
    return allowed


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    window: tuple[int, int],
    scale: float | None = None,
    *,
    left_shift: int = 0,
    right_shift: int = 0,
    swap: bool = False,
    top_left: bool = False,
    default_scale: Callable[[int], float] = lambda d: 1.0 / math.sqrt(d),
    honour_scale: bool = True,
    softmax: str = "safe",
    dim: int = -1,
    fill: float = float("-inf"),
    unguarded: bool = False,
) -> torch.Tensor:
    """Dense windowed attention with knobs for the catalogued mistakes (all off = correct)."""
    L, S, d = q.shape[-2], k.shape[-2], q.shape[-1]
    s = default_scale(d) if scale is None or not honour_scale else scale
    allowed = window_allowed(
        L,
        S,
        window,
        left_shift=left_shift,
        right_shift=right_shift,
        swap=swap,
        top_left=top_left,
        device=q.device,
    )
    scores = (q @ k.transpose(-2, -1)) * s
    scores = scores.masked_fill(~allowed, fill)
    if softmax == "safe":
        m = scores.amax(dim=dim, keepdim=True)
        m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
        e = torch.exp(scores - m)
        z = e.sum(dim=dim, keepdim=True)
        weights = e / (z if unguarded else torch.where(z > 0, z, torch.ones_like(z)))
    elif softmax == "torch":
        weights = torch.softmax(scores, dim=dim)
    else:  # "naive" / "naive-guarded": no max subtraction
        e = torch.exp(scores)
        z = e.sum(dim=-1, keepdim=True)
        guarded = (
            softmax == "naive-guarded" and not unguarded
        )  # unguarded: 0 / 0 on an empty window
        weights = e / (torch.where(z > 0, z, torch.ones_like(z)) if guarded else z)
    return weights @ v


def _m(**knobs: object) -> Callable[..., torch.Tensor]:
    return partial(attention, **knobs)


MUTANTS = {
    # One key too many or too few on either side ("i - W .. i" is W + 1 keys).
    "window-off-by-one": [
        _m(left_shift=1),
        _m(left_shift=-1),
        _m(right_shift=1),
        _m(right_shift=-1),
        _m(left_shift=1, right_shift=1),
        _m(left_shift=-1, right_shift=-1),
    ],
    "window-wrong-side": _m(swap=True),
    "causal-mask-top-left": _m(top_left=True),
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
    "softmax-wrong-dim": [
        _m(dim=dim, softmax=kind) for dim in (-2, 1, 0) for kind in ("torch", "safe")
    ],
    # Guarded only: an unguarded exp / sum is `fully-masked-row-nan` as well.
    "unstable-softmax": _m(softmax="naive-guarded"),
    "fully-masked-row-nan": [_m(softmax="torch"), _m(unguarded=True)],
    "fully-masked-row-uniform": _m(fill=-1e9, softmax="torch"),
}

B, H, d, dv = 2, 3, 8, 6


def _qkv(seed: int, L: int, S: int, scale: float = 1.0) -> tuple[torch.Tensor, ...]:
    return (
        randn(B, H, L, d, seed=seed, scale=scale),
        randn(B, H, S, d, seed=seed + 1, scale=scale),
        randn(B, H, S, dv, seed=seed + 2),
    )


def _params(L: int, S: int, window: tuple[int, int]) -> dict[str, object]:
    left, right = window
    params: dict[str, object] = {
        "B": B,
        "H": H,
        "L": L,
        "S": S,
        "d": d,
        "left": left,
        "right": right,
    }
    if left >= 0 and right >= 0:
        params["W"] = left + 1 + right
    return params


def _grid(L: int, S: int, window: tuple[int, int], name: str, name_zh: str) -> Probe:
    q, k = (
        torch.zeros(B, H, L, d, dtype=torch.float64),
        torch.zeros(B, H, S, d, dtype=torch.float64),
    )
    v = torch.eye(S, dtype=torch.float64).expand(B, H, S, S).clone()
    return Probe(
        name,
        ENTRY,
        (q, k, v, window),
        params=_params(L, S, window),
        grid="weights",
        name_zh=name_zh,
    )


def probes() -> list[Probe]:
    """L != S (bottom-right alignment), windows narrower than L (off by one), asymmetric
    windows (wrong side), queries with no key (L > S), large logits, an explicit scale,
    and one long sequence whose largest intermediate tensor must stay far below L x S."""
    big_L, big_window = 1024, (15, 0)
    big = tuple(randn(1, 1, big_L, 16, seed=s, dtype=torch.float32) for s in (350, 351, 352))
    return [
        Probe(
            "window (3, 0), L=9, S=13",
            ENTRY,
            (*_qkv(301, 9, 13), (3, 0)),
            params=_params(9, 13, (3, 0)),
            repeat=True,
            name_zh="窗口 (3, 0)，L=9, S=13",
        ),
        Probe(
            "window (1, 4), L=9, S=13",
            ENTRY,
            (*_qkv(304, 9, 13), (1, 4)),
            params=_params(9, 13, (1, 4)),
            name_zh="窗口 (1, 4)，L=9, S=13",
        ),
        Probe(
            "window (4, 1), L=11, S=11",
            ENTRY,
            (*_qkv(307, 11, 11), (4, 1)),
            params=_params(11, 11, (4, 1)),
            name_zh="窗口 (4, 1)，L=11, S=11",
        ),
        Probe(
            "queries with no key, window (2, 1), L=12, S=8",
            ENTRY,
            (*_qkv(310, 12, 8), (2, 1)),
            params=_params(12, 8, (2, 1)),
            name_zh="没有键的查询，窗口 (2, 1)，L=12, S=8",
        ),
        Probe(
            "large logits (~1e4), window (3, 1)",
            ENTRY,
            (*_qkv(313, 9, 13, scale=60.0), (3, 1)),
            params=_params(9, 13, (3, 1)),
            name_zh="大 logits（约 1e4），窗口 (3, 1)",
        ),
        Probe(
            "explicit scale=0.3, window (4, 1)",
            ENTRY,
            (*_qkv(316, 9, 13), (4, 1)),
            {"scale": 0.3},
            params={**_params(9, 13, (4, 1)), "scale": 0.3},
            name_zh="显式 scale=0.3，窗口 (4, 1)",
        ),
        _grid(
            8,
            11,
            (2, 1),
            "window grid (2, 1), L=8, S=11 (q = k = 0, V = I)",
            "窗口网格 (2, 1)，L=8, S=11（q = k = 0，V = I）",
        ),
        _grid(
            10,
            7,
            (2, 0),
            "window grid with empty rows (2, 0), L=10, S=7",
            "含空行的窗口网格 (2, 0)，L=10, S=7",
        ),
        Probe(
            f"memory: L = S = {big_L}, window {big_window}",
            ENTRY,
            (*big, big_window),
            params={"B": 1, "H": 1, "L": big_L, "S": big_L, "d": 16, "W": big_window[0] + 1},
            dtype=torch.float32,
            budget=("window-materializes-full-scores", big_L * big_L // 2),
            name_zh=f"内存：L = S = {big_L}，窗口 {big_window}",
        ),
    ]


REFERENCE = ref
