"""The `efficient` tier of the sliding-window kata tells a banded solution from a mask-based one.

A full-mask solution that gets every value right must still fail the kata, with a message
that names the tensor it allocated and the op that made it; a different banded solution
(query blocks instead of pad + unfold) must pass. The banded reference itself is checked
in-process against dense masked attention over many shapes and windows, gradients included.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from attnkata.checker.catalog import get_kata
from attnkata.checker.models import FAIL, PASS
from attnkata.checker.runner import check
from attnkata.reference.sdpa import scaled_dot_product_attention as dense_sdpa
from attnkata.reference.sliding_window import sliding_window_attention

ALT = Path(__file__).resolve().parent / "fixtures" / "alt" / "sliding-window"


def _window_mask(L: int, S: int, window: tuple[int, int]) -> torch.Tensor:
    left, right = window
    p = torch.arange(L)[:, None] + (S - L)
    j = torch.arange(S)[None, :]
    m = torch.ones(L, S, dtype=torch.bool)
    if left >= 0:
        m &= j >= p - left
    if right >= 0:
        m &= j <= p + right
    return m


SHAPES = [(9, 13), (13, 9), (6, 6), (1, 7), (7, 1), (12, 8)]
WINDOWS = [
    (0, 0),
    (3, 0),
    (2, 2),
    (4, 1),
    (1, 4),
    (0, 3),
    (-1, 0),
    (-1, -1),
    (-1, 2),
    (2, -1),
    (20, 30),
]


@pytest.mark.parametrize(("L", "S"), SHAPES)
def test_reference_matches_dense_attention(L: int, S: int) -> None:
    g = torch.Generator().manual_seed(L * 100 + S)
    for window in WINDOWS:
        q = torch.randn(2, 3, L, 5, generator=g, dtype=torch.float64, requires_grad=True)
        k = torch.randn(2, 3, S, 5, generator=g, dtype=torch.float64, requires_grad=True)
        v = torch.randn(2, 3, S, 4, generator=g, dtype=torch.float64, requires_grad=True)
        got = sliding_window_attention(q, k, v, window, scale=0.7)
        want = dense_sdpa(q, k, v, mask=_window_mask(L, S, window), scale=0.7)
        torch.testing.assert_close(
            got, want, rtol=1e-12, atol=1e-12, msg=f"L={L}, S={S}, window={window}"
        )
        grad_out = torch.randn(got.shape, generator=g, dtype=torch.float64)
        g_got = torch.autograd.grad(got, (q, k, v), grad_out)
        g_want = torch.autograd.grad(want, (q, k, v), grad_out)
        for name, a, b in zip("qkv", g_got, g_want, strict=True):
            torch.testing.assert_close(
                a, b, rtol=1e-10, atol=1e-12, msg=f"grad {name}, L={L}, S={S}, window={window}"
            )


def test_reference_is_banded_and_keeps_dtype() -> None:
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

    n, window = 4096, (63, 0)
    q, k, v = (torch.randn(1, 2, n, 8) for _ in range(3))
    with Largest():
        out = sliding_window_attention(q, k, v, window)
    assert out.dtype == torch.float32 and out.shape == (1, 2, n, 8)
    # The key windows (B * H * n * 64 * d elements) may be copied once; the dense scores
    # (B * H * n * n) would be 8x more.
    assert Largest.elements <= 2 * n * 64 * 8, Largest.elements


def _grade(name: str):
    return check(get_kata("sliding-window"), ALT / name, diagnose=False)


@pytest.mark.slow
def test_full_mask_solution_passes_core_but_fails_efficient() -> None:
    result = _grade("full_mask.py")
    by_tier: dict[str, list] = {}
    for t in result.tests:
        by_tier.setdefault(t.tier, []).append(t)
    assert by_tier["core"] and all(t.status == PASS for t in by_tier["core"]), [
        (t.id, t.message) for t in by_tier["core"] if t.status != PASS
    ]
    assert all(t.status == PASS for t in by_tier["edge"])
    [eff] = by_tier["efficient"]
    assert eff.status == FAIL
    assert not result.passed and result.status == FAIL
    # It ran out of the allowance the kernel enforces (half a dense 8192 x 8192 float32 matrix),
    # and the message says where and what the dense matrix takes.
    assert "ran out of the memory this test allows" in eff.message, eff.message
    assert "128 MiB beyond its inputs" in eff.message and "takes 256 MiB" in eff.message, (
        eff.message
    )
    assert re.search(r"at line \d+", eff.message), eff.message


@pytest.mark.slow
def test_blocked_banded_solution_passes() -> None:
    result = _grade("blocked.py")
    assert result.passed, [(t.id, t.message) for t in result.tests if t.status != PASS]
    assert {t.tier for t in result.tests} == {"core", "edge", "efficient"}


@pytest.mark.slow
def test_reference_passes_every_tier() -> None:
    from attnkata.checker.skeleton import reference_path

    result = check(get_kata("sliding-window"), reference_path("sliding-window"), diagnose=False)
    assert result.passed, [(t.id, t.message) for t in result.tests if t.status != PASS]
