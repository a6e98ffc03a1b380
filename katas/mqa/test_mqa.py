"""Grader for the `mqa` kata. Run directly: pytest <this folder> --solution your_file.py

Sizes are all different (B=2, L=5, H=4, d=6, D=24) so a head split without a transpose, a
scale by D instead of d or a padding mask on the wrong axis cannot hide behind equal sizes,
and k_proj / v_proj must be Linear(D, d): one head shared by all H query heads. Every test
builds the candidate's module, gives it the reference's weights (checker.weights maps common
layer names) and compares with the float64 reference. The tests every self-attention module
kata shares live in checker/module_suite.py.
"""

import pytest
import torch

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
from attnkata.checker.probes import randn, random_mask
from attnkata.checker.weights import build_module, check_module_call, seeded_
from attnkata.reference import gqa as ref_gqa
from attnkata.reference import mqa as ref

CLS = "MultiQueryAttention"
B, L, H, HD = 2, 5, 4, 6
D = H * HD
SIZES = f"B={B}, L={L}, D={D}, H={H}, head dim={HD}"


def reference(seed: int, d_model: int = D, n_heads: int = H, **kwargs) -> ref.MultiQueryAttention:
    return seeded_(ref.MultiQueryAttention(d_model, n_heads, **kwargs), seed)


SPEC = SelfAttentionKata(
    cls=CLS,
    reference=reference,
    init=(D, H),
    batch=B,
    length=L,
    heads=H,
    sizes=SIZES,
    other_sizes=(3, 7, (6 * 4, 6), "B=3, L=7, D=24, H=6, head dim=4"),
)


@pytest.fixture(scope="module")
def spec() -> SelfAttentionKata:
    return SPEC


def test_equals_gqa_with_one_kv_head(solution):
    # MQA is GQA with a single KV head: given the weights of a GQA(D, H, n_kv_heads=1) module
    # (the same layer shapes), the candidate must reproduce that module's output.
    x = randn(B, L, D, seed=35)
    mask = random_mask(B, 1, 1, L, seed=36)
    r = seeded_(ref_gqa.GroupedQueryAttention(D, H, 1), 37)
    case = (
        f"weights of GroupedQueryAttention({D}, {H}, n_kv_heads=1), which MQA must equal; "
        f"padding mask (B,1,1,L) and is_causal, {SIZES}"
    )
    module, mapping = build_module(solution, CLS, r, (D, H), dtype=torch.float64, case=case)
    check_module_call(
        module,
        mapping,
        r,
        (x,),
        {"attn_mask": mask, "is_causal": True},
        dtype=torch.float64,
        case=case,
    )


def test_heads_must_divide_d_model(solution):
    check_constructor_raises(solution, CLS, (D + 1, H), f"{D + 1} is not divisible by {H}")
