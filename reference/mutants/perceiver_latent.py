"""Wrong variants of reference/perceiver_latent.py: queries from the input instead of the
latents, the padding mask on the wrong axis, and the attention mistakes shared with MHA (see
checker/diagnose/module_probes.py).

Sizes: S = 9 tokens, N = 5 latents, H = 4 heads, B = 2, so a padding mask put on the latent
axis, the head axis or the batch axis fails to broadcast; the probe with S = N = 5 and B = H
= 4 lets those spellings run and shows what they hide instead. No causal mask here.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.diagnose.module_probes import (
    FAMILY_MISTAKES,
    GRID_SEED,
    Knobs,
    core,
    eye_,
    merge_heads,
    one_hot_inputs,
    remakeable,
    seeded,
    split_heads,
)
from attnkata.checker.probes import randn
from attnkata.reference import perceiver_latent as ref

ENTRY = "PerceiverLatentAttention"
B, S, D, H, N = 2, 9, 16, 4, 5
HD = D // H


def craft_grid(m: nn.Module) -> None:
    """q = k = 0 (every real token scores the same), V = I, W_o = I, no biases: with one-hot
    tokens (D = S) each latent's output row is its attention weights over the tokens."""
    for p in m.parameters():
        p.zero_()
    eye_(m.v_proj.weight)
    eye_(m.o_proj.weight)


class REFERENCE:
    PerceiverLatentAttention = seeded(ref.PerceiverLatentAttention, craft_grid)


def padding_layout(mask: torch.Tensor, axis: str) -> torch.Tensor:
    """The (B, S) "real token" mask shaped for the (B, H, N, S) scores: on the keys (right),
    on the latents, between batch and heads (`unsqueeze(1)`), or left as (B, S)."""
    return {
        "keys": lambda: mask[:, None, None, :],
        "latents": lambda: mask[:, None, :, None],
        "heads": lambda: mask.unsqueeze(1),
        "flat": lambda: mask,
    }[axis]()


def perceiver_forward(
    m: nn.Module,
    knobs: Knobs,
    extra: dict[str, Any],
    x: torch.Tensor,
    key_padding_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """reference/perceiver_latent.py's forward with the knobs' mistakes; `extra` holds the
    Perceiver-only ones: queries ("latents" or "input") and axis (see `padding_layout`)."""
    Bx, Sx, Dx = x.shape
    Nl, Hh, d = m.n_latents, m.n_heads, m.head_dim
    from_input = extra.get("queries", "latents") == "input"
    if from_input:
        q = split_heads(m.q_proj(x), Bx, Sx, Hh, d, knobs.split)  # (B, H, S, d)
    else:
        q = m.q_proj(m.latents)  # (N, E)
        q = q.view(Hh, Nl, d) if knobs.split == "flat" else q.view(Nl, Hh, d).transpose(0, 1)
    k = split_heads(m.k_proj(x), Bx, Sx, Hh, d, knobs.split)
    v = split_heads(m.v_proj(x), Bx, Sx, Hh, d, knobs.split)
    mask = (
        None
        if key_padding_mask is None
        else padding_layout(key_padding_mask, extra.get("axis", "keys"))
    )
    scale = {
        "d": 1 / math.sqrt(d),
        "D": 1 / math.sqrt(m.latent_dim),
        "d_model": 1 / math.sqrt(Dx),
        "none": 1.0,
        "not-sqrt": 1 / d,
        "inverted": math.sqrt(d),
    }[knobs.scale]
    y = core(q, k, v, scale, mask, None, knobs)  # (B, H, N or S, d)
    y = merge_heads(y, Bx, Sx if from_input else Nl, knobs.merge)
    return m.o_proj(y) if knobs.out_proj else y


def variant(extra: dict[str, Any] | None = None, **changes: Any) -> type[nn.Module]:
    knobs = replace(Knobs(), **changes)
    more = dict(extra or {})

    class Variant(ref.PerceiverLatentAttention):
        def forward(
            self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None
        ) -> torch.Tensor:
            return perceiver_forward(self, knobs, more, x, key_padding_mask)

    label = ", ".join([knobs.label(), *(f"{k}={v!r}" for k, v in more.items())])
    Variant.__name__ = Variant.__qualname__ = f"{ENTRY}[{label}]"
    return remakeable(Variant, {**changes, "extra": more} if more else changes, (_remake,))


def _remake(**knobs: Any) -> type[nn.Module]:
    return variant(knobs.pop("extra", None), **knobs)


# No causal mask here, and the Perceiver has its own spellings of these.
_OWN = (
    "padding-mask-wrong-axis",
    "scale-by-d-model",
    "mask-ignored",
    "causal-mask-inverted",
    "causal-mask-excludes-diagonal",
    "causal-mask-leaks-future",
)
MUTANTS: dict[str, list[type[nn.Module]]] = {
    "latent-queries-from-input": [variant({"queries": "input"})],
    "padding-mask-wrong-axis": [variant({"axis": axis}) for axis in ("latents", "heads", "flat")],
    "scale-by-d-model": [variant(scale="D"), variant(scale="d_model")],
    "mask-ignored": [variant(mask="ignored")],
    **{
        mid: [variant(**knobs) for knobs in variants]
        for mid, variants in FAMILY_MISTAKES.items()
        if mid not in _OWN
    },
}


def _lengths_mask(lengths: list[int], s: int) -> torch.Tensor:
    return torch.arange(s)[None, :] < torch.tensor(lengths)[:, None]  # (B, S), True = real token


def probes() -> list[Probe]:
    sizes: dict[str, Any] = {"B": B, "L": N, "S": S, "H": H, "d": HD, "D": D}
    init: tuple[tuple, dict[str, Any]] = ((D, H, N), {})

    def probe(name: str, x: torch.Tensor, mask: torch.Tensor | None = None, **more: Any) -> Probe:
        kwargs = {} if mask is None else {"key_padding_mask": mask}
        return Probe(
            name,
            ENTRY,
            (x,),
            kwargs,
            params=more.pop("params", sizes),
            init=more.pop("init", init),
            seed=more.pop("seed", 7),
            **more,
        )

    g = torch.Generator().manual_seed(501)
    scattered = torch.rand(B, S, generator=g) < 0.5
    scattered[:, 0], scattered[:, -1] = True, False  # every row has real tokens and padding
    other = {**sizes, "B": 4, "L": 5, "S": 5}
    return [
        probe("no padding", randn(B, S, D, seed=601), repeat=True),
        probe("padding, lengths [9, 4]", randn(B, S, D, seed=602), _lengths_mask([9, 4], S)),
        probe("scattered padding", randn(B, S, D, seed=603), scattered),
        probe(
            "a fully padded row, lengths [0, 6]", randn(B, S, D, seed=604), _lengths_mask([0, 6], S)
        ),
        probe(
            "gradient w.r.t. x, lengths [4, 0]",
            randn(B, S, D, seed=609),
            _lengths_mask([4, 0], S),
            grad=((0,), randn(B, N, D, seed=610)),
        ),
        probe(
            "large logits (float32, x * 400)",
            randn(B, S, D, seed=605, scale=400.0).float(),
            dtype=torch.float32,
        ),
        probe(
            "float32, lengths [5, 8]",
            randn(B, S, D, seed=606).float(),
            _lengths_mask([5, 8], S),
            dtype=torch.float32,
        ),
        probe(
            "latent_dim 24 != d_model 16, lengths [3, 9]",
            randn(B, S, D, seed=607),
            _lengths_mask([3, 9], S),
            init=((D, H, N, 24), {}),
            params={**sizes, "D": 24, "d": 6},
        ),
        probe(
            "S = N = 5 tokens, B = H = 4, lengths [5, 2, 4, 1]",
            randn(4, 5, D, seed=608),
            _lengths_mask([5, 2, 4, 1], 5),
            params=other,
        ),
        probe(
            "mask grid (q = k = 0, V = I): scattered padding, then a fully padded row",
            one_hot_inputs(2, 6, 6),
            torch.tensor([[True, False, True, True, False, True], [False] * 6]),
            init=((6, 2, 4), {}),
            seed=GRID_SEED,
            grid="weights",
            params={**sizes, "B": 2, "L": 4, "S": 6, "D": 6, "H": 2, "d": 3},
        ),
    ]
