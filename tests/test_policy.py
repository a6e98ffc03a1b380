"""The static policy for graded code (checker/policy.py) and bounded parsing (checker/static.py):
every banned form is named with its id and line, through aliases; no correct solution is
flagged; `kata check` warns and still grades, `kata mock` and `kata set grade` fail the file
unless the set's manifest relaxes the policy; hostile source text (deep nesting, a huge file)
is a verdict, never a crash; a byte-order mark is fine."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnkata.checker import mistakes, policy
from attnkata.checker.catalog import get_kata
from attnkata.checker.errors import KataError
from attnkata.checker.models import ERROR, FAIL
from attnkata.checker.static import (
    MAX_AST_DEPTH,
    MAX_SOURCE_BYTES,
    SourceTooComplex,
    check_source,
    parse_bounded,
    stop_status,
)
from attnkata.cli.app import app

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
HOSTILE = sorted((FIXTURES / "hostile").glob("policy_*.py"))
REFERENCE = (REPO / "reference" / "sdpa.py").read_text(encoding="utf-8")
runner = CliRunner()


def kata(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def found(source: str, allow: tuple[str, ...] = ()) -> set[tuple[int, str]]:
    return {(f.line, f.id) for f in policy.scan_source(source, allow)}


def with_import(line: str) -> str:
    """The sdpa reference with one more import after its own (it starts with `from __future__`)."""
    at = REFERENCE.index("import math")
    return REFERENCE[:at] + line + "\n" + REFERENCE[at:]


# -- what is flagged, with which id and line ---------------------------------------------------
def _markers(source: str) -> set[tuple[int, str]]:
    """`# policy: id[, id]` comments: the findings expected on that line."""
    want = set()
    for i, line in enumerate(source.splitlines(), 1):
        m = re.search(r"# policy: ([\w, -]+?)(?:\s*#|$)", line)
        if m:
            want |= {(i, mid.strip()) for mid in m.group(1).split(",")}
    return want


def test_there_are_hostile_policy_fixtures():
    assert {p.name for p in HOSTILE} >= {
        "policy_imports.py",
        "policy_dynamic.py",
        "policy_introspection.py",
        "policy_private.py",
        "policy_io.py",
        "policy_scoping.py",
    }


@pytest.mark.parametrize("path", HOSTILE, ids=lambda p: p.stem)
def test_every_banned_form_is_flagged_with_its_id_and_line_and_nothing_else(path: Path):
    source = path.read_text(encoding="utf-8")
    want = _markers(source)
    got = found(source)
    assert not want - got, f"not flagged: {sorted(want - got)}"
    assert not got - want, f"flagged but allowed: {sorted(got - want)}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import torch as t\nx = t._C\n", {(2, policy.PRIVATE)}),
        ("from torch import _C\n", {(1, policy.PRIVATE)}),
        ("import torch._C\n", {(1, policy.PRIVATE)}),
        ("import torch._C as C\n", {(1, policy.PRIVATE)}),
        ("import torch\nT = torch\nU = T\nx = U._C\n", {(4, policy.PRIVATE)}),
        ("from torch.nn import functional as F\nx = F._canonical_mask\n", {(2, policy.PRIVATE)}),
        ("import torch\nx = getattr(torch, '_C')\n", {(2, policy.PRIVATE)}),
        ("import torch\nx = getattr(torch, '_' + 'C')\n", {(2, policy.INTROSPECTION)}),
        ("import numpy as np\nx = np.sys\n", {(2, policy.INTROSPECTION)}),
        ("import torch as t\nx = t.os.system\n", {(2, policy.IO)}),
        ("import torch\nx = torch.nn.functional.__globals__\n", {(2, policy.INTROSPECTION)}),
        ("from os import path as p\n", {(1, policy.IO)}),
        ("import importlib as il\n", {(1, policy.DYNAMIC)}),
    ],
)
def test_aliases_do_not_hide_anything(source: str, expected: set[tuple[int, str]]):
    assert found(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nx = torch.Tensor.masked_fill_\n",
        "import torch\ndef f(s, m):\n    return s.masked_fill_(m, torch.finfo(s.dtype).min)\n",
        "import torch\nx = torch.nn.functional.softmax\n",
        "import torch\nx = (torch.select, torch.trace, torch.signal, torch.types)\n",
        "import numpy.linalg\nimport torch.nn.functional as F\nfrom collections.abc import Sequence\n",
        "from __future__ import annotations\nimport einops\nimport typing\nimport functools, itertools, dataclasses\n",
        "import torch\nclass A(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('_mask', None)\n        self._cache = None\n"
        "    def forward(self, input):\n        return input, self._mask, self._cache, getattr(self, self.name)\n",
        "def f():\n    compile = 1\n    return compile\n",
        "def f():\n    '''Never touch __globals__ or __subclasses__ here.'''\n",
        "if __name__ == '__main__':\n    import sys, time\n    print(open(sys.argv[0]).read())\n",
    ],
)
def test_ordinary_code_is_not_flagged(source: str):
    assert found(source) == set()


def test_a_main_block_is_only_exempt_while_nothing_rebinds_name():
    src = "__name__ = '__main__'\nif __name__ == '__main__':\n    import os\n"
    assert found(src) == {(3, policy.IO)}


def _correct_files() -> list[Path]:
    files = sorted((REPO / "reference").glob("*.py"))
    for folder in ("alt", "mistakes", "golden"):
        files += sorted((FIXTURES / folder).rglob("*.py"))
    files += sorted((REPO / "katas").glob("*/skeleton.py")) + sorted(
        (REPO / "katas").glob("*/examples/*.py")
    )
    return files


def test_no_correct_solution_reference_skeleton_or_known_mistake_is_flagged():
    files = _correct_files()
    assert len(files) > 100
    flagged = {
        str(p.relative_to(REPO)): [
            (f.line, f.id, f.what)
            for f in policy.scan_source(p.read_text("utf-8"), **_kata_policy(p))
        ]
        for p in files
    }
    assert {k: v for k, v in flagged.items() if v} == {}


def _kata_policy(path: Path) -> dict[str, tuple[str, ...]]:
    """The policy of the kata a file belongs to (the Triton katas allow `import triton`)."""
    from attnkata.checker.catalog import all_katas

    owner = [k for k in all_katas().values() if k.id in path.parts or path.stem == k.module_name]
    return policy.kata_rules(owner[0]) if owner else {}


def test_the_existing_hostile_fixtures_are_flagged():
    hostile = FIXTURES / "hostile"
    ids = {
        name: {f.id for f in policy.scan_source((hostile / name).read_text("utf-8"))}
        for name in (
            "cheats_via_c_api.py",
            "evil_reply.py",
            "os_exit.py",
            "segfault.py",
            "sys_exit.py",
            "imports_reference.py",
            "patches_grader.py",
        )
    }
    assert ids["cheats_via_c_api.py"] == {policy.PRIVATE}
    assert {policy.IO, policy.INTROSPECTION} <= ids["evil_reply.py"]
    assert policy.IO in ids["os_exit.py"] and ids["segfault.py"] == ids["sys_exit.py"] == {
        policy.INTROSPECTION
    }
    assert ids["imports_reference.py"] == ids["patches_grader.py"] == {policy.IMPORT}


def test_allow_imports_extends_the_allowlist_with_submodules_only_below_it():
    src = "import string\nimport scipy.special\nimport scipy.linalg\n"
    assert found(src) == {(1, policy.IMPORT), (2, policy.IMPORT), (3, policy.IMPORT)}
    assert found(src, ("string", "scipy.special")) == {(3, policy.IMPORT)}
    assert found(src, ("string", "scipy")) == set()
    assert found("import stringy\n", ("string",)) == {(1, policy.IMPORT)}


# -- diagnostics, modes, catalogue ---------------------------------------------------------------
def test_warn_is_actionable_and_enforce_is_essential_and_stops_the_file():
    k = get_kata("sdpa")
    src = with_import("import os  # unused")
    warn = check_source(k, src, "en")
    assert [d.id for d in warn] == ["policy-io"] and warn[0].severity == "actionable"
    assert stop_status(warn) is None
    d = warn[0]
    line = src.splitlines().index("import os  # unused") + 1
    assert (
        d.source[0].line == line and "import os" in d.explanation and "kata check" in d.explanation
    )
    assert d.link.endswith("kata explain policy-io")
    enforce = check_source(k, src, "zh", policy="enforce")
    assert enforce[0].severity == "essential" and stop_status(enforce) == FAIL
    assert "第" in enforce[0].explanation and "没有运行" in enforce[0].explanation
    assert check_source(k, src, "en", policy="enforce", allow_imports=["os"]) == []
    with pytest.raises(ValueError):
        check_source(k, src, "en", policy="strict")


def test_one_diagnostic_per_id_and_one_finding_per_line():
    k = get_kata("sdpa")
    src = with_import("import torch as t\nx = t._C._nn\ny = t._C\nimport sys\nz = sys.argv")
    diags = check_source(k, src, "en")
    assert sorted(d.id for d in diags) == ["policy-introspection", "policy-private-api"]
    private = next(d for d in diags if d.id == "policy-private-api")
    assert len(private.source) == 2 and private.source[0].text == "x = t._C._nn"


@pytest.mark.parametrize("mid", policy.POLICY_IDS)
def test_policy_ids_are_catalogued_and_explained_in_both_languages(mid: str):
    m = mistakes.get(mid)
    assert m.katas == ("*",)
    for what in ("title", "explanation", "fix", "hides"):
        assert m.render(what, "en") != m.render(what, "zh")
    res = kata("explain", mid)
    assert res.exit_code == 0 and mid in res.stdout
    zh = kata("explain", mid, "--lang", "zh", "--json")
    assert zh.exit_code == 0 and json.loads(zh.stdout)["title"] == m.render("title", "zh")


def test_mistakes_lists_the_policy_ids():
    ids = {row["id"] for row in json.loads(kata("mistakes", "sdpa", "--json").stdout)}
    assert set(policy.POLICY_IDS) <= ids


# -- bounded parsing -------------------------------------------------------------------------------
HOSTILE_SOURCES = {
    "parentheses": "x = " + "(" * 100_000 + "1" + ")" * 100_000 + "\n",
    "unary": "x = " + "-" * 10**6 + "1\n",
    "nested-defs": "".join(" " * i + f"def f{i}():\n" for i in range(200)) + " " * 200 + "pass\n",
    "long-chain": "x = " + "+".join(["a"] * 100_000) + "\n",
    "deep-attributes": "x = a" + ".b" * (MAX_AST_DEPTH + 50) + "\n",
}


@pytest.mark.parametrize("name", list(HOSTILE_SOURCES))
def test_hostile_nesting_is_a_verdict(name: str):
    source = HOSTILE_SOURCES[name]
    assert len(source.encode()) <= MAX_SOURCE_BYTES
    with pytest.raises(SourceTooComplex):
        parse_bounded(source)
    diags = check_source(get_kata("sdpa"), source, "zh")
    assert [d.id for d in diags] == ["source-too-complex"] and stop_status(diags) == ERROR
    assert "嵌套" in diags[0].title


def test_null_bytes_and_plain_errors_stay_syntax_errors():
    for source in ("x = 1\0\n", "def f(:\n"):
        diags = check_source(get_kata("sdpa"), source, "en")
        assert [d.id for d in diags] == ["syntax-error"]


def test_a_source_over_the_size_cap_is_a_verdict():
    diags = check_source(get_kata("sdpa"), "#" * (MAX_SOURCE_BYTES + 1), "en")
    assert [d.id for d in diags] == ["source-too-large"] and stop_status(diags) == ERROR


@pytest.mark.parametrize("name", ["parentheses", "unary", "nested-defs"])
def test_kata_check_gives_hostile_nesting_a_verdict_with_exit_1(name: str, tmp_path: Path):
    path = tmp_path / "sdpa.py"
    path.write_text(HOSTILE_SOURCES[name], encoding="utf-8")
    res = kata("check", "sdpa", path, "--json")
    assert res.exit_code == 1, res.output
    data = json.loads(res.stdout)
    assert data["status"] == "error" and [d["id"] for d in data["diagnostics"]] == [
        "source-too-complex"
    ]
    assert "Traceback" not in res.output


def test_kata_check_refuses_a_huge_file_without_reading_it(tmp_path: Path):
    path = tmp_path / "sdpa.py"
    path.write_text(REFERENCE + "#" * MAX_SOURCE_BYTES + "\n", encoding="utf-8")
    res = kata("check", "sdpa", path, "--json")
    assert (
        res.exit_code == 1 and json.loads(res.stdout)["diagnostics"][0]["id"] == "source-too-large"
    )


# -- grading through the CLI, a mock interview and a problem set -------------------------------
def test_a_byte_order_mark_is_fine(tmp_path: Path):
    path = tmp_path / "sdpa.py"
    path.write_bytes(b"\xef\xbb\xbf" + REFERENCE.encode("utf-8"))
    res = kata("check", "sdpa", path, "--json")
    assert res.exit_code == 0, res.stdout
    assert json.loads(res.stdout)["diagnostics"] == []


def test_kata_check_warns_but_still_grades_and_passes(tmp_path: Path):
    path = tmp_path / "sdpa.py"
    path.write_text(with_import("import os  # noqa: F401 - unused"), encoding="utf-8")
    res = kata("check", "sdpa", path)
    assert res.exit_code == 0, res.stdout
    assert "policy-io" in res.stdout and "import os" in res.stdout and "actionable" in res.stdout


def test_mock_grading_fails_the_same_file_without_running_it(tmp_path: Path):
    from attnkata.checker.mock import grading

    path = tmp_path / "sdpa.py"
    path.write_text(with_import("import os  # noqa: F401 - unused"), encoding="utf-8")
    result = grading.check_result("sdpa", path, "en")
    assert result.status == FAIL and result.tests == []
    assert [(d.id, d.severity) for d in result.diagnostics] == [("policy-io", "essential")]
    assert "not run" in result.diagnostics[0].explanation
    clean = tmp_path / "clean.py"
    clean.write_text(REFERENCE, encoding="utf-8")
    assert grading.check_result("sdpa", clean, "en").passed


def test_manifest_policy_settings_are_validated(tmp_path: Path):
    from attnkata.checker.sets.manifest import BundleError, GradingConfig, check_policy

    assert GradingConfig().policy == "flag" and GradingConfig().allow_imports == []
    for mode in ("flag", "zero", "penalty:0.2", "warn", "enforce"):  # the last two: older manifests
        check_policy(mode, ["scipy", "scipy.special"], BundleError)
    for mode, allow in (
        ("strict", []),
        ("penalty:2", []),
        ("flag", "scipy"),
        ("flag", ["scipy special"]),
        ("flag", [""]),
    ):
        with pytest.raises(BundleError):
            check_policy(mode, allow, BundleError)


def test_set_grading_runs_flagged_files_and_charges_what_the_manifest_says(tmp_path: Path):
    from attnkata.checker.sets.grade import GradeOptions, grade_set
    from attnkata.checker.sets.manifest import MANIFEST_PATH

    bundle = tmp_path / "set"
    res = kata("set", "create", "--katas", "sdpa", "--out", bundle, "--public-tests", "0")
    assert res.exit_code == 0, res.output
    manifest_path = bundle / MANIFEST_PATH
    data = json.loads(manifest_path.read_text(encoding="utf-8"))
    assert data["grading"]["policy"] == "flag" and data["grading"]["allow_imports"] == []
    subs = tmp_path / "subs"
    sources = {
        "ann": with_import("import os  # noqa: F401"),
        "ben": with_import("import string  # noqa: F401"),
        "cat": REFERENCE,
    }
    for student, source in sources.items():
        (subs / student).mkdir(parents=True)
        (subs / student / "sdpa.py").write_text(source, encoding="utf-8")

    def grade(out: str, **grading: object) -> dict[str, tuple[str, float, list[str]]]:
        data["grading"].update(grading)
        manifest_path.write_text(json.dumps(data), encoding="utf-8")
        results = grade_set(bundle, subs, GradeOptions(jobs=2, timeout=20, out=tmp_path / out))
        return {
            s: (
                results.entry(s, "sdpa").status,
                results.entry(s, "sdpa").score,
                [d["id"] for d in (results.entry(s, "sdpa").result or {}).get("diagnostics", [])],
            )
            for s in results.students
        }

    # The default flags: every file runs and passes on its merits; the finding is listed.
    flagged = grade("flagged")
    assert flagged["ann"] == ("pass", 10, ["policy-io"]) and flagged["ben"] == (
        "pass",
        10,
        ["policy-import"],
    )
    assert flagged["cat"] == ("pass", 10, [])
    zero = grade("zero", policy="zero", allow_imports=["string"])
    assert zero["ann"] == ("fail", 0, ["policy-io"]) and zero["ben"] == ("pass", 10, [])
    data["grading"]["policy"] = "strict"
    manifest_path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(KataError, match="policy must be one of"):
        grade_set(bundle, subs, GradeOptions(jobs=1, out=tmp_path / "bad"))
