"""The first-attempts corpus (tests/fixtures/firsts/<kata>/): code written the way a candidate
first writes a kata, usually with two or three mistakes, labelled in each folder's
labels.toml:

    [[file]]
    name = "hf_style_finfo_min.py"
    style = "..."                 # where the habits come from
    split = "train"               # "train" (may be looked at while tuning) or "heldout"
    verdict = "fail"              # what the grader must say
    top = "mask-polarity-flipped" # optional: the id expected first
    must = ["mask-polarity-flipped", "lse-empty-row-finite"]   # the mistakes it has
    must_not = [...]
    crashes_on = [...]            # optional: inputs the code cannot take
    note = "..."

What is judged (bench/diagnosis_report.py --firsts, tests/test_first_attempts.py), per split:
top-1 (the first essential id is one of `must`), coverage (every `must` id is essential),
wrong essential ids (outside `must`, the runner's ids and input-not-supported), false
rejects and false essential ids on correct files, false accepts. Aggregates, not per file.
"""

from __future__ import annotations

import tomllib
from collections.abc import Collection
from pathlib import Path
from typing import Any

FIRSTS = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "firsts"
SPLITS = ("train", "heldout")
# Runner ids and "cannot take this input": they may accompany a mistake, never stand for one.
RUNNER_IDS = {"exception", "timeout", "interpreter-ended", "memory-limit", "signature-mismatch"}
NOT_A_VERDICT = RUNNER_IDS | {"input-not-supported", "no-known-mistake"}


def load(kata_id: str, split: str = "all", root: Path = FIRSTS) -> list[dict[str, Any]]:
    """The labels of the kata's first attempts in `split` ("train", "heldout" or "all") whose
    file is there."""
    labels = root / kata_id / "labels.toml"
    if not labels.is_file():
        return []
    with labels.open("rb") as fh:
        files = tomllib.load(fh).get("file", [])
    return [
        f
        for f in files
        if (split == "all" or f.get("split") == split) and (root / kata_id / f["name"]).is_file()
    ]


def judge(
    label: dict[str, Any], passed: bool, essential: list[str], named: Collection[str] = ()
) -> dict[str, Any]:
    """One first attempt against its label; `essential`: the essential ids, in order; `named`:
    every id the diagnosis gave, whatever its severity. A label may list
    `input-not-supported` among its mistakes (the file cannot take some input the contract
    allows): it must then be named, at its own (non-essential) severity."""
    must = list(label.get("must", []))
    row: dict[str, Any] = {
        "file": label["name"],
        "split": label.get("split"),
        "verdict": label["verdict"],
        "passed": passed,
        "got": list(essential),
        "must": must,
    }
    if label["verdict"] == "pass":
        row.update(false_reject=not passed, false_essential=bool(essential))
        return row
    first = next((i for i in essential if i not in NOT_A_VERDICT), None)
    mistakes = [m for m in must if m not in NOT_A_VERDICT]
    notes = [m for m in must if m in NOT_A_VERDICT]
    row.update(
        false_accept=passed,
        catalogued=bool(mistakes),
        first=first,
        top1=bool(mistakes) and first in mistakes,
        covered=bool(mistakes)
        and all(m in essential for m in mistakes)
        and all(m in essential or m in named for m in notes),
        wrong=sorted({i for i in essential if i not in must and i not in NOT_A_VERDICT}),
    )
    return row


def figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The aggregate figures of judged rows."""
    wrong = [r for r in rows if r["verdict"] == "fail"]
    catalogued = [r for r in wrong if r["catalogued"]]
    n = len(catalogued)
    top1, covered = sum(r["top1"] for r in catalogued), sum(r["covered"] for r in catalogued)
    return {
        "files": len(rows),
        "wrong_files": len(wrong),
        "catalogued": n,
        "top1": top1,
        "covered": covered,
        "top1_share": round(top1 / n, 3) if n else None,
        "coverage": round(covered / n, 3) if n else None,
        "wrong_ids": [{"file": r["file"], "ids": r["wrong"]} for r in wrong if r["wrong"]],
        "false_rejects": [r["file"] for r in rows if r["verdict"] == "pass" and r["false_reject"]],
        "false_essential": [
            {"file": r["file"], "ids": r["got"]}
            for r in rows
            if r["verdict"] == "pass" and r["false_essential"]
        ],
        "false_accepts": [r["file"] for r in wrong if r["false_accept"]],
    }
