"""The `mla` and `perceiver-latent` graders: correct solutions in other styles pass, and the
mistakes only these katas have are caught.

Alternatives live in tests/fixtures/alt/<kata>/*.py (weight absorption over c_kv, HF-style
MLA, einsum and source-notes-style Perceivers). The mistakes are one-line edits of the
reference, made here so they follow the reference when it changes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attnkata.checker.catalog import get_kata
from attnkata.checker.runner import check
from attnkata.checker.skeleton import reference_path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "alt"
KATAS = ("mla", "perceiver-latent")
ALTERNATIVES = [
    pytest.param(kata, path, id=f"{kata}/{path.stem}")
    for kata in KATAS
    for path in sorted((FIXTURES / kata).glob("*.py"))
]


@pytest.mark.parametrize("kata", KATAS)
def test_every_kata_has_alternatives(kata: str):
    assert len(list((FIXTURES / kata).glob("*.py"))) >= 2, (
        f"{kata}: at least two alternative styles"
    )


@pytest.mark.parametrize(("kata", "path"), ALTERNATIVES)
def test_alternative_passes(kata: str, path: Path):
    result = check(get_kata(kata), path)
    failed = [f"{t.id}: {t.message}" for t in result.tests if t.status not in ("pass", "skip")]
    assert result.passed, f"{path.name} should pass {kata}: " + "; ".join(failed)
    assert not [d.id for d in result.diagnostics if d.is_error]


@pytest.mark.parametrize("kata", KATAS)
def test_skeleton_fails(kata: str):
    k = get_kata(kata)
    result = check(k, k.skeleton_path, diagnose=False)
    assert not result.passed
    assert all(t.status != "pass" for t in result.tests)


@pytest.mark.parametrize(
    ("kata", "must_fail"),
    [("mla", "forward[float64-q_proj]"), ("perceiver-latent", "fully_padded_row[float64]")],
)
def test_bundled_wrong_example_fails(kata: str, must_fail: str):
    k = get_kata(kata)
    result = check(k, k.folder / "examples" / "wrong.py", diagnose=False)
    assert not result.passed
    assert {t.id: t.status for t in result.tests}[must_fail] == "fail"


# (kata, mistake id, [(text in the reference, replacement)], a test that must fail)
MISTAKES = [
    (
        "mla",
        "mla-scale-without-rope-dim",
        [("math.sqrt(qk_head_dim)", "math.sqrt(qk_nope_head_dim)")],
        "forward[float64-q_proj]",
    ),
    (
        "mla",
        "mla-rope-on-nope",
        [
            (
                "        q = torch.cat([q_nope, q_rope], dim=-1)",
                "        c2, s2 = rope_cos_sin(L, nope, self.rope_theta, x.dtype, x.device)\n"
                "        q_nope, k_nope = apply_rope(q_nope, c2, s2), apply_rope(k_nope, c2, s2)\n"
                "        q = torch.cat([q_nope, q_rope], dim=-1)",
            )
        ],
        "forward[float64-q_proj]",
    ),
    (
        "mla",
        "mla-kv-b-split-global",
        [
            (
                "        kv = kv.view(B, L, H, nope + dv).transpose(1, 2)  # (B, H, L, nope+v), per head\n"
                "        k_nope, v = kv.split([nope, dv], dim=-1)",
                "        k_nope = kv[..., :H * nope].reshape(B, L, H, nope).transpose(1, 2)\n"
                "        v = kv[..., H * nope:].reshape(B, L, H, dv).transpose(1, 2)",
            )
        ],
        "forward[float64-q_proj]",
    ),
    (
        "mla",
        "mla-missing-kv-norm",
        [("self.kv_b_proj(self.kv_a_norm(c_kv))", "self.kv_b_proj(c_kv)")],
        "forward[float64-q_proj]",
    ),
    (
        "mla",
        "rope-wrong-layout",
        [
            (
                "    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)  # rotate_half(x)\n"
                "    return x * cos + rotated * sin",
                "    c, s = cos[..., :half], sin[..., :half]\n"
                "    x1, x2 = x[..., 0::2], x[..., 1::2]\n"
                "    return torch.stack([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1).flatten(-2)",
            )
        ],
        "forward[float64-q_proj]",
    ),
    (
        "perceiver-latent",
        "latent-queries-from-input",
        [
            (
                "q = self.q_proj(self.latents)  # (N, E): the same queries for every batch row\n"
                "        q = q.view(N, H, d).transpose(0, 1)",
                "q = self.k_proj(x)[:, :N]\n        q = q.reshape(B, -1, H, d).transpose(1, 2)",
            )
        ],
        "forward[float64]",
    ),
    (
        "perceiver-latent",
        "padding-mask-wrong-axis",
        [("~key_padding_mask[:, None, None, :]", "~key_padding_mask[:, None, :, None]")],
        "padding[float64]",
    ),
]


@pytest.mark.parametrize(
    ("kata", "mistake", "edits", "must_fail"), MISTAKES, ids=[f"{m[0]}/{m[1]}" for m in MISTAKES]
)
def test_grader_catches(
    tmp_path: Path, kata: str, mistake: str, edits: list[tuple[str, str]], must_fail: str
):
    k = get_kata(kata)
    assert mistake in k.mistakes
    source = reference_path(kata).read_text(encoding="utf-8")
    for old, new in edits:
        assert old in source, f"the reference changed; update the {mistake} edit"
        source = source.replace(old, new)
    path = tmp_path / k.solution_file
    path.write_text(source, encoding="utf-8")
    result = check(k, path, diagnose=False)
    assert not result.passed
    status = {t.id: t.status for t in result.tests}
    # A wrong axis can also surface as a broadcasting error: "error" is a caught mistake too.
    assert status.get(must_fail) in ("fail", "error"), (
        f"{mistake}: expected {must_fail} to fail, got {status}"
    )
