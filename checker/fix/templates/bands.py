"""Band and block-layout repairs: global positions in both directions (the rows they own as
well as the columns), key padding on every path that scores keys, a window closed at both
ends, the short last block kept, and a softmax moved back onto the keys with the mask the file
applies after it moved in front."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from attnkata.checker.catalog import Kata
from attnkata.checker.fix.site import Candidate, Site, arg, callee, code_of, number, receiver
from attnkata.checker.fix.templates import template
from attnkata.checker.fix.templates.common import (
    KEY_NAMES,
    QUERY_NAMES,
    VALUE_NAMES,
    score_products,
    softmax_calls,
    softmax_input,
    with_input,
)
from attnkata.checker.fix.templates.flash import ceil_divisions, tile_sizes
from attnkata.checker.fix.templates.masks import STRICT, mentions, walk
from attnkata.checker.fix.templates.sparse import both_directions
from attnkata.checker.models import Diagnostic

# Names real code gives the global positions (a count of global blocks, or their indices).
GLOBAL_COUNTS = ("n_global", "num_global", "n_glob", "num_global_blocks", "g")
GLOBAL_INDICES = ("global_idx", "global_indices", "gidx", "gi", "gl", "g", "glob_idx")
PADDING = ("key_padding", "key_padding_mask", "padding_mask", "attention_mask")
LENGTHS = ("L", "seq_len", "seqlen", "T", "n", "N", "S")


def _func_names(site: Site, fn: cst.FunctionDef | None) -> set[str]:
    """The parameters and every name the function `fn` uses."""
    have = set(site.params(fn))
    if fn is not None:
        have |= {n.value for n in walk(fn) if isinstance(n, cst.Name)}
    return have


def _assigned_from(site: Site, fn: cst.FunctionDef, sources: tuple[str, ...]) -> list[str]:
    """Names `x` of the assignments `x = <... source ...>` in `fn` (a source's device copy,
    its `None`-filled default), in file order."""
    out: list[str] = []
    for asg in site.nodes(cst.Assign):
        target = asg.targets[0].target
        if (
            site.function(asg) is fn
            and isinstance(target, cst.Name)
            and target.value not in sources
            and _copies(asg.value, sources)
        ):
            out.append(target.value)
    return sorted(dict.fromkeys(out), key=lambda n: -int(n in ("real", "keep", "pad_ok")))


def _copies(value: cst.BaseExpression, sources: tuple[str, ...]) -> bool:
    """`src.to(device)`, `src.long()`, `torch.as_tensor(src, ...)`, `a if src is None else
    src...`: a value that is one of `sources` itself (moved, cast or defaulted)."""
    if isinstance(value, cst.IfExp):
        return _copies(value.body, sources) or _copies(value.orelse, sources)
    base: cst.BaseExpression = value
    while isinstance(base, cst.Call):
        rec = receiver(base)
        if rec is not None and code_of(rec) not in ("torch", "np"):
            base = rec
        elif base.args and callee(base) in ("as_tensor", "tensor", "asarray", "bool", "long"):
            base = base.args[0].value
        else:
            break
    return isinstance(base, cst.Name) and base.value in sources and base is not value


# -- global positions both ways ----------------------------------------------------------------
_TRANSPOSED = {
    "[None, :]": "[:, None]",
    "[:, None]": "[None, :]",
    "[None]": "[:, None]",
    ".unsqueeze(0)": ".unsqueeze(1)",
    ".unsqueeze(1)": ".unsqueeze(0)",
    ".unsqueeze(-2)": ".unsqueeze(-1)",
    ".unsqueeze(-1)": ".unsqueeze(-2)",
    ".view(1, -1)": ".view(-1, 1)",
    ".view(-1, 1)": ".view(1, -1)",
    ".reshape(1, -1)": ".reshape(-1, 1)",
    ".reshape(-1, 1)": ".reshape(1, -1)",
}


def _broadcast_vector(site: Site, node: cst.BaseExpression) -> tuple[str, str] | None:
    """`g[None, :]` / `g.unsqueeze(0)` / `g.view(1, -1)` ...: (the vector's code, the other
    direction's code) for a 1-D vector broadcast as a row or a column."""
    code = site.code(node).replace(" ", "")
    for end, other in _TRANSPOSED.items():
        if code.endswith(end.replace(" ", "")):
            base = code[: -len(end.replace(" ", ""))]
            if base.isidentifier():
                return base, base + other
    return None


def _one_direction_masks(site: Site) -> Iterator[tuple[str, str]]:
    """Edits that add the missing direction of a dense global mask: `band | g[None, :]` also
    ORs `g[:, None]`; `mask[:, gl] = True` also sets `mask[gl, :]`. (source, label)"""
    for op in site.nodes(cst.BinaryOperation, lambda n: isinstance(n.operator, cst.BitOr)):
        if isinstance(site.parent(op), cst.BinaryOperation):
            continue  # the whole chain once, from its top
        terms: list[cst.BaseExpression] = []
        stack: list[cst.BaseExpression] = [op]
        while stack:
            t = stack.pop()
            if (
                isinstance(t, cst.BinaryOperation)
                and isinstance(t.operator, cst.BitOr)
                and not t.lpar
            ):
                stack += [t.right, t.left]
            else:
                terms.append(t)
        vecs = [v for t in terms if (v := _broadcast_vector(site, t)) is not None]
        bases: dict[str, list[str]] = {}
        for base, other in vecs:
            bases.setdefault(base, []).append(other)
        for base, others in bases.items():
            if len(others) == 1:  # one direction only
                yield site.replace(op, f"{site.code(op)} | {others[0]}"), f"{base} both ways"
    for asg in site.nodes(cst.Assign):
        target = asg.targets[0].target
        if not isinstance(target, cst.Subscript) or len(target.slice) != 2:
            continue
        a, b = (site.code(e.slice).strip() for e in target.slice)
        if {a, b} & {":"} and a != b and not number(asg.value):
            swapped = f"{site.code(target.value)}[{b}, {a}] = {site.code(asg.value)}"
            line = f"{site.code(target)} = {site.code(asg.value)}"
            both = [
                t
                for t in site.nodes(cst.Assign)
                if site.code(t.targets[0].target).replace(" ", "")
                == swapped.split("=")[0].strip().replace(" ", "")
            ]
            if not both:
                yield site.insert_after(asg, swapped), f"{line} the other way too"


def _set_of_all(value: cst.BaseExpression, nb: str) -> list[str]:
    """All key blocks, the way `value` (a query block's key blocks) is written."""
    kinds = {type(n) for n in walk(value)}
    calls = {callee(n) for n in walk(value) if isinstance(n, cst.Call)}
    out = []
    if "set" in calls or kinds & {cst.Set, cst.SetComp}:
        out.append(f"set(range({nb}))")
    if "list" in calls or kinds & {cst.List, cst.ListComp} or "sorted" in calls:
        out.append(f"list(range({nb}))")
    return out or [f"set(range({nb}))", f"list(range({nb}))"]


def _global_query_blocks(site: Site) -> Iterator[tuple[str, str]]:
    """A loop over query blocks whose key blocks add the global ones (`ks = window | set(
    range(n_global))`): a global query block takes every key block instead."""
    for loop in site.nodes(cst.For):
        it = loop.iter
        if not (
            isinstance(loop.target, cst.Name)
            and isinstance(it, cst.Call)
            and callee(it) == "range"
            and len(it.args) == 1
        ):
            continue
        i, nb = loop.target.value, site.code(it.args[0].value)
        counts = [n for n in GLOBAL_COUNTS if n in _func_names(site, site.function(loop))]
        for asg in site.nodes(cst.Assign):
            if not any(a is loop for a in site.ancestors(asg)):
                continue
            target = asg.targets[0].target
            if not isinstance(target, cst.Name) or not mentions(site, asg.value, GLOBAL_COUNTS):
                continue
            if any(isinstance(n, cst.Name) and n.value == i for n in walk(asg.value)) and any(
                isinstance(n, cst.Comparison) for n in walk(asg.value)
            ):
                continue  # a per-block condition: the comparison repair's business
            for g in counts[:1]:
                for every in _set_of_all(asg.value, nb):
                    new = f"{every} if {i} < {g} else {site.code(asg.value)}"
                    yield site.replace(asg.value, new), f"global query block {i} sees every block"


def _scale_code(site: Site, fn: cst.FunctionDef, q: str) -> str:
    names = _func_names(site, fn)
    for s in ("scale", "sm_scale", "softmax_scale", "scaling"):
        if s in names:
            return s
    return f"{q}.shape[-1] ** -0.5"


def _global_query_rows(site: Site) -> Iterator[tuple[str, str]]:
    """A band attention that adds the global keys as extra columns but leaves the global
    queries' own rows banded: those rows are recomputed densely over every (real) key and
    copied in at the global positions, as the band's return value is given back."""
    for fn in site.functions():
        params = site.params(fn)
        names = _func_names(site, fn)
        q = next((p for p in params if p in QUERY_NAMES), None)
        k = next((p for p in params if p in KEY_NAMES), None)
        v = next((p for p in params if p in VALUE_NAMES), None)
        glob = [
            p
            for p in params
            if (p in GLOBAL_INDICES or "global" in p) and p not in GLOBAL_COUNTS + ("n_global",)
        ]
        if not (q and k and v and glob) or "index_copy" in names:
            continue
        gi = (_assigned_from(site, fn, tuple(glob)) or glob)[0]
        pads = [p for p in params if p in PADDING]
        pad = (_assigned_from(site, fn, tuple(pads)) or [None])[0] if pads else None
        scores = f"(({q}[..., {gi}, :] @ {k}.transpose(-2, -1)) * {_scale_code(site, fn, q)})"
        if pad is not None:
            keep = f"{pad}[:, None, None, :]"
            weights = (
                f"torch.softmax({scores}.masked_fill(~{keep}, torch.finfo({q}.dtype).min), -1)"
                f" * {keep}"
            )
        else:
            weights = f"torch.softmax({scores}, -1)"
        rets = [
            r
            for r in site.nodes(cst.Return, lambda n: n.value is not None)
            if site.function(r) is fn and not isinstance(r.value, cst.Tuple)
        ]
        for ret in rets[:1]:
            assert ret.value is not None
            held = site.fresh("rows_g")
            out = site.code(ret.value)
            out = out if isinstance(ret.value, cst.Name | cst.Attribute) else f"({out})"
            yield (
                site.insert_before(
                    ret,
                    f"{held} = {weights}  # global queries see every real key",
                    also=[(ret.value, f"{out}.index_copy(2, {gi}, {held} @ {v})")],
                ),
                "global query rows over every key",
            )


@template("global-one-direction")
def global_both_ways(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """Global positions attend everything and are attended by everything. The mask and the
    attention have to agree, so each mask edit (the comparison repair of sparse.py, or the
    missing broadcast direction) is proposed together with the attention's edit: a loop over
    query blocks gives a global block every key block; a band attention recomputes the
    global queries' rows densely."""
    masks = [(c.source, c.label) for c in both_directions(site, d, kata)][:2]
    masks += list(_one_direction_masks(site))[:2]
    if not masks:
        masks = [(site.source, "")]
    for source, label in masks:
        again = Site(source, site.targets)
        edits = list(_global_query_blocks(again))[:2] + list(_global_query_rows(again))[:1]
        for src, what in edits:
            yield Candidate(src, f"{label}, {what}" if label else what)
    for source, label in masks:
        if source != site.source:
            yield Candidate(source, label)


# -- key padding everywhere --------------------------------------------------------------------
def _key_index(k: cst.BaseExpression, site: Site) -> str | None:
    """Which keys a key operand holds: `:` for k, `g` for k[:, :, g] / k[..., g, :]."""
    if isinstance(k, cst.Name):
        return ":"
    if isinstance(k, cst.Subscript) and isinstance(k.value, cst.Name):
        els = [site.code(e.slice).strip() for e in k.slice]
        if els and els[0] == "...":
            return els[-2] if len(els) >= 3 and els[-1] == ":" else None
        return els[2] if len(els) >= 3 else None
    return None


def _resolve_key(site: Site, k: cst.BaseExpression) -> cst.BaseExpression:
    """A gathered key name (`k_g = k[..., gidx, :]`, also in a tuple assignment): its value."""
    if not isinstance(k, cst.Name) or k.value in KEY_NAMES:
        return k
    for asg in site.assigned(k.value, before=k):
        return asg.value
    for asg in site.nodes(cst.Assign):
        target, value = asg.targets[0].target, asg.value
        if isinstance(target, cst.Tuple) and isinstance(value, cst.Tuple):
            for t, val in zip(target.elements, value.elements, strict=False):
                if site.code(t.value).strip() == k.value:
                    return val.value
    return k


def _target_names(target: cst.BaseExpression) -> list[str]:
    """The names an assignment binds (`x`, `a, b`), not those it indexes (`out[:, g] = ...`)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, cst.Tuple | cst.List):
        return [n for e in target.elements for n in _target_names(e.value)]
    return []


def _derived(site: Site, fn: cst.FunctionDef, sources: tuple[str, ...]) -> tuple[str, ...]:
    """`sources` and every name of `fn` computed from them, however indirectly (the band's
    `ok = pad(real) & inside`): the masks that carry the padding."""
    have = set(sources)
    assigns = [
        (names, a.value)
        for a in site.nodes(cst.Assign)
        if site.function(a) is fn
        and (names := {n for t in a.targets for n in _target_names(t.target)})
    ]
    grew = True
    while grew:
        grew = False
        for names, value in assigns:
            if not names <= have and mentions(site, value, tuple(have)):
                have |= names
                grew = True
    return tuple(have)


@template("padding-ignores-global")
def padding_everywhere(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """A padded key is never attended, global or not: every score product whose keys the
    padding never reaches (the global key columns, the global queries' rows) gets the padded
    keys filled with -inf, like the band's keys already are."""
    for fn in site.functions():
        pads = [p for p in site.params(fn) if p in PADDING]
        if not pads:
            continue
        pad_names = _assigned_from(site, fn, tuple(pads))
        padded = _derived(site, fn, (*pads, *pad_names))
        unpadded: list[tuple[cst.BaseExpression, str]] = []
        for prod, _, k in score_products(site):
            if site.function(prod) is not fn:
                continue
            idx = _key_index(_resolve_key(site, k), site)
            stmt = site.statement(prod)
            if idx is None or stmt is None:
                continue
            if mentions(site, stmt, padded):
                continue
            body = stmt.body[0]
            if isinstance(body, cst.Assign) and isinstance(body.targets[0].target, cst.Name):
                name = body.targets[0].target.value
                others = tuple(n for n in padded if n != name)
                later = [
                    a
                    for a in site.assigned(name, before=prod)
                    if site.order[a] > site.order[body] and mentions(site, a.value, others)
                ]
                if later:
                    continue
            unpadded.append((prod, idx))
        for pad in pad_names[:2] or pads[:1]:
            guard = pad in pads and pad not in pad_names  # the parameter itself: may be None
            pairs = []
            for prod, idx in unpadded:
                code = site.code(prod)
                held = code if prod.lpar else f"({code})"
                filled = f'{held}.masked_fill(~{pad}[:, None, None, {idx}], float("-inf"))'
                if guard:
                    filled = f"({held} if {pad} is None else {filled})"
                pairs.append((prod, cst.parse_expression(filled)))
            if pairs:
                yield Candidate(site.replace_all(pairs), f"{pad} on every score product")
            for one in pairs[:2] if len(pairs) > 1 else []:
                yield Candidate(site.replace_all([one]), f"{pad} on one more score product")


# -- the window's ends --------------------------------------------------------------------------
WINDOW = ("window", "w", "W", "window_size", "radius", "half", "one_sided", "left", "right")


@template("window-off-by-one")
def closed_window(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """|i - j| <= window, both ends included, written the same way everywhere: a strict
    comparison with the window becomes inclusive, and a `range(i - w + 1, i + w)` of keys
    becomes `range(i - w, i + w + 1)`, all in one edit (the mask and the attention agree)."""
    pairs: list[tuple[cst.CSTNode, str | cst.CSTNode]] = []
    for cmp in site.nodes(cst.Comparison, lambda n: len(n.comparisons) == 1):
        op = cmp.comparisons[0].operator
        if isinstance(op, cst.LessThan | cst.GreaterThan) and mentions(
            site,
            cmp.comparisons[0].comparator if isinstance(op, cst.LessThan) else cmp.left,
            WINDOW,
        ):
            new = STRICT[type(op)](
                whitespace_before=op.whitespace_before, whitespace_after=op.whitespace_after
            )
            pairs.append(
                (cmp, cmp.with_changes(comparisons=[cmp.comparisons[0].with_changes(operator=new)]))
            )
    for call in site.calls("range", "arange"):
        args = [a.value for a in call.args if a.keyword is None]
        if len(args) != 2 or not all(mentions(site, a, WINDOW) for a in args):
            continue
        lo, hi = (_innermost_window_term(site, a) for a in args)
        if lo is not None and isinstance(lo.operator, cst.Add) and number(lo.right) == 1.0:
            pairs.append((lo, site.code(lo.left)))  # i - w + 1 -> i - w
        if hi is not None and not (
            isinstance(site.parent(hi), cst.BinaryOperation)
            and number(site.parent(hi).right) == 1.0  # type: ignore[union-attr]
        ):
            pairs.append((hi, f"{site.code(hi)} + 1"))  # i + w -> i + w + 1
    if len(pairs) > 1:
        yield Candidate(site.replace_all(pairs), "the window closed at both ends everywhere")


def _innermost_window_term(site: Site, node: cst.BaseExpression) -> cst.BinaryOperation | None:
    """`i - w + 1` in max(0, i - w + 1), `i + w` in min(L, i + w): the sum that holds the
    window (the outermost such sum)."""
    for n in walk(node):
        if (
            isinstance(n, cst.BinaryOperation)
            and isinstance(n.operator, cst.Add | cst.Subtract)
            and mentions(site, n, WINDOW)
        ):
            return n
    return None


# -- the short last block ------------------------------------------------------------------------
@template("last-block-dropped")
def last_block_kept(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """nb = ceil(L / block) blocks, the last one shorter: rounded up, the token mask a block
    layout expands to (kron, repeat_interleave) is cut back to L tokens."""
    ceil = ceil_divisions(site)
    if not ceil:
        return
    crops: list[tuple[cst.CSTNode, str]] = []
    for call in site.calls(*EXPANDERS):
        parent = site.parent(call)
        outer = site.parent(parent) if isinstance(parent, cst.Attribute) else None
        if isinstance(outer, cst.Call) and callee(outer) in EXPANDERS:
            continue  # cut once, at the end of the chain
        names = _func_names(site, site.function(call))
        length = next((n for n in LENGTHS if n in names), None)
        dims = _expanded_dims(call)
        if length is None or not dims:
            continue
        cut = ", ".join(f":{length}" if i in dims else ":" for i in range(max(dims) + 1))
        crops.append((call, f"{site.code(call)}[{cut}]"))
    if not crops:
        return
    yield Candidate(site.replace_all(ceil + crops), "blocks rounded up, cut back to L tokens")
    # A tail padded back on (F.pad by L - nb * block) is no longer missing: its pad is dropped.
    counts = {
        n
        for node, _ in ceil
        for a in site.ancestors(node)
        if isinstance(a, cst.Assign)
        for t in a.targets
        for n in _target_names(t.target)
    }
    pads = [
        (c, site.code(c.args[0].value))
        for c in site.calls("pad")
        if len(c.args) >= 2 and mentions(site, c.args[1].value, tuple(counts))
    ]
    if pads:
        # F.pad by a negative amount cuts: a padded-back mask is cut to L by its own pad.
        expanding = {site.function(c) for c, _ in crops}
        rest = [(c, x) for c, x in pads if site.function(c) not in expanding]
        if rest:
            yield Candidate(site.replace_all(ceil + rest), "blocks rounded up, no tail padded back")
        yield Candidate(
            site.replace_all(ceil + crops + pads), "blocks rounded up and cut, no tail padded back"
        )


EXPANDERS = ("kron", "repeat_interleave")


def _expanded_dims(call: cst.Call) -> set[int]:
    """The dims a chain of kron / repeat_interleave(block, dim) calls ending at `call` grows
    (none when one is negative: the cut would not know where it stands)."""
    dims: set[int] = set()
    node: cst.BaseExpression | None = call
    while isinstance(node, cst.Call) and callee(node) in EXPANDERS:
        if callee(node) == "kron":
            dims |= {0, 1}
        else:
            dim = arg(node, 1, "dim")
            at = number(dim.value) if dim is not None else 0.0
            if at is None or at < 0:
                return set()
            dims.add(int(at))
        node = receiver(node)
    return dims


@template("flash-tail-block-dropped")
def tail_positions_clipped(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """Tiles rounded up and sized by their own length, and the positions a tile makes for
    its causal mask (`arange(i * Br, (i + 1) * Br)`) stop at the length too: the short last
    tile's positions match its rows and columns."""
    ceil = ceil_divisions(site)
    lengths = {
        site.code(n.right): site.code(n.left)
        for n, _ in ceil
        if isinstance(n.left, cst.Name | cst.Attribute | cst.Subscript)
    }
    clipped: list[tuple[cst.CSTNode, str]] = []
    for call in site.calls("arange"):
        args = [a.value for a in call.args if a.keyword is None]
        if len(args) != 2 or callee(site.parent(call) or call) == "min":
            continue
        hi = args[1]
        block = next(
            (b for b in lengths if mentions(site, hi, (b,)) and mentions(site, args[0], (b,))),
            None,
        )
        if block is not None:
            clipped.append((hi, f"min({site.code(hi)}, {lengths[block]})"))
    if ceil and clipped:
        yield Candidate(
            site.replace_all(ceil + tile_sizes(site) + clipped),
            "tiles rounded up, sized and positioned by their own length",
        )


# -- the softmax's dim, with a mask applied after it ---------------------------------------------
@template("softmax-wrong-dim")
def softmax_over_keys_masked_first(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """A softmax over the queries (Slot Attention's "slots compete") that a key mask then
    zeroes and a sum renormalises: the softmax goes over the keys, and the padded keys are
    filled with the dtype's lowest number before it, so their content cannot take weight;
    the zeroing and the renormalisation stay (a row with no real key stays zero)."""
    for call in softmax_calls(site)[:2]:
        x, dim = softmax_input(call)
        stmt = site.statement(call)
        if x is None or dim == "-1" or stmt is None or not isinstance(stmt.body[0], cst.Assign):
            continue
        w = site.code(stmt.body[0].targets[0].target).strip()
        for mask in _zeroing_masks(site, stmt, w)[:2]:
            xs = site.code(x)
            held = xs if isinstance(x, cst.Name | cst.Attribute) else f"({xs})"
            cond = mask if _atomic(mask) else f"({mask})"
            filled = f"{held}.masked_fill({cond} == 0, torch.finfo({held}.dtype).min)"
            guard = next(
                (
                    n
                    for n in PADDING + ("mask",)
                    if mentions(site, cst.parse_expression(mask), (n,))
                ),
                None,
            )
            if guard is not None:
                filled = f"({xs} if {guard} is None else {filled})"
            new = with_input(site, call, filled)
            again = cst.parse_expression(new)
            assert isinstance(again, cst.Call)
            a = arg(again, 0 if receiver(call) is x else 1, "dim", "axis")
            fixed = (
                again.deep_replace(a.value, cst.parse_expression("-1"))
                if a is not None
                else cst.parse_expression(new[:-1] + ", dim=-1)")
            )
            yield Candidate(
                site.replace(call, code_of(fixed)),
                "softmax over the keys, the padded keys filled before it",
            )


def _atomic(code: str) -> bool:
    """A name, attribute, call or subscript: needs no parentheses before `== 0`."""
    return isinstance(
        cst.parse_expression(code), cst.Name | cst.Attribute | cst.Call | cst.Subscript
    )


def _zeroing_masks(site: Site, after: cst.CSTNode, w: str) -> list[str]:
    """Masks multiplied into the weights `w` after the statement `after` (`w = w * m[...]`)."""
    out: list[str] = []
    for asg in site.assigned(w, before=after):
        if site.order[asg] <= site.order[after]:
            continue
        value = asg.value
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
            for mine, other in ((value.left, value.right), (value.right, value.left)):
                if site.code(mine).strip() == w:
                    out.append(site.code(other))
    return out
