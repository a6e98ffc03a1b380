"""Where candidates' files live, and copying skeletons there without ever losing work."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import NamedTuple

from attnkata.checker.catalog import Kata


def workspace_root() -> Path:
    """KATA_WORKSPACE, else ~/attnkata."""
    return Path(os.environ.get("KATA_WORKSPACE") or Path.home() / "attnkata").expanduser()


def solution_path(kata: Kata, directory: Path | None = None) -> Path:
    return (directory or workspace_root() / kata.id) / kata.solution_file


class StartResult(NamedTuple):
    path: Path
    created: bool
    backup: Path | None = None


def backup(path: Path) -> Path:
    """Copy `path` to `path.<timestamp>.bak` (never overwriting an earlier backup)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.{stamp}.bak")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.{stamp}-{n}.bak")
        n += 1
    shutil.copy2(path, target)
    return target


def start(kata: Kata, directory: Path | None = None, force: bool = False) -> StartResult:
    """Copy the skeleton into place. An existing file is left alone unless `force`, which
    first keeps a timestamped backup."""
    path = solution_path(kata, directory)
    if path.exists() and not force:
        return StartResult(path, created=False)
    saved = backup(path) if path.exists() else None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    shutil.copyfile(kata.skeleton_path, tmp)
    os.replace(tmp, path)  # atomic: a crash leaves the old file or the new one, never half
    return StartResult(path, created=True, backup=saved)
