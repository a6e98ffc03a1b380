"""A mock interview session: its folder, its state file and its row in the history database.

The folder is the candidate's: one solution file and one statement per problem, plus `.mock/`
with `session.json` (the whole state), `checkpoints/` (the file as it was at each check) and
`snapshot/` (what gets graded). Every change is a locked read-modify-write of `session.json`
(written atomically), so the interactive screen and a `kata mock submit` typed in another
terminal never lose each other's updates, and a killed process leaves the last good state.

Time comes from `now()`: `KATA_MOCK_NOW` is either an absolute epoch time or `+N` / `-N`
seconds from the real clock, so tests and demos can jump past a deadline without sleeping.
Stdlib only: `kata mock status` and `kata solution` import this module.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from attnkata.checker import catalog, store
from attnkata.checker.catalog import Kata
from attnkata.checker.errors import UsageError
from attnkata.checker.messages import both, msg

SESSION_VERSION = 1
NOW_ENV = "KATA_MOCK_NOW"

ACTIVE = "active"  # the clock is running
SUBMITTED = "submitted"  # the snapshot is taken, not graded yet
FOLLOWUPS = "followups"  # graded; the follow-up questions are waiting for answers
DONE = "done"  # the scorecard is final
ABANDONED = "abandoned"  # ended without grading
OPEN_STATES = (ACTIVE, SUBMITTED, FOLLOWUPS)

MIN_MINUTES, MAX_MINUTES = 1, 240
META = ".mock"


def now() -> float:
    """The mock clock: real time unless KATA_MOCK_NOW says otherwise."""
    raw = os.environ.get(NOW_ENV, "").strip()
    if not raw:
        return time.time()
    try:
        if raw[0] in "+-":
            return time.time() + float(raw)
        return float(raw)
    except ValueError:
        raise UsageError(
            f"{NOW_ENV}={raw!r} is not a number",
            "use epoch seconds (1700000000) or an offset from now (+1800)",
        ) from None


def sha(data: bytes) -> str:
    import hashlib  # (with secrets below: OpenSSL costs `kata hint` ~8 ms at start-up)

    return hashlib.sha256(data).hexdigest()[:16]


@dataclass
class Problem:
    kata: str
    file: str  # the solution file, relative to the session folder
    statement: str  # the statement file, relative to the session folder
    minutes: int
    difficulty: str
    title: dict[str, str]
    reason: dict[str, str]  # why the picker chose it, in both languages
    skeleton_sha: str = ""
    checks: list[dict[str, Any]] = field(default_factory=list)
    first_pass: float | None = None  # clock time of the first passing check
    hints: list[str] = field(default_factory=list)
    checkpoint: dict[str, Any] | None = None  # {"t": clock time, "sha": content hash}
    snapshot_note: str = ""  # how the graded version was chosen, when it is not the file on disk
    # `kata web`'s replay: every save, run, submit and paste, in order (checker/mock/replay.py)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    # The variant drawn for this problem (`kata mock start --variants`): {parameter: value};
    # empty: the standard kata. Its statement, skeleton and grading follow it.
    variant: dict[str, str] = field(default_factory=dict)

    @property
    def kata_object(self) -> Kata:
        """The kata as this interview asks it: in its variant, if one was drawn."""
        return catalog.get_kata(self.kata).with_variant(self.variant or None)

    @property
    def last_check(self) -> dict[str, Any] | None:
        return self.checks[-1] if self.checks else None


@dataclass
class Session:
    id: str
    folder: Path
    lang: str
    seed: int
    minutes: int
    started: float
    deadline: float
    problems: list[Problem]
    state: str = ACTIVE
    current: int = 0
    submitted: float | None = None
    submit_reason: str | None = None  # "manual" or "deadline"
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # kata -> Result.to_dict()
    questions: list[dict[str, Any]] = field(default_factory=list)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    card: dict[str, Any] | None = None
    version: int = SESSION_VERSION

    # -- paths -------------------------------------------------------------------
    @property
    def meta(self) -> Path:
        return self.folder / META

    def file_path(self, p: Problem) -> Path:
        return self.folder / p.file

    def checkpoint_path(self, p: Problem) -> Path:
        return self.meta / "checkpoints" / p.file

    def snapshot_path(self, p: Problem) -> Path:
        return self.meta / "snapshot" / p.file

    def problem(self, kata: str | None) -> Problem:
        """The problem for `kata`; None means the only one, else the current one."""
        if kata is None:
            return self.problems[self.current if len(self.problems) > 1 else 0]
        norm = kata.strip().lower().replace("_", "-")
        for p in self.problems:
            if p.kata == norm:
                return p
        names = ", ".join(p.kata for p in self.problems)
        raise UsageError(msg("mock.not_in_session", self.lang, kata=kata, id=self.id, katas=names))

    # -- time --------------------------------------------------------------------
    def remaining(self, at: float | None = None) -> float:
        return max(0.0, self.deadline - (now() if at is None else at))

    def is_due(self, at: float | None = None) -> bool:
        return self.state == ACTIVE and (now() if at is None else at) >= self.deadline

    # -- serialisation -------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["folder"] = str(self.folder)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Session:
        if data.get("version") != SESSION_VERSION:
            raise UsageError(f"unsupported mock session version {data.get('version')!r}")
        data = dict(data)
        data["folder"] = Path(data["folder"])
        data["problems"] = [Problem(**p) for p in data["problems"]]
        return cls(**data)

    def summary(self) -> dict[str, Any]:
        """What `start --json` and `status --json` print."""
        at = now()
        return {
            "id": self.id,
            "state": self.state,
            "folder": str(self.folder),
            "lang": self.lang,
            "seed": self.seed,
            "minutes": self.minutes,
            "started": self.started,
            "deadline": self.deadline,
            "deadline_local": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.deadline)),
            "seconds_left": round(self.remaining(at), 1) if self.state == ACTIVE else 0.0,
            "problems": [problem_summary(self, p) for p in self.problems],
        }


def problem_summary(s: Session, p: Problem) -> dict[str, Any]:
    last = p.last_check
    return {
        "kata": p.kata,
        "title": p.title.get(s.lang, p.title["en"]),
        "difficulty": p.difficulty,
        "minutes": p.minutes,
        "file": str(s.file_path(p)),
        "statement": str(s.folder / p.statement),
        "reason": p.reason.get(s.lang, p.reason["en"]),
        "status": last["status"] if last else "unchecked",
        "passed": last["passed"] if last else None,
        "total": last["total"] if last else None,
        "diagnoses": last["diagnoses"] if last else [],
        "checks": len(p.checks),
        "hints": len(p.hints),
        "time_to_first_pass": None if p.first_pass is None else round(p.first_pass - s.started, 1),
    }


# -- files ---------------------------------------------------------------------------
def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def state_path(folder: Path) -> Path:
    return folder / META / "session.json"


# What answers a follow-up question: while it waits for the candidate, it is kept in the user
# data dir (`answer_keys_path`), not in session.json inside the candidate's own folder.
ANSWER_KEYS = ("answer", "expected", "correct", "order")


def answer_keys_path(session_id: str) -> Path:
    return store.data_dir() / "mock" / f"{session_id}.answers.json"


def load(folder: Path) -> Session:
    path = state_path(folder)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(
            f"no mock session in {folder} ({path} is missing)",
            "`kata mock history` lists your sessions",
        ) from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is damaged: {exc}") from None
    s = Session.from_dict(data)
    if any(ANSWER_KEYS[0] not in q for q in s.questions):
        _restore_answer_keys(s)
    return s


def _restore_answer_keys(s: Session) -> None:
    try:
        keys = json.loads(answer_keys_path(s.id).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        raise UsageError(
            f"the answers to session {s.id}'s follow-up questions are missing "
            f"({answer_keys_path(s.id)})",
            "`kata mock abandon` ends it",
        ) from None
    for q in s.questions:
        q.update(keys.get(q["id"], {}))


def save(s: Session) -> None:
    data = s.to_dict()
    keys = answer_keys_path(s.id)
    if s.state == FOLLOWUPS:
        # Until the answers are in, the model answers live where the candidate's files are not.
        _write_atomic(
            keys,
            json.dumps(
                {q["id"]: {k: q.get(k) for k in ANSWER_KEYS} for q in s.questions},
                ensure_ascii=False,
            ),
        )
        data["questions"] = [
            {k: v for k, v in q.items() if k not in ANSWER_KEYS} for q in s.questions
        ]
    _write_atomic(state_path(s.folder), json.dumps(data, ensure_ascii=False, indent=1, default=str))
    if s.state != FOLLOWUPS:
        keys.unlink(missing_ok=True)  # answered (or given up): the card shows them now
    _db_sync(s)


@contextlib.contextmanager
def _flock(folder: Path) -> Iterator[None]:
    lock = folder / META / "lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as fh:
        try:
            import fcntl
        except ImportError:  # Windows: no advisory locks; atomic writes still keep the file whole
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def mutate(folder: Path) -> Iterator[Session]:
    """Load under the session lock, let the caller change it, save. An exception raised by the
    caller discards the change."""
    with _flock(folder):
        s = load(folder)
        yield s
        save(s)


# -- history database ------------------------------------------------------------------
def _db_sync(s: Session) -> None:
    card = s.card or {}
    ended = s.submitted if s.state != ACTIVE else None
    with contextlib.closing(store.connect()) as conn, store.transaction(conn):
        conn.execute(
            "INSERT INTO mock_sessions (id, started, deadline, minutes, seed, lang, folder, katas, state,"
            " ended, score, followup_score, verdict, card) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(id) DO UPDATE SET state = excluded.state, ended = excluded.ended,"
            " score = excluded.score, followup_score = excluded.followup_score,"
            " verdict = excluded.verdict, card = excluded.card, folder = excluded.folder",
            (
                s.id,
                s.started,
                s.deadline,
                s.minutes,
                s.seed,
                s.lang,
                str(s.folder),
                json.dumps([p.kata for p in s.problems]),
                s.state,
                ended,
                card.get("total") if s.card else None,
                (card.get("followups") or {}).get("percent") if s.card else None,
                card.get("verdict") if s.state == DONE else None,
                json.dumps(s.card, ensure_ascii=False, default=str) if s.card else None,
            ),
        )


def rows(limit: int = 50, states: tuple[str, ...] | None = None) -> list[sqlite3.Row]:
    """Sessions, newest first."""
    q = "SELECT * FROM mock_sessions"
    args: tuple[Any, ...] = ()
    if states:
        q += f" WHERE state IN ({', '.join('?' for _ in states)})"
        args = states
    with contextlib.closing(store.connect()) as conn:
        return conn.execute(
            q + " ORDER BY started DESC, id DESC LIMIT ?", (*args, limit)
        ).fetchall()


def find(session_id: str | None = None, lang: str = "en") -> Session:
    """The session with this id (a unique prefix is enough), else the newest unfinished one."""
    if session_id:
        with contextlib.closing(store.connect()) as conn:
            found = conn.execute(
                "SELECT * FROM mock_sessions WHERE id LIKE ? ORDER BY started DESC",
                (session_id.replace("%", "") + "%",),
            ).fetchall()
        if not found:
            raise UsageError(
                msg("mock.no_such_session", lang, id=session_id), msg("mock.see_history", lang)
            )
        if len(found) > 1 and found[0]["id"] != session_id:
            raise UsageError(
                msg(
                    "mock.ambiguous_session",
                    lang,
                    id=session_id,
                    ids=", ".join(r["id"] for r in found[:5]),
                )
            )
        row = found[0]
    else:
        open_rows = rows(1, OPEN_STATES)
        if not open_rows:
            raise UsageError(msg("mock.no_open_session", lang), msg("mock.start_one", lang))
        row = open_rows[0]
    folder = Path(row["folder"])
    if not state_path(folder).is_file():
        raise UsageError(
            msg("mock.folder_gone", lang, id=row["id"], folder=folder),
            msg("mock.abandon_hint", lang, id=row["id"]),
        )
    return load(folder)


def open_session() -> Session | None:
    """The newest unfinished session whose folder still exists, if any."""
    for row in rows(10, OPEN_STATES):
        folder = Path(row["folder"])
        if state_path(folder).is_file():
            s = load(folder)
            if s.state in OPEN_STATES:
                return s
    return None


def blocking_session(kata_id: str) -> Session | None:
    """An unfinished mock session that contains `kata_id` (the reference stays hidden until it ends)."""
    for row in rows(20, OPEN_STATES):
        if kata_id in json.loads(row["katas"]) and state_path(Path(row["folder"])).is_file():
            s = load(Path(row["folder"]))
            if s.state in OPEN_STATES:
                return s
    return None


# -- creating a session ------------------------------------------------------------------
def new_id(at: float) -> str:
    import secrets

    return time.strftime("%Y%m%d-%H%M%S", time.localtime(at)) + "-" + secrets.token_hex(2)


def default_root() -> Path:
    from attnkata.checker.workspace import workspace_root

    return workspace_root() / "mock"


def create(
    katas: list[Kata],
    reasons: dict[str, dict[str, str]],
    *,
    minutes: int,
    seed: int,
    lang: str,
    folder: Path | None = None,
) -> Session:
    """Make the session folder with the skeletons and statements and start the clock."""
    if not MIN_MINUTES <= minutes <= MAX_MINUTES:
        raise UsageError(msg("mock.bad_minutes", lang, lo=MIN_MINUTES, hi=MAX_MINUTES))
    if (busy := open_session()) is not None:
        raise UsageError(
            msg("mock.already_open", lang, id=busy.id, state=busy.state),
            msg("mock.already_open_hint", lang, id=busy.id),
        )
    started = now()
    sid = new_id(started)
    folder = (folder or default_root() / sid).expanduser().resolve()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise UsageError(
            msg("mock.dir_not_empty", lang, folder=folder), msg("mock.dir_not_empty_hint", lang)
        )
    folder.mkdir(parents=True, exist_ok=True)
    names = [k.solution_file for k in katas]
    problems = []
    for k in katas:
        # Two katas with the same file name would overwrite each other: prefix the id then.
        file = k.solution_file if names.count(k.solution_file) == 1 else f"{k.id}_{k.solution_file}"
        skeleton = k.skeleton_path.read_bytes()  # a variant's, when one was drawn
        (folder / file).write_bytes(skeleton)
        statement = f"{k.id}.statement.md"
        (folder / statement).write_text(k.statement(lang), encoding="utf-8")
        problems.append(
            Problem(
                kata=k.id,
                file=file,
                statement=statement,
                minutes=k.minutes,
                difficulty=k.difficulty,
                title={"en": k.title.en, "zh": k.title.zh},
                reason=reasons.get(k.id, both("mock.chosen_by_you")),
                skeleton_sha=sha(skeleton),
                variant=k.variant_values if k.variant else {},
            )
        )
    s = Session(
        id=sid,
        folder=folder,
        lang=lang,
        seed=seed,
        minutes=minutes,
        started=started,
        deadline=started + minutes * 60,
        problems=problems,
    )
    (folder / "README.md").write_text(readme(s), encoding="utf-8")
    save(s)
    return s


def readme(s: Session) -> str:
    lang = s.lang
    lines = [
        f"# {msg('mock.readme_title', lang)} {s.id}",
        "",
        msg(
            "mock.readme_intro",
            lang,
            minutes=s.minutes,
            deadline=time.strftime("%H:%M", time.localtime(s.deadline)),
        ),
        "",
    ]
    for i, p in enumerate(s.problems, 1):
        lines.append(
            f"{i}. **{p.title[lang]}** (`{p.kata}`, {p.difficulty}, ~{p.minutes} min): "
            f"`{p.file}`, {msg('mock.readme_statement', lang)} `{p.statement}`"
        )
    lines += ["", msg("mock.readme_commands", lang), ""]
    return "\n".join(lines)


# -- during the session ------------------------------------------------------------------
def take_checkpoint(s: Session, p: Problem, at: float) -> Path:
    """Copy the file as it is now; grading a check and a late submission both use this copy."""
    src = s.file_path(p)
    if not src.is_file():
        raise UsageError(
            msg("mock.file_missing", s.lang, file=src), msg("mock.file_missing_hint", s.lang)
        )
    data = src.read_bytes()
    dst = s.checkpoint_path(p)
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, dst)
    p.checkpoint = {"t": at, "sha": sha(data)}
    return dst


def record_check(s: Session, kata: str, result: dict[str, Any], at: float) -> dict[str, Any]:
    """Append the summary of a graded check to its problem; the first pass sets the time to pass."""
    p = s.problem(kata)
    check = check_summary(result, at)
    p.checks.append(check)
    if check["status"] == "pass" and p.first_pass is None:
        p.first_pass = at
    return check


def check_summary(result: dict[str, Any], at: float) -> dict[str, Any]:
    tiers: dict[str, list[int]] = {}
    for test in result.get("tests", []):
        if test["status"] == "skip":
            continue
        c = tiers.setdefault(test["tier"], [0, 0])
        c[1] += 1
        c[0] += test["status"] == "pass"
    diags = [
        d for d in result.get("diagnostics", []) if d.get("severity") in ("essential", "actionable")
    ]
    return {
        "t": at,
        "status": result["status"],
        "passed": sum(v[0] for v in tiers.values()),
        "total": sum(v[1] for v in tiers.values()),
        "tiers": tiers,
        "diagnoses": [d["id"] for d in diags],
        "titles": {d["id"]: d.get("title", "") for d in diags},
        "sha": result.get("source_sha256", ""),  # of the text graded (Problem.skeleton_sha's hash)
    }


# The hint ladder in a mock interview: rung 1 per diagnosed mistake (the kata's hint written
# for it, else the property the code breaks, in words), never rung 2's line and evidence or
# rung 3's fix: an interviewer names the problem, the candidate finds and fixes it.
MOCK_MAX_RUNG = 1


def next_hint(s: Session, p: Problem, kata: Kata) -> tuple[str, str] | None:
    """(hint id, text) of the next hint for `p`: one for each mistake the last check diagnosed
    first (the ladder's first rung), then the progressive ones in order. None when all were
    shown."""
    last = p.last_check
    for mid in (last or {}).get("diagnoses", []):
        if f"mistake:{mid}" in p.hints:
            continue
        targeted = kata.hint_for(mid)
        if targeted is not None:
            return f"mistake:{mid}", targeted.text.get(s.lang)
        if (fix := _catalogue_fix(mid, s.lang, kata.id)) is not None:
            return f"mistake:{mid}", fix
    for i, h in enumerate(kata.progressive_hints, 1):
        if f"level:{i}" not in p.hints:
            return f"level:{i}", h.text.get(s.lang)
    return None


def _catalogue_fix(mistake_id: str, lang: str, kata: str | None = None) -> str | None:
    """For a mistake the kata wrote no hint for: the property it breaks, in words (the hint
    ladder's first rung: no code, no fix); the mistake catalogue's title and fix for one the
    ladder has no words for."""
    from attnkata.checker import mistakes
    from attnkata.checker.messages import MESSAGES

    if f"ladder.property.{mistake_id}" in MESSAGES:
        return msg(f"ladder.property.{mistake_id}", lang)
    if mistake_id not in mistakes.catalogue():
        return None
    m = mistakes.get(mistake_id)
    return msg(
        "hint.title_and_fix",
        lang,
        title=m.render("title", lang, kata=kata),
        fix=m.render("fix", lang, kata=kata),
    )


def submit(s: Session, at: float, reason: str) -> None:
    """Freeze what gets graded. At or after the deadline, a file saved after the deadline is
    replaced by the last version checked before it (or the skeleton): later edits never count."""
    if s.state != ACTIVE:
        return
    late = at >= s.deadline
    cutoff = min(at, s.deadline)
    for p in s.problems:
        src, dst = s.file_path(p), s.snapshot_path(p)
        dst.parent.mkdir(parents=True, exist_ok=True)
        data = src.read_bytes() if src.is_file() else None
        note = ""
        if data is None:
            data, note = _fallback(s, p)
            note = msg("mock.note_missing", s.lang) + " " + note
        elif (
            late
            and src.stat().st_mtime > cutoff
            and not (p.checkpoint and p.checkpoint["sha"] == sha(data))
        ):
            data, note = _fallback(s, p)
            note = msg("mock.note_late_edit", s.lang) + " " + note
        dst.write_bytes(data)
        p.snapshot_note = note
    s.state = SUBMITTED
    s.submitted = cutoff
    s.submit_reason = "deadline" if late else reason


def _fallback(s: Session, p: Problem) -> tuple[bytes, str]:
    cp = s.checkpoint_path(p)
    if p.checkpoint and cp.is_file() and p.checkpoint["t"] <= s.deadline:
        when = time.strftime("%H:%M:%S", time.localtime(p.checkpoint["t"]))
        return cp.read_bytes(), msg("mock.note_used_checkpoint", s.lang, when=when)
    return p.kata_object.skeleton_path.read_bytes(), msg("mock.note_used_skeleton", s.lang)


def close_if_due(folder: Path) -> Session:
    """Load the session; past its deadline, take the snapshot that nobody was around to take."""
    s = load(folder)
    if s.is_due():
        with mutate(folder) as s:
            submit(s, now(), "deadline")
    return s


def attempted(s: Session, p: Problem) -> bool:
    """Did the candidate write anything for `p`? (the graded version differs from the skeleton)"""
    snap = s.snapshot_path(p)
    path = snap if snap.is_file() else s.file_path(p)
    return path.is_file() and sha(path.read_bytes()) != p.skeleton_sha


def take_hint(folder: Path, kata: str | None) -> tuple[Problem, str, str] | None:
    """Reveal and record the next hint of a problem (it costs points on the scorecard).
    (problem, hint id, text), or None when every hint was already shown."""
    with mutate(folder) as s:
        if s.state != ACTIVE or s.is_due():
            raise UsageError(
                msg(
                    "mock.not_running",
                    s.lang,
                    id=s.id,
                    state=s.state if s.state != ACTIVE else "time up",
                )
            )
        p = s.problem(kata)
        found = next_hint(s, p, p.kata_object)
        if found is None:
            return None
        p.hints.append(found[0])
    from attnkata.checker.store import History

    with History() as h:
        # Its own kind: a mock hint must not advance `kata hint`'s practice sequence.
        h.record_event(p.kata, "mock-hint", {"session": s.id, "id": found[0]}, ts=now())
    return p, found[0], found[1]


def refusal(s: Session, kata_id: str) -> tuple[str, str]:
    """Why `kata solution` says no during a mock interview, and how to get there."""
    if s.state == ACTIVE:
        return (
            msg("mock.no_reference", s.lang, kata=kata_id, id=s.id, left=_clock(s.remaining())),
            msg("mock.no_reference_hint", s.lang),
        )
    return (
        msg("mock.no_reference_followups", s.lang, kata=kata_id, id=s.id),
        msg("mock.no_reference_hint", s.lang),
    )


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"
