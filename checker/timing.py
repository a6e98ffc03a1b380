"""Default time limits from each kata's reference (`katas/timings.toml`).

A per-call limit has to fit the slowest call a correct solution makes (the `efficient` tier's
large inputs) and still stop an infinite loop quickly: it is the reference's slowest call times
a margin for slower but correct styles (Python loops over blocks), with a floor for machines
busier than the one that measured it. Regenerate after changing a grader or a reference:

    python -m attnkata.checker.timing --write
"""

from __future__ import annotations

import argparse
import math
import tomllib
from functools import cache
from pathlib import Path

TIMINGS_PATH = Path(__file__).resolve().parent.parent / "katas" / "timings.toml"
REFERENCE_DIR = Path(__file__).resolve().parent.parent / "reference"
MARGIN = 40.0  # a correct solution may be this much slower than the reference's slowest call
FLOOR_S = 3.0  # per call
CEILING_S = 10.0  # the old fixed default: a reference measured slow never loosens it further
CALLS_IN_TOTAL = 6  # the total limit is this many slowest calls


@cache
def reference_seconds() -> dict[str, float]:
    """The reference's slowest graded call, per kata id (empty when the file is missing)."""
    try:
        data = tomllib.loads(TIMINGS_PATH.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    return {
        k: float(v)
        for k, v in data.get("reference_call_seconds", {}).items()
        if isinstance(v, int | float) and math.isfinite(v) and v >= 0
    }


def call_limit(reference_call: float) -> float:
    """Seconds per call: MARGIN x the reference's slowest call, within [FLOOR_S, CEILING_S]."""
    return round(min(CEILING_S, max(FLOOR_S, MARGIN * reference_call)), 1)


def default_call_timeout(kata_id: str) -> float:
    ref = reference_seconds().get(kata_id)
    return CEILING_S if ref is None else call_limit(ref)


def measure(kata_id: str, runs: int = 3) -> float:
    """The reference's slowest call (the child's own clock) in its grader: the smallest of
    `runs` gradings, so that one busy moment of the machine does not set the limit."""
    return min(_slowest_call(kata_id) for _ in range(runs))


def _slowest_call(kata_id: str) -> float:
    from attnkata.checker import catalog, proxy
    from attnkata.checker.runner import check

    kata = catalog.get_kata(kata_id)  # (runner.check warms the sandbox as `kata check` does)
    slowest = 0.0
    # Every reply passes here, whether the grader called (`_request`) or submitted (`Pending`).
    original = proxy.Candidate._finish_request

    def recording(self: proxy.Candidate, doing: object, target: str | None) -> dict:
        nonlocal slowest
        reply = original(self, doing, target)  # type: ignore[arg-type]
        slowest = max(slowest, float(reply.get("seconds") or 0.0))
        return reply

    proxy.Candidate._finish_request = recording  # type: ignore[method-assign]
    try:
        result = check(kata, REFERENCE_DIR / f"{kata.module_name}.py", diagnose=False)
    finally:
        proxy.Candidate._finish_request = original  # type: ignore[method-assign]
    if not result.passed:
        raise SystemExit(f"{kata_id}: the reference does not pass its grader ({result.status})")
    return slowest


def main(argv: list[str] | None = None) -> None:
    from attnkata.checker import catalog

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"write {TIMINGS_PATH.name}")
    parser.add_argument("katas", nargs="*", help="only these katas (default: all)")
    args = parser.parse_args(argv)
    ids = args.katas or list(catalog.all_katas())
    measured = dict(reference_seconds()) | {k: measure(k) for k in ids}
    for k in ids:
        print(
            f"{k:20s} slowest reference call {measured[k] * 1000:8.1f} ms -> limit {call_limit(measured[k]):.1f} s per call"
        )
    if args.write:
        lines = [
            "# The reference's slowest graded call per kata, in seconds (2-core CPU machine).",
            "# Written by `python -m attnkata.checker.timing --write`; see checker/timing.py.",
            "[reference_call_seconds]",
        ]
        lines += [f'"{k}" = {v:.4f}' for k, v in sorted(measured.items())]
        TIMINGS_PATH.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
