"""The candidate's file as the repair templates see it: parsed once with libcst (which keeps
every comment, blank line and quote of the original), the lines the diagnosis points at,
and the edits a template makes, each returned as the whole new source.

Templates find nodes *near* the diagnosis' lines first (`Site.near`): the statement it
points at, then the lines around it, then the rest of the file (a diagnosis may point
nowhere, e.g. a mistake no source rule locates).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

N = TypeVar("N", bound=cst.CSTNode)


@dataclass(frozen=True)
class Candidate:
    """One proposed repair: the whole edited file and what the template did (for --debug)."""

    source: str
    label: str


def callee(node: cst.CSTNode) -> str | None:
    """The called name of a Call: `softmax` for F.softmax(...), torch.softmax(...), x.softmax()."""
    if not isinstance(node, cst.Call):
        return None
    func = node.func
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def receiver(call: cst.Call) -> cst.BaseExpression | None:
    """`x` of a method call `x.f(...)`; None for a plain function call."""
    return call.func.value if isinstance(call.func, cst.Attribute) else None


def arg(call: cst.Call, position: int | None, *keywords: str) -> cst.Arg | None:
    """The argument given by keyword (any of `keywords`) or at `position` (positional only)."""
    for a in call.args:
        if a.keyword is not None and a.keyword.value in keywords:
            return a
    if position is not None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if position < len(positional):
            return positional[position]
    return None


def number(node: cst.CSTNode | None) -> float | None:
    """The value of a numeric literal (`-1e9`, `10000.0`, `-(1e4)`, `float('-inf')`), else None."""
    if isinstance(node, cst.Integer | cst.Float):
        try:
            return float(node.evaluated_value)
        except (ValueError, OverflowError):
            return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = number(node.expression)
        return None if inner is None else -inner
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value == "float"
        and len(node.args) == 1
        and isinstance(node.args[0].value, cst.SimpleString)
    ):
        try:
            return float(node.args[0].value.evaluated_value)
        except ValueError:
            return None
    return None


class Site:
    """The parsed source, its positions and parents, and the diagnosis' target lines."""

    def __init__(self, source: str, lines: Iterable[tuple[int, int]] = ()) -> None:
        self.source = source
        self.module = cst.parse_module(source)
        wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        self.positions = wrapper.resolve(PositionProvider)
        self.parents = wrapper.resolve(ParentNodeProvider)
        self.targets = sorted(set(lines))
        self.order = {node: i for i, node in enumerate(self.positions)}
        self._names: set[str] | None = None

    # -- reading ----------------------------------------------------------------------------
    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def span(self, node: cst.CSTNode) -> tuple[int, int]:
        pos = self.positions[node]
        return pos.start.line, pos.end.line

    def distance(self, node: cst.CSTNode) -> int:
        """0 on a target line; else the number of lines to the nearest one (no target: 0)."""
        if not self.targets:
            return 0
        lo, hi = self.span(node)
        return min(max(0, a - hi, lo - b) for a, b in self.targets)

    def nodes(
        self, kind: type[N] | tuple[type, ...], where: Callable[[Any], bool] | None = None
    ) -> list[N]:
        """Every node of `kind` (matching `where`), nearest to the target lines first, then in
        file order."""
        found = [n for n in self.positions if isinstance(n, kind) and (where is None or where(n))]
        return sorted(found, key=lambda n: (self.distance(n), self.order[n]))

    def calls(self, *names: str) -> list[cst.Call]:
        return self.nodes(cst.Call, lambda n: callee(n) in names)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        cur = self.parents.get(node)
        while cur is not None:
            yield cur
            cur = self.parents.get(cur)

    def statement(self, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
        """The simple statement line holding `node` (None inside a compound header)."""
        if isinstance(node, cst.SimpleStatementLine):
            return node
        return next(
            (a for a in self.ancestors(node) if isinstance(a, cst.SimpleStatementLine)), None
        )

    def function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        return next((a for a in self.ancestors(node) if isinstance(a, cst.FunctionDef)), None)

    def functions(self) -> list[cst.FunctionDef]:
        return self.nodes(cst.FunctionDef)

    def params(self, fn: cst.FunctionDef | None) -> list[str]:
        if fn is None:
            return []
        ps = fn.params
        every = [*ps.posonly_params, *ps.params, *ps.kwonly_params]
        return [p.name.value for p in every]

    def names(self) -> set[str]:
        if self._names is None:
            self._names = {n.value for n in self.positions if isinstance(n, cst.Name)}
        return self._names

    def fresh(self, base: str) -> str:
        """`base`, or `base_2`, ... : a name the file does not use."""
        name, n = base, 1
        while name in self.names():
            n += 1
            name = f"{base}_{n}"
        self.names().add(name)
        return name

    def imports(self, module: str) -> str | None:
        """The name `module` is imported as (`np` for `import numpy as np`), if it is."""
        for node in self.positions:
            if isinstance(node, cst.Import):
                for alias in node.names:
                    if self.code(alias.name) == module:
                        return alias.asname.name.value if alias.asname else module.split(".")[0]
        return None

    def assigned(self, name: str, before: cst.CSTNode | None = None) -> list[cst.Assign]:
        """Assignments `name = ...` (in the function of `before`, when given), in file order."""
        scope = self.function(before) if before is not None else None
        out = []
        for n in self.positions:
            if not isinstance(n, cst.Assign):
                continue
            if scope is not None and self.function(n) is not scope:
                continue
            for t in n.targets:
                if self.code(t.target).strip() == name:
                    out.append(n)
        return sorted(out, key=lambda a: self.order[a])

    # -- writing ----------------------------------------------------------------------------
    def replace(self, node: cst.CSTNode, new: str | cst.CSTNode) -> str:
        """The source with `node` replaced by `new` (an expression's code, or a node)."""
        return self.replace_all([(node, new)])

    def replace_all(self, pairs: Sequence[tuple[cst.CSTNode, str | cst.CSTNode]]) -> str:
        edits: dict[int, Callable[[cst.CSTNode], Any]] = {}
        for old, new in pairs:
            node = self.parse_for(old, new) if isinstance(new, str) else new
            edits[id(old)] = lambda _updated, node=node: node
        return self._apply(edits)

    def parse_for(self, old: cst.CSTNode, code: str) -> cst.CSTNode:
        """`code` parsed to stand where `old` stands: an operation put inside another
        operation keeps its meaning (parentheses), and `old`'s own parentheses stay."""
        new = _parse_like(old, code)
        if isinstance(old, cst.BaseExpression) and isinstance(new, cst.BaseExpression):
            if old.lpar:
                new = new.with_changes(lpar=old.lpar, rpar=old.rpar)
            elif isinstance(new, _LOOSE) and isinstance(self.parent(old), _TIGHT):
                new = new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return new

    def insert_before(
        self, stmt: cst.CSTNode, code: str, also: Sequence[tuple[cst.CSTNode, str]] = ()
    ) -> str:
        """The source with statement(s) `code` put just before `stmt` (after the comments that
        lead it), and the replacements `also` made at the same time."""
        line = self.statement(stmt) or stmt
        new_stmts = list(cst.parse_module(_dedent(code)).body)
        if not new_stmts:
            return self.source
        edits: dict[int, Callable[[cst.CSTNode], Any]] = {}
        for old, new in also:
            node = self.parse_for(old, new)
            edits[id(old)] = lambda _updated, node=node: node

        def put(updated: cst.CSTNode) -> Any:
            first = new_stmts[0].with_changes(leading_lines=getattr(updated, "leading_lines", ()))
            rest = (
                updated.with_changes(leading_lines=[])
                if hasattr(updated, "leading_lines")
                else updated
            )
            return cst.FlattenSentinel([first, *new_stmts[1:], rest])

        edits[id(line)] = put
        return self._apply(edits)

    def insert_after(
        self, stmt: cst.CSTNode, code: str, also: Sequence[tuple[cst.CSTNode, str]] = ()
    ) -> str:
        """The source with statement(s) `code` put just after `stmt` (a simple statement's
        line, or a whole compound statement), and the replacements `also` made too."""
        line = self.statement(stmt) or stmt
        new_stmts = list(cst.parse_module(_dedent(code)).body)
        edits: dict[int, Callable[[cst.CSTNode], Any]] = {}
        for old, new in also:
            node = self.parse_for(old, new)
            edits[id(old)] = lambda _updated, node=node: node
        edits[id(line)] = lambda updated: cst.FlattenSentinel([updated, *new_stmts])
        return self._apply(edits)

    def remove(self, stmt: cst.CSTNode) -> str:
        line = self.statement(stmt) or stmt
        return self._apply({id(line): lambda _updated: cst.RemovalSentinel.REMOVE})

    def _apply(self, edits: dict[int, Callable[[cst.CSTNode], Any]]) -> str:
        """One pass over the original tree: each node in `edits` (by identity) is replaced by
        what its function makes of it, after the edits inside it were made."""
        return self.module.visit(_Edits(edits)).code


class _Edits(cst.CSTTransformer):
    def __init__(self, edits: dict[int, Callable[[cst.CSTNode], Any]]) -> None:
        super().__init__()
        self.edits = edits

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        edit = self.edits.get(id(original_node))
        return edit(updated_node) if edit is not None else updated_node


# Expressions that bind more loosely than the operations they may be put into.
_LOOSE = (
    cst.BinaryOperation,
    cst.UnaryOperation,
    cst.Comparison,
    cst.BooleanOperation,
    cst.IfExp,
    cst.Lambda,
    cst.NamedExpr,
)
_TIGHT = (
    cst.BinaryOperation,
    cst.UnaryOperation,
    cst.Comparison,
    cst.BooleanOperation,
    cst.Attribute,
    cst.Subscript,
    cst.Call,
    cst.Await,
)


def _dedent(code: str) -> str:
    lines = code.strip("\n").splitlines()
    indent = min((len(ln) - len(ln.lstrip()) for ln in lines if ln.strip()), default=0)
    return "\n".join(ln[indent:] for ln in lines) + "\n"


def _parse_like(old: cst.CSTNode, code: str) -> cst.CSTNode:
    """Parse `code` as the kind of node it replaces (an expression, or a statement)."""
    if isinstance(old, cst.BaseExpression):
        return cst.parse_expression(code)
    if isinstance(old, cst.SimpleStatementLine | cst.BaseSmallStatement):
        stmt = cst.parse_statement(_dedent(code))
        if isinstance(old, cst.SimpleStatementLine):
            return stmt.with_changes(leading_lines=old.leading_lines)
        assert isinstance(stmt, cst.SimpleStatementLine)
        return stmt.body[0]
    if isinstance(old, cst.Arg):
        call = cst.parse_expression(f"f({code})")
        assert isinstance(call, cst.Call)
        return call.args[0].with_changes(comma=old.comma)
    raise TypeError(f"cannot parse a replacement for {type(old).__name__}")


def with_kwarg(call: cst.Call, name: str, value: str) -> cst.Call:
    """`call` with keyword `name=value` (replacing an existing one)."""
    new = cst.Arg(
        value=cst.parse_expression(value),
        keyword=cst.Name(name),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )
    args = list(call.args)
    for i, a in enumerate(args):
        if a.keyword is not None and a.keyword.value == name:
            args[i] = a.with_changes(value=new.value)
            return call.with_changes(args=args)
    if args and isinstance(args[-1].comma, cst.Comma):
        new = new.with_changes(comma=args[-1].comma)
        args[-1] = args[-1].with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
    return call.with_changes(args=[*args, new])


def code_of(node: cst.CSTNode) -> str:
    """The code of a node outside any module (its default formatting where it has none)."""
    return cst.Module([]).code_for_node(node)
