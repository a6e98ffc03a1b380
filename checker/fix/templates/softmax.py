"""Softmax repairs: the empty row (NaN, uniform, NaN gradients), the max shift, the dim."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from attnkata.checker.catalog import Kata
from attnkata.checker.fix.site import Candidate, Site, arg, callee, receiver
from attnkata.checker.fix.templates import template
from attnkata.checker.fix.templates.common import (
    MASK_NAMES,
    finite_fills,
    guarded_softmax,
    is_numpy,
    neg_inf,
    np_name,
    softmax_calls,
    softmax_input,
)
from attnkata.checker.models import Diagnostic

MAX_CALLS = ("amax", "max")


def _exp_calls(site: Site) -> list[cst.Call]:
    return site.calls("exp", "exp2")


def _row_max(site: Site, x: str, numpy: bool, dim: str = "-1") -> str:
    """The finite row max of `x` (0 for a row of -inf: exp(-inf - 0) = 0, not NaN)."""
    if numpy:
        np = np_name(site)
        return f"{np}.nan_to_num({np}.max({x}, axis={dim}, keepdims=True), neginf=0.0)"
    return f"({x}).amax(dim={dim}, keepdim=True).nan_to_num(neginf=0.0)"


def _subtrahend(call: cst.Call) -> cst.BaseExpression | None:
    """`m` of exp(x - m)."""
    a = arg(call, 0, "input", "x")
    if (
        a is not None
        and isinstance(a.value, cst.BinaryOperation)
        and isinstance(a.value.operator, cst.Subtract)
    ):
        return a.value.right
    return None


def _zero_guard(site: Site, den: cst.BaseExpression, numpy: bool) -> str:
    d = site.code(den)
    if numpy:
        return f"{np_name(site)}.where({d} > 0, {d}, 1.0)"
    if isinstance(den, cst.Name | cst.Attribute):
        return f"torch.where({d} > 0, {d}, torch.ones_like({d}))"
    return f"({d}).clamp_min(torch.finfo({_dtype_of(site, den)}.dtype).tiny)"


def _dtype_of(site: Site, den: cst.BaseExpression) -> str:
    """A tensor whose dtype the denominator has: the receiver of its .sum()."""
    if isinstance(den, cst.Call) and (rec := receiver(den)) is not None:
        return site.code(rec)
    return site.code(den)


def _divisions(site: Site) -> list[cst.BinaryOperation]:
    """e / s where s is a sum (a softmax written out by hand)."""

    def is_sum(node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Call) and callee(node) == "sum":
            return True
        if isinstance(node, cst.Name):
            return any(
                isinstance(a.value, cst.Call) and callee(a.value) == "sum"
                for a in site.assigned(node.value, node)
            )
        return False

    return site.nodes(
        cst.BinaryOperation,
        lambda n: isinstance(n.operator, cst.Divide) and is_sum(n.right),
    )


def _hand_guards(site: Site, numpy: bool) -> Iterator[str]:
    """A softmax written out by hand: the max it subtracts made finite, the sum it divides by
    kept away from 0, or both."""
    maxes = [(c, s) for c in _exp_calls(site) if (s := _subtrahend(c)) is not None]
    # x - x.max(...) on its own line, before the exp
    maxes += [
        (n, n.right)
        for n in site.nodes(cst.BinaryOperation, lambda n: isinstance(n.operator, cst.Subtract))
        if isinstance(n.right, cst.Call) and callee(n.right) in MAX_CALLS
    ]
    divs = _divisions(site)
    for _call, sub in maxes[:2]:
        fixed = _finite(site, sub, numpy)
        for div in divs[:2]:
            yield site.replace_all([(sub, fixed), (div.right, _zero_guard(site, div.right, numpy))])
        yield site.replace(sub, fixed)
    for div in divs[:2]:
        yield site.replace(div.right, _zero_guard(site, div.right, numpy))


def _finite(site: Site, node: cst.BaseExpression, numpy: bool) -> str:
    code = site.code(node)
    if numpy:
        return f"{np_name(site)}.nan_to_num({code}, neginf=0.0)"
    return f"torch.nan_to_num({code}, neginf=0.0)"


@template("fully-masked-row-nan", "fully-masked-row-nan-gradient", "flash-bwd-nan-empty-rows")
def empty_row_guard(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    numpy = is_numpy(site, kata.id)
    if not numpy:
        for call in softmax_calls(site)[:3]:
            for src in guarded_softmax(site, call):
                yield Candidate(src, "softmax guarded for rows with no key")
    for src in _hand_guards(site, numpy):
        yield Candidate(src, "hand-written softmax guarded for rows with no key")


@template("fully-masked-row-uniform")
def infinite_fill(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """A finite "minus infinity" makes a row with no key uniform: fill with -inf instead,
    and guard the softmax against the rows that are now all -inf."""
    numpy = is_numpy(site, kata.id)
    fills = finite_fills(site)
    if not fills:
        return
    inf = neg_inf(site, numpy)
    choices = [[f] for f in fills[:3]]
    if len(fills) > 1:
        choices.insert(1, fills)
    for chosen in choices:
        swaps = [(f, inf) for f in chosen]
        if not numpy:
            for call in softmax_calls(site)[:2]:
                for src in guarded_softmax(site, call, also=swaps):
                    yield Candidate(src, "-inf fill, softmax guarded")
        swapped = Site(site.replace_all(swaps), site.targets)
        for src in _hand_guards(swapped, numpy):
            yield Candidate(src, "-inf fill, hand-written softmax guarded")
        yield Candidate(swapped.source, "-inf fill")


@template("unstable-softmax")
def max_shift(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """exp(x) of the raw scores overflows: subtract each row's (finite) max first. A global
    max (x - x.max()) is replaced by the row max."""
    numpy = is_numpy(site, kata.id)
    for call in _exp_calls(site)[:3]:
        a = arg(call, 0, "input", "x")
        if a is None:
            continue
        sub = _subtrahend(call)
        if sub is not None and isinstance(a.value, cst.BinaryOperation):
            yield Candidate(
                site.replace(sub, _row_max(site, site.code(a.value.left), numpy)),
                "row max instead of the global max",
            )
            continue
        x = site.code(a.value)
        yield Candidate(
            site.replace(a.value, f"{x} - {_row_max(site, x, numpy)}"), "exp shifted by the row max"
        )
        # The mask applied after the exp: the max of the allowed scores only (a blocked key's
        # huge score must not push the allowed ones to 0).
        for masked in _masked_scores(site, call, x, numpy):
            yield Candidate(
                site.replace(a.value, f"{masked} - {_row_max(site, masked, numpy)}"),
                "exp of the allowed scores, shifted by their max",
            )


def _masked_scores(site: Site, call: cst.Call, x: str, numpy: bool) -> Iterator[str]:
    """`x` with the keys the code masks after the exp set to -inf: the condition of a
    where(cond, exp(x), 0) around it, or a mask of the function's (the caller's, a local)."""
    np = np_name(site)
    parent = site.parent(site.parent(call) or call)
    if isinstance(parent, cst.Call) and callee(parent) == "where" and len(parent.args) == 3:
        cond = site.code(parent.args[0].value)
        yield (
            f"{np}.where({cond}, {x}, -{np}.inf)"
            if numpy
            else f"{x}.masked_fill(~({cond}), float('-inf'))"
        )
    fn = site.function(call)
    local = {n.value for n in site.nodes(cst.Name) if site.function(n) is fn}
    for mask in [m for m in MASK_NAMES if m in local or m in site.params(fn)][:2]:
        if numpy:
            yield f"({x} if {mask} is None else {np}.where({mask} != 0, {x}, -{np}.inf))"
        else:
            yield f"({x} if {mask} is None else {x}.masked_fill({mask} == 0, float('-inf')))"


@template("softmax-wrong-dim")
def softmax_dim(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """The softmax (and a hand-written one's max and sum) over the keys, the last dim."""
    same: list[tuple[cst.CSTNode, str]] = []
    for call in softmax_calls(site):
        x, dim = softmax_input(call)
        a = arg(call, 0 if receiver(call) is not None and x is receiver(call) else 1, "dim", "axis")
        if a is not None and dim != "-1":
            same.append((a.value, "-1"))
    if len(same) > 1:  # the same wrong dim in every branch
        yield Candidate(site.replace_all(same), "every softmax over the last dim")
    for call in softmax_calls(site)[:3]:
        x, dim = softmax_input(call)
        if dim in ("-1",):
            continue
        a = arg(call, 0 if receiver(call) is not None and x is receiver(call) else 1, "dim", "axis")
        if a is not None:
            yield Candidate(site.replace(a.value, "-1"), "softmax over the last dim")
        else:
            yield Candidate(
                site.replace(call, site.code(call)[:-1] + ", dim=-1)"), "softmax over the last dim"
            )
    reductions = site.nodes(
        cst.Call,
        lambda n: (
            callee(n) in ("sum", "amax", "max", "logsumexp", "any", "all")
            and arg(n, 0, "dim", "axis") is not None
        ),
    )
    wrong = [(arg(r, 0, "dim", "axis").value, "-1") for r in reductions]
    wrong = [(v, new) for v, new in wrong if site.code(v) != "-1"][:4]
    if wrong:
        yield Candidate(site.replace_all(wrong), "hand-written softmax over the last dim")
        calls = []
        for call in softmax_calls(site)[:2]:
            x, dim = softmax_input(call)
            a = arg(
                call, 0 if receiver(call) is not None and x is receiver(call) else 1, "dim", "axis"
            )
            if a is not None and dim != "-1":
                calls.append((a.value, "-1"))
        if calls:
            yield Candidate(
                site.replace_all(calls + wrong), "softmax and its reductions over the last dim"
            )
