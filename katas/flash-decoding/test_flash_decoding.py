"""Grader for the `flash-decoding` kata. Run directly: pytest <this folder> --solution your_file.py

Oracles independent of the reference: `flash_decode` is compared with dense attention over
the allowed keys (the same for every N), its partials (recorded from its one call of the
module's `combine`) with torch.logsumexp over each split's keys, and `combine` with
torch.logsumexp over the splits. Sizes B=3, H=6, Hkv=2 (g=3), d=8, dv=6, S=10 with N=4
(splits of 3, 3, 3, 1: S // N = 2 misses keys 8 and 9), S=9 with N=4 and S=5 with N=8
(empty splits), lengths that end inside and before splits. float32 is judged against a
plain float32 split-K (the reference): with logits near 1e4 its merge loses up to
ulp(|lse|) per weight.
"""

import math

import pytest
import torch

from attnkata.checker.compare import (
    assert_close,
    assert_close_parts,
    assert_no_mutation,
    jittered,
)
from attnkata.checker.probes import cast, randn
from attnkata.checker.proxy import CandidateRaised
from attnkata.reference import flash_decoding as ref

FN, COMBINE = "flash_decode", "combine"
B, H, HKV, D, DV, S, N = 3, 6, 2, 8, 6, 10, 4
DTYPES = [pytest.param(torch.float64, id="float64"), pytest.param(torch.float32, id="float32")]
NEG_INF = float("-inf")


def scores(q, k, lengths=None, scale=None):
    """(B, H, S) scaled scores, -inf at keys j >= lengths[b]; query head h reads KV head h // g."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    kh = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)  # (B, H, S, d)
    s = torch.einsum("bhd,bhsd->bhs", q, kh) * scale
    if lengths is not None:
        s = s.masked_fill(torch.arange(k.shape[2]) >= lengths.view(-1, 1, 1), NEG_INF)
    return s


def softmax_avg(s, v):
    """(out, lse) of softmax attention over the last dim of s (out 0, lse -inf where no key)."""
    lse = torch.logsumexp(s, dim=-1)  # (B, H)
    w = torch.exp(s - lse.unsqueeze(-1)).nan_to_num(0.0)  # a row without keys: all 0
    return torch.einsum("bhs,bhsd->bhd", w, v), lse


def dense(q, k, v, num_splits, lengths=None, scale=None):
    """Plain attention over the allowed keys: what every N must give."""
    vh = v.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
    return softmax_avg(scores(q, k, lengths, scale), vh)[0]


def partials(q, k, v, num_splits, lengths=None, scale=None):
    """(partial_out (B, H, N, dv), partial_lse (B, H, N)) with splits of ceil(S / N) keys."""
    s_all = scores(q, k, lengths, scale)
    vh = v.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
    S_ = k.shape[2]
    cs = math.ceil(S_ / num_splits)
    outs, lses = [], []
    for c in range(num_splits):
        j0, j1 = min(c * cs, S_), min((c + 1) * cs, S_)
        o, lse = softmax_avg(s_all[..., j0:j1], vh[:, :, j0:j1])
        outs.append(o)
        lses.append(lse)
    return torch.stack(outs, dim=2), torch.stack(lses, dim=2)


def merged(partial_out, partial_lse):
    """combine's oracle: torch.logsumexp over the splits."""
    lse = torch.logsumexp(partial_lse, dim=-1)
    w = torch.exp(partial_lse - lse.unsqueeze(-1)).nan_to_num(0.0)
    return (w.unsqueeze(-1) * partial_out).sum(dim=-2), lse


def qkv(seed: int, seq: int = S, hkv: int = HKV, scale: float = 1.0):
    return (
        randn(B, H, D, seed=seed, scale=scale),
        randn(B, hkv, seq, D, seed=seed + 1, scale=scale),
        randn(B, hkv, seq, DV, seed=seed + 2),
    )


def sizes(seq: int = S, n: int = N, lengths=None) -> str:
    cs = math.ceil(seq / n)
    split = [max(0, min((c + 1) * cs, seq) - min(c * cs, seq)) for c in range(n)]
    extra = "" if lengths is None else f", lengths={lengths.tolist()}"
    return (
        f"B={B}, H={H}, Hkv={HKV}, d={D}, dv={DV}, S={seq}, N={n} (splits of {split} keys){extra}"
    )


def float32_floor(a64, kwargs) -> float:
    """4 eps |s|max |v|max: a logit (or a split's lse) of size |s| is stored to eps |s| in
    float32, which moves a softmax weight by that much relatively; a float32 split-K that
    rounds elsewhere may be far luckier on one input, so its error alone is no budget."""
    q, k, v = a64[:3]
    s = scores(q, k, None, kwargs.get("scale"))
    return 4 * torch.finfo(torch.float32).eps * float(s.abs().max()) * float(v.abs().max())


def check(solution, args, kwargs, case, dtype=torch.float64, record=False):
    """flash_decode against dense attention; float32 within 4x a float32 split-K's error,
    and never below `float32_floor`."""
    a64 = tuple(cast(x, torch.float64) for x in args)
    a = tuple(cast(x, dtype) for x in args)
    with solution.submit(FN, a, kwargs, record=(COMBINE,) if record else ()) as pending:
        expected = dense(*a64, **kwargs)
        baseline = ref.flash_decode(*a, **kwargs) if dtype != torch.float64 else None
    outcome = pending.result()
    assert_no_mutation(outcome, case=case)
    floor = float32_floor(a64, kwargs) if dtype == torch.float32 else 0.0
    assert_close(outcome.value, expected, case=case, baseline=baseline, floor=floor)
    return outcome


def check_lengths(
    solution, seed, lengths, what, dtype=torch.float64, scale=1.0, record=False, index=torch.int64
):
    """flash_decode with N = 4 splits and these lengths; returns (outcome, case)."""
    kwargs = {"num_splits": N, "lengths": torch.tensor(lengths, dtype=index)}
    case = f"{what}, {sizes(lengths=kwargs['lengths'])} ({str(index).removeprefix('torch.')})"
    return check(solution, qkv(seed, scale=scale), kwargs, case, dtype, record), case


def check_combine(solution, po, pl, case, dtype=torch.float64, plain=merged):
    """combine against torch.logsumexp; float32 within 4x the error of `plain` in float32,
    and never less than 4x what one float32 rounding of the inputs changes (compare.jittered):
    with partial lse near 1e4, log-sum-exp rounds to ulp(1e4) ~ 1e-3, so each weight
    exp(lse_c - lse) may be off by that much relatively (a merge that subtracts the max first
    is luckier)."""
    a = (cast(po, dtype), cast(pl, dtype))
    with solution.submit(COMBINE, a) as pending:
        expected = merged(po, pl)
        baseline = plain(*a) if dtype != torch.float64 else None
    outcome = pending.result()
    assert_no_mutation(outcome, case=case)
    spread = merged(*jittered((po, pl))) if dtype != torch.float64 else None
    # A weight exp(lse_c - lse) is off by up to 2 eps |lse|max relatively (both lse rounded).
    eps = torch.finfo(dtype).eps if dtype != torch.float64 else 0.0
    finite = pl[torch.isfinite(pl)]
    big = float(finite.abs().max()) if finite.numel() else 0.0
    floor = 4 * 2 * eps * big * float(po.abs().max())
    assert_close_parts(
        outcome.value,
        expected,
        case=case,
        names=("out", "lse"),
        baseline=baseline,
        spread=spread,
        floors=(floor,),
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_combine(solution, dtype):
    po = randn(B, H, N, DV, seed=1)
    pl = randn(B, H, N, seed=2, scale=3.0)
    pl[0, 1, 2] = pl[2, 4, 0] = NEG_INF  # empty splits: out 0, lse -inf
    po[0, 1, 2] = po[2, 4, 0] = 0.0
    case = (
        f"combine: partial_out (B, H, N, dv) = {tuple(po.shape)}, partial_lse with two -inf splits"
    )
    check_combine(solution, po, pl, case, dtype)


@pytest.mark.parametrize(
    "lead", [pytest.param((), id="no-lead"), pytest.param((2, 5), id="2-lead")]
)
def test_combine_leading_dims(solution, lead):
    po, pl = randn(*lead, 5, DV, seed=4), randn(*lead, 5, seed=5, scale=3.0)
    case = f"combine: partial_out {tuple(po.shape)}, partial_lse {tuple(pl.shape)} (N = 5)"
    check_combine(solution, po, pl, case)


@pytest.mark.parametrize("dtype", DTYPES)
def test_splits_not_dividing(solution, dtype):
    check(solution, qkv(7), {"num_splits": N}, f"no lengths, {sizes()}", dtype)


@pytest.mark.parametrize(
    ("seq", "n"),
    [(9, 4), (10, 1), (10, 5), (10, 3), (5, 8)],
    ids=["S9-N4", "S10-N1", "S10-N5", "S10-N3", "S5-N8"],
)
def test_split_counts(solution, seq, n):
    check(solution, qkv(10, seq=seq), {"num_splits": n}, f"no lengths, {sizes(seq, n)}")


def test_lengths(solution):
    what = "query b attends keys j < lengths[b]"
    check_lengths(solution, 13, [10, 4, 7], what, index=torch.int32)


def test_explicit_scale(solution):
    check(solution, qkv(16), {"num_splits": 3, "scale": 0.3}, f"scale=0.3, {sizes(n=3)}")


def recorded_partials(call: dict) -> list:
    """(partial_out, partial_lse) of a recorded combine call, by position or by keyword."""
    args, kwargs = list(call["args"]), dict(call["kwargs"])
    for name in ("partial_out", "partial_lse")[len(args) :]:
        if name in kwargs:
            args.append(kwargs.pop(name))
    return [*args, *kwargs.values()][:2]


@pytest.mark.parametrize("dtype", DTYPES)
def test_recorded_partials(solution, dtype):
    what = "the partials flash_decode passes to combine"
    outcome, case = check_lengths(solution, 19, [10, 2, 7], what, dtype, record=True)
    args, kwargs = qkv(19), {"num_splits": N, "lengths": torch.tensor([10, 2, 7])}
    log = outcome.calls.get(COMBINE) or {}
    count = int(log.get("count", 0))
    if count != 1:
        raise AssertionError(
            f"{case}: flash_decode must merge the N partials with one call of this module's "
            f"`combine` (the top-level name, looked up when it is called); it called it {count} "
            "times" + (", so its partials cannot be checked" if count == 0 else "")
        )
    got = recorded_partials(log["calls"][0])
    want = partials(*(cast(x, torch.float64) for x in args), **kwargs)
    base = partials(*(cast(x, dtype) for x in args), **kwargs) if dtype != torch.float64 else None
    for i, name in enumerate(("partial_out (B, H, N, dv)", "partial_lse (B, H, N)")):
        assert_close(
            got[i] if i < len(got) else None,
            want[i],
            case=case,
            what=f"combine's {name}",
            baseline=None if base is None else base[i],
        )


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_sequence(solution, dtype):
    what = "sequence 0 has no key (every split empty: out must be 0)"
    check_lengths(solution, 22, [0, 5, 10], what, dtype)


@pytest.mark.tier("edge")
def test_combine_all_splits_empty(solution):
    po = randn(B, H, N, DV, seed=25)
    pl = randn(B, H, N, seed=26, scale=3.0)
    po[1, 2], pl[1, 2] = 0.0, NEG_INF
    case = "combine: every split of row [1, 2] is empty (its out must be 0 and its lse -inf)"
    check_combine(solution, po, pl, case)


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_combine_large_lse(solution, dtype):
    po = randn(B, H, N, DV, seed=28)
    pl = randn(B, H, N, seed=29, scale=5.0) + torch.tensor([1e4, -1e4, 1e4]).view(B, 1, 1)
    case = "combine: partial lse near +1e4 (batches 0, 2) and -1e4 (batch 1)"
    check_combine(solution, po, pl, case, dtype, plain=ref.combine)


@pytest.mark.tier("edge")
@pytest.mark.parametrize("dtype", DTYPES)
def test_large_logits(solution, dtype):
    what = "large logits (|q.k|/sqrt(d) up to ~1e4)"
    check_lengths(solution, 31, [10, 3, 8], what, dtype, scale=60.0)


@pytest.mark.tier("edge")
def test_num_splits_below_one_raises(solution):
    case = f"num_splits=0 must raise ValueError, {sizes(n=1)}"
    try:
        out = solution.call(FN, (*qkv(34), 0))
    except CandidateRaised as exc:
        if exc.exc_type != "ValueError":
            raise AssertionError(f"{case}: raised {exc.exc_type}: {exc.exc_message}") from None
        return
    raise AssertionError(f"{case}: returned {type(out.value).__name__} instead of raising")
