"""What the candidate's process says back, checked field by field before the grader uses it.

`wire.decode` guarantees only that a reply is data: dicts, lists, strings, numbers, tensors.
Which fields it has, and their types and sizes, are the candidate's to choose (its code runs
in the process that writes the reply). `clean(reply, op)` returns a reply whose every field
the grader reads has the type the harness (checker/sandbox/child.py) sends, with every string
clipped; anything else raises `BadReply`, which the proxy reports as the candidate's failure
("sent back an unreadable reply"), never as an error of the grader. The values a call
returns (`value`, `grads`, `inputs_after`) stay as decoded: the graders judge those.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

# Clip lengths: enough for every message the harness writes; a class name is an identifier.
TYPE_CHARS = 100
MESSAGE_CHARS = 2000
TEXT_CHARS = 300
NAME_CHARS = 200
MAX_ITEMS = 200  # entries of any list or dict the grader reads (frames, warnings, ops...)

ERROR_KINDS = frozenset({"exception", "exit", "memory", "banned-import", "banned-call", "protocol"})


# -- what crosses the channel (checker/sandbox/child.py serves these; proxy.py and local.py send them)
class CallRequest(TypedDict):
    op: Literal["call"]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    grad_wrt: tuple[int, ...]
    grad_output: Any
    name: NotRequired[str]  # a top-level function, or
    handle: NotRequired[int]  # a built module's
    method: NotRequired[str | None]
    state: NotRequired[dict[str, Any]]  # weights to load first (RemoteModule.load_state)
    record: NotRequired[tuple[str, ...]]  # module-level names whose calls to record (CallLog)
    layouts: NotRequired[dict[str, str]]  # inputs as strided views (sandbox/layouts.py)


class NewRequest(TypedDict):
    op: Literal["new"]
    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    dtype: NotRequired[Any]


class ModuleRequest(TypedDict):  # "to" (cast) and "load_state" (weights)
    op: Literal["to", "load_state"]
    handle: int
    dtype: NotRequired[Any]
    state: NotRequired[dict[str, Any]]


Request = CallRequest | NewRequest | ModuleRequest


class Frame(TypedDict):
    line: int
    text: str
    function: str


class ErrorReply(TypedDict):
    ok: Literal[False]
    kind: str  # one of ERROR_KINDS
    type: str
    message: str
    frames: list[Frame]
    phase: NotRequired[str]


class LoadReply(TypedDict):
    ok: Literal[True]
    names: dict[str, str]  # name -> "class" | "function"
    banned: list[str]


class NewReply(TypedDict):
    ok: Literal[True]
    handle: int
    structure: dict[str, Any]  # {"modules": [...], "params": {name: shape}}


class CallReply(TypedDict):
    ok: Literal[True]
    value: Any
    grads: Any
    warnings: list[dict[str, Any]]
    trace: dict[str, Any]
    inputs_after: Any
    seconds: float
    cpu: float
    calls: NotRequired[dict[str, RecordedCalls]]


class RecordedCall(TypedDict):
    args: list[Any]  # values as decoded: the graders judge them
    kwargs: dict[str, Any]


class RecordedCalls(TypedDict):
    count: int
    calls: list[RecordedCall]  # the first few (child.MAX_RECORDED_CALLS)


Reply = ErrorReply | LoadReply | NewReply | CallReply | dict[str, Any]


class BadReply(Exception):
    """A reply whose fields are not what the harness sends: the candidate's doing."""


def clip(value: Any, limit: int, field: str) -> str:
    if not isinstance(value, str):
        raise BadReply(f"{field} is not text")
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _int(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadReply(f"{field} is not an integer")
    return value


def _opt_int(value: Any, field: str) -> int | None:
    return None if value is None else _int(value, field)


def _number(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadReply(f"{field} is not a number")
    return float(value)


def _items(value: Any, field: str) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise BadReply(f"{field} is not a list")
    return list(value[:MAX_ITEMS])


def _mapping(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadReply(f"{field} is not a mapping")
    return {clip(k, NAME_CHARS, field): v for k, v in list(value.items())[:MAX_ITEMS]}


def _frame(value: Any) -> dict[str, Any]:
    f = _mapping(value, "a traceback frame")
    return {
        "line": _int(f.get("line"), "a frame's line"),
        "text": clip(f.get("text", ""), TEXT_CHARS, "a frame's text"),
        "function": clip(f.get("function", ""), NAME_CHARS, "a frame's function"),
    }


def _error(reply: dict[str, Any]) -> dict[str, Any]:
    kind = reply.get("kind")
    out = {
        "ok": False,
        "kind": kind if isinstance(kind, str) and kind in ERROR_KINDS else "exception",
        "type": clip(reply.get("type", ""), TYPE_CHARS, "the exception's type"),
        "message": clip(reply.get("message", ""), MESSAGE_CHARS, "the exception's message"),
        "frames": [_frame(f) for f in _items(reply.get("frames", []), "frames")],
    }
    if "phase" in reply:
        out["phase"] = clip(reply["phase"], NAME_CHARS, "phase")
    return out


def _structure(value: Any) -> dict[str, Any]:
    s = _mapping(value, "the module's structure")
    modules = []
    for m in _items(s.get("modules", []), "modules"):
        m = _mapping(m, "a submodule")
        info: dict[str, Any] = {
            "name": clip(m.get("name", ""), NAME_CHARS, "a submodule's name"),
            "type": clip(m.get("type", ""), NAME_CHARS, "a submodule's type"),
        }
        for key in ("in_features", "out_features"):
            if key in m:
                info[key] = _int(m[key], key)
        if "bias" in m:
            info["bias"] = bool(m["bias"])
        modules.append(info)
    params = {
        name: [_int(n, "a parameter's shape") for n in _items(shape, "a parameter's shape")]
        for name, shape in _mapping(s.get("params", {}), "parameters").items()
    }
    return {"modules": modules, "params": params}


def _trace(value: Any) -> dict[str, Any]:
    t = _mapping(value, "trace")
    largest = _mapping(t.get("largest", {}), "trace.largest")
    return {
        "ops": {
            k: _int(v, "an op count") for k, v in _mapping(t.get("ops", {}), "trace.ops").items()
        },
        "banned": [
            clip(b, NAME_CHARS, "a banned op") for b in _items(t.get("banned", []), "trace.banned")
        ],
        "largest": {
            "elements": _int(largest.get("elements", 0), "trace.largest.elements"),
            **(
                {
                    "shape": [
                        _int(n, "trace.largest.shape")
                        for n in _items(largest["shape"], "trace.largest.shape")
                    ]
                }
                if "shape" in largest
                else {}
            ),
            **{
                k: clip(largest[k], NAME_CHARS, f"trace.largest.{k}")
                for k in ("dtype", "op")
                if k in largest
            },
            **({"line": _int(largest["line"], "trace.largest.line")} if "line" in largest else {}),
        },
        "inplace_on_inputs": [
            {
                k: clip(v, NAME_CHARS, "an in-place write")
                for k, v in _mapping(w, "an in-place write").items()
            }
            for w in _items(t.get("inplace_on_inputs", []), "trace.inplace_on_inputs")
        ],
        "out_dtypes": {
            k: _int(v, "a dtype count")
            for k, v in _mapping(t.get("out_dtypes", {}), "trace.out_dtypes").items()
        },
        **({"triton": _triton(t["triton"])} if "triton" in t else {}),
    }


def _ints(value: Any, field: str) -> list[int]:
    return [_int(n, field) for n in _items(value, field)]


def _grid(value: Any, field: str) -> list[list[bool]]:
    """A small picture of lanes (at most 16 x 16 booleans)."""
    return [[bool(x) for x in _items(row, field)[:16]] for row in _items(value, field)[:16]]


def _triton(value: Any) -> dict[str, Any]:
    """What the Triton guard saw (checker/sandbox/triton_guard.py `end`)."""
    t = _mapping(value, "trace.triton")
    outside = []
    for e in _items(t.get("outside", []), "trace.triton.outside"):
        e = _mapping(e, "an access outside a tensor")
        line = e.get("line")
        outside.append(
            {
                "op": "store" if e.get("op") == "store" else "load",
                "line": _opt_int(line, "an access's line"),
                **{
                    k: clip(e.get(k, ""), NAME_CHARS, f"an access's {k}")
                    for k in ("tensor", "label", "region")
                },
                "masked": bool(e.get("masked", True)),
                **{k: _int(e.get(k, 0), f"an access's {k}") for k in ("lanes", "programs")},
                "program": _ints(e.get("program", []), "an access's program")[:3],
                "shape": _ints(e.get("shape", []), "an access's shape")[:4],
                "lane_map": _grid(e.get("lane_map", []), "an access's lanes"),
                "active_map": _grid(e.get("active_map", []), "an access's lanes"),
            }
        )
    return {
        "launches": _int(t.get("launches", 0), "trace.triton.launches"),
        "grids": [_ints(g, "a grid")[:3] for g in _items(t.get("grids", []), "trace.triton.grids")],
        "kernels": [
            clip(k, NAME_CHARS, "a kernel's name")
            for k in _items(t.get("kernels", []), "trace.triton.kernels")
        ],
        "outside": outside,
        "loaded": {
            k: _int(v, "a load count")
            for k, v in _mapping(t.get("loaded", {}), "trace.triton.loaded").items()
        },
    }


def _calls(value: Any) -> dict[str, Any]:
    """What the recorded names were called with: a count and the first calls' arguments."""
    out = {}
    for name, entry in _mapping(value, "calls").items():
        e = _mapping(entry, "a recorded name")
        out[name] = {
            "count": _int(e.get("count", 0), "a recorded call count"),
            "calls": [
                {
                    "args": _items(c.get("args", []), "a recorded call's arguments"),
                    "kwargs": _mapping(c.get("kwargs", {}), "a recorded call's keywords"),
                }
                for c in (
                    _mapping(c, "a recorded call")
                    for c in _items(e.get("calls", []), "recorded calls")
                )
            ],
        }
    return out


def _warning(value: Any) -> dict[str, Any]:
    w = _mapping(value, "a warning")
    return {
        "category": clip(w.get("category", ""), TYPE_CHARS, "a warning's category"),
        "message": clip(w.get("message", ""), MESSAGE_CHARS, "a warning's message"),
        "line": _opt_int(w.get("line"), "a warning's line"),
    }


def clean(reply: Any, op: str) -> Reply:
    """`reply` to a request of kind `op` ("load", "call", "new", "to", "load_state"), with
    the types the grader relies on. Raises BadReply."""
    if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
        raise BadReply("no ok field")
    if not reply["ok"]:
        return _error(reply)
    if op == "load":
        return {
            "ok": True,
            "names": {
                k: clip(v, NAME_CHARS, "a name's kind")
                for k, v in _mapping(reply.get("names", {}), "names").items()
            },
            "banned": [
                clip(b, NAME_CHARS, "a banned call")
                for b in _items(reply.get("banned", []), "banned")
            ],
        }
    if op == "new":
        return {
            "ok": True,
            "handle": _int(reply.get("handle"), "handle"),
            "structure": _structure(reply.get("structure")),
        }
    if op == "to":
        return {"ok": True, "structure": _structure(reply.get("structure"))}
    if op == "speed":
        return {
            "ok": True,
            "value": reply.get("value"),
            **{k: _number(reply.get(k, 0.0), k) for k in ("ms", "median_ms", "sem_ms", "reps")},
        }
    if op == "call":
        grads = reply.get("grads")
        return {
            "ok": True,
            "value": reply.get("value"),
            "grads": clip(grads, MESSAGE_CHARS, "grads") if isinstance(grads, str) else grads,
            "warnings": [_warning(w) for w in _items(reply.get("warnings", []), "warnings")],
            "trace": _trace(reply.get("trace", {})),
            "inputs_after": reply.get("inputs_after"),
            "seconds": _number(reply.get("seconds", 0.0), "seconds"),
            "cpu": max(0.0, _number(reply.get("cpu", 0.0), "cpu")),
            "calls": _calls(reply.get("calls", {})),
        }
    return {"ok": True}
