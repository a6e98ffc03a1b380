"""The everyday loop (issue 13): watch with --json and cancellation, Ctrl-C, the spinner, limits
from the reference, `kata next`, and the rough edges of the terminal and HTML output."""

from __future__ import annotations

import hashlib
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rich.console import Console

from attnkata.checker import api, catalog, schedule, timing
from attnkata.checker.html import result_html
from attnkata.checker.messages import clip
from attnkata.checker.models import Diagnostic, Result, SourceRef, excerpt_blocks
from attnkata.checker.models import TestResult as Outcome  # (not "Test*": pytest would collect it)
from attnkata.cli.render import diagnostic_panel, render_result

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
SDPA_REF = REPO / "reference" / "sdpa.py"
LOOP = FIXTURES / "hostile" / "loop.py"


def _kata(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "attnkata", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# -- watch --------------------------------------------------------------------------------------
class _JsonLines:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.sel = selectors.DefaultSelector()
        assert proc.stdout is not None
        self.sel.register(proc.stdout, selectors.EVENT_READ)

    def next(self, timeout: float) -> dict:
        assert self.sel.select(timeout), "no result in time"
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"kata watch ended: {self.proc.poll()}"
        return json.loads(line)


@pytest.mark.slow
def test_watch_json_prints_one_result_per_check_and_a_save_cancels_a_stale_check(tmp_path: Path):
    path = tmp_path / "sdpa.py"
    path.write_text(LOOP.read_text())
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "attnkata",
            "watch",
            "sdpa",
            str(path),
            "--json",
            "--timeout",
            "60",
            "--record",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = _JsonLines(proc)
    try:
        time.sleep(4)  # the first check is now stuck in the infinite loop (60 s per call)
        good = SDPA_REF.read_text()
        t0 = time.monotonic()
        path.write_text(good)
        result = lines.next(timeout=40)
        # The loop's check was abandoned, not waited out: the first line is the new version's.
        assert result["source_sha256"] == _sha(good), "the stale check was reported"
        assert result["status"] == "pass"
        assert time.monotonic() - t0 < 30
        assert set(result) >= {
            "tests",
            "diagnostics",
            "limits",
            "isolation",
        }  # `kata check --json`'s schema
    finally:
        proc.terminate()
        proc.wait(10)
    assert (
        _kata("history", "--json").stdout.count('"kata"') == 1
    )  # only the finished check is recorded


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in found:
                found.add(c)
                todo.append(c)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
def test_ctrl_c_during_a_check_exits_130_records_nothing_and_leaves_no_process(tmp_path: Path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "attnkata", "check", "sdpa", str(LOOP), "--timeout", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(4)  # loading torch, then inside the candidate's infinite loop
    tree = _descendants(proc.pid)
    assert tree, "the sandbox should be running"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert time.monotonic() - t0 < 10
    assert "Traceback" not in err
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in tree) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in tree if _alive(p)], "a candidate or sandbox process outlived kata"
    assert json.loads(_kata("history", "--json").stdout) == []


@pytest.mark.slow
def test_spinner_on_a_terminal_and_nothing_on_a_pipe(tmp_path: Path):
    pexpect = pytest.importorskip("pexpect")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "attnkata", "check", "sdpa", str(SDPA_REF)],
        encoding="utf-8",
        timeout=90,
        env={**os.environ, "COLUMNS": "120", "TERM": "xterm"},
    )
    child.expect("checking")  # the spinner: the current test and the time against the limit
    child.expect(r"limit 3s per call")
    child.expect("PASS")
    child.expect(pexpect.EOF)
    piped = _kata("check", "sdpa", str(SDPA_REF))
    assert piped.returncode == 0
    assert piped.stderr == ""
    assert "checking" not in piped.stdout


# -- limits ---------------------------------------------------------------------------------------
def test_every_kata_has_a_measured_reference_time_and_limits_follow_it():
    measured = timing.reference_seconds()
    missing = [k for k in catalog.kata_ids() if k not in measured]
    assert not missing, (
        f"run `python -m attnkata.checker.timing --write`: no reference time for {missing}"
    )
    for kata_id in catalog.kata_ids():
        lim = api.limits_for(None, catalog.get_kata(kata_id))
        want = min(timing.CEILING_S, max(timing.FLOOR_S, timing.MARGIN * measured[kata_id]))
        assert lim.call_timeout == pytest.approx(want, abs=0.05)
        assert lim.total_timeout == pytest.approx(lim.call_timeout * timing.CALLS_IN_TOTAL)
    assert api.limits_for(2.0, catalog.get_kata("sdpa")).call_timeout == 2.0  # --timeout wins


@pytest.mark.slow
def test_an_infinite_loop_gets_its_verdict_within_the_call_limit_plus_one_second():
    proc = _kata("check", "sdpa", str(LOOP), "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 1
    assert result["status"] == "timeout"
    call = result["limits"]["call_timeout"]
    assert call == api.limits_for(None, catalog.get_kata("sdpa")).call_timeout
    assert result["timings"]["total"] <= call + 1.0, result["timings"]
    console = Console(width=200, record=True)  # what the terminal shows for the same result
    render_result(console, Result.from_dict(result))
    assert f"time limits: {call:g} s per call" in console.export_text()


# -- kata next ------------------------------------------------------------------------------------
def _row(ts: datetime, kata: str, status: str, diagnoses: list[str] = ()) -> dict:
    return {
        "ts": ts.timestamp(),
        "kata": kata,
        "status": status,
        "diagnoses": json.dumps(list(diagnoses)),
        "mode": "practice",
    }


def test_sessions_are_rated_from_how_the_practice_went():
    t = datetime(2026, 1, 1, tzinfo=UTC)
    attempts = [
        _row(t, "sdpa", "pass"),  # first try: easy
        _row(t + timedelta(days=1), "mha", "fail"),
        _row(t + timedelta(days=1, minutes=5), "mha", "pass"),
        _row(t + timedelta(days=2), "gqa", "fail"),
        _row(t + timedelta(days=2, minutes=5), "gqa", "pass"),
        _row(t + timedelta(days=3), "mqa", "fail"),
    ]
    events = [{"ts": (t + timedelta(days=2, minutes=1)).timestamp(), "kata": "gqa", "kind": "hint"}]
    ratings = {s.kata: s.rating for s in schedule.sessions(attempts, events)}
    assert ratings == {"sdpa": "easy", "mha": "good", "gqa": "hard", "mqa": "again"}


def test_a_failed_kata_is_due_before_an_easy_one_and_recurring_mistakes_bring_katas_back():
    katas = catalog.summaries()
    now = datetime.now(UTC)
    t = now - timedelta(days=3)
    attempts = [_row(t, "sdpa", "pass"), _row(t + timedelta(hours=5), "mha", "fail")]
    plans = schedule.plan(katas, attempts, [])
    assert plans["mha"].due < plans["sdpa"].due
    rec = schedule.recommend(katas, plans, now)
    assert rec is not None and rec.kata == "mha" and "due for review" in rec.reason["en"]
    # The same mistake in two sessions: a kata that exercises it comes back within a day.
    mistake = "scale-by-d-model"
    assert mistake in katas["gqa"].mistakes and mistake in katas["mqa"].mistakes
    before = schedule.plan(
        katas, [_row(t, "gqa", "pass"), _row(t + timedelta(hours=1), "mqa", "pass")], []
    )
    repeated = [
        _row(t, "gqa", "pass"),
        _row(t + timedelta(hours=1), "mqa", "pass"),
        _row(t + timedelta(days=1), "gqa", "fail", [mistake]),
        _row(t + timedelta(days=2), "mha", "fail", [mistake]),
    ]
    after = schedule.plan(katas, repeated, [])
    assert after["mqa"].due < before["mqa"].due
    assert after["mqa"].due <= t + timedelta(days=2) + schedule.RECURRING_DELAY
    assert after["mqa"].recurring == [(mistake, 2)]


def test_a_new_user_gets_the_first_kata_in_teaching_order():
    katas = catalog.summaries()
    rec = schedule.recommend(katas, schedule.plan(katas, [], []), datetime.now(UTC))
    assert rec is not None and rec.kata == next(iter(katas))


@pytest.mark.slow
def test_kata_next_stats_and_list_from_the_cli():
    from attnkata.checker.store import History

    with History() as h:  # a failed sdpa session two days ago (this test's own KATA_HOME)
        h.record_attempt(
            "sdpa", "fail", 3, 10, 1.0, "sdpa.py", ["missing-scale"], ts=time.time() - 2 * 86400
        )
    nxt = json.loads(_kata("next", "--json").stdout)
    assert nxt["kata"] == "sdpa" and nxt["plan"]["last_rating"] == "again"
    assert "due" in nxt and isinstance(nxt["reason"], str)
    stats = json.loads(_kata("stats", "--json").stdout)
    assert "due" in stats and "due" in stats["katas"]["sdpa"]
    listed = {r["id"]: r for r in json.loads(_kata("list", "--json").stdout)}
    assert set(listed) == set(catalog.kata_ids()) and all("due" in r for r in listed.values())
    text = _kata("next").stdout
    assert "sdpa" in text and "kata start sdpa" in text


# -- terminal and HTML rough edges ------------------------------------------------------------------
@pytest.mark.slow
def test_80_columns_never_cut_ids_or_signatures():
    env = {"COLUMNS": "80"}
    listing = _kata("list", env=env).stdout
    for kata_id in catalog.kata_ids():
        assert re.search(rf"(?m)^\s*{re.escape(kata_id)}\s", listing), (
            f"{kata_id} cut in `kata list`"
        )
    for kata_id in ("gqa", "mla", "sliding-window"):
        shown = _kata("show", kata_id, env=env).stdout
        assert "…" not in shown.replace("……", ""), f"`kata show {kata_id}` cut a cell"
    for lang in ("en", "zh"):
        assert "…" not in _kata("mistakes", "--lang", lang, env={"COLUMNS": "120"}).stdout


def test_statements_state_the_contract_without_naming_the_traps():
    traps = [
        "`.repeat`",
        "k.repeat(",
        "wrong order",
        "off-by-one",
        "k.T`",
        "top-left",
        "差一",
        "左上角",
        "顺序却是错的",
    ]
    for kata_id in catalog.kata_ids():
        for lang in ("en", "zh"):
            text = catalog.get_kata(kata_id).statement(lang)
            named = [t for t in traps if t in text]
            assert not named, f"{kata_id} ({lang}) names a trap: {named}"


def _result(tests: list[Outcome], diags: list[Diagnostic] = ()) -> Result:
    return Result(
        kata="sdpa",
        solution="x.py",
        status="fail",
        required_tiers=["core"],
        lang="en",
        tests=tests,
        diagnostics=list(diags),
    )


def test_identical_messages_are_shown_once():
    long = (
        "your code raised TypeError: unsupported operand type(s) for @: 'Tensor' and 'NoneType' "
        * 2
    )
    tests = [Outcome(f"test_{i}", "core", "fail", long, 0.0) for i in range(5)]
    tests.insert(2, Outcome("test_other", "core", "fail", "something else", 0.0))
    console = Console(width=200, record=True)
    render_result(console, _result(tests))
    text = console.export_text()
    assert text.count(long.strip()) == 1
    assert text.count("same message as test_0") == 4


def test_code_excerpts_merge_so_no_line_is_printed_twice():
    source = "\n".join(f"line_{n} = {n}" for n in range(1, 21))
    refs = [SourceRef(line=10), SourceRef(line=11), SourceRef(line=18)]
    assert excerpt_blocks(refs, 20) == [(9, 12, {10, 11}), (17, 19, {18})]
    d = Diagnostic(id="x", severity="essential", title="t", explanation="e", source=refs)
    console = Console(width=100, record=True)
    console.print(diagnostic_panel(d, source.splitlines(), "en"))
    text = console.export_text()
    for n in range(9, 13):
        assert text.count(f"line_{n} ") == 1
    html = result_html(_result([], [d]), source)
    assert html.count("line_10 ") == 1 and html.count("line_11 ") == 1


@pytest.mark.slow
def test_sliding_window_off_by_one_points_at_the_wrong_line_only():
    from attnkata.checker.runner import check

    for name, wrong in (
        ("window-off-by-one.py", "W = left + right"),
        ("../../real/sliding-window/mistral_paper_off_by_one.py", "j >= p - W"),
    ):
        path = FIXTURES / "mistakes" / "sliding-window" / name
        result = check(catalog.get_kata("sliding-window"), path)
        top = result.diagnostics[0]
        assert top.id == "window-off-by-one"
        lines = path.read_text().splitlines()
        shown = [lines[r.line - 1] for r in top.source]
        assert shown and all(wrong in line for line in shown), shown


def test_pictures_render_in_the_terminal_and_in_html():
    pic = {
        "caption": {"en": "online softmax, row 3", "zh": "在线 softmax，第 3 行"},
        "columns": ["key block", {"en": "running max (yours)", "zh": "运行最大值（你的）"}],
        "rows": [[0, "1.5"], [1, "0.0"]],
        "marked": [1],
        "differs": [[1, 1]],
    }
    d = Diagnostic(
        id="x",
        severity="essential",
        title="t",
        explanation="e",
        data={
            "pictures": [pic],
            "mask_expected": [[1, 0]],
            "mask_got": [[1, 1]],
            "grid_caption": {"en": "query blocks x key blocks", "zh": "查询块 x 键块"},
        },
    )
    for lang, words in (
        ("en", ["online softmax, row 3", "running max (yours)", "query blocks x key blocks"]),
        ("zh", ["在线 softmax，第 3 行", "运行最大值（你的）", "查询块 x 键块"]),
    ):
        console = Console(width=100, record=True)
        console.print(diagnostic_panel(d, [], lang))
        text = console.export_text()
        assert all(w in text for w in words), text
        r = _result([], [d])
        r.lang = lang
        html = result_html(r)
        assert all(w in html for w in words)


def test_clipped_messages_end_on_a_word_boundary():
    text = "the grader compared your output with the reference and found a difference " * 6
    out = clip(text, 100)
    assert len(out) <= 100 and out.endswith("…")
    assert text.startswith(out[:-1]) and text[len(out) - 1] == " "
    assert clip("short", 100) == "short"
    assert len(clip("注意力" * 100, 50)) == 50


def test_a_long_test_message_in_feedback_ends_on_a_word_boundary():
    from attnkata.checker.sets.report import MAX_FEEDBACK_MESSAGE, failed_test_line

    message = "your output differs from the reference where the mask is all False " * 10
    line = failed_test_line(
        {"id": "core::test_x", "tier": "core", "status": "fail", "message": message}, "en"
    )
    shown = line.split(": ", 1)[1]
    assert shown.endswith("…") and len(shown) <= MAX_FEEDBACK_MESSAGE
    assert message.startswith(shown[:-1]) and message[len(shown) - 1] == " "


def test_html_documents_name_a_cjk_font():
    from attnkata.checker.sets import handout, report

    for css in (handout.CSS, report.CSS):
        assert "Noto Sans CJK SC" in css and "WenQuanYi Micro Hei" in css and ":lang(zh)" in css
    readme = (REPO / "README.md").read_text()
    assert "fonts-wqy-microhei" in readme or "fonts-noto-cjk" in readme


def test_a_virtual_environment_under_the_temp_dir_is_a_library_path():
    """A venv in /tmp (CI, a throwaway venv) must reach the sandbox: its numpy and torch."""
    from attnkata.checker.sandbox.host import _library_path

    tmp, package = "/tmp", "/work/checkout"
    assert _library_path("/tmp/venv/lib/python3.11/site-packages", package, tmp)
    assert not _library_path("/tmp/student-files", package, tmp)
    assert not _library_path("/tmp", package, tmp)
    assert not _library_path("/work/checkout/reference", package, tmp)
    # A venv inside the checkout: its packages (an extra installed only there, like triton).
    assert _library_path("/work/checkout/.venv/lib/python3.11/site-packages", package, tmp)
    assert not _library_path("/work", package, tmp)  # holds the package (its references)
    assert _library_path("/usr/lib/python3/dist-packages", package, tmp)
