"""Wrong variants of reference/causal_mask.py: the classic triangle and padding mistakes,
each in the spellings candidates actually write (triangles and position comparisons)."""

from __future__ import annotations

import torch

from attnkata.checker.diagnose.inputs import Probe
from attnkata.reference import causal_mask as ref


def _ones(L: int, S: int, device: torch.device | str | None) -> torch.Tensor:
    return torch.ones(L, S, dtype=torch.bool, device=device)


def _causal(offset: int, *, upper: bool = False, complement: bool = False):  # noqa: ANN202
    """tril (or triu) with diagonal = S - L + offset; `complement` returns the blocked part."""

    def causal_mask(
        L: int, S: int | None = None, device: torch.device | str | None = None
    ) -> torch.Tensor:
        S = L if S is None else S
        tri = (
            _ones(L, S, device).triu(S - L + offset)
            if upper
            else _ones(L, S, device).tril(S - L + offset)
        )
        return ~tri if complement else tri

    return causal_mask


def _top_left(reversed_offset: bool = False):  # noqa: ANN202
    """No offset at all (top-left), or the offset with the wrong sign (L - S)."""

    def causal_mask(
        L: int, S: int | None = None, device: torch.device | str | None = None
    ) -> torch.Tensor:
        S = L if S is None else S
        return _ones(L, S, device).tril(L - S if reversed_offset else 0)

    return causal_mask


def _padding(layout: str, flipped: bool = False):  # noqa: ANN202
    def padding_mask(lengths: torch.Tensor, S: int) -> torch.Tensor:
        B = lengths.shape[0]
        keep = torch.arange(S, device=lengths.device)[None, :] < lengths[:, None]  # (B, S)
        if flipped:
            keep = ~keep
        if layout == "B,1,1,S":
            return keep.view(B, 1, 1, S)
        if layout == "B,1,S,1":
            return keep.view(B, 1, S, 1)
        if layout == "1,B,1,S":
            return keep.view(1, B, 1, S)
        return keep  # "B,S": broadcasts against the query axis of (B, H, L, S)

    return padding_mask


MUTANTS = {
    # The blocked part returned (j > p), or triu with the diagonal kept.
    "causal-mask-inverted": [
        {"causal_mask": _causal(1, upper=True)},
        {"causal_mask": _causal(0, upper=True)},
        {"causal_mask": _causal(0, complement=True)},
    ],
    "causal-mask-excludes-diagonal": [{"causal_mask": _causal(-1)}],
    "causal-mask-leaks-future": [{"causal_mask": _causal(1)}],
    "causal-mask-top-left": [
        {"causal_mask": _top_left()},
        {"causal_mask": _top_left(reversed_offset=True)},
    ],
    "mask-polarity-flipped": [{"padding_mask": _padding("B,1,1,S", flipped=True)}],
    "padding-mask-wrong-axis": [
        {"padding_mask": _padding(layout)} for layout in ("B,1,S,1", "B,S", "1,B,1,S")
    ],
}


def probes() -> list[Probe]:
    return [
        Probe(
            "causal L = S = 6",
            "causal_mask",
            (6, 6),
            params={"L": 6, "S": 6},
            grid="mask",
            name_zh="因果 L = S = 6",
        ),
        Probe(
            "causal with a KV cache, L = 3, S = 8",
            "causal_mask",
            (3, 8),
            params={"L": 3, "S": 8},
            grid="mask",
            name_zh="带 KV cache 的因果 L = 3, S = 8",
        ),
        Probe(
            "causal, S left out (L = 5)",
            "causal_mask",
            (5,),
            params={"L": 5, "S": 5},
            name_zh="因果，省略 S（L = 5）",
        ),
        Probe(
            "causal, more queries than keys (L = 6, S = 4)",
            "causal_mask",
            (6, 4),
            params={"L": 6, "S": 4},
            name_zh="因果，查询多于键（L = 6, S = 4）",
        ),
        Probe(
            "padding, lengths [5, 2, 7, 3], S = 7",
            "padding_mask",
            (torch.tensor([5, 2, 7, 3]), 7),
            params={"B": 4, "S": 7},
            grid="mask",
            name_zh="padding，lengths [5, 2, 7, 3]，S = 7",
        ),
        Probe(
            "padding, lengths [0, 6, 3] (int32), S = 6",
            "padding_mask",
            (torch.tensor([0, 6, 3], dtype=torch.int32), 6),
            params={"B": 3, "S": 6},
            name_zh="padding，lengths [0, 6, 3]（int32），S = 6",
        ),
    ]


REFERENCE = ref
