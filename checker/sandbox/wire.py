"""What crosses the socket between the grading process and the candidate's sandboxed process.

Both directions use one framed format that decoding can never turn into code:

    frame  = u64 body length | body
    body   = u32 header length | header (JSON) | raw buffers, one after another

The JSON header describes the value; tensors and arrays are `{"$t": i, "dtype", "shape"}`
pointing at raw buffer i (contiguous bytes of exactly numel * itemsize), so a tiny view of a
huge storage sends only the view. Decoding checks dtype names against an allowlist, shapes
against buffer sizes, and the frame length against a cap before reading the body; reads have
a deadline on the *whole* frame. No pickle anywhere: the candidate controls every byte it
sends, and nothing it sends is more than data here.
"""

from __future__ import annotations

import json
import math
import re
import socket
import struct
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

DEFAULT_MAX_FRAME = 256 * 1024 * 1024  # bytes; the graders' largest reply is a few MiB
_LEN = struct.Struct("<Q")
_HDR = struct.Struct("<I")

_TORCH_DTYPES = {
    str(d).removeprefix("torch."): d
    for d in (
        torch.float64,
        torch.float32,
        torch.float16,
        torch.bfloat16,
        torch.complex64,
        torch.complex128,
        torch.int64,
        torch.int32,
        torch.int16,
        torch.int8,
        torch.uint8,
        torch.bool,
    )
}
_NUMPY_KINDS = set("fciub?")


class WireError(Exception):
    """A frame that is malformed, too large, or late. Always the sender's fault."""


class FrameTooLarge(WireError):
    pass


class FrameTimeout(WireError):
    pass


class PeerClosed(WireError):
    pass


@dataclass(frozen=True)
class Opaque:
    """A value the candidate returned that is neither a tensor, an array nor a plain container."""

    type_name: str
    text: str

    def __repr__(self) -> str:
        return f"<{self.type_name}: {self.text}>"


# -- encoding ---------------------------------------------------------------------------------
def encode(value: Any) -> bytes:
    buffers: list[bytes] = []
    header = json.dumps(_to_json(value, buffers, 0), separators=(",", ":")).encode()
    body = _HDR.pack(len(header)) + header + b"".join(buffers)
    return _LEN.pack(len(body)) + body


def _tensor_bytes(t: torch.Tensor) -> bytes:
    flat = t.detach().resolve_conj().resolve_neg().to("cpu").contiguous().reshape(-1)
    if flat.numel() == 0:
        return b""
    return flat.view(torch.uint8).numpy().tobytes()


def _to_json(value: Any, buffers: list[bytes], depth: int) -> Any:
    if depth > 20:
        return {"$opaque": "nested", "text": "structure nested too deeply"}
    if isinstance(value, torch.Tensor):
        t = value.detach()
        if type(t) is not torch.Tensor:  # Parameter and other subclasses
            t = t.as_subclass(torch.Tensor)
        dtype = str(t.dtype).removeprefix("torch.")
        if t.layout != torch.strided or dtype not in _TORCH_DTYPES:
            return {"$opaque": f"torch.Tensor({t.layout}, {dtype})", "text": "unsupported tensor"}
        node = {"dtype": dtype, "shape": list(t.shape), "device": str(t.device)}
        if t.device.type == "meta":
            return {"$t": -1, **node}
        buffers.append(_tensor_bytes(t))
        return {"$t": len(buffers) - 1, **node}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _NUMPY_KINDS or value.dtype.hasobject:
            return {"$opaque": f"numpy.ndarray[{value.dtype}]", "text": f"shape {value.shape}"}
        arr = np.ascontiguousarray(value)
        buffers.append(arr.tobytes())
        return {"$a": len(buffers) - 1, "dtype": arr.dtype.str, "shape": list(arr.shape)}
    if isinstance(value, np.generic):
        return _to_json(np.asarray(value), buffers, depth + 1)
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$f": repr(value)}
    if isinstance(value, torch.dtype):
        return {"$dtype": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"$device": str(value)}
    if isinstance(value, tuple):
        return {"$tuple": [_to_json(v, buffers, depth + 1) for v in value]}
    if isinstance(value, list):
        return [_to_json(v, buffers, depth + 1) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"$d": {k: _to_json(v, buffers, depth + 1) for k, v in value.items()}}
    if isinstance(value, Opaque):
        return {"$opaque": value.type_name, "text": value.text}
    try:
        text = repr(value)[:200]
    except Exception:  # a candidate's __repr__ may itself be broken
        text = "<unprintable>"
    return {"$opaque": type(value).__name__, "text": text}


# -- decoding ---------------------------------------------------------------------------------
# The JSON header only describes a value (tensors travel as raw buffers): the graders' largest
# is a few KiB. Both bounds are checked on the raw bytes before anything is built, so a
# nesting or list bomb under the frame cap (json.loads of 200 MB of `[[],[],...` takes 30 s
# and 3 GB) is refused in microseconds: every container or item needs a `[`, `{` or `,`.
MAX_HEADER_BYTES = 1 << 20
MAX_HEADER_ITEMS = 50_000


def decode(body: bytes) -> Any:
    """The value of a frame's body (without its length prefix). Raises WireError, and only
    WireError: whatever the bytes are, decoding them is the sender's failure, never ours."""
    if len(body) < _HDR.size:
        raise WireError("frame too short")
    (n,) = _HDR.unpack_from(body)
    if _HDR.size + n > len(body):
        raise WireError("header longer than the frame")
    if n > MAX_HEADER_BYTES:
        raise WireError(
            f"a header of {n} bytes (limit {MAX_HEADER_BYTES}): values must travel as tensors"
        )
    header = body[_HDR.size : _HDR.size + n]
    items = header.count(b"[") + header.count(b"{") + header.count(b",")
    if items > MAX_HEADER_ITEMS:
        raise WireError(f"a value of more than {MAX_HEADER_ITEMS} items outside tensors")
    try:
        tree = json.loads(header)
        return _Decoder(memoryview(body)[_HDR.size + n :]).value(tree, 0)
    except WireError:
        raise
    except Exception as exc:  # noqa: BLE001 - malformed in some way nobody foresaw: still data
        raise WireError(f"unreadable value: {type(exc).__name__}: {str(exc)[:200]}") from None


class _Decoder:
    def __init__(self, data: memoryview) -> None:
        self.data = data
        self.offset = 0

    def take(self, nbytes: int) -> memoryview:
        if nbytes < 0 or self.offset + nbytes > len(self.data):
            raise WireError("buffer sizes do not match the frame")
        chunk = self.data[self.offset : self.offset + nbytes]
        self.offset += nbytes
        return chunk

    def value(self, node: Any, depth: int) -> Any:
        if depth > 40:
            raise WireError("value nested too deeply")
        if node is None or isinstance(node, bool | int | float | str):
            return node
        if isinstance(node, list):
            return [self.value(v, depth + 1) for v in node]
        if not isinstance(node, dict) or len(node) == 0:
            raise WireError("unexpected node")
        if "$t" in node:
            return self.tensor(node)
        if "$a" in node:
            return self.array(node)
        if "$tuple" in node:
            return tuple(self.value(v, depth + 1) for v in _list(node["$tuple"]))
        if "$d" in node:
            items = node["$d"]
            if not isinstance(items, dict):
                raise WireError("bad dict")
            return {str(k): self.value(v, depth + 1) for k, v in items.items()}
        if "$f" in node:
            text = str(node["$f"])
            if text not in ("nan", "inf", "-inf"):
                raise WireError("bad float")
            return float(text)
        if "$dtype" in node:
            return _torch_dtype(node["$dtype"])
        if "$device" in node:
            return torch.device(_device_name(node["$device"]))
        if "$opaque" in node:
            return Opaque(str(node["$opaque"])[:200], str(node.get("text", ""))[:500])
        raise WireError("unknown node")

    def tensor(self, node: dict[str, Any]) -> torch.Tensor:
        dtype = _torch_dtype(node.get("dtype"))
        shape = _shape(node.get("shape"))
        device = _device_name(node.get("device", "cpu"))
        if node["$t"] == -1:
            return torch.empty(shape, dtype=dtype, device="meta")
        numel = math.prod(shape)
        raw = self.take(numel * dtype.itemsize)
        t = (
            torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape)
            if numel
            else torch.empty(shape, dtype=dtype)
        )
        if device != "cpu":
            try:
                t = t.to(device)
            except Exception:  # noqa: BLE001 - no such device here (any backend's own error)
                pass  # keep it on the CPU: the receiver's checks will say the device is wrong
        return t

    def array(self, node: dict[str, Any]) -> np.ndarray:
        try:
            dtype = np.dtype(str(node.get("dtype")))
        except TypeError:
            raise WireError("unknown array dtype") from None
        if dtype.kind not in _NUMPY_KINDS or dtype.hasobject:
            raise WireError("array dtype not allowed")
        shape = _shape(node.get("shape"))
        raw = self.take(math.prod(shape) * dtype.itemsize)
        return np.frombuffer(bytes(raw), dtype=dtype).reshape(shape).copy()


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise WireError("expected a list")
    return value


def _torch_dtype(name: Any) -> torch.dtype:
    dtype = _TORCH_DTYPES.get(str(name))
    if dtype is None:
        raise WireError(f"dtype {name!r} not allowed")
    return dtype


_DEVICE = re.compile(r"(?:cpu|meta|cuda|mps)(?::\d{1,3})?")


def _device_name(value: Any) -> str:
    """A device the receiver can name: cpu, cuda[:n] or meta. Anything else ("hpu",
    "privateuseone", text) is refused here rather than handed to torch, whose backends
    raise errors of their own kinds for names they do not know."""
    name = value if isinstance(value, str) else ""
    if not _DEVICE.fullmatch(name):
        raise WireError(f"device {str(value)[:40]!r} not allowed")
    return name


def _shape(value: Any) -> tuple[int, ...]:
    if (
        not isinstance(value, list)
        or len(value) > 16
        or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2**40 for s in value)
    ):
        raise WireError("bad shape")
    if math.prod(value) > 2**34:
        raise WireError("tensor too large")
    return tuple(value)


# -- sockets ----------------------------------------------------------------------------------
def send(sock: socket.socket, value: Any) -> None:
    sock.sendall(encode(value))


def recv(
    sock: socket.socket, *, deadline: float | None = None, max_bytes: int = DEFAULT_MAX_FRAME
) -> Any:
    """One value from `sock`. `deadline` (time.monotonic()) bounds the whole frame, not each
    read: a peer that sends half a frame and stalls gets FrameTimeout, not a hang."""
    head = _read_exact(sock, _LEN.size, deadline)
    (n,) = _LEN.unpack(head)
    if n > max_bytes:
        raise FrameTooLarge(f"a reply of {n} bytes (limit {max_bytes})")
    return decode(_read_exact(sock, n, deadline))


def _read_exact(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise FrameTimeout("no complete reply before the deadline")
            sock.settimeout(left)
        else:
            sock.settimeout(None)
        try:
            k = sock.recv_into(view[got:], min(n - got, 1 << 20))
        except TimeoutError:
            raise FrameTimeout("no complete reply before the deadline") from None
        except OSError as exc:
            raise PeerClosed(str(exc)) from None
        if k == 0:
            raise PeerClosed("the other side closed the connection")
        got += k
    return bytes(buf)


def roundtrip(value: Any) -> Any:
    """`value` as the other side would decode it (for in-process serving of trusted code)."""
    return decode(encode(value)[_LEN.size :])
