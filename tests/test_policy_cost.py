"""A static-policy finding no longer zeroes a graded file: the file is run, its attention
mistake is diagnosed beside the finding, and what the finding costs is the set's choice
(`grading.policy`: "flag" by default, "penalty:<fraction>", "zero"). A finding that reaches a
fused attention kernel still costs everything."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from attnkata.checker.errors import UsageError
from attnkata.checker.messages import msg
from attnkata.checker.models import FAIL, PASS, Diagnostic, Result
from attnkata.checker.sets import policy_cost
from attnkata.checker.sets.grade import GradeOptions, grade_set
from attnkata.checker.sets.manifest import (
    BundleError,
    Manifest,
    check_policy,
    parse_policy,
    read_manifest,
)
from attnkata.checker.sets.platforms import platform_result
from attnkata.cli.app import app

REPO = Path(__file__).resolve().parent.parent
REFERENCE = (REPO / "reference" / "sdpa.py").read_text()
NO_SCALE = REFERENCE.replace(
    "scale = 1.0 / math.sqrt(d) if scale is None else scale",
    "scale = 1.0 if scale is None else scale",
)
FUSED = REFERENCE.replace(
    "scale = 1.0 / math.sqrt(d) if scale is None else scale",
    "scale = 1.0 / math.sqrt(d) if scale is None else scale\n"
    "    _kernel = torch.ops.aten._scaled_dot_product_attention_math",
)
runner = CliRunner()


def test_policy_forms_and_legacy_modes():
    assert parse_policy("flag") == ("flag", 0.0) and parse_policy("zero") == ("zero", 1.0)
    assert parse_policy("penalty:0.25") == ("penalty", 0.25) and parse_policy(" penalty:1 ") == (
        "penalty",
        1.0,
    )
    assert parse_policy("warn") == ("flag", 0.0) and parse_policy("enforce") == ("zero", 1.0)
    for bad in ("penalty:1.5", "penalty:-0.1", "penalty:", "penalty:x", "refuse", "", None, 3):
        with pytest.raises(ValueError, match="penalty:<fraction>"):
            parse_policy(bad)
        with pytest.raises(UsageError):
            check_policy(bad, [], UsageError, "--policy")


def _result(status: str = PASS, lang: str = "en") -> Result:
    r = Result(
        kata="sdpa",
        solution="x.py",
        status=status,
        required_tiers=["core"],
        lang=lang,
        diagnostics=[
            Diagnostic(id="missing-scale", severity="essential", title="Scores are not scaled"),
            Diagnostic(
                id="policy-io",
                severity="actionable",
                title="I/O",
                explanation="You import `os` (line 1). " + msg("policy_warn", lang),
            ),
        ],
    )
    r.attach_source("import os\nimport torch\n")
    return r


@pytest.mark.parametrize(
    ("spec", "kept", "status", "severity"),
    [
        ("flag", 1.0, PASS, "actionable"),
        ("penalty:0.3", 0.7, PASS, "actionable"),
        ("zero", 0.0, FAIL, "essential"),
    ],
)
def test_the_cost_is_written_in_the_finding_and_read_by_the_score(spec, kept, status, severity):
    r = _result()
    policy_cost.apply(r, spec, (), "en")
    d = r.diagnostics[1]
    assert r.status == status and d.severity == severity and d.data["policy"] == spec
    assert msg("policy_warn", "en") not in d.explanation and "You import `os`" in d.explanation
    assert r.diagnostics[0].id == "missing-scale"  # the attention mistake stays, first
    data = r.to_dict()
    assert policy_cost.factor(data) == pytest.approx(kept)
    assert "policy-io" in policy_cost.note(data, "en")
    zh = _result(lang="zh")
    policy_cost.apply(zh, spec, (), "zh")
    assert msg("policy_warn", "zh") not in zh.diagnostics[1].explanation


def test_a_file_without_findings_keeps_its_score():
    r = Result(kata="sdpa", solution="x.py", status=PASS, required_tiers=["core"], lang="en")
    policy_cost.apply(r, "zero", (), "en")
    assert (
        r.status == PASS
        and policy_cost.factor(r.to_dict()) == 1.0
        and policy_cost.note(r.to_dict(), "en") is None
    )


def test_the_manifest_refuses_a_bad_policy(tmp_path: Path):
    res = runner.invoke(
        app,
        [
            "set",
            "create",
            "--katas",
            "sdpa",
            "--out",
            str(tmp_path / "s"),
            "--public-tests",
            "0",
            "--lang",
            "en",
            "--policy",
            "penalty:0.4",
        ],
    )
    assert res.exit_code == 0, res.output
    assert read_manifest(tmp_path / "s").grading.policy == "penalty:0.4"
    data = json.loads((tmp_path / "s" / "instructor" / "manifest.json").read_text())
    data["grading"]["policy"] = "penalty:2"
    with pytest.raises(BundleError, match="penalty"):
        Manifest.from_dict(data)
    res = runner.invoke(
        app,
        ["set", "create", "--katas", "sdpa", "--out", str(tmp_path / "t"), "--policy", "strict"],
    )
    assert res.exit_code == 2


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    tmp = tmp_path_factory.mktemp("policy-cost")
    bundle = tmp / "set"
    res = runner.invoke(
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
        ],
    )
    assert res.exit_code == 0, res.output
    subs = tmp / "class"
    for student, source in {
        "plain": NO_SCALE,
        "os": NO_SCALE + "\nimport os\n",
        "right_os": REFERENCE + "\nimport os\n",
        "fused": FUSED,
    }.items():
        (subs / student).mkdir(parents=True)
        (subs / student / "sdpa.py").write_text(source)
    cr = grade_set(bundle, subs, GradeOptions(jobs=2, timeout=30, out=tmp / "out"))
    return SimpleNamespace(cr=cr, bundle=bundle, subs=subs)


def _ids(cr, student):
    return [d["id"] for d in cr.entry(student, "sdpa").result["diagnostics"]]


@pytest.mark.slow
def test_a_flagged_file_is_run_and_keeps_its_score_by_default(graded):
    cr = graded.cr
    assert cr.manifest.grading.policy == "flag"
    plain, flagged, right = (cr.entry(s, "sdpa") for s in ("plain", "os", "right_os"))
    # Before: 0 and "This file was not run". Now: run, diagnosed, and (flag) no points taken.
    assert "missing-scale" in _ids(cr, "os") and "policy-io" in _ids(cr, "os"), _ids(cr, "os")
    assert flagged.score == plain.score > 0, (
        flagged.score,
        plain.score,
        _ids(cr, "os"),
        _ids(cr, "plain"),
    )
    assert right.status == "pass" and right.score == right.points
    assert any("policy-io" in n and "no points taken" in n for n in right.notes)
    text = json.dumps(flagged.result)
    assert "was not run" not in text and msg("grade.policy_cost.flag", "en") in text
    gs = platform_result(cr, "os", "gradescope")
    outputs = "\n".join(t["output"] for t in gs["tests"])
    assert (
        "missing-scale" in outputs and "policy-io" in outputs and gs["score"] == cr.total("plain")
    )


@pytest.mark.slow
def test_a_fused_kernel_stays_a_failure(graded):
    e = graded.cr.entry("fused", "sdpa")
    assert e.score == 0 and e.status == "fail"
    d = next(d for d in e.result["diagnostics"] if d["id"] == "policy-private-api")
    assert "_scaled_dot_product_attention_math" in d["explanation"] and d["severity"] == "essential"
