"""Small things a new user trips over (issue 13's list): each gets a clear message and the
right exit code, and the result says exactly what was graded."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from typer.testing import CliRunner

from attnkata.cli.app import app

REFERENCE = Path(__file__).resolve().parent.parent / "reference" / "sdpa.py"
runner = CliRunner()


def test_a_directory_as_file_says_it_is_a_directory(tmp_path: Path) -> None:
    res = runner.invoke(app, ["check", "sdpa", str(tmp_path)])
    text = " ".join(res.output.split())  # the message may wrap at the terminal's width
    assert res.exit_code == 2
    assert "is a directory" in text and "sdpa.py" in text


def test_timeout_must_be_a_finite_positive_number() -> None:
    for bad in ("nan", "inf", "0", "-1"):
        res = runner.invoke(app, ["check", "sdpa", str(REFERENCE), "--timeout", bad])
        assert res.exit_code == 2, (bad, res.output)
        assert "--timeout" in res.output


def test_history_limit_zero_is_a_usage_error() -> None:
    res = runner.invoke(app, ["history", "--limit", "0"])
    assert res.exit_code == 2 and "--limit" in res.output


def test_unknown_kata_lang_warns_once_and_uses_english(monkeypatch) -> None:  # noqa: ANN001
    from attnkata.cli import console

    monkeypatch.setenv("KATA_LANG", "fr")
    monkeypatch.setattr(console, "_warned", set())
    warnings = []
    monkeypatch.setattr(console.err, "print", lambda text, **kw: warnings.append(str(text)))
    assert console.default_lang() == "en" and console.default_lang() == "en"
    assert len(warnings) == 1 and "KATA_LANG='fr'" in warnings[0]


def test_the_result_names_the_exact_source_it_graded(tmp_path: Path) -> None:
    file = tmp_path / "sdpa.py"
    file.write_bytes(REFERENCE.read_bytes())
    res = runner.invoke(app, ["check", "sdpa", str(file), "--json"])
    data = json.loads(res.stdout)
    assert data["source_sha256"] == hashlib.sha256(REFERENCE.read_bytes()).hexdigest()
    assert data["limits"]["call_timeout"] > 0 and data["isolation"]["backend"]
