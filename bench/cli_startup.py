"""P4: start-up of the commands that do not grade, against importing typer and rich.

Each of `kata list`, `show sdpa`, `hint sdpa`, `history`, `stats` and `next` is timed as a fresh
process (output to a pipe), interleaved with the baseline `python -c "import typer, rich.console"`;
medians are compared. Goal: every command <= 1.5x the baseline.

    python bench/cli_startup.py [--runs 9]
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

from installed import kata_script

COMMANDS = [["list"], ["show", "sdpa"], ["hint", "sdpa"], ["history"], ["stats"], ["next"]]
GOAL = 1.5


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.decode()[-400:]}")
    return elapsed


def seed_history(home: str) -> None:
    """A practice history like a few weeks' use: 40 attempts at 8 katas, some hints, diagnoses
    (so that `list`, `stats` and `next` replay real FSRS sessions, not an empty table)."""
    os.environ["KATA_HOME"] = home
    from attnkata.checker.store import History

    katas = ["sdpa", "causal-mask", "mha", "mqa", "gqa", "sliding-window", "mla", "rope"]
    mistakes = [
        "missing-scale",
        "kv-repeat-instead-of-interleave",
        "causal-mask-top-left",
        "scale-by-d-model",
    ]
    t0 = time.time() - 30 * 86400
    with History() as h:
        for i in range(40):
            kata = katas[i % len(katas)]
            ts = t0 + i * 16 * 3600
            passed = i % 3 != 0
            h.record_attempt(
                kata,
                "pass" if passed else "fail",
                10 if passed else 6,
                10,
                1.5,
                f"{kata}.py",
                [] if passed else [mistakes[i % len(mistakes)]],
                ts=ts,
            )
            if i % 5 == 0:
                h.record_event(kata, "hint", {"id": 0}, ts=ts - 60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    kata = kata_script()
    home = tempfile.mkdtemp(prefix="attnkata-bench-")
    env = {**os.environ, "KATA_HOME": home, "KATA_WORKSPACE": home, "COLUMNS": "120"}
    # As installed Python runs: with .pyc files (pip writes them for typer and rich; a checkout
    # writes its own on first run). With PYTHONDONTWRITEBYTECODE set, every run would compile
    # attnkata's sources again and the comparison would be of compilers.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    baseline = [sys.executable, "-c", "import typer, rich.console"]
    cmds = [[kata, *c] for c in COMMANDS]
    seed_history(home)
    for cmd in [
        baseline,
        *cmds,
    ]:  # page cache, .pyc files, the history database, rendered statements
        timed(cmd, env)
    base: list[float] = []
    runs: dict[str, list[float]] = {" ".join(c): [] for c in COMMANDS}
    for _ in range(args.runs):
        for name, cmd in zip(runs, cmds, strict=True):
            base.append(timed(baseline, env))
            runs[name].append(timed(cmd, env))
    b = statistics.median(base)
    print(f"runs: {args.runs} each, interleaved, on {os.cpu_count()} cores; kata = {kata}")
    print(f"baseline  python -c 'import typer, rich.console'   median {b:.3f} s")
    worst = 0.0
    for name, times in runs.items():
        ratio = statistics.median(times) / b
        worst = max(worst, ratio)
        print(
            f"kata {name:12s} median {statistics.median(times):.3f} s   ratio {ratio:.2f}x  "
            f"{'OK' if ratio <= GOAL else 'OVER'}"
        )
    print(f"worst ratio {worst:.2f}x (goal <= {GOAL}x)")
    shutil.rmtree(home, ignore_errors=True)
    sys.exit(0 if worst <= GOAL else 1)


if __name__ == "__main__":
    main()
