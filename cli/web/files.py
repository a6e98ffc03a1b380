"""The candidate's file as the page sees it: the same file the CLI grades (`kata check` and the
page always agree). Saves are atomic, and a save that would overwrite a version the page never
saw (another editor's save, another tab's) keeps that version as a backup first: nothing the
candidate wrote is lost."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from attnkata.checker import workspace
from attnkata.checker.static import MAX_SOURCE_BYTES


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:20]


@dataclass
class FileState:
    path: Path
    exists: bool
    text: str
    sha: str  # of the bytes on disk ("" when there is no file)
    utf8: bool = True
    mtime: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "exists": self.exists,
            "text": self.text,
            "sha": self.sha,
            "utf8": self.utf8,
        }


def read(path: Path, fallback: Path | None = None) -> FileState:
    """The file now; without one, `fallback`'s text (the skeleton) with an empty sha."""
    try:
        data = path.read_bytes()
        mtime = path.stat().st_mtime
    except FileNotFoundError:
        text = fallback.read_text(encoding="utf-8") if fallback is not None else ""
        return FileState(path, False, text, "")
    try:
        return FileState(path, True, data.decode("utf-8-sig"), digest(data), True, mtime)
    except UnicodeDecodeError:
        return FileState(
            path, True, data.decode("utf-8", errors="replace"), digest(data), False, mtime
        )


class SaveRefused(Exception):
    """A save the page is refused (its message key, the HTTP status, the message's values)."""

    def __init__(self, key: str, status: int, **params: object) -> None:
        super().__init__(key)
        self.key, self.status, self.params = key, status, params


@dataclass
class Saved:
    sha: str
    created: bool
    backup: Path | None
    changed: bool


def save(path: Path, text: str, base: str | None) -> Saved:
    """Write `text` to `path`. `base`: the sha of the version the page last loaded or saved;
    when the file on disk is another version, it is copied to a backup before it is replaced.
    A file that is not UTF-8 is never overwritten from the page; text over the checker's size
    limit is refused (the file stays as it was)."""
    data = text.encode("utf-8")
    if len(data) > MAX_SOURCE_BYTES:
        raise SaveRefused("web.file_too_large", 413, size=len(data), limit=MAX_SOURCE_BYTES)
    now = read(path)
    if now.exists and not now.utf8:
        raise SaveRefused("web.not_utf8", 409, path=str(path))
    new_sha = digest(data)
    if now.exists and now.sha == new_sha:
        return Saved(new_sha, False, None, False)
    backup = workspace.backup(path) if now.exists and now.sha != base else None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return Saved(new_sha, not now.exists, backup, True)
