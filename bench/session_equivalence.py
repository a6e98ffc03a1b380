"""A kept pytest session (checker/driver.py: `kata watch`, batch and mock workers) must grade
exactly as a fresh `pytest.main` does. Every mistake and real-style fixture is graded both ways
in one process, one after the other, and the results compared: status, every test's id,
status and message, every diagnosis' id, severity, title and lines.

    python bench/session_equivalence.py [KATA ...]      # ~7 minutes for all on 2 cores
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"


def graded(result) -> str:  # noqa: ANN001 - a checker Result
    return json.dumps(
        {
            "status": result.status,
            "tests": [(t.id, t.status, t.message) for t in result.tests],
            "diagnoses": [
                (d.id, d.severity, d.title, [s.line for s in d.source]) for d in result.diagnostics
            ],
        },
        sort_keys=True,
        default=str,
    )


def main() -> None:
    os.environ["KATA_HOME"] = tempfile.mkdtemp(prefix="attnkata-equivalence-")
    os.environ["ATTNKATA_INPUT_SALT"] = "0"  # both gradings of a file see the same inputs
    from attnkata.checker import catalog, runner
    from attnkata.checker.sandbox import host

    host.keep_spares()  # as in the processes that keep sessions
    only = set(sys.argv[1:])
    files = [
        (d.name, f)
        for kind in ("mistakes", "real")
        for d in sorted((FIXTURES / kind).iterdir())
        if d.is_dir() and (not only or d.name in only)
        for f in sorted(d.rglob("*.py"))
    ]
    t0, differ = time.perf_counter(), 0
    for kata_id, path in files:
        kata = catalog.get_kata(kata_id)
        kept, fresh = (
            graded(runner.check(kata, path, keep_session=True)),
            graded(runner.check(kata, path)),
        )
        if kept != fresh:
            differ += 1
            print(
                f"DIFFERS {kata_id} {path.relative_to(REPO)}\n  kept:  {kept[:400]}\n  fresh: {fresh[:400]}"
            )
    print(
        f"{len(files)} files graded through a kept session and through pytest.main: {differ} differ "
        f"({time.perf_counter() - t0:.0f} s)"
    )
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
