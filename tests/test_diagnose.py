"""The diagnosis engine's parts: the catalogue, the mutants and probes of each kata, the
behavioural matcher, crash signatures, source rules, grids, and what a user sees."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pytest
import torch

from attnkata.checker import mistakes as cat
from attnkata.checker.catalog import all_katas, get_kata
from attnkata.checker.diagnose import crashes, engine
from attnkata.checker.diagnose.ast_rules import Source, banned_references, locate
from attnkata.checker.diagnose.behaviour import differs, flatten, match
from attnkata.checker.diagnose.inputs import Probe, grid_of, strict_mask
from attnkata.checker.diagnose.subjects import Observed
from attnkata.checker.models import SEVERITIES
from attnkata.checker.runner import check

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REQUIRED_IDS = """scale-by-d-model missing-scale scale-not-sqrt scale-inverted softmax-wrong-dim unstable-softmax
causal-mask-inverted causal-mask-excludes-diagonal causal-mask-leaks-future causal-mask-top-left
mask-polarity-flipped fully-masked-row-nan fully-masked-row-uniform mask-applied-after-softmax
padding-mask-wrong-axis mask-ignored split-heads-without-transpose merge-heads-without-transpose
missing-contiguous missing-output-projection kv-repeat-instead-of-interleave kv-projection-wrong-size
transpose-2d-on-batched dropout-in-eval window-off-by-one window-wrong-side window-materializes-full-scores
mla-scale-without-rope-dim mla-rope-on-nope mla-kv-b-split-global mla-missing-kv-norm rope-wrong-layout
latent-queries-from-input banned-api dtype-not-preserved input-mutated""".split()
SPECS = [k for k in all_katas() if engine.load_spec(k) is not None]


@pytest.fixture(autouse=True)
def strict_diagnosis(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in the diagnosis fails these tests instead of becoming an informative note."""
    monkeypatch.setenv("ATTNKATA_STRICT_DIAGNOSIS", "1")


# -- the catalogue ---------------------------------------------------------------------------
def test_catalogue_has_every_required_id():
    missing = [mid for mid in REQUIRED_IDS if mid not in cat.catalogue()]
    assert not missing


@pytest.mark.parametrize("mid", list(cat.catalogue()))
def test_catalogue_entry_is_complete_in_both_languages(mid):
    m = cat.get(mid)
    assert m.severity in SEVERITIES
    for what in ("title", "explanation", "fix", "hides"):
        en, zh = m.render(what, "en"), m.render(what, "zh")
        assert en.strip() and zh.strip() and en != zh
        assert "{" not in en and "{" not in zh, f"{mid}.{what}: unfilled parameter"
        assert any("\u4e00" <= ch <= "\u9fff" for ch in zh), f"{mid}.{what}: zh text has no Chinese"
    assert m.link("sdpa", "en").startswith("kata show sdpa")


def test_every_kata_toml_mistake_id_exists_in_the_catalogue():
    unknown = [
        f"{k.id}: {mid}"
        for k in all_katas().values()
        for mid in k.mistakes
        if mid not in cat.catalogue()
    ]
    unknown += [
        f"{k.id}: hint for {h.mistake}"
        for k in all_katas().values()
        for h in k.hints
        if h.mistake and h.mistake not in cat.catalogue()
    ]
    assert not unknown


def test_catalogue_parameters_are_filled_with_the_candidates_numbers():
    m = cat.get("scale-by-d-model")
    text = m.render("explanation", "en", cat.derived_params({"d": 8, "D": 64, "H": 8}))
    assert "sqrt(64) = 8" in text and "1/sqrt(8) = 0.354" in text and "2.83" in text
    zh = m.render("explanation", "zh", cat.derived_params({"d": 8, "D": 64, "H": 8}))
    assert "sqrt(64) = 8" in zh
    # Without numbers the text stays readable: symbols, no "H = H".
    assert "H = H" not in cat.get("kv-repeat-instead-of-interleave").render("explanation", "en")


def test_catalogue_validation_names_the_bad_entry():
    data = tomllib.loads(
        (Path(cat.__file__).with_name("mistakes.toml")).read_text(encoding="utf-8")
    )
    bad = json.loads(json.dumps(data))
    bad["mistake"][0]["explanation"]["zh"] = ""
    with pytest.raises(ValueError, match="scale-by-d-model.*explanation.zh"):
        cat.parse(bad)
    bad = json.loads(json.dumps(data))
    bad["mistake"][1]["fix"]["en"] = "use {nonsense}"
    with pytest.raises(ValueError, match="nonsense"):
        cat.parse(bad)


# -- mutants and probes ----------------------------------------------------------------------
@pytest.mark.parametrize("kata_id", SPECS)
def test_mutants_are_catalogued_and_each_shows_on_some_probe(kata_id):
    spec = engine.load_spec(kata_id)
    kata = get_kata(kata_id)
    ref, muts = engine._local_observations(kata_id)
    assert all(r.ok for r in ref), (
        f"the reference raises on a probe: {[r.error for r in ref if not r.ok]}"
    )
    for mid, variants in muts.items():
        assert mid in cat.catalogue(), mid
        assert mid in kata.mistakes or cat.get(mid).applies_to(kata_id), (
            f"{mid} does not apply to {kata_id}"
        )
        for vi, outs in enumerate(variants):
            shows = [
                p.name
                for p, r, m in zip(spec.probes, ref, outs, strict=True)
                if differs(m, r, flatten(r.value)[1].size).any()
            ]
            assert shows, f"{kata_id}: mutant {mid}[{vi}] equals the reference on every probe"


@pytest.mark.parametrize("kata_id", SPECS)
def test_mutants_of_different_mistakes_are_told_apart(kata_id):
    """No two mistakes may behave identically on all probes: the verdict would be a guess."""
    _, muts = engine._local_observations(kata_id)
    flat = [(mid, vi, outs) for mid, variants in muts.items() for vi, outs in enumerate(variants)]
    ref, _ = engine._local_observations(kata_id)
    sizes = [flatten(r.value)[1].size for r in ref]
    clashes = []
    for i, (a, ai, a_outs) in enumerate(flat):
        for b, bi, b_outs in flat[i + 1 :]:
            if a != b and not any(
                differs(x, y, n).any() for x, y, n in zip(a_outs, b_outs, sizes, strict=True)
            ):
                clashes.append(f"{a}[{ai}] == {b}[{bi}]")
    assert not clashes


def test_strict_mask_rows_have_a_true_and_a_false_key():
    m = strict_mask(3, 4, 5, 7, seed=1)
    assert m.any(-1).all() and (~m).any(-1).all()


# -- behavioural matching on hand-made observations --------------------------------------------
def _obs(*values):
    return [Observed(value=torch.tensor(v, dtype=torch.float64)) for v in values]


def _probes(n):
    return [Probe(f"p{i}", "f") for i in range(n)]


def test_match_exact_single_mutant():
    ref = _obs([1.0, 2.0], [3.0, 4.0])
    muts = {"a": [_obs([1.0, 9.0], [3.0, 4.0])], "b": [_obs([5.0, 2.0], [3.0, 4.0])]}
    v = match(_probes(2), _obs([1.0, 9.0], [3.0, 4.0]), ref, muts)
    assert v.exact and list(v.matched) == ["a"] and v.matched["a"] == ["p0"]


def test_match_two_independent_mistakes_jointly():
    ref = _obs([1.0, 2.0, 3.0])
    muts = {
        "a": [_obs([9.0, 2.0, 3.0])],
        "b": [_obs([1.0, 2.0, 7.0])],
        "c": [_obs([1.0, 5.0, 3.0])],
    }
    v = match(_probes(1), _obs([9.0, 2.0, 7.0]), ref, muts)
    assert not v.exact and set(v.matched) == {"a", "b"}


def test_match_refuses_a_partial_resemblance():
    ref = _obs([1.0, 2.0, 3.0])
    muts = {"a": [_obs([9.0, 8.0, 3.0])]}
    v = match(_probes(1), _obs([9.0, 2.5, 3.0]), ref, muts)  # half of a's signature, plus noise
    assert not v.matched and v.deviates


def test_match_nan_swallows_another_mistakes_effect():
    ref = _obs([1.0, 2.0], [0.0, 0.0])
    nan = float("nan")
    muts = {"scale": [_obs([3.0, 6.0], [0.5, 0.5])], "nan": [_obs([1.0, 2.0], [nan, 0.0])]}
    v = match(_probes(2), _obs([3.0, 6.0], [nan, 0.5]), ref, muts)
    assert set(v.matched) == {"scale", "nan"}


def test_match_compares_errors_without_their_numbers():
    ref = _obs([1.0])
    err = Observed(
        error=("RuntimeError", "t() expects a tensor with <= 2 dimensions, but self is 4D")
    )
    mut = Observed(
        error=("RuntimeError", "t() expects a tensor with <= 2 dimensions, but self is 3D")
    )
    assert match(_probes(1), [err], ref, {"t": [[mut]]}).matched == {"t": ["p0"]}
    other = Observed(error=("RuntimeError", "something else"))
    assert not match(_probes(1), [other], ref, {"t": [[mut]]}).matched


def test_correct_output_is_not_a_deviation():
    ref = _obs([1.0, 2.0])
    v = match(_probes(1), _obs([1.0 + 1e-12, 2.0]), ref, {"a": [_obs([0.0, 2.0])]})
    assert not v.deviates and not v.matched


# -- crash signatures and source rules ---------------------------------------------------------
@pytest.mark.parametrize(
    ("message", "kata", "params", "mid"),
    [
        (
            "view size is not compatible with input tensor's size and stride (at least one dimension spans across "
            "two contiguous subspaces). Use .reshape(...) instead.",
            "mha",
            {},
            "missing-contiguous",
        ),
        (
            "t() expects a tensor with <= 2 dimensions, but self is 4D",
            "sdpa",
            {},
            "transpose-2d-on-batched",
        ),
        (
            "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated",
            "sdpa",
            {},
            "transpose-2d-on-batched",
        ),
        (
            "The size of tensor a (8) must match the size of tensor b (2) at non-singleton dimension 1",
            "gqa",
            {"H": 8, "Hkv": 2},
            "kv-heads-not-expanded",
        ),
        (
            "The size of tensor a (8) must match the size of tensor b (2) at non-singleton dimension 1",
            "sdpa",
            {"H": 8, "Hkv": 2},
            None,
        ),
        (
            "The size of tensor a (7) must match the size of tensor b (6) at non-singleton dimension 1",
            "gqa",
            {"H": 8, "Hkv": 2},
            None,
        ),
    ],
)
def test_crash_signatures(message, kata, params, mid):
    assert crashes.classify(message, kata, params) == mid


SOURCE = '''
import math
import torch
# scores.masked_fill(mask, -1e9) would be wrong: this comment must not count


def f(q, k, v, mask=None):
    """masked_fill in a docstring does not count either."""
    d = q.shape[-1]
    scores = q @ k.T / math.sqrt(d)
    scores = scores.masked_fill(mask == 0, -1e9)
    k2 = k.repeat(1, 4, 1, 1)
    q.mul_(2)
    return torch.softmax(scores, dim=-1) @ v
'''


@pytest.mark.parametrize(
    ("mid", "line"),
    [
        ("fully-masked-row-uniform", 11),
        ("transpose-2d-on-batched", 10),
        ("scale-not-sqrt", 10),
        ("kv-repeat-instead-of-interleave", 12),
        ("input-mutated", 13),
        ("softmax-wrong-dim", 14),
    ],
)
def test_source_rules_point_at_the_line(mid, line):
    refs = locate(mid, Source(SOURCE))
    assert refs and refs[0].line == line, (mid, refs)


def test_banned_references_found_even_if_never_called():
    src = Source(
        "import torch\nfrom torch.nn.functional import scaled_dot_product_attention as sdpa\n"
        "def f(q):\n    if False:\n        return torch.nn.MultiheadAttention(4, 2)\n    return q\n"
    )
    found = banned_references(src)
    assert [(r.line, n) for r, n in found] == [
        (2, "scaled_dot_product_attention"),
        (5, "MultiheadAttention"),
    ]


# -- grids -----------------------------------------------------------------------------------
def test_grid_of_weights_masks_and_nan():
    w = torch.tensor([[[[0.5, 0.5, 0.0], [float("nan")] * 3]]])
    assert grid_of(w, "weights") == [[1, 1, 0], [None, None, None]]
    assert grid_of(torch.tensor([[True, False]]), "mask") == [[1, 0]]
    assert grid_of(np.array([[[[True, False, True]]], [[[False, False, True]]]]), "mask") == [
        [1, 0, 1],
        [0, 0, 1],
    ]
    assert grid_of("no", "mask") is None


# -- end to end: what `kata check` reports ------------------------------------------------------
UNIFORM = FIXTURES / "mistakes" / "sdpa" / "fully-masked-row-uniform.py"


def test_fully_masked_row_uniform_end_to_end():
    result = check(get_kata("sdpa"), UNIFORM, lang="zh")
    top = result.diagnostics[0]
    assert top.id == "fully-masked-row-uniform" and top.severity == "essential"
    assert "V 的均值" in top.title and "1/7" in top.explanation  # the candidate's own S = 7
    assert [r.line for r in top.source] == [11] and "masked_fill" in top.source[0].text
    expected, got = top.data["mask_expected"], top.data["mask_got"]
    empty = [i for i, row in enumerate(expected) if not any(row)]
    assert empty and all(all(got[i]) for i in empty)  # the empty row attends every key
    assert top.link.startswith("kata show sdpa")


def test_diagnosis_is_fast_and_json_serialisable():
    result = check(get_kata("sdpa"), FIXTURES / "mistakes" / "sdpa" / "mask-polarity-flipped.py")
    json.dumps(result.to_dict())
    diag_time = result.timings["total"] - result.timings["tests"] - result.timings["load"]
    assert diag_time < 1.5, result.timings


def test_unknown_mistake_is_reported_honestly(tmp_path):
    path = tmp_path / "sdpa.py"
    path.write_text(
        "import math, torch\n"
        "def scaled_dot_product_attention(q, k, v, mask=None, scale=None):\n"
        "    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale\n"
        "    s = q @ k.transpose(-2, -1) * scale\n"
        "    if mask is not None:\n"
        "        s = s.masked_fill(~mask, float('-inf'))\n"
        "    m = s.amax(-1, keepdim=True)\n"
        "    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))\n"
        "    e = torch.exp(s - m)\n"
        "    z = e.sum(-1, keepdim=True)\n"
        "    return (e / torch.where(z > 0, z, torch.ones_like(z))) @ v * 1.01\n",
        encoding="utf-8",
    )
    result = check(get_kata("sdpa"), path)
    assert [d.id for d in result.diagnostics] == ["no-known-mistake"]
    d = result.diagnostics[0]
    assert d.severity == "informative" and any("no_mask" in e for e in d.evidence)


def test_two_mistakes_are_both_named(tmp_path):
    path = tmp_path / "sdpa.py"
    path.write_text(
        "import torch\n"
        "def scaled_dot_product_attention(q, k, v, mask=None, scale=None):\n"
        "    scores = q @ k.transpose(-2, -1)\n"
        "    if mask is not None:\n"
        "        scores = scores.masked_fill(~mask, float('-inf'))\n"
        "    return torch.softmax(scores, dim=-1) @ v\n",
        encoding="utf-8",
    )
    ids = {d.id for d in check(get_kata("sdpa"), path).diagnostics if d.is_error}
    assert ids == {"missing-scale", "fully-masked-row-nan"}


def test_an_unreached_banned_import_is_only_actionable(tmp_path):
    src = (FIXTURES / "mistakes" / "sdpa" / "missing-scale.py").read_text(encoding="utf-8")
    path = tmp_path / "sdpa.py"
    path.write_text(
        "from torch.nn.functional import scaled_dot_product_attention  # noqa\n" + src,
        encoding="utf-8",
    )
    result = check(get_kata("sdpa"), path)
    by_id = {d.id: d for d in result.diagnostics}
    assert by_id["missing-scale"].severity == "essential"
    assert by_id["banned-api"].severity == "actionable" and by_id["banned-api"].source[0].line == 1


def test_a_crash_the_mutant_explains_replaces_the_runners_generic_exception():
    result = check(get_kata("sdpa"), FIXTURES / "mistakes" / "sdpa" / "transpose-2d-on-batched.py")
    assert [d.id for d in result.diagnostics] == ["transpose-2d-on-batched"]
    assert result.diagnostics[0].source[0].text == "scores = q @ k.T * scale"


def test_symbols_collapse_only_where_no_number_is_known():
    assert "x = x * s" in cat.get("input-mutated").render("fix", "en")  # the text's own code stays
    assert "sqrt(D) = sqrt(D)" not in cat.get("scale-by-d-model").render("explanation", "en")


def test_a_bug_in_the_diagnosis_never_costs_the_grade(monkeypatch):
    monkeypatch.delenv("ATTNKATA_STRICT_DIAGNOSIS")

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(engine, "diagnose", broken)
    result = check(get_kata("sdpa"), UNIFORM)
    assert result.status == "fail"
    assert (
        result.diagnostics[0].id == "no-known-mistake"
        and "boom" in result.diagnostics[0].evidence[0]
    )
