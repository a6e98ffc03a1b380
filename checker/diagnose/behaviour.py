"""Behavioural matching: which catalogued mutant does the candidate behave like?

Every probe output is flattened to a vector of elements plus one "structure" element (its
kind and shape). On each probe three comparisons are made, element by element:

    dev   = candidate differs from the reference      (what is wrong)
    sig_k = mutant k differs from the reference        (what mistake k changes)
    exp_k = candidate differs from mutant k            (where k fails to explain it)

Mutant k matches *exactly* when exp_k is empty on every probe. When no mutant matches
exactly, a set of mutants can still explain the candidate jointly (two independent
mistakes): each must be *present* (wherever it changes the output, the candidate changed
it the same way: sig_k & exp_k empty) and together their signatures must cover every
element of dev. A mistake with several spellings is also present when the candidate has
what all of them share (`_family_region`: it changes every element they all change, to
their common value where they agree on a finite one, grossly elsewhere), for a spelling
no mutant has. Present mistakes that cover only part of dev are returned as `partial`
(informative, never a verdict); the best partial fit is also reported as "closest" for the
honest no-known-mistake message. Interacting pairs are searched in `pairs.py`.

Errors compare by exception type and message with the numbers taken out, so a mutant
that raises "t() expects a tensor with <= 2 dimensions" matches a candidate that raises
it on the same probes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import torch

from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.diagnose.subjects import Observed, call_local
from attnkata.checker.sandbox.wire import Opaque

_DIGITS = re.compile(r"\d+")
FAMILY = -1  # the variant index of a match by a family's shared behaviour (no single spelling)
REGION_MAX_SHARE = 0.35  # a family matched by its shared behaviour changes at most this share


def _norm_error(err: tuple[str, str]) -> tuple[str, str]:
    return err[0], _DIGITS.sub("#", err[1]).strip()[:300]


def flatten(value: Any) -> tuple[Any, np.ndarray] | None:
    """(structure, float64 values) of an output; None when it holds something not numeric."""
    if isinstance(value, torch.Tensor):
        t = value.detach().to("cpu")
        if t.is_complex():
            return None
        return ("tensor", tuple(t.shape)), t.to(torch.float64).reshape(-1).numpy()
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "fiub":
            return None
        return ("ndarray", value.shape), np.asarray(value, dtype=np.float64).reshape(-1)
    if isinstance(value, bool | int | float) and not isinstance(value, Opaque):
        return ("scalar", ()), np.array([float(value)])
    if isinstance(value, tuple | list):
        parts = [flatten(v) for v in value]
        if any(p is None for p in parts):
            return None
        structure = ("seq", tuple(p[0] for p in parts))  # type: ignore[index]
        values = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)  # type: ignore[index]
        return structure, values
    return None


# An output this much larger than the reference's (elements) is simply "differs": it is never
# converted to float64 (a 64 MiB uint8 reply would take 512 MiB), so the diagnosis' memory
# stays bounded by the probes' own sizes.
SIZE_MARGIN, SIZE_SLACK = 4, 4096


def numel(value: Any) -> int:
    """How many elements `flatten(value)` would hold, without converting anything."""
    if isinstance(value, torch.Tensor):
        return value.numel()
    if isinstance(value, np.ndarray):
        return int(value.size)
    if isinstance(value, tuple | list):
        return sum(numel(v) for v in value)
    return 1


def oversized(obs: Observed, n: int) -> bool:
    """The output is far larger than the reference's `n` elements: not worth converting."""
    return obs.ok and numel(obs.value) > SIZE_MARGIN * n + SIZE_SLACK


def flat(obs: Observed) -> tuple[Any, np.ndarray] | None:
    """flatten(obs.value), kept on the observation: the reference's and the mutants' outputs
    live as long as the process (engine._local_observations), and a `kata watch` re-check
    would otherwise convert them all to float64 again."""
    cached = obs.__dict__.get("_flat")
    if cached is None or cached[0] is not obs.value:
        cached = obs.__dict__["_flat"] = (obs.value, flatten(obs.value))
    return cached[1]


def differs_kept(a: Observed, b: Observed, n: int) -> np.ndarray:
    """differs(a, b, n) for two observations that never change (a mutant's and the
    reference's): computed once per pair, kept on `a`. Read-only: callers combine it into
    new arrays, never write into it."""
    memo = a.__dict__.setdefault("_differs", {})
    hit = memo.get(id(b))
    if hit is None or hit[0] is not b or hit[1] != n:
        hit = memo[id(b)] = (b, n, differs(a, b, n))
        hit[2].flags.writeable = False
    return hit[2]


def _dtype_of(value: Any) -> str | None:
    if isinstance(value, torch.Tensor | np.ndarray):
        return str(value.dtype).replace("torch.", "")
    if isinstance(value, tuple | list) and value:
        return _dtype_of(value[0])
    return None


def _tolerance(*values: Any) -> tuple[float, float]:
    """(atol, rtol): float64 results agree to ~1e-12 unless a mistake moves them by >= 1e-2."""
    low = any(_dtype_of(v) in ("float32", "float16", "bfloat16") for v in values)
    return (1e-4, 1e-3) if low else (1e-6, 1e-5)


def differs(a: Observed, b: Observed, n: int) -> np.ndarray:
    """Bool vector of length n + 1 (n elements of the reference's output, then the structure
    element): True where `a` and `b` differ."""
    out = np.ones(n + 1, dtype=bool)
    if a.error is not None or b.error is not None:
        if (
            a.error is not None
            and b.error is not None
            and _norm_error(a.error) == _norm_error(b.error)
        ):
            out[:] = False
        return out
    if oversized(a, n) or oversized(b, n):
        return out
    fa, fb = flat(a), flat(b)
    if fa is None or fb is None:
        return out
    (sa, va), (sb, vb) = fa, fb
    if va.shape != vb.shape:
        return out
    atol, rtol = _tolerance(a.value, b.value)
    both_nan = np.isnan(va) & np.isnan(vb)
    with np.errstate(invalid="ignore", over="ignore"):
        same_inf = np.isinf(va) & (va == vb)
        # (finite against infinite is never close: |x - inf| <= rtol * inf would say so)
        close = (np.abs(va - vb) <= atol + rtol * np.abs(vb)) & np.isfinite(vb)
    same_structure = _shape_only(sa) == _shape_only(sb) and sa[0] == sb[0]
    if va.size != n:
        # Both differ from the reference's shape (e.g. both return the weights): they are
        # the same or not as a whole.
        out[:] = not (same_structure and bool((both_nan | same_inf | close).all()))
        return out
    out[:n] = ~(both_nan | same_inf | close)
    out[n] = not same_structure
    return out


def _shape_only(structure: Any) -> Any:
    return structure[1] if isinstance(structure, tuple) and len(structure) == 2 else structure


@dataclass
class Verdict:
    """Behavioural result. `matched`: mistake id -> the probes on which its signature showed
    (and the candidate reproduced it). `exact`: a single mutant reproduces every probe."""

    deviates: bool
    matched: dict[str, list[str]] = field(default_factory=dict)
    variant: dict[str, int] = field(default_factory=dict)
    exact: bool = False
    ambiguous: list[str] = field(default_factory=list)
    closest: tuple[str, float] | None = None  # (id, share of the deviation it explains)
    failing_probes: list[str] = field(default_factory=list)
    # Mistakes reproduced wherever they show, which together explain only part of the
    # deviation: id -> (variant, share of the deviation it explains, probes it shows on).
    partial: dict[str, tuple[int, float, list[str]]] = field(default_factory=dict)


class Comparison(NamedTuple):
    """One spelling of one mistake against the candidate, probe by probe (boolean masks over
    each probe's output elements)."""

    mid: str
    variant: int
    sig: list[np.ndarray]  # where the spelling differs from the reference
    exp: list[np.ndarray]  # where the candidate differs from the spelling
    explains: list[np.ndarray]  # where the spelling's change is the candidate's (sig & ~exp)
    shown: list[str]  # the probes on which it explains something


class Presence(NamedTuple):
    """A mistake the candidate shows: by which spelling (or FAMILY), where, on which probes."""

    variant: int | str
    explains: list[np.ndarray]
    shown: list[str]


def match(
    probes: list[Probe],
    cand: list[Observed],
    ref: list[Observed],
    mutants: dict[str, list[list[Observed]]],
) -> Verdict:
    """`mutants[id][variant][i]` is mutant (id, variant) on probes[i]."""
    sizes = []
    for r in ref:
        f = flat(r) if r.ok else None
        sizes.append(0 if f is None else f[1].size)
    dev = [differs(c, r, n) for c, r, n in zip(cand, ref, sizes, strict=True)]
    failing = [p.name for p, d in zip(probes, dev, strict=True) if d.any()]
    verdict = Verdict(deviates=bool(failing), failing_probes=failing)
    if not failing:
        return verdict
    total = sum(int(d.sum()) for d in dev)

    exact: dict[str, int] = {}
    present: dict[str, Presence] = {}
    best_partial: tuple[str, float] | None = None
    compared: list[Comparison] = []
    for mid, variants in mutants.items():
        for vi, outs in enumerate(variants):
            sig = [differs_kept(m, r, n) for m, r, n in zip(outs, ref, sizes, strict=True)]
            exp = [differs(c, m, n) for c, m, n in zip(cand, outs, sizes, strict=True)]
            explains = [s & ~e for s, e in zip(sig, exp, strict=True)]
            shown = [
                p.name for p, s, x in zip(probes, sig, explains, strict=True) if s.any() and x.any()
            ]
            if not any(e.any() for e in exp):
                exact.setdefault(mid, vi)
                continue
            compared.append(Comparison(mid, vi, sig, exp, explains, shown))
            share = sum(int((x & d).sum()) for x, d in zip(explains, dev, strict=True)) / max(
                total, 1
            )
            if best_partial is None or share > best_partial[1]:
                best_partial = (mid, share)

    # A NaN swallows every other mistake's effect on the same element (and spreads, e.g.
    # through gradients). Where the candidate's NaN/inf is explained by some mutant, other
    # mutants are not required to reproduce their own change.
    swallowed = [nonfinite(c, n) for c, n in zip(cand, sizes, strict=True)]
    if compared:
        nan_explained = [
            np.logical_or.reduce([x.explains[i] for x in compared]) & swallowed[i]
            for i in range(len(probes))
        ]
    else:
        nan_explained = [np.zeros_like(d) for d in dev]
    for c in compared:
        if c.mid in present or not any(s.any() for s in c.sig):
            continue
        if not any(
            (s & e & ~ne).any() for s, e, ne in zip(c.sig, c.exp, nan_explained, strict=True)
        ):
            present[c.mid] = Presence(c.variant, c.explains, c.shown)

    # A family of spellings (e.g. every finite fill value) is also matched by what all its
    # spellings have in common, for a candidate that writes yet another one.
    spellings: dict[str, list[tuple[list[np.ndarray], list[Observed]]]] = {}
    for c in compared:
        spellings.setdefault(c.mid, []).append((c.sig, mutants[c.mid][c.variant]))
    for mid, items in spellings.items():
        # Only the spellings that change values: a changed shape or an error moves every
        # element, so what it shares with the others says nothing (lse-wrong's keepdim).
        items = [
            (sig, outs)
            for sig, outs in items
            if not any(sig[i][sizes[i]] for i in range(len(probes)))
        ]
        if mid not in exact and len(items) >= 2:
            region = _family_region(probes, cand, ref, sizes, dev, items)
            # One spelling reproduced exactly where it shows says more, unless the family's
            # shared behaviour explains more of the deviation.
            if region is not None and (
                mid not in present or _count(region[0]) > _count(present[mid].explains)
            ):
                present[mid] = Presence(FAMILY, *region)

    if exact:
        ids = list(exact)
        for mid in ids:
            verdict.matched[mid] = _shown_exact(probes, ref, mutants[mid][exact[mid]], sizes)
            verdict.variant[mid] = exact[mid]
        verdict.exact = True
        if len(ids) > 1:
            verdict.ambiguous = ids
        return verdict

    # Greedy cover of the deviation by present mutants: the largest explanation first, and
    # only mutants that add something, so a mistake implied by another is not listed twice.
    uncovered = [d.copy() for d in dev]
    chosen: list[str] = []
    while any(u.any() for u in uncovered):
        gain = {
            mid: sum(int((x & u).sum()) for x, u in zip(p.explains, uncovered, strict=True))
            for mid, p in present.items()
            if mid not in chosen
        }
        if not gain or max(gain.values()) == 0:
            break
        mid = max(gain, key=lambda k: gain[k])
        chosen.append(mid)
        uncovered = [u & ~x for u, x in zip(uncovered, present[mid].explains, strict=True)]
    if chosen and not any(u.any() for u in uncovered):
        for mid in chosen:
            verdict.matched[mid] = present[mid].shown
            verdict.variant[mid] = present[mid].variant
        return verdict
    for mid in chosen:
        p = present[mid]
        share = sum(int((x & d).sum()) for x, d in zip(p.explains, dev, strict=True)) / max(
            total, 1
        )
        verdict.partial[mid] = (p.variant, share, p.shown)
    verdict.closest = best_partial if best_partial and best_partial[1] > 0 else None
    return verdict


def _family_region(
    probes: list[Probe],
    cand: list[Observed],
    ref: list[Observed],
    sizes: list[int],
    dev: list[np.ndarray],
    items: list[tuple[list[np.ndarray], list[Observed]]],
) -> tuple[list[np.ndarray], list[str]] | None:
    """(explains, probes shown) when the candidate has the behaviour every spelling of a
    mistake shares: it changes every element that all spellings change (its core), to the
    common value wherever all spellings agree on a finite one, and grossly (not a rounding
    difference) elsewhere; what it explains is its deviation inside the union of the
    spellings' changes."""
    explains: list[np.ndarray] = []
    shown: list[str] = []
    # A family whose spellings change most of the outputs between them (the softmax axis)
    # says nothing by where it changes them: only its exact spellings may match.
    changed = sum(
        int(np.logical_or.reduce([sig[i] for sig, _ in items]).sum()) for i in range(len(sizes))
    )
    if changed > REGION_MAX_SHARE * sum(n + 1 for n in sizes):
        return None
    if any(d[n] for d, n in zip(dev, sizes, strict=True)):
        return None  # the candidate's output has another shape: where it differs says nothing
    for i, (c, n) in enumerate(zip(cand, sizes, strict=True)):
        sigs = [sig[i] for sig, _ in items]
        union, core = np.logical_or.reduce(sigs), np.logical_and.reduce(sigs)
        core[n] = False  # the structure element: covered by `dev` through `union`
        if core.any():
            if (core & ~dev[i]).any():
                return None
            # Where every spelling gives one finite value (the mean of V), so must the
            # candidate; where they break down differently (NaN, inf, 0), it must break too.
            first = items[0][1][i]
            disagree = np.logical_or.reduce(
                [differs_kept(outs[i], first, n) for _, outs in items[1:]]
            )
            agreed = core & ~disagree & ~nonfinite(first, n)
            if (agreed & differs(c, first, n)).any() or not _gross(c, ref[i], n, core & ~agreed):
                return None
            shown.append(probes[i].name)
        explains.append(union & dev[i])
    return (explains, shown) if shown else None


def _count(masks: list[np.ndarray]) -> int:
    return sum(int(m.sum()) for m in masks)


def _gross(obs: Observed, ref: Observed, n: int, where: np.ndarray) -> bool:
    """At `where`, `obs` is non-finite or off by more than 10% (an overflow, a NaN, a zeroed
    row), or finite where the reference is not (a finite lse for an empty row), not a
    rounding difference."""
    if not where[:n].any() or oversized(obs, n):
        return True
    fo, fr = (flat(obs) if obs.ok else None), (flat(ref) if ref.ok else None)
    if fo is None or fr is None or fo[1].size != n or fr[1].size != n:
        return True
    got, want = fo[1][where[:n]], fr[1][where[:n]]
    with np.errstate(invalid="ignore", over="ignore"):
        far = (
            ~np.isfinite(got)
            | ~np.isfinite(want)
            | (np.abs(got - want) > 0.1 * np.abs(want) + 1e-3)
        )
    return bool(far.all())


def nonfinite(obs: Observed, n: int) -> np.ndarray:
    """Where the output (n elements, then the structure element, never set) is NaN or inf."""
    out = np.zeros(n + 1, dtype=bool)
    f = flat(obs) if obs.ok and not oversized(obs, n) else None
    if f is not None and f[1].size == n:
        out[:n] = ~np.isfinite(f[1])
    return out


def _shown_exact(
    probes: list[Probe], ref: list[Observed], outs: list[Observed], sizes: list[int]
) -> list[str]:
    return [
        p.name
        for p, r, m, n in zip(probes, ref, outs, sizes, strict=True)
        if differs(m, r, n).any()
    ]


def output_dtypes(obs: Observed) -> list[str]:
    """The dtype of every array in the output, in order (a tuple's parts, a cache's k and v)."""
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, torch.Tensor | np.ndarray):
            out.append(str(value.dtype).replace("torch.", ""))
        elif isinstance(value, tuple | list):
            for v in value[:64]:
                walk(v)

    if obs.ok:
        walk(obs.value)
    return out


def reproduces(a: Observed, b: Observed) -> bool:
    """`a` (the candidate's) equals `b` (a variant's) on every element `differs` compares."""
    f = flatten(b.value) if b.ok else None
    return a.ok and f is not None and not differs(a, b, f[1].size).any()


def first_reproduced(
    probes: list[Probe],
    observed: list[Observed],
    subject: Any,
    variants: list[Any],
    parting: Any,
    usable: Any = None,
) -> tuple[Probe, Any, Any] | None:
    """For a kata's picture of a mistake: the first probe (of those `usable` accepts) on which
    the candidate parts from the reference (`parting(candidate value, reference value)` says
    where, or None) and one of `variants` reproduces the candidate exactly:
    (probe, where, variant), or None."""
    for p, c in zip(probes, observed, strict=False):
        if not c.ok or (usable is not None and not usable(p)):
            continue
        r = subject.reference_call(p)
        where = parting(c.value, r.value) if r.ok else None
        if where is None:
            continue
        for variant in variants:
            if reproduces(c, call_local(variant, p)):
                return p, where, variant
    return None


def table_picture(
    caption: dict[str, str],
    columns: list[dict[str, str]],
    rows: list[list[Any]],
    differ: list[list[int]],
    limit: int = 12,
) -> dict[str, Any]:
    """A kata's table picture (cli/render.picture_tables, html._picture): the first `limit`
    rows, the first row with a differing cell marked, the differing [row, column] cells."""
    return {
        "caption": caption,
        "columns": columns,
        "rows": rows[:limit],
        "marked": sorted({r for r, _ in differ})[:1],
        "differs": [x for x in differ if x[0] < limit],
    }
