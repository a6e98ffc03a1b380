"""Diagnosis probes: inputs built to tell catalogued mistakes apart (see
/work/shared/attention-facts.md, "Inputs that make mistakes visible").

A `Probe` is one call: which entry point, which arguments, which sizes the explanations may
quote, and what the output means (e.g. `grid="weights"`: V is the identity, so output row i
is query i's attention weights and can be drawn as a mask). The builders here are shared by
the katas' `reference/mutants/<kata>.py` modules.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from attnkata.checker.probes import causal, randn


@dataclass
class Probe:
    """One diagnosis call.

    name: shown in evidence ("fully masked rows"); name_zh: the same in Chinese.
    entry: the function (function katas) or class (module katas) it calls.
    args/kwargs: the call's arguments (module katas: of forward).
    params: sizes quoted in explanations (d, D, H, Hkv, L, S, W, scale...).
    init: module katas only: (args, kwargs) of the constructor; the reference is built with
        torch.manual_seed(seed) and its weights are loaded into the candidate's module.
    grid: "weights" (the output's last two dims are attention weights: V = identity) or
        "mask" (the output is a boolean mask): drawn for mask mistakes.
    grad: (wrt, grad_output): compare the gradients w.r.t. args[wrt] instead of the output.
    repeat: call twice; a different second output means nondeterminism (dropout in eval).
    budget: (mistake id, elements): the candidate's largest intermediate tensor must stay
        below `elements` (e.g. no L x S scores in a sliding window).
    layouts: {argument position or name: layout}: inputs given as strided views
        (checker/sandbox/layouts.py), to the candidate, the reference and the mutants alike.
    """

    name: str
    entry: str
    args: tuple = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    init: tuple[tuple, dict[str, Any]] | None = None
    seed: int = 0
    dtype: torch.dtype = torch.float64
    grid: str | None = None
    grad: tuple[tuple[int, ...], Any] | None = None
    repeat: bool = False
    budget: tuple[str, int] | None = None
    name_zh: str = ""  # the name in Chinese evidence (else `name`)
    layouts: dict[Any, str] | None = None


def strict_mask(*shape: int, seed: int, p: float = 0.5) -> torch.Tensor:
    """Bool mask where every row has at least one True and at least one False key.

    No row is all True, so a flipped mask never produces an empty row by accident (which
    would mix two mistakes' signatures); no row is all False unless a probe empties it."""
    g = torch.Generator().manual_seed(seed)
    m = torch.rand(*shape, generator=g) < p
    S = shape[-1]
    keep = torch.randint(0, S, shape[:-1], generator=g)
    drop = (keep + 1 + torch.randint(0, S - 1, shape[:-1], generator=g)) % S
    m.scatter_(-1, keep.unsqueeze(-1), True)
    m.scatter_(-1, drop.unsqueeze(-1), False)
    return m


def with_empty_rows(mask: torch.Tensor, rows: list[tuple[int, ...]]) -> torch.Tensor:
    """A copy of `mask` with the given (leading index..., query) rows fully masked."""
    mask = mask.clone()
    for r in rows:
        mask[r] = False
    return mask


def _np(x: Any) -> Any:
    return x.numpy() if isinstance(x, torch.Tensor) else x


def attention_probes(entry: str, *, numpy: bool = False) -> list[Probe]:
    """Probes for a function `entry(q, k, v, mask=None, scale=None)` over (..., L|S, d) inputs.

    Sizes are pairwise different (B=2, H=3, L=5, S=7, d=8, dv=6): 1/d, 1/sqrt(d), 1 and
    sqrt(d) are all distinct; softmax over any dim but the last changes the result; a 2-D
    probe passes the `.T` mistake and the batched ones expose it."""
    B, H, L, S, d, dv = 2, 3, 5, 7, 8, 6
    sizes = {"B": B, "H": H, "L": L, "S": S, "d": d, "dv": dv}

    def qkv(seed: int, lead: tuple[int, ...] = (B, H), scale: float = 1.0) -> tuple:
        return (
            randn(*lead, L, d, seed=seed, scale=scale),
            randn(*lead, S, d, seed=seed + 1, scale=scale),
            randn(*lead, S, dv, seed=seed + 2),
        )

    mask = strict_mask(B, 1, L, S, seed=101)
    flat_mask = with_empty_rows(strict_mask(L, S, seed=105), [(3,)])
    square = with_empty_rows(strict_mask(B, 1, S, S, seed=106), [(1, 0, 4)])
    empty = with_empty_rows(strict_mask(B, 1, L, S, seed=102), [(0, 0, 2), (1, 0, 0)])
    # q = k = 0 makes every allowed score equal, and V = I turns each output row into the
    # attention weights of one query: the output *is* the effective mask, drawn as a grid.
    grid_mask = with_empty_rows(causal(L, S) & strict_mask(L, S, seed=103, p=0.7), [(1,)])
    grid_mask[-1, 0] = False  # the last query may not see key 0: the grid is not a plain triangle
    grid_q, grid_k = (
        torch.zeros(B, H, L, d, dtype=torch.float64),
        torch.zeros(B, H, S, d, dtype=torch.float64),
    )
    grid_v = torch.eye(S, dtype=torch.float64).expand(B, H, S, S).clone()

    probes = [
        Probe("no mask", entry, qkv(201), params=sizes, repeat=True, name_zh="无 mask"),
        Probe(
            "2-D inputs (L, d)", entry, qkv(202, lead=()), params=sizes, name_zh="二维输入 (L, d)"
        ),
        Probe(
            "3-D inputs (B, L, d)",
            entry,
            qkv(203, lead=(4,)),
            params=sizes,
            name_zh="三维输入 (B, L, d)",
        ),
        # Code written for single (L, d) matrices raises on every batched probe: this one still
        # shows its mask and empty-row mistakes.
        Probe(
            "2-D inputs with an (L, S) mask and an empty row",
            entry,
            qkv(211, lead=()),
            {"mask": flat_mask},
            params=sizes,
            name_zh="二维输入，(L, S) mask，含一个空行",
        ),
        Probe(
            "random mask (B, 1, L, S)",
            entry,
            qkv(204),
            {"mask": mask},
            params=sizes,
            name_zh="随机 mask (B, 1, L, S)",
        ),
        # Code written for self-attention (an (L, L) mask, a causal triangle) only runs here.
        Probe(
            "L = S = 7, random mask with an empty row",
            entry,
            (randn(B, H, S, d, seed=212), *qkv(213)[1:]),
            {"mask": square},
            params={**sizes, "L": S},
            name_zh="L = S = 7，随机 mask，含一个空行",
        ),
        Probe(
            "fully masked rows",
            entry,
            qkv(205),
            {"mask": empty},
            params=sizes,
            name_zh="整行被遮掩",
        ),
        Probe(
            "large logits (~1e4)",
            entry,
            qkv(206, scale=60.0),
            {"mask": mask},
            params=sizes,
            name_zh="大 logits（约 1e4）",
        ),
        Probe(
            "explicit scale=0.3",
            entry,
            qkv(207),
            {"scale": 0.3},
            params={**sizes, "scale": 0.3},
            name_zh="显式 scale=0.3",
        ),
        Probe(
            "float32 inputs",
            entry,
            tuple(t.float() for t in qkv(208)),
            {"mask": mask},
            params=sizes,
            dtype=torch.float32,
            name_zh="float32 输入",
        ),
        Probe(
            "mask grid (q = k = 0, V = I)",
            entry,
            (grid_q, grid_k, grid_v),
            {"mask": grid_mask},
            params=sizes,
            grid="weights",
            name_zh="mask 网格（q = k = 0，V = I）",
        ),
    ]
    if numpy:
        for p in probes:
            p.args = tuple(_np(a) for a in p.args)
            p.kwargs = {k: _np(v) for k, v in p.kwargs.items()}
    else:
        grad_mask = with_empty_rows(strict_mask(B, 1, L, S, seed=104), [(0, 0, 1), (1, 0, 3)])
        probes.append(
            Probe(
                "gradients with fully masked rows",
                entry,
                qkv(209),
                {"mask": grad_mask},
                params=sizes,
                grad=((0, 1, 2), randn(B, H, L, dv, seed=210)),
                name_zh="含整行遮掩时的梯度",
            )
        )
    return probes


def grid_of(value: Any, kind: str, limit: int = 16) -> list[list[int | None]] | None:
    """The 2-D picture of which key each query could attend, from a probe's output.

    kind "mask": the output is a mask; "weights": the output's rows are attention weights.
    Leading dims are dropped by taking index 0 (after squeezing size-1 dims). Cells: 1 may
    attend, 0 may not, None = NaN. None when the value is not an array. A tuple output
    (FlashAttention's (out, lse)) is drawn from its first part."""
    if isinstance(value, tuple | list) and value:
        value = value[0]
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(np.ascontiguousarray(value))
    if not isinstance(value, torch.Tensor) or value.dim() < 1:
        return None
    t = value.detach().cpu()
    while t.dim() > 2 and t.shape[0] == 1:
        t = t[0]
    squeezed = t.squeeze() if t.dim() > 2 else t
    t = squeezed if squeezed.dim() >= 2 else t
    while t.dim() > 2:
        t = t[0]
    if t.dim() == 1:
        t = t.unsqueeze(0)
    t = t[:limit, :limit]
    if t.dtype == torch.bool:
        return [[int(x) for x in row] for row in t.tolist()]
    t = t.to(torch.float64)
    out: list[list[int | None]] = []
    for row in t.tolist():
        out.append([None if x != x else int(abs(x) > 1e-9) for x in row])
    return out


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.dtype == torch.float64 else value
    if isinstance(value, tuple | list):
        return type(value)(_cast(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, dtype) for k, v in value.items()}
    return value


def as_float32(probe: Probe) -> Probe:
    """The same probe with its float64 inputs in float32: for code that only takes float32
    (or float16) and would otherwise leave nothing to judge."""
    grad = (probe.grad[0], _cast(probe.grad[1], torch.float32)) if probe.grad is not None else None
    return replace(
        probe,
        name=f"{probe.name} (float32)",
        name_zh=f"{probe.name_zh or probe.name}（float32）",
        args=_cast(probe.args, torch.float32),
        kwargs=_cast(probe.kwargs, torch.float32),
        dtype=torch.float32,
        grad=grad,
        repeat=False,
    )


def resized(
    probe: Probe,
    *,
    L: int | None = None,
    S: int | None = None,
    dv: int | None = None,
    label: str,
    label_zh: str,
) -> Probe:
    """A probe of a function `entry(q, k, v, mask=..., ...)` over (..., L|S, d) inputs cut to
    L queries and S keys (the mask with them) and with dv = `dv` value columns (repeated
    from the first ones): the form of a probe for code that only takes, e.g., dv == d or L a
    multiple of the tile."""
    q, k, v, *rest = probe.args
    L = L or q.shape[-2]
    S = S or k.shape[-2]
    q, k, v = q[..., :L, :], k[..., :S, :], v[..., :S, :]
    if dv is not None and dv != v.shape[-1]:
        reps = -(-dv // v.shape[-1])
        v = torch.cat([v] + [v * (0.5 + r) for r in range(1, reps)], dim=-1)[..., :dv]
    kwargs = dict(probe.kwargs)
    if isinstance(kwargs.get("mask"), torch.Tensor):
        kwargs["mask"] = kwargs["mask"][..., :L, :S]
    params = {**probe.params, "L": L, "S": S, **({"dv": dv} if dv is not None else {})}
    return replace(
        probe,
        name=f"{probe.name} ({label})",
        name_zh=f"{probe.name_zh or probe.name}（{label_zh}）",
        args=(q.contiguous(), k.contiguous(), v.contiguous(), *rest),
        kwargs=kwargs,
        params=params,
        repeat=False,
    )
