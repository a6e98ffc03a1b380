"""Crash and warning signatures: exception (or warning) messages that name a mistake.

Each rule: a regex on the message, the mistake it means, the katas it is valid for (None:
any kata whose catalogue entry applies), and optionally a check on the numbers it captured
against the probe's sizes (e.g. "size of tensor a (8) must match ... b (2) at dimension 1"
is a missing KV expansion only when 8 and 2 are H and Hkv).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Signature:
    pattern: re.Pattern[str]
    mistake: str
    katas: tuple[str, ...] | None = None
    check: Callable[[re.Match[str], dict[str, Any]], bool] | None = None


def _heads(m: re.Match[str], params: dict[str, Any]) -> bool:
    a, b = int(m.group(1)), int(m.group(2))
    H, Hkv = params.get("H"), params.get("Hkv")
    return H is not None and Hkv is not None and {a, b} == {H, Hkv}


def _kv_width(m: re.Match[str], params: dict[str, Any]) -> bool:
    nums = {int(x) for x in re.findall(r"\d+", m.group(0))}
    H, Hkv, d = params.get("H"), params.get("Hkv"), params.get("d")
    return None not in (H, Hkv, d) and H * d in nums and Hkv * d in nums and H != Hkv


MESSAGE_CHARS = 2000

SIGNATURES: tuple[Signature, ...] = (
    Signature(
        re.compile(r"view size is not compatible with input tensor's size and stride"),
        "missing-contiguous",
    ),
    Signature(
        re.compile(r"The use of `x\.T` on tensors of dimension other than 2"),
        "transpose-2d-on-batched",
    ),
    Signature(
        re.compile(r"t\(\) expects a tensor with <= 2 dimensions"), "transpose-2d-on-batched"
    ),
    # Writing into an input that autograd tracks: the gradient tests then raise this.
    Signature(
        re.compile(r"a leaf Variable that requires grad is being used in an in-place operation"),
        "input-mutated",
    ),
    Signature(
        re.compile(
            r"The size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) "
            r"at non-singleton dimension 1"
        ),
        "kv-heads-not-expanded",
        ("gqa",),
        _heads,
    ),
    # Triton's own check of tl.dot's shapes, which attnkata's interpreter guard sets to the
    # NVIDIA backend's bounds (checker/sandbox/triton_guard.py `gpu_min_dot_size`).
    Signature(
        re.compile(r"Input shapes should have M >= \d+, N >= \d+ and K >= \d+"),
        "block-too-small-for-dot",
    ),
    # One greedy run to the end of the line: linear in the message (a pattern with several
    # unbounded runs backtracks cubically on a long hostile message); _kv_width reads its numbers.
    Signature(
        re.compile(r"(?:shape|size)[^\n]*"), "kv-projection-wrong-size", ("gqa", "mqa"), _kv_width
    ),
)


def classify(message: str, kata: str, params: dict[str, Any]) -> str | None:
    """The mistake id a crash or warning message reveals, or None. Only the message's first
    MESSAGE_CHARS are read: every signature is found there, and a hostile message is clipped."""
    message = message[:MESSAGE_CHARS]
    for sig in SIGNATURES:
        if sig.katas is not None and kata not in sig.katas:
            continue
        m = sig.pattern.search(message)
        if m and (sig.check is None or sig.check(m, params)):
            return sig.mistake
    return None
