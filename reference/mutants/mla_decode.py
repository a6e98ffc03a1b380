"""Wrong variants of reference/mla_decode.py: one knobbed absorbed forward, every knob at its
default = the reference.

Sizes B=2, H=3, r=10, nope=6, rope=8, v=5 (nope + rope, nope and v all differ; H >= 2 shows
a slice of kv_b_proj that ignores its per-head layout). The probes follow one sequence: a
prefill of 5 tokens (P = 0), a chunk of 4 (P = 5), one token (P = 9), then a chunk of 3
after decoding (P = 10), each given the reference's cache of the steps before it. Prefill hides the cache mistakes; the chunk
(B, L, H, P all different) shows them. The memory probe (P = 1024, H = 16) flags the
decompression of the whole cache from the candidate's trace.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import nn

from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.diagnose.module_probes import remakeable, seeded
from attnkata.checker.probes import randn
from attnkata.reference import mla_decode as ref

ENTRY = "LatentDecoder"
B, H, R, NOPE, ROPE, DV, QR = 2, 3, 10, 6, 8, 5, 12
D = 24
INIT = ((D, H, R, NOPE, ROPE, DV), {})
SEED = 13
TIMELINE = [("prefill", 0, 5), ("chunk", 5, 4), ("token", 9, 1), ("chunk", 10, 3)]
FIRST = 10  # tokens of the first timeline (the later chunk's tokens are drawn apart)
ZH_PHASE = {"prefill": "预填充", "chunk": "分块", "token": "单个 token"}


class REFERENCE:
    LatentDecoder = seeded(ref.LatentDecoder)


@dataclass(frozen=True)
class Knobs:
    """positions: "offset" (P + i), "restart" (i) or "restart-multi" (i when L > 1). absorb: "head" (kv_b_proj viewed as
    (H, nope + v, r)) or "global" (H*nope key rows, then H*v value rows). cache_norm: "normed",
    "raw" (c_kv cached and used without kv_a_norm) or "raw-read" (c_kv cached raw, the whole
    cache normalised when read). rerotate: None, "after-cat" (the concatenated rope keys
    rotated at 0 .. S - 1 and stored so) or "store-raw" (unrotated rope keys cached, all
    rotated on read). scale: "qk" or "nope". layout: "half" or "interleaved". causal:
    "bottom-right", "top-left" or "top-left-multi" (top-left, no mask at all when L == 1, as
    Meta's and DeepSeek-V3's inference code skip it for a single token)."""

    positions: str = "offset"
    absorb: str = "head"
    cache_norm: str = "normed"
    rerotate: str | None = None
    scale: str = "qk"
    layout: str = "half"
    causal: str = "bottom-right"


def rotate(x: torch.Tensor, positions: torch.Tensor, theta: float, layout: str) -> torch.Tensor:
    if layout == "half":
        return ref.rotate(x, positions, theta)
    dim = x.shape[-1]
    inv_freq = theta ** (-torch.arange(0, dim, 2, dtype=torch.float64, device=x.device) / dim)
    angles = positions.to(torch.float64)[:, None] * inv_freq
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


def forward(m: nn.Module, knobs: Knobs, x: torch.Tensor, cache: torch.Tensor | None = None) -> Any:
    B_, L, _ = x.shape
    H_, nope, rope, dv, r = m.n_heads, m.nope_dim, m.rope_dim, m.v_dim, m.kv_lora_rank
    P = 0 if cache is None else cache.shape[1]
    # "restart-multi": only a call with L > 1 restarts (a prompt branch; the L == 1 branch is right)
    restart = knobs.positions == "restart" or (knobs.positions == "restart-multi" and L > 1)
    pos = torch.arange(L) if restart else torch.arange(P, P + L)
    q = m.q_proj(x) if hasattr(m, "q_proj") else m.q_b_proj(m.q_a_norm(m.q_a_proj(x)))
    q_nope, q_rope = q.view(B_, L, H_, nope + rope).transpose(1, 2).split([nope, rope], dim=-1)
    q_rope = rotate(q_rope, pos, m.rope_theta, knobs.layout)
    c_kv, k_rope = m.kv_a_proj(x).split([r, rope], dim=-1)
    c_new = m.kv_a_norm(c_kv) if knobs.cache_norm == "normed" else c_kv
    k_new = (
        k_rope if knobs.rerotate is not None else rotate(k_rope, pos, m.rope_theta, knobs.layout)
    )
    entry = torch.cat([c_new, k_new], dim=-1)
    new_cache = entry if cache is None else torch.cat([cache, entry], dim=1)
    c_all, k_all = new_cache.split([r, rope], dim=-1)
    S = P + L
    if knobs.rerotate is not None:
        k_all = rotate(k_all, torch.arange(S), m.rope_theta, knobs.layout)
        if knobs.rerotate == "after-cat":
            new_cache = torch.cat([c_all, k_all], dim=-1)
    if knobs.cache_norm == "raw-read":
        c_all = m.kv_a_norm(c_all)
    w = m.kv_b_proj.weight
    if knobs.absorb == "global":
        w_uk, w_uv = w[: H_ * nope].view(H_, nope, r), w[H_ * nope :].view(H_, dv, r)
    else:
        w_uk, w_uv = w.view(H_, nope + dv, r).split([nope, dv], dim=1)
    q_lat = torch.einsum("bhln,hnr->bhlr", q_nope, w_uk)
    scores = q_lat @ c_all[:, None].transpose(-2, -1) + q_rope @ k_all[:, None].transpose(-2, -1)
    scores = scores * (m.scale if knobs.scale == "qk" else nope**-0.5)
    allowed = torch.ones(L, S, dtype=torch.bool).tril(
        0 if knobs.causal.startswith("top-left") else P
    )
    if knobs.causal == "top-left-multi" and L == 1:
        allowed = torch.ones(L, S, dtype=torch.bool)
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    y = torch.einsum("bhlr,hvr->bhlv", weights @ c_all[:, None], w_uv)
    return m.o_proj(y.transpose(1, 2).reshape(B_, L, H_ * dv)), new_cache


def variant(**changes: Any) -> type[nn.Module]:
    knobs = replace(Knobs(), **changes)

    class Variant(ref.LatentDecoder):
        def forward(self, x: torch.Tensor, cache: torch.Tensor | None = None) -> Any:
            return forward(self, knobs, x, cache)

    Variant.__name__ = Variant.__qualname__ = f"{ENTRY}[{changes}]"
    return remakeable(Variant, changes, (variant,))


MUTANTS: dict[str, list[type[nn.Module]]] = {
    "mla-absorb-wrong-slice": [variant(absorb="global")],
    "mla-cache-unnormalized": [variant(cache_norm="raw"), variant(cache_norm="raw-read")],
    "cache-positions-restart": [variant(positions="restart"), variant(positions="restart-multi")],
    "cache-rerotated": [variant(rerotate="after-cat"), variant(rerotate="store-raw")],
    "mla-scale-without-rope-dim": [variant(scale="nope")],
    "rope-wrong-layout": [variant(layout="interleaved")],
    "causal-mask-top-left": [variant(causal="top-left"), variant(causal="top-left-multi")],
}


def _sizes(past: int, n: int) -> dict[str, Any]:
    return {
        "B": B,
        "H": H,
        "D": D,
        "nope": NOPE,
        "rope": ROPE,
        "v": DV,
        "d": NOPE + ROPE,
        "P": past,
        "L": n,
        "S": past + n,
    }


def _timeline(
    init: tuple[tuple, dict[str, Any]], seed: int, x: torch.Tensor
) -> list[tuple[str, int, Any, Any]]:
    """(phase, P, x piece, cache) per step, with the reference's own caches."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        m = REFERENCE.LatentDecoder(*init[0], **init[1])
    steps, cache = [], None
    with torch.no_grad():
        for phase, past, n in TIMELINE:
            piece = x[:, past : past + n].clone()
            steps.append((phase, past, piece, cache))
            _, cache = m(piece, cache)
    return steps


def probes() -> list[Probe]:
    x = torch.cat(
        [
            randn(B, FIRST, D, seed=701),
            randn(B, sum(n for _, _, n in TIMELINE) - FIRST, D, seed=703),
        ],
        dim=1,
    )
    out = []
    for phase, past, piece, cache in _timeline(INIT, SEED, x):
        n = piece.shape[1]
        out.append(
            Probe(
                f"{phase}: P = {past}, L = {n}",
                ENTRY,
                (piece,) if cache is None else (piece, cache),
                params=_sizes(past, n),
                init=INIT,
                seed=SEED,
                repeat=phase == "prefill",
                name_zh=f"{ZH_PHASE[phase]}：P = {past}，L = {n}",
            )
        )
    lora = (INIT[0], {"q_lora_rank": QR})
    _, past, piece, cache = _timeline(lora, SEED + 1, x)[1]
    out.append(
        Probe(
            f"q_lora_rank={QR}, chunk: P = {past}, L = {piece.shape[1]}",
            ENTRY,
            (piece, cache),
            params=_sizes(past, piece.shape[1]),
            init=lora,
            seed=SEED + 1,
            name_zh=f"q_lora_rank={QR}，分块：P = {past}，L = {piece.shape[1]}",
        )
    )
    chunk = out[1]
    out.append(
        Probe(
            "float32 chunk: P = 5, L = 4",
            ENTRY,
            tuple(t.float() for t in chunk.args),
            params=chunk.params,
            init=INIT,
            seed=SEED,
            dtype=torch.float32,
            name_zh="float32 分块：P = 5，L = 4",
        )
    )
    # Memory: one token after 4096 cached ones with 16 heads; rebuilding the cache's per-head
    # keys takes H * P * nope elements, the absorbed form at most P * (r + rope). The sizes
    # and the limit are the efficient test's own: a limit that scales with P but is met at a
    # smaller P would flag what does not grow with P (W_UV folded into o_proj: D * H * r).
    big_h, big_p, big_nope = 16, 4096, 32
    big_init = ((256, big_h, 64, big_nope, 16, 32), {})
    big_cache = randn(1, big_p, 64 + 16, seed=702, dtype=torch.float32)
    out.append(
        Probe(
            f"memory: one token after P = {big_p}, H = {big_h}",
            ENTRY,
            (randn(1, 1, 256, seed=703, dtype=torch.float32), big_cache),
            params={
                "B": 1,
                "H": big_h,
                "P": big_p,
                "L": 1,
                "S": big_p + 1,
                "nope": big_nope,
                "rope": 16,
                "D": 256,
            },
            init=big_init,
            seed=SEED + 2,
            dtype=torch.float32,
            budget=("mla-materializes-cache-heads", big_h * big_p * big_nope // 4),
            name_zh=f"内存：P = {big_p}、H = {big_h} 之后的一个 token",
        )
    )
    return out
