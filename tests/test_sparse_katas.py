"""The sparse katas' `efficient` tiers tell a banded / block solution from a dense one, and
a wrong answer is never excused by being efficient.

For block-sparse and longformer: the dense fixture (right values, (L, L) scores) fails only
`efficient`, on memory; an efficient fixture with one layout mistake fails `core` and is
never failed for its memory. The references are checked in-process against dense masked attention on
layouts the graders do not use.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attnkata.checker.catalog import get_kata
from attnkata.checker.models import FAIL, PASS
from attnkata.checker.runner import check
from attnkata.reference import block_sparse, longformer, topk_sparse
from attnkata.reference.sdpa import scaled_dot_product_attention as dense

MISTAKES = Path(__file__).resolve().parent / "fixtures" / "mistakes"


def _tiers(kata: str, name: str) -> dict[str, dict[str, str]]:
    """{tier: {test id: status}} and, under "messages", every failing test's message."""
    result = check(get_kata(kata), MISTAKES / kata / name, diagnose=False)
    by_tier: dict[str, dict[str, str]] = {"messages": {}}
    for t in result.tests:
        by_tier.setdefault(t.tier, {})[t.id] = t.status
        if t.status != PASS:
            by_tier["messages"][t.id] = t.message
    return by_tier


@pytest.mark.slow
@pytest.mark.parametrize("kata", ["block-sparse", "longformer"])
def test_dense_solution_fails_only_the_efficient_tier(kata: str) -> None:
    tiers = _tiers(kata, "materializes-full-scores.py")
    assert set(tiers["core"].values()) == {PASS} and set(tiers["edge"].values()) <= {
        PASS,
        "skip",
    }, tiers
    [(test_id, status)] = tiers["efficient"].items()
    assert status == FAIL
    # It fails on memory, at the limit the kernel enforces: the message says the allowance and
    # what one dense matrix of these sizes takes.
    message = tiers["messages"][test_id]
    dense = {"block-sparse": 64, "longformer": 256}[kata]
    assert (
        "ran out of the memory this test allows" in message and f"takes {dense} MiB" in message
    ), message
    assert f"{dense // 2} MiB beyond its inputs" in message, message


@pytest.mark.slow
@pytest.mark.parametrize("kata", ["block-sparse", "longformer"])
def test_efficient_but_wrong_solution_fails_on_values_not_memory(kata: str) -> None:
    # Global attention in one direction, computed block by block / as a band: `core` fails;
    # `efficient` checks values too, so it may fail, but never for the memory it uses.
    tiers = _tiers(kata, "global-one-direction.py")
    assert FAIL in tiers["core"].values(), tiers
    assert not any(
        "allocated a tensor of" in m or "ran out of the memory" in m
        for m in tiers["messages"].values()
    ), tiers["messages"]


def _rand(*shape: int, g: torch.Generator) -> torch.Tensor:
    return torch.randn(*shape, generator=g, dtype=torch.float64)


@pytest.mark.parametrize(
    ("L", "block", "window", "n_global", "r"),
    [(17, 4, 1, 1, 3), (8, 8, 0, 0, 0), (19, 5, 2, 0, 1), (6, 1, 1, 2, 2)],
)
def test_block_sparse_reference_matches_dense(
    L: int, block: int, window: int, n_global: int, r: int
) -> None:
    g = torch.Generator().manual_seed(L * block)
    nb = -(-L // block)
    rb = torch.randint(0, nb, (nb, r), generator=g)
    q, k, v = _rand(2, 2, L, 3, g=g), _rand(2, 2, L, 3, g=g), _rand(2, 2, L, 4, g=g)
    mask = block_sparse.block_sparse_mask(L, block, window, n_global, rb)
    torch.testing.assert_close(
        block_sparse.block_sparse_attention(q, k, v, block, window, n_global, rb),
        dense(q, k, v, mask=mask),
        rtol=1e-12,
        atol=1e-12,
    )


@pytest.mark.parametrize(
    ("L", "window", "glob"), [(15, 2, [0, 7, 14]), (9, 0, []), (10, 12, [3]), (12, 1, [11])]
)
def test_longformer_reference_matches_dense(L: int, window: int, glob: list[int]) -> None:
    g = torch.Generator().manual_seed(L + window)
    gidx = torch.tensor(glob, dtype=torch.long)
    q, k, v = _rand(2, 2, L, 3, g=g), _rand(2, 2, L, 3, g=g), _rand(2, 2, L, 4, g=g)
    pad = torch.arange(L)[None, :] < torch.tensor([L, L - 3])[:, None]
    mask = longformer.longformer_mask(L, window, gidx) & pad[:, None, None, :]
    torch.testing.assert_close(
        longformer.longformer_attention(q, k, v, window, gidx, pad),
        dense(q, k, v, mask=mask),
        rtol=1e-12,
        atol=1e-12,
    )


def test_topk_reference_keeps_exactly_min_k_allowed() -> None:
    g = torch.Generator().manual_seed(3)
    q, k = _rand(2, 5, 4, g=g), _rand(2, 9, 4, g=g)
    v = torch.eye(9, dtype=torch.float64).expand(2, 9, 9)  # V = I: the output rows are the weights
    mask = torch.rand(2, 5, 9, generator=g) < 0.5
    out = topk_sparse.topk_attention(q, k, v, 3, mask=mask)
    kept = (out > 0).sum(-1)
    assert torch.equal(kept, mask.sum(-1).clamp(max=3))
    assert not (out.bool() & ~mask).any()
