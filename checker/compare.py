"""Compare a candidate's output with the reference, with messages a candidate can act on.

Tolerances (see ../shared/attention-facts.md):
- float64 candidates: atol = rtol = 1e-5. torch.testing's float64 default (1e-7) would
  fail harmless float32 intermediates such as an HF-style float32 RoPE `inv_freq`
  (relative error ~1e-7 in each angle, ~1e-6 in the output); every catalogued mistake
  moves the output by 1e-2 or more, so 1e-5 still tells them apart by three orders.
- float32 candidates: judged like flash-attn's tests. The budget is a few (4x) times the
  error of a plain float32 run of the reference formula against the float64 reference,
  never below torch.testing's float32 default (atol 1e-5, rtol 1.3e-6). With large
  logits a fixed tolerance is meaningless; the same-dtype baseline is not.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from attnkata.checker.sandbox.wire import Opaque

FLOAT64_ATOL = 1e-5
FLOAT64_RTOL = 1e-5
FLOAT32_ATOL = 1e-5
FLOAT32_RTOL = 1.3e-6
FLOAT32_BASELINE_FACTOR = 4.0


def clone_tree(x: Any) -> Any:
    """A deep copy of the tensors and arrays in nested tuples/lists/dicts (inputs kept pristine)."""
    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, tuple | list):
        return type(x)(clone_tree(v) for v in x)
    if isinstance(x, dict):
        return {k: clone_tree(v) for k, v in x.items()}
    return x


def unchanged(before: Any, now: Any) -> bool:
    """Exactly the same value (NaN equals NaN): how an input's mutation is decided."""
    if isinstance(before, torch.Tensor):
        if before.device.type == "meta":
            return True  # no data to compare
        if (
            not isinstance(now, torch.Tensor)
            or now.shape != before.shape
            or now.dtype != before.dtype
        ):
            return False
        now, before = now.detach().cpu(), before.detach().cpu()
        if torch.equal(now, before):
            return True  # the common case, in one op; only NaNs (never equal) need the rest
        if before.is_floating_point() or before.is_complex():
            return bool(((now == before) | (now.isnan() & before.isnan())).all())
        return bool((now == before).all())
    if isinstance(before, np.ndarray):
        return (
            isinstance(now, np.ndarray)
            and now.shape == before.shape
            and np.array_equal(before, now, equal_nan=before.dtype.kind in "fc")
        )
    if isinstance(before, tuple | list):  # e.g. a KV cache (k, v): each tensor in it
        return (
            isinstance(now, tuple | list)
            and len(now) == len(before)
            and all(unchanged(b, n) for b, n in zip(before, now, strict=True))
        )
    return True


def describe(value: Any) -> str:
    """`(2, 3, 5, 8) float64` for arrays/tensors, the type name otherwise."""
    if isinstance(value, torch.Tensor):
        dev = "" if value.device.type == "cpu" else f" on {value.device}"
        return f"tensor {tuple(value.shape)} {str(value.dtype).replace('torch.', '')}{dev}"
    if isinstance(value, np.ndarray):
        return f"ndarray {value.shape} {value.dtype}"
    if isinstance(value, Opaque):
        return value.type_name
    if isinstance(value, tuple | list):
        return f"{type(value).__name__} of {len(value)}"
    return type(value).__name__


def describe_inputs(**named: Any) -> str:
    return ", ".join(
        f"{k} {describe(v).removeprefix('tensor ').removeprefix('ndarray ')}"
        for k, v in named.items()
    )


def _as_tensor(x: Any) -> torch.Tensor:
    return torch.from_numpy(np.asarray(x)) if isinstance(x, np.ndarray) else x


def _where(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"


def assert_close(
    got: Any,
    expected: Any,
    *,
    case: str,
    what: str = "output",
    baseline: Any = None,
    kind: str | None = None,
    spread: Any = None,
    floor: float = 0.0,
) -> None:
    """Assert `got` matches `expected` (a float64 reference) in type, shape, dtype and values.

    `case` names the input (shown first in every message). `baseline`: the reference run
    in the candidate's dtype, for the float32 error budget. `kind`: "ndarray" or "tensor";
    inferred from `expected`. `spread`: the float64 reference on the inputs moved by about
    one float32 rounding (`jittered`): the float32 budget is never below 4x its distance from
    the truth. A plain float32 run can be luckier on a given input than an equally correct
    formula that rounds elsewhere (with logits near 1e4, a rounding moves a softmax weight by
    ~1e-3): with the graders' inputs drawn afresh for every check, a budget resting on that
    luck alone failed correct files on some draws. `floor`: the smallest float32 budget, from
    what the inputs' size costs any correct formula (probes.softmax_floor).
    """
    kind = kind or ("ndarray" if isinstance(expected, np.ndarray) else "tensor")
    prefix = f"{case}: {what}"
    want_dtype = _as_tensor(baseline).dtype if baseline is not None else None
    assert_like(got, expected, case=case, what=what, dtype=want_dtype, kind=kind)
    g, e = _as_tensor(got), _as_tensor(expected)
    g64 = g.detach().to("cpu", torch.float64)
    e64 = e.detach().to("cpu", torch.float64)
    bad = ~torch.isfinite(g64) & torch.isfinite(e64)
    if bad.any():
        idx = tuple(int(i) for i in bad.nonzero()[0])
        n = int(bad.sum())
        val = g64[idx].item()
        raise AssertionError(
            f"{prefix}: {n} value(s) are {'NaN' if val != val else 'inf'} where the reference is finite, "
            f"first at {_where(idx)} (expected {e64[idx].item():.6g})"
        )
    # Where the reference itself is not finite (a log-sum-exp of -inf for a row with no key),
    # the candidate must give the same value: a tolerance says nothing about infinities.
    miss = ~torch.isfinite(e64) & ~((g64 == e64) | (g64.isnan() & e64.isnan()))
    if miss.any():
        idx = tuple(int(i) for i in miss.nonzero()[0])
        raise AssertionError(
            f"{prefix}: {int(miss.sum())} value(s) differ where the reference is {e64[idx].item():g}, "
            f"first at {_where(idx)} (got {g64[idx].item():.6g})"
        )
    if g.dtype == torch.float64 or not g.is_floating_point():
        atol, rtol, budget_note = FLOAT64_ATOL, FLOAT64_RTOL, ""
    else:
        atol, rtol = FLOAT32_ATOL, FLOAT32_RTOL
        budget_note = ""
        if baseline is not None:
            base_err = _distance(baseline, e64)
            if FLOAT32_BASELINE_FACTOR * base_err > atol:
                atol = FLOAT32_BASELINE_FACTOR * base_err
                budget_note = (
                    f" ({FLOAT32_BASELINE_FACTOR:g}x the error of a plain float32 implementation)"
                )
        if spread is not None:
            moved = _distance(spread, e64)
            if FLOAT32_BASELINE_FACTOR * moved > atol:
                atol = FLOAT32_BASELINE_FACTOR * moved
                budget_note = (
                    f" ({FLOAT32_BASELINE_FACTOR:g}x what one float32 rounding of the inputs "
                    "changes)"
                )
        if floor > atol:
            atol, budget_note = floor, " (what float32 logits of this size allow any formula)"
    err = (g64 - e64).abs()
    allowed = atol + rtol * e64.abs()
    over = err > allowed
    if over.any():
        flat = int(torch.argmax(err - allowed))
        idx = tuple(int(i) for i in np.unravel_index(flat, tuple(err.shape)))
        n = int(over.sum())
        raise AssertionError(
            f"{prefix}: {n} of {err.numel()} values differ from the reference; max abs error "
            f"{float(err.max()):.3g} (allowed {atol:.2g} + {rtol:.2g}*|expected|{budget_note}); "
            f"worst at {_where(idx)}: expected {e64[idx].item():.6g}, got {g64[idx].item():.6g}"
        )


def assert_like(
    got: Any,
    expected: Any,
    *,
    case: str,
    what: str = "output",
    dtype: torch.dtype | None = None,
    kind: str | None = None,
) -> None:
    """Assert `got` has `expected`'s type, shape, dtype (or `dtype`) and device, whatever its
    values: what a grader checks before it computes anything with a candidate's output (a
    (9000, 1) tensor where a (1, 1, 5, 8) one belongs must not become a 9000 x 9000 product in
    the grading process)."""
    kind = kind or ("ndarray" if isinstance(expected, np.ndarray) else "tensor")
    prefix = f"{case}: {what}"
    want_type = np.ndarray if kind == "ndarray" else torch.Tensor
    if not isinstance(got, want_type):
        raise AssertionError(
            f"{prefix}: expected a {want_type.__module__}.{want_type.__name__} "
            f"of shape {tuple(expected.shape)}, got {describe(got)}"
        )
    if tuple(got.shape) != tuple(expected.shape):
        raise AssertionError(
            f"{prefix}: expected shape {tuple(expected.shape)}, got {tuple(got.shape)}"
        )
    g, e = _as_tensor(got), _as_tensor(expected)
    want_dtype = dtype if dtype is not None else e.dtype
    if g.dtype != want_dtype:
        raise AssertionError(
            f"{prefix}: expected dtype {str(want_dtype).replace('torch.', '')} (the input's dtype), "
            f"got {str(g.dtype).replace('torch.', '')}"
        )
    if kind == "tensor" and g.device != e.device:
        raise AssertionError(
            f"{prefix}: expected device {e.device} (the input's device), got {g.device}"
        )


def _distance(other: Any, e64: torch.Tensor) -> float:
    """The largest finite difference between `other` and the float64 truth (0 if none)."""
    o = _as_tensor(other).detach().to("cpu", torch.float64)
    both = torch.isfinite(o) & torch.isfinite(e64)
    return float((o - e64).abs()[both].max()) if both.any() else 0.0


def jittered(value: Any, seed: int = 0) -> Any:
    """`value` with every floating-point tensor multiplied by 1 + ~eps(float32) (random signs,
    fixed seed), in float64: the inputs as a float32 rounding might have left them."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        g = torch.Generator().manual_seed(seed)
        signs = torch.randint(0, 2, value.shape, generator=g).to(torch.float64) * 2 - 1
        return value.to(torch.float64) * (1 + torch.finfo(torch.float32).eps * signs)
    if isinstance(value, tuple | list):
        return type(value)(jittered(v, seed + i + 1) for i, v in enumerate(value))
    if isinstance(value, dict):
        return {k: jittered(v, seed + 31 * i + 7) for i, (k, v) in enumerate(value.items())}
    return value


def assert_close_parts(
    got: Any,
    expected: tuple,
    *,
    case: str,
    names: tuple[str, ...],
    baseline: tuple | None = None,
    spread: tuple | None = None,
    floors: tuple[float, ...] = (),
) -> None:
    """`assert_close` for a function that returns a tuple, e.g. (out, lse): the same number
    of parts, each compared under its own name (`floors`: the first parts' float32 floors)."""
    if not isinstance(got, tuple | list) or len(got) != len(expected):
        raise AssertionError(f"{case}: expected a tuple ({', '.join(names)}), got {describe(got)}")
    for i, name in enumerate(names):
        assert_close(
            got[i],
            expected[i],
            case=case,
            what=name,
            baseline=baseline[i] if baseline is not None else None,
            spread=spread[i] if spread is not None else None,
            floor=floors[i] if i < len(floors) else 0.0,
        )


def split_out_and_cache(value: Any, *, case: str, returns: str) -> tuple[Any, Any, Any]:
    """(out, k_cache, v_cache) of a value that must be `(out, (k_cache, v_cache))` (a cached
    attention step); `returns` names what returned it in the message (e.g. "forward")."""
    if not (
        isinstance(value, tuple | list)
        and len(value) == 2
        and isinstance(value[1], tuple | list)
        and len(value[1]) == 2
    ):
        raise AssertionError(
            f"{case}: {returns} must return (out, (k_cache, v_cache)); yours returned "
            f"{describe(value)}"
        )
    return value[0], value[1][0], value[1][1]


def assert_equal_mask(got: Any, expected: torch.Tensor, *, case: str, what: str = "mask") -> None:
    """Exact comparison for boolean masks, showing the first rows that differ."""
    prefix = f"{case}: {what}"
    if not isinstance(got, torch.Tensor):
        raise AssertionError(f"{prefix}: expected a torch.Tensor, got {describe(got)}")
    if got.dtype != torch.bool:
        raise AssertionError(
            f"{prefix}: expected dtype bool (True = may attend), got "
            f"{str(got.dtype).replace('torch.', '')}"
        )
    if tuple(got.shape) != tuple(expected.shape):
        raise AssertionError(
            f"{prefix}: expected shape {tuple(expected.shape)}, got {tuple(got.shape)}"
        )
    if got.device != expected.device:
        raise AssertionError(f"{prefix}: expected device {expected.device}, got {got.device}")
    diff = got.cpu() != expected.cpu()
    if diff.any():
        idx = tuple(int(i) for i in diff.nonzero()[0])
        raise AssertionError(
            f"{prefix}: {int(diff.sum())} entries differ; first at {_where(idx)}: expected "
            f"{bool(expected[idx])}, got {bool(got[idx])}"
        )


def assert_no_mutation(outcome: Any, *, case: str) -> None:
    if outcome.mutated:
        raise AssertionError(
            f"{case}: your code modified its input ({', '.join(outcome.mutated)}); "
            "work on new tensors (e.g. masked_fill instead of masked_fill_)"
        )
