"""Terminal escapes in candidate text (issue 22, item 10): what a candidate prints, the text
and class name of its exceptions, its file's name and lines reach `kata check`'s terminal,
`--json`, the HTML, the Markdown feedback, the class report and the platforms' outputs without
a control character other than newline and tab: no `ESC[2J`, no `\\r` that overwrites the
verdict, no OSC 52 clipboard write, no 8-bit CSI. Colour is off here (not a tty, NO_COLOR);
with colour forced, only rich's own codes are written."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.text import Text
from typer.testing import CliRunner

from attnkata.checker.html import result_html
from attnkata.checker.models import Diagnostic, Result, SourceRef
from attnkata.checker.models import TestResult as Outcome
from attnkata.checker.textsafe import clean, clean_data, json_text
from attnkata.cli.app import app
from attnkata.cli.console import SafeConsole

REPO = Path(__file__).resolve().parent.parent
ATTACKS = REPO / "tests" / "fixtures" / "attacks3"
ESCAPES = sorted(ATTACKS.glob("escape_*.py"))
# Every control character but newline and tab: C0, DEL, C1 (U+0080-U+009F), and the Unicode
# bidi and line-separator controls (a folder named with U+202E reads backwards in a report).
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069]")
EVIL = "a\x1b[2J\x1b[Hb\r PASS \x1b]52;c;ZXZpbA==\x07c\x9b2Jd\x1b[31me\x1b[0m\x7f\x00f\x1bc\x90q\x9c\tg\nh"


def controls(text: str) -> list[str]:
    """The control characters in `text`, each with some context."""
    return [repr(text[max(0, m.start() - 20) : m.end() + 10]) for m in CONTROL.finditer(text)]


@pytest.fixture(autouse=True)
def _no_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("FORCE_COLOR", raising=False)


def kata(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def outputs(res) -> str:
    text = res.stdout
    try:
        text += res.stderr
    except ValueError:  # stderr mixed into stdout
        pass
    return text


# -- the function ---------------------------------------------------------------------------
def test_clean_removes_whole_sequences_and_keeps_newline_tab_and_text():
    assert clean(EVIL) == "ab PASS cdef\tg\nh"
    assert clean("中文 ✓ tab\tnl\n") == "中文 ✓ tab\tnl\n"
    assert clean("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "link"
    assert not controls(clean("".join(map(chr, range(0x00, 0xA0)))))


def _evil_result() -> Result:
    """A result whose every candidate-derived string carries escapes."""
    result = Result(kata="sdpa", solution=f"evil{EVIL}.py", status="fail")
    result.tests.append(Outcome(id="t", tier="core", status="fail", message=EVIL))
    ref = SourceRef(line=1, text=EVIL)
    result.diagnostics.append(
        Diagnostic(
            id="x",
            severity="essential",
            title=EVIL,
            explanation=EVIL,
            fix=EVIL,
            evidence=[EVIL],
            source=[ref],
        )
    )
    return result


def test_clean_data_copies_results_without_changing_the_original():
    result = _evil_result()
    cleaned = clean_data(result)
    assert not controls(
        json.dumps(cleaned.to_dict(), ensure_ascii=False).replace("\\n", "").replace("\\t", "")
    )
    assert CONTROL.search(result.tests[0].message), "the original is left as it was"


def test_json_text_escapes_del_and_c1_and_keeps_the_data():
    text = json.dumps({"m": EVIL}, ensure_ascii=False)
    safe = json_text(text)
    assert not controls(safe) and json.loads(safe) == {"m": EVIL}


def test_a_forced_colour_console_writes_rich_codes_but_not_the_candidates():
    buf = io.StringIO()
    console = SafeConsole(
        file=buf, force_terminal=True, color_system="standard", no_color=False, width=80
    )
    console.print(Text("verdict", style="red"), Text(EVIL))
    written = buf.getvalue()
    assert "\x1b[31m" in written  # rich's own colour
    assert "PASS" in written and "ef" in written
    without_rich = re.sub(r"\x1b\[[0-9;]*m", "", written)  # rich's SGR codes only
    assert not controls(without_rich)


def test_html_of_a_result_has_no_control_characters():
    assert not controls(result_html(_evil_result(), source=EVIL))


# -- kata check, end to end -------------------------------------------------------------------
def test_there_are_escape_attacks():
    # in the message, in the exception's class name, in the printed output, in the source
    wanted = "escape_raise escape_class_name escape_print_exit escape_wrong_value".split()
    assert set(wanted) <= {p.stem for p in ESCAPES}


@pytest.mark.parametrize("path", ESCAPES, ids=lambda p: p.stem)
def test_kata_check_prints_no_candidate_control_characters(path: Path):
    res = kata("check", "sdpa", path)
    assert res.exit_code == 1, res.output
    assert "sdpa" in res.stdout
    assert not controls(outputs(res))


@pytest.mark.parametrize("path", ESCAPES, ids=lambda p: p.stem)
def test_kata_check_json_prints_no_control_characters(path: Path):
    res = kata("check", "sdpa", path, "--json")
    assert not controls(outputs(res))
    data = json.loads(res.stdout)
    assert data["status"] != "pass"


def test_a_file_name_with_escapes_is_shown_without_them(tmp_path: Path):
    evil = tmp_path / "evil\x1b[2J\x1b]52;c;ZXZpbA==\x07\x9b2J.py"
    shutil.copy(ATTACKS / "escape_raise.py", evil)
    res = kata("check", "sdpa", evil)
    assert "evil" in res.stdout and not controls(outputs(res))


# -- kata set grade: feedback, report, gradebook, JSON; the platforms' outputs -------------------
SET_STUDENTS = {
    "mallory\x1b[2J\x1b]0;x\x07": "escape_raise.py",
    "eve\u202elive\u2028x": "escape_raise.py",
    "oscar": "escape_class_name.py",
    "trent": "escape_print_exit.py",
    "peggy": "policy_needs_review.py",
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    tmp = tmp_path_factory.mktemp("escapes")
    bundle = tmp / "set"
    mp = pytest.MonkeyPatch()
    mp.setenv("NO_COLOR", "1")
    try:
        res = kata("set", "create", "--katas", "sdpa", "--out", bundle, "--title", "Escapes")
        assert res.exit_code == 0, res.output
        manifest = bundle / "instructor" / "manifest.json"
        data = json.loads(manifest.read_text())
        data.setdefault("grading", {})["policy"] = "warn"  # run the files that import os
        manifest.write_text(json.dumps(data, indent=1))
        subs = tmp / "submissions"
        for student, fixture in SET_STUDENTS.items():
            (subs / student).mkdir(parents=True)
            shutil.copy(ATTACKS / fixture, subs / student / "sdpa.py")
        out = tmp / "out"
        res = kata(
            "set",
            "grade",
            bundle,
            subs,
            "--jobs",
            "1",
            "--timeout",
            "5",
            "--quiet",
            "--csv",
            out / "grades.csv",
            "--html",
            out / "report.html",
            "--json",
            out / "results.json",
            "--feedback",
            out / "feedback",
            "--out",
            out / "work",
        )
        assert res.exit_code == 0, res.output
        auto = [
            kata("set", "autograde", bundle, subs / student, "--format", fmt)
            for fmt in ("gradescope", "prairielearn", "github-classroom", "classroom50")
            for student in list(SET_STUDENTS)[:1]
        ]
    finally:
        mp.undo()
    return SimpleNamespace(out=out, grade=res, auto=auto)


def test_set_grade_writes_no_control_characters_anywhere(graded):
    assert not controls(outputs(graded.grade))
    files = sorted(
        p
        for p in graded.out.rglob("*")
        if p.is_file() and p.suffix in (".md", ".html", ".csv", ".json")
    )
    assert len([p for p in files if p.suffix == ".md"]) == len(SET_STUDENTS)
    for p in files:
        text = p.read_text(encoding="utf-8")
        assert not controls(text), (p.name, controls(text)[:3])
    feedback = "\n".join(p.read_text("utf-8") for p in (graded.out / "feedback").glob("*.md"))
    assert (
        "RuntimeError" in feedback and "PASS" in feedback
    )  # the text is quoted, without its escapes


def test_platform_outputs_have_no_control_characters(graded):
    for res in graded.auto:
        assert res.exit_code == 0, res.output
        assert not controls(outputs(res))
        assert not controls(json.dumps(json.loads(res.stdout), ensure_ascii=False))


def test_needs_review_is_listed_in_the_class_report_and_the_feedback(graded):
    report = (graded.out / "report.html").read_text("utf-8")
    assert (
        'class="needs-review"' in report
        and "peggy" in report
        and "getattr(self, &lt;computed name&gt;)" in report
    )
    feedback = (graded.out / "feedback" / "peggy.md").read_text("utf-8")
    # Markdown: the `<` escaped as Markdown does it, no HTML entities in the file.
    assert "### Needs review" in feedback and "getattr(self, \\<computed name>)" in feedback
    data = json.loads((graded.out / "results.json").read_text("utf-8"))
    assert [r["student"] for r in data["needs_review"]] == ["peggy"]
