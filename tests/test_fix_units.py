"""`kata fix`, the hint ladder and the folded result, without grading anything: the source
edits (libcst keeps the candidate's formatting), the diff, the verdict on a repair, writing
with a kept version and undoing it, the folded terminal and HTML output, the ladder's rungs,
the joint texts, and that mock interviews and graded sets show no fix unless asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from attnkata.checker import mistakes
from attnkata.checker.fix import files
from attnkata.checker.fix.search import diff_of
from attnkata.checker.fix.site import Site, with_kwarg
from attnkata.checker.fix.verify import judge
from attnkata.checker.messages import MESSAGES, msg
from attnkata.checker.models import Diagnostic, Fix, FixReport, Result, SourceRef
from attnkata.checker.models import TestResult as Outcome
from attnkata.checker.sets.worker import FileRules

SOURCE = """import torch


def f(q, k):
    # the scores
    s = q @ k.transpose(-2, -1)  # (L, S)
    return s.softmax(-1) * 2
"""


def _site(source: str = SOURCE) -> Site:
    return Site(source, [(6, 6)])


# -- the edits ---------------------------------------------------------------------------------
def test_an_edit_keeps_the_rest_of_the_file_byte_for_byte():
    site = _site()
    call = site.calls("transpose")[0]
    new = site.replace(call, "k.mT")
    assert new == SOURCE.replace("k.transpose(-2, -1)", "k.mT")  # comments and blank lines kept


def test_an_operation_put_inside_another_keeps_its_meaning():
    site = _site()
    prod = site.nodes(__import__("libcst").BinaryOperation)[0]  # q @ k.transpose(...)
    softmax = site.calls("softmax")[0]
    new = site.replace(softmax.func.value, "s + 1")  # s.softmax -> (s + 1).softmax
    assert "(s + 1).softmax(-1)" in new
    assert site.replace(prod, "q @ k.mT") == SOURCE.replace("q @ k.transpose(-2, -1)", "q @ k.mT")


def test_a_line_goes_in_after_the_comments_that_lead_its_statement():
    site = _site()
    stmt = site.calls("transpose")[0]
    new = site.insert_before(
        stmt, "k = k.float()", also=[(site.calls("softmax")[0], "s.softmax(dim=-1)")]
    )
    lines = new.splitlines()
    assert lines[4:7] == [
        "    # the scores",
        "    k = k.float()",
        "    s = q @ k.transpose(-2, -1)  # (L, S)",
    ]
    assert "s.softmax(dim=-1) * 2" in new
    compile(new, "f.py", "exec")


def test_nodes_nearest_the_diagnosis_come_first_and_names_are_fresh():
    site = Site(SOURCE + "\n\ndef g(x):\n    return x.softmax(0)\n", [(10, 10)])
    assert site.code(site.calls("softmax")[0]) == "x.softmax(0)"
    assert site.fresh("s") == "s_2" and site.fresh("rows") == "rows"


def test_a_keyword_is_added_or_replaced():
    import libcst as cst

    from attnkata.checker.fix.site import code_of

    call = cst.parse_expression("torch.tril(x, diagonal=1)")
    assert code_of(with_kwarg(call, "diagonal", "S - L")) == "torch.tril(x, diagonal=S - L)"
    assert (
        code_of(with_kwarg(cst.parse_expression("x.tril()"), "diagonal", "1"))
        == "x.tril(diagonal=1)"
    )


def test_the_diff_names_the_lines_it_touches():
    after = SOURCE.replace(
        "    return s.softmax(-1) * 2\n", "    m = 1\n    return s.softmax(-1) * m\n"
    )
    text, lines, touched = diff_of(SOURCE, after, "f.py")
    assert text.startswith("--- a/f.py\n+++ b/f.py\n")
    assert lines == [7] and touched == 2


# -- the verdict on a repair ---------------------------------------------------------------------
def _result(statuses: dict[str, str]) -> Result:
    return Result(
        kata="sdpa",
        solution="x.py",
        status="fail",
        tests=[Outcome(t, "core", s) for t, s in statuses.items()],
    )


def test_a_repair_must_fix_what_its_mistake_explains_and_break_nothing():
    before = _result({"a": "fail", "b": "fail", "c": "pass", "d": "skip"})
    assert judge(
        before, _result({"a": "pass", "b": "pass", "c": "pass", "d": "skip"}), ["a", "b"]
    ).ok
    broke = judge(before, _result({"a": "pass", "b": "pass", "c": "fail", "d": "skip"}), ["a"])
    assert not broke.ok and "breaks" in broke.why
    half = judge(before, _result({"a": "pass", "b": "fail", "c": "pass", "d": "skip"}), ["a", "b"])
    assert not half.ok and half.partial  # progress: tried provisionally, never shown as is
    nothing = judge(before, _result({"a": "fail", "b": "fail", "c": "pass", "d": "skip"}), [])
    assert not nothing.ok and not nothing.partial
    assert not judge(before, Result(kata="sdpa", solution="x.py", status="error"), []).ok


# -- --write and --undo: nothing is ever lost ------------------------------------------------------
def test_write_keeps_the_previous_version_and_undo_restores_it(tmp_path: Path):
    path = tmp_path / "gqa.py"
    path.write_bytes(b"x = 1\r\ny = 2\r\n")  # the file's own line endings stay
    checked = files.sha("x = 1\ny = 2\n")
    with pytest.raises(files.Changed):
        files.write("gqa", path, "x = 3\ny = 2\n", files.sha("something else"))
    kept = files.write("gqa", path, "x = 3\ny = 2\n", checked)
    assert path.read_bytes() == b"x = 3\r\ny = 2\r\n"
    assert kept.read_bytes() == b"x = 1\r\ny = 2\r\n"
    path.write_text("x = 4  # edited after the fix\n")
    done = files.undo("gqa", path)
    assert done is not None and path.read_bytes() == b"x = 1\r\ny = 2\r\n"
    assert done.kept.read_text() == "x = 4  # edited after the fix\n"  # the undone version kept too
    assert files.undo("gqa", path) is None  # that write was undone already


# -- the diagnosis first -----------------------------------------------------------------------------
def _folded_result() -> Result:
    tests = [Outcome(f"t{i}", "core", "fail", f"message {i}") for i in range(8)]
    tests += [Outcome("other", "core", "fail", "unexplained"), Outcome("ok", "core", "pass")]
    d = Diagnostic(
        id="kv-repeat-instead-of-interleave",
        severity="essential",
        title="KV heads tiled",
        data={"explains": {"tests": 8, "failing": 9, "ids": [f"t{i}" for i in range(8)]}},
    )
    return Result(kata="gqa", solution="x.py", status="fail", tests=tests, diagnostics=[d])


def test_the_terminal_leads_with_the_diagnosis_and_folds_the_tests_it_explains():
    from attnkata.cli.render import render_result

    console = Console(width=200, record=True)
    render_result(console, _folded_result())
    text = console.export_text()
    assert text.index("What went wrong") < text.index(
        "explains 8 failing test(s): t0, t1, t2, t3 … and 4 more"
    )
    assert "message 5" not in text  # folded
    assert "unexplained" in text and "Failing tests no diagnosis explains" in text
    assert "9 failing test(s) in all; `--tests` lists every test." in text
    console = Console(width=200, record=True)
    render_result(console, _folded_result(), all_tests=True)
    every = console.export_text()
    assert all(f"message {i}" in every for i in range(8)) and "ok" in every


def test_the_html_result_leads_with_the_diagnosis_and_keeps_every_test_in_a_fold_out():
    from attnkata.checker.html import result_html

    html = result_html(_folded_result())
    assert html.index("KV heads tiled") < html.index("explains 8 failing test(s)")
    assert html.index("explains 8") < html.index('<details class="attnkata-tests">')
    assert "every test (10)" in html and "message 7" in html  # in the fold-out


def test_the_fix_report_renders_its_diff_and_its_honest_answers():
    from attnkata.checker.html import fix_html
    from attnkata.cli.render import render_fix_report

    report = FixReport(kata="gqa", solution="gqa.py", status="fail", failing=20, graded=3)
    report.fixes.append(
        Fix(
            "kv-repeat-instead-of-interleave",
            "KV heads tiled",
            "--- a/gqa.py\n+++ b/gqa.py\n-a\n+b\n",
            [29],
            1,
            20,
            20,
        )
    )
    report.unfixed = ["scale-by-d-model"]
    report.fixed_status = "fail"
    report.attach(_folded_result(), "b\n")
    console = Console(width=200, record=True)
    render_fix_report(console, report, "gqa")
    text = console.export_text()
    assert (
        "Fix 1 of 1: kv-repeat-instead-of-interleave" in text
        and "fixes 20 of 20 failing tests" in text
    )
    assert "No verified fix for scale-by-d-model" in text and "kata fix gqa --write" in text
    assert "+b" in fix_html(report) and "No verified fix for scale-by-d-model" in fix_html(report)
    data = report.to_dict()
    assert {"fixes", "unfixed"} <= data.keys()
    assert {"mistake", "diff", "lines", "tests_fixed", "tests_failing"} <= data["fixes"][0].keys()


# -- the ladder --------------------------------------------------------------------------------------
def _essential_ids() -> list[str]:
    return [m for m, x in mistakes.catalogue().items() if x.severity == "essential"]


def test_every_essential_mistake_has_a_first_rung_in_words_in_both_languages():
    for mid in _essential_ids():
        key = f"ladder.property.{mid}"
        assert key in MESSAGES, mid
        for lang in ("en", "zh"):
            text = msg(key, lang)
            assert not any(c in text for c in ("`", "torch.", "=", "[", "()")), (
                mid,
                text,
            )  # no code
        assert len(msg(key, "en").split()) <= 120


def test_the_second_rung_points_at_the_line_and_the_evidence_on_a_small_input():
    from attnkata.checker.ladder import where_text

    d = Diagnostic(
        id="kv-repeat-instead-of-interleave",
        severity="essential",
        title="t",
        evidence=["explains 20 of 20 failing tests", "reproduced on the probe(s) 'no mask'"],
        source=[SourceRef(line=29, text="k = k.repeat(1, n_rep, 1, 1)")],
        data={"head_map_expected": [0, 0, 0, 1, 1, 1], "head_map_got": [0, 1, 0, 1, 0, 1]},
    )
    text = where_text(d, "en")
    assert text.startswith("Line 29: `k = k.repeat(1, n_rep, 1, 1)`.")
    assert "query head 1 reads KV head 1; it should read KV head 0" in text
    assert "explains 20" not in text and "reproduced on the probe(s) 'no mask'" in text
    zh = where_text(d, "zh", evidence=False)
    assert "第 29 行" in zh and "查询头 1 读的是 KV 头 1" in zh and "reproduced" not in zh
    grid = Diagnostic(
        id="causal-mask-top-left",
        severity="essential",
        title="t",
        data={"mask_expected": [[1, 0], [1, 1]], "mask_got": [[1, 1], [1, 1]]},
    )
    assert "query 0 attends key 1; it should not" in where_text(grid, "en")
    assert len(where_text(d, "en").split()) <= 121


def test_the_ladder_climbs_one_rung_per_call_then_leaves_the_kata_hints():
    from attnkata.checker.ladder import next_rung, shown
    from attnkata.checker.store import History

    with History() as h:
        diagnosed = ["untouched-skeleton", "kv-repeat-instead-of-interleave", "no-known-mistake"]
        assert next_rung(h, "gqa", diagnosed) == ("kv-repeat-instead-of-interleave", 1)
        for n in (1, 2, 3):
            h.record_event("gqa", "hint", {"id": f"rung:kv-repeat-instead-of-interleave:{n}"})
        assert shown(h, "gqa") == {"kv-repeat-instead-of-interleave": 3}
        assert next_rung(h, "gqa", diagnosed) is None


# -- mistakes found together ------------------------------------------------------------------------
def test_two_mistakes_of_a_family_never_say_the_other_part_was_done_right():
    from attnkata.checker.runner import joint_texts

    def diag(mid: str) -> Diagnostic:
        m = mistakes.get(mid)
        return Diagnostic(
            id=mid,
            severity="essential",
            title="t",
            explanation=m.render("explanation", "en", {"block_k": 64}),
        )

    alone = [diag("online-softmax-no-rescale")]
    assert "rescales the running sum" in joint_texts(alone, "en")[0].explanation
    both = joint_texts(
        [diag("online-softmax-no-rescale"), diag("online-softmax-sum-not-rescaled")], "en"
    )
    assert (
        "rescales the running sum" not in both[0].explanation
        and "not rescaled either" in both[0].explanation
    )
    assert "rescales the accumulator" not in both[1].explanation
    assert "accumulator either" in both[1].explanation


# -- where fixes apply -------------------------------------------------------------------------------
def test_a_mock_interview_gives_the_first_rung_never_a_fix():
    from attnkata.checker.mock import session as sess

    assert sess.MOCK_MAX_RUNG == 1
    text = sess._catalogue_fix("input-mutated", "en")
    assert text == msg("ladder.property.input-mutated", "en")
    assert mistakes.get("input-mutated").render("fix", "en") not in text


def test_graded_feedback_shows_a_fix_only_when_the_instructor_asked(tmp_path: Path):
    from attnkata.checker.sets import worker
    from attnkata.checker.sets.report import fix_markdown

    failing = _folded_result()
    failing.attach_source("x = 1\n")
    calls = []

    def fake_check(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(args)
        return failing

    reply = worker.grade_one(fake_check, "gqa", tmp_path / "gqa.py", None, "en", FileRules())
    assert reply["ok"] and "fix" not in reply
    assert fix_markdown(None, "en") == []
    fix = {
        "fixes": [
            {
                "mistake": "kv-repeat-instead-of-interleave",
                "title": "t",
                "diff": "-a\n+b\n",
                "tests_fixed": 2,
                "tests_failing": 3,
            }
        ]
    }
    text = "\n".join(fix_markdown(fix, "en"))
    assert "Verified fix" in text and "```diff\n-a\n+b\n```" in text and "fixes 2 of 3" in text


def test_the_set_grade_command_takes_fixes_and_a_feedback_folder():
    from typer.testing import CliRunner

    from attnkata.cli.app import app

    res = CliRunner().invoke(app, ["set", "grade", "--help"])
    assert "--feedback" in res.stdout and "--feedback-dir" in res.stdout and "fixes" in res.stdout


def test_messages_of_the_fix_part_are_in_the_one_catalogue():
    from attnkata.checker import messages_fix

    assert messages_fix.MESSAGES.keys() <= MESSAGES.keys()
    assert all(k.split(".")[0] in ("fix", "fold", "ladder", "joint") for k in messages_fix.MESSAGES)
    json.dumps(messages_fix.MESSAGES, ensure_ascii=False)
