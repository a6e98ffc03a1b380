"""Load a reference module's weights into the candidate's module (which lives in its child).

Module katas grade by giving the candidate's module exactly the reference's weights, so the
candidate may name its layers the way their favourite codebase does. The mapping is decided
in this order:

1. canonical: every reference parameter exists under the same name (the names each kata's
   statement asks for). Other katas rely on this path only.
2. by name: each of the candidate's `nn.Linear` layers is recognised by a common name for
   its role (`W_Q`, `query`, `to_q`, `out_proj`, `c_proj`, `dense`, ... and fused
   `c_attn` / `qkv` / `in_proj` for q, k, v, or `kv` for k, v);
3. by shape and definition order: the reference's roles that no name claimed are matched,
   in the order q, k, v, o, against the candidate's remaining `nn.Linear` layers in the
   order they were defined, allowing a fused q|k|v or k|v layer where the shapes say so.

A fused layer receives the reference's weights concatenated along the output features in
q, k, v order (GPT-2's `c_attn`, PyTorch's `in_proj_weight`); for GQA/MQA its shape is
(D + 2 * Hkv * d, D). Codebases also lay fused rows out per head (GPT-NeoX and Bloom:
[q_h | k_h | v_h] for each head h; a fused k|v as [k_h | v_h] per KV head) or per KV group
(Megatron's GQA: the g query heads of a group, then its k and v). When the shapes allow
several layouts, each is loaded in turn and the module called on one token without a mask,
where no other mistake but the layout can change the output (a single key gets weight 1);
the first layout that agrees with the reference is kept (`WeightMapping.layouts`), per
module structure and candidate. When none agrees, the stacked layout stays and
`WeightMapping.unfit` says which layer and which layouts were tried. Biases follow their
weights. When nothing decides, or a layer has the wrong shape or bias, AssertionError says
what was expected and what was found.

`seeded_`, `build_module`, `check_module_call` and `check_module_grads` are the module
graders' counterparts of `probes.check_call` / `check_grads`.
"""

from __future__ import annotations

import copy
import math
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from attnkata.checker.compare import assert_close, assert_no_mutation, jittered
from attnkata.checker.probes import cast, randn
from attnkata.checker.proxy import (
    Candidate,
    CandidateCrashed,
    CandidateExited,
    CandidateFailure,
    CandidateMemory,
    CandidateTimeout,
    Outcome,
    RemoteModule,
)
from attnkata.checker.sandbox.autograd import backward

CANONICAL = "canonical names"
BY_NAME = "by name"
BY_ORDER = "by shape and definition order"
BY_NAME_AND_ORDER = "by name, then by shape and definition order"

ROLE_WORDS = {"q": "query", "k": "key", "v": "value", "o": "output"}


def _aliases(letter: str, word: str) -> set[str]:
    """Normalised names (lower case, no separators) under which codebases call a projection."""
    out = set()
    for x in (letter, word, word + "s"):
        out |= {
            x,
            f"{x}proj",
            f"proj{x}",
            f"w{x}",
            f"to{x}",
            f"{x}linear",
            f"linear{x}",
            f"{x}lin",
            f"lin{x}",
            f"{x}dense",
            f"dense{x}",
            f"{x}layer",
            f"{x}net",
            f"{x}fc",
            f"fc{x}",
            f"{x}projection",
            f"{x}map",
        }
    return out


ALIASES: dict[str, set[str]] = {
    "q": _aliases("q", "query") | {"queries"},
    "k": _aliases("k", "key"),
    "v": _aliases("v", "value"),
    "o": _aliases("o", "out")
    | _aliases("o", "output")
    | {
        "w0",
        "cproj",
        "dense",
        "proj",
        "projection",
        "attnout",
        "residproj",
    },
    "qkv": _aliases("qkv", "qkv") | {"cattn", "inproj", "wpack", "attnqkv"},
    "kv": _aliases("kv", "kv"),
}
FUSED: dict[str, tuple[str, ...]] = {"qkv": ("q", "k", "v"), "kv": ("k", "v")}

# Row layouts of a fused projection (see the module docstring).
STACKED = "stacked"
PER_HEAD = "per head"
PER_GROUP = "per KV group"
LAYOUT_TEXT = {
    STACKED: "stacked [q; k; v] (GPT-2's c_attn, PyTorch's in_proj_weight)",
    PER_HEAD: "per head [q_h | k_h | v_h] (GPT-NeoX, Bloom)",
    PER_GROUP: "per KV group [q of its g heads | k | v] (Megatron GQA)",
}


def normalise(name: str) -> str:
    """`attn.to_out.0` -> `toout`: the last non-numeric part of a module path, lower case,
    without separators (so `W_Q`, `w_q` and `wq` are one name)."""
    parts = [p for p in name.split(".") if not p.isdigit()]
    return re.sub(r"[^a-z0-9]", "", (parts[-1] if parts else name).lower())


def role_of(name: str) -> str | None:
    """q, k, v, o, qkv or kv for a layer name, or None when the name says nothing."""
    key = normalise(name)
    hits = [role for role, names in ALIASES.items() if key in names]
    return hits[0] if len(hits) == 1 else None


@dataclass(frozen=True)
class Layer:
    """An nn.Linear of the candidate or of the reference."""

    name: str
    in_features: int
    out_features: int
    bias: bool

    def render(self) -> str:
        return f"{self.name} Linear({self.in_features} -> {self.out_features}, {'bias' if self.bias else 'no bias'})"


class WeightMapping(dict):
    """{candidate parameter: reference parameter(s)} (a fused one reads `q_proj.weight +
    k_proj.weight + v_proj.weight`); `how` says which rule decided it, `layers` lists
    (candidate layer, reference layers) pairs for messages."""

    def __init__(
        self,
        pairs: dict[str, str],
        how: str,
        layers: list[tuple[str, tuple[str, ...]]] | None = None,
    ) -> None:
        super().__init__(pairs)
        self.how = how
        self.layers = layers or []
        # Fused layers whose rows could be laid out several ways: layer -> {layout: state}.
        self.alternatives: dict[str, dict[str, dict[str, torch.Tensor]]] = {}
        self.layouts: dict[str, str] = {}  # layer -> the layout kept
        self.unfit: dict[str, list[str]] = {}  # layer -> layouts tried, none agreeing

    @property
    def canonical(self) -> bool:
        return self.how == CANONICAL

    def describe(self) -> str:
        if self.canonical:
            return CANONICAL
        parts = []
        for cand, refs in self.layers:
            layout = self.layouts.get(cand, STACKED)
            order = (
                f"split in {', '.join(refs)} order"
                if layout == STACKED
                else f"rows {LAYOUT_TEXT[layout]}"
            )
            fused = f" (fused, {order})" if len(refs) > 1 else ""
            parts.append(f"{cand} <- {' + '.join(refs)}{fused}")
        return f"{self.how}: " + "; ".join(parts)

    def note(self) -> str:
        """Text a grader appends to its case description; empty for canonical names."""
        return "" if self.canonical else f" [reference weights loaded {self.describe()}]"


def load_reference_weights(
    module: RemoteModule,
    reference: torch.nn.Module,
    *,
    case: str,
    dtype: torch.dtype | None = None,
    force: dict[str, str] | None = None,
) -> WeightMapping:
    """Copy `reference`'s parameters into the candidate's `module` (see the module docstring
    for how names are matched and fused layouts chosen); returns the mapping, {candidate
    name: reference name(s)}. `dtype`: the module's dtype (for the layout trial call);
    `force`: {layer: layout} to load without a trial (the diagnosis tries each)."""
    state, mapping = plan_weights(module.structure, reference, case=case)
    for layer, options in mapping.alternatives.items():
        if force and force.get(layer) in options:
            layout: str | None = force[layer]
        else:
            layout = _choose_layout(module, reference, state, layer, options, dtype)
        if layout is None:
            mapping.unfit[layer] = list(options)
            layout = STACKED
        mapping.layouts[layer] = layout
        state.update(options[layout])
    module.load_state(state)
    return mapping


# candidate -> {(generation, structure, layer): the layout kept, or None}: decided once per
# module structure, not once per test (weak: a finished candidate's decisions go with it).
_DECIDED: weakref.WeakKeyDictionary[Any, dict[tuple[int, str, str], str | None]] = (
    weakref.WeakKeyDictionary()
)


def _choose_layout(
    module: RemoteModule,
    reference: torch.nn.Module,
    state: dict[str, torch.Tensor],
    layer: str,
    options: dict[str, dict[str, torch.Tensor]],
    dtype: torch.dtype | None,
) -> str | None:
    """The first layout under which the module agrees with the reference on one token (a
    single key: masks, scales and softmax details cannot show there, the rows' order can)."""
    decided = _DECIDED.setdefault(module.candidate, {})
    key = (module.generation, f"{type(reference).__qualname__} {module.structure!r}", layer)
    if key in decided:
        return decided[key]
    ref64 = copy.deepcopy(reference).to(torch.float64).eval()
    k_proj = next(
        (
            m
            for n, m in ref64.named_modules()
            if isinstance(m, torch.nn.Linear) and role_of(n) == "k"
        ),
        None,
    )
    if k_proj is None:
        return None
    x = randn(2, 1, k_proj.in_features, seed=12345)  # one token: x is what the keys read
    try:
        with torch.no_grad():
            want = ref64(x)
    except Exception:  # noqa: BLE001 - a reference that takes no plain x: keep the stacked layout
        return None
    chosen = None
    for layout, part in options.items():
        module.load_state({**state, **part})
        try:
            got = _trial_call(module, x, dtype)
        except (CandidateCrashed, CandidateExited, CandidateTimeout, CandidateMemory):
            raise
        except CandidateFailure:
            break  # the module cannot be called plainly: its tests will say why
        if _agrees(got, want):
            chosen = layout
            break
    decided[key] = chosen
    return chosen


def _trial_call(module: RemoteModule, x: torch.Tensor, dtype: torch.dtype | None) -> Any:
    if dtype is not None:
        return module.call((x.to(dtype),)).value
    try:  # unknown dtype: the graders' default first
        return module.call((x.float(),)).value
    except CandidateFailure:
        return module.call((x,)).value


def _agrees(got: Any, want: torch.Tensor) -> bool:
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return False
    tol = 1e-9 if got.dtype == torch.float64 else 1e-4
    return bool(torch.allclose(got.detach().to(torch.float64), want, rtol=tol * 10, atol=tol))


def plan_weights(
    structure: dict[str, Any], reference: torch.nn.Module, *, case: str
) -> tuple[dict[str, torch.Tensor], WeightMapping]:
    """The state to load into a module described by `structure` (`RemoteModule.structure`:
    its Linear layers in definition order and its parameter shapes) and the mapping used."""
    ref_state = {k: v.detach() for k, v in reference.state_dict().items()}
    have = {k: tuple(v) for k, v in structure.get("params", {}).items()}
    layers = [
        Layer(m["name"], m["in_features"], m["out_features"], m["bias"])
        for m in structure.get("modules", [])
        if "in_features" in m
    ]
    if all(name in have for name in ref_state):
        for name, tensor in ref_state.items():
            if have[name] != tuple(tensor.shape):
                raise AssertionError(
                    f"{case}: {name} should have shape {tuple(tensor.shape)}, yours has {have[name]}"
                    + _shape_hint(name, reference)
                )
        mapping = WeightMapping(
            {n: n for n in ref_state},
            CANONICAL,
            [
                (n.rsplit(".", 1)[0], (n.rsplit(".", 1)[0],))
                for n in ref_state
                if n.endswith(".weight")
            ],
        )
        _check_no_extra_bias(layers, ref_state, case)
        return dict(ref_state), mapping
    return _plan_by_role(ref_state, have, layers, reference, case)


def _ref_layers(reference: torch.nn.Module) -> list[Layer]:
    return [
        Layer(n, m.in_features, m.out_features, m.bias is not None)
        for n, m in reference.named_modules()
        if isinstance(m, torch.nn.Linear)
    ]


def _shape_hint(name: str, reference: torch.nn.Module) -> str:
    layer = next((r for r in _ref_layers(reference) if name.startswith(r.name + ".")), None)
    if layer is None:
        return ""
    return (
        f" (expected {layer.name} = Linear({layer.in_features} -> {layer.out_features});"
        " nn.Linear(in, out) stores its weight as (out, in))"
    )


def _check_no_extra_bias(
    layers: list[Layer], ref_state: dict[str, torch.Tensor], case: str
) -> None:
    for layer in layers:
        if (
            layer.bias
            and f"{layer.name}.weight" in ref_state
            and f"{layer.name}.bias" not in ref_state
        ):
            raise AssertionError(
                f"{case}: your {layer.name} has a bias, but the module was built with bias=False: "
                "pass bias=bias to nn.Linear"
            )


def _plan_by_role(
    ref_state: dict[str, torch.Tensor],
    have: dict[str, tuple[int, ...]],
    layers: list[Layer],
    reference: torch.nn.Module,
    case: str,
) -> tuple[dict[str, torch.Tensor], WeightMapping]:
    ref_layers = _ref_layers(reference)
    roles = {r.name: role_of(r.name) for r in ref_layers}
    by_role = {
        role: r for r, role in zip(ref_layers, roles.values(), strict=True) if role in ROLE_WORDS
    }
    layer_params = {f"{r.name}.{p}" for r in ref_layers for p in ("weight", "bias")}
    others = [n for n in ref_state if n not in layer_params]
    if (
        not ref_layers
        or any(role not in ROLE_WORDS for role in roles.values())
        or len(by_role) != len(ref_layers)
        or any(n not in have for n in others)
    ):
        # Not a plain q/k/v/o attention: only the canonical names can work.
        missing = next(n for n in ref_state if n not in have)
        raise AssertionError(
            f"{case}: your module has no parameter {missing!r} of shape {tuple(ref_state[missing].shape)}; "
            f"it has: {', '.join(f'{n} {s}' for n, s in have.items()) or 'no parameters'}"
        )
    for n in others:
        if have[n] != tuple(ref_state[n].shape):
            raise AssertionError(
                f"{case}: {n} should have shape {tuple(ref_state[n].shape)}, yours has {have[n]}"
            )

    ref_order = [role for role in roles.values() if role is not None]
    assigned: list[tuple[Layer, tuple[str, ...]]] = []
    claimed: dict[str, Layer] = {}
    rest: list[Layer] = []
    for layer in layers:
        role = role_of(layer.name)
        group = FUSED.get(role, (role,)) if role else None
        if group is None or any(g not in by_role for g in group):
            rest.append(layer)
            continue
        for g in group:
            if g in claimed:
                raise AssertionError(
                    f"{case}: both `{claimed[g].name}` and `{layer.name}` look like the {ROLE_WORDS[g]} "
                    f"projection; keep one layer per role ({_expected(ref_layers)})"
                )
            claimed[g] = layer
        assigned.append((layer, group))
    open_roles = [r for r in ref_order if r not in claimed]
    how = BY_NAME
    if open_roles:
        matched = _match_by_order(open_roles, rest, by_role)
        if matched is None:
            raise AssertionError(_undecided(case, ref_layers, layers, have, claimed, open_roles))
        assigned += matched
        how = BY_NAME_AND_ORDER if claimed else BY_ORDER

    state: dict[str, torch.Tensor] = {n: ref_state[n] for n in others}
    pairs: dict[str, str] = {n: n for n in others}
    alternatives: dict[str, dict[str, dict[str, torch.Tensor]]] = {}
    described: list[tuple[str, tuple[str, ...]]] = []
    for layer, group in sorted(assigned, key=lambda a: ref_order.index(a[1][0])):
        refs = [by_role[g] for g in group]
        want_out = sum(r.out_features for r in refs)
        if (layer.in_features, layer.out_features) != (refs[0].in_features, want_out):
            what = " + ".join(f"{r.name} ({r.out_features})" for r in refs)
            raise AssertionError(
                f"{case}: your `{layer.name}` looks like the {_role_text(group)} projection but is "
                f"Linear({layer.in_features} -> {layer.out_features}); expected "
                f"Linear({refs[0].in_features} -> {want_out})"
                + (
                    f", i.e. {what} output features stacked"
                    if len(refs) > 1
                    else f" like the reference's {refs[0].name}"
                )
            )
        if refs[0].bias != layer.bias:
            raise AssertionError(
                f"{case}: your `{layer.name}` ({_role_text(group)} projection) "
                + (
                    "has no bias, but the module was built with bias=True (the default)"
                    if refs[0].bias
                    else "has a bias, but the module was built with bias=False"
                )
                + ": pass bias=bias to nn.Linear"
            )
        options = _layouts(group, refs, ref_state, layer, getattr(reference, "head_dim", None))
        state.update(options[STACKED])
        if len(options) > 1:
            alternatives[layer.name] = options
        pairs[f"{layer.name}.weight"] = " + ".join(f"{r.name}.weight" for r in refs)
        if layer.bias:
            pairs[f"{layer.name}.bias"] = " + ".join(f"{r.name}.bias" for r in refs)
        described.append((layer.name, tuple(r.name for r in refs)))
    mapping = WeightMapping(pairs, how, described)
    mapping.alternatives = alternatives
    return state, mapping


def _layouts(
    group: tuple[str, ...],
    refs: list[Layer],
    ref_state: dict[str, torch.Tensor],
    layer: Layer,
    head_dim: int | None,
) -> dict[str, dict[str, torch.Tensor]]:
    """{layout: the state of `layer`} for every distinct way its rows may be laid out."""
    params = ["weight", "bias"] if layer.bias else ["weight"]
    parts = {p: [ref_state[f"{r.name}.{p}"] for r in refs] for p in params}
    names = [STACKED]
    if len(refs) > 1 and head_dim:
        heads = [r.out_features // head_dim for r in refs]
        if len(set(heads)) == 1 and heads[0] > 1:
            names.append(PER_HEAD)
        elif group == ("q", "k", "v") and heads[1] == heads[2] and 1 < heads[1] < heads[0]:
            names.append(PER_GROUP)
    out: dict[str, dict[str, torch.Tensor]] = {}
    for name in names:
        out[name] = {
            f"{layer.name}.{p}": _fused_rows(parts[p], name, head_dim or 1) for p in params
        }
    return out


def _fused_rows(parts: list[torch.Tensor], layout: str, d: int) -> torch.Tensor:
    """The roles' rows (q, k, v or k, v; each (heads * d, ...)) fused in `layout`."""
    if layout == STACKED:
        return torch.cat(parts, dim=0)
    tail = parts[0].shape[1:]
    if layout == PER_HEAD:  # (heads, roles, d, ...): head h's q, k, v rows together
        return torch.stack([t.reshape(-1, d, *tail) for t in parts], dim=1).reshape(-1, *tail)
    q, k, v = parts  # PER_GROUP: (Hkv, g * d + d + d, ...)
    groups = k.shape[0] // d
    return torch.cat(
        [q.reshape(groups, -1, *tail), k.reshape(groups, d, *tail), v.reshape(groups, d, *tail)],
        dim=1,
    ).reshape(-1, *tail)


def _match_by_order(
    open_roles: list[str], rest: list[Layer], by_role: dict[str, Layer]
) -> list[tuple[Layer, tuple[str, ...]]] | None:
    """Split `open_roles` (in reference order) into consecutive single or fused groups, one
    per remaining candidate layer (in definition order), so that every shape fits."""
    fusions = {group for group in FUSED.values()}

    def layouts(roles: list[str]) -> list[list[tuple[str, ...]]]:
        if not roles:
            return [[]]
        out = []
        for n in range(1, len(roles) + 1):
            head = tuple(roles[:n])
            if n == 1 or head in fusions:
                out += [[head, *tail] for tail in layouts(roles[n:])]
        return out

    fits = []
    for layout in layouts(open_roles):
        if len(layout) != len(rest):
            continue
        if all(
            (layer.in_features, layer.out_features)
            == (by_role[g[0]].in_features, sum(by_role[r].out_features for r in g))
            for layer, g in zip(rest, layout, strict=True)
        ):
            fits.append(list(zip(rest, layout, strict=True)))
    return fits[0] if len(fits) == 1 else None


def _role_text(group: tuple[str, ...]) -> str:
    return "/".join(ROLE_WORDS[g] for g in group)


def _expected(ref_layers: list[Layer]) -> str:
    return ", ".join(r.render() for r in ref_layers)


def _undecided(
    case: str,
    ref_layers: list[Layer],
    layers: list[Layer],
    have: dict[str, tuple[int, ...]],
    claimed: dict[str, Layer],
    open_roles: list[str],
) -> str:
    by_role = {role_of(r.name): r for r in ref_layers}
    fused = []
    if all(r in by_role for r in ("q", "k", "v")):
        q, k, v = by_role["q"], by_role["k"], by_role["v"]
        fused.append(
            f"one fused Linear({q.in_features} -> {q.out_features + k.out_features + v.out_features}) "
            "named c_attn/qkv/in_proj holding q, k, v in that order"
        )
        if k.out_features != q.out_features:
            fused.append(
                f"a fused Linear({k.in_features} -> {k.out_features + v.out_features}) named kv "
                "holding k then v"
            )
    found = [layer.render() for layer in layers]
    loose = [
        f"{n} {s}"
        for n, s in have.items()
        if not any(n.startswith(layer.name + ".") for layer in layers)
    ]
    recognised = (
        "; recognised by name: "
        + ", ".join(f"{layer.name} as {ROLE_WORDS[r]}" for r, layer in claimed.items())
        if claimed
        else ""
    )
    if claimed and all(layer in claimed.values() for layer in layers):
        # Every layer was recognised and none is left for these roles: they were never built.
        missing = [by_role[r] for r in open_roles]
        return (
            f"{case}: your module has no layer for the {', '.join(ROLE_WORDS[r] for r in open_roles)} "
            f"projection: expected {', '.join(r.render() for r in missing)}. Found: {', '.join(found)}"
            + (f"; other parameters: {', '.join(loose)}" if loose else "")
        )
    return (
        f"{case}: cannot tell which of your layers hold the {', '.join(ROLE_WORDS[r] for r in open_roles)} "
        f"weights. Expected nn.Linear layers named as in the statement: {_expected(ref_layers)}"
        + (f" (or {' or '.join(fused)})" if fused else "")
        + f". Found: {', '.join(found) if found else 'no nn.Linear layers'}"
        + (f"; other parameters: {', '.join(loose)}" if loose else "")
        + recognised
        + ". Rename your layers to the names above (projections stored as bare nn.Parameter "
        "matrices cannot be matched: use nn.Linear)."
    )


# -- grading helpers for module katas ------------------------------------------------------


def seeded_(module: torch.nn.Module, seed: int, gain: float = 1.0) -> torch.nn.Module:
    """Re-initialise every parameter of `module` from `seed`, in float64, and return it.

    Weights are N(0, gain^2 / fan_in), so projections of a unit-variance input have unit
    variance and the attention logits are O(1) (PyTorch's default init makes them tiny and the
    softmax nearly uniform, which hides scale and mask mistakes); 1-D parameters (biases) are
    N(0, 0.25), large enough that a fully masked row's "o_proj bias" output is visible.
    """
    g = torch.Generator().manual_seed(seed)
    module.double()
    with torch.no_grad():
        for _, p in sorted(module.named_parameters()):
            if p.dim() >= 2:
                std = gain / math.sqrt(p.shape[-1])
            else:
                std = 0.5
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * std)
    return module.eval()


def build_module(
    solution: Candidate,
    cls: str,
    reference: torch.nn.Module,
    args: tuple = (),
    kwargs: dict[str, Any] | None = None,
    *,
    dtype: torch.dtype = torch.float32,
    case: str,
) -> tuple[RemoteModule, WeightMapping]:
    """Construct the candidate's `cls(*args, **kwargs)` in its child, cast it to `dtype` and
    load `reference`'s weights into it."""
    module, mapping, _ = build_beside(
        solution, cls, lambda: reference, args, kwargs, dtype=dtype, case=case
    )
    return module, mapping


def build_beside(
    solution: Candidate,
    cls: str,
    make_reference: Callable[[], torch.nn.Module],
    args: tuple = (),
    kwargs: dict[str, Any] | None = None,
    *,
    dtype: torch.dtype = torch.float32,
    case: str,
) -> tuple[RemoteModule, WeightMapping, torch.nn.Module]:
    """build_module, with the reference made by `make_reference()` while the candidate's child
    constructs its module (on the other core); returns the reference too."""
    with solution.new_later(
        cls, args, kwargs, dtype=dtype if dtype != torch.float32 else None
    ) as building:
        reference = make_reference()
    module = building.result()
    return module, load_reference_weights(module, reference, case=case, dtype=dtype), reference


_CASTS: weakref.WeakKeyDictionary[torch.nn.Module, dict[tuple, torch.nn.Module]] = (
    weakref.WeakKeyDictionary()
)


def as_dtype(reference: torch.nn.Module, dtype: torch.dtype) -> torch.nn.Module:
    """`reference` in `dtype`, never modified (`Module.to` works in place): the module itself
    when it already has that dtype, else a copy made once per reference and dtype. A deep copy
    per call cost a warm `kata watch` re-check of gqa ~40 ms. The key includes every tensor's
    storage and version counter, so weights changed in place (a re-seeded reference) are copied
    again."""
    tensors = [t for t in [*reference.parameters(), *reference.buffers()] if t.is_floating_point()]
    if tensors and all(t.dtype == dtype for t in tensors):
        return reference
    key = (dtype, tuple((t.data_ptr(), t._version) for t in tensors))
    casts = _CASTS.setdefault(reference, {})
    if key not in casts:
        casts.clear()  # older versions of these weights are never asked for again
        casts[key] = copy.deepcopy(reference).to(dtype)
    return casts[key]


def check_module_call(
    module: RemoteModule,
    mapping: WeightMapping,
    reference: torch.nn.Module,
    args: tuple,
    kwargs: dict[str, Any] | None = None,
    *,
    dtype: torch.dtype,
    case: str,
) -> Outcome:
    """Call the candidate's module and compare with the float64 reference on the same inputs.

    Floating-point inputs are cast to `dtype`; for float32 the float32 error budget comes from
    a float32 copy of the reference run on the same float32 inputs."""
    kwargs = kwargs or {}
    a = tuple(cast(x, dtype) for x in args)
    kw = {k: cast(v, dtype) for k, v in kwargs.items()}
    # The reference runs while the candidate's module does (the other core), not before.
    with module.submit(a, kw) as pending:
        expected, baseline = reference_outputs(reference, args, kwargs, dtype=dtype)
        spread = (
            _widest(expected, [_jittered_output(reference, args, kwargs, j) for j in range(4)])
            if dtype != torch.float64
            else None
        )
    outcome = pending.result()
    case = case + mapping.note()
    assert_no_mutation(outcome, case=case)
    try:
        assert_close(outcome.value, expected, case=case, baseline=baseline, spread=spread)
    except AssertionError as exc:
        # A grader that explains a failure compares this same output with another reference
        # (test_gqa: the `repeat` head order) instead of calling the candidate again.
        exc.outcome = outcome  # type: ignore[attr-defined]
        raise
    return outcome


def _widest(expected: Any, outputs: list[Any]) -> Any:
    """Of several jittered outputs, the one furthest from `expected` (one draw can be lucky)."""
    if not isinstance(expected, torch.Tensor):
        return outputs[0]
    return max(outputs, key=lambda o: float((o - expected).abs().nan_to_num(0.0).max()))


def _jittered_output(
    reference: torch.nn.Module, args: tuple, kwargs: dict[str, Any], draw: int = 0
) -> Any:
    """The float64 reference with its weights and inputs moved by one float32 rounding
    (compare.jittered): how far the output moves when nothing but float32 storage changes.
    A plain float32 module can be far luckier than that on one input (large logits)."""
    moved = copy.deepcopy(as_dtype(reference, torch.float64))
    with torch.no_grad():
        for i, t in enumerate([*moved.parameters(), *moved.buffers()]):
            if t.is_floating_point():
                t.copy_(jittered(t, seed=1000 * (draw + 1) + i))
        return moved(
            *jittered(tuple(cast(x, torch.float64) for x in args), seed=draw),
            **jittered({k: cast(v, torch.float64) for k, v in kwargs.items()}, seed=draw + 500),
        )


def reference_outputs(
    reference: torch.nn.Module,
    args: tuple,
    kwargs: dict[str, Any] | None = None,
    *,
    dtype: torch.dtype,
) -> tuple[Any, Any]:
    """(the float64 truth, the reference run in `dtype` as the error budget, or None for
    float64) on `args` (floating-point ones cast)."""
    kwargs = kwargs or {}
    with torch.no_grad():
        expected = as_dtype(reference, torch.float64)(
            *(cast(x, torch.float64) for x in args),
            **{k: cast(v, torch.float64) for k, v in kwargs.items()},
        )
        baseline = (
            as_dtype(reference, dtype)(
                *(cast(x, dtype) for x in args), **{k: cast(v, dtype) for k, v in kwargs.items()}
            )
            if dtype != torch.float64
            else None
        )
    return expected, baseline


def check_module_grads(
    module: RemoteModule,
    mapping: WeightMapping,
    reference: torch.nn.Module,
    args: tuple,
    kwargs: dict[str, Any] | None = None,
    *,
    wrt: tuple[int, ...],
    grad_output: torch.Tensor,
    case: str,
    names: tuple[str, ...] = ("x",),
) -> Outcome:
    """Backpropagate `grad_output` through the candidate's module and the reference (both in
    float64); compare the gradients w.r.t. the inputs at positions `wrt`."""
    kwargs = kwargs or {}
    with module.submit(args, kwargs, grad_wrt=wrt, grad_output=grad_output) as pending:
        ref = as_dtype(reference, torch.float64)
        leaves = [
            a.detach().clone().requires_grad_(i in wrt) if isinstance(a, torch.Tensor) else a
            for i, a in enumerate(args)
        ]
        backward(ref(*leaves, **kwargs), grad_output)
    outcome = pending.result()
    case = case + mapping.note()
    for pos, got in zip(wrt, outcome.grads, strict=True):
        label = names[pos] if pos < len(names) else f"argument {pos}"
        if got is None:
            raise AssertionError(
                f"{case}: no gradient reached {label}: the output does not depend on it "
                "through differentiable ops (detach, .data or in-place writes?)"
            )
        assert_close(got, leaves[pos].grad, case=case, what=f"gradient w.r.t. {label}")
    return outcome
