"""Wrong variants of reference/longformer.py. Both entry points share one knobbed mask (all
knobs off = the contract); the attention variants are dense attention under it (behaviour
is all that is compared; memory is judged from the candidate's trace by the probe with a
`budget`). Each mistake comes in three placements: mask only, attention only (an
efficient attention builds its own pattern), or both (an attention calling its own mask)."""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial
from typing import Any

import torch

from attnkata.checker.diagnose.inputs import Probe, resized
from attnkata.checker.probes import randn
from attnkata.reference import longformer as ref

MASK, ATTN = "longformer_mask", "longformer_attention"


def pattern(
    L: int,
    window: int,
    global_idx: torch.Tensor,
    device: torch.device | str | None = None,
    *,
    globals_: str = "both",
    halve: bool = False,
    lo_shift: int = 0,
    hi_shift: int = 0,
) -> torch.Tensor:
    """(L, L) mask with knobs: globals_ "rows"/"cols" (one direction), the window halved
    (read as the total width), and the window's lower / upper side shifted by one."""
    w = window // 2 if halve else window
    pos = torch.arange(L, device=device)
    diff = pos.unsqueeze(0) - pos.unsqueeze(1)  # (L, L): j - i
    allowed = (diff >= -(w + lo_shift)) & (diff <= w + hi_shift)
    is_global = torch.zeros(L, dtype=torch.bool, device=device)
    is_global[global_idx.to(device=pos.device, dtype=torch.long)] = True
    if globals_ in ("both", "rows"):
        allowed = allowed | is_global.unsqueeze(1)
    if globals_ in ("both", "cols"):
        allowed = allowed | is_global.unsqueeze(0)
    return allowed


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    window: int,
    global_idx: torch.Tensor,
    key_padding: torch.Tensor | None = None,
    scale: float | None = None,
    *,
    padding: str = "all",
    zero_padded_queries: bool = False,
    **knobs: Any,
) -> torch.Tensor:
    """Dense attention under `pattern(..., **knobs)` and the key padding. padding "keys" /
    "rows" / "both": the padding misses the global key columns, the global query rows, or
    both (it is applied to the window only); "far-keys" / "far-both": the same, where the
    global columns leave out the queries whose window already holds that key; "local-keys":
    the global columns of the non-global queries only (the global queries' own dense pass
    masks the padding, as HF's layer computes them apart)."""
    B, H, L, d = q.shape
    s = 1.0 / math.sqrt(d) if scale is None else scale
    allowed = pattern(L, window, global_idx, q.device, **knobs).expand(B, 1, L, L)
    if key_padding is not None:
        real = key_padding[:, None, None, :]
        if padding != "all":
            is_global = torch.zeros(L, dtype=torch.bool, device=q.device)
            is_global[global_idx.to(q.device, torch.long)] = True
            spared = torch.zeros(L, L, dtype=torch.bool, device=q.device)
            cols = is_global.unsqueeze(0).expand(L, L)
            if padding.startswith(
                "far"
            ):  # banded code: a global key inside the window is a band key
                band_knobs = {k: v for k, v in knobs.items() if k != "globals_"}
                band = pattern(L, window, torch.zeros(0, dtype=torch.long), q.device, **band_knobs)
                cols = cols & ~band
            if padding in ("keys", "both", "far-keys", "far-both"):
                spared = spared | cols
            if padding == "local-keys":  # HF's layout: the global rows get a pass of their own
                spared = spared | (cols & ~is_global.unsqueeze(1))
            if padding in ("rows", "both", "far-both"):
                spared = spared | is_global.unsqueeze(1)
            allowed = allowed & (real | spared)
        else:
            allowed = allowed & real
    scores = ((q @ k.transpose(-2, -1)) * s).masked_fill(~allowed, float("-inf"))
    m = scores.amax(dim=-1, keepdim=True)
    e = torch.exp(scores - torch.where(torch.isfinite(m), m, torch.zeros_like(m)))
    z = e.sum(dim=-1, keepdim=True)
    out = (e / torch.where(z > 0, z, torch.ones_like(z))) @ v
    if zero_padded_queries and key_padding is not None:  # padded queries written as 0
        out = out * key_padding[:, None, :, None].to(out.dtype)
    return out


def _placed(*spellings: dict[str, Any]) -> list[dict[str, Any]]:
    """Each spelling in the mask only, in the attention only, and in both."""
    out: list[dict[str, Any]] = []
    for knobs in spellings:
        mask, attn = partial(pattern, **knobs), partial(attention, **knobs)
        out += [{MASK: mask}, {ATTN: attn}, {MASK: mask, ATTN: attn}]
    return out


MUTANTS = {
    "global-one-direction": _placed({"globals_": "rows"}, {"globals_": "cols"}),
    "longformer-window-as-total": _placed({"halve": True}),
    "window-off-by-one": _placed(
        {"lo_shift": 1, "hi_shift": 1},
        {"lo_shift": -1, "hi_shift": -1},
        {"lo_shift": 1},
        {"hi_shift": 1},
        {"hi_shift": -1},
        {"lo_shift": -1},
    ),
    "padding-ignores-global": [
        {ATTN: partial(attention, padding=where)}
        for where in ("keys", "rows", "both", "far-keys", "far-both", "local-keys")
    ],
    "padded-queries-zeroed": {ATTN: partial(attention, zero_padded_queries=True)},
}

B, H, d, dv = 2, 3, 4, 5


def _params(L: int, w: int, G: int) -> dict[str, Any]:
    return {"B": B, "H": H, "d": d, "L": L, "S": L, "w": w, "window": w, "W": 2 * w + 1, "G": G}


def _qkv(seed: int, L: int) -> tuple[torch.Tensor, ...]:
    return (
        randn(B, H, L, d, seed=seed),
        randn(B, H, L, d, seed=seed + 1),
        randn(B, H, L, dv, seed=seed + 2),
    )


def _grid_qkv(L: int) -> tuple[torch.Tensor, ...]:
    zeros = torch.zeros(B, H, L, d, dtype=torch.float64)
    return zeros, zeros.clone(), torch.eye(L, dtype=torch.float64).expand(B, H, L, L).clone()


def probes() -> list[Probe]:
    """Grids without and with global positions (V = I: rows are weights), masks and
    attention with globals at both ends and in the middle, key padding over a global key,
    and a long sequence for the memory budget."""
    no_glob, glob = torch.zeros(0, dtype=torch.long), torch.tensor([0, 6, 13])
    pad = (
        torch.arange(14)[None, :] < torch.tensor([14, 10])[:, None]
    )  # batch 1: keys 10..13 (global 13) padded
    big_L, big_w = 1024, 8
    big = tuple(randn(1, 1, big_L, 2, seed=s, dtype=torch.float32) for s in (620, 621, 622))
    return [
        Probe(
            "window grid L=12, window=2, no global",
            MASK,
            (12, 2, no_glob),
            params=_params(12, 2, 0),
            grid="mask",
            name_zh="窗口网格 L=12, window=2，无全局位置",
        ),
        Probe(
            "attention window grid L=12, window=2, no global (q = k = 0, V = I)",
            ATTN,
            (*_grid_qkv(12), 2, no_glob),
            params=_params(12, 2, 0),
            grid="weights",
            name_zh="注意力窗口网格 L=12, window=2，无全局位置（q = k = 0，V = I）",
        ),
        Probe(
            "mask L=14, window=2, global [0, 6, 13]",
            MASK,
            (14, 2, glob),
            params=_params(14, 2, 3),
            grid="mask",
            name_zh="掩码 L=14, window=2，全局 [0, 6, 13]",
        ),
        Probe(
            "attention grid L=14, window=2, global [0, 6, 13] (q = k = 0, V = I)",
            ATTN,
            (*_grid_qkv(14), 2, glob),
            params=_params(14, 2, 3),
            grid="weights",
            name_zh="注意力网格 L=14, window=2，全局 [0, 6, 13]（q = k = 0，V = I）",
        ),
        Probe(
            "mask L=11, window=3, global [4]",
            MASK,
            (11, 3, torch.tensor([4])),
            params=_params(11, 3, 1),
            name_zh="掩码 L=11, window=3，全局 [4]",
        ),
        Probe(
            "attention L=14, window=2, global [0, 6, 13]",
            ATTN,
            (*_qkv(601, 14), 2, glob),
            params=_params(14, 2, 3),
            repeat=True,
            name_zh="注意力 L=14, window=2，全局 [0, 6, 13]",
        ),
        Probe(
            "attention with key padding over global 13, L=14, window=2",
            ATTN,
            (*_qkv(604, 14), 2, glob, pad),
            params=_params(14, 2, 3),
            name_zh="键填充覆盖全局位置 13 的注意力，L=14, window=2",
        ),
        Probe(
            "attention with key padding, L=11, window=3, global [4]",
            ATTN,
            (
                *_qkv(610, 11),
                3,
                torch.tensor([4]),
                torch.arange(11)[None, :] < torch.tensor([8, 11])[:, None],
            ),
            params=_params(11, 3, 1),
            name_zh="带键填充的注意力，L=11, window=3，全局 [4]",
        ),
        Probe(
            "attention L=11, window=3, global [4]",
            ATTN,
            (*_qkv(607, 11), 3, torch.tensor([4])),
            params=_params(11, 3, 1),
            name_zh="注意力 L=11, window=3，全局 [4]",
        ),
        Probe(
            f"memory: L = {big_L}, window = {big_w}, global [0, 500]",
            ATTN,
            (*big, big_w, torch.tensor([0, 500])),
            params={**_params(big_L, big_w, 2), "B": 1, "H": 1, "d": 2},
            dtype=torch.float32,
            budget=("materializes-full-scores", big_L * big_L // 2),
            name_zh=f"内存：L = {big_L}，window = {big_w}，全局 [0, 500]",
        ),
    ]


GRID_CAPTION = {
    "en": "rows = queries, columns = keys (token positions)",
    "zh": "行 = 查询，列 = 键（token 位置）",
}


def finding_data(
    mid: str, probes: list[Probe], observed: list[Any], subject: Any
) -> dict[str, Any]:
    from attnkata.checker import mistakes

    return {"grid_caption": GRID_CAPTION} if mistakes.get(mid).grid and mid in MUTANTS else {}


def alternatives(probe: Probe) -> list[Probe]:
    """For code that takes only dv == d, or only L a multiple of 2 * window (HF's sliding
    chunks; callers pad): the attention probes with dv = d, with L grown to whole chunks
    (padded keys stay padded), and both."""
    if probe.entry != ATTN or probe.budget is not None:
        return []
    q, v = probe.args[0], probe.args[2]
    L, w = q.shape[-2], probe.args[3]
    forms = []
    if v.shape[-1] != q.shape[-1]:
        forms.append(resized(probe, dv=q.shape[-1], label="dv = d", label_zh="dv = d"))
    chunk = 2 * w
    if chunk and L % chunk:
        whole = _grown(probe, L + chunk - L % chunk)
        forms.append(whole)
        if v.shape[-1] != q.shape[-1]:
            forms.append(
                resized(
                    whole,
                    dv=q.shape[-1],
                    label="dv = d",
                    label_zh="dv = d",
                )
            )
    return forms


def _grown(probe: Probe, L: int) -> Probe:
    """The attention probe with the sequence grown to L tokens (new random tokens at the
    end; the key padding carries its last column on, so padded keys stay padded)."""
    q, k, v, window, gidx, *rest = probe.args
    extra = L - q.shape[-2]
    seed = 680 + L

    def more(x: torch.Tensor, s: int) -> torch.Tensor:
        tail = randn(*x.shape[:-2], extra, x.shape[-1], seed=s, dtype=x.dtype)
        if not x.abs().sum():  # the grids' q = k = 0 stay 0
            tail = torch.zeros_like(tail)
        return torch.cat([x, tail], dim=-2)

    args = [more(q, seed), more(k, seed + 1), v, window, gidx, *rest]
    if torch.equal(v[0, 0], torch.eye(v.shape[-2], dtype=v.dtype)):  # V = I grids grow as I
        args[2] = torch.eye(L, dtype=v.dtype).expand(*v.shape[:-2], L, L).clone()
    else:
        args[2] = more(v, seed + 2)
    if rest and isinstance(rest[0], torch.Tensor):
        pad = rest[0]
        args[5] = torch.cat([pad, pad[:, -1:].expand(pad.shape[0], extra)], dim=1)
    return replace(
        probe,
        name=f"{probe.name} (L = {L}, whole chunks of 2 * window)",
        name_zh=f"{probe.name_zh or probe.name}（L = {L}，2 * window 的整块）",
        args=tuple(args),
        params={**probe.params, "L": L, "S": L},
        repeat=False,
    )


REFERENCE = ref
