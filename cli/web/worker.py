"""The grading process behind `kata web`: `python -m attnkata.cli.web.worker`.

The web server never grades in its own process: pytest captures file descriptors while it
runs and the server's event loop must keep answering. This process imports torch and pytest
once, keeps the sandbox warm (the next candidate's process is started as soon as the last one
is released) and each kata's pytest session, as `kata watch` does, and serves one request at a
time through the same checker API as `kata check`.

Protocol: one JSON request per line on stdin, one JSON reply per line on the original stdout
(anything else written to fd 1 goes to stderr). {"op": "cancel", "target": ID} is read while a
check runs and stops it (CheckCancelled): a check superseded by a newer one is not finished.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
from pathlib import Path
from typing import IO, Any

SAMPLES = 3  # public samples per kata for the mock interview's Run button


class Requests:
    """stdin read in a thread: cancellations act at once, everything else is queued."""

    def __init__(self) -> None:
        self.queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.cancelled: set[Any] = set()
        self.current: tuple[Any, threading.Event] | None = None
        self.lock = threading.Lock()
        threading.Thread(target=self._read, name="kata-web-requests", daemon=True).start()

    def _read(self) -> None:
        for line in sys.stdin:
            try:
                req = json.loads(line)
            except json.JSONDecodeError:
                continue
            if req.get("op") == "cancel":
                with self.lock:
                    self.cancelled.add(req.get("target"))
                    if self.current is not None and self.current[0] == req.get("target"):
                        self.current[1].set()
            else:
                self.queue.put(req)
        self.queue.put(None)

    def begin(self, req_id: Any) -> threading.Event | None:
        """The cancel event of the request about to run; None when it was cancelled already."""
        with self.lock:
            if req_id in self.cancelled:
                self.cancelled.discard(req_id)
                return None
            event = threading.Event()
            self.current = (req_id, event)
            return event

    def end(self) -> None:
        with self.lock:
            if self.current is not None:
                self.cancelled.discard(self.current[0])
            self.current = None


def _jsonable(data: Any) -> Any:
    return json.loads(json.dumps(data, default=str))


def _check(req: dict[str, Any], cancel: threading.Event) -> dict[str, Any]:
    from attnkata.checker import api, catalog

    kata = catalog.get_kata(req["kata"])
    result = api.grade(
        kata, Path(req["path"]), lang=req.get("lang", "en"), mode="web", cancel=cancel, again=True
    )
    return {"result": _jsonable(result.to_dict()), "source": result.graded_source or ""}


def _mock_check(req: dict[str, Any], cancel: threading.Event) -> dict[str, Any]:
    from attnkata.checker.mock import grading

    result = grading.check_result(
        req["kata"],
        Path(req["path"]),
        req.get("lang", "en"),
        cancel=cancel,
        variant=req.get("variant"),
    )
    return {"result": _jsonable(result.to_dict()), "source": result.graded_source or ""}


def _samples(req: dict[str, Any], cancel: threading.Event) -> dict[str, Any]:
    from attnkata.checker import api, catalog
    from attnkata.checker.sets import samples
    from attnkata.checker.static import read_source

    kata = catalog.get_kata(req["kata"]).with_variant(req.get("variant") or None)
    lang = req.get("lang", "en")
    cache = Path(req["cache"])
    try:
        doc = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        doc, _, _ = samples.build_samples(kata, SAMPLES, int(req.get("seed", 1)))
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f".{cache.name}.tmp")
        tmp.write_text(json.dumps(doc), encoding="utf-8")
        os.replace(tmp, cache)
    if req.get("path") is None:  # only build them (while the candidate reads the statement)
        return {"samples": len(doc["cases"])}
    path = Path(req["path"])
    source, static = read_source(path, lang)
    if static:  # too large, or an encoding other than UTF-8: the verdict says why
        return {
            "run": {
                "status": "fail",
                "passed": 0,
                "total": 0,
                "cases": [],
                "static": [
                    {"id": d.id, "title": d.title, "explanation": d.explanation} for d in static
                ],
            }
        }
    return {"run": samples.run_samples(doc, path, source, api.limits_for(None, kata), lang)}


def _grade_session(req: dict[str, Any], cancel: threading.Event) -> dict[str, Any]:
    from attnkata.checker.mock import grading

    s = grading.grade_session(Path(req["folder"]))
    return {"state": s.state}


def _hint(req: dict[str, Any], cancel: threading.Event) -> dict[str, Any]:
    """`kata hint`'s next hint: a rung of the ladder may grade the workspace file and search a
    verified fix (pytest, the sandbox), which belongs here, not in the server."""
    from attnkata.checker import catalog
    from attnkata.cli.commands.practice import next_hint

    label, text = next_hint(catalog.get_kata(req["kata"]), None, req.get("lang", "en"))
    return {"label": label, "text": text}


def _warm(req: dict[str, Any], cancel: threading.Event) -> dict[str, Any]:
    from attnkata.checker import catalog
    from attnkata.checker.sandbox import host

    host.prestart(warm=host.warm_ups_for(catalog.get_kata(req["kata"]).grader_path))
    return {}


OPS = {
    "check": _check,
    "mock-check": _mock_check,
    "samples": _samples,
    "grade-session": _grade_session,
    "hint": _hint,
    "warm": _warm,
}


def serve(replies: IO[str]) -> None:
    from attnkata.checker import runner  # noqa: F401 - torch and pytest, before the first check
    from attnkata.checker.errors import CheckCancelled, KataError
    from attnkata.checker.sandbox import host

    host.keep_spares()
    host.prestart()
    requests = Requests()
    replies.write(json.dumps({"ready": True}) + "\n")
    replies.flush()
    while (req := requests.queue.get()) is not None:
        req_id = req.get("id")
        cancel = requests.begin(req_id)
        reply: dict[str, Any] = {"id": req_id, "ok": True}
        try:
            if cancel is None:
                raise CheckCancelled()
            op = OPS.get(req.get("op", ""))
            if op is None:
                raise ValueError(f"unknown request {req.get('op')!r}")
            reply.update(op(req, cancel))
        except CheckCancelled:
            reply = {"id": req_id, "ok": False, "cancelled": True}
        except KataError as exc:
            reply = {"id": req_id, "ok": False, "error": exc.message, "hint": exc.hint}
        except Exception as exc:  # noqa: BLE001 - reported to the page; the worker keeps serving
            reply = {"id": req_id, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
        finally:
            requests.end()
        replies.write(json.dumps(reply, default=str) + "\n")
        replies.flush()


def main() -> None:
    from attnkata.checker.mock.worker import serve_on_stdout

    serve_on_stdout(serve)


if __name__ == "__main__":
    main()
