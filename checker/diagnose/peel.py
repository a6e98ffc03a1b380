"""Several mistakes at once, explained incrementally (greedy peeling).

A first attempt usually has two or three mistakes, or one or two plus a quirk no mutant
has. Instead of asking one mutant or one pair to reproduce every probe, the mistakes are
taken off one at a time: the variant of the reference with the mistake that reproduces the
most of the candidate's deviating output elements (and breaks none it had right) is kept,
then the next is searched among the variants with that mistake and one more ("reference +
m1 + m2", run as one combined variant: mistakes interact), up to `MAX_MISTAKES`. It stops
when the deviation is explained or nothing improves.

Each kept mistake carries what it explains: the probes on which adding it made the variant
equal to the candidate where it was not. It is *certain* when, in the final combination,
every output element it changes (the combination with it against the combination without
it) is exactly the candidate's: it explains the elements it touches, whatever else is
wrong elsewhere. A mistake that another would replace with the very same effect is not
certain either (the probes cannot tell them apart).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnkata.checker.diagnose.behaviour import differs, differs_kept, flat, nonfinite
from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.diagnose.pairs import compose
from attnkata.checker.diagnose.subjects import Observed, one_thread

MAX_MISTAKES = 3
# Second and third mistakes: only the best few, ranked by the single mutants' scores.
SHORTLIST = 8
# A kept mistake must reproduce, net, at least this share of one probe's elements (what is
# left may be mostly probes no mistake can explain, e.g. an output of another shape).
MIN_GAIN = 0.02
# Combined variants' outputs, kept per (kata, variants, probe): probes are deterministic.
_COMBINED: dict[tuple[str, tuple[tuple[str, int], ...], int], Observed] = {}
_COMBINED_MAX = 4000


@dataclass
class Step:
    """One peeled mistake."""

    mid: str
    variant: int
    probes: list[str]  # failing probes on which adding it made the variant reproduce the candidate
    gain: float  # the shares of the probes' elements it reproduces (net of those it breaks)
    share: float  # of every deviating element of the candidate
    certain: bool = False
    alike: list[str] = field(default_factory=list)  # other ids with the very same effect


@dataclass
class Peeling:
    steps: list[Step]
    unexplained: list[str]  # failing probes the final combination still does not reproduce


def _sizes(ref: list[Observed]) -> list[int]:
    out = []
    for r in ref:
        f = flat(r) if r.ok else None
        out.append(0 if f is None else f[1].size)
    return out


class _Combos:
    """Outputs of combined variants on the probes, computed once."""

    def __init__(
        self,
        kata: str,
        probes: list[Probe],
        index: list[int],
        outs: dict[str, list[list[Observed]]],
        variants: dict[str, list[dict[str, Any]]],
        subject: Any,
    ) -> None:
        self.kata, self.probes, self.index, self.outs = kata, probes, index, outs
        self.variants, self.subject = variants, subject

    def variant(self, combo: tuple[tuple[str, int], ...]) -> dict[str, Any] | None:
        merged: dict[str, Any] = {}
        for mid, vi in combo:
            merged = (
                compose(merged, self.variants[mid][vi]) if merged else dict(self.variants[mid][vi])
            )
            if merged is None:
                return None
        return merged

    def obs(self, combo: tuple[tuple[str, int], ...], i: int, variant: dict[str, Any]) -> Observed:
        if len(combo) == 1:
            mid, vi = combo[0]
            return self.outs[mid][vi][i]
        key = (self.kata, combo, self.index[i])
        hit = _COMBINED.get(key)
        if hit is None:
            hit = self.subject.mutant_call(variant, self.probes[i])
            if len(_COMBINED) >= _COMBINED_MAX:
                _COMBINED.clear()
            _COMBINED[key] = hit
        return hit


@one_thread()
def peel(
    kata: str,
    probes: list[Probe],
    index: list[int],
    cand: list[Observed],
    ref: list[Observed],
    outs: dict[str, list[list[Observed]]],
    variants: dict[str, list[dict[str, Any]]],
    subject: Any,
    budget_s: float,
) -> Peeling | None:
    """Greedy peeling of the candidate's deviation (see the module docstring). `index[i]` is
    probes[i]'s index in the kata's probe list (the cache key); `outs[id][variant][i]` the
    single mutants' observations; `budget_s`: CPU seconds of this process."""
    t0 = time.process_time()
    sizes = _sizes(ref)
    n_probes = len(probes)
    dev0 = [differs(c, r, n) for c, r, n in zip(cand, ref, sizes, strict=True)]
    total = sum(_share(d) for d in dev0)
    if not total:
        return None
    cost = [max(r.seconds, 1e-3) for r in ref]
    combos = _Combos(kata, probes, index, outs, variants, subject)
    # Rank the single mutants once: what each reproduces alone orders the later searches.
    single: dict[tuple[str, int], float] = {}
    touches: dict[tuple[str, int], list[np.ndarray]] = {}
    for mid, vs in outs.items():
        for vi, obs in enumerate(vs):
            sig = [differs_kept(m, r, n) for m, r, n in zip(obs, ref, sizes, strict=True)]
            touches[(mid, vi)] = sig
            single[(mid, vi)] = _gain(cand, obs, dev0, sizes)
    ranked = sorted(single, key=lambda k: -single[k])

    chosen: list[tuple[str, int]] = []
    base = list(ref)
    uncovered = dev0
    steps: list[Step] = []
    while len(chosen) < MAX_MISTAKES and any(u.any() for u in uncovered):
        if chosen:
            # Mistakes that change something where the candidate is still unexplained.
            pool = [
                k
                for k in ranked
                if k[0] not in {m for m, _ in chosen}
                and any((s & u).any() for s, u in zip(touches[k], uncovered, strict=True))
            ]
            ids = list(dict.fromkeys(m for m, _ in pool))[:SHORTLIST]
            pool = [k for k in pool if k[0] in ids]
        else:
            pool = [k for k in ranked if single[k] > 0]
        # Probes with the most left to explain first: a combination that cannot beat the best
        # so far even if it reproduced everything on the probes not yet run is dropped.
        order = sorted(range(n_probes), key=lambda i: -_share(uncovered[i]) / cost[i])
        room = [_share(uncovered[i]) for i in order]
        scored: list[tuple[float, tuple[str, int], list[Observed]]] = []
        best = 0.0
        for key in pool:
            if time.process_time() - t0 > budget_s:
                break
            combo = tuple(sorted([*chosen, key]))
            variant = combos.variant(combo) if chosen else {}
            if variant is None:
                continue
            got: list[Observed | None] = [None] * n_probes
            gain, bound = 0.0, sum(room)
            for i, r in zip(order, room, strict=True):
                if gain + bound < best:
                    break
                if not chosen:
                    got[i] = outs[key[0]][key[1]][i]
                elif touches[key][i].any():
                    got[i] = combos.obs(combo, i, variant)
                else:  # a mistake that changes nothing here alone: taken as changing nothing (checked below)
                    got[i] = base[i]
                gain += _probe_gain(cand[i], got[i], uncovered[i], sizes[i])
                bound -= r
            else:
                best = max(best, gain)
                scored.append((gain, key, got))  # type: ignore[arg-type]
        if not scored:
            break
        scored.sort(key=lambda s: -s[0])
        gain, key, got = scored[0]
        if gain < MIN_GAIN:
            break
        new_dev = [differs(c, g, n) for c, g, n in zip(cand, got, sizes, strict=True)]
        fixed = [
            probes[i].name for i in range(n_probes) if uncovered[i].any() and not new_dev[i].any()
        ]
        if not fixed:  # reproduces elements but no whole probe: named by what it explains
            fixed = [probes[i].name for i in range(n_probes) if (uncovered[i] & ~new_dev[i]).any()]
        alike = sorted(
            {
                k[0]
                for g, k, o in scored[1:]
                if g == gain
                and k[0] != key[0]
                and all(not differs(a, b, n).any() for a, b, n in zip(o, got, sizes, strict=True))
            }
        )
        steps.append(Step(key[0], key[1], fixed, gain, gain / total, alike=alike))
        chosen.append(key)
        base, uncovered = got, new_dev
    if not steps:
        return None
    if len(chosen) > 1:  # the final combination run on every probe
        combo = tuple(sorted(chosen))
        variant = combos.variant(combo)
        base = [combos.obs(combo, i, variant) for i in range(n_probes)]
        uncovered = [differs(c, b, n) for c, b, n in zip(cand, base, sizes, strict=True)]
    if len(chosen) > 1 and any(u.any() for u in uncovered):
        # A spelling chosen early may not be the one that combines with the later mistakes:
        # try each mistake's other spellings in the final combination.
        for k, (mid, vi) in enumerate(list(chosen)):
            for other in range(len(variants[mid])):
                if other == vi or time.process_time() - t0 > budget_s:
                    continue
                trial = [*chosen[:k], (mid, other), *chosen[k + 1 :]]
                combo = tuple(sorted(trial))
                variant = combos.variant(combo)
                if variant is None:
                    continue
                got = [combos.obs(combo, i, variant) for i in range(n_probes)]
                new_dev = [differs(c, g, n) for c, g, n in zip(cand, got, sizes, strict=True)]
                if sum(_share(d) for d in new_dev) < sum(_share(u) for u in uncovered):
                    chosen, base, uncovered = trial, got, new_dev
                    steps[k].variant, vi = other, other
    final = tuple(sorted(chosen))
    for step in steps:
        rest = tuple(k for k in final if k != (step.mid, step.variant))
        if rest:
            rest_variant = combos.variant(rest) if len(rest) > 1 else {}
            without = [combos.obs(rest, i, rest_variant) for i in range(n_probes)]
        else:
            without = list(ref)
        # A probe the candidate answers in a shape other than the reference's, or raises on
        # (a shape error reads the same for many mistakes), says nothing element by element:
        # it is left out of the judgement (one where the combination raises or changes the
        # shape and the candidate does not stays in: it contradicts the mistake).
        judged = [i for i in range(n_probes) if cand[i].ok and not dev0[i][sizes[i]]]
        touched = [differs(base[i], without[i], sizes[i]) for i in judged]
        off = [differs(cand[i], base[i], sizes[i]) for i in judged]
        # Where the candidate is NaN or inf and the combination is not, something else may
        # swallow the mistake's own change (an unguarded 0 / 0 beside it): such elements do
        # not contradict it.
        finite = [~nonfinite(cand[i], sizes[i]) for i in judged]
        step.certain = (
            any((t & ~o).any() for t, o in zip(touched, off, strict=True))
            and not step.alike
            and not any((t & o & f).any() for t, o, f in zip(touched, off, finite, strict=True))
        )
    unexplained = [probes[i].name for i in range(n_probes) if uncovered[i].any()]
    return Peeling(steps, unexplained)


def _share(mask: np.ndarray) -> float:
    return float(mask.sum()) / mask.size


def _probe_gain(cand: Observed, got: Observed, uncovered: np.ndarray, n: int) -> float:
    """The share of the probe's elements `got` reproduces among those still unexplained
    (`uncovered`: the candidate differs from the previous combination there), less the share
    it breaks (the previous combination had them as the candidate has them). Every probe
    weighs the same, however large its output."""
    wrong = differs(cand, got, n)
    return (int((uncovered & ~wrong).sum()) - int((~uncovered & wrong).sum())) / uncovered.size


def _gain(
    cand: list[Observed], got: list[Observed], uncovered: list[np.ndarray], sizes: list[int]
) -> float:
    return sum(
        _probe_gain(c, g, u, n) for c, g, u, n in zip(cand, got, uncovered, sizes, strict=True)
    )
