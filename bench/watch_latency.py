"""P2: how soon `kata watch` answers after a save, against a cold `kata check` of the same file.

For a passing gqa file (the reference) and a failing one (a mistake fixture, diagnosed), this
measures in the same run:
  cold   wall time of `kata check gqa FILE --json` (a fresh process each time);
  watch  from the write of a changed file (a new comment line) to the JSON line of its result
         from one long-running `kata watch gqa FILE --json` (checked by `source_sha256`).
Goals: watch <= 0.10x cold for the passing file, <= 0.20x for the failing one.

    python bench/watch_latency.py [--runs 7] [--kata gqa]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from installed import kata_script

REPO = Path(__file__).resolve().parent.parent
FAILING = {"gqa": "tests/fixtures/mistakes/gqa/kv-repeat-instead-of-interleave.py"}
GOALS = {"passing": 0.10, "failing": 0.20}


def cold(kata_bin: str, kata: str, file: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [kata_bin, "check", kata, str(file), "--json"], env=env, capture_output=True
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        sys.exit(f"kata check exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return elapsed


class Watch:
    def __init__(self, kata_bin: str, kata: str, file: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [kata_bin, "watch", kata, str(file), "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)

    def next_result(self, timeout: float = 120.0) -> dict:
        if not self.sel.select(timeout):
            sys.exit("kata watch gave no result in time")
        line = self.proc.stdout.readline()
        if not line:
            sys.exit(f"kata watch ended (exit {self.proc.wait()})")
        return json.loads(line)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def measure(
    kata_bin: str, kata: str, source: Path, runs: int, env: dict[str, str], work: Path
) -> tuple[list[float], list[float], str]:
    file = work / f"{kata.replace('-', '_')}.py"
    text = source.read_text(encoding="utf-8")
    file.write_text(text, encoding="utf-8")
    cold(kata_bin, kata, file, env)  # page cache
    colds = [cold(kata_bin, kata, file, env) for _ in range(runs)]
    watch = Watch(kata_bin, kata, file, env)
    try:
        status = watch.next_result()["status"]
        latencies = []
        for i in range(runs + 1):
            time.sleep(0.3)  # the user types; the previous result is on screen
            new = text + f"\n# save {i}\n"
            want = hashlib.sha256(new.encode()).hexdigest()
            t0 = time.perf_counter()
            file.write_text(new, encoding="utf-8")
            while watch.next_result()["source_sha256"] != want:
                pass
            if i:  # the first re-check also warms the watch process's caches
                latencies.append(time.perf_counter() - t0)
    finally:
        watch.close()
    return colds, latencies, status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--kata", default="gqa", choices=sorted(FAILING))
    args = parser.parse_args()
    kata_bin = kata_script()
    work = Path(tempfile.mkdtemp(prefix="attnkata-watch-bench-"))
    env = {**os.environ, "KATA_HOME": str(work / "home")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed Python runs: with .pyc files
    cases = {
        "passing": REPO / "reference" / f"{args.kata.replace('-', '_')}.py",
        "failing": REPO / FAILING[args.kata],
    }
    print(f"{args.kata}: {args.runs} runs each, on {os.cpu_count()} cores")
    worst = 0.0
    for name, source in cases.items():
        colds, lat, status = measure(kata_bin, args.kata, source, args.runs, env, work)
        c, w = statistics.median(colds), statistics.median(lat)
        ratio = w / c
        worst = max(worst, ratio / GOALS[name])
        print(
            f"{name:8s} ({status:4s})  cold check median {c:.3f} s   watch re-check median {w:.3f} s "
            f"(min {min(lat):.3f}, max {max(lat):.3f})   ratio {ratio:.3f}x  goal <= {GOALS[name]:.2f}x  "
            f"{'OK' if ratio <= GOALS[name] else 'OVER'}"
        )
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if worst <= 1 else 1)


if __name__ == "__main__":
    main()
