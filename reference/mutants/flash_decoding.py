"""Wrong variants of reference/flash_decoding.py, and the probes that tell them apart.

Two knobbed functions (all knobs off = the contract): `combine`, the merge, and `decode`,
the splits, which merges by calling this module's `combine` by name with its `merge` knobs
(so a grader's record of that call sees the partials here too, as in a candidate's module).
A mistake of the merge is placed in `combine` alone (a candidate's `combine` probed on its
own), in `flash_decode` alone, and in both; variants compose for the pair search, and
`decode` replays one (sequence, head) split by split for the picture (`finding_data`).

Probe sizes: B = 3, H = 6, Hkv = 2 (g = 3), d = 8, dv = 6; S = 10 with N = 4 (splits of
3, 3, 3, 1: S // N = 2 misses keys 8 and 9), S = 9 with N = 4 and S = 5 with N = 8 (empty
splits past S), lengths ending inside and before splits, a sequence of length 0, logits and
partial log-sum-exps near 1e4.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import torch

from attnkata.checker.diagnose.behaviour import first_reproduced, table_picture
from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.diagnose.subjects import Observed
from attnkata.checker.probes import randn
from attnkata.reference import flash_decoding as ref

DECODE, COMBINE = "flash_decode", "combine"
NEG_INF = float("-inf")
Record = dict[str, Any]  # {"row": (b, h)} in; {"splits": [...]} out


def weights(
    lse_c: torch.Tensor,
    counts: torch.Tensor | None = None,
    *,
    mode: str = "lse",
    stable: bool = True,
    guard_empty: bool = True,
    keep_max: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(the splits' weights (..., N), the merged lse (...)): exp(lse_c - lse) ("lse"), 1 / N
    ("mean"), 1 / (splits with a key) ("mean-nonempty"), n_c / sum n ("counts"); exp(lse_c)
    without its max (unstable); no guard where
    every split is empty (NaN); lse without its max."""
    top = lse_c.amax(dim=-1, keepdim=True) if stable else torch.zeros_like(lse_c[..., :1])
    shift = torch.where(torch.isfinite(top), top, torch.zeros_like(top)) if guard_empty else top
    e = torch.exp(lse_c - shift)
    total = e.sum(dim=-1, keepdim=True)
    if guard_empty:
        has = total > 0
        safe = torch.where(has, total, torch.ones_like(total))
        lse = torch.where(has, torch.log(safe) + (shift if keep_max else 0.0), NEG_INF)
    else:
        safe = total
        lse = torch.log(total) + (shift if keep_max else 0.0)
    w = e / safe
    if mode == "mean":
        w = torch.full_like(lse_c, 1.0 / lse_c.shape[-1])
    elif mode == "mean-nonempty":  # the splits that saw a key, averaged (lightllm-style stage 2)
        seen = torch.isfinite(lse_c).to(lse_c.dtype)
        w = seen / seen.sum(dim=-1, keepdim=True).clamp(min=1)
    elif mode == "counts" and counts is not None:
        c = counts.to(lse_c.dtype).expand_as(lse_c)
        w = c / c.sum(dim=-1, keepdim=True).clamp(min=1)
    return w, lse.squeeze(-1)


def combine(
    partial_out: torch.Tensor,
    partial_lse: torch.Tensor,
    counts: torch.Tensor | None = None,
    **knobs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The contract's merge with `weights`' knobs."""
    w, lse = weights(partial_lse.to(partial_out.dtype), counts, **knobs)
    return (w.unsqueeze(-1) * partial_out).sum(dim=-2), lse


def decode(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    num_splits: int,
    lengths: torch.Tensor | None = None,
    scale: float | None = None,
    *,
    floor_split: bool = False,
    lengths_mode: str = "lt",
    modulo_heads: bool = False,
    empty: str = "zero",
    unstable: bool = False,
    lse_without_max: bool = False,
    merge: dict[str, Any] | None = None,
    record: Record | None = None,
) -> torch.Tensor:
    """The contract's split-K decode with knobs: split size S // N, keys j <= lengths[b]
    ("le"), j < lengths[b] - 1 ("lt-1") or lengths ignored, head h reading KV head h % Hkv,
    an empty split's output NaN ("nan": every empty split; "nan-masked": splits whose keys
    are all past lengths[b], while a split past S stays 0), exp(s) without the split's max,
    the split's lse without its max; `merge`: the knobs of the `combine` it calls."""
    if num_splits < 1:
        raise ValueError(f"num_splits must be >= 1, got {num_splits}")
    B, H, d = q.shape
    Hkv, S = k.shape[1], k.shape[2]
    g = H // Hkv
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    cs = S // num_splits if floor_split else -(-S // num_splits)
    heads = torch.arange(H) % Hkv if modulo_heads else torch.arange(H) // g
    kh, vh = k[:, heads], v[:, heads]  # (B, H, S, .)
    s_all = torch.einsum("bhd,bhsd->bhs", q, kh) * scale
    if lengths is not None and lengths_mode != "ignored":
        limit = lengths.view(-1, 1, 1) + {"lt": 0, "le": 1, "lt-1": -1}[lengths_mode]
        s_all = s_all.masked_fill(torch.arange(S) >= limit, NEG_INF)
    outs, lses, counts = [], [], []
    for c in range(num_splits):
        j0, j1 = min(c * cs, S), min((c + 1) * cs, S)
        s = s_all[..., j0:j1]
        if unstable or j1 == j0:
            m = torch.zeros_like(s_all[..., :1])
        else:
            m = s.amax(dim=-1, keepdim=True)
        shift = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
        e = torch.exp(s - shift)
        total = e.sum(dim=-1, keepdim=True)
        has = total > 0
        safe = torch.where(has, total, torch.ones_like(total))
        o = torch.einsum("bhs,bhsd->bhd", e / safe, vh[:, :, j0:j1])
        if empty == "nan" or (empty == "nan-masked" and j1 > j0):
            o = o.masked_fill(~has, float("nan"))
        base = torch.zeros_like(shift) if lse_without_max else shift
        lse = torch.where(has, base + torch.log(safe), torch.full_like(safe, NEG_INF))
        outs.append(o)
        lses.append(lse.squeeze(-1))
        counts.append(torch.isfinite(s).sum(dim=-1))  # (B, H): the split's keys per row
    partial_out, partial_lse = torch.stack(outs, dim=2), torch.stack(lses, dim=2)
    knobs = dict(merge or {})
    if knobs.get("mode") == "counts":
        knobs["counts"] = torch.stack(counts, dim=2)
    if record is not None:
        b, h = record["row"]
        w, _ = weights(
            partial_lse[b, h],
            knobs["counts"][b, h] if "counts" in knobs else None,
            **{k: x for k, x in knobs.items() if k != "counts"},
        )
        record["splits"] = [
            (
                min(c * cs, S),
                min((c + 1) * cs, S),
                int(counts[c][b, h]),
                float(partial_lse[b, h, c]),
                float(w[c]),
            )
            for c in range(num_splits)
        ]
    out, _ = combine(partial_out, partial_lse, **knobs)  # this module's `combine`, by name
    return out


def _d(**knobs: Any) -> Any:
    return partial(decode, **knobs)


def _c(**knobs: Any) -> Any:
    return partial(combine, **knobs)


def _merge_placed(**knobs: Any) -> list[dict[str, Any]]:
    """A mistake of the merge: in `combine` alone, in `flash_decode`'s merge alone, in both."""
    return [
        {COMBINE: _c(**knobs)},
        {DECODE: _d(merge=knobs)},
        {COMBINE: _c(**knobs), DECODE: _d(merge=knobs)},
    ]


MUTANTS = {
    "split-lse-combine-unweighted": [
        *_merge_placed(mode="mean"),
        *_merge_placed(mode="mean-nonempty"),
        {DECODE: _d(merge={"mode": "counts"})},
    ],
    "empty-split-nan": [{DECODE: _d(empty="nan")}, {DECODE: _d(empty="nan-masked")}],
    "unstable-softmax": [
        *_merge_placed(stable=False),
        {DECODE: _d(unstable=True)},
        {COMBINE: _c(stable=False), DECODE: _d(unstable=True, merge={"stable": False})},
    ],
    "flash-tail-block-dropped": {DECODE: _d(floor_split=True)},
    # The merged lse is not flash_decode's output: without its max it shows in combine only.
    "lse-wrong": [
        {DECODE: _d(lse_without_max=True)},
        {COMBINE: _c(keep_max=False)},
        {COMBINE: _c(keep_max=False), DECODE: _d(lse_without_max=True)},
    ],
    "mask-ignored": {DECODE: _d(lengths_mode="ignored")},
    "context-length-off-by-one": [
        {DECODE: _d(lengths_mode="le")},
        {DECODE: _d(lengths_mode="lt-1")},
    ],
    "kv-repeat-instead-of-interleave": {DECODE: _d(modulo_heads=True)},
    "fully-masked-row-nan": _merge_placed(guard_empty=False),
}

B, H, HKV, d, dv = 3, 6, 2, 8, 6


def _sizes(S: int, N: int, **extra: Any) -> dict[str, Any]:
    return {"B": B, "H": H, "Hkv": HKV, "d": d, "dv": dv, "S": S, "N": N, **extra}


def _qkv(seed: int, S: int, scale: float = 1.0) -> tuple[torch.Tensor, ...]:
    return (
        randn(B, H, d, seed=seed, scale=scale),
        randn(B, HKV, S, d, seed=seed + 1, scale=scale),
        randn(B, HKV, S, dv, seed=seed + 2),
    )


def _decode(
    name: str, name_zh: str, seed: int, S: int, N: int, lengths: list[int] | None = None, **kw: Any
) -> Probe:
    kwargs: dict[str, Any] = {"lengths": torch.tensor(lengths)} if lengths is not None else {}
    kwargs.update(kw.pop("kwargs", {}))
    tail = f"S={S}, N={N}" + (f", lengths={lengths}" if lengths is not None else "")
    return Probe(
        f"{name}, {tail}",
        DECODE,
        (*_qkv(seed, S, kw.pop("scale", 1.0)), N),
        kwargs,
        params=_sizes(S, N, **kw.pop("params", {})),
        name_zh=f"{name_zh}，{tail}",
        **kw,
    )


def _partials(seed: int, scale: float = 3.0, shift: torch.Tensor | float = 0.0) -> tuple:
    po, pl = randn(B, H, 4, dv, seed=seed), randn(B, H, 4, seed=seed + 1, scale=scale) + shift
    po[0, 1, 2], pl[0, 1, 2] = 0.0, NEG_INF  # an empty split
    return po, pl


def probes() -> list[Probe]:
    """flash_decode: splits that do not divide S, empty splits past S (S = 9, N = 4; S = 5,
    N = 8), lengths, a sequence with no key, large logits, N = 1, an explicit scale,
    float32; combine on its own: random partials, partials near +-1e4, every split empty."""
    empty_po, empty_pl = _partials(590)
    empty_po[1, 2], empty_pl[1, 2] = 0.0, NEG_INF
    big = torch.tensor([1e4, -1e4, 1e4]).view(B, 1, 1)
    f32 = _qkv(586, 10)
    return [
        _decode("no lengths", "无 lengths", 570, 10, 4, repeat=True),
        _decode("lengths", "lengths", 573, 10, 4, [10, 4, 7]),
        _decode("an empty split past S", "超出 S 的空分段", 576, 9, 4),
        _decode("more splits than keys", "分段比键多", 579, 5, 8, [5, 3, 4]),
        _decode("a sequence with no key", "没有任何键的序列", 582, 10, 4, [0, 6, 10]),
        _decode("large logits (~1e4)", "大 logits（约 1e4）", 584, 10, 4, [10, 3, 8], scale=60.0),
        _decode("one split", "只有一个分段", 592, 10, 1, [10, 5, 9]),
        _decode(
            "explicit scale=0.3",
            "显式 scale=0.3",
            595,
            11,
            3,
            [11, 6, 2],
            kwargs={"scale": 0.3},
            params={"scale": 0.3},
        ),
        Probe(
            "float32 inputs, S=10, N=4, lengths=[9, 10, 5]",
            DECODE,
            (*(t.float() for t in f32), 4),
            {"lengths": torch.tensor([9, 10, 5])},
            params=_sizes(10, 4),
            dtype=torch.float32,
            name_zh="float32 输入，S=10，N=4，lengths=[9, 10, 5]",
        ),
        Probe(
            "combine: random partials (B, H, N=4, dv), one empty split",
            COMBINE,
            _partials(598),
            params=_sizes(10, 4),
            name_zh="combine：随机的部分结果 (B, H, N=4, dv)，一个空分段",
        ),
        Probe(
            "combine: partial lse near +-1e4",
            COMBINE,
            _partials(600, scale=5.0, shift=big),
            params=_sizes(10, 4),
            name_zh="combine：部分 lse 在 +-1e4 附近",
        ),
        Probe(
            "combine: every split of row [1, 2] empty",
            COMBINE,
            (empty_po, empty_pl),
            params=_sizes(10, 4),
            name_zh="combine：行 [1, 2] 的所有分段都为空",
        ),
    ]


REFERENCE = ref

# -- the splits picture ------------------------------------------------------------------------
SPLIT_IDS = (
    "split-lse-combine-unweighted",
    "lse-wrong",
    "flash-tail-block-dropped",
    "empty-split-nan",
    "context-length-off-by-one",
    "mask-ignored",
)


def _num(x: float) -> str:
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "-inf" if x < 0 else "inf"
    return f"{x:.4g}"


def _first_parting_row(got: Any, want: Any) -> tuple[int, int] | None:
    """(b, h) of the first output row that differs (NaN against a number included)."""
    if not isinstance(got, torch.Tensor) or not isinstance(want, torch.Tensor):
        return None
    if got.shape != want.shape:
        return None
    g, w = got.detach().double(), want.detach().double()
    same = (g == w) | (g.isnan() & w.isnan()) | ((g - w).abs() <= 1e-4 + 1e-3 * w.abs())
    rows = (~same).any(dim=-1).nonzero()
    return (int(rows[0][0]), int(rows[0][1])) if len(rows) else None


def split_picture(probe: Probe, row: tuple[int, int], variant: Any) -> dict[str, Any]:
    """Per split of one (sequence, head): its keys, lse_c and merge weight, the contract's
    beside what code with this mistake computes."""
    want: Record = {"row": row}
    got: Record = {"row": row}
    decode(*probe.args, **probe.kwargs, record=want)
    variant(*probe.args, **probe.kwargs, record=got)
    rows, differ = [], []
    for c, (w, g) in enumerate(zip(want["splits"], got["splits"], strict=False)):
        cells = [
            str(c),
            f"{w[0]}..{w[1] - 1}" if w[1] > w[0] else None,
            str(w[2]),
            _num(w[3]),
            _num(w[4]),
            f"{g[0]}..{g[1] - 1}" if g[1] > g[0] else None,
            str(g[2]),
            _num(g[3]),
            _num(g[4]),
        ]
        for col in (5, 6, 7, 8):
            if cells[col] != cells[col - 4]:
                differ.append([len(rows), col])
        rows.append(cells)
    b, h = row
    caption = {
        "en": f"The splits of sequence {b}, head {h} on the probe '{probe.name}', where your output first "
        "parts from the reference: per split, its keys, how many of them the query attends, its "
        "log-sum-exp lse_c and its weight in the merge, exp(lse_c - lse). 'Yours' is what code with this "
        "mistake computes there (it reproduces your output on this probe; the inside of your own run "
        "cannot be seen).",
        "zh": f"在探测输入“{probe.name_zh or probe.name}”上，你的输出从序列 {b} 的第 {h} 个头开始与参考答案不同。"
        "下表逐个分段列出：它包含的键、查询实际关注其中多少个、它的 log-sum-exp lse_c，以及它在合并中的权重 "
        "exp(lse_c - lse)。“你的”一栏是带有这个错误的代码在这里算出的值（它在该探测输入上复现了你的输出；"
        "你自己程序内部的过程是看不到的）。",
    }
    columns = [
        {"en": "split", "zh": "分段"},
        {"en": "keys (ref)", "zh": "键（参考）"},
        {"en": "attended (ref)", "zh": "关注数（参考）"},
        {"en": "lse_c (ref)", "zh": "lse_c（参考）"},
        {"en": "weight (ref)", "zh": "权重（参考）"},
        {"en": "keys (yours)", "zh": "键（你的）"},
        {"en": "attended (yours)", "zh": "关注数（你的）"},
        {"en": "lse_c (yours)", "zh": "lse_c（你的）"},
        {"en": "weight (yours)", "zh": "权重（你的）"},
    ]
    return table_picture(caption, columns, rows, differ)


def finding_data(
    mid: str, probes: list[Probe], observed: list[Observed], subject: Any
) -> dict[str, Any]:
    """For a mistake of the splits or their merge: the splits picture of the first row where
    the candidate parts from the reference, on the first flash_decode probe that a variant of
    `mid` with a flash_decode part reproduces exactly."""
    if mid not in SPLIT_IDS:
        return {}
    entries = MUTANTS[mid] if isinstance(MUTANTS[mid], list) else [MUTANTS[mid]]
    variants = [e[DECODE] for e in entries if DECODE in e]
    found = first_reproduced(
        probes, observed, subject, variants, _first_parting_row, usable=lambda p: p.entry == DECODE
    )
    return {"pictures": [split_picture(*found)]} if found else {}
