"""`kata set autograde`: grade one student's submission folder and write the result file of the
platform the course lives on (Gradescope, PrairieLearn, GitHub Classroom, Classroom 50).

Grading is `kata set grade` itself (same isolation, limits, tier weights and late penalty) on a
one-student class; this module only lays the outcome out. Each (kata, tier) becomes one
platform test worth that tier's share of the kata's points, so partial credit reads the same
as in the gradebook. The diagnoses (title, explanation, fix, the student's own lines) go in the
field each platform shows to students.
"""

from __future__ import annotations

import base64
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnkata.checker.catalog import TIERS
from attnkata.checker.errors import UsageError
from attnkata.checker.messages import clip, label, msg
from attnkata.checker.sets.grade import MISSING, ClassResults, Entry, GradeOptions, grade_set
from attnkata.checker.sets.manifest import KataEntry, tier_fractions
from attnkata.checker.sets.report import (
    _inline,
    _ordered,
    _source_lines,
    diagnosis_markdown,
    feedback_markdown,
    quoted_lines,
)
from attnkata.checker.textsafe import clean_data
from attnkata.checker.version import __version__

FORMATS = ("gradescope", "prairielearn", "github-classroom", "classroom50")
CLASSROOM50_SCHEMA = "classroom50/result/v1"
# A file that could not be read or parsed is not an attempt: PrairieLearn does not count it.
UNGRADABLE_IDS = ("syntax-error", "unreadable-file", "source-too-large")
MAX_DIAGNOSES = 3
MAX_MESSAGE = 300  # characters of one failed test's message


@dataclass
class TierPart:
    """One platform test: a tier of a kata, worth its weighted share of the kata's points."""

    kata: str
    tier: str
    passed: int
    graded: int
    score: float
    max_score: float
    hidden: bool
    failed: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.graded > 0 and self.passed == self.graded


@dataclass
class KataView:
    kata: KataEntry
    entry: Entry
    parts: list[TierPart]
    diagnoses: list[dict[str, Any]]
    lines: list[str]

    @property
    def ungradable(self) -> str | None:
        """Why this file is not an attempt (missing, unreadable, unparsable), else None."""
        if self.entry.status == MISSING:
            return f"{self.kata.id}: no {self.kata.solution_file} was handed in"
        for d in self.diagnoses:
            if d["id"] in UNGRADABLE_IDS:
                return f"{self.kata.solution_file}: {d.get('title', d['id'])}: {' '.join(d.get('explanation', '').split())}"
        return None


def tier_parts(
    kata: KataEntry, entry: Entry, weights: dict[str, float], penalty: float, hidden: set[str]
) -> list[TierPart]:
    """The kata's points split by tier exactly as `manifest.score` splits them: weights
    normalised over the tiers that have graded tests (the set's recorded tiers when none ran)."""
    tests = (entry.result or {}).get("tests", [])
    fractions = tier_fractions(tests)
    tiers = [
        t
        for t in TIERS
        if weights.get(t, 0) > 0 and (t in fractions if fractions else t in kata.tests)
    ]
    total = sum(weights[t] for t in tiers)
    factor = (1 - penalty) if entry.late else 1.0
    parts = []
    for t in tiers:
        passed, graded = fractions.get(t, (0, kata.tests.get(t, 0)))
        share = entry.points * weights[t] / total if total else 0.0
        earned = share * passed / graded * factor if graded else 0.0
        parts.append(
            TierPart(
                kata.id,
                t,
                passed,
                graded,
                round(earned, 4),
                round(share, 4),
                t in hidden,
                [x for x in tests if x["tier"] == t and x["status"] not in ("pass", "skip")],
            )
        )
    return parts


def views(cr: ClassResults, student: str, hidden_tiers: list[str] | None) -> list[KataView]:
    out = []
    penalty = float(cr.stats.get("late_penalty") or 0.0)
    for k in cr.manifest.katas:
        e = cr.entry(student, k.id)
        hidden = (
            set(hidden_tiers) if hidden_tiers is not None else set(TIERS) - set(k.required_tiers)
        )
        diags = _ordered((e.result or {}).get("diagnostics", []))
        diags = [d for d in diags if d.get("severity") in ("essential", "actionable")][
            :MAX_DIAGNOSES
        ]
        out.append(
            KataView(
                k,
                e,
                tier_parts(k, e, cr.manifest.grading.tier_weights, penalty, hidden),
                diags,
                _source_lines(e.path),
            )
        )
    return out


# -- text shown to students ----------------------------------------------------------------------
def diagnosis_record(d: dict[str, Any], lines: list[str]) -> dict[str, Any]:
    """A diagnosis as data: what the platforms that keep structured fields store."""
    quoted = []
    for ref in d.get("source", [])[:3]:
        lo, hi = ref["line"], ref.get("end_line") or ref["line"]
        if lines and 0 < lo <= len(lines):
            quoted += [
                {"line": n, "text": lines[n - 1]}
                for n in range(lo, min(hi, lo + 7, len(lines)) + 1)
            ]
        elif ref.get("text"):
            quoted.append({"line": lo, "text": ref["text"]})
    return {
        "id": d["id"],
        "severity": d.get("severity", ""),
        "title": d.get("title", d["id"]),
        "explanation": d.get("explanation", ""),
        "fix": d.get("fix", ""),
        "lines": quoted,
    }


def diagnosis_text(d: dict[str, Any], lines: list[str], lang: str) -> str:
    """Plain text (platforms that show `message` as text): title, explanation, fix, lines."""
    out = [f"{d.get('title', d['id'])} [{d['id']}]"]
    if d.get("explanation"):
        out.append(" ".join(d["explanation"].split()))
    if d.get("fix"):
        out.append(msg("report.fix_line_plain", lang, fix=" ".join(d["fix"].split())))
    for ref in d.get("source", [])[:3]:
        snippet = quoted_lines(ref, lines)
        if snippet is not None:
            out += [msg("report.code_line", lang, line=ref["line"]), snippet]
    return "\n".join(out)


def _tier_summary(p: TierPart, lang: str, md: bool) -> list[str]:
    status = msg("report.statuses." + ("pass" if p.ok else "fail"), lang)
    out = [f"{label('report.tiers', p.tier, lang)}: {p.passed}/{p.graded} ({status})"]
    for x in p.failed[:8]:
        # Clipped at a word, with an ellipsis; Markdown-safe where the platform renders it.
        text = str(x.get("message", ""))
        message = _inline(text, MAX_MESSAGE) if md else clip(" ".join(text.split()), MAX_MESSAGE)
        name = f"`{x['id']}`" if md else x["id"]
        out.append(f"- {name}" + (f": {message}" if message else ""))
    if len(p.failed) > 8:
        out.append(f"- {msg('report.more_tests', lang, n=len(p.failed) - 8)}")
    return out


def _carries_diagnoses(v: KataView) -> TierPart | None:
    """The one test of a kata whose output carries the diagnoses: its first failing tier."""
    if not v.diagnoses and v.entry.status != MISSING:
        return None
    return next((p for p in v.parts if not p.ok), v.parts[0] if v.parts else None)


def part_output(v: KataView, p: TierPart, lang: str, md: bool) -> str:
    out: list[str] = []
    if v.entry.status == MISSING:
        out.append(msg("report.missing_file", lang) + f" ({v.kata.solution_file})")
    else:
        out += _tier_summary(p, lang, md)
    if p is _carries_diagnoses(v):
        out += _variant_note(v, lang)
        for note in v.entry.notes:
            out.append(f"- {note}")
        for d in v.diagnoses:
            out += [
                "",
                *(
                    diagnosis_markdown(d, v.lines, lang)
                    if md
                    else [diagnosis_text(d, v.lines, lang)]
                ),
            ]
    return "\n".join(out).strip()


def _kata_message(v: KataView, lang: str) -> str:
    if v.entry.status == MISSING:
        return msg("report.missing_file", lang) + f" ({v.kata.solution_file})"
    return "\n\n".join(
        [*_variant_note(v, lang), *(diagnosis_text(d, v.lines, lang) for d in v.diagnoses)]
    )


def _variant_note(v: KataView, lang: str) -> list[str]:
    """The student's variant, when the kata was graded in one."""
    from attnkata.checker.sets.report import variant_key

    variant = (v.entry.result or {}).get("variant")
    if not variant:
        return []
    return [f"{msg('variant.graded', lang)}: {variant_key(v.kata.id, variant)}"]


# -- the platforms' schemas ------------------------------------------------------------------------
def gradescope(cr: ClassResults, student: str, vs: list[KataView]) -> dict[str, Any]:
    """/autograder/results/results.json: hidden tiers stay hidden until grades are published."""
    lang = cr.lang
    tests = [
        {
            "name": f"{v.kata.id}: {label('report.tiers', p.tier, lang)}",
            "score": p.score,
            "max_score": p.max_score,
            "status": "passed" if p.ok else "failed",
            "output": part_output(v, p, lang, md=True),
            "output_format": "md",
            "visibility": "after_published" if p.hidden else "visible",
            "extra_data": {
                "kata": v.kata.id,
                "tier": p.tier,
                "passed": p.passed,
                "graded": p.graded,
                "kata_status": v.entry.status,
                "diagnoses": [d["id"] for d in v.diagnoses],
            },
        }
        for v in vs
        for p in v.parts
    ]
    return {
        "score": cr.total(student),
        "output": feedback_markdown(cr, student),
        "output_format": "md",
        "tests": tests,
        "extra_data": _extra(cr, student, vs),
    }


def prairielearn(cr: ClassResults, student: str, vs: list[KataView]) -> dict[str, Any]:
    """/grade/results/results.json: a missing or unparsable file is `gradable: false`."""
    lang = cr.lang
    errors = [why for v in vs if (why := v.ungradable)]
    max_points = cr.manifest.max_points
    tests = [
        {
            "name": f"{v.kata.id}: {label('report.tiers', p.tier, lang)}",
            "points": p.score,
            "max_points": p.max_score,
            "message": _kata_message(v, lang) if p is _carries_diagnoses(v) else "",
            "output": part_output(v, p, lang, md=False),
        }
        for v in vs
        for p in v.parts
    ]
    out: dict[str, Any] = {
        "gradable": not errors,
        "score": round(min(1.0, max(0.0, cr.total(student) / max_points)), 4)
        if max_points
        else 0.0,
        "message": "; ".join(
            f"{v.kata.id}: {label('report.statuses', v.entry.status, lang)} "
            f"{v.entry.score:g}/{v.entry.points:g}"
            for v in vs
        ),
        "output": feedback_markdown(cr, student),
        "tests": tests,
    }
    if errors:
        out["format_errors"] = errors
    return out


def github_classroom(cr: ClassResults, student: str, vs: list[KataView]) -> dict[str, Any]:
    """The payload `classroom-resources/autograding-grading-reporter` decodes from `result`."""
    lang = cr.lang

    def status(v: KataView, p: TierPart) -> str:
        if v.entry.status in (MISSING, "error", "timeout"):
            return "error"
        return "pass" if p.ok else "fail"

    tests = []
    for v in vs:
        lines = [ref["line"] for d in v.diagnoses for ref in d.get("source", [])]
        for p in v.parts:
            carries = p is _carries_diagnoses(v)
            message = (
                part_output(v, p, lang, md=False)
                if carries
                else "\n".join(_tier_summary(p, lang, md=False))
            )
            tests.append(
                {
                    "name": f"{v.kata.id}: {label('report.tiers', p.tier, lang)}",
                    "status": status(v, p),
                    "message": message,
                    "test_code": f"kata check {v.kata.id} {v.kata.solution_file}",
                    "filename": v.kata.solution_file,
                    "line_no": lines[0] if carries and lines else 0,
                    "execution_time": f"{v.entry.seconds:.2f}s",
                    "score": p.score,
                }
            )
    states = {x["status"] for x in tests}
    overall = "error" if "error" in states else "fail" if "fail" in states else "pass"
    return {"version": 1, "status": overall, "max_score": cr.manifest.max_points, "tests": tests}


def classroom50(cr: ClassResults, student: str, vs: list[KataView]) -> dict[str, Any]:
    lang = cr.lang
    tests = [
        {
            "test-name": f"{v.kata.id}: {label('report.tiers', p.tier, lang)}",
            "passed": p.ok,
            "score": p.score,
            "max-score": p.max_score,
            "kata": v.kata.id,
            "tier": p.tier,
            "status": v.entry.status,
            "message": part_output(v, p, lang, md=False),
            "diagnoses": [diagnosis_record(d, v.lines) for d in v.diagnoses]
            if p is _carries_diagnoses(v)
            else [],
        }
        for v in vs
        for p in v.parts
    ]
    return {
        "schema": CLASSROOM50_SCHEMA,
        "score": cr.total(student),
        "max-score": cr.manifest.max_points,
        "tests": tests,
        "attnkata": _extra(cr, student, vs),
    }


def _extra(cr: ClassResults, student: str, vs: list[KataView]) -> dict[str, Any]:
    return {
        "attnkata": __version__,
        "set": cr.manifest.title,
        "katas": {
            v.kata.id: {
                "status": v.entry.status,
                "score": v.entry.score,
                "points": v.entry.points,
                "late": v.entry.late,
                "notes": v.entry.notes,
                "variant": (v.entry.result or {}).get("variant") or {},
                "diagnoses": [diagnosis_record(d, v.lines) for d in v.diagnoses],
            }
            for v in vs
        },
    }


BUILDERS = {
    "gradescope": gradescope,
    "prairielearn": prairielearn,
    "github-classroom": github_classroom,
    "classroom50": classroom50,
}


def platform_result(
    cr: ClassResults, student: str, fmt: str, hidden_tiers: list[str] | None = None
) -> dict[str, Any]:
    """`cr`'s result for `student` in the platform's schema."""
    if fmt not in BUILDERS:
        raise UsageError(f"unknown format {fmt!r}", f"use one of: {', '.join(FORMATS)}")
    # What a platform shows (Gradescope renders text, a terminal may print it): candidate
    # text without control characters.
    return clean_data(BUILDERS[fmt](cr, student, views(cr, student, hidden_tiers)))


def github_output_line(payload: dict[str, Any]) -> str:
    """`result=<base64>`: what a step appends to $GITHUB_OUTPUT for the reporter."""
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return "result=" + base64.b64encode(data).decode("ascii")


def _copy_submission(src: Path, dst: Path) -> None:
    """The student's Python files only (never .git, caches or data files)."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        return {
            n
            for n in names
            if n.startswith((".", "__"))
            or (not n.endswith(".py") and not (Path(folder) / n).is_dir())
        }

    shutil.copytree(src, dst, ignore=ignore, symlinks=True)


def who(
    bundle: Path, submission: Path, student: str | None, student_from: Path | None
) -> tuple[str, dict[str, dict[str, str]] | None]:
    """(the student id the submission is graded as, the variants a platform drew for it or
    None). In order: `student` (`--student`); `student_from` (`--student-from`): Gradescope's
    submission_metadata.json (the first user's sid, else e-mail login, when on the roster) or
    PrairieLearn's data.json (its question params' `attnkata_variants`); the folder's name
    when it is on the set's roster. Otherwise "submission": the standard katas."""
    from attnkata.checker.sets.manifest import read_manifest

    roster = read_manifest(Path(bundle)).variants
    if student:
        if roster and student not in roster:
            raise UsageError(
                f"{student!r} is not on the set's roster", "see instructor/variants.csv"
            )
        return student, None
    if student_from is not None:
        try:
            data = json.loads(Path(student_from).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read {student_from}: {exc}") from None
        params = data.get("params") if isinstance(data, dict) else None
        if isinstance(params, dict) and isinstance(params.get("attnkata_variants"), dict):
            return "submission", params["attnkata_variants"]
        for user in data.get("users", []) if isinstance(data, dict) else []:
            for cand in (str(user.get("sid") or ""), str(user.get("email") or "").split("@")[0]):
                if cand and cand in roster:
                    return cand, None
    if Path(submission).resolve().name in roster:
        return Path(submission).resolve().name, None
    return "submission", None


def autograde(
    bundle: Path,
    submission: Path,
    fmt: str,
    *,
    opts: GradeOptions | None = None,
    hidden_tiers: list[str] | None = None,
    student: str | None = None,
    student_from: Path | None = None,
) -> dict[str, Any]:
    """Grade one submission folder against the set in `bundle`; the platform's result JSON.
    A set with per-student variants grades it in the variant of the student `who` finds."""
    if fmt not in BUILDERS:
        raise UsageError(f"unknown format {fmt!r}", f"use one of: {', '.join(FORMATS)}")
    if hidden_tiers is not None and (bad := sorted(set(hidden_tiers) - set(TIERS))):
        raise UsageError(f"unknown tier(s) {', '.join(bad)}", f"tiers: {', '.join(TIERS)}")
    submission = Path(submission)
    if not submission.is_dir():
        raise UsageError(
            f"{submission} is not a folder", "SUBMISSION is the folder with the student's files"
        )
    opts = opts or GradeOptions()
    student, drawn = who(Path(bundle), submission, student, student_from)
    if drawn is not None:
        opts.variants = drawn
    with tempfile.TemporaryDirectory(prefix="attnkata-autograde-") as tmp:
        _copy_submission(submission, Path(tmp) / "class" / student)
        opts.jobs, opts.out, opts.fresh = 1, Path(tmp) / "out", True
        cr = grade_set(Path(bundle), Path(tmp) / "class", opts)
        # Student lines are read from the copy: build the result before it goes away.
        return platform_result(cr, student, fmt, hidden_tiers)


def write_result(payload: dict[str, Any], out: Path) -> Path:
    from attnkata.checker.sets.report import write_atomic

    write_atomic(Path(out), json.dumps(payload, ensure_ascii=False, indent=1) + "\n")
    return Path(out)
