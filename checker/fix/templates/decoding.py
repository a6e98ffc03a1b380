"""Decoding repairs: flash-decoding's split merge (its log-sum-exp weights, a stable merge, a
split with no key, a split's lse missing its max) and paged attention's reads (the length
that counts the new token, the block table that says where a block lives)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from attnkata.checker.catalog import Kata
from attnkata.checker.fix.site import Candidate, Site, arg, callee, code_of, number, receiver
from attnkata.checker.fix.templates import template
from attnkata.checker.fix.templates.common import guarded_softmax, is_numpy, softmax_calls
from attnkata.checker.fix.templates.kernels import in_kernel
from attnkata.checker.fix.templates.masks import STRICT, mentions, one_off_ops, walk
from attnkata.checker.models import Diagnostic

MAX_CALLS = ("amax", "max", "maximum", "fmax")
EXP_CALLS = ("exp", "exp2")
LOG_CALLS = ("log", "log2")


# -- shared reading -------------------------------------------------------------------------------
def _assigns(site: Site, fn: cst.FunctionDef | None) -> list[tuple[str, cst.Assign]]:
    """(name, assignment) for each `name = ...` with a single plain name as target in `fn`,
    in file order."""
    out = []
    for asg in site.nodes(cst.Assign):
        if site.function(asg) is not fn or len(asg.targets) != 1:
            continue
        target = asg.targets[0].target
        if isinstance(target, cst.Name):
            out.append((target.value, asg))
    return sorted(out, key=lambda p: site.order[p[1]])


def _calls_in(node: cst.CSTNode, names: tuple[str, ...]) -> bool:
    return any(callee(n) in names for n in walk(node))


# -- the merge's weights ----------------------------------------------------------------------------
def _merge_params(site: Site, fn: cst.FunctionDef) -> tuple[str, str] | None:
    """(partial outputs, partial lse) of a merge function: by name, else its first two."""
    params = [p for p in site.params(fn) if p not in ("self", "cls")]
    lse = [p for p in params if "lse" in p.lower() or "log" in p.lower()]
    outs = [p for p in params if p not in lse and ("out" in p.lower() or p.lower() in ("o", "v"))]
    if lse and outs:
        return outs[0], lse[0]
    if len(params) >= 2:
        return params[0], params[1]
    return None


def _merges(site: Site) -> list[cst.FunctionDef]:
    """Functions that merge partial results: they take a partial lse and no key."""
    out = []
    for fn in site.functions():
        params = site.params(fn)
        if any("lse" in p.lower() or "log" in p.lower() for p in params) and not any(
            p in ("k", "key", "keys", "k_cache") for p in params
        ):
            out.append(fn)
    return out


def _output_exprs(site: Site, fn: cst.FunctionDef, partial_out: str) -> list[cst.BaseExpression]:
    """What the merge gives as its output: an assignment's value that reads the partial
    outputs (nearest the diagnosis first), or the first element of what it returns."""
    out: list[cst.BaseExpression] = []
    for _name, asg in sorted(
        _assigns(site, fn), key=lambda p: (site.distance(p[1]), site.order[p[1]])
    ):
        if mentions(site, asg.value, (partial_out,)):
            out.append(asg.value)
    for ret in site.nodes(cst.Return, lambda n: site.function(n) is fn):
        if isinstance(ret.value, cst.Tuple) and ret.value.elements:
            first = ret.value.elements[0].value
            if mentions(site, first, (partial_out,)):
                out.append(first)
    return out


def _lse_view(site: Site, fn: cst.FunctionDef, partial_lse: str) -> list[str]:
    """The partial lse as the merge reads it: a local copy in the output's dtype
    (`lse_c = partial_lse.to(...)`) first, else the parameter itself."""
    local = [
        name
        for name, asg in _assigns(site, fn)
        if isinstance(asg.value, cst.Call)
        and callee(asg.value) in ("to", "float", "double", "type_as")
        and isinstance(receiver(asg.value), cst.Name)
        and receiver(asg.value).value == partial_lse  # type: ignore[union-attr]
    ]
    return [*local[:1], partial_lse]


def _unused_weights(site: Site, fn: cst.FunctionDef) -> list[str]:
    """Names the merge computes from an exp (or a division) and never reads again: weights
    written down and then forgotten."""
    out = []
    for name, asg in _assigns(site, fn):
        later = [
            n
            for n in site.nodes(cst.Name, lambda n, name=name: n.value == name)
            if site.function(n) is fn
            and site.order[n] > site.order[asg]
            and not isinstance(site.parent(n), cst.AssignTarget)
        ]
        weighty = _calls_in(asg.value, EXP_CALLS + ("softmax",)) or any(
            isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Divide)
            for n in walk(asg.value)
        )
        if weighty and not later:
            out.append(name)
    return out


@template("split-lse-combine-unweighted")
def lse_weights(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """Each split's output counts by exp(lse_c - lse), its share of the whole softmax: the
    merged output is the weighted sum over the splits (a softmax over the partial lse, which
    is stable, with 0 weights where every split is empty), not their mean."""
    for fn in _merges(site)[:2]:
        names = _merge_params(site, fn)
        if names is None:
            continue
        po, pl = names
        targets = _output_exprs(site, fn, po)[:2]
        weights = [f"{w}.unsqueeze(-1)" for w in _unused_weights(site, fn)[:2]]
        for view in _lse_view(site, fn, pl):
            soft = f"torch.softmax({view}, dim=-1).nan_to_num(0.0)"
            weights.append(f"{soft}.unsqueeze(-1)")
            if view == pl:  # the weights in the outputs' dtype (float64 lse, float32 outputs)
                weights.append(f"{soft}.to({po}.dtype).unsqueeze(-1)")
        for target in targets:
            for w in weights[:5]:
                yield Candidate(
                    site.replace(target, f"({w} * {po}).sum(dim=-2)"),
                    "splits weighted by exp(lse_c - lse)",
                )


# -- a stable merge ---------------------------------------------------------------------------------
def _log_of_sums(site: Site, fn: cst.FunctionDef | None) -> list[cst.Call]:
    """log(x) calls in `fn`: the merged lse taken from the sum of the exps."""
    return [c for c in site.calls(*LOG_CALLS) if site.function(c) is fn]


@template("unstable-softmax")
def stable_merge(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """exp(lse_c) of the raw partial lse overflows (inf / inf) or underflows (every weight 0)
    for large |lse_c|: shift by the splits' finite max before the exp, and add the max back
    to the log of their sum (the merged lse)."""
    if is_numpy(site, kata.id):
        return
    for call in site.calls(*EXP_CALLS)[:3]:
        x = arg(call, 0, "input", "x")
        if x is None or (
            isinstance(x.value, cst.BinaryOperation) and isinstance(x.value.operator, cst.Subtract)
        ):
            continue
        stmt = site.statement(call)
        fn = site.function(call)
        xs = site.code(x.value)
        if stmt is None or in_kernel(site, call):
            continue  # a kernel has no amax / nan_to_num methods: kernels.py's business
        if "lse" not in xs.lower() and not _log_of_sums(site, fn):
            continue  # exp of scores with no log-sum-exp made from it: softmax.py's shapes
        held = xs if isinstance(x.value, cst.Name | cst.Attribute | cst.Call) else f"({xs})"
        shift = site.fresh("lse_max")
        line = f"{shift} = {held}.amax(dim=-1, keepdim=True).nan_to_num(neginf=0.0)"
        new_exp = (
            call,
            site.code(call.deep_replace(x.value, cst.parse_expression(f"{held} - {shift}"))),
        )
        logs = _log_of_sums(site, fn)[:2]
        for squeeze in ("", ".squeeze(-1)"):
            for log in logs:
                yield Candidate(
                    site.insert_before(
                        stmt, line, also=[new_exp, (log, f"{shift}{squeeze} + {site.code(log)}")]
                    ),
                    "merge shifted by the largest lse, added back to the log",
                )
            if len(logs) > 1:
                also = [new_exp, *[(g, f"{shift}{squeeze} + {site.code(g)}") for g in logs]]
                yield Candidate(
                    site.insert_before(stmt, line, also=also),
                    "merge shifted by the largest lse, added back to every log",
                )
        # The merged lse taken elsewhere (logsumexp): the weights only need the shift.
        yield Candidate(site.insert_before(stmt, line, also=[new_exp]), "merge shifted")


# -- a split with no key ----------------------------------------------------------------------------
def _divisions_by_sums(site: Site) -> list[cst.BinaryOperation]:
    """x / s where s is a sum, or a name assigned from an expression with a sum in it (the
    running sum of an online softmax)."""

    def is_sum(node: cst.BaseExpression) -> bool:
        if _calls_in(node, ("sum",)):
            return True
        if isinstance(node, cst.Name):
            return any(_calls_in(a.value, ("sum",)) for a in site.assigned(node.value, node))
        return False

    return site.nodes(
        cst.BinaryOperation,
        lambda n: isinstance(n.operator, cst.Divide) and is_sum(n.right),
    )


def _safe_den(site: Site, den: cst.BaseExpression) -> str:
    d = site.code(den)
    if isinstance(den, cst.Name | cst.Attribute):
        return f"torch.where({d} > 0, {d}, torch.ones_like({d}))"
    return f"({d}).clamp_min(1e-30)"


def _exp_shifts(site: Site) -> list[tuple[cst.BaseExpression, str]]:
    """exp(s - m): m made finite (a split with no key has m = -inf: -inf - -inf = NaN)."""
    out = []
    for call in site.calls(*EXP_CALLS):
        a = arg(call, 0, "input", "x")
        if (
            a is not None
            and isinstance(a.value, cst.BinaryOperation)
            and isinstance(a.value.operator, cst.Subtract)
            and "nan_to_num" not in site.code(a.value.right)
            and "isfinite" not in site.code(a.value.right)
        ):
            m = a.value.right
            out.append((m, f"torch.nan_to_num({site.code(m)}, neginf=0.0)"))
    return out


@template("empty-split-nan")
def empty_split(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """A split with no key of the sequence gives out_c = 0 (its lse is already -inf): the
    softmax over a row of -inf gives zeros instead of NaN, or a hand-written one shifts by a
    finite max and divides only by a sum > 0."""
    for call in softmax_calls(site)[:3]:
        for src in guarded_softmax(site, call):
            yield Candidate(src, "split softmax guarded for a split with no key")
    shifts = _exp_shifts(site)[:2]
    divs = [(v, _safe_den(site, v.right)) for v in _divisions_by_sums(site)[:2]]
    dens = [(v.right, new) for v, new in divs]
    if shifts and dens:
        yield Candidate(site.replace_all(shifts + dens), "split's max made finite, sum guarded")
    for s in shifts:
        yield Candidate(site.replace(*s), "split's max made finite")
    for den in dens:
        yield Candidate(site.replace(*den), "split's sum guarded")


# -- a split's lse ----------------------------------------------------------------------------------
def _max_names(site: Site, near: cst.CSTNode) -> list[str]:
    """Names of the running (or row) max around `near`: assigned from a max, or from such a
    name (`m_i = m_new`), the latest assignment before `near` first."""
    fn = site.function(near)
    found: dict[str, int] = {}
    assigns = _assigns(site, fn)
    for _ in range(2):  # names assigned from names that hold a max: one more hop
        for name, asg in assigns:
            if site.order[asg] > site.order[near]:
                continue
            if _holds_max(asg.value, found) and "lse" not in name.lower():
                found[name] = max(found.get(name, -1), site.order[asg])
    return sorted(found, key=lambda n: -found[n])


def _holds_max(value: cst.BaseExpression, found: dict[str, int]) -> bool:
    """A max itself (`s.amax(-1)`, `x.max(-1).values`, `torch.maximum(m, ...)`), a name that
    holds one, or either made finite (`torch.where(isinf(m), 0, m)`, `m.nan_to_num(...)`)."""
    if isinstance(value, cst.Attribute) and value.attr.value == "values":
        value = value.value
    if isinstance(value, cst.Name):
        return value.value in found
    if not isinstance(value, cst.Call):
        return False
    if callee(value) in MAX_CALLS:
        return True
    if callee(value) in ("where", "nan_to_num", "clamp", "clamp_min", "masked_fill"):
        rec = receiver(value)
        return any(_holds_max(a.value, found) for a in value.args) or (
            rec is not None and _holds_max(rec, found)
        )
    return False


def _lse_logs(site: Site) -> list[cst.Call]:
    """log(l) calls that make a log-sum-exp without any max added to them."""
    out = []
    for call in site.calls(*LOG_CALLS):
        parent = site.parent(call)
        if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Add):
            continue  # m + log(l) already
        out.append(call)
    return out


@template("lse-wrong")
def lse_with_max(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """The log-sum-exp is m + log(l): the running max the exps were shifted by is added back
    to the log of their sum (and the lse has no trailing dimension of 1)."""
    for log in _lse_logs(site)[:3]:
        names = _max_names(site, log)[:3]
        for m in names:
            yield Candidate(site.replace(log, f"{m} + {site.code(log)}"), f"lse = {m} + log(l)")
    # m + l without the log
    for op in site.nodes(
        cst.BinaryOperation,
        lambda n: (
            isinstance(n.operator, cst.Add)
            and not _calls_in(n, LOG_CALLS)
            and isinstance(n.left, cst.Name)
            and isinstance(n.right, cst.Name)
        ),
    )[:2]:
        if op.left.value in _max_names(site, op):  # type: ignore[union-attr]
            yield Candidate(
                site.replace(op.right, f"torch.log({site.code(op.right)})"), "lse = m + log(l)"
            )
    # the running max alone: `lse[...] = m`
    for asg in site.nodes(
        cst.Assign,
        lambda n: isinstance(n.value, cst.Name) and "lse" in site.code(n.targets[0]).lower(),
    )[:2]:
        if asg.value.value not in _max_names(site, asg):  # type: ignore[attr-defined]
            continue
        for total in _sum_names(site, asg)[:2]:
            yield Candidate(
                site.replace(asg.value, f"{site.code(asg.value)} + torch.log({total})"),
                f"lse = max + log({total})",
            )
    # a trailing dimension of 1 on the returned lse
    for ret in site.nodes(cst.Return, lambda n: isinstance(n.value, cst.Tuple))[:2]:
        elems = ret.value.elements  # type: ignore[union-attr]
        if len(elems) == 2 and "lse" in site.code(elems[1].value).lower():
            lse = elems[1].value
            yield Candidate(
                site.replace(lse, f"{site.code(lse)}.squeeze(-1)"), "lse without a trailing dim"
            )


def _sum_names(site: Site, near: cst.CSTNode) -> list[str]:
    """Names assigned a sum (a running one: `l = alpha * l + p.sum(-1)`) before `near`, the
    latest first."""
    found = [
        name
        for name, asg in _assigns(site, site.function(near))
        if site.order[asg] < site.order[near] and _calls_in(asg.value, ("sum",))
    ]
    return list(dict.fromkeys(reversed(found)))


# -- the sequence's length --------------------------------------------------------------------------
LENGTH_PARAMS = ("context_lens", "lengths", "seq_lens", "seqlens", "cache_seqlens", "lens")


def _length_names(site: Site) -> tuple[str, ...]:
    """The lengths the caller gives, and the names the file derives from them
    (`n = int(context_lens[b])`, `seq_len = lengths.tolist()`, ...)."""
    names: set[str] = set()
    for fn in site.functions():
        names |= {p for p in site.params(fn) if p in LENGTH_PARAMS}
    for _ in range(3):
        for fn in site.functions():
            for name, asg in _assigns(site, fn):
                if mentions(site, asg.value, tuple(names)):
                    names.add(name)
        for loop in site.nodes(cst.For):  # `for n in lengths.tolist()`
            if isinstance(loop.target, cst.Name) and mentions(site, loop.iter, tuple(names)):
                names.add(loop.target.value)
    return tuple(sorted(names))


def _comparison_node(cmp: cst.Comparison) -> cst.Comparison:
    """`cmp` with its strictness flipped (< for <=, >= for >, ...)."""
    target = cmp.comparisons[0]
    op = target.operator
    new_op = STRICT[type(op)](
        whitespace_before=op.whitespace_before, whitespace_after=op.whitespace_after
    )
    return cmp.with_changes(comparisons=[target.with_changes(operator=new_op)])


@template("context-length-off-by-one")
def length_off_by_one(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """A length counts every key its query attends, the newest included: positions j <
    len (not <=), and no `- 1` / `+ 1` on the length. Where the fix leaves a sequence of
    length 0 with no key, its softmax is guarded too (zeros, not NaN)."""
    names = _length_names(site)
    if not names:
        return
    cmps = site.nodes(
        cst.Comparison,
        lambda n: (
            len(n.comparisons) == 1
            and type(n.comparisons[0].operator) in STRICT
            and number(n.left) is None
            and number(n.comparisons[0].comparator) is None
            and mentions(site, n, names)
        ),
    )
    for cmp in cmps[:3]:
        flipped = _comparison_node(cmp)
        yield Candidate(site.replace(cmp, flipped), "positions compared strictly with the length")
        for call in softmax_calls(site)[:1]:
            for src in guarded_softmax(site, call, also=[(cmp, code_of(flipped))]):
                yield Candidate(src, "strict length comparison, softmax guarded for length 0")
    for op in one_off_ops(site, names)[:3]:
        yield Candidate(site.replace(op, site.code(op.left)), "the length without the ± 1")


# -- the block table --------------------------------------------------------------------------------
RESHAPES = ("reshape", "view", "flatten", "unflatten", "contiguous")


def _caches_and_table(site: Site, fn: cst.FunctionDef) -> tuple[list[str], str | None]:
    params = [p for p in site.params(fn) if p not in ("self", "cls")]
    caches = [p for p in params if "cache" in p.lower() or "pool" in p.lower()]
    tables = [p for p in params if "table" in p.lower() or p in ("block_ids", "page_ids")]
    return caches, (tables[0] if tables else None)


def _sequence_index(site: Site, node: cst.CSTNode, per_sequence: tuple[str, ...]) -> str | None:
    """The variable of the `for b in range(...)` around `node` that walks the sequences: the
    one that indexes a per-sequence input (`context_lens[b]`, `q[b]`), else the innermost
    (an inner loop may walk blocks or tokens)."""
    loops = [
        a.target.value
        for a in site.ancestors(node)
        if isinstance(a, cst.For)
        and isinstance(a.target, cst.Name)
        and isinstance(a.iter, cst.Call)
        and callee(a.iter) == "range"
    ]
    fn = site.function(node)
    for var in loops:
        for sub in site.nodes(cst.Subscript, lambda n: site.function(n) is fn):
            first = sub.slice[0].slice if sub.slice else None
            if (
                isinstance(sub.value, cst.Name)
                and sub.value.value in per_sequence
                and isinstance(first, cst.Index)
                and isinstance(first.value, cst.Name)
                and first.value.value == var
            ):
                return var
    return loops[0] if loops else None


def _block_counts(site: Site, loop_var_node: cst.CSTNode) -> list[str]:
    """Names assigned, in the function around the node, a rounded-up division of a length
    (the number of blocks a sequence spans)."""
    fn = site.function(loop_var_node)
    lengths = _length_names(site)
    out = []
    for name, asg in _assigns(site, fn):
        if not mentions(site, asg.value, lengths):
            continue  # `g = H // Hkv` is no count of blocks
        if any(
            isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.FloorDivide)
            for n in walk(asg.value)
        ) or _calls_in(asg.value, ("ceil", "cdiv")):
            out.append(name)
    return list(dict.fromkeys(out))


@template("block-table-ignored")
def through_table(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """Block i of sequence b lives in physical block block_table[b, i] of the pool: every
    read of the caches goes through the table (an index into the pool becomes the table's
    entry at that index; a pool read flat from block 0 becomes the sequence's own blocks)."""
    for fn in site.functions()[:2]:
        caches, table = _caches_and_table(site, fn)
        if not caches or table is None:
            continue
        uses = [
            n
            for n in site.nodes(cst.Name, lambda n, caches=caches: n.value in caches)
            if site.function(n) is fn
            and not isinstance(site.parent(n), cst.Param | cst.AssignTarget)
        ]
        indexed: list[tuple[cst.CSTNode, str]] = []
        flat: list[tuple[cst.Name, str]] = []  # (use, sequence index)
        per_sequence = tuple(
            p for p in site.params(fn) if p in LENGTH_PARAMS or p in ("q", "query", "queries")
        )
        for use in uses:
            parent = site.parent(use)
            b = _sequence_index(site, use, per_sequence)
            if b is None:
                continue
            if isinstance(parent, cst.Subscript) and parent.value is use and parent.slice:
                first = parent.slice[0].slice
                if isinstance(first, cst.Index) and not mentions(site, first, (table,)):
                    idx = site.code(first.value)
                    indexed.append((first.value, f"{table}[{b}, {idx}].long()"))
                elif isinstance(first, cst.Slice) and len(parent.slice) == 1:
                    # pool[:nb] read as the sequence's blocks
                    indexed.append(
                        (parent, f"{use.value}[{table}[{b}, {site.code(first)}].long()]")
                    )
            elif (
                isinstance(parent, cst.Attribute)
                and parent.value is use
                and parent.attr.value in RESHAPES
            ):
                flat.append((use, b))
        if indexed:
            yield Candidate(site.replace_all(indexed), "the pool read through the block table")
        if flat:
            counts = _block_counts(site, flat[0][0])
            rows = [f"{table}[{{b}}, :{n}]" for n in counts[:2]] + [f"{table}[{{b}}]"]
            for row in rows:
                pairs = [(u, f"{u.value}[{row.format(b=b)}.long()]") for u, b in flat]
                yield Candidate(
                    site.replace_all(pairs), "the sequence's own blocks, through the table"
                )
