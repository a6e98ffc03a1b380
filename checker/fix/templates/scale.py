"""Scale repairs: which dim goes under the square root, the root itself, its direction, the
caller's `scale`, and a scale that is missing altogether."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from attnkata.checker.catalog import Kata
from attnkata.checker.fix.site import Candidate, Site, arg, callee, code_of, number
from attnkata.checker.fix.templates import template
from attnkata.checker.fix.templates.common import query_key, score_products
from attnkata.checker.models import Diagnostic

HEAD_DIMS = (
    "head_dim",
    "d_k",
    "dk",
    "d_head",
    "dim_head",
    "head_size",
    "hd",
    "d",
    "dh",
    "qk_head_dim",
    "key_dim",
)
HEADS = (
    "n_heads",
    "num_heads",
    "n_head",
    "nh",
    "h",
    "H",
    "heads",
    "num_attention_heads",
    "n_local_heads",
)
SCALE_PARAMS = ("scale", "softmax_scale", "sm_scale", "scaling")


def _roots(site: Site) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(node, what is under the root): sqrt(x), x ** 0.5, x ** -0.5, rsqrt(x)."""
    out: list[tuple[cst.BaseExpression, cst.BaseExpression]] = []
    for node in site.nodes((cst.Call, cst.BinaryOperation)):
        if isinstance(node, cst.Call) and callee(node) in ("sqrt", "rsqrt") and node.args:
            out.append((node, node.args[0].value))
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Power):
            if number(node.right) in (0.5, -0.5):
                out.append((node, node.left))
    return out


def _scope_names(site: Site, near: cst.CSTNode) -> set[str]:
    """Names the function around `near` can use: its parameters and the names it uses, and
    the class's `self.` attributes in a method."""
    fn = site.function(near)
    params = site.params(fn)
    have = set(params)
    for n in site.nodes(cst.Name):
        if fn is None or site.function(n) is fn:
            have.add(n.value)
    if fn is None or "self" in params:
        for a in site.nodes(
            cst.Attribute, lambda n: isinstance(n.value, cst.Name) and n.value.value == "self"
        ):
            have.add("self." + a.attr.value)
    return have


def head_dims(site: Site, near: cst.CSTNode, under: cst.BaseExpression | None = None) -> list[str]:
    """Expressions for the head dim: the file's names for it, the model dim over the heads,
    the last dim of the queries."""
    have = _scope_names(site, near)
    out = [p + n for n in HEAD_DIMS for p in ("self.", "") if p + n in have]
    if under is not None:
        u = site.code(under)
        out += [f"{u} // {p + n}" for n in HEADS for p in ("self.", "") if p + n in have][:2]
    out += [f"{q}.shape[-1]" for q, _ in query_key(site, near)[:2]]
    return [o for o in dict.fromkeys(out) if under is None or o != site.code(under)]


@template("scale-by-d-model")
def scale_head_dim(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    for node, under in _roots(site)[:3]:
        for hd in head_dims(site, node, under)[:4]:
            yield Candidate(
                site.replace(under, hd), f"sqrt({hd}) instead of sqrt({site.code(under)})"
            )


@template("mla-scale-without-rope-dim")
def scale_with_rope(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    for node, under in _roots(site)[:3]:
        have = _scope_names(site, node)
        ropes = [
            n
            for n in sorted(have)
            if "rope" in n.lower() and ("dim" in n.lower() or "head" in n.lower())
        ]
        for r in ropes[:3]:
            yield Candidate(site.replace(under, f"{site.code(under)} + {r}"), f"sqrt of nope + {r}")
        for q, _ in query_key(site, node)[:2]:
            yield Candidate(
                site.replace(under, f"{q}.shape[-1]"), "sqrt of the query's whole head dim"
            )


@template("missing-scale", "flash-bwd-missing-scale")
def add_scale(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """Scores never scaled: a default of 1.0 that should be 1/sqrt(d), or the product itself."""
    for ifexp in site.nodes(cst.IfExp)[:4]:
        test = site.code(ifexp.test).replace(" ", "")
        for branch in (ifexp.body, ifexp.orelse):
            if number(branch) == 1.0 and ("isNone" in test or "isnotNone" in test):
                for q, _ in query_key(site, ifexp)[:2]:
                    yield Candidate(
                        site.replace(branch, f"{q}.shape[-1] ** -0.5"), "default scale 1/sqrt(d)"
                    )
    for assign in site.nodes(cst.Assign, lambda n: number(n.value) == 1.0)[:3]:
        target = site.code(assign.targets[0].target)
        if target.split(".")[-1] in SCALE_PARAMS + ("softmax_scale",):
            for q, _ in query_key(site, assign)[:2]:
                yield Candidate(
                    site.replace(assign.value, f"{q}.shape[-1] ** -0.5"), "default scale 1/sqrt(d)"
                )
    for prod, q, _ in score_products(site)[:2]:
        factor = f"{site.code(q)}.shape[-1] ** -0.5"
        for p in [p for p in site.params(site.function(prod)) if p in SCALE_PARAMS][:1]:
            yield Candidate(
                site.replace(prod, f"{site.code(prod)} * ({factor} if {p} is None else {p})"),
                f"scores times {p}, 1/sqrt(d) by default",
            )
        yield Candidate(
            site.replace(prod, f"{site.code(prod)} * {factor}"), "scores times 1/sqrt(d)"
        )
    if d.id == "flash-bwd-missing-scale":
        yield from _grad_scale(site)


def _grad_scale(site: Site) -> Iterator[Candidate]:
    """dq (or dk) accumulated without the softmax scale."""
    have = _scope_names(site, site.module)
    scales = [s for s in ("scale", "softmax_scale", "sm_scale", "sc", "self.scale") if s in have]
    grads = site.nodes(
        (cst.AugAssign, cst.Assign),
        lambda n: (
            code_of(n.target if isinstance(n, cst.AugAssign) else n.targets[0].target)
            .lstrip()
            .lower()
            .startswith(("dq", "dk"))
        ),
    )
    for g in grads[:4]:
        for s in scales[:2]:
            yield Candidate(
                site.replace(g.value, f"({site.code(g.value)}) * {s}"),
                f"{code_of(g)[:20]}... times {s}",
            )


@template("scale-not-sqrt")
def scale_sqrt(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """Divided by d: by sqrt(d)."""
    ops = site.nodes(
        cst.BinaryOperation,
        lambda n: (
            isinstance(n.operator, cst.Divide)
            and not isinstance(n.right, cst.Integer | cst.Float)
            and not _is_root(n.right)
        ),
    )
    for op in ops[:4]:
        yield Candidate(
            site.replace(op.right, f"{site.code(op.right)} ** 0.5"), "divided by the square root"
        )
    for node in site.nodes(
        cst.BinaryOperation, lambda n: isinstance(n.operator, cst.Power) and number(n.right) == -1.0
    )[:2]:
        yield Candidate(site.replace(node.right, "-0.5"), "power -0.5")


def _is_root(node: cst.BaseExpression) -> bool:
    return (isinstance(node, cst.Call) and callee(node) in ("sqrt", "rsqrt")) or (
        isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Power)
    )


@template("scale-inverted")
def scale_direction(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    for node, _ in _roots(site)[:3]:
        if isinstance(node, cst.BinaryOperation):
            value = number(node.right)
            yield Candidate(
                site.replace(node.right, "-0.5" if value == 0.5 else "0.5"), "the power's sign"
            )
        parent = site.parent(node)
        if isinstance(parent, cst.BinaryOperation) and parent.right is node:
            op = parent.operator
            if isinstance(op, cst.Multiply | cst.Divide):
                new_op = (cst.Divide if isinstance(op, cst.Multiply) else cst.Multiply)(
                    whitespace_before=op.whitespace_before, whitespace_after=op.whitespace_after
                )
                yield Candidate(
                    site.replace(parent, parent.with_changes(operator=new_op)),
                    "divide, not multiply",
                )
        yield Candidate(site.replace(node, f"1 / {site.code(node)}"), "the reciprocal")


@template("scale-argument-ignored")
def scale_argument(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """The caller's `scale` replaces the default 1/sqrt(d) whenever it is given."""
    for node, _ in _roots(site)[:3]:
        params = [p for p in site.params(site.function(node)) if p in SCALE_PARAMS]
        for p in params[:1]:
            stmt = site.statement(node)
            assign = (
                stmt.body[0] if stmt is not None and isinstance(stmt.body[0], cst.Assign) else None
            )
            if (
                assign is not None
                and assign.value is node
                or (
                    assign is not None
                    and _inside(assign.value, node)
                    and not _in_product(site, node)
                )
            ):
                yield Candidate(
                    site.replace(
                        assign.value, f"{site.code(assign.value)} if {p} is None else {p}"
                    ),
                    f"the default scale only when {p} is None",
                )
            parent = site.parent(node)
            if isinstance(parent, cst.BinaryOperation) and parent.right is node:
                factor = (
                    f"1 / {site.code(node)}"
                    if isinstance(parent.operator, cst.Divide)
                    else site.code(node)
                )
                yield Candidate(
                    site.replace(
                        parent, f"{site.code(parent.left)} * ({factor} if {p} is None else {p})"
                    ),
                    f"{p} used when given",
                )


def _inside(tree: cst.CSTNode, node: cst.CSTNode) -> bool:
    return tree is node or any(_inside(c, node) for c in tree.children)


def _in_product(site: Site, node: cst.CSTNode) -> bool:
    return any(
        isinstance(a, cst.BinaryOperation) and isinstance(a.operator, cst.MatrixMultiply)
        for a in site.ancestors(node)
    )


# for heads.py
roots = _roots
scope_names = _scope_names
arg_of = arg
