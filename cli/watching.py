"""Saves of one file, seen from a background thread, so that `kata watch` can cancel a check
that a newer save has made stale (the check runs in the main thread, where Ctrl-C lands)."""

from __future__ import annotations

import threading
from pathlib import Path

# Editors save in bursts (write, rename, chmod) well under a millisecond apart: a save is
# reported once no event came for STEP_MS (at most DEBOUNCE_MS after the first). watchfiles'
# defaults (50 ms, 1.6 s) would dominate a re-check of ~0.2 s; with 10 ms a save was seen
# 14-20 ms after the write, with 3 ms 4-10 ms after it (measured, 15 saves each).
DEBOUNCE_MS = 40
STEP_MS = 3


class FileWatcher:
    """`changed` is set on every save of `path`; `wait()` blocks until the next one."""

    def __init__(self, path: Path) -> None:
        self.path = path.resolve()
        self.changed = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kata-watch", daemon=True)

    def _run(self) -> None:
        from watchfiles import watch

        for changes in watch(
            self.path.parent,
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            stop_event=self._stop,
            raise_interrupt=False,
            yield_on_timeout=False,
        ):
            if any(Path(p).resolve() == self.path for _, p in changes) and self.path.is_file():
                self.changed.set()

    def wait(self) -> None:
        """Until the next save (in short slices: Ctrl-C must land promptly)."""
        while not self.changed.wait(0.2):
            pass

    def __enter__(self) -> FileWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
