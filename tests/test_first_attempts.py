"""The first-attempts corpus (tests/fixtures/firsts, see checker/diagnose/firsts.py): per split,
the grader's verdicts are right (no false accepts or rejects), no essential id is one the file
does not have, and in aggregate the first essential id is one of the file's mistakes on at
least 90% of the wrong files (top-1) and every mistake is named on at least 80% (coverage).

Every file of a split is graded once, in this process (its sandbox zygote, the kata's pytest
session and the diagnosis' local outputs are reused from file to file), and "it fails" needs
only the first failed test, as in the mutation matrix. Run one split with `-k train`.
"""

from __future__ import annotations

import tomllib
from functools import cache
from typing import Any

import pytest

from attnkata.checker import mistakes
from attnkata.checker.catalog import all_katas, get_kata
from attnkata.checker.diagnose import diagnose_as_passing, firsts
from attnkata.checker.runner import check

MIN_TOP1, MIN_COVERAGE = 0.9, 0.8  # the goals (issue 21)
# The held-out split is measured blind once, when the engine work is done
# (python bench/diagnosis_report.py --firsts --split heldout), then kept here as a floor:
# - round 1 (2026-11-25, 24 wrong files): top-1 20/24, coverage 19/24; those files are `train`
#   since, used for engine work;
# - round 2 (2026-11-28, 40 wrong files of the eight hard katas, written by people who never
#   saw the engine): top-1 38/40, coverage 35/40, no wrong essential id, no false reject or
#   accept, one false essential id on a correct file (diagnose_as_passing); the four katas of
#   issue 28 (16 wrong files, blind the same way): 16/16 and 16/16. Engine work since has
#   used the round-2 files, so the next honest figure needs a round 3.
FLOORS: dict[str, tuple[float, float]] = {}


@pytest.fixture(autouse=True)
def strict_diagnosis(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in the diagnosis fails these tests instead of becoming an informative note."""
    monkeypatch.setenv("ATTNKATA_STRICT_DIAGNOSIS", "1")


def _katas() -> list[str]:
    return (
        sorted(p.name for p in firsts.FIRSTS.iterdir() if (p / "labels.toml").is_file())
        if firsts.FIRSTS.is_dir()
        else []
    )


@cache
def graded(split: str) -> tuple[dict[str, Any], ...]:
    """Every file of `split`, graded and judged (checker/diagnose/firsts.py)."""
    rows = []
    for kata_id in _katas():
        kata = get_kata(kata_id)
        for label in firsts.load(kata_id, split):
            path = firsts.FIRSTS / kata_id / label["name"]
            if label["verdict"] == "pass":
                passed = check(kata, path, diagnose=False, keep_session=True).passed
                diags = diagnose_as_passing(kata, path)
            else:
                result = check(kata, path, maxfail=1, keep_session=True)
                passed, diags = result.passed, result.diagnostics
            row = firsts.judge(
                label, passed, [d.id for d in diags if d.is_error], [d.id for d in diags]
            )
            row["file"] = f"{kata_id}/{label['name']}"
            rows.append(row)
    return tuple(rows)


@pytest.mark.parametrize("split", firsts.SPLITS)
def test_labels_are_well_formed(split: str) -> None:
    known, katas = mistakes.catalogue(), all_katas()
    problems = []
    for kata_id in _katas():
        with (firsts.FIRSTS / kata_id / "labels.toml").open("rb") as fh:
            labels = [f for f in tomllib.load(fh).get("file", []) if f.get("split", split) == split]
        for label in labels:
            where = f"{kata_id}/{label.get('name')}"
            if kata_id not in katas:
                problems.append(f"{where}: no kata {kata_id!r}")
                continue
            if label.get("split") not in firsts.SPLITS or label.get("verdict") not in (
                "pass",
                "fail",
            ):
                problems.append(
                    f"{where}: split {label.get('split')!r}, verdict {label.get('verdict')!r}"
                )
            for mid in [*label.get("must", []), *label.get("must_not", [])]:
                if (
                    mid not in known
                    or not known[mid].applies_to(kata_id)
                    and mid not in katas[kata_id].mistakes
                ):
                    problems.append(f"{where}: {mid!r} is not a catalogue id of {kata_id}")
            if label.get("verdict") == "pass" and label.get("must"):
                problems.append(f"{where}: a passing file names no mistake")
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("split", firsts.SPLITS)
def test_verdicts_and_ids(split: str) -> None:
    rows = graded(split)
    if not rows:
        pytest.skip(f"no {split} files yet")
    got = firsts.figures(list(rows))
    assert not got["false_accepts"], f"the grader passes wrong files: {got['false_accepts']}"
    assert not got["false_rejects"], f"the grader fails correct files: {got['false_rejects']}"
    assert not got["false_essential"], f"correct files got essential ids: {got['false_essential']}"
    assert not got["wrong_ids"], f"essential ids the files do not have: {got['wrong_ids']}"


@pytest.mark.slow
@pytest.mark.parametrize("split", firsts.SPLITS)
def test_aggregate_accuracy(split: str) -> None:
    rows = graded(split)
    got = firsts.figures(list(rows))
    if not got["catalogued"]:
        pytest.skip(f"no wrong {split} files yet")
    missed = [
        f"{r['file']}: got {r['got']}, must {r['must']}"
        for r in rows
        if r["verdict"] == "fail" and r["catalogued"] and not (r["top1"] and r["covered"])
    ]
    min_top1, min_coverage = FLOORS.get(split, (MIN_TOP1, MIN_COVERAGE))
    assert got["top1_share"] >= min_top1 and got["coverage"] >= min_coverage, (
        f"top-1 {got['top1']}/{got['catalogued']}, coverage {got['covered']}/{got['catalogued']}:\n"
        + "\n".join(missed)
    )
