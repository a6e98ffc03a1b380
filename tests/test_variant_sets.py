"""Per-student variants from the CLI (issue 27): a class made with `kata set create --variants`,
graded with `kata set grade`, its solutions, exports and copies; `kata start --variant` and
`kata check` for one candidate; the mock interview's variants."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnkata.checker.catalog import get_kata
from attnkata.checker.sets.roster import read_roster
from attnkata.checker.sets.similarity import DEFAULT_THRESHOLD, compare
from attnkata.checker.skeleton import reference_path, strip_markers
from attnkata.checker.variant_text import reference_source
from attnkata.cli.app import app

runner = CliRunner()
STUDENTS = [f"s{i:02d}" for i in range(30)]


def invoke(*args: str) -> object:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    return result


@pytest.fixture(scope="module")
def variant_set(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A class of 30 on sdpa, made with --variants (the variant checks run here once)."""
    root = tmp_path_factory.mktemp("variant-set")
    old = os.environ.get("KATA_HOME")
    os.environ["KATA_HOME"] = str(root / "home")
    try:
        roster = root / "roster.txt"
        roster.write_text("# the class\n" + "\n".join(STUDENTS) + "\n", encoding="utf-8")
        out = root / "set"
        res = invoke(
            "set", "create", "--katas", "sdpa", "--out", str(out), "--variants",
            "--roster", str(roster), "--variant-seed", "class-2025", "--json",
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        manifest = json.loads(res.output)
        yield {"root": root, "set": out, "manifest": manifest}
    finally:
        if old is None:
            os.environ.pop("KATA_HOME", None)
        else:
            os.environ["KATA_HOME"] = old


def _variant_file(s: dict, student: str) -> Path:
    v = s["manifest"]["variants"][student]["sdpa"]
    kata = get_kata("sdpa").with_variant(v)
    return s["set"] / "instructor" / "variants" / "sdpa" / f"{kata.variant_key}.py"


@pytest.mark.slow
def test_a_class_of_30_gets_stable_distinct_variants_and_its_own_handouts(variant_set):
    s, manifest = variant_set, variant_set["manifest"]
    variants = manifest["variants"]
    assert sorted(variants) == STUDENTS
    distinct = {json.dumps(v, sort_keys=True) for v in variants.values()}
    assert len(distinct) >= 8, len(distinct)
    standard = {p.name: p.default for p in get_kata("sdpa").variants}
    assert all(v["sdpa"] != standard for v in variants.values())  # nobody gets the published kata
    table = list(csv.DictReader((s["set"] / "instructor" / "variants.csv").open()))
    assert {(r["student"], r["kata"]) for r in table} == {(x, "sdpa") for x in STUDENTS}
    student_dir = s["set"] / "student"
    assert not list(student_dir.rglob("variants.csv"))  # the table is the instructor's
    assert "variant_secret" not in (student_dir / "README.md").read_text(encoding="utf-8")
    for who in STUDENTS[:3]:
        folder = student_dir / who / "sdpa"
        statement = (folder / "statement.md").read_text(encoding="utf-8")
        assert "## Your conventions (this variant)" in statement
        assert "你的约定" in (folder / "statement.zh.md").read_text(encoding="utf-8")
        kata = get_kata("sdpa").with_variant(variants[who]["sdpa"])
        assert (folder / "sdpa.py").read_text(encoding="utf-8") == kata.skeleton_path.read_text(
            encoding="utf-8"
        )
        assert (student_dir / who / "handout.html").is_file()
    # The same secret gives every student the same variant again.
    again = s["root"] / "again"
    res = invoke(
        "set", "create", "--katas", "sdpa", "--out", str(again), "--variants",
        "--roster", str(s["root"] / "roster.txt"), "--variant-seed", "class-2025", "--json",
    )  # fmt: skip
    assert json.loads(res.output)["variants"] == variants


def _run_public(folder: Path, solution: Path) -> subprocess.CompletedProcess:
    work = folder.parent / f"run-{solution.stem}-{folder.parent.name}"
    shutil.copytree(folder, work)
    shutil.copy(solution, work / "sdpa.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(work)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.mark.slow
def test_public_samples_are_in_the_students_conventions(variant_set):
    folder = variant_set["set"] / "student" / "s00" / "sdpa"
    assert list(folder.glob("test_public_*.py"))
    ok = _run_public(folder, _variant_file(variant_set, "s00"))
    assert ok.returncode == 0, ok.stdout[-2000:]
    wrong = _run_public(folder, reference_path("sdpa"))  # the standard conventions
    assert wrong.returncode != 0


@pytest.mark.slow
def test_each_student_is_graded_in_their_variant_and_a_standard_file_is_named_not_crashed(
    variant_set,
):
    s = variant_set
    subs = s["root"] / "submissions"
    for who, src in (("s00", _variant_file(s, "s00")), ("s01", reference_path("sdpa"))):
        (subs / who).mkdir(parents=True)
        shutil.copy(src, subs / who / "sdpa.py")
    (subs / "s02").mkdir()
    res = invoke("set", "grade", str(s["set"]), str(subs), "--jobs", "2")
    assert res.exit_code in (0, 1), res.output
    out = s["set"] / "instructor" / "results" / "submissions"
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    by = {st["student"]: st["katas"]["sdpa"] for st in data["students"]}
    assert by["s00"]["status"] == "pass"
    assert by["s00"]["result"]["variant"] == s["manifest"]["variants"]["s00"]["sdpa"]
    graded = by["s01"]["result"]
    assert by["s01"]["status"] == "fail" and graded["variant"]
    ids = [d["id"] for d in graded["diagnostics"] if d["severity"] == "essential"]
    conventions = {
        "layout-transposed",
        "mask-polarity-flipped",
        "argument-names-differ",
        "scale-convention-swapped",
    }
    assert ids and set(ids) <= conventions, ids  # the convention(s) kept, no generic crash
    assert "exception" not in ids
    gradebook = list(csv.DictReader((out / "gradebook.csv").open()))
    assert "sdpa variant" in gradebook[0]
    feedback = (out / "feedback" / "s01.md").read_text(encoding="utf-8")
    assert "Variant: `" in feedback
    # `kata set solution`: that student's variant's reference
    res = invoke("set", "solution", str(s["set"]), "s01", "sdpa", "--json")
    shown = json.loads(res.output)
    assert shown["variant"] == s["manifest"]["variants"]["s01"]["sdpa"]
    kata = get_kata("sdpa").with_variant(shown["variant"])
    assert shown["reference"] == strip_markers(reference_source(kata))
    res = invoke("set", "solution", str(s["set"]), "s1", "sdpa")
    assert res.exit_code == 2 and "did you mean" in res.output
    # A platform's autograder grades the same student in the same variant.
    res = invoke(
        "set", "autograde", str(s["set"]), str(subs / "s01"), "--format", "gradescope",
        "--student", "s01",
    )  # fmt: skip
    payload = json.loads(res.output)
    assert payload["extra_data"]["katas"]["sdpa"]["variant"] == graded["variant"]


def test_a_canvas_roster_names_students_by_sis_login(tmp_path):
    csv_path = tmp_path / "canvas.csv"
    csv_path.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section,HW1\n"
        "    Points Possible,,,,,10\n"
        '"Lovelace, Ada",101,u1,ada,S1,\n'
        '"Turing, Alan",102,u2,alan,S1,\n',
        encoding="utf-8",
    )
    assert read_roster(csv_path) == ["ada", "alan"]
    (tmp_path / "bad.txt").write_text("ok\n../escape\n", encoding="utf-8")
    with pytest.raises(Exception, match="cannot name a submission folder"):
        read_roster(tmp_path / "bad.txt")


def test_variants_need_a_roster_and_a_roster_needs_variants(tmp_path):
    res = invoke("set", "create", "--katas", "sdpa", "--out", str(tmp_path / "a"), "--variants")
    assert res.exit_code == 2 and "--roster" in res.output
    roster = tmp_path / "r.txt"
    roster.write_text("a\n", encoding="utf-8")
    res = invoke(
        "set", "create", "--katas", "sdpa", "--out", str(tmp_path / "b"), "--roster", str(roster)
    )
    assert res.exit_code == 2 and "--variants" in res.output


# -- one candidate -------------------------------------------------------------------------------
@pytest.mark.slow
def test_kata_start_with_a_variant_then_check_grades_in_it(tmp_path):
    res = invoke("start", "sdpa", "--variant", "layout=blhd")
    assert res.exit_code == 0, res.output
    assert "Your conventions" in res.output
    workspace = Path(os.environ["KATA_WORKSPACE"]) / "sdpa" / "sdpa.py"
    kata = get_kata("sdpa").with_variant({"layout": "blhd"})
    assert workspace.read_text(encoding="utf-8") == kata.skeleton_path.read_text(encoding="utf-8")
    assert "Your conventions" in invoke("show", "sdpa").output
    shutil.copy(reference_path("sdpa"), workspace)  # PyTorch's (B, H, L, d), not the variant's
    res = invoke("check", "sdpa", "--json")
    result = json.loads(res.output)
    assert res.exit_code == 1 and result["variant"]["layout"] == "blhd"
    assert result["diagnostics"][0]["id"] == "layout-transposed"
    workspace.write_text(reference_source(kata), encoding="utf-8")
    res = invoke("check", "sdpa", "--json")
    assert res.exit_code == 0, res.output
    # Starting again without --force keeps the file and the variant it was started in.
    invoke("start", "sdpa", "--variant", "mask=masked")
    res = invoke("check", "sdpa", "--json")
    assert json.loads(res.output)["variant"]["layout"] == "blhd"


def test_a_mock_interview_may_draw_a_variant(tmp_path):
    from attnkata.checker.mock import picker
    from attnkata.checker.mock import session as sess

    kata = picker.in_variant(get_kata("mha"), seed=7)
    assert kata.variant  # never the standard kata
    assert picker.in_variant(get_kata("mha"), seed=7).variant == kata.variant  # by the seed
    s = sess.create([kata], {}, minutes=30, seed=7, lang="en", folder=tmp_path / "mock")
    p = s.problems[0]
    assert p.variant == kata.variant_values
    assert p.kata_object.variant == kata.variant
    assert (s.folder / p.file).read_text(encoding="utf-8") == kata.skeleton_path.read_text(
        encoding="utf-8"
    )
    assert "Your conventions" in (s.folder / p.statement).read_text(encoding="utf-8")
    assert sess.load(s.folder).problems[0].variant == p.variant


# -- copies ------------------------------------------------------------------------------------
def adapted_copy(source: str) -> str:
    """What a copier does with a classmate's sdpa for their own variant ((B, L, H, d), masks
    True = masked out, the torch names): rename the arguments, move the axes at the boundary,
    flip the mask."""
    body = source.replace("~mask", "mask")
    for old, new in (("q", "query"), ("k", "key"), ("v", "value"), ("mask", "attn_mask")):
        body = re.sub(rf"\b{old}\b(?!\.T)", new, body)
    head, sep, rest = body.partition('    """\n    # BEGIN SOLUTION\n')
    moves = "".join(f"    {n} = {n}.transpose(1, 2)\n" for n in ("query", "key", "value"))
    rest = rest.replace(
        "    return weights @ value", "    return (weights @ value).transpose(1, 2)"
    )
    return head + sep + moves + rest


def test_a_copy_adapted_to_another_variant_is_still_flagged():
    original = strip_markers(reference_path("sdpa").read_text(encoding="utf-8"))
    copy = adapted_copy(reference_path("sdpa").read_text(encoding="utf-8"))
    assert "transpose(1, 2)" in copy and "masked_fill(attn_mask" in copy
    base = get_kata("sdpa").skeleton_path.read_text(encoding="utf-8")
    pair = compare({"a": original, "b": strip_markers(copy)}, "sdpa", base)[0]
    assert pair.flagged and pair.similarity >= DEFAULT_THRESHOLD, pair.similarity
