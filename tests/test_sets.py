"""Problem sets end to end: `kata set create` a set, hand it to six synthetic students (one
correct, three with different mistakes, one hostile infinite loop, one missing file), `kata set
grade` them, and check the gradebook, the JSON, the feedback, the class report (also in a real
headless chromium), that the student folder leaks nothing, that a resumed run regrades nothing
that is done, and that a tampered bundle is refused."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from attnkata.checker.models import Result
from attnkata.checker.sets.create import _solution_lines, find_leaks
from attnkata.checker.sets.grade import GradeOptions, grade_set
from attnkata.checker.sets.manifest import MANIFEST_PATH, kata_hash, load_set_kata, read_manifest
from attnkata.cli.app import app

REPO = Path(__file__).resolve().parent.parent
REFERENCE = (REPO / "reference" / "sdpa.py").read_text()
runner = CliRunner()
TIMEOUT = 2.0
CHROMIUM = (
    shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
)


def kata(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def said(res) -> str:
    """stderr with rich's line wrapping undone."""
    return " ".join(res.stderr.split())


def _replace(old: str, new: str) -> str:
    assert old in REFERENCE, old
    return REFERENCE.replace(old, new)


STUDENTS = {
    "alice": REFERENCE,  # correct
    # Fills masked scores with -1e9: a fully masked row attends uniformly (handed in late).
    "bob": (REPO / "katas" / "sdpa" / "examples" / "wrong.py").read_text(),
    # Forgets the 1/sqrt(d) scale.
    "carol": _replace(
        "scale = 1.0 / math.sqrt(d) if scale is None else scale",
        "scale = 1.0 if scale is None else scale",
    ),
    # Scales q in place: the caller's tensor changes (and autograd refuses it on a leaf).
    "dave": _replace(
        "scores = (q @ k.transpose(-2, -1)) * scale", "scores = q.mul_(scale) @ k.transpose(-2, -1)"
    ),
    # Hostile: never returns.
    "erin": "def scaled_dot_product_attention(q, k, v, mask=None, scale=None):\n    while True:\n        pass\n",
}
LATE = 1924992000  # 2031-01-01, after the set's deadline


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    tmp = tmp_path_factory.mktemp("sets")
    bundle = tmp / "week3"
    res = kata(
        "set",
        "create",
        "--katas",
        "sdpa",
        "--out",
        bundle,
        "--title",
        "Week 3",
        "--public-tests",
        "2",
        "--due",
        "2030-01-01T00:00",
        "--late-penalty",
        "0.5",
    )
    assert res.exit_code == 0, res.output
    subs = tmp / "submissions"
    for name, source in STUDENTS.items():
        (subs / name).mkdir(parents=True)
        (subs / name / "sdpa.py").write_text(source)
    os.utime(subs / "bob" / "sdpa.py", (LATE, LATE))
    (subs / "frank").mkdir()
    (subs / "frank" / "attention.py").write_text(REFERENCE)  # the wrong name: missing
    out = tmp / "out"
    t0 = time.monotonic()
    res = kata(
        "set",
        "grade",
        bundle,
        subs,
        "--jobs",
        "2",
        "--timeout",
        TIMEOUT,
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
    wall = time.monotonic() - t0
    assert res.exit_code == 0, res.output
    data = json.loads((out / "results.json").read_text())
    return SimpleNamespace(
        tmp=tmp,
        bundle=bundle,
        subs=subs,
        out=out,
        wall=wall,
        data=data,
        stdout=res.stdout,
        entries={s["student"]: s["katas"]["sdpa"] for s in data["students"]},
    )


# -- create ------------------------------------------------------------------------------------
def test_create_writes_the_student_and_instructor_folders(graded):
    student, instructor = graded.bundle / "student", graded.bundle / "instructor"
    for rel in (
        "README.md",
        "handout.html",
        "sdpa/statement.md",
        "sdpa/statement.zh.md",
        "sdpa/sdpa.py",
        "sdpa/test_public_sdpa.py",
        "sdpa/public_sdpa.json",
    ):
        assert (student / rel).is_file(), rel
    assert (student / "sdpa" / "sdpa.py").read_text() == (
        REPO / "katas" / "sdpa" / "skeleton.py"
    ).read_text()
    assert "{{conventions}}" not in (student / "sdpa" / "statement.md").read_text()
    assert "Masks are boolean" in (student / "sdpa" / "statement.md").read_text()
    assert (instructor / "reference" / "sdpa.py").read_text() == REFERENCE
    m = read_manifest(graded.bundle)
    assert m.title == "Week 3" and m.kata_ids == ["sdpa"]
    assert m.katas[0].hash == kata_hash(load_set_kata("sdpa")) and m.katas[0].public_samples == 2
    assert m.katas[0].tests["core"] >= 10 and m.katas[0].tests["edge"] >= 3
    assert m.grading.tier_weights == {"core": 0.6, "edge": 0.3, "efficient": 0.1}
    assert m.grading.due.startswith("2030-01-01T00:00") and m.grading.late_penalty == 0.5
    assert m.options == {"level": "scratch", "lang": "both", "public_tests": 2, "seed": 1}
    assert "student/sdpa/public_sdpa.json" in m.files and "instructor/reference/sdpa.py" in m.files
    readme = (student / "README.md").read_text()
    assert "sdpa.py" in readme and "python -m pytest" in readme and "提交" in readme


def test_the_student_folder_leaks_no_reference_grader_or_hidden_input(graded):
    from attnkata.checker.sets import samples

    student = graded.bundle / "student"
    kata_def = load_set_kata("sdpa")
    assert find_leaks(student, [kata_def]) == []
    names = {p.name for p in student.rglob("*")}
    assert "test_sdpa.py" not in names and "reference" not in names
    text = "\n".join(p.read_text(errors="replace") for p in student.rglob("*") if p.is_file())
    assert "attnkata.reference" not in text and "import attnkata" not in text
    solution = [ln for ln in _solution_lines(REFERENCE) if len(ln) > 15 and not ln.startswith("#")]
    assert solution and not [ln for ln in solution if ln in text]
    grader = kata_def.grader_path.read_text()
    for ln in ("def _with_empty_rows(mask: torch.Tensor) -> torch.Tensor:", "MASK_SHAPES = {"):
        assert ln in grader and ln not in text
    # No tensor the hidden grader feeds the candidate appears among the public inputs.
    hidden: set = set()
    for test in samples.record(kata_def):
        for step in test.steps:
            samples._float_keys(samples.step_inputs(step), hidden)
    doc = json.loads((student / "sdpa" / "public_sdpa.json").read_text())
    shown: set = set()
    for case in doc["cases"]:
        for step in case["steps"]:
            samples._float_keys(
                [samples.decode(step.get(k)) for k in ("args", "kwargs", "state")], shown
            )
    assert hidden and shown and not (hidden & shown)


def _run_public(folder: Path, solution: Path, tmp: Path) -> subprocess.CompletedProcess:
    work = tmp / f"run-{solution.parent.name}"
    shutil.copytree(folder, work)
    env = {
        **os.environ,
        "KATA_SOLUTION": str(solution),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_public_samples_run_without_attnkata_and_catch_a_mistake(graded):
    folder = graded.bundle / "student" / "sdpa"
    ok = _run_public(folder, graded.subs / "alice" / "sdpa.py", graded.tmp)
    assert ok.returncode == 0 and "2 passed" in ok.stdout, ok.stdout + ok.stderr
    bad = _run_public(folder, graded.subs / "carol" / "sdpa.py", graded.tmp)
    assert bad.returncode == 1 and "differ from the reference" in bad.stdout, bad.stdout


def test_the_handout_is_self_contained_and_printable(graded):
    page = (graded.bundle / "student" / "handout.html").read_text()
    assert not re.search(r"<script|<link|<img|<iframe|url\(", page, re.I)
    assert "@media print" in page and "break-before: page" in page
    assert "Scaled dot-product attention (PyTorch)" in page and "缩放点积注意力" in page
    assert "def scaled_dot_product_attention(" in re.sub(r"<[^>]+>", "", page)
    assert "Shape legend" in page and "key/value heads" in page and "Hand in" in page
    assert "{{conventions}}" not in page


def test_force_never_replaces_a_set_that_holds_grading_results(graded, tmp_path):
    bundle = tmp_path / "set"
    shutil.copytree(graded.bundle, bundle)
    (bundle / "instructor" / "results" / "class-a").mkdir(parents=True)
    (bundle / "instructor" / "results" / "class-a" / "journal.jsonl").write_text("{}\n")
    res = kata("set", "create", "--katas", "sdpa", "--out", bundle, "--force")
    assert res.exit_code == 2 and "holds grading results" in said(res)
    assert (bundle / "instructor" / "results" / "class-a" / "journal.jsonl").is_file()


def test_create_refuses_bad_input(tmp_path):
    res = kata("set", "create", "--katas", "sdpaa", "--out", tmp_path / "a")
    assert res.exit_code == 2 and "did you mean 'sdpa'" in said(res)
    res = kata("set", "create", "--katas", "sdpa", "--out", tmp_path / "a", "--level", "easy")
    assert res.exit_code == 2 and "unknown level" in said(res)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("precious")
    for extra in ([], ["--force"]):
        res = kata("set", "create", "--katas", "sdpa", "--out", tmp_path / "mine", *extra)
        assert res.exit_code == 2
    assert (tmp_path / "mine" / "notes.txt").read_text() == "precious"


def test_guided_level_in_one_language_without_samples(tmp_path):
    res = kata(
        "set",
        "create",
        "--katas",
        "sdpa",
        "--out",
        tmp_path / "g",
        "--level",
        "guided",
        "--lang",
        "zh",
        "--public-tests",
        "0",
    )
    assert res.exit_code == 0, res.output
    folder = tmp_path / "g" / "student" / "sdpa"
    assert sorted(p.name for p in folder.iterdir()) == ["sdpa.py", "statement.zh.md"]
    guided = (folder / "sdpa.py").read_text()
    assert "# BEGIN SOLUTION" in guided and "# END SOLUTION" in guided
    assert not [ln for ln in _solution_lines(REFERENCE) if len(ln) > 15 and ln in guided]
    assert (
        "## 中文" not in (tmp_path / "g" / "student" / "README.md").read_text()
    )  # only one language


# -- grade -------------------------------------------------------------------------------------
def test_every_submission_gets_the_right_status(graded):
    e = graded.entries
    assert e["alice"]["status"] == "pass" and e["alice"]["score"] == 10
    assert e["bob"]["status"] == "fail" and e["bob"]["late"]
    assert e["carol"]["status"] == "fail" and e["dave"]["status"] in ("fail", "error")
    assert e["erin"]["status"] == "timeout" and e["erin"]["score"] == 0
    assert e["frank"]["status"] == "missing" and e["frank"]["result"] is None
    assert "found: attention.py" in e["frank"]["notes"][0]
    for name in STUDENTS:
        r = Result.from_dict(e[name]["result"])
        assert r.kata == "sdpa" and r.tests
    assert any(d["id"] == "timeout" for d in e["erin"]["result"]["diagnostics"])
    assert graded.data["stats"]["graded"] == 5 and graded.data["stats"]["missing"] == 1


def test_scores_are_partial_credit_by_tier_and_late_files_lose_the_penalty(graded):
    from attnkata.checker.sets.manifest import score

    weights = {"core": 0.6, "edge": 0.3, "efficient": 0.1}
    bob = graded.entries["bob"]
    raw = score(bob["result"]["tests"], weights, 10)
    assert 0 < raw < 10 and bob["score"] == pytest.approx(raw * 0.5, abs=0.01)
    carol = graded.entries["carol"]
    assert carol["score"] == score(carol["result"]["tests"], weights, 10)


def test_the_hostile_loop_costs_only_its_own_time_limit(graded):
    erin = graded.entries["erin"]
    assert erin["seconds"] < TIMEOUT + 4
    assert graded.wall < 90
    others = [graded.entries[s]["seconds"] for s in ("alice", "bob", "carol", "dave")]
    assert max(others) < TIMEOUT + 4


def test_gradebook_csv_has_a_row_per_student_and_totals(graded):
    rows = list(csv.DictReader((graded.out / "grades.csv").open()))
    assert [r["student"] for r in rows] == ["alice", "bob", "carol", "dave", "erin", "frank"]
    by = {r["student"]: r for r in rows}
    assert (
        by["alice"]["sdpa"] == "10"
        and by["alice"]["total"] == "10"
        and by["alice"]["percent"] == "100"
    )
    assert by["alice"]["max"] == "10" and by["alice"]["sdpa status"] == "pass"
    assert by["erin"]["sdpa status"] == "timeout" and by["erin"]["total"] == "0"
    assert by["frank"]["missing"] == "sdpa" and by["bob"]["late"] == "sdpa"
    for name in STUDENTS:
        assert float(by[name]["sdpa"]) == pytest.approx(graded.entries[name]["score"])


def test_feedback_explains_each_students_result_without_hidden_code(graded):
    folder = graded.out / "feedback"
    assert sorted(p.name for p in folder.iterdir()) == [
        f"{s}.md" for s in ("alice", "bob", "carol", "dave", "erin", "frank")
    ]
    alice = (folder / "alice.md").read_text()
    assert "All required tests pass" in alice and "10 / 10" in alice and "| core |" in alice
    erin = (folder / "erin.md").read_text()
    assert "Time limit exceeded" in erin and "timeout" in erin
    assert "No file was handed in" in (folder / "frank.md").read_text()
    assert "late" in (folder / "bob.md").read_text().lower()
    grader_lines = {
        ln.strip()
        for ln in load_set_kata("sdpa").grader_path.read_text().splitlines()
        if len(ln.strip()) > 20
    }
    for name in STUDENTS:
        text = (folder / f"{name}.md").read_text()
        assert "| Tier | Tests passed |" in text
        assert not [ln for ln in grader_lines if ln in text], name
        own = (graded.subs / name / "sdpa.py").read_text().splitlines()
        for quoted in re.findall(r"^\s*(\d+) \| (.*)$", text, re.M):
            assert own[int(quoted[0]) - 1] == quoted[1], (
                name,
                quoted,
            )  # only the student's own lines


def test_the_class_report_shows_pass_rates_and_the_mistake_histogram(graded):
    page = (graded.out / "report.html").read_text()
    assert "<script" not in page and "Week 3" in page
    stats = next(k for k in graded.data["katas"] if k["kata"] == "sdpa")
    assert stats["passed"] == 1 and stats["submitted"] == 5 and stats["missing"] == 1
    assert f'<span class="pass-rate">{stats["pass_rate"]:.0%}</span>' in page  # 17%
    mistakes = graded.data["mistakes"]
    assert any(m["id"] == "timeout" and m["count"] == 1 and m["of"] == 5 for m in mistakes)
    for m in mistakes:
        assert f'data-id="{m["id"]}"' in page
        assert f"<strong>{m['share']:.0%}</strong> ({m['count']} of {m['of']})" in page
    assert "Score distribution" in page and "<svg" in page
    # The Notes column says why a row looks the way it does: late, a missing file, the top mistake.
    rows = [row.split("</tr>", 1)[0] for row in page.split('<tr class="student">')[1:]]
    notes = {
        row.split("</td>", 1)[0].split(">")[-1]: row.rsplit("<td>", 1)[-1].split("</td>")[0]
        for row in rows
    }
    assert "late" in notes["bob"] and "found: attention.py" in notes["frank"]
    assert "(timeout)" in notes["erin"] and notes["alice"] == ""
    carol_top = next(
        d for d in graded.entries["carol"]["result"]["diagnostics"] if d["severity"] == "essential"
    )
    assert f"({carol_top['id']})" in notes["carol"]
    # "20 / 20" never wraps: no-break spaces in the totals and mean points, nowrap on numbers.
    assert all(
        f"\u00a0/\u00a0{graded.data['set']['katas'][0]['points']:g}</td>" in row for row in rows
    )
    assert (
        " / " not in "".join(rows)
        and "white-space: nowrap" in page.split("td.num, th.num", 1)[1].split("}")[0]
    )


# -- chromium ----------------------------------------------------------------------------------
def _chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{time.monotonic_ns()}"
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _ink(png: bytes) -> float:
    """Share of non-zero bytes in a PNG's filtered scanlines after the first row: about 0 for
    a blank page (every filter turns a constant image into zeros), well above for content."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, channels = 8, b"", 0, 0, 4
    while pos < len(png):
        n = int.from_bytes(png[pos : pos + 4], "big")
        kind, body = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            width, height = int.from_bytes(body[:4], "big"), int.from_bytes(body[4:8], "big")
            channels = {2: 3, 6: 4, 0: 1, 4: 2}[body[9]]
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * channels + 1
    assert len(raw) == stride * height
    rest = raw[stride:]
    return sum(1 for b in rest if b) / len(rest)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_the_class_report_renders_in_headless_chromium(graded, tmp_path):
    page = graded.out / "report.html"
    shot = tmp_path / "report.png"
    res = _chromium(tmp_path, "--window-size=1000,1400", f"--screenshot={shot}", page.as_uri())
    assert shot.is_file(), res.stderr[-2000:]
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    blank_shot = tmp_path / "blank.png"
    _chromium(tmp_path, "--window-size=1000,1400", f"--screenshot={blank_shot}", blank.as_uri())
    assert _ink(blank_shot.read_bytes()) < 0.001
    assert _ink(shot.read_bytes()) > 0.01
    dom = _chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    assert "Week 3" in dom and "Most common mistakes" in dom
    stats = next(k for k in graded.data["katas"] if k["kata"] == "sdpa")
    assert f"{stats['pass_rate']:.0%}" in dom
    timeout_row = next(m for m in graded.data["mistakes"] if m["id"] == "timeout")
    assert f"{timeout_row['share']:.0%}</strong> (1 of 5)" in dom
    for student in ("alice", "erin", "frank"):
        assert f"<td>{student}</td>" in dom


# -- resume and tampering ----------------------------------------------------------------------
def test_a_resumed_run_regrades_only_what_is_not_done(graded, tmp_path):
    subs = tmp_path / "subs"
    shutil.copytree(graded.subs, subs)
    work = tmp_path / "work"
    shutil.copytree(graded.out / "work", work)
    opts = GradeOptions(jobs=2, timeout=TIMEOUT, out=work)
    again = grade_set(graded.bundle, subs, opts)
    assert again.stats["graded"] == 0 and again.stats["reused"] == 5
    assert {s: again.entry(s, "sdpa").score for s in again.students} == {
        s: graded.entries[s]["score"] for s in graded.entries
    }
    # Interrupted after two results, the last line cut in half: three are graded again.
    journal = work / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(lines[:2]) + lines[2][: len(lines[2]) // 2])
    resumed = grade_set(graded.bundle, subs, opts)
    assert resumed.stats["graded"] == 3 and resumed.stats["reused"] == 2
    assert {s: resumed.entry(s, "sdpa").status for s in resumed.students} == {
        s: graded.entries[s]["status"] for s in graded.entries
    }
    # A changed file is regraded; different limits regrade everything.
    (subs / "carol" / "sdpa.py").write_text(REFERENCE)
    changed = grade_set(graded.bundle, subs, opts)
    assert changed.stats["graded"] == 1 and changed.entry("carol", "sdpa").status == "pass"


def test_a_tampered_bundle_is_refused(graded, tmp_path):
    assert kata("set", "verify", graded.bundle).exit_code == 0
    cases = {
        "instructor/reference/sdpa.py": lambda p: p.write_text(p.read_text() + "\n# edited\n"),
        "student/sdpa/statement.md": lambda p: p.unlink(),
        MANIFEST_PATH.as_posix(): lambda p: p.write_text(
            p.read_text().replace('"hash": "sha256:', '"hash": "sha256:0')
        ),
    }
    for rel, tamper in cases.items():
        bundle = tmp_path / rel.replace("/", "_")
        shutil.copytree(graded.bundle, bundle)
        tamper(bundle / rel)
        res = kata("set", "grade", bundle, graded.subs, "--quiet", "--out", tmp_path / "o")
        assert res.exit_code == 3, (rel, res.output)
        assert "refusing to grade" in said(res) and "does not match" in said(res)
        assert kata("set", "verify", bundle).exit_code == 3
    res = kata("set", "grade", tmp_path, graded.subs)
    assert res.exit_code == 2 and "is not a problem set" in said(res)


def test_a_submission_that_tries_to_kill_its_grading_process_does_not_stop_the_batch(
    graded, tmp_path
):
    subs = tmp_path / "subs"
    (subs / "mallory").mkdir(parents=True)
    (subs / "mallory" / "sdpa.py").write_text(
        "import os, signal\n\n\ndef scaled_dot_product_attention(q, k, v, mask=None, scale=None):\n"
        "    os.kill(os.getppid(), signal.SIGKILL)\n"
    )
    (subs / "zed").mkdir()
    (subs / "zed" / "sdpa.py").write_text(REFERENCE)
    res = grade_set(graded.bundle, subs, GradeOptions(jobs=1, timeout=TIMEOUT, out=tmp_path / "o"))
    mallory = res.entry("mallory", "sdpa")
    # The sandbox's pid namespace hides the worker: the kill reaches nothing (or the
    # candidate itself), and the worker grades on.
    assert mallory.status != "pass"
    assert all(d["id"] != "grader-process-died" for d in mallory.result["diagnostics"])
    assert res.entry("zed", "sdpa").status == "pass"


def _module_kata():
    for kata_id in ("mha", "gqa", "mla"):
        try:
            kata_def = load_set_kata(kata_id)
        except Exception:  # noqa: BLE001 - another kata being written must not fail this file
            continue
        if kata_def.skeleton_path.is_file():
            return kata_def
    return None


def test_public_samples_of_a_module_kata_replay_weights_and_calls(tmp_path):
    import importlib.util

    from attnkata.checker.sets import samples
    from attnkata.checker.sets.manifest import reference_file

    kata_def = _module_kata()
    if kata_def is None:
        pytest.skip("no module kata (mha, gqa, mla) is installed")
    doc, skipped, recorded = samples.build_samples(kata_def, 2, seed=7)
    assert len(doc["cases"]) == 2, skipped
    assert any(s["op"] == "load_state" for s in doc["cases"][0]["steps"])
    assert samples.write_doc(kata_def, tmp_path, doc) == 2
    spec = importlib.util.spec_from_file_location(
        "public_under_test", tmp_path / f"test_public_{kata_def.module_name}.py"
    )
    public = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(public)

    def load(path: Path):
        s = importlib.util.spec_from_file_location(f"sol_{path.stem}", path)
        mod = importlib.util.module_from_spec(s)
        s.loader.exec_module(mod)
        return mod

    ref = load(reference_file(kata_def))
    for case in doc["cases"]:
        public.test_sample(ref, case)  # the reference passes its own samples
    skeleton = load(kata_def.skeleton_path)
    with pytest.raises(NotImplementedError):
        public.test_sample(skeleton, doc["cases"][0])
