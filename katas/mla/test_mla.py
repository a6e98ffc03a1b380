"""Grader for the `mla` kata. Run directly: pytest <this folder> --solution your_file.py

Sizes are chosen so the classic MLA mistakes cannot hide: B=2, L=7, H=3 all differ (a
missing transpose shows), H >= 2 (a global instead of per-head split of kv_b_proj shows),
nope=6, rope=8, v=5 all differ (a scale by the wrong dim shows), rope >= 4 and positions
up to 6 (the RoPE layout and RoPE on the wrong features show). The reference's weights are
random (RMSNorm weights too, so a norm without its weight shows) and loaded into your
module; every output is compared with the reference in float64.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch

from attnkata.checker.compare import assert_close, assert_like
from attnkata.checker.probes import randn, random_mask
from attnkata.checker.proxy import Candidate, Outcome
from attnkata.checker.weights import (
    build_module,
    check_module_call,
    check_module_grads,
    load_reference_weights,
)
from attnkata.reference import mla as ref

CLS = "MultiHeadLatentAttention"
B, L, H, D = 2, 7, 3, 24
R, NOPE, ROPE, DV, QR = 10, 6, 8, 5, 12  # kv_lora_rank, qk_nope, qk_rope, v head dim, q_lora_rank
DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]
Q_LORA = [pytest.param(None, id="q_proj"), pytest.param(QR, id="q_lora")]


def config(q_lora_rank: int | None = None, rope_theta: float | None = None) -> tuple[tuple, dict]:
    kwargs: dict = {"q_lora_rank": q_lora_rank}
    if rope_theta is not None:
        kwargs["rope_theta"] = rope_theta
    return (D, H, R, NOPE, ROPE, DV), kwargs


def describe_config(q_lora_rank: int | None = None, rope_theta: float | None = None) -> str:
    extra = "" if q_lora_rank is None else f", q_lora_rank={q_lora_rank}"
    extra += "" if rope_theta is None else f", rope_theta={rope_theta:g}"
    return (
        f"{CLS}(d_model={D}, n_heads={H}, kv_lora_rank={R}, qk_nope_head_dim={NOPE}, "
        f"qk_rope_head_dim={ROPE}, v_head_dim={DV}{extra})"
    )


def make_reference(
    seed: int, q_lora_rank: int | None = None, rope_theta: float | None = None
) -> torch.nn.Module:
    """The reference module in float32 with random weights (float64 copies are exact)."""
    args, kwargs = config(q_lora_rank, rope_theta)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = ref.MultiHeadLatentAttention(*args, **kwargs)
        with torch.no_grad():
            for name, p in module.named_parameters():
                if "norm" in name:
                    # Far from all ones, so a norm without its weight (or none) shows.
                    p.copy_(torch.empty_like(p).uniform_(0.4, 1.6))
                else:
                    # Unit-variance outputs: logits of order 1, far from a uniform softmax.
                    p.copy_(torch.randn_like(p) / math.sqrt(p.shape[-1]))
    return module.eval()


class Graded:
    """The candidate's module with the reference's weights (loaded by checker.weights)."""

    def __init__(
        self,
        solution: Candidate,
        dtype: torch.dtype,
        seed: int,
        q_lora_rank: int | None = None,
        rope_theta: float | None = None,
    ) -> None:
        self.dtype = dtype
        self.reference = make_reference(seed, q_lora_rank, rope_theta)
        self.name = describe_config(q_lora_rank, rope_theta)
        args, kwargs = config(q_lora_rank, rope_theta)
        self.module, self.mapping = build_module(
            solution, CLS, self.reference, args, kwargs, dtype=dtype, case=self.name
        )

    def case(self, x: torch.Tensor, what: str) -> str:
        return f"{self.name}, x {tuple(x.shape)} {str(self.dtype).replace('torch.', '')}, {what}"

    def output(self, x: torch.Tensor, kwargs: dict) -> torch.Tensor:
        """The candidate's output on x, checked to be shaped like the reference's before a
        test computes anything with it (a metamorphic test compares the candidate with
        itself)."""
        value = self.module.call((x,), kwargs).value
        with torch.no_grad():
            like = self.reference.to(x.dtype)(x, **kwargs)
        assert_like(value, like, case=self.case(x, str(kwargs or "")))
        return value

    def check(self, x: torch.Tensor, kwargs: dict | None = None, *, what: str) -> Outcome:
        """Run the candidate on x (cast to this dtype) and compare with the reference."""
        return check_module_call(
            self.module,
            self.mapping,
            self.reference,
            (x,),
            kwargs,
            dtype=self.dtype,
            case=self.case(x.to(self.dtype), what),
        )

    def check_grads(
        self, x: torch.Tensor, kwargs: dict, grad_output: torch.Tensor, *, what: str
    ) -> Outcome:
        """Gradient w.r.t. x of the candidate against the float64 reference."""
        return check_module_grads(
            self.module,
            self.mapping,
            self.reference,
            (x,),
            kwargs,
            wrt=(0,),
            grad_output=grad_output,
            case=self.case(x, what),
        )


def x_input(seed: int, batch: int = B, length: int = L) -> torch.Tensor:
    return randn(batch, length, D, seed=seed)


def padding_mask(lengths: list[int], length: int = L) -> torch.Tensor:
    """(B, 1, 1, S): True for the first lengths[b] keys of batch row b."""
    return (torch.arange(length)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]


def test_structure(solution):
    """Submodule names, shapes and bias=False as in the contract (both query paths)."""
    for q_lora in (None, QR):
        args, kwargs = config(q_lora)
        m = solution.new(CLS, args, kwargs)
        expected = make_reference(0, q_lora)
        have = {info["name"]: info for info in m.modules}
        for name, sub in expected.named_modules():
            if not isinstance(sub, torch.nn.Linear):
                continue
            want = f"Linear({sub.in_features}, {sub.out_features}, bias=False)"
            got = have.get(name)
            if got is None or got["type"] != "Linear":
                found = ", ".join(f"{i['name']}: {i['type']}" for i in m.modules) or "no submodules"
                raise AssertionError(
                    f"{describe_config(q_lora)}: expected a submodule {name} = {want}; "
                    f"yours has {found}"
                )
            if (got["in_features"], got["out_features"], got["bias"]) != (
                sub.in_features,
                sub.out_features,
                False,
            ):
                raise AssertionError(
                    f"{describe_config(q_lora)}: {name} should be {want}, yours is "
                    f"Linear({got['in_features']}, {got['out_features']}, bias={got['bias']})"
                )
        load_reference_weights(m, expected, case=describe_config(q_lora))


@pytest.mark.parametrize("q_lora", Q_LORA)
@pytest.mark.parametrize("dtype", DTYPES)
def test_forward(solution, dtype, q_lora):
    g = Graded(solution, dtype, seed=1, q_lora_rank=q_lora)
    g.check(x_input(2), what="no mask")


def test_rope_theta(solution):
    g = Graded(solution, torch.float64, seed=3, rope_theta=100.0)
    g.check(x_input(4), what="rope_theta=100 (every frequency matters)")


def test_single_token(solution):
    # At L = 1 RoPE is the identity: only the projections, norms and the split remain.
    g = Graded(solution, torch.float64, seed=5)
    g.check(x_input(6, length=1), what="L=1 (position 0 only)")


MASK_SHAPES = {
    "L,L": (L, L),
    "B,1,1,L": (B, 1, 1, L),
    "B,1,L,L": (B, 1, L, L),
    "B,H,L,L": (B, H, L, L),
}


@pytest.mark.parametrize("shape", list(MASK_SHAPES))
def test_mask(solution, shape):
    g = Graded(solution, torch.float64, seed=7)
    mask = random_mask(*MASK_SHAPES[shape], seed=8, p=0.5)
    g.check(
        x_input(9),
        {"attn_mask": mask},
        what=f"bool attn_mask of shape ({shape}) = {tuple(mask.shape)}",
    )


@pytest.mark.parametrize("q_lora", Q_LORA)
@pytest.mark.parametrize("dtype", DTYPES)
def test_causal(solution, dtype, q_lora):
    g = Graded(solution, dtype, seed=10, q_lora_rank=q_lora)
    g.check(x_input(11), {"is_causal": True}, what="is_causal=True")


def test_causal_ignores_future_tokens(solution):
    g = Graded(solution, torch.float64, seed=12)
    x = x_input(13)
    t = 3
    changed = x.clone()
    changed[:, t + 1 :] = randn(B, L - t - 1, D, seed=14)
    first = g.output(x, {"is_causal": True})
    second = g.output(changed, {"is_causal": True})
    assert_close(
        second[:, : t + 1],
        first[:, : t + 1],
        case=f"{g.case(x, 'is_causal=True')}: changing tokens {t + 1}..{L - 1} must not change "
        f"the outputs at positions 0..{t} (a query must not see later keys)",
        what=f"output[:, :{t + 1}]",
    )


def test_padding_content_is_ignored(solution):
    g = Graded(solution, torch.float64, seed=36)
    x = x_input(37)
    mask = padding_mask([5, 3])  # (B, 1, 1, L)
    real = mask[:, 0, 0, :]  # (B, L)
    changed = x.clone()
    changed[~real] = randn(int((~real).sum()), D, seed=38, scale=10.0)
    first = g.output(x, {"attn_mask": mask})
    second = g.output(changed, {"attn_mask": mask})
    assert_close(
        second[real],
        first[real],
        case=f"{g.case(x, 'a (B,1,1,L) padding mask, lengths [5, 3]')}: changing the padded "
        "tokens must not change the outputs of the real ones (a query attended padding)",
        what="outputs of the real tokens",
    )


def test_eval_is_deterministic(solution):
    g = Graded(solution, torch.float64, seed=15)
    x = x_input(16)
    first = g.output(x, {})
    second = g.output(x, {})
    assert_close(
        second,
        first,
        case=f"{g.case(x, 'the same input twice in eval()')} "
        "(dropout or other randomness left on?)",
        what="second output",
    )


def test_gradients(solution):
    g = Graded(solution, torch.float64, seed=17)
    x = x_input(18)
    mask = random_mask(B, 1, L, L, seed=19)
    mask[..., 0] = True  # every query keeps key 0: no fully masked row in this core test
    kwargs = {"attn_mask": mask, "is_causal": True}
    g.check_grads(
        x,
        kwargs,
        randn(B, L, D, seed=20),
        what="gradient w.r.t. x with a (B,1,L,L) mask and is_causal=True",
    )


def _with_empty_rows(mask: torch.Tensor) -> torch.Tensor:
    mask = mask.clone()
    mask[0, :, 2, :] = False  # batch 0, query 2: no key at all
    mask[1, :, 5, :] = False
    return mask


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_masked_rows(solution, dtype):
    g = Graded(solution, dtype, seed=21, q_lora_rank=QR)
    mask = _with_empty_rows(random_mask(B, 1, L, L, seed=22))
    g.check(
        x_input(23),
        {"attn_mask": mask},
        what="fully masked query rows (batch 0 query 2, batch 1 query 5) must give zeros "
        "(o_proj has no bias)",
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_causal_and_padding_mask(solution, dtype):
    g = Graded(solution, dtype, seed=24)
    # Batch row 1 pads its first two keys: with is_causal its queries 0 and 1 see no key.
    mask = torch.ones(B, 1, 1, L, dtype=torch.bool)
    mask[0, ..., 5:] = False
    mask[1, ..., :2] = False
    g.check(
        x_input(25),
        {"attn_mask": mask, "is_causal": True},
        what="is_causal=True together with a (B,1,1,L) padding mask (both apply; "
        "batch 1 queries 0 and 1 have no key left and must give zeros)",
    )


@pytest.mark.tier("edge")
def test_causal_and_full_mask(solution):
    g = Graded(solution, torch.float64, seed=26, q_lora_rank=QR)
    mask = random_mask(B, H, L, L, seed=27, p=0.7)
    g.check(
        x_input(28),
        {"attn_mask": mask, "is_causal": True},
        what="is_causal=True together with a random (B,H,L,L) mask (both apply)",
    )


@pytest.mark.tier("edge")
def test_gradients_fully_masked_rows(solution):
    g = Graded(solution, torch.float64, seed=29)
    x = x_input(30)
    kwargs = {"attn_mask": _with_empty_rows(random_mask(B, 1, L, L, seed=31))}
    g.check_grads(
        x,
        kwargs,
        randn(B, L, D, seed=32),
        what="gradient w.r.t. x with fully masked query rows (must stay finite)",
    )


@pytest.mark.tier("edge")
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda(solution):
    g = Graded(solution, torch.float32, seed=33, q_lora_rank=QR)
    g.module.to(torch.device("cuda"))
    x = x_input(34).float().cuda()
    mask = random_mask(B, 1, L, L, seed=35).cuda()
    case = g.case(x, "CUDA float32 input and module, a (B,1,L,L) mask and is_causal=True")
    out = g.module.call((x,), {"attn_mask": mask, "is_causal": True})
    ref64, ref32 = copy.deepcopy(g.reference).double().cuda(), g.reference.cuda()
    with torch.no_grad():
        expected = ref64(x.double(), attn_mask=mask, is_causal=True)
        baseline = ref32(x, attn_mask=mask, is_causal=True)
    assert_close(out.value, expected, case=case, baseline=baseline)
