"""Grader for the `paged-attention` kata. Run directly: pytest <this folder> --solution your_file.py

The oracle reads the cache token by token through the table (as vLLM's reference test does)
and runs dense attention per sequence: independent of the reference's block gather. Sizes
B=3, H=6, Hkv=2 (g=3), d=8, dv=6, block_size=4, max_blocks=5, num_blocks=16: the tables are
shuffled (no logical block sits at its own physical index), padding entries are valid ids,
and the lengths end inside a block, at a block's end and at full capacity, so reading blocks
in logical order, a length one too short or too long, a dropped partial block, h % Hkv and a
missing scale all change the numbers. `efficient` (B=32, H=8, Hkv=2, d=dv=64, block_size=16,
max_blocks=128, num_blocks=512, one context of 2000 tokens) fails a call that allocates a
tensor of B*max_blocks*block_size*Hkv*d/4 elements or more, in a process whose memory may
grow by at most twice a dense padded gather of the keys (the 8 MiB of inputs travel within it).
"""

import math

import pytest
import torch

from attnkata.checker.compare import assert_close, assert_no_mutation
from attnkata.checker.probes import (
    assert_largest_below,
    block_table,
    call_within_memory,
    check_call,
    randn,
)
from attnkata.reference import paged_attention as ref

FN = "paged_attention"
B, H, HKV, D, DV, BS, MAXB, NB = 3, 6, 2, 8, 6, 4, 5, 16
DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]


def oracle(q, k_cache, v_cache, table, lens, scale=None):
    """Token t of sequence b read at (table[b, t // block_size], t % block_size), one by one;
    dense softmax attention per sequence (KV head h // g for query head h)."""
    block_size, hkv = k_cache.shape[1], k_cache.shape[2]
    g = q.shape[1] // hkv
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    out = torch.zeros(*q.shape[:2], v_cache.shape[-1], dtype=q.dtype)
    for b, n in enumerate(int(x) for x in lens):
        if n == 0:
            continue
        slots = [(int(table[b, t // block_size]), t % block_size) for t in range(n)]
        k = torch.stack([k_cache[i, j] for i, j in slots]).repeat_interleave(g, dim=1)  # (n, H, d)
        v = torch.stack([v_cache[i, j] for i, j in slots]).repeat_interleave(g, dim=1)
        w = torch.softmax(torch.einsum("hd,thd->ht", q[b], k) * scale, dim=-1)
        out[b] = torch.einsum("ht,thd->hd", w, v)
    return out


def inputs(seed: int, lens: list[int], *, hkv: int = HKV, index=torch.int64, shared: int = 0):
    """(q, k_cache, v_cache, block_table, context_lens) with a shuffled table."""
    table = block_table(lens, BS, MAXB, NB, seed=seed, shared=shared).to(index)
    return (
        randn(len(lens), H, D, seed=seed),
        randn(NB, BS, hkv, D, seed=seed + 1),
        randn(NB, BS, hkv, DV, seed=seed + 2),
        table,
        torch.tensor(lens, dtype=index),
    )


def sizes(lens: list[int], hkv: int = HKV, index: str = "int64") -> str:
    return (
        f"B={len(lens)}, H={H}, Hkv={hkv}, d={D}, dv={DV}, block_size={BS}, max_blocks={MAXB}, "
        f"num_blocks={NB}, context_lens={lens} ({index}), shuffled block table"
    )


def check(solution, args, case, dtype=torch.float64, **kwargs):
    return check_call(solution, FN, oracle, args, kwargs, case=case, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_shuffled_blocks(solution, dtype):
    lens = [7, 13, 3]
    check(solution, inputs(1, lens), f"lengths ending inside a block, {sizes(lens)}", dtype)


def test_int32_table_and_lengths(solution):
    lens = [10, 5, 18]
    check(
        solution,
        inputs(4, lens, index=torch.int32),
        f"int32 block_table and context_lens, {sizes(lens, index='int32')}",
    )


def test_block_boundaries(solution):
    lens = [4, 8, 20]
    check(
        solution,
        inputs(7, lens),
        f"lengths at a block's end and filling all {MAXB} blocks, {sizes(lens)}",
    )


def test_shared_prefix_blocks(solution):
    lens = [11, 14, 6]
    check(
        solution,
        inputs(10, lens, shared=2),
        f"sequences 0 and 1 share their first 2 physical blocks (prefix caching), {sizes(lens)}",
    )


def test_explicit_scale(solution):
    lens = [9, 2, 15]
    check(solution, inputs(13, lens), f"scale=0.3, {sizes(lens)}", scale=0.3)


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_sequence(solution, dtype):
    lens = [0, 5, 9]
    check(
        solution,
        inputs(16, lens),
        f"sequence 0 has context_lens 0 (its output must be zeros), {sizes(lens)}",
        dtype,
    )


@pytest.mark.tier("edge")
def test_single_tokens(solution):
    lens = [1, 1, 2]
    check(solution, inputs(19, lens), f"one or two tokens per sequence, {sizes(lens)}")


@pytest.mark.tier("edge")
@pytest.mark.parametrize("hkv", [pytest.param(H, id="mha"), pytest.param(1, id="mqa")])
def test_kv_head_counts(solution, hkv):
    lens = [6, 12, 17]
    check(solution, inputs(22, lens, hkv=hkv), f"Hkv={hkv}, {sizes(lens, hkv=hkv)}")


EFF = {"B": 32, "H": 8, "Hkv": 2, "d": 64, "block_size": 16, "max_blocks": 128, "num_blocks": 512}


@pytest.mark.tier("efficient")
def test_used_blocks_only(solution):
    """32 sequences, one of 2000 tokens, the others of 1..100: gather what each one uses."""
    b, h, hkv, d = EFF["B"], EFF["H"], EFF["Hkv"], EFF["d"]
    bs, maxb, nb = EFF["block_size"], EFF["max_blocks"], EFF["num_blocks"]
    lens = torch.randint(1, 101, (b,), generator=torch.Generator().manual_seed(40)).tolist()
    lens[5] = 2000
    table = block_table(lens, bs, maxb, nb, seed=41)
    context_lens = torch.tensor(lens)
    q = randn(b, h, d, seed=42, dtype=torch.float32)
    k_cache = randn(nb, bs, hkv, d, seed=43, dtype=torch.float32)
    v_cache = randn(nb, bs, hkv, d, seed=44, dtype=torch.float32)
    args = (q, k_cache, v_cache, table, context_lens)
    dense = b * maxb * bs * hkv * d
    case = (
        f"efficiency: B={b}, H={h}, Hkv={hkv}, d=dv={d}, block_size={bs}, max_blocks={maxb}, "
        f"num_blocks={nb}, float32, one context of 2000 tokens and {b - 1} of 1..100"
    )
    advice = (
        f"k_cache[block_table] gathers all {b} x {maxb} table entries ({dense:,} elements), "
        "mostly padding. Loop over the sequences and gather only the ceil(context_len / "
        "block_size) blocks each one uses (or only the blocks the batch uses)"
    )
    # The inputs (8 MiB of caches) come in and go back out within the limit: the harness's
    # copies of them take most of the reference's 36 MiB, and a flat gather of every used
    # token expanded to H heads (1.6M elements, legal) needs about 50. Twice a dense gather
    # of the keys (64 MiB) fails k_cache[block_table] or keys padded to max(context_lens),
    # which need that much for the keys and values alone, on allocation.
    outcome = call_within_memory(
        solution,
        FN,
        args,
        dense_bytes=dense * 4,
        fraction=2.0,
        case=case,
        advice=advice,
        dense_what="a dense padded gather of the keys (B, max_blocks, block_size, Hkv, d) in float32",
    )
    assert_no_mutation(outcome, case=case)
    assert_largest_below(
        outcome, dense // 4, case=case, limit_name="B*max_blocks*block_size*Hkv*d/4", advice=advice
    )
    wide = tuple(x.double() if x.is_floating_point() else x for x in args)
    assert_close(
        outcome.value, ref.paged_attention(*wide), case=case, baseline=ref.paged_attention(*args)
    )
