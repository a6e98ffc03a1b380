"""Wrong variants of reference/mha.py (see checker/diagnose/module_probes.py for the knobs).

Self-attention only: L == S, so a top-left causal mask equals the bottom-right one here and
`causal-mask-top-left` cannot show (it shows in the causal-mask and sliding-window katas).
"""

from __future__ import annotations

from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.diagnose.module_probes import (
    FAMILY_CRAFTS,
    family_mutants,
    family_probes,
    seeded,
)
from attnkata.reference import mha as ref

ENTRY = "MultiHeadAttention"
B, L, H, HD = 2, 5, 3, 8
D = H * HD


class REFERENCE:
    MultiHeadAttention = seeded(ref.MultiHeadAttention, FAMILY_CRAFTS)


MUTANTS = family_mutants(ref.MultiHeadAttention, lambda m: m.n_heads)


def probes() -> list[Probe]:
    return family_probes(
        ENTRY,
        B=B,
        L=L,
        H=H,
        d=HD,
        init=((D, H), {}),
        grid_init=((6, 2), {}),
        grid_sizes={"L": 6, "S": 6, "D": 6, "H": 2, "d": 3},
    )
