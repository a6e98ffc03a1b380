"""Wrong variants of reference/triton_softmax.py, and the probes that tell them apart.

Every variant is one Triton kernel with knobs (constexpr flags; all off = the reference), run
in Triton's interpreter under the same guard as the candidate's kernel (guard bands of NaN
around every tensor, outputs starting as NaN: checker/triton_support.py), so a variant that
reads past a row reads what the candidate's code read there.

The probes do not depend on how many rows a program takes: the one-row probe is missed
whole by any `N // ROWS` grid with ROWS >= 2, and the other mistakes act on every row alike.
`missing-store-mask` changes no value here (a later program overwrites the stray lanes, or
they land in a guard band): the trace names it (triton_rules.kernel_bounds), as it does the
reads of `missing-load-mask`, `torch-instead-of-triton` and `dtype-not-preserved`.
"""

from __future__ import annotations

import sys
from functools import partial
from types import SimpleNamespace
from typing import Any

import torch

from attnkata.checker import triton_support
from attnkata.checker.diagnose import triton_rules
from attnkata.checker.diagnose.inputs import Probe
from attnkata.checker.probes import randn

ENTRY = "softmax_triton"
triton, tl = triton_support.load()
ref = triton_support.import_interpreted("attnkata.reference.triton_softmax")


@triton_support.jit
def softmax_knobs(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    x_col_stride,
    y_row_stride,
    y_col_stride,
    ROWS: tl.constexpr,
    BLOCK: tl.constexpr,
    LOAD_MASK: tl.constexpr,  # 2 rows and columns, 1 rows only, 0 none
    OTHER_NEG_INF: tl.constexpr,
    STABLE: tl.constexpr,
):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    inside = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    ptrs = x_ptr + rows[:, None] * x_row_stride + cols[None, :] * x_col_stride
    if LOAD_MASK == 2:
        if OTHER_NEG_INF:
            x = tl.load(ptrs, mask=inside, other=-float("inf"))
        else:
            x = tl.load(ptrs, mask=inside, other=0.0)
    elif LOAD_MASK == 1:
        x = tl.load(ptrs, mask=(rows[:, None] < n_rows), other=-float("inf"))
    else:
        x = tl.load(ptrs)
    x = x.to(tl.float32)
    if STABLE:
        x = x - tl.max(x, axis=1)[:, None]
    num = tl.exp(x)
    y = num / tl.sum(num, axis=1)[:, None]
    tl.store(
        y_ptr + rows[:, None] * y_row_stride + cols[None, :] * y_col_stride,
        y.to(y_ptr.dtype.element_ty),
        mask=inside,
    )


def softmax(
    x: torch.Tensor,
    *,
    load_mask: int = 2,
    other_neg_inf: bool = True,
    stable: bool = True,
    grid_floor: bool = False,
    rows: int = 4,
    x_strides: str = "both",
    y_like_x: bool = False,
    y_strides: str = "both",
    copy: bool = False,
) -> torch.Tensor:
    """The reference's softmax with knobs. `x_strides`: "both" (the reference), "row" (the
    column stride taken as 1), "none" (x taken as contiguous: row * C + col); `y_like_x`:
    the output made with empty_like(x) (x's layout) and `y_strides`: addressed as x is
    ("row": the tutorial's column stride 1; "none": as if contiguous); `grid_floor`: N // ROWS programs, `rows` rows per program;
    `copy`: x.contiguous() first (what lanes past a row read then is the next row, whatever
    x's layout)."""
    x = x.contiguous() if copy else x
    n_rows, n_cols = x.shape
    y = (
        torch.empty_like(x)
        if y_like_x
        else torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    )

    def addressed(t: torch.Tensor, how: str) -> tuple[int, int]:
        return {"both": (t.stride(0), t.stride(1)), "row": (t.stride(0), 1), "none": (n_cols, 1)}[
            how
        ]

    strides, y_at = addressed(x, x_strides), addressed(y, y_strides)
    programs = n_rows // rows if grid_floor else triton.cdiv(n_rows, rows)
    softmax_knobs[(programs,)](
        x,
        y,
        n_rows,
        n_cols,
        *strides,
        *y_at,
        ROWS=rows,
        BLOCK=triton.next_power_of_2(n_cols),
        LOAD_MASK=load_mask,
        OTHER_NEG_INF=other_neg_inf,
        STABLE=stable,
    )
    return y


def _m(**knobs: Any) -> Any:
    """A variant: the knobbed function, run as the candidate's is and kept on disk."""
    tag = "variant " + repr(sorted(knobs.items()))
    return triton_support.mutant(partial(softmax, **knobs), sys.modules[__name__], tag)


MUTANTS = {
    "missing-load-mask": [_m(load_mask=0), _m(load_mask=0, copy=True), _m(load_mask=1)],
    "other-not-neg-inf": _m(other_neg_inf=False),
    "unstable-softmax": _m(stable=False),
    # ROWS = 2 or 4 miss the last row of 5 and of 37; ROWS = 8, 16 or 32 the last 5 of 37 and
    # every row of 5 (the one-row probe is missed whole by any of them).
    "grid-misses-tail": [_m(grid_floor=True), _m(grid_floor=True, rows=8)],
    "stride-assumed-contiguous": [
        _m(x_strides="none"),
        _m(x_strides="row"),
        _m(x_strides="none", y_like_x=True, y_strides="none"),
        # Triton's tutorial: rows by their stride, columns by 1, into empty_like(x)
        _m(x_strides="row", y_like_x=True, y_strides="row"),
    ],
}

REFERENCE = SimpleNamespace(
    **{ENTRY: triton_support.mutant(ref.softmax_triton, sys.modules[__name__], "reference")}
)
TRACE_RULES = triton_rules.RULES
# Each probe is one interpreted launch (~0.05 s); a busy machine may take a few times that.
PROBE_TIME_BUDGET = 8.0
PROBE_CALL_TIMEOUT = 5.0
# Combined variants run interpreted too (CPU seconds of the grading process).
PAIR_TIME_BUDGET, PEEL_TIME_BUDGET = 3.0, 6.0

N, C = 5, 100


def _sizes(n: int = N, c: int = C) -> dict[str, Any]:
    return {"N": n, "C": c}


def probes() -> list[Probe]:
    """Rows of ordinary, large and very negative logits; a single row; padded and column-major
    inputs; float16."""
    x = randn(37, C, seed=601, scale=3.0, dtype=torch.float32)
    return [
        Probe(
            "rows (37, 100)",
            ENTRY,
            (x,),
            params=_sizes(37),
            dtype=torch.float32,
            name_zh="行 (37, 100)",
        ),
        Probe(
            "a single row (1, 100)",
            ENTRY,
            (randn(1, C, seed=602, dtype=torch.float32),),
            params=_sizes(1),
            dtype=torch.float32,
            name_zh="单独一行 (1, 100)",
        ),
        Probe(
            "logits around +1e3",
            ENTRY,
            (randn(N, C, seed=603, dtype=torch.float32) * 10.0 + 1000.0,),
            params=_sizes(),
            dtype=torch.float32,
            name_zh="logits 在 +1e3 附近",
        ),
        Probe(
            "logits around -1e3",
            ENTRY,
            (randn(N, C, seed=604, dtype=torch.float32) * 10.0 - 1000.0,),
            params=_sizes(),
            dtype=torch.float32,
            name_zh="logits 在 -1e3 附近",
        ),
        Probe(
            "padded rows (row stride 107)",
            ENTRY,
            (randn(N, C, seed=605, dtype=torch.float32),),
            params=_sizes(),
            layouts={0: "pad:7"},
            dtype=torch.float32,
            name_zh="带填充的行（行步长 107）",
        ),
        Probe(
            "column-major x",
            ENTRY,
            (randn(N, C, seed=606, dtype=torch.float32),),
            params=_sizes(),
            layouts={0: "swap:0,1"},
            dtype=torch.float32,
            name_zh="按列存储的 x",
        ),
        Probe(
            "float16 rows",
            ENTRY,
            (randn(N, C, seed=607, scale=3.0, dtype=torch.float16),),
            params=_sizes(),
            dtype=torch.float16,
            name_zh="float16 的行",
        ),
    ]
