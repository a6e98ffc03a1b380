"""`kata mock ...`: the timed mock interview. A thin typer + rich layer over
`attnkata.checker.mock`; only `check`, `submit` and the end of the screen import torch."""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Group, RenderableType
from rich.markdown import Markdown
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from attnkata.checker.errors import UsageError
from attnkata.checker.messages import msg
from attnkata.checker.mock import followups, grading, picker, scorecard
from attnkata.checker.mock import session as sess
from attnkata.checker.mock.live import DEADLINE, ELSEWHERE, QUIT, clock_text
from attnkata.checker.mock.session import Session
from attnkata.checker.textsafe import clean
from attnkata.cli.console import err, out, print_json, write_text
from attnkata.cli.options import JsonOption, LangOption, resolve_lang

if TYPE_CHECKING:
    from attnkata.checker.mock.live import Controller

mock_app = typer.Typer(
    help="Timed mock interview: problems chosen for you, a countdown, no reference, follow-up "
    "questions and a scorecard.\n\n"
    "\b\n"
    "A session:\n"
    "  kata mock start --minutes 30   pick problems, open the countdown screen\n"
    "    (edit the files it shows; saving re-checks; keys: c check, h hint, s submit, q leave)\n"
    "  kata mock status / resume      time left / back to the screen after closing the terminal\n"
    "  kata mock submit               end early (at the deadline it submits by itself)\n"
    "  then answer the follow-up questions; the scorecard is saved in the session folder\n"
    "  kata mock history              past sessions, scores and trend\n\n"
    "Without a terminal: start --no-interactive --json, check, submit --answers FILE --json.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

DEFAULT_MINUTES = 45
SessionOption = Annotated[
    str | None,
    typer.Option(
        "--session",
        help="Session id or a unique prefix (default: the running one).",
        show_default=False,
    ),
]
InteractiveOption = Annotated[
    bool | None,
    typer.Option(
        "--interactive/--no-interactive",
        help="Use the full-screen countdown and ask questions in the terminal (default: when run in a terminal).",
    ),
]
AnswersOption = Annotated[
    Path | None,
    typer.Option(
        "--answers",
        help='Follow-up answers from a JSON or TOML file: {question_id: answer}. Choice: a letter; order: letters like "c a b d"; numeric: a number; open: a self-rating 0-2 or {answer, rating}.',
        show_default=False,
    ),
]

STATUS_STYLE = {
    "pass": "green",
    "fail": "red",
    "error": "red",
    "timeout": "yellow",
    "unchecked": "dim",
}
VERDICT_STYLE = {
    "strong hire": "bold green",
    "hire": "green",
    "lean no": "yellow",
    "no hire": "red",
}


def _interactive(flag: bool | None) -> bool:
    tty = sys.stdin.isatty() and sys.stdout.isatty()
    return tty if flag is None else (flag and tty)


def _when(ts: float, fmt: str = "%H:%M:%S") -> str:
    return time.strftime(fmt, time.localtime(ts))


# -- the live screen ---------------------------------------------------------------------
def screen(ctl: Controller) -> RenderableType:
    s: Session = ctl.s
    lang = s.lang
    left = s.remaining()
    colour = "green" if left > 600 else "yellow" if left > 120 else "bold red"
    head = Text.assemble(
        (f"{msg('mock.cli.title', lang)}   ", "bold"),
        (f"{msg('mock.cli.time_left', lang)} ", "bold"),
        (clock_text(left), f"bold {colour}"),
        (f"   {msg('mock.cli.deadline', lang)} {_when(s.deadline, '%H:%M')}", "dim"),
    )
    table = Table(box=None, pad_edge=False, padding=(0, 1))
    for col in (
        "",
        "#",
        msg("mock.cli.problem", lang),
        msg("mock.cli.file", lang),
        msg("mock.cli.status", lang),
        msg("mock.cli.tests", lang),
        msg("mock.cli.hints", lang),
        msg("mock.cli.first_pass", lang),
    ):
        table.add_column(col)
    for i, p in enumerate(s.problems):
        info = sess.problem_summary(s, p)
        status = info["status"]
        if ctl.checking == p.kata:
            status = "checking…"
        tests = "-" if info["total"] is None else f"{info['passed']}/{info['total']}"
        table.add_row(
            "▶" if i == ctl.selected else "",
            str(i + 1),
            p.kata,
            p.file,
            Text(
                status if status != "unchecked" else msg("mock.cli.unchecked", lang),
                style=STATUS_STYLE.get(info["status"], "dim"),
            ),
            tests,
            str(len(p.hints)),
            scorecard.fmt_duration(info["time_to_first_pass"]),
        )
    parts: list[RenderableType] = [head, Text(""), table, Text("")]
    parts.append(_detail(ctl))
    if ctl.message is not None:
        body = Text(ctl.message.body) if ctl.message.body else Text("")
        # The title goes inside, where it wraps: rich cuts a border title to one line.
        parts.append(
            Panel(
                Group(Text(ctl.message.title, style="bold"), body), border_style=ctl.message.style
            )
            if ctl.message.body
            else Text(ctl.message.title, style=ctl.message.style)
        )
    parts += [
        Text(""),
        Text(f"{msg('mock.cli.folder', lang)}: {s.folder}   ({s.id})", style="dim"),
        Text(msg("mock.cli.watching", lang), style="dim"),
        Text(msg("mock.cli.keys", lang), style="bold"),
    ]
    return Group(*parts)


def _detail(ctl: Controller) -> RenderableType:
    """The selected problem: statement file, why it was picked, and its last check."""
    s: Session = ctl.s
    lang = s.lang
    p = s.problems[ctl.selected]
    lines = Text()
    lines.append(f"{p.title[lang]}", style="bold")
    lines.append(
        f" ({msg('mock.cli.' + p.difficulty, lang)}, {msg('mock.cli.about', lang, n=p.minutes)})\n",
        style="dim",
    )
    lines.append(
        f"{msg('mock.cli.statement', lang)}: {p.statement}   {msg('mock.cli.why', lang)}: {p.reason[lang]}\n",
        style="dim",
    )
    last = p.last_check
    if last is not None:
        lines.append(f"{last['status'].upper()} ", style=STATUS_STYLE.get(last["status"], "red"))
        lines.append(scorecard.tiers_text(last["tiers"]) + f"  ({_when(last['t'])})\n")
        for mid in last["diagnoses"][:3]:
            lines.append(f"  • {last.get('titles', {}).get(mid) or mid}", style="yellow")
            lines.append(f"  {mid}\n", style="dim")
        result = ctl.results.get(p.kata)
        if result is not None:
            failed = [t for t in result.get("tests", []) if t["status"] not in ("pass", "skip")]
            shown: set[str] = set()
            for test in failed:
                first_line = test["message"].splitlines()[0] if test["message"] else ""
                if first_line in shown or len(shown) == 3:
                    continue  # one line per distinct failure: a crash repeats the same message
                shown.add(first_line)
                lines.append(f"  ✗ {test['id']}", style="red")
                lines.append(f"  {first_line[:140]}\n", style="default")
            if len(failed) > len(shown):
                lines.append(f"  … {len(failed)} failing\n", style="dim")
    return lines


def show_statement(path: Path, lang: str) -> None:
    """The statement in a pager (q returns to the countdown, which kept running)."""
    import pydoc

    text = path.read_text(encoding="utf-8") if path.is_file() else str(path)
    os.environ.setdefault("LESS", "-R")  # less shows the colours instead of escape codes
    with out.pager(styles=True):
        out.print(Markdown(text))
    cmd = (os.environ.get("MANPAGER") or os.environ.get("PAGER") or "").split()
    if pydoc.getpager() is pydoc.plainpager or (cmd and Path(cmd[0]).name in ("cat", "tee")):
        _read(
            msg("mock.cli.back", lang)
        )  # the pager did not wait: keep the text on screen until Enter


def run_screen(folder: Path) -> str:
    """The full-screen countdown until the candidate leaves, submits or time runs out."""
    from rich.live import Live

    from attnkata.checker.mock.live import Controller, Grader, Keys, Watcher

    s = sess.load(folder)
    grader = Grader(s.meta / "worker.log")
    grader.start()  # torch loads while the candidate reads the statement
    ctl = Controller(folder, grader)
    watcher = Watcher(folder, [s.file_path(p) for p in s.problems])
    watcher.start()
    try:
        with (
            Keys() as keys,
            Live(
                screen(ctl),
                console=out,
                screen=True,
                auto_refresh=False,
                redirect_stdout=False,
                redirect_stderr=False,
            ) as live,
        ):
            while ctl.ended is None:
                key = keys.read(0.25)
                if key is not None:
                    ctl.on_key(key)
                saved = watcher.drain()
                if saved:
                    ctl.on_saved(saved)
                ctl.tick()
                if ctl.view is not None:
                    live.stop()
                    with keys.paused():
                        show_statement(ctl.s.folder / ctl.view, ctl.s.lang)
                    ctl.view = None
                    live.start(refresh=True)
                live.update(screen(ctl), refresh=True)
    except KeyboardInterrupt:
        ctl.ended = QUIT
    finally:
        watcher.close()
        grader.close()
    lang = ctl.s.lang
    if ctl.ended == QUIT:
        out.print(
            msg("mock.cli.left", lang, left=clock_text(sess.load(folder).remaining())),
            style="yellow",
        )
        out.print(msg("mock.cli.left_hint", lang))
    elif ctl.ended == DEADLINE:
        out.print(msg("mock.cli.time_up", lang), style="bold yellow")
    elif ctl.ended == ELSEWHERE:
        out.print(msg("mock.cli.elsewhere", lang), style="yellow")
    else:
        out.print(msg("mock.cli.submitted", lang), style="bold")
    return ctl.ended or QUIT


# -- rendering ---------------------------------------------------------------------------
def print_session(s: Session) -> None:
    lang = s.lang
    state = s.state
    if state == sess.ACTIVE:
        head = Text.assemble(
            (f"{s.id}  ", "bold"),
            (f"{msg('mock.cli.time_left', lang)} ", "bold"),
            (clock_text(s.remaining()), "bold green" if s.remaining() > 600 else "bold yellow"),
            (f"  ({msg('mock.cli.deadline', lang)} {_when(s.deadline)})", "dim"),
        )
    else:
        head = Text.assemble(
            (f"{s.id}  ", "bold"), (f"{msg('mock.cli.state', lang)}: {state}", "yellow")
        )
    out.print(head)
    table = Table(box=None, pad_edge=False, padding=(0, 1))
    for col in (
        "#",
        msg("mock.cli.problem", lang),
        msg("mock.cli.file", lang),
        msg("mock.cli.status", lang),
        msg("mock.cli.tests", lang),
        msg("mock.cli.hints", lang),
        msg("mock.cli.first_pass", lang),
    ):
        table.add_column(col)
    for i, p in enumerate(s.problems, 1):
        info = sess.problem_summary(s, p)
        tests = "-" if info["total"] is None else f"{info['passed']}/{info['total']}"
        table.add_row(
            str(i),
            f"{p.title[lang]} ({p.kata})",
            p.file,
            Text(info["status"], style=STATUS_STYLE.get(info["status"], "dim")),
            tests,
            str(len(p.hints)),
            scorecard.fmt_duration(info["time_to_first_pass"]),
        )
    out.print(table)
    out.print(f"{msg('mock.cli.folder', lang)}: {s.folder}", style="dim")


def print_card(card: dict[str, Any], folder: Path | None = None) -> None:
    lang = card["lang"]
    fu = card["followups"]
    fu_pct = "-" if fu["percent"] is None else f"{fu['percent']:.0f}%"
    if card["final"]:
        verdict = scorecard.verdict_name(card["verdict"], lang).upper()
        head = Text.assemble(
            (verdict, VERDICT_STYLE.get(card["verdict"], "bold")),
            f"   {msg('mock.cli.total', lang)} {card['total']:.0f}/100 ({msg('mock.cli.coding', lang)} "
            f"{card['coding']:.0f}, {msg('mock.cli.followups', lang)} {fu_pct})",
        )
        body: list[RenderableType] = [
            head,
            Text(f"{msg('mock.cli.rule', lang)}: {card['rule'][lang]}", style="dim"),
        ]
    else:
        body = [
            Text(
                f"{msg('mock.cli.verdict', lang)}: {msg('mock.cli.pending_verdict', lang)}   {msg('mock.cli.coding', lang)} "
                f"{card['coding']:.0f}/100",
                style="yellow",
            )
        ]
    table = Table(box=None, pad_edge=False, padding=(0, 1))
    for col in (
        msg("mock.cli.problem", lang),
        msg("mock.cli.result", lang),
        msg("mock.cli.tests", lang),
        msg("mock.cli.first_pass", lang),
        msg("mock.cli.hints", lang),
        msg("mock.cli.score", lang),
        msg("mock.cli.mistakes", lang),
    ):
        table.add_column(col)
    for p in card["problems"]:
        shown = p["status"] if p["attempted"] else msg("mock.cli.not_attempted", lang)
        table.add_row(
            p["kata"],
            Text(shown, style=STATUS_STYLE.get(p["status"], "red")),
            scorecard.tiers_text(p["tiers"]),
            scorecard.fmt_duration(p["time_to_first_pass"]),
            str(p["hints"]),
            f"{p['score']:.0f}",
            ", ".join(
                m["id"] + (f" ({msg('mock.cli.fixed', lang)})" if m.get("fixed") else "")
                for m in p["mistakes"]
            )
            or "-",
        )
    body += [Text(""), table]
    for p in card["problems"]:
        if p["note"]:
            body.append(Text(f"{p['kata']}: {p['note']}", style="yellow"))
    if fu["questions"]:
        ft = Table(box=None, pad_edge=False, padding=(0, 1))
        for col in ("id", "kind", "points", ""):
            ft.add_column(col)
        for q in fu["questions"]:
            ft.add_row(
                q["id"],
                q["kind"],
                f"{q['points']}/{q['max']}" if q["answered"] else "-",
                q["feedback"][lang] if q["feedback"] else msg("mock.cli.pending", lang),
            )
        body += [
            Text(""),
            Text(
                f"{msg('mock.cli.followups', lang)} {fu['points']}/{fu['max']} ({fu_pct})",
                style="bold",
            ),
            ft,
        ]
    out.print(
        Panel(
            Group(*body),
            title=f"{msg('scorecard.title', lang)} · {card['session']}",
            title_align="left",
        )
    )
    if folder is not None:
        out.print(msg("mock.cli.saved", lang, md=folder / "scorecard.md"), style="dim")


# -- follow-up questions in the terminal --------------------------------------------------
def ask_followups(folder: Path) -> Session:
    """Ask each unanswered question; every answer is saved at once (Ctrl-D or an empty line stops)."""
    s = sess.load(folder)
    lang = s.lang
    todo = [q for q in s.questions if q["id"] not in s.answers]
    if todo:
        out.print(Text(msg("mock.cli.fu_intro", lang, n=len(todo)), style="bold"))
    for i, q in enumerate(todo, 1):
        out.print()
        out.print(
            Text.assemble(
                (f"[{i}/{len(todo)}] ", "dim"),
                (q["prompt"][lang], "bold"),
                (f"   ({q['kata']})", "dim"),
            )
        )
        for j, opt in enumerate(q["options"]):
            out.print(f"  {followups.LETTERS[j]}) {opt[lang]}")
        raw = _ask_one(q, lang)
        if raw is None:
            out.print(msg("mock.cli.fu_later", lang), style="yellow")
            return sess.load(folder)
        s = grading.answer(folder, {q["id"]: raw}, finalize=False)
        got = s.answers[q["id"]]
        style = {"correct": "green", "partial": "yellow", "rated": "cyan"}.get(got["status"], "red")
        line = Text(f"{got['points']}/{got['max']}  {got['feedback'][lang]}", style=style)
        if q["kind"] != "open" and got["status"] != "correct":
            line.append(
                f"  {msg('mock.cli.fu_expected', lang)}: {got['expected'][lang]}", style="default"
            )
        out.print(line)
        if q["answer"] and q["kind"] != "open":
            out.print(Text(q["answer"][lang], style="dim"))
    return sess.load(folder)


def _read(prompt: str) -> str | None:
    try:
        return out.input(f"[bold]{escape(prompt)}[/]: ")
    except EOFError:
        return None


def _ask_one(q: dict[str, Any], lang: str) -> Any:
    parse = {
        "choice": lambda raw: followups.parse_choice(q, raw),
        "order": lambda raw: followups.parse_order(q, raw),
        "numeric": lambda raw: followups.parse_number(raw, q["unit"]),
    }.get(q["kind"])
    hint = {"choice": "fu_choice", "order": "fu_order", "numeric": "fu_numeric", "open": "fu_open"}[
        q["kind"]
    ]
    suffix = f" [{q['unit']}]" if q["unit"] else ""
    while True:
        raw = _read(msg("mock.cli." + hint, lang) + suffix)
        if raw is None or not raw.strip():
            return None
        if parse is None:
            break
        try:
            parse(raw)
            return raw
        except followups.AnswerError as exc:
            out.print(exc.text[lang], style="red")
    out.print(
        Panel(
            Markdown(q["answer"][lang]),
            title=msg("mock.cli.fu_model", lang),
            title_align="left",
            border_style="cyan",
        )
    )
    while True:
        rating = _read(msg("mock.cli.fu_rate", lang))
        if rating is None:
            return None
        try:
            return {"answer": raw, "rating": followups.parse_rating(rating)}
        except followups.AnswerError as exc:
            out.print(exc.text[lang], style="red")


# -- the flow after the clock stops ---------------------------------------------------------
def _grade(s: Session, quiet: bool) -> Session:
    def progress(kata: str) -> None:
        if not quiet:
            err.print(msg("mock.cli.grading", s.lang, kata=kata), style="dim")

    return grading.grade_session(s.folder, progress=progress)


def finish(s: Session, *, interactive: bool, json_out: bool, answers: Path | None) -> None:
    """From a submitted session to the scorecard, as far as the inputs allow."""
    if s.state == sess.SUBMITTED:
        s = _grade(s, quiet=json_out)
    if s.state == sess.FOLLOWUPS:
        if answers is not None:
            s = grading.answer(s.folder, followups.load_answers(answers), finalize=True)
        elif interactive:
            s = ask_followups(s.folder)
    if s.card is None:  # abandoned before grading
        raise UsageError(f"session {s.id} has no scorecard (state: {s.state})")
    if json_out:
        print_json(s.card)
        return
    print_card(s.card, s.folder)
    if s.state == sess.FOLLOWUPS:
        pending = [q["id"] for q in s.questions if q["id"] not in s.answers]
        out.print(msg("mock.cli.fu_pending", s.lang, n=len(pending)), style="yellow")
        for qid in pending:
            out.print(f"  {qid}")


# -- commands ----------------------------------------------------------------------------------
@mock_app.command()
def start(
    minutes: Annotated[
        int | None,
        typer.Option(
            "--minutes",
            help=f"Length of the interview (default {DEFAULT_MINUTES}; with --katas: their estimates, 30-60).",
            show_default=False,
        ),
    ] = None,
    katas: Annotated[
        str | None,
        typer.Option(
            "--katas",
            help="Choose the problems yourself: ids separated by commas (1-3).",
            show_default=False,
        ),
    ] = None,
    count: Annotated[
        int | None,
        typer.Option(
            "--count",
            help="How many problems to pick (1-3; default: as many as fit in --minutes).",
            show_default=False,
        ),
    ] = None,
    difficulty: Annotated[
        str | None,
        typer.Option(
            "--difficulty", help="Pick only easy, medium or hard katas.", show_default=False
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            help="Reproducible picks and follow-up numbers (same seed + same history = same session).",
            show_default=False,
        ),
    ] = None,
    lang: LangOption = None,
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            help="Session folder (new or empty; default: $KATA_WORKSPACE/mock/<id>).",
            show_default=False,
        ),
    ] = None,
    interactive: InteractiveOption = None,
    json_out: JsonOption = False,
    variants: Annotated[
        bool,
        typer.Option(
            "--variants",
            help="Ask each problem in a variant: unfamiliar conventions (layout, mask polarity, "
            "names...), as interviewers who do not use PyTorch's do. Drawn from --seed.",
        ),
    ] = False,
) -> None:
    """Start a timed mock interview.

    Picks 1-3 problems (weighted towards what you have not done or keep getting wrong), copies
    their skeletons and statements into a new session folder, starts the clock and opens the
    countdown screen."""
    lang = resolve_lang(lang)
    seed = secrets.randbelow(2**31) if seed is None else seed
    picks, minutes = picker.choose(
        None if katas is None else [x for x in katas.replace(" ", ",").split(",") if x],
        count=count,
        difficulty=difficulty,
        minutes=minutes,
        seed=seed,
    )
    s = sess.create(
        [picker.in_variant(p.kata, seed) if variants else p.kata for p in picks],
        {p.kata.id: p.reason for p in picks},
        minutes=minutes,
        seed=seed,
        lang=lang,
        folder=directory,
    )
    suggested = sum(p.kata.minutes for p in picks)
    if suggested > minutes:  # the user's own choice: said once, on stderr (the clock is running)
        names = ", ".join(f"{p.kata.id} ({p.kata.minutes} min)" for p in picks)
        err.print(
            msg("mock.cli.too_long", lang, names=names, total=suggested, minutes=minutes),
            style="yellow",
            highlight=False,
        )
    if json_out:
        print_json(s.summary())
        return
    out.print(
        msg(
            "mock.cli.started", lang, id=s.id, minutes=minutes, deadline=_when(s.deadline, "%H:%M")
        ),
        style="bold",
    )
    for i, p in enumerate(s.problems, 1):
        out.print(
            f"  {i}. {p.title[lang]} ({p.kata}, {msg('mock.cli.' + p.difficulty, lang)}, {msg('mock.cli.about', lang, n=p.minutes)})"
            f" — {p.reason[lang]}"
        )
    if _interactive(interactive):
        _screen_then_finish(s.folder)
    else:
        out.print(msg("mock.cli.next_steps", lang, folder=s.folder))


def _screen_then_finish(folder: Path) -> None:
    ended = run_screen(folder)
    if ended != QUIT:
        finish(sess.load(folder), interactive=True, json_out=False, answers=None)


@mock_app.command()
def resume(session: SessionOption = None, interactive: InteractiveOption = None) -> None:
    """Continue the running interview.

    Same deadline as before; after the deadline it grades, then asks the follow-up questions."""
    s = sess.find(session)
    s = sess.close_if_due(s.folder)
    tty = _interactive(interactive)
    if s.state == sess.ACTIVE:
        if tty:
            _screen_then_finish(s.folder)
        else:
            print_session(s)
            out.print(msg("mock.cli.next_steps", s.lang, folder=s.folder))
        return
    if s.state == sess.ABANDONED:
        raise UsageError(f"session {s.id} was abandoned")
    finish(s, interactive=tty, json_out=False, answers=None)


@mock_app.command()
def status(session: SessionOption = None, json_out: JsonOption = False) -> None:
    """Time left and the state of each problem."""
    s = sess.find(session)
    s = sess.close_if_due(s.folder)
    if json_out:
        print_json(s.summary())
        return
    print_session(s)
    if s.state == sess.SUBMITTED:
        out.print(msg("mock.cli.time_up", s.lang) + "  → kata mock submit", style="yellow")


@mock_app.command()
def check(
    kata: Annotated[
        str | None, typer.Argument(help="Which problem (default: all of them).", show_default=False)
    ] = None,
    session: SessionOption = None,
    json_out: JsonOption = False,
) -> None:
    """Grade your file(s) now, like the c key.

    The check is recorded: it sets the time to first pass, and a file saved after the deadline
    is graded as it was at its last check."""
    from attnkata.cli.render import render_result

    s = sess.find(session)
    s = sess.close_if_due(s.folder)
    if s.state != sess.ACTIVE:
        raise UsageError(
            f"session {s.id} is over ({s.state})", "see the result with `kata mock submit`"
        )
    targets = [s.problem(kata)] if kata else list(s.problems)
    results = []
    passed = True
    for p in targets:
        with sess.mutate(s.folder) as cur:
            path = sess.take_checkpoint(cur, cur.problem(p.kata), sess.now())
            taken = cur.problem(p.kata).checkpoint["t"]
        result = grading.check_result(p.kata, path, s.lang, variant=p.variant)
        data = grading.jsonable(result.to_dict())
        with sess.mutate(s.folder) as cur:
            if cur.state == sess.ACTIVE:
                sess.record_check(cur, p.kata, data, taken)
        passed &= result.passed
        if json_out:
            results.append(data)
        else:
            result.solution = str(s.file_path(p))
            render_result(out, result, path.read_text(encoding="utf-8", errors="replace"))
    if json_out:
        print_json(results)
    raise typer.Exit(0 if passed else 1)


@mock_app.command()
def hint(
    kata: Annotated[
        str | None,
        typer.Argument(help="Which problem (default: the current one).", show_default=False),
    ] = None,
    session: SessionOption = None,
) -> None:
    """Show the next hint (costs points).

    Each hint costs 10 points of that problem's score."""
    s = sess.find(session)
    s = sess.close_if_due(s.folder)
    got = sess.take_hint(s.folder, kata)
    if got is None:
        out.print(msg("mock.cli.no_more_hints", s.lang, kata=s.problem(kata).kata))
        return
    p, hid, text = got
    out.print(
        Text.assemble(
            (f"{p.kata} · {hid}  ", "bold"),
            (
                msg(
                    "mock.cli.hint_cost",
                    s.lang,
                    cost=scorecard.HINT_COST,
                    n=len(p.hints),
                    kata=p.kata,
                ),
                "yellow",
            ),
        )
    )
    out.print(text)


@mock_app.command()
def submit(
    session: SessionOption = None,
    answers: AnswersOption = None,
    interactive: InteractiveOption = None,
    json_out: JsonOption = False,
) -> None:
    """End the interview and show the scorecard.

    Grades what is in your files now (or what was there at the deadline), then asks the
    follow-up questions (in the terminal, or from --answers FILE)."""
    s = sess.find(session)
    if s.state == sess.DONE:
        raise UsageError(f"session {s.id} is finished", "see its scorecard with `kata mock card`")
    if s.state == sess.ACTIVE:
        with sess.mutate(s.folder) as s:
            sess.submit(s, sess.now(), "manual")
    finish(
        s,
        interactive=_interactive(interactive) and not json_out,
        json_out=json_out,
        answers=answers,
    )


@mock_app.command()
def answer(
    answers: AnswersOption = None,
    session: SessionOption = None,
    json_out: JsonOption = False,
) -> None:
    """Answer the follow-up questions.

    From --answers FILE (unanswered ones score 0), else in the terminal."""
    s = sess.find(session)
    if s.state != sess.FOLLOWUPS:
        raise UsageError(f"session {s.id} is not waiting for follow-up answers (state: {s.state})")
    if answers is None and not _interactive(None):
        raise UsageError("no terminal to ask in", "pass --answers FILE")
    finish(s, interactive=True, json_out=json_out, answers=answers)


@mock_app.command()
def card(
    session: Annotated[
        str | None,
        typer.Argument(help="Session id or prefix (default: the latest).", show_default=False),
    ] = None,
    json_out: JsonOption = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the Markdown scorecard.")
    ] = False,
    lang: LangOption = None,
) -> None:
    """Show the scorecard of a session."""
    if session is None:
        latest = [r for r in sess.rows(20) if r["card"]]
        if not latest:
            raise UsageError("no scorecard yet", "finish a mock interview with `kata mock submit`")
        session = latest[0]["id"]
    s = sess.find(session)
    if s.card is None:
        raise UsageError(f"session {s.id} has no scorecard yet (state: {s.state})")
    if json_out:
        print_json(s.card)
    elif markdown:
        # The card quotes the candidate's answers and messages: no terminal controls in them.
        write_text(clean(scorecard.to_markdown(s.card, resolve_lang(lang) if lang else s.lang)))
    else:
        print_card(s.card, s.folder)


@mock_app.command()
def history(
    limit: Annotated[int, typer.Option("--limit", help="How many sessions.")] = 20,
    json_out: JsonOption = False,
    lang: LangOption = None,
) -> None:
    """Past mock interviews with their scores and your trend."""
    lang = resolve_lang(lang)
    rows = [dict(r) for r in sess.rows(limit)]
    done = [r for r in reversed(rows) if r["state"] == sess.DONE and r["score"] is not None]
    scores = [round(r["score"], 1) for r in done]
    trend = {
        "scores": scores,
        "last": scores[-1] if scores else None,
        "change": round(scores[-1] - scores[-2], 1) if len(scores) >= 2 else None,
        "best": max(scores) if scores else None,
        "mean_last_3": round(sum(scores[-3:]) / len(scores[-3:]), 1) if scores else None,
    }
    if json_out:
        for r in rows:
            r["katas"] = json.loads(r["katas"])
            r.pop("card", None)
        print_json({"sessions": rows, "trend": trend})
        return
    if not rows:
        out.print(msg("mock.cli.no_sessions", lang))
        return
    table = Table(title="mock interviews", box=None, pad_edge=False, padding=(0, 1))
    for col in (
        "id",
        "problems",
        "state",
        msg("mock.cli.total", lang),
        msg("mock.cli.followups", lang),
        msg("mock.cli.verdict", lang),
    ):
        table.add_column(col)
    for r in rows:
        verdict = r["verdict"]
        table.add_row(
            r["id"],
            ", ".join(json.loads(r["katas"])),
            r["state"],
            "-" if r["score"] is None else f"{r['score']:.0f}",
            "-" if r["followup_score"] is None else f"{r['followup_score']:.0f}%",
            Text(
                scorecard.verdict_name(verdict, lang), style=VERDICT_STYLE.get(verdict or "", "dim")
            ),
        )
    out.print(table)
    if scores:
        bars = "▁▂▃▄▅▆▇█"
        spark = "".join(bars[min(7, int(x / 100 * 8))] for x in scores[-20:])
        change = "" if trend["change"] is None else f"  {trend['change']:+.0f} vs previous"
        out.print(
            f"{msg('mock.cli.trend', lang)}: {spark}  last {trend['last']:.0f}, best {trend['best']:.0f}, "
            f"mean of last 3 {trend['mean_last_3']:.0f}{change}"
        )


@mock_app.command()
def abandon(
    session: SessionOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """End a session without finishing it.

    Before grading nothing is scored; while follow-ups wait, unanswered ones score 0."""
    s = sess.find(session)
    if not yes and s.state in (sess.ACTIVE, sess.SUBMITTED):
        if not sys.stdin.isatty():
            raise UsageError("abandoning loses the session's work", "pass --yes to abandon it")
        if not typer.confirm(msg("mock.cli.abandon_confirm", s.lang, id=s.id), default=False):
            raise typer.Exit(1)
    s = grading.abandon(s.folder)
    if s.card is not None and s.state == sess.DONE:
        print_card(s.card, s.folder)
    else:
        out.print(msg("mock.cli.abandoned", s.lang, id=s.id))


def register(app: typer.Typer) -> None:
    app.add_typer(mock_app, name="mock")
