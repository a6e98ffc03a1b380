"""Grader for the `perceiver-latent` kata. Run directly: pytest <this folder> --solution your_file.py

Sizes are chosen so the classic mistakes cannot hide: B=2, S=9 tokens, N=5 latents, H=4
heads all differ (a missing transpose or a mask on the wrong axis shows); latent_dim=16
differs from d_model=12 and the head dim is 4 (queries built from x instead of the latents,
or a scale by the wrong dim, show). The reference's weights (latents included) are random
and loaded into your module; every output is compared with the reference in float64.
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
from attnkata.reference import perceiver_latent as ref

CLS = "PerceiverLatentAttention"
B, S, D, H, N, E = 2, 9, 12, 4, 5, 16  # batch, tokens, d_model, heads, latents, latent_dim
DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]


def describe_config(n_heads: int, latent_dim: int | None) -> str:
    extra = "" if latent_dim is None else f", latent_dim={latent_dim}"
    return f"{CLS}(d_model={D}, n_heads={n_heads}, n_latents={N}{extra})"


def make_reference(seed: int, n_heads: int = H, latent_dim: int | None = E) -> torch.nn.Module:
    """The reference module in float32 with random weights (float64 copies are exact)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = ref.PerceiverLatentAttention(D, n_heads, N, latent_dim)
        with torch.no_grad():
            for name, p in module.named_parameters():
                if name == "latents":
                    p.copy_(torch.randn_like(p))
                elif name.endswith("bias"):
                    p.copy_(0.5 * torch.randn_like(p))  # visible on a fully padded row
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
        n_heads: int = H,
        latent_dim: int | None = E,
    ) -> None:
        self.dtype = dtype
        self.reference = make_reference(seed, n_heads, latent_dim)
        self.name = describe_config(n_heads, latent_dim)
        kwargs = {} if latent_dim is None else {"latent_dim": latent_dim}
        self.module, self.mapping = build_module(
            solution, CLS, self.reference, (D, n_heads, N), kwargs, dtype=dtype, case=self.name
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

    def check(self, x: torch.Tensor, mask: torch.Tensor | None = None, *, what: str) -> Outcome:
        """Run the candidate on x (cast to this dtype) and compare with the reference."""
        kwargs = {} if mask is None else {"key_padding_mask": mask}
        return check_module_call(
            self.module,
            self.mapping,
            self.reference,
            (x,),
            kwargs,
            dtype=self.dtype,
            case=self.case(x.to(self.dtype), what),
        )


def x_input(seed: int, batch: int = B, length: int = S) -> torch.Tensor:
    return randn(batch, length, D, seed=seed)


def lengths_mask(lengths: list[int], length: int = S) -> torch.Tensor:
    """(B, S) key_padding_mask: True for the first lengths[b] tokens of batch row b."""
    return torch.arange(length)[None, :] < torch.tensor(lengths)[:, None]


def test_structure(solution):
    """The latents parameter and four Linear layers of the contract's shapes and biases.

    The Linear layers are matched as in every module kata (checker.weights): the statement's
    names (q_proj, k_proj, v_proj, o_proj) always work, and common other names (`out_proj`,
    `to_q`, `fc_o`, a fused `to_kv`...) are mapped; a wrong shape or bias is reported."""
    m = solution.new(CLS, (D, H, N), {"latent_dim": E})
    expected = make_reference(0)
    if tuple(m.params.get("latents", ())) != (N, E):
        raise AssertionError(
            f"{describe_config(H, E)}: expected a parameter `latents` of shape {(N, E)} "
            f"(n_latents, latent_dim), yours has {m.params.get('latents', 'none')}"
        )
    load_reference_weights(m, expected, case=describe_config(H, E))


@pytest.mark.parametrize("dtype", DTYPES)
def test_forward(solution, dtype):
    g = Graded(solution, dtype, seed=1)
    g.check(x_input(2), what="no padding")


def test_default_latent_dim(solution):
    g = Graded(solution, torch.float64, seed=3, n_heads=3, latent_dim=None)
    g.check(x_input(4), what="latent_dim defaults to d_model (head dim 4)")


@pytest.mark.parametrize("length", [pytest.param(3, id="S=3"), pytest.param(1, id="S=1")])
def test_output_length_is_n_latents(solution, length):
    # The output has one row per latent whatever the input length (here shorter than N).
    g = Graded(solution, torch.float64, seed=5)
    g.check(x_input(6, length=length), what=f"S={length} tokens, still {N} latents out")


def test_batch_of_one(solution):
    g = Graded(solution, torch.float64, seed=7)
    g.check(x_input(8, batch=1), what="B=1")


@pytest.mark.parametrize("dtype", DTYPES)
def test_padding(solution, dtype):
    g = Graded(solution, dtype, seed=9)
    g.check(
        x_input(10),
        lengths_mask([S, 4]),
        what=f"key_padding_mask with lengths [{S}, 4] (True = real token)",
    )


def test_random_padding(solution):
    g = Graded(solution, torch.float64, seed=11)
    mask = random_mask(B, S, seed=12, p=0.5)
    g.check(x_input(13), mask, what="key_padding_mask with random holes (True = real token)")


def test_padding_content_is_ignored(solution):
    g = Graded(solution, torch.float64, seed=14)
    x = x_input(15)
    mask = lengths_mask([6, 3])
    changed = x.clone()
    changed[~mask] = randn(int((~mask).sum()), D, seed=16, scale=10.0)
    first = g.output(x, {"key_padding_mask": mask})
    second = g.output(changed, {"key_padding_mask": mask})
    assert_close(
        second,
        first,
        case=f"{g.case(x, 'key_padding_mask lengths [6, 3]')}: changing the padded tokens "
        "must not change the output (a latent attended padding)",
        what="output after changing padding",
    )


def test_eval_is_deterministic(solution):
    g = Graded(solution, torch.float64, seed=17)
    x = x_input(18)
    first = g.output(x, {})
    second = g.output(x, {})
    assert_close(
        second,
        first,
        case=f"{g.case(x, 'the same input twice in eval()')} "
        "(dropout or other randomness left on?)",
        what="second output",
    )


def _check_grads(g: Graded, x: torch.Tensor, mask: torch.Tensor, what: str) -> None:
    check_module_grads(
        g.module,
        g.mapping,
        g.reference,
        (x,),
        {"key_padding_mask": mask},
        wrt=(0,),
        grad_output=randn(B, N, D, seed=19),
        case=g.case(x, what),
    )


def test_gradients(solution):
    g = Graded(solution, torch.float64, seed=20)
    _check_grads(g, x_input(21), lengths_mask([7, S]), "gradient w.r.t. x with padding")


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_padded_row(solution, dtype):
    g = Graded(solution, dtype, seed=22)
    g.check(
        x_input(23),
        lengths_mask([5, 0]),
        what="batch row 1 is all padding: its attention result is zero, so every latent "
        "outputs o_proj's bias (not NaN, not the mean of the values)",
    )


@pytest.mark.tier("edge")
def test_gradients_fully_padded_row(solution):
    g = Graded(solution, torch.float64, seed=24)
    _check_grads(
        g,
        x_input(25),
        lengths_mask([0, 6]),
        "gradient w.r.t. x with batch row 0 all padding (must stay finite)",
    )


@pytest.mark.tier("edge")
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda(solution):
    g = Graded(solution, torch.float32, seed=26)
    g.module.to(torch.device("cuda"))
    x = x_input(27).float().cuda()
    mask = lengths_mask([S, 4]).cuda()
    case = g.case(x, "CUDA float32 input and module, key_padding_mask lengths [9, 4]")
    out = g.module.call((x,), {"key_padding_mask": mask})
    ref64, ref32 = copy.deepcopy(g.reference).double().cuda(), g.reference.cuda()
    with torch.no_grad():
        expected = ref64(x.double(), key_padding_mask=mask)
        baseline = ref32(x, key_padding_mask=mask)
    assert_close(out.value, expected, case=case, baseline=baseline)
