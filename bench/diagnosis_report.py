"""Diagnosis coverage and accuracy, on the mutant fixtures, the real-style corpus and the first attempts.

Mutants (tests/fixtures/mistakes/<kata>/<mistake-id>[--variant].py, one mistake each, written
in the style of reference/mutants; correct solutions are the references and
tests/fixtures/alt/<kata>/): per kata, how many of the mistakes its kata.toml lists have a
fixture, how many fixtures get exactly their mistake as the top diagnosis, how many get a
different essential id instead (a wrong verdict) as opposed to an honest no-known-mistake,
and how many correct solutions get a false essential diagnosis.

Real-style corpus (tests/fixtures/real/<kata>/, labelled in labels.toml; see
tests/test_real_corpus.py): the same questions on code written the way HF, Llama, nanoGPT,
DeepSeek, fairseq... write attention, with the expected verdict and ids from the labels.

Both sections print the same figures:
    top-1 precision   of the wrong files on which the diagnosis names a catalogued mistake
                      first, the share where it is the right one
    coverage          of the wrong files with a catalogued mistake, the share whose right
                      mistake is named first
    wrong ids         essential ids that are not the file's mistake(s) (nor a runner id)
    false rejects     correct files the grader fails
    false accepts     wrong files the grader passes

First attempts (tests/fixtures/firsts/<kata>/, labelled in labels.toml with a `split`,
"train" or "heldout"; see tests/test_first_attempts.py), per split (`--split`, default all):
    top-1             of the wrong files with a catalogued mistake, the share whose first
                      essential id is one of the label's `must`
    coverage          of those files, the share where every `must` id is named (essential)
    wrong ids         files with an essential id outside must + runner ids + input-not-supported
    false rejects / false essential on correct files / false accepts

Variants (`--variants`): the mutant fixtures and correct solutions again, each written in a
variant of its kata's conventions (checker/variant_text.wrap_source: the fixture's code
inside, the variant's signatures and conversions at its boundary; the kata's variants taken
in turn, in a fixed order) and graded in that variant, as `kata set grade` grades a
student's file: through the adapter, the convention search first. The same figures as the
standard kata's, measured in the same run, and their ratio.

    python bench/diagnosis_report.py [--real | --mutants | --firsts | --variants]
                                     [--split train|heldout|all] [--kata sdpa ...] [--json] [--verbose]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from attnkata.checker.diagnose import firsts
from attnkata.checker.mistakes import COST_IDS  # right values, wrong cost

REPO = Path(__file__).resolve().parent.parent
MISTAKES = REPO / "tests" / "fixtures" / "mistakes"
ALT = REPO / "tests" / "fixtures" / "alt"
REAL = REPO / "tests" / "fixtures" / "real"

# Runner ids and "cannot take this input" ids: never a verdict about the mistake itself.
RUNNER_IDS = {"exception", "timeout", "interpreter-ended", "memory-limit", "signature-mismatch"}
NOT_A_VERDICT = RUNNER_IDS | {"input-not-supported", "no-known-mistake"}


def _diagnose_anyway(kata, path: Path, result=None):  # noqa: ANN001, ANN202
    """The grading result and the diagnosis run on the file even if it passed."""
    from attnkata.checker.diagnose import diagnose_as_passing
    from attnkata.checker.runner import check

    return result or check(kata, path, diagnose=False), diagnose_as_passing(kata, path)


def _essential(diags: list) -> list[str]:
    return [d.id for d in diags if d.severity == "essential"]


def _first_verdict(ids: list[str]) -> str | None:
    return next((i for i in ids if i not in NOT_A_VERDICT), None)


def _diag_seconds(result) -> float:  # noqa: ANN001
    t = result.timings
    return t.get("total", 0) - t.get("tests", 0) - t.get("load", 0)


# ---------------------------------------------------------------------------- mutants


class _InVariant:
    """Each file of a kata written in the next of its variants (a fixed order), in a
    temporary folder: what `--variants` grades."""

    def __init__(self, kata, folder: Path) -> None:  # noqa: ANN001
        from attnkata.checker import variants

        self.kata, self.folder = kata, folder
        self.order = variants.ordering(kata.variants, "bench", kata.id) or [{}]
        self.n = 0

    def __call__(self, path: Path) -> tuple[Any, Path]:
        from attnkata.checker import variants
        from attnkata.checker.variant_text import wrap_source

        mistake = path.stem.split("--")[0]
        for _ in range(len(self.order)):  # the next variant in which the mistake can be written
            variant = self.order[self.n % len(self.order)]
            self.n += 1
            if variants.expressible(self.kata.variants, variant, mistake):
                break
        kv = self.kata.with_variant(variant)
        out = self.folder / f"{kv.variant_key.replace(',', '_').replace('=', '-')}" / path.name
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(wrap_source(kv, path.read_text(encoding="utf-8")), encoding="utf-8")
        return kv, out


def report_mutants(kata, verbose: bool, in_variant: Any = None) -> dict:  # noqa: ANN001
    """`in_variant`: a function (path -> (variant kata, file in that variant)) for --variants."""
    from attnkata.checker.runner import check

    rows = []
    standard = kata
    folder = MISTAKES / kata.id
    for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        want = path.stem.split("--")[0]
        kata, graded = in_variant(path) if in_variant else (standard, path)
        result = check(kata, graded)
        ids = _essential(result.diagnostics)
        top = result.diagnostics[0].id if result.diagnostics else None
        first = _first_verdict(ids)
        outcome = "correct" if top == want else "wrong" if first not in (None, want) else "no-match"
        extra = sorted({i for i in ids if i != want and i not in NOT_A_VERDICT})
        rows.append(
            {
                "fixture": path.name,
                "expected": want,
                "top": top,
                "first": first,
                "outcome": outcome,
                "extra": extra,
                "graded": result.status,
                "diagnosis_s": round(_diag_seconds(result), 3),
            }
        )
        if verbose:
            print(f"  {kata.id:16s} {path.name:48s} {outcome:8s} top={top}", file=sys.stderr)
    kata = standard
    correct_files = [REPO / "reference" / f"{kata.module_name}.py"]
    correct_files += sorted((ALT / kata.id).glob("*.py")) if (ALT / kata.id).is_dir() else []
    false_positives, false_rejects = [], []
    for path in correct_files:
        if not path.is_file():
            continue
        result, diags = _diagnose_anyway(*(in_variant(path) if in_variant else (kata, path)))
        wrong = _essential(diags)
        name = str(path.relative_to(REPO))
        failing = {t.tier for t in result.failed_tests if t.status != "skip"}
        # An alternative with the right values and the wrong cost (alt/sliding-window/
        # full_mask.py) is meant to fail the efficiency tier, diagnosed as a cost id only.
        right_values_wrong_cost = (
            failing == {"efficient"} and "/alt/" in name and set(wrong) <= COST_IDS
        )
        if right_values_wrong_cost:
            continue
        if not result.passed:
            false_rejects.append({"file": name, "failing_tiers": sorted(failing)})
        elif wrong:
            false_positives.append({"file": name, "diagnosed": wrong})
    listed = list(kata.mistakes)
    covered = sorted({r["expected"] for r in rows} & set(listed))
    return {
        "kata": kata.id,
        "mistakes_listed": len(listed),
        "mistakes_with_fixture": len(covered),
        "uncovered": sorted(set(listed) - set(covered)),
        "fixtures": len(rows),
        "top1_correct": sum(r["outcome"] == "correct" for r in rows),
        "named": sum(r["first"] is not None for r in rows),
        "wrong_verdicts": sum(r["outcome"] == "wrong" for r in rows),
        "no_match": sum(r["outcome"] == "no-match" for r in rows),
        "wrong_ids": [{"file": r["fixture"], "ids": r["extra"]} for r in rows if r["extra"]],
        "false_accepts": [r["fixture"] for r in rows if r["graded"] == "pass"],
        "correct_solutions": len([p for p in correct_files if p.is_file()]),
        "false_positives": false_positives,
        "false_rejects": false_rejects,
        "mean_diagnosis_s": round(statistics.mean([r["diagnosis_s"] for r in rows]), 3)
        if rows
        else None,
        "rows": rows,
    }


# ---------------------------------------------------------------------------- real-style corpus


def load_labels(kata_id: str) -> list[dict[str, Any]]:
    labels = REAL / kata_id / "labels.toml"
    if not labels.is_file():
        return []
    with labels.open("rb") as fh:
        return tomllib.load(fh)["file"]


def report_real(kata, verbose: bool) -> dict:  # noqa: ANN001
    from attnkata.checker.runner import check

    rows = []
    for label in load_labels(kata.id):
        path = REAL / kata.id / label["name"]
        must, must_not = list(label["must"]), set(label["must_not"])
        if label["verdict"] == "pass":
            result, diags = _diagnose_anyway(kata, path)
        else:
            result = check(kata, path)
            diags = result.diagnostics
        ids = _essential(diags)
        named = {d.id for d in diags}
        first = _first_verdict(ids)
        expected_first = [label["top"]] if "top" in label else must
        row = {
            "file": f"{kata.id}/{label['name']}",
            "style": label["style"],
            "verdict": label["verdict"],
            "graded": result.status,
            "expected": expected_first,
            "must": must,
            "got": ids,
            "first": first,
            "note": label["note"],
        }
        if label["verdict"] == "pass":
            row["problems"] = ([] if result.passed else ["grader fails it"]) + (
                [f"essential {ids}"] if ids else []
            )
        else:
            problems = []
            if result.passed:
                problems.append("grader passes it")
            if expected_first and (
                not ids or (ids[0] if "top" in label else first) not in expected_first
            ):
                problems.append("first")
            if any(m not in ids for m in must):
                problems.append("missing must")
            if named & must_not:
                problems.append(f"must_not {sorted(named & must_not)}")
            extra = sorted({i for i in ids if i not in must and i not in NOT_A_VERDICT})
            if extra:
                problems.append(f"extra {extra}")
            row["extra"] = extra
            row["problems"] = problems
        rows.append(row)
        if verbose:
            print(
                f"  {row['file']:55s} {result.status:5s} got={ids} {row['problems']}",
                file=sys.stderr,
            )
    wrong = [r for r in rows if r["verdict"] == "fail"]
    catalogued = [r for r in wrong if r["must"]]
    right_first = [r for r in catalogued if "first" not in r["problems"]]
    named = [r for r in catalogued if r["first"] is not None]
    return {
        "kata": kata.id,
        "files": len(rows),
        "correct_files": len(rows) - len(wrong),
        "wrong_files": len(wrong),
        "catalogued": len(catalogued),
        "named": len(named),
        "top1_correct": len(right_first),
        "named_correct": len([r for r in named if "first" not in r["problems"]]),
        "wrong_ids": [{"file": r["file"], "ids": r["extra"]} for r in wrong if r["extra"]],
        "false_rejects": [
            r["file"] for r in rows if r["verdict"] == "pass" and r["graded"] != "pass"
        ],
        "false_accepts": [r["file"] for r in wrong if r["graded"] == "pass"],
        "false_positives": [
            {"file": r["file"], "diagnosed": r["got"]}
            for r in rows
            if r["verdict"] == "pass" and r["got"]
        ],
        "misnamed": [r for r in wrong if r["problems"]],
        "rows": rows,
    }


# ---------------------------------------------------------------------------- first attempts


def grade_first(kata, path: Path, label: dict[str, Any]) -> dict[str, Any]:  # noqa: ANN001
    from attnkata.checker.runner import check

    if label["verdict"] == "pass":
        result, diags = _diagnose_anyway(kata, path)
    else:
        result = check(kata, path)
        diags = result.diagnostics
    return firsts.judge(label, result.passed, _essential(diags), [d.id for d in diags])


def report_firsts(kata, split: str, verbose: bool) -> dict:  # noqa: ANN001
    rows = []
    for label in firsts.load(kata.id, split):
        path = firsts.FIRSTS / kata.id / label["name"]
        row = grade_first(kata, path, label)
        row["file"] = f"{kata.id}/{label['name']}"
        rows.append(row)
        if verbose:
            print(f"  {row['file']:55s} got={row['got']} must={row['must']}", file=sys.stderr)
    return {"kata": kata.id, "rows": rows, **firsts.figures(rows)}


def print_firsts(reports: list[dict], split: str, seconds: float) -> dict:
    head = (
        f"{'kata':24s} {'files':>5s} {'wrong':>5s} {'top-1':>7s} {'covered':>7s} {'wrong ids':>9s} "
        f"{'f.rej':>5s} {'f.ess':>5s} {'f.acc':>5s}"
    )
    print(f"== first attempts (tests/fixtures/firsts), split {split} ==")
    print(head)
    print("-" * len(head))
    for r in reports:
        print(
            f"{r['kata']:24s} {r['files']:>5d} {r['wrong_files']:>5d} {r['top1']:>3d}/{r['catalogued']:<3d} "
            f"{r['covered']:>3d}/{r['catalogued']:<3d} {len(r['wrong_ids']):>9d} {len(r['false_rejects']):>5d} "
            f"{len(r['false_essential']):>5d} {len(r['false_accepts']):>5d}"
        )
    print("-" * len(head))
    overall = firsts.figures([row for r in reports for row in r["rows"]])
    n = overall["catalogued"]
    print(
        f"top-1 {_pct(overall['top1'], n)}; coverage {_pct(overall['covered'], n)}; "
        f"{len(overall['wrong_ids'])} wrong files with wrong essential ids; "
        f"{len(overall['false_rejects'])} false rejects and {len(overall['false_essential'])} false essential "
        f"diagnoses on {overall['files'] - overall['wrong_files']} correct files; "
        f"{len(overall['false_accepts'])} false accepts on {overall['wrong_files']} wrong files; {seconds:.1f} s"
    )
    for r in reports:
        for row in r["rows"]:
            if row["verdict"] == "pass":
                if row["false_reject"] or row["false_essential"]:
                    print(
                        f"  CORRECT FILE {row['file']}: passed={row['passed']} essential={row['got']}"
                    )
            elif (
                row["wrong"]
                or row["false_accept"]
                or (row["catalogued"] and not (row["top1"] and row["covered"]))
            ):
                print(
                    f"  {row['file']}: got {row['got']}, must {row['must']}"
                    + (f" WRONG {row['wrong']}" if row["wrong"] else "")
                    + (" FALSE ACCEPT" if row["false_accept"] else "")
                )
    overall["seconds"] = round(seconds, 1)
    return overall


# ---------------------------------------------------------------------------- printing


def _pct(num: int, den: int) -> str:
    return f"{num / den:.1%} ({num}/{den})" if den else "-"


def print_mutants(reports: list[dict], seconds: float) -> dict:
    head = (
        f"{'kata':16s} {'covered':>9s} {'fixtures':>8s} {'top-1':>7s} {'wrong':>5s} {'no-match':>8s} "
        f"{'correct ok':>10s} {'diag s':>7s}"
    )
    print("== mutant fixtures (tests/fixtures/mistakes + alt) ==")
    print(head)
    print("-" * len(head))
    for r in reports:
        acc = f"{r['top1_correct'] / r['fixtures']:.0%}" if r["fixtures"] else "-"
        bad = len(r["false_positives"]) + len(r["false_rejects"])
        ok = f"{r['correct_solutions'] - bad}/{r['correct_solutions']}"
        mean = f"{r['mean_diagnosis_s']:.2f}" if r["mean_diagnosis_s"] is not None else "-"
        print(
            f"{r['kata']:16s} {r['mistakes_with_fixture']:>4d}/{r['mistakes_listed']:<4d} {r['fixtures']:>8d} "
            f"{acc:>7s} {r['wrong_verdicts']:>5d} {r['no_match']:>8d} {ok:>10s} {mean:>7s}"
        )
    print("-" * len(head))
    total = sum(r["fixtures"] for r in reports)
    correct = sum(r["top1_correct"] for r in reports)
    named = sum(r["named"] for r in reports)
    named_correct = sum(r["top1_correct"] for r in reports)
    overall = {
        "fixtures": total,
        "top1_precision": round(named_correct / named, 3) if named else None,
        "coverage": round(correct / total, 3) if total else None,
        "wrong_ids": sum(len(r["wrong_ids"]) for r in reports),
        "false_rejects": sum(len(r["false_rejects"]) for r in reports),
        "false_accepts": sum(len(r["false_accepts"]) for r in reports),
        "false_positives": sum(len(r["false_positives"]) for r in reports),
        "correct_solutions": sum(r["correct_solutions"] for r in reports),
        "mistakes_listed": sum(r["mistakes_listed"] for r in reports),
        "mistakes_with_fixture": sum(r["mistakes_with_fixture"] for r in reports),
        "seconds": round(seconds, 1),
    }
    print(
        f"top-1 precision {_pct(named_correct, named)}; coverage {_pct(correct, total)}; "
        f"{overall['wrong_ids']} fixtures with wrong essential ids; "
        f"{overall['false_rejects']} false rejects and {overall['false_positives']} false essential diagnoses "
        f"on {overall['correct_solutions']} correct solutions; {overall['false_accepts']} false accepts; "
        f"{overall['mistakes_with_fixture']}/{overall['mistakes_listed']} listed mistakes have a fixture; "
        f"{overall['seconds']} s"
    )
    for r in reports:
        if r["uncovered"]:
            print(f"  {r['kata']}: no fixture for {', '.join(r['uncovered'])}")
        for fp in r["false_positives"]:
            print(f"  {r['kata']}: FALSE POSITIVE {fp['file']}: {fp['diagnosed']}")
        for fr in r["false_rejects"]:
            print(
                f"  {r['kata']}: FALSE REJECT {fr['file']} (fails {', '.join(fr['failing_tiers'])})"
            )
        for fa in r["false_accepts"]:
            print(f"  {r['kata']}: FALSE ACCEPT {fa}")
        for row in r["rows"]:
            if row["outcome"] != "correct":
                print(
                    f"  {r['kata']}: {row['fixture']}: expected {row['expected']}, got {row['top']}"
                )
            elif row["extra"]:
                print(f"  {r['kata']}: {row['fixture']}: also {row['extra']}")
    return overall


def print_real(reports: list[dict], seconds: float) -> dict:
    head = (
        f"{'kata':16s} {'files':>5s} {'correct':>7s} {'wrong':>5s} {'top-1':>7s} {'wrong ids':>9s} "
        f"{'f.rej':>5s} {'f.acc':>5s} {'f.pos':>5s}"
    )
    print("== real-style corpus (tests/fixtures/real) ==")
    print(head)
    print("-" * len(head))
    for r in reports:
        acc = f"{r['top1_correct']}/{r['catalogued']}" if r["catalogued"] else "-"
        print(
            f"{r['kata']:16s} {r['files']:>5d} {r['correct_files']:>7d} {r['wrong_files']:>5d} {acc:>7s} "
            f"{len(r['wrong_ids']):>9d} {len(r['false_rejects']):>5d} {len(r['false_accepts']):>5d} "
            f"{len(r['false_positives']):>5d}"
        )
    print("-" * len(head))
    catalogued = sum(r["catalogued"] for r in reports)
    correct = sum(r["top1_correct"] for r in reports)
    named = sum(r["named"] for r in reports)
    named_correct = sum(r["named_correct"] for r in reports)
    overall = {
        "files": sum(r["files"] for r in reports),
        "correct_files": sum(r["correct_files"] for r in reports),
        "wrong_files": sum(r["wrong_files"] for r in reports),
        "top1_precision": round(named_correct / named, 3) if named else None,
        "coverage": round(correct / catalogued, 3) if catalogued else None,
        "wrong_ids": sum(len(r["wrong_ids"]) for r in reports),
        "false_rejects": sum(len(r["false_rejects"]) for r in reports),
        "false_accepts": sum(len(r["false_accepts"]) for r in reports),
        "false_positives": sum(len(r["false_positives"]) for r in reports),
        "misnamed": sum(len(r["misnamed"]) for r in reports),
        "seconds": round(seconds, 1),
    }
    print(
        f"top-1 precision {_pct(named_correct, named)}; coverage {_pct(correct, catalogued)}; "
        f"{overall['wrong_ids']} wrong files with wrong essential ids; {overall['false_rejects']} false rejects "
        f"and {overall['false_positives']} false essential diagnoses on {overall['correct_files']} correct files; "
        f"{overall['false_accepts']} false accepts on {overall['wrong_files']} wrong files; {overall['seconds']} s"
    )
    for r in reports:
        for f in r["false_rejects"]:
            print(f"  FALSE REJECT {f}")
        for f in r["false_accepts"]:
            print(f"  FALSE ACCEPT {f}")
        for fp in r["false_positives"]:
            print(f"  FALSE POSITIVE {fp['file']}: {fp['diagnosed']}")
        for row in r["misnamed"]:
            want = (
                f"first {' or '.join(row['expected'])}" if row["expected"] else "no catalogued id"
            )
            if len(row["must"]) > 1:
                want += f", all of {row['must']}"
            print(
                f"  MISNAMED {row['file']}: got {row['got'] or '[]'}, expected {want} "
                f"({'; '.join(row['problems'])})"
            )
    return overall


def report_variants(katas: list, verbose: bool) -> dict:  # noqa: ANN001
    """The mutant fixtures graded in the standard kata, then in its variants; both tables and
    the variants' figures as a ratio of the standard's."""
    import tempfile

    t0 = time.perf_counter()
    standard = print_mutants([report_mutants(k, verbose) for k in katas], time.perf_counter() - t0)
    print()
    with tempfile.TemporaryDirectory(prefix="attnkata-variants-") as tmp:
        t0 = time.perf_counter()
        reports = [report_mutants(k, verbose, _InVariant(k, Path(tmp) / k.id)) for k in katas]
        print("== the same fixtures, each in a variant of its kata ==")
        varied = print_mutants(reports, time.perf_counter() - t0)
    print()
    ratios = {
        key: round(varied[key] / standard[key], 3)
        for key in ("top1_precision", "coverage")
        if standard.get(key) and varied.get(key) is not None
    }
    print(
        f"variants vs standard: top-1 precision {varied['top1_precision']} vs "
        f"{standard['top1_precision']} (x{ratios.get('top1_precision')}), coverage "
        f"{varied['coverage']} vs {standard['coverage']} (x{ratios.get('coverage')}); "
        f"wrong ids {varied['wrong_ids']} vs {standard['wrong_ids']}; false essential "
        f"diagnoses {varied['false_positives']} vs {standard['false_positives']}; false rejects "
        f"{varied['false_rejects']} vs {standard['false_rejects']}"
    )
    return {"standard": standard, "variants": varied, "ratio": ratios, "katas": reports}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--real", action="store_true", help="only the real-style corpus")
    which.add_argument("--mutants", action="store_true", help="only the mutant fixtures")
    which.add_argument("--firsts", action="store_true", help="only the first attempts")
    which.add_argument(
        "--variants",
        action="store_true",
        help="the mutant fixtures in the standard kata and in its variants, side by side",
    )
    parser.add_argument(
        "--split",
        choices=("train", "heldout", "all"),
        default="all",
        help="which first attempts (default all)",
    )
    parser.add_argument("--kata", nargs="*", help="only these katas")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--verbose", action="store_true", help="one line per fixture on stderr")
    args = parser.parse_args()

    from attnkata.checker.catalog import all_katas

    katas = [k for k in all_katas().values() if not args.kata or k.id in args.kata]
    out: dict[str, Any] = {}
    # With --json the tables go to stderr and only the JSON to stdout.
    table = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
    if args.variants:
        with table:
            out["variants"] = report_variants(katas, args.verbose)
        if args.json:
            print(json.dumps(out, indent=2, default=str))
        return
    if not (args.real or args.firsts):
        t0 = time.perf_counter()
        reports = [report_mutants(k, args.verbose) for k in katas]
        with table:
            out["mutants"] = {
                "overall": print_mutants(reports, time.perf_counter() - t0),
                "katas": reports,
            }
            print()
    if not (args.mutants or args.firsts):
        t0 = time.perf_counter()
        reports = [report_real(k, args.verbose) for k in katas]
        with table:
            out["real"] = {
                "overall": print_real(reports, time.perf_counter() - t0),
                "katas": reports,
            }
            print()
    if not (args.mutants or args.real):
        t0 = time.perf_counter()
        reports = [
            r for r in (report_firsts(k, args.split, args.verbose) for k in katas) if r["files"]
        ]
        with table:
            out["firsts"] = {
                "split": args.split,
                "overall": print_firsts(reports, args.split, time.perf_counter() - t0),
                "katas": reports,
            }
    if args.json:
        print(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
