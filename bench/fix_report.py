"""`kata fix` on the mutant fixtures and on the real-style corpus, reported separately.

For every wrong file with a catalogued mistake (a mutant fixture, tests/fixtures/mistakes/
<kata>/<mistake-id>[--variant].py: one mistake each; a real-style file, tests/fixtures/real/
<kata>/, labelled `verdict = "fail"` with a catalogued `must`), in fresh processes:

1. a cold `kata check KATA FILE --json` (the baseline, timed);
2. a cold `kata fix KATA COPY --json --write` on a copy of the file (timed): what it shows;
3. where it showed a fix, a cold `kata check` of the written copy: the fixes re-graded from
   scratch. A shown fix *fails* when a test it claims to fix does not pass there, or a test
   that passed in (1) does not.

Figures per corpus:
    verified fix        of the wrong files, the share that get at least one verified fix
    all mistakes fixed  ... the share whose fixes make the file pass
    <= 3 lines          of the shown fixes (one per mistake), the share touching at most 3
                        lines; and of the fixed files, the share whose fixes together do
    unverified shown    shown fixes that fail when re-graded from scratch (must be 0)
    fix / cold check    the wall time of (2) over (1) for the same file: median, p90, and
                        the sums' ratio (measured in the same run, file by file)

Goals (issue 25): a verified fix for >= 85% of the real-style wrong files, >= 90% of those
touching <= 3 lines, 0 unverified fixes shown, `kata fix` <= 2x a cold check.

    python bench/fix_report.py [--mutants | --real] [--kata gqa ...] [--jobs N] [--json] [--verbose]

Each file costs three cold processes (torch's import, the sandbox's start): the whole run takes
tens of minutes on two cores. `--jobs 2` runs two files at once (each file's check and fix run
back to back in one worker, under the same load).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from installed import kata_script  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
MISTAKES = REPO / "tests" / "fixtures" / "mistakes"
REAL = REPO / "tests" / "fixtures" / "real"
GOAL_FIXED, GOAL_SMALL, GOAL_RATIO = 0.85, 0.90, 2.0


@dataclass
class Case:
    corpus: str
    kata: str
    path: Path
    mistakes: list[str]


@dataclass
class Outcome:
    corpus: str
    kata: str
    file: str
    mistakes: list[str]
    check_s: float = 0.0
    fix_s: float = 0.0
    fixes: list[dict[str, Any]] = field(default_factory=list)
    unfixed: list[str] = field(default_factory=list)
    fixed_status: str = ""
    regraded_status: str = ""
    failed_fixes: list[str] = field(default_factory=list)  # shown, but failed the re-grade
    error: str = ""


def cases(corpus: str, katas: set[str] | None) -> list[Case]:
    out: list[Case] = []
    if corpus == "mutants":
        for p in sorted(MISTAKES.glob("*/*.py")):
            if katas is None or p.parent.name in katas:
                out.append(Case(corpus, p.parent.name, p, [p.stem.split("--")[0]]))
    else:
        for labels in sorted(REAL.glob("*/labels.toml")):
            kata = labels.parent.name
            if katas is not None and kata not in katas:
                continue
            for e in tomllib.loads(labels.read_text(encoding="utf-8"))["file"]:
                if e["verdict"] == "fail" and e.get("must"):
                    out.append(Case(corpus, kata, labels.parent / e["name"], list(e["must"])))
    return out


def _run(
    args: list[str], env: dict[str, str], timeout: float = 900
) -> tuple[float, dict | None, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [kata_script(), *args], capture_output=True, text=True, env=env, timeout=timeout
    )
    wall = time.perf_counter() - t0
    try:
        return wall, json.loads(proc.stdout), proc.stderr
    except json.JSONDecodeError:
        return wall, None, proc.stderr[-500:] or proc.stdout[-500:]


def run_case(case: Case) -> Outcome:
    o = Outcome(case.corpus, case.kata, case.path.name, case.mistakes)
    with tempfile.TemporaryDirectory(prefix="attnkata-fix-bench-") as tmp:
        env = {**os.environ, "KATA_HOME": str(Path(tmp) / "home"), "KATA_LANG": "en"}
        o.check_s, before, err = _run(
            ["check", case.kata, str(case.path), "--json", "--no-record"], env
        )
        if before is None:
            o.error = f"check: {err}"
            return o
        copy = Path(tmp) / "work" / case.path.name
        copy.parent.mkdir()
        shutil.copyfile(case.path, copy)
        o.fix_s, report, err = _run(["fix", case.kata, str(copy), "--json", "--write"], env)
        if report is None:
            o.error = f"fix: {err}"
            return o
        o.fixes, o.unfixed, o.fixed_status = (
            report["fixes"],
            report["unfixed"],
            report["fixed_status"],
        )
        if not o.fixes:
            return o
        _, after, err = _run(["check", case.kata, str(copy), "--json", "--no-record"], env)
        if after is None:
            o.error = f"re-grade: {err}"
            o.failed_fixes = [f["mistake"] for f in o.fixes]
            return o
        o.regraded_status = after["status"]
        now = {t["id"]: t["status"] for t in after["tests"]}
        lost = [
            t["id"] for t in before["tests"] if t["status"] == "pass" and now.get(t["id"]) != "pass"
        ]
        for f in o.fixes:
            if lost or any(now.get(t) != "pass" for t in f["fixed_tests"]):
                o.failed_fixes.append(f["mistake"])
    return o


def _share(n: int, d: int) -> str:
    return f"{n}/{d} = {100 * n / d:.1f}%" if d else "-"


def summary(outcomes: list[Outcome]) -> dict[str, Any]:
    n = len(outcomes)
    fixed = [o for o in outcomes if o.fixes and not o.failed_fixes]
    complete = [o for o in outcomes if o.fixes and o.regraded_status == "pass"]
    shown = [f for o in outcomes for f in o.fixes]
    small = [f for f in shown if f["touched"] <= 3]
    small_files = [o for o in fixed if sum(f["touched"] for f in o.fixes) <= 3]
    ratios = [o.fix_s / o.check_s for o in outcomes if o.check_s and o.fix_s and not o.error]
    check_total = sum(o.check_s for o in outcomes if o.fix_s and not o.error)
    fix_total = sum(o.fix_s for o in outcomes if o.fix_s and not o.error)
    return {
        "files": n,
        "verified_fix": len(fixed),
        "all_mistakes_fixed": len(complete),
        "fixes_shown": len(shown),
        "fixes_within_3_lines": len(small),
        "fixed_files_within_3_lines": len(small_files),
        "unverified_shown": sum(len(o.failed_fixes) for o in outcomes),
        "errors": sum(bool(o.error) for o in outcomes),
        "ratio_median": statistics.median(ratios) if ratios else None,
        "ratio_p90": statistics.quantiles(ratios, n=10)[-1] if len(ratios) >= 10 else None,
        "ratio_of_sums": fix_total / check_total if check_total else None,
        "check_s_median": statistics.median([o.check_s for o in outcomes]) if outcomes else None,
        "fix_s_median": statistics.median([o.fix_s for o in outcomes if o.fix_s])
        if outcomes
        else None,
    }


def print_summary(name: str, s: dict[str, Any], goals: bool) -> None:
    print(f"\n== {name}: {s['files']} wrong files with a catalogued mistake")
    print(
        f"  verified fix          {_share(s['verified_fix'], s['files'])}"
        + (f"   (goal >= {GOAL_FIXED:.0%})" if goals else "")
    )
    print(
        f"  all mistakes fixed    {_share(s['all_mistakes_fixed'], s['files'])}  (the fixed file passes)"
    )
    print(
        f"  <= 3 lines            {_share(s['fixes_within_3_lines'], s['fixes_shown'])} of the shown fixes"
        + (f"   (goal >= {GOAL_SMALL:.0%})" if goals else "")
    )
    print(
        f"                        {_share(s['fixed_files_within_3_lines'], s['verified_fix'])} of the fixed files, all their fixes together"
    )
    print(f"  unverified shown      {s['unverified_shown']}   (goal 0)")
    if s["ratio_median"] is not None:
        p90 = f"{s['ratio_p90']:.2f}" if s["ratio_p90"] is not None else "-"
        print(
            f"  fix / cold check      median {s['ratio_median']:.2f}, p90 {p90}, sums {s['ratio_of_sums']:.2f}"
            f"   (median cold check {s['check_s_median']:.1f} s, kata fix {s['fix_s_median']:.1f} s; goal <= {GOAL_RATIO:g}x)"
        )
    if s["errors"]:
        print(f"  errors                {s['errors']} file(s) (see --verbose)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--mutants", action="store_true", help="only the mutant fixtures")
    which.add_argument("--real", action="store_true", help="only the real-style corpus")
    ap.add_argument("--kata", nargs="*", help="only these katas")
    ap.add_argument("--jobs", type=int, default=1, help="files graded at once (default 1)")
    ap.add_argument("--json", action="store_true", help="print the figures and every file as JSON")
    ap.add_argument("--verbose", action="store_true", help="one line per file")
    args = ap.parse_args()
    corpora = ["mutants"] if args.mutants else ["real"] if args.real else ["mutants", "real"]
    katas = set(args.kata) if args.kata else None
    report: dict[str, Any] = {}
    for corpus in corpora:
        todo = cases(corpus, katas)
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            outcomes = list(pool.map(run_case, todo))
        s = summary(outcomes)
        s["seconds"] = round(time.perf_counter() - t0, 1)
        report[corpus] = {"summary": s, "files": [asdict(o) for o in outcomes]}
        if args.verbose and not args.json:
            for o in outcomes:
                mark = (
                    "FIXED"
                    if o.fixes and not o.failed_fixes
                    else "BAD  "
                    if o.failed_fixes
                    else "--   "
                )
                lines = [f["touched"] for f in o.fixes]
                ratio = o.fix_s / o.check_s if o.check_s else 0
                print(
                    f"{mark} {o.kata}/{o.file} fixed={[f['mistake'] for f in o.fixes]} lines={lines} "
                    f"unfixed={o.unfixed} after={o.regraded_status or '-'} "
                    f"check={o.check_s:.1f}s fix={o.fix_s:.1f}s ({ratio:.2f}x) {o.error[:120]}"
                )
    if args.json:
        print(json.dumps(report, indent=1))
        return
    names = {
        "mutants": "mutant fixtures (tests/fixtures/mistakes)",
        "real": "real-style corpus (tests/fixtures/real)",
    }
    for corpus in corpora:
        print_summary(names[corpus], report[corpus]["summary"], goals=corpus == "real")
        print(f"  ({report[corpus]['summary']['seconds']:.0f} s for this corpus)")


if __name__ == "__main__":
    main()
