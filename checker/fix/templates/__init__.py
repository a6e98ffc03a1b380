"""Repair templates, per catalogued mistake id.

A template is a generator `(site, diagnostic, kata) -> Candidate...`: it reads the candidate's
file (`checker/fix/site.py`: libcst, nearest the diagnosis' lines first) and proposes whole
edited files, its best guess first, then the same idea on the other expressions nearby
(another softmax call, another fill value, another way to write the offset). It never
decides anything: every candidate is graded (`checker/fix/verify.py`) and most are thrown
away. So a template may be generous in what it tries, but cheap ones come first: the search
grades at most `search.PER_MISTAKE` candidates per mistake.

Adding one: write a generator in the module of its family and register it with
`@template("mistake-id", ...)`; `tests/test_fix.py` repairs the mutant fixture of every id
that has one (tests/fixtures/mistakes/).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnkata.checker.catalog import Kata
    from attnkata.checker.fix.site import Candidate, Site
    from attnkata.checker.models import Diagnostic

Template = Callable[["Site", "Diagnostic", "Kata"], Iterable["Candidate"]]

_FAMILIES = (
    "softmax",
    "masks",
    "scale",
    "heads",
    "shapes",
    "flash",
    "positions",
    "sparse",
    "alibi",
    "sinks",
    "decoding",
    "bands",
    "kernels",
)
_REGISTRY: dict[str, list[Template]] = {}
_loaded = False


def template(*ids: str) -> Callable[[Template], Template]:
    def register(fn: Template) -> Template:
        for mid in ids:
            _REGISTRY.setdefault(mid, []).append(fn)
        return fn

    return register


def _load() -> None:
    global _loaded
    if not _loaded:
        for family in _FAMILIES:
            importlib.import_module(f"{__name__}.{family}")
        _loaded = True


def has(mistake: str) -> bool:
    _load()
    return mistake in _REGISTRY


def ids() -> list[str]:
    _load()
    return sorted(_REGISTRY)


def propose(mistake: str, site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """Every template's candidates for `mistake`, in registration order. A template that
    breaks on an unusual file is skipped (the others still run): a repair is extra, it must
    never cost the candidate the diagnosis they already have."""
    _load()
    for fn in _REGISTRY.get(mistake, []):
        try:
            yield from fn(site, d, kata)
        except Exception:
            if os.environ.get("ATTNKATA_STRICT_FIX"):
                raise
            continue
