"""Trivial outputs fail every kata's required tiers.

A grader that an all-zeros output, NaN everywhere, the mean of V or the first input passed
back could satisfy would pass code that does not compute attention (the GPU practice sites'
attention tests accept several of these). Each trivial answer below is served in this process
(checker/local.py: trusted code with the candidate API) as a wrapper around the kata's own
reference, so it takes every input the contract allows and fails only by what it returns.
The other classic non-answers -- no scaling, softmax over the wrong axis, uniform weights
over the allowed keys -- are catalogued mistakes with mutants of their own, which
tests/test_mutation_matrix.py shows failing."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from attnkata.checker import driver
from attnkata.checker.catalog import all_katas
from attnkata.checker.local import LocalCandidate
from attnkata.checker.models import PASS, SKIP

Transform = Callable[[torch.Tensor, tuple], torch.Tensor | None]


def _first_input(out: torch.Tensor, args: tuple) -> torch.Tensor | None:
    """The first tensor argument handed back, where it has the output's shape (q, or x)."""
    first = next((a for a in args if isinstance(a, torch.Tensor)), None)
    if first is None or first.shape != out.shape:
        return None
    return first.to(out.dtype)


def _mean_of_v(out: torch.Tensor, args: tuple) -> torch.Tensor | None:
    """Every query answered with the mean of the values (uniform weights over every key)."""
    if len(args) < 3 or not all(isinstance(a, torch.Tensor) for a in args[:3]):
        return None
    v = args[2]
    if v.dim() < 2 or out.dim() != v.dim() or out.shape[-1] != v.shape[-1]:
        return None
    return v.mean(dim=-2, keepdim=True).expand(out.shape).to(out.dtype)


def _noise(out: torch.Tensor, args: tuple) -> torch.Tensor:
    g = torch.Generator().manual_seed(1234)
    if not out.is_floating_point():
        return torch.rand(out.shape, generator=g) < 0.5
    return torch.randn(out.shape, generator=g, dtype=torch.float64).to(out.dtype)


TRIVIAL: dict[str, Transform] = {
    "zeros": lambda out, args: torch.zeros_like(out),
    "ones": lambda out, args: torch.ones_like(out),
    "nan": lambda out, args: (
        torch.full_like(out, float("nan")) if out.is_floating_point() else None
    ),
    "noise": _noise,
    "0.999 x the right answer": lambda out, args: out * 0.999 if out.is_floating_point() else None,
    "first input": _first_input,
    "mean of V": _mean_of_v,
}


def _replace(value: Any, args: tuple, transform: Transform) -> tuple[Any, bool]:
    """`value` with every tensor in it transformed; False when the transform applies to none."""
    if isinstance(value, np.ndarray):  # sdpa-numpy: the same answers as arrays
        tensors = tuple(torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args)
        new = transform(torch.from_numpy(value), tensors)
        return (value, False) if new is None else (new.numpy(), True)
    if isinstance(value, torch.Tensor):
        new = transform(value.detach(), args)
        return (value, False) if new is None else (new, True)
    if isinstance(value, tuple | list):
        parts = [_replace(v, args, transform) for v in value]
        return type(value)(p for p, _ in parts), any(done for _, done in parts)
    return value, False


def _trivial(reference: Any, transform: Transform) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        out, done = _replace(reference(*args, **kwargs), args, transform)
        if not done:
            raise NotApplicable
        return out

    return wrapped


class NotApplicable(Exception):
    """The trivial answer has no meaning for this output (e.g. the first input's shape)."""


def _variant(module: Any, entry: str, transform: Transform) -> Any:
    target = getattr(module, entry)
    if not isinstance(target, type):
        return _trivial(target, transform)

    class Trivial(target):  # type: ignore[misc, valid-type]
        def forward(self, *args: Any, **kwargs: Any) -> Any:
            return _trivial(super().forward, transform)(*args, **kwargs)

    Trivial.__name__ = Trivial.__qualname__ = entry
    return Trivial


@pytest.mark.slow
@pytest.mark.parametrize("kata_id", sorted(all_katas()))
def test_trivial_outputs_fail_every_required_tier(kata_id: str) -> None:
    """All-zeros runs the whole grader; each other answer runs the tests that all-zeros fails
    first in each required tier but the efficient one (a failure there is the tier's
    failure): the whole grader for every answer, or the efficient tier's large inputs seven
    times, would cost minutes. The efficient tiers compare values after memory, as every
    other tier does."""
    kata = all_katas()[kata_id]
    reference = importlib.import_module(f"attnkata.reference.{kata.module_name}")
    first: dict[str, str] = {}  # tier -> the first test all-zeros fails there
    problems, tried = [], 0
    for name, transform in TRIVIAL.items():
        variant = {e: _variant(reference, e, transform) for e in kata.entry_points}
        nodes = [f"{kata.grader_path}::test_{t}" for t in first.values()] or None
        _, collector, _ = driver.run(
            kata, kata.grader_path, LocalCandidate(reference, variant), "en", nodes=nodes
        )
        results = [r for r in collector.results if r.status != SKIP]
        if all("NotApplicable" in (r.message or "") for r in results if r.status != PASS):
            continue  # e.g. no input has the output's shape: nothing trivial to hand back
        tried += 1
        for tier in kata.required_tiers:
            if nodes is not None and tier not in first:
                continue  # (the efficient tier: all-zeros only)
            in_tier = [r for r in results if r.tier == tier]
            if not in_tier or all(r.status == PASS for r in in_tier):
                problems.append(f"{name!r} passes the {tier} tier")
            elif nodes is None and tier != "efficient":
                first[tier] = next(r.id for r in in_tier if r.status != PASS)
    # (a boolean mask has three: all False, all True, noise)
    assert tried >= 3, f"only {tried} trivial outputs apply to {kata_id}"
    assert not problems, f"{kata_id}: " + "; ".join(problems)
