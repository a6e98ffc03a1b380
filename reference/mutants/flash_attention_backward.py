"""Wrong variants of reference/flash_attention_backward.py, and the probes that tell them apart.

Every variant is the reference's tiled backward with one knob turned (`flash_bwd`, all
knobs off = correct). The probes give each call the forward's own (out, lse) for its
inputs. Most use square 8 x 8 tiles that fill L and S exactly: only there does P @ dO in
place of P^T @ dO run at all (elsewhere it raises, as it does in the candidate's code).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import torch

from attnkata.checker.diagnose.inputs import Probe, resized, strict_mask, with_empty_rows
from attnkata.checker.probes import randn
from attnkata.reference import flash_attention as fwd
from attnkata.reference import flash_attention_backward as ref

ENTRY = "flash_attention_backward"
NEG_INF = float("-inf")


def flash_bwd(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    dout: torch.Tensor,
    mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    block_q: int = 64,
    block_k: int = 64,
    *,
    delta: bool = True,
    scale_dq: bool = True,
    scale_dk: bool = True,
    per_tile: bool = False,
    guard_lse: bool = True,
    p_transposed: bool = True,
    ds_transposed: bool = True,
    top_left: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The reference's tiled backward with knobs for the catalogued mistakes."""
    B, H, L, d = q.shape
    S = k.shape[-2]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    if mask is not None:
        mask = mask.expand(B, H, L, S)
    offset = 0 if top_left else S - L
    big_d = (dout * out).sum(dim=-1, keepdim=True) if delta else torch.zeros_like(out[..., :1])
    lse = (
        torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse)) if guard_lse else lse
    ).unsqueeze(-1)
    dq = torch.zeros_like(q)
    dk, dv = torch.zeros_like(k), torch.zeros_like(v)
    for j0 in range(0, S, block_k):
        j1 = min(j0 + block_k, S)
        kj, vj = k[:, :, j0:j1], v[:, :, j0:j1]
        for i0 in range(0, L, block_q):
            i1 = min(i0 + block_q, L)
            qi, do_i = q[:, :, i0:i1], dout[:, :, i0:i1]
            s = (qi @ kj.transpose(-2, -1)) * scale
            allowed = torch.ones(i1 - i0, j1 - j0, dtype=torch.bool, device=q.device)
            if is_causal:
                p = torch.arange(i0, i1, device=q.device).unsqueeze(1) + offset
                allowed = allowed & (torch.arange(j0, j1, device=q.device).unsqueeze(0) <= p)
            if mask is not None:
                allowed = allowed & mask[:, :, i0:i1, j0:j1]
            s = s.masked_fill(~allowed, NEG_INF)
            if per_tile:  # a softmax of this tile alone, as if its keys were all there is
                m = s.amax(dim=-1, keepdim=True)
                e = torch.exp(s - torch.where(torch.isfinite(m), m, torch.zeros_like(m)))
                z = e.sum(dim=-1, keepdim=True)
                prob = e / torch.where(z > 0, z, torch.ones_like(z))
            else:
                prob = torch.exp(s - lse[:, :, i0:i1])
            dv[:, :, j0:j1] += (prob.transpose(-2, -1) if p_transposed else prob) @ do_i
            ds = prob * (do_i @ vj.transpose(-2, -1) - big_d[:, :, i0:i1])
            dq[:, :, i0:i1] += (ds @ kj) * (scale if scale_dq else 1.0)
            dk[:, :, j0:j1] += ((ds.transpose(-2, -1) if ds_transposed else ds) @ qi) * (
                scale if scale_dk else 1.0
            )
    return dq, dk, dv


def _b(**knobs: Any) -> Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    return partial(flash_bwd, **knobs)


MUTANTS = {
    "flash-bwd-missing-delta": _b(delta=False),
    "flash-bwd-missing-scale": [
        _b(scale_dq=False, scale_dk=False),
        _b(scale_dq=False),
        _b(scale_dk=False),
    ],
    "flash-bwd-renormalizes-per-tile": _b(per_tile=True),
    "flash-bwd-nan-empty-rows": _b(guard_lse=False),
    "flash-bwd-dk-dv-transposed": [
        _b(p_transposed=False, ds_transposed=False),
        _b(p_transposed=False),
        _b(ds_transposed=False),
    ],
    "causal-mask-top-left": _b(top_left=True),
}

B, H, d, dv, T = 2, 3, 8, 6, 8


def backward_args(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, seed: int, **kwargs: Any
) -> tuple[torch.Tensor, ...]:
    """(q, k, v, out, lse, dout): the forward's own out and lse for these inputs."""
    out, lse = fwd.flash_attention(q, k, v, **kwargs)
    dout = randn(*out.shape, seed=seed, dtype=q.dtype)
    return q, k, v, out, lse, dout


def _probe(
    name: str,
    name_zh: str,
    L: int,
    S: int,
    seed: int,
    *,
    dtype: torch.dtype = torch.float64,
    lead: tuple[int, int] = (B, H),
    dims: tuple[int, int] = (d, dv),
    tiles: int = T,
    budget: tuple[str, int] | None = None,
    repeat: bool = False,
    **kwargs: Any,
) -> Probe:
    dq_, dv_ = dims
    q, k, v = (
        randn(*lead, L, dq_, seed=seed, dtype=dtype),
        randn(*lead, S, dq_, seed=seed + 1, dtype=dtype),
        randn(*lead, S, dv_, seed=seed + 2, dtype=dtype),
    )
    kw = {**kwargs, "block_q": tiles, "block_k": tiles}
    params = {
        "B": lead[0],
        "H": lead[1],
        "L": L,
        "S": S,
        "d": dq_,
        "dv": dv_,
        "block_q": tiles,
        "block_k": tiles,
    }
    if "scale" in kwargs:
        params["scale"] = kwargs["scale"]
    return Probe(
        name,
        ENTRY,
        backward_args(q, k, v, seed + 3, **kw),
        kw,
        params=params,
        dtype=dtype,
        budget=budget,
        repeat=repeat,
        name_zh=name_zh,
    )


def probes() -> list[Probe]:
    """Square full tiles (L, S multiples of 8) with and without masks, L != S causal both
    ways (queries without keys), fully masked rows, an explicit scale, tail tiles, and one
    long causal sequence whose largest intermediate tensor must stay far below L x S."""
    empty = with_empty_rows(strict_mask(B, 1, 16, 16, seed=611, p=0.6), [(0, 0, 3), (1, 0, 9)])
    empty[0, 0, 8:16, 0:8] = False  # a fully masked tile
    n = 1024
    return [
        _probe(
            "no mask, L = S = 16, 8 x 8 tiles",
            "无 mask，L = S = 16，8 x 8 分块",
            16,
            16,
            601,
            repeat=True,
        ),
        _probe(
            "causal, L = 16, S = 24 (a KV cache)",
            "因果，L = 16，S = 24（KV cache）",
            16,
            24,
            605,
            is_causal=True,
        ),
        _probe(
            "causal, L = 24, S = 16 (queries 0..7 see no key)",
            "因果，L = 24，S = 16（查询 0..7 没有可看的键）",
            24,
            16,
            609,
            is_causal=True,
        ),
        _probe(
            "fully masked rows and a fully masked tile, L = S = 16",
            "整行被遮掩、整块被遮掩，L = S = 16",
            16,
            16,
            613,
            mask=empty,
        ),
        _probe(
            "explicit scale=0.3, L = S = 16", "显式 scale=0.3，L = S = 16", 16, 16, 617, scale=0.3
        ),
        _probe(
            "random mask and causal, L = 19, S = 27 (short last tiles)",
            "随机 mask 加因果，L = 19，S = 27（最后的分块不满）",
            19,
            27,
            621,
            is_causal=True,
            mask=strict_mask(B, 1, 19, 27, seed=622, p=0.7),
        ),
        _probe(
            f"memory: causal, L = S = {n}, 128 x 128 tiles",
            f"内存：因果，L = S = {n}，128 x 128 分块",
            n,
            n,
            630,
            dtype=torch.float32,
            lead=(1, 1),
            dims=(16, 16),
            tiles=128,
            budget=("materializes-full-scores", n * n // 8),
            is_causal=True,
        ),
    ]


def alternatives(probe: Probe) -> list[Probe]:
    """For code that takes only dv == d, or only L and S multiples of the tile (then the
    tail tiles cannot be judged), or both: the probe in those forms (the forward's out and
    lse, and dout, made again for the new inputs)."""
    q, k, v = probe.args[:3]
    if probe.budget is not None:
        return []
    tile = probe.kwargs.get("block_q", 8)
    whole = {"L": q.shape[-2] - q.shape[-2] % tile, "S": k.shape[-2] - k.shape[-2] % tile}
    forms = []
    if v.shape[-1] != q.shape[-1]:
        forms.append(dict(dv=q.shape[-1], label="dv = d", label_zh="dv = d"))
    if (whole["L"], whole["S"]) != (q.shape[-2], k.shape[-2]) and all(whole.values()):
        forms.append(dict(**whole, label="whole tiles", label_zh="整块"))
        if v.shape[-1] != q.shape[-1]:
            forms.append(
                dict(**whole, dv=q.shape[-1], label="dv = d, whole tiles", label_zh="dv = d，整块")
            )
    out = []
    for form in forms:
        alt = resized(replace(probe, args=(q, k, v)), **form)  # the mask cut with L and S
        out.append(replace(alt, args=backward_args(*alt.args, seed=7, **alt.kwargs)))
    return out


REFERENCE = ref
