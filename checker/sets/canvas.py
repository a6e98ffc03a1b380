"""A Canvas gradebook import file from `kata set grade`'s results.

Canvas exports its gradebook as CSV: `Student, ID, SIS User ID, SIS Login ID, [Root Account,]
Section`, then one column per assignment, and a second row `Points Possible`. It imports a
file with the same leading columns in the same order plus one column per assignment to update.
Submission folders are matched to Canvas rows by SIS Login ID, then by the login (the part of
an e-mail login before the @), then by an e-mail column, then by name; a folder that matches no
row, or several, is listed and left out. Stdlib only.
"""

from __future__ import annotations

import csv
import io
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from attnkata.checker.errors import UsageError
from attnkata.checker.sets.grade import ClassResults
from attnkata.checker.sets.report import _cell, write_atomic

IDENTITY = (
    "Student",
    "ID",
    "SIS User ID",
    "SIS Login ID",
    "Integration ID",
    "Root Account",
    "Section",
)
REQUIRED = ("Student", "ID", "SIS Login ID", "Section")
POINTS_ROW = "Points Possible"


@dataclass
class CanvasImport:
    columns: list[str]
    rows: list[list[str]]
    matched: dict[str, str] = field(default_factory=dict)  # folder -> Canvas row's Student
    unmatched_folders: list[str] = field(default_factory=list)
    unmatched_students: list[str] = field(default_factory=list)  # Canvas students with no folder
    ambiguous: list[str] = field(default_factory=list)


def _norm(text: str) -> str:
    """Case, accents, spaces and punctuation do not matter when matching a folder name."""
    text = unicodedata.normalize("NFKD", text).casefold()
    return "".join(ch for ch in text if ch.isalnum())


def _names(student: str) -> set[str]:
    """`Last, First` and `First Last` both match a folder `first_last` or `lastfirst`."""
    if "," in student:
        last, _, first = student.partition(",")
        return {_norm(first + last), _norm(last + first)}
    parts = student.split()
    return {_norm(student), _norm(" ".join(parts[-1:] + parts[:-1]))}


def read_export(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Canvas's columns and its student rows (the `Points Possible` row and test students dropped)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the Canvas export {path}: {exc}") from None
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header:
        raise UsageError(
            f"{path} is empty", "export the gradebook from Canvas: Grades > Export > CSV"
        )
    header = [h.strip() for h in header]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise UsageError(
            f"{path} is not a Canvas gradebook export: no {', '.join(missing)} column",
            "export it from Canvas: Grades > Export > Export Entire Gradebook",
        )
    rows = []
    for values in reader:
        row = dict(zip(header, (v.strip() for v in values), strict=False))
        first = row.get("Student", "")
        if (
            POINTS_ROW in first
            or (not first and POINTS_ROW in " ".join(values))
            or first == "Student, Test"
        ):
            continue
        if any(values):
            rows.append(row)
    return header, rows


def _indexes(header: list[str], rows: list[dict[str, str]]) -> list[dict[str, list[int]]]:
    """Lookup tables in matching order: SIS login, login, e-mail, name."""
    emails = [c for c in header if "email" in c.lower()]
    tables: list[dict[str, list[int]]] = [{}, {}, {}, {}]
    for i, row in enumerate(rows):
        login = row.get("SIS Login ID", "")
        keys = [
            {_norm(login)},
            {_norm(login.partition("@")[0])} if "@" in login else set(),
            {_norm(row[c]) for c in emails if row.get(c)}
            | {_norm(row[c].partition("@")[0]) for c in emails if "@" in row.get(c, "")},
            _names(row.get("Student", "")),
        ]
        for table, ks in zip(tables, keys, strict=True):
            for k in ks - {""}:
                table.setdefault(k, []).append(i)
    return tables


def build_import(cr: ClassResults, export: Path, column: str | None = None) -> CanvasImport:
    header, rows = read_export(export)
    column = column or cr.manifest.title
    ident = [c for c in header if c in IDENTITY]  # Canvas's own order, as exported
    tables = _indexes(header, rows)
    scores: dict[int, str] = {}
    result = CanvasImport(columns=[*ident, column], rows=[])
    for folder in cr.students:
        key = _norm(folder)
        hits: list[int] = []
        for table in tables:
            hits = table.get(key, [])
            if hits:
                break
        if len(hits) == 1 and hits[0] not in scores:
            scores[hits[0]] = f"{cr.total(folder):g}"
            result.matched[folder] = rows[hits[0]].get("Student", "")
        elif len(hits) > 1 or (hits and hits[0] in scores):
            result.ambiguous.append(folder)
        else:
            result.unmatched_folders.append(folder)
    points = [""] * len(ident)
    points[0] = POINTS_ROW
    result.rows.append([*points, f"{cr.manifest.max_points:g}"])
    for i, row in enumerate(rows):
        if i not in scores:
            result.unmatched_students.append(row.get("Student", ""))
        # A student without a folder keeps an empty cell: Canvas leaves that grade unchanged.
        result.rows.append([_cell(row.get(c, "")) for c in ident] + [scores.get(i, "")])
    return result


def write_import(imp: CanvasImport, path: Path) -> Path:
    f = io.StringIO(newline="")
    w = csv.writer(f)
    w.writerow([_cell(c) for c in imp.columns])
    # The points row's leading spaces are how Canvas writes it; keep the cell as text.
    w.writerows(imp.rows)
    write_atomic(Path(path), f.getvalue())
    return Path(path)


def canvas_warnings(imp: CanvasImport) -> list[str]:
    out = []
    if imp.unmatched_folders:
        out.append(
            f"Canvas: {len(imp.unmatched_folders)} submission folder(s) match no student in the export: "
            f"{', '.join(imp.unmatched_folders[:10])}"
        )
    if imp.ambiguous:
        out.append(
            f"Canvas: {len(imp.ambiguous)} folder(s) match several students (left out): "
            f"{', '.join(imp.ambiguous[:10])}"
        )
    if imp.unmatched_students:
        out.append(
            f"Canvas: {len(imp.unmatched_students)} student(s) have no submission folder (left blank): "
            f"{', '.join(' '.join(s.split()) for s in imp.unmatched_students[:10])}"
        )
    return out
