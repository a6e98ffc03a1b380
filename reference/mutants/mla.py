"""Wrong variants of reference/mla.py: the MLA-specific mistakes (scale without the rope dims,
RoPE on the nope part, kv_b split globally, no kv_a_norm, the interleaved RoPE layout) and
the attention mistakes MLA shares with MHA (see checker/diagnose/module_probes.py).

Sizes: nope = 6, rope = 4 and v = 5 all differ and H * (nope + rope) = D = 30, so
1/sqrt(nope + rope), 1/sqrt(nope) and 1/sqrt(D) are three different scales; rope >= 4 and
positions up to 5 separate the two RoPE layouts; H = 3 shows a global kv_b split.
Self-attention (L == S): `causal-mask-top-left` cannot show here.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.diagnose.module_probes import (
    FAMILY_MISTAKES,
    Knobs,
    causal_allowed,
    core,
    eye_,
    family_probes,
    merge_heads,
    remakeable,
    seeded,
    split_heads,
)
from attnkata.reference import mla as ref

ENTRY = "MultiHeadLatentAttention"
B, L, H, R, NOPE, ROPE, DV = 2, 6, 3, 12, 6, 4, 5
D = H * (NOPE + ROPE)
Q_LORA = 8


def craft_grid(m: nn.Module) -> None:
    """For the grid probe (one head, D = r = v = L): q = 0, so every allowed key scores the
    same; c_kv = x, k_nope = k_rope = 0, value = normalised c_kv, W_o = I: with one-hot inputs
    the output row of query i is non-zero exactly on the keys it attends."""
    for p in m.parameters():
        p.zero_()
    eye_(m.kv_a_proj.weight)  # [c_kv | k_rope] = [x | 0]
    m.kv_a_norm.weight.fill_(1.0)
    nope, dv = m.nope_dim, m.v_dim
    eye_(m.kv_b_proj.weight[nope : nope + dv])  # per head [k_nope | value] = [0 | c_kv]
    eye_(m.o_proj.weight)


class REFERENCE:
    MultiHeadLatentAttention = seeded(ref.MultiHeadLatentAttention, craft_grid)


def rope_interleaved(x: torch.Tensor, theta: float) -> torch.Tensor:
    """RoPE on adjacent pairs (x[2i], x[2i+1]), Meta's and DeepSeek's original layout."""
    L, dim = x.shape[-2], x.shape[-1]
    inv_freq = theta ** (-torch.arange(0, dim, 2, dtype=torch.float64, device=x.device) / dim)
    angles = torch.arange(L, dtype=torch.float64, device=x.device)[:, None] * inv_freq  # (L, dim/2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)


def rope_half(x: torch.Tensor, theta: float) -> torch.Tensor:
    """The contract's rotate_half RoPE over x's last dim, positions 0..L-1."""
    cos, sin = ref.rope_cos_sin(x.shape[-2], x.shape[-1], theta, x.dtype, x.device)
    return ref.apply_rope(x, cos, sin)


def mla_forward(
    m: nn.Module,
    knobs: Knobs,
    mla: dict[str, Any],
    x: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
) -> torch.Tensor:
    """reference/mla.py's forward with the knobs' mistakes; `mla` holds the MLA-only ones:
    rope ("rope" = the reference, "interleaved", "all" = the whole q/k head rotated,
    "nope-too" = nope rotated with its own table), kv_split ("head" or "global"), kv_norm."""
    B, L, _ = x.shape
    H, nope, rope, dv, r = m.n_heads, m.nope_dim, m.rope_dim, m.v_dim, m.kv_lora_rank
    q = m.q_proj(x) if hasattr(m, "q_proj") else m.q_b_proj(m.q_a_norm(m.q_a_proj(x)))
    q = split_heads(q, B, L, H, nope + rope, knobs.split)
    q_nope, q_rope = q.split([nope, rope], dim=-1)
    c_kv, k_rope = m.kv_a_proj(x).split([r, rope], dim=-1)
    kv = m.kv_b_proj(m.kv_a_norm(c_kv) if mla.get("kv_norm", True) else c_kv)
    if mla.get("kv_split", "head") == "global":
        k_nope, v = kv.split([H * nope, H * dv], dim=-1)
        k_nope, v = (
            split_heads(k_nope, B, L, H, nope, knobs.split),
            split_heads(v, B, L, H, dv, knobs.split),
        )
    else:
        k_nope, v = split_heads(kv, B, L, H, nope + dv, knobs.split).split([nope, dv], dim=-1)
    how, theta = mla.get("rope", "rope"), m.rope_theta
    rotate = rope_interleaved if how == "interleaved" else rope_half
    if how != "all":
        q_rope, k_rope = rotate(q_rope, theta), rotate(k_rope, theta)
    if how == "nope-too":
        q_nope, k_nope = rotate(q_nope, theta), rotate(k_nope, theta)
    q = torch.cat([q_nope, q_rope], dim=-1)
    k = torch.cat([k_nope, k_rope[:, None].expand(B, H, L, rope)], dim=-1)
    if how == "all":
        q, k = rotate(q, theta), rotate(k, theta)
    scale = {
        "d": 1 / math.sqrt(nope + rope),
        "nope": 1 / math.sqrt(nope),
        "D": 1 / math.sqrt(m.o_proj.out_features),
        "none": 1.0,
        "not-sqrt": 1 / (nope + rope),
        "inverted": math.sqrt(nope + rope),
    }[knobs.scale]
    causal = causal_allowed(L, L, knobs.causal, x.device) if is_causal else None
    y = merge_heads(core(q, k, v, scale, attn_mask, causal, knobs), B, L, knobs.merge)
    return m.o_proj(y) if knobs.out_proj else y


def variant(mla: dict[str, Any] | None = None, **changes: Any) -> type[nn.Module]:
    knobs = replace(Knobs(), **changes)
    extra = dict(mla or {})

    class Variant(ref.MultiHeadLatentAttention):
        def forward(
            self, x: torch.Tensor, attn_mask: torch.Tensor | None = None, is_causal: bool = False
        ) -> torch.Tensor:
            return mla_forward(self, knobs, extra, x, attn_mask, is_causal)

    label = ", ".join([knobs.label(), *(f"{k}={v!r}" for k, v in extra.items())])
    Variant.__name__ = Variant.__qualname__ = f"{ENTRY}[{label}]"
    return remakeable(Variant, {**changes, "mla": extra} if extra else changes, (_remake,))


def _remake(**knobs: Any) -> type[nn.Module]:
    return variant(knobs.pop("mla", None), **knobs)


MUTANTS: dict[str, list[type[nn.Module]]] = {
    "mla-scale-without-rope-dim": [variant(scale="nope")],
    "mla-rope-on-nope": [variant({"rope": "all"}), variant({"rope": "nope-too"})],
    "mla-kv-b-split-global": [variant({"kv_split": "global"})],
    "mla-missing-kv-norm": [variant({"kv_norm": False})],
    "rope-wrong-layout": [variant({"rope": "interleaved"})],
    **{
        mid: [variant(**knobs) for knobs in variants]
        for mid, variants in FAMILY_MISTAKES.items()
        if mid not in ("padding-mask-wrong-axis", "mask-added-as-float")
    },  # not MLA mistakes
}


def probes() -> list[Probe]:
    init = ((D, H, R, NOPE, ROPE, DV), {})
    out = family_probes(
        ENTRY,
        B=B,
        L=L,
        H=H,
        d=NOPE + ROPE,
        init=init,
        grid_init=((6, 1, 6, 2, 2, 6), {}),
        grid_sizes={"L": 6, "S": 6, "D": 6, "H": 1, "d": 4},
    )
    sizes = {**out[0].params, "nope": NOPE, "rope": ROPE, "v": DV}
    for p in out:
        p.params = {**sizes, **p.params} if p.grid else sizes
    q_lora = out[5]  # attn_mask and is_causal, through the low-rank query path
    out.append(
        Probe(
            f"q_lora_rank={Q_LORA}, attn_mask and is_causal",
            ENTRY,
            q_lora.args,
            q_lora.kwargs,
            params=sizes,
            init=(init[0], {"q_lora_rank": Q_LORA}),
            seed=9,
        )
    )
    return out
