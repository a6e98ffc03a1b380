"""Several mistakes at once (checker/diagnose/peel.py), probes in other forms for code that
cannot take them, and the diagnosis' memory bound."""

from __future__ import annotations

import resource
import textwrap
from pathlib import Path

import pytest
import torch

from attnkata.checker.catalog import get_kata
from attnkata.checker.diagnose import engine, pairs, peel
from attnkata.checker.diagnose.behaviour import differs
from attnkata.checker.diagnose.subjects import Observed
from attnkata.checker.runner import check


@pytest.fixture(autouse=True)
def strict_diagnosis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNKATA_STRICT_DIAGNOSIS", "1")


def _combined(kata_id: str, *picks: tuple[str, int]) -> list[Observed]:
    """The outputs of the reference with these mistakes, on the kata's probes."""
    spec = engine.load_spec(kata_id)
    variant: dict = {}
    for mid, vi in picks:
        variant = (
            pairs.compose(variant, spec.mutants[mid][vi])
            if variant
            else dict(spec.mutants[mid][vi])
        )
    return [spec.subject.mutant_call(variant, p) for p in spec.probes]


def _peel(kata_id: str, cand: list[Observed]) -> peel.Peeling | None:
    spec = engine.load_spec(kata_id)
    ref, outs = engine._local_observations(kata_id)
    return peel.peel(
        kata_id,
        spec.probes,
        list(range(len(spec.probes))),
        cand,
        ref,
        outs,
        spec.mutants,
        spec.subject,
        budget_s=30.0,
    )


def test_three_interacting_mistakes_are_peeled_one_at_a_time() -> None:
    picks = [("online-softmax-no-rescale", 0), ("lse-wrong", 1), ("causal-mask-top-left", 0)]
    found = _peel("flash-attention", _combined("flash-attention", *picks))
    assert found is not None and not found.unexplained
    assert {s.mid for s in found.steps} == {mid for mid, _ in picks}
    assert all(s.certain and s.probes for s in found.steps)
    assert found.steps[0].share == max(
        s.share for s in found.steps
    )  # the one explaining most comes first


def test_a_mistake_beside_an_unknown_quirk_is_still_certain() -> None:
    """Two mistakes plus something no mutant has (the output scaled on a probe where neither
    mistake shows): each reproduces every element it changes, the quirk stays unexplained."""
    spec = engine.load_spec("topk-sparse")
    cand = _combined("topk-sparse", ("topk-before-mask", 0), ("missing-scale", 0))
    i = next(i for i, p in enumerate(spec.probes) if "scale" in p.kwargs)  # neither shows there
    cand[i] = Observed(value=cand[i].value * 1.5)
    found = _peel("topk-sparse", cand)
    assert found is not None and found.unexplained == [spec.probes[i].name]
    assert {s.mid for s in found.steps if s.certain} == {"topk-before-mask", "missing-scale"}


def test_junk_of_the_wrong_shape_is_no_mistake() -> None:
    spec = engine.load_spec("rope")
    ref, _ = engine._local_observations("rope")
    cand = [Observed(value=torch.zeros(3)) if r.ok else r for r in ref]
    found = _peel("rope", cand)
    assert found is None or not any(s.certain for s in found.steps)
    assert len(cand) == len(spec.probes)


FLOAT32_ONLY = """
    import math
    import torch

    def flash_attention(q, k, v, mask=None, is_causal=False, scale=None, block_q=64, block_k=64):
        if q.dtype == torch.float64:
            raise TypeError("only float32 and float16 are supported")
        B, H, L, d = q.shape
        S = k.shape[2]
        s = (q @ k.transpose(-2, -1)) * (1.0 if scale is None else scale)  # default scale missing
        keep = torch.ones(L, S, dtype=torch.bool, device=q.device)
        if is_causal:
            keep = keep & torch.ones(L, S, dtype=torch.bool, device=q.device).tril(S - L)
        keep = keep.expand(B, H, L, S)
        if mask is not None:
            keep = keep & mask
        s = s.masked_fill(~keep, float("-inf"))
        m = s.amax(-1, keepdim=True)
        m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
        e = torch.exp(s - m)
        l = e.sum(-1, keepdim=True)
        out = e @ v / torch.where(l > 0, l, torch.ones_like(l))
        lse = torch.where(l > 0, m + torch.log(l), torch.full_like(l, float("-inf"))).squeeze(-1)
        return out, lse
"""


def test_float32_only_code_is_judged_on_float32_forms_of_the_probes(tmp_path: Path) -> None:
    path = tmp_path / "flash_attention.py"
    path.write_text(textwrap.dedent(FLOAT32_ONLY))
    result = check(get_kata("flash-attention"), path, maxfail=1)
    essential = [d.id for d in result.diagnostics if d.is_error]
    ids = [d.id for d in result.diagnostics]
    assert "missing-scale" in essential and "input-not-supported" in ids, result.diagnostics


def test_an_oversized_output_is_different_without_a_float64_copy() -> None:
    big = Observed(value=torch.zeros(64 * 1024 * 1024, dtype=torch.uint8))
    ref = Observed(value=torch.zeros(2, 3, 5, 6, dtype=torch.float64))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert differs(big, ref, 180).all()
    assert (
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024
    )  # KiB: no 512 MiB copy
