"""What one grading worker does with one file, shared by the local pool (`grade.py`) and the
Dask workers (`cluster.py`): both import it from here, so neither imports the other."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from attnkata.checker.errors import KataDefinitionError, KataError
from attnkata.checker.sets import policy_cost
from attnkata.checker.sets.manifest import load_set_kata


def preload(kata_ids: list[str]) -> None:
    """Import (never run) everything grading needs, before forking: workers start warm.
    No torch op may run in this process: a child forked after one hangs on OpenMP."""
    import importlib

    import pytest  # noqa: F401

    import attnkata.checker.diagnose  # noqa: F401
    import attnkata.checker.plugin  # noqa: F401
    import attnkata.checker.probes  # noqa: F401
    import attnkata.checker.runner  # noqa: F401
    import attnkata.checker.sandbox.child  # noqa: F401

    for name in ("attnkata.checker.weights", "attnkata.checker.compare"):
        importlib.import_module(name)
    for kata_id in kata_ids:
        try:
            importlib.import_module(f"attnkata.reference.{load_set_kata(kata_id).module_name}")
        except ImportError:
            pass


class FileRules(NamedTuple):
    """What a problem set's manifest says about grading any file: what a static-policy
    finding costs, the imports it accepts beyond the list, and the set's secret salt of the
    graders' random inputs (every student meets the same inputs, which no table in a file
    can know; None: a fresh one per file, as a practice check draws)."""

    policy: str = "flag"
    allow_imports: tuple[str, ...] = ()
    input_salt: int | None = None


def grade_one(
    check: Callable[..., Any],
    kata_id: str,
    path: Path,
    lim: Any,
    lang: str,
    rules: FileRules,
    variant: dict[str, str] | None = None,
    fixes: bool = False,
) -> dict[str, Any]:
    """Grade one file in this (worker) process: a reply for `on_reply`, never an exception.
    `variant`: the student's variant of the kata (None: the standard kata); `fixes`: a failing
    file's verified fixes too (`kata set grade --feedback fixes`; the standard kata only: the
    repair templates are written in its conventions)."""
    t0 = time.perf_counter()
    try:
        # A worker grades file after file: each kata's pytest session is built once (driver.py).
        # The static policy only reports: the file runs whatever it imports (the sandbox holds)
        # so that its attention mistake is diagnosed too; the set's policy says what a finding
        # costs (policy_cost.py).
        result = check(
            load_set_kata(kata_id).with_variant(variant),
            path,
            limits=lim,
            lang=lang,
            policy="warn",
            allow_imports=rules.allow_imports,
            keep_session=True,
            seed=rules.input_salt,
        )
        policy_cost.apply(result, rules.policy, rules.allow_imports, lang)
        reply: dict[str, Any] = {"ok": True, "result": result.to_dict()}
        if fixes and not variant and not result.passed and result.tests and result.graded_source:
            reply["fix"] = _fixes(kata_id, path, result, lim, lang)
    except KataDefinitionError as exc:
        reply = {"ok": False, "kind": "grader-broken", "message": exc.message}
    except KataError as exc:
        reply = {"ok": False, "kind": "unreadable-file", "message": exc.message}
    except Exception as exc:  # noqa: BLE001 - a bug in attnkata must not stop the batch
        reply = {
            "ok": False,
            "kind": "grader-internal-error",
            "message": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-1500:]}",
        }
    reply["seconds"] = round(time.perf_counter() - t0, 3)
    return reply


def _fixes(kata_id: str, path: Path, result: Any, lim: Any, lang: str) -> dict[str, Any] | None:
    """The file's verified fixes (checker/fix/), graded in the same sandbox; None when the
    search itself broke (the grade stands either way)."""
    try:
        from attnkata.checker.fix.search import repair

        report, _ = repair(
            load_set_kata(kata_id), path, result.graded_source, result, limits=lim, lang=lang
        )
        return report.to_dict()
    except Exception:  # noqa: BLE001 - a fix is extra: it must never cost a student their grade
        return None
