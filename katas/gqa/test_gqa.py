"""Grader for the `gqa` kata. Run directly: pytest <this folder> --solution your_file.py

Sizes are all different (B=4, L=7, H=6, Hkv=2, g=H/Hkv=3, d=5, D=30): with 1 < Hkv < H,
`repeat` (query head h reads KV head h % Hkv) and `repeat_interleave` (h // g) give
different outputs, and B != Hkv so a (B,1,1,L) mask broadcast onto a grouped
(B, Hkv, g, L, L) score tensor cannot line up by accident. Every test builds the
candidate's module, gives it the reference's weights (checker.weights maps common layer
names) and compares with the float64 reference; a mismatch that matches the `repeat` order
says so. The tests every self-attention module kata shares live in
checker/module_suite.py.
"""

import copy

import pytest
import torch

from attnkata.checker.compare import assert_close
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
from attnkata.checker.weights import build_module, check_module_call, reference_outputs, seeded_
from attnkata.reference import gqa as ref
from attnkata.reference import mha as ref_mha
from attnkata.reference import mqa as ref_mqa

CLS = "GroupedQueryAttention"
B, L, H, HKV, HD = 4, 7, 6, 2, 5
D = H * HD


def sizes(hkv: int = HKV) -> str:
    """The sizes a message quotes, with the Hkv of that very test."""
    return f"B={B}, L={L}, D={D}, H={H}, Hkv={hkv}, head dim={HD}"


SIZES = sizes()


def reference(
    seed: int, d_model: int = D, n_heads: int = H, n_kv_heads: int = HKV, **kwargs
) -> ref.GroupedQueryAttention:
    return seeded_(ref.GroupedQueryAttention(d_model, n_heads, n_kv_heads, **kwargs), seed)


def head_map(n_heads: int, n_kv_heads: int, order: str) -> list[int]:
    g = n_heads // n_kv_heads
    return [h // g if order == "interleave" else h % n_kv_heads for h in range(n_heads)]


def repeat_order_reference(r: ref.GroupedQueryAttention) -> ref.GroupedQueryAttention:
    """A module equal to what `repeat`/`tile` order (query head h reads KV head h % Hkv)
    computes with r's weights: r's query heads (q_proj rows, o_proj columns) are permuted
    so that the correct h // g order reads the KV head the `repeat` order would."""
    h, hkv, hd = r.n_heads, r.n_kv_heads, r.head_dim
    g = h // hkv
    perm = [(p % g) * hkv + p // g for p in range(h)]
    rows = torch.cat([torch.arange(i * hd, (i + 1) * hd) for i in perm])
    t = copy.deepcopy(r)
    with torch.no_grad():
        t.q_proj.weight.copy_(r.q_proj.weight[rows])
        if r.q_proj.bias is not None:
            t.q_proj.bias.copy_(r.q_proj.bias[rows])
        t.o_proj.weight.copy_(r.o_proj.weight[:, rows])
    return t


def compare(module, mapping, r, x, kwargs, *, dtype, case):
    """check_module_call, and when it fails, say whether the `repeat` head order explains it."""
    try:
        return check_module_call(module, mapping, r, (x,), kwargs, dtype=dtype, case=case)
    except AssertionError as exc:
        outcome = getattr(exc, "outcome", None)  # set when the output differs (not on a mutation)
        if outcome is not None and 1 < r.n_kv_heads < r.n_heads:
            # The same output (no second call of the candidate) against the `repeat` order.
            expected, baseline = reference_outputs(
                repeat_order_reference(r), (x,), kwargs, dtype=dtype
            )
            try:
                assert_close(outcome.value, expected, case=case, baseline=baseline)
            except AssertionError:
                raise exc from None
            hkv, h = r.n_kv_heads, r.n_heads
            raise AssertionError(
                f"{case}{mapping.note()}: query heads 0..{h - 1} read KV heads "
                f"{head_map(h, hkv, 'repeat')} (the order of .repeat/.tile), but query head h must "
                f"read KV head h // (H/Hkv) = {head_map(h, hkv, 'interleave')}, the order of "
                "repeat_interleave (HF's repeat_kv, flash-attn): your output matches the repeat "
                "order exactly"
            ) from None
        raise


SPEC = SelfAttentionKata(
    cls=CLS,
    reference=reference,
    init=(D, H, HKV),
    batch=B,
    length=L,
    heads=H,
    sizes=SIZES,
    other_sizes=(3, 5, (8 * 6, 8, 4), "B=3, L=5, D=48, H=8, Hkv=4, head dim=6"),
    compare=compare,
)


@pytest.fixture(scope="module")
def spec() -> SelfAttentionKata:
    return SPEC


def run(solution, x, kwargs=None, *, seed, case, dtype=torch.float64):
    return SPEC.run(solution, x, kwargs, seed=seed, case=case, dtype=dtype)


def test_kv_head_mapping(solution):
    x = randn(B, L, D, seed=38)
    run(
        solution,
        x,
        seed=39,
        case=f"query head h reads KV head h // {H // HKV}: heads 0..{H - 1} -> "
        f"{head_map(H, HKV, 'interleave')}, {SIZES}",
    )


def test_equals_mha_when_kv_heads_equal_heads(solution):
    # With Hkv = H every query head has its own KV head: the layer shapes and the output are
    # those of multi-head attention.
    x = randn(B, L, D, seed=40)
    mask = random_mask(B, 1, L, L, seed=41)
    r = seeded_(ref_mha.MultiHeadAttention(D, H), 42)
    case = f"{CLS}({D}, {H}, n_kv_heads={H}) with MultiHeadAttention's weights must equal it, {sizes(H)}"
    module, mapping = build_module(solution, CLS, r, (D, H, H), dtype=torch.float64, case=case)
    check_module_call(
        module,
        mapping,
        r,
        (x,),
        {"attn_mask": mask, "is_causal": True},
        dtype=torch.float64,
        case=case,
    )


def test_equals_mqa_with_one_kv_head(solution):
    x = randn(B, L, D, seed=43)
    mask = random_mask(B, 1, 1, L, seed=44)
    r = seeded_(ref_mqa.MultiQueryAttention(D, H), 45)
    case = f"{CLS}({D}, {H}, n_kv_heads=1) with MultiQueryAttention's weights must equal it, {sizes(1)}"
    module, mapping = build_module(solution, CLS, r, (D, H, 1), dtype=torch.float64, case=case)
    check_module_call(
        module,
        mapping,
        r,
        (x,),
        {"attn_mask": mask, "is_causal": True},
        dtype=torch.float64,
        case=case,
    )


BAD_SHAPES = {
    "d_model%n_heads": ((D + 1, H, HKV), f"{D + 1} is not divisible by {H}"),
    "n_heads%n_kv_heads": ((D, H, 4), f"n_heads={H} is not divisible by n_kv_heads=4"),
}


@pytest.mark.parametrize("which", list(BAD_SHAPES))
def test_bad_head_counts_raise(solution, which):
    args, why = BAD_SHAPES[which]
    check_constructor_raises(solution, CLS, args, why)
