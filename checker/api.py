"""The Python API behind `kata check`, the notebook magic and `attnkata.check(...)`: grade a
file or a piece of source, record the attempt in the history, return the typed `Result`."""

from __future__ import annotations

import math
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from attnkata.checker import catalog
from attnkata.checker.errors import UsageError
from attnkata.checker.messages import msg

if TYPE_CHECKING:  # torch stays out of the import of this module
    from attnkata.checker.models import FixReport, Result
    from attnkata.checker.proxy import Limits


def limits_for(timeout: float | None, kata: catalog.Kata | None = None) -> Limits:
    """`--timeout` seconds per call of the candidate's code, 6x that in total; without it, the
    kata's default from its reference's own time (checker/timing.py)."""
    from attnkata.checker.proxy import Limits
    from attnkata.checker.timing import CALLS_IN_TOTAL, default_call_timeout

    if timeout is None:
        if kata is None:
            return Limits()
        timeout = default_call_timeout(kata.id)
    elif not math.isfinite(timeout) or timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    return Limits(call_timeout=timeout, total_timeout=round(timeout * CALLS_IN_TOTAL, 3))


def is_own_file(kata: catalog.Kata, path: Path) -> bool:
    """Is `path` the candidate's practice file for `kata`: the workspace file, or the file a
    `kata start --dir` made? Only those count as the candidate's own attempts by default; a
    classmate's file or an example graded out of curiosity must not move `kata next`."""
    import json

    from attnkata.checker import workspace
    from attnkata.checker.store import History

    target = path.resolve()
    if target == workspace.solution_path(kata).resolve():
        return True
    with History() as h:
        started = [json.loads(e["detail"]).get("file") for e in h.events(kata.id, "start")]
    return any(
        isinstance(f, str) and f != "notebook" and Path(f).resolve() == target for f in started
    )


def started_variant(kata: catalog.Kata, path: Path) -> catalog.Kata:
    """`kata` in the variant its practice file `path` was started with (`kata start KATA
    --variant ...`, kept in the history database); `kata` itself when it already names a
    variant, or when the file was started in the standard kata or not by `kata start`."""
    import json

    from attnkata.checker.store import History

    if kata.variant or not kata.variants:
        return kata
    target = Path(path).resolve()
    with History() as h:
        started = [json.loads(e["detail"]) for e in h.events(kata.id, "start")]
    for detail in reversed(started):
        file = detail.get("file")
        if isinstance(file, str) and file != "notebook" and Path(file).resolve() == target:
            variant = detail.get("variant")
            return kata.with_variant(variant if isinstance(variant, dict) else None)
    return kata


def grade(
    kata: catalog.Kata,
    path: Path,
    *,
    timeout: float | None = None,
    lang: str = "en",
    record: bool | None = None,
    mode: str = "practice",
    cancel: threading.Event | None = None,
    progress: Callable[[str], None] | None = None,
    again: bool = False,
    seed: int | None = None,
) -> Result:
    """Grade the file at `path` and add the attempt to the history when `record` says so
    (None: when it is the candidate's own practice file, `is_own_file`).

    `seed`: the graders' inputs of an earlier check (its result's `seed`); None draws new ones.

    `again`: this process will grade again soon (`kata watch`): the next check's sandboxed
    process is started as soon as this one ends.
    A cancelled (CheckCancelled) or interrupted (KeyboardInterrupt) check records nothing.

    A practice file started in a variant (`kata start --variant`) is graded in it."""
    from attnkata.checker.static import read_source, require_file

    kata = started_variant(kata, path)
    # First thing, before the sandbox and ~1-2 s of imports: what is graded is the file as it
    # was when the check was asked for, not a save made while torch loads.
    catalog.require_extras(kata, lang)
    require_file(kata, path, lang)
    preread = read_source(path, lang)
    from attnkata.checker.sandbox import host

    if again:
        host.keep_spares()
    # The sandbox imports torch (and what the grader will need) while this process does the same.
    host.prestart(warm=host.warm_ups_for(kata.grader_path))
    from attnkata.checker.runner import check as run_check

    if record is None:
        record = is_own_file(kata, path)
    t0 = time.time()
    result = run_check(
        kata,
        path,
        limits=limits_for(timeout, kata),
        lang=lang,
        cancel=cancel,
        progress=progress,
        keep_session=again,
        preread=preread,
        seed=seed,
    )
    if record:
        from attnkata.checker.store import History

        counts = result.tier_counts()
        with History() as h:
            h.record_attempt(
                kata.id,
                result.status,
                sum(p for p, _ in counts.values()),
                sum(t for _, t in counts.values()),
                time.time() - t0,
                str(path),
                # (the untouched skeleton is where practice starts, not a mistake)
                [d.id for d in result.diagnostics if d.is_error and d.id != "untouched-skeleton"],
                mode=mode,
            )
            if result.timings.get("speed_ms"):  # the GPU `speed` tier ran: its best time is kept
                h.record_speed(kata.id, result.timings)
            from attnkata.checker.ladder import remember

            remember(h, result, result.graded_source)  # the hint ladder's lines and evidence
    return result


def check(
    kata: str,
    source: str | None = None,
    path: str | Path | None = None,
    *,
    lang: str | None = None,
    timeout: float | None = None,
    record: bool | None = None,
    mode: str = "api",
    seed: int | None = None,
    variant: str | None = None,
) -> Result:
    """Grade `source` (a string) or the file at `path` as the solution of `kata`
    (`variant`: "layout=blhd,mask=masked"... to grade it in that variant's conventions).

    Same sandbox, limits and diagnosis as `kata check`. The attempt goes into the same history
    (with `mode`, e.g. "notebook") when `record` is true; None records the candidate's own
    practice file (`is_own_file`) and never a piece of source (a notebook cell counts only
    when marked, `%%kata KATA --record`). Returns the `Result`, which notebooks display as HTML."""
    k = catalog.get_kata(kata)
    if variant is not None:
        from attnkata.checker import variants

        k = k.with_variant(variants.parse_spec(k.variants, variant, k.id))
    lang = lang if lang in ("en", "zh") else "en"
    if (source is None) == (path is None):
        raise UsageError("give either source=... or path=...")
    if path is not None:
        return grade(
            k, Path(path), timeout=timeout, lang=lang, record=record, mode=mode, seed=seed
        )  # source attached
    folder = Path(tempfile.mkdtemp(prefix="attnkata-cell-"))
    try:
        file = folder / k.solution_file  # so messages name the file the statement asks for
        file.write_text(source, encoding="utf-8")
        result = grade(
            k, file, timeout=timeout, lang=lang, record=bool(record), mode=mode, seed=seed
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    result.attach_source(source)
    return result


def katas() -> list[catalog.Kata]:
    """Every kata, in catalogue order."""
    return list(catalog.all_katas().values())


class Statement(str):
    """A kata's statement; notebooks render it as Markdown."""

    def _repr_markdown_(self) -> str:
        return str(self)


def show(kata: str, lang: str | None = None) -> Statement:
    return Statement(catalog.get_kata(kata).statement(lang if lang in ("en", "zh") else "en"))


def fix(
    kata: catalog.Kata,
    path: Path,
    *,
    timeout: float | None = None,
    lang: str = "en",
    debug: list[str] | None = None,
) -> FixReport:
    """`kata fix`: grade the file at `path` (recording nothing), then search a verified repair
    for each essential diagnosis (checker/fix/search.py). The report carries the check's
    result and the repaired source (`FixReport.result`, `.fixed_source`)."""
    from attnkata.checker.models import FixReport

    if started_variant(kata, path).variant:
        # The repair templates are written in the standard kata's conventions.
        raise UsageError(msg("fix.variant", lang, kata=kata.id), msg("fix.variant_hint", lang))
    t0 = time.perf_counter()
    # The check, then every candidate repair: one pytest session and warm sandboxed processes.
    result = grade(kata, path, timeout=timeout, lang=lang, record=False, again=True)
    t_check = time.perf_counter() - t0
    source = result.graded_source
    if result.passed or not result.tests or source is None:
        report = FixReport(kata=kata.id, solution=str(path), status=result.status, lang=lang)
        report.attach(result, None)
    else:
        from attnkata.checker.fix.search import repair

        report, fixed = repair(
            kata, path, source, result, limits=limits_for(timeout, kata), lang=lang, debug=debug
        )
        report.attach(result, fixed)
    report.timings.update(check=round(t_check, 3), total=round(time.perf_counter() - t0, 3))
    return report


def fix_source(
    kata: str, source: str, *, lang: str | None = None, timeout: float | None = None
) -> FixReport:
    """`fix` for a piece of source (a notebook cell): graded as the kata's solution file."""
    k = catalog.get_kata(kata)
    lang = lang if lang in ("en", "zh") else "en"
    folder = Path(tempfile.mkdtemp(prefix="attnkata-cell-"))
    try:
        file = folder / k.solution_file
        file.write_text(source, encoding="utf-8")
        report = fix(k, file, timeout=timeout, lang=lang)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report.solution = k.solution_file
    return report
