"""The mutation matrix: every fixture with one known mistake is failed by its kata's grader
and diagnosed as exactly that mistake; every correct solution gets no essential diagnosis.

Fixtures are discovered from the folders, so adding a kata's diagnosis means adding files:
    tests/fixtures/mistakes/<kata>/<mistake-id>.py            (or <mistake-id>--<variant>.py)
    tests/fixtures/alt/<kata>/*.py                             correct alternatives
Checks run in-process through `runner.check` (about a second each).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attnkata.checker import mistakes
from attnkata.checker.catalog import all_katas, get_kata
from attnkata.checker.diagnose import diagnose_as_passing
from attnkata.checker.runner import check

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MISTAKES = FIXTURES / "mistakes"
ALT = FIXTURES / "alt"
REFERENCE = Path(__file__).resolve().parent.parent / "reference"

# Runner ids that may follow a catalogued diagnosis (e.g. an exception in a test the
# diagnosis explains only partly); never the *top* diagnosis of a mistake fixture.
RUNNER_IDS = {"exception", "timeout", "interpreter-ended", "memory-limit", "signature-mismatch"}


@pytest.fixture(autouse=True)
def strict_diagnosis(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in the diagnosis fails these tests instead of becoming an informative note."""
    monkeypatch.setenv("ATTNKATA_STRICT_DIAGNOSIS", "1")


def _mistake_cases() -> list:
    cases = []
    katas = all_katas()
    for kata_dir in sorted(p for p in MISTAKES.iterdir() if p.is_dir() and p.name in katas):
        for path in sorted(kata_dir.glob("*.py")):
            cases.append(pytest.param(kata_dir.name, path, id=f"{kata_dir.name}/{path.stem}"))
    return cases


def _correct_cases() -> list:
    cases = []
    for kata in all_katas().values():
        ref = REFERENCE / f"{kata.module_name}.py"
        if ref.is_file():
            cases.append(pytest.param(kata.id, ref, id=f"{kata.id}/reference"))
        for path in sorted((ALT / kata.id).glob("*.py")) if (ALT / kata.id).is_dir() else []:
            cases.append(pytest.param(kata.id, path, id=f"{kata.id}/alt/{path.stem}"))
    return cases


def expected_id(path: Path) -> str:
    return path.stem.split("--")[0]


@pytest.mark.parametrize(("kata_id", "path"), _mistake_cases())
def test_mistake_fixture_is_diagnosed(kata_id: str, path: Path) -> None:
    want = expected_id(path)
    assert want in mistakes.catalogue(), f"{path.name}: {want!r} is not a catalogue id"
    kata = get_kata(kata_id)
    # Grading stops at the first failed test: the matrix needs "the grader fails it" and the
    # diagnosis, not every test's verdict (4-10x faster).
    result = check(kata, path, lang="en", maxfail=1)
    assert not result.passed, (
        f"the {kata_id} grader passes {path.name}, which has the mistake {want}"
    )
    ids = [d.id for d in result.diagnostics]
    assert ids, f"{path.name}: no diagnosis at all"
    top = result.diagnostics[0]
    assert top.id == want, f"{path.name}: top diagnosis {top.id!r}, expected {want!r}; all: {ids}"
    assert top.severity == "essential"
    assert top.title and top.explanation and top.fix and top.link
    assert top.evidence, "a verdict must say what decided it"
    others = [d.id for d in result.diagnostics[1:] if d.is_error and d.id not in RUNNER_IDS]
    assert not others, f"{path.name}: only {want} is in this file, but also diagnosed {others}"


# Right values, wrong cost (e.g. alt/sliding-window/full_mask.py): legitimate for an
# alternative only if the grader's efficiency tier fails it too.
COST_IDS = mistakes.COST_IDS  # right values, wrong cost


@pytest.mark.parametrize(("kata_id", "path"), _correct_cases())
def test_correct_solution_gets_no_essential_diagnosis(kata_id: str, path: Path) -> None:
    essential = [
        (d.id, d.evidence) for d in diagnose_as_passing(get_kata(kata_id), path) if d.is_error
    ]
    if essential and {mid for mid, _ in essential} <= COST_IDS and "/alt/" in str(path):
        result = check(get_kata(kata_id), path, diagnose=False)
        failing = {t.tier for t in result.failed_tests if t.status != "skip"}
        assert failing == {"efficient"}, (
            f"{path.name}: diagnosed {essential}, but fails {failing} tests"
        )
        return
    assert not essential, f"{path.name} is correct but was diagnosed with {essential}"


def test_every_kata_mistake_in_scope_has_a_fixture() -> None:
    """The function katas' catalogued mistakes each have a fixture (the module katas' are
    added with their mutants)."""
    scope = ["sdpa", "sdpa-numpy", "causal-mask", "sliding-window", "attention-sinks", "alibi"]
    # Mistakes that cannot be written alone in a banded sliding window: -1e9 on an empty
    # window gives the mean of zero padding, i.e. the right zeros.
    impossible = {("sliding-window", "fully-masked-row-uniform")}
    missing = []
    for kata_id in scope:
        have = {expected_id(p) for p in (MISTAKES / kata_id).glob("*.py")}
        for mid in get_kata(kata_id).mistakes:
            if mid not in have and (kata_id, mid) not in impossible:
                missing.append(f"{kata_id}/{mid}")
    assert not missing, f"no fixture for: {missing}"


def test_spellings_with_several_common_forms_have_two_fixtures() -> None:
    for kata_id, mid in [
        ("sdpa", "scale-not-sqrt"),
        ("sdpa", "fully-masked-row-uniform"),
        ("causal-mask", "causal-mask-excludes-diagonal"),
        ("causal-mask", "causal-mask-top-left"),
        ("sdpa", "transpose-2d-on-batched"),
        ("mha", "scale-by-d-model"),
    ]:
        found = [p for p in (MISTAKES / kata_id).glob("*.py") if expected_id(p) == mid]
        assert len(found) >= 2, f"{kata_id}/{mid}: {len(found)} spelling(s)"
