"""Mask repairs: the causal triangle (its corner, its diagonal, which side), the window's
edges, the caller's mask (its polarity, where it is applied, how), the padding mask's axis."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from attnkata.checker.catalog import Kata
from attnkata.checker.fix.site import (
    Candidate,
    Site,
    arg,
    callee,
    code_of,
    number,
    receiver,
    with_kwarg,
)
from attnkata.checker.fix.templates import template
from attnkata.checker.fix.templates.common import (
    MASK_NAMES,
    guarded_softmax,
    is_numpy,
    key_offsets,
    neg_inf,
    np_name,
    softmax_calls,
    softmax_input,
    with_input,
)
from attnkata.checker.models import Diagnostic

STRICT = {
    cst.LessThan: cst.LessThanEqual,
    cst.LessThanEqual: cst.LessThan,
    cst.GreaterThan: cst.GreaterThanEqual,
    cst.GreaterThanEqual: cst.GreaterThan,
}
INVERSE = {
    cst.LessThan: cst.GreaterThanEqual,
    cst.LessThanEqual: cst.GreaterThan,
    cst.GreaterThan: cst.LessThanEqual,
    cst.GreaterThanEqual: cst.LessThan,
}


# -- the triangle -----------------------------------------------------------------------------
def _triangles(site: Site) -> list[cst.Call]:
    return site.calls("tril", "triu", "tril_", "triu_")


def _diagonal(call: cst.Call) -> tuple[cst.Arg | None, str]:
    rec = receiver(call)
    method = rec is not None and code_of(rec) not in ("torch", "np", "numpy")
    a = arg(call, 0 if method else 1, "diagonal", "k")
    return a, (code_of(a.value) if a is not None else "0")


def _shift(diag: str, by: str) -> str:
    """diag + by, simplified where both are numbers."""
    try:
        d = int(diag)
    except ValueError:
        return f"{diag} + {by}" if not by.startswith("-") else f"{diag} - {by[1:]}"
    try:
        return str(d + int(by))
    except ValueError:
        if d == 0:
            return by
        return f"{by} + {d}" if d > 0 else f"{by} - {-d}"


def _set_diagonal(site: Site, call: cst.Call, value: str) -> str:
    a, _ = _diagonal(call)
    if a is not None:
        return site.replace(a.value, value)
    return site.replace(call, with_kwarg(call, "diagonal", value))


def _flip_triangle(site: Site, call: cst.Call, diag: str) -> str:
    """tril(D) <-> triu(D + 1): the other triangle, the complement of this one."""
    name = callee(call) or ""
    other = {"tril": "triu", "triu": "tril", "tril_": "triu_", "triu_": "tril_"}[name]
    by = "1" if name.startswith("tril") else "-1"
    func = call.func
    new_func = (
        func.with_changes(attr=cst.Name(other))
        if isinstance(func, cst.Attribute)
        else cst.Name(other)
    )
    flipped = call.with_changes(func=new_func)
    a, _ = _diagonal(call)
    value = _shift(diag, by)
    if a is not None:
        flipped = flipped.deep_replace(
            flipped.args[call.args.index(a)].value, cst.parse_expression(value)
        )
    elif value != "0":
        flipped = with_kwarg(flipped, "diagonal", value)
    return site.replace(call, flipped)


def _comparisons(site: Site) -> list[cst.Comparison]:
    def positional(n: cst.Comparison) -> bool:
        if len(n.comparisons) != 1 or type(n.comparisons[0].operator) not in STRICT:
            return False
        # `den > 0` style guards compare with a number; positions compare two expressions
        return number(n.left) is None and number(n.comparisons[0].comparator) is None

    return site.nodes(cst.Comparison, positional)


def _with_op(site: Site, cmp: cst.Comparison, table: dict) -> str:
    target = cmp.comparisons[0]
    op = target.operator
    new_op = table[type(op)](
        whitespace_before=op.whitespace_before, whitespace_after=op.whitespace_after
    )
    return site.replace(cmp, cmp.with_changes(comparisons=[target.with_changes(operator=new_op)]))


def _offset_sides(site: Site, cmp: cst.Comparison, offsets: list[str]) -> Iterator[str]:
    left, right = cmp.left, cmp.comparisons[0].comparator
    for off in offsets[:3]:
        for side in (right, left):
            yield site.replace(side, f"{site.code(side)} + ({off})")


def _buffer_slices(site: Site) -> Iterator[tuple[cst.Subscript, str]]:
    """A causal buffer sliced at its top-left corner, `bias[:, :, :T, :S]`: the bottom-right
    rows of the first S instead, `bias[:, :, S - T:S, :S]`."""
    for sub in site.nodes(cst.Subscript):
        els = sub.slice
        if len(els) < 2:
            continue
        last = [e.slice for e in els[-2:]]
        if not all(
            isinstance(s, cst.Slice) and s.lower is None and s.upper is not None and s.step is None
            for s in last
        ):
            continue
        rows, cols = (site.code(s.upper) for s in last)  # type: ignore[union-attr]
        head = ", ".join(site.code(e.slice) for e in els[:-2])
        new = (
            f"{site.code(sub.value)}[{head + ', ' if head else ''}{cols} - {rows}:{cols}, :{cols}]"
        )
        yield sub, new


QUERY_POSITIONS = (
    "p",
    "p0",
    "p1",
    "qpos",
    "q_pos",
    "pos_q",
    "q_idx",
    "qi",
    "rows",
    "offs_m",
    "query_pos",
    "qp",
    "i_pos",
)


def _query_positions(site: Site, offsets: list[str]) -> Iterator[Candidate]:
    """Query positions assigned from the query's own index (`p0, p1 = i0, i1 - 1`): moved by
    S - L, where the queries sit at the end of the keys."""
    for asg in site.nodes(cst.Assign)[:40]:
        target = asg.targets[0].target
        names = [t.value for t in _walk(target) if isinstance(t, cst.Name)]
        if not any(n in QUERY_POSITIONS for n in names):
            continue
        values = (
            [e.value for e in asg.value.elements]
            if isinstance(asg.value, cst.Tuple) and isinstance(target, cst.Tuple)
            else [asg.value]
        )
        for off in offsets[:2]:
            pairs = [(v, f"{site.code(v)} + ({off})") for v in values]
            yield Candidate(site.replace_all(pairs), f"query positions offset by {off}")


def _triangle_edits(site: Site, kind: str, offsets: list[str]) -> Iterator[Candidate]:
    for call in _triangles(site)[:3]:
        _, diag = _diagonal(call)
        name = callee(call) or ""
        lower = name.startswith("tril")
        if kind == "top-left":
            for off in offsets[:3]:
                yield Candidate(
                    _set_diagonal(site, call, _shift(diag, off)), f"{name} offset by {off}"
                )
        elif kind in ("diagonal", "future"):
            # Which way depends on what the triangle marks (allowed, or blocked): both, the
            # likelier first.
            first = "1" if lower == (kind == "diagonal") else "-1"
            for by in (first, "-1" if first == "1" else "1"):
                yield Candidate(
                    _set_diagonal(site, call, _shift(diag, by)), f"{name} diagonal {by}"
                )
        elif kind == "inverted":
            yield Candidate(_flip_triangle(site, call, diag), f"{name} -> the other triangle")


OFFSET_SIDES = 6  # "offset sides" candidates for a top-left mask, over all its comparisons


def _causal(site: Site, kind: str) -> Iterator[Candidate]:
    anchor = next(iter(_triangles(site) + _comparisons(site)), None)
    offsets = key_offsets(site, anchor) if anchor is not None else []
    cmps = _comparisons(site)[:4]
    near_cmp = bool(cmps) and (
        not _triangles(site) or site.distance(cmps[0]) < site.distance(_triangles(site)[0])
    )
    if not near_cmp:
        yield from _triangle_edits(site, kind, offsets)
    sides = 0
    for cmp in cmps:
        if kind == "top-left":
            for src in _offset_sides(site, cmp, offsets):
                # Capped: several comparisons times several offsets would use up the search
                # before the query positions' own repair below is tried.
                if sides == OFFSET_SIDES:
                    break
                sides += 1
                yield Candidate(src, "query positions offset by S - L")
        elif kind in ("diagonal", "future"):
            yield Candidate(_with_op(site, cmp, STRICT), "comparison strictness")
        elif kind == "inverted":
            yield Candidate(_with_op(site, cmp, INVERSE), "comparison inverted")
    if near_cmp:
        yield from _triangle_edits(site, kind, offsets)
    if kind == "top-left":
        for sub, new in _buffer_slices(site):
            yield Candidate(site.replace(sub, new), "buffer rows taken bottom-right")
        yield from _query_positions(site, offsets)
    if kind == "inverted":
        for ret in site.nodes(cst.Return, lambda n: n.value is not None)[:2]:
            yield Candidate(
                site.replace(ret.value, f"~({site.code(ret.value)})"), "returned mask negated"
            )


# What each causal mistake's repairs change: the triangle's corner, its diagonal, its side.
_CAUSAL = {
    "causal-mask-top-left": "top-left",
    "causal-mask-excludes-diagonal": "diagonal",
    "causal-mask-leaks-future": "future",
    "causal-mask-inverted": "inverted",
}


@template(*_CAUSAL)
def causal(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    yield from _causal(site, _CAUSAL[d.id])
    if d.id == "causal-mask-inverted":
        yield from _negated_conditions(site)


# -- the caller's mask ------------------------------------------------------------------------
def _negate(site: Site, cond: cst.BaseExpression, numpy: bool) -> str:
    """`cond` negated the way it is written: ~m <-> m, m == 0 <-> m != 0, m.logical_not() -> m."""
    if isinstance(cond, cst.UnaryOperation) and isinstance(cond.operator, cst.BitInvert | cst.Not):
        return site.code(cond.expression)
    if (
        isinstance(cond, cst.Call)
        and callee(cond) in ("logical_not", "bitwise_not")
        and (rec := receiver(cond)) is not None
    ):
        if code_of(rec) not in ("torch", "np", "numpy"):
            return site.code(rec)
        if cond.args:
            return site.code(cond.args[0].value)
    if isinstance(cond, cst.Comparison) and len(cond.comparisons) == 1:
        op = cond.comparisons[0].operator
        swap = {cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal}
        if type(op) in swap:
            new = swap[type(op)](
                whitespace_before=op.whitespace_before, whitespace_after=op.whitespace_after
            )
            return code_of(
                cond.with_changes(comparisons=[cond.comparisons[0].with_changes(operator=new)])
            )
    code = site.code(cond)
    if numpy:
        return f"{np_name(site)}.logical_not({code})"
    return (
        f"~{code}"
        if isinstance(cond, cst.Name | cst.Attribute | cst.Call | cst.Subscript)
        else f"~({code})"
    )


def _mask_uses(site: Site) -> list[cst.Call]:
    """masked_fill / where calls: where a mask meets the scores."""
    return site.calls("masked_fill", "masked_fill_", "where")


def _negated_conditions(site: Site, numpy: bool = False) -> Iterator[Candidate]:
    fills = [
        a.value
        for call in _mask_uses(site)
        if callee(call) in ("masked_fill", "masked_fill_")
        and (a := arg(call, 0, "mask")) is not None
    ]
    by_text: dict[str, list[cst.BaseExpression]] = {}
    for cond in fills:
        by_text.setdefault(site.code(cond), []).append(cond)
    for conds in by_text.values():
        if len(conds) > 1:  # the same mask flipped in every branch
            yield Candidate(
                site.replace_all([(c, _negate(site, c, numpy)) for c in conds]),
                "every use of the mask negated",
            )
    for call in _mask_uses(site)[:4]:
        name = callee(call)
        if name in ("masked_fill", "masked_fill_"):
            a = arg(call, 0, "mask")
            if a is not None:
                yield Candidate(
                    site.replace(a.value, _negate(site, a.value, numpy)), "mask condition negated"
                )
        else:
            args = [a for a in call.args if a.keyword is None]
            if len(args) == 3:
                yield Candidate(
                    site.replace_all(
                        [
                            (args[1].value, site.code(args[2].value)),
                            (args[2].value, site.code(args[1].value)),
                        ]
                    ),
                    "where's branches swapped",
                )


@template("mask-polarity-flipped")
def mask_polarity(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    numpy = is_numpy(site, kata.id)
    first = list(_negated_conditions(site, numpy))
    yield from first
    # Code that also takes only 2-D inputs (an einsum without "..."): the mistake only shows
    # once the batched tests run, so each negation is tried with the einsums batched too.
    from attnkata.checker.fix.templates.shapes import batched_einsums

    for cand in first[:3]:
        edits = batched_einsums(Site(cand.source, site.targets))
        if edits:
            yield Candidate(
                Site(cand.source).replace_all(edits)
                if False
                else _apply_einsums(cand.source, site.targets),
                cand.label + ", einsums batched",
            )


def _mask_param(site: Site, near: cst.CSTNode) -> list[str]:
    params = site.params(site.function(near))
    return [p for p in params if p in MASK_NAMES]


NOT_IN_PLACE = ("masked_fill", "where", "add", "mul", "clamp", "nan_to_num")


@template("mask-ignored")
def mask_ignored(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """The caller's mask never reaches the scores: a masking whose result is thrown away is
    kept; else the masked scores are filled with -inf before the softmax (and the rows it
    empties guarded)."""
    numpy = is_numpy(site, kata.id)
    for expr in site.nodes(
        cst.Expr, lambda n: isinstance(n.value, cst.Call) and callee(n.value) in NOT_IN_PLACE
    ):
        rec = receiver(expr.value)
        if isinstance(rec, cst.Name):
            stmt = site.statement(expr) or expr
            yield Candidate(
                site.replace(stmt, f"{rec.value} = {site.code(expr.value)}"),
                "the masked scores kept",
            )
    if numpy:
        return
    for call in softmax_calls(site)[:2]:
        x, _ = softmax_input(call)
        stmt = site.statement(call)
        if x is None or stmt is None:
            continue
        for mask in _mask_param(site, call)[:2]:
            xs = site.code(x)
            masked = f"({xs} if {mask} is None else {xs}.masked_fill(~{mask}, float('-inf')))"
            for src in guarded_softmax(site, call):
                inner = Site(src, site.targets)
                for c2 in softmax_calls(inner)[:1]:
                    x2, _ = softmax_input(c2)
                    if x2 is not None and site.code(x2) == xs:
                        yield Candidate(
                            inner.replace(x2, masked), "the caller's mask applied, softmax guarded"
                        )
            yield Candidate(site.replace(x, masked), "the caller's mask applied")


@template("mask-added-as-float")
def mask_added(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """scores + mask with a boolean mask adds 1.0 where allowed: fill -inf where not."""
    numpy = is_numpy(site, kata.id)
    for node in site.nodes(cst.BinaryOperation, lambda n: isinstance(n.operator, cst.Add)):
        for mask, other in ((node.right, node.left), (node.left, node.right)):
            if not (isinstance(mask, cst.Name) and mask.value in _mask_param(site, node)):
                continue
            o = site.code(other)
            if numpy:
                new = f"{np_name(site)}.where({mask.value}, {o}, -{np_name(site)}.inf)"
                yield Candidate(site.replace(node, new), "boolean mask used as a mask")
                continue
            new = f"{o}.masked_fill(~{mask.value}, float('-inf'))"
            plain = site.replace(node, new)
            inner = Site(plain, site.targets)
            for call in softmax_calls(inner)[:1]:
                for src in guarded_softmax(inner, call):
                    yield Candidate(src, "boolean mask used as a mask, softmax guarded")
            yield Candidate(plain, "boolean mask used as a mask")


@template("mask-applied-after-softmax")
def mask_after(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """Zeroing the masked weights after the softmax leaves the rest summing to less than 1:
    renormalise right after the zeroing (that is the softmax over the allowed keys)."""
    numpy = is_numpy(site, kata.id)
    zeroings = _mask_uses(site) + site.nodes(
        cst.BinaryOperation, lambda n: isinstance(n.operator, cst.Multiply)
    )
    softmaxes = site.nodes(cst.Call, lambda n: "softmax" in (callee(n) or ""))
    for node in zeroings[:6]:
        stmt = site.statement(node)
        if stmt is None or not isinstance(stmt.body[0], cst.Assign):
            continue
        target = stmt.body[0].targets[0].target
        if not isinstance(target, cst.Name):
            continue
        w = target.value
        blocked = _blocked(site, node, w)
        made = [
            c
            for c in softmaxes
            if (st := site.statement(c)) is not None
            and isinstance(st.body[0], cst.Assign)
            and site.code(st.body[0].targets[0].target).strip() == w
            and site.order[c] < site.order[node]
        ]
        if not numpy and blocked is not None and made:
            x, _ = softmax_input(made[-1])
            if x is not None:
                inner = with_input(
                    site, made[-1], f"({site.code(x)}).masked_fill({blocked}, float('-inf'))"
                )
                yield Candidate(
                    site.replace(stmt.body[0].value, f"{inner}.nan_to_num(0.0)"),
                    "the softmax taken again over the allowed keys only",
                )
        mask = _zeroing_mask(site, node, w)
        if made and mask is not None:
            yield from _finite_fill_first(site, made[-1], mask, numpy)
        if numpy:
            np = np_name(site)
            line = f"{w} = {w} / {np}.maximum({w}.sum(axis=-1, keepdims=True), {np}.finfo({w}.dtype).tiny)"
        else:
            line = (
                f"{w} = {w} / {w}.sum(dim=-1, keepdim=True).clamp_min(torch.finfo({w}.dtype).tiny)"
            )
        yield Candidate(site.insert_after(stmt, line), "weights renormalised after the mask")


def _zeroing_mask(site: Site, node: cst.CSTNode, weights: str) -> str | None:
    """The mask name a zeroing multiplies by (w * mask), if it is a plain name."""
    if isinstance(node, cst.BinaryOperation):
        other = node.right if site.code(node.left).strip() == weights else node.left
        return other.value if isinstance(other, cst.Name) else None
    return None


def _finite_fill_first(site: Site, call: cst.Call, mask: str, numpy: bool) -> Iterator[Candidate]:
    """The blocked keys filled with the dtype's lowest number before the softmax (whatever
    softmax the file uses): they get weight 0, and a row with no key stays finite and uniform
    until the zeroing after it, which stays."""
    rec = receiver(call)
    args = [a for a in call.args if a.keyword is None]
    if rec is not None and code_of(rec) not in ("torch", "F", "np", "special", "nn.functional"):
        x: cst.BaseExpression | None = rec  # scores.softmax(-1)
    else:
        x = args[0].value if args else None  # softmax(scores), the file's own _softmax(scores)
    if x is None:
        return
    xs = site.code(x)
    if numpy:
        np = np_name(site)
        low = f"{np}.where({mask} == 0, {np}.finfo({np}.asarray({xs}).dtype).min, {xs})"
    else:
        low = f"({xs}).masked_fill({mask} == 0, torch.finfo(({xs}).dtype).min)"
    yield Candidate(
        site.replace(x, f"({xs} if {mask} is None else {low})"),
        "the blocked keys out of the softmax, the zeroing kept",
    )


def _blocked(site: Site, node: cst.CSTNode, weights: str) -> str | None:
    """What the zeroing blocks: masked_fill(COND, 0) -> COND; w * m -> m == 0."""
    if isinstance(node, cst.Call) and callee(node) in ("masked_fill", "masked_fill_"):
        a = arg(node, 0, "mask")
        return site.code(a.value) if a is not None else None
    if isinstance(node, cst.BinaryOperation):
        other = node.right if site.code(node.left).strip() == weights else node.left
        return f"({site.code(other)}) == 0"
    return None


@template("padding-mask-wrong-axis")
def padding_axis(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """The key padding mask must broadcast as (B, 1, 1, S): its keys on the last axis."""
    for node in site.nodes(cst.Subscript)[:8]:
        els = [e.slice for e in node.slice]
        idx = [
            i for i, e in enumerate(els) if isinstance(e, cst.Index) and code_of(e.value) == "None"
        ]
        if len(els) == 4 and len(idx) == 2 and idx != [1, 2]:
            yield Candidate(
                site.replace(node, f"{site.code(node.value)}[:, None, None, :]"),
                "padding mask as (B, 1, 1, S)",
            )
    for call in site.calls("unsqueeze", "view", "reshape")[:8]:
        rec = receiver(call)
        if rec is None:
            continue
        if callee(call) == "unsqueeze":
            parent = site.parent(call)
            if (
                isinstance(parent, cst.Attribute)
                and isinstance(site.parent(parent), cst.Call)
                and callee(site.parent(parent)) == "unsqueeze"
            ):
                continue  # not the end of the chain
            base = _unsqueeze_base(call)
            yield Candidate(
                site.replace(call, f"{site.code(base)}[:, None, None, :]"),
                "padding mask as (B, 1, 1, S)",
            )
        else:
            args = [a for a in call.args if a.keyword is None]
            if len(args) == 4:
                b = site.code(args[0].value)
                s = next((site.code(a.value) for a in args[1:] if number(a.value) != 1.0), None)
                if s is not None:
                    yield Candidate(
                        site.replace(call, f"{site.code(rec)}.{callee(call)}({b}, 1, 1, {s})"),
                        "padding mask as (B, 1, 1, S)",
                    )


def _unsqueeze_base(call: cst.Call) -> cst.BaseExpression:
    base: cst.BaseExpression = call
    while isinstance(base, cst.Call) and callee(base) == "unsqueeze" and receiver(base) is not None:
        base = receiver(base)  # type: ignore[assignment]
    return base


# -- the window -------------------------------------------------------------------------------
WINDOW_NAMES = (
    "window",
    "w",
    "W",
    "window_size",
    "left",
    "right",
    "one_sided",
    "half",
    "radius",
    "wl",
    "wr",
    "n_global",
    "n_left",
    "n_right",
)


def _mentions(site: Site, node: cst.CSTNode, names: tuple[str, ...]) -> bool:
    return any(isinstance(n, cst.Name) and n.value in names for n in _walk(node))


def one_off_ops(site: Site, names: tuple[str, ...]) -> list[cst.BinaryOperation]:
    """`x + 1` / `x - 1` where x uses one of `names`: an off-by-one's usual spelling."""
    return site.nodes(
        cst.BinaryOperation,
        lambda n: (
            isinstance(n.operator, cst.Add | cst.Subtract)
            and number(n.right) == 1.0
            and _mentions(site, n.left, names)
        ),
    )


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from _walk(child)


def _plus_minus_one(site: Site, names: tuple[str, ...]) -> Iterator[Candidate]:
    """Off-by-one edits on expressions that use the window: a comparison's strictness, a
    `± 1` dropped, or a `+ 1` / `- 1` added to a bound."""
    for cmp in site.nodes(
        cst.Comparison,
        lambda n: len(n.comparisons) == 1 and type(n.comparisons[0].operator) in STRICT,
    )[:4]:
        if _mentions(site, cmp, names):
            yield Candidate(_with_op(site, cmp, STRICT), "window comparison strictness")
    for op in one_off_ops(site, names)[:3]:
        yield Candidate(site.replace(op, site.code(op.left)), "window bound without the ± 1")
    for name in site.nodes(
        cst.Name,
        lambda n: (
            n.value in names
            and not isinstance(site.parent(n), cst.Param | cst.AssignTarget | cst.Attribute)
        ),
    )[:3]:
        for by in ("+ 1", "- 1"):
            yield Candidate(site.replace(name, f"({name.value} {by})"), f"window {by}")


@template("window-off-by-one", "block-window-off-by-one", "topk-off-by-one")
def window_off_by_one(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    names = WINDOW_NAMES + ("top_k", "k", "topk", "n_keep", "kth")
    yield from _plus_minus_one(site, names)


@template("window-wrong-side")
def window_sides(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """The two sides of the band swapped: swap them back where they are unpacked or used."""
    pairs = (
        ("left", "right"),
        ("before", "after"),
        ("wl", "wr"),
        ("n_left", "n_right"),
        ("left_window", "right_window"),
    )
    for a, b in pairs:
        uses = site.nodes(cst.Name, lambda n, a=a, b=b: n.value in (a, b))
        if not uses:
            continue
        assigns = [
            t for t in site.nodes(cst.Assign) if _mentions(site, t.targets[0].target, (a, b))
        ]
        for asg in assigns[:2]:
            swapped = [
                (n, b if n.value == a else a)
                for n in _walk(asg.targets[0].target)
                if isinstance(n, cst.Name) and n.value in (a, b)
            ]
            yield Candidate(site.replace_all(swapped), f"{a} and {b} swapped back")
    for cmp in site.nodes(cst.Comparison)[:3]:
        left, right = cmp.left, cmp.comparisons[0].comparator
        if isinstance(left, cst.BinaryOperation) and isinstance(left.operator, cst.Subtract):
            yield Candidate(
                site.replace(left, f"{site.code(left.right)} - {site.code(left.left)}"),
                "window side mirrored",
            )
        del right


@template("longformer-window-as-total")
def window_as_total(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """window // 2 keys a side: the window is per side."""
    halves = site.nodes(
        cst.BinaryOperation,
        lambda n: (
            isinstance(n.operator, cst.FloorDivide | cst.Divide)
            and number(n.right) == 2.0
            and _mentions(site, n.left, WINDOW_NAMES)
        ),
    )
    if halves:
        yield Candidate(
            site.replace_all([(h, site.code(h.left)) for h in halves]),
            "the whole window on each side",
        )
        for h in halves[:2]:
            yield Candidate(site.replace(h, site.code(h.left)), "the whole window on this side")


# exported for sparse.py
negate = _negate
plus_minus_one = _plus_minus_one
walk = _walk
mentions = _mentions
neg_inf_code = neg_inf


def _apply_einsums(source: str, targets: list[tuple[int, int]]) -> str:
    from attnkata.checker.fix.templates.shapes import batched_einsums

    again = Site(source, targets)
    return again.replace_all(batched_einsums(again))
