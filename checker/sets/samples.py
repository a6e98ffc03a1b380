"""Public sample tests for a problem set, derived from the hidden grader without leaking it.

1. Record: run the kata's hidden grader with the *reference* standing in for the candidate (in
   this process, through the same request handlers the candidate's child uses) and record every
   request it makes: which function or class, which arguments, modules built, weights loaded.
2. Pick a few tests the reference passes (one per test function, core tier first).
3. Re-draw every floating-point input (and every mask) with a set-specific seed, so no hidden
   input reaches the students, and replay the calls on the reference to get the expected
   outputs (twice, with different global seeds, to drop anything non-deterministic).
4. Write `public_<module>.json` (inputs and expected outputs, base64) and a standalone
   `test_public_<module>.py` that needs only torch, numpy and pytest.

Imports torch: only `kata set create` calls this, lazily.
"""

from __future__ import annotations

import base64
import importlib
import json
import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from attnkata.checker import driver, plugin
from attnkata.checker.catalog import Kata
from attnkata.checker.errors import KataDefinitionError
from attnkata.checker.local import LocalCandidate
from attnkata.checker.sandbox import wire
from attnkata.checker.sandbox.child import Server
from attnkata.checker.sets.manifest import reference_file

MAX_CASE_BYTES = 1_500_000  # a sample whose data would be larger is skipped
FLOAT64_TOL = 1e-5
FALLBACK_TOL = 1e-3


class SampleError(Exception):
    """A recorded test cannot become a public sample (not encodable, not deterministic...)."""


@dataclass
class RecordedTest:
    id: str
    tier: str
    status: str
    steps: list[dict[str, Any]] = field(default_factory=list)  # requests, in order


class _Recording:
    """Every request the grader makes of the reference, with the test that made it."""

    def __init__(self) -> None:
        self.current: str | None = None
        self.log: list[tuple[str | None, dict[str, Any], dict[str, Any]]] = []

    def __call__(self, req: dict[str, Any], reply: dict[str, Any]) -> None:
        self.log.append((self.current, _copy(req), reply))


def _copy(req: dict[str, Any]) -> dict[str, Any]:
    return wire.roundtrip(req)


def _new_server(module: Any, path: Path) -> Server:
    server = Server(None, path)  # type: ignore[arg-type]  # no pipe: requests are served in-process
    server.module = module
    return server


def serve(server: Server, req: dict[str, Any]) -> dict[str, Any]:
    """One request through the child's handler, the reply as the parent would decode it."""
    handler = getattr(server, req["op"], None)
    if handler is None:
        return {
            "ok": False,
            "kind": "protocol",
            "type": "",
            "message": f"unknown op {req['op']!r}",
            "frames": [],
        }
    try:
        reply = handler(req)
    except Exception as exc:  # noqa: BLE001 - the reference failing is data here
        reply = server._error(exc)
    return wire.roundtrip(reply)


class _Tracker:
    """Tells the recording which test is running."""

    def __init__(self, recording: _Recording) -> None:
        self.recording = recording

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self.recording.current = plugin.test_id(item)


def record(kata: Kata) -> list[RecordedTest]:
    """Run the hidden grader against the reference and return what each test asked for."""
    recording = _Recording()
    reference = importlib.import_module(f"attnkata.reference.{kata.module_name}")
    candidate = LocalCandidate(reference, record=recording)  # the reference is trusted: served here
    with torch.random.fork_rng(devices=[]):
        _, collector, _ = driver.run(
            kata, reference_file(kata), candidate, plugins=[_Tracker(recording)]
        )
    if collector.collect_errors:
        raise KataDefinitionError(
            f"the grader of {kata.id} is broken: {collector.collect_errors[0]}"
        )
    tests = {r.id: RecordedTest(r.id, r.tier, r.status) for r in collector.results}
    handle_steps: dict[int, list[dict[str, Any]]] = {}  # steps that built/changed a module
    for test_id, req, reply in recording.log:
        step = dict(req)
        if not reply.get("ok"):
            step["failed"] = True
        if req["op"] == "new" and reply.get("ok"):
            step["handle_out"] = reply["handle"]
        test = tests.get(test_id or "")
        used = req.get("handle")
        if (
            test is not None
            and used is not None
            and not any(s.get("handle_out") == used for s in test.steps)
        ):
            # A module built by an earlier test (e.g. a session fixture): rebuild it first.
            test.steps.extend(handle_steps.get(used, []))
        if req["op"] == "new" and reply.get("ok"):
            handle_steps[reply["handle"]] = [step]
        elif used is not None:
            handle_steps.setdefault(used, []).append(step)
        if test is not None:
            test.steps.append(step)
    return list(tests.values())


# -- perturbation ------------------------------------------------------------------------
class _Perturber:
    """Fresh values of the same kind, shape and scale; identical inputs stay identical."""

    def __init__(self, seed: int, ints: bool = False) -> None:
        self.gen = torch.Generator().manual_seed(seed)
        self.memo: dict[tuple[Any, ...], Any] = {}
        self.changed = 0
        # Only for calls whose inputs are all integers (sizes, lengths): shift sizes, re-draw
        # integer tensors within their own range. Used when nothing else could be re-drawn.
        self.ints = ints

    def __call__(self, value: Any) -> Any:
        if self.ints and isinstance(value, int) and not isinstance(value, bool):
            if value <= 0:
                return value
            self.changed += 1
            return value + 1 + int(torch.randint(3, (1,), generator=self.gen))
        if (
            self.ints
            and isinstance(value, torch.Tensor)
            and value.dtype in (torch.int32, torch.int64)
            and value.numel() > 1
        ):
            lo, hi = int(value.min()), int(value.max())
            if lo == hi:
                return value
            self.changed += 1
            return torch.randint(lo, hi + 1, value.shape, generator=self.gen, dtype=value.dtype)
        if isinstance(value, torch.Tensor):
            return self.tensor(value)
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in "fb":
                return value
            return self.tensor(torch.from_numpy(np.ascontiguousarray(value))).numpy()
        if isinstance(value, tuple):
            return tuple(self(v) for v in value)
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        return value

    def tensor(self, t: torch.Tensor) -> torch.Tensor:
        if not (t.is_floating_point() or t.dtype == torch.bool) or t.numel() == 0:
            return t
        key = (t.dtype, tuple(t.shape), hashlib_bytes(t))
        if key in self.memo:
            return self.memo[key]
        new = self._bool(t) if t.dtype == torch.bool else self._float(t)
        if not torch.equal(new, t):
            self.changed += 1
        self.memo[key] = new
        return new

    def _float(self, t: torch.Tensor) -> torch.Tensor:
        x = t.detach().to(torch.float64)
        finite = x[torch.isfinite(x)]
        if finite.numel() < 2 or float(finite.std()) == 0.0:
            return t  # constants (ones, zeros, a scalar) carry no hidden information
        fresh = torch.randn(t.shape, generator=self.gen, dtype=torch.float64)
        fresh = fresh * float(finite.std()) + float(finite.mean())
        if float(finite.min()) >= 0:
            fresh = fresh.abs()
        fresh = torch.where(torch.isfinite(x), fresh, x)  # keep -inf / nan where they were
        return fresh.to(t.dtype)

    def _bool(self, t: torch.Tensor) -> torch.Tensor:
        if t.dim() == 0:
            return t
        rows = t.reshape(-1, t.shape[-1])
        p = max(0.5, float(rows.float().mean()))
        fresh = torch.rand(rows.shape, generator=self.gen) < p
        # Keep each row's kind: an all-False row (no key at all) stays all-False, and a row
        # with some key keeps at least one.
        empty = ~rows.any(dim=-1)
        pick = torch.randint(rows.shape[-1], (rows.shape[0],), generator=self.gen)
        fresh[torch.arange(rows.shape[0]), pick] = True
        fresh[empty] = False
        full = rows.all(dim=-1)
        fresh[full] = True
        return fresh.reshape(t.shape)


def hashlib_bytes(t: torch.Tensor) -> int:
    data = t.detach().cpu().contiguous().reshape(-1)
    raw = data.to(torch.uint8) if data.dtype == torch.bool else data.view(torch.uint8)
    return zlib.crc32(raw.numpy().tobytes()) ^ (data.numel() << 32)


def perturb_steps(
    steps: list[dict[str, Any]], seed: int, ints: bool = False
) -> tuple[list[dict[str, Any]], int]:
    p = _Perturber(seed, ints=ints)
    fresh = []
    for step in steps:
        s = dict(step)
        for key in ("args", "kwargs", "state", "grad_output"):
            if key in s:
                s[key] = p(s[key])
        fresh.append(s)
    return fresh, p.changed


def to_float64(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same calls with every floating input (and module) in float64: the truth to budget
    a lower-precision sample's tolerance against."""

    def cast(v: Any) -> Any:
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            return v.to(torch.float64)
        if isinstance(v, np.ndarray) and v.dtype.kind == "f":
            return v.astype(np.float64)
        if isinstance(v, torch.dtype) and v.is_floating_point:
            return torch.float64
        if isinstance(v, tuple):
            return tuple(cast(x) for x in v)
        if isinstance(v, list):
            return [cast(x) for x in v]
        if isinstance(v, dict):
            return {k: cast(x) for k, x in v.items()}
        return v

    out = []
    for step in steps:
        s = {
            k: cast(v) if k in ("args", "kwargs", "state", "grad_output", "dtype") else v
            for k, v in step.items()
        }
        out.append(s)
    return out


# -- replay --------------------------------------------------------------------------------
def replay(
    module: Any, path: Path, steps: list[dict[str, Any]], seed: int
) -> list[tuple[Any, Any]]:
    """Run `steps` on a fresh server over `module`; (value, grads) of every call step."""
    server = _new_server(module, path)
    handles: dict[int, int] = {}
    outputs = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        np_state = np.random.get_state()
        np.random.seed(seed)
        try:
            for step in steps:
                req = {k: v for k, v in step.items() if k not in ("handle_out", "failed")}
                if req.get("handle") is not None:
                    if req["handle"] not in handles:
                        raise SampleError("uses a module it did not build")
                    req["handle"] = handles[req["handle"]]
                reply = serve(server, _copy(req))
                if not reply.get("ok"):
                    raise SampleError(
                        f"the reference raised {reply.get('type')}: {reply.get('message', '')[:200]}"
                    )
                if step["op"] == "new":
                    handles[step["handle_out"]] = reply["handle"]
                elif step["op"] == "call":
                    if isinstance(reply.get("grads"), str):
                        raise SampleError(reply["grads"])
                    outputs.append((reply["value"], reply.get("grads")))
        finally:
            np.random.set_state(np_state)
    return outputs


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return (
            isinstance(b, torch.Tensor)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(
                ((a == b) | (a.isnan() & b.isnan()) if a.is_floating_point() else (a == b)).all()
            )
        )
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, tuple | list):
        return (
            type(a) is type(b)
            and len(a) == len(b)
            and all(_same(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _max_err(low: Any, truth: Any) -> float:
    """Largest abs difference between two structurally equal outputs (inf if not comparable)."""
    if isinstance(low, torch.Tensor | np.ndarray):
        lo = torch.as_tensor(np.asarray(low)) if isinstance(low, np.ndarray) else low
        tr = torch.as_tensor(np.asarray(truth)) if isinstance(truth, np.ndarray) else truth
        if not isinstance(tr, torch.Tensor) or lo.shape != tr.shape:
            return math.inf
        if not lo.is_floating_point():
            return 0.0
        d = (lo.double() - tr.double()).abs()
        d = d[torch.isfinite(d)]
        return float(d.max()) if d.numel() else 0.0
    if isinstance(low, tuple | list) and isinstance(truth, tuple | list) and len(low) == len(truth):
        return max([_max_err(a, b) for a, b in zip(low, truth, strict=True)] or [0.0])
    if isinstance(low, dict) and isinstance(truth, dict) and low.keys() == truth.keys():
        return max([_max_err(low[k], truth[k]) for k in low] or [0.0])
    if isinstance(low, float) and isinstance(truth, float):
        return abs(low - truth)
    return 0.0


def _lowest_float(value: Any) -> torch.dtype | None:
    """The least precise floating dtype in an output (None when all float64 / not float)."""
    found: list[torch.dtype] = []

    def walk(v: Any) -> None:
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            found.append(v.dtype)
        elif isinstance(v, np.ndarray) and v.dtype.kind == "f":
            found.append(torch.from_numpy(np.zeros(1, dtype=v.dtype)).dtype)
        elif isinstance(v, tuple | list):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)

    walk(value)
    low = [d for d in found if d != torch.float64]
    return min(low, key=lambda d: torch.finfo(d).bits) if low else None


def _tolerance(low: Any, truth: Any | None) -> tuple[float, float]:
    """(atol, rtol): float64 like the hidden grader; lower precision gets a budget of a few
    times what the reference itself errs in that precision on the same inputs."""
    if _lowest_float(low) is None:
        return FLOAT64_TOL, FLOAT64_TOL
    if truth is None:
        return FALLBACK_TOL, FALLBACK_TOL
    err = _max_err(low, truth)
    if not math.isfinite(err):
        return FALLBACK_TOL, FALLBACK_TOL
    return max(FLOAT64_TOL, 5.0 * err), 1.3e-6


# -- encoding (JSON the standalone test can read without attnkata) ---------------------------
class _Unencodable(SampleError):
    pass


def encode(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return {"tensor": _array(value.detach().cpu().contiguous())}
    if isinstance(value, np.ndarray):
        return {"ndarray": _array(torch.from_numpy(np.ascontiguousarray(value)))}
    if isinstance(value, tuple):
        return {"tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise _Unencodable("dict with non-string keys")
        return {"dict": {k: encode(v) for k, v in value.items()}}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise _Unencodable(f"cannot store a {type(value).__name__}")


def _array(t: torch.Tensor) -> dict[str, Any]:
    try:
        arr = t.numpy()
    except TypeError:
        raise _Unencodable(f"cannot store a {t.dtype} tensor") from None
    return {
        "dtype": arr.dtype.name,
        "shape": list(arr.shape),
        "data": base64.b64encode(arr.tobytes()).decode("ascii"),
    }


def _describe(step: dict[str, Any]) -> str:
    from attnkata.checker.compare import describe

    target = step.get("name") or ("module" + (f".{step['method']}" if step.get("method") else ""))
    parts = [
        describe(a).removeprefix("tensor ") if isinstance(a, torch.Tensor | np.ndarray) else repr(a)
        for a in step.get("args", ())
    ]
    parts += [
        f"{k}={describe(v).removeprefix('tensor ') if isinstance(v, torch.Tensor | np.ndarray) else repr(v)}"
        for k, v in step.get("kwargs", {}).items()
    ]
    text = f"{target}({', '.join(parts)})"
    return text if len(text) < 200 else text[:197] + "..."


def build_case(
    module: Any,
    path: Path,
    test: RecordedTest,
    seed: int,
    index: int,
    convert: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """One public sample from one recorded test (raises SampleError when it cannot be one).
    `convert`: the steps' inputs into a variant's conventions (`module` is then the variant's
    reference), after they are re-drawn."""
    if test.status != "pass" or not test.steps:
        raise SampleError("the reference does not pass it")
    if any(s.get("failed") for s in test.steps):
        raise SampleError("it expects the candidate to fail")
    if not any(s["op"] == "call" for s in test.steps):
        raise SampleError("it makes no call")
    steps, changed = perturb_steps(test.steps, seed)
    if changed == 0 and all(s["op"] == "call" for s in test.steps):
        steps, changed = perturb_steps(test.steps, seed, ints=True)
    if changed == 0:
        raise SampleError("no input could be re-drawn (it would show a hidden input)")
    if convert is not None:
        steps = convert(steps)
    outputs = replay(module, path, steps, seed=1)
    again = replay(module, path, steps, seed=2)
    if not all(
        _same(a[0], b[0]) and _same(a[1], b[1]) for a, b in zip(outputs, again, strict=True)
    ):
        raise SampleError("the reference's output depends on the random state")
    try:
        truth = replay(module, path, to_float64(steps), seed=1)
    except SampleError:
        truth = None
    out_steps = []
    calls = iter(range(len(outputs)))
    for step in steps:
        s: dict[str, Any] = {"op": step["op"]}
        if step["op"] == "new":
            s.update(
                name=step["name"],
                args=encode(tuple(step["args"])),
                kwargs=encode(dict(step["kwargs"])),
                handle=step["handle_out"],
            )
            if step.get("dtype") is not None:  # built and cast in one request (proxy.Candidate.new)
                s["dtype"] = encode(step["dtype"])
        elif step["op"] == "to":
            s.update(handle=step["handle"], dtype=encode(step["dtype"]))
        elif step["op"] == "load_state":
            s.update(handle=step["handle"], state=encode(dict(step["state"])))
        elif step["op"] == "call":
            i = next(calls)
            value, grads = outputs[i]
            t_value, t_grads = truth[i] if truth is not None else (None, None)
            atol, rtol = _tolerance(value, t_value)
            s.update(
                name=step.get("name"),
                handle=step.get("handle"),
                method=step.get("method"),
                args=encode(tuple(step["args"])),
                kwargs=encode(dict(step["kwargs"])),
                what=_describe(step),
                expect=encode(value),
                atol=atol,
                rtol=rtol,
            )
            if step.get("grad_wrt"):
                g_atol, g_rtol = _tolerance(grads, t_grads)
                s.update(
                    grad_wrt=list(step["grad_wrt"]),
                    grad_output=encode(step["grad_output"]),
                    expect_grads=encode(list(grads)),
                    grad_atol=g_atol,
                    grad_rtol=g_rtol,
                )
        else:
            raise SampleError(f"unknown step {step['op']!r}")
        out_steps.append(s)
    base = test.id.split("[")[0]
    case = {"id": f"sample{index}-{base}", "tier": test.tier, "steps": out_steps}
    if len(json.dumps(case)) > MAX_CASE_BYTES:
        raise SampleError("its data would be too large")
    return case


def _priority(tests: list[RecordedTest]) -> list[RecordedTest]:
    """One test per test function first (core, then edge, then the rest), then the others."""
    order = {"core": 0, "edge": 1}
    seen: set[str] = set()
    first, rest = [], []
    for t in sorted(tests, key=lambda t: order.get(t.tier, 2)):
        base = t.id.split("[")[0]
        (rest if base in seen else first).append(t)
        seen.add(base)
    return first + rest


def _float_keys(value: Any, out: set[tuple[Any, ...]]) -> set[tuple[Any, ...]]:
    """Fingerprints of the non-constant floating tensors in `value`."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        value = torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, torch.Tensor):
        if (
            value.is_floating_point()
            and value.numel() > 1
            and bool((value != value.reshape(-1)[0]).any())
        ):
            out.add((value.dtype, tuple(value.shape), hashlib_bytes(value)))
    elif isinstance(value, tuple | list):
        for v in value:
            _float_keys(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _float_keys(v, out)
    return out


def step_inputs(step: dict[str, Any]) -> list[Any]:
    return [step[k] for k in ("args", "kwargs", "state", "grad_output") if k in step]


def build_samples(
    kata: Kata, n: int, seed: int, recorded: list[RecordedTest] | None = None
) -> tuple[dict[str, Any], list[str], list[RecordedTest]]:
    """The public-sample document for `kata` (at most `n` cases), why tests were passed over,
    and what the hidden grader asked for (to count its tests). A variant's samples are the
    standard grader's requests in its conventions, answered by its reference; `recorded`:
    the standard kata's recording, when already made."""
    module: Any = importlib.import_module(f"attnkata.reference.{kata.module_name}")
    path = reference_file(kata)
    recorded = recorded if recorded is not None else record(kata.standard)
    convert = None
    if kata.variant:
        from attnkata.checker.adapter import Conventions
        from attnkata.checker.sets.variant_check import load_reference

        module, conv = load_reference(kata), Conventions(kata)
        convert = lambda steps: to_variant(conv, steps)  # noqa: E731
    hidden: set[tuple[Any, ...]] = set()
    for test in recorded:
        for step in test.steps:
            _float_keys(step_inputs(step), hidden)
    cases: list[dict[str, Any]] = []
    skipped: list[str] = []
    for test in _priority(recorded) if n > 0 else []:
        if len(cases) >= n:
            break
        case_seed = zlib.crc32(f"{kata.id}:{seed}:{test.id}".encode())
        try:
            case = build_case(module, path, test, case_seed, len(cases) + 1, convert)
            shown: set[tuple[Any, ...]] = set()
            for step in case["steps"]:
                _float_keys(
                    [decode(step.get(k)) for k in ("args", "kwargs", "state", "grad_output")], shown
                )
            if shown & hidden:
                raise SampleError("an input equals a hidden one")
            cases.append(case)
        except SampleError as exc:
            skipped.append(f"{test.id}: {exc}")
    doc = {"kata": kata.id, "solution_file": kata.solution_file, "format": 1, "cases": cases}
    return doc, skipped, recorded


def to_variant(conv: Any, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Recorded steps (the standard grader's requests) in the conventions of `conv`
    (`adapter.Conventions`): inputs converted, keywords and layers renamed."""
    classes: dict[Any, str] = {}
    out = []
    for step in steps:
        s = dict(step)
        if s["op"] == "new":
            classes[s.get("handle_out")] = s["name"]
            s["args"], s["kwargs"] = conv.to_variant(s["name"], s["args"], s["kwargs"], init=True)
        elif s["op"] == "load_state":
            s["state"] = {
                ".".join(conv.layers.get(part, part) for part in k.split(".")): v
                for k, v in s["state"].items()
            }
        elif s["op"] == "call":
            entry = s.get("name") or classes.get(s.get("handle"), "")
            if s.get("method") is None:
                s["args"], s["kwargs"] = conv.to_variant(entry, s["args"], s["kwargs"])
                if s.get("grad_wrt"):
                    s["grad_output"] = conv.grad_output_to_variant(entry, s["grad_output"])
        out.append(s)
    return out


def decode(value: Any) -> Any:
    """Inverse of `encode` (the standalone test has its own copy)."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "tensor" in value or "ndarray" in value:
        spec = value.get("tensor") or value["ndarray"]
        arr = np.frombuffer(base64.b64decode(spec["data"]), dtype=np.dtype(spec["dtype"]))
        arr = arr.reshape(spec["shape"]).copy()
        return torch.from_numpy(arr) if "tensor" in value else arr
    if "tuple" in value:
        return tuple(decode(v) for v in value["tuple"])
    if "dict" in value:
        return {k: decode(v) for k, v in value["dict"].items()}
    if "dtype" in value:
        return getattr(torch, value["dtype"])
    if "float" in value:
        return float(value["float"])
    raise ValueError(f"cannot decode {value!r}")


def write_doc(kata: Kata, folder: Path, doc: dict[str, Any]) -> int:
    """Write the data and the standalone test into `folder`; returns the number of samples."""
    if not doc["cases"]:
        return 0
    (folder / f"public_{kata.module_name}.json").write_text(
        json.dumps(doc) + "\n", encoding="utf-8"
    )
    text = (
        public_template()
        .replace("__KATA__", kata.id)
        .replace("__MODULE__", kata.module_name)
        .replace("__TITLE__", kata.title.en)
        .replace("__TITLE_ZH__", kata.title.zh)
    )
    (folder / f"test_public_{kata.module_name}.py").write_text(text, encoding="utf-8")
    return len(doc["cases"])


def public_template() -> str:
    """The public test file's text (`public_test_template.py`: real Python with placeholders,
    linted like the rest)."""
    return (Path(__file__).parent / "public_test_template.py").read_text(encoding="utf-8")


# -- running the samples against a sandboxed candidate (`kata web`'s Run button) -------------
def _mismatch(got: Any, want: Any, atol: float, rtol: float, what: str) -> str | None:
    """Why `got` is not `want` within atol + rtol * |want| (None when it is)."""
    if isinstance(want, torch.Tensor | np.ndarray):
        if not isinstance(got, type(want)):
            return f"{what}: expected a {type(want).__name__} {tuple(want.shape)}, got {type(got).__name__}"
        g, w = torch.as_tensor(got), torch.as_tensor(want)
        if tuple(g.shape) != tuple(w.shape):
            return f"{what}: expected shape {tuple(w.shape)}, got {tuple(g.shape)}"
        if g.dtype != w.dtype:
            return f"{what}: expected dtype {w.dtype} (the input's), got {g.dtype}"
        if not w.is_floating_point():
            differ = int((g != w).sum())
            return f"{what}: {differ} entries differ" if differ else None
        g64, w64 = g.detach().double(), w.double()
        same = (g64 == w64) | (g64.isnan() & w64.isnan())
        err = torch.where(same, torch.zeros_like(g64), (g64 - w64).abs().nan_to_num(nan=math.inf))
        over = err > atol + rtol * w64.abs().nan_to_num(posinf=0.0, neginf=0.0)
        if not bool(over.any()):
            return None
        idx = tuple(int(i) for i in over.nonzero()[0])
        return (
            f"{what}: {int(over.sum())} of {err.numel()} values differ; first at {list(idx)}: "
            f"expected {w64[idx].item():.6g}, got {g64[idx].item():.6g}"
        )
    if isinstance(want, tuple | list):
        if not isinstance(got, tuple | list) or len(got) != len(want):
            return f"{what}: expected a sequence of {len(want)}, got {type(got).__name__}"
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            if (why := _mismatch(a, b, atol, rtol, f"{what}[{i}]")) is not None:
                return why
        return None
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            return f"{what}: expected the keys {sorted(want)}"
        return next(
            (w for k in want if (w := _mismatch(got[k], want[k], atol, rtol, f"{what}[{k!r}]"))),
            None,
        )
    if isinstance(want, float):
        ok = isinstance(got, int | float) and math.isclose(got, want, rel_tol=rtol, abs_tol=atol)
        return None if ok else f"{what}: expected {want!r}, got {got!r}"
    return None if got == want else f"{what}: expected {want!r}, got {got!r}"


def _run_case(candidate: Any, case: dict[str, Any]) -> str | None:
    """Replay one sample's steps on `candidate`; why it failed, or None."""
    modules: dict[Any, Any] = {}
    for step in case["steps"]:
        op = step["op"]
        if op == "new":
            dtype = decode(step["dtype"]) if "dtype" in step else None
            modules[step["handle"]] = candidate.new(
                step["name"], decode(step["args"]), decode(step["kwargs"]), dtype=dtype
            )
        elif op == "to":
            modules[step["handle"]].to(decode(step["dtype"]))
        elif op == "load_state":
            modules[step["handle"]].load_state(decode(step["state"]))
        elif op == "call":
            grad = {
                "grad_wrt": tuple(step.get("grad_wrt") or ()),
                "grad_output": decode(step.get("grad_output")),
            }
            args, kwargs = decode(step["args"]), decode(step["kwargs"])
            if step.get("handle") is not None:
                out = modules[step["handle"]].call(args, kwargs, method=step.get("method"), **grad)
            else:
                out = candidate.call(step["name"], args, kwargs, **grad)
            why = _mismatch(
                out.value, decode(step["expect"]), step["atol"], step["rtol"], step["what"]
            )
            if why is None and step.get("grad_wrt"):
                why = _mismatch(
                    list(out.grads or []),
                    decode(step["expect_grads"]),
                    step["grad_atol"],
                    step["grad_rtol"],
                    step["what"] + " gradients",
                )
            if why is not None:
                return why
    return None


def run_samples(
    doc: dict[str, Any], path: Path, source: str, limits: Any, lang: str
) -> dict[str, Any]:
    """Run the public samples of `doc` (`build_samples`) on the candidate's `source`, in the
    sandbox as `kata check` runs it: the mock interview's Run button. Each case: its call,
    pass / fail and why."""
    from attnkata.checker.proxy import Candidate, CandidateFailure

    cases = []
    with Candidate(path, limits, source=source) as candidate:
        candidate.start()
        for case in doc["cases"]:
            what = next((s["what"] for s in case["steps"] if s["op"] == "call"), case["id"])
            try:
                why = _run_case(candidate, case)
            except CandidateFailure as exc:
                why = exc.text(lang)
            cases.append(
                {
                    "id": case["id"],
                    "what": what,
                    "status": "fail" if why else "pass",
                    "message": why or "",
                }
            )
    passed = sum(c["status"] == "pass" for c in cases)
    return {
        "status": "pass" if cases and passed == len(cases) else "fail",
        "passed": passed,
        "total": len(cases),
        "cases": cases,
    }
