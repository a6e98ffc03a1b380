"""`kata fix` end to end, in one process: a verified repair for every mistake id that has a
repair template (on a small fixture of that mistake), the CLI (the diff, --json, --write and
--undo, bad input), the hint ladder's three rungs through `kata hint`, the notebook's
`%%kata --fix`, and that a running mock interview refuses a fix.

Each fixture's fix is graded in the sandbox like any check: the file is never changed."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from attnkata.checker import api, catalog
from attnkata.checker.fix import templates
from attnkata.checker.sets.worker import FileRules
from attnkata.cli.app import app

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MUTANTS = FIXTURES / "mistakes"
REAL = FIXTURES / "real"
runner = CliRunner()

# One small fixture per mistake id with a repair template, the quickest to grade that the
# repair verifies on (a mutant of tests/fixtures/mistakes/, else a real-style file).
FIXTURE = {
    "alibi-bias-not-symmetric": MUTANTS / "alibi/alibi-bias-not-symmetric.py",
    "alibi-bias-scaled": MUTANTS / "alibi/alibi-bias-scaled.py",
    "alibi-distance-top-left": MUTANTS / "alibi/alibi-distance-top-left.py",
    "alibi-slopes-wrong-for-non-power-of-two": MUTANTS
    / "alibi/alibi-slopes-wrong-for-non-power-of-two.py",
    "block-table-ignored": MUTANTS / "paged-attention/block-table-ignored.py",
    "cache-concat-wrong-dim": MUTANTS / "kv-cache/cache-concat-wrong-dim.py",
    "cache-positions-restart": MUTANTS / "kv-cache/cache-positions-restart.py",
    "cache-rerotated": MUTANTS / "kv-cache/cache-rerotated.py",
    "cache-stores-repeated-heads": REAL / "kv-cache/repeat_kv_before_cache.py",
    "causal-mask-excludes-diagonal": MUTANTS / "causal-mask/causal-mask-excludes-diagonal.py",
    "causal-mask-inverted": MUTANTS / "causal-mask/causal-mask-inverted.py",
    "causal-mask-leaks-future": MUTANTS / "causal-mask/causal-mask-leaks-future.py",
    "causal-mask-top-left": MUTANTS / "causal-mask/causal-mask-top-left.py",
    "context-length-off-by-one": MUTANTS / "flash-decoding/context-length-off-by-one.py",
    "dropout-in-eval": MUTANTS / "mqa/dropout-in-eval.py",
    "dtype-not-preserved": MUTANTS / "mqa/dtype-not-preserved.py",
    "empty-split-nan": MUTANTS / "flash-decoding/empty-split-nan.py",
    "fully-masked-row-nan": MUTANTS / "sdpa-numpy/fully-masked-row-nan.py",
    "fully-masked-row-nan-gradient": MUTANTS / "mqa/fully-masked-row-nan-gradient.py",
    "fully-masked-row-uniform": MUTANTS / "sdpa/fully-masked-row-uniform--neg1e30.py",
    "global-one-direction": MUTANTS / "block-sparse/global-one-direction.py",
    "grid-misses-tail": MUTANTS / "triton-softmax/grid-misses-tail.py",
    "input-mutated": MUTANTS / "causal-mask/input-mutated.py",
    "kv-heads-not-expanded": MUTANTS / "gqa/kv-heads-not-expanded.py",
    "kv-projection-wrong-size": REAL / "mqa/mha_copy_kv_full_width.py",
    "kv-repeat-instead-of-interleave": MUTANTS / "gqa/kv-repeat-instead-of-interleave--k-only.py",
    "longformer-window-as-total": MUTANTS / "longformer/longformer-window-as-total.py",
    "lse-wrong": MUTANTS / "flash-decoding/lse-wrong.py",
    "mask-added-as-float": MUTANTS / "sdpa/mask-added-as-float.py",
    "mask-applied-after-softmax": MUTANTS / "gqa/mask-applied-after-softmax.py",
    "mask-ignored": MUTANTS / "sdpa/mask-ignored.py",
    "mask-polarity-flipped": MUTANTS / "sdpa/mask-polarity-flipped.py",
    "merge-heads-without-transpose": MUTANTS / "mqa/merge-heads-without-transpose.py",
    "missing-contiguous": MUTANTS / "mha/missing-contiguous.py",
    "missing-output-projection": MUTANTS / "mqa/missing-output-projection.py",
    "missing-scale": MUTANTS / "sdpa/missing-scale--default-only.py",
    "mla-absorb-wrong-slice": REAL / "mla-decode/absorb_split_key_value_blocks.py",
    "mla-cache-unnormalized": REAL / "mla-decode/cache_raw_compressed_kv.py",
    "mla-kv-b-split-global": MUTANTS / "mla/mla-kv-b-split-global.py",
    "mla-missing-kv-norm": MUTANTS / "mla/mla-missing-kv-norm.py",
    "mla-rope-on-nope": MUTANTS / "mla/mla-rope-on-nope.py",
    "mla-scale-without-rope-dim": MUTANTS / "mla/mla-scale-without-rope-dim.py",
    "nondeterministic-output": MUTANTS / "sdpa/nondeterministic-output.py",
    "padding-ignores-global": MUTANTS / "longformer/padding-ignores-global.py",
    "padding-mask-wrong-axis": MUTANTS / "causal-mask/padding-mask-wrong-axis.py",
    "positions-not-reassigned": MUTANTS / "attention-sinks/positions-not-reassigned.py",
    "random-blocks-transposed": MUTANTS / "block-sparse/random-blocks-transposed.py",
    "rerotation-wrong-direction": MUTANTS / "attention-sinks/rerotation-wrong-direction.py",
    "returns-attention-weights": MUTANTS / "sdpa/returns-attention-weights--tuple.py",
    "rope-inv-freq-exponent": MUTANTS / "rope/rope-inv-freq-exponent.py",
    "rope-on-values": MUTANTS / "kv-cache/rope-on-values.py",
    "rope-positions-ignored": REAL / "rope/meta_freqs_cis_prefix.py",
    "rope-rotation-direction": MUTANTS / "rope/rope-rotation-direction.py",
    "rope-wrong-layout": MUTANTS / "kv-cache/rope-wrong-layout.py",
    "scale-argument-ignored": MUTANTS / "sdpa/scale-argument-ignored.py",
    "scale-by-d-model": MUTANTS / "gqa/scale-by-d-model.py",
    "scale-inverted": MUTANTS / "sdpa-numpy/scale-inverted.py",
    "scale-not-sqrt": MUTANTS / "sdpa/scale-not-sqrt.py",
    "sink-tokens-evicted": MUTANTS / "attention-sinks/sink-tokens-evicted.py",
    "softmax-wrong-dim": MUTANTS / "sdpa/softmax-wrong-dim.py",
    "split-heads-without-transpose": MUTANTS / "gqa/split-heads-without-transpose.py",
    "split-lse-combine-unweighted": MUTANTS / "flash-decoding/split-lse-combine-unweighted.py",
    "topk-before-mask": MUTANTS / "topk-sparse/topk-before-mask.py",
    "topk-keeps-masked": MUTANTS / "topk-sparse/topk-keeps-masked.py",
    "topk-off-by-one": MUTANTS / "topk-sparse/topk-off-by-one.py",
    "topk-softmax-not-renormalized": REAL / "topk-sparse/softmax_then_zero.py",
    "transpose-2d-on-batched": MUTANTS / "sdpa/transpose-2d-on-batched--t.py",
    "unstable-softmax": MUTANTS / "topk-sparse/unstable-softmax.py",
    "window-off-by-one": MUTANTS / "sliding-window/window-off-by-one--strict.py",
    "window-wrong-side": MUTANTS / "sliding-window/window-wrong-side.py",
}
# Only the flash katas' graders (and block-sparse's memory tier) take seconds per re-grade.
SLOW = {
    "block-window-off-by-one": MUTANTS / "block-sparse/block-window-off-by-one.py",
    "flash-bwd-missing-delta": MUTANTS / "flash-attention-backward/flash-bwd-missing-delta.py",
    "flash-bwd-missing-scale": REAL / "flash-attention-backward/prescaled_q_dq_unscaled.py",
    "flash-bwd-nan-empty-rows": MUTANTS / "flash-attention-backward/flash-bwd-nan-empty-rows.py",
    "flash-bwd-renormalizes-per-tile": REAL / "flash-attention-backward/softmax_per_tile.py",
    "flash-empty-block-nan": MUTANTS / "flash-attention/flash-empty-block-nan.py",
    "flash-max-init-zero": MUTANTS / "flash-attention/flash-max-init-zero.py",
    "flash-tail-block-dropped": MUTANTS / "flash-attention/flash-tail-block-dropped--queries.py",
    "online-softmax-no-rescale": MUTANTS / "flash-attention/online-softmax-no-rescale.py",
    "online-softmax-sum-not-rescaled": MUTANTS
    / "flash-attention/online-softmax-sum-not-rescaled.py",
}
# Templates that no fixture's repair verifies on yet (tried, then "no verified fix").
UNPROVEN = {
    "flash-bwd-dk-dv-transposed",
    "last-block-dropped",
    "topk-keeps-smallest",
    "topk-wrong-dim",
    "window-in-tokens",
}


def test_every_mistake_id_with_a_template_has_its_fixture_here():
    assert set(templates.ids()) == FIXTURE.keys() | SLOW.keys() | UNPROVEN


def _kata_of(path: Path) -> catalog.Kata:
    return catalog.get_kata(path.parent.name)


def _verified(mid: str, path: Path) -> None:
    before = path.read_bytes()
    report = api.fix(_kata_of(path), path)
    assert path.read_bytes() == before  # never changed without --write
    fixes = {f.mistake: f for f in report.fixes}
    assert mid in fixes, (mid, report.unfixed)
    f = fixes[mid]
    assert f.tests_fixed >= 1 and f.diff.startswith(f"--- a/{path.name}")
    assert report.fixed_source is not None
    # Graded again from the source it shows: what it says it fixed passes.
    again = api.check(_kata_of(path).id, source=report.fixed_source)
    passing = {t.id for t in again.tests if t.status == "pass"}
    assert set(f.fixed_tests) <= passing


@pytest.mark.parametrize("mid", sorted(FIXTURE))
def test_a_verified_fix_for_each_mistake_with_a_template(mid: str) -> None:
    _verified(mid, FIXTURE[mid])


@pytest.mark.slow
@pytest.mark.parametrize("mid", sorted(SLOW))
def test_a_verified_fix_for_each_flash_mistake(mid: str) -> None:
    _verified(mid, SLOW[mid])


@pytest.mark.slow
def test_a_verified_fix_inside_a_triton_kernel() -> None:
    """torch's NaN guard cannot be called in a `@triton.jit` kernel: the kernel's own
    (`tl.where`) is what verifies there."""
    _verified("flash-empty-block-nan", REAL / "flash-attention-triton/fa2_algorithm1.py")


# -- the CLI -----------------------------------------------------------------------------------
def kata(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def said(res) -> str:  # noqa: ANN001
    """What the command printed, its lines joined (rich wraps at 80 columns here)."""
    return " ".join((res.stdout + res.stderr).split())


def test_kata_fix_shows_a_diff_and_leaves_the_file_alone(tmp_path: Path):
    path = tmp_path / "gqa.py"
    path.write_bytes((MUTANTS / "gqa/kv-repeat-instead-of-interleave.py").read_bytes())
    res = kata("fix", "gqa", path)
    assert res.exit_code == 1, res.output
    assert "Fix 1 of 1: kv-repeat-instead-of-interleave" in said(res)
    assert "+        k = k.repeat_interleave(n_rep, dim=1)" in res.stdout
    assert "fixes 20 of 20 failing tests" in said(res)
    assert path.read_bytes() == (MUTANTS / "gqa/kv-repeat-instead-of-interleave.py").read_bytes()

    data = json.loads(kata("fix", "gqa", path, "--json").stdout)
    assert data["unfixed"] == [] and data["fixed_status"] == "pass"
    fix = data["fixes"][0]
    assert fix["mistake"] == "kv-repeat-instead-of-interleave" and fix["lines"] == [29, 30]
    assert fix["tests_fixed"] == fix["tests_failing"] == 20

    res = kata("fix", "gqa", path, "--write")
    assert res.exit_code == 0 and "your previous version is kept" in said(res)  # it passes now
    assert "repeat_interleave(n_rep, dim=1)" in path.read_text()
    assert kata("check", "gqa", path).exit_code == 0
    res = kata("fix", "gqa", path, "--undo")
    assert res.exit_code == 0 and "Restored" in said(res)
    assert path.read_bytes() == (MUTANTS / "gqa/kv-repeat-instead-of-interleave.py").read_bytes()
    assert kata("fix", "gqa", path, "--undo").exit_code == 2  # nothing left to undo
    assert kata("fix", "gqa", path, "--write", "--undo").exit_code == 2


def test_kata_fix_answers_honestly_where_there_is_nothing_to_fix(tmp_path: Path):
    broken = tmp_path / "sdpa.py"
    broken.write_text("def scaled_dot_product_attention(q, k, v, mask=None, scale=None)\n")
    res = kata("fix", "sdpa", broken)
    assert res.exit_code == 1 and "could not be graded" in said(res)
    res = kata("fix", "sdpa", FIXTURES.parent.parent / "reference" / "sdpa.py")
    assert res.exit_code == 0 and "nothing to fix" in said(res)
    unknown = REAL / "causal-mask/padding_le_off_by_one.py"  # only no-known-mistake
    res = kata("fix", "causal-mask", unknown)
    assert res.exit_code == 1 and "No catalogued mistake was diagnosed" in said(res)
    loop = tmp_path / "loop.py"
    loop.write_text(
        "def scaled_dot_product_attention(q, k, v, mask=None, scale=None):\n    while True:\n        pass\n"
    )
    res = kata("fix", "sdpa", loop, "--timeout", "0.5")
    assert res.exit_code == 1 and "ran out of time" in said(res)
    assert loop.read_text().endswith("pass\n")


def test_a_running_mock_interview_refuses_a_fix(monkeypatch: pytest.MonkeyPatch):
    from attnkata.checker.mock import session as sess

    fake = SimpleNamespace(state=sess.ACTIVE, id="20260101-000000-abcd")
    monkeypatch.setattr(sess, "blocking_session", lambda kata_id: fake)
    res = kata("fix", "gqa", MUTANTS / "gqa/scale-by-d-model.py")
    assert res.exit_code == 2 and "mock interview" in said(res) and "no fixes" in said(res)


# -- the hint ladder ---------------------------------------------------------------------------
def test_kata_hint_climbs_three_rungs_for_the_diagnosed_mistake():
    assert kata("start", "gqa").exit_code == 0
    mine = Path(catalog.get_kata("gqa").solution_file)
    from attnkata.checker import workspace

    path = workspace.solution_path(catalog.get_kata("gqa"))
    assert path.name == mine.name
    path.write_text((MUTANTS / "gqa/kv-repeat-instead-of-interleave.py").read_text())
    assert kata("check", "gqa").exit_code == 1  # recorded: the workspace file
    one, two, three = (said(kata("hint", "gqa")) for _ in range(3))
    assert "Hint 1/3 for kv-repeat-instead-of-interleave" in one and "h modulo" in one
    assert "repeat" not in one.split("(gqa)", 1)[1].split("Run")[0]  # no code on the first rung
    assert "Line 29: `k = k.repeat(1, n_rep, 1, 1)`" in two and "should read KV head 0" in two
    assert "+ k = k.repeat_interleave(n_rep, dim=1)" in three and "kata solution gqa" in three
    assert "Hint 1/4" in said(kata("hint", "gqa"))  # then the kata's own hints
    assert "第 29 行" in said(kata("hint", "gqa", "--level", "2", "--lang", "zh"))
    assert kata("hint", "gqa", "--level", "4").exit_code == 2
    assert path.read_text() == (MUTANTS / "gqa/kv-repeat-instead-of-interleave.py").read_text()
    assert kata("check", "gqa").exit_code == 1
    rows = json.loads(kata("history", "gqa", "--json").stdout)
    assert rows[0]["rungs"] == 4 and rows[1]["rungs"] == 0


# -- the notebook ------------------------------------------------------------------------------
def test_the_fix_cell_magic_shows_the_verified_fix(capsys: pytest.CaptureFixture[str]):
    pytest.importorskip("IPython")
    from IPython.testing.globalipapp import get_ipython

    from attnkata.cli.notebook import KataMagics

    magics = KataMagics(get_ipython())
    cell = (MUTANTS / "sdpa/scale-not-sqrt.py").read_text()
    magics.kata("sdpa --fix", cell)
    out = capsys.readouterr().out
    assert "Fix 1 of 1: scale-not-sqrt" in out and "fixes" in out


# -- graded sets -------------------------------------------------------------------------------
def test_a_set_worker_adds_verified_fixes_only_when_asked():
    from attnkata.checker.proxy import Limits
    from attnkata.checker.runner import check
    from attnkata.checker.sets.worker import grade_one

    path = MUTANTS / "sdpa/scale-not-sqrt.py"
    lim = Limits(call_timeout=5.0, total_timeout=30.0)
    plain = grade_one(check, "sdpa", path, lim, "en", FileRules())
    assert plain["ok"] and "fix" not in plain
    asked = grade_one(check, "sdpa", path, lim, "en", FileRules(), fixes=True)
    assert [f["mistake"] for f in asked["fix"]["fixes"]] == ["scale-not-sqrt"]
    assert asked["result"]["status"] == plain["result"]["status"] == "fail"  # the grade stands
