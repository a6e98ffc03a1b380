"""Wrong variants of reference/block_sparse.py. Both entry points share one knobbed layout
(all knobs off = the contract); the attention variants are dense attention under that
layout, since only behaviour is compared (memory is judged from the candidate's trace by
the probe with a `budget`). Every mistake comes in three placements: in the mask only,
in the attention only (an efficient attention builds its own layout), or in both (an
attention that calls the candidate's own mask)."""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial
from typing import Any

import torch

from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.probes import randn
from attnkata.reference import block_sparse as ref

MASK, ATTN = "block_sparse_mask", "block_sparse_attention"


def layout_mask(
    L: int,
    block: int,
    window: int,
    n_global: int,
    random_blocks: torch.Tensor | None = None,
    device: torch.device | str | None = None,
    *,
    globals_: str = "both",
    window_in: str = "blocks",
    random_transposed: bool = False,
    floor_blocks: bool = False,
    lo_shift: int = 0,
    hi_shift: int = 0,
) -> torch.Tensor:
    """(L, L) mask with knobs: globals_ "rows"/"cols" (one direction), window_in "tokens"
    (|t - s| <= window) or "scaled" (|t - s| <= window * block), random blocks set in column
    i instead of row i, nb = L // block (the short last block dropped), and the window's
    lower / upper side shifted by one."""
    nb = L // block if floor_blocks else -(-L // block)
    i = torch.arange(nb, device=device).unsqueeze(1)
    j = torch.arange(nb, device=device).unsqueeze(0)
    layout = torch.zeros(nb, nb, dtype=torch.bool, device=device)
    if window_in == "blocks":
        layout |= (j >= i - window - lo_shift) & (j <= i + window + hi_shift)
    if globals_ in ("both", "rows"):
        layout |= i < n_global
    if globals_ in ("both", "cols"):
        layout |= j < n_global
    if random_blocks is not None and random_blocks.numel() > 0:
        rb = random_blocks.to(device=layout.device, dtype=torch.long)
        if floor_blocks:
            rb = rb[:nb]
        rows = torch.arange(rb.shape[0], device=layout.device).unsqueeze(1).expand_as(rb)
        keep = rb < nb
        if random_transposed:
            layout[rb[keep], rows[keep]] = True
        else:
            layout[rows[keep], rb[keep]] = True
    t = torch.arange(L, device=device)
    blk = (t // block).clamp(max=max(nb - 1, 0))
    mask = (
        layout[blk.unsqueeze(1), blk.unsqueeze(0)]
        if nb > 0
        else torch.zeros(L, L, dtype=torch.bool, device=device)
    )
    if floor_blocks:  # tokens past nb * block belong to no block
        inside = t < nb * block
        mask = mask & inside.unsqueeze(1) & inside.unsqueeze(0)
    if window_in != "blocks":
        width = window if window_in == "tokens" else window * block
        mask = mask | ((t.unsqueeze(1) - t.unsqueeze(0)).abs() <= width)
    return mask


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    block: int,
    window: int,
    n_global: int,
    random_blocks: torch.Tensor | None = None,
    scale: float | None = None,
    *,
    nan_empty: bool = False,
    **knobs: Any,
) -> torch.Tensor:
    """Dense attention under `layout_mask(..., **knobs)`; a query with no key gets zeros, or
    NaN with `nan_empty` (F.softmax over a row of -inf: the contract never empties a row, a
    mistake that does may show it so)."""
    L, d = q.shape[-2], q.shape[-1]
    s = 1.0 / math.sqrt(d) if scale is None else scale
    allowed = layout_mask(L, block, window, n_global, random_blocks, q.device, **knobs)
    scores = ((q @ k.transpose(-2, -1)) * s).masked_fill(~allowed, float("-inf"))
    if nan_empty:
        return torch.softmax(scores, dim=-1) @ v
    m = scores.amax(dim=-1, keepdim=True)
    e = torch.exp(scores - torch.where(torch.isfinite(m), m, torch.zeros_like(m)))
    z = e.sum(dim=-1, keepdim=True)
    return (e / torch.where(z > 0, z, torch.ones_like(z))) @ v


def _placed(*spellings: dict[str, Any], empties: bool = False) -> list[dict[str, Any]]:
    """Each spelling in the mask only, in the attention only, and in both; with `empties`
    (a mistake that can leave a query without keys) also the attention's NaN form."""
    out: list[dict[str, Any]] = []
    for knobs in spellings:
        mask, attn = partial(layout_mask, **knobs), partial(attention, **knobs)
        out += [{MASK: mask}, {ATTN: attn}, {MASK: mask, ATTN: attn}]
        if empties:
            nan = partial(attention, nan_empty=True, **knobs)
            out += [{ATTN: nan}, {MASK: mask, ATTN: nan}]
    return out


MUTANTS = {
    "global-one-direction": _placed({"globals_": "rows"}, {"globals_": "cols"}),
    "window-in-tokens": _placed({"window_in": "tokens"}, {"window_in": "scaled"}),
    "random-blocks-transposed": _placed({"random_transposed": True}),
    "last-block-dropped": _placed({"floor_blocks": True}, empties=True),
    "block-window-off-by-one": [
        *_placed({"lo_shift": 1, "hi_shift": 1}, {"lo_shift": 1}, {"hi_shift": 1}),
        *_placed(
            {"lo_shift": -1, "hi_shift": -1}, {"lo_shift": -1}, {"hi_shift": -1}, empties=True
        ),
    ],
}

B, H, d, dv = 2, 3, 4, 5
# nb = 7 blocks of 2, the last one a single token; random blocks repeat (row 3: 5, 5) and
# name blocks already in the window (row 1: 2) or global (row 4: 0).
GRID_L, GRID_BLOCK = 13, 2
GRID_RANDOM = torch.tensor([[4, 4], [2, 6], [5, 0], [5, 5], [0, 1], [1, 2], [3, 3]])


def _params(L: int, block: int, window: int, n_global: int) -> dict[str, Any]:
    return {
        "B": B,
        "H": H,
        "d": d,
        "L": L,
        "block": block,
        "window": window,
        "n_global": n_global,
        "nb": -(-L // block),
    }


def _qkv(seed: int, L: int) -> tuple[torch.Tensor, ...]:
    return (
        randn(B, H, L, d, seed=seed),
        randn(B, H, L, d, seed=seed + 1),
        randn(B, H, L, dv, seed=seed + 2),
    )


def probes() -> list[Probe]:
    """The mask and the attention on the same layouts (a short last block, repeats and
    overlaps in random_blocks, a window narrower than nb), a grid for each (V = I: the
    attention's rows are its weights), and a long sequence for the memory budget."""
    grid_args = (GRID_L, GRID_BLOCK, 1, 1, GRID_RANDOM)
    zeros = torch.zeros(B, H, GRID_L, d, dtype=torch.float64)
    eye = torch.eye(GRID_L, dtype=torch.float64).expand(B, H, GRID_L, GRID_L).clone()
    rand10 = torch.tensor([[3], [4], [0], [1], [2]])  # nb = 5 for L = 10, block = 2
    big_L, big_block = 1024, 32
    big_rb = torch.randint(
        0, big_L // big_block, (big_L // big_block, 2), generator=torch.Generator().manual_seed(9)
    )
    big = tuple(randn(1, 1, big_L, 2, seed=s, dtype=torch.float32) for s in (520, 521, 522))
    return [
        Probe(
            "layout grid L=13, block=2, window=1, n_global=1, r=2",
            MASK,
            grid_args,
            params=_params(GRID_L, GRID_BLOCK, 1, 1),
            grid="mask",
            name_zh="布局网格 L=13, block=2, window=1, n_global=1, r=2",
        ),
        Probe(
            "attention grid L=13, block=2, window=1, n_global=1, r=2 (q = k = 0, V = I)",
            ATTN,
            (zeros, zeros.clone(), eye, *grid_args[1:]),
            params=_params(GRID_L, GRID_BLOCK, 1, 1),
            grid="weights",
            name_zh="注意力网格 L=13, block=2, window=1, n_global=1, r=2（q = k = 0，V = I）",
        ),
        Probe(
            "mask L=10, block=2, window=0, n_global=2, r=1",
            MASK,
            (10, 2, 0, 2, rand10),
            params=_params(10, 2, 0, 2),
            name_zh="掩码 L=10, block=2, window=0, n_global=2, r=1",
        ),
        Probe(
            "mask L=15, block=4, window=0, n_global=0, no random",
            MASK,
            (15, 4, 0, 0, None),
            params=_params(15, 4, 0, 0),
            name_zh="掩码 L=15, block=4, window=0, n_global=0，无随机块",
        ),
        Probe(
            "attention L=13, block=2, window=1, n_global=1, r=2",
            ATTN,
            (*_qkv(501, GRID_L), *grid_args[1:]),
            params=_params(GRID_L, GRID_BLOCK, 1, 1),
            repeat=True,
            name_zh="注意力 L=13, block=2, window=1, n_global=1, r=2",
        ),
        Probe(
            "attention L=10, block=2, window=0, n_global=2, r=1",
            ATTN,
            (*_qkv(504, 10), 2, 0, 2, rand10),
            params=_params(10, 2, 0, 2),
            name_zh="注意力 L=10, block=2, window=0, n_global=2, r=1",
        ),
        Probe(
            "attention L=15, block=4, window=0, no global, no random",
            ATTN,
            (*_qkv(507, 15), 4, 0, 0, None),
            params=_params(15, 4, 0, 0),
            name_zh="注意力 L=15, block=4, window=0，无全局块，无随机块",
        ),
        Probe(
            f"memory: L = {big_L}, block = {big_block}, window = 1, n_global = 1, r = 2",
            ATTN,
            (*big, big_block, 1, 1, big_rb),
            params={**_params(big_L, big_block, 1, 1), "S": big_L, "d": 2},
            dtype=torch.float32,
            budget=("materializes-full-scores", big_L * big_L // 2),
            name_zh=f"内存：L = {big_L}，block = {big_block}，window = 1，n_global = 1，r = 2",
        ),
    ]


def alternatives(probe: Probe) -> list[Probe]:
    """For code that cannot take a random block naming the short last block, a short last
    block at all (L not a multiple of the block), or window = 0: the same layout with such
    random blocks moved into the whole blocks, the sequence cut to whole blocks, then
    window = 1."""
    if probe.budget is not None:
        return []
    at = (
        0 if probe.entry == MASK else 3
    )  # where (block, window, n_global, random_blocks) start, less L
    args = list(probe.args)
    L = args[0] if probe.entry == MASK else args[0].shape[-2]
    block, rb = args[at + 1 if probe.entry == MASK else at], args[-1]
    whole = L // block
    forms = []
    if rb is not None and whole and bool((rb >= whole).any()):
        args[-1] = rb % whole
        forms.append(
            replace(
                probe,
                args=tuple(args),
                name=f"{probe.name} (random blocks in whole blocks)",
                name_zh=f"{probe.name_zh}（随机块都在完整块内）",
                repeat=False,
            )
        )
    if L % block and whole:
        forms.append(_whole_blocks(probe, whole * block, block))
    w_at = at + 2 if probe.entry == MASK else at + 1
    if args[w_at] == 0:
        args[w_at] = 1
        forms.append(
            replace(
                probe,
                args=tuple(args),
                name=f"{probe.name} (window = 1)",
                name_zh=f"{probe.name_zh}（window = 1）",
                repeat=False,
            )
        )
    return forms


def _whole_blocks(probe: Probe, L: int, block: int) -> Probe:
    """The probe with the sequence cut to its first L tokens (whole blocks only): random
    blocks kept for the blocks left, wrapped into them; V = I grids cut with it."""
    args = list(probe.args)
    rb = args[-1]
    if rb is not None:
        args[-1] = rb[: L // block] % (L // block)
    if probe.entry == MASK:
        args[0] = L
    else:
        q, k, v = args[:3]
        v = v[..., :L, :L] if v.shape[-1] == v.shape[-2] else v[..., :L, :]
        args[:3] = [q[..., :L, :].contiguous(), k[..., :L, :].contiguous(), v.contiguous()]
    return replace(
        probe,
        args=tuple(args),
        name=f"{probe.name} (L = {L}, whole blocks)",
        name_zh=f"{probe.name_zh}（L = {L}，整块）",
        params={**probe.params, "L": L, "nb": L // block},
        repeat=False,
    )


GRID_CAPTION = {
    "en": f"rows = query tokens, columns = key tokens; blocks of {GRID_BLOCK} tokens, the last one short",
    "zh": f"行 = 查询 token，列 = 键 token；每块 {GRID_BLOCK} 个 token，最后一块较短",
}


def finding_data(
    mid: str, probes: list[Probe], observed: list[Any], subject: Any
) -> dict[str, Any]:
    """The layout grids are token grids: say so, and where the blocks are."""
    from attnkata.checker import mistakes

    return {"grid_caption": GRID_CAPTION} if mistakes.get(mid).grid and mid in MUTANTS else {}


REFERENCE = ref
