"""Wrong variants of reference/paged_attention.py, and the probes that tell them apart.

Every variant is one knobbed function (`paged`, all knobs off = the contract), so variants
compose for the pair search, and the same function replays one sequence's block reads for
the block-table picture (`finding_data`).

Probe sizes: B = 3, H = 6, Hkv = 2 (g = 3), d = 8, dv = 6, block_size = 4, max_blocks = 5,
num_blocks = 16, tables shuffled with no block at its own logical index; lengths end inside
a block, at a block's end, below one block and at 0. The memory probe (16 sequences, one of
500 tokens) judges the largest tensor against a quarter of a dense padded gather.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from attnkata.checker.diagnose.behaviour import first_reproduced, table_picture
from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.diagnose.subjects import Observed
from attnkata.checker.probes import block_table, randn
from attnkata.reference import paged_attention as ref

ENTRY = "paged_attention"
Record = dict[str, Any]  # {"seq": b} in; {"reads": [(logical, physical, t0, t1), ...]} out


def paged(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_table: torch.Tensor,
    context_lens: torch.Tensor,
    scale: float | None = None,
    *,
    logical_blocks: bool = False,
    length_shift: int = 0,
    floor_blocks: bool = False,
    heads: str | tuple[int, ...] = "interleave",
    empty_nan: bool = False,
    default_scale: Callable[[int], float] = lambda d: 1.0 / math.sqrt(d),
    honour_scale: bool = True,
    record: Record | None = None,
) -> torch.Tensor:
    """The contract with knobs: blocks read in logical order (pool block i for logical block
    i), one token fewer or more per sequence, n // block_size blocks, query head h reading KV
    head h % Hkv ("modulo") or the heads a tuple names, NaN for a sequence with no key (a
    masked softmax over a row of -inf), the scale left out."""
    B, H, d = q.shape
    block_size, Hkv = k_cache.shape[1], k_cache.shape[2]
    dv = v_cache.shape[-1]
    g = H // Hkv
    s = default_scale(d) if scale is None or not honour_scale else scale
    if heads == "interleave":
        kv_of = [h // g for h in range(H)]
    elif heads == "modulo":
        kv_of = [h % Hkv for h in range(H)]
    else:
        kv_of = list(heads)
    out = torch.zeros(B, H, dv, dtype=q.dtype, device=q.device)
    for b in range(B):
        n = max(0, int(context_lens[b]) + length_shift)
        nb = n // block_size if floor_blocks else -(-n // block_size)
        if nb > block_table.shape[1]:  # as a gather past the table's row would
            raise IndexError(f"index {nb - 1} is out of bounds for dimension 1 with size {nb - 1}")
        covered = min(n, nb * block_size)
        ids = torch.arange(nb) if logical_blocks else block_table[b, :nb].long()
        if record is not None and record.get("seq") == b:
            record["reads"] = [
                (i, int(ids[i]), i * block_size, min(covered, (i + 1) * block_size) - 1)
                for i in range(nb)
            ]
        if covered == 0:
            if empty_nan:
                out[b] = float("nan")
            continue
        k = k_cache[ids].reshape(nb * block_size, Hkv, d)[:covered][:, kv_of]  # (n, H, d)
        v = v_cache[ids].reshape(nb * block_size, Hkv, dv)[:covered][:, kv_of]
        w = torch.softmax(torch.einsum("hd,thd->ht", q[b], k) * s, dim=-1)
        out[b] = torch.einsum("ht,thd->hd", w, v)
    return out


def _m(**knobs: Any) -> Callable[..., torch.Tensor]:
    return partial(paged, **knobs)


MUTANTS = {
    "block-table-ignored": _m(logical_blocks=True),
    "context-length-off-by-one": [
        _m(length_shift=-1),
        _m(length_shift=-1, empty_nan=True),
        _m(length_shift=1),
    ],
    "last-block-dropped": [_m(floor_blocks=True), _m(floor_blocks=True, empty_nan=True)],
    "kv-repeat-instead-of-interleave": _m(heads="modulo"),
    "fully-masked-row-nan": _m(empty_nan=True),
    "missing-scale": [
        _m(default_scale=lambda d: 1.0),
        _m(default_scale=lambda d: 1.0, honour_scale=False),
    ],
}

B, H, HKV, d, dv, BS, MAXB, NB = 3, 6, 2, 8, 6, 4, 5, 16


def _sizes(**extra: Any) -> dict[str, Any]:
    return {"B": B, "H": H, "Hkv": HKV, "d": d, "dv": dv, "block": BS, **extra}


def _inputs(seed: int, lens: list[int], *, shared: int = 0) -> tuple[torch.Tensor, ...]:
    return (
        randn(len(lens), H, d, seed=seed),
        randn(NB, BS, HKV, d, seed=seed + 1),
        randn(NB, BS, HKV, dv, seed=seed + 2),
        block_table(lens, BS, MAXB, NB, seed=seed, shared=shared),
        torch.tensor(lens),
    )


def _probe(name: str, name_zh: str, seed: int, lens: list[int], **kw: Any) -> Probe:
    kwargs = kw.pop("kwargs", {})
    return Probe(
        f"{name}, context_lens={lens}",
        ENTRY,
        _inputs(seed, lens, shared=kw.pop("shared", 0)),
        kwargs,
        params=_sizes(**kw.pop("params", {})),
        name_zh=f"{name_zh}，context_lens={lens}",
        **kw,
    )


def probes() -> list[Probe]:
    """Shuffled tables; lengths inside a block, at a block's end, below one block and 0;
    shared prefix blocks; an explicit scale; float32; and a batch of 16 beside a dense
    padded gather's budget."""
    n, bs, maxb, nb, hkv, dd = 16, 16, 64, 256, 2, 16
    lens = torch.randint(1, 41, (n,), generator=torch.Generator().manual_seed(560)).tolist()
    lens[3] = 500
    big = (
        randn(n, 8, dd, seed=561, dtype=torch.float32),
        randn(nb, bs, hkv, dd, seed=562, dtype=torch.float32),
        randn(nb, bs, hkv, dd, seed=563, dtype=torch.float32),
        block_table(lens, bs, maxb, nb, seed=564),
        torch.tensor(lens),
    )
    dense = n * maxb * bs * hkv * dd
    f32 = _inputs(550, [9, 14, 6])
    return [
        _probe("shuffled blocks", "打乱的块", 540, [7, 13, 6], repeat=True),
        _probe("lengths at a block's end", "长度正好到块末尾", 543, [4, 8, 12]),
        _probe("a sequence of length 0", "长度为 0 的序列", 546, [0, 10, 5]),
        _probe("shorter than one block", "比一个块还短", 549, [1, 3, 2], shared=1),
        _probe(
            "explicit scale=0.3",
            "显式 scale=0.3",
            552,
            [11, 5, 15],
            kwargs={"scale": 0.3},
            params={"scale": 0.3},
        ),
        Probe(
            "float32 inputs, context_lens=[9, 14, 6]",
            ENTRY,
            tuple(t.float() if t.is_floating_point() else t for t in f32),
            params=_sizes(),
            dtype=torch.float32,
            name_zh="float32 输入，context_lens=[9, 14, 6]",
        ),
        Probe(
            f"memory: B={n}, max_blocks={maxb}, block_size={bs}, one context of 500 tokens",
            ENTRY,
            big,
            params={"B": n, "H": 8, "Hkv": hkv, "d": dd, "dv": dd, "block": bs},
            dtype=torch.float32,
            budget=("paged-gathers-dense-kv", dense // 4),
            name_zh=f"内存：B={n}，max_blocks={maxb}，block_size={bs}，一条上下文有 500 个 token",
        ),
    ]


REFERENCE = ref

# -- pictures -------------------------------------------------------------------------------
READ_IDS = ("block-table-ignored", "last-block-dropped", "context-length-off-by-one")


def _first_parting_sequence(got: Any, want: Any) -> int | None:
    """The first sequence whose output differs (NaN against a number included)."""
    if not isinstance(got, torch.Tensor) or not isinstance(want, torch.Tensor):
        return None
    if got.shape != want.shape:
        return None
    g, w = got.detach().double(), want.detach().double()
    same = (g == w) | (g.isnan() & w.isnan()) | ((g - w).abs() <= 1e-4 + 1e-3 * w.abs())
    rows = (~same).flatten(1).any(dim=1).nonzero()
    return int(rows[0]) if len(rows) else None


def _reads_text(reads: list[tuple[int, int, int, int]], i: int) -> tuple[str | None, str | None]:
    if i >= len(reads):
        return None, None
    _, phys, t0, t1 = reads[i]
    return str(phys), f"{t0}..{t1}" if t1 >= t0 else None


def block_picture(probe: Probe, seq: int, variant: Callable[..., Any]) -> dict[str, Any]:
    """Sequence `seq`'s row of the block table: per logical block, the physical block and the
    tokens the contract reads, beside what code with this mistake reads."""
    want: Record = {"seq": seq}
    got: Record = {"seq": seq}
    paged(*probe.args, **probe.kwargs, record=want)
    variant(*probe.args, **probe.kwargs, record=got)
    table = probe.args[3]
    n = int(probe.args[4][seq])
    width = max(len(want.get("reads", [])), len(got.get("reads", [])), 1)
    rows, differ = [], []
    for i in range(min(width, table.shape[1])):
        w_phys, w_tok = _reads_text(want.get("reads", []), i)
        g_phys, g_tok = _reads_text(got.get("reads", []), i)
        cells = [str(i), str(int(table[seq, i])), w_phys, w_tok, g_phys, g_tok]
        for c in (4, 5):
            if cells[c] != cells[c - 2]:
                differ.append([len(rows), c])
        rows.append(cells)
    caption = {
        "en": f"Block table row of sequence {seq} (context_lens = {n}, block_size = "
        f"{probe.params.get('block')}) on the probe '{probe.name}', where your output first parts from the "
        "reference: per logical block, the physical block the table names, and which physical block and "
        "tokens the contract reads beside what code with this mistake reads (it reproduces your output on "
        "this probe; the inside of your own run cannot be seen). '—': not read.",
        "zh": f"在探测输入“{probe.name_zh or probe.name}”上，你的输出从序列 {seq} 开始与参考答案不同"
        f"（context_lens = {n}，block_size = {probe.params.get('block')}）。下表是它在块表中的那一行："
        "每个逻辑块对应块表给出的物理块，以及按约定读取的物理块和 token，旁边是带有这个错误的代码读取的内容"
        "（它在该探测输入上复现了你的输出；你自己程序内部的过程是看不到的）。“—”表示没有读取。",
    }
    columns = [
        {"en": "logical block", "zh": "逻辑块"},
        {"en": "table", "zh": "块表"},
        {"en": "block read (ref)", "zh": "读取的块（参考）"},
        {"en": "tokens (ref)", "zh": "token（参考）"},
        {"en": "block read (yours)", "zh": "读取的块（你的）"},
        {"en": "tokens (yours)", "zh": "token（你的）"},
    ]
    return table_picture(caption, columns, rows, differ)


def _head_map(probe: Probe, value: Any) -> list[int | str] | None:
    """The KV head each query head read: the one whose output matches its column."""
    if not isinstance(value, torch.Tensor):
        return None
    got = []
    for h in range(H):
        found: int | str = "?"
        for j in range(HKV):
            heads = tuple(j if x == h else x // (H // HKV) for x in range(H))
            o = paged(*probe.args, **probe.kwargs, heads=heads)
            if torch.allclose(value[:, h].double(), o[:, h].double(), atol=1e-6, equal_nan=True):
                found = j
                break
        got.append(found)
    return got


def finding_data(
    mid: str, probes: list[Probe], observed: list[Observed], subject: Any
) -> dict[str, Any]:
    """For a block-reading mistake: the block table of the first sequence where the
    candidate parts from the reference, on the first probe a variant of `mid` reproduces;
    for kv-repeat-instead-of-interleave: the KV head each query head read."""
    if mid == "kv-repeat-instead-of-interleave":
        p, o = probes[0], observed[0]
        got = _head_map(p, o.value) if o.ok else None
        if got is None:
            return {}
        return {
            "head_map_expected": [h // (H // HKV) for h in range(H)],
            "head_map_got": got,
            "head_map_probe": p.name,
        }
    if mid not in READ_IDS:
        return {}
    variants = MUTANTS[mid] if isinstance(MUTANTS[mid], list) else [MUTANTS[mid]]
    found = first_reproduced(
        probes,
        observed,
        subject,
        variants,
        _first_parting_sequence,
        usable=lambda p: p.budget is None,
    )
    return {"pictures": [block_picture(*found)]} if found else {}
