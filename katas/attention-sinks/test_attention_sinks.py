"""Grader for the `attention-sinks` kata. Run directly: pytest <this folder> --solution your_file.py

Sizes B=2, H=4, Hkv=2 (g=2), d=8, dv=6 all differ; n_sink=2 and window=5 (N=7) unless a
test says otherwise. A given cache is random (any tensor is a valid rotated key), so a call is
judged on its own: prompts shorter and longer than N, a chunk that stays below N, chunks and
single tokens that make the cache overflow (e = 1, 2, 4 tokens evicted), a call that fills it
exactly. Every output and both returned caches are compared with the float64 reference; the
stream test feeds each step the candidate's own cache.
"""

from __future__ import annotations

import pytest
import torch

from attnkata.checker.compare import assert_close, assert_no_mutation, split_out_and_cache
from attnkata.checker.probes import cast, randn
from attnkata.reference import attention_sinks as ref

FN = "sink_attention"
B, H, HKV, D, DV = 2, 4, 2, 8, 6
N_SINK, WINDOW = 2, 5
DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]


def new_tokens(seed: int, L: int, h: int = H, hkv: int = HKV) -> tuple[torch.Tensor, ...]:
    """q (B, h, L, d), k (B, hkv, L, d), v (B, hkv, L, dv) of L new tokens."""
    return (
        randn(B, h, L, D, seed=seed),
        randn(B, hkv, L, D, seed=seed + 1),
        randn(B, hkv, L, DV, seed=seed + 2),
    )


def random_cache(seed: int, C: int, hkv: int = HKV) -> tuple[torch.Tensor, torch.Tensor]:
    """A cache in the contract's layout: (k (B, Hkv, C, d), v (B, Hkv, C, dv))."""
    return randn(B, hkv, C, D, seed=seed), randn(B, hkv, C, DV, seed=seed + 1)


def step(
    solution,
    tokens: tuple[torch.Tensor, ...],
    cache: tuple[torch.Tensor, torch.Tensor] | None = None,
    *,
    n_sink: int = N_SINK,
    window: int = WINDOW,
    dtype: torch.dtype = torch.float64,
    what: str = "",
    **kwargs,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """One call of the candidate, checked against the reference on the same inputs (float64
    truth, a same-dtype run of the reference as float32's error budget); returns its
    (out, (k_cache', v_cache'))."""
    q, k, v = cast(tokens, dtype)
    cache = cast(cache, dtype)
    C = 0 if cache is None else cache[0].shape[2]
    T, N = C + q.shape[2], n_sink + window
    extra = "".join(f", {name}={value}" for name, value in kwargs.items())
    evicted = f"e = {T - N} evicted" if T > N else "nothing evicted"
    case = (
        f"{str(dtype).removeprefix('torch.')} q {tuple(q.shape)}, k {tuple(k.shape)}, "
        f"v {tuple(v.shape)}, cache {'None' if cache is None else tuple(cache[0].shape)} (C={C}), "
        f"n_sink={n_sink}, window={window}{extra}: T = C + L = {T}, N = {N}, {evicted}"
        + (f"; {what}" if what else "")
    )
    args = (q, k, v, cache, n_sink, window)
    with solution.submit(
        FN, args, kwargs
    ) as pending:  # the reference runs while the candidate does
        expected = ref.sink_attention(*cast(args, torch.float64), **kwargs)
        baseline = ref.sink_attention(*args, **kwargs) if dtype != torch.float64 else None
    outcome = pending.result()
    assert_no_mutation(outcome, case=case)
    out, kc, vc = split_out_and_cache(outcome.value, case=case, returns=FN)
    for name, got, want in (("k_cache'", kc, expected[1][0]), ("v_cache'", vc, expected[1][1])):
        if isinstance(got, torch.Tensor) and got.dim() == 4 and got.shape[2] != want.shape[2]:
            raise AssertionError(
                f"{case}: {name} should hold min(T, N) = {want.shape[2]} tokens "
                f"({min(n_sink, T)} sink(s) + {want.shape[2] - min(n_sink, T)} recent), shape "
                f"{tuple(want.shape)}; yours holds {got.shape[2]}, shape {tuple(got.shape)}"
            )
    assert_close(out, expected[0], case=case, baseline=baseline and baseline[0])
    assert_close(
        kc, expected[1][0], case=case, what="k_cache'", baseline=baseline and baseline[1][0]
    )
    assert_close(
        vc, expected[1][1], case=case, what="v_cache'", baseline=baseline and baseline[1][1]
    )
    return out, (kc, vc)


@pytest.mark.parametrize("dtype", DTYPES)
def test_prompt_without_eviction(solution, dtype):
    step(solution, new_tokens(1, 5), dtype=dtype, what="a prompt shorter than N")


def test_prompt_longer_than_the_cache(solution):
    step(
        solution,
        new_tokens(4, 11),
        what="a prompt of 11 > N: attended in full, then the cache keeps the 2 sinks and the last 5",
    )


def test_chunk_below_the_limit(solution):
    step(
        solution,
        new_tokens(7, 3),
        random_cache(10, 3),
        what="new token i sits at position C + i and attends keys 0 .. C + i",
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_chunk_that_overflows(solution, dtype):
    step(
        solution,
        new_tokens(12, 3),
        random_cache(15, 6),
        dtype=dtype,
        what="tokens 2, 3 dropped; the last 5 move 2 slots back (rotated by -2)",
    )


def test_decode_against_a_full_cache(solution):
    step(
        solution,
        new_tokens(17, 1),
        random_cache(20, N_SINK + WINDOW),
        what="one token at position N = 7 attends 8 keys, then the token after the sinks is dropped",
    )


def test_call_that_fills_the_cache_exactly(solution):
    step(solution, new_tokens(22, 1), random_cache(25, 6), what="T = N: nothing is evicted")


def test_theta_and_scale(solution):
    step(
        solution,
        new_tokens(27, 4),
        random_cache(30, 5),
        theta=100.0,
        scale=0.3,
        what="theta=100 and scale=0.3 passed by keyword",
    )


@pytest.mark.tier("edge")
def test_stream_fed_its_own_caches(solution):
    # A prompt, six single tokens and a chunk, each step given the cache the code returned
    # at the step before (checked against the reference given that same cache).
    window, cache = 4, None
    pieces = [4, 1, 1, 1, 1, 1, 1, 3]
    for n, length in enumerate(pieces):
        _, cache = step(
            solution,
            new_tokens(100 + 3 * n, length),
            cache,
            window=window,
            what=f"step {n + 1} of a stream ({'+'.join(map(str, pieces))} tokens)",
        )


@pytest.mark.tier("edge")
def test_no_sinks(solution):
    step(
        solution,
        new_tokens(32, 2),
        random_cache(35, 4),
        n_sink=0,
        window=4,
        what="n_sink = 0: a plain rolling window",
    )


@pytest.mark.tier("edge")
def test_window_of_one(solution):
    step(solution, new_tokens(37, 2), random_cache(40, 2), n_sink=1, window=1)


@pytest.mark.tier("edge")
def test_empty_cache_tensors(solution):
    step(solution, new_tokens(42, 3), random_cache(45, 0), what="a cache of C = 0 tokens")


@pytest.mark.tier("edge")
@pytest.mark.parametrize("hkv", [pytest.param(1, id="Hkv=1"), pytest.param(H, id="Hkv=H")])
def test_other_kv_head_counts(solution, hkv):
    step(solution, new_tokens(47, 2, hkv=hkv), random_cache(50, 7, hkv=hkv))


@pytest.mark.tier("edge")
def test_long_prompt(solution):
    step(
        solution,
        new_tokens(52, 20),
        n_sink=1,
        window=4,
        what="a prompt four times N: 15 tokens evicted at once",
    )
