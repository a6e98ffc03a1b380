"""Grader for the `mla-decode` kata. Run directly: pytest <this folder> --solution your_file.py

The oracle is the mla kata's reference: one causal forward of MultiHeadLatentAttention over
all P + L tokens, restricted to the new ones; the expected cache is built from its layers
(kv_a_proj, kv_a_norm, RoPE at each token's position). Sizes B=2, L=4, H=3, P=5 all differ,
nope=6, rope=8, v=5 differ (a scale without the rope dims shows) and H >= 2 (a slice of
kv_b_proj that ignores the per-head layout shows). Given caches come from the oracle's own
prefix; chains feed the candidate its own cache. `efficient` (B=1, P=4096, L=1, H=16,
kv_lora_rank=64, nope=32, rope=16, v=32, D=256) fails any call that builds a tensor with
H*P*nope/4 elements or more: the per-head keys or values of the cache are never built.
"""

from __future__ import annotations

import copy
import math
from unittest import mock

import pytest
import torch

from attnkata.checker.compare import assert_close, assert_no_mutation, describe
from attnkata.checker.probes import assert_largest_below, cast, randn
from attnkata.checker.sandbox.autograd import backward
from attnkata.checker.weights import build_module, load_reference_weights
from attnkata.reference import mla as oracle
from attnkata.reference import mla_decode as ref

CLS = "LatentDecoder"
B, L, H, P, D = 2, 4, 3, 5, 24
R, NOPE, ROPE, DV, QR = 10, 6, 8, 5, 12  # kv_lora_rank, qk_nope, qk_rope, v head dim, q_lora_rank
DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]
Q_LORA = [pytest.param(None, id="q_proj"), pytest.param(QR, id="q_lora")]


def config(q_lora_rank: int | None = None, rope_theta: float | None = None) -> tuple[tuple, dict]:
    kwargs: dict = {"q_lora_rank": q_lora_rank}
    if rope_theta is not None:
        kwargs["rope_theta"] = rope_theta
    return (D, H, R, NOPE, ROPE, DV), kwargs


def describe_config(args: tuple, kwargs: dict) -> str:
    extra = "".join(f", {k}={v}" for k, v in kwargs.items() if v is not None)
    return (
        f"{CLS}(d_model={args[0]}, n_heads={args[1]}, kv_lora_rank={args[2]}, qk_nope_head_dim={args[3]}, "
        f"qk_rope_head_dim={args[4]}, v_head_dim={args[5]}{extra})"
    )


def make_oracle(seed: int, args: tuple, kwargs: dict) -> torch.nn.Module:
    """The mla kata's module with random weights (norm weights far from 1), in float64."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = oracle.MultiHeadLatentAttention(*args, **kwargs)
        with torch.no_grad():
            for name, p in module.named_parameters():
                if "norm" in name:
                    p.copy_(torch.empty_like(p).uniform_(0.4, 1.6))
                else:
                    p.copy_(torch.randn_like(p) / math.sqrt(p.shape[-1]))
    return module.double().eval()


def latent_cache(m: torch.nn.Module, x: torch.Tensor, start: int = 0) -> torch.Tensor:
    """(B, L, r + rope): normalised c_kv and rotated k_rope of tokens at start .. start + L - 1,
    from the mla kata's layers."""
    c_kv, k_rope = m.kv_a_proj(x).split([m.kv_lora_rank, m.rope_dim], dim=-1)
    cos, sin = oracle.rope_cos_sin(start + x.shape[1], m.rope_dim, m.rope_theta, x.dtype, x.device)
    return torch.cat(
        [m.kv_a_norm(c_kv), oracle.apply_rope(k_rope, cos[start:], sin[start:])], dim=-1
    )


def truth(
    m: torch.nn.Module, prefix: torch.Tensor | None, x: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(out, new_cache) the contract asks for, from one causal forward over prefix + x."""
    whole = x if prefix is None else torch.cat([prefix, x], dim=1)
    with torch.no_grad():
        out = m(whole, is_causal=True)[:, whole.shape[1] - x.shape[1] :]
        return out, latent_cache(m, whole)


class Graded:
    """The candidate's module with the oracle's weights (the mla kata's names and shapes)."""

    def __init__(
        self,
        solution,
        seed: int,
        *,
        dtype: torch.dtype = torch.float64,
        q_lora_rank: int | None = None,
        rope_theta: float | None = None,
    ) -> None:
        self.args, self.kwargs = config(q_lora_rank, rope_theta)
        self.dtype = dtype
        self.oracle = make_oracle(seed, self.args, self.kwargs)
        self.name = describe_config(self.args, self.kwargs)
        self.module, self.mapping = build_module(
            solution, CLS, self.oracle, self.args, self.kwargs, dtype=dtype, case=self.name
        )

    def step(
        self,
        x: torch.Tensor,
        prefix: torch.Tensor | None,
        cache: torch.Tensor | None = None,
        *,
        what: str,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Call the candidate on x after `prefix` (cache: the oracle's cache of the prefix
        unless given, e.g. the candidate's own) and compare with one forward over both."""
        if prefix is not None and cache is None:
            with torch.no_grad():
                cache = latent_cache(self.oracle, prefix)
        x_in, cache_in = cast(x, self.dtype), cast(cache, self.dtype)
        past = 0 if cache is None else cache.shape[1]
        case = (
            f"{self.name}, {what}: x {tuple(x.shape)} {str(self.dtype).removeprefix('torch.')}, "
            f"cache {'None' if cache is None else tuple(cache.shape)} (P={past})"
        ) + self.mapping.note()
        outcome = self.module.call((x_in,) if cache is None else (x_in, cache_in))
        assert_no_mutation(outcome, case=case)
        value = outcome.value
        if not (isinstance(value, tuple | list) and len(value) == 2):
            raise AssertionError(
                f"{case}: forward must return (out, new_cache); yours returned {describe(value)}"
            )
        expected = truth(self.oracle, prefix, x)
        baseline: tuple | None = None
        if self.dtype != torch.float64:
            # The float32 budget: the mla kata's forward run in float32 on the same inputs.
            baseline = truth(
                copy.deepcopy(self.oracle).to(self.dtype), cast(prefix, self.dtype), x_in
            )
        assert_close(
            value[1],
            expected[1],
            case=case,
            what="new_cache (B, P + L, kv_lora_rank + rope)",
            baseline=None if baseline is None else baseline[1],
        )
        assert_close(
            value[0], expected[0], case=case, baseline=None if baseline is None else baseline[0]
        )
        return value[0], value[1]


def x_input(seed: int, length: int = L, batch: int = B) -> torch.Tensor:
    return randn(batch, length, D, seed=seed)


def test_structure(solution):
    """Submodule names, shapes and bias=False as in the mla kata (both query paths)."""
    for q_lora in (None, QR):
        args, kwargs = config(q_lora)
        m = solution.new(CLS, args, kwargs)
        expected = make_oracle(0, args, kwargs)
        have = {info["name"]: info for info in m.modules}
        for name, sub in expected.named_modules():
            if not isinstance(sub, torch.nn.Linear):
                continue
            want = f"Linear({sub.in_features}, {sub.out_features}, bias=False)"
            got = have.get(name)
            if got is None or got["type"] != "Linear":
                found = ", ".join(f"{i['name']}: {i['type']}" for i in m.modules) or "no submodules"
                raise AssertionError(
                    f"{describe_config(args, kwargs)}: expected a submodule {name} = {want}; "
                    f"yours has {found}"
                )
            if (got["in_features"], got["out_features"], got["bias"]) != (
                sub.in_features,
                sub.out_features,
                False,
            ):
                raise AssertionError(
                    f"{describe_config(args, kwargs)}: {name} should be {want}, yours is "
                    f"Linear({got['in_features']}, {got['out_features']}, bias={got['bias']})"
                )
        load_reference_weights(m, expected, case=describe_config(args, kwargs))


@pytest.mark.parametrize("q_lora", Q_LORA)
@pytest.mark.parametrize("dtype", DTYPES)
def test_prefill(solution, dtype, q_lora):
    g = Graded(solution, 1, dtype=dtype, q_lora_rank=q_lora)
    g.step(
        x_input(2, length=7), None, what="prefill without a cache (= the mla kata's causal forward)"
    )


@pytest.mark.parametrize("q_lora", Q_LORA)
def test_chunk_with_cache(solution, q_lora):
    g = Graded(solution, 3, q_lora_rank=q_lora)
    g.step(
        x_input(5),
        x_input(4, length=P),
        what=f"a chunk of L={L} new tokens after P={P} cached ones (new token i is at position P + i)",
    )


def test_one_token_with_cache(solution):
    g = Graded(solution, 6)
    g.step(
        x_input(8, length=1),
        x_input(7, length=P + 1),
        what="one new token after P=6 cached ones (it sees every key)",
    )


def test_rope_theta(solution):
    g = Graded(solution, 9, rope_theta=100.0)
    g.step(x_input(11), x_input(10, length=P), what="rope_theta=100, a chunk after a cache")


def test_chain_equals_full_forward(solution):
    g = Graded(solution, 12, q_lora_rank=QR)
    x = x_input(13, length=P + L + 2)
    cache, start = None, 0
    for end in (P, P + L, P + L + 1, P + L + 2):
        prefix = None if start == 0 else x[:, :start]
        # Each step gets the candidate's own cache; the truth is one forward over x[:, :end].
        _, cache = g.step(
            x[:, start:end],
            prefix,
            cache,
            what=f"prefill {P}, a chunk of {L}, then single tokens; step tokens {start}..{end - 1}",
        )
        start = end


@pytest.mark.tier("edge")
def test_float32_decode(solution):
    g = Graded(solution, 14, dtype=torch.float32)
    g.step(
        x_input(16, length=1),
        x_input(15, length=P),
        what=f"float32, one token after P={P} cached ones",
    )


@pytest.mark.tier("edge")
def test_gradients(solution):
    g = Graded(solution, 17)
    prefix, x = x_input(18, length=P), x_input(19)
    with torch.no_grad():
        cache = latent_cache(g.oracle, prefix)
    grad_out = randn(B, L, D, seed=20)
    case = (
        f"{g.name}: gradient of the output w.r.t. x, a chunk of L={L} after P={P}"
        + g.mapping.note()
    )
    outcome = g.module.call((x, cache), grad_wrt=(0,), grad_output=grad_out)
    leaf = x.detach().clone().requires_grad_(True)
    whole = torch.cat([prefix, leaf], dim=1)
    backward(g.oracle(whole, is_causal=True)[:, P:], grad_out)
    if outcome.grads[0] is None:
        raise AssertionError(f"{case}: no gradient reached x (detach, .data or in-place writes?)")
    assert_close(outcome.grads[0], leaf.grad, case=case, what="gradient w.r.t. x")


def _rotate_float32_angles(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    dim = x.shape[-1]
    inv_freq = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    angles = positions.float()[:, None] * inv_freq
    angles = torch.cat([angles, angles], dim=-1)
    half = dim // 2
    return x * angles.cos().to(x.dtype) + torch.cat(
        [-x[..., half:], x[..., :half]], dim=-1
    ) * angles.sin().to(x.dtype)


EFF = {"B": 1, "P": 4096, "L": 1, "H": 16, "r": 64, "nope": 32, "rope": 16, "v": 32, "D": 256}


def efficient_inputs() -> tuple[tuple, torch.nn.Module, torch.Tensor, torch.Tensor]:
    args = (EFF["D"], EFF["H"], EFF["r"], EFF["nope"], EFF["rope"], EFF["v"])
    m = make_oracle(40, args, {})
    x = randn(EFF["B"], EFF["L"], EFF["D"], seed=41, dtype=torch.float32)
    with torch.no_grad():  # a cache of normalised latents and rotated rope keys
        cache = latent_cache(m, randn(EFF["B"], EFF["P"], EFF["D"], seed=42)).float()
    return args, m, x, cache


@pytest.mark.tier("efficient")
def test_absorbed_decode(solution):
    """One token after 4096 cached ones: the per-head keys of the cache would be H*P*nope."""
    args, m, x, cache = efficient_inputs()
    name = describe_config(args, {})
    module, mapping = build_module(solution, CLS, m, args, {}, dtype=torch.float32, case=name)
    case = (
        f"efficiency: {name}, B=1, L=1 after P={EFF['P']} cached tokens, float32" + mapping.note()
    )
    outcome = module.call((x, cache))
    assert_no_mutation(outcome, case=case)
    assert_largest_below(
        outcome,
        EFF["H"] * EFF["P"] * EFF["nope"] // 4,
        case=case,
        limit_name="H*P*nope/4",
        advice=(
            "Do not rebuild every cached token's per-head keys or values (kv_b_proj on the cache): absorb "
            "W_UK into the query and W_UV after the weighted sum of the latents"
        ),
    )
    decoder = ref.LatentDecoder(*args).double().eval()
    decoder.load_state_dict(m.state_dict())
    with torch.no_grad():
        expected = decoder(x.double(), cache.double())
        # The float32 budget: the same decoder in float32 with float32 RoPE angles (as HF
        # computes them), whose rounding at position 4096 is the largest error a plain
        # float32 implementation makes here.
        with mock.patch.object(ref, "rotate", _rotate_float32_angles):
            baseline = copy.deepcopy(decoder).float()(x, cache)
    if not (isinstance(outcome.value, tuple | list) and len(outcome.value) == 2):
        raise AssertionError(
            f"{case}: forward must return (out, new_cache); yours returned {describe(outcome.value)}"
        )
    assert_close(outcome.value[1], expected[1], case=case, what="new_cache", baseline=baseline[1])
    assert_close(outcome.value[0], expected[0], case=case, baseline=baseline[0])
