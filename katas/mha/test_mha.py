"""Grader for the `mha` kata. Run directly: pytest <this folder> --solution your_file.py

Sizes are all different (B=2, L=5, H=3, d=8, D=24) so a head split without a transpose, a
scale by D instead of d or a padding mask on the wrong axis cannot hide behind equal sizes.
Every test builds the candidate's module, gives it the reference's weights
(checker.weights maps common layer names) and compares with the float64 reference. The
tests every self-attention module kata shares live in checker/module_suite.py.
"""

import pytest

from attnkata.checker.module_suite import (  # noqa: F401 - collected as this grader's tests
    SelfAttentionKata,
    check_constructor_raises,
    test_attn_mask,
    test_causal_ignores_future,
    test_cuda,
    test_deterministic_in_eval,
    test_forward,
    test_fully_masked_query_rows,
    test_gradients,
    test_gradients_fully_padded_row,
    test_is_causal,
    test_large_logits,
    test_mask_and_causal,
    test_no_bias,
    test_other_sizes,
    test_padding_mask_fully_padded_row,
)
from attnkata.checker.weights import seeded_
from attnkata.reference import mha as ref

CLS = "MultiHeadAttention"
B, L, H, HD = 2, 5, 3, 8
D = H * HD


def reference(seed: int, d_model: int = D, n_heads: int = H, **kwargs) -> ref.MultiHeadAttention:
    return seeded_(ref.MultiHeadAttention(d_model, n_heads, **kwargs), seed)


SPEC = SelfAttentionKata(
    cls=CLS,
    reference=reference,
    init=(D, H),
    batch=B,
    length=L,
    heads=H,
    sizes=f"B={B}, L={L}, D={D}, H={H}, head dim={HD}",
    other_sizes=(3, 9, (4 * 5, 4), "B=3, L=9, D=20, H=4, head dim=5"),
)


@pytest.fixture(scope="module")
def spec() -> SelfAttentionKata:
    return SPEC


def test_heads_must_divide_d_model(solution):
    check_constructor_raises(solution, CLS, (D + 1, H), f"{D + 1} is not divisible by {H}")
