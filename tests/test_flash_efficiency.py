"""The FlashAttention katas: the tiled references against dense attention, and the tiers.

A right-but-dense solution (the `materializes-full-scores` fixture) must pass `core` and
`edge` and fail only `efficient`, with a message that names the tensor and the op; an
efficient-but-wrong one (NaN for rows with no allowed key so far) must pass `core` and
`efficient` and fail only `edge`. The references are also checked in-process against
dense attention and autograd over many shapes, tiles and masks, and for their largest
allocation.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch

from attnkata.checker.catalog import get_kata
from attnkata.checker.models import PASS
from attnkata.checker.probes import causal
from attnkata.checker.runner import check
from attnkata.reference.flash_attention import flash_attention
from attnkata.reference.flash_attention_backward import flash_attention_backward
from attnkata.reference.sdpa import scaled_dot_product_attention as dense_sdpa

MISTAKES = Path(__file__).resolve().parent / "fixtures" / "mistakes"


@pytest.mark.parametrize(("L", "S"), [(19, 27), (27, 13), (16, 16), (1, 5), (5, 1)])
def test_references_match_dense_attention(L: int, S: int) -> None:
    g = torch.Generator().manual_seed(L * 100 + S)
    for (bq, bk), is_causal, with_mask in itertools.product(
        [(3, 4), (8, 8), (64, 64)], (False, True), (False, True)
    ):
        q = torch.randn(2, 3, L, 5, generator=g, dtype=torch.float64, requires_grad=True)
        k = torch.randn(2, 3, S, 5, generator=g, dtype=torch.float64, requires_grad=True)
        v = torch.randn(2, 3, S, 4, generator=g, dtype=torch.float64, requires_grad=True)
        mask = torch.rand(2, 1, L, S, generator=g) < 0.5 if with_mask else None
        allowed = causal(L, S) if is_causal else torch.ones(L, S, dtype=torch.bool)
        if mask is not None:
            allowed = allowed & mask
        want = dense_sdpa(q, k, v, mask=allowed, scale=0.7)
        want_lse = torch.logsumexp(
            (q @ k.transpose(-2, -1) * 0.7).masked_fill(~allowed, float("-inf")), -1
        )
        kw = {"mask": mask, "is_causal": is_causal, "scale": 0.7, "block_q": bq, "block_k": bk}
        label = f"L={L}, S={S}, tiles {bq}x{bk}, causal={is_causal}, mask={with_mask}"
        with torch.no_grad():
            out, lse = flash_attention(q, k, v, **kw)
        torch.testing.assert_close(out, want.detach(), rtol=1e-10, atol=1e-10, msg=label)
        torch.testing.assert_close(lse, want_lse.detach(), rtol=1e-10, atol=1e-10, msg=label)
        dout = torch.randn(want.shape, generator=g, dtype=torch.float64)
        grads = torch.autograd.grad(want, (q, k, v), dout)
        with torch.no_grad():
            mine = flash_attention_backward(q, k, v, out, lse, dout, **kw)
        for name, a, b in zip(("dq", "dk", "dv"), mine, grads, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10, msg=f"{name}, {label}")


def test_references_allocate_tiles_only() -> None:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Largest(TorchDispatchMode):
        elements = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
            out = func(*args, **(kwargs or {}))
            for t in out if isinstance(out, tuple | list) else (out,):
                if isinstance(t, torch.Tensor):
                    Largest.elements = max(
                        Largest.elements, t.untyped_storage().nbytes() // t.element_size()
                    )
            return out

    n, d, tile = 1024, 16, 64
    q, k, v, dout = (torch.randn(1, 2, n, d) for _ in range(4))
    kw = {"is_causal": True, "block_q": tile, "block_k": tile}
    with Largest():
        out, lse = flash_attention(q, k, v, **kw)
        grads = flash_attention_backward(q, k, v, out, lse, dout, **kw)
    assert out.dtype == lse.dtype == torch.float32 and lse.shape == (1, 2, n)
    assert all(g.dtype == torch.float32 for g in grads)
    # The largest tensors are the inputs' size (B * H * n * d); a tile is 2 * 64 * 64.
    assert Largest.elements <= 2 * n * d, Largest.elements


def _tiers(kata: str, fixture: str) -> dict[str, set[str]]:
    result = check(get_kata(kata), MISTAKES / kata / fixture, diagnose=False)
    by_tier: dict[str, set[str]] = {}
    for t in result.tests:
        by_tier.setdefault(t.tier, set()).add(t.status)
    return {tier: statuses for tier, statuses in by_tier.items()} | {
        "_messages": {t.message for t in result.tests if t.status != PASS}
    }


@pytest.mark.slow
@pytest.mark.parametrize("kata", ["flash-attention", "flash-attention-backward"])
def test_dense_solution_fails_only_efficient(kata: str) -> None:
    tiers = _tiers(kata, "materializes-full-scores.py")
    assert tiers["core"] == {PASS} and tiers["edge"] == {PASS}, tiers
    assert tiers["efficient"] == {"fail"}, tiers
    [message] = tiers["_messages"]
    # The kernel-enforced allowance: half a dense 4096 x 4096 float32 matrix (three quarters for the
    # backward), which the dense code exceeds on its first (L, S) allocation.
    cap = {"flash-attention": 32, "flash-attention-backward": 48}[kata]
    assert "ran out of the memory this test allows asking for" in message, message
    assert f"{cap} MiB beyond its inputs" in message and "takes 64 MiB" in message, message


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kata", "fixture"),
    [
        ("flash-attention", "flash-empty-block-nan.py"),
        ("flash-attention-backward", "flash-bwd-nan-empty-rows.py"),
    ],
)
def test_efficient_but_wrong_fails_only_edge(kata: str, fixture: str) -> None:
    tiers = _tiers(kata, fixture)
    assert tiers["core"] == {PASS} and tiers["efficient"] == {PASS}, tiers
    assert tiers["edge"] == {PASS, "fail"}, tiers
    assert any("NaN" in m for m in tiers["_messages"]), tiers["_messages"]
