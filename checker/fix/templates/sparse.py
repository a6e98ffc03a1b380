"""Sparse attention repairs: top-k (what it ranks, over which dim, which end, how many, what
the kept weights sum to) and block layouts (rows or columns, tokens or blocks, both
directions of global attention)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from attnkata.checker.catalog import Kata
from attnkata.checker.fix.site import Candidate, Site, arg, callee, code_of, receiver, with_kwarg
from attnkata.checker.fix.templates import template
from attnkata.checker.fix.templates.masks import mask_after, mentions, walk
from attnkata.checker.models import Diagnostic

RANKERS = ("topk", "kthvalue", "sort", "argsort")


def _masked(site: Site, x: cst.BaseExpression, mask: str) -> str:
    return f"({site.code(x)} if {mask} is None else {site.code(x)}.masked_fill(~{mask}, float('-inf')))"


def _mask_names(site: Site, near: cst.CSTNode) -> list[str]:
    return [
        p for p in site.params(site.function(near)) if p in ("mask", "attn_mask", "attention_mask")
    ]


@template("topk-before-mask")
def rank_masked(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """Rank the masked scores: a blocked key takes no place."""
    for call in site.calls(*RANKERS)[:3]:
        rec = receiver(call)
        x = (
            rec
            if rec is not None and code_of(rec) != "torch"
            else (call.args[0].value if call.args else None)
        )
        for mask in _mask_names(site, call)[:1]:
            if x is not None:
                yield Candidate(
                    site.replace(x, _masked(site, x, mask)), "top-k of the masked scores"
                )


@template("topk-keeps-masked")
def drop_masked(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """A blocked key never gets weight, even when it filled a place."""
    fills = [
        c
        for c in site.calls("masked_fill")
        if not any(isinstance(n, cst.Name) and n.value in ("mask", "attn_mask") for n in walk(c))
    ]
    for call in fills[:3]:
        for mask in _mask_names(site, call)[:1]:
            yield Candidate(
                site.replace(call, _masked(site, call, mask)), "blocked keys dropped too"
            )


@template("topk-wrong-dim")
def rank_keys(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    for call in site.calls(*RANKERS)[:3]:
        yield Candidate(site.replace(call, with_kwarg(call, "dim", "-1")), "top-k over the keys")


@template("topk-keeps-smallest")
def rank_largest(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    for call in site.calls(*RANKERS)[:3]:
        for kw, good in (("largest", "True"), ("descending", "True")):
            a = arg(call, None, kw)
            if a is not None:
                yield Candidate(site.replace(a.value, good), f"{kw}={good}")
        if callee(call) in ("sort", "argsort") and arg(call, None, "descending") is None:
            yield Candidate(
                site.replace(call, with_kwarg(call, "descending", "True")), "descending"
            )


@template("topk-softmax-not-renormalized")
def renormalise(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    yield from mask_after(site, d, kata)


# -- block layouts ------------------------------------------------------------------------------
@template("random-blocks-transposed")
def rows_not_columns(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """layout[r, i] = True sets a column: the random blocks of row i are layout[i, r]."""
    for asg in site.nodes(cst.Assign):
        target = asg.targets[0].target
        if isinstance(target, cst.Subscript) and len(target.slice) >= 2:
            els = list(target.slice)
            a, b = els[-2], els[-1]
            swapped = target.with_changes(
                slice=[*els[:-2], b.with_changes(comma=a.comma), a.with_changes(comma=b.comma)]
            )
            yield Candidate(site.replace(target, swapped), "row and column swapped")


@template("global-one-direction")
def both_directions(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """Global positions see everything and are seen by everything: the rows as well as the
    columns (or the other way round)."""
    glob = ("n_global", "global_idx", "num_global", "is_global", "g", "global_mask", "n_glob")
    for cmp in site.nodes(cst.Comparison, lambda n: mentions(site, n, glob))[:3]:
        stmt = site.statement(cmp)
        if stmt is None:
            continue
        here = {n.value for n in walk(cmp) if isinstance(n, cst.Name)}
        others = [
            n.value
            for n in walk(stmt)
            if isinstance(n, cst.Name)
            and n.value
            in ("i", "j", "r", "c", "row", "col", "qi", "ki", "rows", "cols", "qb", "kb")
            and n.value not in here
        ]
        idx = [n.value for n in walk(cmp.left) if isinstance(n, cst.Name)]
        for other in list(dict.fromkeys(others))[:2]:
            for mine in idx[:1]:
                flipped = cst.parse_expression(site.code(cmp).replace(mine, other, 1))
                yield Candidate(
                    site.replace(cmp, f"({site.code(cmp)}) | ({code_of(flipped)})"),
                    "global in both directions",
                )


@template("window-in-tokens")
def window_blocks(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """The window counts blocks: positions divided by the block size first."""
    blocks = ("block", "block_size", "bs", "blk")
    params = [
        p for p in site.params(site.functions()[0] if site.functions() else None) if p in blocks
    ]
    for cmp in site.nodes(cst.Comparison)[:3]:
        subs = [
            n
            for n in walk(cmp.left)
            if isinstance(n, cst.Subscript) and isinstance(n.value, cst.Name)
        ]
        for b in params[:1]:
            bases = {s.value.value for s in subs}
            pairs = [(s.value, f"({s.value.value} // {b})") for s in subs if s.value.value in bases]
            if pairs:
                yield Candidate(site.replace_all(pairs), f"positions in blocks of {b}")
