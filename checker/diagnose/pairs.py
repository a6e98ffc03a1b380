"""Two mistakes at once: build a variant with the knobs of two catalogued mutants and keep
the pair whose combination reproduces the candidate exactly.

Mistakes interact (a transposed merge moves the mean-of-V rows of a -1e9 fill elsewhere),
so a pair is judged by running the combined variant, never by adding two signatures. The
search is pruned: the first mistake is one that alone already reproduces part of the
candidate's deviation; the second is tried first on the probes the first leaves
unexplained, and dropped at its first mismatch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from attnkata.checker.diagnose.behaviour import differs, differs_kept, flat
from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.diagnose.subjects import Observed

# At most this many first mistakes (by how much of the deviation they reproduce alone).
FIRST_CANDIDATES = 6


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any] | None:
    """a's and b's settings together; None when they set one knob differently."""
    out = dict(a)
    for key, value in b.items():
        if key not in out or out[key] == value:
            out[key] = value
        elif isinstance(out[key], dict) and isinstance(value, dict):
            sub = _merge(out[key], value)
            if sub is None:
                return None
            out[key] = sub
        else:
            return None
    return out


def compose_one(a: Any, b: Any) -> Any | None:
    """One variant with both a's and b's knobs: `functools.partial`s of one function, or
    classes made by `module_probes.remakeable` from one family. None when not combinable."""
    if isinstance(a, partial) and isinstance(b, partial):
        if a.func is not b.func or a.args or b.args:
            return None
        merged = _merge(a.keywords, b.keywords)
        return None if merged is None else partial(a.func, **merged)
    family = getattr(a, "family", None)
    if family is None or getattr(b, "family", None) != family:
        return None
    merged = _merge(a.knobs, b.knobs)
    return None if merged is None else family[0](*family[1:], **merged)


def compose(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any] | None:
    """Two mutants ({entry point: variant}) as one; None when they cannot be combined."""
    out: dict[str, Any] = {}
    for entry in {**a, **b}:
        x, y = a.get(entry), b.get(entry)
        if x is None or y is None:
            out[entry] = x if y is None else y
            continue
        z = compose_one(x, y)
        if z is None:
            return None
        out[entry] = z
    return out


@dataclass
class Pair:
    """Two mistakes whose combination reproduces the candidate on every probe."""

    first: tuple[str, int]  # (mistake id, variant index)
    second: tuple[str, int]
    shown: dict[str, list[str]]  # id -> probes on which it changes the output alone


def search(
    probes: list[Probe],
    cand: list[Observed],
    ref: list[Observed],
    outs: dict[str, list[list[Observed]]],
    variants: dict[str, list[dict[str, Any]]],
    subject: Any,
    budget_s: float,
) -> Pair | None:
    """The first pair of mistakes (different ids) whose combined variant matches `cand` on
    every probe; `outs[id][variant]` are the single mutants' observations on `probes`."""
    t0 = time.process_time()  # local variants only: this process's CPU, whatever the load
    sizes = []
    for r in ref:
        f = flat(r) if r.ok else None
        sizes.append(0 if f is None else f[1].size)
    dev = [differs(c, r, n) for c, r, n in zip(cand, ref, sizes, strict=True)]
    total = sum(int(d.sum()) for d in dev)
    if not total:
        return None
    ranked: list[tuple[float, str, int, list[int]]] = []
    changes: dict[tuple[str, int], list[bool]] = {}  # (id, variant) -> probes it changes alone
    for mid, vs in outs.items():
        for vi, obs in enumerate(vs):
            sig = [differs_kept(m, r, n) for m, r, n in zip(obs, ref, sizes, strict=True)]
            exp = [differs(c, m, n) for c, m, n in zip(cand, obs, sizes, strict=True)]
            changes[(mid, vi)] = [bool(x.any()) for x in sig]
            share = (
                sum(int((s & ~e & d).sum()) for s, e, d in zip(sig, exp, dev, strict=True)) / total
            )
            if share > 0:
                left = [i for i, e in enumerate(exp) if e.any()]
                ranked.append((share, mid, vi, left))
    ranked.sort(key=lambda r: -r[0])
    # The best few mistakes, each with every spelling that explains something (spellings
    # combine differently: a torch.softmax one cannot take another mistake's softmax).
    ids = list(dict.fromkeys(mid for _, mid, _, _ in ranked))[:FIRST_CANDIDATES]
    firsts = [(mid, vi, left) for _, mid, vi, left in ranked if mid in ids]
    firsts.sort(key=lambda f: ids.index(f[0]))
    for mid, vi, left in firsts:
        for other, vs in variants.items():
            if other == mid:
                continue
            for oi, v in enumerate(vs):
                if time.process_time() - t0 > budget_s:
                    return None
                # The second mistake must change something wherever the first falls short.
                if not all(changes[(other, oi)][i] for i in left):
                    continue
                both = compose(variants[mid][vi], v)
                if both is None:
                    continue
                if _reproduces(both, probes, cand, sizes, subject, order=left):
                    shown = {
                        m: [
                            p.name
                            for p, r, o, n in zip(probes, ref, outs[m][i], sizes, strict=True)
                            if differs_kept(o, r, n).any()
                        ]
                        for m, i in ((mid, vi), (other, oi))
                    }
                    return Pair((mid, vi), (other, oi), shown)
    return None


def _reproduces(
    variant: dict[str, Any],
    probes: list[Probe],
    cand: list[Observed],
    sizes: list[int],
    subject: Any,
    order: list[int],
) -> bool:
    """The combined variant equals the candidate on every probe (the decisive ones first)."""
    rest = [i for i in range(len(probes)) if i not in order]
    for i in [*order, *rest]:
        obs = subject.mutant_call(variant, probes[i])
        if differs(cand[i], obs, sizes[i]).any():
            return False
    return True


def explained_share(cand: list[Observed], ref: list[Observed], outs: list[Observed]) -> float:
    """The share of the candidate's deviating elements that a mutant reproduces alone."""
    total = explained = 0
    for c, r, m in zip(cand, ref, outs, strict=True):
        f = flat(r) if r.ok else None
        n = 0 if f is None else f[1].size
        d = differs(c, r, n)
        x = differs_kept(m, r, n) & ~differs(c, m, n)
        total += int(d.sum())
        explained += int((x & d).sum())
    return explained / total if total else 0.0
