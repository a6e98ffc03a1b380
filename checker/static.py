"""Checks made on the candidate's source text in the grading process, without running it:
syntax, entry points, signatures. (Compiling is safe; only executing is not.)"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from attnkata.checker.catalog import Kata
from attnkata.checker.messages import msg
from attnkata.checker.models import Diagnostic, SourceRef


@dataclass(frozen=True)
class Signature:
    name: str
    kind: str  # "function" | "class"
    params: tuple[str, ...]  # for classes: __init__'s parameters without self
    line: int

    def render(self) -> str:
        return f"{self.name}({', '.join(self.params)})"


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef, drop_self: bool) -> tuple[str, ...]:
    a = fn.args
    positional = a.posonlyargs + a.args
    first_default = len(positional) - len(a.defaults)
    names = [p.arg + ("=..." if i >= first_default else "") for i, p in enumerate(positional)]
    if drop_self and names:
        names = names[1:]
    if a.vararg:
        names.append("*" + a.vararg.arg)
    names += [p.arg for p in a.kwonlyargs]
    if a.kwarg:
        names.append("**" + a.kwarg.arg)
    return tuple(names)


def signatures(tree: ast.Module) -> dict[str, Signature]:
    found: dict[str, Signature] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[node.name] = Signature(node.name, "function", _params(node, False), node.lineno)
        elif isinstance(node, ast.ClassDef):
            init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
            params = _params(init, True) if init else ()
            found[node.name] = Signature(node.name, "class", params, node.lineno)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    found.setdefault(t.id, Signature(t.id, "function", (), node.lineno))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                found.setdefault(name, Signature(name, "import", (), node.lineno))
    return found


def check_source(kata: Kata, source: str, lang: str) -> list[Diagnostic]:
    """Diagnostics that stop grading (syntax, missing entry points) or warn (signature)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        line = exc.lineno or 1
        text = (exc.text or "").rstrip("\n")
        return [Diagnostic(
            id="syntax-error", severity="essential",
            title=msg("syntax_error_title", lang),
            explanation=msg("syntax_error", lang, line=line, message=exc.msg),
            source=[SourceRef(line=line, text=text)],
        )]
    found = signatures(tree)
    expected = signatures(ast.parse(kata.skeleton_path.read_text(encoding="utf-8")))
    out: list[Diagnostic] = []
    for name in kata.entry_points:
        want = expected.get(name)
        have = found.get(name)
        if have is None:
            defined = ", ".join(f"`{s.name}`" for s in found.values() if s.kind in ("function", "class")) or "—"
            out.append(Diagnostic(
                id="missing-entry-point", severity="essential",
                title=msg("missing_entry_title", lang, name=name),
                explanation=msg("missing_entry", lang, name=name,
                                kind=want.kind if want else "function", found=defined),
            ))
            continue
        if want and have.kind in ("function", "class") and want.params != have.params:
            missing = [p for p in want.params if p.split("=")[0] not in {h.split("=")[0] for h in have.params}]
            out.append(Diagnostic(
                id="signature-mismatch", severity="actionable" if missing else "informative",
                title=msg("signature_title", lang, name=name),
                explanation=msg("signature", lang, expected=want.render(), found=have.render()),
                source=[SourceRef(line=have.line, text=source.splitlines()[have.line - 1].strip())],
            ))
    return out
