"""Problem sets, the fast parts: scoring, weights, deadlines, the journal, locating files,
the handout's helpers and the Markdown/CSV escaping. No grading here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnkata.checker.errors import UsageError
from attnkata.checker.models import Result
from attnkata.checker.models import TestResult as TR
from attnkata.checker.sets.grade import Journal, discover, locate
from attnkata.checker.sets.handout import legend, markdown, signatures
from attnkata.checker.sets.manifest import parse_deadline, parse_weights, score, tier_fractions
from attnkata.checker.sets.report import _cell, _fence, _inline, _of, failed_test_line, safe_name


def make_tests(**tiers: tuple[int, int]) -> list[TR]:
    out = []
    for tier, (passed, total) in tiers.items():
        out += [TR(f"{tier}{i}", tier, "pass" if i < passed else "fail") for i in range(total)]
    return out


def test_score_weights_each_tier_by_its_share_of_passed_tests():
    w = {"core": 0.6, "edge": 0.3, "efficient": 0.1}
    assert score(make_tests(core=(12, 12), edge=(6, 6), efficient=(2, 2)), w, 10) == 10
    assert score(make_tests(core=(12, 12), edge=(0, 6), efficient=(0, 2)), w, 10) == 6
    assert score(make_tests(core=(6, 12), edge=(3, 6), efficient=(1, 2)), w, 10) == 5
    assert score([], w, 10) == 0


def test_a_kata_without_some_tier_can_still_reach_full_points():
    w = {"core": 0.6, "edge": 0.3, "efficient": 0.1}
    assert score(make_tests(core=(4, 4), edge=(2, 2)), w, 10) == 10
    # core 0.6 / 0.9 of the points, edge 0.3 / 0.9
    assert score(make_tests(core=(4, 4), edge=(0, 2)), w, 9) == 6


def test_skipped_tests_neither_pass_nor_fail():
    tests = make_tests(core=(2, 2)) + [TR("cuda", "core", "skip")]
    assert tier_fractions(tests) == {"core": (2, 2)}
    assert score(tests, {"core": 1.0}, 10) == 10
    assert tier_fractions([t.__dict__ for t in tests]) == {"core": (2, 2)}  # dicts from JSON too


def test_parse_weights_and_its_errors():
    assert parse_weights("core=0.7, edge=0.3") == {"core": 0.7, "edge": 0.3, "efficient": 0.0}
    for bad in ("core=x", "speed=1", "core", "core=-1", "core=0,edge=0"):
        with pytest.raises(UsageError):
            parse_weights(bad)


def test_deadline_is_stored_with_an_offset():
    text = parse_deadline("2030-01-02T03:04")
    assert text.startswith("2030-01-02T03:04:00") and ("+" in text[10:] or "-" in text[10:])
    with pytest.raises(UsageError):
        parse_deadline("next friday")


def test_journal_keeps_the_last_complete_line_and_survives_a_cut_one(tmp_path: Path):
    path = tmp_path / "journal.jsonl"
    j = Journal(path)
    key = {"sha256": "a", "kata_hash": "h", "config": {"timeout": 2}}
    j.append({"student": "s", "kata": "k", **key, "result": {"status": "fail"}})
    j.append({"student": "s", "kata": "k", **key, "result": {"status": "pass"}})
    j.close()
    with path.open("a") as f:
        f.write('{"student": "t", "kata": "k", "sha')  # killed mid-write
    j2 = Journal(path)
    assert j2.lookup("s", "k", key)["result"]["status"] == "pass"
    assert j2.lookup("s", "k", {**key, "sha256": "b"}) is None  # the file changed: regrade
    assert j2.lookup("t", "k", key) is None
    j2.append({"student": "u", "kata": "k", **key, "result": {"status": "pass"}})
    j2.close()
    assert Journal(path).lookup("u", "k", key) is not None  # started on a fresh line


def test_locate_tolerates_a_subfolder_and_case_and_explains_a_missing_file(tmp_path: Path):
    a = tmp_path / "a"
    (a / "hw3").mkdir(parents=True)
    (a / "hw3" / "SDPA.py").write_text("x = 1\n")
    path, notes = locate(a, "sdpa.py")
    assert path == a / "hw3" / "SDPA.py" and "hw3/SDPA.py" in notes[0]
    b = tmp_path / "b"
    b.mkdir()
    (b / "attention.py").write_text("x = 1\n")
    path, notes = locate(b, "sdpa.py")
    assert path is None and "found: attention.py" in notes[0]
    c = tmp_path / "c"
    c.mkdir()
    (c / "sdpa.py").symlink_to(b / "attention.py")
    path, notes = locate(c, "sdpa.py")
    assert path is None and "symbolic link" in notes[0]


def test_discover_lists_student_folders_and_warns_about_loose_files(tmp_path: Path):
    for name in ("zoe", "adam", ".git", "__MACOSX"):
        (tmp_path / name).mkdir()
    (tmp_path / "stray.py").write_text("")
    students, warnings = discover(tmp_path)
    assert students == ["adam", "zoe"] and "stray.py" in warnings[0]
    with pytest.raises(UsageError):
        discover(tmp_path / "nope")


def test_legend_parses_both_languages():
    en = dict(legend("en"))
    assert en["B"] == "batch" and en["Hkv"] == "key/value heads" and en["d"] == "head dim"
    zh = dict(legend("zh"))
    assert set(zh) == set(en)


def test_signatures_show_headers_and_docstrings_not_bodies():
    src = (
        'import torch\n\n\ndef f(x: int,\n      y: int = 2) -> int:\n    """Add."""\n    return x + y\n\n\n'
        'class M:\n    """A module."""\n\n    def __init__(self, d):\n        self.d = d\n\n'
        '    def forward(self, x):\n        """Run."""\n        return x\n\n    def _private(self):\n        pass\n'
    )
    f, m = signatures(src, ("f", "M"))
    assert (
        "def f(x: int,\n      y: int = 2) -> int:" in f and '"""Add."""' in f and "return" not in f
    )
    assert "def __init__(self, d):" in m and "def forward(self, x):" in m and '"""Run."""' in m
    assert "_private" not in m and "self.d = d" not in m


def test_markdown_escapes_raw_html_and_renders_tables():
    out = markdown().render("| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>alert(1)</script>\n")
    assert "<table>" in out and "<script>" not in out


def test_untrusted_text_cannot_break_out_of_csv_or_markdown():
    assert _cell("=HYPERLINK(1)") == "'=HYPERLINK(1)" and _cell("alice") == "alice"
    fenced = _fence("a ``` b")
    assert fenced.startswith("````\n") and fenced.endswith("\n````")
    assert (
        safe_name("../../etc/passwd") == "etc_passwd"
        and safe_name("Zhang San 张三") == "Zhang_San_张三"
    )


def test_result_dicts_in_the_journal_round_trip():
    r = Result(kata="sdpa", solution="/x.py", status="fail", tests=make_tests(core=(1, 2)))
    assert Result.from_dict(json.loads(json.dumps(r.to_dict()))) == r


def test_markdown_feedback_keeps_arrows_and_code_and_escapes_only_what_opens_html():
    text = (
        "Use `q @ k.transpose(-2, -1)` -> (L, S); never <script>x</script>, `<not a tag>` in code"
    )
    out = _inline(text)
    assert "-&gt;" not in out and "&lt;" not in out and "->" in out
    assert "`q @ k.transpose(-2, -1)`" in out and "`<not a tag>`" in out  # code spans untouched
    assert "\\<script>" in out and "\\</script>" in out
    rendered = markdown().render(out)
    assert "<script>" not in rendered and "-&gt; (L, S)" in rendered  # the page shows "->"
    assert _inline("a ` b <c>") == "a ` b \\<c>"  # an unclosed backtick is no code span


def test_long_messages_end_at_a_word_with_an_ellipsis():
    words = " ".join(f"word{i}" for i in range(200))
    line = failed_test_line({"id": "t", "tier": "core", "status": "fail", "message": words}, "en")
    assert line.endswith("…") and line[:-1].rsplit(" ", 1)[1].startswith("word")
    assert all(
        w.startswith("word") and w[4:].isdigit() for w in line[:-1].split(": ", 1)[1].split()
    )
    from attnkata.checker.sets.platforms import TierPart, _tier_summary

    part = TierPart(
        "sdpa", "core", 0, 1, 0.0, 1.0, False, [{"id": "t", "message": words + " -> x"}]
    )
    for md in (True, False):
        shown = _tier_summary(part, "en", md)[1]
        assert shown.endswith("…") and shown[:-1].split()[-1][4:].isdigit(), shown


def test_scores_in_the_class_report_never_wrap():
    assert _of(20, 20) == "20\u00a0/\u00a020" and _of("7.50", 10) == "7.50\u00a0/\u00a010"
