"""The diagnosis beyond one mutant per mistake (issue 9): mistakes matched as families of
spellings, each probe judged on its own, two mistakes at once with what each explains,
fused projection layouts, and nondeterminism in function katas.

Every case writes a small candidate file and runs `kata check`'s engine on it (about a
second each); the mutation matrix covers the single-spelling fixtures.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from attnkata.checker.catalog import get_kata
from attnkata.checker.diagnose.behaviour import match
from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.diagnose.pairs import compose
from attnkata.checker.diagnose.subjects import Observed
from attnkata.checker.runner import check
from attnkata.reference.mutants import sdpa as sdpa_mutants

RUNNER_IDS = {"exception", "timeout", "interpreter-ended", "memory-limit", "signature-mismatch"}


@pytest.fixture(autouse=True)
def strict_diagnosis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNKATA_STRICT_DIAGNOSIS", "1")


def run(tmp_path: Path, kata: str, source: str):  # noqa: ANN201
    path = tmp_path / "solution.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return check(get_kata(kata), path)


def essential(result) -> list[str]:  # noqa: ANN001
    return [d.id for d in result.diagnostics if d.is_error and d.id not in RUNNER_IDS]


SDPA = """
    import math
    import torch

    def scaled_dot_product_attention(q, k, v, mask=None, scale=None):
        scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
        scores = q @ k.transpose(-2, -1) * scale
        if mask is not None:
            {masking}
        return torch.softmax(scores, dim=-1{softmax_dtype}){cast} @ v
"""


# -- 1. families ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("masking", "upcast"),
    [
        (
            "scores = scores + torch.zeros_like(scores).masked_fill(~mask, torch.finfo(scores.dtype).min)",
            False,
        ),
        ("scores = scores.masked_fill(~mask, -1e30)", False),
        ("scores = scores.masked_fill(~mask, -1e4)", False),
        ("scores = torch.where(mask, scores, torch.finfo(torch.float32).min)", False),
        ("scores = torch.where(mask, scores, torch.finfo(torch.float32).min)", True),
    ],
)
def test_every_finite_fill_is_fully_masked_row_uniform(tmp_path, masking, upcast):
    src = SDPA.format(
        masking=masking,
        softmax_dtype=", dtype=torch.float32" if upcast else "",
        cast=".to(q.dtype)" if upcast else "",
    )
    result = run(tmp_path, "sdpa", src)
    assert result.diagnostics[0].id == "fully-masked-row-uniform" and essential(result) == [
        "fully-masked-row-uniform"
    ]


def test_unstable_softmax_whatever_hides_the_masked_exponentials(tmp_path):
    # np.divide(..., where=s > 0) zeroes a row whose sum overflowed: a spelling no mutant has.
    result = run(
        tmp_path,
        "sdpa-numpy",
        """
        import math
        import numpy as np

        def scaled_dot_product_attention(q, k, v, mask=None, scale=None):
            scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
            w = np.exp((q @ np.swapaxes(k, -1, -2)) * scale)
            if mask is not None:
                w = w * mask
            s = w.sum(axis=-1, keepdims=True)
            return np.divide(w, s, out=np.zeros_like(w), where=s > 0) @ v
    """,
    )
    top = result.diagnostics[0]
    assert top.id == "unstable-softmax" and top.is_error
    assert any("every known spelling" in e for e in top.evidence)


def test_a_family_match_needs_the_shared_value_not_just_the_place():
    """NaN where every finite fill gives the mean of V is not that family."""

    def obs(
        *head: float,
    ) -> Observed:  # the first elements given, the other eight as the reference's
        return Observed(value=torch.tensor([*head, *range(1, 9)], dtype=torch.float64))

    ref = [obs(0.0, 2.0)]
    family = {"uniform": [[obs(5.0, 2.0)], [obs(5.0, 9.0)]]}  # spellings agree on element 0 only
    probes = [Probe("p", "f")]
    assert match(probes, [obs(5.0, 4.0)], ref, family).matched
    assert not match(probes, [obs(float("nan"), 2.0)], ref, family).matched


# -- 2. each probe on its own --------------------------------------------------------------------
def test_a_crash_on_some_inputs_does_not_hide_the_mistake_on_the_others(tmp_path):
    result = run(
        tmp_path,
        "sdpa",
        """
        import math
        import torch

        def scaled_dot_product_attention(q, k, v, mask=None, scale=None):
            B, H, L, d = q.shape                         # 4-D inputs only
            scores = q @ k.transpose(-2, -1) * (math.sqrt(d) if scale is None else scale)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            m = scores.amax(-1, keepdim=True)
            w = torch.exp(scores - torch.where(torch.isfinite(m), m, torch.zeros_like(m)))
            s = w.sum(-1, keepdim=True)
            return w / torch.where(s > 0, s, torch.ones_like(s)) @ v
    """,
    )
    ids = [d.id for d in result.diagnostics]
    assert ids[0] == "scale-inverted" and essential(result) == ["scale-inverted"]
    unsupported = next(d for d in result.diagnostics if d.id == "input-not-supported")
    assert unsupported.severity == "actionable" and "2-D inputs (L, d)" in unsupported.explanation
    assert unsupported.data["explains"]["tests"] >= 1


def test_code_for_self_attention_only_is_judged_on_the_square_probe(tmp_path):
    result = run(
        tmp_path,
        "sdpa",
        SDPA.format(
            masking="scores = scores.masked_fill(mask.reshape(-1, 1, q.shape[-2], q.shape[-2]) == 0, -1e9)",
            softmax_dtype="",
            cast="",
        ),
    )
    ids = [d.id for d in result.diagnostics]
    assert ids[0] == "fully-masked-row-uniform" and essential(result) == [
        "fully-masked-row-uniform"
    ]
    unsupported = result.diagnostics[ids.index("input-not-supported")]
    assert any("is invalid for input of size" in e for e in unsupported.evidence)


def test_code_for_2d_arrays_still_shows_its_mask_mistake(tmp_path):
    result = run(
        tmp_path,
        "sdpa-numpy",
        """
        import math
        import numpy as np

        def scaled_dot_product_attention(q, k, v, mask=None, scale=None):
            scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
            s = np.einsum("id,jd->ij", q, k) * scale
            if mask is not None:
                s = np.where(mask, -np.inf, s)           # True = padding, as in key_padding_mask
            m = s.max(axis=-1, keepdims=True)
            w = np.exp(s - np.where(np.isfinite(m), m, 0.0))
            z = w.sum(axis=-1, keepdims=True)
            return np.einsum("ij,jd->id", w / np.where(z > 0, z, 1.0), v).astype(q.dtype)
    """,
    )
    assert result.diagnostics[0].id == "mask-polarity-flipped"
    assert "input-not-supported" in [d.id for d in result.diagnostics]


# -- 3. two mistakes at once ---------------------------------------------------------------------
def test_two_interacting_mistakes_are_found_together_with_what_each_explains(tmp_path):
    # The transposed merge moves the -1e9 rows' mean of V elsewhere: no single mutant and no
    # sum of two signatures reproduces it; the combined variant does.
    src = (
        Path(__file__).parent / "fixtures" / "mistakes" / "mha" / "merge-heads-without-transpose.py"
    ).read_text()
    src = src.replace('float("-inf")', "-1e9")
    assert "-1e9" in src
    result = run(tmp_path, "mha", src)
    ids = essential(result)
    assert set(ids) == {"merge-heads-without-transpose", "fully-masked-row-uniform"}, ids
    first, second = (d for d in result.diagnostics if d.id in ids)
    a, b = first.data["explains"], second.data["explains"]
    assert a["failing"] == b["failing"] and a["tests"] >= b["tests"] > 0
    assert any("explains" in e and "failing tests" in e for e in first.evidence)


def test_an_unguarded_exp_over_sum_is_two_mistakes(tmp_path):
    # No max shift (overflow on large logits) and 0 / 0 on an empty row: fixing either
    # leaves the other, so both are named.
    result = run(
        tmp_path,
        "sdpa",
        SDPA.format(
            masking="scores = scores.masked_fill(~mask, float('-inf'))", softmax_dtype="", cast=""
        ).replace(
            "return torch.softmax(scores, dim=-1) @ v",
            "e = torch.exp(scores)\n        return e / e.sum(-1, keepdim=True) @ v",
        ),
    )
    assert set(essential(result)) == {"unstable-softmax", "fully-masked-row-nan"}
    assert all("explains" in d.data for d in result.diagnostics if d.id in essential(result))


def test_a_global_max_shift_is_unstable_and_an_unguarded_sum_is_nan(tmp_path):
    # x - x.max() over the whole array: rows far below the global max underflow to 0 / 0.
    result = run(
        tmp_path,
        "sdpa-numpy",
        """
        import math
        import numpy as np

        def scaled_dot_product_attention(q, k, v, mask=None, scale=None):
            scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
            s = (q @ np.swapaxes(k, -1, -2)) * scale
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            e = np.exp(s - np.max(s))
            return (e / e.sum(axis=-1, keepdims=True)) @ v
    """,
    )
    assert set(essential(result)) == {"unstable-softmax", "fully-masked-row-nan"}


def test_compose_merges_knobs_and_refuses_conflicts():
    scale = {"scaled_dot_product_attention": sdpa_mutants.MUTANTS["missing-scale"][0]}
    uniform = {"scaled_dot_product_attention": sdpa_mutants.MUTANTS["fully-masked-row-uniform"][0]}
    both = compose(scale, uniform)
    assert both is not None
    assert both["scaled_dot_product_attention"].keywords == {
        **scale["scaled_dot_product_attention"].keywords,
        **uniform["scaled_dot_product_attention"].keywords,
    }
    # Both set the softmax: one variant cannot have both.
    assert (
        compose(
            uniform, {"scaled_dot_product_attention": sdpa_mutants.MUTANTS["unstable-softmax"][0]}
        )
        is None
    )


def test_k_repeated_v_interleaved_is_the_gqa_head_order_mistake(tmp_path):
    src = (
        Path(__file__).parent
        / "fixtures"
        / "mistakes"
        / "gqa"
        / "kv-repeat-instead-of-interleave.py"
    ).read_text()
    result = run(
        tmp_path,
        "gqa",
        src.replace("v = v.repeat(1, n_rep, 1, 1)", "v = v.repeat_interleave(n_rep, dim=1)"),
    )
    assert essential(result) == ["kv-repeat-instead-of-interleave"]


# -- 4. fused layouts ----------------------------------------------------------------------------
NEOX = """
    import torch
    from torch import nn

    class MultiHeadAttention(nn.Module):
        def __init__(self, d_model, n_heads, bias=True):
            super().__init__()
            if d_model % n_heads:
                raise ValueError("d_model must be divisible by n_heads")
            self.h, self.d = n_heads, d_model // n_heads
            self.query_key_value = nn.Linear(d_model, 3 * d_model, bias=bias)
            self.dense = nn.Linear(d_model, d_model, bias=bias)

        def forward(self, x, attn_mask=None, is_causal=False):
            B, L, D = x.shape
            q, k, v = self.query_key_value(x).view(B, L, self.h, 3 * self.d).transpose(1, 2).chunk(3, dim=-1)
            keep = torch.ones(L, L, dtype=torch.bool, device=x.device)
            if is_causal:
                keep = keep.tril()
            if attn_mask is not None:
                keep = keep & attn_mask
            s = (q @ k.transpose(-2, -1) / {scale}).masked_fill(~keep, float("-inf"))
            m = s.amax(-1, keepdim=True)
            w = torch.exp(s - torch.where(torch.isfinite(m), m, torch.zeros_like(m)))
            z = w.sum(-1, keepdim=True)
            y = (w / torch.where(z > 0, z, torch.ones_like(z)) @ v).transpose(1, 2).reshape(B, L, D)
            return {out}
"""


def test_a_correct_neox_fused_module_passes(tmp_path):
    result = run(tmp_path, "mha", NEOX.format(scale="self.d ** 0.5", out="self.dense(y)"))
    assert result.passed, [(t.id, t.message) for t in result.tests if t.status != "pass"][:3]


@pytest.mark.parametrize(
    ("scale", "out", "mid"),
    [
        ("D ** 0.5", "self.dense(y)", "scale-by-d-model"),  # the layout fits on one token
        ("self.d ** 0.5", "y", "missing-output-projection"),  # no layout fits on one token
    ],
)
def test_a_mistake_in_a_neox_fused_module_is_found(tmp_path, scale, out, mid):
    result = run(tmp_path, "mha", NEOX.format(scale=scale, out=out))
    assert essential(result) == [mid]


def test_unmappable_layers_are_named_not_no_known_mistake():
    path = Path(__file__).parent / "fixtures" / "alt" / "mha" / "unmappable" / "per_head.py"
    result = check(get_kata("mha"), path)
    top = result.diagnostics[0]
    assert top.id == "weights-unmappable" and "q_heads.0" in top.explanation
    assert "no-known-mistake" not in [d.id for d in result.diagnostics]


# -- 5. nondeterminism ---------------------------------------------------------------------------
def test_dropout_in_a_function_is_named_and_nothing_else(tmp_path):
    result = run(
        tmp_path,
        "sdpa",
        SDPA.format(
            masking="scores = scores.masked_fill(~mask, float('-inf'))", softmax_dtype="", cast=""
        )
        .replace("return torch.softmax", "return torch.nn.functional.dropout(torch.softmax")
        .replace(") @ v", "), 0.1) @ v"),
    )
    assert essential(result) == ["nondeterministic-output"]
    assert any("bernoulli" in e or "dropout" in e for e in result.diagnostics[0].evidence)


@pytest.mark.parametrize("body", ["return q * 0", "return q + 1"])
def test_an_output_of_the_wrong_shape_matches_no_family(tmp_path, body):
    """q has d columns, the output must have dv: every element differs, so where it differs
    says nothing about any mistake (found on hostile files returning junk)."""
    result = run(
        tmp_path,
        "sdpa",
        f"""
        def scaled_dot_product_attention(q, k, v, mask=None, scale=None):
            {body}
        """,
    )
    assert result.status == "fail"
    ids = [d.id for d in result.diagnostics]
    assert "fully-masked-row-nan" not in ids and "fully-masked-row-uniform" not in ids
    assert all("explains" not in e for d in result.diagnostics for e in d.evidence)
