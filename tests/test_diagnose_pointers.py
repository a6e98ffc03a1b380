"""Where a diagnosis points and which sizes a failing test quotes (issue 29, item 8)."""

from __future__ import annotations

from pathlib import Path

from attnkata.checker.catalog import get_kata
from attnkata.checker.runner import check

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"


def test_a_materialised_matrix_is_pointed_at_where_it_was_allocated() -> None:
    """The child records the candidate's line that allocated the largest tensor; before, the
    line was guessed from the op (the matmul that used the mask, not the mask)."""
    path = FIXTURES / "mistakes" / "longformer" / "materializes-full-scores.py"
    result = check(get_kata("longformer"), path)
    [found] = [d for d in result.diagnostics if d.id == "materializes-full-scores"]
    lines = path.read_text().splitlines()
    allocating = next(
        i for i, text in enumerate(lines, start=1) if text.strip().startswith("mask = (")
    )
    assert [s.line for s in found.source][:1] == [allocating], found.source


def test_the_equals_mha_and_mqa_tests_quote_their_own_hkv(tmp_path: Path) -> None:
    """A GQA that ignores n_kv_heads (always 2 KV heads) fails the Hkv = H and Hkv = 1 tests:
    their messages say Hkv = H and Hkv = 1, not the other tests' Hkv = 2."""
    source = (REPO / "reference" / "gqa.py").read_text()
    fixed = source.replace(
        "n_kv_heads: int, bias: bool = True) -> None:",
        "n_kv_heads: int, bias: bool = True) -> None:\n        n_kv_heads = 2",
        1,
    )
    assert fixed != source
    path = tmp_path / "gqa.py"
    path.write_text(fixed)
    result = check(get_kata("gqa"), path, diagnose=False)
    by_id = {t.id: t for t in result.tests}
    assert "Hkv=6" in by_id["equals_mha_when_kv_heads_equal_heads"].message
    assert "Hkv=1" in by_id["equals_mqa_with_one_kv_head"].message
