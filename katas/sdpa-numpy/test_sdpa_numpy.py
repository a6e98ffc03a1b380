"""Grader for the `sdpa-numpy` kata. Run directly: pytest <this folder> --solution your_file.py

Inputs are built in torch (seeded) and handed to the candidate as NumPy arrays. Sizes are
all different (B=2, H=3, L=5, S=7, d=8, dv=6) so a swapped axis, a missing transpose or a
scale by the wrong dimension cannot hide behind a coincidence of shapes. Every call must
also be free of NumPy RuntimeWarnings: overflow in exp, inf - inf and 0 / 0 are exactly the
instabilities this kata is about, even when the final numbers happen to come out right.
"""

from typing import Any

import pytest
import torch

from attnkata.checker.compare import assert_close, assert_no_mutation, describe_inputs
from attnkata.checker.probes import cast, causal, randn, random_mask, softmax_floor, to_numpy
from attnkata.reference import sdpa_numpy as ref

FN = "scaled_dot_product_attention"
B, H, L, S, D, DV = 2, 3, 5, 7, 8, 6
DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]
SIZES = f"B={B}, H={H}, L={L}, S={S}, d={D}, dv={DV}"

# What each NumPy floating-point warning means in an attention softmax, and the fix.
WARNING_ADVICE = [
    (
        "overflow encountered in exp",
        "exp() of a large logit is inf: subtract the row max before exponentiating",
    ),
    (
        "invalid value encountered in subtract",
        "a fully masked row has max -inf and -inf - (-inf) is NaN: shift such rows by 0 instead",
    ),
    ("divide by zero", "a row sum is 0 (a fully masked row): divide only where the sum is > 0"),
    (
        "invalid value encountered in divide",
        "0 / 0 or inf / inf: a fully masked row (sum 0) or an overflowed exp (inf)",
    ),
    (
        "invalid value encountered in multiply",
        "inf * 0 or -inf * 0: keep -inf out of the products (mask after the matmul, never inside it)",
    ),
]


def describe_warnings(warnings: list[dict[str, Any]]) -> str:
    parts = []
    seen = set()
    for w in warnings:
        key = (w["message"], w["line"])
        if key in seen:
            continue
        seen.add(key)
        where = (
            f"line {w['line']} of your file" if w["line"] else "inside NumPy, called from your code"
        )
        advice = next((a for m, a in WARNING_ADVICE if m in w["message"]), "")
        parts.append(
            f"{w['category']}: {w['message']} ({where})" + (f" -> {advice}" if advice else "")
        )
        if len(parts) == 3:
            break
    return "NumPy warned " + "; ".join(parts)


def check(
    solution,
    args: tuple,
    kwargs: dict[str, Any] | None = None,
    *,
    case: str,
    dtype: torch.dtype = torch.float64,
) -> None:
    """Like probes.check_call on NumPy inputs, and also fail on any RuntimeWarning the call emitted."""
    kwargs = kwargs or {}
    a64 = tuple(to_numpy(cast(x, torch.float64)) for x in args)
    k64 = {k: to_numpy(cast(v, torch.float64)) for k, v in kwargs.items()}
    a = tuple(to_numpy(cast(x, dtype)) for x in args)
    kw = {k: to_numpy(cast(v, dtype)) for k, v in kwargs.items()}
    expected = ref.scaled_dot_product_attention(*a64, **k64)
    baseline = ref.scaled_dot_product_attention(*a, **kw) if dtype != torch.float64 else None
    outcome = solution.call(FN, a, kw)
    assert_no_mutation(outcome, case=case)
    runtime = [w for w in outcome.warnings if w["category"] == "RuntimeWarning"]
    # As check_call: a float32 budget never below what the logits' size costs any formula.
    floor = (
        softmax_floor(tuple(cast(x, torch.float64) for x in args), dtype)
        if dtype != torch.float64
        else 0.0
    )
    try:
        assert_close(outcome.value, expected, case=case, baseline=baseline, floor=floor)
    except AssertionError as exc:
        text = str(exc)
        if "expected dtype float32" in text:
            text += (
                " (under NumPy 2 a float64 NumPy scalar such as 1 / np.sqrt(d) promotes a float32 "
                "array to float64; use math.sqrt or cast the scale to q.dtype)"
            )
        if runtime:
            text += f". {describe_warnings(runtime)}"
        raise AssertionError(text) from None
    if runtime:
        raise AssertionError(
            f"{case}: the values are right, but {describe_warnings(runtime)}. "
            "A warning means an inf or NaN was computed on the way; the kata asks "
            "for code that never computes one (nan_to_num or np.errstate only hide it)"
        )


def qkv(seed: int, lead: tuple[int, ...] = (B, H), scale: float = 1.0):
    return (
        randn(*lead, L, D, seed=seed, scale=scale),
        randn(*lead, S, D, seed=seed + 1, scale=scale),
        randn(*lead, S, DV, seed=seed + 2),
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_no_mask(solution, dtype):
    q, k, v = (cast(t, dtype) for t in qkv(1))
    check(solution, (q, k, v), dtype=dtype, case=f"no mask, {describe_inputs(q=q, k=k, v=v)}")


@pytest.mark.parametrize(
    "lead",
    [pytest.param((), id="2d"), pytest.param((4,), id="3d"), pytest.param((2, 3, 2), id="5d")],
)
def test_leading_dims(solution, lead):
    q, k, v = qkv(4, lead=lead)
    check(solution, (q, k, v), case=f"leading dims {lead}, {describe_inputs(q=q, k=k, v=v)}")


def test_explicit_scale(solution):
    q, k, v = qkv(7)
    check(solution, (q, k, v), {"scale": 0.3}, case=f"scale=0.3, {SIZES}")


MASK_SHAPES = {
    "L,S": (L, S),
    "B,1,1,S": (B, 1, 1, S),
    "B,1,L,S": (B, 1, L, S),
    "B,H,L,S": (B, H, L, S),
}


@pytest.mark.parametrize("shape", list(MASK_SHAPES))
def test_mask(solution, shape):
    q, k, v = qkv(10)
    mask = random_mask(*MASK_SHAPES[shape], seed=11, p=0.5)
    check(
        solution,
        (q, k, v),
        {"mask": mask},
        case=f"bool mask of shape ({shape}) = {tuple(mask.shape)}, {SIZES}",
    )


def test_causal_mask_with_kv_cache(solution):
    q, k, v = qkv(13)
    mask = causal(L, S)  # bottom-right: the last query sees all S keys
    check(
        solution,
        (q, k, v),
        {"mask": mask},
        case=f"bottom-right causal mask (L={L} < S={S}), {SIZES}",
    )


def _with_empty_rows(mask: torch.Tensor) -> torch.Tensor:
    mask = mask.clone()
    mask[0, :, 2, :] = False  # batch 0, query 2: no key at all
    mask[1, :, 0, :] = False
    return mask


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_masked_row(solution, dtype):
    q, k, v = qkv(19)
    mask = _with_empty_rows(random_mask(B, 1, L, S, seed=20))
    check(
        solution,
        (q, k, v),
        {"mask": mask},
        dtype=dtype,
        case=f"fully masked rows (batch 0 query 2, batch 1 query 0) must give zeros, {SIZES}",
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_large_logits(solution, dtype):
    q, k, v = qkv(25, scale=60.0)  # logits of order 1e4: exp() overflows in any dtype
    mask = random_mask(B, 1, L, S, seed=26)
    check(
        solution,
        (q, k, v),
        {"mask": mask},
        dtype=dtype,
        case=f"large logits (|q.k|/sqrt(d) up to ~1e4), {SIZES}",
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_all_logits_very_negative(solution, dtype):
    # Every key is close to the all-ones vector and query 0 points the opposite way, so
    # all its logits are near -1e4: without the max shift every exp() is 0 and so is the sum.
    q, _, v = qkv(31)
    k = 1.0 + 0.1 * randn(B, H, S, D, seed=32)
    q[..., 0, :] = -1e4 / D**0.5
    check(
        solution,
        (q, k, v),
        dtype=dtype,
        case=f"no mask, query 0's logits all near -1e4 (keys ~ all-ones, q[..., 0, :] = -1e4/sqrt(d)), {SIZES}",
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_no_runtime_warnings(solution, dtype):
    q, k, v = qkv(28, scale=60.0)
    mask = _with_empty_rows(random_mask(B, 1, L, S, seed=29))
    check(
        solution,
        (q, k, v),
        {"mask": mask},
        dtype=dtype,
        case=f"large logits and fully masked rows together, {SIZES}",
    )
