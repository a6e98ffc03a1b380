"""RoPE and KV-cache repairs: the frequencies' exponent, the rotation's direction, the
positions the caller gives, where the cache grows, what gets rotated."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from attnkata.checker.catalog import Kata
from attnkata.checker.fix.site import Candidate, Site, arg, callee, code_of, with_kwarg
from attnkata.checker.fix.templates import template
from attnkata.checker.fix.templates.common import VALUE_NAMES
from attnkata.checker.models import Diagnostic

POSITIONS = ("positions", "position_ids", "pos", "position")
CACHES = ("cache", "past_key_value", "past_key_values", "kv_cache", "layer_past", "past")


@template("rope-inv-freq-exponent")
def exponent(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """theta ** (i / d) per pair i: the exponent is 2i / d."""
    powers = site.nodes(cst.BinaryOperation, lambda n: isinstance(n.operator, cst.Power))
    pows = site.calls("pow")
    exps: list[cst.BaseExpression] = [p.right for p in powers] + [
        c.args[1].value for c in pows if len(c.args) > 1
    ]
    for e in exps[:4]:
        inner = e
        while isinstance(inner, cst.UnaryOperation):
            inner = inner.expression
        divs = (
            [inner]
            if isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Divide)
            else []
        )
        for div in divs:
            yield Candidate(site.replace(div.left, f"2 * {site.code(div.left)}"), "exponent 2i / d")
    for call in site.calls("arange")[:3]:
        args = [a for a in call.args if a.keyword is None]
        if (
            len(args) == 2
            and isinstance(args[1].value, cst.BinaryOperation)
            and isinstance(args[1].value.operator, cst.FloorDivide)
        ):
            whole = site.code(args[1].value.left)
            yield Candidate(site.replace(args[1].value, f"{whole}, 2"), "arange(0, d, 2)")


@template("rope-rotation-direction")
def direction(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """A rotation by -angle: the sine's sign, or which half of rotate_half is negated."""
    for call in site.calls("cat", "stack", "concat"):
        if not call.args or not isinstance(call.args[0].value, cst.Tuple | cst.List):
            continue
        elems = call.args[0].value.elements
        if len(elems) != 2:
            continue
        a, b = elems[0].value, elems[1].value
        neg = lambda x: isinstance(x, cst.UnaryOperation) and isinstance(x.operator, cst.Minus)  # noqa: E731
        if neg(a) != neg(b):
            pairs = [
                (a, site.code(a.expression) if neg(a) else f"-{site.code(a)}"),
                (b, site.code(b.expression) if neg(b) else f"-{site.code(b)}"),
            ]
            yield Candidate(site.replace_all(pairs), "the other half negated")
    sins = [c for c in site.calls("sin") if not isinstance(site.parent(c), cst.UnaryOperation)]
    if sins:
        yield Candidate(
            site.replace_all([(c, f"-{site.code(c)}") for c in sins]),
            "rotation by +angle (sine's sign)",
        )


@template("rope-positions-ignored", "cache-positions-restart")
def positions(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """Angles from the caller's positions (or, with a cache, from the cache's length on)."""
    for call in site.calls("arange")[:4]:
        fn = site.function(call)
        params = site.params(fn)
        given = [p for p in params if p in POSITIONS]
        args = [a for a in call.args if a.keyword is None]
        if given and d.id == "rope-positions-ignored":
            yield Candidate(
                site.replace(call, f"{given[0]}.to(torch.float64)"), f"angles from {given[0]}"
            )
        if d.id == "cache-positions-restart" and len(args) == 1:
            n = site.code(args[0].value)
            for start in _cache_lengths(site, call):
                new = code_of(
                    call.with_changes(
                        args=[cst.Arg(cst.parse_expression(start)), *call.args[:1], *call.args[1:]]
                    )
                )
                new = new.replace(f"({start}, {n}", f"({start}, {start} + {n}", 1)
                yield Candidate(site.replace(call, new), f"positions from {start} on")
    for sub in site.nodes(cst.Subscript)[:8]:
        if len(sub.slice) != 1 or not isinstance(sub.slice[0].slice, cst.Slice):
            continue
        sl = sub.slice[0].slice
        given = [p for p in site.params(site.function(sub)) if p in POSITIONS]
        if sl.lower is None and sl.upper is not None and given and d.id == "rope-positions-ignored":
            rows = f"{site.code(sub.value)}[{given[0]}]"
            yield Candidate(site.replace(sub, rows), f"rows at {given[0]}")
            yield Candidate(
                site.replace(sub, f"({rows} if {given[0]}.dim() == 1 else {rows}[:, None])"),
                f"rows at {given[0]}, batched positions broadcast over the heads",
            )
    if d.id == "cache-positions-restart":
        yield from _offset_through_helper(site)


def _offset_through_helper(site: Site) -> Iterator[Candidate]:
    """Positions made in a helper the cache never reaches (`def rope(self, x)`: arange(L)):
    the helper takes the start (0 by default) and its callers pass the cache's length."""
    for call in site.calls("arange")[:4]:
        helper = site.function(call)
        args = [a for a in call.args if a.keyword is None]
        if helper is None or len(args) != 1 or _cache_lengths(site, call):
            continue
        name = helper.name.value
        uses = [
            c
            for c in site.nodes(cst.Call)
            if isinstance(c.func, cst.Attribute | cst.Name)
            and code_of(c.func).split(".")[-1] == name
        ]
        starts = {id(u): _cache_lengths(site, u) for u in uses}
        if not uses or not all(starts.values()):
            continue
        n = site.code(args[0].value)
        start = site.fresh("start")
        params = helper.params
        default = cst.Param(
            cst.Name(start),
            default=cst.Integer("0"),
            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
        )
        new_params = params.with_changes(params=[*params.params, default])
        arange = site.code(call).replace(f"({n}", f"({start}, {start} + {n}", 1)
        pairs: list[tuple[cst.CSTNode, str | cst.CSTNode]] = [(params, new_params), (call, arange)]
        for u in uses:
            extra = cst.Arg(cst.parse_expression(starts[id(u)][0]))
            pairs.append((u, u.with_changes(args=[*u.args, extra])))
        yield Candidate(
            site.replace_all(pairs), f"{name} starts its positions at the cache's length"
        )


def _cache_lengths(site: Site, near: cst.CSTNode) -> list[str]:
    fn = site.function(near)
    scope = set(site.params(fn)) | {n.value for n in site.nodes(cst.Name) if site.function(n) is fn}
    out = [
        n
        for n in ("past", "past_len", "past_length", "start_pos", "offset", "cache_len", "P")
        if n in scope
    ]
    for c in (c for c in CACHES if c in scope):
        out.append(f"(0 if {c} is None else {c}[0].shape[-2])")
    return out


@template("cache-concat-wrong-dim")
def cache_dim(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    cats = site.calls("cat", "concat", "concatenate")
    cached = [
        c
        for c in cats
        if c.args
        and any(
            isinstance(n, cst.Name)
            and n.value in CACHES + ("k_cache", "v_cache", "past_k", "past_v")
            for n in _names(c.args[0].value)
        )
    ]
    for new in ("-2", "2"):
        pairs = [
            (d.value, new)
            for c in cached
            if (d := arg(c, 1, "dim", "axis")) is not None and code_of(d.value) != new
        ]
        if len(pairs) > 1:  # K and V alike
            yield Candidate(site.replace_all(pairs), f"the cache grows along dim {new}")
    for call in cats[:4]:
        dim = arg(call, 1, "dim", "axis")
        if dim is not None:
            for new in ("-2", "2"):
                if code_of(dim.value) != new:
                    yield Candidate(site.replace(dim.value, new), f"cache grows along dim {new}")
        else:
            yield Candidate(
                site.replace(call, with_kwarg(call, "dim", "-2")), "cache grows along dim -2"
            )


@template("rope-on-values")
def values_unrotated(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """Only queries and keys are rotated."""
    for call in site.nodes(
        cst.Call,
        lambda n: any(w in (callee(n) or "").lower() for w in ("rope", "rotary", "rotate")),
    ):
        for a in call.args:
            if isinstance(a.value, cst.Name) and a.value.value in VALUE_NAMES + (
                "xv",
                "v_new",
                "value",
            ):
                yield Candidate(
                    site.replace(call, a.value.value), f"{a.value.value} left unrotated"
                )


# -- the pair layout ----------------------------------------------------------------------------
# x.unflatten(-1, (2, -1)).transpose(-1, -2).flatten(-2) moves feature i + d/2 next to feature
# i (rotate_half's pairs become neighbours); (-1, 2) undoes it.
_TO_NEIGHBOURS = "unflatten(-1, (2, -1)).transpose(-1, -2).flatten(-2)"
_TO_HALVES = "unflatten(-1, (-1, 2)).transpose(-1, -2).flatten(-2)"


def _rotators(site: Site) -> list[cst.FunctionDef]:
    """Functions that rotate pairs: a complex view, rotate_half's negated half, strided halves."""
    out = []
    for fn in site.functions():
        body = site.code(fn)
        if any(
            m in body
            for m in ("view_as_complex", "rotate_half", "rotate_every_two", "::2", "torch.complex(")
        ) or ("cat" in body and "-" in body and ("sin" in body or "cos" in body)):
            out.append(fn)
    return out


@template("rope-wrong-layout")
def pair_layout(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """The code rotates the other pairs than the contract's: its input is permuted into the
    layout it rotates, and its output back (both ways are tried: which layout the contract
    wants depends on the kata, and on `interleaved` where the function takes it)."""
    for fn in _rotators(site)[:3]:
        params = [p for p in site.params(fn) if p not in ("self", "cls")]
        body = fn.body
        if not params or not isinstance(body, cst.IndentedBlock) or not body.body:
            continue
        x = params[0]
        flag = "interleaved" if "interleaved" in params else None
        returns = [
            r
            for r in site.nodes(
                cst.Return, lambda n: n.value is not None and not isinstance(n.value, cst.Tuple)
            )
            if site.function(r) is fn
        ]
        if not returns:
            continue
        for into, back, when in (
            (_TO_NEIGHBOURS, _TO_HALVES, f"not {flag}" if flag else None),
            (_TO_HALVES, _TO_NEIGHBOURS, flag),
        ):
            first = body.body[0]
            line = f"{x} = {x}.{into}" if when is None else f"{x} = {x}.{into} if {when} else {x}"
            pairs = []
            for r in returns:
                value = site.code(r.value)
                new = (
                    f"({value}).{back}"
                    if when is None
                    else f"(({value}).{back} if {when} else {value})"
                )
                pairs.append((r.value, new))
            yield Candidate(
                site.insert_before(first, line, also=pairs), "the pairs of the contract's layout"
            )


# -- what the cache holds -------------------------------------------------------------------------
@template("cache-stores-repeated-heads")
def cache_kv_heads(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """K and V repeated to the query heads before the cache: the cache keeps the KV heads,
    the repeat comes after it (and the attention uses the repeated ones)."""
    cats = [
        c
        for c in site.calls("cat", "concat")
        if c.args and isinstance(c.args[0].value, cst.List | cst.Tuple)
    ]
    repeats: list[tuple[cst.Assign, str, str]] = []  # (assignment, repeated name, source name)
    for asg in site.nodes(cst.Assign):
        target, value = asg.targets[0].target, asg.value
        if not isinstance(target, cst.Name) or not isinstance(value, cst.Call) or not value.args:
            continue
        first = value.args[0].value
        name = callee(value) or ""
        src = first if isinstance(first, cst.Name) else None
        if (
            src is None
            and isinstance(value.func, cst.Attribute)
            and isinstance(value.func.value, cst.Name)
        ):
            src = value.func.value  # k.repeat_interleave(g, dim=1)
        if src is None or not ("repeat" in name or "expand" in name):
            continue
        grown = [
            c
            for c in cats
            if any(site.code(e.value).strip() == target.value for e in c.args[0].value.elements)
        ]
        if grown:
            repeats.append((asg, target.value, src.value))
    if not repeats:
        return
    last_cat = max((c for c in cats), key=lambda c: site.order[c])
    block = next(
        (a for a in site.ancestors(last_cat) if isinstance(a, cst.If)), None
    ) or site.statement(last_cat)
    rets = [r for r in site.nodes(cst.Return, lambda n: isinstance(n.value, cst.Tuple))]
    if block is None or not rets:
        return
    repeats.sort(key=lambda r: site.order[r[0]])  # K before V, as the file has them
    names = [t for _, t, _ in repeats]
    held = site.fresh("kv_cache")
    lines = [f"{held} = ({', '.join(names)})"]
    pairs: list[tuple[cst.CSTNode, str]] = []
    for asg, target, src in repeats:
        lines.append(
            f"{target} = {site.code(asg.value)}".replace(f"({src}", f"({target}", 1).replace(
                f"{src}.", f"{target}.", 1
            )
        )
        pairs.append((asg.value, src))
    for r in rets:
        for e in r.value.elements:
            if isinstance(e.value, cst.Tuple) and {
                site.code(x.value).strip() for x in e.value.elements
            } == set(names):
                pairs.append((e.value, held))
    yield Candidate(
        site.insert_after(block, "\n".join(lines), also=pairs), "the cache keeps the KV heads"
    )


@template("mla-cache-unnormalized")
def cache_normalised(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """The latent is normalised before it is cached, not on every read."""
    norms = [
        c
        for c in site.nodes(cst.Call)
        if isinstance(c.func, cst.Attribute) and "norm" in c.func.attr.value.lower() and c.args
    ]
    for read in norms[:3]:
        x = read.args[0].value
        if not any(isinstance(n, cst.Name) and "cache" in n.value for n in _names(x)):
            continue
        norm = site.code(read.func)
        for cat in site.calls("cat")[:3]:
            if not cat.args or not isinstance(cat.args[0].value, cst.List):
                continue
            first = cat.args[0].value.elements[0].value
            if isinstance(first, cst.Name):
                yield Candidate(
                    site.replace_all([(read, site.code(x)), (first, f"{norm}({first.value})")]),
                    f"{norm} applied before the cache",
                )


def _names(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from _names(child)
