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
from attnkata.checker.mock import followups, grading, picker, scorecard
from attnkata.checker.mock import session as sess
from attnkata.checker.mock.live import DEADLINE, ELSEWHERE, QUIT, clock_text
from attnkata.checker.mock.session import Session
from attnkata.checker.store import History
from attnkata.cli.console import err, out, print_json
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
SessionOption = Annotated[str | None, typer.Option("--session", help="Session id or a unique prefix (default: the running one).", show_default=False)]
InteractiveOption = Annotated[bool | None, typer.Option("--interactive/--no-interactive", help="Use the full-screen countdown and ask questions in the terminal (default: when run in a terminal).")]
AnswersOption = Annotated[Path | None, typer.Option("--answers", help="Follow-up answers from a JSON or TOML file: {question_id: answer}. Choice: a letter; order: letters like \"c a b d\"; numeric: a number; open: a self-rating 0-2 or {answer, rating}.", show_default=False)]

L: dict[str, dict[str, str]] = {
    "en": {
        "title": "attnkata mock interview", "time_left": "Time left", "deadline": "deadline",
        "problem": "problem", "diff": "level", "file": "your file", "status": "last check", "tests": "tests",
        "hints": "hints", "first_pass": "first pass", "unchecked": "not checked", "folder": "Folder",
        "keys": "[c] check  [v] statement  [h] hint (-10)  [n]/[p] problem  [s] submit  [q] leave  [?] help",
        "back": "Press Enter to return to the countdown",
        "watching": "Saving a file re-checks it. Leaving with q keeps the clock running.", "statement": "statement", "why": "why",
        "left": "You left the interview; the clock keeps running ({left} left).",
        "left_hint": "Come back with `kata mock resume`; `kata mock status` shows the time left.",
        "time_up": "Time is up: your work at the deadline was submitted.",
        "submitted": "Submitted.", "elsewhere": "The session was submitted from another terminal.",
        "grading": "Grading {kata}…", "started": "Mock interview {id} started: {minutes} minutes, until {deadline}.",
        "next_steps": "Edit the files in {folder}. Check with `kata mock check`, see the time with "
                      "`kata mock status`, finish with `kata mock submit`.",
        "fu_intro": "Follow-up questions ({n}). Type your answer and press Enter (empty line: skip for now).",
        "fu_choice": "Answer with a letter", "fu_order": "Give all letters in the right order, e.g. `c a b`",
        "fu_numeric": "A number (5.4e8, 512*1024 and 537M work too)", "fu_open": "Your answer (one line)",
        "fu_model": "Model answer", "fu_rate": "Rate yourself: 0 missed it, 1 partly, 2 got it",
        "fu_expected": "Expected", "fu_later": "Stopped; answer the rest later with `kata mock resume`.",
        "fu_pending": "{n} follow-up question(s) are waiting. Answer them with `kata mock resume` in a "
                      "terminal, or `kata mock answer --answers FILE` (question ids below).",
        "saved": "Scorecard saved: {md} (and scorecard.json).",
        "no_sessions": "No mock interviews yet. Start one with `kata mock start --minutes 30`.",
        "trend": "Trend", "mistakes": "mistakes", "fixed": "fixed before the end",
        "too_long": "warning: {names} suggest {total} minutes in all, more than this {minutes}-minute interview", "result": "result", "score": "score",
        "not_attempted": "not attempted", "pending": "waiting for your answer",
        "easy": "easy", "medium": "medium", "hard": "hard", "about": "~{n} min", "verdict": "verdict", "rule": "rule",
        "total": "total", "coding": "coding", "followups": "follow-ups", "pending_verdict": "pending follow-ups",
        "hint_cost": "(this hint costs {cost} points; {n} used on {kata})",
        "no_more_hints": "No more hints for {kata}.", "state": "state", "abandoned": "Session {id} abandoned.",
        "abandon_confirm": "Abandon mock session {id}? Nothing is graded.",
    },
    "zh": {
        "title": "attnkata 模拟面试", "time_left": "剩余时间", "deadline": "截止",
        "problem": "题目", "diff": "难度", "file": "你的文件", "status": "上次检查", "tests": "测试",
        "hints": "提示", "first_pass": "首次通过", "unchecked": "未检查", "folder": "文件夹",
        "keys": "[c] 检查  [v] 题面  [h] 提示（-10）  [n]/[p] 切换题目  [s] 交卷  [q] 离开  [?] 帮助",
        "back": "按回车返回倒计时界面",
        "watching": "保存文件会自动重新检查。按 q 离开后计时继续。", "statement": "题面", "why": "选题原因",
        "left": "你离开了面试界面；计时仍在继续（剩余 {left}）。",
        "left_hint": "用 `kata mock resume` 回来；`kata mock status` 查看剩余时间。",
        "time_up": "时间到：已提交你在截止时的代码。",
        "submitted": "已交卷。", "elsewhere": "本场已在另一个终端交卷。",
        "grading": "正在评分 {kata}…", "started": "模拟面试 {id} 开始：{minutes} 分钟，截止 {deadline}。",
        "next_steps": "在 {folder} 中编辑文件。用 `kata mock check` 检查，`kata mock status` 查看时间，"
                      "`kata mock submit` 交卷。",
        "fu_intro": "追问（共 {n} 题）。输入答案后按回车（空行：稍后再答）。",
        "fu_choice": "输入字母作答", "fu_order": "按正确顺序写出所有字母，例如 `c a b`",
        "fu_numeric": "输入一个数（也可写 5.4e8、512*1024、537M）", "fu_open": "你的回答（一行）",
        "fu_model": "参考答案", "fu_rate": "给自己打分：0 没答到，1 部分答到，2 答到了",
        "fu_expected": "参考答案", "fu_later": "已暂停；稍后用 `kata mock resume` 回答剩下的问题。",
        "fu_pending": "还有 {n} 道追问等待回答。在终端中用 `kata mock resume` 回答，或用 "
                      "`kata mock answer --answers FILE`（问题 id 见下）。",
        "saved": "评分卡已保存：{md}（以及 scorecard.json）。",
        "no_sessions": "还没有模拟面试记录。用 `kata mock start --minutes 30` 开始一场。",
        "trend": "趋势", "mistakes": "错误", "fixed": "结束前已改正",
        "too_long": "注意：{names} 的建议用时合计 {total} 分钟，超过了这场 {minutes} 分钟的面试", "result": "结果", "score": "得分",
        "not_attempted": "未作答", "pending": "等待回答",
        "easy": "简单", "medium": "中等", "hard": "困难", "about": "约 {n} 分钟", "verdict": "结论", "rule": "规则",
        "total": "总分", "coding": "编码", "followups": "追问", "pending_verdict": "待回答追问",
        "hint_cost": "（该提示扣 {cost} 分；{kata} 已用 {n} 个）",
        "no_more_hints": "{kata} 没有更多提示了。", "state": "状态", "abandoned": "已放弃场次 {id}。",
        "abandon_confirm": "放弃模拟面试 {id}？不会评分。",
    },
}
STATUS_STYLE = {"pass": "green", "fail": "red", "error": "red", "timeout": "yellow", "unchecked": "dim"}
VERDICT_STYLE = {"strong hire": "bold green", "hire": "green", "lean no": "yellow", "no hire": "red"}


def lab(lang: str, key: str, **params: object) -> str:
    return L["zh" if lang == "zh" else "en"][key].format(**params)


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
    head = Text.assemble((f"{lab(lang, 'title')}   ", "bold"),
                         (f"{lab(lang, 'time_left')} ", "bold"), (clock_text(left), f"bold {colour}"),
                         (f"   {lab(lang, 'deadline')} {_when(s.deadline, '%H:%M')}", "dim"))
    table = Table(box=None, pad_edge=False, padding=(0, 1))
    for col in ("", "#", lab(lang, "problem"), lab(lang, "file"), lab(lang, "status"),
                lab(lang, "tests"), lab(lang, "hints"), lab(lang, "first_pass")):
        table.add_column(col)
    for i, p in enumerate(s.problems):
        info = sess.problem_summary(s, p)
        status = info["status"]
        if ctl.checking == p.kata:
            status = "checking…"
        tests = "-" if info["total"] is None else f"{info['passed']}/{info['total']}"
        table.add_row("▶" if i == ctl.selected else "", str(i + 1), p.kata, p.file,
                      Text(status if status != "unchecked" else lab(lang, "unchecked"),
                           style=STATUS_STYLE.get(info["status"], "dim")),
                      tests, str(len(p.hints)), scorecard.fmt_duration(info["time_to_first_pass"]))
    parts: list[RenderableType] = [head, Text(""), table, Text("")]
    parts.append(_detail(ctl))
    if ctl.message is not None:
        body = Text(ctl.message.body) if ctl.message.body else Text("")
        parts.append(Panel(body, title=ctl.message.title, title_align="left", border_style=ctl.message.style)
                     if ctl.message.body else Text(ctl.message.title, style=ctl.message.style))
    parts += [Text(""), Text(f"{lab(lang, 'folder')}: {s.folder}   ({s.id})", style="dim"),
              Text(lab(lang, "watching"), style="dim"), Text(lab(lang, "keys"), style="bold")]
    return Group(*parts)


def _detail(ctl: Controller) -> RenderableType:
    """The selected problem: statement file, why it was picked, and its last check."""
    s: Session = ctl.s
    lang = s.lang
    p = s.problems[ctl.selected]
    lines = Text()
    lines.append(f"{p.title[lang]}", style="bold")
    lines.append(f" ({lab(lang, p.difficulty)}, {lab(lang, 'about', n=p.minutes)})\n", style="dim")
    lines.append(f"{lab(lang, 'statement')}: {p.statement}   {lab(lang, 'why')}: {p.reason[lang]}\n", style="dim")
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
                msg = test["message"].splitlines()[0] if test["message"] else ""
                if msg in shown or len(shown) == 3:
                    continue  # one line per distinct failure: a crash repeats the same message
                shown.add(msg)
                lines.append(f"  ✗ {test['id']}", style="red")
                lines.append(f"  {msg[:140]}\n", style="default")
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
        _read(lab(lang, "back"))  # the pager did not wait: keep the text on screen until Enter


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
        with Keys() as keys, Live(screen(ctl), console=out, screen=True, auto_refresh=False,
                                  redirect_stdout=False, redirect_stderr=False) as live:
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
        out.print(lab(lang, "left", left=clock_text(sess.load(folder).remaining())), style="yellow")
        out.print(lab(lang, "left_hint"))
    elif ctl.ended == DEADLINE:
        out.print(lab(lang, "time_up"), style="bold yellow")
    elif ctl.ended == ELSEWHERE:
        out.print(lab(lang, "elsewhere"), style="yellow")
    else:
        out.print(lab(lang, "submitted"), style="bold")
    return ctl.ended or QUIT


# -- rendering ---------------------------------------------------------------------------
def print_session(s: Session) -> None:
    lang = s.lang
    state = s.state
    if state == sess.ACTIVE:
        head = Text.assemble((f"{s.id}  ", "bold"), (f"{lab(lang, 'time_left')} ", "bold"),
                             (clock_text(s.remaining()), "bold green" if s.remaining() > 600 else "bold yellow"),
                             (f"  ({lab(lang, 'deadline')} {_when(s.deadline)})", "dim"))
    else:
        head = Text.assemble((f"{s.id}  ", "bold"), (f"{lab(lang, 'state')}: {state}", "yellow"))
    out.print(head)
    table = Table(box=None, pad_edge=False, padding=(0, 1))
    for col in ("#", lab(lang, "problem"), lab(lang, "file"), lab(lang, "status"), lab(lang, "tests"),
                lab(lang, "hints"), lab(lang, "first_pass")):
        table.add_column(col)
    for i, p in enumerate(s.problems, 1):
        info = sess.problem_summary(s, p)
        tests = "-" if info["total"] is None else f"{info['passed']}/{info['total']}"
        table.add_row(str(i), f"{p.title[lang]} ({p.kata})", p.file,
                      Text(info["status"], style=STATUS_STYLE.get(info["status"], "dim")), tests,
                      str(len(p.hints)), scorecard.fmt_duration(info["time_to_first_pass"]))
    out.print(table)
    out.print(f"{lab(lang, 'folder')}: {s.folder}", style="dim")


def print_card(card: dict[str, Any], folder: Path | None = None) -> None:
    lang = card["lang"]
    fu = card["followups"]
    fu_pct = "-" if fu["percent"] is None else f"{fu['percent']:.0f}%"
    if card["final"]:
        verdict = scorecard.verdict_name(card["verdict"], lang).upper()
        head = Text.assemble((verdict, VERDICT_STYLE.get(card["verdict"], "bold")),
                             f"   {lab(lang, 'total')} {card['total']:.0f}/100 ({lab(lang, 'coding')} "
                             f"{card['coding']:.0f}, {lab(lang, 'followups')} {fu_pct})")
        body: list[RenderableType] = [head, Text(f"{lab(lang, 'rule')}: {card['rule'][lang]}", style="dim")]
    else:
        body = [Text(f"{lab(lang, 'verdict')}: {lab(lang, 'pending_verdict')}   {lab(lang, 'coding')} "
                     f"{card['coding']:.0f}/100", style="yellow")]
    table = Table(box=None, pad_edge=False, padding=(0, 1))
    for col in (lab(lang, "problem"), lab(lang, "result"), lab(lang, "tests"), lab(lang, "first_pass"),
                lab(lang, "hints"), lab(lang, "score"), lab(lang, "mistakes")):
        table.add_column(col)
    for p in card["problems"]:
        shown = p["status"] if p["attempted"] else lab(lang, "not_attempted")
        table.add_row(p["kata"], Text(shown, style=STATUS_STYLE.get(p["status"], "red")),
                      scorecard.tiers_text(p["tiers"]), scorecard.fmt_duration(p["time_to_first_pass"]),
                      str(p["hints"]), f"{p['score']:.0f}", ", ".join(m["id"] + (f" ({lab(lang, 'fixed')})" if m.get("fixed") else "") for m in p["mistakes"]) or "-")
    body += [Text(""), table]
    for p in card["problems"]:
        if p["note"]:
            body.append(Text(f"{p['kata']}: {p['note']}", style="yellow"))
    if fu["questions"]:
        ft = Table(box=None, pad_edge=False, padding=(0, 1))
        for col in ("id", "kind", "points", ""):
            ft.add_column(col)
        for q in fu["questions"]:
            ft.add_row(q["id"], q["kind"], f"{q['points']}/{q['max']}" if q["answered"] else "-",
                       q["feedback"][lang] if q["feedback"] else lab(lang, "pending"))
        body += [Text(""), Text(f"{lab(lang, 'followups')} {fu['points']}/{fu['max']} ({fu_pct})", style="bold"), ft]
    out.print(Panel(Group(*body), title=f"{scorecard.LABELS[lang]['title']} · {card['session']}", title_align="left"))
    if folder is not None:
        out.print(lab(lang, "saved", md=folder / "scorecard.md"), style="dim")


# -- follow-up questions in the terminal --------------------------------------------------
def ask_followups(folder: Path) -> Session:
    """Ask each unanswered question; every answer is saved at once (Ctrl-D or an empty line stops)."""
    s = sess.load(folder)
    lang = s.lang
    todo = [q for q in s.questions if q["id"] not in s.answers]
    if todo:
        out.print(Text(lab(lang, "fu_intro", n=len(todo)), style="bold"))
    for i, q in enumerate(todo, 1):
        out.print()
        out.print(Text.assemble((f"[{i}/{len(todo)}] ", "dim"), (q["prompt"][lang], "bold"),
                                (f"   ({q['kata']})", "dim")))
        for j, opt in enumerate(q["options"]):
            out.print(f"  {followups.LETTERS[j]}) {opt[lang]}")
        raw = _ask_one(q, lang)
        if raw is None:
            out.print(lab(lang, "fu_later"), style="yellow")
            return sess.load(folder)
        s = grading.answer(folder, {q["id"]: raw}, finalize=False)
        got = s.answers[q["id"]]
        style = {"correct": "green", "partial": "yellow", "rated": "cyan"}.get(got["status"], "red")
        line = Text(f"{got['points']}/{got['max']}  {got['feedback'][lang]}", style=style)
        if q["kind"] != "open" and got["status"] != "correct":
            line.append(f"  {lab(lang, 'fu_expected')}: {got['expected'][lang]}", style="default")
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
    hint = {"choice": "fu_choice", "order": "fu_order", "numeric": "fu_numeric", "open": "fu_open"}[q["kind"]]
    suffix = f" [{q['unit']}]" if q["unit"] else ""
    while True:
        raw = _read(lab(lang, hint) + suffix)
        if raw is None or not raw.strip():
            return None
        if parse is None:
            break
        try:
            parse(raw)
            return raw
        except followups.AnswerError as exc:
            out.print(exc.text[lang], style="red")
    out.print(Panel(Markdown(q["answer"][lang]), title=lab(lang, "fu_model"), title_align="left", border_style="cyan"))
    while True:
        rating = _read(lab(lang, "fu_rate"))
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
            err.print(lab(s.lang, "grading", kata=kata), style="dim")

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
        out.print(lab(s.lang, "fu_pending", n=len(pending)), style="yellow")
        for qid in pending:
            out.print(f"  {qid}")


# -- commands ----------------------------------------------------------------------------------
@mock_app.command()
def start(
    minutes: Annotated[int | None, typer.Option("--minutes", help=f"Length of the interview (default {DEFAULT_MINUTES}; with --katas: their estimates, 30-60).", show_default=False)] = None,
    katas: Annotated[str | None, typer.Option("--katas", help="Choose the problems yourself: ids separated by commas (1-3).", show_default=False)] = None,
    count: Annotated[int | None, typer.Option("--count", help="How many problems to pick (1-3; default: as many as fit in --minutes).", show_default=False)] = None,
    difficulty: Annotated[str | None, typer.Option("--difficulty", help="Pick only easy, medium or hard katas.", show_default=False)] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Reproducible picks and follow-up numbers (same seed + same history = same session).", show_default=False)] = None,
    lang: LangOption = None,
    directory: Annotated[Path | None, typer.Option("--dir", help="Session folder (new or empty; default: $KATA_WORKSPACE/mock/<id>).", show_default=False)] = None,
    interactive: InteractiveOption = None,
    json_out: JsonOption = False,
) -> None:
    """Start a timed mock interview.

    Picks 1-3 problems (weighted towards what you have not done or keep getting wrong), copies
    their skeletons and statements into a new session folder, starts the clock and opens the
    countdown screen."""
    lang = resolve_lang(lang)
    seed = secrets.randbelow(2**31) if seed is None else seed
    if katas is not None:
        if count is not None or difficulty is not None:
            raise UsageError("--katas chooses the problems: leave out --count and --difficulty")
        picks = picker.chosen_by_user([x for x in katas.replace(" ", ",").split(",") if x])
        if minutes is None:
            minutes = min(60, max(30, -(-sum(p.kata.minutes for p in picks) // 5) * 5))
    else:
        minutes = DEFAULT_MINUTES if minutes is None else minutes
        with History() as h:
            stats, mistakes = h.stats(), h.mistake_counts()
        picks = picker.pick(picker.candidates(difficulty), stats, mistakes, seed=seed, count=count, minutes=minutes)
    s = sess.create([p.kata for p in picks], {p.kata.id: p.reason for p in picks}, minutes=minutes,
                    seed=seed, lang=lang, folder=directory)
    suggested = sum(p.kata.minutes for p in picks)
    if suggested > minutes:  # the user's own choice: said once, on stderr (the clock is running)
        names = ", ".join(f"{p.kata.id} ({p.kata.minutes} min)" for p in picks)
        err.print(lab(lang, "too_long", names=names, total=suggested, minutes=minutes), style="yellow", highlight=False)
    if json_out:
        print_json(s.summary())
        return
    out.print(lab(lang, "started", id=s.id, minutes=minutes, deadline=_when(s.deadline, "%H:%M")), style="bold")
    for i, p in enumerate(s.problems, 1):
        out.print(f"  {i}. {p.title[lang]} ({p.kata}, {lab(lang, p.difficulty)}, {lab(lang, 'about', n=p.minutes)})"
                  f" — {p.reason[lang]}")
    if _interactive(interactive):
        _screen_then_finish(s.folder)
    else:
        out.print(lab(lang, "next_steps", folder=s.folder))


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
            out.print(lab(s.lang, "next_steps", folder=s.folder))
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
        out.print(lab(s.lang, "time_up") + "  → kata mock submit", style="yellow")


@mock_app.command()
def check(
    kata: Annotated[str | None, typer.Argument(help="Which problem (default: all of them).", show_default=False)] = None,
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
        raise UsageError(f"session {s.id} is over ({s.state})", "see the result with `kata mock submit`")
    targets = [s.problem(kata)] if kata else list(s.problems)
    results = []
    passed = True
    for p in targets:
        with sess.mutate(s.folder) as cur:
            path = sess.take_checkpoint(cur, cur.problem(p.kata), sess.now())
            taken = cur.problem(p.kata).checkpoint["t"]
        result = grading.check_result(p.kata, path, s.lang)
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
    kata: Annotated[str | None, typer.Argument(help="Which problem (default: the current one).", show_default=False)] = None,
    session: SessionOption = None,
) -> None:
    """Show the next hint (costs points).

    Each hint costs 10 points of that problem's score."""
    s = sess.find(session)
    s = sess.close_if_due(s.folder)
    got = sess.take_hint(s.folder, kata)
    if got is None:
        out.print(lab(s.lang, "no_more_hints", kata=s.problem(kata).kata))
        return
    p, hid, text = got
    out.print(Text.assemble((f"{p.kata} · {hid}  ", "bold"),
                            (lab(s.lang, "hint_cost", cost=scorecard.HINT_COST, n=len(p.hints), kata=p.kata), "yellow")))
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
    finish(s, interactive=_interactive(interactive) and not json_out, json_out=json_out, answers=answers)


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
    session: Annotated[str | None, typer.Argument(help="Session id or prefix (default: the latest).", show_default=False)] = None,
    json_out: JsonOption = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the Markdown scorecard.")] = False,
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
        sys.stdout.write(scorecard.to_markdown(s.card, resolve_lang(lang) if lang else s.lang))
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
        out.print(lab(lang, "no_sessions"))
        return
    table = Table(title="mock interviews", box=None, pad_edge=False, padding=(0, 1))
    for col in ("id", "problems", "state", lab(lang, "total"), lab(lang, "followups"), lab(lang, "verdict")):
        table.add_column(col)
    for r in rows:
        verdict = r["verdict"]
        table.add_row(r["id"], ", ".join(json.loads(r["katas"])), r["state"],
                      "-" if r["score"] is None else f"{r['score']:.0f}",
                      "-" if r["followup_score"] is None else f"{r['followup_score']:.0f}%",
                      Text(scorecard.verdict_name(verdict, lang), style=VERDICT_STYLE.get(verdict or "", "dim")))
    out.print(table)
    if scores:
        bars = "▁▂▃▄▅▆▇█"
        spark = "".join(bars[min(7, int(x / 100 * 8))] for x in scores[-20:])
        change = "" if trend["change"] is None else f"  {trend['change']:+.0f} vs previous"
        out.print(f"{lab(lang, 'trend')}: {spark}  last {trend['last']:.0f}, best {trend['best']:.0f}, "
                  f"mean of last 3 {trend['mean_last_3']:.0f}{change}")


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
        if not typer.confirm(lab(s.lang, "abandon_confirm", id=s.id), default=False):
            raise typer.Exit(1)
    s = grading.abandon(s.folder)
    if s.card is not None and s.state == sess.DONE:
        print_card(s.card, s.folder)
    else:
        out.print(lab(s.lang, "abandoned", id=s.id))


def register(app: typer.Typer) -> None:
    app.add_typer(mock_app, name="mock")
