"""The static policy for graded code: what a solution may import and touch, checked on the
parse tree before anything runs.

An attention kata needs torch or NumPy, `math` and a few pure-Python helpers. Code that
imports `os`, evaluates strings, walks frames and `__subclasses__`, or reaches into
`torch._C` is not solving the kata: it is probing the grader. The sandbox stops such code
at run time whatever it does; this policy names it before it runs, with the line:

- `kata check` reports it as a warning and still grades the file;
- `kata mock` refuses the file (not run, failed);
- `kata set grade` runs it too and reports the finding beside its diagnosis; what the finding
  costs is the set's choice (checker/sets/policy_cost.py: `"policy": "flag" | "zero" |
  "penalty:<fraction>"`; `"allow_imports": [...]` accepts more modules).

Findings are grouped into five catalogue ids (see `checker/mistakes.toml`): `policy-import`,
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
from typing import Any

from attnkata.checker.models import Diagnostic, SourceRef

# fmt: off
IMPORT, DYNAMIC, INTROSPECTION, PRIVATE, IO = (
    "policy-import", "policy-dynamic-code", "policy-introspection", "policy-private-api", "policy-io")
POLICY_IDS = (IMPORT, DYNAMIC, INTROSPECTION, PRIVATE, IO)
# Not a ban: a dynamic construct the policy cannot resolve (a computed attribute name on the
# candidate's own object, an annotation string it cannot read). Informative in every mode; a
# graded set lists it for a person to read.
NEEDS_REVIEW = "policy-needs-review"
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
    # Attention by another name: the ONNX ops (torch.onnx.ops.attention) and quantizable
    # layers (a pure-Python nn.MultiheadAttention the run-time ban cannot tell from matmuls).
    "torch.onnx": PRIVATE, "torch.ao": PRIVATE,
    # Compiles at run time (and needs a compiler the sandbox does not start); runs programs.
    "torch.compile": DYNAMIC, "torch.utils.collect_env": IO,
    "torch.utils.cpp_extension": DYNAMIC, "numpy.f2py": DYNAMIC, "numpy.distutils": DYNAMIC,
    "typing.get_type_hints": DYNAMIC, "typing.ForwardRef": DYNAMIC,
    "numpy.ctypeslib": INTROSPECTION,
    # Triton (allowed in the Triton katas): the language and `triton.jit` are the kata; the
    # runtime, compiler and settings are the interpreter that grades it.
    **dict.fromkeys(("triton.runtime", "triton.compiler", "triton.backends", "triton.knobs",
                     "triton.tools", "triton.testing"), PRIVATE),
    **dict.fromkeys(("torch.load", "torch.save", "torch.hub", "torch.from_file", "torch.package",
                     "torch.serialization", "torch.multiprocessing", "torch.distributed", "torch.jit.load",
                     "torch.jit.save", "numpy.load", "numpy.save", "numpy.savez", "numpy.savez_compressed",
                     "numpy.savetxt", "numpy.loadtxt", "numpy.genfromtxt", "numpy.fromfile", "numpy.memmap",
                     "numpy.lib.format", "numpy.lib.npyio", "numpy.DataSource"), IO),
}

# The names a banned path ends with (`load` of `numpy.load`): only these are judged through
# the modules an expression mentions.
_BANNED_LAST = frozenset(p.rsplit(".", 1)[1] for p in _BANNED_PATHS)

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
    "__getattr__", "__setattr__", "__delattr__", "__get__", "__set__", "__wrapped__", "__annotations__",
    "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "gi_frame", "gi_code", "cr_frame", "cr_code",
    "ag_frame", "ag_code", "tb_frame", "tb_next", "co_code", "co_consts", "co_names",
    "ctypes",  # an array's raw pointer (`arr.ctypes.data`)
})
_ESCAPE_IN_STRING = re.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(sorted(map(re.escape, _ESCAPE_ATTRS))) + r")(?![A-Za-z0-9_])")

# Calls whose string argument names an attribute the candidate's own object will have.
_NAMING_CALLS = {"register_buffer": 0, "register_parameter": 0, "add_module": 0, "register_module": 0,
                 "setattr": 1}

# Attribute names that lead where a solution never goes, whatever they hang off: torch's
# dispatcher, NumPy's C bridge, a module reached through another. Flagged on any object the
# policy cannot resolve to a module (`(torch,)[0].ops`, a parameter's `m.ops`), not only on a
# resolved `torch.ops`. Names as common as `.load`, `.save` or `.format` are judged only
# where the object's expression mentions a module (`[np][0].load`).
_BANNED_ANYWHERE: dict[str, str] = {
    **{name: PRIVATE for name in ("ops", "overrides", "library", "classes")},
    **{name: DYNAMIC for name in ("cpp_extension", "f2py", "distutils", "get_type_hints", "ForwardRef",
                                  "evaluate_forward_ref")},
    "ctypeslib": INTROSPECTION,
    **{name: IO for name in ("hub", "from_file", "serialization", "multiprocessing", "distributed", "npyio",
                             "DataSource", "memmap", "savez", "savez_compressed", "savetxt", "loadtxt",
                             "genfromtxt", "fromfile")},
    **_COMPONENT_IDS,
}

# Private names of torch's and NumPy's own objects: never the candidate's, even on its `self`
# (a method's `self` can be made any object: `A.peek(torch)`, `peek.__get__(torch)`).
_LIBRARY_PRIVATE = frozenset({
    "_C", "_VF", "_ops", "_dynamo", "_inductor", "_prims", "_prims_common", "_refs", "_decomp", "_library",
    "_higher_order_ops", "_jit_internal", "_utils", "_utils_internal", "_tensor", "_cdata", "_python_dispatch",
    "_subclasses", "_functorch", "_guards", "_logging", "_classes", "_lazy", "_export", "_sources", "_vmap_internals",
    "_weights_only_unpickler", "_import_utils", "_meta_registrations", "_namedtensor_internals", "_torch_docs",
    "_modules", "_parameters", "_buffers", "_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
    "_global_forward_hooks", "_apply", "_core", "_multiarray_umath", "_pytesttester", "_globals",
    "_distributor_init", "_typing", "_mat", "_base", "_version", "_grad_fn",
})

# Decorators after which a method's first parameter is still the instance (or class) it is
# called on; any other decorator may call the function with an object of its choosing.
_PLAIN_DECORATORS = frozenset({"property", "classmethod", "functools.cached_property", "abc.abstractmethod",
                               "torch.no_grad", "torch.inference_mode", "torch.enable_grad"})

MAX_ANNOTATION = 10_000  # characters of an annotation string read as code

# Dispatchers that evaluate their functions' annotations (`typing.get_type_hints`) to register them.
_DISPATCH = frozenset({"functools.singledispatch", "functools.singledispatchmethod"})

# fmt: on
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclass(frozen=True)
class Finding:
    """One use of something the policy forbids."""

    id: str  # one of POLICY_IDS, or NEEDS_REVIEW
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
    """`a.b.c` -> ["a", "b", "c"]; None when the chain does not start at a plain name. A
    walrus is seen through: `(t := torch).ops` is `torch.ops`."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute | ast.NamedExpr):
        if isinstance(node, ast.NamedExpr):
            node = node.value
            continue
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


class _Scan:
    def __init__(
        self,
        tree: ast.AST,
        allow: tuple[str, ...],
        exact: tuple[str, ...] = (),
        banned: dict[str, str] | None = None,
    ) -> None:
        self.tree = tree
        self.allow = allow
        self.exact = exact  # modules allowed as such, not their submodules (a kata's own)
        self.banned = banned or {}  # dotted paths a kata bans beyond _BANNED_PATHS -> id
        self.findings: list[Finding] = []
        self.modules: dict[str, str] = {}  # name -> dotted module (or module member) it stands for
        self.may_be: dict[str, set[str]] = {}  # name -> dotted modules its value was computed from
        self.own_attrs: set[str] = (
            set()
        )  # attribute names the candidate's own objects get from the file
        self.own_self: set[int] = (
            set()
        )  # id() of `self`/`cls` loads that are a method's own instance
        self.self_private: dict[
            str, set[str]
        ] = {}  # class -> its methods that touch `self._private`
        self.class_names: dict[str, set[str]] = {}  # name -> the file's classes it may stand for
        self.seen: dict[int, frozenset[str]] = {}  # id(expression) -> mentioned(expression)
        self.locals: dict[
            int, frozenset[str]
        ] = {}  # id(function or comprehension) -> its local names
        self.called: set[int] = set()  # id() of `getattr` names that are called, not passed around
        self.future_annotations = (
            False  # `from __future__ import annotations`: every annotation is a string
        )
        self.string_annotations: list[
            ast.AST
        ] = []  # annotations of decorated functions that are strings
        self.dispatch: list[tuple[ast.AST, str]] = []  # uses of functools.singledispatch(method)

    def add(self, mid: str, node: ast.AST, what: str) -> None:
        self.findings.append(Finding(mid, getattr(node, "lineno", 1) or 1, what))

    # -- first pass: names ------------------------------------------------------------------
    def collect(self) -> None:
        aliases: list[tuple[ast.AST, ast.AST]] = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.modules[a.asname] = a.name
                    else:
                        root = a.name.split(".")[0]
                        self.modules[root] = root
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                if node.module == "__future__" and any(a.name == "annotations" for a in node.names):
                    self.future_annotations = True
                for a in node.names:
                    if a.name != "*":
                        self.modules[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Assign):
                aliases += [(t, node.value) for t in node.targets]
            elif isinstance(node, ast.AnnAssign | ast.AugAssign) and node.value is not None:
                aliases.append((node.target, node.value))
            elif isinstance(node, ast.NamedExpr):
                aliases.append((node.target, node.value))
            elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                aliases.append((node.target, node.iter))
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                aliases.append((node.optional_vars, node.context_expr))
            elif isinstance(node, _FUNCTIONS):
                a = node.args
                positional = [*a.posonlyargs, *a.args]
                for arg, default in zip(
                    positional[len(positional) - len(a.defaults) :], a.defaults, strict=True
                ):
                    aliases.append((ast.Name(arg.arg, ast.Store()), default))
                for arg, kw in zip(a.kwonlyargs, a.kw_defaults, strict=True):
                    if kw is not None:
                        aliases.append((ast.Name(arg.arg, ast.Store()), kw))
            if isinstance(node, _FUNCTIONS + _COMPREHENSIONS):
                self.locals[id(node)] = _local_names(node)
            if isinstance(node, ast.ClassDef):
                self.class_names.setdefault(node.name, set()).add(node.name)
                self.collect_class(node)
            elif self.own_self:
                self.collect_own(node)
        # `t = torch`, `F = torch.nn.functional`: aliases of aliases, to a fixed point.
        for _ in range(3):
            for target, value in aliases:
                chain = _chain(value)
                if chain and chain[0] in self.modules and isinstance(target, ast.Name):
                    self.modules.setdefault(
                        target.id, ".".join([self.modules[chain[0]], *chain[1:]])
                    )
        # `t = (torch,)[0]`, `m = [np][0]`: a name computed from a module may be that module.
        # Each value read once: the modules it names, and the plain names it reads.
        flows: list[tuple[list[str], frozenset[str], frozenset[str]]] = []
        for target, value in aliases:
            bound = _bound_names(target)
            if not bound:
                continue
            static: set[str] = set()
            names: set[str] = set()
            for n in ast.walk(value):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                    if n.id in self.modules:
                        static.add(self.modules[n.id])
                    else:
                        names.add(n.id)
                elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
                    path = self.resolve(n)
                    if path is not None:
                        static.add(".".join(path))
            if static or names:
                flows.append((bound, frozenset(static), frozenset(names)))
        for _ in range(3):
            changed = False
            for bound, static, names in flows:
                mentioned = set(static).union(*(self.may_be[n] for n in names if n in self.may_be))
                for name in bound if mentioned else ():
                    before = len(self.may_be.setdefault(name, set()))
                    self.may_be[name] |= mentioned
                    changed = changed or len(self.may_be[name]) != before
            if not changed:
                break
        # `K = A`: a name for one of the file's classes (`self.class_names` starts with the classes).
        for _ in range(3 if self.class_names else 0):
            for bound, _static, names in flows:
                classes = set().union(
                    *(self.class_names[n] for n in names if n in self.class_names)
                )
                for name in bound if classes else ():
                    self.class_names.setdefault(name, set()).update(classes)

    def collect_own(self, node: ast.AST) -> None:
        """What the candidate's own objects are given by the file: `self._cache = ...`,
        `self.register_buffer("_mask", ...)`, `setattr(self, "_w", ...)`. (Called in
        `collect`'s breadth-first walk: a class, and so its methods' `self`, comes first.)"""
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store | ast.Del)
            and self.is_own(node.value)
        ):
            self.own_attrs.add(node.attr)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and self.is_own(func.value):
                name, obj_pos = func.attr, None
            elif isinstance(func, ast.Name):
                name, obj_pos = func.id, 0
            else:
                return
            pos = _NAMING_CALLS.get(name)
            if (
                pos is None
                or len(node.args) <= pos
                or (obj_pos is not None and not self.is_own(node.args[0]))
            ):
                return
            arg = node.args[pos]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                self.own_attrs.add(arg.value)

    def collect_class(self, cls: ast.ClassDef) -> None:
        """The class's own names, and the `self`/`cls` of its methods that stand for its instance."""
        private_users: set[str] = set()
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.own_attrs.add(stmt.name)
            elif isinstance(stmt, ast.Assign | ast.AnnAssign):
                for t in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                    self.own_attrs |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
            if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            a = stmt.args
            positional = [*a.posonlyargs, *a.args]
            if not positional or not all(self.plain_decorator(d) for d in stmt.decorator_list):
                continue
            first = positional[0].arg
            if any(
                isinstance(n, ast.Name)
                and n.id == first
                and not isinstance(n.ctx, ast.Load)
                or isinstance(n, ast.Global | ast.Nonlocal)
                and first in n.names
                for n in ast.walk(stmt)
                if n is not stmt
            ):
                continue  # `self = ...` somewhere: not provably the instance
            loads = _loads_of(stmt, first)
            self.own_self |= loads
            if any(_reads_private(n, loads) for n in ast.walk(stmt)):
                private_users.add(stmt.name)
        if private_users:
            self.self_private.setdefault(cls.name, set()).update(private_users)

    def plain_decorator(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Call):
            node = node.func
        chain = _chain(node)
        if not chain:
            return False
        if len(chain) == 2 and chain[1] in ("setter", "getter", "deleter"):
            return True
        if chain == ["property"] or chain == ["classmethod"]:
            return True
        path = self.resolve(node)
        return path is not None and ".".join(path) in _PLAIN_DECORATORS

    def is_own(self, node: ast.AST) -> bool:
        """Whether `node` is provably the candidate's own object: a method's `self` (or `cls`)."""
        return isinstance(node, ast.Name) and id(node) in self.own_self

    def mentioned(self, node: ast.AST) -> frozenset[str]:
        """The dotted modules (and module members) an expression's value may have come from.
        Each node is judged once (`self.seen`, bottom up): hostile text with a huge expression
        under a long chain of attributes costs linear time."""
        seen = self.seen
        stack: list[tuple[ast.AST, bool]] = [(node, False)]
        while stack:
            n, children_done = stack.pop()
            if id(n) in seen:
                continue
            if not children_done:
                stack.append((n, True))
                stack.extend((c, False) for c in ast.iter_child_nodes(n) if id(c) not in seen)
                continue
            out: frozenset[str] = frozenset().union(*(seen[id(c)] for c in ast.iter_child_nodes(n)))
            if isinstance(n, ast.Name | ast.Attribute) and isinstance(n.ctx, ast.Load):
                path = self.resolve(n)
                if path is not None:
                    out |= {".".join(path)}
                elif isinstance(n, ast.Name) and n.id in self.may_be:
                    out |= self.may_be[n.id]
            seen[id(n)] = out
        return seen[id(node)]

    def resolve(self, node: ast.AST) -> list[str] | None:
        """The dotted path `node` stands for when it starts at an imported module, else None."""
        chain = _chain(node)
        if not chain or chain[0] not in self.modules:
            return None
        return self.modules[chain[0]].split(".") + chain[1:]

    def collect_instances(self) -> None:
        """A name that its scope binds only to a new instance of one of the file's plain
        classes (`cache = SinkCache(...)`) stands for the file's own object there, as a
        method's `self` does: `cache._rotate(...)` is the candidate's own private name.
        Plain: a module-level class bound once, undecorated (or a dataclass), without a
        metaclass or hooks that could hand back or reach another object (`__new__`,
        `__getattr__`, `__getattribute__`, descriptors), whose bases are plain too (or
        `object`, `torch.nn.Module`)."""
        plain = self._plain_classes()
        if not plain:
            return
        walrus = {
            n.target.id
            for n in ast.walk(self.tree)
            if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name)
        }
        scopes = [
            n for n in ast.walk(self.tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        ]
        for scope in [self.tree, *scopes]:
            for name in _instance_names(scope, plain) - walrus:
                if isinstance(scope, ast.Module):
                    self.own_self |= _loads_of(ast.FunctionDef(name="", body=scope.body), name)  # type: ignore[call-arg]
                else:
                    self.own_self |= _loads_of(scope, name)

    def _plain_classes(self) -> set[str]:
        if not isinstance(self.tree, ast.Module):
            return set()
        bound: dict[str, int] = {}
        for n in ast.walk(self.tree):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                bound[n.id] = bound.get(n.id, 0) + 1
            elif isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                bound[n.name] = bound.get(n.name, 0) + 1
            elif isinstance(n, ast.Global | ast.Nonlocal | ast.Import | ast.ImportFrom):
                for alias in n.names:
                    name = alias if isinstance(alias, str) else (alias.asname or alias.name)
                    bound[name.split(".")[0]] = bound.get(name.split(".")[0], 0) + 2
        plain: set[str] = set()
        classes = [s for s in self.tree.body if isinstance(s, ast.ClassDef)]
        for _ in range(len(classes)):  # bases first: a class is plain once its bases are
            for cls in classes:
                if cls.name in plain or bound.get(cls.name) != 1 or cls.keywords:
                    continue
                if any(
                    ".".join(self.resolve(d.func if isinstance(d, ast.Call) else d) or [])
                    not in ("dataclasses.dataclass",)
                    and _chain(d) != ["dataclass"]
                    for d in cls.decorator_list
                ):
                    continue
                if not all(
                    (isinstance(b, ast.Name) and b.id in plain)
                    or _chain(b) == ["object"]
                    or ".".join(self.resolve(b) or []) in _PLAIN_BASES
                    for b in cls.bases
                ):
                    continue
                defined = {
                    t.id
                    for s in cls.body
                    for t in (
                        [ast.Name(s.name)]
                        if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                        else ast.walk(s)
                    )
                    if isinstance(t, ast.Name)
                }
                if not defined & _HOOKS:
                    plain.add(cls.name)
        return plain

    # -- second pass: every node, with the function scopes around it ----------------------------
    def run(self) -> list[Finding]:
        self.collect()
        self.collect_instances()
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
        for name in sorted({name for _, name in self.dispatch}):
            # It registers a function by its annotations, evaluating those that are strings.
            for node in self.string_annotations:
                self.add(DYNAMIC, node, f"annotation {_text(node)!r} (evaluated by {name})")
        return sorted(set(self.findings), key=lambda f: (f.line, f.id, f.what))

    def children(
        self, node: ast.AST, scopes: tuple[frozenset[str], ...], annotation: bool
    ) -> Iterator[tuple[ast.AST, tuple[frozenset[str], ...], bool]]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            inner = (*scopes, self.locals[id(node)])
            args = node.args
            for d in [*args.defaults, *[d for d in args.kw_defaults if d is not None]]:
                yield d, scopes, annotation
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if a is not None and a.annotation is not None:
                    self.check_annotation(a.annotation, bool(getattr(node, "decorator_list", ())))
                    yield a.annotation, scopes, True
            if isinstance(node, ast.Lambda):
                yield node.body, inner, annotation
                return
            for d in node.decorator_list:
                yield d, scopes, annotation
            if node.returns is not None:
                self.check_annotation(node.returns, bool(node.decorator_list))
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
            self.check_annotation(node.annotation, False)
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
                mid = self.module_finding(a.name)
                if mid:
                    self.add(
                        mid, node, f"import {a.name}" + (f" as {a.asname}" if a.asname else "")
                    )
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
                self.judge_match_name(attr, node, "a class pattern")
        elif (
            isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value is not None
        ):
            self.visit_match_args(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.visit_string(node, annotation)

    def visit_from(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.add(IMPORT, node, f"from {'.' * node.level}{node.module or ''} import ...")
            return
        module = node.module or ""
        mid = self.module_finding(module)
        if mid:
            self.add(mid, node, f"from {module} import {', '.join(a.name for a in node.names)}")
            return
        for a in node.names:
            if a.name == "*":
                continue
            full = f"{module}.{a.name}"
            if any(full == x or full.startswith(x + ".") for x in self.allow):
                continue
            mid = self.banned.get(full) or _path_finding(full.split("."))
            if mid is None and a.name in _ESCAPE_ATTRS:
                mid = INTROSPECTION
            if mid:
                self.add(mid, node, f"from {module} import {a.name}")

    def module_finding(self, module: str) -> str | None:
        if module in self.exact:
            return None
        return _module_finding(module, self.allow)

    def visit_name(self, node: ast.Name, scopes: tuple[frozenset[str], ...]) -> None:
        if not isinstance(node.ctx, ast.Load) or any(node.id in s for s in scopes):
            return
        if self.modules.get(node.id) in _DISPATCH:
            self.dispatch.append((node, self.modules[node.id]))
        if node.id in _BUILTIN_IDS:
            self.add(_BUILTIN_IDS[node.id], node, node.id)
        elif node.id in _ATTR_BUILTINS and id(node) not in self.called:
            self.add(INTROSPECTION, node, f"{node.id} (passed as a value)")

    def visit_attribute(self, node: ast.Attribute) -> None:
        path = self.resolve(node)
        if path is not None and ".".join(path) in _DISPATCH:
            self.dispatch.append((node, ".".join(path)))
        elif path is None and f"functools.{node.attr}" in _DISPATCH:
            self.dispatch.append(
                (node, f"functools.{node.attr}")
            )  # `[functools][0].singledispatch`
        mid, what = self.judge_attribute(node.value, node.attr)
        if mid:
            self.add(mid, node, what)
            return
        if self.unbound_method(node.value, node.attr):
            self.add(
                PRIVATE,
                node,
                f"{ast.unparse(node.value)[:60]}.{node.attr} (a method taken from its class: "
                "its self can be any object)",
            )

    def judge_attribute(self, base: ast.AST, attr: str, how: str = "") -> tuple[str | None, str]:
        """The finding (id, what) for reading attribute `attr` of `base`, or (None, "")."""
        shown = how or f".{attr}"
        path = self.resolve(base)
        if path is not None:
            mid = self.banned.get(".".join([*path, attr])) or _path_finding([*path, attr])
            if mid:
                return mid, how or ".".join([*(_chain(base) or []), attr])
            # `torch.select`, `torch.signal`: a resolved module's own public names are fine.
            return self.judge_name(attr, base, shown)
        if attr in _BANNED_ANYWHERE and not (self.is_own(base) and attr in self.own_attrs):
            return _BANNED_ANYWHERE[attr], shown
        mid, what = self.judge_name(attr, base, shown)
        if mid:
            return mid, what
        if attr not in _BANNED_LAST or self.is_own(base):
            return None, ""
        for module in sorted(self.mentioned(base)):
            mid = _path_finding([*module.split("."), attr])
            if mid:
                return mid, f"{shown} (of {module})"
        return None, ""

    def judge_name(self, attr: str, base: ast.AST, shown: str) -> tuple[str | None, str]:
        if attr in _ESCAPE_ATTRS:
            return INTROSPECTION, shown
        if (
            attr.startswith("_")
            and not _is_dunder(attr)
            and not (self.is_own(base) and attr in self.own_attrs and attr not in _LIBRARY_PRIVATE)
        ):
            return PRIVATE, shown
        return None, ""

    def unbound_method(self, base: ast.AST, attr: str) -> bool:
        """Whether `base.attr` takes a method that reads `self._private` from its class (`A.peek`,
        an alias of `A`, `type(x).peek`, `x.__class__.peek`): called so, its `self` is any object."""
        if (
            isinstance(base, ast.Call)
            and isinstance(base.func, ast.Name)
            and base.func.id == "type"
            or isinstance(base, ast.Attribute)
            and base.attr == "__class__"
        ):
            return any(attr in users for users in self.self_private.values())
        if isinstance(base, ast.Name) and not self.is_own(base):  # (an own instance: bound)
            return any(
                attr in self.self_private.get(c, ()) for c in self.class_names.get(base.id, ())
            )
        return False

    def visit_call(self, node: ast.Call, scopes: tuple[frozenset[str], ...]) -> None:
        func = node.func
        if (
            isinstance(func, ast.Name)
            and func.id == "hasattr"
            and not any(func.id in s for s in scopes)
        ):
            if len(node.args) >= 2 and not (
                isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
            ):
                self.add(NEEDS_REVIEW, node, "hasattr(..., <computed name>)")
            return
        if not (
            isinstance(func, ast.Name)
            and func.id in _ATTR_BUILTINS
            and not any(func.id in s for s in scopes)
        ):
            return
        self.called.add(id(func))
        if len(node.args) < 2 or any(isinstance(a, ast.Starred) for a in node.args[:2]):
            self.add(INTROSPECTION, node, f"{func.id}(*...)")
            return
        obj, name = node.args[0], node.args[1]
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            # A computed name reaches anything. Read from a method's own `self` it reaches that
            # object's parts, which a person may want to read: not banned, but not silent.
            if func.id == "getattr" and self.is_own(obj):
                self.add(NEEDS_REVIEW, node, f"getattr({ast.unparse(obj)}, <computed name>)")
            else:
                self.add(INTROSPECTION, node, f"{func.id}(..., <computed name>)")
            return
        attr = name.value
        how = f"{func.id}({ast.unparse(obj)[:60]}, {attr!r})"
        if f"functools.{attr}" in _DISPATCH:
            self.dispatch.append((node, f"functools.{attr}"))
        if func.id != "getattr" and attr == "__match_args__":
            self.add(INTROSPECTION, node, how)
            return
        path = self.resolve(obj)
        if path is not None and func.id != "getattr" and not _path_finding([*path, attr]):
            self.add(INTROSPECTION, node, how)  # changing a module
            return
        mid, what = self.judge_attribute(obj, attr, how)
        if mid:
            self.add(mid, node, what)
        elif self.unbound_method(obj, attr):
            self.add(
                PRIVATE, node, f"{how} (a method taken from its class: its self can be any object)"
            )

    def visit_match_args(self, node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> None:
        """`__match_args__` turns a positional `case C(x)` into `getattr(obj, name)` for each
        name it lists: those names are attribute accesses."""
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not any(
            isinstance(t, ast.Name)
            and t.id == "__match_args__"
            or isinstance(t, ast.Attribute)
            and t.attr == "__match_args__"
            for t in targets
        ):
            return
        value = node.value
        if not (
            isinstance(value, ast.Tuple | ast.List)
            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts)
        ):
            self.add(INTROSPECTION, node, "__match_args__ = <computed>")
            return
        for e in value.elts:
            self.judge_match_name(e.value, node, "__match_args__")  # type: ignore[attr-defined]

    def judge_match_name(self, name: str, node: ast.AST, where: str) -> None:
        if _is_dunder(name) or name in _ESCAPE_ATTRS or name in _BANNED_ANYWHERE:
            self.add(INTROSPECTION, node, f"{name!r} (in {where})")
        elif name.startswith("_"):  # whatever the file defines: the subject can be any object
            self.add(PRIVATE, node, f"{name!r} (in {where})")

    def check_annotation(self, node: ast.AST, decorated: bool) -> None:
        """An annotation that some library may evaluate as code (a string, or any annotation
        under `from __future__ import annotations`) must be a type and nothing else."""
        is_string = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if not (is_string or self.future_annotations):
            return
        if decorated:
            self.string_annotations.append(node)
        if is_string:
            text = node.value  # type: ignore[attr-defined]
            if len(text) >= MAX_ANNOTATION:
                self.add(
                    DYNAMIC,
                    node,
                    f"annotation of {len(text)} characters (too long to read as a type)",
                )
                return
            try:
                ast.parse(text.strip(), mode="eval")
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self.add(NEEDS_REVIEW, node, f"annotation {text[:40]!r} (not readable as a type)")
                return
        try:
            is_type = _is_type_expression(node)
        except (RecursionError, MemoryError):
            is_type = False
        if not is_type:
            self.add(DYNAMIC, node, f"annotation {_text(node)!r} (evaluated as code, not a type)")

    def visit_string(self, node: ast.Constant, annotation: bool) -> None:
        text = node.value
        m = _ESCAPE_IN_STRING.search(text)
        if m:
            self.add(INTROSPECTION, node, f"{m.group(0)!r} (in a string)")
        if annotation and len(text) < MAX_ANNOTATION:  # a longer one is flagged as such
            # typing.get_type_hints and functools.singledispatch evaluate string annotations.
            try:
                sub = ast.parse(text.strip(), mode="eval")
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return
            for n in ast.walk(sub):
                if "lineno" in n._attributes:
                    n.lineno = node.lineno  # type: ignore[attr-defined]
            inner = _Scan(sub, self.allow, self.exact, self.banned)
            inner.modules, inner.may_be, inner.own_attrs, inner.locals = (
                self.modules,
                self.may_be,
                self.own_attrs,
                {},
            )
            for n in ast.walk(sub):
                if isinstance(n, _FUNCTIONS + _COMPREHENSIONS):
                    inner.locals[id(n)] = _local_names(n)
            stack: list[tuple[ast.AST, tuple[frozenset[str], ...], bool]] = [(sub, (), True)]
            while stack:
                n, scopes, ann = stack.pop()
                inner.visit(n, scopes, ann)
                stack.extend(inner.children(n, scopes, ann))
            self.findings += [
                Finding(f.id, node.lineno, f"{f.what} (in an annotation string)")
                for f in inner.findings
            ]


def _is_main_guard(stmt: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (either way round)."""
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare):
        return False
    t = stmt.test
    if len(t.ops) != 1 or not isinstance(t.ops[0], ast.Eq):
        return False
    sides = [t.left, t.comparators[0]]
    return any(isinstance(a, ast.Name) and a.id == "__name__" for a in sides) and any(
        isinstance(a, ast.Constant) and a.value == "__main__" for a in sides
    )


def _rebinds_name(tree: ast.Module) -> bool:
    """Whether anything in the file may rebind the module's `__name__`."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Name)
            and node.id == "__name__"
            and not isinstance(node.ctx, ast.Load)
        ):
            return True
        if isinstance(node, ast.Global | ast.Nonlocal) and "__name__" in node.names:
            return True
        if isinstance(node, ast.Import | ast.ImportFrom) and any(
            (a.asname or a.name) == "__name__" for a in node.names
        ):
            return True
        if isinstance(node, ast.arg | ast.MatchAs | ast.MatchStar) and "__name__" in (
            getattr(node, "arg", None),
            getattr(node, "name", None),
        ):
            return True
        if (
            isinstance(
                node, ast.ExceptHandler | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
            )
            and node.name == "__name__"
        ):
            return True
    return False


def _text(annotation: ast.AST) -> str:
    """An annotation as written, shortened."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value[:60]
    return ast.unparse(annotation)[:60]


def _reads_private(node: ast.AST, loads: set[int]) -> bool:
    """Whether `node` reads a `_private` attribute of the object whose loads are `loads`, or
    any attribute by a computed name (`getattr(self, name)`)."""
    if isinstance(node, ast.Attribute):
        return id(node.value) in loads and node.attr.startswith("_") and not _is_dunder(node.attr)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _ATTR_BUILTINS
    ):
        args = node.args
        return (
            len(args) >= 2
            and id(args[0]) in loads
            and not (
                isinstance(args[1], ast.Constant)
                and isinstance(args[1].value, str)
                and not args[1].value.startswith("_")
            )
        )
    return False


def _bound_names(target: ast.AST) -> list[str]:
    """The plain names an assignment target binds (`a`, `a, *b`), not `x.y` or `x[i]`'s `x`."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    if isinstance(target, ast.Tuple | ast.List):
        return [n for e in target.elts for n in _bound_names(e)]
    return []


# What a class may define that lets an instance be or reach another object (collect_instances).
_HOOKS = frozenset(
    {
        "__new__",
        "__getattr__",
        "__getattribute__",
        "__setattr__",
        "__class__",
        "__init_subclass__",
        "__set_name__",
        "__get__",
        "__set__",
        "__delete__",
        "__class_getitem__",
        "__dict__",
        "__slots__",
    }
)
_PLAIN_BASES = ("object", "torch.nn.Module", "torch.nn.modules.module.Module")


def _instance_names(scope: ast.AST, plain: set[str]) -> set[str]:
    """Names `scope` (a module or function) binds, not through a nested scope, only as
    `name = PlainClass(...)`: never an argument, global, import, loop or `with` target..."""
    ok: dict[str, bool] = {}
    if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        a = scope.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
            if arg is not None:
                ok[arg.arg] = False
    todo: list[ast.AST] = list(getattr(scope, "body", []))
    while todo:
        node = todo.pop()
        if isinstance(node, _FUNCTIONS + _COMPREHENSIONS + (ast.ClassDef,)):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                ok[node.name] = False
            continue
        if isinstance(node, ast.Global | ast.Nonlocal):
            ok.update(dict.fromkeys(node.names, False))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            ok.update({(a.asname or a.name).split(".")[0]: False for a in node.names})
        elif isinstance(node, ast.ExceptHandler) and node.name:
            ok[node.name] = False
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            ok[node.name] = False
        elif isinstance(node, ast.MatchMapping) and node.rest:
            ok[node.rest] = False
        elif isinstance(node, ast.Assign):
            value, targets = node.value, node.targets
            made = (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id in plain
            )
            if made and len(targets) == 1 and isinstance(targets[0], ast.Name):
                ok.setdefault(targets[0].id, True)
                todo.append(value)
                continue
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            ok[node.id] = False
        todo.extend(ast.iter_child_nodes(node))
    return {name for name, fine in ok.items() if fine}


def _loads_of(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> set[int]:
    """id() of every load of `name` in `fn`'s body that reads `fn`'s own variable (not one of
    a nested function or comprehension that binds the same name)."""
    out: set[int] = set()
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, _FUNCTIONS + _COMPREHENSIONS) and name in _local_names(node):
            continue
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            out.add(id(node))
        todo.extend(ast.iter_child_nodes(node))
    return out


def _is_type_expression(node: ast.AST, depth: int = 0) -> bool:
    """Whether an annotation is a type and nothing else: a dotted name, `X[...]` of types,
    `X | Y`, `None`, `...`, a list of types (Callable's), a string holding one, `Literal[...]`."""
    if depth > 120:
        return False
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return (
            _chain(node) is not None
            and not isinstance(node.value, ast.NamedExpr)
            and all(
                isinstance(n, ast.Name | ast.Attribute)
                for n in ast.walk(node)
                if n is not node and not isinstance(n, ast.expr_context)
            )
        )
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            if len(node.value) >= MAX_ANNOTATION:
                return False
            try:
                inner = ast.parse(node.value.strip(), mode="eval").body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return False
            return _is_type_expression(inner, depth + 1)
        return node.value is None or node.value is Ellipsis
    if isinstance(node, ast.BinOp):
        return (
            isinstance(node.op, ast.BitOr)
            and _is_type_expression(node.left, depth + 1)
            and _is_type_expression(node.right, depth + 1)
        )
    if isinstance(node, ast.List | ast.Tuple):
        return all(_is_type_expression(e, depth + 1) for e in node.elts)
    if isinstance(node, ast.Starred):
        return _is_type_expression(node.value, depth + 1)
    if isinstance(node, ast.Subscript):
        chain = _chain(node.value)
        if chain is None or not _is_type_expression(node.value, depth + 1):
            return False
        if chain[-1] == "Literal":  # values, not types: constants and enum members
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return all(
                isinstance(i, ast.Constant)
                and not isinstance(i.value, str | bytes)
                or isinstance(i, ast.Constant)
                and len(i.value) < 200
                or isinstance(i, ast.UnaryOp)
                and isinstance(i.operand, ast.Constant)
                or _chain(i) is not None
                and _is_type_expression(i, depth + 1)
                for i in items
            )
        return _is_type_expression(node.slice, depth + 1)
    return False


def _local_names(scope: ast.AST) -> frozenset[str]:
    """Names local to a function or comprehension scope (Python's rule: bound anywhere in it,
    not declared global); nested functions and classes keep theirs to themselves."""
    bound: set[str] = set()
    declared_global: set[str] = set()
    if isinstance(scope, _FUNCTIONS):
        a = scope.args
        bound |= {
            x.arg
            for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
            if x is not None
        }
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
            todo += [
                *node.decorator_list,
                *getattr(node, "bases", []),
                *[k.value for k in getattr(node, "keywords", [])],
            ]
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


def scan(
    tree: ast.AST,
    allow_imports: Iterable[str] = (),
    *,
    review: bool = False,
    exact_imports: Iterable[str] = (),
    ban: Iterable[str] = (),
) -> list[Finding]:
    """Every policy finding in a parsed file, by line. `allow_imports`: extra modules (and
    their submodules) that may be imported, e.g. ("scipy",). `review`: include the
    NEEDS_REVIEW findings (dynamic constructs that are not banned but not resolved either).
    `exact_imports`: modules that may be imported, without their submodules (a kata's own:
    `triton`, `triton.language`); `ban`: dotted paths found as `policy-dynamic-code` (a
    kata's own: `torch.compile` writes the kernel the Triton katas ask for)."""
    found = _Scan(
        tree, tuple(allow_imports), tuple(exact_imports), dict.fromkeys(ban, DYNAMIC)
    ).run()
    return found if review else [f for f in found if f.id != NEEDS_REVIEW]


def kata_rules(kata: Any) -> dict[str, tuple[str, ...]]:
    """A kata's own policy (kata.toml `allow_imports`, `ban`) as `scan`'s keywords."""
    return {"exact_imports": tuple(kata.allow_imports), "ban": tuple(kata.ban)}


def scan_source(
    source: str, allow_imports: Iterable[str] = (), *, review: bool = False, **kata: Any
) -> list[Finding]:
    """`scan` on source text (raises SyntaxError like `ast.parse`); `kata`: `exact_imports`
    and `ban` as `scan` takes them."""
    return scan(ast.parse(source), allow_imports, review=review, **kata)


MAX_REFS = 3  # lines shown per diagnostic
MAX_NAMED = 4  # uses named in its explanation
MAX_EVIDENCE = 20  # uses listed in its evidence


def diagnostics(
    findings: list[Finding],
    source_lines: list[str],
    lang: str,
    *,
    mode: str = "warn",
    kata_id: str | None = None,
) -> list[Diagnostic]:
    """One diagnostic per policy id found, pointing at its lines: a warning (`actionable`) in
    mode "warn", the reason the file fails (`essential`) in mode "enforce"; NEEDS_REVIEW is a
    note (`informative`) in both."""
    from attnkata.checker import mistakes
    from attnkata.checker.messages import msg

    check_mode(mode)
    severity = "essential" if mode == "enforce" else "actionable"
    out: list[Diagnostic] = []
    for mid in (*POLICY_IDS, NEEDS_REVIEW):
        group: list[Finding] = []
        for f in findings:  # one use per line: `torch._C._nn` is one finding, not two
            if f.id == mid and all(g.line != f.line for g in group):
                group.append(f)
        if not group:
            continue
        m = mistakes.get(mid)
        sep = "、" if lang == "zh" else ", "
        named = sep.join(
            msg("policy_where", lang, what=f.what, line=f.line) for f in group[:MAX_NAMED]
        )
        if len(group) > MAX_NAMED:
            named += " …"
        note = msg(
            "policy_review"
            if mid == NEEDS_REVIEW
            else "policy_enforce"
            if mode == "enforce"
            else "policy_warn",
            lang,
        )
        out.append(
            Diagnostic(
                id=mid,
                severity="informative" if mid == NEEDS_REVIEW else severity,
                title=m.render("title", lang),
                explanation=f"{m.render('explanation', lang, {'api': named})} {note}",
                fix=m.render("fix", lang),
                evidence=[
                    msg("policy_found", lang, line=f.line, what=f.what)
                    for f in group[:MAX_EVIDENCE]
                ]
                + (["…"] if len(group) > MAX_EVIDENCE else []),
                source=[
                    SourceRef(
                        line=f.line,
                        text=source_lines[f.line - 1].strip()[:200]
                        if 0 < f.line <= len(source_lines)
                        else f.what,
                    )
                    for f in group[:MAX_REFS]
                ],
                link=m.link(kata_id, lang),
                data={"policy": mode},
            )
        )
    return out
