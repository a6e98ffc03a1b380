"""Candidate-derived text, made safe to show: no terminal control characters.

A candidate chooses what it prints, the text of its exceptions, the name of its exception
classes and its file names, and all of these are quoted back by `kata check`, the Markdown
feedback, the HTML reports and the platforms' outputs. A terminal obeys escape sequences in
such text: `ESC[2J` clears the screen, `\\r` lets a fake "PASS" line overwrite the real one,
OSC 52 (`ESC]52;c;...BEL`) writes the clipboard. Every renderer passes candidate-derived
strings through `clean` at its boundary: C0 controls other than newline and tab, DEL, the
C1 controls (8-bit CSI `\\x9b` included) and the Unicode bidi and line-separator controls are
removed, and so are whole escape sequences (not only their ESC, which would leave `[2J`
behind).

Stdlib only; cheap on text that has nothing to remove.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, TypeVar

# Whole sequences first, so that no parameter bytes are left behind. A string sequence (OSC,
# DCS...) whose terminator is missing ends at the line's end.
_SEQUENCES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI: ESC [ parameters intermediates final
    r"|\x1b\][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # OSC (title, clipboard, hyperlink) to BEL or ST
    r"|\x1b[PX^_][^\x1b\x9c\n]*(?:\x1b\\|\x9c)?"  # DCS, SOS, PM, APC strings to ST
    r"|\x1b[ -/]*[0-~]?"  # any other escape: ESC c, ESC 7, ESC ( B ...
    r"|\x9b[0-?]*[ -/]*[@-~]?"  # 8-bit CSI
    r"|\x9d[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # 8-bit OSC
    r"|[\x90\x98\x9e\x9f][^\x1b\x9c\n]*(?:\x1b\\|\x9c)?"  # 8-bit DCS, SOS, PM, APC
)
# Every control character but newline and tab: C0, DEL, C1; and the Unicode formatting
# controls that reorder or break what is shown (bidi embeddings, overrides and isolates,
# which make "evil" read as "live"; the line and paragraph separators).
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069]")
# What JSON leaves as it is (json.dumps escapes C0 only): DEL, C1, the bidi and separators.
_JSON_RAW = re.compile(r"[\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069]")

T = TypeVar("T")


def clean(text: str) -> str:
    """`text` without terminal control characters and escape sequences (newline and tab kept)."""
    if not isinstance(text, str) or not _CONTROLS.search(text):
        return text
    return _CONTROLS.sub("", _SEQUENCES.sub("", text))


def is_clean(text: str) -> bool:
    return not _CONTROLS.search(text)


def clean_data(value: T) -> T:
    """`clean` applied to every string in `value`: dict keys and values, list and tuple items,
    the fields of dataclass instances (a copy is returned; nothing is changed in place)."""
    if isinstance(value, str):
        return clean(value)  # type: ignore[return-value]
    if isinstance(value, dict):
        return {clean_data(k): clean_data(v) for k, v in value.items()}  # type: ignore[return-value]
    if isinstance(value, list):
        return [clean_data(v) for v in value]  # type: ignore[return-value]
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(clean_data(v) for v in value)  # type: ignore[return-value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            if not f.init:
                continue
            old = getattr(value, f.name)
            new = clean_data(old)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value  # type: ignore[type-var]
    return value


def json_text(text: str) -> str:
    """JSON text (from `json.dumps(..., ensure_ascii=False)`) with DEL, the C1 controls and the
    bidi and line-separator controls written as `\\u` escapes: the same data, but nothing a terminal obeys when it is printed."""
    if not _JSON_RAW.search(text):
        return text
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)
