"""Wall time of `kata check sdpa FILE` against `python -c "import torch, pytest"`.

The baseline is the floor any torch-based grader pays (importing torch and pytest); the
ratio says how much attnkata's grading adds on top. Both are measured in this run,
interleaved, and the medians are compared. Target: ratio <= 1.3.

    python bench/check_speed.py [--runs 7] [--kata sdpa] [--file reference/sdpa.py]

A failing file (exit 1) is timed with its diagnosis, e.g.
    python bench/check_speed.py --kata gqa --file tests/fixtures/mistakes/gqa/kv-repeat-instead-of-interleave.py
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from installed import kata_script

REPO = Path(__file__).resolve().parent.parent


def timed(cmd: list[str], env: dict[str, str], expect: int) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t0
    if proc.returncode != expect:
        sys.exit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--kata", default="sdpa")
    parser.add_argument(
        "--file",
        default=None,
        help="solution to grade (default: the kata's reference, which passes)",
    )
    args = parser.parse_args()
    args.file = args.file or str(REPO / "reference" / f"{args.kata.replace('-', '_')}.py")
    kata = kata_script()
    home = tempfile.mkdtemp(prefix="attnkata-bench-")
    env = {**os.environ, "KATA_HOME": home}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed Python runs: with .pyc files
    baseline_cmd = [sys.executable, "-c", "import torch, pytest"]
    check_cmd = [kata, "check", args.kata, args.file]
    timed(baseline_cmd, env, 0)  # warm the page cache for both
    expect = subprocess.run(
        check_cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ).returncode
    if expect not in (0, 1):
        sys.exit(f"{' '.join(check_cmd)} exited {expect}")
    base, check = [], []
    for _ in range(args.runs):
        base.append(timed(baseline_cmd, env, 0))
        check.append(timed(check_cmd, env, expect))
    b, c = statistics.median(base), statistics.median(check)
    print(f"runs: {args.runs} each, interleaved, on {os.cpu_count()} cores")
    print(f"baseline  python -c 'import torch, pytest'   median {b:.3f} s  (min {min(base):.3f})")
    verdict = "passes" if expect == 0 else "fails, with diagnosis"
    print(
        f"attnkata  kata check {args.kata} {Path(args.file).name} ({verdict})  median {c:.3f} s  (min {min(check):.3f})"
    )
    print(f"ratio     {c / b:.2f}  (target <= 1.30)")
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
