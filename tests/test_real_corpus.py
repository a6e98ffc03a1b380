"""The real-style corpus: attention code written the way the codebases candidates learn from
write it (HF eager attention, the Llama and DeepSeek references, nanoGPT/minGPT, the
annotated transformer, GPT-NeoX, llm-foundry, fairseq/ESPnet helpers, Set Transformer,
lucidrains' Perceiver, NumPy interview code), adapted to each kata only at its boundary.

Every file in tests/fixtures/real/<kata>/ is labelled in that folder's labels.toml:

    [[file]]
    name = "hf_eager_finfo_min.py"   # the file
    style = "HF eager attention"     # the codebase it imitates
    verdict = "fail"                 # what the grader must say: "pass" or "fail"
    top = "fully-masked-row-uniform" # the essential id the diagnosis must name first
                                     # (left out for files with two mistakes, where either
                                     # of `must` may come first, and for files whose
                                     # mistake has no catalogue id)
    must = ["fully-masked-row-uniform"]   # essential ids that must be named
    must_not = ["scale-by-d-model"]       # ids that must not be named at all
    note = "what the file does wrong and where"

The labels were written from the code and the kata contracts, not from what the engine says.
A correct file must pass and get no essential diagnosis even when the diagnosis is run on it
anyway; a wrong file must fail and get no essential id outside `must`, except the runner's
(an exception, a timeout...) and the ids saying the code cannot take some input.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from attnkata.checker import mistakes, models
from attnkata.checker.catalog import all_katas, get_kata
from attnkata.checker.diagnose import diagnose_as_passing
from attnkata.checker.runner import check

REAL = Path(__file__).resolve().parent / "fixtures" / "real"

# Runner ids (the code raised, hung, ended the interpreter...) and the ids that say the code
# cannot take an input (e.g. it only handles 4-D masks): they may accompany a catalogued
# mistake in a wrong file, but never stand for it.
RUNNER_IDS = {"exception", "timeout", "interpreter-ended", "memory-limit", "signature-mismatch"}
INPUT_IDS = {"input-not-supported"}
ALLOWED_EXTRA = RUNNER_IDS | INPUT_IDS
FIELDS = {"name", "style", "verdict", "top", "must", "must_not", "note"}


def load_labels() -> list[tuple[str, dict[str, Any]]]:
    """(kata id, label) for every labelled file, in folder and file order."""
    out = []
    for labels in sorted(REAL.glob("*/labels.toml")):
        with labels.open("rb") as fh:
            for entry in tomllib.load(fh)["file"]:
                out.append((labels.parent.name, entry))
    return out


LABELS = load_labels()


@pytest.fixture(autouse=True)
def strict_diagnosis(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in the diagnosis fails these tests instead of becoming an informative note."""
    monkeypatch.setenv("ATTNKATA_STRICT_DIAGNOSIS", "1")


def test_labels_are_well_formed() -> None:
    katas = all_katas()
    known = mistakes.catalogue()
    problems = []
    by_kata: dict[str, set[str]] = {}
    for kata_id, label in LABELS:
        where = f"{kata_id}/{label.get('name')}"
        by_kata.setdefault(kata_id, set()).add(label.get("name", ""))
        if kata_id not in katas:
            problems.append(f"{where}: no kata {kata_id!r}")
            continue
        if set(label) - FIELDS or not {
            "name",
            "style",
            "verdict",
            "must",
            "must_not",
            "note",
        } <= set(label):
            problems.append(f"{where}: fields {sorted(label)}")
        if not (REAL / kata_id / label["name"]).is_file():
            problems.append(f"{where}: no such file")
        if label["verdict"] not in ("pass", "fail"):
            problems.append(f"{where}: verdict {label['verdict']!r}")
        ids = [*label["must"], *label["must_not"], *([label["top"]] if "top" in label else [])]
        for mid in ids:
            if mid not in known:
                problems.append(f"{where}: {mid!r} is not a catalogue id")
            elif mid not in katas[kata_id].mistakes and not known[mid].applies_to(kata_id):
                problems.append(f"{where}: {mid!r} does not apply to {kata_id}")
        if label["verdict"] == "pass" and (label["must"] or "top" in label):
            problems.append(f"{where}: a passing file names no mistake")
        if "top" in label and label["top"] not in label["must"]:
            problems.append(f"{where}: top {label['top']!r} is not in must")
        if set(label["must"]) & set(label["must_not"]):
            problems.append(f"{where}: must and must_not overlap")
    for kata_id, names in by_kata.items():
        on_disk = {p.name for p in (REAL / kata_id).glob("*.py")}
        if on_disk - names:
            problems.append(f"{kata_id}: unlabelled files {sorted(on_disk - names)}")
    assert not problems, "\n".join(problems)


def test_corpus_covers_every_kata() -> None:
    counts: dict[str, int] = {}
    for kata_id, _ in LABELS:
        counts[kata_id] = counts.get(kata_id, 0) + 1
    # The Triton katas' blind corpus is being written apart from their katas (issue 26).
    assert set(counts) == set(all_katas()), (
        f"katas without real-style files: {set(all_katas()) - set(counts)}"
    )
    passing = sum(label["verdict"] == "pass" for _, label in LABELS)
    two = sum(label["verdict"] == "fail" and len(label["must"]) >= 2 for _, label in LABELS)
    assert len(LABELS) >= 60 and passing >= 25 and len(LABELS) - passing >= 30 and two >= 5, (
        f"{len(LABELS)} files, {passing} correct, {two} with two mistakes"
    )


def judge(label: dict[str, Any], passed: bool, diagnostics: list[models.Diagnostic]) -> list[str]:
    """Every way `label` is not met by a grading (passed, diagnostics); empty when it is.

    For a passing file `diagnostics` are those of `diagnose_as_passing`."""
    essential = [d.id for d in diagnostics if d.is_error]
    named = {d.id for d in diagnostics}
    out = []
    if label["verdict"] == "pass":
        if not passed:
            out.append("the grader fails this correct file")
        if essential:
            out.append(f"a correct file got essential diagnoses {essential}")
        return out
    if passed:
        out.append("the grader passes this wrong file")
    first = next((mid for mid in essential if mid not in ALLOWED_EXTRA), None)
    if "top" in label and (not essential or essential[0] != label["top"]):
        out.append(
            f"first essential diagnosis {essential[0] if essential else None!r}, expected {label['top']!r}"
        )
    elif "top" not in label and label["must"] and first not in label["must"]:
        out.append(f"first catalogued diagnosis {first!r}, expected one of {label['must']}")
    missing = [mid for mid in label["must"] if mid not in essential]
    if missing:
        out.append(f"not named: {missing}")
    forbidden = sorted(named & set(label["must_not"]))
    if forbidden:
        out.append(f"named although absent: {forbidden}")
    extra = [mid for mid in essential if mid not in label["must"] and mid not in ALLOWED_EXTRA]
    if extra:
        out.append(f"essential ids outside must: {extra}")
    return out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kata_id", "label"),
    [pytest.param(k, lab, id=f"{k}/{Path(lab['name']).stem}") for k, lab in LABELS],
)
def test_real_style_file(kata_id: str, label: dict[str, Any]) -> None:
    path = REAL / kata_id / label["name"]
    kata = get_kata(kata_id)
    if label["verdict"] == "pass":
        result = check(kata, path, lang="en", diagnose=False)
        failed = [
            f"{t.id}: {t.message[:300]}" for t in result.failed_tests if t.status != models.SKIP
        ]
        problems = (
            [f"the grader fails this correct file: {failed[:3]}"] if not result.passed else []
        )
        problems += judge(label, True, diagnose_as_passing(get_kata(kata_id), path))
    else:
        # "It fails" and the diagnosis need only the first failed test (as the mutation matrix).
        result = check(kata, path, lang="en", maxfail=1)
        problems = judge(label, result.passed, result.diagnostics)
    got = [(d.id, d.severity) for d in result.diagnostics]
    assert not problems, (
        f"{kata_id}/{label['name']} ({label['note']}): {'; '.join(problems)}; got {got}"
    )
