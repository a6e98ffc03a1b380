"""The static policy for graded code: what a solution may import and touch, checked on the
parse tree before anything runs.

An attention kata needs torch or NumPy, `math` and a few pure-Python helpers. Code that
imports `os`, evaluates strings, walks frames and `__subclasses__`, or reaches into
`torch._C` is not solving the kata: it is probing the grader. The sandbox stops such code
at run time whatever it does; this policy names it before it runs, with the line:

- `kata check` reports it as a warning and still grades the file;
- `kata mock` and `kata set grade` refuse the file (not run, failed) unless the problem set's
  manifest relaxes the policy (`"policy": "warn"`, `"allow_imports": [...]`).

Findings are grouped into five catalogue ids (see `catalogue.toml`): `policy-import`,
`policy-dynamic-code`, `policy-introspection`, `policy-private-api` and `policy-io`.

The scan is iterative (a deep tree cannot exhaust the stack) and knows Python's scoping
well enough that `def forward(self, input)` or a local named `compile` is not the builtin;
a module-level rebinding is not trusted, since it may not have run (`if False: open = 1`).
Stdlib only.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from attnkata.checker.models import Diagnostic, SourceRef

IMPORT, DYNAMIC, INTROSPECTION, PRIVATE, IO = (
    "policy-import", "policy-dynamic-code", "policy-introspection", "policy-private-api", "policy-io")
POLICY_IDS = (IMPORT, DYNAMIC, INTROSPECTION, PRIVATE, IO)
MODES = ("warn", "enforce")

# Modules a solution may import, with their submodules (`torch.nn.functional`, `numpy.linalg`).
ALLOWED_IMPORTS = frozenset({
    "__future__", "torch", "numpy", "einops", "math", "cmath", "typing", "typing_extensions",
    "functools", "itertools", "dataclasses", "collections", "enum", "abc", "numbers", "warnings",
    "copy", "random",
})

# Modules that are not merely unexpected but dangerous, by what they give access to.
_MODULE_IDS: dict[str, str] = {
    **dict.fromkeys(("importlib", "imp", "runpy", "code", "codeop", "pkgutil", "zipimport", "compileall",
                     "py_compile"), DYNAMIC),
    **dict.fromkeys(("sys", "ctypes", "gc", "inspect", "builtins", "types", "traceback", "weakref", "dis",
                     "atexit", "sysconfig", "site", "faulthandler", "tracemalloc", "__main__", "operator",
                     "copyreg", "pdb", "bdb", "trace"), INTROSPECTION),
    **dict.fromkeys(("os", "posix", "nt", "subprocess", "signal", "shutil", "socket", "pathlib", "io",
                     "tempfile", "glob", "pickle", "marshal", "shelve", "dbm", "multiprocessing",
                     "threading", "concurrent", "asyncio", "select", "selectors", "mmap", "fcntl", "pty",
                     "resource", "urllib", "http", "requests", "ftplib", "smtplib", "ssl", "sqlite3",
                     "zipfile", "tarfile", "fileinput", "logging", "platform", "getpass", "pwd", "grp",
                     "termios", "tty", "readline", "webbrowser", "xmlrpc", "socketserver"), IO),
}

# Attribute chains of torch/NumPy (through any alias) that are public but not for solutions.
_BANNED_PATHS: dict[str, str] = {
    "torch.ops": PRIVATE, "torch.overrides": PRIVATE, "torch.library": PRIVATE, "torch.classes": PRIVATE,
    "torch.utils.cpp_extension": DYNAMIC, "numpy.f2py": DYNAMIC, "numpy.distutils": DYNAMIC,
    "typing.get_type_hints": DYNAMIC, "typing.ForwardRef": DYNAMIC,
    "numpy.ctypeslib": INTROSPECTION,
    **dict.fromkeys(("torch.load", "torch.save", "torch.hub", "torch.from_file", "torch.package",
                     "torch.serialization", "torch.multiprocessing", "torch.distributed", "torch.jit.load",
                     "torch.jit.save", "numpy.load", "numpy.save", "numpy.savez", "numpy.savez_compressed",
                     "numpy.savetxt", "numpy.loadtxt", "numpy.genfromtxt", "numpy.fromfile", "numpy.memmap",
                     "numpy.lib.format", "numpy.lib.npyio", "numpy.DataSource"), IO),
}

# A dangerous module reached as an attribute of an allowed one (`torch.os`, `np.sys`). Not
# every dangerous module's name: `torch.select`, `torch.trace` and `torch.signal` are torch's own.
_COMPONENT_IDS: dict[str, str] = {
    name: _MODULE_IDS[name]
    for name in ("os", "sys", "subprocess", "ctypes", "gc", "inspect", "builtins", "importlib", "shutil",
                 "socket", "pickle", "marshal", "multiprocessing", "threading", "pathlib", "tempfile",
                 "sysconfig", "site", "runpy", "pty", "fcntl", "weakref", "atexit", "traceback",
                 "faulthandler", "posix", "nt", "copyreg")
}

# Builtins that run strings as code, or reach the interpreter's internals, or the file system.
_BUILTIN_IDS: dict[str, str] = {
    "exec": DYNAMIC, "eval": DYNAMIC, "compile": DYNAMIC, "__import__": DYNAMIC,
    "globals": INTROSPECTION, "locals": INTROSPECTION, "vars": INTROSPECTION, "breakpoint": INTROSPECTION,
    "__builtins__": INTROSPECTION, "__loader__": INTROSPECTION, "__spec__": INTROSPECTION,
    "open": IO,
}
_ATTR_BUILTINS = ("getattr", "setattr", "delattr")

# Attributes that lead from any object to code, frames, globals or every class.
_ESCAPE_ATTRS = frozenset({
    "__subclasses__", "__globals__", "__builtins__", "__code__", "__closure__", "__bases__", "__base__",
    "__mro__", "__dict__", "__getattribute__", "__traceback__", "__loader__", "__spec__", "__import__",
    "__self__", "__func__", "__defaults__", "__kwdefaults__", "__reduce__", "__reduce_ex__", "__objclass__",
    "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "gi_frame", "gi_code", "cr_frame", "cr_code",
    "ag_frame", "ag_code", "tb_frame", "tb_next", "co_code", "co_consts", "co_names",
    "ctypes",  # an array's raw pointer (`arr.ctypes.data`)
})
_ESCAPE_IN_STRING = re.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(sorted(map(re.escape, _ESCAPE_ATTRS))) + r")(?![A-Za-z0-9_])")

# Calls whose string argument names an attribute the candidate's own object will have.
_NAMING_CALLS = {"register_buffer": 0, "register_parameter": 0, "add_module": 0, "register_module": 0,
                 "setattr": 1}

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclass(frozen=True)
class Finding:
    """One use of something the policy forbids."""

    id: str  # one of POLICY_IDS
    line: int
    what: str  # as written, e.g. "import os", "torch._C", "eval"


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"policy mode must be one of {MODES}, not {mode!r}")
    return mode


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _path_finding(path: list[str]) -> str | None:
    """The id for a dotted path through an allowed module, judged by its last component."""
    last = path[-1]
    dotted = ".".join(path)
    if dotted in _BANNED_PATHS:
        return _BANNED_PATHS[dotted]
    if len(path) < 2:
        return None
    if last in _COMPONENT_IDS:
        return _COMPONENT_IDS[last]
    if last in _ESCAPE_ATTRS:
        return INTROSPECTION
    if last.startswith("_") and not _is_dunder(last):
        return PRIVATE
    return None


def _module_finding(module: str, allow: Iterable[str]) -> str | None:
    """The id for importing `module` (dotted), or None when it may be imported."""
    parts = module.split(".")
    if any(module == a or module.startswith(a + ".") for a in allow):
        return None
    if parts[0] == "__future__":
        return None
    if parts[0] not in ALLOWED_IMPORTS:
        if parts[0] in _MODULE_IDS:
            return _MODULE_IDS[parts[0]]
        return PRIVATE if parts[0].startswith("_") else IMPORT
    for i in range(2, len(parts) + 1):
        mid = _path_finding(parts[:i])
        if mid:
            return mid
    return None


def _chain(node: ast.AST) -> list[str] | None:
    """`a.b.c` -> ["a", "b", "c"]; None when the chain does not start at a plain name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


class _Scan:
    def __init__(self, tree: ast.AST, allow: tuple[str, ...]) -> None:
        self.tree = tree
        self.allow = allow
        self.findings: list[Finding] = []
        self.modules: dict[str, str] = {}  # name -> dotted module (or module member) it stands for
        self.own: set[str] = set()  # `_private` names the candidate defines itself
        self.locals: dict[int, frozenset[str]] = {}  # id(function or comprehension) -> its local names
        self.called: set[int] = set()  # id() of `getattr` names that are called, not passed around

    def add(self, mid: str, node: ast.AST, what: str) -> None:
        self.findings.append(Finding(mid, getattr(node, "lineno", 1) or 1, what))

    # -- first pass: names ------------------------------------------------------------------
    def collect(self) -> None:
        aliases: list[tuple[str, ast.AST]] = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.modules[a.asname] = a.name
                    else:
                        root = a.name.split(".")[0]
                        self.modules[root] = root
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    if a.name != "*":
                        self.modules[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                aliases.append((node.targets[0], node.value))
            elif isinstance(node, ast.NamedExpr):
                aliases.append((node.target, node.value))
            # What the candidate names itself may be `_private`: its helpers, its attributes.
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.own.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.own.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
                self.own.add(node.attr)
            elif isinstance(node, ast.arg):
                self.own.add(node.arg)
            elif isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else \
                    node.func.id if isinstance(node.func, ast.Name) else None
                pos = _NAMING_CALLS.get(name or "")
                if pos is not None and len(node.args) > pos:
                    arg = node.args[pos]
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        self.own.add(arg.value)
            if isinstance(node, _FUNCTIONS + _COMPREHENSIONS):
                self.locals[id(node)] = _local_names(node)
        # `t = torch`, `F = torch.nn.functional`: aliases of aliases, to a fixed point.
        for _ in range(3):
            for target, value in aliases:
                chain = _chain(value)
                if chain and chain[0] in self.modules and isinstance(target, ast.Name):
                    self.modules.setdefault(target.id, ".".join([self.modules[chain[0]], *chain[1:]]))

    def resolve(self, node: ast.AST) -> list[str] | None:
        """The dotted path `node` stands for when it starts at an imported module, else None."""
        chain = _chain(node)
        if not chain or chain[0] not in self.modules:
            return None
        return self.modules[chain[0]].split(".") + chain[1:]

    # -- second pass: every node, with the function scopes around it ----------------------------
    def run(self) -> list[Finding]:
        self.collect()
        stack: list[tuple[ast.AST, tuple[frozenset[str], ...], bool]] = []
        if isinstance(self.tree, ast.Module) and not _rebinds_name(self.tree):
            # `if __name__ == "__main__":` never runs when the file is imported for grading
            # (and cannot be made to, unless `__name__` is rebound): the candidate's own
            # try-out code there may import what it likes.
            for stmt in self.tree.body:
                if _is_main_guard(stmt):
                    assert isinstance(stmt, ast.If)
                    stack += [(stmt.test, (), False), *[(s, (), False) for s in stmt.orelse]]
                else:
                    stack.append((stmt, (), False))
        else:
            stack.append((self.tree, (), False))
        while stack:
            node, scopes, annotation = stack.pop()
            self.visit(node, scopes, annotation)
            stack.extend(self.children(node, scopes, annotation))
        return sorted(set(self.findings), key=lambda f: (f.line, f.id, f.what))

    def children(self, node: ast.AST, scopes: tuple[frozenset[str], ...],
                 annotation: bool) -> Iterator[tuple[ast.AST, tuple[frozenset[str], ...], bool]]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            inner = (*scopes, self.locals[id(node)])
            args = node.args
            for d in [*args.defaults, *[d for d in args.kw_defaults if d is not None]]:
                yield d, scopes, annotation
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if a is not None and a.annotation is not None:
                    yield a.annotation, scopes, True
            if isinstance(node, ast.Lambda):
                yield node.body, inner, annotation
                return
            for d in node.decorator_list:
                yield d, scopes, annotation
            if node.returns is not None:
                yield node.returns, scopes, True
            for stmt in node.body:
                yield stmt, inner, False
            return
        if isinstance(node, _COMPREHENSIONS):
            inner = (*scopes, self.locals[id(node)])
            for i, gen in enumerate(node.generators):
                yield gen.iter, scopes if i == 0 else inner, annotation
                yield gen.target, inner, annotation
                for cond in gen.ifs:
                    yield cond, inner, annotation
            for part in ("elt", "key", "value"):
                if hasattr(node, part):
                    yield getattr(node, part), inner, annotation
            return
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return  # a docstring, or a bare string: not code
        if isinstance(node, ast.AnnAssign):
            yield node.annotation, scopes, True
            yield node.target, scopes, annotation
            if node.value is not None:
                yield node.value, scopes, annotation
            return
        for child in ast.iter_child_nodes(node):
            yield child, scopes, annotation

    def visit(self, node: ast.AST, scopes: tuple[frozenset[str], ...], annotation: bool) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                mid = _module_finding(a.name, self.allow)
                if mid:
                    self.add(mid, node, f"import {a.name}" + (f" as {a.asname}" if a.asname else ""))
        elif isinstance(node, ast.ImportFrom):
            self.visit_from(node)
        elif isinstance(node, ast.Name):
            self.visit_name(node, scopes)
        elif isinstance(node, ast.Attribute):
            self.visit_attribute(node)
        elif isinstance(node, ast.Call):
            self.visit_call(node, scopes)
        elif isinstance(node, ast.MatchClass):
            for attr in node.kwd_attrs:
                if attr in _ESCAPE_ATTRS:
                    self.add(INTROSPECTION, node, f"{attr}= (in a class pattern)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.visit_string(node, annotation)

    def visit_from(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.add(IMPORT, node, f"from {'.' * node.level}{node.module or ''} import ...")
            return
        module = node.module or ""
        mid = _module_finding(module, self.allow)
        if mid:
            self.add(mid, node, f"from {module} import {', '.join(a.name for a in node.names)}")
            return
        for a in node.names:
            if a.name == "*":
                continue
            full = f"{module}.{a.name}"
            if any(full == x or full.startswith(x + ".") for x in self.allow):
                continue
            mid = _path_finding(full.split("."))
            if mid is None and a.name in _ESCAPE_ATTRS:
                mid = INTROSPECTION
            if mid:
                self.add(mid, node, f"from {module} import {a.name}")

    def visit_name(self, node: ast.Name, scopes: tuple[frozenset[str], ...]) -> None:
        if not isinstance(node.ctx, ast.Load) or any(node.id in s for s in scopes):
            return
        if node.id in _BUILTIN_IDS:
            self.add(_BUILTIN_IDS[node.id], node, node.id)
        elif node.id in _ATTR_BUILTINS and id(node) not in self.called:
            self.add(INTROSPECTION, node, f"{node.id} (passed as a value)")

    def visit_attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        path = self.resolve(node)
        if path is not None:
            mid = _path_finding(path)
            if mid:
                self.add(mid, node, ".".join(_chain(node) or [attr]))
                return
        if attr in _ESCAPE_ATTRS:
            self.add(INTROSPECTION, node, f".{attr}")
        elif attr.startswith("_") and not _is_dunder(attr) and attr not in self.own:
            self.add(PRIVATE, node, f".{attr}")

    def visit_call(self, node: ast.Call, scopes: tuple[frozenset[str], ...]) -> None:
        func = node.func
        if not (isinstance(func, ast.Name) and func.id in _ATTR_BUILTINS and not any(func.id in s for s in scopes)):
            return
        self.called.add(id(func))
        if len(node.args) < 2 or any(isinstance(a, ast.Starred) for a in node.args[:2]):
            self.add(INTROSPECTION, node, f"{func.id}(*...)")
            return
        obj, name = node.args[0], node.args[1]
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            # A computed name reaches anything; on the candidate's own `self` it reaches its own parts.
            if not (func.id == "getattr" and isinstance(obj, ast.Name) and obj.id == "self"):
                self.add(INTROSPECTION, node, f"{func.id}(..., <computed name>)")
            return
        attr = name.value
        path = self.resolve(obj)
        if path is not None:
            mid = _path_finding([*path, attr]) or (INTROSPECTION if func.id != "getattr" else None)
            if mid:
                self.add(mid, node, f"{func.id}({'.'.join(_chain(obj) or [])}, {attr!r})")
                return
        if attr in _ESCAPE_ATTRS:
            self.add(INTROSPECTION, node, f"{func.id}(..., {attr!r})")
        elif attr.startswith("_") and not _is_dunder(attr) and attr not in self.own:
            self.add(PRIVATE, node, f"{func.id}(..., {attr!r})")

    def visit_string(self, node: ast.Constant, annotation: bool) -> None:
        text = node.value
        m = _ESCAPE_IN_STRING.search(text)
        if m:
            self.add(INTROSPECTION, node, f"{m.group(0)!r} (in a string)")
        if annotation and len(text) < 10_000:
            # typing.get_type_hints and functools.singledispatch evaluate string annotations.
            try:
                sub = ast.parse(text.strip(), mode="eval")
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return
            for n in ast.walk(sub):
                if "lineno" in n._attributes:
                    n.lineno = node.lineno  # type: ignore[attr-defined]
            inner = _Scan(sub, self.allow)
            inner.modules, inner.own, inner.locals = self.modules, self.own, {}
            for n in ast.walk(sub):
                if isinstance(n, _FUNCTIONS + _COMPREHENSIONS):
                    inner.locals[id(n)] = _local_names(n)
            stack: list[tuple[ast.AST, tuple[frozenset[str], ...], bool]] = [(sub, (), True)]
            while stack:
                n, scopes, ann = stack.pop()
                inner.visit(n, scopes, ann)
                stack.extend(inner.children(n, scopes, ann))
            self.findings += [Finding(f.id, node.lineno, f"{f.what} (in an annotation string)") for f in inner.findings]


def _is_main_guard(stmt: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (either way round)."""
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare):
        return False
    t = stmt.test
    if len(t.ops) != 1 or not isinstance(t.ops[0], ast.Eq):
        return False
    sides = [t.left, t.comparators[0]]
    return any(isinstance(a, ast.Name) and a.id == "__name__" for a in sides) and \
        any(isinstance(a, ast.Constant) and a.value == "__main__" for a in sides)


def _rebinds_name(tree: ast.Module) -> bool:
    """Whether anything in the file may rebind the module's `__name__`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "__name__" and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.Global | ast.Nonlocal) and "__name__" in node.names:
            return True
        if isinstance(node, ast.Import | ast.ImportFrom) and any(
                (a.asname or a.name) == "__name__" for a in node.names):
            return True
        if isinstance(node, ast.arg | ast.MatchAs | ast.MatchStar) and "__name__" in (
                getattr(node, "arg", None), getattr(node, "name", None)):
            return True
        if isinstance(node, ast.ExceptHandler | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and \
                node.name == "__name__":
            return True
    return False


def _local_names(scope: ast.AST) -> frozenset[str]:
    """Names local to a function or comprehension scope (Python's rule: bound anywhere in it,
    not declared global); nested functions and classes keep theirs to themselves."""
    bound: set[str] = set()
    declared_global: set[str] = set()
    if isinstance(scope, _FUNCTIONS):
        a = scope.args
        bound |= {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x is not None}
        todo: list[ast.AST] = [scope.body] if isinstance(scope, ast.Lambda) else list(scope.body)
    else:
        todo = [g.target for g in scope.generators]  # type: ignore[attr-defined]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Global):
            declared_global |= set(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
            todo += [*node.decorator_list, *getattr(node, "bases", []), *[k.value for k in getattr(node, "keywords", [])]]
            if not isinstance(node, ast.ClassDef):
                todo += [*node.args.defaults, *[d for d in node.args.kw_defaults if d is not None]]
            continue
        elif isinstance(node, ast.Lambda):
            todo += [*node.args.defaults, *[d for d in node.args.kw_defaults if d is not None]]
            continue
        elif isinstance(node, _COMPREHENSIONS):
            todo.append(node.generators[0].iter)
            continue
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        todo.extend(ast.iter_child_nodes(node))
    return frozenset(bound - declared_global)


def scan(tree: ast.AST, allow_imports: Iterable[str] = ()) -> list[Finding]:
    """Every policy finding in a parsed file, by line. `allow_imports`: extra modules (and
    their submodules) that may be imported, e.g. ("scipy",)."""
    return _Scan(tree, tuple(allow_imports)).run()


def scan_source(source: str, allow_imports: Iterable[str] = ()) -> list[Finding]:
    """`scan` on source text (raises SyntaxError like `ast.parse`)."""
    return scan(ast.parse(source), allow_imports)


MAX_REFS = 3  # lines shown per diagnostic
MAX_NAMED = 4  # uses named in its explanation
MAX_EVIDENCE = 20  # uses listed in its evidence


def diagnostics(findings: list[Finding], source_lines: list[str], lang: str, *, mode: str = "warn",
                kata_id: str | None = None) -> list[Diagnostic]:
    """One diagnostic per policy id found, pointing at its lines: a warning (`actionable`) in
    mode "warn", the reason the file fails (`essential`) in mode "enforce"."""
    from attnkata.checker.diagnose import catalogue
    from attnkata.checker.messages import msg

    check_mode(mode)
    severity = "essential" if mode == "enforce" else "actionable"
    out: list[Diagnostic] = []
    for mid in POLICY_IDS:
        group: list[Finding] = []
        for f in findings:  # one use per line: `torch._C._nn` is one finding, not two
            if f.id == mid and all(g.line != f.line for g in group):
                group.append(f)
        if not group:
            continue
        m = catalogue.get(mid)
        sep = "、" if lang == "zh" else ", "
        named = sep.join(msg("policy_where", lang, what=f.what, line=f.line) for f in group[:MAX_NAMED])
        if len(group) > MAX_NAMED:
            named += " …"
        note = msg("policy_enforce" if mode == "enforce" else "policy_warn", lang)
        out.append(Diagnostic(
            id=mid, severity=severity, title=m.render("title", lang),
            explanation=f"{m.render('explanation', lang, {'api': named})} {note}",
            fix=m.render("fix", lang),
            evidence=[msg("policy_found", lang, line=f.line, what=f.what) for f in group[:MAX_EVIDENCE]]
            + (["…"] if len(group) > MAX_EVIDENCE else []),
            source=[SourceRef(line=f.line, text=source_lines[f.line - 1].strip()[:200]
                              if 0 < f.line <= len(source_lines) else f.what) for f in group[:MAX_REFS]],
            link=m.link(kata_id, lang),
            data={"policy": mode},
        ))
    return out
