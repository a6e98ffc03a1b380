"""`kata set grade --dask local:2` gives the same grades, journal and outputs as local grading
(and the class report's copy-detection section and the Canvas file come along)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnkata.checker.sets.grade import JOURNAL, GradeOptions, grade_set
from attnkata.cli.app import app

pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parent.parent
REFERENCE = (REPO / "reference" / "sdpa.py").read_text()
STUDENTS = {
    "alice": REFERENCE,
    "alice2": "# mine\n" + REFERENCE.replace("scores", "logits").replace("weights", "probs"),
    "carol": REFERENCE.replace("scale = 1.0 / math.sqrt(d) if scale is None else scale",
                               "scale = 1.0 if scale is None else scale"),
    "erin": "def scaled_dot_product_attention(q, k, v, mask=None, scale=None):\n    while True:\n        pass\n",
}


def test_dask_local_cluster_grades_like_the_local_pool(tmp_path: Path):
    runner = CliRunner()
    bundle = tmp_path / "set"
    res = runner.invoke(app, ["set", "create", "--katas", "sdpa", "--out", str(bundle), "--public-tests", "0",
                              "--lang", "en", "--title", "Week 3"])
    assert res.exit_code == 0, res.output
    subs = tmp_path / "class"
    for name, src in STUDENTS.items():
        (subs / name).mkdir(parents=True)
        (subs / name / "sdpa.py").write_text(src)
    local = grade_set(bundle, subs, GradeOptions(jobs=2, timeout=3.0, out=tmp_path / "local"))
    export = tmp_path / "canvas.csv"
    export.write_text("Student,ID,SIS User ID,SIS Login ID,Section\n    Points Possible,,,,\n"
                      "Alice A,1,S1,alice,A\nCarol C,3,S3,carol@uni.edu,A\n")
    out = tmp_path / "dask"
    res = runner.invoke(app, ["set", "grade", str(bundle), str(subs), "--dask", "local:2", "--timeout", "3", "--quiet",
                              "--out", str(out), "--canvas", str(export)])
    assert res.exit_code == 0, res.output
    data = json.loads((out / "results.json").read_text())
    for s in data["students"]:
        mine, theirs = s["katas"]["sdpa"], local.entry(s["student"], "sdpa")
        assert (mine["status"], mine["score"]) == (theirs.status, theirs.score), s["student"]
        assert mine["result"]["solution"] == theirs.result["solution"]  # the submission's own path
        assert [d["id"] for d in mine["result"]["diagnostics"]] == [d["id"] for d in theirs.result["diagnostics"]]
    # The journals are interchangeable: the local results resume the Dask run's folder.
    keys = {(r["student"], r["sha256"], json.dumps(r["config"], sort_keys=True))
            for r in map(json.loads, (out / JOURNAL).read_text().splitlines())}
    assert keys == {(r["student"], r["sha256"], json.dumps(r["config"], sort_keys=True))
                    for r in map(json.loads, (tmp_path / "local" / JOURNAL).read_text().splitlines())}
    again = grade_set(bundle, subs, GradeOptions(timeout=3.0, out=out, dask="local:2"))
    assert again.stats["graded"] == 0 and again.stats["reused"] == len(STUDENTS)
    # The class report shows the renamed copy side by side; Canvas gets the totals.
    page = (out / "report.html").read_text()
    assert 'data-a="alice" data-b="alice2"' in page and "Possible copies" in page
    assert 'data-b="carol"' not in page
    rows = list(csv.reader((out / "canvas-import.csv").open()))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Week 3"]
    assert rows[2][0] == "Alice A" and rows[2][-1] == "10"
    assert "alice2" in " ".join(res.stderr.split())  # unmatched folders are listed


def test_bad_dask_address_is_a_usage_error(tmp_path: Path):
    res = CliRunner().invoke(app, ["set", "grade", str(tmp_path), str(tmp_path), "--dask", "http://x"])
    assert res.exit_code == 2 and "bad --dask address" in " ".join(res.stderr.split())
