"""ALiBi repairs: the slopes of a head count that is not a power of two, where the bias meets
the scale, the distance on both sides of the query, and where the queries sit."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from attnkata.checker.catalog import Kata
from attnkata.checker.fix.site import Candidate, Site, arg, callee, code_of, number, receiver
from attnkata.checker.fix.templates import template
from attnkata.checker.fix.templates.common import query_key
from attnkata.checker.fix.templates.masks import mentions, walk
from attnkata.checker.models import Diagnostic

# Spellings the corpora use for the query count, the key count and the head count.
QUERY_LENGTHS = (
    "L",
    "T",
    "q_len",
    "q_length",
    "query_length",
    "tgt_len",
    "seq_len",
    "seqlen",
    "Lq",
    "n_q",
    "s_q",
    "M",
    "l",
)
KEY_LENGTHS = (
    "S",
    "kv_len",
    "kv_length",
    "key_length",
    "k_len",
    "src_len",
    "Lk",
    "n_k",
    "s_k",
    "total_len",
    "key_len",
    "kv_seq_len",
    "s",
)
HEAD_COUNTS = (
    "n_heads",
    "num_heads",
    "n_head",
    "nheads",
    "heads",
    "num_attention_heads",
    "H",
    "h",
    "n",
)
BIAS_NAMES = (
    "alibi",
    "bias",
    "attn_bias",
    "alibi_bias",
    "position_bias",
    "alibi_tensor",
    "pos_bias",
    "rel_bias",
)
# What a score (or score-like) term mentions: it is the term the scale multiplies.
SCORE_WORDS = ("score", "logit", "attn", "att", "qk", "sim", "dot", "matmul", "weight", "w")
SCORE_CALLS = ("matmul", "bmm", "einsum", "baddbmm", "mm")
_TIGHT_TERMS = (cst.Multiply, cst.Divide, cst.MatrixMultiply, cst.Power)


# -- shared reading ---------------------------------------------------------------------------
def _scope(site: Site, near: cst.CSTNode) -> set[str]:
    """The names the function around `near` has (its parameters and every name it uses)."""
    fn = site.function(near)
    out = set(site.params(fn))
    if fn is not None:
        out |= {n.value for n in walk(fn) if isinstance(n, cst.Name)}
    return out


def _lengths(site: Site, near: cst.CSTNode) -> tuple[list[str], list[str]]:
    """Expressions for the query count L and the key count S around `near`: the file's own
    names first, then the shapes of the nearest q and k."""
    scope = _scope(site, near)
    qs = [n for n in QUERY_LENGTHS if n in scope]
    ks = [n for n in KEY_LENGTHS if n in scope]
    for q, k in query_key(site, near)[:1]:
        qs.append(f"{q}.shape[-2]")
        ks.append(f"{k}.shape[-2]")
    return qs, ks


def _paren(site: Site, node: cst.BaseExpression) -> str:
    """The code of `node`, in parentheses when an operation binds it more loosely than `*`."""
    text = site.code(node)
    loose = isinstance(node, cst.IfExp | cst.Lambda | cst.Comparison | cst.BooleanOperation) or (
        isinstance(node, cst.BinaryOperation) and not isinstance(node.operator, _TIGHT_TERMS)
    )
    return f"({text})" if loose and not node.lpar else text


def _at_line(site: Site, line: int) -> cst.SimpleStatementLine | None:
    """The simple statement that starts on `line`."""
    found = site.nodes(cst.SimpleStatementLine, lambda n: site.span(n)[0] == line)
    return found[0] if found else None


def _remove_line(source: str, line: int) -> str | None:
    """`source` without the simple statement that starts on `line`."""
    again = Site(source)
    stmt = _at_line(again, line)
    return again.remove(stmt) if stmt is not None else None


def _shift(before: str, after: str) -> int:
    return len(after.splitlines()) - len(before.splitlines())


def _assigned_name(stmt: cst.CSTNode) -> tuple[str, cst.BaseSmallStatement] | None:
    """(name, the assignment) for a line `name = ...`, `name += ...`, `name *= ...`."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        if isinstance(target, cst.Name):
            return target.value, small
    if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
        return small.target.value, small
    return None


# -- alibi-bias-scaled -------------------------------------------------------------------------
def _terms(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The terms of a sum or difference (nested ones flattened)."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add | cst.Subtract):
        return _terms(node.left) + _terms(node.right)
    return [node]


def _is_sum(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, cst.Add | cst.Subtract
    )


def _scoreish(node: cst.CSTNode) -> bool:
    """A term that reads as the scores q.k: a product of q and k, or a name that says so."""
    for n in walk(node):
        if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.MatrixMultiply):
            return True
        if isinstance(n, cst.Call) and callee(n) in SCORE_CALLS:
            return True
        if isinstance(n, cst.Name) and any(w in n.value.lower() for w in SCORE_WORDS):
            if not any(b in n.value.lower() for b in ("bias", "alibi")):
                return True
    return False


def _biasish(node: cst.CSTNode) -> bool:
    return any(
        isinstance(n, cst.Name) and any(b in n.value.lower() for b in ("bias", "alibi", "slope"))
        for n in walk(node)
    )


def _scaled_sums(site: Site, total: cst.BaseExpression, scale: str, op: str) -> Iterator[str]:
    """The sum `total` with the scale applied to one term only, the scores' term first: the
    bias is added after the scale."""
    terms = sorted(_terms(total), key=lambda t: (not _scoreish(t), _biasish(t)))
    for term in terms[:3]:
        if _biasish(term) and not _scoreish(term):
            continue
        scaled = cst.parse_expression(f"{_paren(site, term)} {op} {scale}")
        new = total.deep_replace(term, scaled)
        assert isinstance(new, cst.BaseExpression)
        yield code_of(new.with_changes(lpar=[], rpar=[]))


def _scalings(site: Site) -> list[tuple[cst.BinaryOperation, cst.BaseExpression, str, str]]:
    """(x * s, x, code of s, the operator) for each multiplication or division by a scale."""
    out = []
    for node in site.nodes(
        cst.BinaryOperation, lambda n: isinstance(n.operator, cst.Multiply | cst.Divide)
    ):
        op = "*" if isinstance(node.operator, cst.Multiply) else "/"
        out.append((node, node.left, site.code(node.right), op))
        if op == "*":
            out.append((node, node.right, site.code(node.left), op))
    return out


@template("alibi-bias-scaled")
def bias_after_scale(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """(q.k + bias) * scale: only the scores are scaled, the bias is added to the product."""
    for node, x, scale, op in _scalings(site)[:12]:
        if _is_sum(x) and any(_scoreish(t) for t in _terms(x)):
            for new in _scaled_sums(site, x, scale, op):
                yield Candidate(site.replace(node, new), "the bias added after the scale")
    yield from _scaled_by_name(site)
    yield from _baddbmm(site)


def _scale_statements(site: Site) -> Iterator[tuple[cst.CSTNode, str, str, str, bool]]:
    """(node, the scaled name, the scale's code, the operator, whether the node is a whole
    statement to drop) for `x *= s`, `x = x * s`, and `x * s` anywhere (e.g. in a softmax)."""
    for aug in site.nodes(
        cst.AugAssign,
        lambda n: (
            isinstance(n.target, cst.Name)
            and isinstance(n.operator, cst.MultiplyAssign | cst.DivideAssign)
        ),
    ):
        op = "*" if isinstance(aug.operator, cst.MultiplyAssign) else "/"
        if isinstance(aug.target, cst.Name):
            yield aug, aug.target.value, site.code(aug.value), op, True
    for node, x, scale, op in _scalings(site):
        if not isinstance(x, cst.Name):
            continue
        stmt = site.statement(node)
        got = _assigned_name(stmt) if stmt is not None else None
        whole = got is not None and got[0] == x.value and getattr(got[1], "value", None) is node
        yield node, x.value, scale, op, whole


def _scaled_by_name(site: Site) -> Iterator[Candidate]:
    """`logits = scores + bias` then `logits *= scale`: the scale moves onto the scores (in
    the sum, or before `+= bias`), and the later scaling goes."""
    for node, name, scale, op, whole in list(_scale_statements(site))[:6]:
        stmt = site.statement(node)
        if stmt is None:
            continue
        line = site.span(stmt)[0]
        fn = site.function(stmt)
        earlier = [
            (s, got)
            for s in site.nodes(cst.SimpleStatementLine)
            if site.function(s) is fn
            and site.span(s)[0] < line
            and (got := _assigned_name(s)) is not None
            and got[0] == name
        ]
        if not earlier:
            continue
        prior, (_, small) = max(earlier, key=lambda e: site.span(e[0])[0])
        if isinstance(small, cst.Assign) and _is_sum(small.value):
            for new in _scaled_sums(site, small.value, scale, op):
                if whole:
                    first = site.replace(small.value, new)
                    out = _remove_line(first, line + _shift(site.source, first))
                else:
                    out = site.replace_all([(small.value, new), (node, name)])
                if out is not None:
                    yield Candidate(out, "the scores scaled before the bias is added")
        elif isinstance(small, cst.AugAssign) and isinstance(
            small.operator, cst.AddAssign | cst.SubtractAssign
        ):
            scaling = f"{name} = {name} {op} {scale}"
            if whole:  # the candidate's own line moves
                scaling = site.code(stmt.body[0])
                first = site.insert_before(prior, scaling)
                out = _remove_line(first, line + _shift(site.source, first))
            else:
                out = site.insert_before(prior, scaling, also=[(node, name)])
            if out is not None:
                yield Candidate(out, "the scale applied before the bias is added")


def _baddbmm(site: Site) -> Iterator[Candidate]:
    """BLOOM's baddbmm(bias, q, k^T, beta, alpha): beta = 1 and the scale in alpha only."""
    for call in site.calls("baddbmm", "addbmm")[:2]:
        rec = receiver(call)
        method = rec is not None and code_of(rec) != "torch"
        beta = arg(call, None if method else 3, "beta")
        if beta is not None and number(beta.value) != 1.0:
            yield Candidate(site.replace(beta.value, "1.0"), "the bias added as it is (beta=1)")
        parent = site.parent(call)
        if (
            isinstance(parent, cst.BinaryOperation)
            and isinstance(parent.operator, cst.Multiply | cst.Divide)
            and parent.left is call
        ):
            scale = site.code(parent.right)
            if isinstance(parent.operator, cst.Divide):
                scale = f"1 / {_paren(site, parent.right)}"
            alpha = arg(call, None if method else 4, "alpha")
            if alpha is not None:
                new = call.deep_replace(
                    alpha.value, cst.parse_expression(f"{_paren(site, alpha.value)} * {scale}")
                )
            else:
                new = call.with_changes(
                    args=[
                        *call.args[:-1],
                        call.args[-1].with_changes(
                            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                        ),
                        cst.Arg(
                            cst.parse_expression(scale),
                            keyword=cst.Name("alpha"),
                            equal=cst.AssignEqual(
                                cst.SimpleWhitespace(""), cst.SimpleWhitespace("")
                            ),
                        ),
                    ]
                )
            assert isinstance(new, cst.CSTNode)
            yield Candidate(site.replace(parent, code_of(new)), "the scale in baddbmm's alpha")


# -- alibi-bias-not-symmetric --------------------------------------------------------------------
def _arange_names(site: Site, near: cst.CSTNode) -> dict[str, cst.Assign]:
    """Names the function around `near` assigns from an expression that calls arange."""
    fn = site.function(near)
    out: dict[str, cst.Assign] = {}
    for asg in site.nodes(cst.Assign):
        target = asg.targets[0].target
        if (
            site.function(asg) is fn
            and isinstance(target, cst.Name)
            and any(isinstance(n, cst.Call) and callee(n) == "arange" for n in walk(asg.value))
        ):
            out[target.value] = asg
    return out


def _positional(call: cst.Call) -> list[cst.Arg]:
    return [a for a in call.args if a.keyword is None and not a.star]


def _positions_sides(site: Site, sub: cst.BinaryOperation) -> bool:
    """Both sides of `sub` mention positions: a name made by arange, or an arange itself."""
    names = set(_arange_names(site, sub))

    def positions(node: cst.CSTNode) -> bool:
        return any(
            (isinstance(n, cst.Name) and n.value in names)
            or (isinstance(n, cst.Call) and callee(n) == "arange")
            for n in walk(node)
        )

    return positions(sub.left) and positions(sub.right)


def _under_abs(site: Site, node: cst.CSTNode) -> bool:
    for a in site.ancestors(node):
        if isinstance(a, cst.Call) and callee(a) in ("abs", "absolute"):
            return True
        if isinstance(a, cst.SimpleStatementLine):
            return False
    return False


_CLAMPS = ("clamp", "clip", "clamp_min", "clamp_max", "relu", "maximum", "minimum")


def _clamped_distances(site: Site) -> Iterator[tuple[cst.Call, cst.BaseExpression, bool]]:
    """(call, what it clamps, whether it keeps the negative side) for a distance clamped at 0:
    x.clamp(min=0), torch.clamp(x, min=0), x.clamp_min(0), relu(x), x.clamp(max=0), ..."""
    for call in site.calls(*_CLAMPS):
        name = callee(call)
        rec = receiver(call)
        method = rec is not None and code_of(rec) not in ("torch", "np", "numpy", "F")
        x = rec if method else (call.args[0].value if call.args else None)
        if x is None:
            continue
        first = 0 if method else 1
        if name in ("relu",):
            yield call, x, False
            continue
        low = arg(call, first if name in ("clamp", "clip", "clamp_min") else None, "min")
        high = arg(call, None if name != "clamp_max" else first, "max")
        if name in ("maximum", "minimum"):
            other = arg(call, first, "other")
            if other is not None and number(other.value) == 0.0:
                yield call, x, name == "minimum"
        elif low is not None and number(low.value) == 0.0 and high is None:
            yield call, x, False
        elif high is not None and number(high.value) == 0.0 and low is None:
            yield call, x, True


def _query_positions(site: Site, near: cst.CSTNode) -> list[str]:
    """Names the function gives its queries' positions: arange(start, end), or a name that
    says so."""
    words = ("q_pos", "pos_q", "query_pos", "context_position", "q_idx", "qpos", "rows")
    out = []
    for name, asg in _arange_names(site, near).items():
        aranges = [n for n in walk(asg.value) if isinstance(n, cst.Call) and callee(n) == "arange"]
        if name in words or any(len(_positional(a)) >= 2 for a in aranges):
            out.append(name)
    return out


@template("alibi-bias-not-symmetric")
def symmetric_bias(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """-m |p - j| on both sides of the query: a clamped distance takes its absolute value, a
    signed one too, and a bias that grows with the key's position alone (BLOOM's m * j) is
    measured from the query's position."""
    for call, x, negative in list(_clamped_distances(site))[:3]:
        new = f"-{_paren(site, x)}.abs()" if negative else f"{_paren(site, x)}.abs()"
        yield Candidate(site.replace(call, new), "the distance's absolute value, not clamped")
    subs = site.nodes(
        cst.BinaryOperation,
        lambda n: (
            isinstance(n.operator, cst.Subtract)
            and _positions_sides(site, n)
            and not _under_abs(site, n)
        ),
    )
    for sub in subs[:2]:
        inner = site.code(sub) if sub.lpar else f"({site.code(sub)})"
        # a node, not code: the difference's own parentheses are the call's receiver's
        absolute = cst.parse_expression(f"{inner}.abs()")
        yield Candidate(site.replace(sub, absolute), "the absolute distance")
        yield Candidate(site.replace(sub, f"-{inner}.abs()"), "minus the absolute distance")
    yield from _key_only_bias(site)
    yield from _recentred_bias(site)


def _key_only_bias(site: Site) -> Iterator[Candidate]:
    """slopes * j (the key's position only): j becomes -|p - j| with the queries' positions."""
    for mul in site.nodes(cst.BinaryOperation, lambda n: isinstance(n.operator, cst.Multiply))[:12]:
        positions = _arange_names(site, mul)
        queries = _query_positions(site, mul)
        if any(mentions(site, mul, (p,)) for p in queries):
            continue
        keys = [
            n
            for n in walk(mul)
            if isinstance(n, cst.Name)
            and n.value in positions
            and n.value not in queries
            and isinstance(positions[n.value].value, cst.Call)
            and callee(positions[n.value].value) == "arange"
        ]
        for key in keys[:1]:
            assert isinstance(key, cst.Name)
            starts = list(queries)
            qs, ks = _lengths(site, mul)
            made = positions[key.value].value
            assert isinstance(made, cst.Call)
            for q_len in qs[:1]:
                for k_len in ks[:1]:
                    starts.append(
                        code_of(made).replace(
                            f"({code_of(_positional(made)[0].value)}",
                            f"({k_len} - {q_len}, {k_len}",
                            1,
                        )
                    )
            for p in starts[:2]:
                distance = f"-({p}[:, None] - {key.value}[None, :]).abs()"
                yield Candidate(
                    site.replace(key, distance), "the key's distance from the query's position"
                )


def _recentred_bias(site: Site) -> Iterator[Candidate]:
    """A bias made of m * j along its last axis (BLOOM's build_alibi_tensor, one row for every
    query), where the file has no query positions at hand: its row for query i becomes
    -|m p_i - m j|, p_i = S - L + i read off the same row (the softmax ignored the rest)."""
    for asg in site.nodes(cst.Assign)[:40]:
        target = asg.targets[0].target
        if not isinstance(target, cst.Name):
            continue
        made = asg.value
        local = {fn.name.value for fn in site.functions()}
        built = isinstance(made, cst.Call) and callee(made) in local
        if not (target.value in BIAS_NAMES and built):
            continue
        a = target.value
        qs, ks = _lengths(site, asg)
        for q_len in qs[:1]:
            for k_len in ks[:1]:
                p = site.fresh("pos_q")
                rows = (
                    f"{p} = torch.arange({k_len} - {q_len}, {k_len}, device={a}.device)"
                    ".clamp(min=0)  # p_i = S - L + i (a row with no key: 0)"
                )
                for code in (
                    f"{a} = -({a} - {a}[..., {p}].transpose(-1, -2)).abs()",
                    f"{a} = -({a}[..., None, :] - {a}[..., {p}, None]).abs()",
                ):
                    yield Candidate(
                        site.insert_after(asg, f"{rows}\n{code}  # m j -> -|m p_i - m j|"),
                        "the m * j bias measured from each query's position",
                    )


# -- alibi-distance-top-left ---------------------------------------------------------------------
def _query_length_like(site: Site, node: cst.BaseExpression) -> bool:
    text = site.code(node)
    if text in QUERY_LENGTHS:
        return True
    return any(
        isinstance(n, cst.Name) and n.value in ("q", "query", "queries", "xq", "query_states")
        for n in walk(node)
    )


@template("alibi-distance-top-left")
def query_positions(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """The queries sit at S - L .. S - 1, not 0 .. L - 1: arange(L) -> arange(S - L, S)."""
    aranges = [
        c
        for c in site.calls("arange")
        if len(_positional(c)) == 1 and arg(c, None, "start", "end") is None
    ]
    ranked = sorted(aranges, key=lambda c: not _query_length_like(site, _positional(c)[0].value))
    tried = 0
    for call in ranked:
        n = _positional(call)[0].value
        if site.code(n) in KEY_LENGTHS or tried >= 3:
            continue
        tried += 1
        _, ks = _lengths(site, call)
        for k_len in [k for k in ks if k != site.code(n)][:2]:
            start = f"{k_len} - {_paren(site, n)}"
            new = code_of(call).replace(f"({site.code(n)}", f"({start}, {k_len}", 1)
            yield Candidate(site.replace(call, new), f"query positions from {k_len} - L")
    for sub in site.nodes(cst.Subscript)[:20]:
        for el in sub.slice:
            sl = el.slice
            if (
                isinstance(sl, cst.Slice)
                and sl.lower is None
                and sl.upper is not None
                and sl.step is None
                and site.code(sl.upper) in QUERY_LENGTHS
            ):
                new = sl.with_changes(
                    lower=cst.parse_expression(f"-{site.code(sl.upper)}"), upper=None
                )
                yield Candidate(site.replace(sl, new), "the last L rows of the square bias")


# -- alibi-slopes-wrong-for-non-power-of-two -------------------------------------------------------
def _head_param(site: Site, fn: cst.FunctionDef) -> str | None:
    params = [p for p in site.params(fn) if p not in ("self", "cls")]
    named = [p for p in params if p in HEAD_COUNTS]
    if named:
        return named[0]
    if fn.name.value == "alibi_slopes" and params:
        return params[0]
    return None


def _two_c(site: Site, n: str) -> str:
    """2c, c the largest power of two <= n (the odd slopes of 2c heads are those of c)."""
    if site.imports("math") is not None:
        return f"2 * 2 ** math.floor(math.log2({n}))"
    return f"2 ** {n}.bit_length()"


def _closest(site: Site, n: str) -> str:
    if site.imports("math") is not None:
        return f"2 ** math.floor(math.log2({n}))"
    return f"2 ** ({n}.bit_length() - 1)"


def _renames(site: Site, node: cst.CSTNode, old: str, new: str) -> list[tuple[cst.CSTNode, str]]:
    """Each use of the variable `old` inside `node` (not an attribute, not a keyword)."""
    out: list[tuple[cst.CSTNode, str]] = []
    for n in walk(node):
        if not isinstance(n, cst.Name) or n.value != old:
            continue
        parent = site.parent(n)
        if isinstance(parent, cst.Attribute) and parent.attr is n:
            continue
        if isinstance(parent, cst.Arg) and parent.keyword is n:
            continue
        out.append((n, new))
    return out


@template("alibi-slopes-wrong-for-non-power-of-two")
def slopes_for_any_count(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """The paper's get_slopes: c = the largest power of two <= n, the slopes of c heads, then
    every other slope of 2c heads (the first n - c)."""
    yield from _stride(site)
    fns = [f for f in site.functions() if _head_param(site, f) is not None]
    local = {f.name.value for f in site.functions()}
    for fn in fns[:3]:
        n = _head_param(site, fn)
        assert n is not None
        calls = [
            c
            for c in site.calls(*local)
            if site.function(c) is fn
            and callee(c) != fn.name.value
            and len(c.args) == 1
            and site.code(c.args[0].value) == n
        ]
        for call in calls[:1]:
            stmt = site.statement(call)
            if stmt is None:
                continue
            c = site.fresh("closest_power_of_2")
            g = site.code(call.func)
            parts = (f"{g}({c})", f"{g}(2 * {c})[0::2][: {n} - {c}]")
            for joined in (" + ".join(parts), f"torch.cat([{', '.join(parts)}])"):
                yield Candidate(
                    site.insert_before(stmt, f"{c} = {_closest(site, n)}", also=[(call, joined)]),
                    "the slopes of c heads, then every other one of 2c",
                )
    for fn in fns[:3]:
        yield from _reordered(site, fn)


def _stride(site: Site) -> Iterator[Candidate]:
    """get_slopes(2c)[: n - c]: every other slope of 2c heads, [0::2], not the first ones."""
    for sub in site.nodes(cst.Subscript)[:30]:
        if len(sub.slice) != 1 or not isinstance(sub.slice[0].slice, cst.Slice):
            continue
        sl = sub.slice[0].slice
        if sl.lower is not None or sl.step is not None or not _is_sum(sl.upper):
            continue
        inner = sub.value
        if isinstance(inner, cst.Subscript) and len(inner.slice) == 1:
            step = inner.slice[0].slice
            if isinstance(step, cst.Slice) and step.step is not None:
                if number(step.lower) not in (None, 0.0):
                    fixed = step.with_changes(lower=cst.Integer("0"))
                    yield Candidate(site.replace(step, fixed), "the even slopes of 2c heads")
                continue
        if isinstance(inner, cst.Call | cst.Name | cst.Subscript):
            yield Candidate(
                site.replace(inner, f"{site.code(inner)}[0::2]"),
                "every other slope of 2c heads",
            )


def _reordered(site: Site, fn: cst.FunctionDef) -> Iterator[Candidate]:
    """The power-of-two formula computed for 2c heads, then its odd-indexed slopes (those of c
    heads) followed by its even-indexed ones, the first n (MPT's gen_slopes)."""
    n = _head_param(site, fn)
    body = fn.body
    if n is None or not isinstance(body, cst.IndentedBlock):
        return
    lines = [s for s in body.body if isinstance(s, cst.SimpleStatementLine)]
    assigns = [
        (s, got)
        for s in lines
        if (got := _assigned_name(s)) is not None and isinstance(got[1], cst.Assign)
    ]
    rets = [
        s.body[0]
        for s in lines
        if isinstance(s.body[0], cst.Return) and s.body[0].value is not None
    ]
    if not rets:
        return
    ret = rets[-1]
    assert isinstance(ret, cst.Return) and ret.value is not None
    made = {name for _, (name, _) in assigns}
    base = next(
        (x.value for x in walk(ret.value) if isinstance(x, cst.Name) and x.value in made), None
    )
    n2 = site.fresh(f"_{n}")
    head = f"{n2} = {_two_c(site, n)}  # 2c: its odd slopes are those of c heads"
    if base is not None:
        pivot = max((s for s, (name, _) in assigns if name == base), key=site.order.__getitem__)
        before = [
            s
            for s, (_, small) in assigns
            if site.order[s] <= site.order[pivot] and mentions(site, small, (n,))
        ]
        if not before:
            return
        pairs = [p for s in before for p in _renames(site, s.body[0], n, n2)]
        first = site.insert_before(before[0], head, also=pairs)
        again = Site(first)
        line = site.span(pivot)[0] + _shift(site.source, first)
        stmt = _at_line(again, line)
        if stmt is None:
            return
        value = next(small.value for s, (_, small) in assigns if s is pivot)
        as_list = isinstance(value, cst.ListComp | cst.List) or "torch" not in site.code(value)
        forms = [
            f"{base} = ({base}[1::2] + {base}[::2])[:{n}]",
            f"{base} = torch.cat([{base}[1::2], {base}[::2]])[:{n}]",
        ]
        for form in forms if as_list else forms[::-1]:
            yield Candidate(
                again.insert_after(stmt, form), "the slopes of 2c heads, odd ones first"
            )
        return
    # The slopes made in the return itself: torch.tensor([... for h in range(n)]).
    value = ret.value
    if isinstance(value, cst.Call) and callee(value) in ("tensor", "as_tensor", "Tensor"):
        value = value.args[0].value if value.args else value
    if not mentions(site, value, (n,)):
        return
    s = site.fresh("slopes")
    renamed = value.visit(_Rename({id(old) for old, _ in _renames(site, value, n, n2)}, n2))
    code = (
        f"{head}\n{s} = {code_of(renamed)}\n{s} = ({s}[1::2] + {s}[::2])[:{n}]"
        if isinstance(value, cst.ListComp | cst.List)
        else f"{head}\n{s} = {code_of(renamed)}\n{s} = torch.cat([{s}[1::2], {s}[::2]])[:{n}]"
    )
    yield Candidate(
        site.insert_before(ret, code, also=[(value, s)]), "the slopes of 2c heads, odd ones first"
    )


class _Rename(cst.CSTTransformer):
    """Renames the Name nodes given by identity."""

    def __init__(self, ids: set[int], new: str) -> None:
        super().__init__()
        self.ids = ids
        self.new = new

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return (
            updated_node.with_changes(value=self.new)
            if id(original_node) in self.ids
            else updated_node
        )
