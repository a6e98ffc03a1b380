"""Platform autograders end to end: `kata set autograde` in every format (one real grading run,
then the formats laid out from it), and the exported Gradescope `run_autograder` and
PrairieLearn `run.sh` run locally under a temporary $AUTOGRADER_ROOT / $GRADE_ROOT."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest
from typer.testing import CliRunner

from attnkata.checker.sets.grade import GradeOptions, grade_set
from attnkata.checker.sets.platforms import CLASSROOM50_SCHEMA, github_output_line, platform_result
from attnkata.cli.app import app

REPO = Path(__file__).resolve().parent.parent
REFERENCE = (REPO / "reference" / "sdpa.py").read_text()
NO_SCALE = REFERENCE.replace(
    "scale = 1.0 / math.sqrt(d) if scale is None else scale",
    "scale = 1.0 if scale is None else scale",
)
runner = CliRunner()


def kata(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("platforms")
    bundle = tmp / "set"
    res = kata(
        "set",
        "create",
        "--katas",
        "sdpa,causal-mask",
        "--out",
        bundle,
        "--public-tests",
        "0",
        "--lang",
        "en",
    )
    assert res.exit_code == 0, res.output
    subs = tmp / "class"
    (subs / "carol").mkdir(parents=True)
    (subs / "carol" / "sdpa.py").write_text(NO_SCALE)  # a diagnosed mistake; causal-mask missing
    (subs / "alice").mkdir()
    (subs / "alice" / "sdpa.py").write_text(REFERENCE)
    (subs / "alice" / "causal_mask.py").write_text("def causal_mask(:\n")  # does not parse
    cr = grade_set(bundle, subs, GradeOptions(jobs=2, timeout=5, out=tmp / "out"))
    return SimpleNamespace(tmp=tmp, bundle=bundle, subs=subs, cr=cr)


def _parts_sum(tests, key):
    return round(sum(t[key] for t in tests), 2)


def test_gradescope_schema_and_diagnoses(graded):
    r = platform_result(graded.cr, "carol", "gradescope", hidden_tiers=["edge"])
    assert r["output_format"] == "md" and r["score"] == graded.cr.total("carol")
    schema = json.loads(
        (REPO / "tests" / "fixtures" / "platforms" / "gradescope_results.schema.json").read_text()
    )
    for student in ("carol", "alice"):
        jsonschema.validate(platform_result(graded.cr, student, "gradescope"), schema)
    assert _parts_sum(r["tests"], "score") == pytest.approx(r["score"], abs=0.02)
    assert _parts_sum(r["tests"], "max_score") == pytest.approx(
        graded.cr.manifest.max_points, abs=0.02
    )
    for t in r["tests"]:
        assert set(t) >= {
            "name",
            "score",
            "max_score",
            "status",
            "output",
            "visibility",
            "extra_data",
        }
        assert t["status"] in ("passed", "failed")
        assert t["visibility"] == (
            "after_published" if t["extra_data"]["tier"] == "edge" else "visible"
        )
    sdpa = next(
        t
        for t in r["tests"]
        if t["extra_data"]["kata"] == "sdpa" and "missing-scale" in t["output"]
    )
    assert "Scores are not scaled" in sdpa["output"] and "*Fix:*" in sdpa["output"]
    assert "scale = 1.0 if scale is None else scale" in sdpa["output"]  # the student's own line
    missing = [t for t in r["tests"] if t["extra_data"]["kata"] == "causal-mask"]
    assert missing and all(t["score"] == 0 and t["status"] == "failed" for t in missing)
    assert "No file was handed in" in missing[0]["output"]
    # Default: the tiers a kata does not require stay hidden until published.
    default = platform_result(graded.cr, "carol", "gradescope")
    assert all(
        t["visibility"] == "visible"
        for t in default["tests"]
        if t["extra_data"]["tier"] in ("core", "edge")
    )


def test_prairielearn_missing_or_unparsable_file_is_not_gradable(graded):
    for student, why in (("carol", "no causal_mask.py"), ("alice", "causal_mask.py")):
        r = platform_result(graded.cr, student, "prairielearn")
        assert r["gradable"] is False and any(why in e for e in r["format_errors"]), r[
            "format_errors"
        ]
        assert 0 <= r["score"] <= 1 and isinstance(r["message"], str) and r["output"]
        for t in r["tests"]:
            assert set(t) >= {"name", "points", "max_points", "message", "output"}
    carol = platform_result(graded.cr, "carol", "prairielearn")
    assert carol["score"] == pytest.approx(
        graded.cr.total("carol") / graded.cr.manifest.max_points, abs=1e-3
    )
    assert any(
        "Scores are not scaled" in t["message"] and "Your code (line" in t["message"]
        for t in carol["tests"]
    )
    assert any(
        "syntax" in e.lower()
        for e in platform_result(graded.cr, "alice", "prairielearn")["format_errors"]
    )


def test_github_classroom_payload_and_output_line(graded):
    r = platform_result(graded.cr, "carol", "github-classroom")
    assert (
        r["status"] == "error" and r["max_score"] == graded.cr.manifest.max_points
    )  # a file is missing
    for t in r["tests"]:
        assert set(t) >= {"name", "status", "message", "test_code", "line_no", "score"}
        assert t["status"] in ("pass", "fail", "error")
    diag = next(t for t in r["tests"] if "Scores are not scaled" in t["message"])
    assert diag["line_no"] > 0 and diag["test_code"] == "kata check sdpa sdpa.py"
    line = github_output_line(r)
    assert line.startswith("result=") and "\n" not in line
    assert json.loads(base64.b64decode(line[len("result=") :])) == r


def test_classroom50_schema(graded):
    r = platform_result(graded.cr, "carol", "classroom50")
    assert r["schema"] == CLASSROOM50_SCHEMA and r["max-score"] == graded.cr.manifest.max_points
    assert r["score"] == graded.cr.total("carol")
    for t in r["tests"]:
        assert set(t) >= {"test-name", "passed", "score", "max-score"} and isinstance(
            t["passed"], bool
        )
    diags = [d for t in r["tests"] for d in t["diagnoses"]]
    assert any(d["id"] == "missing-scale" and d["fix"] and d["lines"] for d in diags)


def test_autograde_cli_writes_a_file_and_refuses_bad_input(graded, tmp_path):
    out = tmp_path / "r.json"
    res = kata(
        "set",
        "autograde",
        graded.bundle,
        graded.subs / "carol",
        "--format",
        "github-classroom",
        "--kata",
        "sdpa",
        "--timeout",
        "5",
        "--out",
        out,
        "--github-output",
    )
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert {t["name"].split(":")[0] for t in data["tests"]} == {"sdpa"} and data["status"] == "fail"
    assert json.loads(base64.b64decode(res.stdout.strip().removeprefix("result="))) == data
    for args, text in (
        (["--format", "moodle"], "unknown format"),
        (["--format", "gradescope", "--kata", "nope"], "no kata nope"),
    ):
        res = kata("set", "autograde", graded.bundle, graded.subs / "carol", *args)
        assert res.exit_code == 2 and text in " ".join(res.stderr.split())
    res = kata("set", "autograde", graded.bundle, tmp_path / "absent", "--format", "gradescope")
    assert res.exit_code == 2 and "not a folder" in " ".join(res.stderr.split())


def _run(script: Path, env_name: str, root: Path) -> subprocess.CompletedProcess:
    assert shutil.which("kata"), "the installed kata must be on PATH"
    return subprocess.run(
        [str(script)],
        env={**os.environ, env_name: str(root)},
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_exported_gradescope_autograder_runs_under_a_fake_root(graded, tmp_path):
    res = kata("set", "export", graded.bundle, "--to", "gradescope", "--out", tmp_path / "gs")
    assert res.exit_code == 0, res.output
    zpath = tmp_path / "gs" / "autograder.zip"
    with zipfile.ZipFile(zpath) as z:
        names = z.namelist()
        assert (
            "setup.sh" in names
            and "run_autograder" in names
            and "set/instructor/manifest.json" in names
        )
        assert (z.getinfo("run_autograder").external_attr >> 16) & 0o111
        setup = z.read("setup.sh").decode()
        z.extractall(tmp_path / "root" / "source")
    # The default export carries this attnkata's wheel and the versions it runs with: it never
    # installs attnkata from an index that may not have it.
    assert (
        "download.pytorch.org/whl/cpu" in setup and "torch==" in setup and "attnkata==" not in setup
    )
    wheels = [n for n in names if n.startswith("wheels/attnkata-") and n.endswith(".whl")]
    assert (
        len(wheels) == 1
        and f'"$HERE/{wheels[0]}"' in setup
        and '-c "$HERE/constraints.txt"' in setup
    )
    assert "torch==" in zipfile.ZipFile(zpath).read("constraints.txt").decode()
    root = tmp_path / "root"
    script = root / "source" / "run_autograder"
    script.chmod(0o755)  # zipfile does not restore modes; Gradescope's unzip does
    (root / "submission").mkdir()
    (root / "submission" / "sdpa.py").write_text(NO_SCALE)
    proc = _run(script, "AUTOGRADER_ROOT", root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads((root / "results" / "results.json").read_text())
    assert 0 < data["score"] < 10 and any("missing-scale" in t["output"] for t in data["tests"])


def test_exported_prairielearn_grader_runs_under_a_fake_root(graded, tmp_path):
    res = kata("set", "export", graded.bundle, "--to", "prairielearn", "--out", tmp_path / "pl")
    assert res.exit_code == 0, res.output
    info = json.loads((tmp_path / "pl" / "info.json").read_text())["externalGradingOptions"]
    assert (
        info["enabled"] is True and info["entrypoint"] == "/grade/serverFilesCourse/attnkata/run.sh"
    )
    assert info["serverFilesCourse"] == ["attnkata/"] and info["timeout"] > 0
    docker = (tmp_path / "pl" / "Dockerfile").read_text()
    assert "FROM python:3.12" in docker and "/tmp/attnkata/wheels/attnkata-" in docker
    assert len(list((tmp_path / "pl" / "wheels").glob("attnkata-*.whl"))) == 1
    root = tmp_path / "grade"
    shutil.copytree(tmp_path / "pl" / "serverFilesCourse", root / "serverFilesCourse")
    (root / "student").mkdir()
    (root / "student" / "sdpa.py").write_text(REFERENCE)
    proc = _run(root / "serverFilesCourse" / "attnkata" / "run.sh", "GRADE_ROOT", root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads((root / "results" / "results.json").read_text())
    # sdpa passes; causal_mask.py is missing: not gradable, so the attempt is not counted.
    assert data["gradable"] is False and data["score"] == pytest.approx(0.5, abs=1e-3)


def test_exported_github_workflow_has_a_step_per_kata_and_the_reporter(graded, tmp_path):
    yaml = pytest.importorskip("yaml")
    res = kata(
        "set", "export", graded.bundle, "--to", "github-classroom", "--out", tmp_path / "repo"
    )
    assert res.exit_code == 0, res.output
    wf = yaml.safe_load((tmp_path / "repo" / ".github" / "workflows" / "classroom.yml").read_text())
    steps = wf["jobs"]["run-autograding-tests"]["steps"]
    ids = [s.get("id") for s in steps if s.get("id")]
    assert ids == ["sdpa", "causal-mask"]
    for s in steps:
        if s.get("id"):
            assert "--github-output" in s["run"] and '>> "$GITHUB_OUTPUT"' in s["run"]
    reporter = steps[-1]
    assert reporter["uses"].startswith("classroom-resources/autograding-grading-reporter")
    assert reporter["with"]["runners"] == "sdpa,causal-mask"
    assert reporter["env"]["CAUSAL-MASK_RESULTS"] == "${{ steps.causal-mask.outputs.result }}"
    assert (
        tmp_path / "repo" / ".github" / "attnkata" / "set" / "instructor" / "manifest.json"
    ).is_file()
    # --index-url: no wheel carried; attnkata at this version from that index.
    res = kata(
        "set",
        "export",
        graded.bundle,
        "--to",
        "github-classroom",
        "--out",
        tmp_path / "idx",
        "--index-url",
        "https://example.org/simple",
    )
    assert res.exit_code == 0, res.output
    text = (tmp_path / "idx" / ".github" / "workflows" / "classroom.yml").read_text()
    assert '--index-url https://example.org/simple "attnkata==' in text and "wheels/" not in text
    assert not (tmp_path / "idx" / ".github" / "attnkata" / "wheels").exists()
    assert "example.org" in " ".join(res.stderr.split())
    res = kata(
        "set",
        "export",
        graded.bundle,
        "--to",
        "gradescope",
        "--out",
        tmp_path / "both",
        "--from-index",
        "--wheel",
        REPO / "pyproject.toml",
    )
    assert res.exit_code == 2 and "pick one" in " ".join(res.stderr.split())
    res = kata("set", "export", graded.bundle, "--to", "moodle", "--out", tmp_path / "m")
    assert res.exit_code == 2
