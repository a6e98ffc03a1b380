"""The replay of a mock interview in the browser (`kata web`): every save, run, submit and paste
of a problem is an event on its timeline with the clock time, and the file's text at that
moment is kept once per distinct content under `.mock/replay/<sha>.py`. The replay page steps
through them with each run's and submit's verdict, pastes marked.

Events are appended inside `session.mutate` by the caller (the lock keeps two tabs in order).
Stdlib only."""

from __future__ import annotations

from typing import Any

from attnkata.checker.mock.session import Problem, Session, sha

SAVE, RUN, SUBMIT, PASTE = "save", "run", "submit", "paste"
KINDS = (SAVE, RUN, SUBMIT, PASTE)


def snapshot_path(s: Session, digest: str) -> Any:
    return s.meta / "replay" / f"{digest}.py"


def record(s: Session, p: Problem, kind: str, text: str, at: float, **info: Any) -> dict[str, Any]:
    """Append one event to `p`'s timeline with the text as it was then; `info` is kept with it
    (a run's or submit's verdict, a paste's size)."""
    if kind not in KINDS:
        raise ValueError(f"unknown replay event {kind!r}")
    data = text.encode("utf-8")
    digest = sha(data)
    path = snapshot_path(s, digest)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    event = {"t": at, "kind": kind, "sha": digest, **info}
    p.timeline.append(event)
    return event


def frames(s: Session, p: Problem) -> list[dict[str, Any]]:
    """`p`'s timeline with each event's text and its time from the start of the interview."""
    out = []
    for event in p.timeline:
        path = snapshot_path(s, event["sha"])
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        out.append({**event, "text": text, "elapsed": round(event["t"] - s.started, 1)})
    return out


def pastes(p: Problem) -> tuple[int, int]:
    """How many pastes were recorded for `p`, and how many characters they brought in."""
    found = [e for e in p.timeline if e["kind"] == PASTE]
    return len(found), sum(int(e.get("chars", 0)) for e in found)
