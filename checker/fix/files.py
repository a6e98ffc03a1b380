"""`kata fix --write` and `--undo`: the candidate's work is never lost.

`write` keeps the file's previous version beside it (`gqa.py.<time>.bak`, as `kata start
--force` does) before it replaces the file atomically, and records both in the history; `undo`
puts the most recent kept version back, keeping the version it replaces the same way (so an
undo can itself be undone by hand). A file changed since it was checked is not written.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from attnkata.checker import workspace
from attnkata.checker.store import History

WRITE, UNDO = "fix-write", "fix-undo"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.fix.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)  # a crash leaves the old file or the new one, never half of one


class Changed(Exception):
    """The file is not the version that was checked any more."""


def write(kata: str, path: Path, new: str, checked_sha: str) -> Path:
    """Replace `path` by `new`, keeping its current version; returns the kept copy.
    Raises Changed when the file's text is not the checked one (`checked_sha`)."""
    raw = path.read_bytes()
    # The grade read the text as Python does (universal newlines, no byte-order mark); the
    # file keeps its own line endings and mark.
    current = raw.decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n")
    if checked_sha and sha(current) != checked_sha:
        raise Changed(str(path))
    kept = workspace.backup(path)
    data = new.replace("\n", "\r\n") if b"\r\n" in raw else new
    _atomic(
        path, (b"\xef\xbb\xbf" if raw.startswith(b"\xef\xbb\xbf") else b"") + data.encode("utf-8")
    )
    with History() as h:
        h.record_event(
            kata, WRITE, {"file": str(path.resolve()), "backup": str(kept), "sha": sha(new)}
        )
    return kept


@dataclass
class Undone:
    restored_from: Path
    kept: Path


def last_write(kata: str, path: Path) -> dict | None:
    """The latest `--write` of `path` that no `--undo` has taken back."""
    target = str(path.resolve())
    with History() as h:
        writes = [json.loads(e["detail"]) for e in h.events(kata, WRITE)]
        undone = {json.loads(e["detail"]).get("backup") for e in h.events(kata, UNDO)}
    mine = [w for w in writes if w.get("file") == target and w.get("backup") not in undone]
    return mine[-1] if mine else None


def undo(kata: str, path: Path) -> Undone | None:
    """Put back the version the latest `kata fix --write` of `path` kept (None: there is
    none). The file's current text is kept first: nothing is lost either way."""
    w = last_write(kata, path)
    if w is None:
        return None
    backup = Path(w["backup"])
    if not backup.is_file():
        raise FileNotFoundError(str(backup))
    kept = workspace.backup(path) if path.exists() else backup
    _atomic(path, backup.read_bytes())
    with History() as h:
        h.record_event(
            kata, UNDO, {"file": str(path.resolve()), "backup": str(backup), "kept": str(kept)}
        )
    return Undone(backup, kept)
