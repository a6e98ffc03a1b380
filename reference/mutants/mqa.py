"""Wrong variants of reference/mqa.py (see checker/diagnose/module_probes.py for the knobs).

One KV head: splitting it needs no transpose (view(B, L, 1, d) and view(B, 1, L, d) hold
the same values), so `split-heads-without-transpose` shows through the query heads only.
Self-attention (L == S): `causal-mask-top-left` cannot show here.
"""

from __future__ import annotations

from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.diagnose.module_probes import (
    FAMILY_CRAFTS,
    family_mutants,
    family_probes,
    seeded,
)
from attnkata.reference import mqa as ref

ENTRY = "MultiQueryAttention"
B, L, H, HD = 2, 5, 4, 6
D = H * HD


class REFERENCE:
    MultiQueryAttention = seeded(ref.MultiQueryAttention, FAMILY_CRAFTS)


MUTANTS = family_mutants(ref.MultiQueryAttention, lambda m: 1)


def probes() -> list[Probe]:
    # The grid probe has one head: only then is the single value head as wide as the sequence.
    return family_probes(
        ENTRY,
        B=B,
        L=L,
        H=H,
        d=HD,
        Hkv=1,
        init=((D, H), {}),
        grid_init=((6, 1), {}),
        grid_sizes={"L": 6, "S": 6, "D": 6, "H": 1, "d": 6},
    )
