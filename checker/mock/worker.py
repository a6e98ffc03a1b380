"""A grading process for the interactive screen: `python -m attnkata.checker.mock.worker`.

The screen must keep its countdown ticking while a check runs, but grading cannot share its
process: pytest captures file descriptors 1 and 2 while it runs (the screen would freeze), and
the candidate's process is forked, which is unsafe next to the screen's threads. So the screen
keeps one of these alive: torch is imported once, and each check costs only the grading.

Protocol: one JSON request per line on stdin ({"kata", "path", "lang"}), one JSON reply per line
on the original stdout ({"ok": true, "result": {...}} or {"ok": false, "error": "..."}). Anything
else that writes to fd 1 (pytest, a stray print) goes to stderr, so replies stay parseable.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def _serve(replies: IO[str]) -> None:
    from attnkata.checker import runner  # noqa: F401 - warm: torch is imported before the first check
    from attnkata.checker.errors import KataError
    from attnkata.checker.mock.grading import check_file
    from attnkata.checker.sandbox import host

    host.keep_spares()  # the candidate re-checks again and again

    replies.write(json.dumps({"ready": True}) + "\n")
    replies.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        reply: dict[str, Any]
        req: dict[str, Any] = {}
        try:
            req = json.loads(line)
            reply = {
                "ok": True,
                "id": req.get("id"),
                "result": check_file(
                    req["kata"],
                    Path(req["path"]),
                    req.get("lang", "en"),
                    variant=req.get("variant"),
                ),
            }
        except KataError as exc:
            reply = {"ok": False, "id": req.get("id"), "error": exc.message}
        except Exception as exc:  # noqa: BLE001 - reported to the screen, the worker keeps serving
            reply = {"ok": False, "id": req.get("id"), "error": f"{type(exc).__name__}: {exc}"}
        replies.write(json.dumps(reply, default=str) + "\n")
        replies.flush()


def serve_on_stdout(serve: Callable[[IO[str]], None]) -> None:
    """Run `serve(replies)` with `replies` on the original stdout and file descriptor 1 sent to
    stderr: whatever else writes there (pytest, a stray print) cannot garble a reply. Also the
    protocol of `kata web`'s grading process (cli/web/worker.py)."""
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        serve(replies)
    except KeyboardInterrupt:
        pass


def main() -> None:
    serve_on_stdout(_serve)


if __name__ == "__main__":
    main()
