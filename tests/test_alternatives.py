"""Correct `mha`, `mqa` and `gqa` solutions written in other styles pass their graders, and a
module whose layers cannot be mapped onto the reference's is told how to fix that.

The alternatives live in tests/fixtures/alt/<kata>/*.py: einsum, nanoGPT's fused c_attn,
the source notes' W_Q / W_query / out_proj classes fixed to the contract, anonymous Linears
in a ModuleList (mapped by shape and order), HF-style expand + reshape, grouped queries
without any KV repeat, a fused qkv / kv projection, MQA by broadcasting. The bundled
examples/wrong.py of each kata fails with the mistake it demonstrates.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnkata.checker.catalog import get_kata
from attnkata.checker.runner import check

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "alt"
KATAS = ("mha", "mqa", "gqa")
ALTERNATIVES = [
    pytest.param(kata, path, id=f"{kata}/{path.stem}")
    for kata in KATAS
    for path in sorted((FIXTURES / kata).glob("*.py"))
]


@pytest.mark.parametrize("kata", KATAS)
def test_every_kata_has_alternatives(kata: str):
    assert len(list((FIXTURES / kata).glob("*.py"))) >= 3, (
        f"{kata}: at least three alternative styles"
    )


@pytest.mark.parametrize(("kata", "path"), ALTERNATIVES)
def test_alternative_passes(kata: str, path: Path):
    result = check(get_kata(kata), path, diagnose=False)
    failed = [f"{t.id}: {t.message}" for t in result.tests if t.status not in ("pass", "skip")]
    assert result.passed, f"{path.name} should pass {kata}: " + "; ".join(failed)
    assert not [d.id for d in result.diagnostics if d.is_error]


def test_unmappable_layers_get_an_actionable_message():
    # One Linear per head: correct maths, but no layer the reference's weights can go into.
    path = FIXTURES / "mha" / "unmappable" / "per_head.py"
    result = check(get_kata("mha"), path, diagnose=False)
    assert not result.passed
    failed = [t for t in result.tests if t.status == "fail"]
    # Every test that builds a module fails on the mapping; only the d_model % n_heads check,
    # which never loads weights, can pass.
    assert {t.id for t in result.tests if t.status == "pass"} <= {"heads_must_divide_d_model"}
    assert len(failed) >= 15
    for t in failed:
        assert "cannot tell which of your layers hold" in t.message, t.message
        assert re.search(r"q_proj Linear\(\d+ -> \d+, ", t.message), t.message  # what is expected
        assert re.search(r"q_heads\.0 Linear\(\d+ -> \d+, ", t.message), t.message  # what was found
        assert "Rename your layers" in t.message, t.message


@pytest.mark.parametrize(
    ("kata", "test_id", "words"),
    [
        ("mha", "padding_mask_fully_padded_row[float64]", "NaN"),
        ("mqa", "forward[float64]", "k_proj.weight should have shape (6, 24), yours has (24, 24)"),
        ("gqa", "forward[float64]", "the order of .repeat/.tile"),
    ],
)
def test_bundled_wrong_example_fails_with_its_mistake(kata: str, test_id: str, words: str):
    k = get_kata(kata)
    result = check(k, k.folder / "examples" / "wrong.py", diagnose=False)
    assert not result.passed
    by_id = {t.id: t for t in result.tests}
    assert by_id[test_id].status == "fail", by_id[test_id]
    assert words in by_id[test_id].message, by_id[test_id].message
