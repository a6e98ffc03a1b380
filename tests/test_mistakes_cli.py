"""`kata mistakes`, `kata explain`, and what `kata check` / `hint` / `stats` do with diagnoses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnkata.checker import mistakes
from attnkata.checker.diagnose import demos
from attnkata.checker.messages import msg
from attnkata.cli.app import app

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "mistakes"
UNIFORM = FIXTURES / "sdpa" / "fully-masked-row-uniform.py"
runner = CliRunner()


def kata(*args: str):
    return runner.invoke(app, list(args))


def test_mistakes_lists_the_whole_catalogue():
    res = kata("mistakes")
    assert res.exit_code == 0
    for mid in ("kv-repeat-instead-of-interleave", "fully-masked-row-uniform", "window-off-by-one"):
        assert mid in res.stdout


def test_mistakes_of_one_kata_as_json_in_chinese():
    res = kata("mistakes", "sdpa", "--json", "--lang", "zh")
    assert res.exit_code == 0
    rows = json.loads(res.stdout)
    ids = [r["id"] for r in rows]
    assert "fully-masked-row-uniform" in ids and "kv-repeat-instead-of-interleave" not in ids
    row = next(r for r in rows if r["id"] == "fully-masked-row-uniform")
    assert row["title"] == mistakes.get("fully-masked-row-uniform").render("title", "zh")
    assert row["link"].startswith("kata show sdpa") and row["severity"] == "essential"


def test_mistakes_of_an_unknown_kata_exits_2():
    res = kata("mistakes", "sdpx")
    assert res.exit_code == 2 and "did you mean 'sdpa'" in res.stderr


def test_explain_shows_text_demo_code_and_its_real_output():
    res = kata("explain", "kv-repeat-instead-of-interleave")
    assert res.exit_code == 0
    out = res.stdout
    assert "repeat_interleave" in out and "Hides when" in out
    assert "repeat(1, g, 1, 1)       : [0, 1, 0, 1, 0, 1]" in out  # computed, not pasted
    assert "repeat_interleave(g, 1)  : [0, 0, 0, 1, 1, 1]" in out


def test_explain_fully_masked_row_uniform_demo_in_chinese():
    res = kata("explain", "fully-masked-row-uniform", "--lang", "zh")
    assert res.exit_code == 0
    assert "整行被遮掩时返回了 V 的均值" in res.stdout and "演示" in res.stdout
    assert "-> output 3.0" in res.stdout and "-> output 0.0" in res.stdout


def test_explain_json():
    res = kata("explain", "causal-mask-top-left", "--json")
    data = json.loads(res.stdout)
    assert data["id"] == "causal-mask-top-left" and "tril" in data["demo"]
    assert "[[1, 0, 0, 0, 0], [1, 1, 0, 0, 0]]" in data["demo_output"]


def test_explain_unknown_id_suggests_the_closest_and_exits_2():
    res = kata("explain", "fully-masked-row-unifrom")
    assert res.exit_code == 2
    assert (
        "unknown mistake" in res.stderr and "did you mean 'fully-masked-row-uniform'" in res.stderr
    )


@pytest.mark.parametrize("mid", demos.ids())
def test_every_demo_runs_cleanly(mid):
    assert mid in mistakes.catalogue()
    output = demos.run(mid)
    assert output and "Error:" not in output.splitlines()[-1], output


def test_check_names_the_mistake_with_grid_and_line():
    res = kata("check", "sdpa", str(UNIFORM))
    assert res.exit_code == 1
    out = res.stdout
    assert "fully-masked-row-uniform" in out and "returns the mean of V" in out
    assert "masked_fill(mask == 0, -1e9)" in out  # the line, highlighted
    assert "expected" in out and "yours" in out and "■ ■ ■ ■ ■ ■ ■" in out  # the grids
    zh = kata("check", "sdpa", str(UNIFORM), "--lang", "zh").stdout
    assert "整行被遮掩时返回了 V 的均值" in zh and "应为" in zh and "你的" in zh


def test_check_json_carries_ids_and_grids():
    data = json.loads(kata("check", "sdpa", str(UNIFORM), "--json").stdout)
    top = data["diagnostics"][0]
    assert top["id"] == "fully-masked-row-uniform"
    assert top["data"]["mask_expected"] and top["data"]["mask_got"]


def test_hint_climbs_the_ladder_for_the_diagnosed_mistake_then_stats_counts_it():
    kata("check", "sdpa", str(UNIFORM), "--record")  # not the workspace file: recorded when asked
    res = kata("hint", "sdpa")
    flat = " ".join(res.stdout.split())  # the console wraps long lines
    assert "Hint 1/3 for fully-masked-row-uniform" in flat and "mean of the values" in flat
    # The last rung: the fix verified on the candidate's own file, its -1e9 line replaced.
    assert "-1e9" in kata("hint", "sdpa", "--level", "3").stdout
    stats = json.loads(kata("stats", "--json").stdout)
    assert stats["mistakes"].get("fully-masked-row-uniform") == 1
    assert "fully-masked-row-uniform" in kata("stats").stdout


def test_hint_falls_back_to_the_catalogue_fix():
    # No repair template knows this mistake and sdpa-numpy has no hint of its own for it: the
    # last rung says so and gives the catalogue's fix.
    warning = FIXTURES / "sdpa-numpy" / "numpy-float-warning.py"
    kata("check", "sdpa-numpy", str(warning), "--record")
    first = "".join(kata("hint", "sdpa-numpy", "--lang", "zh").stdout.split())
    assert "".join(msg("ladder.property.numpy-float-warning", "zh").split()) in first
    res = kata("hint", "sdpa-numpy", "--level", "3", "--lang", "zh")
    m = mistakes.get("numpy-float-warning")
    flat = "".join(res.stdout.split())
    assert "".join(m.render("fix", "zh").split()) in flat and "numpy-float-warning" in res.stdout
