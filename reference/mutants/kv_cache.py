"""Wrong variants of reference/kv_cache.py: one knobbed forward, every knob at its default =
the reference.

Sizes B=3, H=6, Hkv=2 (g=3), d=8. The probes follow one sequence through time: a prefill of
5 tokens (P = 0), a chunk of 4 (P = 5), single tokens at positions 9 and 10, then a chunk
of 3 after decoding (P = 11: code right for prefill and decoding only), each given
the reference's cache of the steps before it (a cache in the contract's layout), so a step is
judged on its own. Prefill hides every cache mistake; the chunk (B, L, H, Hkv, P all
different) shows them all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import nn

from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.diagnose.module_probes import remakeable, seeded
from attnkata.checker.probes import randn
from attnkata.reference import kv_cache as ref

ENTRY = "CachedAttention"
B, H, HKV, HD = 3, 6, 2, 8
D = H * HD
INIT = ((D, H, HKV), {})
SEED = 11
# The timeline: (phase, P, L); x is one sequence of 11 tokens cut into these steps.
TIMELINE = [("prefill", 0, 5), ("chunk", 5, 4), ("token", 9, 1), ("token", 10, 1), ("chunk", 11, 3)]
FIRST = 11  # tokens of the first timeline (the later chunk's tokens are drawn apart)
ZH_PHASE = {"prefill": "预填充", "chunk": "分块", "token": "单个 token"}


class REFERENCE:
    CachedAttention = seeded(ref.CachedAttention)


@dataclass(frozen=True)
class Knobs:
    """positions: "offset" (P + i), "restart" (i) or "restart-multi" (i when L > 1). store: "kv" (Hkv heads), "repeated"
    (expanded to H heads before the concatenation), "repeated-after-cat" (HF's repeat_kv on
    the whole concatenation, whose result is returned as the cache) or "seq-first" (Meta's cache_k layout
    (B, S, Hkv, d): new keys joined on its dim 1, the cache returned so). cat_dim: the concatenation dim.
    rope_v: values rotated too. rerotate: None, "after-cat" (the concatenated keys rotated at
    0 .. P + L - 1) or "store-raw" (unrotated keys cached, all rotated when read).
    causal: "bottom-right", "top-left" or "top-left-multi" (top-left, no mask at all when L == 1,
    as Meta's and DeepSeek-V3's inference code skip it for a single token).
    kv_order: "interleave" (h // g) or "repeat" (h % Hkv). layout: "half" or "interleaved"."""

    positions: str = "offset"
    store: str = "kv"
    cat_dim: int = 2
    rope_v: bool = False
    rerotate: str | None = None
    causal: str = "bottom-right"
    kv_order: str = "interleave"
    layout: str = "half"


def rotate(
    x: torch.Tensor, positions: torch.Tensor, theta: float, layout: str = "half"
) -> torch.Tensor:
    if layout == "half":
        return ref.rotate(x, positions, theta)
    d = x.shape[-1]
    inv_freq = theta ** (-torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)
    angles = positions.to(torch.float64)[:, None] * inv_freq
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


def forward(m: nn.Module, knobs: Knobs, x: torch.Tensor, cache: Any = None) -> Any:
    B_, L, _ = x.shape
    H_, Hkv, d = m.n_heads, m.n_kv_heads, m.head_dim
    g = H_ // Hkv
    P = 0 if cache is None else cache[0].shape[2]
    # "restart-multi": only a call with L > 1 restarts (a prompt branch; the L == 1 branch is right)
    restart = knobs.positions == "restart" or (knobs.positions == "restart-multi" and L > 1)
    new_pos = torch.arange(L) if restart else torch.arange(P, P + L)

    def expand(t: torch.Tensor) -> torch.Tensor:
        return t.repeat(1, g, 1, 1) if knobs.kv_order == "repeat" else t.repeat_interleave(g, dim=1)

    q = m.q_proj(x).view(B_, L, H_, d).transpose(1, 2)
    k = m.k_proj(x).view(B_, L, Hkv, d).transpose(1, 2)
    v = m.v_proj(x).view(B_, L, Hkv, d).transpose(1, 2)
    q = rotate(q, new_pos, m.rope_theta, knobs.layout)
    if knobs.rerotate is None:
        k = rotate(k, new_pos, m.rope_theta, knobs.layout)
    if knobs.rope_v:
        v = rotate(v, new_pos, m.rope_theta, knobs.layout)
    if knobs.store == "repeated":
        k, v = expand(k), expand(v)
    seq_first = knobs.store == "seq-first"
    if cache is not None and seq_first:
        k = torch.cat([cache[0], k.transpose(1, 2)], dim=1).transpose(1, 2)
        v = torch.cat([cache[1], v.transpose(1, 2)], dim=1).transpose(1, 2)
    elif cache is not None:
        k = torch.cat([cache[0], k], dim=knobs.cat_dim)
        v = torch.cat([cache[1], v], dim=knobs.cat_dim)
    if knobs.store == "repeated-after-cat":
        k, v = expand(k), expand(v)
    S = k.shape[2]
    k_used = k
    if knobs.rerotate is not None:
        # The whole key sequence rotated at 0 .. S - 1: the cached keys a second time.
        k_used = rotate(k, torch.arange(S), m.rope_theta, knobs.layout)
        if knobs.rerotate == "after-cat":
            k = k_used
    new_cache = (k.transpose(1, 2), v.transpose(1, 2)) if seq_first else (k, v)
    if not knobs.store.startswith("repeated"):
        k_used, v_used = expand(k_used), expand(v)
    else:
        v_used = v
    scores = (q @ k_used.transpose(-2, -1)) / math.sqrt(d)
    allowed = torch.ones(L, S, dtype=torch.bool).tril(
        0 if knobs.causal.startswith("top-left") else S - L
    )
    if knobs.causal == "top-left-multi" and L == 1:
        allowed = torch.ones(L, S, dtype=torch.bool)
    scores = scores.masked_fill(~allowed, float("-inf"))
    y = torch.softmax(scores, dim=-1) @ v_used
    return m.o_proj(y.transpose(1, 2).reshape(B_, L, H_ * d)), new_cache


def variant(**changes: Any) -> type[nn.Module]:
    knobs = replace(Knobs(), **changes)

    class Variant(ref.CachedAttention):
        def forward(self, x: torch.Tensor, cache: Any = None) -> Any:
            return forward(self, knobs, x, cache)

    Variant.__name__ = Variant.__qualname__ = f"{ENTRY}[{changes}]"
    return remakeable(Variant, changes, (variant,))


MUTANTS: dict[str, list[type[nn.Module]]] = {
    "cache-positions-restart": [variant(positions="restart"), variant(positions="restart-multi")],
    "cache-stores-repeated-heads": [variant(store="repeated"), variant(store="repeated-after-cat")],
    "cache-concat-wrong-dim": [
        *(variant(cat_dim=dim) for dim in (1, -1, 0)),
        variant(store="seq-first"),
    ],
    "rope-on-values": [variant(rope_v=True)],
    "cache-rerotated": [variant(rerotate="after-cat"), variant(rerotate="store-raw")],
    "causal-mask-top-left": [variant(causal="top-left"), variant(causal="top-left-multi")],
    "kv-repeat-instead-of-interleave": [variant(kv_order="repeat")],
    "rope-wrong-layout": [variant(layout="interleaved")],
}


def _timeline_inputs() -> list[tuple[str, int, torch.Tensor, Any]]:
    """(phase, P, x, cache) per step: the reference's own caches, so each step's given cache
    is exactly what a correct earlier step returned."""
    total = sum(n for _, _, n in TIMELINE)
    x = torch.cat([randn(B, FIRST, D, seed=601), randn(B, total - FIRST, D, seed=603)], dim=1)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        m = REFERENCE.CachedAttention(*INIT[0], **INIT[1])
    steps, cache = [], None
    with torch.no_grad():
        for phase, past, n in TIMELINE:
            piece = x[:, past : past + n].clone()
            steps.append((phase, past, piece, cache))
            _, cache = m(piece, cache)
    return steps


def _params(past: int, n: int) -> dict[str, Any]:
    return {
        "B": B,
        "H": H,
        "Hkv": HKV,
        "g": H // HKV,
        "d": HD,
        "D": D,
        "P": past,
        "L": n,
        "S": past + n,
    }


def probe_name(phase: str, past: int, n: int) -> str:
    return f"{phase}: P = {past}, L = {n}"


def probes() -> list[Probe]:
    out = []
    for phase, past, piece, cache in _timeline_inputs():
        out.append(
            Probe(
                probe_name(phase, past, piece.shape[1]),
                ENTRY,
                (piece,) if cache is None else (piece, cache),
                params=_params(past, piece.shape[1]),
                init=INIT,
                seed=SEED,
                repeat=phase == "prefill",
                name_zh=f"{ZH_PHASE[phase]}：P = {past}，L = {piece.shape[1]}",
            )
        )
    chunk = out[1]
    out.append(
        Probe(
            "float32 chunk: P = 5, L = 4",
            ENTRY,
            tuple(
                t.float() if isinstance(t, torch.Tensor) else tuple(c.float() for c in t)
                for t in chunk.args
            ),
            params=chunk.params,
            init=INIT,
            seed=SEED,
            dtype=torch.float32,
            name_zh="float32 分块：P = 5，L = 4",
        )
    )
    out.append(
        Probe(
            "gradient w.r.t. x, chunk: P = 5, L = 4",
            ENTRY,
            chunk.args,
            params=chunk.params,
            init=INIT,
            seed=SEED,
            grad=((0,), randn(B, 4, D, seed=602)),
            name_zh="对 x 的梯度，分块：P = 5，L = 4",
        )
    )
    return out


# -- pictures ------------------------------------------------------------------------------
def positions_used(
    reference: nn.Module, x: torch.Tensor, past: int, value: Any
) -> list[int | str] | None:
    """The position each new token's key was rotated at, read from the returned key cache:
    the new keys are k_proj(x) rotated by an unknown position, found by trying 0 .. 63."""
    try:
        k_new = value[1][0][:, :, -x.shape[1] :].detach().double()
    except (TypeError, IndexError, KeyError):
        return None
    Hkv, d = reference.n_kv_heads, reference.head_dim
    if not isinstance(k_new, torch.Tensor) or tuple(k_new.shape) != (
        x.shape[0],
        Hkv,
        x.shape[1],
        d,
    ):
        return None
    with torch.no_grad():
        raw = reference.k_proj(x.to(next(reference.parameters()).dtype)).double()
        raw = raw.view(x.shape[0], x.shape[1], Hkv, d).transpose(1, 2)  # (B, Hkv, L, d)
        tries = torch.arange(64)
        out: list[int | str] = []
        for i in range(x.shape[1]):
            cand = ref.rotate(
                raw[:, :, i : i + 1].expand(-1, -1, 64, -1), tries, reference.rope_theta
            )
            err = (cand - k_new[:, :, i : i + 1]).abs().amax(dim=(0, 1, 3))  # (64,)
            best = int(err.argmin())
            out.append(
                best if float(err[best]) < 1e-6 * max(1.0, float(k_new.abs().max())) else "?"
            )
    return out


def _timeline_picture(
    probes: list[Probe], observed: list[Any], subject: Any
) -> dict[str, Any] | None:
    rows: list[list[Any]] = []
    differs: list[list[int]] = []
    for p, o in zip(probes, observed, strict=False):
        if p.grad is not None or p.dtype != torch.float64 or p.name.split(":")[0] not in ZH_PHASE:
            continue
        phase = p.name.split(":")[0]
        past, n = p.params["P"], p.params["L"]
        got = (
            positions_used(subject.reference_module(p), p.args[0], past, o.value) if o.ok else None
        )
        for i in range(n):
            used = "?" if got is None else got[i]
            if used != past + i:
                differs.append([len(rows), 4])
            rows.append([phase, past, i, past + i, used])
    if not rows:
        return None
    return {
        "caption": {
            "en": "Positions through time: where each new token's key was rotated",
            "zh": "随时间推进的位置：每个新 token 的键按哪个位置旋转",
        },
        "columns": [
            {"en": "step", "zh": "步骤"},
            {"en": "P (cached)", "zh": "P（已缓存）"},
            {"en": "new token i", "zh": "新 token i"},
            {"en": "position (contract: P + i)", "zh": "位置（约定：P + i）"},
            {"en": "position (yours)", "zh": "位置（你的）"},
        ],
        "rows": rows[:12],
        "marked": sorted({r for r, _ in differs if r < 12}),
        "differs": [c for c in differs if c[0] < 12],
    }


def _shape_text(t: Any) -> str:
    return "x".join(str(s) for s in t.shape) if isinstance(t, torch.Tensor) else type(t).__name__


def _cache_picture(probes: list[Probe], observed: list[Any]) -> dict[str, Any]:
    rows: list[list[Any]] = []
    differs: list[list[int]] = []
    for p, o in zip(probes, observed, strict=False):
        if p.grad is not None or p.dtype != torch.float64:
            continue
        past, n = p.params["P"], p.params["L"]
        want = f"{B}x{HKV}x{past + n}x{HD}"
        if not o.ok:
            got_k = got_v = f"raised {o.error[0]}"
        else:
            try:
                got_k, got_v = _shape_text(o.value[1][0]), _shape_text(o.value[1][1])
            except (TypeError, IndexError, KeyError):
                got_k = got_v = "no (k, v) cache"
        row = len(rows)
        differs += [[row, c] for c, got in ((2, got_k), (3, got_v)) if got != want]
        rows.append([p.name.split(":")[0], want, got_k, got_v])
    return {
        "caption": {
            "en": "Returned caches (B x Hkv x (P + L) x d) against the contract's",
            "zh": "返回的缓存（B x Hkv x (P + L) x d）与约定对比",
        },
        "columns": [
            {"en": "step", "zh": "步骤"},
            {"en": "expected k and v", "zh": "应为（k 和 v）"},
            {"en": "your k", "zh": "你的 k"},
            {"en": "your v", "zh": "你的 v"},
        ],
        "rows": rows,
        "marked": sorted({r for r, _ in differs}),
        "differs": differs,
    }


def finding_data(
    mid: str, probes: list[Probe], observed: list[Any], subject: Any
) -> dict[str, Any]:
    """Positions restarting: the timeline of positions the code used. Cache-layout mistakes:
    the cache shapes it returned against the expected ones."""
    if mid == "cache-positions-restart":
        picture = _timeline_picture(probes, observed, subject)
        return {"pictures": [picture]} if picture else {}
    if mid in ("cache-stores-repeated-heads", "cache-concat-wrong-dim"):
        return {"pictures": [_cache_picture(probes, observed)]}
    return {}
