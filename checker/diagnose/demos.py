"""Tiny runnable demonstrations for `kata explain ID`: the code is shown, run, and its real
output printed under it. Each one makes the mistake visible on a labelled toy input; each is a
file of its own in `demo_code/<mistake id>.py`, so that ruff reads it like any other code.

Only stdlib at import time; the snippets import torch/numpy themselves when run.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path

_CODE = Path(__file__).parent / "demo_code"  # one file per mistake id: real Python, linted


def ids() -> list[str]:
    return sorted(f.stem for f in _CODE.glob("*.py"))


def code(mistake_id: str) -> str | None:
    path = _CODE / f"{mistake_id}.py"
    return path.read_text(encoding="utf-8") if path.is_file() else None


def run(mistake_id: str) -> str:
    """Run the demonstration; its printed output (and any exception or warning) as text."""
    src = code(mistake_id)
    if src is None:
        return ""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(compile(src, f"<demo {mistake_id}>", "exec"), {"__name__": "__demo__"})  # noqa: S102 - our own code
        except Exception as exc:  # noqa: BLE001 - shown as the demo's output
            print(f"{type(exc).__name__}: {exc}")
    return buf.getvalue().rstrip()
