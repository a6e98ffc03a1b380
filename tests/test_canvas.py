"""The Canvas import file: matching folders to Canvas students, Canvas's column order, the
Points Possible row, unmatched students and formula escaping. No grading (a fake class)."""

from __future__ import annotations

import csv
from pathlib import Path
from types import SimpleNamespace

import pytest

from attnkata.checker.errors import UsageError
from attnkata.checker.sets.canvas import build_import, canvas_warnings, read_export, write_import

EXPORT = (
    "Student,ID,SIS User ID,SIS Login ID,Root Account,Section,Homework 1 (123),Current Score\n"
    "    Points Possible,,,,,,10,\n"
    '"Lovelace, Ada",101,S101,ada@uni.edu,uni,Sec A,9,90\n'
    '"Hopper, Grace",102,S102,ghopper,uni,Sec A,8,80\n'
    "Alan Turing,103,S103,aturing@uni.edu,uni,Sec B,7,70\n"
    '"=cmd|calc, Evil",104,S104,+evil,uni,-Sec,0,0\n'
    '"Student, Test",105,,test,uni,Sec A,,\n'
    "Nobody Here,106,S106,nobody,uni,Sec B,,\n"
)


class FakeClass(SimpleNamespace):
    def total(self, student: str) -> float:
        return self.totals[student]


def fake(totals: dict[str, float]) -> FakeClass:
    return FakeClass(
        students=sorted(totals),
        totals=totals,
        manifest=SimpleNamespace(title="Week 3 katas", max_points=20.0),
    )


def test_matches_by_sis_login_then_login_email_and_name(tmp_path: Path):
    export = tmp_path / "export.csv"
    export.write_text(EXPORT)
    cr = fake({"ghopper": 20, "ada": 15.5, "Turing Alan": 12, "+evil": 3, "mallory": 1})
    imp = build_import(cr, export)
    assert imp.matched == {
        "ghopper": "Hopper, Grace",
        "ada": "Lovelace, Ada",
        "Turing Alan": "Alan Turing",
        "+evil": "=cmd|calc, Evil",
    }
    assert imp.unmatched_folders == ["mallory"] and imp.unmatched_students == ["Nobody Here"]
    warnings = " ".join(canvas_warnings(imp))
    assert "mallory" in warnings and "Nobody Here" in warnings

    out = write_import(imp, tmp_path / "import.csv")
    rows = list(csv.reader(out.open(newline="")))
    # Canvas's own identity columns, in its order, then one column named after the set.
    assert rows[0] == [
        "Student",
        "ID",
        "SIS User ID",
        "SIS Login ID",
        "Root Account",
        "Section",
        "Week 3 katas",
    ]
    assert rows[1][0] == "Points Possible" and rows[1][-1] == "20"
    by_id = {r[1]: r for r in rows[2:]}
    assert by_id["102"][-1] == "20" and by_id["101"][-1] == "15.5" and by_id["103"][-1] == "12"
    assert by_id["106"][-1] == ""  # no folder: left blank, Canvas keeps the grade
    evil = by_id["104"]
    assert (
        evil[0] == "'=cmd|calc, Evil"
        and evil[3] == "'+evil"
        and evil[5] == "'-Sec"
        and evil[-1] == "3"
    )
    assert "105" not in by_id  # Canvas's test student is not a student
    assert not any(cell[:1] in "=+-@" for r in rows for cell in r if cell)


def test_a_folder_matching_two_students_is_left_out(tmp_path: Path):
    export = tmp_path / "e.csv"
    export.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section\nAda Lee,1,,alee,A\nAda Lee,2,,alee2,A\n"
    )
    imp = build_import(fake({"Ada Lee": 5}), export)
    assert imp.ambiguous == ["Ada Lee"] and not imp.matched


def test_not_a_canvas_export_is_a_usage_error(tmp_path: Path):
    bad = tmp_path / "grades.csv"
    bad.write_text("name,score\nada,3\n")
    with pytest.raises(UsageError, match="not a Canvas gradebook export"):
        read_export(bad)
    with pytest.raises(UsageError):
        read_export(tmp_path / "absent.csv")
