"""Triton's interpreter, made to notice what a GPU would not forgive.

`TRITON_INTERPRET=1` runs a real `@triton.jit` kernel on CPU tensors, one program after
another, with numpy. It checks no bounds: an unmasked `tl.load` reads whatever process
memory lies past a tensor, and a store past the end of an output is usually overwritten by
the next program, so values can look right. This module (installed in the candidate's
process by checker/sandbox/child.py, and in the grading process around the references and
mutants, which must behave exactly like the candidate's code) changes that:

- **guard bands**: every tensor a kernel launch receives is copied, for the launch, into a
  larger buffer whose bytes outside the tensor's elements (before, after, and in the gaps
  of a strided view) hold a sentinel: a NaN with a payload of its own, one for the call's
  inputs and another for everything else (outputs). Tensors that share a storage share one
  buffer, so aliasing stays what it was. After the launch, whatever the kernel wrote into a
  tensor is copied back, and a sentinel byte that changed is a store outside the tensor;
- **address tracing**: every load and store lane is checked against those buffers, with the
  kernel's line (the interpreter compiles the kernel under its own file name and lines), the
  program, and whether the call gave a mask at all. A lane outside every buffer is not
  performed (the interpreter would read or write raw memory: garbage, or a crash);
- **outputs start as NaN**: `torch.empty`, `empty_like`, `new_empty`, `empty_strided` give
  NaN-filled floating tensors during a guarded call, so an output element no program writes
  is NaN, not whatever the allocator returned;
- **GPU rules the interpreter skips**: `tl.dot` gets the NVIDIA backend's minimum shapes
  (the inner dimension >= 16 for 16-bit inputs, >= 8 for float32), and bfloat16 tensors are
  refused (the interpreter computes bfloat16 wrongly: numpy has no such type).

The report of a call (`end()`) is evidence, like the rest of the child's trace: the grader
fails a call whose kernels read or wrote outside their tensors, and the diagnosis names the
mistake and the line. Depends on interpreter internals of triton 3.9 (pinned in
constraints.txt): `GridExecutor.__call__`, `interpreter_builder.create_*load/store`,
`codegen_fns["min_dot_size"]`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

BAND_BYTES = 1 << 16  # before and after every buffer: more than a 64 x 64 float32 tile past the end
ROLE_INPUT, ROLE_OTHER = "input", "output"
MAX_EVENTS = 40  # distinct (op, line, tensor, region) kept per call
MAP_SIDE = 16  # the lane picture of an access: at most 16 x 16 cells

# Sentinel bit patterns (NaNs with payloads no arithmetic produces), per element size.
_SENTINEL = {
    ROLE_INPUT: {2: 0x7D5A, 4: 0x7FA5_5A11, 8: 0x7FF5_5AA5_5A11_0001},
    ROLE_OTHER: {2: 0x7E35, 4: 0x7FB3_3C0F, 8: 0x7FF3_3CC3_3C0F_0002},
}
_INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_EMPTIES = frozenset(
    {
        "aten::empty",
        "aten::empty_like",
        "aten::empty_strided",
        "aten::new_empty",
        "aten::new_empty_strided",
        "aten::empty_permuted",
    }
)


def interpreting() -> contextlib.AbstractContextManager[Any]:
    """Inside the block, `@triton.jit` makes interpreted kernels (TRITON_INTERPRET is read
    when a function is decorated; the environment is restored after). Triton itself must
    first be imported inside such a block: `triton.language`'s own helpers (`tl.max`,
    `tl.sum`...) are jitted at its import."""
    return mock.patch.dict(os.environ, {"TRITON_INTERPRET": "1"})


def interpreter_usable() -> bool:
    """Triton's language was imported for the interpreter in this process (or can still be)."""
    with interpreting():
        import triton.language as tl
        from triton.runtime.jit import JITFunction

    return not isinstance(tl.standard.sum, JITFunction)


class BFloat16Refused(TypeError):
    """A kernel launched with a bfloat16 tensor: the interpreter would compute it wrongly."""


# -- what one call did ------------------------------------------------------------------------
@dataclass
class _Group:
    """One storage the kernel received, copied into a banded buffer."""

    buffer: torch.Tensor  # uint8
    base: int  # its address
    span: int  # bytes between the first and the last element's end
    inside: np.ndarray  # bool per byte: belongs to one of the tensors
    role: str
    names: list[str] = field(default_factory=list)  # the kernel's parameters that point into it
    label: str = ""  # the call's argument it came from, when it is one
    members: list[tuple[torch.Tensor, torch.Tensor]] = field(
        default_factory=list
    )  # (original, banded)
    sentinel: bytes = b""


@dataclass
class _Event:
    op: str  # "load" or "store"
    line: int | None
    tensor: str
    label: str
    region: str  # "after", "before", "gap", "outside"
    masked: bool  # the call gave a mask
    lanes: int = 0
    programs: int = 0
    first_program: tuple[int, int, int] = (0, 0, 0)
    lane_map: list[list[bool]] | None = None  # True = a lane outside the tensor (downsampled)
    active_map: list[list[bool]] | None = None  # True = an active lane
    shape: list[int] = field(default_factory=list)


class _State:
    def __init__(self) -> None:
        self.labels: dict[int, str] = {}  # storage address -> "argument i" (the call's inputs)
        self.events: dict[tuple, _Event] = {}
        self.groups: list[_Group] = []  # of the launch running now
        self.launches: list[dict[str, Any]] = []
        self.loaded: dict[str, int] = {}  # label or parameter -> active lanes loaded
        self.active = False
        self.last_program: tuple[int, int, int] | None = None
        self.program_seen: set[tuple[tuple, tuple[int, int, int]]] = set()


_state = _State()
_installed = False


def _view_bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(_INT_VIEW[t.element_size()]) if t.element_size() in _INT_VIEW else t


def _sentinel_bytes(role: str, itemsize: int, dtype: torch.dtype) -> bytes:
    if dtype.is_floating_point and itemsize in _SENTINEL[role]:
        return int(_SENTINEL[role][itemsize]).to_bytes(itemsize, "little")
    return bytes([0xA5 if role == ROLE_INPUT else 0x3C]) * itemsize


def _span(t: torch.Tensor) -> tuple[int, int]:
    """(first byte, end byte) of `t`'s elements in its storage."""
    size = t.element_size()
    lo = t.storage_offset() * size
    hi = lo + (sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True)) + 1) * size
    return lo, hi


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, tuple | list):
        for v in value:
            yield from _tensors(v)


def _band(args: list[Any], names: list[str]) -> tuple[list[Any], list[_Group]]:
    """The launch's arguments with every tensor replaced by a view of a banded buffer."""
    groups: dict[int, list[tuple[str, torch.Tensor]]] = {}
    for name, value in zip(names, args, strict=False):
        for t in _tensors(value):
            if t.dtype == torch.bfloat16:
                raise BFloat16Refused(
                    f"`{name}` is bfloat16: Triton's interpreter computes bfloat16 wrongly (numpy "
                    "has no bfloat16), so it is refused here; use float16 or float32"
                )
            if t.numel() and t.device.type == "cpu":
                groups.setdefault(t.untyped_storage().data_ptr(), []).append((name, t))
    made: dict[int, _Group] = {}
    replaced: dict[int, torch.Tensor] = {}
    for key, members in groups.items():
        lo = min(_span(t)[0] for _, t in members)
        hi = max(_span(t)[1] for _, t in members)
        span = hi - lo
        nbytes = BAND_BYTES + ((span + 127) // 128) * 128 + BAND_BYTES
        label = _state.labels.get(key, "")
        role = ROLE_INPUT if label else ROLE_OTHER
        first = members[0][1]
        sentinel = _sentinel_bytes(role, first.element_size(), first.dtype)
        buffer = torch.empty(nbytes, dtype=torch.uint8)
        word = _INT_VIEW[len(sentinel)]
        buffer.view(word).fill_(int.from_bytes(sentinel, "little", signed=True))
        inside = np.zeros(nbytes, dtype=bool)
        group = _Group(buffer, buffer.data_ptr(), span, inside, role, label=label)
        group.sentinel = sentinel
        for name, t in members:
            size = t.element_size()
            offset = (BAND_BYTES + _span(t)[0] - lo) // size
            banded = buffer.view(t.dtype).as_strided(t.shape, t.stride(), offset)
            banded.copy_(t)
            np.lib.stride_tricks.as_strided(
                inside[offset * size :],
                (*t.shape, size),
                (*(s * size for s in t.stride()), 1),
                writeable=True,
            )[...] = True
            replaced[id(t)] = banded
            group.members.append((t, banded))
            if name not in group.names:
                group.names.append(name)
        made[key] = group

    def swap(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return replaced.get(id(value), value)
        if isinstance(value, tuple | list):
            return type(value)(swap(v) for v in value)
        return value

    return [swap(a) for a in args], list(made.values())


def _restore(groups: list[_Group]) -> None:
    """Copy what the kernel wrote back into the original tensors, and report sentinel bytes
    that changed (a store outside every tensor that no traced lane explains)."""
    for g in groups:
        for original, banded in g.members:
            if not torch.equal(_view_bits(original), _view_bits(banded)):
                original.copy_(banded)
        raw = g.buffer.numpy()
        pattern = np.frombuffer(g.sentinel * (len(raw) // len(g.sentinel)), dtype=np.uint8)
        changed = (raw != pattern) & ~g.inside
        if changed.any():
            idx = int(np.argmax(changed))
            region = _region(g, idx)
            tensor = g.names[0] if g.names else "?"
            if not any(
                e.op == "store" and e.tensor in g.names and e.region == region
                for e in _state.events.values()
            ):
                _add_event("store", None, tensor, g.label, region, True, int(changed.sum()), None)


def _region(g: _Group, offset: int) -> str:
    if offset < BAND_BYTES:
        return "before"
    if offset >= BAND_BYTES + g.span:
        return "after"
    return "gap"


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    import triton

    return tuple(
        os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (triton, torch, np)
    ) + (os.path.abspath(__file__),)


def _kernel_line() -> int | None:
    """The line of the kernel (or of a @triton.jit helper) running now: the first frame of
    code that is not triton's, torch's, numpy's or this module's."""
    frame = sys._getframe(2)
    skip = _library_dirs()
    while frame is not None:
        if not frame.f_code.co_filename.startswith(skip):
            return frame.f_lineno
        frame = frame.f_back
    return None


def _add_event(
    op: str,
    line: int | None,
    tensor: str,
    label: str,
    region: str,
    masked: bool,
    lanes: int,
    maps: tuple[list[list[bool]], list[list[bool]], list[int]] | None,
) -> None:
    key = (op, line, tensor, region, masked)
    e = _state.events.get(key)
    program = _program()
    if e is None:
        if len(_state.events) >= MAX_EVENTS:
            return
        e = _state.events[key] = _Event(op, line, tensor, label, region, masked)
        e.first_program = program
        if maps is not None:
            e.lane_map, e.active_map, e.shape = maps
    e.lanes += lanes
    seen = (key, program)
    if seen not in _state.program_seen:
        _state.program_seen.add(seen)
        e.programs += 1


def _program() -> tuple[int, int, int]:
    from triton.runtime.interpreter import interpreter_builder

    idx = getattr(interpreter_builder, "grid_idx", (0, 0, 0))
    return tuple(int(i) for i in idx)  # type: ignore[return-value]


def _downsample(flags: np.ndarray) -> list[list[bool]]:
    """A lane grid at most MAP_SIDE x MAP_SIDE: a cell is True if any lane it covers is."""
    grid = flags.reshape(flags.shape[0], -1) if flags.ndim >= 2 else flags.reshape(1, -1)
    rows, cols = grid.shape
    rs, cs = math.ceil(rows / MAP_SIDE), math.ceil(cols / MAP_SIDE)
    out = []
    for r in range(0, rows, rs):
        out.append([bool(grid[r : r + rs, c : c + cs].any()) for c in range(0, cols, cs)])
    return out


def _check(ptrs: np.ndarray, mask: np.ndarray, op: str, masked: bool) -> np.ndarray:
    """The lanes that may be performed (those inside some buffer), recording those outside
    their tensors."""
    active = np.broadcast_to(mask, ptrs.shape).astype(bool)
    addr = ptrs.astype(np.uint64)
    known = np.zeros(ptrs.shape, dtype=bool)
    outside = np.zeros(ptrs.shape, dtype=bool)
    line = None
    for g in _state.groups:
        n = len(g.inside)
        rel = addr - np.uint64(g.base)
        here = active & (addr >= np.uint64(g.base)) & (rel < np.uint64(n))
        if not here.any():
            continue
        known |= here
        idx = rel[here].astype(np.int64)
        ok = g.inside[idx]
        tensor = g.names[0] if g.names else "?"
        label = g.label or tensor
        if op == "load":
            _state.loaded[label] = _state.loaded.get(label, 0) + int(ok.sum())
        if ok.all():
            continue
        bad = np.zeros(ptrs.shape, dtype=bool)
        bad[here] = ~ok
        outside |= bad
        line = line if line is not None else _kernel_line()
        regions = np.array([_region(g, int(i)) for i in idx[~ok][:1]])
        region = str(regions[0]) if len(regions) else "after"
        _add_event(
            op,
            line,
            tensor,
            g.label,
            region,
            masked,
            int((~ok).sum()),
            (_downsample(bad), _downsample(active), list(ptrs.shape)),
        )
    wild = active & ~known
    if wild.any():
        line = line if line is not None else _kernel_line()
        _add_event(
            op,
            line,
            "?",
            "",
            "outside",
            masked,
            int(wild.sum()),
            (_downsample(wild), _downsample(active), list(ptrs.shape)),
        )
    return active & known


# -- the patches ------------------------------------------------------------------------------
def install() -> None:
    """Patch triton's interpreter in this process (idempotent). Needs triton imported under
    TRITON_INTERPRET=1 (or its kernels made by the interpreter)."""
    global _installed
    if _installed:
        return
    with interpreting():
        from triton.runtime import interpreter as interp

    builder = interp.interpreter_builder
    TensorHandle = interp.TensorHandle
    original_call = interp.GridExecutor.__call__

    def masked_load(ptrs, mask, other, cache_policy, is_volatile, _masked=True):  # noqa: ANN001
        if not _state.active:
            return _plain_load(ptrs, mask, other, cache_policy, is_volatile)
        keep = _check(ptrs.data, mask.data, "load", _masked)
        return _plain_load(ptrs, TensorHandle(keep, mask.dtype), other, cache_policy, is_volatile)

    def masked_store(ptrs, value, mask, cache_policy):  # noqa: ANN001
        if not _state.active:
            return _plain_store(ptrs, value, mask, cache_policy)
        keep = _check(ptrs.data, mask.data, "store", True)
        return _plain_store(ptrs, value, TensorHandle(keep, mask.dtype), cache_policy)

    def load(ptr, cache_policy, is_volatile):  # noqa: ANN001
        mask = TensorHandle(np.ones_like(ptr.data, dtype=bool), interp.tl.int1)
        return masked_load(ptr, mask, None, cache_policy, is_volatile, _masked=False)

    def store(ptr, val, cache_policy):  # noqa: ANN001
        mask = TensorHandle(np.ones_like(ptr.data, dtype=bool), interp.tl.int1)
        if not _state.active:
            return _plain_store(ptr, val, mask, cache_policy)
        keep = _check(ptr.data, mask.data, "store", False)
        return _plain_store(ptr, val, TensorHandle(keep, mask.dtype), cache_policy)

    _plain_load = builder.create_masked_load
    _plain_store = builder.create_masked_store
    builder.create_masked_load = masked_load
    builder.create_masked_store = masked_store
    builder.create_load = load
    builder.create_store = store
    builder.codegen_fns["min_dot_size"] = gpu_min_dot_size
    # The interpreter checks every integer add and mul for int32 overflow (a fifth of its time
    # on a flash kernel); a GPU build does not, and the graders' sizes cannot overflow.
    builder.options = dataclasses.replace(builder.options, sanitize_overflow=False)

    def guarded_call(self, *args_dev, **kwargs):  # noqa: ANN001, ANN202
        names = list(self.arg_names)
        with _quiet():
            positional, groups = _band(list(args_dev), names)
            keyword_names = list(kwargs)
            keyword, more = _band([kwargs[k] for k in keyword_names], keyword_names)
        groups += more
        outer, outer_active = _state.groups, _state.active
        _state.groups, _state.active = groups, True
        try:
            # The interpreter's own numpy warnings (an all-NaN slice of a masked tile, inf - inf
            # in a tl.where's unused branch) say nothing about the candidate's code.
            # (TRITON_INTERPRET set: triton imports parts of itself lazily, which check it.)
            with _quiet(), interpreting(), warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                original_call(self, *positional, **dict(zip(keyword_names, keyword, strict=True)))
        finally:
            _state.groups, _state.active = outer, outer_active
            with _quiet():
                _restore(groups)
        _state.launches.append(
            {
                "kernel": getattr(self.fn, "__name__", "?")[:80],
                "grid": [int(g) for g in getattr(builder, "grid_dim", ())],
            }
        )

    interp.GridExecutor.__call__ = guarded_call
    _installed = True


def gpu_min_dot_size(lhs_type: Any, rhs_type: Any) -> tuple[int, int, int]:
    """(M, N, K) lower bounds of `tl.dot` as NVIDIA's backend has them in triton 3.9: the
    interpreter itself allows (1, 1, 1)."""
    bits = lhs_type.scalar.primitive_bitwidth
    return {8: (1, 1, 32), 64: (1, 1, 4), 32: (1, 1, 8)}.get(bits, (1, 1, 16))


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The guard's own tensor work, unseen by the call's recorders (the trace shows only what
    the candidate's code did)."""
    with torch._C.DisableTorchFunction(), _disable_current_modes():
        yield


class _NanEmpty(TorchDispatchMode):
    """Floating tensors from torch.empty & co. start as NaN during a guarded call."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        out = func(*args, **(kwargs or {}))
        if (
            func._schema.name in _EMPTIES
            and isinstance(out, torch.Tensor)
            and out.is_floating_point()
            and out.device.type == "cpu"
        ):
            with _quiet():
                out.fill_(math.nan)
        return out


@contextlib.contextmanager
def call(inputs: dict[int, str]) -> Iterator[dict[str, Any]]:
    """Guard one call: `inputs` maps the storage address of each input tensor to its label
    ("argument 1"). Yields the report, filled in when the block ends (see `report`)."""
    begin(inputs)
    out: dict[str, Any] = {}
    try:
        with _NanEmpty():
            yield out
    finally:
        out.update(end())


def begin(inputs: dict[int, str]) -> None:
    global _state
    _state = _State()
    _state.labels = dict(inputs)


def end() -> dict[str, Any]:
    """What the call's kernel launches did: launches, lanes outside their tensors (by op,
    line, tensor, region), lanes loaded per tensor."""
    events = sorted(_state.events.values(), key=lambda e: (e.op != "store", e.line or 0))
    return {
        "launches": len(_state.launches),
        "grids": [launch["grid"] for launch in _state.launches[:20]],
        "kernels": sorted({launch["kernel"] for launch in _state.launches})[:10],
        "outside": [
            {
                "op": e.op,
                "line": e.line,
                "tensor": e.tensor,
                "label": e.label,
                "region": e.region,
                "masked": e.masked,
                "lanes": e.lanes,
                "programs": e.programs,
                "program": list(e.first_program),
                "shape": e.shape,
                "lane_map": e.lane_map or [],
                "active_map": e.active_map or [],
            }
            for e in events
        ],
        "loaded": dict(sorted(_state.loaded.items())[:20]),
    }


def input_labels(args: list[Any], kwargs: dict[str, Any]) -> dict[int, str]:
    """{storage address: "argument i" / "argument 'name'"} of a call's tensors."""
    labels = {}
    for i, a in enumerate(args):
        for t in _tensors(a):
            labels.setdefault(t.untyped_storage().data_ptr(), f"argument {i}")
    for k, v in kwargs.items():
        for t in _tensors(v):
            labels.setdefault(t.untyped_storage().data_ptr(), f"argument {k!r}")
    return labels
