"""Per-student variants of a kata: the conventions an interviewer really varies (tensor layout,
mask polarity, argument and layer names, ...), declared per kata in `kata.toml`:

    [variants.layout]
    kind = "layout"                  # (B, H, L, d) <-> (B, L, H, d)
    arguments = ["q", "k", "v"]      # the entry points' parameters it changes
    returns = ["flash_attention.0"]  # outputs it changes: an entry point, or ".i" of a tuple

    [variants.names]
    kind = "names"                   # values: "standard" and one per table below
    torch = { q = "query", mask = "attn_mask" }

Each parameter takes one of its kind's values; the first is the standard kata's (the default),
so the standard kata is the variant with every default. A variant is graded by the standard
grader through an adapter at the grader's boundary (`checker/adapter.py`): inputs go to the
candidate in the variant's convention and its outputs come back in the standard one, so the
reference, the mutants and the diagnosis keep working in the standard frame. A convention that
changes what is computed (causal alignment where L != S) cannot be such an adapter; a kata
says why it leaves one out in `[variants.left-out]` ({en, zh}).

Stdlib only (`kata list`, `show`, `start` read it without torch). Texts live in the message
catalogue (`variant.` keys, checker/messages_variants.py).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnkata.checker.errors import KataDefinitionError, UsageError

# kind -> its fixed values (the first is the standard kata's); "names" and "layers" take
# "standard" plus the renamings the kata declares.
KINDS: dict[str, tuple[str, ...]] = {
    "layout": ("bhld", "blhd"),
    "sequence-first": ("batch-first", "sequence-first"),
    "polarity": ("attend", "masked"),
    "names": ("standard",),
    "layers": ("standard",),
    "scale": ("multiply", "temperature"),
    "flag": ("standard", "inverted"),
    "mask-shape": ("broadcast", "flat"),
}
# The catalogue id a candidate who kept another value of the parameter is diagnosed with
# (checker/diagnose/conventions.py); layer names are never enforced (weights are mapped by
# role, as in the standard kata), so "layers" has none.
MISTAKES: dict[str, str] = {
    "layout": "layout-transposed",
    "sequence-first": "layout-transposed",
    "polarity": "mask-polarity-flipped",
    "names": "argument-names-differ",
    "scale": "scale-convention-swapped",
    "flag": "flag-convention-inverted",
    "mask-shape": "mask-shape-convention",
}
# Mistakes that have no form under a parameter's value: a padding mask on the wrong axis of
# (B, 1, 1, S) where the variant returns (B, S). The per-variant check finds them as
# `not_in_variant` (checker/sets/variant_check.py); the benchmark writes them in other variants.
NOT_IN: dict[tuple[str, str], frozenset[str]] = {
    ("mask-shape", "flat"): frozenset({"padding-mask-wrong-axis"}),
}
TEMPERATURE = "temperature"  # the scale argument's name where it divides the scores
STANDARD = "standard"
RANDOM = "random"
LEFT_OUT = "left-out"


@dataclass(frozen=True)
class Param:
    """One convention a variant may change."""

    name: str  # the kata.toml key, e.g. "layout"
    kind: str
    values: tuple[str, ...]  # the first is the standard kata's
    arguments: tuple[str, ...] = ()  # the entry points' parameters it changes
    returns: tuple[str, ...] = ()  # "entry" or "entry.i": outputs it changes
    # names / layers: value -> {standard name: the variant's name}; scale / flag: the
    # argument's name in the other value ("temperature"; e.g. "is_neox_style").
    renames: dict[str, dict[str, str]] = field(default_factory=dict)
    renamed: str = ""

    @property
    def default(self) -> str:
        return self.values[0]

    @property
    def mistake(self) -> str | None:
        return MISTAKES.get(self.kind)

    def rename_map(self, value: str) -> dict[str, str]:
        """{standard argument name: the variant's} that this parameter's `value` implies."""
        if self.kind in ("names", "layers"):
            return dict(self.renames.get(value, {}))
        if value != self.default and self.kind in ("scale", "flag"):
            return {a: self.renamed for a in self.arguments}
        return {}


def parse(data: Any, path: Path) -> tuple[tuple[Param, ...], dict[str, str] | None]:
    """kata.toml's `[variants]` table -> (parameters, why conventions are left out {en, zh})."""
    if data is None:
        return (), None
    if not isinstance(data, dict):
        raise KataDefinitionError(f"{path}: field 'variants': expected a table")
    params: list[Param] = []
    note = None
    for name, spec in data.items():
        where = f"{path}: field variants.{name}"
        if not isinstance(spec, dict):
            raise KataDefinitionError(f"{where}: expected a table")
        if name == LEFT_OUT:
            if not all(
                isinstance(spec.get(lang), str) and spec[lang].strip() for lang in ("en", "zh")
            ):
                raise KataDefinitionError(f"{where}: needs an `en` and a `zh` text")
            note = {"en": spec["en"].strip(), "zh": spec["zh"].strip()}
            continue
        params.append(_param(name, spec, where))
    taken: dict[str, str] = {}
    for p in params:  # two parameters renaming one argument could not both apply
        for value in p.values:
            for old in p.rename_map(value):
                if taken.setdefault(old, p.name) != p.name:
                    raise KataDefinitionError(
                        f"{path}: variants {taken[old]!r} and {p.name!r} both rename {old!r}"
                    )
    return tuple(params), note


def _param(name: str, spec: dict[str, Any], where: str) -> Param:
    kind = spec.get("kind")
    if kind not in KINDS:
        raise KataDefinitionError(f"{where}.kind: must be one of {', '.join(KINDS)}, got {kind!r}")

    def strings(key: str) -> tuple[str, ...]:
        value = spec.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise KataDefinitionError(f"{where}.{key}: expected a list of names")
        return tuple(value)

    known = {"kind", "arguments", "returns", "renamed"}
    renames: dict[str, dict[str, str]] = {}
    if kind in ("names", "layers"):
        for value, mapping in spec.items():
            if value in known:
                continue
            if (
                not isinstance(mapping, dict)
                or not mapping
                or not all(
                    isinstance(k, str) and isinstance(v, str) and v.isidentifier() and k != v
                    for k, v in mapping.items()
                )
            ):
                raise KataDefinitionError(
                    f'{where}.{value}: expected a table {{standard name = "other name"}}'
                )
            if len(set(mapping.values())) != len(mapping):
                raise KataDefinitionError(f"{where}.{value}: two names renamed to one")
            renames[value] = dict(mapping)
        if not renames:
            raise KataDefinitionError(f"{where}: declare at least one renaming table")
        values = (STANDARD, *renames)
    else:
        unknown = set(spec) - known
        if unknown:
            raise KataDefinitionError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        values = KINDS[kind]
    renamed = spec.get("renamed", TEMPERATURE if kind == "scale" else "")
    if kind == "flag" and not (isinstance(renamed, str) and renamed.isidentifier()):
        raise KataDefinitionError(f"{where}.renamed: the flag's name in the inverted convention")
    p = Param(name, kind, values, strings("arguments"), strings("returns"), renames, renamed)
    if kind in ("layout", "sequence-first", "polarity") and not (p.arguments or p.returns):
        raise KataDefinitionError(f"{where}: name the `arguments` or `returns` it changes")
    if kind in ("scale", "flag") and len(p.arguments) != 1:
        raise KataDefinitionError(f"{where}.arguments: exactly one argument")
    if kind == "mask-shape" and (not p.returns or p.arguments):
        raise KataDefinitionError(f"{where}: changes `returns` only")
    return p


# -- a variant: {parameter: value} --------------------------------------------------------------
Variant = dict[str, str]


def complete(params: Iterable[Param], variant: Mapping[str, str] | None) -> Variant:
    """Every parameter's value (the default where `variant` says nothing)."""
    given = dict(variant or {})
    return {p.name: given.get(p.name, p.default) for p in params}


def changes(params: Iterable[Param], variant: Mapping[str, str] | None) -> Variant:
    """Only the parameters that differ from the standard kata."""
    full = complete(params, variant)
    return {p.name: full[p.name] for p in params if full[p.name] != p.default}


def key(params: Iterable[Param], variant: Mapping[str, str] | None) -> str:
    """A stable name: "standard", or "layout=blhd,mask=masked" (the non-default values)."""
    diff = changes(params, variant)
    return ",".join(f"{k}={v}" for k, v in diff.items()) or STANDARD


def every(params: tuple[Param, ...]) -> list[Variant]:
    """Every variant, the standard kata first."""
    return [
        dict(zip([p.name for p in params], combo, strict=True))
        for combo in itertools.product(*(p.values for p in params))
    ]


def _rank(*parts: str) -> int:
    return int.from_bytes(
        hashlib.sha256("\0".join(("attnkata-variant", *parts)).encode()).digest()[:16], "big"
    )


def expressible(params: tuple[Param, ...], variant: Mapping[str, str], mistake: str) -> bool:
    """Can code with `mistake` be written in `variant`'s conventions at all?"""
    full = complete(params, variant)
    return not any(mistake in NOT_IN.get((p.kind, full[p.name]), ()) for p in params)


def ordering(params: tuple[Param, ...], secret: str, kata_id: str) -> list[Variant]:
    """Every variant but the standard kata, in an order only the secret decides: a class's
    pool of variants is the first few of them that pass their checks."""
    return sorted(every(params)[1:], key=lambda v: _rank(secret, kata_id, key(params, v)))


def pick(pool: list[Variant], secret: str, kata_id: str, who: str) -> Variant:
    """The variant of student `who` among `pool`, decided by the secret and the id alone:
    the same secret and id give the same variant again, whoever else is on the roster."""
    return dict(pool[_rank(secret, kata_id, who) % len(pool)]) if pool else {}


def seeded_draw(params: tuple[Param, ...], seed: int, kata_id: str) -> Variant:
    """A variant (never the standard kata, when there is another) that `seed` decides: a mock
    interview's, reproducible with its seed."""
    order = ordering(params, f"mock-{seed}", kata_id)
    return complete(params, order[0]) if order else complete(params, {})


def random_draw(params: tuple[Param, ...], kata_id: str) -> Variant:
    """A fresh variant for practice (`kata start KATA --variant random`): any but the standard
    kata, when there is another."""
    import secrets

    choices = every(params)[1:] or every(params)
    return dict(choices[secrets.randbelow(len(choices))]) if choices and params else {}


def parse_spec(params: tuple[Param, ...], spec: str, kata_id: str) -> Variant:
    """`--variant` text: "standard", "random", or "layout=blhd,mask=masked" (others default)."""
    import difflib

    text = spec.strip()
    if not params and text not in ("", STANDARD):
        raise UsageError(f"kata {kata_id} has no variants", "practise the standard kata")
    if text in ("", STANDARD):
        return complete(params, {})
    if text == RANDOM:
        return complete(params, random_draw(params, kata_id))
    by_name = {p.name: p for p in params}
    given: Variant = {}
    for part in filter(None, (x.strip() for x in text.split(","))):
        name, sep, value = (s.strip() for s in part.partition("="))
        if not sep or name not in by_name:
            close = difflib.get_close_matches(name, list(by_name), n=1)
            raise UsageError(
                f"unknown variant parameter {name!r} of {kata_id}"
                + (f" (did you mean {close[0]!r}?)" if close else ""),
                f"write e.g. {describe_space(params)}",
            )
        if value not in by_name[name].values:
            raise UsageError(
                f"{name} of {kata_id} takes {', '.join(by_name[name].values)}, not {value!r}"
            )
        given[name] = value
    return complete(params, given)


def describe_space(params: tuple[Param, ...]) -> str:
    """ "layout=bhld|blhd,mask=attend|masked" (the first value is the standard kata's)."""
    return ",".join(f"{p.name}={'|'.join(p.values)}" for p in params) or STANDARD


def space_size(params: tuple[Param, ...]) -> int:
    n = 1
    for p in params:
        n *= len(p.values)
    return n


# -- texts -----------------------------------------------------------------------------------
def _code(names: Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def sentence(p: Param, value: str, lang: str) -> str:
    """What value `value` of parameter `p` means, in a statement's words."""
    from attnkata.checker.messages import msg

    args, rets = _code(p.arguments), _code(r.split(".")[0] for r in p.returns)
    if p.kind in ("names", "layers"):
        mapping = p.rename_map(value)
        if not mapping:
            return msg(f"variant.{p.kind}.standard", lang)
        pairs = msg("list_sep", lang).join(f"`{a}` → `{b}`" for a, b in mapping.items())
        return msg(f"variant.{p.kind}.renamed", lang, pairs=pairs)
    return msg(
        f"variant.{p.kind}.{value}",
        lang,
        args=args or rets,
        returns=rets or args,
        arg=p.arguments[0] if p.arguments else "",
        renamed=p.renamed,
    )


def conventions_block(params: tuple[Param, ...], variant: Mapping[str, str], lang: str) -> str:
    """The statement's "your conventions" section (Markdown) for a non-standard variant."""
    from attnkata.checker.messages import msg

    full = complete(params, variant)
    lines = [f"## {msg('variant.heading', lang)}", "", msg("variant.intro", lang), ""]
    lines += [f"- {sentence(p, full[p.name], lang)}" for p in params]
    return "\n".join(lines).rstrip() + "\n"


def summary(params: tuple[Param, ...], variant: Mapping[str, str], lang: str) -> list[str]:
    """One line per parameter that differs from the standard kata (for results and reports)."""
    full = complete(params, variant)
    return [sentence(p, full[p.name], lang) for p in params if full[p.name] != p.default]
