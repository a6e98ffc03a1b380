"""Grader for the `causal-mask` kata. Run directly: pytest <this folder> --solution your_file.py

Masks are compared exactly. L and S differ in most cases, because a top-left causal mask
(`tril()` with no offset) equals the bottom-right one only when L == S; B differs from S so
a padding mask laid out on the wrong axis shows up as a wrong shape. A failing comparison
prints both masks as grids (rows = queries or batch entries, columns = keys).
"""

import pytest
import torch

from attnkata.checker.compare import assert_equal_mask, assert_no_mutation, describe
from attnkata.checker.probes import causal

CAUSAL, PADDING = "causal_mask", "padding_mask"
GRID_LIMIT = 16  # draw grids only for masks small enough to read


def _grid(m: torch.Tensor) -> str:
    return "\n".join("  " + " ".join("1" if x else "." for x in row) for row in m.tolist())


def _grids(got: object, expected: torch.Tensor) -> str:
    if not (
        isinstance(got, torch.Tensor) and got.shape == expected.shape and got.device.type != "meta"
    ):
        return ""
    g, e = got.cpu().bool(), expected.cpu()
    if g.dim() == 4:  # (B, 1, 1, S): one row per batch entry
        g, e = g.flatten(1), e.flatten(1)
    if g.dim() != 2 or max(g.shape) > GRID_LIMIT:
        return ""
    return f"\nexpected (1 = may attend):\n{_grid(e)}\ngot:\n{_grid(g)}"


def check_mask(outcome, expected: torch.Tensor, *, case: str) -> None:
    assert_no_mutation(outcome, case=case)
    try:
        assert_equal_mask(outcome.value, expected, case=case)
    except AssertionError as exc:
        # Grids help only when the values differ, not for a wrong dtype, shape or device.
        grids = _grids(outcome.value, expected) if "entries differ" in str(exc) else ""
        raise AssertionError(f"{exc}{grids}") from None


def expected_padding(lengths: torch.Tensor, S: int) -> torch.Tensor:
    keys = torch.arange(S)
    return torch.stack([keys < int(n) for n in lengths]).view(len(lengths), 1, 1, S)


def causal_case(L: int, S: int | None) -> str:
    S_ = L if S is None else S
    return (
        f"causal_mask(L={L}, S={S}): query i sits at p = S - L + i = {S_ - L} + i and may "
        "attend keys j <= p"
    )


@pytest.mark.parametrize(
    ("L", "S"),
    [
        pytest.param(6, 6, id="L=S=6"),
        pytest.param(3, 8, id="L=3,S=8"),
        pytest.param(4, 11, id="L=4,S=11"),
    ],
)
def test_causal(solution, L, S):
    check_mask(solution.call(CAUSAL, (L, S)), causal(L, S), case=causal_case(L, S))


def test_causal_default_keys(solution):
    check_mask(
        solution.call(CAUSAL, (5,)),
        causal(5),
        case="causal_mask(5) with S left out: S defaults to L",
    )


def test_causal_keyword_arguments(solution):
    check_mask(
        solution.call(CAUSAL, (), {"L": 2, "S": 7}),
        causal(2, 7),
        case="causal_mask(L=2, S=7) called with keyword arguments (KV cache: the last query sees all keys)",
    )


def test_causal_single_query(solution):
    check_mask(
        solution.call(CAUSAL, (1, 9)),
        causal(1, 9),
        case="causal_mask(L=1, S=9): one decoding step sees all 9 cached keys",
    )


@pytest.mark.parametrize(
    "lengths",
    [
        pytest.param([5, 2, 7, 3], id="B=4,S=7"),
        # No sequence fills the S keys: a mask sized by max(lengths)
        # (fairseq's lengths_to_padding_mask) has the wrong width.
        pytest.param([3, 1, 4], id="B=3,S=7,max(lengths)<S"),
    ],
)
def test_padding(solution, lengths):
    lens = torch.tensor(lengths)
    check_mask(
        solution.call(PADDING, (lens, 7)),
        expected_padding(lens, 7),
        case=f"padding_mask(lengths={lengths}, S=7): shape (B, 1, 1, S) with S = 7 keys whatever "
        "max(lengths) is, True where key < lengths[b]",
    )


@pytest.mark.tier("edge")
@pytest.mark.parametrize(
    ("L", "S"), [pytest.param(7, 4, id="L=7,S=4"), pytest.param(5, 1, id="L=5,S=1")]
)
def test_causal_more_queries_than_keys(solution, L, S):
    check_mask(
        solution.call(CAUSAL, (L, S)),
        causal(L, S),
        case=causal_case(L, S) + f"; rows 0..{L - S - 1} have p < 0 and no key at all",
    )


@pytest.mark.tier("edge")
def test_padding_empty_and_full(solution):
    lens = torch.tensor([0, 6, 3], dtype=torch.int32)
    check_mask(
        solution.call(PADDING, (lens, 6)),
        expected_padding(lens, 6),
        case="padding_mask(lengths=[0, 6, 3] (int32), S=6): length 0 keeps no key, length S keeps all",
    )


def _device_checks(got: object, want: torch.Size, case: str) -> None:
    if not isinstance(got, torch.Tensor):
        raise AssertionError(f"{case}: expected a torch.Tensor, got {describe(got)}")
    if got.device.type != "meta":
        raise AssertionError(
            f"{case}: expected the mask on device meta, got {got.device}: build it there "
            "(torch.arange(..., device=device), or device=lengths.device for the padding "
            "mask) or move it with .to(device)"
        )
    if got.dtype != torch.bool or got.shape != want:
        raise AssertionError(
            f"{case}: expected a bool tensor of shape {tuple(want)}, got {describe(got)}"
        )


@pytest.mark.tier("edge")
def test_causal_device(solution):
    # "meta" tensors have a device, shape and dtype but no data: a stand-in for "cuda" that
    # exists on every machine. Code that reads values (.item(), Python loops) cannot run there.
    case = "causal_mask(3, 5, device='meta')"
    _device_checks(
        solution.call(CAUSAL, (3, 5), {"device": "meta"}).value, torch.Size([3, 5]), case
    )
    case = "causal_mask(4, device=torch.device('cpu'))"
    check_mask(solution.call(CAUSAL, (4,), {"device": torch.device("cpu")}), causal(4), case=case)


@pytest.mark.tier("edge")
def test_padding_device(solution):
    # The padding mask must be built where `lengths` lives (checked on "meta", as the causal
    # mask's device is, so that it is checked on every machine, not only on CUDA ones).
    lens = torch.empty(3, dtype=torch.long, device="meta")
    case = (
        "padding_mask(lengths of shape (3,) on device meta, S=6): build the mask on lengths.device"
    )
    _device_checks(solution.call(PADDING, (lens, 6)).value, torch.Size([3, 1, 1, 6]), case)


@pytest.mark.tier("edge")
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda(solution):
    got = solution.call(CAUSAL, (3, 6), {"device": "cuda"})
    check_mask(got, causal(3, 6).cuda(), case="causal_mask(3, 6, device='cuda')")
    lens = torch.tensor([1, 6, 0], device="cuda")
    got = solution.call(PADDING, (lens, 6))
    check_mask(
        got, expected_padding(lens.cpu(), 6).cuda(), case="padding_mask(lengths on cuda, S=6)"
    )
