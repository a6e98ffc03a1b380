"""`kata set grade`: grade a class's submissions against a problem set.

- Every (student, kata) is graded by `checker.runner.check`, the same code as `kata check`:
  the candidate runs in its own forked child with time and memory limits.
- `jobs` worker processes each import torch once (they are forked from this process after
  it has imported, but before it has run, any torch op) and grade many submissions. A worker
  that dies or overruns its watchdog is replaced; its submission is retried once, then
  recorded as failed. One student's infinite loop costs that student's time limit, no more.
- Each result is appended to `journal.jsonl` in the output folder as soon as it arrives
  (flushed and fsynced), keyed by the file's sha256, the kata's hash and the limits: a run
  that is interrupted (Ctrl-C, a crash, a reboot) resumes without regrading what is done.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from attnkata.checker.errors import UsageError
from attnkata.checker.messages import clip, msg
from attnkata.checker.models import ERROR, PASS, TIMEOUT, Diagnostic, Result
from attnkata.checker.sets import policy_cost
from attnkata.checker.sets.manifest import (
    Manifest,
    check_penalty,
    file_sha256,
    parse_deadline,
    score,
    verify_bundle,
)
from attnkata.checker.sets.worker import FileRules, grade_one, preload
from attnkata.checker.static import MAX_SOURCE_BYTES
from attnkata.checker.version import __version__

MISSING = "missing"
MAX_FILE_BYTES = MAX_SOURCE_BYTES  # the same cap as `kata check`
RECYCLE_AFTER = 200  # tasks per worker before a fresh one replaces it (bounded memory growth)
JOURNAL = "journal.jsonl"
# Outcomes caused by attnkata or the machine, not by the submission: never journaled, so a
# resumed run grades them again.
_NOT_THE_SUBMISSION = {"grader-broken", "grader-internal-error"}


@dataclass
class GradeOptions:
    jobs: int | None = None
    timeout: float | None = None  # candidate seconds per submission (manifest's default)
    call_timeout: float | None = None
    memory_mb: int | None = None
    lang: str | None = None
    deadline: str | None = None
    late_penalty: float | None = None
    out: Path | None = None
    fresh: bool = False
    katas: list[str] | None = None  # grade only these katas of the set (platform autograders)
    # {kata: {parameter: value}} for every student, instead of the roster's (a platform that
    # draws variants itself: PrairieLearn's question params)
    variants: dict[str, dict[str, str]] | None = None
    dask: str | None = None  # a Dask scheduler address, or local[:N]: grade on that cluster
    # `--feedback fixes`: each failing file's verified fixes (checker/fix/) go into its
    # student's feedback. Off unless the instructor asks: a graded set never shows a fix.
    fixes: bool = False


@dataclass
class Entry:
    """One student's result on one kata."""

    student: str
    kata: str
    status: str  # pass / fail / error / timeout / missing
    score: float
    points: float
    path: str | None = None
    sha256: str | None = None
    late: bool = False
    notes: list[str] = field(default_factory=list)
    result: dict[str, Any] | None = None  # Result.to_dict()
    reused: bool = False
    seconds: float = 0.0
    fix: dict[str, Any] | None = None  # FixReport.to_dict(), with `--feedback fixes`

    def result_model(self) -> Result | None:
        return Result.from_dict(self.result) if self.result is not None else None


@dataclass
class ClassResults:
    manifest: Manifest
    bundle: Path
    submissions: Path
    out: Path
    students: list[str]
    entries: dict[tuple[str, str], Entry]
    lang: str
    warnings: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    graded_at: str = ""

    def entry(self, student: str, kata: str) -> Entry:
        return self.entries[(student, kata)]

    def total(self, student: str) -> float:
        return round(sum(self.entry(student, k).score for k in self.manifest.kata_ids), 4)


@dataclass
class _Task:
    index: int
    student: str
    kata: str
    path: str
    sha256: str
    attempts: int = 0
    variant: dict[str, str] | None = None  # the student's variant (None: the standard kata)
    fixes: bool = False


# -- submissions -----------------------------------------------------------------------------
def _visible(p: Path, root: Path) -> bool:
    return not any(part.startswith((".", "__")) for part in p.relative_to(root).parts)


def locate(folder: Path, solution_file: str) -> tuple[Path | None, list[str]]:
    """The student's file for a kata, tolerating a sub-folder or a different case (noted)."""
    direct = folder / solution_file
    if direct.is_symlink():
        return None, [f"{solution_file} is a symbolic link; symlinks are not accepted"]
    if direct.is_file():
        return direct, []
    found = sorted(
        (
            p
            for p in folder.rglob("*")
            if p.is_file()
            and not p.is_symlink()
            and p.name.lower() == solution_file.lower()
            and _visible(p, folder)
        ),
        key=lambda p: (len(p.parts), p.name != solution_file, str(p)),
    )
    if found:
        rel = found[0].relative_to(folder).as_posix()
        notes = [f"graded {rel} (expected {solution_file} at the top of the folder)"]
        if len(found) > 1:
            notes.append(f"{len(found)} candidates found; graded the first one: {rel}")
        return found[0], notes
    others = sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*.py")
        if p.is_file() and _visible(p, folder)
    )
    note = f"no {solution_file}"
    if others:
        note += f" (found: {', '.join(others[:5])}{', ...' if len(others) > 5 else ''})"
    return None, [note]


def discover(submissions: Path) -> tuple[list[str], list[str]]:
    """Student folder names (sorted) and warnings about what was ignored."""
    if not submissions.is_dir():
        raise UsageError(
            f"{submissions} is not a folder", "SUBMISSIONS holds one folder per student"
        )
    students, loose = [], []
    for p in sorted(submissions.iterdir()):
        if p.name.startswith((".", "__")):
            continue
        (students if p.is_dir() and not p.is_symlink() else loose).append(p.name)
    warnings = (
        [f"ignored {len(loose)} item(s) that are not student folders: {', '.join(loose[:5])}"]
        if loose
        else []
    )
    if not students:
        raise UsageError(
            f"{submissions} has no student folders",
            "put each student's files in a folder named after them",
        )
    return students, warnings


# -- journal ---------------------------------------------------------------------------------
class Journal:
    """Append-only JSON lines; the last complete line per (student, kata) wins."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: dict[tuple[str, str], dict[str, Any]] = {}
        if path.is_file():
            with path.open(encoding="utf-8", errors="replace") as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                        self.records[(rec["student"], rec["kata"])] = rec
                    except (json.JSONDecodeError, KeyError, TypeError):
                        continue  # a line cut short by an interruption
        self._f = None

    def lookup(self, student: str, kata: str, key: dict[str, Any]) -> dict[str, Any] | None:
        rec = self.records.get((student, kata))
        if rec and all(rec.get(k) == v for k, v in key.items()):
            return rec
        return None

    def append(self, record: dict[str, Any]) -> None:
        if self._f is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # A previous run killed mid-line leaves a partial line: start on a fresh one.
            needs_newline = (
                self.path.is_file()
                and self.path.stat().st_size > 0
                and self.path.read_bytes()[-1:] != b"\n"
            )
            self._f = self.path.open("a", encoding="utf-8")
            if needs_newline:
                self._f.write("\n")
        self._f.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())
        self.records[(record["student"], record["kata"])] = record

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


# -- workers ---------------------------------------------------------------------------------
def _worker_main(
    conn: Connection,
    limits: tuple[float, float, int],
    lang: str,
    log_path: str,
    scratch: str,
    rules: FileRules = FileRules(),
) -> None:
    """A grading worker: grade what the parent sends until it sends None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C stops
    # Candidates' log files go to the run's scratch folder, which the parent removes: a
    # worker killed mid-grading cannot leave them behind in /tmp.
    tempfile.tempdir = scratch
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    import torch

    # One thread: workers already use every core between them, and a process that never
    # starts OpenMP's pool forks its candidates safely.
    torch.set_num_threads(1)
    from attnkata.checker.proxy import Limits
    from attnkata.checker.runner import check
    from attnkata.checker.sandbox import host

    host.keep_spares()  # one file after another: the next one's process starts while this one is graded
    call_timeout, total_timeout, memory_mb = limits
    lim = Limits(call_timeout=call_timeout, total_timeout=total_timeout, memory_mb=memory_mb)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        reply = grade_one(
            check,
            task["kata"],
            Path(task["path"]),
            lim,
            lang,
            rules,
            task.get("variant"),
            fixes=task.get("fixes", False),
        )
        try:
            conn.send((task["index"], reply))
        except (BrokenPipeError, OSError):
            return


class _Worker:
    def __init__(
        self,
        ctx: Any,
        limits: tuple[float, float, int],
        lang: str,
        log_path: str,
        scratch: str,
        rules: FileRules = FileRules(),
    ) -> None:
        parent_end, child_end = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(
            target=_worker_main,
            args=(child_end, limits, lang, log_path, scratch, rules),
            name="attnkata-grader",
            daemon=True,
        )
        self.proc.start()
        child_end.close()
        self.conn: Connection = parent_end
        self.task: _Task | None = None
        self.started = 0.0
        self.done = 0

    def assign(self, task: _Task) -> bool:
        try:
            self.conn.send(
                {
                    "index": task.index,
                    "kata": task.kata,
                    "path": task.path,
                    "variant": task.variant,
                    "fixes": task.fixes,
                }
            )
        except (BrokenPipeError, OSError):
            return False
        task.attempts += 1
        self.task, self.started = task, time.monotonic()
        return True

    def stop(self, grace: float = 1.0) -> None:
        try:
            self.conn.send(None)
        except (BrokenPipeError, OSError):
            pass
        self.proc.join(grace)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)
        self.conn.close()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.join(5)
        self.conn.close()


ProgressFn = Callable[[dict[str, Any]], None]


def run_pool(
    tasks: list[_Task],
    *,
    jobs: int,
    limits: tuple[float, float, int],
    lang: str,
    log_path: Path,
    watchdog: float,
    on_reply: Callable[[_Task, dict[str, Any]], None],
    tick: Callable[[], None] = lambda: None,
    kata_ids: list[str] | None = None,
    rules: FileRules = FileRules(),
) -> None:
    """Grade `tasks` on `jobs` forked workers; `on_reply(task, reply)` runs in this process
    as each one finishes (replies: {"ok": True, "result": ...} or {"ok": False, "kind", "message"}).
    `rules`: what the set's manifest says about grading any file (FileRules)."""
    if not tasks:
        return
    preload(kata_ids or sorted({t.kata for t in tasks}))
    ctx = multiprocessing.get_context("fork")
    queue = deque(tasks)
    jobs = max(1, min(jobs, len(tasks)))
    workers: list[_Worker] = []
    failures = 0  # workers found dead before they were given a task, since the last reply
    scratch = tempfile.mkdtemp(prefix="attnkata-grade-")

    def spawn() -> _Worker:
        return _Worker(ctx, limits, lang, str(log_path), scratch, rules)

    def replace(i: int, idle: bool = False) -> None:
        nonlocal failures
        # A worker that dies while grading is that submission's doing (retried, then
        # recorded); workers that die idle again and again are attnkata's problem.
        failures += idle
        if failures > 3 * jobs + 3:
            raise RuntimeError(
                f"grading workers keep dying before they take any work; see {log_path}"
            )
        workers[i].kill()
        workers[i] = spawn()

    def fail(w: _Worker, kind: str, message: str) -> None:
        task, w.task = w.task, None
        assert task is not None
        if kind == "grader-process-died" and task.attempts < 2:
            queue.appendleft(task)  # a fluke gets a second chance on a fresh worker
            return
        on_reply(
            task,
            {
                "ok": False,
                "kind": kind,
                "message": message,
                "seconds": round(time.monotonic() - w.started, 3),
            },
        )

    try:
        while queue or any(w.task for w in workers):
            while len(workers) < jobs:
                workers.append(spawn())
            for i in range(len(workers)):
                if workers[i].task is None and queue:
                    if not workers[i].proc.is_alive():
                        replace(i, idle=True)
                    task = queue.popleft()
                    if not workers[i].assign(task):
                        queue.appendleft(task)
                        replace(i, idle=True)
            busy = [w for w in workers if w.task is not None]
            ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=0.2)
            for i, w in enumerate(workers):
                if w.task is None:
                    continue
                if w.conn in ready:
                    try:
                        index, reply = w.conn.recv()
                    except (EOFError, OSError):
                        fail(w, "grader-process-died", _death(w))
                        replace(i)
                        continue
                    failures = 0
                    task, w.task = w.task, None
                    if index != task.index:  # cannot happen with one task in flight; never drop one
                        reply = {
                            "ok": False,
                            "kind": "grader-internal-error",
                            "message": f"worker answered task {index} for task {task.index}",
                        }
                    on_reply(task, reply)
                    w.done += 1
                    if w.done >= RECYCLE_AFTER:
                        w.stop()
                        workers[i] = spawn()
                elif w.proc.sentinel in ready:
                    fail(w, "grader-process-died", _death(w))
                    replace(i)
                elif time.monotonic() - w.started > watchdog:
                    fail(w, "watchdog", f"grading took longer than {watchdog:g} s; stopped")
                    replace(i)
            tick()
    finally:
        for w in workers:
            if w.task is None:
                w.stop()
            else:
                w.kill()
        shutil.rmtree(scratch, ignore_errors=True)


def _death(w: _Worker) -> str:
    w.proc.join(1)
    code = w.proc.exitcode
    how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
    return (
        f"the grading process ended while grading this file ({how}); your code may have killed it"
    )


# -- results -----------------------------------------------------------------------------------
# The status of each kind; its title is the message grade.synthetic.<kind>.
_SYNTHETIC = {
    "unreadable-file": ERROR,
    "grader-broken": ERROR,
    "grader-internal-error": ERROR,
    "grader-process-died": ERROR,
    "watchdog": TIMEOUT,
}


def synthetic_result(
    kata: str, path: str, kind: str, message: str, lang: str, required_tiers: list[str]
) -> Result:
    status = _SYNTHETIC.get(kind, ERROR)
    title = msg(f"grade.synthetic.{kind if kind in _SYNTHETIC else 'other'}", lang)
    diag_id = "timeout" if kind == "watchdog" else kind
    return Result(
        kata=kata,
        solution=path,
        status=status,
        required_tiers=required_tiers,
        lang=lang,
        diagnostics=[
            Diagnostic(id=diag_id, severity="essential", title=title, explanation=message)
        ],
    )


def _limits(manifest: Manifest, opts: GradeOptions) -> tuple[float, float, int]:
    total = opts.timeout if opts.timeout is not None else manifest.grading.timeout
    call = opts.call_timeout if opts.call_timeout is not None else manifest.grading.call_timeout
    memory = opts.memory_mb if opts.memory_mb is not None else manifest.grading.memory_mb
    if total <= 0 or call <= 0 or memory <= 0:
        raise UsageError("time and memory limits must be positive")
    return min(call, total), total, memory


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def default_out(bundle: Path, submissions: Path) -> Path:
    return bundle / "instructor" / "results" / submissions.resolve().name


def grade_set(
    bundle: Path,
    submissions: Path,
    opts: GradeOptions | None = None,
    progress: ProgressFn | None = None,
) -> ClassResults:
    """Grade every student folder in `submissions` against the set in `bundle`."""
    opts = opts or GradeOptions()
    bundle, submissions = Path(bundle), Path(submissions)
    manifest, warnings = verify_bundle(bundle)
    if opts.katas:
        unknown = sorted(set(opts.katas) - set(manifest.kata_ids))
        if unknown:
            raise UsageError(
                f"the set has no kata {', '.join(unknown)}",
                f"its katas: {', '.join(manifest.kata_ids)}",
            )
        manifest.katas = [k for k in manifest.katas if k.id in opts.katas]
    lang = opts.lang or ("zh" if manifest.options.get("lang") == "zh" else "en")
    if lang not in ("en", "zh"):
        raise UsageError(f"unknown language {lang!r}", "use en or zh")
    limits = _limits(manifest, opts)
    jobs = opts.jobs if opts.jobs is not None else default_jobs()
    if jobs < 1:
        raise UsageError("--jobs must be at least 1")
    deadline_text = parse_deadline(opts.deadline) if opts.deadline else manifest.grading.due
    deadline = datetime.fromisoformat(deadline_text).timestamp() if deadline_text else None
    penalty = check_penalty(
        opts.late_penalty if opts.late_penalty is not None else manifest.grading.late_penalty
    )
    out = Path(opts.out) if opts.out else default_out(bundle, submissions)
    out.mkdir(parents=True, exist_ok=True)
    students, found_warnings = discover(submissions)
    warnings += found_warnings
    journal_path = out / JOURNAL
    if opts.fresh and journal_path.exists():
        journal_path.unlink()
    journal = Journal(journal_path)
    entries: dict[tuple[str, str], Entry] = {}
    tasks: list[_Task] = []
    rules = FileRules(
        manifest.grading.policy,
        tuple(sorted(manifest.grading.allow_imports)),
        manifest.grading.input_salt,
    )
    config = {
        "call_timeout": limits[0],
        "timeout": limits[1],
        "memory_mb": limits[2],
        "lang": lang,
        "attnkata": __version__,
        "policy": rules.policy,
        "allow_imports": list(rules.allow_imports),
    }
    if opts.fixes:  # results graded without fixes are graded again when fixes are asked for
        config["fixes"] = True
    kata_by_id = {k.id: k for k in manifest.katas}
    if manifest.variants:
        strangers = [s for s in students if s not in manifest.variants]
        if strangers:
            warnings.append(
                f"not on the roster, graded against the standard katas: {', '.join(strangers[:10])}"
                + (f" and {len(strangers) - 10} more" if len(strangers) > 10 else "")
            )
    for student in students:
        for k in manifest.katas:
            points = manifest.points(k.id)
            variant = (
                opts.variants.get(k.id)
                if opts.variants is not None
                else manifest.variant_of(student, k.id)
            )
            path, notes = locate(submissions / student, k.solution_file)
            entry = Entry(student, k.id, MISSING, 0.0, points, notes=notes)
            entries[(student, k.id)] = entry
            if path is None:
                continue
            entry.path = str(path)
            stat = path.stat()
            entry.late = deadline is not None and stat.st_mtime > deadline
            if entry.late:
                when = (
                    datetime.fromtimestamp(stat.st_mtime).astimezone().isoformat(timespec="minutes")
                )
                entry.notes.append(f"late: modified {when}, after the deadline {deadline_text}")
            if stat.st_size > MAX_FILE_BYTES:
                entry.status = ERROR
                entry.result = synthetic_result(
                    k.id,
                    str(path),
                    "unreadable-file",
                    f"the file is {stat.st_size} bytes; the limit is {MAX_FILE_BYTES}",
                    lang,
                    k.required_tiers,
                ).to_dict()
                continue
            entry.sha256 = file_sha256(path)
            key = {"sha256": entry.sha256, "kata_hash": k.hash, "config": config}
            if variant:
                key["variant"] = variant  # another variant is another grade
            done = None if opts.fresh else journal.lookup(student, k.id, key)
            if done is not None:
                _apply(entry, done["result"], done.get("seconds", 0.0), manifest, penalty)
                entry.fix = done.get("fix")
                entry.reused = True
            else:
                tasks.append(
                    _Task(
                        len(tasks),
                        student,
                        k.id,
                        str(path.resolve()),
                        entry.sha256,
                        0,
                        variant,
                        fixes=opts.fixes,
                    )
                )
    counts = {
        "total": len(tasks),
        "done": 0,
        "failed": 0,
        "reused": sum(e.reused for e in entries.values()),
        "missing": sum(e.path is None for e in entries.values()),
    }
    t0 = time.monotonic()

    def on_reply(task: _Task, reply: dict[str, Any]) -> None:
        entry = entries[(task.student, task.kata)]
        if reply.get("ok"):
            result = reply["result"]
        else:
            result = synthetic_result(
                task.kata,
                task.path,
                reply.get("kind", ""),
                reply.get("message", ""),
                lang,
                kata_by_id[task.kata].required_tiers,
            ).to_dict()
        _apply(entry, result, reply.get("seconds", 0.0), manifest, penalty)
        entry.fix = reply.get("fix")
        if reply.get("ok") or reply.get("kind") not in _NOT_THE_SUBMISSION:
            journal.append(
                {
                    **({"fix": entry.fix} if entry.fix is not None else {}),
                    "student": task.student,
                    "kata": task.kata,
                    "sha256": task.sha256,
                    "kata_hash": kata_by_id[task.kata].hash,
                    "config": config,
                    **({"variant": task.variant} if task.variant else {}),
                    "seconds": entry.seconds,
                    "result": result,
                    "ts": time.time(),
                }
            )
        else:
            warnings.append(
                f"{task.student}/{task.kata}: {clip(str(reply.get('message', '')), 300)}"
            )
        counts["done"] += 1
        counts["failed"] += entry.status != PASS
        if progress:
            progress({**counts, "last": f"{task.student}/{task.kata}", "status": entry.status})

    if progress:
        progress({**counts, "last": None, "status": None})
    watchdog = 2 * (limits[0] + limits[1]) + 60
    runner: Callable[..., Any] = run_pool
    if opts.dask:
        from functools import partial

        from attnkata.checker.sets.cluster import run_dask

        # Same tasks, replies and journal; only where the workers run differs.
        runner = partial(
            run_dask, address=opts.dask, kata_hashes={k.id: k.hash for k in manifest.katas}
        )
    try:
        runner(
            tasks,
            jobs=jobs,
            limits=limits,
            lang=lang,
            log_path=out / "workers.log",
            watchdog=watchdog,
            on_reply=on_reply,
            tick=(lambda: progress(dict(counts, last=None, status=None)))
            if progress
            else (lambda: None),
            kata_ids=manifest.kata_ids,
            rules=rules,
        )
    finally:
        journal.close()
    stats = {
        **counts,
        "graded": counts["done"],
        "seconds": round(time.monotonic() - t0, 3),
        "jobs": jobs,
        "dask": opts.dask,
        "limits": {"call_timeout": limits[0], "timeout": limits[1], "memory_mb": limits[2]},
        "deadline": deadline_text,
        "late_penalty": penalty,
    }
    return ClassResults(
        manifest=manifest,
        bundle=bundle,
        submissions=submissions,
        out=out,
        students=students,
        entries=entries,
        lang=lang,
        warnings=warnings,
        stats=stats,
        graded_at=datetime.now().astimezone().isoformat(timespec="seconds"),
    )


def _apply(
    entry: Entry, result: dict[str, Any], seconds: float, manifest: Manifest, penalty: float
) -> None:
    entry.result = result
    entry.status = result.get("status", ERROR)
    entry.seconds = float(seconds or 0.0)
    raw = score(
        result.get("tests", []), manifest.grading.tier_weights, entry.points
    ) * policy_cost.factor(result)
    entry.score = round(raw * (1 - penalty) if entry.late else raw, 2)
    note = policy_cost.note(result, str(result.get("lang") or "en"))
    if note and note not in entry.notes:
        entry.notes.append(note)
