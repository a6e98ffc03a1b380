"""Module repairs: how the KV heads are shared, how heads are split and merged, the layers a
forward forgets, dropout left on."""

from __future__ import annotations

import re
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
from attnkata.checker.fix.templates.common import VALUE_NAMES, score_products
from attnkata.checker.fix.templates.scale import head_dims, scope_names
from attnkata.checker.models import Diagnostic


# -- sharing the KV heads ---------------------------------------------------------------------
def _tiles(site: Site) -> Iterator[tuple[cst.BaseExpression, str, str, str]]:
    """(expression, tensor, count, dim) for each way of tiling heads: x.repeat(1, g, 1, 1),
    torch.tile(x, (1, g, 1, 1)), torch.cat([x] * g, dim=1), x[:, None].expand(..).reshape(..),
    einops.repeat(x, "b h s d -> b (g h) s d", g=g)."""
    for call in site.calls(
        "repeat", "tile", "cat", "concat", "concatenate", "reshape", "view", "flatten"
    ):
        name = callee(call)
        rec = receiver(call)
        own = rec is not None and code_of(rec) not in ("torch", "np", "numpy", "einops")
        if name in ("repeat", "tile"):
            if not own and call.args and isinstance(call.args[0].value, cst.SimpleString):
                continue
            if own and name == "repeat":
                x, counts = rec, [a.value for a in call.args if a.keyword is None]
                if len(counts) == 1 and isinstance(counts[0], cst.Tuple):
                    counts = [e.value for e in counts[0].elements]
            else:
                x = rec if own else (call.args[0].value if call.args else None)
                reps = arg(call, 0 if own else 1, "dims", "reps")
                counts = (
                    [e.value for e in reps.value.elements]
                    if reps and isinstance(reps.value, cst.Tuple | cst.List)
                    else []
                )
            many = [(i, c) for i, c in enumerate(counts) if number(c) != 1.0]
            if x is not None and len(many) == 1 and len(counts) >= 3:
                yield call, site.code(x), site.code(many[0][1]), str(many[0][0])
        elif name in ("cat", "concat", "concatenate") and call.args:
            first = call.args[0].value
            dim = arg(call, 1, "dim", "axis")
            if (
                isinstance(first, cst.BinaryOperation)
                and isinstance(first.operator, cst.Multiply)
                and isinstance(first.left, cst.List)
            ):
                elems = first.left.elements
                if len(elems) == 1 and dim is not None:
                    yield (
                        call,
                        site.code(elems[0].value),
                        site.code(first.right),
                        site.code(dim.value),
                    )
            elif isinstance(first, cst.List | cst.Tuple) and dim is not None:
                codes = {site.code(e.value) for e in first.elements}
                if len(codes) == 1 and len(first.elements) > 1:
                    yield call, codes.pop(), str(len(first.elements)), site.code(dim.value)
            elif isinstance(first, cst.ListComp) and dim is not None:
                comp = first.for_in
                if (
                    isinstance(comp.iter, cst.Call)
                    and callee(comp.iter) == "range"
                    and comp.iter.args
                ):
                    yield (
                        call,
                        site.code(first.elt),
                        site.code(comp.iter.args[0].value),
                        site.code(dim.value),
                    )
        elif name in ("reshape", "view", "flatten") and own:
            exp = rec
            if not (
                isinstance(exp, cst.Call) and callee(exp) == "expand" and receiver(exp) is not None
            ):
                continue
            base = receiver(exp)
            sizes = [a.value for a in exp.args if a.keyword is None]
            at: int | None = None
            if isinstance(base, cst.Subscript):
                idx = [
                    i
                    for i, e in enumerate(base.slice)
                    if isinstance(e.slice, cst.Index) and code_of(e.slice.value) == "None"
                ]
                if len(idx) == 1:
                    at, x = idx[0], base.value
            elif (
                isinstance(base, cst.Call)
                and callee(base) == "unsqueeze"
                and receiver(base) is not None
                and base.args
            ):
                pos = number(base.args[0].value)
                if pos is not None and pos >= 0:
                    at, x = int(pos), receiver(base)
            if at is not None and at < len(sizes):
                yield call, site.code(x), site.code(sizes[at]), str(at)
    for call in site.calls("repeat"):
        if call.args and isinstance(
            call.args[1].value if len(call.args) > 1 else None, cst.SimpleString
        ):
            pattern = call.args[1].value
            swapped = _swap_groups(
                pattern.evaluated_value if isinstance(pattern, cst.SimpleString) else ""
            )
            if swapped:
                yield pattern, "", repr(swapped), "einops"


def _swap_groups(pattern: str) -> str | None:
    """ "b h s d -> b (r h) s d" -> "b h s d -> b (h r) s d"."""
    if "->" not in pattern:
        return None
    left, right = pattern.split("->", 1)
    new = re.sub(r"\((\w+)\s+(\w+)\)", r"(\2 \1)", right)
    return f"{left}->{new}" if new != right else None


@template("kv-repeat-instead-of-interleave")
def interleave(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    found = list(_tiles(site))
    edits = []
    for node, x, count, dim in found:
        if dim == "einops":
            edits.append((node, count))
        else:
            edits.append((node, f"{x}.repeat_interleave({count}, dim={dim})"))
    if len(edits) > 1:
        yield Candidate(site.replace_all(edits[:2]), "repeat_interleave for K and V")
    for node, new in edits[:3]:
        yield Candidate(site.replace(node, new), "repeat_interleave")


@template("kv-heads-not-expanded")
def expand_heads(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """K and V keep their Hkv heads into the score product: give each query head its KV head."""
    for prod, q, k in score_products(site)[:2]:
        stmt = site.statement(prod)
        if stmt is None or not isinstance(k, cst.Name):
            continue
        qs, ks = site.code(q), k.value
        values = [
            n.value
            for n in site.nodes(cst.Name, lambda n: n.value in VALUE_NAMES)
            if site.function(n) is site.function(prod)
        ]
        lines = [f"{ks} = {ks}.repeat_interleave({qs}.shape[1] // {ks}.shape[1], dim=1)"]
        if values:
            v = values[0]
            lines.append(f"{v} = {v}.repeat_interleave({qs}.shape[1] // {v}.shape[1], dim=1)")
        yield Candidate(
            site.insert_before(stmt, "\n".join(lines)), "K and V repeated to the query heads"
        )


@template("kv-projection-wrong-size")
def kv_projection(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    linears = [
        c
        for c in site.calls("Linear")
        if (s := site.statement(c)) is not None
        and re.search(
            r"(^|\.|_)(k|v|wk|wv|key|value|to_k|to_v|W_k|W_v)(_proj)?\s*=", code_of(s).strip()
        )
    ]
    if not linears:
        return
    fn = site.function(linears[0])
    params = site.params(fn)
    kv = [p for p in params if "kv" in p.lower()]
    hds = head_dims(site, linears[0])
    sizes = [f"{k} * {h}" for k in kv[:1] for h in hds[:2]] if kv else hds[:2]
    for size in sizes:
        pairs = [(c.args[1].value, size) for c in linears if len(c.args) > 1]
        yield Candidate(site.replace_all(pairs), f"K/V projections sized {size}")


# -- splitting and merging heads ----------------------------------------------------------------
@template("split-heads-without-transpose")
def split_heads(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """x.view(B, H, L, d) mixes tokens and heads: view(B, L, H, d).transpose(1, 2)."""
    views = site.calls("view", "reshape")
    fours = [
        c
        for c in views
        if len([a for a in c.args if a.keyword is None]) == 4 and receiver(c) is not None
    ]
    edits = []
    for call in fours[:4]:
        a = call.args
        new = code_of(
            call.with_changes(
                args=[
                    a[0],
                    a[2].with_changes(comma=a[1].comma),
                    a[1].with_changes(comma=a[2].comma),
                    a[3],
                ]
            )
        )
        edits.append((call, f"{new}.transpose(1, 2)"))
    if len(edits) > 1:
        yield Candidate(
            site.replace_all(edits), "every projection split as (B, L, H, d), then transposed"
        )
    for call, new in edits:
        yield Candidate(site.replace(call, new), "split as (B, L, H, d), then transposed")


@template("merge-heads-without-transpose")
def merge_heads(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """(B, H, L, d) reshaped straight to (B, L, D): transpose the heads back first."""
    for call in site.calls("view", "reshape")[:4]:
        rec = receiver(call)
        positional = [a for a in call.args if a.keyword is None]
        if rec is None or len(positional) != 3:
            continue
        contiguous = ".contiguous()" if callee(call) == "view" else ""
        yield Candidate(
            site.replace(rec, f"{site.code(rec)}.transpose(1, 2){contiguous}"),
            "heads transposed back before merging",
        )


@template("missing-contiguous")
def contiguous(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    for call in site.calls("view")[:4]:
        rec = receiver(call)
        if isinstance(rec, cst.Call) and callee(rec) in (
            "transpose",
            "permute",
            "movedim",
            "swapaxes",
        ):
            yield Candidate(
                site.replace(rec, f"{site.code(rec)}.contiguous()"), ".contiguous() before .view"
            )
            yield Candidate(
                site.replace(call.func, f"{site.code(rec)}.reshape"), ".reshape instead of .view"
            )


# -- layers the forward forgets -----------------------------------------------------------------
def _layers(site: Site) -> dict[str, cst.Call]:
    """self.<name> = nn.<Layer>(...) in __init__."""
    out: dict[str, cst.Call] = {}
    for asg in site.nodes(cst.Assign):
        fn = site.function(asg)
        if fn is None or fn.name.value != "__init__" or not isinstance(asg.value, cst.Call):
            continue
        for t in asg.targets:
            target = t.target
            if (
                isinstance(target, cst.Attribute)
                and isinstance(target.value, cst.Name)
                and target.value.value == "self"
            ):
                out[target.attr.value] = asg.value
    return out


def _unused_layers(site: Site, kinds: tuple[str, ...]) -> list[str]:
    uses: dict[str, int] = {}
    for a in site.nodes(
        cst.Attribute, lambda n: isinstance(n.value, cst.Name) and n.value.value == "self"
    ):
        fn = site.function(a)
        if fn is not None and fn.name.value != "__init__":
            uses[a.attr.value] = uses.get(a.attr.value, 0) + 1
    return [
        name for name, call in _layers(site).items() if callee(call) in kinds and not uses.get(name)
    ]


@template("missing-output-projection")
def output_projection(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    unused = _unused_layers(site, ("Linear",))
    forwards = [
        r
        for r in site.nodes(cst.Return, lambda n: n.value is not None)
        if (f := site.function(r)) is not None and f.name.value == "forward"
    ]
    for name in unused[:2]:
        for ret in forwards[:2]:
            yield Candidate(
                site.replace(ret.value, f"self.{name}({site.code(ret.value)})"),
                f"self.{name} applied to the output",
            )


@template("mla-missing-kv-norm", "mla-cache-unnormalized")
def missing_norm(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    unused = _unused_layers(site, ("RMSNorm", "LayerNorm", "Norm"))
    norms = unused or [
        n for n, c in _layers(site).items() if callee(c) in ("RMSNorm", "LayerNorm") and "kv" in n
    ]
    targets = site.calls("kv_b_proj", "wkv_b") + site.calls("cat")
    for name in norms[:2]:
        for call in targets[:3]:
            if call.args:
                x = call.args[0].value
                if isinstance(x, cst.List):
                    continue
                yield Candidate(
                    site.replace(x, f"self.{name}({site.code(x)})"), f"self.{name} applied"
                )


@template("dropout-in-eval", "nondeterministic-output")
def dropout_off(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    for call in site.calls("dropout")[:3]:
        rec = receiver(call)
        if rec is None or code_of(rec) not in (
            "F",
            "nn.functional",
            "torch.nn.functional",
            "torch",
            "functional",
        ):
            continue
        fn = site.function(call)
        in_module = fn is not None and "self" in site.params(fn)
        if in_module and d.id == "dropout-in-eval":
            yield Candidate(
                site.replace(call, with_kwarg(call, "training", "self.training")),
                "dropout only in training",
            )
        if call.args:
            yield Candidate(site.replace(call, site.code(call.args[0].value)), "no dropout")


# for shapes.py
names_in_scope = scope_names


# -- per-head layouts -----------------------------------------------------------------------------
@template("mla-kv-b-split-global", "mla-absorb-wrong-slice")
def split_per_head(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """[H * nope, H * v] split as two blocks, though the rows (or features) go head by head,
    each head's nope part then its v part: split each head instead."""
    for call in site.calls("split"):
        rec = receiver(call)
        module = rec is not None and code_of(rec) == "torch"
        x = (call.args[0].value if call.args else None) if module or rec is None else rec
        sizes = arg(call, 1 if module else 0, "split_size_or_sections", "split_size")
        dim = arg(call, 2 if module else 1, "dim")
        if x is None or sizes is None or not isinstance(sizes.value, cst.List | cst.Tuple):
            continue
        parts = [e.value for e in sizes.value.elements]
        if len(parts) != 2 or not all(
            isinstance(p, cst.BinaryOperation) and isinstance(p.operator, cst.Multiply)
            for p in parts
        ):
            continue
        heads = {site.code(parts[0].left), site.code(parts[1].left)}
        if len(heads) != 1:
            continue
        h = heads.pop()
        a, b = site.code(parts[0].right), site.code(parts[1].right)
        d0 = code_of(dim.value) if dim is not None else "0"
        d1 = d0 if d0.startswith("-") else str(int(d0) + 1) if d0.isdigit() else f"{d0} + 1"
        new = f"{site.code(x)}.unflatten({d0}, ({h}, -1)).split([{a}, {b}], dim={d1})"
        yield Candidate(site.replace(call, new), "split head by head")
