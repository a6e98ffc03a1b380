"""Wrong variants of reference/flash_attention.py, and the probes that tell them apart.

Every variant is the same tiled online softmax as the reference with one knob turned
(`flash` below, all knobs off = correct), so variants compose for the pair search and
can replay one query row block by block for the online-softmax picture (`finding_data`).

Probe sizes: B = 2, H = 3, d = 8, dv = 6 and 8 x 8 tiles over L = 19, S = 27 (neither a
multiple of 8; L != S), so a query row crosses four key tiles, the last one short.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from attnkata.checker.diagnose.behaviour import differs, flatten
from attnkata.checker.diagnose.inputs import Probe, resized, strict_mask, with_empty_rows
from attnkata.checker.diagnose.subjects import Observed, call_local
from attnkata.checker.probes import randn
from attnkata.reference import flash_attention as ref

ENTRY = "flash_attention"
NEG_INF = float("-inf")

# A recorder: (b, h, i) -> one dict per key tile visited for that query row.
Record = dict[str, Any]


def flash(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    block_q: int = 64,
    block_k: int = 64,
    *,
    rescale_acc: bool = True,
    rescale_sum: bool = True,
    max_init: float = NEG_INF,
    guard_shift: bool = True,
    guard_div: bool = True,
    guard_lse: bool = True,
    tile_nan: bool = False,
    drop_key_tail: bool = False,
    drop_query_tail: str | None = None,
    lse: str = "lse",
    top_left: bool = False,
    flip_mask: bool = False,
    honour_scale: bool = True,
    empty_lse: float | str = NEG_INF,
    default_scale: Callable[[int, int], float] = lambda d, h: 1.0 / math.sqrt(d),
    record: Record | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference's tiled online softmax with knobs for the catalogued mistakes.

    `record`: {"row": (b, h, i)} on entry; on return also {"blocks": [...]}, one entry per
    key tile the row went through: its keys, the running max and sum after it and the
    factors that rescaled the accumulator and the sum."""
    B, H, L, d = q.shape
    S, dv = k.shape[-2], v.shape[-1]
    s_scale = default_scale(d, H) if scale is None or not honour_scale else scale
    if mask is not None:
        mask = mask.expand(B, H, L, S)
        if flip_mask:
            mask = ~mask
    offset = 0 if top_left else S - L
    q_end = L - L % block_q if drop_query_tail else L
    k_end = S - S % block_k if drop_key_tail else S
    out = torch.zeros(B, H, L, dv, dtype=q.dtype, device=q.device)
    lse_out = torch.full(
        (B, H, L), NEG_INF if drop_query_tail != "zero" else 0.0, dtype=q.dtype, device=q.device
    )
    row = record.get("row") if record is not None else None
    if record is not None:
        record["blocks"] = []
    for i0 in range(0, q_end, block_q):
        i1 = min(i0 + block_q, L)
        qi = q[:, :, i0:i1] * s_scale
        m = torch.full((B, H, i1 - i0, 1), max_init, dtype=q.dtype, device=q.device)
        l_sum = torch.zeros(B, H, i1 - i0, 1, dtype=q.dtype, device=q.device)
        acc = torch.zeros(B, H, i1 - i0, dv, dtype=q.dtype, device=q.device)
        for j0 in range(0, k_end, block_k):
            j1 = min(j0 + block_k, S)
            s = qi @ k[:, :, j0:j1].transpose(-2, -1)
            allowed = torch.ones(i1 - i0, j1 - j0, dtype=torch.bool, device=q.device)
            if is_causal:
                p = torch.arange(i0, i1, device=q.device).unsqueeze(1) + offset
                allowed = allowed & (torch.arange(j0, j1, device=q.device).unsqueeze(0) <= p)
            if mask is not None:
                allowed = allowed & mask[:, :, i0:i1, j0:j1]
            s = s.masked_fill(~allowed, NEG_INF)
            m_old = m
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            shift = (
                torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))
                if guard_shift
                else m_new
            )
            alpha = torch.exp(m - shift)
            e = torch.exp(s - shift)
            sum_factor = alpha if rescale_sum else torch.ones_like(alpha)
            acc_factor = alpha if rescale_acc else torch.ones_like(alpha)
            l_sum = sum_factor * l_sum + e.sum(dim=-1, keepdim=True)
            acc = acc_factor * acc + e @ v[:, :, j0:j1]
            if (
                tile_nan
            ):  # FA-1's exp(s - rowmax(tile)) unguarded: a fully masked tile row is NaN for good
                dead = ~torch.isfinite(s.amax(dim=-1, keepdim=True))
                l_sum = l_sum.masked_fill(dead, float("nan"))
                acc = acc.masked_fill(dead, float("nan"))
            m = m_new
            if row is not None and i0 <= row[2] < i1:
                b, h, r = row[0], row[1], row[2] - i0
                # Before the row's first key there is nothing to rescale: no factor to show.
                started = bool(torch.isfinite(m_old[b, h, r, 0]))
                record["blocks"].append(
                    {
                        "keys": (j0, j1 - 1),
                        "max": float(m[b, h, r, 0]),
                        "sum": float(l_sum[b, h, r, 0]),
                        "acc_factor": float(acc_factor[b, h, r, 0]) if started else None,
                        "sum_factor": float(sum_factor[b, h, r, 0]) if started else None,
                    }
                )
        has_key = l_sum > 0
        denom = torch.where(has_key, l_sum, torch.ones_like(l_sum)) if guard_div else l_sum
        out[:, :, i0:i1] = acc / denom
        safe_l = torch.where(has_key, l_sum, torch.ones_like(l_sum))
        if lse == "max":
            value = torch.where(has_key, m, torch.full_like(m, NEG_INF))
        elif lse == "log-sum":  # the running max left out
            value = torch.where(has_key, torch.log(safe_l), torch.full_like(m, NEG_INF))
        elif lse == "no-log":
            value = torch.where(has_key, m + l_sum, torch.full_like(m, NEG_INF))
        elif lse == "log2":  # Triton's tutorial keeps M = m2 + log2(l) in base 2
            value = torch.where(
                has_key, (m + torch.log(safe_l)) / math.log(2), m.new_full((), NEG_INF)
            )
        elif not guard_lse:  # m + log(l) as is: a NaN row stays NaN, an empty one -inf
            value = m + torch.log(l_sum)
        else:
            empty = torch.finfo(q.dtype).min if empty_lse == "finfo" else float(empty_lse)
            value = torch.where(has_key, m + torch.log(safe_l), torch.full_like(m, empty))
        lse_out[:, :, i0:i1] = value.squeeze(-1)
    if lse == "keepdim":
        return out, lse_out.unsqueeze(-1)
    return out, lse_out


def _m(**knobs: Any) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    return partial(flash, **knobs)


MUTANTS = {
    "online-softmax-no-rescale": _m(rescale_acc=False),
    "online-softmax-sum-not-rescaled": _m(rescale_sum=False),
    # Started at 0, the max never goes below it: rows whose scores are all far below 0
    # underflow to a sum of 0, then 0 (a guarded division) or 0 / 0 = NaN.
    "flash-max-init-zero": [_m(max_init=0.0), _m(max_init=0.0, guard_div=False)],
    "flash-empty-block-nan": [
        _m(guard_shift=False),
        _m(guard_shift=False, guard_lse=False),
        _m(guard_shift=False, guard_lse=False, guard_div=False),
        _m(tile_nan=True, guard_lse=False),
        _m(tile_nan=True),
    ],
    "flash-tail-block-dropped": [
        _m(drop_key_tail=True),
        _m(drop_query_tail="-inf"),
        _m(drop_query_tail="zero"),
        _m(drop_key_tail=True, drop_query_tail="-inf"),
    ],
    "lse-wrong": [_m(lse=form) for form in ("max", "log-sum", "no-log", "log2", "keepdim")],
    # What the running max started at leaks out for a query with no key (finfo.min, -1e30...).
    "lse-empty-row-finite": [
        _m(empty_lse=v) for v in ("finfo", -1e30, -1e10, -1e9, -3.4028234663852886e38)
    ],
    "causal-mask-top-left": _m(top_left=True),
    "mask-polarity-flipped": _m(flip_mask=True),
    "missing-scale": [
        _m(default_scale=lambda d, h: 1.0),
        _m(default_scale=lambda d, h: 1.0, honour_scale=False),
    ],
    "scale-by-d-model": [
        _m(default_scale=lambda d, h: 1.0 / math.sqrt(d * h)),
        _m(default_scale=lambda d, h: 1.0 / math.sqrt(d * h), honour_scale=False),
    ],
}

B, H, d, dv, T = 2, 3, 8, 6, 8  # T: the tile size the probes ask for
TILES = {"block_q": T, "block_k": T}


def _sizes(L: int, S: int, **extra: Any) -> dict[str, Any]:
    return {
        "B": B,
        "H": H,
        "L": L,
        "S": S,
        "d": d,
        "dv": dv,
        "D": H * d,
        "block_q": T,
        "block_k": T,
        **extra,
    }


def _qkv(seed: int, L: int, S: int, scale: float = 1.0) -> tuple[torch.Tensor, ...]:
    return (
        randn(B, H, L, d, seed=seed, scale=scale),
        randn(B, H, S, d, seed=seed + 1, scale=scale),
        randn(B, H, S, dv, seed=seed + 2),
    )


def negative_logits(seed: int, L: int, S: int) -> tuple[torch.Tensor, ...]:
    """q >= 0 and k <= 0 entrywise: every score is negative, of order -1e4."""
    q, k, v = _qkv(seed, L, S)
    return q.abs() * 75.0, -k.abs() * 75.0, v


def tiled_mask(L: int, S: int, seed: int) -> torch.Tensor:
    """(B, 1, L, S): random, plus a fully masked 8 x 8 tile (queries 8..15 x keys 8..15 of
    batch 0), rows 0..3 of batch 1 with their whole first key tile masked (keys only later),
    and a fully masked row (batch 0, query 4)."""
    m = strict_mask(B, 1, L, S, seed=seed, p=0.6)
    m[0, 0, 8:16, 8:16] = False
    m[1, 0, 0:4, 0:T] = False
    return with_empty_rows(m, [(0, 0, 4)])


def probes() -> list[Probe]:
    """L != S, neither a multiple of the tile; queries with no key; a fully masked tile and
    row; scores all near -1e4 (a max started at 0); large mixed logits; an explicit scale;
    float32; a mask grid; and one long causal sequence whose largest intermediate tensor
    must stay far below L x S."""
    L, S = 19, 27
    grid_mask = with_empty_rows(strict_mask(8, 11, seed=521, p=0.75), [(2,)])
    grid_q, grid_k = (
        torch.zeros(B, H, 8, d, dtype=torch.float64),
        torch.zeros(B, H, 11, d, dtype=torch.float64),
    )
    grid_v = torch.eye(11, dtype=torch.float64).expand(B, H, 11, 11).clone()
    n = 1024
    big = tuple(randn(1, 1, n, 16, seed=s, dtype=torch.float32) for s in (530, 531, 532))
    return [
        Probe(
            f"no mask, L={L}, S={S}, 8 x 8 tiles",
            ENTRY,
            _qkv(501, L, S),
            dict(TILES),
            params=_sizes(L, S),
            repeat=True,
            name_zh=f"无 mask，L={L}，S={S}，8 x 8 分块",
        ),
        Probe(
            "causal, L=13, S=27 (a KV cache)",
            ENTRY,
            _qkv(504, 13, S),
            {**TILES, "is_causal": True},
            params=_sizes(13, S),
            name_zh="因果，L=13，S=27（KV cache）",
        ),
        Probe(
            "causal, L=27, S=13 (queries 0..13 see no key)",
            ENTRY,
            _qkv(507, 27, 13),
            {**TILES, "is_causal": True},
            params=_sizes(27, 13),
            name_zh="因果，L=27，S=13（查询 0..13 没有可看的键）",
        ),
        Probe(
            "random mask (B, 1, L, S) and causal",
            ENTRY,
            _qkv(510, L, S),
            {**TILES, "mask": strict_mask(B, 1, L, S, seed=511, p=0.7), "is_causal": True},
            params=_sizes(L, S),
            name_zh="随机 mask (B, 1, L, S) 加因果",
        ),
        Probe(
            "a fully masked tile, rows whose first key tile is masked, a fully masked row",
            ENTRY,
            _qkv(513, L, S),
            {**TILES, "mask": tiled_mask(L, S, 514)},
            params=_sizes(L, S),
            name_zh="整块被遮掩的分块、首个键分块被遮掩的行、整行被遮掩",
        ),
        Probe(
            "scores all near -1e4",
            ENTRY,
            negative_logits(516, L, S),
            dict(TILES),
            params=_sizes(L, S),
            name_zh="分数全部在 -1e4 附近",
        ),
        Probe(
            "large logits (~1e4)",
            ENTRY,
            _qkv(519, L, S, scale=60.0),
            {**TILES, "is_causal": True},
            params=_sizes(L, S),
            name_zh="大 logits（约 1e4）",
        ),
        Probe(
            "explicit scale=0.3",
            ENTRY,
            _qkv(522, L, S),
            {**TILES, "scale": 0.3},
            params=_sizes(L, S, scale=0.3),
            name_zh="显式 scale=0.3",
        ),
        Probe(
            "float32 inputs",
            ENTRY,
            tuple(t.float() for t in _qkv(525, L, S)),
            {**TILES, "mask": strict_mask(B, 1, L, S, seed=526, p=0.7)},
            params=_sizes(L, S),
            dtype=torch.float32,
            name_zh="float32 输入",
        ),
        Probe(
            "mask grid with causal, L=8, S=11 (q = k = 0, V = I)",
            ENTRY,
            (grid_q, grid_k, grid_v),
            {"mask": grid_mask, "is_causal": True, "block_q": 4, "block_k": 4},
            params=_sizes(8, 11),
            grid="weights",
            name_zh="mask 网格加因果，L=8，S=11（q = k = 0，V = I）",
        ),
        Probe(
            f"memory: causal, L = S = {n}, 128 x 128 tiles",
            ENTRY,
            big,
            {"is_causal": True, "block_q": 128, "block_k": 128},
            params={"B": 1, "H": 1, "L": n, "S": n, "d": 16, "dv": 16, "D": 16},
            dtype=torch.float32,
            budget=("materializes-full-scores", n * n // 4),
            name_zh=f"内存：因果，L = S = {n}，128 x 128 分块",
        ),
    ]


def alternatives(probe: Probe) -> list[Probe]:
    """Forms of a probe for code that takes only dv == d, or only L and S multiples of the
    tile (then the tail tiles cannot be judged), or both."""
    if probe.budget is not None or probe.grid is not None:
        return []
    q, k, v = probe.args[:3]
    tile = probe.kwargs.get("block_q", T)
    whole = {
        "L": q.shape[-2] - q.shape[-2] % tile or tile,
        "S": k.shape[-2] - k.shape[-2] % tile or tile,
    }
    return [
        resized(probe, dv=q.shape[-1], label="dv = d", label_zh="dv = d"),
        resized(probe, **whole, label="whole tiles", label_zh="整块"),
        resized(
            probe, **whole, dv=q.shape[-1], label="dv = d, whole tiles", label_zh="dv = d，整块"
        ),
    ]


REFERENCE = ref

# -- the online-softmax picture ----------------------------------------------------------
ONLINE_IDS = (
    "online-softmax-no-rescale",
    "online-softmax-sum-not-rescaled",
    "flash-max-init-zero",
    "flash-empty-block-nan",
    "flash-tail-block-dropped",
)


def _num(x: float | None) -> str | None:
    if x is None:
        return None
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "-inf" if x < 0 else "inf"
    return f"{x:.4g}"


def first_parting_row(got: Any, want: Any) -> tuple[int, int, int] | None:
    """(b, h, i) of the first query row with an allowed key where (out, lse) differ (else
    the first row that differs at all)."""
    if not (
        isinstance(got, tuple | list)
        and isinstance(want, tuple | list)
        and len(got) == 2 == len(want)
    ):
        return None
    (go, gl), (wo, wl) = got, want
    if (
        not all(isinstance(t, torch.Tensor) for t in (go, gl, wo, wl))
        or go.shape != wo.shape
        or gl.shape != wl.shape
    ):
        return None
    go, wo = go.detach().double(), wo.detach().double()
    gl, wl = gl.detach().double(), wl.detach().double()

    def apart(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        same = (a == b) | (a.isnan() & b.isnan()) | ((a - b).abs() <= 1e-4 + 1e-3 * b.abs())
        return ~same

    rows = apart(go, wo).any(dim=-1) | apart(gl, wl)  # (B, H, L)
    # A row that has keys says more than one that has none (whose right answer is just 0).
    hits = (rows & torch.isfinite(wl)).nonzero()
    if not len(hits):
        hits = rows.nonzero()
    return tuple(int(x) for x in hits[0]) if len(hits) else None  # type: ignore[return-value]


def _reproduces(a: Observed, b: Observed) -> bool:
    f = flatten(b.value) if b.ok else None
    return a.ok and f is not None and not differs(a, b, f[1].size).any()


def online_picture(
    probe: Probe, row: tuple[int, int, int], variant: Callable[..., Any]
) -> dict[str, Any]:
    """The table: per key tile, the reference's running max, sum and rescale factor beside
    what `variant` computes for the same query row."""
    want: Record = {"row": row}
    got: Record = {"row": row}
    flash(*probe.args, **probe.kwargs, record=want)
    variant(*probe.args, **probe.kwargs, record=got)
    n = max(len(want["blocks"]), len(got["blocks"]))
    rows, differs_at = [], []
    for t in range(n):
        w = want["blocks"][t] if t < len(want["blocks"]) else None
        g = got["blocks"][t] if t < len(got["blocks"]) else None
        keys = (w or g)["keys"]
        cells_w = [w["max"], w["sum"], w["acc_factor"]] if w else [None] * 3
        cells_g = [g["max"], g["sum"], g["acc_factor"]] if g else [None] * 3
        if g is not None and not variant.keywords.get("rescale_sum", True):
            cells_g[2] = g["sum_factor"]  # the factor that went missing is the sum's
            cells_w[2] = w["sum_factor"] if w else None
        for c, (x, y) in enumerate(zip(cells_w, cells_g, strict=True)):
            if _num(x) != _num(y):
                differs_at.append([len(rows), 5 + c])
        rows.append(
            [t, f"{keys[0]}..{keys[1]}", *(_num(x) for x in cells_w), *(_num(y) for y in cells_g)]
        )
    b, h, i = row
    caption = {
        "en": f"Online softmax of query row [{b}, {h}, {i}] on the probe '{probe.name}', where your output first "
        "parts from the reference: per key tile, the running max m, the running sum l and the factor "
        "exp(m_old - m_new) that rescaled what was accumulated. 'Yours' is what code with this mistake "
        "computes on that row (it reproduces your output on this probe); the inside of your own run "
        "cannot be seen.",
        "zh": f"在探测输入“{probe.name_zh or probe.name}”上，你的输出从查询行 [{b}, {h}, {i}] 开始与参考答案不同。"
        "下表逐个键分块列出这一行的在线 softmax：运行最大值 m、运行和 l，以及用来重新缩放已累积部分的系数 "
        "exp(m_old - m_new)。“你的”一栏是带有这个错误的代码在这一行上算出的值（它在该探测输入上复现了你的输出）；"
        "你自己程序内部的过程是看不到的。",
    }
    columns = [
        {"en": "tile", "zh": "分块"},
        {"en": "keys", "zh": "键"},
        {"en": "m (ref)", "zh": "m（参考）"},
        {"en": "l (ref)", "zh": "l（参考）"},
        {"en": "rescale (ref)", "zh": "缩放系数（参考）"},
        {"en": "m (yours)", "zh": "m（你的）"},
        {"en": "l (yours)", "zh": "l（你的）"},
        {"en": "rescale (yours)", "zh": "缩放系数（你的）"},
    ]
    marked = sorted({r for r, _ in differs_at})[:1]
    return {
        "caption": caption,
        "columns": columns,
        "rows": rows[:12],
        "marked": marked,
        "differs": [x for x in differs_at if x[0] < 12],
    }


def finding_data(
    mid: str, probes: list[Probe], observed: list[Observed], subject: Any
) -> dict[str, Any]:
    """For an online-softmax mistake: the picture of the first row where the candidate parts
    from the reference, on the first probe that a variant of `mid` reproduces exactly."""
    if mid not in ONLINE_IDS:
        return {}
    variants = MUTANTS[mid] if isinstance(MUTANTS[mid], list) else [MUTANTS[mid]]
    fallback: dict[str, Any] = {}
    for p, c in zip(probes, observed, strict=False):
        if not c.ok or p.budget is not None or p.grid is not None:
            continue
        r = subject.reference_call(p)
        row = first_parting_row(c.value, r.value) if r.ok else None
        if row is None:
            continue
        for variant in variants:
            if _reproduces(c, call_local(variant, p)):
                picture = {"pictures": [online_picture(p, row, variant)]}
                if bool(torch.isfinite(r.value[1][row])):
                    return picture
                fallback = fallback or picture  # a row without keys: keep looking for one with keys
                break
    return fallback
