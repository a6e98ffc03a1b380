"""What crosses the pipe between the grading process and the candidate's child process.

Parent -> child: plain pickle (the child trusts its parent).
Child -> parent: `torch.save` read back with `torch.load(weights_only=True)`, whose
restricted unpickler only rebuilds tensors and plain containers. The child runs untrusted
code that could write anything to its end of the pipe; a reply can never make the
grading process execute code.
"""

from __future__ import annotations

import io
import pickle
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

_NDARRAY = "__ndarray__"
_OPAQUE = "__opaque__"


@dataclass(frozen=True)
class Opaque:
    """A value the candidate returned that is neither a tensor, an array nor a plain container."""

    type_name: str
    text: str

    def __repr__(self) -> str:
        return f"<{self.type_name}: {self.text}>"


def encode_reply(value: Any) -> bytes:
    buf = io.BytesIO()
    torch.save(_to_safe(value), buf)
    return buf.getvalue()


def decode_reply(data: bytes) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a forged reply's pickle protocol warning is noise
        return _from_safe(torch.load(io.BytesIO(data), weights_only=True))


def encode_request(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def decode_request(data: bytes) -> Any:
    return pickle.loads(data)


def _to_safe(value: Any, depth: int = 0) -> Any:
    if depth > 20:
        return {_OPAQUE: "nested", "text": "structure nested too deeply"}
    if isinstance(value, torch.Tensor):
        t = value.detach()
        if type(t) is not torch.Tensor:  # Parameter and other subclasses
            t = t.as_subclass(torch.Tensor)
        if t.layout != torch.strided:
            return {_OPAQUE: f"torch.Tensor({t.layout})", "text": "non-strided tensor"}
        return t.clone() if t.is_conj() or t.is_neg() else t
    if isinstance(value, np.ndarray):
        try:
            return {_NDARRAY: torch.from_numpy(np.ascontiguousarray(value))}
        except TypeError:
            return {_OPAQUE: f"numpy.ndarray[{value.dtype}]", "text": f"shape {value.shape}"}
    if isinstance(value, np.generic):
        return _to_safe(np.asarray(value), depth + 1)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, torch.dtype | torch.device):
        return str(value)
    if isinstance(value, list | tuple):
        items = [_to_safe(v, depth + 1) for v in value]
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _to_safe(v, depth + 1) for k, v in value.items()}
    try:
        text = repr(value)[:200]
    except Exception:  # a candidate's __repr__ may itself be broken
        text = "<unprintable>"
    return {_OPAQUE: type(value).__name__, "text": text}


def _from_safe(value: Any) -> Any:
    if isinstance(value, dict):
        if _NDARRAY in value:
            return value[_NDARRAY].numpy()
        if _OPAQUE in value:
            return Opaque(str(value[_OPAQUE]), str(value.get("text", "")))
        return {k: _from_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_safe(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_from_safe(v) for v in value)
    return value
