"""The diagnosis of a file graded in a variant: which conventions does it really follow?

A variant is graded through an adapter (checker/adapter.py): the standard grader and
diagnosis see the file in the standard frame, so a mistake relative to the variant is named
as usual. What the standard mutants cannot name is code that is right in *another* variant's
conventions, the commonest way to fail one: PyTorch's mask polarity kept where the variant's
masks mean "masked out", (B, H, L, d) kept where the variant is (B, L, H, d), the statement's
argument names kept where the variant renames them. So, before the engine runs:

1. the file is probed (the kata's diagnosis probes, checker/diagnose/engine.py) through its
   own variant's adapter; if it matches the reference on every probe, its conventions are
   not the problem and the engine diagnoses as usual;
2. else through the adapters of nearby variants, nearest first: each parameter set to each of
   its other values, then the variant's changed parameters reset to the standard kata's
   together. The first variant under which the file matches the reference on every probe is
   the convention it follows: one essential diagnosis per parameter where it differs from the
   student's variant (`layout-transposed`, `mask-polarity-flipped`, `argument-names-differ`...),
   in the variant's own words. Layer names are never searched: they are not enforced.

Where no variant explains the file exactly, the engine's own diagnosis stands, and a finding
whose id is a changed parameter's mistake (e.g. `mask-polarity-flipped` from the standard
mutant) gets the variant's words instead of the standard kata's.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path
from typing import Any

from attnkata.checker import mistakes as cat
from attnkata.checker import variants as vs
from attnkata.checker.adapter import Adapted, Conventions
from attnkata.checker.catalog import Kata
from attnkata.checker.diagnose.behaviour import differs, flat
from attnkata.checker.diagnose.engine import CallBudget, _local_observations, load_spec
from attnkata.checker.diagnose.subjects import Observed, one_thread
from attnkata.checker.messages import msg
from attnkata.checker.models import Diagnostic, Result, SourceRef
from attnkata.checker.proxy import (
    CandidateCrashed,
    CandidateExited,
    CandidateMemory,
    CandidateTimeout,
)
from attnkata.checker.variant_text import methods

MAX_VARIANTS = 24  # nearby variants tried at most
SEARCH_BUDGET = 2.0  # CPU seconds of the candidate's own, as the engine's probes count them
# The runner's generic findings that a convention kept from elsewhere explains.
EXPLAINED = {"exception", "signature-mismatch"}


def neighbours(kata: Kata, centre: dict[str, str] | None = None) -> list[dict[str, str]]:
    """Variants near `centre` (the kata's own variant by default), nearest first: one
    parameter at another value, then the parameters where `centre` differs from the standard
    kata reset together (the standard kata last). Never `kata`'s own variant or `centre`."""
    own = kata.variant_values
    centre = centre or own
    graded = [p for p in kata.variants if p.kind in vs.MISTAKES]
    out: list[dict[str, str]] = []

    def add(v: dict[str, str]) -> None:
        if v not in (own, centre) and v not in out:
            out.append(v)

    for p in graded:
        for value in p.values:
            add({**centre, p.name: value})
    changed = [p for p in graded if centre[p.name] != p.default]
    for r in range(2, len(changed) + 1):
        for subset in itertools.combinations(changed, r):
            add({**centre, **{p.name: p.default for p in subset}})
    return out[:MAX_VARIANTS]


def _parameters(source: str, entry_points: tuple[str, ...]) -> set[str] | None:
    """Every parameter name of the entry points in `source` (a class's __init__ and forward)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    found: set[str] = set()
    for node in tree.body:
        if getattr(node, "name", None) not in entry_points:
            continue
        fns = [node] if isinstance(node, ast.FunctionDef) else []
        if isinstance(node, ast.ClassDef):
            fns = methods(node)
        for fn in fns:
            a = fn.args
            found |= {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]} - {"self"}
    return found


def names_followed(kata: Kata, source: str) -> dict[str, str]:
    """{parameter: value} of the renaming parameters (argument names, a scale that is a
    temperature, an inverted flag) whose names the source's signatures use, where exactly
    one value fits: read from the code itself, certain, and invisible to probes that pass
    those arguments by position."""
    have = _parameters(source, kata.entry_points)
    if not have:
        return {}
    out = {}
    for p in kata.variants:
        if p.kind not in ("names", "scale", "flag"):
            continue
        touched = {a for value in p.values for a in p.rename_map(value)}
        if not touched:
            continue

        def fits(value: str, p: vs.Param = p, touched: set[str] = touched) -> bool:
            mapping = p.rename_map(value)
            return {mapping.get(a, a) for a in touched} <= have

        fitting = [v for v in p.values if fits(v)]
        if len(fitting) == 1:
            out[p.name] = fitting[0]
    return out


class _Stop(Exception):
    """The candidate crashed, hung or ran out of the budget: no further variant is tried."""


def observe(
    kata: Kata,
    candidate: Any,
    variant: dict[str, str],
    budget: CallBudget,
    until: list[Observed] | None = None,
) -> list[Observed] | None:
    """The candidate's observations on the diagnosis probes through `variant`'s adapter;
    with `until` (the reference's), None at the first probe that differs from it."""
    spec = load_spec(kata.id)
    assert spec is not None
    adapted = Adapted(candidate, Conventions(kata, variant))
    out = []
    for i, probe in enumerate(spec.probes):
        if budget.used_up:
            raise _Stop()
        c = budget.call(spec.subject.candidate_call, adapted, probe)
        if isinstance(
            c.failure, CandidateCrashed | CandidateExited | CandidateTimeout | CandidateMemory
        ):
            raise _Stop()
        if until is not None and not _same(c, until[i]):
            return None
        out.append(c)
    return out


def _same(a: Observed, b: Observed) -> bool:
    n = flat(b)
    return (b.ok or not a.ok) and not differs(a, b, n[1].size if n is not None else 0).any()


def exact_mistake(kata: Kata, obs: list[Observed]) -> str | None:
    """The catalogued mistake one of whose spellings `obs` reproduces on every probe, where
    `obs` returns wrong values somewhere (not only errors): the engine names that one. A
    convention kept from elsewhere that is also a catalogued mistake (a (B, S) padding mask,
    a cache concatenated along the variant's heads axis) is diagnosed as the catalogue knows
    it; code that only fails (shapes that do not line up) is left to the convention search,
    which tells a layout kept from elsewhere from a mistake that raises alike."""
    ref, muts = _local_observations(kata.id)
    if not any(c.ok and not _same(c, r) for c, r in zip(obs, ref, strict=True)):
        return None
    for mid, spellings in muts.items():
        if any(all(_same(c, m) for c, m in zip(obs, outs, strict=True)) for outs in spellings):
            return mid
    return None


def follows(kata: Kata, candidate: Any, source: str | None = None) -> dict[str, str] | None:
    """The nearby variant whose conventions `candidate` (the raw, unadapted handle) follows
    exactly on every diagnosis probe, where its own variant's do not and where no catalogued
    mistake explains it exactly; None otherwise. With `source`, names that the signatures
    show are taken as they are."""
    spec = load_spec(kata.id)
    if spec is None or not kata.variant or candidate.load_error is not None:
        return None
    own = kata.variant_values
    centre = {**own, **(names_followed(kata, source) if source else {})}
    ref, _ = _local_observations(kata.id)
    saved = candidate.limits
    budget = CallBudget(SEARCH_BUDGET)
    try:
        with one_thread():
            mine = observe(kata, candidate, centre, budget)
            assert mine is not None
            if all(_same(c, r) for c, r in zip(mine, ref, strict=True)):
                return None if centre == own else centre
            if centre == own and exact_mistake(kata, mine) is not None:
                return None
            for variant in neighbours(kata, centre):
                if any(variant[n] != v for n, v in centre.items() if v != own[n]):
                    continue  # keep what the source shows
                if observe(kata, candidate, variant, budget, until=ref) is not None:
                    return variant
    except _Stop:
        return None
    finally:
        candidate.limits = saved
    return None


def _entry_line(kata: Kata, source: str) -> list[SourceRef]:
    """The candidate's def / class line of its first entry point (where its conventions show)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines()
    for node in tree.body:
        if getattr(node, "name", None) in kata.entry_points:
            return [SourceRef(line=node.lineno, text=lines[node.lineno - 1].strip())]
    return []


def _yours_and_kept(kata: Kata, p: vs.Param, kept: str, lang: str) -> tuple[str, str]:
    return (
        vs.sentence(p, kata.variant_values[p.name], lang).rstrip(".。"),
        vs.sentence(p, kept, lang).rstrip(".。"),
    )


def convention_diagnostics(
    kata: Kata, followed: dict[str, str], source: str, lang: str, by_names: bool = False
) -> list[Diagnostic]:
    """One essential diagnosis per parameter where `followed` differs from `kata`'s variant
    (`by_names`: read from the signatures alone, not from the probes)."""
    spec = load_spec(kata.id)
    n = len(spec.probes) if spec is not None else 0
    evidence = (
        msg("variant.names_evidence", lang)
        if by_names
        else msg("variant.follows_evidence", lang, n=n)
    )
    out: list[Diagnostic] = []
    refs = _entry_line(kata, source)
    seen: set[str] = set()
    for p in kata.variants:
        kept = followed[p.name]
        if kept == kata.variant_values[p.name] or p.mistake is None:
            continue
        m = cat.get(p.mistake)
        yours, other = _yours_and_kept(kata, p, kept, lang)
        said = msg("variant.follows", lang, kept=other, yours=yours)
        if p.mistake in seen:  # two parameters of one kind (a cache layout and x's): one finding
            next(d for d in out if d.id == p.mistake).explanation += " " + said
            continue
        seen.add(p.mistake)
        out.append(
            Diagnostic(
                id=p.mistake,
                severity="essential",
                title=m.render("title", lang),
                explanation=said,
                fix=msg("variant.fix", lang, yours=yours),
                evidence=[evidence],
                source=list(refs),
                link=m.link(kata.id, lang),
                data={
                    "variant_parameter": p.name,
                    "variant_value": kata.variant_values[p.name],
                    "followed": kept,
                },
            )
        )
    return out


def relative(kata: Kata, found: list[Diagnostic], lang: str) -> None:
    """Findings of the engine whose id is a changed parameter's mistake, in the variant's words
    (the catalogue's texts state the standard kata's convention)."""
    for p in kata.variants:
        own = kata.variant_values[p.name]
        if own == p.default or p.mistake is None:
            continue
        for d in found:
            if d.id == p.mistake:
                others = [v for v in p.values if v != own]
                yours, other = _yours_and_kept(kata, p, others[0], lang)
                d.explanation = msg("variant.relative", lang, kept=other, yours=yours)
                d.fix = msg("variant.fix", lang, yours=yours)


def diagnose_variant(
    kata: Kata,
    path: Path,
    source: str,
    result: Result,
    candidate: Any,
    graded: Any,
    lang: str,
) -> list[Diagnostic]:
    """The diagnosis of a failing `result` of `kata`'s variant: a convention kept from another
    variant (certain, alone), else the engine's, in the variant's words. `candidate` is the
    raw handle, `graded` the adapted one the tests used."""
    from attnkata.checker.diagnose import diagnose_result

    try:
        followed = follows(kata, candidate, source)
    except Exception:  # a bug here must never cost the candidate their diagnosis
        import os

        if os.environ.get("ATTNKATA_STRICT_DIAGNOSIS"):
            raise
        followed = None
    if followed is not None:
        found = convention_diagnostics(kata, followed, source, lang)
        if found:
            result.diagnostics[:] = [d for d in result.diagnostics if d.id not in EXPLAINED]
            return found
    found = diagnose_result(kata, path, source, result, graded, lang)
    relative(kata, found, lang)
    # Names the signatures show are certain even where another mistake hides the rest.
    shown = {**kata.variant_values, **names_followed(kata, source)}
    if shown != kata.variant_values:
        named = convention_diagnostics(kata, shown, source, lang, by_names=True)
        found = named + [d for d in found if d.id not in {n.id for n in named}]
    return found
