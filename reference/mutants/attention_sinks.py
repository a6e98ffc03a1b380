"""Wrong variants of reference/attention_sinks.py: one knobbed step (rotate, attend, evict),
every knob at its default = the reference, so mistakes compose for the pair search and peeling.

Probe sizes: B = 2, H = 4, Hkv = 2 (g = 2), d = 8, n_sink = 2, window = 5 (N = 7). The caches
are built from random pre-RoPE keys rotated at their indices (the contract's layout), so the
picture can tell which token each returned slot holds (values are never rotated: they name
the token) and at which position its key now is. Probes: a prompt below N (nothing evicted), a
chunk that overflows the cache (C = 6, L = 3, e = 2), a chunk below N after C = 3, a call that
fills the cache exactly (T = N), decoding against a full cache (e = 1), a prompt of 10 (e = 3
at once), float32. No mask grid: window-off-by-one (grid = true in the catalogue) would count
a query's keys on it, which the sink cache's window does not bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.diagnose.pictures import table
from attnkata.checker.probes import cast, randn
from attnkata.reference import attention_sinks as ref

ENTRY = "sink_attention"
B, H, HKV, D = 2, 4, 2, 8
N_SINK, WINDOW = 2, 5
N = N_SINK + WINDOW
THETA = 10000.0


def sinks(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cache: tuple[torch.Tensor, torch.Tensor] | None = None,
    n_sink: int = 4,
    window: int = 1020,
    theta: float = 10000.0,
    scale: float | None = None,
    *,
    keep: str = "sinks",
    rerotate: int = -1,
    window_shift: int = 0,
    positions: str = "cache",
    cached: str | None = None,
    top_left: bool = False,
    kv_order: str = "interleave",
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """The reference's step with knobs. keep: "sinks" (the contract), "last" (a rolling
    buffer of the last N tokens) or "last-window" (of the last `window` only). rerotate: the
    kept keys are rotated by rerotate * e (-1 the contract, 0 not at all, +1 the wrong way).
    window_shift: the window kept is window + shift (-1: "room for the next token").
    positions: "cache" (C + i) or "restart" (i). cached: None, "after-cat" (the whole
    concatenation rotated at 0 .. T-1, the cached keys a second time) or "store-raw" (keys
    cached before RoPE and rotated at 0 .. T-1 when read, as StreamingLLM's code does).
    top_left: a causal mask tril(0). kv_order: "interleave" (h // g) or "repeat" (h % Hkv)."""
    B_, H_, L, d = q.shape
    Hkv = k.shape[1]
    C = 0 if cache is None else cache[0].shape[2]
    s = 1.0 / math.sqrt(d) if scale is None else scale
    pos = torch.arange(L) if positions == "restart" else torch.arange(C, C + L)
    q = ref.rotate(q, pos, theta)
    keys = k if cached is not None else ref.rotate(k, pos, theta)
    values = v
    if cache is not None:
        keys = torch.cat([cache[0], keys], dim=2)
        values = torch.cat([cache[1], values], dim=2)
    T = C + L
    read = keys
    if cached is not None:
        read = ref.rotate(keys, torch.arange(T), theta)
        if cached == "after-cat":
            keys = read
    g = H_ // Hkv

    def expand(t: torch.Tensor) -> torch.Tensor:
        return t.repeat(1, g, 1, 1) if kv_order == "repeat" else t.repeat_interleave(g, dim=1)

    scores = (q @ expand(read).transpose(-2, -1)) * s
    allowed = torch.ones(L, T, dtype=torch.bool).tril(0 if top_left else C)
    scores = scores.masked_fill(~allowed, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ expand(values)

    kept_window = window + window_shift
    if keep == "sinks" and T > n_sink + kept_window:
        e = T - n_sink - kept_window
        recent = keys[:, :, n_sink + e :]
        if cached != "store-raw" and rerotate:
            recent = ref.rotate(recent, torch.full((recent.shape[2],), rerotate * e), theta)
        keys = torch.cat([keys[:, :, :n_sink], recent], dim=2)
        values = torch.cat([values[:, :, :n_sink], values[:, :, n_sink + e :]], dim=2)
    elif keep != "sinks":
        size = n_sink + kept_window if keep == "last" else kept_window
        if T > size:
            e = T - size
            keys, values = keys[:, :, e:], values[:, :, e:]
            if cached != "store-raw" and rerotate:
                keys = ref.rotate(keys, torch.full((size,), rerotate * e), theta)
    return out.to(q.dtype), (keys, values)


def _m(**knobs: Any) -> Callable[..., Any]:
    return partial(sinks, **knobs)


MUTANTS = {
    "sink-tokens-evicted": [_m(keep="last"), _m(keep="last-window")],
    "positions-not-reassigned": _m(rerotate=0),
    "rerotation-wrong-direction": _m(rerotate=1),
    "window-off-by-one": [_m(window_shift=-1), _m(window_shift=1)],
    "cache-positions-restart": _m(positions="restart"),
    "cache-rerotated": [_m(cached="after-cat"), _m(cached="store-raw")],
    "causal-mask-top-left": _m(top_left=True),
    "kv-repeat-instead-of-interleave": _m(kv_order="repeat"),
}

# Pre-RoPE keys of every token of each probe (cached ones first), for the picture: the
# position a returned key is rotated at is found by rotating the token's raw key.
RAW_KEYS: dict[str, torch.Tensor] = {}
PICTURE_PROBES = (
    "chunk that overflows: C = 6, L = 3 (e = 2)",
    "decode against a full cache: C = 7, L = 1 (e = 1)",
    "prompt of 10 > N (e = 3)",
)


def _params(C: int, L: int, n_sink: int = N_SINK, window: int = WINDOW) -> dict[str, Any]:
    T, n = C + L, n_sink + window
    return {
        "B": B,
        "H": H,
        "Hkv": HKV,
        "g": H // HKV,
        "d": D,
        "L": L,
        "S": T,
        "T": T,
        "C": C,
        "P": C,
        "n_sink": n_sink,
        "window": window,
        "N": n,
        "e": max(0, T - n),
    }


def _step(name: str, name_zh: str, seed: int, C: int, L: int, **extra: Any) -> Probe:
    """A probe of L new tokens after a cache of C, built from raw keys rotated at 0 .. C-1."""
    raw = randn(B, HKV, C + L, D, seed=seed)
    values = randn(B, HKV, C + L, D, seed=seed + 1)
    q = randn(B, H, L, D, seed=seed + 2)
    RAW_KEYS[name] = raw
    cache = None
    if C:
        cache = (ref.rotate(raw[:, :, :C], torch.arange(C), THETA), values[:, :, :C].clone())
    args = (q, raw[:, :, C:].clone(), values[:, :, C:].clone(), cache, N_SINK, WINDOW)
    return Probe(name, ENTRY, args, params=_params(C, L), name_zh=name_zh, **extra)


def probes() -> list[Probe]:
    decode = _step(PICTURE_PROBES[1], "对满缓存解码：C = 7，L = 1（e = 1）", 721, N, 1)
    return [
        _step("prompt below N: L = 5", "短于 N 的提示：L = 5", 701, 0, 5, repeat=True),
        _step(PICTURE_PROBES[0], "溢出的分块：C = 6，L = 3（e = 2）", 714, 6, 3),
        _step("chunk below N: C = 3, L = 3", "未超过 N 的分块：C = 3，L = 3", 707, 3, 3),
        _step(
            "call that fills the cache: C = 5, L = 2 (T = N)",
            "正好填满缓存的调用：C = 5，L = 2（T = N）",
            711,
            5,
            2,
        ),
        decode,
        _step(PICTURE_PROBES[2], "长度 10 > N 的提示（e = 3）", 704, 0, 10),
        Probe(
            "float32, decode against a full cache",
            ENTRY,
            cast(decode.args, torch.float32),
            params=decode.params,
            dtype=torch.float32,
            name_zh="float32，对满缓存解码",
        ),
    ]


# -- the picture: the cache before and after eviction ----------------------------------------
CACHE_IDS = (
    "sink-tokens-evicted",
    "positions-not-reassigned",
    "rerotation-wrong-direction",
    "window-off-by-one",
    "cache-positions-restart",
    "cache-rerotated",
)
SPAN = 32  # positions tried when reading where a returned key is rotated: -SPAN .. SPAN


def _kept(T: int, n_sink: int, window: int) -> list[int]:
    """The tokens the contract keeps, in slot order."""
    if T <= n_sink + window:
        return list(range(T))
    return list(range(n_sink)) + list(range(T - window, T))


def read_cache(value: Any, raw: torch.Tensor, values: torch.Tensor) -> list[tuple[Any, Any]] | None:
    """(token, position) per slot of a returned cache: the token whose value row the slot
    holds ("?" if none), and the position its key is rotated at (by trying -SPAN .. SPAN on
    that token's raw key; "?" if none fits)."""
    try:
        kc, vc = value[1][0], value[1][1]
    except (TypeError, IndexError, KeyError):
        return None
    if not (
        isinstance(kc, torch.Tensor)
        and isinstance(vc, torch.Tensor)
        and kc.dim() == 4
        and vc.dim() == 4
        and kc.shape[:2] == raw.shape[:2]
        and kc.shape[3] == raw.shape[3]
        and tuple(vc.shape[:2]) == tuple(values.shape[:2])
        and vc.shape[3] == values.shape[3]
        and kc.shape[2] == vc.shape[2]
    ):
        return None
    kc, vc = kc.detach().double(), vc.detach().double()
    tries = torch.arange(-SPAN, SPAN + 1)
    out: list[tuple[Any, Any]] = []
    for s in range(kc.shape[2]):
        err = (values - vc[:, :, s : s + 1]).abs().amax(dim=(0, 1, 3))  # (T,)
        token = int(err.argmin())
        if float(err[token]) > 1e-4:
            out.append(("?", "?"))
            continue
        turned = ref.rotate(
            raw[:, :, token : token + 1].expand(-1, -1, len(tries), -1), tries, THETA
        )
        gap = (turned - kc[:, :, s : s + 1]).abs().amax(dim=(0, 1, 3))  # (2 SPAN + 1,)
        best = int(gap.argmin())
        out.append((token, int(tries[best]) if float(gap[best]) < 1e-4 else "?"))
    return out


def cache_picture(p: Probe, got: list[tuple[Any, Any]] | None) -> dict[str, Any]:
    """Every token of the concatenation: where the contract keeps it (slot = position) and
    where the candidate's returned cache has it, with the position its key carries."""
    T, n_sink, window = p.params["T"], p.params["n_sink"], p.params["window"]
    want = {t: s for s, t in enumerate(_kept(T, n_sink, window))}
    mine: dict[int, tuple[int, Any]] = {}
    for s, (token, position) in enumerate(got or []):
        if isinstance(token, int) and token not in mine:
            mine[token] = (s, position)
    dropped = {"en": "dropped", "zh": "已丢弃"}
    unread = {"en": "?", "zh": "?"}
    rows: list[list[Any]] = []
    differs: list[list[int]] = []
    for t in range(T):
        label = {"en": f"{t} (sink)", "zh": f"{t}（sink）"} if t < n_sink else str(t)
        contract = [want[t], want[t]] if t in want else [None, dropped]
        if got is None:
            yours: list[Any] = [None, unread]
        else:
            yours = list(mine[t]) if t in mine else [None, dropped]
        for c in (0, 1):
            if yours[c] != contract[c]:
                differs.append([t, 4 + c])
        rows.append([label, t, *contract, *yours])
    C, L = p.params["C"], p.params["L"]
    return table(
        {
            "en": f"The cache before and after eviction: n_sink = {n_sink}, window = {window}, "
            f"C = {C} cached + L = {L} new = {T} tokens (token t sits at position t before); "
            "after, each kept token's slot and the position its key is rotated at",
            "zh": f"淘汰前后的缓存：n_sink = {n_sink}，window = {window}，C = {C} 个已缓存 + "
            f"L = {L} 个新的 = {T} 个 token（淘汰前 token t 位于位置 t）；淘汰后，每个保留的 "
            "token 所在的槽位，以及它的键所旋转到的位置",
        },
        [
            {"en": "token", "zh": "token"},
            {"en": "position before", "zh": "淘汰前位置"},
            {"en": "slot (contract)", "zh": "槽位（约定）"},
            {"en": "position (contract)", "zh": "位置（约定）"},
            {"en": "slot (yours)", "zh": "槽位（你的）"},
            {"en": "position (yours)", "zh": "位置（你的）"},
        ],
        rows,
        differs,
    )


def finding_data(
    mid: str, probes: list[Probe], observed: list[Any], subject: Any
) -> dict[str, Any]:
    """For the cache mistakes: the cache before and after eviction on the first picture probe
    where the candidate's returned cache differs from the contract's."""
    if mid not in CACHE_IDS:
        return {}
    by_name = {p.name: (p, o) for p, o in zip(probes, observed, strict=False)}
    fallback = None
    for name in PICTURE_PROBES:
        if name not in by_name or name not in RAW_KEYS:
            continue
        p, o = by_name[name]
        values = torch.cat([p.args[3][1], p.args[2]], dim=2) if p.args[3] else p.args[2]
        got = read_cache(o.value, RAW_KEYS[name], values) if o.ok else None
        picture = cache_picture(p, got)
        if picture["differs"]:
            return {"pictures": [picture]}
        fallback = fallback or picture
    return {"pictures": [fallback]} if fallback else {}
