"""Contract repairs: transposing the last two dims of a batch, returning the output (and
only it) in the inputs' dtype, leaving the inputs as they came."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from attnkata.checker.catalog import Kata
from attnkata.checker.fix.site import Candidate, Site, callee, code_of, receiver
from attnkata.checker.fix.templates import template
from attnkata.checker.fix.templates.common import VALUE_NAMES, is_numpy
from attnkata.checker.models import Diagnostic


@template("transpose-2d-on-batched")
def last_two(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    numpy = is_numpy(site, kata.id)
    swap = "swapaxes(-1, -2)" if numpy else "transpose(-2, -1)"
    edits = []
    for node in site.nodes(cst.Attribute, lambda n: n.attr.value == "T"):
        edits.append((node, f"{site.code(node.value)}.{swap}"))
    for call in site.calls("t", "transpose"):
        rec = receiver(call)
        if rec is None:
            continue
        module = code_of(rec) in ("np", "numpy", "torch")
        if module and call.args:
            x = site.code(call.args[0].value)
            if callee(call) == "transpose" and len(call.args) <= 2:
                edits.append((call, f"{x}.{swap}"))
        elif (
            callee(call) == "t"
            or not call.args
            or [code_of(a.value) for a in call.args] in (["0", "1"], ["1", "0"])
        ):
            edits.append((call, f"{site.code(rec)}.{swap}"))
    edits += batched_einsums(site)
    for node, new in edits[:4]:
        yield Candidate(site.replace(node, new), "transpose of the last two dims")
    if len(edits) > 1:
        yield Candidate(site.replace_all(edits), "every transpose over the last two dims")


def _entry_returns(site: Site) -> list[cst.Return]:
    return site.nodes(cst.Return, lambda n: n.value is not None)


@template("returns-attention-weights")
def output_only(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    for ret in _entry_returns(site)[:3]:
        value = ret.value
        if isinstance(value, cst.Tuple) and value.elements:
            first = site.code(value.elements[0].value)
            yield Candidate(site.replace(value, first), "return the output only")
            continue
        values = [
            n.value
            for n in site.nodes(cst.Name, lambda n: n.value in VALUE_NAMES)
            if site.function(n) is site.function(ret)
        ]
        if not values:
            continue
        inside = {n.value for n in _names(value) if isinstance(n, cst.Name)}
        if values[0] in inside:
            continue  # it already weighs the values
        yield Candidate(
            site.replace(value, f"({site.code(value)}) @ {values[0]}"), "return the weighted values"
        )


def _names(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from _names(child)


def _first_tensor(site: Site, fn: cst.FunctionDef | None) -> str | None:
    params = [p for p in site.params(fn) if p not in ("self", "cls")]
    return params[0] if params else None


@template("dtype-not-preserved")
def keep_dtype(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    numpy = is_numpy(site, kata.id)
    for ret in _entry_returns(site)[:4]:
        fn = site.function(ret)
        x = _first_tensor(site, fn)
        if x is None:
            continue
        method = "astype" if numpy else "to"
        value = ret.value
        body = fn.body if fn is not None else None
        if isinstance(body, cst.IndentedBlock) and body.body and not isinstance(value, cst.Tuple):
            # the input itself rebound (q = q.double()): the dtype it came in, kept first
            dtype = site.fresh("in_dtype")
            cast = f"({site.code(value)}).{method}({dtype})"
            yield Candidate(
                site.insert_before(body.body[0], f"{dtype} = {x}.dtype", also=[(value, cast)]),
                f"output cast to the dtype {x} came in",
            )
        if isinstance(value, cst.Tuple):
            pairs = [
                (e.value, f"{site.code(e.value)}.{method}({x}.dtype)")
                for e in value.elements
                if not isinstance(e.value, cst.Tuple)
            ]
            yield Candidate(site.replace_all(pairs), f"every output cast to {x}.dtype")
        else:
            yield Candidate(
                site.replace(value, f"{site.code(value)}.{method}({x}.dtype)"),
                f"output cast to {x}.dtype",
            )


@template("input-mutated")
def copy_inputs(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """Work on a copy of each input the function writes into (one line, at its top)."""
    numpy = is_numpy(site, kata.id)
    copy = "copy" if numpy else "clone"
    for fn in site.functions()[:4]:
        params = [p for p in site.params(fn) if p not in ("self", "cls")]
        written = [p for p in params if _written(site, fn, p)]
        if not written:
            continue
        body = fn.body
        if not isinstance(body, cst.IndentedBlock) or not body.body:
            continue
        first = body.body[0]
        if _is_docstring(first) and len(body.body) > 1:
            first = body.body[1]
        lines = "\n".join(f"{p} = None if {p} is None else {p}.{copy}()" for p in written)
        yield Candidate(site.insert_before(first, lines), f"work on copies of {', '.join(written)}")


def _written(site: Site, fn: cst.FunctionDef, name: str) -> bool:
    for node in site.nodes((cst.AugAssign, cst.Call, cst.Assign)):
        if site.function(node) is not fn:
            continue
        if isinstance(node, cst.AugAssign) and _base_name(node.target) == name:
            return True
        if (
            isinstance(node, cst.Call)
            and (callee(node) or "").endswith("_")
            and not (callee(node) or "").startswith("_")
        ):
            rec = receiver(node)
            if rec is not None and _base_name(rec) == name:
                return True
        if isinstance(node, cst.Assign) and any(
            isinstance(t.target, cst.Subscript) and _base_name(t.target) == name
            for t in node.targets
        ):
            return True
    return False


def _base_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, cst.Subscript | cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, cst.SimpleString | cst.ConcatenatedString)
    )


def batched_einsums(site: Site) -> list[tuple[cst.CSTNode, str]]:
    """An einsum of 2-D inputs ("id,jd->ij") that also takes leading batch dims
    ("...id,...jd->...ij")."""
    edits: list[tuple[cst.CSTNode, str]] = []
    for call in site.calls("einsum"):
        if call.args and isinstance(call.args[0].value, cst.SimpleString):
            spec = call.args[0].value.evaluated_value
            if "..." not in spec and "->" in spec:
                ins, out = spec.replace(" ", "").split("->")
                new = ",".join("..." + p for p in ins.split(",")) + "->..." + out
                edits.append((call.args[0].value, repr(new)))
    return edits
