"""Grader tests shared by the self-attention module katas (mha, mqa, gqa).

The three contracts agree on everything but the K/V heads: forward(x, attn_mask=None,
is_causal=False) on (B, L, D), boolean "may attend" masks broadcastable to (B, H, L, L),
zeros before o_proj for fully masked rows, eval() determinism. A grader describes its kata
with a `SelfAttentionKata`, exposes it as the `spec` fixture, and imports these tests by
name, so pytest collects them under the grader's own stable ids:

    SPEC = SelfAttentionKata(cls="MultiHeadAttention", reference=reference, init=(D, H), ...)

    @pytest.fixture(scope="module")
    def spec() -> SelfAttentionKata:
        return SPEC

    from attnkata.checker.module_suite import test_forward, test_attn_mask, ...  # noqa: F401
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch

from attnkata.checker.compare import assert_close, describe_inputs
from attnkata.checker.probes import randn, random_mask
from attnkata.checker.proxy import Candidate, CandidateRaised, Outcome
from attnkata.checker.weights import (
    build_beside,
    check_module_call,
    check_module_grads,
)

DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]
MASK_SHAPES = ("L,L", "B,1,1,L", "B,1,L,L", "B,H,L,L")

# compare(module, mapping, reference, x, kwargs, dtype=, case=) -> Outcome; raises AssertionError
Compare = Callable[..., Outcome]


def _plain_compare(
    module: Any,
    mapping: Any,
    r: torch.nn.Module,
    x: torch.Tensor,
    kwargs: dict[str, Any] | None,
    *,
    dtype: torch.dtype,
    case: str,
) -> Outcome:
    return check_module_call(module, mapping, r, (x,), kwargs, dtype=dtype, case=case)


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass(frozen=True)
class SelfAttentionKata:
    """What the shared tests need to know about one module kata."""

    cls: str  # the class the candidate defines
    reference: Callable[..., torch.nn.Module]  # reference(seed, *init, **init_kwargs): seeded
    init: tuple[int, ...]  # constructor arguments for the default sizes, e.g. (D, H, Hkv)
    batch: int
    length: int
    heads: int
    sizes: str  # "B=2, L=5, D=24, H=3, head dim=8", quoted in every message
    other_sizes: tuple[
        int, int, tuple[int, ...], str
    ]  # (B, L, init, description) of a second config
    compare: Compare = _plain_compare  # a kata may explain a mismatch better (gqa: head order)

    @property
    def d_model(self) -> int:
        return self.init[0]

    def x(self, seed: int, scale: float = 1.0) -> torch.Tensor:
        return randn(self.batch, self.length, self.d_model, seed=seed, scale=scale)

    def padding_mask(self) -> torch.Tensor:
        """(B, 1, 1, L): batch 0 has two padded tokens, batch 1 is nothing but padding."""
        mask = torch.ones(self.batch, 1, 1, self.length, dtype=torch.bool)
        mask[0, ..., self.length - 2 :] = False
        mask[1] = False
        return mask

    def run(
        self,
        solution: Candidate,
        x: torch.Tensor,
        kwargs: dict[str, Any] | None = None,
        *,
        seed: int,
        case: str,
        dtype: torch.dtype = torch.float64,
        init: tuple[int, ...] | None = None,
        init_kwargs: dict[str, Any] | None = None,
    ) -> Outcome:
        """Build the candidate with the reference's weights (seed), call it on x, compare."""
        init = init or self.init
        module, mapping, r = build_beside(
            solution,
            self.cls,
            lambda: self.reference(seed, *init, **(init_kwargs or {})),
            init,
            init_kwargs,
            dtype=dtype,
            case=case,
        )
        return self.compare(module, mapping, r, x, kwargs, dtype=dtype, case=case)

    def build(self, solution: Candidate, seed: int, case: str, dtype: torch.dtype = torch.float64):
        """(candidate module, weight mapping, reference) for tests that call several times."""
        return build_beside(
            solution,
            self.cls,
            lambda: self.reference(seed, *self.init),
            self.init,
            dtype=dtype,
            case=case,
        )


@pytest.mark.parametrize("dtype", DTYPES)
def test_forward(solution: Candidate, spec: SelfAttentionKata, dtype: torch.dtype) -> None:
    x = spec.x(seed=1)
    # Describe x as the candidate receives it (cast to `dtype`), not as it was drawn (float64).
    spec.run(
        solution,
        x,
        seed=2,
        dtype=dtype,
        case=f"no mask, {describe_inputs(x=x.to(dtype))}, {spec.sizes}",
    )


@pytest.mark.parametrize("shape", MASK_SHAPES)
def test_attn_mask(solution: Candidate, spec: SelfAttentionKata, shape: str) -> None:
    sizes = {"B": spec.batch, "H": spec.heads, "L": spec.length, "1": 1}
    dims = tuple(sizes[s] for s in shape.split(","))
    x = spec.x(seed=3)
    mask = random_mask(*dims, seed=4, p=0.5)
    spec.run(
        solution,
        x,
        {"attn_mask": mask},
        seed=5,
        case=f"bool attn_mask of shape ({shape}) = {dims}, True = may attend, {spec.sizes}",
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_is_causal(solution: Candidate, spec: SelfAttentionKata, dtype: torch.dtype) -> None:
    spec.run(
        solution,
        spec.x(seed=6),
        {"is_causal": True},
        seed=7,
        dtype=dtype,
        case=f"{_dtype_name(dtype)} input, is_causal=True (query i attends keys 0..i, itself included), "
        f"{spec.sizes}",
    )


def test_causal_ignores_future(solution: Candidate, spec: SelfAttentionKata) -> None:
    # Metamorphic: with is_causal, rewriting tokens t.. must leave the outputs before t alone.
    t, L = 3, spec.length
    x = spec.x(seed=8)
    x2 = x.clone()
    x2[:, t:] = randn(spec.batch, L - t, spec.d_model, seed=9)
    case = f"is_causal=True, tokens {t}..{L - 1} rewritten: outputs 0..{t - 1} must not change, {spec.sizes}"
    module, mapping, r = spec.build(solution, 10, case)
    first = spec.compare(module, mapping, r, x, {"is_causal": True}, dtype=torch.float64, case=case)
    second = module.call((x2,), {"is_causal": True}).value
    if isinstance(second, torch.Tensor) and second.shape == first.value.shape:
        assert_close(
            second[:, :t],
            first.value[:, :t],
            case=case + mapping.note() + " (your causal mask lets a query see later keys)",
            what=f"outputs at positions 0..{t - 1}",
        )
    spec.compare(module, mapping, r, x2, {"is_causal": True}, dtype=torch.float64, case=case)


def test_mask_and_causal(solution: Candidate, spec: SelfAttentionKata) -> None:
    mask = random_mask(spec.batch, 1, spec.length, spec.length, seed=12, p=0.7)
    spec.run(
        solution,
        spec.x(seed=11),
        {"attn_mask": mask, "is_causal": True},
        seed=13,
        case=f"attn_mask (B,1,L,L) = {tuple(mask.shape)} and is_causal=True together (both apply), "
        f"{spec.sizes}",
    )


def test_no_bias(solution: Candidate, spec: SelfAttentionKata) -> None:
    args = ", ".join(str(a) for a in spec.init)
    spec.run(
        solution,
        spec.x(seed=14),
        {"is_causal": True},
        seed=15,
        init_kwargs={"bias": False},
        case=f"{spec.cls}({args}, bias=False): no Linear has a bias, {spec.sizes}",
    )


def test_other_sizes(solution: Candidate, spec: SelfAttentionKata) -> None:
    b, n, init, described = spec.other_sizes
    x = randn(b, n, init[0], seed=16)
    mask = random_mask(b, 1, 1, n, seed=17)
    spec.run(
        solution,
        x,
        {"attn_mask": mask, "is_causal": True},
        seed=18,
        init=init,
        case=f"other sizes {described} (padding mask + is_causal)",
    )


def test_deterministic_in_eval(solution: Candidate, spec: SelfAttentionKata) -> None:
    x = spec.x(seed=19)
    case = f"the same input twice in eval() mode, {spec.sizes}"
    module, mapping, r = spec.build(solution, 20, case)
    first = module.call((x,)).value
    second = module.call((x,)).value
    if (
        isinstance(first, torch.Tensor)
        and isinstance(second, torch.Tensor)
        and first.shape == second.shape
    ):
        assert torch.equal(first, second), (
            f"{case}: two calls gave different outputs (max difference "
            f"{float((first - second).abs().max()):.3g}): dropout or other randomness is active in eval(); "
            "use nn.Dropout (which eval() turns off) or pass training=self.training"
        )
    spec.compare(module, mapping, r, x, None, dtype=torch.float64, case=case)


def test_gradients(solution: Candidate, spec: SelfAttentionKata) -> None:
    mask = random_mask(spec.batch, 1, spec.length, spec.length, seed=22)
    case = f"gradient w.r.t. x with a (B,1,L,L) mask and is_causal, {spec.sizes}"
    module, mapping, r = spec.build(solution, 23, case)
    check_module_grads(
        module,
        mapping,
        r,
        (spec.x(seed=21),),
        {"attn_mask": mask, "is_causal": True},
        wrt=(0,),
        grad_output=spec.x(seed=24),
        case=case,
    )


def check_constructor_raises(
    solution: Candidate, cls: str, args: tuple[int, ...], why: str
) -> None:
    """`cls(*args)` must raise ValueError or AssertionError because `why`."""
    call = f"{cls}{args}"
    try:
        solution.new(cls, args)
    except CandidateRaised as exc:
        assert exc.exc_type in ("ValueError", "AssertionError"), (
            f"{call} must raise ValueError or AssertionError because {why}; yours raised "
            f"{exc.exc_type}: {exc.exc_message[:200]}"
        )
    else:
        pytest.fail(
            f"{call} must raise ValueError (or AssertionError): {why}, but your constructor "
            "accepted it",
            pytrace=False,
        )


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_padding_mask_fully_padded_row(
    solution: Candidate, spec: SelfAttentionKata, dtype: torch.dtype
) -> None:
    mask = spec.padding_mask()
    spec.run(
        solution,
        spec.x(seed=25),
        {"attn_mask": mask},
        seed=26,
        dtype=dtype,
        case=f"{_dtype_name(dtype)} input, padding mask (B,1,1,L) = {tuple(mask.shape)}; batch 1 is all padding, so every query "
        f"there attends to nothing and its output must be o_proj's bias, {spec.sizes}",
    )


@pytest.mark.tier("edge")
def test_fully_masked_query_rows(solution: Candidate, spec: SelfAttentionKata) -> None:
    mask = random_mask(spec.batch, 1, spec.length, spec.length, seed=28)
    mask[0, :, 3, :] = False  # batch 0, query 3 may attend nothing
    mask[1, :, 0, :] = False
    spec.run(
        solution,
        spec.x(seed=27),
        {"attn_mask": mask, "is_causal": True},
        seed=29,
        case=f"attn_mask with fully masked query rows (batch 0 query 3, batch 1 query 0) and "
        f"is_causal; those rows must give o_proj's bias, {spec.sizes}",
    )


@pytest.mark.tier("edge")
def test_gradients_fully_padded_row(solution: Candidate, spec: SelfAttentionKata) -> None:
    case = (
        f"gradient w.r.t. x with a (B,1,1,L) padding mask, batch 1 all padding (gradients must "
        f"stay finite), {spec.sizes}"
    )
    module, mapping, r = spec.build(solution, 47, case)
    check_module_grads(
        module,
        mapping,
        r,
        (spec.x(seed=46),),
        {"attn_mask": spec.padding_mask()},
        wrt=(0,),
        grad_output=spec.x(seed=48),
        case=case,
    )


@pytest.mark.tier("edge")
def test_large_logits(solution: Candidate, spec: SelfAttentionKata) -> None:
    x = spec.x(seed=30, scale=20.0)  # attention logits of order 1e2..1e3
    spec.run(
        solution,
        x,
        {"attn_mask": spec.padding_mask(), "is_causal": True},
        seed=31,
        dtype=torch.float32,
        case=f"float32 input scaled by 20 (logits of order 1e2..1e3: softmax must stay stable), "
        f"{spec.sizes}",
    )


@pytest.mark.tier("edge")
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda(solution: Candidate, spec: SelfAttentionKata) -> None:
    x = spec.x(seed=32)
    mask = random_mask(spec.batch, 1, spec.length, spec.length, seed=33)
    case = f"CUDA float32 module and input, attn_mask (B,1,L,L) and is_causal, {spec.sizes}"
    module, mapping, r = spec.build(solution, 34, case, dtype=torch.float32)
    module.to("cuda")
    out = module.call((x.float().cuda(),), {"attn_mask": mask.cuda(), "is_causal": True})
    with torch.no_grad():
        expected = r(x, attn_mask=mask, is_causal=True).cuda()
        baseline = r.float().cuda()(x.float().cuda(), attn_mask=mask.cuda(), is_causal=True)
    assert_close(out.value, expected, case=case + mapping.note(), baseline=baseline)


SHARED_TESTS = (
    "test_forward",
    "test_attn_mask",
    "test_is_causal",
    "test_causal_ignores_future",
    "test_mask_and_causal",
    "test_no_bias",
    "test_other_sizes",
    "test_deterministic_in_eval",
    "test_gradients",
    "test_padding_mask_fully_padded_row",
    "test_fully_masked_query_rows",
    "test_gradients_fully_padded_row",
    "test_large_logits",
    "test_cuda",
)
