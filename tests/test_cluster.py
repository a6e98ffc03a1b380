"""`kata set grade --dask local:2` gives the same grades, journal and outputs as local grading
(and the class report's copy-detection section and the Canvas file come along).

One class is graded twice, once per way, in a module fixture that the tests share. The Dask run
is the real command in a child process (`python -m attnkata set grade ... --dask local:2`), started
first so that its cluster's start-up (fresh interpreters importing torch) overlaps the local
pool's grading in this process: the two runs are independent, and the fixture costs little more
than the Dask run alone."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnkata.checker.sandbox import host
from attnkata.checker.sets.grade import JOURNAL, ClassResults, GradeOptions, grade_set
from attnkata.cli.app import app

pytest.importorskip("distributed")

REFERENCE = (Path(__file__).resolve().parent.parent / "reference" / "sdpa.py").read_text()
# A pass, a renamed copy of it, a wrong answer with a diagnosis and a hostile infinite loop.
# The loop sorts first so that it is graded first: on the Dask cluster its time limit runs out
# beside the three others on the second worker instead of after them.
STUDENTS = {
    "aaron": "def scaled_dot_product_attention(q, k, v, mask=None, scale=None):\n    while True:\n        pass\n",
    "alice": REFERENCE,
    "alice2": "# mine\n" + REFERENCE.replace("scores", "logits").replace("weights", "probs"),
    "carol": REFERENCE.replace(
        "scale = 1.0 / math.sqrt(d) if scale is None else scale",
        "scale = 1.0 if scale is None else scale",
    ),
}
TIMEOUT = "2"  # candidate seconds: what the loop costs; a correct sdpa needs ~0.3


@dataclass
class Runs:
    bundle: Path
    subs: Path
    local: ClassResults
    dask_out: Path
    dask_stderr: str


def _journal_keys(folder: Path) -> set[tuple[str, str, str]]:
    return {
        (r["student"], r["sha256"], json.dumps(r["config"], sort_keys=True))
        for r in map(json.loads, (folder / JOURNAL).read_text().splitlines())
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    tmp = tmp_path_factory.mktemp("cluster")
    # conftest's isolated home is per test and this fixture runs before it: isolate it here too.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KATA_HOME", str(tmp / "kata-home"))
        mp.setenv("KATA_WORKSPACE", str(tmp / "workspace"))
        mp.setenv("KATA_LANG", "en")
        return _grade_both_ways(tmp, mp)


def _grade_both_ways(tmp: Path, mp: pytest.MonkeyPatch) -> Runs:
    bundle = tmp / "set"
    res = CliRunner().invoke(
        app,
        [
            "set",
            "create",
            "--katas",
            "sdpa",
            "--out",
            str(bundle),
            "--public-tests",
            "0",
            "--lang",
            "en",
            "--title",
            "Week 3",
        ],
    )
    assert res.exit_code == 0, res.output
    subs = tmp / "class"
    for name, src in STUDENTS.items():
        (subs / name).mkdir(parents=True)
        (subs / name / "sdpa.py").write_text(src)
    export = tmp / "canvas.csv"
    export.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section\n    Points Possible,,,,\n"
        "Alice A,1,S1,alice,A\nCarol C,3,S3,carol@uni.edu,A\n"
    )
    dask_out = tmp / "dask"
    cmd = [
        sys.executable,
        "-m",
        "attnkata",
        "set",
        "grade",
        str(bundle),
        str(subs),
        "--dask",
        "local:2",
        "--timeout",
        TIMEOUT,
        "--quiet",
        "--out",
        str(dask_out),
        "--canvas",
        str(export),
    ]
    # Output to files, not pipes: nobody reads a pipe while the local pool grades.
    with (tmp / "dask.stdout").open("w") as so, (tmp / "dask.stderr").open("w") as se:
        # Its own process group: a failed test stops the cluster's workers along with it.
        child = subprocess.Popen(
            cmd, stdout=so, stderr=se, stdin=subprocess.DEVNULL, start_new_session=True
        )
        try:
            # No thread of this process runs while the local pool forks its workers. They would
            # inherit the warm-ups that conftest asks of the test run's zygote (the meta device,
            # ~3 s per zygote, which sdpa never uses); `kata set grade` in its own process has none.
            mp.setattr(host, "_warm", set())
            # One local worker: the pool grades the same way with any number, and the second
            # core is the Dask run's.
            local = grade_set(
                bundle, subs, GradeOptions(jobs=1, timeout=float(TIMEOUT), out=tmp / "local")
            )
            rc = child.wait(timeout=240)
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
    stderr = (tmp / "dask.stderr").read_text()
    assert rc == 0, f"{(tmp / 'dask.stdout').read_text()}\n{stderr}"
    return Runs(bundle, subs, local, dask_out, stderr)


def test_dask_local_cluster_grades_like_the_local_pool(runs: Runs):
    data = json.loads((runs.dask_out / "results.json").read_text())
    assert sorted(s["student"] for s in data["students"]) == sorted(STUDENTS)
    statuses = {}
    for s in data["students"]:
        mine, theirs = s["katas"]["sdpa"], runs.local.entry(s["student"], "sdpa")
        assert (mine["status"], mine["score"]) == (theirs.status, theirs.score), s["student"]
        assert mine["result"]["solution"] == theirs.result["solution"]  # the submission's own path
        assert [d["id"] for d in mine["result"]["diagnostics"]] == [
            d["id"] for d in theirs.result["diagnostics"]
        ]
        statuses[s["student"]] = mine["status"]
    # Every kind of outcome was compared, the hostile loop stopped on a Dask worker included.
    assert statuses == {"aaron": "timeout", "alice": "pass", "alice2": "pass", "carol": "fail"}
    carol = next(s for s in data["students"] if s["student"] == "carol")["katas"]["sdpa"]["result"]
    assert carol["diagnostics"], "the wrong answer must carry a diagnosis to compare"


def test_journals_are_interchangeable_and_a_resumed_run_reuses_all(runs: Runs, tmp_path: Path):
    assert _journal_keys(runs.dask_out) == _journal_keys(runs.local.out)
    # Resume from a copy: the other tests read the Dask run's folder as it wrote it.
    resumed = shutil.copytree(runs.dask_out, tmp_path / "resumed")
    again = grade_set(
        runs.bundle, runs.subs, GradeOptions(timeout=float(TIMEOUT), out=resumed, dask="local:2")
    )
    assert again.stats["graded"] == 0 and again.stats["reused"] == len(STUDENTS)
    for student in STUDENTS:
        assert again.entry(student, "sdpa").status == runs.local.entry(student, "sdpa").status


def test_dask_run_writes_the_report_and_the_canvas_file(runs: Runs):
    # The class report shows the renamed copy side by side; Canvas gets the totals.
    page = (runs.dask_out / "report.html").read_text()
    assert 'data-a="alice" data-b="alice2"' in page and "Possible copies" in page
    assert 'data-b="carol"' not in page
    rows = list(csv.reader((runs.dask_out / "canvas-import.csv").open()))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Week 3"]
    assert rows[2][0] == "Alice A" and rows[2][-1] == "10"
    assert "alice2" in " ".join(runs.dask_stderr.split())  # unmatched folders are listed


def test_bad_dask_address_is_a_usage_error(tmp_path: Path):
    res = CliRunner().invoke(
        app, ["set", "grade", str(tmp_path), str(tmp_path), "--dask", "http://x"]
    )
    assert res.exit_code == 2 and "bad --dask address" in " ".join(res.stderr.split())
