"""Holes in the static policy (issue 22, item 2), closed: `getattr` on any `self`, attribute
chains that do not start at a plain name, `_names` the file assigns allowed on any object,
annotation strings evaluated by library code, `__match_args__` and keyword class patterns.
Each attack in tests/fixtures/attacks3/policy_*.py is a correct `sdpa` solution that also
tries a hole: every `# policy: id` line is flagged with that id, and nothing else is. No
real, alternative, mistaken or reference solution gets a finding (the policy's precision)."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnkata.checker import mistakes, policy
from attnkata.checker.catalog import all_katas, get_kata
from attnkata.checker.static import check_source, stop_status
from attnkata.cli.app import app

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
ATTACKS = sorted((FIXTURES / "attacks3").glob("policy_*.py"))


def found(source: str) -> set[tuple[int, str]]:
    return {(f.line, f.id) for f in policy.scan_source(source, review=True)}


def _markers(source: str) -> set[tuple[int, str]]:
    """What an attack expects: each `# policy: id[, id]` comment (a comment token, never text in
    a string), by its line."""
    want: set[tuple[int, str]] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT and tok.string.startswith("# policy:"):
            ids = tok.string.removeprefix("# policy:").split("#")[0]
            want |= {(tok.start[0], mid.strip()) for mid in ids.split(",")}
    return want


def test_every_hole_has_attacks():
    assert {p.stem for p in ATTACKS} >= {
        "policy_self_getattr",
        "policy_chain_subscript",
        "policy_chain_call",
        "policy_own_private",
        "policy_annotation_strings",
        "policy_annotation_future",
        "policy_match_args",
        "policy_needs_review",
    }


@pytest.mark.parametrize("path", ATTACKS, ids=lambda p: p.stem)
def test_each_attack_is_flagged_with_its_id_on_its_line(path: Path):
    source = path.read_text(encoding="utf-8")
    want = _markers(source)
    assert want, "an attack marks what it expects"
    got = found(source)
    assert not want - got, f"not flagged: {sorted(want - got)}"
    assert not got - want, f"flagged but not marked: {sorted(got - want)}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # `self` is a name like any other outside a method.
        ("def f(self, n):\n    return getattr(self, n)\n", {(2, policy.INTROSPECTION)}),
        (
            "class A:\n    @staticmethod\n    def f(self, n):\n        return getattr(self, n)\n",
            {(4, policy.INTROSPECTION)},
        ),
        (
            "class A:\n    def f(self, n):\n        return getattr(self, n)\n",
            {(3, policy.NEEDS_REVIEW)},
        ),
        (
            "class A:\n    def f(self, n):\n        self = n\n        return getattr(self, n)\n",
            {(4, policy.INTROSPECTION)},
        ),
        # chains that do not start at a plain name
        ("import torch\nx = (torch,)[0].ops\n", {(2, policy.PRIVATE)}),
        ("import numpy as np\nx = [np][0].ctypeslib\n", {(2, policy.INTROSPECTION)}),
        ("import torch\nx = (lambda: torch)().ops\n", {(2, policy.PRIVATE)}),
        ("import torch\nx = (t := torch)._C\n", {(2, policy.PRIVATE)}),
        ("import torch\nx = getattr({'t': torch}['t'], 'library')\n", {(2, policy.PRIVATE)}),
        ("import numpy as np\nm = {0: np}\nx = m[0].save\n", {(3, policy.IO)}),
        ("def f(m):\n    return m.overrides\n", {(2, policy.PRIVATE)}),
        ("def f(m):\n    return m[0].sys\n", {(2, policy.INTROSPECTION)}),
        # `_names`: only the file's own objects
        ("import torch\n_C = 1\nx = (torch,)[0]._C\n", {(3, policy.PRIVATE)}),
        (
            "class A:\n    def __init__(self):\n        self._w = 1\n\ndef f(x):\n    return x._w\n",
            {(6, policy.PRIVATE)},
        ),
        ("class A:\n    def f(self):\n        return self._w\n", {(3, policy.PRIVATE)}),
        (
            "class A:\n    _w = 1\n    def f(self):\n        return self._w\nA.f(1)\n",
            {(5, policy.PRIVATE)},
        ),
        ("class A:\n    def f(self):\n        self._modules = 1\n", {(3, policy.PRIVATE)}),
        (
            "class A:\n    def f(self):\n        return self._w\n    def g(self):\n        self._w = 1\nK = A\nK.f(1)\n",
            {(7, policy.PRIVATE)},
        ),
        (
            "def f(self):\n    return self._C\nx = f.__get__(1)\n",
            {(2, policy.PRIVATE), (3, policy.INTROSPECTION)},
        ),
        ("import torch\nx = torch.__getattr__('ops')\n", {(2, policy.INTROSPECTION)}),
        ("def f(x):\n    pass\nf.__annotations__['x'] = 'int'\n", {(3, policy.INTROSPECTION)}),
        (
            "class A:\n    def m(self, n):\n        return getattr(self, n)\nx = A.m(1, '_C')\n",
            {(3, policy.NEEDS_REVIEW), (4, policy.PRIVATE)},
        ),
        (
            "import functools\nd = [functools][0].singledispatch\n@d\ndef f(x): pass\n@f.register\n"
            "def _(x: 'int'): pass\n",
            {(6, policy.DYNAMIC)},
        ),
        # annotations
        ("def f(x: 'torch.Tensor') -> 'int | None':\n    pass\n", set()),
        ("def f(x: 'print(1) or int'):\n    pass\n", {(1, policy.DYNAMIC)}),
        ("def f(x: 'B x L tensor'):\n    pass\n", {(1, policy.NEEDS_REVIEW)}),
        ("from __future__ import annotations\nx: int = 1\ny: f() = 2\n", {(3, policy.DYNAMIC)}),
        (
            "from functools import singledispatch\n@singledispatch\ndef f(x): pass\n@f.register\ndef _(x: 'int'): pass\n",
            {(5, policy.DYNAMIC)},
        ),
        # match
        ("class C:\n    __match_args__ = ('__dict__',)\n", {(2, policy.INTROSPECTION)}),
        ("class C:\n    __match_args__ = ('__class__',)\n", {(2, policy.INTROSPECTION)}),
        ("class C:\n    __match_args__ = ('x', 'y')\n", set()),
        ("match x:\n    case C(__class__=c):\n        pass\n", {(2, policy.INTROSPECTION)}),
        ("match x:\n    case C(_C=c):\n        pass\n", {(2, policy.PRIVATE)}),
    ],
)
def test_holes(source: str, expected: set[tuple[int, str]]):
    assert found(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        "import torch\ndef f(x, mask):\n    return x.view(2, -1), mask.any(), torch.nn.functional.softmax(x, -1)\n",
        "import torch\nclass A(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.q_proj = torch.nn.Linear(2, 2)\n        self._cache = None\n"
        "    def _split(self, x):\n        return x\n"
        "    def forward(self, x):\n        return self._split(self.q_proj(x)), self._cache, hasattr(self, 'q_proj')\n",
        "import torch\nfrom dataclasses import dataclass\n@dataclass\nclass C:\n    __match_args__ = ('heads',)\n"
        "    heads: int = 1\n    mask: 'torch.Tensor | None' = None\n",
        "from __future__ import annotations\nimport typing\nimport torch\n"
        "def f(x: torch.Tensor, *, kind: typing.Literal['causal', 'full'] = 'full', cb: typing.Callable[[int], int] | None"
        " = None) -> tuple[torch.Tensor, ...]:\n    return (x,)\n",
        "import numpy as np\nx = np.zeros(3).astype(np.float32)\ny = '{}'.format(x)\n",
        "import torch\nwith torch.no_grad():\n    t = torch.zeros(2)\nu = t.sum().item()\n",
    ],
)
def test_ordinary_attention_code_is_not_flagged(source: str):
    assert found(source) == set()


def _precision_corpus() -> list[Path]:
    files: list[Path] = []
    for folder in ("real", "alt", "mistakes"):
        files += sorted((FIXTURES / folder).rglob("*.py"))
    files += sorted((REPO / "reference").glob("*.py"))
    files += sorted((REPO / "katas").glob("*/examples/**/*.py"))
    return files


def _kata_policy(path: Path) -> dict[str, tuple[str, ...]]:
    """The policy of the kata a file belongs to (the Triton katas allow `import triton`)."""
    owner = [k for k in all_katas().values() if k.id in path.parts or path.stem == k.module_name]
    return policy.kata_rules(owner[0]) if owner else {}


def test_no_real_alternative_mistaken_or_reference_solution_gets_a_finding():
    files = _precision_corpus()
    assert len(files) > 300
    flagged = {
        str(p.relative_to(REPO)): [
            (f.line, f.id, f.what)
            for f in policy.scan_source(p.read_text("utf-8"), review=True, **_kata_policy(p))
        ]
        for p in files
    }
    assert {k: v for k, v in flagged.items() if v} == {}


def test_needs_review_is_a_note_that_never_fails_a_file():
    assert mistakes.get(policy.NEEDS_REVIEW).render("title", "en")
    assert mistakes.get(policy.NEEDS_REVIEW).render("title", "zh")
    source = (FIXTURES / "attacks3" / "policy_needs_review.py").read_text("utf-8")
    for mode in policy.MODES:
        diags = [
            d
            for d in check_source(get_kata("sdpa"), source, "en", policy=mode)
            if d.id.startswith("policy")
        ]
        assert [(d.id, d.severity) for d in diags] == [(policy.NEEDS_REVIEW, "informative")]
        assert stop_status(diags) is None
        assert len(diags[0].evidence) == 3


def test_kata_check_shows_needs_review_as_a_note():
    res = CliRunner().invoke(
        app, ["check", "sdpa", str(FIXTURES / "attacks3" / "policy_needs_review.py"), "--json"]
    )
    import json

    data = json.loads(res.stdout)
    ids = {d["id"]: d["severity"] for d in data["diagnostics"]}
    assert ids.get(policy.NEEDS_REVIEW) == "informative"
    assert data["status"] == "pass"


OWN_INSTANCE_OK = """
import torch
class Cache:
    def __init__(self): self._k = None
    def _rot(self, x): return x
    def set(self, k): self._k = k
def attend(x):
    c = Cache()
    c.set(x)
    return c._rot(x), c._k
"""
# Each binds `a` to something that is not (only) a new instance of a plain class of the file.
OWN_INSTANCE_HOSTILE = {
    "a __new__ that returns torch": "class A:\n    def __new__(cls): return torch\na = A()\nz = a._C",
    "rebound": "class A:\n    pass\na = A()\na = torch\nz = a._C",
    "an argument": "class A:\n    pass\ndef g(a):\n    return a._C",
    "the class name rebound": "class A:\n    pass\nA = torch\na = A()\nz = a._C",
    "a __getattr__": "class A:\n    def __getattr__(self, n): return 1\na = A()\nz = a._C",
    "a decorator": "def d(c): return torch\n@d\nclass A:\n    pass\na = A()\nz = a._C",
    "a walrus elsewhere": "class A:\n    pass\na = A()\n[(a := torch) for _ in range(1)]\nz = a._C",
    "a metaclass": "class M(type):\n    pass\nclass A(metaclass=M):\n    pass\na = A()\nz = a._C",
}


def test_an_instance_of_the_files_own_plain_class_may_use_its_private_names():
    """HF's SinkCache style: a local instance of the file's own class calls its private
    methods; a name that is not provably such an instance is judged as before."""
    assert policy.scan_source(OWN_INSTANCE_OK, review=True) == []
    for what, body in OWN_INSTANCE_HOSTILE.items():
        found = policy.scan_source("import torch\n" + body, review=True)
        assert any(f.id == policy.PRIVATE for f in found), what
