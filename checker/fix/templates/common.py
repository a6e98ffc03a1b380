"""What several template families look for: softmax calls and what they normalise, the
score product q @ k^T and its operands, fill values, and the expressions a file offers for
the head dim or the query and key lengths (its own names first, then shapes)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from attnkata.checker.fix.site import Site, arg, callee, number, receiver

# Spellings the corpora and interviews use, so that a repair reads like the candidate's code.
QUERY_NAMES = (
    "q",
    "query",
    "queries",
    "xq",
    "Q",
    "q_s",
    "q_i",
    "qi",
    "q_tile",
    "q_blk",
    "query_states",
    "q_h",
)
KEY_NAMES = (
    "k",
    "key",
    "keys",
    "xk",
    "K",
    "k_s",
    "k_j",
    "kj",
    "k_tile",
    "k_blk",
    "key_states",
    "k_all",
    "k_h",
)
VALUE_NAMES = ("v", "value", "values", "xv", "V", "v_j", "vj", "value_states", "v_all")
MASK_NAMES = (
    "mask",
    "attn_mask",
    "attention_mask",
    "key_padding_mask",
    "padding_mask",
    "attn_bias",
)
NUMPY_KATAS = ("sdpa-numpy",)


def is_numpy(site: Site, kata_id: str) -> bool:
    return kata_id in NUMPY_KATAS or (
        site.imports("numpy") is not None and site.imports("torch") is None
    )


def np_name(site: Site) -> str:
    return site.imports("numpy") or "np"


def softmax_calls(site: Site) -> list[cst.Call]:
    return site.calls("softmax")


def softmax_input(call: cst.Call) -> tuple[cst.BaseExpression | None, str]:
    """What a softmax call normalises and over which dim (its code; "-1" by default)."""
    rec = receiver(call)
    if rec is not None and not _is_module_path(rec):
        x = rec
        dim = arg(call, 0, "dim", "axis")
    else:
        a = arg(call, 0, "input", "x")
        x = a.value if a is not None else None
        dim = arg(call, 1, "dim", "axis")
    return x, (cst.Module([]).code_for_node(dim.value) if dim is not None else "-1")


def _is_module_path(node: cst.BaseExpression) -> bool:
    """`F`, `torch`, `nn.functional`, `torch.nn.functional`, `torch.special`: a softmax
    function's module, not a tensor whose method is called."""
    code = cst.Module([]).code_for_node(node)
    return code in (
        "F",
        "torch",
        "nn.functional",
        "torch.nn.functional",
        "torch.special",
        "functional",
        "special",
    )


def with_input(site: Site, call: cst.Call, new_input: str) -> str:
    """The code of `call` with what it normalises replaced by `new_input`."""
    x, _ = softmax_input(call)
    assert x is not None
    return cst.Module([]).code_for_node(call.deep_replace(x, site.parse_for(x, new_input)))


def guarded_softmax(
    site: Site, call: cst.Call, also: list[tuple[cst.CSTNode, str]] | None = None
) -> Iterator[str]:
    """The file with `call` giving zeros for a row that has no key to attend (every score
    -inf) instead of NaN, with finite gradients: the row is filled with 0 before the softmax
    and its output zeroed after (masked_fill's backward sends nothing through filled places).
    One line when what it normalises is a name; else a line before it names the empty rows."""
    x, dim = softmax_input(call)
    if x is None:
        return
    also = also or []
    xs = site.code(x)
    keep = f"dim={dim}, keepdim=True"
    simple = isinstance(x, cst.Name | cst.Attribute)
    stmt = site.statement(call)
    if stmt is None:
        if simple:  # e.g. in a compound statement's header: one expression it is
            empty = f"{xs}.isneginf().all({keep})"
            inner = with_input(site, call, f"{xs}.masked_fill({empty}, 0.0)")
            yield site.replace_all([(call, f"{inner}.masked_fill({empty}, 0.0)"), *also])
        return
    name = site.fresh("empty_rows")
    held = xs if simple else f"({xs})"
    inner = with_input(site, call, f"{held}.masked_fill({name}, 0.0)")
    yield site.insert_before(
        stmt,
        f"{name} = {held}.isneginf().all({keep})  # rows with no key to attend",
        also=[(call, f"{inner}.masked_fill({name}, 0.0)"), *also],
    )


def finite_fills(site: Site) -> list[cst.BaseExpression]:
    """Large finite negative numbers used as "minus infinity": -1e9, -1e4, -1e30,
    torch.finfo(...).min, -torch.finfo(...).max, np.finfo(...).min."""
    out: list[cst.BaseExpression] = []
    for node in site.nodes(cst.BaseExpression):
        value = number(node)
        if value is not None and value <= -1e3 and value != float("-inf"):
            if not isinstance(site.parent(node), cst.UnaryOperation):
                out.append(node)
            continue
        if isinstance(node, cst.Attribute) and node.attr.value == "min" and _is_finfo(node.value):
            out.append(node)
        elif (
            isinstance(node, cst.UnaryOperation)
            and isinstance(node.operator, cst.Minus)
            and isinstance(node.expression, cst.Attribute)
            and node.expression.attr.value == "max"
            and _is_finfo(node.expression.value)
        ):
            out.append(node)
    return out


def _is_finfo(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and callee(node) == "finfo"


def neg_inf(site: Site, numpy: bool) -> str:
    return f"-{np_name(site)}.inf" if numpy else 'float("-inf")'


def transposed_base(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """`k` of k.transpose(-2, -1), k.transpose(2, 3), k.mT, k.T, k.t(), k.permute(...),
    np.swapaxes(k, ...)."""
    if isinstance(node, cst.Attribute) and node.attr.value in ("mT", "T"):
        return node.value
    if isinstance(node, cst.Call):
        name = callee(node)
        rec = receiver(node)
        if (
            name in ("transpose", "permute", "t", "swapaxes", "movedim")
            and rec is not None
            and not _is_module_path(rec)
        ):
            if cst.Module([]).code_for_node(rec) not in ("np", "numpy"):
                return rec
        if name in ("transpose", "swapaxes") and node.args:
            return node.args[0].value
    return None


def score_products(
    site: Site,
) -> list[tuple[cst.BaseExpression, cst.BaseExpression, cst.BaseExpression]]:
    """(product, q, k) for each q @ k^T the file computes (matmul, @, einsum)."""
    out = []
    for node in site.nodes((cst.BinaryOperation, cst.Call)):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
            k = transposed_base(node.right)
            if k is not None:
                out.append((node, node.left, k))
        elif isinstance(node, cst.Call) and callee(node) in ("matmul", "bmm", "dot"):
            rec = receiver(node)
            operands = [a.value for a in node.args if a.keyword is None]
            if rec is not None and not _is_module_path(rec) and len(operands) == 1:
                operands = [rec, operands[0]]
            if len(operands) == 2:
                k = transposed_base(operands[1])
                if k is not None:
                    out.append((node, operands[0], k))
        elif isinstance(node, cst.Call) and callee(node) == "einsum" and len(node.args) == 3:
            out.append((node, node.args[1].value, node.args[2].value))
    return out


def tensor_names(site: Site, node: cst.CSTNode, names: tuple[str, ...]) -> list[str]:
    """Names from `names` that the function around `node` has (parameters or assignments)."""
    fn = site.function(node)
    have = set(site.params(fn))
    if fn is not None:
        for n in site.nodes(cst.Name):
            if site.function(n) is fn:
                have.add(n.value)
    return [n for n in names if n in have]


def query_key(site: Site, near: cst.CSTNode) -> list[tuple[str, str]]:
    """(query, key) expressions around `near`: the operands of the nearest score product,
    then names that read as queries and keys."""
    out: list[tuple[str, str]] = []
    fn = site.function(near)
    for _, q, k in score_products(site):
        if (
            site.function(q) is fn
            and isinstance(q, cst.Name | cst.Attribute)
            and isinstance(k, cst.Name | cst.Attribute)
        ):
            pair = (site.code(q), site.code(k))
            if pair not in out:
                out.append(pair)
    qs, ks = tensor_names(site, near, QUERY_NAMES), tensor_names(site, near, KEY_NAMES)
    for q in qs[:2]:
        for k in ks[:2]:
            if (q, k) not in out:
                out.append((q, k))
    return out


def key_offsets(site: Site, near: cst.CSTNode) -> list[str]:
    """Expressions for S - L (keys minus queries: how far the first query sits from the first
    key in a bottom-right causal mask), the file's own names first."""
    fn = site.function(near)
    params = site.params(fn)
    scope = set(params)
    if fn is not None:
        scope |= {n.value for n in site.nodes(cst.Name) if site.function(n) is fn}
    out: list[str] = []
    for name in (
        "past_key_values_length",
        "start_pos",
        "past_len",
        "past_length",
        "offset",
        "cache_len",
        "n_past",
        "P",
        "past",
    ):
        if name in scope:
            out.append(name)
    qlen = [
        n
        for n in ("L", "T", "q_len", "tgt_len", "seqlen", "seq_len", "Lq", "n_q", "N", "l", "M")
        if n in scope
    ]
    klen = [
        n
        for n in (
            "S",
            "kv_len",
            "src_len",
            "Lk",
            "S_len",
            "n_k",
            "total_len",
            "key_len",
            "s",
            "n_kv",
        )
        if n in scope
    ]
    for kl in klen[:2]:
        for ql in qlen[:2]:
            out.append(f"{kl} - {ql}")
    for q, k in query_key(site, near)[:3]:
        out.append(f"{k}.shape[-2] - {q}.shape[-2]")
    return list(dict.fromkeys(out))
