"""Attention-sink and rotated-cache repairs: which tokens the eviction keeps, how the kept
window keys are re-rotated (at all, and in which direction), which keys RoPE rotates once a
cache is concatenated, and which part of an MLA head carries position."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import libcst as cst

from attnkata.checker.catalog import Kata
from attnkata.checker.fix.site import Candidate, Site, arg, callee, code_of
from attnkata.checker.fix.templates import template
from attnkata.checker.fix.templates.common import QUERY_NAMES
from attnkata.checker.fix.templates.masks import walk as _walk
from attnkata.checker.models import Diagnostic

# How files name the number of sink tokens (StreamingLLM's start_size, HF's num_sink_tokens).
SINK_NAMES = (
    "n_sink",
    "n_sinks",
    "num_sink_tokens",
    "num_sinks",
    "sink_size",
    "start_size",
    "sink_tokens",
    "n_start",
)
# Calls that rotate by position; rotate_half and friends only swap the halves.
_ROTATORS = ("rope", "rotary", "rotat", "apply_pos")
_HALF_SWAPS = ("rotate_half", "rotate_every_two", "_rotate_half")
# ... and these make the cos/sin tables a rotation reads.
_TABLE_MAKERS = ("cos", "sin", "freq", "freqs", "table", "tables", "cache", "get", "precompute")
# Arguments of a rotation that are not its angles.
_NOT_ANGLES = ("theta", "base", "cos", "freq", "dtype", "device", "dim", "len", "size")


# -- reading -------------------------------------------------------------------------------------
def _torch(site: Site) -> str:
    return site.imports("torch") or "torch"


def _is_rotation(call: cst.Call) -> bool:
    name = (callee(call) or "").lower()
    if not name or name in _HALF_SWAPS or set(name.split("_")) & set(_TABLE_MAKERS):
        return False
    return any(r in name for r in _ROTATORS)


def _rotations(site: Site) -> list[cst.Call]:
    """Calls that rotate a tensor by position (their first argument), nearest first."""
    return [c for c in site.nodes(cst.Call, _is_rotation) if c.args]


def _first_name(call: cst.Call) -> str | None:
    first = call.args[0].value if call.args else None
    return first.value if isinstance(first, cst.Name) else None


def _is_query(name: str | None) -> bool:
    return name is not None and (name in QUERY_NAMES or name.lower().startswith(("q_", "xq")))


def _query_rotations(site: Site) -> list[cst.Call]:
    return [c for c in _rotations(site) if _is_query(_first_name(c))]


def _module_names(site: Site) -> set[str]:
    """Names bound at the top of the file (functions, classes, imports, assignments)."""
    out: set[str] = set()
    for stmt in site.module.body:
        if isinstance(stmt, cst.FunctionDef | cst.ClassDef):
            out.add(stmt.name.value)
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Import | cst.ImportFrom) and not isinstance(
                    small.names, cst.ImportStar
                ):
                    for alias in small.names:
                        bound = alias.asname.name if alias.asname else alias.name
                        out.add(code_of(bound).split(".")[0])
                elif isinstance(small, cst.Assign):
                    for t in small.targets:
                        out.update(n.value for n in _walk(t.target) if isinstance(n, cst.Name))
    return out


def _bound(site: Site, fn: cst.FunctionDef | None) -> set[str]:
    """Names a statement in `fn` can read: its parameters and assignments, the module's."""
    out = set(site.params(fn)) | _module_names(site) | {"self", "torch", "math", "F"}
    if fn is not None:
        for n in site.nodes((cst.Assign, cst.For, cst.AugAssign, cst.AnnAssign)):
            if site.function(n) is not fn:
                continue
            target = n.target if not isinstance(n, cst.Assign) else None
            targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [target]
            for t in targets:
                if t is not None:
                    out.update(x.value for x in _walk(t) if isinstance(x, cst.Name))
    return out


def _free(node: cst.CSTNode) -> set[str]:
    """The plain names an expression reads (not attribute names, not keywords)."""
    out: set[str] = set()

    def visit(n: cst.CSTNode) -> None:
        if isinstance(n, cst.Name):
            out.add(n.value)
            return
        if isinstance(n, cst.Attribute):
            visit(n.value)
            return
        if isinstance(n, cst.Arg):
            visit(n.value)
            return
        for child in n.children:
            visit(child)

    visit(node)
    return out


def _assignment(site: Site, name: str, before: cst.CSTNode) -> cst.Assign | None:
    """The last assignment to `name` (alone, or in a tuple: `cos, sin = ...`) in the
    function of `before`, above it."""
    fn = site.function(before)
    found = [
        a
        for a in site.nodes(cst.Assign)
        if site.function(a) is fn
        and site.order[a] < site.order[before]
        and any(
            code_of(t.target).strip() == name
            or (
                isinstance(t.target, cst.Tuple)
                and any(code_of(e.value).strip() == name for e in t.target.elements)
            )
            for t in a.targets
        )
    ]
    return max(found, key=lambda a: site.order[a]) if found else None


def _sink_count(site: Site, fn: cst.FunctionDef | None) -> str | None:
    """The file's expression for the number of sinks in `fn`: a name, or `self.<name>`."""
    if fn is None:
        return None
    scope = _bound(site, fn)
    for name in SINK_NAMES:
        if name in scope:
            return name
    if "self" in site.params(fn):
        attrs = {
            n.attr.value
            for n in site.nodes(cst.Attribute)
            if isinstance(n.value, cst.Name) and n.value.value == "self"
        }
        for name in SINK_NAMES:
            if name in attrs:
                return f"self.{name}"
    return None


def _callers(site: Site, fn: cst.FunctionDef) -> list[cst.Call]:
    name = fn.name.value
    return [
        c
        for c in site.nodes(cst.Call)
        if isinstance(c.func, cst.Name | cst.Attribute)
        and code_of(c.func).split(".")[-1] == name
        and site.function(c) is not fn
    ]


def _thread(
    site: Site, fn: cst.FunctionDef, names: Sequence[str], default: str = "None"
) -> list[tuple[cst.CSTNode, cst.CSTNode]] | None:
    """`fn` takes `names` as parameters (`default` when not given) and every caller passes
    its own: what a helper needs that only its caller has. None when a caller lacks one."""
    names = [n for n in names if n not in site.params(fn)]
    if not names:
        return []
    calls = _callers(site, fn)
    if not calls or any(not set(names) <= _bound(site, site.function(c)) for c in calls):
        return None
    params = fn.params
    eq = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
    extra = [cst.Param(cst.Name(n), default=cst.parse_expression(default), equal=eq) for n in names]
    pairs: list[tuple[cst.CSTNode, cst.CSTNode]] = [
        (params, params.with_changes(params=[*params.params, *extra]))
    ]
    for c in calls:
        args = list(c.args)
        if args:
            args[-1] = args[-1].with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
        args += [cst.Arg(cst.Name(n), keyword=cst.Name(n), equal=eq) for n in names]
        pairs.append((c, c.with_changes(args=args)))
    return pairs


def _arg_text(site: Site, a: cst.Arg) -> str:
    """An argument's code without its comma (`name=value` for a keyword)."""
    value = site.code(a.value)
    return f"{a.keyword.value}={value}" if a.keyword is not None else value


def _negated(site: Site, node: cst.BaseExpression) -> str:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return site.code(node.expression)
    if isinstance(node, cst.Name | cst.Attribute | cst.Call | cst.Subscript):
        return f"-{site.code(node)}"
    return f"-({site.code(node)})"


# -- writing -------------------------------------------------------------------------------------
class _Edits(cst.CSTTransformer):
    def __init__(
        self,
        replace: dict[int, cst.CSTNode],
        before: dict[int, list[cst.BaseStatement]],
        after: dict[int, list[cst.BaseStatement]],
        remove: set[int],
    ) -> None:
        super().__init__()
        self.replace, self.before, self.after, self.remove = replace, before, after, remove

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        key = id(original_node)
        node = self.replace.get(key, updated_node)
        if key in self.remove:
            return cst.RemovalSentinel.REMOVE
        head = self.before.get(key, [])
        tail = self.after.get(key, [])
        if not head and not tail:
            return node
        if head and hasattr(node, "leading_lines"):
            head = [head[0].with_changes(leading_lines=node.leading_lines), *head[1:]]
            node = node.with_changes(leading_lines=[])
        return cst.FlattenSentinel([*head, node, *tail])


def _statements(code: str) -> list[cst.BaseStatement]:
    return list(cst.parse_module(code.strip() + "\n").body)


def _edit(
    site: Site,
    replace: Sequence[tuple[cst.CSTNode, str | cst.CSTNode]] = (),
    before: Sequence[tuple[cst.CSTNode, str]] = (),
    after: Sequence[tuple[cst.CSTNode, str]] = (),
    remove: Sequence[cst.CSTNode] = (),
) -> str:
    """The source with expressions replaced, statements put before or after others and
    statements removed, all in one pass over the original tree (a statement named by a node
    inside it is the simple statement line holding it)."""
    rep = {
        id(old): site.parse_for(old, new) if isinstance(new, str) else new for old, new in replace
    }
    heads: dict[int, list[cst.BaseStatement]] = {}
    tails: dict[int, list[cst.BaseStatement]] = {}
    for where, code in before:
        heads.setdefault(id(site.statement(where) or where), []).extend(_statements(code))
    for where, code in after:
        tails.setdefault(id(site.statement(where) or where), []).extend(_statements(code))
    gone = {id(site.statement(s) or s) for s in remove}
    return site.module.visit(_Edits(rep, heads, tails, gone)).code


def _top_statement(site: Site, node: cst.CSTNode) -> cst.CSTNode:
    """The statement of `node`'s function body that holds it (an `if cache is not None:`
    block rather than the concatenation inside it)."""
    fn = site.function(node)
    best: cst.CSTNode = site.statement(node) or node
    for a in site.ancestors(node):
        if a is fn:
            break
        if isinstance(a, cst.BaseStatement):
            best = a
    return best


# -- slices --------------------------------------------------------------------------------------
def _seq_slice(sub: cst.Subscript) -> tuple[int, cst.Slice] | None:
    """The one slice of `x[:, :, a:b]` / `x[..., a:b, :]` that cuts the sequence dim."""
    elems = sub.slice
    found = [
        (i, e.slice)
        for i, e in enumerate(elems)
        if isinstance(e.slice, cst.Slice)
        and (e.slice.lower is not None or e.slice.upper is not None)
    ]
    if len(found) != 1:
        return None
    i, sl = found[0]
    ellipsis = any(
        isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Ellipsis)
        for e in elems[:i]
    )
    if ellipsis and i == len(elems) - 1:
        return None  # x[..., a:b] cuts features, not tokens
    if sl.step is not None:
        return None
    return i, sl


def _dim(sub: cst.Subscript, i: int) -> str:
    elems = sub.slice
    ellipsis = any(
        isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Ellipsis)
        for e in elems[:i]
    )
    return str(-(len(elems) - i)) if ellipsis else str(i)


def _resliced(site: Site, sub: cst.Subscript, i: int, new: str) -> str:
    """The code of `sub` with its i-th slice element written as `new`."""
    parts = [site.code(e.slice) for e in sub.slice]
    parts[i] = new
    return f"{site.code(sub.value)}[{', '.join(parts)}]"


# -- sink-tokens-evicted -------------------------------------------------------------------------
@template("sink-tokens-evicted")
def keep_sinks(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """A rolling buffer keeps the last N = n_sink + window tokens, the sinks with them: the
    first n_sink stay as they are, the kept tail shrinks to N - n_sink, and a re-rotation by
    -e given to all N positions leaves the sinks' positions alone."""
    torch = _torch(site)
    tails: dict[int, list[tuple[cst.Subscript, int, str]]] = {}
    fns: dict[int, cst.FunctionDef | None] = {}
    for sub in site.nodes(cst.Subscript):
        cut = _seq_slice(sub)
        if cut is None:
            continue
        i, sl = cut
        low = sl.lower
        if (
            sl.upper is None
            and isinstance(low, cst.UnaryOperation)
            and isinstance(low.operator, cst.Minus)
        ):
            fn = site.function(sub)
            tails.setdefault(id(fn), []).append((sub, i, site.code(low.expression)))
            fns[id(fn)] = fn
    for key, subs in list(tails.items())[:2]:
        fn = fns[key]
        if fn is None:
            continue
        sink = _sink_count(site, fn)
        threaded: list[tuple[cst.CSTNode, cst.CSTNode]] = []
        if sink is None:
            pairs = _thread(site, fn, ["n_sink"], "0")  # no sinks unless told
            if pairs is None:
                continue
            sink, threaded = "n_sink", pairs
        width = subs[0][2]
        kept = [s for s in subs if s[2] == width]
        recent = f"-({width} - {sink}):"
        pairs_: list[tuple[cst.CSTNode, str | cst.CSTNode]] = list(threaded)
        for sub, i, _ in kept:
            head = _resliced(site, sub, i, f":{sink}")
            tail = _resliced(site, sub, i, recent)
            pairs_.append((sub, f"{torch}.cat([{head}, {tail}], dim={_dim(sub, i)})"))
        # a shift of every kept position (torch.full((N,), -e)) must spare the sinks
        shifts = [
            c
            for c in site.calls("full")
            if site.function(c) is fn
            and c.args
            and isinstance(c.args[0].value, cst.Tuple)
            and len(c.args[0].value.elements) == 1
            and site.code(c.args[0].value.elements[0].value) == width
        ]
        spared = [
            (c, f"{site.code(c)}.masked_fill({torch}.arange({width}) < {sink}, 0)") for c in shifts
        ]
        if spared:
            yield Candidate(
                _edit(site, replace=[*pairs_, *spared]),
                f"the first {sink} tokens kept, unshifted; the last {width} - {sink} roll",
            )
        yield Candidate(_edit(site, replace=pairs_), f"the first {sink} tokens kept")


# -- positions-not-reassigned --------------------------------------------------------------------
def _part(
    site: Site, node: cst.BaseExpression, upper: bool
) -> tuple[cst.Subscript, int, cst.Slice, cst.Assign | None] | None:
    """`x[..., :S]` (upper) or `x[..., lo:]` (not upper), written inline or named by an
    assignment above: (subscript, its slice's index, the slice, the assignment)."""
    asg = None
    if isinstance(node, cst.Name):
        asg = _assignment(site, node.value, node)
        if asg is None:
            return None
        node = asg.value
    if not isinstance(node, cst.Subscript):
        return None
    cut = _seq_slice(node)
    if cut is None:
        return None
    i, sl = cut
    if upper and sl.lower is None and sl.upper is not None:
        return node, i, sl, asg
    if not upper and sl.upper is None and sl.lower is not None:
        return node, i, sl, asg
    return None


def _evicted(site: Site, low: cst.BaseExpression, sinks: str) -> str:
    """e, the tokens dropped, from where the kept window starts (n_sink + e, or T - window)."""
    if (
        isinstance(low, cst.BinaryOperation)
        and isinstance(low.operator, cst.Add)
        and site.code(low.left).strip() == sinks
    ):
        return site.code(low.right)
    return f"{site.code(low)} - {sinks}"


def _window_assemblies(
    site: Site,
) -> list[tuple[cst.Call, cst.BaseExpression, str, str]]:
    """cat([sinks, window]) calls: (call, the window part, the sink count, e)."""
    out = []
    for call in site.calls("cat", "concat"):
        if not call.args or not isinstance(call.args[0].value, cst.List | cst.Tuple):
            continue
        elems = call.args[0].value.elements
        if len(elems) != 2:
            continue
        sink = _part(site, elems[0].value, upper=True)
        recent = _part(site, elems[1].value, upper=False)
        if sink is None or recent is None:
            continue
        assert sink[2].upper is not None and recent[2].lower is not None
        count = site.code(sink[2].upper).strip()
        base = site.code(recent[0].value).split(".")[-1].lower()
        keys = base.startswith(("k", "xk")) or "key" in base
        out.append((call, elems[1].value, count, _evicted(site, recent[2].lower, count), keys))
    # the keys' assembly, not the values'
    keyed = [t[:4] for t in out if t[4]]
    return keyed or [t[:4] for t in out]


def _shifted(site: Site, rot: cst.Call, x: str, back: str) -> Iterator[tuple[str, str, set[str]]]:
    """`rot` (a query's rotation) rewritten to rotate every token of `x` by `back`:
    (its code, how, the names it reads besides `x`'s). A positions argument becomes
    torch.full(n, back); a start position becomes `back` on each token seen as a sequence of
    its own (unsqueeze(-2))."""
    torch = _torch(site)
    func = site.code(rot.func)
    args = list(rot.args)
    for j, a in enumerate(args[1:], start=1):
        v = a.value
        text = site.code(v)
        if any(h in text.lower() for h in ("theta", "base", "cos", "sin", "freq")):
            continue
        src = _assignment(site, v.value, rot) if isinstance(v, cst.Name) else None
        made = src.value if src is not None else v
        positions = (isinstance(made, cst.Call) and callee(made) in ("arange", "full")) or any(
            h in text.lower() for h in ("pos", "position")
        )
        needs = _free(rot.func).union(*(_free(b) for k, b in enumerate(args) if k not in (0, j)))

        def call_with(first: str, this: str, j: int = j) -> str:
            parts = [first if k == 0 else site.code(b.value) for k, b in enumerate(args)]
            parts[j] = this
            named = [
                f"{b.keyword.value}={p}" if b.keyword is not None else p
                for b, p in zip(args, parts, strict=True)
            ]
            return f"{func}({', '.join(named)})"

        if positions:
            new = call_with(x, f"{torch}.full(({x}.shape[-2],), {back})")
            yield new, "positions -e", needs
        else:
            new = call_with(f"{x}.unsqueeze(-2)", back) + ".squeeze(-2)"
            yield new, "start -e per token", needs


@template("positions-not-reassigned")
def rerotate_window(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """The kept window keys move from slot j to j - e: they are rotated by -e with the
    file's own rotation (the one its queries get), handed to the evicting helper when only
    its caller has it."""
    rots = _query_rotations(site)[:2]
    for call, recent, _count, e in _window_assemblies(site)[:2]:
        fn = site.function(call)
        back = f"-{e}" if e.isidentifier() else f"-({e})"
        named = isinstance(recent, cst.Name)
        asg = _assignment(site, recent.value, recent) if isinstance(recent, cst.Name) else None
        if named and asg is None:
            continue
        x = site.code(recent)
        for rot in rots:
            for new, how, needs in _shifted(site, rot, x, back):
                missing = sorted(needs - _bound(site, fn))
                threaded: list[tuple[cst.CSTNode, cst.CSTNode]] = []
                if missing:
                    pairs = None if fn is None else _thread(site, fn, missing)
                    if pairs is None:
                        continue
                    threaded = pairs
                label = f"window keys rotated by {back} ({how})"
                if asg is not None:
                    yield Candidate(
                        _edit(site, replace=threaded, after=[(asg, f"{x} = {new}")]), label
                    )
                else:
                    yield Candidate(_edit(site, replace=[*threaded, (recent, new)]), label)


# -- rerotation-wrong-direction ------------------------------------------------------------------
@template("rerotation-wrong-direction")
def rerotate_backwards(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """The kept window keys are rotated by -e, not +e: the re-rotation's sine (or its
    shift) changes sign."""
    seen = 0
    for rot in _rotations(site):
        if _is_query(_first_name(rot)) or seen >= 3:
            continue
        seen += 1
        sines = [a for a in rot.args[1:] if "sin" in site.code(a.value).lower()]
        shifts = [
            a
            for a in rot.args[1:]
            if not sines and not any(h in site.code(a.value).lower() for h in _NOT_ANGLES)
        ]
        for a in [*sines, *shifts][:2]:
            yield Candidate(
                site.replace(a.value, _negated(site, a.value)),
                f"{site.code(a.value)} negated: a rotation by -e",
            )
    # an inline rotation x * cos + rotate_half(x) * sin of the kept keys
    for op in site.nodes(cst.BinaryOperation, lambda n: isinstance(n.operator, cst.Multiply))[:40]:
        if not (
            isinstance(op.left, cst.Call)
            and callee(op.left) in _HALF_SWAPS
            and "sin" in site.code(op.right)
        ):
            continue
        first = op.left.args[0].value if op.left.args else None
        if first is None or _is_query(first.value if isinstance(first, cst.Name) else None):
            continue
        yield Candidate(site.replace(op.right, _negated(site, op.right)), "the sine negated")
    for full in site.calls("full")[:2]:
        fill = arg(full, 1, "fill_value")
        if fill is not None:
            yield Candidate(
                site.replace(fill.value, _negated(site, fill.value)), "the shift negated"
            )


# -- cache-rerotated -----------------------------------------------------------------------------
def _new_lengths(site: Site, near: cst.CSTNode, query: str) -> list[str]:
    scope = _bound(site, site.function(near))
    names = [n for n in ("L", "q_len", "seqlen", "seq_len", "n_new") if n in scope]
    return [f"{query}.shape[-2]", *names]


def _rotate_before(
    site: Site,
    d: Diagnostic,
    kata: Kata,
    rot: cst.Call,
    q: cst.Call,
    key: str,
    rest: list[str],
    cat: cst.Call,
) -> Iterator[Candidate]:
    """The key rotation `rot` moved above the block that concatenates the cache (`cat`),
    with the query rotation's arguments, when those are known there."""
    rotated = f"{site.code(rot.func)}({key}, {', '.join(rest)})"
    block = _top_statement(site, cat)
    later = {
        n
        for a in q.args[1:]
        for n in _free(a)
        if (asg := _assignment(site, n, q)) is not None and site.order[asg] > site.order[block]
    }
    if later:
        return
    stmt = site.statement(rot)
    line = f"{key} = {rotated}  # the cached keys are rotated"
    own = (
        stmt is not None
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Assign)
        and stmt.body[0].value is rot
        and code_of(stmt.body[0].targets[0].target).strip() == key
    )
    if own:
        assert stmt is not None
        edited = _edit(site, before=[(block, line)], remove=[stmt])
    else:
        edited = _edit(site, replace=[(rot, key)], before=[(block, line)])
    label = "the new keys rotated before the concatenation"
    yield Candidate(edited, label)
    if not own:
        # keys that were rotated on every read were cut from the cache as they came: now
        # that the cache holds rotated keys, an eviction must re-rotate the window it keeps
        moved = Site(edited, site.targets)
        for c in list(rerotate_window(moved, d, kata))[:1]:
            yield Candidate(c.source, f"{label}; {c.label}")


@template("cache-rerotated")
def rotate_new_keys(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """Only the new keys are rotated, at the queries' positions: the rotation moves before
    the cache is concatenated (with the queries' arguments), or, where those come later,
    rotates only the tail of the concatenation."""
    queries = _query_rotations(site)
    count = 0
    for rot in _rotations(site):
        if count >= 3:
            break
        first = rot.args[0].value
        if not isinstance(first, cst.Name) or _is_query(first.value):
            continue
        fn = site.function(rot)
        q = next(
            (
                c
                for c in queries
                if site.function(c) is fn
                and code_of(c.func) == code_of(rot.func)
                and len(c.args) == len(rot.args)
            ),
            None,
        )
        if q is None:
            continue
        key = first.value
        cats = [
            c
            for c in site.calls("cat", "concat")
            if site.function(c) is fn and site.order[c] < site.order[rot]
        ]
        if not cats:
            continue
        count += 1
        rest = [_arg_text(site, a) for a in q.args[1:]]
        grown = [
            c for c in cats if any(isinstance(n, cst.Name) and n.value == key for n in _walk(c))
        ]
        if grown:
            first_cat = min(grown, key=lambda c: site.order[c])
            yield from _rotate_before(site, d, kata, rot, q, key, rest, first_cat)
        torch = _torch(site)
        for n in _new_lengths(site, rot, _first_name(q) or "q")[:2]:
            tail = f"{site.code(rot.func)}({key}[..., -{n}:, :], {', '.join(rest)})"
            whole = f"{torch}.cat([{key}[..., :-{n}, :], {tail}], dim=-2)"
            yield Candidate(site.replace(rot, whole), "only the new keys rotated")


# -- mla-rope-on-nope ----------------------------------------------------------------------------
def _nope_rope(site: Site) -> list[tuple[str, str]]:
    """(nope, rope) dims from a split into a nope and a rope part, the query's first."""
    out = []
    for call in site.calls("split"):
        sizes = arg(call, 1 if callee(call) and code_of(call.func).startswith("torch") else 0)
        if sizes is None or not isinstance(sizes.value, cst.List | cst.Tuple):
            sizes = next((a for a in call.args if isinstance(a.value, cst.List | cst.Tuple)), None)
        if sizes is None or len(sizes.value.elements) != 2:
            continue
        asg = site.parent(call)
        names = code_of(asg.targets[0].target) if isinstance(asg, cst.Assign) else ""
        if "nope" not in names:
            continue
        a, b = (site.code(e.value) for e in sizes.value.elements)
        pair = (a, b)
        if pair not in out:
            out.insert(0 if names.lstrip().startswith("q") else len(out), pair)
    return out


@template("mla-rope-on-nope")
def rope_on_rope_part(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """Only the last `rope` dims of each query and key head are rotated (the nope part stays
    as kv_b made it); cos/sin tables made for the whole head are made for the rope dims."""
    dims = _nope_rope(site)[:1]
    torch = _torch(site)
    for nope, rope in dims:
        whole: list[tuple[cst.SimpleStatementLine, cst.Assign, cst.Call]] = []
        for rot in _rotations(site):
            stmt = site.statement(rot)
            if stmt is None or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
                continue
            asg = stmt.body[0]
            tensors = [a.value for a in rot.args if isinstance(a.value, cst.Name)]
            if asg.value is not rot or not tensors:
                continue
            if any(h in tensors[0].value.lower() for h in ("pe", "rope", "rot", "cos", "sin")):
                continue
            whole.append((stmt, asg, rot))
        if not whole:
            continue
        fn = site.function(whole[0][2])
        whole = [w for w in whole if site.function(w[2]) is fn]
        pairs: list[tuple[cst.CSTNode, str | cst.CSTNode]] = []
        for stmt, asg, rot in whole:
            target = asg.targets[0].target
            names = [
                e.value.value
                for e in (target.elements if isinstance(target, cst.Tuple) else [])
                if isinstance(e.value, cst.Name)
            ]
            head = [a for a in rot.args if isinstance(a.value, cst.Name)][: max(1, len(names))]
            args = [
                f"{site.code(a.value)}[..., {nope}:]" if a in head else _arg_text(site, a)
                for a in rot.args
            ]
            call = f"{site.code(rot.func)}({', '.join(args)})"
            if isinstance(target, cst.Name):
                x = site.code(head[0].value)
                pairs.append((rot, f"{torch}.cat([{x}[..., :{nope}], {call}], dim=-1)"))
            elif len(names) == len(head) >= 2:
                parts = [site.fresh(f"{n}_rot") for n in names]
                lines = [f"{', '.join(parts)} = {call}"]
                cats = [
                    f"{torch}.cat([{site.code(h.value)}[..., :{nope}], {p}], dim=-1)"
                    for h, p in zip(head, parts, strict=True)
                ]
                lines.append(f"{', '.join(names)} = {', '.join(cats)}")
                block = cst.parse_module("\n".join(lines) + "\n").body
                pairs.append((stmt, cst.FlattenSentinel(list(block))))  # type: ignore[arg-type]
        if not pairs:
            continue
        # tables the rotation reads, when made for the whole head
        tables: list[tuple[cst.CSTNode, str]] = []
        for _, asg, rot in whole:
            rotated = {n.value for n in _walk(asg.targets[0].target) if isinstance(n, cst.Name)}
            for a in rot.args:
                if not isinstance(a.value, cst.Name) or a.value.value in rotated:
                    continue
                src = _assignment(site, a.value.value, rot)
                if src is None:
                    continue
                for c in (n for n in _walk(src.value) if isinstance(n, cst.Call)):
                    for b in c.args:
                        text = site.code(b.value).lower()
                        if "dim" in text and "rope" not in text and "rot" not in text:
                            if all(b.value is not t for t, _ in tables):
                                tables.append((b.value, rope))
        if tables:
            yield Candidate(
                _edit(site, replace=[*pairs, *tables]),
                "only the rope dims rotated, with tables of the rope dim",
            )
        yield Candidate(_edit(site, replace=pairs), "only the rope dims rotated")
