"""Copy detection: a renamed, reordered, reformatted copy is flagged; independent solutions of
the same kata (the references, tests/fixtures/alt and tests/fixtures/real) are not."""

from __future__ import annotations

import ast
import difflib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnkata.checker.sets.similarity import DEFAULT_THRESHOLD, _defined, _kata_files, compare
from attnkata.checker.skeleton import reference_path
from attnkata.cli.app import app

FIXTURES = Path(__file__).resolve().parent / "fixtures"
KATAS = sorted(p.name for p in (FIXTURES / "real").iterdir() if p.is_dir())
BASES = {kid: base for kid, base in _kata_files().values()}


def disguise(source: str) -> str:
    """What a copier does: rename every local name, drop comments, reformat, add comments."""
    tree = ast.parse(source)
    keep = {
        n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)
    }  # graded by name
    names = {n: f"my_{i}_{n[::-1]}" for i, n in enumerate(sorted(_defined(tree) - keep))}

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.Name:
            node.id = names.get(node.id, node.id)
            return node

        def visit_arg(self, node: ast.arg) -> ast.arg:
            node.arg = names.get(node.arg, node.arg)
            return node

    lines = ast.unparse(Rename().visit(tree)).splitlines()
    return (
        "# my own work\n"
        + "\n".join(
            ln + ("  # step" if i % 4 == 0 and ln.strip() else "") for i, ln in enumerate(lines)
        )
        + "\n"
    )


def corpus(kata: str) -> dict[str, str]:
    files = {"reference": reference_path(kata).read_text()}
    for folder in ("alt", "real"):
        files |= {
            f"{folder}/{p.stem}": p.read_text()
            for p in sorted((FIXTURES / folder / kata).glob("*.py"))
        }
    return files


def _shares_lines(a: str, b: str) -> bool:
    """Fixture variants written from one another (more than half their lines verbatim) are not
    independent work: they are exactly what copy detection is for."""
    return difflib.SequenceMatcher(None, a.splitlines(), b.splitlines()).ratio() >= 0.5


@pytest.mark.parametrize("kata", KATAS)
def test_independent_solutions_are_not_flagged_and_disguised_copies_are(kata):
    files = corpus(kata)
    independent = [
        p
        for p in compare(files, kata, BASES.get(kata, ""))
        if not _shares_lines(files[p.a], files[p.b])
    ]
    assert independent
    flagged = [(p.a, p.b, p.similarity) for p in independent if p.flagged]
    assert not flagged, flagged
    for name, source in files.items():
        pair = compare({"a": source, "b": disguise(source)}, kata, BASES.get(kata, ""))[0]
        assert pair.flagged and pair.similarity >= DEFAULT_THRESHOLD, (name, pair.similarity)


def test_reordering_independent_statements_changes_nothing_but_dependent_order_does():
    a = (
        "import math\n\n\ndef f(q, k, v):\n    d = q.shape[-1]\n    kt = k.transpose(-2, -1)\n"
        "    s = q @ kt / math.sqrt(d)\n    w = s.softmax(-1)\n    return w @ v\n"
    )
    b = (
        "import math\n\n\ndef f(query, key, value):\n    # transpose first\n    key_t = key.transpose(-2, -1)\n"
        "    dim = query.shape[-1]\n    scores = (query @ key_t) / math.sqrt(dim)\n"
        "    weights = scores.softmax(-1)\n    return weights @ value\n"
    )
    pair = compare({"a": a, "b": b}, "sdpa")[0]
    assert pair.similarity == 1.0 and pair.lines_a and pair.lines_b


def test_cli_json_and_threshold(tmp_path):
    ref = reference_path("sdpa").read_text()
    for name, src in {
        "ann": ref,
        "ben": disguise(ref),
        "cat": corpus("sdpa")["alt/logsumexp_einsum"],
    }.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "sdpa.py").write_text(src)
    res = CliRunner().invoke(app, ["set", "similarity", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    pairs = {(p["a"], p["b"]): p for p in json.loads(res.stdout)}
    assert set(pairs) == {("ann", "ben"), ("ann", "cat"), ("ben", "cat")}
    assert all(
        set(p) == {"a", "b", "kata", "similarity", "flagged"} and p["kata"] == "sdpa"
        for p in pairs.values()
    )
    assert pairs[("ann", "ben")]["flagged"] and not pairs[("ann", "cat")]["flagged"]
    res = CliRunner().invoke(app, ["set", "similarity", str(tmp_path), "--threshold", "1.5"])
    assert res.exit_code == 2
