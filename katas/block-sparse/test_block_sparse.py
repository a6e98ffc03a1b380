"""Grader for the `block-sparse` kata. Run directly: pytest <this folder> --solution your_file.py

Both entry points are graded on their own: `block_sparse_mask` exactly against a layout
built by brute force (a loop over token pairs, independent of the reference), and
`block_sparse_attention` against dense attention under that oracle mask, so a right mask
with wrong attention (or the reverse) fails only the tests of that function. L is not a
multiple of the block (a short last block); random_blocks repeat and include blocks that
are already in the window or global; the window is narrower than the sequence.
`efficient` runs L = 4096 and fails any call that allocates a tensor with L*L/8 elements.
"""

import pytest
import torch

from attnkata.checker.compare import assert_close, assert_equal_mask, assert_no_mutation
from attnkata.checker.probes import assert_largest_below, call_within_memory, check_call, randn
from attnkata.reference import block_sparse as ref
from attnkata.reference import sdpa as dense_ref

MASK, ATTN = "block_sparse_mask", "block_sparse_attention"
B, H, D, DV = 2, 3, 8, 6


def oracle_mask(L: int, block: int, window: int, n_global: int, random_blocks=None) -> torch.Tensor:
    """The contract, token pair by token pair."""
    rand = [] if random_blocks is None else random_blocks.tolist()
    m = torch.zeros(L, L, dtype=torch.bool)
    for t in range(L):
        for s in range(L):
            i, j = t // block, s // block
            m[t, s] = (
                abs(i - j) <= window
                or i < n_global
                or j < n_global
                or (bool(rand) and j in rand[i])
            )
    return m


def dense(q, k, v, block, window, n_global, random_blocks=None, scale=None):
    mask = oracle_mask(q.shape[-2], block, window, n_global, random_blocks)
    return dense_ref.scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)


# name: (L, block, window, n_global, random_blocks as a list or None)
CASES = {
    # nb = 5, the last block has 1 token; randoms repeat (3, 3) and hit the window / a global block.
    "L13-b3-w1-g1-r2": (13, 3, 1, 1, [[3, 3], [4, 0], [0, 4], [1, 1], [2, 3]]),
    "L16-b4-w0-g0-r1": (16, 4, 0, 0, [[2], [3], [0], [1]]),
    "L11-b2-w1-g0-none": (11, 2, 1, 0, None),
    "L14-b4-w0-g2-r0": (14, 4, 0, 2, "empty"),
    "L10-b2-w0-g1-r1": (10, 2, 0, 1, [[4], [3], [3], [0], [1]]),
}


def case_args(name: str):
    L, block, window, n_global, rand = CASES[name]
    nb = -(-L // block)
    if rand == "empty":
        rb = torch.zeros(nb, 0, dtype=torch.long)
    else:
        rb = None if rand is None else torch.tensor(rand, dtype=torch.long)
    return L, block, window, n_global, rb


def describe(L, block, window, n_global, rb) -> str:
    nb = -(-L // block)
    rand = "None" if rb is None else f"{rb.tolist()} (row i = random key blocks of query block i)"
    return (
        f"L={L}, block={block} (nb = ceil(L / block) = {nb}, last block {L - (nb - 1) * block} token(s)), "
        f"window={window}, n_global={n_global}, random_blocks={rand}"
    )


def qkv(seed: int, L: int, scale: float = 1.0):
    return (
        randn(B, H, L, D, seed=seed, scale=scale),
        randn(B, H, L, D, seed=seed + 1, scale=scale),
        randn(B, H, L, DV, seed=seed + 2),
    )


@pytest.mark.parametrize("name", list(CASES))
def test_mask(solution, name):
    L, block, window, n_global, rb = case_args(name)
    case = f"{MASK}: " + describe(L, block, window, n_global, rb)
    outcome = solution.call(MASK, (L, block, window, n_global, rb))
    assert_no_mutation(outcome, case=case)
    assert_equal_mask(outcome.value, oracle_mask(L, block, window, n_global, rb), case=case)


@pytest.mark.parametrize("name", list(CASES))
def test_attention(solution, name):
    L, block, window, n_global, rb = case_args(name)
    check_call(
        solution,
        ATTN,
        dense,
        (*qkv(1, L), block, window, n_global, rb),
        case=f"{ATTN}: B={B}, H={H}, d={D}, dv={DV}, " + describe(L, block, window, n_global, rb),
    )


def test_attention_explicit_scale(solution):
    L, block, window, n_global, rb = case_args("L13-b3-w1-g1-r2")
    check_call(
        solution,
        ATTN,
        dense,
        (*qkv(4, L), block, window, n_global, rb),
        {"scale": 0.3},
        case=f"{ATTN}: scale=0.3, " + describe(L, block, window, n_global, rb),
    )


@pytest.mark.tier("edge")
def test_mask_device(solution):
    case = f"{MASK}(9, 2, 1, 1, device='meta')"
    got = solution.call(MASK, (9, 2, 1, 1), {"device": "meta"}).value
    if (
        not isinstance(got, torch.Tensor)
        or got.device.type != "meta"
        or got.shape != (9, 9)
        or got.dtype != torch.bool
    ):
        raise AssertionError(
            f"{case}: expected a (9, 9) bool tensor on device meta, got {got!r:.80}"
        )


@pytest.mark.tier("edge")
@pytest.mark.parametrize(
    ("L", "block", "window", "n_global"),
    [
        pytest.param(9, 4, 5, 0, id="window-wider-than-nb"),
        pytest.param(7, 3, 0, 4, id="every-block-global"),
        pytest.param(5, 8, 0, 0, id="one-short-block"),
    ],
)
def test_degenerate_layouts(solution, L, block, window, n_global):
    args = (L, block, window, n_global, None)
    check_call(
        solution,
        ATTN,
        dense,
        (*qkv(7, L), *args[1:]),
        case=f"{ATTN}: " + describe(*args) + ": every query sees every key",
    )
    outcome = solution.call(MASK, args)
    assert_equal_mask(
        outcome.value, torch.ones(L, L, dtype=torch.bool), case=f"{MASK}: " + describe(*args)
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize(
    "dtype", [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]
)
def test_attention_large_logits(solution, dtype):
    L, block, window, n_global, rb = case_args("L13-b3-w1-g1-r2")
    check_call(
        solution,
        ATTN,
        dense,
        (*qkv(10, L, scale=60.0), block, window, n_global, rb),
        dtype=dtype,
        case=f"{ATTN}: large logits (~1e4), " + describe(L, block, window, n_global, rb),
    )


EFF = {"L": 4096, "block": 64, "window": 1, "n_global": 1, "r": 2, "d": 32}


@pytest.mark.tier("efficient")
def test_attention_memory(solution):
    L, block, r, dd = EFF["L"], EFF["block"], EFF["r"], EFF["d"]
    nb = L // block
    rb = torch.randint(0, nb, (nb, r), generator=torch.Generator().manual_seed(5))
    q, k, v = (randn(1, 1, L, dd, seed=s, dtype=torch.float32) for s in (40, 41, 42))
    args = (q, k, v, block, EFF["window"], EFF["n_global"], rb)
    keys = (2 * EFF["window"] + 1 + EFF["n_global"] + r) * block
    case = (
        f"efficiency: B=H=1, L={L}, block={block}, window={EFF['window']}, n_global={EFF['n_global']}, "
        f"r={r}, d=dv={dd}, float32 (a non-global query sees at most {keys} keys)"
    )
    advice = (
        f"A query needs at most (2*window + 1 + n_global + r) * block = {keys} keys, not all {L}: do not "
        "build an (L, L) score matrix or mask. Loop over query blocks (or over the key-block slots) and take "
        "only the allowed key blocks; a global query block may see every key, one block of rows at a time."
    )
    outcome = call_within_memory(
        solution, ATTN, args, dense_bytes=L * L * 4, case=case, advice=advice
    )
    assert_no_mutation(outcome, case=case)
    assert_largest_below(outcome, L * L // 8, case=case, advice=advice)
    expected = ref.block_sparse_attention(*(t.double() for t in (q, k, v)), *args[3:])
    assert_close(outcome.value, expected, case=case, baseline=ref.block_sparse_attention(*args))
