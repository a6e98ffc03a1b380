"""A variant's texts: its statement, its reference and, from that reference, its skeleton.

The variant's reference is the standard reference rewritten at its boundary: each entry point
takes the variant's argument names (and defaults), converts its inputs to the standard
conventions, calls the standard code (kept verbatim in a module-level solution region) and
converts the result back; layers are renamed throughout. Docstrings state the variant's
shapes, names and mask polarity. The skeleton is derived from it exactly as a standard
skeleton is derived from its reference (`checker/skeleton.py`), so the two cannot drift, and
the problem-set builder refuses a variant whose reference fails its own grader.

Stdlib only: text and `ast`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass

from attnkata.checker import variants as vs
from attnkata.checker.catalog import Kata
from attnkata.checker.skeleton import BEGIN, END, reference_path, strip_solution

# Docstring shapes under each layout: (B, H, L, d) -> (B, L, H, d); (..., L, d) -> (..., L, H, d).
_HEADS_FIRST = re.compile(r"\((B|\.\.\.), (H|Hkv), ([^,()]+), (dv|d)\)")
_NO_HEADS = re.compile(r"\(\.\.\., (L|S), (dv|d)\)")
_BATCH_FIRST = re.compile(r"\(B, ([^,()]+), (D|kv_lora_rank \+ rope)\)")
_POLARITY = (
    ('mean "may attend"', 'mean "masked out"'),
    ("True = this query may attend this key", "True = this key is masked out for this query"),
    ("True = this query may attend", "True = masked out for this query"),
    ("True = this query may look at this key", "True = this key is hidden from this query"),
    ("True = may attend", "True = masked out"),
    ("`True` = may attend", "`True` = masked out"),
    ("`True` = real token", "`True` = padding"),
    ("True = a real token, False = padding", "True = padding, False = a real token"),
    ("True = real token", "True = padding"),
    ("True where key index < lengths[b]", "True where key index >= lengths[b] (padding)"),
)
_EXAMPLE = re.compile(r"^## (Worked example|示例)[^\n]*\n.*?(?=^## |\Z)", re.S | re.M)


def _layout(text: str) -> str:
    text = _HEADS_FIRST.sub(r"(\1, \3, \2, \4)", text)
    return _NO_HEADS.sub(r"(..., \1, H, \2)", text)


def _sequence_first(text: str) -> str:
    return _BATCH_FIRST.sub(r"(\1, B, \2)", text)


def _polarity(text: str) -> str:
    for old, new in _POLARITY:
        text = text.replace(old, new)
    return text


def _rename_words(text: str, mapping: Mapping[str, str]) -> str:
    """`name` -> `new` where the text names an argument: in backticks, in a call written in
    backticks (`f(q, k, mask=None)`), or as "name:" at the start of a docstring line (Args
    sections); other words are left alone."""

    def in_call(m: re.Match[str]) -> str:
        span = m.group(0)
        for old, new in mapping.items():
            span = re.sub(rf"(?<![\w.]){re.escape(old)}\b", new, span)
        return span

    text = re.sub(r"`\w+\([^`]*\)`", in_call, text)
    for old, new in mapping.items():
        text = re.sub(rf"`{re.escape(old)}`", f"`{new}`", text)
        if "_" in old:  # attn_mask, is_causal...: a bare mention is the argument too
            text = re.sub(rf"(?<![`.\w]){re.escape(old)}\b(?!`)", new, text)
        text = re.sub(rf"(^\s+){re.escape(old)}(:)", rf"\g<1>{new}\2", text, flags=re.M)
        text = re.sub(
            rf"(^\s+(?:\w+, )*){re.escape(old)}(?=(?:, \w+)*:)", rf"\g<1>{new}", text, flags=re.M
        )
    return text


@dataclass(frozen=True)
class Plan:
    """What one variant changes, resolved against the kata's parameters."""

    kata: Kata
    variant: dict[str, str]

    def value(self, p: vs.Param) -> str:
        return self.variant[p.name]

    def changed(self) -> list[vs.Param]:
        return [p for p in self.kata.variants if self.value(p) != p.default]

    def renames(self, kinds: tuple[str, ...] = ("names", "scale", "flag")) -> dict[str, str]:
        out: dict[str, str] = {}
        for p in self.changed():
            if p.kind in kinds:
                out.update(p.rename_map(self.value(p)))
        return out

    def layers(self) -> dict[str, str]:
        return self.renames(("layers",))

    def docs(self, text: str) -> str:
        """A docstring or statement in this variant's words (shapes, names, polarity)."""
        for p in self.changed():
            if p.kind == "layout":
                text = _layout(text)
            elif p.kind == "sequence-first":
                text = _sequence_first(text)
            elif p.kind == "polarity":
                text = _polarity(text)
            elif p.kind == "mask-shape":
                text = text.replace("(B, 1, 1, S)", "(B, S)")
            elif p.kind == "scale":
                text = text.replace("`None` means `1 / sqrt(d)`", "`None` means `sqrt(d)`")
                text = text.replace(
                    "multiplies the scores; None means 1 / sqrt(d)",
                    "divides the scores; None means sqrt(d)",
                )
                text = text.replace("* scale", "/ temperature").replace(
                    "scale * ", "1 / temperature * "
                )
        return _rename_words(text, self.renames())


def plan(kata: Kata, variant: Mapping[str, str] | None = None) -> Plan:
    return Plan(
        kata, vs.complete(kata.variants, variant if variant is not None else kata.variant_values)
    )


# -- the statement ---------------------------------------------------------------------------
def statement(kata: Kata, text: str, lang: str) -> str:
    """The standard statement `text` as this variant states it: its conventions first, the
    contract in its words, and no worked example (whose conventions are the standard ones:
    the public sample tests show calls in the variant's)."""
    from attnkata.checker.messages import msg

    pl = plan(kata)
    if not pl.changed():
        return text
    block = vs.conventions_block(kata.variants, pl.variant, lang)
    text = _EXAMPLE.sub(
        f"## {msg('variant.example_heading', lang)}\n\n{msg('variant.example_note', lang)}\n\n",
        text,
    )
    text = pl.docs(text)
    head, sep, rest = text.partition("\n")
    return f"{head}{sep}\n{block}\n{rest.lstrip()}" if head.startswith("# ") else f"{block}\n{text}"


# -- the reference ---------------------------------------------------------------------------
def _is_numpy(source: str) -> bool:
    return "import numpy as np" in source and "import torch" not in source


def _optional(arg: ast.arg, default: ast.expr | None) -> bool:
    return isinstance(default, ast.Constant) and default.value is None


def _is_tuple(arg: ast.arg) -> bool:
    return arg.annotation is not None and "tuple" in ast.unparse(arg.annotation)


class _Codegen:
    """Expressions converting one value between the variant's convention and the standard."""

    def __init__(self, numpy: bool, any_rank: bool) -> None:
        self.numpy = numpy
        self.any_rank = any_rank  # (..., L, d) inputs: a 2-D one has no heads axis to move

    def transpose(self, expr: str, axes: str) -> str:
        moved = f"np.swapaxes({expr}, {axes})" if self.numpy else f"{expr}.transpose({axes})"
        if self.any_rank and axes == "-3, -2":
            return f"({moved} if {expr}.ndim >= 3 else {expr})"
        return moved

    def convert(
        self, p: vs.Param, value: str, expr: str, *, tuple_: bool, to_standard: bool
    ) -> str:
        if p.kind in ("layout", "sequence-first"):
            axes = "-3, -2" if p.kind == "layout" else "0, 1"
            if tuple_:
                return f"tuple({self.transpose('t', axes)} for t in {expr})"
            return self.transpose(expr, axes)
        if p.kind == "polarity":
            return f"~{expr}"
        if p.kind == "scale":
            return f"1.0 / {expr}"
        if p.kind == "flag":
            return f"not {expr}"
        if p.kind == "mask-shape" and not to_standard:
            return f"{expr}.reshape({expr}.shape[0], {expr}.shape[-1])"
        return expr


def _params(fn: ast.FunctionDef) -> list[tuple[ast.arg, ast.expr | None]]:
    args = [a for a in fn.args.args if a.arg != "self"]
    defaults: list[ast.expr | None] = [None] * (len(args) - len(fn.args.defaults)) + list(
        fn.args.defaults
    )
    return list(zip(args, defaults, strict=True))


def _signature(
    lines: list[str], fn: ast.FunctionDef, renames: Mapping[str, str], flags: set[str]
) -> list[str]:
    """`fn`'s def lines with its parameters renamed (and the inverted flags' defaults)."""
    first, last = fn.lineno, fn.body[0].lineno - 1
    body0 = fn.body[0]
    if isinstance(body0, ast.Expr) and isinstance(body0.value, ast.Constant):
        last = body0.lineno - 1
    edits: list[tuple[int, int, int, str]] = []  # (line, start col, end col, text)
    for arg, default in _params(fn):
        if arg.arg in renames:
            edits.append(
                (arg.lineno, arg.col_offset, arg.col_offset + len(arg.arg), renames[arg.arg])
            )
        if (
            arg.arg in flags
            and isinstance(default, ast.Constant)
            and isinstance(default.value, bool)
        ):
            edits.append(
                (
                    default.lineno,
                    default.col_offset,
                    default.end_col_offset or 0,
                    str(not default.value),
                )
            )
    out = list(lines[first - 1 : last])
    for line, start, end, text in sorted(edits, reverse=True):
        i = line - first
        out[i] = out[i][:start] + text + out[i][end:]
    return out


def _docstring(lines: list[str], fn: ast.FunctionDef | ast.ClassDef, pl: Plan) -> list[str]:
    body0 = fn.body[0]
    if (
        isinstance(body0, ast.Expr)
        and isinstance(body0.value, ast.Constant)
        and isinstance(body0.value.value, str)
    ):
        return pl.docs("\n".join(lines[body0.lineno - 1 : body0.end_lineno])).split("\n")
    return []


def _solution(lines: list[str], fn: ast.FunctionDef) -> tuple[int, int]:
    """The 0-based (first, last) line indexes of `fn`'s BEGIN/END SOLUTION markers."""
    begin = next(i for i in range(fn.lineno - 1, fn.end_lineno or 0) if BEGIN.match(lines[i]))
    end = next(i for i in range(begin, len(lines)) if END.match(lines[i]))
    return begin, end


class _Entry:
    """One entry point (a function, or a class's forward) and the conversions it needs."""

    def __init__(self, pl: Plan, entry: str, fn: ast.FunctionDef, gen: _Codegen) -> None:
        self.pl, self.entry, self.fn, self.gen = pl, entry, fn, gen
        self.params = _params(fn)
        self.names = [a.arg for a, _ in self.params]
        self.renames = {k: v for k, v in pl.renames().items() if k in self.names}
        self.flags = {p.arguments[0] for p in pl.changed() if p.kind == "flag"} & set(self.names)

    def inputs(self) -> list[tuple[str, str]]:
        """(standard name, expression over the variant's names) for every parameter."""
        out = []
        for arg, default in self.params:
            expr = self.renames.get(arg.arg, arg.arg)
            for p in self.pl.changed():
                if arg.arg in p.arguments:
                    conv = self.gen.convert(
                        p, self.pl.value(p), expr, tuple_=_is_tuple(arg), to_standard=True
                    )
                    if conv != expr:
                        guard = _optional(arg, default) and p.kind not in ("flag",)
                        expr = f"(None if {expr} is None else {conv})" if guard else conv
            out.append((arg.arg, expr))
        return out

    def outputs(self, owner: str) -> list[tuple[int | None, vs.Param]]:
        found = []
        for p in self.pl.changed():
            for r in p.returns:
                name, _, index = r.partition(".")
                if name == owner:
                    found.append((int(index) if index else None, p))
        return found

    def needed(self, owner: str) -> bool:
        return any(e != n for n, e in self.inputs()) or bool(self.outputs(owner))

    def body(self, call: str, owner: str, indent: str, write_back: bool = False) -> list[str]:
        """`write_back` (wrap_source's wrappers): an input the standard code changes in place
        is changed in the caller's tensor too, even where the conversion made a copy (a flipped
        mask), so the wrapped file's input mutation is still seen."""
        lines = [
            f"{indent}# This variant's conventions -> the standard kata's, and back for the result."
        ]
        ins = self.inputs()
        copied = self.copied() if write_back else []
        lines += [f"{indent}_given_{n} = {self.renames.get(n, n)}" for n in copied]
        lines += _assignments([(n, e) for n, e in ins if e != n], indent, self.renames)
        args = ", ".join(n for n, _ in ins)
        outs = self.outputs(owner)
        if not outs and not copied:
            lines.append(f"{indent}return {call}({args})")
            return lines
        lines.append(f"{indent}out = {call}({args})")
        for n in copied:
            lines.append(f"{indent}if _given_{n} is not None:")
            lines.append(f"{indent}    _given_{n}.copy_(~{n})")
        whole = [p for i, p in outs if i is None]
        parts = [(i, p) for i, p in outs if i is not None]
        for p in whole:
            lines.append(
                f"{indent}out = {self.gen.convert(p, self.pl.value(p), 'out', tuple_=False, to_standard=False)}"
            )
        if parts:
            lines.append(f"{indent}out = list(out)")
            for i, p in parts:
                tuple_ = self.entry_tuple(owner, i)
                conv = self.gen.convert(
                    p, self.pl.value(p), f"out[{i}]", tuple_=tuple_, to_standard=False
                )
                lines.append(f"{indent}out[{i}] = {conv}")
            lines.append(f"{indent}out = tuple(out)")
        lines.append(f"{indent}return out")
        return lines

    def copied(self) -> list[str]:
        """The standard names of the tensor inputs that the conversion copies (flipped masks)."""
        if self.gen.numpy:
            return []
        kinds = {a: p.kind for p in self.pl.changed() for a in p.arguments}
        return [n for n in self.names if kinds.get(n) == "polarity"]

    def entry_tuple(self, owner: str, index: int) -> bool:
        """Is output `index` itself a tuple (a KV cache (k, v))? From the return annotation."""
        ret = self.fn.returns
        if isinstance(ret, ast.Subscript) and isinstance(ret.slice, ast.Tuple):
            elts = ret.slice.elts
            if index < len(elts):
                return "tuple" in ast.unparse(elts[index])
        return False


def reference_source(kata: Kata, variant: Mapping[str, str] | None = None) -> str:
    """The reference solution of `kata` in `variant`'s conventions (the kata's own variant by
    default); the standard reference when nothing changes."""
    path = reference_path(kata.id)
    source = path.read_text(encoding="utf-8")
    pl = plan(kata, variant)
    if not pl.changed():
        return source
    for old, new in pl.layers().items():
        source = re.sub(rf"\b{re.escape(old)}\b", new, source)
    gen = _Codegen(_is_numpy(source), "(..., L, d)" in source)
    lines = source.splitlines()
    tree = ast.parse(source)
    replaced: list[tuple[int, int, list[str]]] = []  # (first, last) 0-based line spans
    appended: list[str] = []
    for node in tree.body:
        name = getattr(node, "name", None)
        if name not in kata.entry_points:
            continue
        if isinstance(node, ast.FunctionDef):
            e = _Entry(pl, name, node, gen)
            if not e.needed(name) and not e.renames:
                continue
            begin, end = _solution(lines, node)
            std = f"_standard_{name}"
            new = _signature(lines, node, e.renames, e.flags) + _docstring(lines, node, pl)
            new += [lines[begin], *e.body(std, name, " " * 4), *lines[end : node.end_lineno]]
            replaced.append((node.lineno - 1, node.end_lineno or 0, new))
            appended += _standard_copy(lines, node, std, begin, end)
        elif isinstance(node, ast.ClassDef):
            doc = _docstring(lines, node, pl)
            if doc:
                body0 = node.body[0]
                replaced.append((body0.lineno - 1, body0.end_lineno or 0, doc))
            for item in methods(node):
                e = _Entry(pl, name, item, gen)
                begin, end = _solution(lines, item)
                head = _signature(lines, item, e.renames, e.flags) + _docstring(lines, item, pl)
                indent = re.match(r"\s*", lines[begin]).group(0)  # type: ignore[union-attr]
                if item.name == "__init__":
                    bind = [(n, x) for n, x in e.inputs() if x != n]
                    if not bind:
                        continue
                    new = head + _between(lines, item, begin) + [lines[begin]]
                    new += _assignments(bind, indent, e.renames)
                    new += lines[begin + 1 : item.end_lineno]
                    replaced.append((item.lineno - 1, item.end_lineno or 0, new))
                    continue
                if not e.needed(name) and not e.renames:
                    continue
                std = f"_standard_{_snake(name)}_forward"
                new = head + _between(lines, item, begin) + [lines[begin]]
                new += [
                    ln.replace(f"{std}(", f"{std}(self, ", 1) for ln in e.body(std, name, indent)
                ]
                new += lines[end : item.end_lineno]
                replaced.append((item.lineno - 1, item.end_lineno or 0, new))
                appended += _standard_copy(lines, item, std, begin, end)
    out = list(lines)
    for first, last, new in sorted(replaced, reverse=True):
        out[first:last] = new
    text = "\n".join(out).rstrip() + "\n"
    if appended:
        text += "\n\n" + "\n".join(appended).rstrip() + "\n"
    return _module_doc(text, pl)


def _assignments(
    pairs: list[tuple[str, str]], indent: str, renames: Mapping[str, str]
) -> list[str]:
    """`std = expr` lines; one tuple assignment where a line would overwrite a name that a
    later line still reads as the variant's (a renamed argument whose new name is another's
    standard name)."""
    assigned: set[str] = set()
    for name, expr in pairs:
        if any(re.search(rf"\b{re.escape(n)}\b", expr) for n in assigned if n in renames.values()):
            return [f"{indent}{', '.join(n for n, _ in pairs)} = {', '.join(e for _, e in pairs)}"]
        assigned.add(name)
    return [f"{indent}{name} = {expr}" for name, expr in pairs]


def methods(cls: ast.ClassDef) -> list[ast.FunctionDef]:
    """A module entry point's methods whose conventions a variant changes: __init__, forward."""
    return [
        n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name in ("__init__", "forward")
    ]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _between(lines: list[str], fn: ast.FunctionDef, begin: int) -> list[str]:
    """`fn`'s lines after its docstring and before its solution region (e.g. super().__init__())."""
    body0 = fn.body[0]
    start = (
        body0.end_lineno
        if isinstance(body0, ast.Expr) and isinstance(body0.value, ast.Constant)
        else body0.lineno - 1
    )
    return list(lines[start or 0 : begin])


def _standard_copy(
    lines: list[str], fn: ast.FunctionDef, name: str, begin: int, end: int
) -> list[str]:
    """The standard entry point, as a module-level function in a solution region (the
    skeleton drops it): its original signature and solution lines."""
    params = ast.unparse(fn.args)  # a method's keeps `self` first
    body = lines[begin + 1 : end]
    depth = min((len(ln) - len(ln.lstrip()) for ln in body if ln.strip()), default=4)
    shift = depth - 4
    moved = [ln[shift:] if ln.strip() else "" for ln in body] if shift > 0 else body
    return [
        "# BEGIN SOLUTION",
        f"def {name}({params}):",
        f'    """The standard kata\'s `{fn.name}`, called by the variant\'s entry point."""',
        *moved,
        "# END SOLUTION",
        "",
        "",
    ]


def _module_doc(text: str, pl: Plan) -> str:
    """The module docstring's shapes in the variant's layout, and the variant named."""
    tree = ast.parse(text)
    doc = tree.body[0] if tree.body else None
    if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)):
        return text
    lines = text.split("\n")
    first, last = doc.lineno - 1, doc.end_lineno or 1
    body = pl.docs("\n".join(lines[first:last]))
    note = f"Variant {vs.key(pl.kata.variants, pl.variant)}: the conventions in the statement's first section."
    body = body[:-3].rstrip() + f"\n\n{note}\n" + '"""' if body.endswith('"""') else body
    return "\n".join([*lines[:first], body, *lines[last:]])


def wrap_source(kata: Kata, source: str, variant: Mapping[str, str] | None = None) -> str:
    """`source` (a file in the standard kata's conventions) as a file in `variant`'s: its
    entry points renamed `_standard_<name>`, and the entry points appended with the variant's
    signatures, converting at the boundary around the calls of the renamed ones. Layer names
    are left as they are (they are never enforced). The benchmark's way to write the mutant
    fixtures in each variant (bench/diagnosis_report.py --variants): the mistake inside, the
    conventions right."""
    pl = plan(kata, variant)
    if not pl.changed():
        return source
    ref_source = reference_path(kata.id).read_text(encoding="utf-8")
    gen = _Codegen(_is_numpy(ref_source), "(..., L, d)" in ref_source)
    nodes = [n for n in ast.parse(ref_source).body if getattr(n, "name", None) in kata.entry_points]
    # An entry point the variant leaves alone (flash-decoding's `combine`) keeps its name, so
    # the file's own calls of it stay the calls the grader records.
    changed = [n for n in nodes if _changes(pl, n, gen)]
    out = source
    for node in changed:
        out = re.sub(rf"(?<![.\w]){re.escape(node.name)}\b", f"_standard_{node.name}", out)
    wrappers: list[str] = []
    for node in changed:
        name = node.name
        if isinstance(node, ast.FunctionDef):
            e = _Entry(pl, name, node, gen)
            wrappers.append(_plain_def(node, e))
            wrappers += e.body(f"_standard_{name}", name, " " * 4, write_back=True) + ["", ""]
        elif isinstance(node, ast.ClassDef):
            wrappers.append(f"class {name}(_standard_{name}):")
            for item in methods(node):
                e = _Entry(pl, name, item, gen)
                wrappers.append("    " + _plain_def(item, e, method=True))
                if item.name == "__init__":
                    wrappers += _assignments(
                        [(n, x) for n, x in e.inputs() if x != n], " " * 8, e.renames
                    )
                    wrappers.append(f"        super().__init__({', '.join(e.names)})")
                else:
                    wrappers += e.body("super().forward", name, " " * 8, write_back=True)
                wrappers.append("")
            wrappers.append("")
    head = ["import numpy as np", "", ""] if gen.numpy else []
    return out.rstrip() + "\n\n\n" + "\n".join(head + wrappers).rstrip() + "\n"


def _changes(pl: Plan, node: ast.stmt, gen: _Codegen) -> bool:
    """Whether `pl`'s variant changes the entry point `node` (a function or a class)."""
    name = getattr(node, "name", "")
    fns = [node] if isinstance(node, ast.FunctionDef) else methods(node)  # type: ignore[arg-type]
    for fn in fns:
        e = _Entry(pl, name, fn, gen)
        if e.needed(name) or e.renames:
            return True
    return False


def _plain_def(fn: ast.FunctionDef, e: _Entry, method: bool = False) -> str:
    """`fn`'s def line in the variant's names, without annotations (the file it goes into
    may import nothing they name)."""
    params = ["self"] if method else []
    for arg, default in e.params:
        name = e.renames.get(arg.arg, arg.arg)
        if default is None:
            params.append(name)
            continue
        value = ast.unparse(default)
        if arg.arg in e.flags and isinstance(default, ast.Constant):
            value = str(not default.value)
        params.append(f"{name}={value}")
    return f"def {fn.name}({', '.join(params)}):"


def skeleton(kata: Kata, variant: Mapping[str, str] | None = None) -> str:
    """The skeleton of `variant` (the kata's own by default): its reference, solutions blanked."""
    return strip_solution(reference_source(kata, variant), filename=f"{kata.id} variant")
