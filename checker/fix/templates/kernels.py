"""Triton kernel repairs: a launch grid that rounds the number of programs down, and the
running max of an online softmax made finite inside a kernel (where torch's helpers cannot
be called: `tl.where` does it)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from attnkata.checker.catalog import Kata
from attnkata.checker.fix.site import Candidate, Site, arg, callee
from attnkata.checker.fix.templates import template
from attnkata.checker.models import Diagnostic


def in_kernel(site: Site, node: cst.CSTNode) -> bool:
    """Is `node` inside a function decorated `@triton.jit` (or `@jit`)?"""
    fn = site.function(node)
    if fn is None:
        return False
    return any(site.code(d.decorator).split("(")[0] in ("triton.jit", "jit") for d in fn.decorators)


def _triton(site: Site) -> str:
    """What the file calls the triton module (`triton` unless imported under another name)."""
    return site.imports("triton") or "triton"


def _grids(site: Site) -> list[cst.BaseExpression]:
    """The launch grids: a tuple assigned to a name used as `kernel[grid]`, or a tuple (or a
    lambda returning one) written straight into the subscript."""
    launched: set[str] = set()
    direct: list[cst.BaseExpression] = []
    for sub in site.nodes(cst.Subscript):
        parent = site.parent(sub)
        if not (isinstance(parent, cst.Call) and parent.func is sub) or len(sub.slice) != 1:
            continue
        index = sub.slice[0].slice
        if isinstance(index, cst.Index):
            value = index.value
            if isinstance(value, cst.Name):
                launched.add(value.value)
            else:
                direct.append(value)
    named = [
        a.value
        for a in site.nodes(cst.Assign)
        if any(isinstance(t.target, cst.Name) and t.target.value in launched for t in a.targets)
    ]
    return named + direct


@template("grid-misses-tail")
def grid_rounds_up(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """`n // BLOCK` programs leave the last n % BLOCK rows to nobody: `triton.cdiv(n, BLOCK)`."""
    cdiv = f"{_triton(site)}.cdiv"
    pairs = []
    for grid in _grids(site):
        for n in site.nodes(cst.BinaryOperation):
            if isinstance(n.operator, cst.FloorDivide) and _within(site, n, grid):
                pairs.append((n, f"{cdiv}({site.code(n.left)}, {site.code(n.right)})"))
    if pairs:
        yield Candidate(site.replace_all(pairs), "the grid rounds the number of programs up")
    for pair in pairs[:2] if len(pairs) > 1 else []:
        yield Candidate(site.replace(*pair), "the grid rounds the number of programs up")


def _within(site: Site, node: cst.CSTNode, outer: cst.CSTNode) -> bool:
    return node is outer or any(a is outer for a in site.ancestors(node))


def kernel_exp_guards(site: Site) -> list[tuple[cst.BaseExpression, str]]:
    """Inside a kernel, `exp(s - m)` with m made finite by `tl.where` (a tile with no allowed
    key leaves m = -inf, and -inf - -inf is NaN)."""
    out = []
    for call in site.calls("exp", "exp2"):
        a = arg(call, 0, "x", "input")
        if not (
            in_kernel(site, call)
            and a is not None
            and isinstance(a.value, cst.BinaryOperation)
            and isinstance(a.value.operator, cst.Subtract)
        ):
            continue
        m = site.code(a.value.right)
        out.append((a.value.right, f"tl.where({m} == float('-inf'), 0.0, {m})"))
    return out


def _final_divisions(site: Site) -> list[tuple[cst.BaseExpression, str]]:
    """`acc / l` inside a kernel: 0 where the running sum is 0 (a row with no allowed key)."""
    out = []
    for div in site.nodes(
        cst.BinaryOperation,
        lambda n: isinstance(n.operator, cst.Divide) and not isinstance(n.right, cst.BaseNumber),
    ):
        if in_kernel(site, div) and not any(
            isinstance(a, cst.Call) and callee(a) == "exp" for a in site.ancestors(div)
        ):
            den = site.code(div.right)
            out.append((div, f"tl.where({den} == 0.0, 0.0, {site.code(div.left)} / {den})"))
    return out


@template("flash-empty-block-nan")
def kernel_empty_tile(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """The online softmax inside a kernel: every exp's max made finite; with it, the rows
    that never saw a key divided by a zero sum give 0."""
    guards = kernel_exp_guards(site)
    if not guards:
        return
    yield Candidate(site.replace_all(guards), "every exp's max made finite (tl.where)")
    divisions = _final_divisions(site)
    for div in divisions[:2]:
        yield Candidate(
            site.replace_all([*guards, div]), "exps' max made finite, empty rows give 0"
        )
