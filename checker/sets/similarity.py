"""Copy detection for a class: pairs of submissions of one kata that are the same program up to
renamed identifiers, reordered independent statements, comments and formatting.

1. Normalise the AST: docstrings dropped; every name the file defines (variables, arguments,
   functions, classes, imports' aliases) becomes `V`, while library names and attributes
   (`torch`, `.softmax`) stay; in every block, statements that do not depend on each other are
   put in one canonical order (a topological order of the data dependencies, ties broken by
   the normalised text), so swapping them changes nothing.
2. Fingerprint the token stream: hashes of k-grams, winnowed (the minimum of each window of
   w hashes, as MOSS does), each remembering its source lines. The skeleton every student
   starts from is subtracted (its fingerprints are shared by design).
3. Similarity of two files: the Dice coefficient of their fingerprint sets.

Per-student variants (`kata set create --variants`) hand out the same kata in other
conventions, so a copy is adapted rather than renamed: its axes moved at the boundary, its
masks inverted, its layers renamed. Before step 1 those conventions are normalised away: a
call that only moves axes (`x.transpose(1, 2)`, `.contiguous()`, `np.swapaxes`) is its
argument, a logical not (`~mask`, `not flag`, `logical_not`) its operand (and `|` is `&`,
`zeros` is `ones`: a mask built in the other polarity), a self-assignment left over is
dropped, and every layer name a kata's variants use is its standard one.

The threshold is calibrated on independent solutions of the same katas (the references, the
correct alternatives and the real-style corpus under tests/fixtures): the short katas make
independent solutions share plenty of `softmax(q @ k.transpose(-2, -1) * scale) @ v`, and
none of them may be flagged. Stdlib only.
"""

from __future__ import annotations

import ast
import hashlib
import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnkata.checker.messages import msg
from attnkata.checker.textsafe import clean

K = 7  # tokens per k-gram
WINDOW = 4  # winnowing window (a match of K + WINDOW - 1 tokens is always caught)
DEFAULT_THRESHOLD = 0.8
_PURE = (
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.ClassDef,
    ast.AsyncFunctionDef,
)


# -- normalisation -----------------------------------------------------------------------------------
_AXES = {"transpose", "swapaxes", "swapdims", "permute", "contiguous", "moveaxis", "movedim"}


def _layer_names() -> dict[str, str]:
    """Every layer name a kata's variants use -> the standard name (`wq` -> `q_proj`)."""
    from attnkata.checker.catalog import all_katas

    out: dict[str, str] = {}
    try:
        katas = list(all_katas().values())
    except Exception:  # noqa: BLE001 - a broken kata elsewhere must not stop copy detection
        return out
    for k in katas:
        for p in k.variants:
            if p.kind == "layers":
                for value in p.values:
                    out |= {new: old for old, new in p.rename_map(value).items()}
    return out


class _Conventions(ast.NodeTransformer):
    """The conventions a variant changes, normalised away (see the module docstring)."""

    def __init__(self, layers: dict[str, str]) -> None:
        self.layers = layers

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in _AXES:
            if (
                isinstance(f.value, ast.Name)
                and f.value.id in ("np", "numpy", "torch")
                and node.args
            ):
                return node.args[0]  # np.swapaxes(x, a, b), torch.transpose(x, a, b)
            return f.value  # x.transpose(a, b), x.contiguous()
        if isinstance(f, ast.Attribute) and f.attr == "logical_not" and node.args:
            return node.args[0]
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        return node.operand if isinstance(node.op, ast.Invert | ast.Not) else node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        node.attr = self.layers.get(node.attr, node.attr)
        if node.attr in ("ones", "zeros"):  # a mask's other polarity starts from the other
            node.attr = "ones"
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.BitOr):  # De Morgan: "blocked | masked" is "allowed & kept"
            node.op = ast.BitAnd()
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.AST | None:
        self.generic_visit(node)
        same = [
            isinstance(t, ast.Name) and isinstance(node.value, ast.Name) and t.id == node.value.id
            for t in node.targets
        ]
        return None if same and all(same) else node


def without_conventions(tree: ast.Module) -> ast.Module:
    return ast.fix_missing_locations(_Conventions(_layer_names()).visit(tree))


def _defined(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
    return names - set(_imported(tree))


def _imported(tree: ast.AST) -> dict[str, str]:
    """Names bound by imports -> what they import (`np` -> `numpy`): an alias is no identity."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {
                (a.asname or a.name.split(".")[0]): (a.name if a.asname else a.name.split(".")[0])
                for a in node.names
            }
        elif isinstance(node, ast.ImportFrom):
            out |= {(a.asname or a.name): f"{node.module}.{a.name}" for a in node.names}
    return out


def _rw(stmt: ast.stmt) -> tuple[set[str], set[str]]:
    reads, writes = set(), set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name):
            (writes if isinstance(node.ctx, ast.Store | ast.Del) else reads).add(node.id)
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        writes.add(stmt.name)
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        writes |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        reads.add(stmt.target.id)
    return reads, writes


def _barrier(stmt: ast.stmt) -> bool:
    """Statements whose order is kept: calls for effect, control flow, stores into objects."""
    if not isinstance(stmt, _PURE):
        return True
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    return any(isinstance(t, ast.Attribute | ast.Subscript) for t in targets if t is not None)


class _Normaliser:
    def __init__(self, defined: set[str], imported: dict[str, str]) -> None:
        self.defined = defined
        self.imported = imported

    def tokens(self, node: ast.AST) -> list[tuple[str, int]]:
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name):
            return [("V" if node.id in self.defined else self.imported.get(node.id, node.id), line)]
        if isinstance(node, ast.alias):
            return [("import:" + node.name, line)]
        if isinstance(node, ast.arg):
            return [("arg", line)]  # annotations are style, not logic
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return [("str", line)]
            return [(f"c:{node.value!r}", line)]
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return []  # a docstring or a bare string
        out = [(type(node).__name__, line)]
        if isinstance(node, ast.Attribute):
            out.append(("." + node.attr, line))
        if isinstance(node, ast.keyword) and node.arg:
            out.append(("=" + node.arg, line))
        for name, value in ast.iter_fields(node):
            if name in ("annotation", "returns", "type_comment", "decorator_list"):
                continue
            if isinstance(value, list) and value and all(isinstance(v, ast.stmt) for v in value):
                out += self.block(value)
            elif isinstance(value, list):
                for v in value:
                    if isinstance(v, ast.AST):
                        out += self.tokens(v)
            elif isinstance(value, ast.AST):
                out += self.tokens(value)
        return out

    def block(self, stmts: list[ast.stmt]) -> list[tuple[str, int]]:
        """The block's statements in a canonical order that respects their dependencies."""
        toks = [self.tokens(s) for s in stmts]
        keys = [" ".join(t for t, _ in ts) for ts in toks]
        rw = [_rw(s) for s in stmts]
        bar = [_barrier(s) for s in stmts]
        deps = [set() for _ in stmts]
        for j in range(len(stmts)):
            for i in range(j):
                (ri, wi), (rj, wj) = rw[i], rw[j]
                if bar[i] or bar[j] or wi & (rj | wj) or ri & wj:
                    deps[j].add(i)
        done: set[int] = set()
        out: list[tuple[str, int]] = []
        while len(done) < len(stmts):
            ready = [j for j in range(len(stmts)) if j not in done and deps[j] <= done]
            j = min(ready, key=lambda j: (keys[j], j))
            done.add(j)
            out += toks[j]
        return out


def normalised_tokens(source: str) -> list[tuple[str, int]]:
    """(token, line) of the normalised program; [] for a file that does not parse."""
    try:
        tree = without_conventions(ast.parse(source))
    except (SyntaxError, ValueError, RecursionError):
        return []
    return _Normaliser(_defined(tree), _imported(tree)).block(tree.body)


# -- fingerprints -------------------------------------------------------------------------------------
def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def fingerprints(source: str, k: int = K, window: int = WINDOW) -> dict[int, list[int]]:
    """Winnowed k-gram hashes -> the first source line of each occurrence."""
    toks = normalised_tokens(source)
    grams = [
        (_hash("\x1f".join(t for t, _ in toks[i : i + k])), toks[i][1])
        for i in range(len(toks) - k + 1)
    ]
    out: dict[int, list[int]] = {}
    if not grams:
        return out
    last = -1
    for start in range(max(1, len(grams) - window + 1)):
        win = grams[start : start + window]
        # the rightmost minimum, so that a run of equal windows picks one hash once
        pos = start + min(range(len(win)), key=lambda i: (win[i][0], -i))
        if pos != last:
            out.setdefault(grams[pos][0], []).append(grams[pos][1])
            last = pos
    return out


def dice(a: dict[int, list[int]], b: dict[int, list[int]]) -> float:
    if not a or not b:
        return 0.0
    return 2 * len(a.keys() & b.keys()) / (len(a) + len(b))


@dataclass
class Pair:
    a: str
    b: str
    kata: str
    similarity: float
    flagged: bool
    lines_a: list[int] = field(default_factory=list)  # lines of a's file that match b
    lines_b: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "kata": self.kata,
            "similarity": self.similarity,
            "flagged": self.flagged,
        }


def compare(
    files: dict[str, str], kata: str, base: str = "", threshold: float = DEFAULT_THRESHOLD
) -> list[Pair]:
    """Every pair of `files` (student -> source) of one kata, most similar first."""
    skip = set(fingerprints(base)) if base else set()
    prints = {
        s: {h: ls for h, ls in fingerprints(src).items() if h not in skip}
        for s, src in files.items()
    }
    names = sorted(prints)
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            sim = round(dice(prints[a], prints[b]), 4)
            shared = prints[a].keys() & prints[b].keys()
            pairs.append(
                Pair(
                    a,
                    b,
                    kata,
                    sim,
                    sim >= threshold,
                    sorted({ln for h in shared for ln in prints[a][h]}),
                    sorted({ln for h in shared for ln in prints[b][h]}),
                )
            )
    pairs.sort(key=lambda p: (-p.similarity, p.a, p.b))
    return pairs


# -- a class ------------------------------------------------------------------------------------------
def _kata_files() -> dict[str, tuple[str, str]]:
    """solution file name -> (kata id, skeleton source), for the installed katas."""
    from attnkata.checker.catalog import all_katas

    out = {}
    try:
        katas = list(all_katas().values())
    except Exception:  # noqa: BLE001 - a broken kata elsewhere must not stop copy detection
        return out
    for k in katas:
        try:
            out[k.solution_file.lower()] = (k.id, k.skeleton_path.read_text(encoding="utf-8"))
        except OSError:
            out[k.solution_file.lower()] = (k.id, "")
    return out


def scan(
    submissions: Path, threshold: float = DEFAULT_THRESHOLD
) -> tuple[list[Pair], dict[tuple[str, str], str]]:
    """Every student folder's `.py` files, grouped by file name (one group per kata)."""
    from attnkata.checker.sets.grade import discover

    students, _warnings = discover(Path(submissions))
    known = _kata_files()
    groups: dict[str, dict[str, str]] = {}
    paths: dict[tuple[str, str], str] = {}
    for s in students:
        for p in sorted((Path(submissions) / s).rglob("*.py")):
            rel = p.relative_to(Path(submissions) / s)
            if p.is_symlink() or any(part.startswith((".", "__")) for part in rel.parts):
                continue
            kata = known.get(p.name.lower(), (p.stem, ""))[0]
            if s not in groups.setdefault(kata, {}):
                groups[kata][s] = p.read_text(encoding="utf-8", errors="replace")
                paths[(kata, s)] = str(p)
    pairs = []
    bases = {kid: base for kid, base in known.values()}
    for kata, files in sorted(groups.items()):
        pairs += compare(files, kata, bases.get(kata, ""), threshold)
    pairs.sort(key=lambda p: (-p.similarity, p.kata, p.a, p.b))
    return pairs, paths


def class_pairs(
    cr: Any, threshold: float = DEFAULT_THRESHOLD
) -> list[tuple[Pair, list[str], list[str]]]:
    """Flagged pairs of a graded class, with both files' lines (for the report)."""
    known = {kid: base for kid, base in _kata_files().values()}
    out = []
    for k in cr.manifest.kata_ids:
        files, lines = {}, {}
        for s in cr.students:
            e = cr.entry(s, k)
            if e.path:
                try:
                    files[s] = Path(e.path).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                lines[s] = files[s].splitlines()
        out += [
            (p, lines[p.a], lines[p.b])
            for p in compare(files, k, known.get(k, ""), threshold)
            if p.flagged
        ]
    return out


def _h(text: str) -> str:
    """Escaped for HTML, with the terminal and bidi controls a name or a line may carry removed."""
    return html.escape(clean(text))


def _side(lines: list[str], marked: list[int]) -> str:
    rows = "".join(
        f'<tr><td class="num">{n}</td><td><code>{_h(lines[n - 1])}</code></td></tr>'
        for n in marked[:40]
        if 0 < n <= len(lines)
    )
    return f'<table class="code">{rows}</table>'


def render_section(cr: Any, t: dict[str, Any] | None = None) -> str:
    """The class report's copy-detection section (empty string when nothing is flagged)."""
    lang = getattr(cr, "lang", "en")
    pairs = class_pairs(cr)
    title = msg("similarity.title", lang)
    if not pairs:
        return f'<h2>{title}</h2><p class="meta">{msg("similarity.none", lang)}</p>'
    note = msg("similarity.note", lang)
    parts = [f'<h2>{title}</h2><p class="meta">{note}</p>']
    for p, la, lb in pairs:
        parts.append(
            f'<div class="similar" data-a="{_h(p.a)}" data-b="{_h(p.b)}" '
            f'data-kata="{_h(p.kata)}"><h3><code>{_h(p.kata)}</code>: {_h(p.a)} ↔ '
            f'{_h(p.b)} · <span class="similarity">{p.similarity:.0%}</span></h3>'
            f'<table class="side-by-side"><tr><th>{_h(p.a)}</th><th>{_h(p.b)}</th></tr>'
            f"<tr><td>{_side(la, p.lines_a)}</td><td>{_side(lb, p.lines_b)}</td></tr></table></div>"
        )
    return "".join(parts)
