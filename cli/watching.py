"""Saves of one file, seen from a background thread, so that `kata watch` can cancel a check
that a newer save has made stale (the check runs in the main thread, where Ctrl-C lands)."""

from __future__ import annotations

import threading
from pathlib import Path

# Editors save in bursts (write, rename, chmod): 40 ms groups them without adding noticeable
# latency; watchfiles' own default (1.6 s) would dominate a sub-second re-check.
DEBOUNCE_MS = 40
STEP_MS = 10


class FileWatcher:
    """`changed` is set on every save of `path`; `wait()` blocks until the next one."""

    def __init__(self, path: Path) -> None:
        self.path = path.resolve()
        self.changed = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kata-watch", daemon=True)

    def _run(self) -> None:
        from watchfiles import watch

        for changes in watch(self.path.parent, debounce=DEBOUNCE_MS, step=STEP_MS, stop_event=self._stop,
                             raise_interrupt=False, yield_on_timeout=False):
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
