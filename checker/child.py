"""The candidate's side of the proxy: runs in a forked child, never in the grading process.

It loads the candidate's file, serves calls from the parent, and reports back outputs,
gradients, warnings, exceptions and a trace of the torch ops the candidate ran.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.abc
import importlib.util
import os
import resource
import signal
import sys
import time
import traceback
import warnings
from collections import Counter
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from attnkata.checker import wire
from attnkata.checker.autograd import backward

# Attention kernels a hand-written solution must not call, matched on what runs.
BANNED_FUNCTIONS = {
    torch.nn.functional.scaled_dot_product_attention: "torch.nn.functional.scaled_dot_product_attention",
    torch.nn.functional.multi_head_attention_forward: "torch.nn.functional.multi_head_attention_forward",
    torch._native_multi_head_attention: "torch._native_multi_head_attention",
}
BANNED_OP_PREFIXES = (
    "aten::_scaled_dot_product",
    "aten::scaled_dot_product_attention",
    "aten::_native_multi_head_attention",
    "aten::_flash_attention",
    "aten::_efficient_attention",
    "flex_attention",
)
_CANDIDATE_MODULE = "candidate_solution"


class _TraceState:
    """What one call did, accumulated by the two modes below."""

    def __init__(self, input_storages: dict[int, str]) -> None:
        self.ops: Counter[str] = Counter()
        self.banned: list[str] = []
        self.largest: dict[str, Any] = {"elements": 0}
        self.inplace_on_inputs: list[dict[str, str]] = []
        self.input_storages = input_storages
        self.out_dtypes: Counter[str] = Counter()

    def summary(self) -> dict[str, Any]:
        return {
            "ops": dict(self.ops.most_common(60)),
            "banned": sorted(set(self.banned)),
            "largest": self.largest,
            "inplace_on_inputs": self.inplace_on_inputs[:10],
            "out_dtypes": dict(self.out_dtypes),
        }


class _FunctionRecorder(TorchFunctionMode):
    def __init__(self, state: _TraceState) -> None:
        super().__init__()
        self.state = state

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        name = BANNED_FUNCTIONS.get(func)
        if name is not None:
            self.state.banned.append(name)
        return func(*args, **(kwargs or {}))


class BannedCall(Exception):
    """Raised in the child when candidate code reaches an attention kernel that cannot simply
    be recorded and let through (flex_attention is a higher-order operator)."""


class _DispatchRecorder(TorchDispatchMode):
    """Records every aten op with the storage it allocates and any write into an input."""

    # Higher-order operators (flex_attention) reach __torch_dispatch__ instead of failing
    # with "no rule registered for HigherOrderOperator".
    supports_higher_order_operators = True

    def __init__(self, state: _TraceState) -> None:
        super().__init__()
        self.state = state

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Otherwise torch wraps __torch_dispatch__ with a dynamo guard whose first use
        # imports torch._dynamo: a second of start-up in every child.
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        if isinstance(func, torch._ops.HigherOrderOperator):
            # Keep this branch trivial: flex_attention may run it under dynamo's tracing.
            self.state.banned.append("flex_attention (a higher-order attention operator)")
            raise BannedCall("flex_attention")
        out = func(*args, **kwargs)
        st = self.state
        name = func._schema.name
        st.ops[name] += 1
        if name.startswith(BANNED_OP_PREFIXES):
            st.banned.append(name)
        for arg, value in zip(func._schema.arguments, list(args) + [kwargs.get(a.name) for a in func._schema.arguments[len(args):]], strict=False):
            if arg.alias_info is not None and arg.alias_info.is_write and isinstance(value, torch.Tensor):
                which = st.input_storages.get(_storage_key(value))
                if which is not None:
                    st.inplace_on_inputs.append({"op": name, "input": which})
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                st.out_dtypes[str(t.dtype).replace("torch.", "")] += 1
                try:
                    elements = t.untyped_storage().nbytes() // max(t.element_size(), 1)
                except (RuntimeError, NotImplementedError):
                    continue
                if elements > st.largest["elements"]:
                    st.largest = {
                        "elements": int(elements),
                        "shape": list(t.shape),
                        "dtype": str(t.dtype).replace("torch.", ""),
                        "op": name,
                    }
        return out


def _storage_key(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return -1


class _BlockTrainer(importlib.abc.MetaPathFinder):
    """Importing attnkata (and so its references) from candidate code is banned."""

    def __init__(self) -> None:
        self.hits: list[str] = []

    def find_spec(self, fullname, path, target=None):  # noqa: ANN001
        if fullname == "attnkata" or fullname.startswith("attnkata."):
            self.hits.append(fullname)
            raise ImportError(f"importing {fullname} from a solution is not allowed")
        return None


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _apply_limits(memory_mb: int) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_mb > 0:
        # The address-space limit is counted on top of what this process already maps
        # (torch alone maps a lot of virtual memory that it never touches).
        with open("/proc/self/statm") as f:
            mapped = int(f.read().split()[0]) * resource.getpagesize()
        limit = mapped + memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _install_tripwires() -> None:
    """flex_attention compiles itself on first use, which our modes cannot trace; replace the
    public function before the candidate imports it, so a call is refused at once."""
    import torch.nn.attention.flex_attention as flex

    def flex_attention(*args: Any, **kwargs: Any) -> Any:
        raise BannedCall("torch.nn.attention.flex_attention.flex_attention")

    flex.flex_attention = flex_attention


def _hide_trainer() -> _BlockTrainer:
    for name in [m for m in sys.modules if m == "attnkata" or m.startswith("attnkata.")]:
        if not name.startswith("attnkata.checker"):
            del sys.modules[name]
    blocker = _BlockTrainer()
    sys.meta_path.insert(0, blocker)
    return blocker


class Server:
    def __init__(self, conn: Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        self.module: Any = None
        self.handles: dict[int, Any] = {}
        self.blocker: _BlockTrainer | None = None

    # -- replies ---------------------------------------------------------------
    def _error(self, exc: BaseException) -> dict[str, Any]:
        frames = [
            {"line": f.lineno, "text": (f.line or "").strip(), "function": f.name}
            for f in traceback.extract_tb(exc.__traceback__)
            if f.filename == str(self.path)
        ]
        message = str(exc)
        kind = "exception"
        if isinstance(exc, SystemExit):
            kind, message = "exit", f"sys.exit({exc.code!r})"
        elif isinstance(exc, MemoryError) or "can't allocate memory" in message or "Unable to allocate" in message:
            kind = "memory"
        if isinstance(exc, ImportError) and self.blocker and self.blocker.hits:
            kind = "banned-import"
        elif isinstance(exc, BannedCall):
            kind = "banned-call"
        return {
            "ok": False,
            "kind": kind,
            "type": type(exc).__name__,
            "message": message[:2000],
            "frames": frames,
        }

    # -- requests --------------------------------------------------------------
    def load(self) -> dict[str, Any]:
        spec = importlib.util.spec_from_file_location(_CANDIDATE_MODULE, self.path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[_CANDIDATE_MODULE] = module
        sys.path.insert(0, str(self.path.parent))
        state = _TraceState({})
        with _FunctionRecorder(state):
            spec.loader.exec_module(module)
        self.module = module
        names = {}
        for name, value in vars(module).items():
            if name.startswith("__"):
                continue
            kind = "class" if isinstance(value, type) else "function" if callable(value) else None
            if kind:
                names[name] = kind
        return {"ok": True, "names": names, "banned": sorted(set(state.banned))}

    def _target(self, req: dict[str, Any]) -> Any:
        if "handle" in req:
            obj = self.handles[req["handle"]]
            return getattr(obj, req.get("method") or "__call__")
        return getattr(self.module, req["name"])

    def new(self, req: dict[str, Any]) -> dict[str, Any]:
        cls = getattr(self.module, req["name"])
        obj = cls(*req["args"], **req["kwargs"])
        if isinstance(obj, torch.nn.Module):
            obj.eval()
        handle = len(self.handles) + 1
        self.handles[handle] = obj
        return {"ok": True, "handle": handle, "structure": _structure(obj)}

    def load_state(self, req: dict[str, Any]) -> dict[str, Any]:
        module = self.handles[req["handle"]]
        own = dict(module.named_parameters()) | dict(module.named_buffers())
        with torch.no_grad():
            for name, value in req["state"].items():
                target = own[name]
                if target.shape != value.shape:
                    raise ValueError(f"{name}: shape {tuple(target.shape)} cannot take {tuple(value.shape)}")
                target.copy_(value)
        return {"ok": True}

    def to(self, req: dict[str, Any]) -> dict[str, Any]:
        module = self.handles[req["handle"]]
        module.to(req["dtype"])
        return {"ok": True, "structure": _structure(module)}

    def call(self, req: dict[str, Any]) -> dict[str, Any]:
        target = self._target(req)
        args, kwargs = list(req["args"]), dict(req["kwargs"])
        wrt = req.get("grad_wrt") or ()
        for i in wrt:
            args[i] = args[i].detach().clone().requires_grad_(True)
        pristine = [_snapshot(a) for a in args] + [_snapshot(v) for v in kwargs.values()]
        inputs = {
            _storage_key(a): f"argument {i}" for i, a in enumerate(args) if isinstance(a, torch.Tensor)
        } | {_storage_key(v): f"argument {k!r}" for k, v in kwargs.items() if isinstance(v, torch.Tensor)}
        state = _TraceState(inputs)
        grads = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            with _FunctionRecorder(state), _DispatchRecorder(state):
                with torch.set_grad_enabled(bool(wrt)):
                    out = target(*args, **kwargs)
                if wrt:
                    out_t = out[0] if isinstance(out, tuple | list) else out
                    if not isinstance(out_t, torch.Tensor) or not out_t.requires_grad:
                        grads = "output does not require grad: the computation was detached from the inputs"
                    else:
                        backward(out_t, req["grad_output"])
                        grads = [args[i].grad for i in wrt]
            seconds = time.perf_counter() - t0
        mutated = [
            f"argument {i}" if i < len(args) else f"argument {list(kwargs)[i - len(args)]!r}"
            for i, (before, now) in enumerate(zip(pristine, args + list(kwargs.values()), strict=True))
            if before is not None and not _same(before, now)
        ]
        return {
            "ok": True,
            "value": out,
            "grads": grads,
            "warnings": [
                {
                    "category": w.category.__name__,
                    "message": str(w.message)[:500],
                    "line": w.lineno if w.filename == str(self.path) else None,
                }
                for w in caught
            ][:20],
            "trace": state.summary(),
            "mutated": mutated,
            "seconds": seconds,
        }

    def serve(self) -> None:
        handlers = {"call": self.call, "new": self.new, "load_state": self.load_state, "to": self.to}
        while True:
            try:
                req = wire.decode_request(self.conn.recv_bytes())
            except (EOFError, OSError):
                return
            try:
                reply = handlers[req["op"]](req)
            except BaseException as exc:  # noqa: BLE001 - every candidate failure is a reply
                reply = self._error(exc)
            self._send(reply)

    def _send(self, reply: dict[str, Any]) -> None:
        try:
            data = wire.encode_reply(reply)
        except Exception as exc:  # noqa: BLE001
            data = wire.encode_reply({"ok": False, "kind": "protocol", "type": type(exc).__name__,
                                      "message": f"could not send the result back: {exc}", "frames": []})
        self.conn.send_bytes(data)


def _snapshot(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    return None


def _same(before: Any, now: Any) -> bool:
    if isinstance(before, torch.Tensor) and before.device.type == "meta":
        return True  # no data to compare
    if isinstance(before, torch.Tensor):
        if not isinstance(now, torch.Tensor) or now.shape != before.shape:
            return False
        now = now.detach()
        return bool(((now == before) | (now.isnan() & before.isnan())).all()) if now.is_floating_point() else bool((now == before).all())
    if isinstance(before, np.ndarray):
        return isinstance(now, np.ndarray) and np.array_equal(before, now, equal_nan=before.dtype.kind == "f")
    return True


def _structure(obj: Any) -> dict[str, Any]:
    """Submodules in definition order and every parameter/buffer with its shape."""
    if not isinstance(obj, torch.nn.Module):
        return {"modules": [], "params": {}}
    modules = []
    for name, m in obj.named_modules():
        if not name:
            continue
        info: dict[str, Any] = {"name": name, "type": type(m).__name__}
        if isinstance(m, torch.nn.Linear):
            info.update(in_features=m.in_features, out_features=m.out_features, bias=m.bias is not None)
        modules.append(info)
    params = {n: list(p.shape) for n, p in obj.named_parameters()}
    params |= {n: list(b.shape) for n, b in obj.named_buffers()}
    return {"modules": modules, "params": params}


def child_main(conn: Connection, path: str, memory_mb: int, log_path: str) -> None:
    """Entry point right after fork. Never returns: always leaves through os._exit."""
    code = 0
    try:
        os.setpgid(0, 0)
        _die_with_parent()
        # A child forked after the parent ran a multi-threaded op hangs on its first
        # parallel op (OpenMP's pool does not survive fork). One thread avoids the pool.
        torch.set_num_threads(1)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        sys.stdin = open(os.devnull)  # noqa: SIM115
        torch.manual_seed(0)
        np.random.seed(0)
        _apply_limits(memory_mb)
        server = Server(conn, Path(path))
        _install_tripwires()
        server.blocker = _hide_trainer()
        try:
            reply = server.load()
        except BaseException as exc:  # noqa: BLE001
            reply = server._error(exc)
            reply["phase"] = "load"
        server._send(reply)
        if reply["ok"]:
            server.serve()
    except BaseException:  # noqa: BLE001
        code = 70
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os._exit(code)
