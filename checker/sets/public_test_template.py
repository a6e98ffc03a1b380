"""Public sample tests for `__KATA__`: __TITLE__ / __TITLE_ZH__.

Run them in this folder:      python -m pytest -q
Test another file:            KATA_SOLUTION=path/to/file.py python -m pytest -q

Each sample calls your code on inputs made for this problem set and compares the result with
what the reference solution returned for the same inputs. They are a sanity check, not your
grade: the hidden tests also cover edge cases (masks, dtypes, gradients, ...).

每个样例用为本次作业生成的输入调用你的代码，并与参考解在相同输入上的结果比较。它们只是自检，
不是最终成绩：隐藏测试还会覆盖边界情况（mask、dtype、梯度等）。
Needs only Python, PyTorch, NumPy and pytest. 只需要 Python、PyTorch、NumPy 和 pytest。
"""

from __future__ import annotations

import base64
import importlib.util
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

HERE = Path(__file__).resolve().parent
DATA = json.loads((HERE / "public___MODULE__.json").read_text(encoding="utf-8"))
SOLUTION = Path(os.environ.get("KATA_SOLUTION") or HERE / DATA["solution_file"])


def decode(v):
    if isinstance(v, list):
        return [decode(x) for x in v]
    if not isinstance(v, dict):
        return v
    if "tensor" in v or "ndarray" in v:
        spec = v.get("tensor") or v["ndarray"]
        raw = base64.b64decode(spec["data"])
        arr = np.frombuffer(raw, dtype=np.dtype(spec["dtype"])).reshape(spec["shape"]).copy()
        return torch.from_numpy(arr) if "tensor" in v else arr
    if "tuple" in v:
        return tuple(decode(x) for x in v["tuple"])
    if "dict" in v:
        return {k: decode(x) for k, x in v["dict"].items()}
    if "dtype" in v:
        return getattr(torch, v["dtype"])
    if "float" in v:
        return float(v["float"])
    raise ValueError(f"cannot read {v!r}")


def _kind(x):
    if isinstance(x, torch.Tensor):
        return f"tensor {tuple(x.shape)} {str(x.dtype).replace('torch.', '')}"
    if isinstance(x, np.ndarray):
        return f"ndarray {x.shape} {x.dtype}"
    return type(x).__name__


def compare(got, want, atol, rtol, what):
    if isinstance(want, torch.Tensor | np.ndarray):
        kind = type(want)
        assert isinstance(got, kind), (
            f"{what}: expected a {kind.__module__}.{kind.__name__} {_kind(want)}, got {_kind(got)}"
        )
        assert tuple(got.shape) == tuple(want.shape), (
            f"{what}: expected shape {tuple(want.shape)}, got {tuple(got.shape)}"
        )
        assert got.dtype == want.dtype, (
            f"{what}: expected dtype {want.dtype} (the input's), got {got.dtype}"
        )
        g = (
            torch.from_numpy(np.ascontiguousarray(got))
            if isinstance(got, np.ndarray)
            else got.detach().cpu()
        )
        w = torch.from_numpy(np.ascontiguousarray(want)) if isinstance(want, np.ndarray) else want
        if not w.is_floating_point():
            bad = g != w
            assert not bool(bad.any()), (
                f"{what}: {int(bad.sum())} entries differ, first at "
                f"{tuple(int(i) for i in bad.nonzero()[0])}"
            )
            return
        g64, w64 = g.double(), w.double()
        nan = ~torch.isfinite(g64) & torch.isfinite(w64)
        assert not bool(nan.any()), (
            f"{what}: {int(nan.sum())} value(s) are NaN/inf where the reference "
            f"is finite, first at {tuple(int(i) for i in nan.nonzero()[0])}"
        )
        err = (g64 - w64).abs()
        err = torch.where(torch.isnan(g64) & torch.isnan(w64), torch.zeros_like(err), err)
        err = torch.where(torch.isinf(w64) & (g64 == w64), torch.zeros_like(err), err)
        over = err > atol + rtol * w64.abs().nan_to_num(posinf=0.0)
        if bool(over.any()):
            idx = tuple(int(i) for i in over.nonzero()[0])
            raise AssertionError(
                f"{what}: {int(over.sum())} of {err.numel()} values differ from the reference; max abs "
                f"error {float(err.max()):.3g} (allowed {atol:.2g} + {rtol:.2g}*|expected|); first at "
                f"{list(idx)}: expected {w64[idx].item():.6g}, got {g64[idx].item():.6g}"
            )
    elif isinstance(want, tuple | list):
        assert isinstance(got, tuple | list) and len(got) == len(want), (
            f"{what}: expected a {type(want).__name__} of {len(want)}, got {_kind(got)}"
        )
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            compare(a, b, atol, rtol, f"{what}[{i}]")
    elif isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), (
            f"{what}: expected keys {sorted(want)}"
        )
        for k in want:
            compare(got[k], want[k], atol, rtol, f"{what}[{k!r}]")
    elif isinstance(want, float):
        assert isinstance(got, int | float) and math.isclose(
            got, want, rel_tol=max(rtol, 1e-9), abs_tol=atol
        ), f"{what}: expected {want!r}, got {got!r}"
    else:
        assert got == want, f"{what}: expected {want!r}, got {got!r}"


def load_state(module, state, what):
    """Give your module the reference's weights: by name, else by shape in definition order."""
    own = dict(module.named_parameters()) | dict(module.named_buffers())
    mapping = {n: n for n in state if n in own}
    free = [n for n in own if n not in mapping.values()]
    for n in [n for n in state if n not in own]:
        match = next((m for m in free if tuple(own[m].shape) == tuple(state[n].shape)), None)
        if match is None:
            mine = ", ".join(f"{m} {tuple(p.shape)}" for m, p in own.items()) or "none"
            pytest.fail(
                f"{what}: the reference's weights do not fit your module: no parameter for "
                f"{n} {tuple(state[n].shape)} (yours: {mine}); name the layers as the statement asks",
                pytrace=False,
            )
        mapping[n] = match
        free.remove(match)
    with torch.no_grad():
        for n, m in mapping.items():
            if own[m].shape != state[n].shape:
                pytest.fail(
                    f"{what}: {m} has shape {tuple(own[m].shape)}, the reference's {n} has "
                    f"{tuple(state[n].shape)}",
                    pytrace=False,
                )
            own[m].copy_(state[n])


@pytest.fixture(scope="module")
def solution():
    if not SOLUTION.is_file():
        pytest.fail(
            f"{SOLUTION} not found: write your solution there (or set KATA_SOLUTION)", pytrace=False
        )
    spec = importlib.util.spec_from_file_location("solution_under_test", SOLUTION)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(SOLUTION.parent))
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["id"] for c in DATA["cases"]])
def test_sample(solution, case):
    objects = {}
    for step in case["steps"]:
        op = step["op"]
        if op == "new":
            obj = getattr(solution, step["name"])(*decode(step["args"]), **decode(step["kwargs"]))
            if isinstance(obj, torch.nn.Module):
                obj.eval()  # graded in eval mode
                if "dtype" in step:
                    obj.to(decode(step["dtype"]))
            objects[step["handle"]] = obj
        elif op == "to":
            objects[step["handle"]].to(decode(step["dtype"]))
        elif op == "load_state":
            load_state(objects[step["handle"]], decode(step["state"]), case["id"])
        elif op == "call":
            what = step["what"]
            target = (
                objects[step["handle"]]
                if step.get("handle") is not None
                else getattr(solution, step["name"])
            )
            if step.get("method"):
                target = getattr(target, step["method"])
            args, kwargs = list(decode(step["args"])), decode(step["kwargs"])
            wrt = step.get("grad_wrt") or []
            for i in wrt:
                args[i] = args[i].detach().clone().requires_grad_(True)
            with torch.set_grad_enabled(bool(wrt)):
                out = target(*args, **kwargs)
            compare(out, decode(step["expect"]), step["atol"], step["rtol"], what)
            if wrt:
                out_t = out[0] if isinstance(out, tuple | list) else out
                assert isinstance(out_t, torch.Tensor) and out_t.requires_grad, (
                    f"{what}: the output does not require grad: it was detached from the inputs"
                )
                out_t.backward(decode(step["grad_output"]))
                for i, want in zip(wrt, decode(step["expect_grads"]), strict=False):
                    assert args[i].grad is not None, f"{what}: no gradient reached argument {i}"
                    compare(
                        args[i].grad,
                        want,
                        step["grad_atol"],
                        step["grad_rtol"],
                        f"{what}: gradient w.r.t. argument {i}",
                    )
