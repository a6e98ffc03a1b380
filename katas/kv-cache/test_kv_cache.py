"""Grader for the `kv-cache` kata. Run directly: pytest <this folder> --solution your_file.py

Sizes B=3, L=4, H=6, Hkv=2 (g=3), P=5 all differ and d=8: a cache with the wrong head count,
positions that restart at 0, a top-left causal mask, repeat instead of repeat_interleave and
a concatenation on the wrong dim all change the numbers. Given caches (random, in the
contract's layout) judge one call on its own; chains (prefill, then a chunk, then single
tokens, each step fed the candidate's own cache) are compared with one full causal forward
of the reference over the whole sequence. The reference's weights are random and loaded
into your module; every output and cache is compared with the float64 reference.
"""

from __future__ import annotations

import copy

import pytest
import torch

from attnkata.checker.compare import (
    assert_close,
    assert_no_mutation,
    describe,
    split_out_and_cache,
)
from attnkata.checker.probes import cast, randn
from attnkata.checker.sandbox.autograd import backward
from attnkata.checker.weights import build_module, load_reference_weights, seeded_
from attnkata.reference import kv_cache as ref

CLS = "CachedAttention"
B, L, H, HKV, HD, P = 3, 4, 6, 2, 8, 5
D = H * HD
DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]


def make_reference(
    seed: int, init: tuple[int, int, int] = (D, H, HKV), **kwargs
) -> torch.nn.Module:
    with torch.random.fork_rng(devices=[]):
        return seeded_(ref.CachedAttention(*init, **kwargs), seed)


def describe_config(init: tuple[int, int, int], kwargs: dict) -> str:
    extra = "".join(f", {k}={v}" for k, v in kwargs.items())
    return f"{CLS}(d_model={init[0]}, n_heads={init[1]}, n_kv_heads={init[2]}{extra})"


def random_cache(batch: int, hkv: int, length: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A cache in the contract's layout: (k, v), each (B, Hkv, P, d)."""
    return randn(batch, hkv, length, HD, seed=seed), randn(batch, hkv, length, HD, seed=seed + 1)


class Graded:
    """The candidate's module with the reference's weights, called step by step."""

    def __init__(
        self,
        solution,
        seed: int,
        *,
        dtype: torch.dtype = torch.float64,
        init: tuple[int, int, int] = (D, H, HKV),
        **kwargs,
    ) -> None:
        self.dtype, self.init = dtype, init
        self.reference = make_reference(seed, init, **kwargs)
        self.name = describe_config(init, kwargs)
        self.module, self.mapping = build_module(
            solution, CLS, self.reference, init, kwargs, dtype=dtype, case=self.name
        )

    def expected(self, x: torch.Tensor, cache, dtype: torch.dtype):
        m = copy.deepcopy(self.reference).to(dtype)
        with torch.no_grad():
            return m(cast(x, dtype), cast(cache, dtype))

    def step(self, x: torch.Tensor, cache=None, *, what: str):
        """Call the candidate on (x, cache) in this dtype; check it against the reference on
        the same inputs and return its (out, (k, v))."""
        x, cache = cast(x, self.dtype), cast(cache, self.dtype)
        past = 0 if cache is None else cache[0].shape[2]
        case = (
            f"{self.name}, {what}: x {tuple(x.shape)} {str(self.dtype).removeprefix('torch.')}, "
            f"cache {'None' if cache is None else tuple(cache[0].shape)} (P={past})"
        )
        outcome = self.module.call((x,) if cache is None else (x, cache))
        case += self.mapping.note()
        assert_no_mutation(outcome, case=case)
        out, k, v = split_out_and_cache(outcome.value, case=case, returns="forward")
        expected = self.expected(x, cache, torch.float64)
        baseline = self.expected(x, cache, self.dtype) if self.dtype != torch.float64 else None
        check_cache_shape((k, v), expected[1], case=case, heads=self.init[1])
        assert_close(
            out, expected[0], case=case, baseline=None if baseline is None else baseline[0]
        )
        for name, got, want, base in (
            ("k_cache'", k, expected[1][0], baseline and baseline[1][0]),
            ("v_cache'", v, expected[1][1], baseline and baseline[1][1]),
        ):
            assert_close(got, want, case=case, what=name, baseline=base)
        return out, (k, v)


def check_cache_shape(got, want, *, case: str, heads: int) -> None:
    for name, g, w in (("k_cache'", got[0], want[0]), ("v_cache'", got[1], want[1])):
        if not isinstance(g, torch.Tensor):
            raise AssertionError(
                f"{case}: {name} should be a tensor of shape {tuple(w.shape)}, got {describe(g)}"
            )
        if tuple(g.shape) != tuple(w.shape):
            note = ""
            if g.dim() == 4 and g.shape[1] == heads and heads != w.shape[1]:
                note = (
                    f": it has one head per query head (H = {heads}); the cache keeps the "
                    f"Hkv = {w.shape[1]} KV heads, not repeated"
                )
            raise AssertionError(
                f"{case}: {name} should be (B, Hkv, P + L, d) = {tuple(w.shape)}, "
                f"got {tuple(g.shape)}{note}"
            )


def x_input(seed: int, length: int = L, batch: int = B, d_model: int = D) -> torch.Tensor:
    return randn(batch, length, d_model, seed=seed)


def test_structure(solution):
    args, kwargs = (D, H, HKV), {"bias": True}
    m = solution.new(CLS, args, kwargs)
    expected = make_reference(0, args, **kwargs)
    have = {info["name"]: info for info in m.modules}
    for name, sub in expected.named_modules():
        if not isinstance(sub, torch.nn.Linear):
            continue
        want = f"Linear({sub.in_features}, {sub.out_features}, bias=True)"
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
            True,
        ):
            raise AssertionError(
                f"{describe_config(args, kwargs)}: {name} should be {want}, yours is "
                f"Linear({got['in_features']}, {got['out_features']}, bias={got['bias']})"
            )
    load_reference_weights(m, expected, case=describe_config(args, kwargs))


@pytest.mark.parametrize("dtype", DTYPES)
def test_prefill(solution, dtype):
    Graded(solution, 1, dtype=dtype).step(x_input(2, length=L + 3), what="prefill without a cache")


@pytest.mark.parametrize("dtype", DTYPES)
def test_chunk_with_cache(solution, dtype):
    Graded(solution, 3, dtype=dtype).step(
        x_input(4),
        random_cache(B, HKV, P, seed=5),
        what=f"a chunk of L={L} new tokens after P={P} cached ones "
        f"(new token i is at position P + i)",
    )


def test_one_token_with_cache(solution):
    Graded(solution, 6).step(
        x_input(7, length=1),
        random_cache(B, HKV, P + 2, seed=8),
        what="one new token after P=7 cached ones (it is at position 7 and sees every key)",
    )


def test_bias_and_theta(solution):
    Graded(solution, 9, bias=True, rope_theta=100.0).step(
        x_input(10),
        random_cache(B, HKV, P, seed=11),
        what="bias=True, rope_theta=100, a chunk after a cache",
    )


def _chain(g: Graded, x: torch.Tensor, cuts: list[int], what: str) -> None:
    """Feed x in pieces ending at `cuts`, each step with the candidate's own cache, and
    compare every step with one full causal forward of the reference over x."""
    with torch.no_grad():
        full_out, (full_k, full_v) = copy.deepcopy(g.reference).double()(x.double())
    cache, start = None, 0
    for end in cuts:
        piece = x[:, start:end]
        label = f"{what}, step tokens {start}..{end - 1}"
        # Each step is checked against the reference given the same (the candidate's) cache...
        out, cache = g.step(piece, cache, what=label)
        # ... and against the full forward: together, every step is right from the start.
        assert_close(
            out,
            full_out[:, start:end],
            case=f"{g.name}, {label}",
            what=f"output of tokens {start}..{end - 1} against one causal forward over all "
            f"{x.shape[1]} tokens",
        )
        start = end
    assert_close(
        cache[0],
        full_k,
        case=f"{g.name}, {what}",
        what="final k_cache' against the keys of one forward over the whole sequence",
    )
    assert_close(cache[1], full_v, case=f"{g.name}, {what}", what="final v_cache'")


def test_chunked_prefill_equals_full_forward(solution):
    g = Graded(solution, 12)
    _chain(
        g,
        x_input(13, length=P + L + 2),
        [P, P + L, P + L + 1, P + L + 2],
        what=f"prefill {P} tokens, a chunk of {L}, then 2 single tokens",
    )


def test_token_by_token_equals_full_forward(solution):
    g = Graded(solution, 14)
    n = 6
    _chain(
        g, x_input(15, length=n), list(range(1, n + 1)), what=f"{n} tokens decoded one at a time"
    )


@pytest.mark.tier("edge")
def test_float32_chain(solution):
    g = Graded(solution, 16, dtype=torch.float32)
    x = x_input(17, length=P + 3)
    cache, start = None, 0
    for end in (P, P + 2, P + 3):
        _, cache = g.step(x[:, start:end], cache, what=f"float32 chain, tokens {start}..{end - 1}")
        start = end
    assert tuple(cache[0].shape) == (B, HKV, P + 3, HD)


@pytest.mark.tier("edge")
def test_other_sizes(solution):
    # MQA (one KV head) and another batch, head dim and lengths.
    init = (32, 4, 1)
    g = Graded(solution, 18, init=init)
    g.step(
        randn(2, 3, 32, seed=19),
        (randn(2, 1, 6, 8, seed=20), randn(2, 1, 6, 8, seed=21)),
        what="Hkv=1 (MQA), B=2, L=3 after P=6",
    )


@pytest.mark.tier("edge")
def test_gradients(solution):
    g = Graded(solution, 22)
    x, cache = x_input(23), random_cache(B, HKV, P, seed=24)
    grad_out = randn(B, L, D, seed=25)
    case = f"{g.name}: gradient of the output w.r.t. x, a chunk of L={L} after P={P} cached tokens"
    outcome = g.module.call((x, cache), grad_wrt=(0,), grad_output=grad_out)
    leaf = x.detach().clone().requires_grad_(True)
    backward(copy.deepcopy(g.reference).double()(leaf, cache)[0], grad_out)
    got = outcome.grads[0]
    if got is None:
        raise AssertionError(f"{case}: no gradient reached x (detach, .data or in-place writes?)")
    assert_close(got, leaf.grad, case=case + g.mapping.note(), what="gradient w.r.t. x")
