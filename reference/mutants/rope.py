"""Wrong variants of reference/rope.py: one knobbed RoPE, every knob off = the reference.

Sizes B=2, H=3, L=5, d=8: positions 3..7 (none at 0, where every rotation is the identity)
separate both layouts, the exponent, the direction and the positions; a probe at positions
0..L-1 is where ignoring the positions cannot show, and the pairing probe (one-hot features,
every token at position 1) turns the output into "which feature rotates with which".
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.probes import randn

ENTRY = "apply_rope"
B, H, L, D = 2, 3, 5, 8
PAIRING_PROBE = "pairing: one-hot features, every token at position 1"
PAIRING_PROBE_INTERLEAVED = "pairing, interleaved=True: one-hot features, every token at position 1"


def rope(
    x: torch.Tensor,
    positions: torch.Tensor,
    theta: float = 10000.0,
    interleaved: bool = False,
    *,
    swap_layout: bool = False,
    fixed_layout: bool | None = None,
    exponent: str = "2i/d",
    direction: int = 1,
    ignore_positions: bool = False,
    mix: str | None = None,
    mix_on: bool = True,
) -> torch.Tensor:
    """RoPE with the mistakes' knobs: the other layout, one layout whatever `interleaved` says
    (fixed_layout: code carried over from a codebase with only that layout), another frequency
    exponent ("i/d": arange(d/2) / d; "2i/(d/2)": arange(0, d, 2) / (d/2); linspace(0, 1, d/2);
    pairs counted from 1; the exponent's sign lost), the rotation turned
    by -angle, and positions replaced by 0 .. L-1."""
    d = x.shape[-1]
    if d % 2:
        raise ValueError(f"RoPE needs an even feature dim, got d = {d}")
    i = torch.arange(d // 2, dtype=torch.float64, device=x.device)
    power = {
        "2i/d": 2 * i / d,
        "i/d": i / d,
        "2i/(d/2)": 2 * i / (d // 2),
        "i/(d/2-1)": i / max(d // 2 - 1, 1),  # linspace(0, 1, d/2): the last pair at 1/theta
        "2(i+1)/d": 2 * (i + 1) / d,  # pairs counted from 1
        "-2i/d": -2 * i / d,  # theta ** (2i/d): the minus sign lost
    }[exponent]
    inv_freq = theta ** (-power)
    pos = torch.arange(x.shape[-2]) if ignore_positions else positions
    angles = direction * pos.to(device=x.device, dtype=torch.float64)[..., None] * inv_freq
    if angles.dim() == 3:
        angles = angles[:, None]
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    if fixed_layout is not None:
        interleaved = fixed_layout
    if mix is not None and interleaved == mix_on:
        return _mixed(x, cos, sin, mix)
    if interleaved != swap_layout:
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
    a, b = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


def _mixed(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mix: str) -> torch.Tensor:
    """The two layouts mixed in one rotation: "half-table" (adjacent pairs with the half
    layout's cat(freqs, freqs) angle table), "interleaved-table" (rotate_half pairs with the
    repeat_interleave'd table), "cat-back" (adjacent pairs rotated, put back with cat: the
    half layout's places), "stack-back" (half pairs rotated, put back interleaved)."""
    d = x.shape[-1]
    if mix == "half-table":
        rot = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)
        return x * torch.cat([cos, cos], dim=-1) + rot * torch.cat([sin, sin], dim=-1)
    if mix == "interleaved-table":
        rot = torch.cat([-x[..., d // 2 :], x[..., : d // 2]], dim=-1)
        return x * cos.repeat_interleave(2, dim=-1) + rot * sin.repeat_interleave(2, dim=-1)
    if mix == "cat-back":
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
    a, b = x[..., : d // 2], x[..., d // 2 :]  # "stack-back"
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


def _m(**knobs: Any) -> Callable[..., torch.Tensor]:
    return partial(rope, **knobs)


MUTANTS = {
    # Swapped both ways, or one layout for both values of `interleaved` (HF/NeoX rotate_half
    # or Meta's complex pairs carried over as they are): wrong on the other layout only.
    "rope-wrong-layout": [
        _m(swap_layout=True),
        _m(fixed_layout=False),
        _m(fixed_layout=True),
        # the layouts mixed within one branch (a table of one, pairs of the other)
        _m(mix="half-table"),
        _m(mix="cat-back"),
        _m(mix="interleaved-table", mix_on=False),
        _m(mix="stack-back", mix_on=False),
    ],
    "rope-inv-freq-exponent": [
        _m(exponent=e) for e in ("i/d", "2i/(d/2)", "i/(d/2-1)", "2(i+1)/d", "-2i/d")
    ],
    "rope-rotation-direction": _m(direction=-1),
    "rope-positions-ignored": _m(ignore_positions=True),
}


def _params(d: int = D) -> dict[str, Any]:
    return {"B": B, "H": H, "L": L, "d": d}


def probes() -> list[Probe]:
    start = torch.arange(3, 3 + L)
    rows = torch.tensor([[0, 1, 2, 3, 4], [9, 4, 7, 12, 6]])
    onehot = (
        torch.eye(D, dtype=torch.float64).view(1, 1, D, D).clone()
    )  # token j carries feature j only
    return [
        Probe(
            "half layout, positions 3..7",
            ENTRY,
            (randn(B, H, L, D, seed=501), start),
            params=_params(),
            repeat=True,
            name_zh="half 布局，位置 3..7",
        ),
        Probe(
            "interleaved layout, positions 3..7",
            ENTRY,
            (randn(B, H, L, D, seed=501), start, 10000.0, True),
            params=_params(),
            name_zh="interleaved 布局，位置 3..7",
        ),
        Probe(
            "positions 0..4",
            ENTRY,
            (randn(B, H, L, D, seed=502), torch.arange(L)),
            params=_params(),
            name_zh="位置 0..4",
        ),
        Probe(
            "(B, L) positions",
            ENTRY,
            (randn(B, H, L, D, seed=503), rows, 10000.0, True),
            params=_params(),
            name_zh="(B, L) 形状的位置",
        ),
        Probe(
            "theta=100, d=16",
            ENTRY,
            (randn(B, H, L, 16, seed=504), start, 100.0),
            params=_params(16),
            name_zh="theta=100，d=16",
        ),
        Probe(
            "float32, positions 3..7",
            ENTRY,
            (randn(B, H, L, D, seed=505, dtype=torch.float32), start),
            params=_params(),
            dtype=torch.float32,
            name_zh="float32，位置 3..7",
        ),
        Probe(
            PAIRING_PROBE,
            ENTRY,
            (onehot, torch.ones(D, dtype=torch.long)),
            params={**_params(), "L": D},
            name_zh="配对：one-hot 特征，所有 token 都在位置 1",
        ),
        Probe(
            PAIRING_PROBE_INTERLEAVED,
            ENTRY,
            (onehot, torch.ones(D, dtype=torch.long), 10000.0, True),
            params={**_params(), "L": D},
            name_zh="配对（interleaved=True）：one-hot 特征，所有 token 都在位置 1",
        ),
        Probe(
            "gradient w.r.t. x",
            ENTRY,
            (randn(B, H, L, D, seed=506), start, 10000.0, True),
            params=_params(),
            grad=((0,), randn(B, H, L, D, seed=507)),
        ),
    ]


def pairing(out: Any) -> list[int | None] | None:
    """Feature j's partner from the pairing probe's output: token j has x = e_j at position 1,
    so its output is non-zero on j and on the feature that rotated with it."""
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (1, 1, D, D):
        return None
    rows = out[0, 0].detach().double().abs() > 1e-6
    partners: list[int | None] = []
    for j in range(D):
        others = [k for k in range(D) if k != j and bool(rows[j, k])]
        partners.append(others[0] if len(others) == 1 else None)
    return partners


def finding_data(
    mid: str, probes: list[Probe], observed: list[Any], subject: Any
) -> dict[str, Any]:
    """For a layout mistake: which feature rotates with which, the contract's beside what the
    candidate's output shows, for the first layout (half, then interleaved) where they differ."""
    if mid != "rope-wrong-layout":
        return {}
    layouts = {
        PAIRING_PROBE: ("half", [(j + D // 2) % D for j in range(D)]),
        PAIRING_PROBE_INTERLEAVED: ("interleaved", [j ^ 1 for j in range(D)]),
    }
    for p, o in zip(probes, observed, strict=False):
        if p.name not in layouts or not o.ok:
            continue
        got = pairing(o.value)
        layout, want = layouts[p.name]
        if got is None or got == want:
            continue
        flag = layout == "interleaved"
        return {
            "pictures": [
                {
                    "caption": {
                        "en": f"Which feature rotates with which (d = {D}, interleaved={flag})",
                        "zh": f"哪个特征和哪个特征一起旋转（d = {D}，interleaved={flag}）",
                    },
                    "columns": [
                        {"en": "feature", "zh": "特征"},
                        {"en": f"partner (contract: {layout})", "zh": f"搭档（约定：{layout}）"},
                        {"en": "partner (yours)", "zh": "搭档（你的）"},
                    ],
                    "rows": [[j, want[j], "?" if got[j] is None else got[j]] for j in range(D)],
                    "marked": [j for j in range(D) if got[j] != want[j]],
                    "differs": [[j, 2] for j in range(D) if got[j] != want[j]],
                }
            ]
        }
    return {}
