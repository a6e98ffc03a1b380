"""Grader for the `mha` kata. Run directly: pytest <this folder> --solution your_file.py

Sizes are all different (B=2, L=5, H=3, d=8, D=24) so a head split without a transpose, a
scale by D instead of d or a padding mask on the wrong axis cannot hide behind equal sizes.
Every test builds the candidate's module, gives it the reference's weights
(checker.weights maps common layer names) and compares with the float64 reference.
"""

import pytest
import torch

from attnkata.checker.compare import assert_close, describe_inputs
from attnkata.checker.probes import randn, random_mask
from attnkata.checker.proxy import CandidateRaised
from attnkata.checker.weights import build_module, check_module_call, check_module_grads, seeded_
from attnkata.reference import mha as ref

CLS = "MultiHeadAttention"
B, L, H, HD = 2, 5, 3, 8
D = H * HD
SIZES = f"B={B}, L={L}, D={D}, H={H}, head dim={HD}"
DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]


def reference(seed: int, d_model: int = D, n_heads: int = H, **kwargs) -> ref.MultiHeadAttention:
    return seeded_(ref.MultiHeadAttention(d_model, n_heads, **kwargs), seed)


def run(solution, x, kwargs=None, *, seed, case, dtype=torch.float64, init=(D, H), init_kwargs=None):
    """Build the candidate with the reference's weights (seed), call it on x, compare."""
    r = reference(seed, *init, **(init_kwargs or {}))
    module, mapping = build_module(solution, CLS, r, init, init_kwargs, dtype=dtype, case=case)
    return check_module_call(module, mapping, r, (x,), kwargs, dtype=dtype, case=case)


@pytest.mark.parametrize("dtype", DTYPES)
def test_forward(solution, dtype):
    x = randn(B, L, D, seed=1)
    run(solution, x, seed=2, dtype=dtype, case=f"no mask, {describe_inputs(x=x)}, {SIZES}")


MASK_SHAPES = {"L,L": (L, L), "B,1,1,L": (B, 1, 1, L), "B,1,L,L": (B, 1, L, L), "B,H,L,L": (B, H, L, L)}


@pytest.mark.parametrize("shape", list(MASK_SHAPES))
def test_attn_mask(solution, shape):
    x = randn(B, L, D, seed=3)
    mask = random_mask(*MASK_SHAPES[shape], seed=4, p=0.5)
    run(solution, x, {"attn_mask": mask}, seed=5,
        case=f"bool attn_mask of shape ({shape}) = {tuple(mask.shape)}, True = may attend, {SIZES}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_is_causal(solution, dtype):
    x = randn(B, L, D, seed=6)
    run(solution, x, {"is_causal": True}, seed=7, dtype=dtype,
        case=f"is_causal=True (query i attends keys 0..i, itself included), {SIZES}")


def test_causal_ignores_future(solution):
    # Metamorphic: with is_causal, rewriting tokens t.. must leave the outputs before t alone.
    t = 3
    x = randn(B, L, D, seed=8)
    x2 = x.clone()
    x2[:, t:] = randn(B, L - t, D, seed=9)
    r = reference(10)
    case = f"is_causal=True, tokens {t}..{L - 1} rewritten: outputs 0..{t - 1} must not change, {SIZES}"
    module, mapping = build_module(solution, CLS, r, (D, H), dtype=torch.float64, case=case)
    first = check_module_call(module, mapping, r, (x,), {"is_causal": True}, dtype=torch.float64, case=case)
    second = module.call((x2,), {"is_causal": True}).value
    if isinstance(second, torch.Tensor) and second.shape == first.value.shape:
        assert_close(second[:, :t], first.value[:, :t],
                     case=case + mapping.note() + " (your causal mask lets a query see later keys)",
                     what=f"outputs at positions 0..{t - 1}")
    check_module_call(module, mapping, r, (x2,), {"is_causal": True}, dtype=torch.float64, case=case)


def test_mask_and_causal(solution):
    x = randn(B, L, D, seed=11)
    mask = random_mask(B, 1, L, L, seed=12, p=0.7)
    run(solution, x, {"attn_mask": mask, "is_causal": True}, seed=13,
        case=f"attn_mask (B,1,L,L) = {tuple(mask.shape)} and is_causal=True together (both apply), {SIZES}")


def test_no_bias(solution):
    x = randn(B, L, D, seed=14)
    run(solution, x, {"is_causal": True}, seed=15, init_kwargs={"bias": False},
        case=f"{CLS}({D}, {H}, bias=False): no Linear has a bias, {SIZES}")


def test_other_sizes(solution):
    b, n, h, hd = 3, 9, 4, 5
    x = randn(b, n, h * hd, seed=16)
    mask = random_mask(b, 1, 1, n, seed=17)
    run(solution, x, {"attn_mask": mask, "is_causal": True}, seed=18, init=(h * hd, h),
        case=f"other sizes B={b}, L={n}, D={h * hd}, H={h}, head dim={hd} (padding mask + is_causal)")


def test_deterministic_in_eval(solution):
    x = randn(B, L, D, seed=19)
    r = reference(20)
    case = f"the same input twice in eval() mode, {SIZES}"
    module, mapping = build_module(solution, CLS, r, (D, H), dtype=torch.float64, case=case)
    first = module.call((x,)).value
    second = module.call((x,)).value
    if isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor) and first.shape == second.shape:
        assert torch.equal(first, second), (
            f"{case}: two calls gave different outputs (max difference "
            f"{float((first - second).abs().max()):.3g}): dropout or other randomness is active in eval(); "
            "use nn.Dropout (which eval() turns off) or pass training=self.training")
    check_module_call(module, mapping, r, (x,), dtype=torch.float64, case=case)


def test_gradients(solution):
    x = randn(B, L, D, seed=21)
    mask = random_mask(B, 1, L, L, seed=22)
    r = reference(23)
    case = f"gradient w.r.t. x with a (B,1,L,L) mask and is_causal, {SIZES}"
    module, mapping = build_module(solution, CLS, r, (D, H), dtype=torch.float64, case=case)
    check_module_grads(module, mapping, r, (x,), {"attn_mask": mask, "is_causal": True}, wrt=(0,),
                       grad_output=randn(B, L, D, seed=24), case=case)


def test_heads_must_divide_d_model(solution):
    try:
        solution.new(CLS, (D + 1, H))
    except CandidateRaised as exc:
        assert exc.exc_type in ("ValueError", "AssertionError"), (
            f"{CLS}({D + 1}, {H}) must raise ValueError or AssertionError because {D + 1} is not "
            f"divisible by {H}; yours raised {exc.exc_type}: {exc.exc_message[:200]}")
    else:
        pytest.fail(f"{CLS}({D + 1}, {H}) must raise ValueError (or AssertionError): {D + 1} is not "
                    f"divisible by {H}, but your constructor accepted it", pytrace=False)


def _padding_mask() -> torch.Tensor:
    mask = torch.ones(B, 1, 1, L, dtype=torch.bool)
    mask[0, ..., L - 2:] = False  # batch 0: its last two tokens are padding
    mask[1] = False  # batch 1: nothing but padding
    return mask


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_padding_mask_fully_padded_row(solution, dtype):
    x = randn(B, L, D, seed=25)
    mask = _padding_mask()
    run(solution, x, {"attn_mask": mask}, seed=26, dtype=dtype,
        case=f"padding mask (B,1,1,L) = {tuple(mask.shape)}; batch 1 is all padding, so every query there "
             f"attends to nothing and its output must be o_proj's bias, {SIZES}")


@pytest.mark.tier("edge")
def test_fully_masked_query_rows(solution):
    x = randn(B, L, D, seed=27)
    mask = random_mask(B, 1, L, L, seed=28)
    mask[0, :, 3, :] = False  # batch 0, query 3 may attend nothing
    mask[1, :, 0, :] = False
    run(solution, x, {"attn_mask": mask, "is_causal": True}, seed=29,
        case=f"attn_mask with fully masked query rows (batch 0 query 3, batch 1 query 0) and is_causal; "
             f"those rows must give o_proj's bias, {SIZES}")


@pytest.mark.tier("edge")
def test_gradients_fully_padded_row(solution):
    x = randn(B, L, D, seed=46)
    mask = _padding_mask()
    r = reference(47)
    case = f"gradient w.r.t. x with a (B,1,1,L) padding mask, batch 1 all padding (gradients must stay finite), {SIZES}"
    module, mapping = build_module(solution, CLS, r, (D, H), dtype=torch.float64, case=case)
    check_module_grads(module, mapping, r, (x,), {"attn_mask": mask}, wrt=(0,),
                       grad_output=randn(B, L, D, seed=48), case=case)


@pytest.mark.tier("edge")
def test_large_logits(solution):
    x = randn(B, L, D, seed=30, scale=20.0)  # attention logits of order 1e2..1e3
    mask = _padding_mask()
    run(solution, x, {"attn_mask": mask, "is_causal": True}, seed=31, dtype=torch.float32,
        case=f"float32 input scaled by 20 (logits of order 1e2..1e3: softmax must stay stable), {SIZES}")


@pytest.mark.tier("edge")
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda(solution):
    x = randn(B, L, D, seed=32)
    mask = random_mask(B, 1, L, L, seed=33)
    r = reference(34)
    case = f"CUDA float32 module and input, attn_mask (B,1,L,L) and is_causal, {SIZES}"
    module, mapping = build_module(solution, CLS, r, (D, H), case=case)
    module.to("cuda")
    out = module.call((x.float().cuda(),), {"attn_mask": mask.cuda(), "is_causal": True})
    with torch.no_grad():
        expected = r(x, attn_mask=mask, is_causal=True).cuda()
        baseline = r.float().cuda()(x.float().cuda(), attn_mask=mask.cuda(), is_causal=True)
    assert_close(out.value, expected, case=case + mapping.note(), baseline=baseline)
