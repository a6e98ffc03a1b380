"""Wrong variants of reference/gqa.py (see checker/diagnose/module_probes.py for the knobs).

Sizes: H = 6 query heads, Hkv = 2 KV heads (g = 3), so `repeat` (query head h reads KV head
h % 2) and `repeat_interleave` (h // 3) differ on four of the six heads.
"""

from __future__ import annotations

from typing import Any

from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.diagnose.module_probes import (
    FAMILY_CRAFTS,
    family_mutants,
    family_probes,
    kv_head_map,
    seeded,
)
from attnkata.reference import gqa as ref

ENTRY = "GroupedQueryAttention"
B, L, H, HKV, HD = 4, 5, 6, 2, 4
D = H * HD
HEAD_MAP_PROBE = "no mask"


class REFERENCE:
    GroupedQueryAttention = seeded(ref.GroupedQueryAttention, FAMILY_CRAFTS)


MUTANTS = family_mutants(
    ref.GroupedQueryAttention,
    lambda m: m.n_kv_heads,
    extra={
        "kv-repeat-instead-of-interleave": [
            {"kv_order": order} for order in ("repeat", "repeat-k", "repeat-v")
        ]
    },
)


def probes() -> list[Probe]:
    # The grid probe has Hkv = H: only then do the value heads together span the sequence.
    return family_probes(
        ENTRY,
        B=B,
        L=L,
        H=H,
        d=HD,
        Hkv=HKV,
        init=((D, H, HKV), {}),
        grid_init=((6, 2, 2), {}),
        grid_sizes={"L": 6, "S": 6, "D": 6, "H": 2, "Hkv": 2, "d": 3},
    )


def finding_data(
    mid: str, probes: list[Probe], observed: list[Any], subject: Any
) -> dict[str, Any]:
    """The KV head each query head read (`head_map_got`) against the contract's h // g."""
    if mid != "kv-repeat-instead-of-interleave":
        return {}
    for p, o in zip(probes, observed, strict=False):
        if p.name == HEAD_MAP_PROBE and o.ok:
            got = kv_head_map(subject.reference_module(p), p.args[0], o.value)
            if got is None:
                return {}
            g = H // HKV
            return {
                "head_map_expected": [h // g for h in range(H)],
                "head_map_got": got,
                "head_map_probe": p.name,
            }
    return {}
