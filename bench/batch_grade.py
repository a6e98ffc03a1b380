"""Throughput of `kata set grade` against the naive way of grading a class.

Generates N synthetic `sdpa` submissions (correct ones, several kinds of wrong ones and hostile
ones: an infinite loop, sys.exit at import, a huge allocation, os._exit) and grades them twice
with the same isolation and the same limits:

- attnkata: `kata set grade BUNDLE SUBMISSIONS --jobs J --timeout T` (one process; J workers that
  import torch once; every candidate still in its own forked child with time/memory limits);
- naive: one fresh `python -m pytest katas/sdpa --solution FILE` per submission, as
  nbgrader-style tools do (each pays interpreter + torch + pytest start-up), run J at a time so
  both sides use the same cores; the same per-call and total time limits are passed to it.

and, when Dask's distributed scheduler is installed (`attnkata[cluster]`), a third time per
worker count W in --dask-workers (default 1 and 2): `kata set grade ... --dask local:W`, a
LocalCluster of W worker processes started by the command itself. Its wall time includes
starting the cluster and warming its workers, as the local pool's includes starting the pool:
a first-time instructor's cost, not a best case.

Prints each throughput (submissions per second) and its ratio to the naive way's, measured in
the same run; checks that the naive way agrees with attnkata on which submissions pass, and
that Dask gives every submission the local pool's status.

    python bench/batch_grade.py            # N=40, J=cores, T=2, local pool timed 3 times (median)
    python bench/batch_grade.py --n 100 --jobs 2 --dask-workers 2
    python bench/batch_grade.py --dask-workers none   # no Dask rows
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REFERENCE = (REPO / "reference" / "sdpa.py").read_text()


def _swap(old: str, new: str) -> str:
    if old not in REFERENCE:
        raise SystemExit(f"bench: the sdpa reference changed; update the mutation {old!r}")
    return REFERENCE.replace(old, new)


WRONG = {
    "no-scale": _swap(
        "scale = 1.0 / math.sqrt(d) if scale is None else scale",
        "scale = 1.0 if scale is None else scale",
    ),
    "mask-ignored": _swap('scores = scores.masked_fill(~mask, float("-inf"))', "scores = scores"),
    "minus-1e9": (REPO / "katas" / "sdpa" / "examples" / "wrong.py").read_text(),
    "softmax-dim": _swap(
        "row_max = scores.amax(dim=-1, keepdim=True)", "row_max = scores.amax(dim=-2, keepdim=True)"
    ).replace(
        "denom = weights.sum(dim=-1, keepdim=True)", "denom = weights.sum(dim=-2, keepdim=True)"
    ),
    "in-place": _swap(
        "scores = (q @ k.transpose(-2, -1)) * scale", "scores = q.mul_(scale) @ k.transpose(-2, -1)"
    ),
    "raises": _swap("d = q.shape[-1]", "d = q.shape[-1]\n    raise ValueError('not done yet')"),
    "syntax": REFERENCE.replace(
        "def scaled_dot_product_attention(", "def scaled_dot_product_attention((", 1
    ),
}
HOSTILE = {
    "infinite-loop": "def scaled_dot_product_attention(q, k, v, mask=None, scale=None):\n    while True:\n        pass\n",
    "sys-exit": "import sys\n\n\ndef scaled_dot_product_attention(q, k, v, mask=None, scale=None):\n"
    "    return q\n\n\nsys.exit(1)  # at import\n",
    "huge-alloc": "import torch\n\n\ndef scaled_dot_product_attention(q, k, v, mask=None, scale=None):\n"
    "    big = torch.empty(1 << 40, dtype=torch.uint8)\n    return big\n",
    "os-exit": "import os\n\n\ndef scaled_dot_product_attention(q, k, v, mask=None, scale=None):\n    os._exit(3)\n",
}


def make_submissions(root: Path, n: int) -> dict[str, str]:
    """N student folders: ~55% correct, ~35% wrong, ~10% hostile (at least one of each hostile
    kind when N >= 20). Returns student -> kind."""
    n_hostile = max(len(HOSTILE), n // 10) if n >= 20 else min(len(HOSTILE), n // 4)
    n_wrong = round(n * 0.35)
    kinds = [list(HOSTILE)[i % len(HOSTILE)] for i in range(n_hostile)]
    kinds += [list(WRONG)[i % len(WRONG)] for i in range(n_wrong)]
    kinds += ["correct"] * (n - len(kinds))
    # Spread the kinds out, as a class list would.
    kinds = [kinds[(i * 7) % n] for i in range(n)] if n % 7 else kinds
    out = {}
    for i, kind in enumerate(kinds):
        student = f"s{i:03d}"
        source = REFERENCE if kind == "correct" else WRONG.get(kind) or HOSTILE[kind]
        (root / student).mkdir(parents=True)
        # Every file differs (as real ones do), so nothing is served from a cache.
        (root / student / "sdpa.py").write_text(f"# {student}\n{source}")
        out[student] = kind
    return out


def run_attnkata(
    bundle: Path, subs: Path, out: Path, where: list[str], timeout: float
) -> tuple[float, dict[str, str], str]:
    """One `kata set grade` from scratch; `where`: ["--jobs", J] or ["--dask", ADDRESS]."""
    cmd = [
        sys.executable,
        "-m",
        "attnkata",
        "set",
        "grade",
        str(bundle),
        str(subs),
        *where,
        "--timeout",
        f"{timeout:g}",
        "--quiet",
        "--out",
        str(out),
        "--fresh",
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(
            f"bench: kata set grade failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
        )
    data = json.loads((out / "results.json").read_text())
    status = {s["student"]: s["katas"]["sdpa"]["status"] for s in data["students"]}
    return wall, status, shlex.join(cmd)


def timed_runs(
    repeat: int, run: Callable[[], tuple[float, dict[str, str], str]]
) -> tuple[list[float], dict[str, str], str]:
    """`run` `repeat` times: the wall times, and the last run's statuses and command."""
    walls = []
    for _ in range(max(1, repeat)):
        wall, status, cmd = run()
        walls.append(wall)
    return walls, status, cmd


def runs_line(walls: list[float], n: int, note: str = "") -> str:
    median = statistics.median(walls)
    return (
        f"  runs: {', '.join(f'{w:.1f}' for w in walls)} s; median {median:.1f} s wall, "
        f"{n / median:.2f} submissions/s{note}"
    )


def dask_workers(text: str) -> list[int]:
    if text.strip().lower() in ("", "none", "0"):
        return []
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of worker counts: {text!r}") from None
    if any(c < 1 for c in counts):
        raise argparse.ArgumentTypeError("worker counts must be at least 1")
    return counts


def naive_command(file: Path, timeout: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        str(REPO / "katas" / "sdpa"),
        "--solution",
        str(file),
        "-q",
        "-p",
        "no:cacheprovider",
        "--kata-call-timeout",
        f"{timeout:g}",
        "--kata-total-timeout",
        f"{timeout:g}",
    ]


def run_naive(
    subs: Path, students: list[str], jobs: int, timeout: float
) -> tuple[float, dict[str, str]]:
    def one(student: str) -> tuple[str, str]:
        # A generous wall-clock guard: the limits inside pytest already stop hostile code.
        try:
            proc = subprocess.run(
                naive_command(subs / student / "sdpa.py", timeout),
                capture_output=True,
                text=True,
                timeout=120 + 4 * timeout,
                cwd=REPO,
            )
            return student, "pass" if proc.returncode == 0 else "not pass"
        except subprocess.TimeoutExpired:
            return student, "not pass"

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        status = dict(pool.map(one, students))
    return time.perf_counter() - t0, status


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40, help="synthetic submissions (default 40)")
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="time `kata set grade` this many times and use the median (default 3); the naive "
        "run is long enough to average out other load on the machine",
    )
    ap.add_argument(
        "--jobs", type=int, default=None, help="parallel workers for both sides (default: cores)"
    )
    ap.add_argument(
        "--timeout", type=float, default=2.0, help="candidate seconds per submission (default 2)"
    )
    ap.add_argument(
        "--dask-workers",
        type=dask_workers,
        default=[1, 2],
        metavar="W[,W...]",
        help="also grade on a local Dask cluster of W workers, for each W (default 1,2; none: skip)",
    )
    ap.add_argument(
        "--dask-repeat",
        type=int,
        default=1,
        help="time each Dask run this many times and use the median (default 1: each run also "
        "starts a cluster, and the default run must stay a few minutes on 2 cores)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    jobs = args.jobs or len(os.sched_getaffinity(0))
    tmp = Path(tempfile.mkdtemp(prefix="attnkata-bench-"))
    from attnkata.checker.sets.create import CreateOptions, create_set

    bundle = tmp / "set"
    create_set(CreateOptions(katas=["sdpa"], out=bundle, public_tests=0, lang="en"))
    subs = tmp / "submissions"
    kinds = make_submissions(subs, args.n)
    mix: dict[str, int] = {}
    for kind in kinds.values():
        mix[kind] = mix.get(kind, 0) + 1
    print(
        f"attnkata batch-grading benchmark: N={args.n} sdpa submissions, jobs={jobs}, "
        f"timeout={args.timeout:g}s per submission, {os.cpu_count()} CPUs visible"
    )
    print("mix: " + ", ".join(f"{k} {v}" for k, v in sorted(mix.items(), key=lambda kv: -kv[1])))

    runs, our_status, cmd = timed_runs(
        args.repeat,
        lambda: run_attnkata(bundle, subs, tmp / "out", ["--jobs", str(jobs)], args.timeout),
    )
    ours = statistics.median(runs)
    print(f"\nattnkata: {cmd}")
    print(runs_line(runs, args.n))
    naive, naive_status = run_naive(subs, sorted(kinds), jobs, args.timeout)
    example = shlex.join(naive_command(subs / "s000" / "sdpa.py", args.timeout))
    print(f"naive ({jobs} at a time): {example}")
    print(f"  {naive:.1f} s wall, {args.n / naive:.2f} submissions/s")
    rows = [(f"naive, {jobs} at a time", naive), (f"attnkata local pool, --jobs {jobs}", ours)]
    same: list[str] = []
    if args.dask_workers:
        try:
            import distributed  # noqa: F401
        except ImportError:
            print('\nDask: skipped (distributed is not installed; pip install "attnkata[cluster]")')
        else:
            for w in args.dask_workers:
                where = ["--dask", f"local:{w}"]
                walls, status, cmd = timed_runs(
                    args.dask_repeat,
                    lambda where=where: run_attnkata(
                        bundle, subs, tmp / "out-dask", where, args.timeout
                    ),
                )
                print(f"Dask, {w} local worker(s): {cmd}")
                print(runs_line(walls, args.n, " (starting the cluster included)"))
                rows.append((f"Dask --dask local:{w}", statistics.median(walls)))
                same.append(f"local:{w} {sum(status[s] == our_status[s] for s in kinds)}/{args.n}")
    agree = sum((our_status[s] == "pass") == (naive_status[s] == "pass") for s in kinds)
    print(
        f"\nverdicts agree on {agree}/{args.n} submissions "
        f"(attnkata passes {sum(v == 'pass' for v in our_status.values())}, "
        f"naive passes {sum(v == 'pass' for v in naive_status.values())})"
    )
    if same:
        print(f"Dask gives the local pool's status to: {', '.join(same)} submissions")
    print("\nsubmissions/s, and the ratio to the naive way (same run):")
    for label, wall in rows:
        print(f"  {label:<34}{args.n / wall:7.2f}/s {naive / wall:7.1f}x")
    print(f"ratio: {naive / ours:.1f}x the naive throughput (goal: >= 10x on 2 cores)")
    if not args.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"kept {tmp}")


if __name__ == "__main__":
    main()
