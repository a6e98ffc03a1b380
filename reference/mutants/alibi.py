"""Wrong variants of reference/alibi.py: one knobbed attention (every knob at its default = the
reference) and the wrong slope rules, so mistakes compose for the pair search and peeling. A
slope mistake comes in three placements: in alibi_slopes only, in the attention only (slopes
computed inline), and in both (an attention calling its own alibi_slopes).

Probe sizes: B = 2, d = dv = 8, H = 4, 6 or 12 heads; L = S, L < S (the query's position
p = S - L + i and its row index differ) and L > S (queries with no key); causal and not (keys
after p); a mask; an explicit scale; float32; the slopes of 3, 6, 8 and 12 heads; a mask grid
and a bias picture (q = k = 0, V = I: each output row is a softmax of the bias alone).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from attnkata.checker.diagnose.inputs import Probe, strict_mask, with_empty_rows
from attnkata.checker.diagnose.pictures import table
from attnkata.checker.probes import randn
from attnkata.reference import alibi as ref

SLOPES, ATTN = "alibi_slopes", "alibi_attention"
B, D = 2, 8


def _checked(n: int) -> None:
    if n < 1:
        raise ValueError(f"ALiBi needs at least one head, got n_heads = {n}")


def pow2_everywhere(n: int) -> torch.Tensor:
    """The power-of-two formula for every n: 2^(-8(h+1)/n)."""
    _checked(n)
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / n) for h in range(n)], dtype=torch.float32)


def next_pow2_truncated(n: int) -> torch.Tensor:
    """The slopes of the next power of two, cut to the first n."""
    _checked(n)
    c = 2 ** math.ceil(math.log2(n))
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / c) for h in range(n)], dtype=torch.float32)


def no_stride(n: int) -> torch.Tensor:
    """The 2c-head slopes taken from the start (get_slopes(2c)[:n - c]), not every other one."""
    _checked(n)
    c = 2 ** math.floor(math.log2(n))
    first = [2.0 ** (-8.0 * (h + 1) / c) for h in range(c)]
    extra = [2.0 ** (-8.0 * (t + 1) / (2 * c)) for t in range(n - c)]
    return torch.tensor(first + extra, dtype=torch.float32)


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    is_causal: bool = True,
    scale: float | None = None,
    *,
    slopes: Callable[[int], torch.Tensor] = ref.alibi_slopes,
    sign: int = -1,
    distance: str = "position",
    bias: str = "abs",
    scale_bias: bool = False,
    top_left: bool = False,
    softmax: str = "safe",
) -> torch.Tensor:
    """ALiBi attention with knobs: the slope rule, the bias sign (+1: rewarded distance),
    distance from the "position" p_i or the "row" i, the bias "abs" (-m|p - j|), "signed"
    (-m(p - j), BLOOM's m * j up to a row constant) or "past-only" (-m max(p - j, 0)), the bias
    scaled with the scores, a causal mask tril(0), and torch.softmax (NaN for an empty row)."""
    _, H, L, d = q.shape
    S = k.shape[-2]
    s = 1.0 / math.sqrt(d) if scale is None else scale
    m = slopes(H).to(q.dtype)[:, None, None]  # (H, 1, 1)
    p = torch.arange(L) if distance == "row" else torch.arange(S - L, S)
    diff = (p[:, None] - torch.arange(S)[None, :]).to(q.dtype)  # (L, S): p - j
    dist = {"abs": diff.abs(), "signed": diff, "past-only": diff.clamp(min=0)}[bias]
    b = sign * m * dist  # (H, L, S)
    raw = q @ k.transpose(-2, -1)
    scores = (raw + b) * s if scale_bias else raw * s + b
    allowed = torch.ones(L, S, dtype=torch.bool)
    if is_causal:
        allowed = allowed.tril(0 if top_left else S - L)
    if mask is not None:
        allowed = allowed & mask
    scores = scores.masked_fill(~allowed, float("-inf"))
    if softmax == "torch":
        return torch.softmax(scores, dim=-1) @ v
    mx = scores.amax(dim=-1, keepdim=True)
    e = torch.exp(scores - torch.where(torch.isfinite(mx), mx, torch.zeros_like(mx)))
    z = e.sum(dim=-1, keepdim=True)
    return (e / torch.where(z > 0, z, torch.ones_like(z))) @ v


def _a(**knobs: Any) -> dict[str, Callable[..., Any]]:
    return {ATTN: partial(attention, **knobs)}


def _placed(*rules: Callable[[int], torch.Tensor]) -> list[dict[str, Callable[..., Any]]]:
    """Each wrong slope rule in alibi_slopes only, in the attention only, and in both."""
    out: list[dict[str, Callable[..., Any]]] = []
    for rule in rules:
        attn = partial(attention, slopes=rule)
        out += [{SLOPES: rule}, {ATTN: attn}, {SLOPES: rule, ATTN: attn}]
    return out


MUTANTS = {
    "alibi-slopes-wrong-for-non-power-of-two": _placed(
        pow2_everywhere, next_pow2_truncated, no_stride
    ),
    "alibi-bias-sign": _a(sign=1),
    "alibi-distance-top-left": _a(distance="row"),
    "alibi-bias-scaled": _a(scale_bias=True),
    "alibi-bias-not-symmetric": [_a(bias="signed"), _a(bias="past-only")],
    "causal-mask-top-left": _a(top_left=True),
    "fully-masked-row-nan": _a(softmax="torch"),
}


def _extra_slopes(H: int) -> str:
    c = 2 ** math.floor(math.log2(H))
    return ", ".join(f"2^{-4 * (2 * t + 1) / c:g}" for t in range(H - c)) or "none"


def _params(H: int, L: int, S: int, dv: int = D, **extra: Any) -> dict[str, Any]:
    c = 2 ** math.floor(math.log2(H))
    return {
        "B": B,
        "H": H,
        "L": L,
        "S": S,
        "d": D,
        "dv": dv,
        "c": c,
        "m0": 2.0 ** (-8.0 / c),
        "extra_slopes": _extra_slopes(H),
        **extra,
    }


def _qkv(seed: int, H: int, L: int, S: int) -> tuple[torch.Tensor, ...]:
    return (
        randn(B, H, L, D, seed=seed, scale=0.7),
        randn(B, H, S, D, seed=seed + 1, scale=0.7),
        randn(B, H, S, D, seed=seed + 2),
    )


def _attn(name: str, name_zh: str, seed: int, H: int, L: int, S: int, **kwargs: Any) -> Probe:
    extra = {"scale": kwargs["scale"]} if "scale" in kwargs else {}
    return Probe(
        name,
        ATTN,
        _qkv(seed, H, L, S),
        kwargs,
        params=_params(H, L, S, **extra),
        name_zh=name_zh,
    )


BIAS_PROBE = "bias picture: H = 6, L = 3, S = 7, not causal (q = k = 0, V = I)"
SLOPES_PROBE = "alibi_slopes(12)"
BIAS_H, BIAS_L, BIAS_S = 6, 3, 7


def probes() -> list[Probe]:
    grid_mask = with_empty_rows(strict_mask(5, 8, seed=811, p=0.75), [(1,)])
    eye = torch.eye(8, dtype=torch.float64).expand(B, 4, 8, 8).clone()
    zeros_q, zeros_k = (
        torch.zeros(B, 4, 5, D, dtype=torch.float64),
        torch.zeros(B, 4, 8, D, dtype=torch.float64),
    )
    empty = with_empty_rows(strict_mask(B, 1, 7, 4, seed=805, p=0.7), [(0, 0, 5)])
    bias_eye = torch.eye(BIAS_S, dtype=torch.float64).expand(1, BIAS_H, BIAS_S, BIAS_S).clone()
    out = [
        Probe(SLOPES_PROBE, SLOPES, (12,), params={"H": 12, **_params(12, 1, 1)}),
        Probe("alibi_slopes(6)", SLOPES, (6,), params=_params(6, 1, 1)),
        Probe("alibi_slopes(3)", SLOPES, (3,), params=_params(3, 1, 1)),
        Probe("alibi_slopes(8)", SLOPES, (8,), params=_params(8, 1, 1)),
        _attn("causal, L = S = 6, H = 4", "因果，L = S = 6，H = 4", 801, 4, 6, 6),
        _attn(
            "causal, L = 3, S = 8 (a KV cache), H = 4",
            "因果，L = 3，S = 8（KV cache），H = 4",
            811,
            4,
            3,
            8,
        ),
        _attn(
            "not causal, L = S = 6, H = 4",
            "非因果，L = S = 6，H = 4",
            821,
            4,
            6,
            6,
            is_causal=False,
        ),
        _attn(
            "not causal, L = 3, S = 7, H = 4",
            "非因果，L = 3，S = 7，H = 4",
            831,
            4,
            3,
            7,
            is_causal=False,
        ),
        _attn("causal, H = 6 heads, L = S = 5", "因果，H = 6 个头，L = S = 5", 841, 6, 5, 5),
        _attn(
            "not causal, H = 12 heads, L = 2, S = 5",
            "非因果，H = 12 个头，L = 2，S = 5",
            851,
            12,
            2,
            5,
            is_causal=False,
        ),
        _attn(
            "random mask (B, 1, L, S) and causal, L = 4, S = 7",
            "随机 mask (B, 1, L, S) 加因果，L = 4，S = 7",
            861,
            4,
            4,
            7,
            mask=strict_mask(B, 1, 4, 7, seed=862, p=0.7),
        ),
        _attn(
            "causal, L = 7 > S = 4 (queries 0 .. 2 have no key) and a fully masked row",
            "因果，L = 7 > S = 4（查询 0 .. 2 没有键），外加一整行被遮掩",
            871,
            4,
            7,
            4,
            mask=empty,
        ),
        _attn(
            "explicit scale=0.3, causal, L = S = 5",
            "显式 scale=0.3，因果，L = S = 5",
            881,
            4,
            5,
            5,
            scale=0.3,
        ),
        Probe(
            "float32, causal, L = 3, S = 8",
            ATTN,
            tuple(t.float() for t in _qkv(891, 4, 3, 8)),
            params=_params(4, 3, 8),
            dtype=torch.float32,
            name_zh="float32，因果，L = 3，S = 8",
        ),
        Probe(
            "mask grid with causal, L = 5, S = 8 (q = k = 0, V = I)",
            ATTN,
            (zeros_q, zeros_k, eye),
            {"mask": grid_mask},
            params=_params(4, 5, 8, dv=8),
            grid="weights",
            name_zh="mask 网格加因果，L = 5，S = 8（q = k = 0，V = I）",
        ),
        Probe(
            BIAS_PROBE,
            ATTN,
            (
                torch.zeros(1, BIAS_H, BIAS_L, D, dtype=torch.float64),
                torch.zeros(1, BIAS_H, BIAS_S, D, dtype=torch.float64),
                bias_eye,
            ),
            {"is_causal": False},
            params={**_params(BIAS_H, BIAS_L, BIAS_S, dv=BIAS_S), "B": 1},
            name_zh="偏置图：H = 6，L = 3，S = 7，非因果（q = k = 0，V = I）",
        ),
    ]
    out[4].repeat = True
    return out


# -- pictures ------------------------------------------------------------------------------
def _num(x: float) -> str:
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "-inf" if x < 0 else "inf"
    return f"{x:.3g}" if abs(x) >= 5e-4 else "0"


def bias_rows(value: Any) -> list[list[float]] | None:
    """Query 0's bias per head, read from the bias probe's output (q = k = 0, V = I: row 0
    of head h is softmax(bias)), shifted so that each row's largest entry is 0."""
    if not isinstance(value, torch.Tensor) or tuple(value.shape) != (1, BIAS_H, BIAS_L, BIAS_S):
        return None
    w = value.detach().double()[0, :, 0]  # (H, S)
    logs = torch.where(w > 0, w.clamp_min(1e-300).log(), torch.full_like(w, float("-inf")))
    top = logs.amax(dim=-1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    return (logs - top).tolist()


def _bias_picture(value: Any) -> dict[str, Any] | None:
    p = BIAS_S - BIAS_L  # query 0's position
    want = (-ref.alibi_slopes(BIAS_H).double()[:, None] * (p - torch.arange(BIAS_S)).abs()).tolist()
    got = bias_rows(value)
    rows: list[list[Any]] = []
    differs: list[list[int]] = []
    for h in range(BIAS_H):
        mine = "?" if got is None else " ".join(_num(x) for x in got[h])
        if got is None or any(
            not math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-6)
            for a, b in zip(got[h], want[h], strict=True)
        ):
            differs.append([h, 3])
        rows.append(
            [h, _num(float(ref.alibi_slopes(BIAS_H)[h])), " ".join(_num(x) for x in want[h]), mine]
        )
    if not differs:
        return None
    return table(
        {
            "en": f"The bias each head adds for query i = 0 (at p = S - L + i = {p}) over keys "
            f"j = 0 .. {BIAS_S - 1}, H = {BIAS_H}, is_causal=False; yours read from your output "
            "with q = k = 0 (each row shifted so that its largest value is 0)",
            "zh": f"每个头给查询 i = 0（位于 p = S - L + i = {p}）在键 j = 0 .. {BIAS_S - 1} 上加的"
            f"偏置，H = {BIAS_H}，is_causal=False；你的偏置从 q = k = 0 时你的输出读出（每行平移到"
            "最大值为 0）",
        },
        [
            {"en": "head", "zh": "头"},
            {"en": "slope m_h", "zh": "斜率 m_h"},
            {"en": "bias (contract: -m_h |p - j|)", "zh": "偏置（约定：-m_h |p - j|）"},
            {"en": "bias (yours)", "zh": "偏置（你的）"},
        ],
        rows,
        differs,
    )


def _slopes_picture(value: Any) -> dict[str, Any] | None:
    want = ref.alibi_slopes(12).tolist()
    if not isinstance(value, torch.Tensor) or tuple(value.shape) != (12,):
        return None
    got = value.detach().double().tolist()
    rows, differs = [], []
    for h in range(12):
        if not math.isclose(got[h], want[h], rel_tol=1e-5):
            differs.append([h, 2])
        rows.append([h, _num(want[h]), _num(got[h])])
    if not differs:
        return None
    return table(
        {
            "en": "alibi_slopes(12): c = 8, so the eight slopes of 8 heads, then every other "
            "slope of 16 heads (2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5)",
            "zh": "alibi_slopes(12)：c = 8，先是 8 个头的八个斜率，再是 16 个头的斜率中每隔一个取一个"
            "（2^-0.5、2^-1.5、2^-2.5、2^-3.5）",
        },
        [
            {"en": "head", "zh": "头"},
            {"en": "slope (contract)", "zh": "斜率（约定）"},
            {"en": "slope (yours)", "zh": "斜率（你的）"},
        ],
        rows,
        differs,
    )


BIAS_IDS = (
    "alibi-bias-sign",
    "alibi-distance-top-left",
    "alibi-bias-scaled",
    "alibi-bias-not-symmetric",
    "alibi-slopes-wrong-for-non-power-of-two",
)


def finding_data(
    mid: str, probes: list[Probe], observed: list[Any], subject: Any
) -> dict[str, Any]:
    """For the bias mistakes: the bias per head, the contract's beside the one the candidate's
    output shows; for the slopes: alibi_slopes(12) head by head (else the bias picture)."""
    if mid not in BIAS_IDS:
        return {}
    by_name = {p.name: o for p, o in zip(probes, observed, strict=False)}
    pictures = []
    if mid == "alibi-slopes-wrong-for-non-power-of-two":
        o = by_name.get(SLOPES_PROBE)
        pic = _slopes_picture(o.value) if o is not None and o.ok else None
        if pic:
            pictures.append(pic)
    o = by_name.get(BIAS_PROBE)
    if not pictures and o is not None and o.ok:
        pic = _bias_picture(o.value)
        if pic:
            pictures.append(pic)
    return {"pictures": pictures} if pictures else {}


REFERENCE = ref
