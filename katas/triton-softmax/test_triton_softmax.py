"""Grader for the `triton-softmax` kata. Run directly: pytest <this folder> --solution your_file.py

The candidate's kernel runs in Triton's interpreter inside the sandbox, which checks every
load and store lane against its tensor (checker/sandbox/triton_guard.py); every call must
launch a kernel, leave the math to it, and stay inside its tensors (`assert_triton_kernel`).
Values are compared with torch.softmax in float64, within a few times the error of
torch.softmax in the input's own dtype.

Sizes: N = 37 rows (not a multiple of any power-of-two block of rows), C = 100 columns (a
128-lane tile with 28 lanes to mask); widths 3 and 129; padded rows (row stride 107) and a
column-major x; logits around +1e3 and -1e3. The `speed` tier runs only on a CUDA GPU.
"""

import pytest
import torch

from attnkata.checker import triton_support
from attnkata.checker.compare import assert_close, assert_no_mutation
from attnkata.checker.probes import assert_triton_kernel, randn
from attnkata.checker.triton_speed import require_gpu, speed_test

# (Never `import triton` here: this process runs our own kernels in Triton's interpreter.)
pytestmark = pytest.mark.skipif(not triton_support.available(), reason="needs attnkata[triton]")

FN = "softmax_triton"
N, C = 37, 100
DTYPES = [pytest.param(torch.float32, id="float32"), pytest.param(torch.float16, id="float16")]


def check(solution, x, case, layouts=None):
    """Call the candidate on x (its dtype), then: a kernel ran inside its bounds, x is
    unchanged, y matches softmax in float64."""
    extra = {"layouts": layouts} if layouts else {}
    with solution.submit(FN, (x,), {}, **extra) as pending:
        expected = torch.softmax(x.double(), dim=-1)
        baseline = torch.softmax(x, dim=-1)  # what a plain implementation in x's dtype errs
    outcome = pending.result()
    assert_no_mutation(outcome, case=case)
    assert_triton_kernel(outcome, case=case)
    assert_close(outcome.value, expected, case=case, baseline=baseline)
    return outcome


@pytest.mark.parametrize("dtype", DTYPES)
def test_rows(solution, dtype):
    check(solution, randn(N, C, seed=1, scale=3.0, dtype=dtype), f"x ({N}, {C}) {dtype}")


@pytest.mark.parametrize("width", [3, 129])
def test_widths(solution, width):
    check(solution, randn(N, width, seed=2, dtype=torch.float32), f"x ({N}, {width}) float32")


def test_one_row(solution):
    check(solution, randn(1, C, seed=3, dtype=torch.float32), f"x (1, {C}) float32: a single row")


LAYOUTS = {
    "padded-rows": (
        "pad:7",
        f"x ({N}, {C}) whose rows are {C + 7} elements apart (x.stride(0) = {C + 7})",
    ),
    "column-major": ("swap:0,1", f"x ({N}, {C}) stored column-major (x.stride() = (1, {N}))"),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_strides(solution, layout):
    spec, case = LAYOUTS[layout]
    check(solution, randn(N, C, seed=4, dtype=torch.float32), case, layouts={0: spec})


@pytest.mark.tier("edge")
def test_large_logits(solution):
    x = randn(N, C, seed=5, dtype=torch.float32) * 10.0 + 1000.0
    check(solution, x, f"logits around +1e3, x ({N}, {C}) float32 (exp overflows above 88)")


@pytest.mark.tier("edge")
def test_very_negative_logits(solution):
    x = randn(N, C, seed=6, dtype=torch.float32) * 10.0 - 1000.0
    check(solution, x, f"logits around -1e3, x ({N}, {C}) float32 (exp underflows to 0)")


@pytest.mark.tier("edge")
def test_float16_large_logits(solution):
    x = (randn(N, C, seed=7, dtype=torch.float32) * 4.0 + 60.0).half()
    check(solution, x, f"float16 logits around 60 (exp(60) does not fit a float16), x ({N}, {C})")


@pytest.mark.tier("speed")
def test_speed(request, solution):
    """On a CUDA GPU: against torch.softmax on (4096, 4000) float16 (informative)."""
    require_gpu()
    x = randn(4096, 4000, seed=8, dtype=torch.float16)
    case = "speed: x (4096, 4000) float16 on the GPU"
    speed_test(
        request,
        solution,
        FN,
        (x,),
        {},
        baseline=lambda t: torch.softmax(t, dim=-1),
        baseline_name="torch.softmax",
        flops=5 * x.numel(),  # max, subtract, exp, sum, divide per element
        check=lambda got: assert_close(
            got, torch.softmax(x.double(), dim=-1), case=case, baseline=torch.softmax(x, dim=-1)
        ),
    )
