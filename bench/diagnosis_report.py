"""Diagnosis coverage and accuracy, per kata and overall.

For every kata: how many of the mistakes its kata.toml lists have a fixture in
tests/fixtures/mistakes/<kata>/, how many fixtures get exactly their mistake as the top
diagnosis (top-1 accuracy), how many get a wrong verdict (a different essential id) as
opposed to an honest no-known-mistake, and how many correct solutions (reference +
tests/fixtures/alt/<kata>/) get a false essential diagnosis. Also the mean diagnosis time.

    python bench/diagnosis_report.py [--kata sdpa ...] [--json] [--verbose]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MISTAKES = REPO / "tests" / "fixtures" / "mistakes"
ALT = REPO / "tests" / "fixtures" / "alt"


def _diagnose_anyway(kata, path: Path):  # noqa: ANN001, ANN202
    from attnkata.checker.diagnose import diagnose_result
    from attnkata.checker.proxy import Candidate
    from attnkata.checker.runner import check

    result = check(kata, path, diagnose=False)
    with Candidate(path) as candidate:
        candidate.start()
        return result, diagnose_result(kata, path, path.read_text(encoding="utf-8"), result, candidate, "en")


def report_kata(kata, verbose: bool) -> dict:  # noqa: ANN001
    from attnkata.checker.runner import check

    rows = []
    folder = MISTAKES / kata.id
    for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        want = path.stem.split("--")[0]
        result = check(kata, path)
        diag_s = result.timings.get("total", 0) - result.timings.get("tests", 0) - result.timings.get("load", 0)
        top = result.diagnostics[0].id if result.diagnostics else None
        outcome = ("correct" if top == want else "no-match" if top in (None, "no-known-mistake", "exception")
                   else "wrong")
        rows.append({"fixture": path.name, "expected": want, "top": top, "outcome": outcome,
                     "graded": result.status, "diagnosis_s": round(diag_s, 3)})
        if verbose:
            print(f"  {kata.id:16s} {path.name:48s} {outcome:8s} top={top}", file=sys.stderr)
    correct_files = [REPO / "reference" / f"{kata.module_name}.py"]
    correct_files += sorted((ALT / kata.id).glob("*.py")) if (ALT / kata.id).is_dir() else []
    false_positives = []
    for path in correct_files:
        if not path.is_file():
            continue
        result, diags = _diagnose_anyway(kata, path)
        wrong = [d.id for d in diags if d.is_error]
        if result.passed and wrong:
            false_positives.append({"file": str(path.relative_to(REPO)), "diagnosed": wrong})
    listed = list(kata.mistakes)
    covered = sorted({r["expected"] for r in rows} & set(listed))
    n = len(rows)
    return {
        "kata": kata.id,
        "mistakes_listed": len(listed),
        "mistakes_with_fixture": len(covered),
        "uncovered": sorted(set(listed) - set(covered)),
        "fixtures": n,
        "top1_correct": sum(r["outcome"] == "correct" for r in rows),
        "wrong_verdicts": sum(r["outcome"] == "wrong" for r in rows),
        "no_match": sum(r["outcome"] == "no-match" for r in rows),
        "correct_solutions": len([p for p in correct_files if p.is_file()]),
        "false_positives": false_positives,
        "mean_diagnosis_s": round(statistics.mean([r["diagnosis_s"] for r in rows]), 3) if rows else None,
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kata", nargs="*", help="only these katas")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--verbose", action="store_true", help="one line per fixture on stderr")
    args = parser.parse_args()

    from attnkata.checker.catalog import all_katas

    katas = [k for k in all_katas().values() if not args.kata or k.id in args.kata]
    t0 = time.perf_counter()
    reports = [report_kata(k, args.verbose) for k in katas]
    fixtures = sum(r["fixtures"] for r in reports)
    overall = {
        "fixtures": fixtures,
        "top1_correct": sum(r["top1_correct"] for r in reports),
        "top1_accuracy": round(sum(r["top1_correct"] for r in reports) / fixtures, 3) if fixtures else None,
        "wrong_verdicts": sum(r["wrong_verdicts"] for r in reports),
        "mistakes_listed": sum(r["mistakes_listed"] for r in reports),
        "mistakes_with_fixture": sum(r["mistakes_with_fixture"] for r in reports),
        "correct_solutions": sum(r["correct_solutions"] for r in reports),
        "false_positives": sum(len(r["false_positives"]) for r in reports),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    if args.json:
        print(json.dumps({"katas": reports, "overall": overall}, indent=2))
        return
    head = f"{'kata':16s} {'covered':>9s} {'fixtures':>8s} {'top-1':>7s} {'wrong':>5s} {'no-match':>8s} " \
           f"{'correct ok':>10s} {'diag s':>7s}"
    print(head)
    print("-" * len(head))
    for r in reports:
        acc = f"{r['top1_correct'] / r['fixtures']:.0%}" if r["fixtures"] else "-"
        ok = f"{r['correct_solutions'] - len(r['false_positives'])}/{r['correct_solutions']}"
        mean = f"{r['mean_diagnosis_s']:.2f}" if r["mean_diagnosis_s"] is not None else "-"
        print(f"{r['kata']:16s} {r['mistakes_with_fixture']:>4d}/{r['mistakes_listed']:<4d} {r['fixtures']:>8d} "
              f"{acc:>7s} {r['wrong_verdicts']:>5d} {r['no_match']:>8d} {ok:>10s} {mean:>7s}")
    print("-" * len(head))
    o = overall
    acc = f"{o['top1_accuracy']:.1%}" if o["top1_accuracy"] is not None else "-"
    print(f"overall: {o['mistakes_with_fixture']}/{o['mistakes_listed']} listed mistakes have a fixture; "
          f"top-1 accuracy {acc} on {o['fixtures']} fixtures ({o['wrong_verdicts']} wrong verdicts); "
          f"{o['false_positives']} false essential diagnoses on {o['correct_solutions']} correct solutions; "
          f"{o['seconds']} s")
    for r in reports:
        if r["uncovered"]:
            print(f"  {r['kata']}: no fixture for {', '.join(r['uncovered'])}")
        for fp in r["false_positives"]:
            print(f"  {r['kata']}: FALSE POSITIVE {fp['file']}: {fp['diagnosed']}")
        for row in r["rows"]:
            if row["outcome"] != "correct":
                print(f"  {r['kata']}: {row['fixture']}: expected {row['expected']}, got {row['top']}")


if __name__ == "__main__":
    main()
