"""Inputs laid out in memory as a grader asks: the wire (wire.py) carries values only, always
contiguous, so a call that must see a transposed or padded view says so (`layouts`) and the
values are arranged again where the code runs: in the candidate's process (child.py) and,
for our own code, in the grading process (the diagnosis' mutants, a replayed grader).

A layout is a string, composed with "+":
- "pad:N": the last dimension padded by N unused elements (its rows' stride = size + N);
- "swap:i,j": stored with dims i and j exchanged and seen through a transpose (q laid out
  (B, L, H, d) and viewed as (B, H, L, d); "swap:0,1" of an (N, C) tensor is column-major);
- "offset:N": N unused elements before the first one.
Unused elements hold NaN.
"""

from __future__ import annotations

import math
from typing import Any

import torch


def arrange(t: torch.Tensor, spec: str) -> torch.Tensor:
    """`t`'s values in the layout `spec` (a view of a fresh buffer)."""
    out = t
    for part in spec.split("+"):
        kind, _, arg = part.partition(":")
        if kind == "pad":
            n = int(arg)
            buf = torch.full(
                (*out.shape[:-1], out.shape[-1] + n), math.nan, dtype=out.dtype, device=out.device
            )
            buf[..., : out.shape[-1]] = out
            out = buf[..., : out.shape[-1]]
        elif kind == "swap":
            i, j = (int(x) for x in arg.split(","))
            out = out.transpose(i, j).contiguous().transpose(i, j)
        elif kind == "offset":
            n = int(arg)
            buf = torch.full((out.numel() + n,), math.nan, dtype=out.dtype, device=out.device)
            view = buf[n:].view(out.shape)
            view.copy_(out)
            out = view
        else:
            raise ValueError(f"unknown layout {part!r}")
    return out


def apply(args: list[Any], kwargs: dict[str, Any], layouts: Any) -> None:
    """Arrange, in place in `args`/`kwargs`, the tensors `layouts` names: {"0": spec} for a
    positional argument, {"name": spec} for a keyword one."""
    if not layouts:
        return
    for key, spec in dict(layouts).items():
        key = str(key)
        if key.isdigit() and int(key) < len(args) and isinstance(args[int(key)], torch.Tensor):
            args[int(key)] = arrange(args[int(key)], str(spec))
        elif isinstance(kwargs.get(key), torch.Tensor):
            kwargs[key] = arrange(kwargs[key], str(spec))


def normal(layouts: dict[Any, str] | None) -> dict[str, str] | None:
    """`layouts` as it travels: string keys (JSON's), or None when there are none."""
    return {str(k): str(v) for k, v in layouts.items()} if layouts else None
