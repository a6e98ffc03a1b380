"""The mistake catalogue: ids, severities and bilingual texts of every mistake `kata check`
can name. The data lives in `mistakes.toml` next to this file (package data).

Only stdlib here: `kata mistakes` and `kata explain` list the catalogue without importing
torch.
"""

from __future__ import annotations

import math
import re
import string
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from attnkata.checker.catalog import LANGS, Text
from attnkata.checker.models import SEVERITIES

CATALOGUE_PATH = Path(__file__).with_name("mistakes.toml")
EVERY_KATA = "*"
NO_MATCH = "no-known-mistake"
# Mistakes of cost, not of values: a file with only these fails the `efficient` tier alone.
COST_IDS = frozenset(
    {
        "window-materializes-full-scores",
        "materializes-full-scores",
        "mla-materializes-cache-heads",
        "paged-gathers-dense-kv",
    }
)

# How each parameter reads when no candidate numbers are at hand (`kata explain`, `kata mistakes`).
SYMBOLS: dict[str, str] = {
    "d": "d",
    "D": "D",
    "H": "H",
    "Hkv": "Hkv",
    "g": "g",
    "L": "L",
    "S": "S",
    "W": "W",
    "B": "B",
    "sqrt_d": "sqrt(d)",
    "inv_sqrt_d": "1/sqrt(d)",
    "inv_d": "1/d",
    "sqrt_D": "sqrt(D)",
    "sqrt_H": "sqrt(H)",
    "offset": "S - L",
    "kv_width": "Hkv * d",
    "nope": "nope",
    "rope": "rope",
    "qk": "nope + rope",
    "got_keys": "W + 1 (or W - 1)",
    "elements": "L * S",
    "shape": "(..., L, S)",
    "op": "an op",
    "api": "a banned API",
    "in_dtype": "float32",
    "out_dtype": "float64",
    "which": "an input",
    "op_note": "",
    "scale": "s",
    "closest": "",
    "warning": "a RuntimeWarning",
    "got_type": "another type",
    "want_type": "the type of the reference's output",
    "inputs": "some input shapes",
    "layer_note": "the names and shapes of its layers decide nothing.",
    "P": "P",  # cached tokens (kv-cache, mla-decode)
    "C": "C",  # attention-sinks: cached tokens, T = C + L, N = n_sink + window, e evicted
    "T": "T",
    "n_sink": "n_sink",
    "e": "e",
    "c": "c",  # alibi: the closest power of two <= H, head 0's slope, the slopes after c
    "m0": "m_0",
    "extra_slopes": "2^(-4(2t+1)/c), t = 0 .. H - c - 1",
    "top_k": "top_k",
    "block": "block",
    "window": "window",
    "w": "w",
    "nb": "nb",  # sparse katas
    "block_q": "block_q",
    "block_k": "block_k",  # flash-attention tiles
    "N": "N",  # flash-decoding splits
    "tensor": "a tensor",  # the Triton katas: what a load or store ran outside of
    "ops": "softmax, exp, matmul...",
}

SYMBOLS_ZH: dict[str, str] = {
    "got_keys": "W + 1（或 W - 1）",
    "op": "某个算子",
    "api": "被禁止的 API",
    "which": "某个输入",
    "warning": "RuntimeWarning",
    "got_type": "其他类型",
    "want_type": "参考输出的类型",
    "inputs": "某些输入形状",
    "layer_note": "它的层名和形状都无法确定对应关系。",
    "tensor": "某个张量",
}


@dataclass(frozen=True)
class Mistake:
    id: str
    katas: tuple[str, ...]
    severity: str
    title: Text
    explanation: Text
    fix: Text
    hides: Text
    section: Text
    grid: bool = False
    params: tuple[str, ...] = field(default=())  # the {names} its texts use
    # kata -> {"title"/"explanation"/"fix"/"hides"/"section": Text}: how the mistake reads in
    # a kata where the shared words would describe another kata's code (`[mistake.kata.<id>]`).
    for_kata: dict[str, dict[str, Text]] = field(default_factory=dict, compare=False, hash=False)

    def applies_to(self, kata: str) -> bool:
        return EVERY_KATA in self.katas or kata in self.katas

    def text(self, what: str, kata: str | None = None) -> Text:
        """One of the texts, in the words of `kata` where the catalogue has its own."""
        own = self.for_kata.get(kata or "", {})
        return own.get(what) or getattr(self, what)

    def link(self, kata: str | None, lang: str) -> str:
        """Where the statement covers it: `kata show <kata>` plus the section name."""
        target = kata or (self.katas[0] if self.katas and self.katas[0] != EVERY_KATA else "sdpa")
        from attnkata.checker.messages import msg

        section = self.text("section", kata).get(lang)
        return msg("mistakes.link", lang, kata=target, section=section, id=self.id)

    def render(
        self, what: str, lang: str, params: dict[str, Any] | None = None, kata: str | None = None
    ) -> str:
        """`title`/`explanation`/`fix`/`hides` in `lang`, with the candidate's numbers filled in
        (symbols where a number is unknown); in `kata`'s own words where it has them."""
        text: Text = self.text(what, kata)
        rendered = text.get(lang).format_map(_Params(params or {}, lang))
        # Without numbers "H = {H}" would read "H = H": keep one side. Symbols come back
        # wrapped in markers so that only they are collapsed, never the text's own "x = x * s".
        return _strip_marks(_collapse(rendered))


_OPEN, _CLOSE = "\x00", "\x01"
# " = " followed by symbols only (joined by operators), e.g. " = \x00D\x01 / \x00H\x01".
_SYMBOLIC_RHS = re.compile(r" = (\x00[^\x00\x01]*\x01(?: [/*+-] \x00[^\x00\x01]*\x01)*)")


def _strip_marks(text: str) -> str:
    return text.replace(_OPEN, "").replace(_CLOSE, "")


def _collapse(text: str) -> str:
    """Drop " = <symbols>" where the text just before it already says the same thing."""
    while True:
        for m in _SYMBOLIC_RHS.finditer(text):
            rhs = _strip_marks(m.group(1))
            left = _strip_marks(text[: m.start()])
            before = left[-len(rhs) - 1 : -len(rhs)] if len(left) > len(rhs) else ""
            if left.endswith(rhs) and not (before.isalnum() or before in "_./"):
                text = text[: m.start()] + text[m.end() :]
                break
        else:
            return text


class _Params(dict):
    """format_map source: given values (numbers shown compactly), else the symbol."""

    def __init__(self, given: dict[str, Any], lang: str = "en") -> None:
        super().__init__({k: _fmt(v) for k, v in given.items()})
        self.lang = lang

    def __missing__(self, key: str) -> str:
        symbol = (
            SYMBOLS_ZH[key] if self.lang == "zh" and key in SYMBOLS_ZH else SYMBOLS.get(key, key)
        )
        return f"{_OPEN}{symbol}{_CLOSE}"


def _fmt(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000:
        return f"{value:,}"
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.3g}" if abs(value) < 1e4 else f"{value:.3e}"
    return str(value)


def derived_params(params: dict[str, Any]) -> dict[str, Any]:
    """Numbers the texts quote, computed from the probe's sizes (d, D, H, Hkv, L, S, ...)."""
    out = dict(params)
    d, D, H, Hkv = params.get("d"), params.get("D"), params.get("H"), params.get("Hkv")
    if isinstance(d, int | float) and d > 0:
        out.setdefault("sqrt_d", math.sqrt(d))
        out.setdefault("inv_sqrt_d", 1 / math.sqrt(d))
        out.setdefault("inv_d", 1 / d)
    if isinstance(D, int | float) and D > 0:
        out.setdefault("sqrt_D", math.sqrt(D))
    if isinstance(H, int | float) and H > 0:
        out.setdefault("sqrt_H", math.sqrt(H))
    if isinstance(H, int) and isinstance(Hkv, int) and Hkv > 0:
        out.setdefault("g", H // Hkv)
        if isinstance(d, int):
            out.setdefault("kv_width", Hkv * d)
    if isinstance(params.get("L"), int) and isinstance(params.get("S"), int):
        out.setdefault("offset", params["S"] - params["L"])
    if isinstance(params.get("nope"), int) and isinstance(params.get("rope"), int):
        out.setdefault("qk", params["nope"] + params["rope"])
    return out


def _text(entry: dict[str, Any], name: str, where: str) -> Text:
    value = entry.get(name)
    if not isinstance(value, dict):
        raise ValueError(f"{where}: `{name}` must be a table with en and zh")
    for lang in LANGS:
        if not isinstance(value.get(lang), str) or not value[lang].strip():
            raise ValueError(f"{where}: `{name}.{lang}` missing or empty")
    return Text(en=value["en"], zh=value["zh"])


def _fields(text: Text) -> set[str]:
    names: set[str] = set()
    for s in (text.en, text.zh):
        names |= {f for _, f, _, _ in string.Formatter().parse(s) if f}
    return names


def parse(data: dict[str, Any], origin: str = "catalogue") -> dict[str, Mistake]:
    """Validate the catalogue's TOML data; raises ValueError naming the entry on any problem."""
    out: dict[str, Mistake] = {}
    for i, entry in enumerate(data.get("mistake", [])):
        mid = entry.get("id")
        where = f"{origin}: mistake[{i}] ({mid})"
        if not isinstance(mid, str) or not mid or mid != mid.lower() or " " in mid or "_" in mid:
            raise ValueError(f"{where}: `id` must be kebab-case")
        if mid in out:
            raise ValueError(f"{where}: duplicate id")
        severity = entry.get("severity")
        if severity not in SEVERITIES:
            raise ValueError(f"{where}: severity must be one of {SEVERITIES}")
        katas = entry.get("katas")
        if not isinstance(katas, list) or not katas or not all(isinstance(k, str) for k in katas):
            raise ValueError(f"{where}: `katas` must be a non-empty list of kata ids (or ['*'])")
        texts = {n: _text(entry, n, where) for n in TEXTS}
        for_kata = _kata_texts(entry, katas, where)
        params: set[str] = set()
        for t in [*texts.values(), *(t for own in for_kata.values() for t in own.values())]:
            try:
                params |= _fields(t)
            except ValueError as exc:
                raise ValueError(
                    f"{where}: bad braces ({exc}); literal braces must be doubled"
                ) from None
        if unknown := sorted(p for p in params if p not in SYMBOLS):
            raise ValueError(f"{where}: parameters without a symbol in SYMBOLS: {unknown}")
        out[mid] = Mistake(
            id=mid,
            katas=tuple(katas),
            severity=severity,
            grid=bool(entry.get("grid", False)),
            params=tuple(sorted(params)),
            for_kata=for_kata,
            **texts,
        )
    return out


TEXTS = ("title", "explanation", "fix", "hides", "section")


def _kata_texts(entry: dict[str, Any], katas: list[str], where: str) -> dict[str, dict[str, Text]]:
    """`[mistake.kata.<id>]` tables: a kata's own words for some of the texts."""
    own = entry.get("kata", {})
    if not isinstance(own, dict):
        raise ValueError(f"{where}: `kata` must be a table of kata ids")
    out: dict[str, dict[str, Text]] = {}
    for kata, table in own.items():
        if kata not in katas or not isinstance(table, dict) or not table:
            raise ValueError(f"{where}: `kata.{kata}` must be a table, for a kata in `katas`")
        if unknown := sorted(set(table) - set(TEXTS)):
            raise ValueError(f"{where}: `kata.{kata}` has unknown texts {unknown}")
        out[kata] = {n: _text(table, n, f"{where} kata.{kata}") for n in table}
    return out


@cache
def catalogue() -> dict[str, Mistake]:
    """Every catalogued mistake by id, in file order."""
    return parse(tomllib.loads(CATALOGUE_PATH.read_text(encoding="utf-8")), str(CATALOGUE_PATH))


def get(mistake_id: str) -> Mistake:
    return catalogue()[mistake_id]


def for_kata(kata: str) -> list[Mistake]:
    """The mistakes that apply to `kata` (kata-specific first, then those of every kata)."""
    items = [m for m in catalogue().values() if m.applies_to(kata) and m.id != NO_MATCH]
    return sorted(items, key=lambda m: EVERY_KATA in m.katas)
