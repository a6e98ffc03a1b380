"""Diagnosis building blocks shared by the module katas (mha, mqa, gqa, mla, perceiver-latent).

- `seeded(cls, crafts)`: the reference class with weights drawn like the graders'
  (`weights.seeded_`) from the seed the probe sets (read back with `torch.initial_seed()`),
  so logits are O(1) and scale and mask mistakes show (PyTorch's default init gives a nearly
  uniform softmax that hides them). Two probe seeds get crafted weights on top: GRID_SEED
  turns the output into the attention weights (q = k = 0, V = I, W_o = I) for the mask grid,
  LARGE_SEED makes every row's own score huge (q = k = x[..., :d]) for the overflow probe.
- `Knobs` and `core`: the attention core of every module kata with one knob per catalogued
  mistake (all knobs at their defaults = the reference); the katas' mutants are the
  reference modules with one knob turned.
- `family_variant`: MHA / MQA / GQA mutants (one forward for all three: Hkv = H, 1 or n_kv_heads).
- `family_probes`: the probes of those three katas.
- `kv_head_map`: which KV head each query head of a GQA module read, derived from its output
  (the head map that `kv-repeat-instead-of-interleave` shows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

import torch
from torch import nn

from attnkata.checker.diagnose.inputs import Probe, strict_mask, with_empty_rows
from attnkata.checker.probes import randn
from attnkata.checker.weights import seeded_

INF = float("inf")
# Probe seeds whose reference gets crafted weights on top of the seeded ones (see `seeded`).
GRID_SEED = 9000  # the output is the attention weights (the mask grid)
LARGE_SEED = 9001  # every query's own key scores |x_i|^2 / sqrt(d): huge logits in every row


def seeded(cls: type[nn.Module], crafts: Any = None) -> type[nn.Module]:
    """`cls` whose constructor re-initialises every parameter from the seed the diagnosis set
    just before building the reference (`torch.manual_seed(probe.seed)`), as the graders do;
    `crafts` ({seed: craft}, or one craft for GRID_SEED) then sets special probes' weights."""
    table = (
        crafts if isinstance(crafts, dict) else ({GRID_SEED: crafts} if crafts is not None else {})
    )

    class Seeded(cls):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            seed = torch.initial_seed()
            seeded_(self, seed)
            if seed in table:
                with torch.no_grad():
                    table[seed](self)

    Seeded.__name__ = Seeded.__qualname__ = cls.__name__
    Seeded.__module__ = cls.__module__
    return Seeded


def eye_(weight: torch.Tensor) -> None:
    """A (possibly rectangular) identity: output feature i reads input feature i."""
    weight.copy_(torch.eye(*weight.shape, dtype=weight.dtype))


def craft_identity_values(m: nn.Module) -> None:
    """q = k = 0 (every allowed key scores the same), V = I and W_o = I, no biases: with one-hot
    inputs x[:, j] = e_j the output row of query i is its attention weights over the keys."""
    for p in m.parameters():
        p.zero_()
    eye_(m.v_proj.weight)
    eye_(m.o_proj.weight)


def craft_self_similar(m: nn.Module) -> None:
    """Every query head and every KV head reads the first head_dim features of x (q = k =
    x[..., :d], no bias): query i's score with its own key is |x_i[:d]|^2 / sqrt(d) > 0, so
    on a large x every row has a logit far above exp's range and any softmax that skips the
    max subtraction overflows in every row, whatever it does with its denominator."""
    for proj in (m.q_proj, m.k_proj):
        proj.weight.zero_()
        rows = torch.arange(proj.weight.shape[0])
        proj.weight[rows, rows % m.head_dim] = 1.0
        if proj.bias is not None:
            proj.bias.zero_()


def one_hot_inputs(B: int, L: int, D: int) -> torch.Tensor:
    """x[b, j] = e_j: token j carries feature j only (L <= D)."""
    return torch.eye(L, D, dtype=torch.float64).expand(B, L, D).clone()


# -- the attention core with its mistakes ---------------------------------------------------
@dataclass(frozen=True)
class Knobs:
    """One field per mistake; the defaults are the reference.

    split: "heads" (view(B, L, H, d).transpose(1, 2)) or "flat" (view(B, H, L, d) straight).
    merge: "heads" (transpose back, then reshape), "flat" (reshape without the transpose),
        "view" (transpose, then .view without .contiguous(): raises).
    out_proj: apply the output projection.
    kv_order: "interleave" (query head h reads KV head h // g) or "repeat" (h % Hkv);
        "repeat-k" / "repeat-v": only K (only V) expanded with "repeat".
    scale: a name the kata's forward maps to a number ("d" = the reference).
    softmax: "safe" (zeros for an empty row), "torch", "torch-guarded" (rows with no key
        set to 0 before torch.softmax and zeroed after it), "naive" (no max subtraction),
        "naive-guarded" (no max subtraction, empty rows guarded), "naive-global" (the whole
        tensor's max subtracted, guarded), "slot" (softmax over `dim`, the mask multiplied in
        ("exp-mul"), then divided by the sum over the keys, as Slot Attention does).
    dim: the softmax dim.
    fill: what masked scores are filled with (or, with "add-big", added): a number, "min"
        (torch.finfo of the scores' dtype) or "min32" (torch.finfo(torch.float32).min).
    softmax_dtype: None, or "float32": the softmax computed in float32 and cast back
        (HF's eager attention upcasts this way; in float64 code it is a downcast).
    mask: how the caller's mask is applied: "fill", "flipped" (the caller's mask negated),
        "flipped-all" (the combined mask negated), "flipped-ones" (the combined mask, built
        from all-True, negated: everything blocked without a mask), "ignored" (the caller's mask dropped),
        "ignored-all" (no mask at all), "after" (the combined mask multiplies the softmax
        output), "added" (the boolean mask added to the scores), "add-big" (`fill` added where
        masked), "exp-mul" / "exp-where" (no fill: the exponentials are multiplied by the
        mask or selected with torch.where; with the "naive" softmaxes), "add-inf" (an additive float mask of 0 / -inf), "transposed" (the caller's
        mask read as [key, query]).
    hide_nan: None, "nan_to_num" or "where": NaN rows computed, then hidden (with "add-inf"
        the NaN still reaches the gradients).
    unguarded: the "safe" and "naive-guarded" softmaxes divide by a sum that may be 0 (an
        empty row, or every exp underflowed): 0 / 0 = NaN. With "naive-guarded" it is the
        plain exp / sum, two mistakes (unstable-softmax and fully-masked-row-nan) at once.
    causal: the allowed part with is_causal: "tril" (j <= i), "tril-1" (j < i), "tril+1"
        (j <= i + 1), "triu+1" (j > i), "triu" (j >= i).
    """

    split: str = "heads"
    merge: str = "heads"
    out_proj: bool = True
    kv_order: str = "interleave"
    scale: str = "d"
    softmax: str = "safe"
    dim: int = -1
    fill: float | str = -INF
    softmax_dtype: str | None = None
    mask: str = "fill"
    causal: str = "tril"
    hide_nan: str | None = None
    unguarded: bool = False

    def label(self) -> str:
        changed = [
            f"{f.name}={getattr(self, f.name)!r}"
            for f in fields(self)
            if getattr(self, f.name) != f.default
        ]
        return ", ".join(changed) or "reference"


def causal_allowed(L: int, S: int, how: str, device: torch.device) -> torch.Tensor:
    """The "may attend" part of an (L, S) causal mask, bottom-right aligned, in one of the
    spellings of `Knobs.causal`."""
    ones = torch.ones(L, S, dtype=torch.bool, device=device)
    offset = S - L
    return {
        "tril": lambda: ones.tril(offset),
        "tril-1": lambda: ones.tril(offset - 1),
        "tril+1": lambda: ones.tril(offset + 1),
        "triu+1": lambda: ones.triu(offset + 1),
        "triu": lambda: ones.triu(offset),
    }[how]()


def _and(a: torch.Tensor | None, b: torch.Tensor | None) -> torch.Tensor | None:
    if a is None:
        return b
    return a if b is None else a & b


def fill_value(fill: float | str, dtype: torch.dtype) -> float:
    """A `Knobs.fill` as a number for scores of `dtype`."""
    if fill == "min":
        return torch.finfo(dtype).min
    if fill == "min32":
        return torch.finfo(torch.float32).min
    return float(fill)


def softmax(
    scores: torch.Tensor,
    how: str,
    dim: int,
    keep: torch.Tensor | None = None,
    keep_how: str = "",
    guard: bool = True,
) -> torch.Tensor:
    """`keep` (with keep_how "exp-mul" / "exp-where"): the mask applied to the exponentials
    of the naive softmaxes instead of to the scores. `guard`: a zero sum divides by 1."""
    if how == "slot":
        # Slot Attention's normalisation: softmax over the queries (`dim`), the mask multiplied
        # in, then a weighted mean over the keys.
        w = torch.softmax(scores, dim=dim)
        w = w * keep if keep is not None else w
        return w / (w.sum(dim=-1, keepdim=True) + 1e-8)
    if how == "naive-global":  # the whole tensor's max subtracted, not each row's: rows underflow
        finite = scores[scores.isfinite()]
        scores = scores - (finite.max() if finite.numel() else 0.0)
        how = "naive-guarded"
    if how in ("naive", "naive-guarded") and keep is not None:
        e = torch.exp(scores)
        e = e * keep if keep_how == "exp-mul" else torch.where(keep, e, torch.zeros_like(e))
        denom = e.sum(dim=-1, keepdim=True)
        if how == "naive-guarded" and guard:
            denom = torch.where(denom > 0, denom, torch.ones_like(denom))
        return e / denom
    if how == "torch":
        return torch.softmax(scores, dim=dim)
    if how == "torch-guarded":
        # Empty rows are found along the keys whatever `dim` is: that is how candidates write it.
        empty = torch.isneginf(scores).all(dim=-1, keepdim=True)
        return torch.softmax(scores.masked_fill(empty, 0.0), dim=dim).masked_fill(empty, 0.0)
    if how == "safe":
        row_max = scores.amax(dim=dim, keepdim=True)
        row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
        weights = torch.exp(scores - row_max)
    else:
        weights = torch.exp(scores)
    denom = weights.sum(dim=dim, keepdim=True)
    if how in ("safe", "naive-guarded") and guard:
        denom = torch.where(denom > 0, denom, torch.ones_like(denom))
    return weights / denom


def core(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float,
    attn_mask: torch.Tensor | None,
    causal: torch.Tensor | None,
    knobs: Knobs,
) -> torch.Tensor:
    """softmax(q @ k^T * scale, masked) @ v with the knobs' mistakes.

    attn_mask: the caller's "may attend" mask, broadcastable to the scores; causal: the
    causal "may attend" part (already in the knobs' spelling) or None."""
    scores = (q @ k.transpose(-2, -1)) * scale
    mode = knobs.mask
    if mode == "flipped" and attn_mask is not None:
        attn_mask = ~attn_mask
    elif mode == "transposed" and attn_mask is not None and attn_mask.dim() >= 2:
        attn_mask = attn_mask.transpose(-2, -1)
    elif mode == "ignored":
        attn_mask = None
    allowed = _and(attn_mask, causal)
    fill = fill_value(knobs.fill, scores.dtype)
    if mode == "flipped-ones":
        allowed = _and(
            torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device), allowed
        )
    if allowed is not None:
        if mode in ("flipped-all", "flipped-ones"):
            scores = scores.masked_fill(allowed, fill)
        elif mode == "added":
            scores = scores + allowed
        elif mode == "add-big":
            scores = scores + (~allowed).to(scores.dtype) * fill
        elif mode == "add-inf":
            scores = scores + torch.zeros_like(scores).masked_fill(~allowed, -INF)
        elif mode in ("fill", "flipped", "transposed", "ignored"):
            scores = scores.masked_fill(~allowed, fill)
    keep = allowed if mode in ("exp-mul", "exp-where") else None
    if knobs.softmax_dtype == "float32":
        weights = softmax(
            scores.float(), knobs.softmax, knobs.dim, keep, mode, not knobs.unguarded
        ).to(scores.dtype)
    else:
        weights = softmax(scores, knobs.softmax, knobs.dim, keep, mode, not knobs.unguarded)
    if mode == "after" and allowed is not None:
        weights = weights * allowed
    if knobs.hide_nan == "nan_to_num":
        weights = torch.nan_to_num(weights, nan=0.0)
    elif knobs.hide_nan == "where" and allowed is not None:
        weights = torch.where(allowed.any(dim=-1, keepdim=True), weights, torch.zeros_like(weights))
    return weights @ v


def split_heads(t: torch.Tensor, B: int, L: int, heads: int, d: int, how: str) -> torch.Tensor:
    """(B, L, heads * d) -> (B, heads, L, d)."""
    if how == "flat":
        return t.view(B, heads, L, d)
    return t.view(B, L, heads, d).transpose(1, 2)


def merge_heads(y: torch.Tensor, B: int, L: int, how: str) -> torch.Tensor:
    """(B, heads, L, d) -> (B, L, heads * d)."""
    width = y.shape[1] * y.shape[-1]
    if how == "flat":
        return y.reshape(B, L, width)
    if how == "view":
        return y.transpose(1, 2).view(B, L, width)
    return y.transpose(1, 2).reshape(B, L, width)


def expand_kv(t: torch.Tensor, heads: int, how: str) -> torch.Tensor:
    """(B, Hkv, S, d) -> (B, heads, S, d) in the knob's head order."""
    g = heads // t.shape[1]
    if g == 1:
        return t
    return t.repeat(1, g, 1, 1) if how == "repeat" else t.repeat_interleave(g, dim=1)


# -- MHA / MQA / GQA ----------------------------------------------------------------------------
def family_forward(
    m: nn.Module,
    kv_heads: int,
    knobs: Knobs,
    x: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
) -> torch.Tensor:
    """The forward of reference/{mha,mqa,gqa}.py (H query heads, `kv_heads` KV heads) with the
    knobs' mistakes; `m` holds the reference's layers."""
    B, L, _ = x.shape
    H, d = m.n_heads, m.head_dim
    q = split_heads(m.q_proj(x), B, L, H, d, knobs.split)
    k = split_heads(m.k_proj(x), B, L, kv_heads, d, knobs.split)
    v = split_heads(m.v_proj(x), B, L, kv_heads, d, knobs.split)
    # "repeat-k" / "repeat-v": only one of the two expanded in the wrong order.
    k = expand_kv(k, H, "repeat" if knobs.kv_order in ("repeat", "repeat-k") else "interleave")
    v = expand_kv(v, H, "repeat" if knobs.kv_order in ("repeat", "repeat-v") else "interleave")
    scale = {
        "d": 1 / math.sqrt(d),
        "D": 1 / math.sqrt(H * d),
        "none": 1.0,
        "not-sqrt": 1 / d,
        "inverted": math.sqrt(d),
    }[knobs.scale]
    causal = causal_allowed(L, L, knobs.causal, x.device) if is_causal else None
    y = core(q, k, v, scale, attn_mask, causal, knobs)
    y = merge_heads(y, B, L, knobs.merge)
    return m.o_proj(y) if knobs.out_proj else y


def family_variant(base: type[nn.Module], kv_heads: Any, **changes: Any) -> type[nn.Module]:
    """A subclass of the reference class `base` whose forward has the given knobs turned.
    `kv_heads(module)` is its number of KV heads."""
    knobs = replace(Knobs(), **changes)

    class Variant(base):  # type: ignore[valid-type, misc]
        def forward(
            self, x: torch.Tensor, attn_mask: torch.Tensor | None = None, is_causal: bool = False
        ) -> torch.Tensor:
            return family_forward(self, kv_heads(self), knobs, x, attn_mask, is_causal)

    Variant.__name__ = Variant.__qualname__ = f"{base.__name__}[{knobs.label()}]"
    return remakeable(Variant, changes, (family_variant, base, kv_heads))


def remakeable(cls: type[nn.Module], knobs: dict[str, Any], family: tuple) -> type[nn.Module]:
    """Record how `cls` was made, `family[0](*family[1:], **knobs)`, so that the diagnosis
    can build a variant with the knobs of two mistakes at once (`pairs.compose`)."""
    cls.knobs = dict(knobs)  # type: ignore[attr-defined]
    cls.family = family  # type: ignore[attr-defined]
    return cls


# The mistakes every MHA-like kata shares, as knob settings (several spellings per mistake
# where candidates write it in ways that behave differently).
FAMILY_CRAFTS = {GRID_SEED: craft_identity_values, LARGE_SEED: craft_self_similar}

# "A fully masked row returns the mean of V": any large finite value filled in or added where
# masked, with torch.softmax, optionally computed in float32 (HF's eager upcast).
UNIFORM_FILLS: tuple[float | str, ...] = (-1e4, -1e9, -1e30, "min", "min32")


def uniform_family(
    softmax_knob: str, softmax: str, mask_knob: str = "mask_mode", add: str = "add-big"
) -> list[dict[str, Any]]:
    """The knob settings of `fully-masked-row-uniform` for a mutant whose softmax knob is
    `softmax_knob` (set to the unguarded `softmax`) and whose mask knob is `mask_knob`."""
    return [
        *(
            {"fill": c, softmax_knob: softmax, mask_knob: mode}
            for c in UNIFORM_FILLS
            for mode in ("fill", add)
        ),
        *({"fill": c, softmax_knob: softmax, "softmax_dtype": "float32"} for c in ("min32", -1e9)),
    ]


UNIFORM_FAMILY = uniform_family("softmax", "torch", "mask")

FAMILY_MISTAKES: dict[str, list[dict[str, Any]]] = {
    "split-heads-without-transpose": [{"split": "flat"}],
    "merge-heads-without-transpose": [{"merge": "flat"}],
    "missing-contiguous": [{"merge": "view"}],
    "missing-output-projection": [{"out_proj": False}],
    "scale-by-d-model": [{"scale": "D"}],
    "missing-scale": [{"scale": "none"}],
    "scale-not-sqrt": [{"scale": "not-sqrt"}],
    "scale-inverted": [{"scale": "inverted"}],
    "softmax-wrong-dim": [
        *(
            {"dim": dim, "softmax": how}
            for dim in (-2, 1)
            for how in ("torch", "safe", "torch-guarded")
        ),
        {"dim": -2, "softmax": "slot", "mask": "exp-mul"},
    ],
    # Guarded spellings only: an unguarded exp / sum also turns an empty row into 0 / 0, which
    # is `fully-masked-row-nan` as well (its `unguarded` variant pairs with these).
    "unstable-softmax": [
        *({"softmax": "naive-guarded", "mask": mode} for mode in ("fill", "exp-mul", "exp-where")),
        {"softmax": "naive-global"},
    ],
    "causal-mask-inverted": [{"causal": "triu+1"}, {"causal": "triu"}],
    "causal-mask-excludes-diagonal": [{"causal": "tril-1"}],
    "causal-mask-leaks-future": [{"causal": "tril+1"}],
    "mask-polarity-flipped": [
        {"mask": mode, "softmax": how}
        for mode in ("flipped", "flipped-all", "flipped-ones")
        for how in ("safe", "torch")
    ],
    "mask-ignored": [{"mask": "ignored"}, {"mask": "ignored-all"}],
    "mask-added-as-float": [{"mask": "added"}, {"mask": "added", "softmax": "torch"}],
    "mask-applied-after-softmax": [{"mask": "after", "softmax": "torch"}],
    # An additive 0 / -inf mask lets the NaN reach the gradients too (masked_fill does not).
    "fully-masked-row-nan": [
        {"softmax": "torch"},
        {"mask": "add-inf", "softmax": "torch"},
        {"unguarded": True},
    ],
    "fully-masked-row-uniform": UNIFORM_FAMILY,
    # Filling with -inf zeroes the NaN's gradient in masked_fill's backward: only an additive
    # -inf mask lets it through to q and k.
    "fully-masked-row-nan-gradient": [
        {"mask": "add-inf", "softmax": "torch", "hide_nan": how} for how in ("nan_to_num", "where")
    ],
    "padding-mask-wrong-axis": [{"mask": "transposed"}],
}


def family_mutants(
    base: type[nn.Module],
    kv_heads: Any,
    extra: dict[str, list[dict[str, Any]]] | None = None,
    skip: tuple[str, ...] = (),
) -> dict[str, list[type[nn.Module]]]:
    table = {**FAMILY_MISTAKES, **(extra or {})}
    return {
        mid: [family_variant(base, kv_heads, **knobs) for knobs in variants]
        for mid, variants in table.items()
        if mid not in skip
    }


def family_probes(
    entry: str,
    *,
    B: int,
    L: int,
    H: int,
    d: int,
    Hkv: int | None = None,
    init: tuple[tuple, dict[str, Any]],
    grid_init: tuple[tuple, dict[str, Any]] | None = None,
    grid_sizes: dict[str, Any] | None = None,
) -> list[Probe]:
    """Probes of the self-attention modules: x (B, L, D) with the masks the contract allows.

    Every mask keeps at least one key and hides at least one in each row (no accidental
    empty rows, except in the probe made for them); with is_causal the caller's mask keeps
    the diagonal, so combining the two never empties a row either.

    `grid_init` (a constructor call whose module is D = L wide, built with GRID_SEED and the
    kata's `craft`) adds the mask-grid probe: one-hot inputs, an attn_mask with one empty row,
    and is_causal, so the output is the effective mask, drawn next to the expected one."""
    D = H * d
    sizes: dict[str, Any] = {"B": B, "L": L, "S": L, "H": H, "d": d, "D": D}
    if Hkv is not None:
        sizes["Hkv"] = Hkv

    def x(seed: int, scale: float = 1.0) -> tuple[torch.Tensor]:
        return (randn(B, L, D, seed=seed, scale=scale),)

    def probe(name: str, args: tuple, kwargs: dict[str, Any] | None = None, **more: Any) -> Probe:
        return Probe(
            name,
            entry,
            args,
            kwargs or {},
            params=sizes,
            init=init,
            seed=more.pop("seed", 7),
            **more,
        )

    mask = strict_mask(B, 1, L, L, seed=301)
    with_diag = strict_mask(B, 1, L, L, seed=302) | torch.eye(L, dtype=torch.bool)
    lengths = torch.tensor([L - 2 - (b % (L - 2)) for b in range(B)])
    padding = (torch.arange(L)[None, :] < lengths[:, None])[:, None, None, :]  # (B, 1, 1, L)
    empty = with_empty_rows(strict_mask(B, 1, L, L, seed=303), [(0, 0, 1), (B - 1, 0, L - 1)])
    flat = strict_mask(L, L, seed=304)
    padded_out = padding.clone()
    padded_out[-1] = False  # the last batch row is all padding: its queries see no key
    out = [
        probe("no mask", x(401), repeat=True),
        probe("attn_mask (B, 1, L, L)", x(402), {"attn_mask": mask}),
        probe("padding mask (B, 1, 1, L)", x(403), {"attn_mask": padding}),
        probe("attn_mask (L, L)", x(404), {"attn_mask": flat}),
        probe("is_causal", x(405), {"is_causal": True}),
        probe("attn_mask and is_causal", x(406), {"attn_mask": with_diag, "is_causal": True}),
        probe("fully masked rows", x(407), {"attn_mask": empty}),
        probe(
            "large logits (q = k = x * 40)",
            x(408, scale=40.0),
            {"attn_mask": with_diag},
            seed=LARGE_SEED,
        ),
        probe(
            "float32, attn_mask and is_causal",
            tuple(t.float() for t in x(409)),
            {"attn_mask": with_diag, "is_causal": True},
            dtype=torch.float32,
        ),
        probe(
            "other weights, padding mask and is_causal",
            x(410),
            {"attn_mask": padding, "is_causal": True},
            seed=8,
        ),
        probe(
            "gradient w.r.t. x, a fully padded batch row",
            x(411),
            {"attn_mask": padded_out},
            grad=((0,), randn(B, L, D, seed=412)),
        ),
    ]
    if grid_init is not None:
        assert grid_sizes is not None
        n, width = grid_sizes["L"], grid_sizes["D"]
        grid_mask = with_empty_rows(
            strict_mask(2, 1, n, n, seed=305, p=0.7) | torch.eye(n, dtype=torch.bool), [(0, 0, 2)]
        )
        out.append(
            Probe(
                "mask grid (q = k = 0, V = I): attn_mask with an empty row, and is_causal",
                entry,
                (one_hot_inputs(2, n, width),),
                {"attn_mask": grid_mask, "is_causal": True},
                params={**sizes, **grid_sizes},
                init=grid_init,
                seed=GRID_SEED,
                grid="weights",
            )
        )
    return out


# -- GQA head map ---------------------------------------------------------------------------------
def kv_head_map(reference: nn.Module, x: torch.Tensor, out: Any) -> list[int | str] | None:
    """Which KV head each query head of a GQA module read, from its output `out` on `x`
    (no mask) with `reference`'s weights: o_proj is square, so the merged per-head results
    come back exactly; each head's result is compared with its attention over every KV head.
    "?" where no KV head reproduces a head's result (another mistake in the way)."""
    if not isinstance(out, torch.Tensor) or out.dim() != 3:
        return None
    H, Hkv, d = reference.n_heads, reference.n_kv_heads, reference.head_dim
    w_o = reference.o_proj.weight.detach().double()
    if w_o.shape[0] != w_o.shape[1] or tuple(out.shape) != (*x.shape[:2], w_o.shape[0]):
        return None
    B, L, _ = x.shape
    with torch.no_grad():
        x64 = x.double()
        y = out.detach().double()
        if reference.o_proj.bias is not None:
            y = y - reference.o_proj.bias.detach().double()
        merged = torch.linalg.solve(w_o, y.reshape(-1, w_o.shape[0]).T).T.reshape(B, L, H, d)
        ref = {n: p.detach().double() for n, p in reference.state_dict().items()}

        def proj(name: str, heads: int) -> torch.Tensor:
            t = x64 @ ref[f"{name}.weight"].T + (
                ref[f"{name}.bias"] if f"{name}.bias" in ref else 0
            )
            return t.view(B, L, heads, d).transpose(1, 2)

        q, k, v = proj("q_proj", H), proj("k_proj", Hkv), proj("v_proj", Hkv)
        got: list[int | str] = []
        for h in range(H):
            head = merged[:, :, h]  # (B, L, d)
            best, best_err = None, INF
            for j in range(Hkv):
                w = torch.softmax(q[:, h] @ k[:, j].transpose(-2, -1) / math.sqrt(d), dim=-1)
                att = w @ v[:, j]
                err = float((head - att).abs().max() / att.abs().max().clamp_min(1e-12))
                if err < best_err:
                    best, best_err = j, err
            got.append(best if best_err < 1e-4 else "?")
    return got
