"""The practice CLI, through typer's CliRunner and a few real `kata` processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnkata.cli.app import app

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO / "reference" / "sdpa.py"
SKELETON = REPO / "katas" / "sdpa" / "skeleton.py"
runner = CliRunner()


def kata(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input)


def test_list_json_has_every_kata_and_status():
    res = kata("list", "--json")
    assert res.exit_code == 0
    rows = json.loads(res.stdout)
    sdpa = next(r for r in rows if r["id"] == "sdpa")
    assert sdpa["status"] == "not started" and sdpa["minutes"] == 15


def test_show_renders_both_languages():
    assert "Worked example" in kata("show", "sdpa").stdout
    zh = kata("show", "sdpa", "--lang", "zh").stdout
    assert "缩放点积注意力" in zh and "约定" in zh


def test_unknown_kata_suggests_closest_and_exits_2():
    res = kata("show", "sdpaa")
    assert res.exit_code == 2
    assert "unknown kata 'sdpaa'" in res.stderr and "did you mean 'sdpa'" in res.stderr


def test_bad_language_is_a_usage_error():
    res = kata("show", "sdpa", "--lang", "fr")
    assert res.exit_code == 2 and "unknown language" in res.stderr


def test_start_never_overwrites_and_force_keeps_a_backup(tmp_path):
    res = kata("start", "sdpa")
    assert res.exit_code == 0
    path = Path(os.environ["KATA_WORKSPACE"]) / "sdpa" / "sdpa.py"
    assert path.read_text() == SKELETON.read_text()
    path.write_text("# my precious work\n")
    res = kata("start", "sdpa")
    assert res.exit_code == 0 and "already exists" in res.stdout
    assert path.read_text() == "# my precious work\n"
    res = kata("start", "sdpa", "--force")
    assert res.exit_code == 0
    backups = list(path.parent.glob("sdpa.py.*.bak"))
    assert len(backups) == 1 and backups[0].read_text() == "# my precious work\n"
    assert path.read_text() == SKELETON.read_text()


def test_start_with_dir(tmp_path):
    res = kata("start", "sdpa", "--dir", str(tmp_path / "here"))
    assert res.exit_code == 0 and (tmp_path / "here" / "sdpa.py").is_file()


def test_check_passing_file_exits_0_and_json_is_pure():
    res = kata("check", "sdpa", str(REFERENCE), "--json")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["version"] == 1 and data["status"] == "pass" and data["kata"] == "sdpa"
    assert all(t["status"] in ("pass", "skip") for t in data["tests"])


def test_check_skeleton_exits_1_listing_each_failing_test():
    res = kata("check", "sdpa", str(SKELETON))
    assert res.exit_code == 1
    assert " FAIL " in res.stdout or " ERROR " in res.stdout
    assert "no_mask[float64]" in res.stdout
    assert "NotImplementedError" in res.stdout


def test_check_default_file_and_missing_file(tmp_path):
    res = kata("check", "sdpa")
    assert res.exit_code == 2 and "no such file" in res.stderr and "kata start sdpa" in res.stderr
    kata("start", "sdpa")
    assert kata("check", "sdpa").exit_code == 1


def test_check_reports_syntax_errors_with_the_line(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "def scaled_dot_product_attention(q, k, v, mask=None, scale=None):\n    return q @\n"
    )
    res = kata("check", "sdpa", str(bad), "--json")
    assert res.exit_code == 1
    data = json.loads(res.stdout)
    assert data["status"] == "error"
    assert data["diagnostics"][0]["id"] == "syntax-error"
    assert data["diagnostics"][0]["source"][0]["line"] == 2


def test_check_reports_a_missing_entry_point(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def attention(q, k, v):\n    return q\n")
    data = json.loads(kata("check", "sdpa", str(bad), "--json").stdout)
    assert data["diagnostics"][0]["id"] == "missing-entry-point"
    assert "attention" in data["diagnostics"][0]["explanation"]


def test_hints_progress_and_are_recorded():
    first = kata("hint", "sdpa")
    second = kata("hint", "sdpa")
    assert first.exit_code == 0 and "1/4" in first.stdout and "2/4" in second.stdout
    assert "Hint 3/4" in kata("hint", "sdpa", "--level", "3").stdout
    assert kata("hint", "sdpa", "--level", "9").exit_code == 2
    stats = json.loads(kata("stats", "--json").stdout)
    assert stats["katas"]["sdpa"]["hints"] == 3


def test_solution_asks_first_and_yes_skips(tmp_path):
    res = kata("solution", "sdpa", input="n\n")
    assert "torch.exp" not in res.stdout
    res = kata("solution", "sdpa", "--yes")
    assert res.exit_code == 0 and "def scaled_dot_product_attention" in res.stdout
    assert "BEGIN SOLUTION" not in res.stdout


def test_history_and_stats_after_checks():
    kata("start", "sdpa")
    kata("check", "sdpa", str(SKELETON), "--record")
    kata("check", "sdpa", str(REFERENCE), "--record")
    rows = json.loads(kata("history", "--json").stdout)
    assert rows[0]["status"] == "pass" and rows[1]["status"] in ("fail", "error")
    stats = json.loads(kata("stats", "--json").stdout)["katas"]["sdpa"]
    assert stats["attempts"] == 2 and stats["passes"] == 1 and stats["time_to_first_pass"] >= 0
    listed = json.loads(kata("list", "--json").stdout)
    assert next(r for r in listed if r["id"] == "sdpa")["status"] == "passed"


def test_lang_from_environment(monkeypatch):
    monkeypatch.setenv("KATA_LANG", "zh")
    assert "提示" in kata("hint", "sdpa").stdout


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "attnkata", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )


def test_real_process_check_and_version():
    assert _run("--version").stdout.startswith("attnkata ")
    proc = _run("check", "sdpa", str(SKELETON))
    assert proc.returncode == 1 and "no_mask" in proc.stdout
    assert "\x1b[" not in proc.stdout  # plain text when piped


@pytest.mark.parametrize(
    "command", [["list"], ["show", "sdpa"], ["hint", "sdpa"], ["history"], ["stats"]]
)
def test_commands_that_do_not_grade_do_not_import_torch(command):
    code = (
        "import sys; from attnkata.cli.app import app\n"
        f"try:\n    app({command!r})\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write('TORCH=' + str('torch' in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "TORCH=False" in proc.stderr, proc.stderr[-500:]


def test_debug_shows_a_traceback_for_errors():
    res = kata("--debug", "show", "nope")
    assert res.exit_code == 2 and "Traceback" in res.stderr
    assert "Traceback" not in kata("show", "nope").stderr


def test_watch_rechecks_on_save(tmp_path):
    """A real `kata watch` process: grades once, then again when the file is saved."""
    import time

    path = tmp_path / "sdpa.py"
    path.write_text(SKELETON.read_text())
    proc = subprocess.Popen(
        [sys.executable, "-m", "attnkata", "watch", "sdpa", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "KATA_HOME": str(tmp_path / "home")},
    )
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    seen = ""

    def read_until(text: str, count: int, timeout: float = 60) -> None:
        # Raw reads on the pipe: a buffered readline() after select() can hide output.
        nonlocal seen
        deadline = time.monotonic() + timeout
        while seen.count(text) < count:
            assert time.monotonic() < deadline and proc.poll() is None, seen[-2000:]
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                time.sleep(0.05)
                continue
            seen += chunk.decode(errors="replace")

    try:
        read_until("watching", 1)
        assert "FAIL" in seen or "ERROR" in seen
        time.sleep(0.5)
        path.write_text(REFERENCE.read_text())
        read_until("watching", 2)
        assert " PASS " in seen
    finally:
        proc.terminate()
        proc.wait(10)
