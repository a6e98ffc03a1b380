"""Practice commands: list, show, start, check, watch, hint, solution, history, stats, demo.

Commands that do not grade never import torch (checker.runner is imported lazily)."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from attnkata.checker import catalog, workspace
from attnkata.checker.errors import UsageError
from attnkata.checker.messages import msg
from attnkata.checker.store import History
from attnkata.cli.console import err, out, print_json, write_json_line
from attnkata.cli.options import (
    FileArg,
    JsonOption,
    KataArg,
    LangOption,
    RecordOption,
    SeedOption,
    resolve_lang,
)

TestsOption = Annotated[
    bool,
    typer.Option(
        "--tests",
        help="List every test (by default the failing tests a diagnosis explains are folded into one line under it).",
    ),
]


def _fmt_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.0f}d"


def _plans(h: History) -> tuple[dict, datetime]:
    """Every kata's practice plan (checker/schedule.py) from the history, and now."""
    from attnkata.checker import schedule

    return schedule.cached_plan(h, catalog.summaries()), datetime.now(UTC)


def _when(due: datetime | None, now: datetime) -> str:
    if due is None:
        return "-"
    if due <= now:
        return "now"
    return "in " + _fmt_seconds((due - now).total_seconds())


def kata_rows(lang: str) -> list[dict]:
    """`kata list`'s rows (also the web page's list): id, title, difficulty, minutes, status,
    best time to pass, due."""
    katas = catalog.summaries()
    with History() as h:
        stats = h.stats()
        plans, now = _plans(h)
    rows = []
    for k in katas.values():
        s = stats.get(k.id)
        rows.append(
            {
                "id": k.id,
                "title": k.title.get(lang),
                "difficulty": k.difficulty,
                "minutes": k.minutes,
                "status": s.status if s else "not started",
                "best_time": s.time_to_first_pass if s else None,
                "due": plans[k.id].is_due(now),
                "requires": list(k.requires),
                "missing": catalog.missing_extras(k),
            }
        )
    return rows


def list_katas(json_out: JsonOption = False, lang: LangOption = None) -> None:
    """The katas with difficulty, minutes and your status (due: time to review it)."""
    lang = resolve_lang(lang)
    katas = catalog.summaries()
    rows = kata_rows(lang)
    if json_out:
        print_json(rows)
        return
    from rich import box
    from rich.table import Table  # here, not at the top: `show`, `hint` and `next` draw no table
    from rich.text import Text

    table = Table(title="attnkata", box=box.SIMPLE_HEAD)
    # Ids are what the user types next: never cut. The title wraps (CJK folds by character),
    # with the level under it, so 80 columns are enough for every id.
    table.add_column("id", no_wrap=True, min_width=max(len(k) for k in katas))
    table.add_column("title", ratio=1, overflow="fold")
    table.add_column("status", no_wrap=True)
    style = {"passed": "green", "attempted": "yellow", "started": "yellow"}
    for r in rows:  # Text objects, not markup: parsing markup for every cell costs ~15 ms
        status = Text(r["status"], style=style.get(r["status"], "dim"))
        if r["best_time"] is not None:
            status.append(f" ({_fmt_seconds(r['best_time'])})", style="dim")
        if r["due"]:
            status.append("\ndue", style="bold magenta")
        if r["missing"]:
            extras = ",".join(r["missing"])
            status.append("\n" + msg("extra.list_status", lang, extras=extras), style="yellow")
        title = Text(r["title"])
        title.append(f"\n{r['difficulty']} · {r['minutes']} min", style="dim")
        table.add_row(r["id"], title, status)
    out.print(table)


def next_kata(json_out: JsonOption = False, lang: LangOption = None) -> None:
    """The kata to practise next, and why (spaced repetition over your katas and mistakes)."""
    from attnkata.checker import schedule

    lang = resolve_lang(lang)
    with History() as h:
        plans, now = _plans(h)
    installed = {k: s for k, s in catalog.summaries().items() if not catalog.missing_extras(s)}
    rec = schedule.recommend(installed, plans, now)
    if rec is None:
        raise UsageError("no katas installed", "reinstall attnkata")
    if json_out:
        print_json(
            {
                "kata": rec.kata,
                "reason": rec.reason.get(lang, rec.reason["en"]),
                "plan": rec.plan.to_dict(),
                "due": [
                    p.kata
                    for p in sorted(plans.values(), key=lambda p: p.due or now)
                    if p.is_due(now)
                ],
            }
        )
        return
    title = catalog.summaries()[rec.kata].title.get(lang)
    out.print(f"[bold]{rec.kata}[/] — {title}")
    out.print(rec.reason.get(lang, rec.reason["en"]))
    out.print(f"[dim]kata start {rec.kata}[/]")


def show(kata: KataArg, lang: LangOption = None) -> None:
    """Print the statement of KATA."""
    from attnkata.cli.markdown import print_statement

    lang = resolve_lang(lang)
    kata_id, text = catalog.statement(kata, lang)
    k = _practised(kata_id)
    if k.variant:  # the workspace file was started in a variant: its statement
        text = k.statement(lang)
    print_statement(out, kata_id, lang, text)


def _markdown(text: str):  # noqa: ANN202 - rich.markdown is imported only where it is shown
    from attnkata.cli.markdown import render

    return render(text)


def start(
    kata: KataArg,
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            help="Folder for the file (default: $KATA_WORKSPACE/<kata> or ~/attnkata/<kata>).",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace an existing file (a timestamped backup is kept)."),
    ] = False,
    lang: LangOption = None,
    variant: Annotated[
        str | None,
        typer.Option(
            "--variant",
            help="Practise under other conventions: random, standard, or e.g. "
            "layout=blhd,mask=masked (`kata check` then grades in them).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Copy the skeleton of KATA into your workspace and show the statement."""
    from attnkata.checker import api, variants

    lang = resolve_lang(lang)
    k = catalog.get_kata(kata)
    if variant is not None:
        k = k.with_variant(variants.parse_spec(k.variants, variant, k.id))
    target = workspace.solution_path(k, directory)
    kept = api.started_variant(k.standard, target) if target.exists() and not force else None
    if kept is not None and variant is not None and kept.variant != k.variant:
        err.print(msg("variant.kept_file", lang, path=target), style="yellow", highlight=False)
    k = kept or k  # a file left as it is keeps the variant it was started in
    res = workspace.start(k, directory, force)
    with History() as h:
        h.record_event(
            k.id,
            "start",
            {"file": str(res.path), **({"variant": k.variant_values} if k.variant else {})},
        )
    out.print(_markdown(k.statement(lang)))
    if k.variant:
        out.print(msg("variant.started", lang, name=k.variant_key, kata=k.id))
    if res.backup:
        out.print(f"[yellow]Kept your previous file as {res.backup}[/]")
    if res.created:
        out.print(f"[green]Your file:[/] {res.path}")
    else:
        out.print(
            f"[yellow]{res.path} already exists; left it as it is[/] (use --force to start over; a backup is kept)"
        )
    out.print(f"Check it with: kata check {k.id}" + ("" if directory is None else f" {res.path}"))


def _resolve_file(k: catalog.Kata, file: Path | None) -> Path:
    return file if file is not None else workspace.solution_path(k)


def grade(
    k: catalog.Kata,
    path: Path,
    timeout: float | None,
    lang: str,
    record: bool | None = None,  # noqa: ANN201
    *,
    spinner: bool = False,
    cancel: threading.Event | None = None,
    again: bool = False,
    seed: int | None = None,
):
    """Grade through the checker; on a terminal (`spinner`) show the current test and the time
    used against the limit while it runs."""
    from attnkata.checker import api

    if not spinner:
        return api.grade(
            k,
            path,
            timeout=timeout,
            lang=lang,
            record=record,
            cancel=cancel,
            again=again,
            seed=seed,
        )
    from attnkata.cli.progress import CheckProgress

    limits = api.limits_for(timeout, k)
    with CheckProgress(err, limits.call_timeout, limits.total_timeout, lang) as progress:
        return api.grade(
            k,
            path,
            timeout=timeout,
            lang=lang,
            record=record,
            cancel=cancel,
            progress=progress.update,
            again=again,
            seed=seed,
        )


def check(
    kata: KataArg,
    file: FileArg = None,
    json_out: JsonOption = False,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            help="Seconds per call of your code (total: 6x; default: from the kata's reference).",
        ),
    ] = None,
    record: RecordOption = None,
    tests: TestsOption = False,
    lang: LangOption = None,
    seed: SeedOption = None,
) -> None:
    """Grade FILE against KATA. Exit 0 when every required test passes, 1 otherwise (130 on Ctrl-C)."""
    lang = resolve_lang(lang)
    k = catalog.get_kata(kata)
    path = _resolve_file(k, file)
    result = grade(
        k, path, timeout, lang, record, spinner=not json_out and err.is_terminal, seed=seed
    )
    if json_out:
        print_json(result.to_dict())
    else:
        from attnkata.cli.render import render_result

        render_result(out, result, result.graded_source, all_tests=tests)
    raise typer.Exit(0 if result.passed else 1)


def watch(
    kata: KataArg,
    file: FileArg = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json", help="One JSON result per check, one per line (as `kata check --json`)."
        ),
    ] = False,
    timeout: Annotated[
        float | None, typer.Option("--timeout", help="Seconds per call of your code.")
    ] = None,
    record: RecordOption = None,
    tests: TestsOption = False,
    lang: LangOption = None,
    seed: SeedOption = None,
) -> None:
    """Re-check FILE every time it is saved (Ctrl-C to stop). A save during a check starts it over."""
    from attnkata.checker.errors import CheckCancelled
    from attnkata.checker.static import require_file
    from attnkata.cli.watching import FileWatcher

    lang = resolve_lang(lang)
    k = catalog.get_kata(kata)
    path = _resolve_file(k, file).resolve()
    require_file(k, path, lang)  # before watching its folder
    # torch, pytest, the grader and the references stay loaded in this process between checks.
    with FileWatcher(path) as watcher:
        while True:
            watcher.changed.clear()
            try:
                result = grade(
                    k,
                    path,
                    timeout,
                    lang,
                    record,
                    spinner=not json_out and err.is_terminal,
                    cancel=watcher.changed,
                    again=True,
                    seed=seed,
                )
            except CheckCancelled:
                continue  # saved again during the check: start over on the new version
            if json_out:
                # One line per check, cleaned as `kata check --json` is (candidate text may hold
                # DEL or C1 controls that a terminal obeys).
                write_json_line(json.dumps(result.to_dict(), ensure_ascii=False))
            else:
                from attnkata.cli.render import render_result

                out.clear()
                render_result(out, result, result.graded_source, all_tests=tests)
                out.print(f"[dim]watching {path} — save to re-check, Ctrl-C to stop[/]")
            watcher.wait()


def _last_diagnoses(h: History, kata: str) -> list[str]:
    rows = h.attempts(kata, limit=1)
    return json.loads(rows[0]["diagnoses"]) if rows else []


def hint(
    kata: KataArg,
    level: Annotated[
        int | None,
        typer.Option(
            "--level",
            help="Show hint number N: rung N (1-3) of the ladder for your diagnosed mistake, else the kata's hint N.",
        ),
    ] = None,
    lang: LangOption = None,
) -> None:
    """Show the next hint for KATA. For a mistake your last check diagnosed, a ladder of three
    rungs, one per call: what your code breaks, where, then the fix verified on your code.
    Without one, the kata's own hints in order."""
    lang = resolve_lang(lang)
    k = catalog.get_kata(kata)
    shown = take_hint(k, level, lang)
    out.print(f"[bold]{shown.label}[/] ({k.id})")
    out.print(shown.text, markup=False, highlight=False)
    if shown.diffs:
        from rich.syntax import Syntax

        for diff in shown.diffs:
            out.print(Syntax(diff.rstrip("\n"), "diff", theme="ansi_dark", word_wrap=True))
    if shown.after:
        out.print(f"[dim]{shown.after}[/]")


@dataclass(frozen=True)
class ShownHint:
    """A hint as `kata hint` and the web page show it."""

    label: str  # "Hint 2/4", "Rung 1 of 3 for gqa-...: what it breaks"
    text: str
    diffs: tuple[str, ...] = ()  # the verified fixes (the ladder's third rung)
    after: str = ""  # what comes next


def next_hint(k: catalog.Kata, level: int | None, lang: str) -> tuple[str, str]:
    """The hint `kata hint` shows (and records), as (label, Markdown text) for the web page."""
    shown = take_hint(k, level, lang)
    text = shown.text + "".join(f"\n\n```diff\n{d.rstrip()}\n```" for d in shown.diffs)
    return shown.label, text


def take_hint(k: catalog.Kata, level: int | None, lang: str) -> ShownHint:
    """The next hint, recorded as shown: a rung of the ladder for the last diagnosed mistake
    first; `level` asks for a rung (or, without a diagnosis, a kata hint) by number."""
    from attnkata.checker import ladder
    from attnkata.checker.mock.session import ACTIVE, blocking_session

    if (mock := blocking_session(k.id)) is not None and mock.state == ACTIVE:
        # In a mock interview hints cost points; they are given (and charged) by the session.
        raise UsageError(
            f"{k.id} is part of the running mock interview {mock.id}",
            f"use `kata mock hint {k.id}` (hints cost points there)",
        )
    hints = k.progressive_hints
    with History() as h:
        diagnosed = ladder.ladder_mistakes(_last_diagnoses(h, k.id))
        step: tuple[str, int] | None = None
        if diagnosed and level is not None:
            if not 1 <= level <= ladder.RUNGS:
                raise UsageError(msg("ladder.level_range", lang, n=ladder.RUNGS))
            step = (diagnosed[0], level)
        elif diagnosed:
            step = ladder.next_rung(h, k.id, diagnosed)
        checked = ladder.last_check(h, k.id) if step is not None and step[1] > 1 else None
        if step is None:
            if level is not None and not 1 <= level <= len(hints):
                raise UsageError(f"--level must be between 1 and {len(hints)}")
            shown = {json.loads(e["detail"]).get("id") for e in h.events(k.id, "hint")}
            n = level or min(len([s for s in shown if str(s).startswith("level:")]) + 1, len(hints))
            h.record_event(k.id, "hint", {"id": f"level:{n}"})
            return ShownHint(
                f"{msg('hint.title', lang)} {n}/{len(hints)}", hints[n - 1].text.get(lang)
            )
    mid, n = step
    if checked is None and n > 1:
        checked = _check_now(k, lang)
    r = ladder.rung(k, mid, n, lang, checked)
    with History() as h:
        h.record_event(k.id, "hint", {"id": f"rung:{mid}:{n}"})
    after = (
        msg("ladder.rungs_left", lang, kata=k.id, n=n + 1)
        if n < ladder.RUNGS
        else msg("ladder.last", lang, kata=k.id)
    )
    return ShownHint(
        f"{msg('ladder.title', lang, n=n, id=mid)} · {msg(f'ladder.rung.{n}', lang)}",
        r.text,
        tuple(f.diff for f in r.fixes or ()),
        after,
    )


def _check_now(k: catalog.Kata, lang: str):  # noqa: ANN202 - a (Result, source) pair or None
    """No recorded check to read the diagnosis' lines from: grade the workspace file now."""
    from attnkata.checker import api

    path = workspace.solution_path(k)
    if not path.is_file():
        return None
    result = api.grade(k, path, lang=lang, record=False)
    return result, result.graded_source


def solution(
    kata: KataArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Show it without asking.")] = False,
) -> None:
    """Show the reference solution of KATA (asks first unless you already passed it)."""

    def confirm() -> bool:
        if not sys.stdin.isatty():
            raise UsageError(
                "you have not passed this kata yet", "pass --yes to see the solution anyway"
            )
        if not typer.confirm(
            "You have not passed this kata yet. Show the reference solution?", default=False
        ):
            raise typer.Exit(1)
        return True

    code = reveal_solution(_practised(catalog.resolve_id(kata)), lambda: yes or confirm())
    from rich.syntax import Syntax  # pygments: only where code is shown

    # Long lines wrap (with the line number kept) instead of being cut at the terminal's edge.
    out.print(Syntax(code, "python", line_numbers=True, theme="ansi_dark", word_wrap=True))


def reveal_solution(k: catalog.Kata, confirmed: Callable[[], bool]) -> str:
    """The reference solution, as `kata solution` shows it (and records): refused during a
    mock interview of that kata; before a pass, only when `confirmed()` says yes (else a
    UsageError)."""
    from attnkata.checker.mock.session import blocking_session, refusal
    from attnkata.checker.skeleton import reference_path, strip_markers

    if (mock := blocking_session(k.id)) is not None:
        raise UsageError(*refusal(mock, k.id))
    with History() as h:
        passed = any(r["status"] == "pass" for r in h.attempts(k.id, limit=1000))
        if not (passed or confirmed()):
            raise UsageError(
                "you have not passed this kata yet", "confirm to see the solution anyway"
            )
        h.record_event(k.id, "solution", {"after_pass": passed})
    if k.variant:  # the variant's reference: the standard one, converted at its boundary
        from attnkata.checker.variant_text import reference_source

        return strip_markers(reference_source(k))
    return strip_markers(reference_path(k.id).read_text(encoding="utf-8"))


def _practised(kata_id: str) -> catalog.Kata:
    """The kata as the workspace file was started (`kata start --variant`), else the standard."""
    from attnkata.checker import api

    with History() as h:  # cheap: the kata.toml is read only for a file started in a variant
        started = any('"variant"' in e["detail"] for e in h.events(kata_id, "start"))
    k = catalog.get_kata(kata_id)
    return api.started_variant(k, workspace.solution_path(k)) if started else k


def history(
    kata: Annotated[str | None, typer.Argument(help="Only this kata.", show_default=False)] = None,
    limit: Annotated[int, typer.Option("--limit", help="How many attempts.")] = 20,
    json_out: JsonOption = False,
) -> None:
    """Your recent attempts."""
    if limit < 1:
        raise UsageError("--limit must be at least 1")
    if kata is not None:
        kata = catalog.get_kata(kata).id
    from attnkata.checker.ladder import rungs_before

    with History() as h:
        rows = [dict(r) for r in h.attempts(kata, limit)]
        speeds = h.best_speeds()
        rungs = rungs_before(h, kata)
    for r in rows:
        r["diagnoses"] = json.loads(r["diagnoses"])
    # The hint ladder's rungs taken since the kata's previous attempt (shown before this one).
    everything = sorted(rows, key=lambda r: r["ts"])
    previous: dict[str, float] = {}
    for r in everything:
        since = previous.get(r["kata"], float("-inf"))
        r["rungs"] = sum(1 for ts, k in rungs if k == r["kata"] and since < ts <= r["ts"])
        previous[r["kata"]] = r["ts"]
    if json_out:
        print_json(rows)
        return
    if not rows:
        out.print("No attempts yet. Start with `kata start sdpa`.")
        return
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(title="history", box=box.SIMPLE_HEAD)
    # 80 columns are enough and no id is ever cut: the mistakes go on the lines under their
    # attempt, in the kata column (ids are up to ~32 characters), not in a column of their own.
    for col in ("when", "kata · mistakes", "status", "tests"):
        table.add_column(col, no_wrap=True)
    year = time.localtime().tm_year
    for r in rows:
        at = time.localtime(r["ts"])
        when = time.strftime("%m-%d %H:%M" if at.tm_year == year else "%Y-%m-%d", at)
        status = Text(r["status"], style="green" if r["status"] == "pass" else "red")
        if r["mode"] != "practice":
            status.append(f" ({r['mode']})", style="dim")
        if r["rungs"]:  # the hint ladder's rungs taken before this attempt
            status.append(f"\n{r['rungs']} rung(s)", style="dim")
        table.add_row(when, r["kata"], status, f"{r['passed']}/{r['total']}")
        for mid in r["diagnoses"]:
            table.add_row("", Text(f"  {mid}", style="yellow"), "", "")
    out.print(table)
    shown = {k: v for k, v in speeds.items() if kata is None or k == kata}
    if shown:
        items = "; ".join(
            f"{k} {v['speed_ms']:.3f} ms ({v.get('speed_speedup', 0):.2f}x, "
            f"{v.get('speed_tflops', 0):.1f} TFLOP/s)"
            for k, v in sorted(shown.items())
        )
        out.print(Text(msg("speed.best", resolve_lang(None), items=items), style="dim"))


def stats(json_out: JsonOption = False) -> None:
    """Attempts, passes, time to first pass and hints per kata; your most common mistakes."""
    with History() as h:
        per_kata = h.stats()
        mistakes = h.mistake_counts()
        plans, now = _plans(h)
    if json_out:
        print_json(
            {
                "katas": {
                    k: s._asdict() | {"status": s.status, "due": _iso(plans.get(k))}
                    for k, s in per_kata.items()
                },
                "mistakes": mistakes,
                "due": [
                    p.kata
                    for p in sorted(plans.values(), key=lambda p: p.due or now)
                    if p.is_due(now)
                ],
            }
        )
        return
    if not per_kata:
        out.print("No practice recorded yet. Start with `kata start sdpa`.")
        return
    from rich import box
    from rich.table import Table

    table = Table(title="stats", box=box.SIMPLE_HEAD)
    table.add_column("kata", no_wrap=True)
    for col in ("status", "passes", "to pass", "hints", "review"):
        table.add_column(col, no_wrap=True)
    for s in per_kata.values():
        p = plans.get(s.kata)
        due = _when(p.due if p else None, now)
        table.add_row(
            s.kata,
            s.status,
            f"{s.passes}/{s.attempts}",
            _fmt_seconds(s.time_to_first_pass),
            str(s.hints),
            f"[bold magenta]{due}[/]" if due == "now" else due,
        )
    out.print(table)
    if mistakes:
        mt = Table(title="your most common mistakes")
        mt.add_column("mistake")
        mt.add_column("times", justify="right")
        for mid, n in list(mistakes.items())[:10]:
            mt.add_row(mid, str(n))
        out.print(mt)


def _iso(plan: object) -> str | None:
    due = getattr(plan, "due", None)
    return due.isoformat() if due else None


def demo(lang: LangOption = None, json_out: JsonOption = False) -> None:
    """Grade a bundled wrong solution of `sdpa` to show what `kata check` reports."""
    lang = resolve_lang(lang)
    k = catalog.get_kata("sdpa")
    path = k.folder / "examples" / "wrong.py"
    result = grade(k, path, None, lang, record=False)
    if json_out:
        print_json(result.to_dict())
        return
    from attnkata.cli.render import render_result

    err.print(f"[dim]Grading the bundled example {path}[/]")
    render_result(out, result, path.read_text(encoding="utf-8"))


def register(app: typer.Typer) -> None:
    app.command("list")(list_katas)
    app.command("next")(next_kata)
    for fn in (show, start, check, watch, hint, solution, history, stats, demo):
        app.command()(fn)
