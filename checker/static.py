"""Checks made on the candidate's source text in the grading process, without running it:
size, syntax, nesting, entry points, signatures and the import/API policy (`policy.py`).
(Parsing is safe; only executing is not. Parsing hostile text is bounded here: a file too
large or too deeply nested is a verdict, never a crash of the grading process.)"""

from __future__ import annotations

import ast
import codecs
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from attnkata.checker import policy as policy_rules
from attnkata.checker.catalog import Kata
from attnkata.checker.errors import UsageError
from attnkata.checker.messages import msg
from attnkata.checker.models import ERROR, FAIL, Diagnostic, SourceRef

MAX_SOURCE_BYTES = 1 << 20  # 1 MiB
MAX_AST_DEPTH = 200  # real solutions stay under 20
# Diagnostics after which the file is not run.
STOPPING_IDS = (
    "syntax-error",
    "missing-entry-point",
    "source-too-complex",
    "source-too-large",
    "source-encoding",
)
# PEP 263's encoding declaration, on line 1 or 2.
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)
# SyntaxErrors that are the parser's own limits, not a typo.
_LIMIT_MESSAGES = (
    "too many nested parentheses",
    "too many levels of indentation",
    "too many statically nested blocks",
    "too many nested blocks",
)


class SourceTooComplex(Exception):
    """The source nests deeper than the parser (or MAX_AST_DEPTH) allows; `key` and `params`
    are the reason, a message of messages.py."""

    def __init__(self, key: str, line: int | None = None, **params: object) -> None:
        super().__init__(key)
        self.key = key
        self.line = line
        self.params = params

    def reason(self, lang: str) -> str:
        return msg(self.key, lang, **self.params)


def tree_depth(tree: ast.AST) -> int:
    """The deepest nesting of the tree (iterative: no recursion on hostile input)."""
    deepest = 0
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def parse_bounded(source: str) -> ast.Module:
    """`ast.parse`, bounded: SyntaxError for a plain syntax error, SourceTooComplex where the
    parser runs out of stack (RecursionError, MemoryError) or hits a nesting limit, or the
    tree nests deeper than MAX_AST_DEPTH."""
    try:
        tree = ast.parse(source)
    except (RecursionError, MemoryError):
        raise SourceTooComplex("too_complex_stack") from None
    except SyntaxError as exc:
        if any(m in (exc.msg or "") for m in _LIMIT_MESSAGES):
            raise SourceTooComplex("too_complex_parser", exc.lineno, message=exc.msg) from None
        raise
    except ValueError as exc:  # e.g. null bytes, on Pythons that raise ValueError for them
        raise SyntaxError(str(exc)) from None
    depth = tree_depth(tree)
    if depth > MAX_AST_DEPTH:
        raise SourceTooComplex("too_complex_depth", depth=depth, limit=MAX_AST_DEPTH)
    return tree


def too_large(size: int, lang: str) -> Diagnostic:
    return Diagnostic(
        id="source-too-large",
        severity="essential",
        title=msg("too_large_title", lang),
        explanation=msg("too_large", lang, size=size, limit=MAX_SOURCE_BYTES),
    )


def require_file(kata: Kata, path: Path, lang: str) -> None:
    """A usage error (exit 2) when `path` is a folder or no file: the one check `kata check`
    and `kata watch` share."""
    if path.is_dir():
        raise UsageError(
            msg("file_is_directory", lang, path=path),
            msg("file_is_directory_hint", lang, path=path, file=kata.solution_file),
        )
    if not path.is_file():
        raise UsageError(
            msg("file_not_found", lang, path=path), msg("file_not_found_hint", lang, kata=kata.id)
        )


def read_source(path: Path, lang: str) -> tuple[str, list[Diagnostic]]:
    """The candidate's file as text (a UTF-8 byte-order mark is dropped), or ("", [verdict])
    for a file too large to grade, which is not read. Raises UsageError when it is not UTF-8."""
    size = path.stat().st_size
    if size > MAX_SOURCE_BYTES:
        return "", [too_large(size, lang)]
    try:
        source = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text") from None
    declared = foreign_encoding(source)
    if declared is not None:
        return "", [
            Diagnostic(
                id="source-encoding",
                severity="essential",
                title=msg("encoding_title", lang),
                explanation=msg("encoding", lang, line=declared[0], name=declared[1]),
            )
        ]
    return source, []


def foreign_encoding(source: str) -> tuple[int, str] | None:
    """(line, name) of an encoding declaration other than UTF-8. Graders read the file as UTF-8
    and the sandbox compiles that same text; Python's importer would decode by the
    declaration instead (under utf-7, a comment can hide code), so such a file is not run."""
    for number, line in enumerate(source.splitlines()[:2], start=1):
        m = _CODING.match(line)
        if m is None:
            continue
        try:
            canonical = codecs.lookup(m.group(1)).name
        except LookupError:
            canonical = m.group(1)
        return None if canonical == "utf-8" else (number, m.group(1)[:40])
    return None


def stop_status(diags: list[Diagnostic]) -> str | None:
    """The status of a file that must not run (error: unparsable or incomplete; fail: refused
    by the enforced policy), or None when it may be graded."""
    if any(d.id in STOPPING_IDS for d in diags):
        return ERROR
    if any(d.id in policy_rules.POLICY_IDS and d.is_error for d in diags):
        return FAIL
    return None


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
            init = next(
                (n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"),
                None,
            )
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


def check_source(
    kata: Kata, source: str, lang: str, *, policy: str = "warn", allow_imports: Iterable[str] = ()
) -> list[Diagnostic]:
    """Diagnostics that stop grading (size, syntax, nesting, missing entry points; with
    `policy="enforce"` the policy's findings) or warn (signature; the policy by default).
    `allow_imports`: modules the policy accepts beyond its allowlist."""
    policy_rules.check_mode(policy)
    size = len(source.encode("utf-8", errors="replace"))
    if size > MAX_SOURCE_BYTES:
        return [too_large(size, lang)]
    try:
        tree = parse_bounded(source)
    except SourceTooComplex as exc:
        # Point at the line only when it is short enough to show (not a 100 000-paren line).
        text = _line(source, exc.line) if exc.line else ""
        return [
            Diagnostic(
                id="source-too-complex",
                severity="essential",
                title=msg("too_complex_title", lang),
                explanation=msg("too_complex", lang, reason=exc.reason(lang)),
                source=[SourceRef(line=exc.line, text=text)]
                if exc.line and len(text) < 200
                else [],
            )
        ]
    except SyntaxError as exc:
        line = exc.lineno or 1
        text = (exc.text or "").rstrip("\n")[:200]
        return [
            Diagnostic(
                id="syntax-error",
                severity="essential",
                title=msg("syntax_error_title", lang),
                explanation=msg("syntax_error", lang, line=line, message=exc.msg),
                source=[SourceRef(line=line, text=text)],
            )
        ]
    found = signatures(tree)
    expected = signatures(ast.parse(kata.skeleton_path.read_text(encoding="utf-8")))
    out: list[Diagnostic] = []
    for name in kata.entry_points:
        want = expected.get(name)
        have = found.get(name)
        if have is None:
            defined = (
                ", ".join(f"`{s.name}`" for s in found.values() if s.kind in ("function", "class"))
                or "—"
            )
            out.append(
                Diagnostic(
                    id="missing-entry-point",
                    severity="essential",
                    title=msg("missing_entry_title", lang, name=name),
                    explanation=msg(
                        "missing_entry",
                        lang,
                        name=name,
                        kind=want.kind if want else "function",
                        found=defined,
                    ),
                )
            )
            continue
        if want and have.kind in ("function", "class") and want.params != have.params:
            missing = [
                p
                for p in want.params
                if p.split("=")[0] not in {h.split("=")[0] for h in have.params}
            ]
            out.append(
                Diagnostic(
                    id="signature-mismatch",
                    severity="actionable" if missing else "informative",
                    title=msg("signature_title", lang, name=name),
                    explanation=msg("signature", lang, expected=want.render(), found=have.render()),
                    source=[
                        SourceRef(line=have.line, text=source.splitlines()[have.line - 1].strip())
                    ],
                )
            )
    findings = policy_rules.scan(tree, allow_imports, review=True, **policy_rules.kata_rules(kata))
    out += policy_rules.diagnostics(
        findings, source.splitlines(), lang, mode=policy, kata_id=kata.id
    )
    return out


def _line(source: str, line: int) -> str:
    lines = source.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""
