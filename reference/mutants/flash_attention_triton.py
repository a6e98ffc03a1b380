"""Wrong variants of reference/flash_attention_triton.py, and the probes that tell them apart.

Every variant is one Triton kernel with knobs (constexpr flags; all off = the reference), run
in Triton's interpreter under the same guard as the candidate's kernel (guard bands of NaN,
outputs starting as NaN: checker/triton_support.py).

The candidate picks its own BLOCK_M and BLOCK_N (powers of two, 16..128 in practice) and the
probes are built so that no mistake's output depends on them:
- every probe has fewer than 16 queries (one query block whatever BLOCK_M), except the one
  with 129, whose last query starts a block of its own for any BLOCK_M dividing 128;
- the online softmax probe has 129 keys, the first 128 scoring alike and the last far
  above them, so the running max moves once, at the block of key 128 alone, whatever
  BLOCK_N divides 128 (the same keys are rescaled, dropped or kept by every tiling);
- key counts are not multiples of 16, so every tiling has a partial last block.
`missing-store-mask` changes no value (a later program rewrites the stray rows, or they land
in a guard band), `causal-blocks-not-skipped` none either: the trace names them
(checker/diagnose/triton_rules.py), as it names unmasked reads, `dtype-not-preserved` and
`torch-instead-of-triton`. The online-softmax mistakes get the flash kata's picture (its torch
replica of the same tiling, reference/mutants/flash_attention.py).
"""

from __future__ import annotations

import math
import sys
from functools import partial
from types import SimpleNamespace
from typing import Any

import torch

from attnkata.checker import triton_support
from attnkata.checker.diagnose import triton_rules
from attnkata.checker.diagnose.behaviour import differs, flatten
from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.diagnose.subjects import Observed, call_local
from attnkata.checker.probes import randn
from attnkata.reference.mutants import flash_attention as flash_mutants

ENTRY = "flash_attention_triton"
triton, tl = triton_support.load()
ref = triton_support.import_interpreted("attnkata.reference.flash_attention_triton")
BLOCK = 64  # the variants' BLOCK_M and BLOCK_N (any power of two dividing 128 gives the same)


@triton_support.jit
def flash_knobs(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    lse_ptr,
    sqb,
    sqh,
    sql,
    sqd,
    skb,
    skh,
    sks,
    skd,
    svb,
    svh,
    svs,
    svd,
    sob,
    soh,
    sol,
    sod,
    slb,
    slh,
    sll,
    H,
    L,
    S,
    scale,
    IS_CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    D: tl.constexpr,
    RESCALE_ACC: tl.constexpr,
    RESCALE_SUM: tl.constexpr,
    MAX_INIT_ZERO: tl.constexpr,
    GUARD_SHIFT: tl.constexpr,
    GUARD_DIV: tl.constexpr,
    DROP_TAIL: tl.constexpr,
    LSE_MODE: tl.constexpr,  # 0 m + log(l), 1 m, 2 log(l), 3 m + l
    TOP_LEFT: tl.constexpr,
    LOAD_MASK: tl.constexpr,  # 2 every load, 1 none (scores still masked), 0 none at all
):
    pid_m = tl.program_id(0)
    b = tl.program_id(1) // H
    h = tl.program_id(1) % H
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    row_ok = offs_m < L
    q_ptrs = q_ptr + b * sqb + h * sqh + offs_m[:, None] * sql + offs_d[None, :] * sqd
    if LOAD_MASK == 2:
        q = tl.load(q_ptrs, mask=row_ok[:, None], other=0.0)
    else:
        q = tl.load(q_ptrs)
    if MAX_INIT_ZERO:
        m_i = tl.zeros([BLOCK_M], tl.float32)
    else:
        m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    offset = S - L
    if TOP_LEFT:
        offset = 0
    hi = S
    if IS_CAUSAL:
        hi = tl.minimum(S, tl.maximum(0, offset + (pid_m + 1) * BLOCK_M))
    if DROP_TAIL:
        hi = (hi // BLOCK_N) * BLOCK_N
    for start in range(0, hi, BLOCK_N):
        cols = start + offs_n
        col_ok = cols < S
        k_ptrs = k_ptr + b * skb + h * skh + cols[None, :] * sks + offs_d[:, None] * skd
        v_ptrs = v_ptr + b * svb + h * svh + cols[:, None] * svs + offs_d[None, :] * svd
        if LOAD_MASK == 2:
            k = tl.load(k_ptrs, mask=col_ok[None, :], other=0.0)
            v = tl.load(v_ptrs, mask=col_ok[:, None], other=0.0)
        else:
            k = tl.load(k_ptrs)
            v = tl.load(v_ptrs)
        s = tl.dot(q, k) * scale
        if LOAD_MASK > 0:
            allowed = col_ok[None, :]
        else:
            allowed = offs_n[None, :] >= 0
        if IS_CAUSAL:
            allowed = allowed & (cols[None, :] <= offs_m[:, None] + offset)
        s = tl.where(allowed, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        if GUARD_SHIFT:
            shift = tl.where(m_new == float("-inf"), 0.0, m_new)
        else:
            shift = m_new
        alpha = tl.exp(m_i - shift)
        p = tl.exp(s - shift[:, None])
        if RESCALE_SUM:
            l_i = l_i * alpha + tl.sum(p, axis=1)
        else:
            l_i = l_i + tl.sum(p, axis=1)
        if RESCALE_ACC:
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        else:
            acc = acc + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    has_key = l_i > 0
    if GUARD_DIV:
        out = acc / tl.where(has_key, l_i, 1.0)[:, None]
    else:
        out = acc / l_i[:, None]
    safe_l = tl.where(has_key, l_i, 1.0)
    if LSE_MODE == 1:
        lse = tl.where(has_key, m_i, float("-inf"))
    elif LSE_MODE == 2:
        lse = tl.where(has_key, tl.log(safe_l), float("-inf"))
    elif LSE_MODE == 3:
        lse = tl.where(has_key, m_i + l_i, float("-inf"))
    else:
        lse = tl.where(has_key, m_i + tl.log(safe_l), float("-inf"))
    tl.store(
        o_ptr + b * sob + h * soh + offs_m[:, None] * sol + offs_d[None, :] * sod,
        out.to(o_ptr.dtype.element_ty),
        mask=row_ok[:, None],
    )
    tl.store(lse_ptr + b * slb + h * slh + offs_m * sll, lse, mask=row_ok)


def flash(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    is_causal: bool = False,
    scale: float | None = None,
    *,
    rescale_acc: bool = True,
    rescale_sum: bool = True,
    max_init_zero: bool = False,
    guard_shift: bool = True,
    guard_div: bool = True,
    drop_tail: bool = False,
    lse: int = 0,
    keepdim: bool = False,
    top_left: bool = False,
    load_mask: int = 2,
    default_scale: str = "head",
    honour_scale: bool = True,
    grid_floor: bool = False,
    contiguous_strides: bool = False,
    block_m: int = BLOCK,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference's kernel and wrapper with knobs for the catalogued mistakes (the kernel
    knobs above; `default_scale` "head" 1/sqrt(d), "one" 1, "model" 1/sqrt(d * H);
    `honour_scale`: an explicit scale is used; `grid_floor`: L // BLOCK_M query blocks;
    `contiguous_strides`: every tensor addressed as if contiguous; `keepdim`: lse (B, H, L, 1))."""
    B, H, L, d = q.shape
    S = k.shape[2]
    default = {"head": 1.0 / math.sqrt(d), "one": 1.0, "model": 1.0 / math.sqrt(d * H)}
    scale = default[default_scale] if scale is None or not honour_scale else scale
    out = torch.empty((B, H, L, d), dtype=q.dtype, device=q.device)
    lse_out = torch.empty((B, H, L), dtype=torch.float32, device=q.device)

    def strides(t: torch.Tensor) -> tuple[int, ...]:
        if not contiguous_strides:
            return tuple(t.stride())
        shape, out_, acc = t.shape, [], 1
        for n in reversed(shape):
            out_.append(acc)
            acc *= n
        return tuple(reversed(out_))

    blocks = L // block_m if grid_floor else triton.cdiv(L, block_m)
    flash_knobs[(blocks, B * H)](
        q,
        k,
        v,
        out,
        lse_out,
        *strides(q),
        *strides(k),
        *strides(v),
        *out.stride(),
        *lse_out.stride(),
        H,
        L,
        S,
        scale,
        IS_CAUSAL=is_causal,
        BLOCK_M=block_m,
        BLOCK_N=BLOCK,
        D=d,
        RESCALE_ACC=rescale_acc,
        RESCALE_SUM=rescale_sum,
        MAX_INIT_ZERO=max_init_zero,
        GUARD_SHIFT=guard_shift,
        GUARD_DIV=guard_div,
        DROP_TAIL=drop_tail,
        LSE_MODE=lse,
        TOP_LEFT=top_left,
        LOAD_MASK=load_mask,
    )
    return out, (lse_out.unsqueeze(-1) if keepdim else lse_out)


# The flash kata's knobs for the same mistake (its torch replica draws the online table).
_FLASH_KNOBS = {
    "rescale_acc": "rescale_acc",
    "rescale_sum": "rescale_sum",
    "guard_shift": "guard_shift",
    "guard_div": "guard_div",
}


def _m(**knobs: Any) -> Any:
    """A variant: the knobbed function, run as the candidate's is and kept on disk."""
    tag = "variant " + repr(sorted(knobs.items()))
    return triton_support.mutant(partial(flash, **knobs), sys.modules[__name__], tag)


MUTANTS = {
    "online-softmax-no-rescale": _m(rescale_acc=False),
    "online-softmax-sum-not-rescaled": _m(rescale_sum=False),
    "flash-max-init-zero": [_m(max_init_zero=True), _m(max_init_zero=True, guard_div=False)],
    "flash-empty-block-nan": [_m(guard_shift=False), _m(guard_shift=False, guard_div=False)],
    "flash-tail-block-dropped": _m(drop_tail=True),
    "lse-wrong": [_m(lse=1), _m(lse=2), _m(lse=3), _m(keepdim=True)],
    "causal-mask-top-left": _m(top_left=True),
    "missing-scale": [_m(default_scale="one"), _m(default_scale="one", honour_scale=False)],
    "scale-by-d-model": [
        _m(default_scale="model"),
        _m(default_scale="model", honour_scale=False),
    ],
    "missing-load-mask": [_m(load_mask=1), _m(load_mask=0)],
    # BLOCK_M = 16..128 all miss query 128 of 129 and every query of fewer than 16.
    "grid-misses-tail": _m(grid_floor=True),
    "stride-assumed-contiguous": _m(contiguous_strides=True),
}

REFERENCE = SimpleNamespace(
    **{ENTRY: triton_support.mutant(ref.flash_attention_triton, sys.modules[__name__], "reference")}
)
TRACE_RULES = triton_rules.RULES
# Each probe is one interpreted launch of a few programs (~0.05-0.3 s; a candidate with
# 16-wide blocks takes a few times the reference's, a busy machine more).
PROBE_TIME_BUDGET = 12.0
PROBE_CALL_TIMEOUT = 6.0
# Combined variants run interpreted too (CPU seconds of the grading process).
PAIR_TIME_BUDGET, PEEL_TIME_BUDGET = 3.0, 6.0

B, H, d = 1, 2, 16


def _sizes(b: int, h: int, L: int, S: int, dd: int = d, **extra: Any) -> dict[str, Any]:
    return {"B": b, "H": h, "L": L, "S": S, "d": dd, "dv": dd, "D": h * dd, **extra}


def _qkv(
    seed: int, b: int, h: int, L: int, S: int, dd: int = d, dtype: torch.dtype = torch.float32
):
    return (
        randn(b, h, L, dd, seed=seed, dtype=dtype),
        randn(b, h, S, dd, seed=seed + 1, dtype=dtype),
        randn(b, h, S, dd, seed=seed + 2, dtype=dtype),
    )


def online_inputs(seed: int) -> tuple[torch.Tensor, ...]:
    """One head, 5 queries, 129 keys: keys 0..127 all equal (every query scores them alike,
    about 2 apart from each other's queries), key 128 along the queries' direction, scoring
    about 6 above them; values random. The running max rises once, at key 128."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(1, 1, 5, d, generator=g, dtype=torch.float64).abs() + 1.0
    base = torch.randn(d, generator=g, dtype=torch.float64) * 0.1
    k = base.expand(1, 1, 129, d).clone()
    k[0, 0, 128] = 1.5
    v = torch.randn(1, 1, 129, d, generator=g, dtype=torch.float64)
    return tuple(t.float() for t in (q, k, v))


def negative_inputs(seed: int) -> tuple[torch.Tensor, ...]:
    """q >= 0, k <= 0: every score is negative, around -1e2 (exp underflows float32)."""
    q, k, v = _qkv(seed, 1, 2, 5, 13)
    return q.abs() * 8.0, -k.abs() * 8.0, v


def flat_inputs(seed: int) -> tuple[torch.Tensor, ...]:
    """L = S = 128, q = k = 0: every allowed score is 0, so every tiling computes the same
    (the mean of the visible values): the pair causal/full is judged by its loads of k."""
    v = randn(1, 1, 128, d, seed=seed, dtype=torch.float32)
    return torch.zeros(1, 1, 128, d), torch.zeros(1, 1, 128, d), v


def probes() -> list[Probe]:
    """The online softmax across key blocks; scores far below 0; causal with a KV cache and
    with L > S; 129 queries; transposed inputs; float16 with an explicit scale; and a causal
    and a full call of 128 x 128 whose loads of k tell whether causal blocks are skipped.
    Key counts are 13 (one partial block at any BLOCK_N) or 129."""
    f32 = torch.float32
    return [
        Probe(
            "online softmax: 129 keys, the last one dominant",
            ENTRY,
            online_inputs(701),
            params=_sizes(1, 1, 5, 129),
            dtype=f32,
            name_zh="在线 softmax：129 个键，最后一个占主导",
        ),
        Probe(
            "scores all far below 0",
            ENTRY,
            negative_inputs(704),
            params=_sizes(1, 2, 5, 13),
            dtype=f32,
            name_zh="分数全都远小于 0",
        ),
        Probe(
            "causal, L=5, S=13 (a KV cache)",
            ENTRY,
            _qkv(707, B, H, 5, 13),
            {"is_causal": True},
            params=_sizes(B, H, 5, 13),
            dtype=f32,
            name_zh="因果，L=5，S=13（KV cache）",
        ),
        Probe(
            "causal, L=12, S=5 (queries 0..6 see no key)",
            ENTRY,
            _qkv(710, B, H, 12, 5),
            {"is_causal": True},
            params=_sizes(B, H, 12, 5),
            dtype=f32,
            name_zh="因果，L=12，S=5（查询 0..6 没有可看的键）",
        ),
        Probe(
            "129 queries, 13 keys",
            ENTRY,
            _qkv(713, 1, 1, 129, 13),
            params=_sizes(1, 1, 129, 13),
            dtype=f32,
            name_zh="129 个查询，13 个键",
        ),
        Probe(
            "q, k, v laid out (B, L, H, d)",
            ENTRY,
            _qkv(716, 2, 2, 5, 13),
            {"is_causal": True},
            params=_sizes(2, 2, 5, 13),
            layouts={0: "swap:1,2", 1: "swap:1,2", 2: "swap:1,2"},
            dtype=f32,
            name_zh="q、k、v 按 (B, L, H, d) 存储",
        ),
        Probe(
            "float16, d=32, scale=0.3",
            ENTRY,
            _qkv(719, B, H, 5, 13, dd=32, dtype=torch.float16),
            {"scale": 0.3},
            params=_sizes(B, H, 5, 13, 32, scale=0.3),
            dtype=torch.float16,
            name_zh="float16，d=32，scale=0.3",
        ),
        Probe(
            "causal, L=S=128, q = k = 0",
            ENTRY,
            flat_inputs(725),
            {"is_causal": True},
            params=_sizes(1, 1, 128, 128, full_probe="full, L=S=128, q = k = 0"),
            dtype=f32,
            name_zh="因果，L=S=128，q = k = 0",
        ),
        Probe(
            "full, L=S=128, q = k = 0",
            ENTRY,
            flat_inputs(725),
            params=_sizes(1, 1, 128, 128),
            dtype=f32,
            name_zh="非因果，L=S=128，q = k = 0",
        ),
    ]


# -- the online-softmax picture (the flash kata's table) -----------------------------------
ONLINE = {
    "online-softmax-no-rescale": {"rescale_acc": False},
    "online-softmax-sum-not-rescaled": {"rescale_sum": False},
    "flash-max-init-zero": {"max_init": 0.0},
    "flash-empty-block-nan": {"guard_shift": False},
    "flash-tail-block-dropped": {"drop_key_tail": True},
}


def _same(a: Observed, b: Observed) -> bool:
    f = flatten(b.value) if b.ok else None
    return a.ok and f is not None and not differs(a, b, f[1].size).any()


def finding_data(
    mid: str, probes: list[Probe], observed: list[Observed], subject: Any
) -> dict[str, Any]:
    """For an online-softmax mistake: the flash kata's per-key-block table (running max, sum
    and rescale factor, the reference's beside the mistake's) for the first query row where
    the candidate parts from the reference, on a probe where a variant of `mid` reproduces
    the candidate; drawn by the flash kata's torch replica with this kata's variants' blocks."""
    if mid not in ONLINE:
        return {}
    variants = MUTANTS[mid] if isinstance(MUTANTS[mid], list) else [MUTANTS[mid]]
    for p, c in zip(probes, observed, strict=False):
        if not c.ok or p.layouts or p.params.get("full_probe"):
            continue
        r = subject.reference_call(p)
        row = flash_mutants.first_parting_row(c.value, r.value) if r.ok else None
        if row is None or not any(_same(c, call_local(v, p)) for v in variants):
            continue
        q, k, v = (t.double() for t in p.args)
        kwargs = {**p.kwargs, "block_q": BLOCK, "block_k": BLOCK}
        replica = Probe(p.name, "flash_attention", (q, k, v), kwargs, name_zh=p.name_zh)
        knobs = dict(ONLINE[mid])
        return {
            "pictures": [
                flash_mutants.online_picture(replica, row, partial(flash_mutants.flash, **knobs))
            ]
        }
    return {}
