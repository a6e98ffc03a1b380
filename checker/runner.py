"""Run one grading session: static checks, the kata's pytest grader in this process against
a candidate proxy, then diagnosis. Returns a `Result`; never raises for candidate faults."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from attnkata.checker.catalog import Kata
from attnkata.checker.errors import CheckCancelled, KataDefinitionError
from attnkata.checker.messages import msg
from attnkata.checker.models import ERROR, TIMEOUT, Diagnostic, Result, SourceRef, overall_status
from attnkata.checker.proxy import (
    CandidateBanned,
    CandidateCrashed,
    CandidateExited,
    CandidateFailure,
    CandidateMemory,
    CandidateTimeout,
    Limits,
)
from attnkata.checker.static import check_source, read_source, require_file, stop_status

_FAILURE_TITLES = {
    CandidateTimeout: "timeout_title",
    CandidateCrashed: "crash_title",
    CandidateExited: "crash_title",
    CandidateMemory: "memory_title",
    CandidateBanned: "banned_title",
}


def failure_diagnostic(exc: CandidateFailure, source_lines: list[str], lang: str) -> Diagnostic:
    """A candidate failure (exception, crash, timeout...) as a diagnostic with its own lines."""
    key = next((v for k, v in _FAILURE_TITLES.items() if isinstance(exc, k)), None)
    title = (
        msg(key, lang) if key else msg("exception_title", lang, type=exc.exc_type or "an exception")
    )
    refs = [
        SourceRef(
            line=f["line"],
            text=source_lines[f["line"] - 1].strip()
            if 0 < f["line"] <= len(source_lines)
            else f["text"],
        )
        for f in exc.frames[-3:]
    ]
    return Diagnostic(
        id=_failure_id(exc),
        severity="essential",
        title=title,
        explanation=exc.text(lang),
        source=refs,
    )


def _failure_id(exc: CandidateFailure) -> str:
    if isinstance(exc, CandidateTimeout):
        return "timeout"
    if isinstance(exc, CandidateCrashed | CandidateExited):
        return "interpreter-ended"
    if isinstance(exc, CandidateMemory):
        return "memory-limit"
    if isinstance(exc, CandidateBanned):
        return "banned-api"
    return "exception"


# Texts written for a mistake alone that call another part of the code right: beside the
# mistakes that make that part wrong, the mistake gets its joint text (messages_fix "joint.").
# The value: the mistakes whose company changes the text ("*": any other essential one).
_JOINT: dict[str, tuple[str, ...]] = {
    "online-softmax-no-rescale": ("online-softmax-sum-not-rescaled",),
    "online-softmax-sum-not-rescaled": ("online-softmax-no-rescale",),
    "flash-bwd-missing-delta": ("*",),
    "cache-stores-repeated-heads": ("*",),
    "rope-on-values": ("*",),
    "topk-softmax-not-renormalized": ("*",),
}


def joint_texts(diags: list[Diagnostic], lang: str) -> list[Diagnostic]:
    """Two mistakes of one family found together: neither text may say the other part was
    done right (e.g. neither the running sum nor the accumulator is rescaled)."""
    essential = {d.id for d in diags if d.is_error}
    for d in diags:
        company = _JOINT.get(d.id)
        if not company or not d.is_error:
            continue
        others = essential - {d.id}
        if others & set(company) or ("*" in company and others):
            d.explanation = msg(f"joint.{d.id}", lang)
    return diags


def _dedupe(diags: list[Diagnostic]) -> list[Diagnostic]:
    """One diagnostic per kind of failure and place in the candidate's file (the same
    exception raised by every test is one finding, not twenty)."""
    seen: set[tuple[str, str, tuple[int, ...]]] = set()
    out = []
    for d in diags:
        key = (d.id, d.title, tuple(ref.line for ref in d.source))
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def _stopped(result: Result, static: list[Diagnostic], t0: float) -> bool:
    """Add the static diagnostics; True (and the result's status set) when the file must not
    be graded further."""
    result.diagnostics.extend(static)
    stop = stop_status(static)
    if stop is None:
        return False
    result.status = stop
    result.timings = {"total": round(time.perf_counter() - t0, 3)}
    return True


def _normalised_sha(text: str) -> str:
    # Line endings and trailing blanks are an editor's, not the candidate's work.
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    return hashlib.sha256("\n".join(lines).strip("\n").encode("utf-8")).hexdigest()


def is_skeleton(kata: Kata, source: str) -> bool:
    """`source` is the kata's skeleton as `kata start` copied it (by hash, blanks aside)."""
    try:
        skeleton = kata.skeleton_path.read_text(encoding="utf-8-sig")
    except OSError:
        return False
    return bool(source) and _normalised_sha(source) == _normalised_sha(skeleton)


def check(
    kata: Kata,
    path: Path,
    *,
    limits: Limits | None = None,
    lang: str = "en",
    diagnose: bool = True,
    maxfail: int | None = None,
    policy: str = "warn",
    allow_imports: Iterable[str] = (),
    cancel: threading.Event | None = None,
    progress: Callable[[str], None] | None = None,
    keep_session: bool = False,
    preread: tuple[str, list[Diagnostic]] | None = None,
    seed: int | None = None,
    nodes: Iterable[str] | None = None,
) -> Result:
    """Grade `path` against `kata`. Raises UsageError only for a missing/unreadable file.

    `maxfail`: stop grading after that many failed tests (the diagnosis still runs); for
    callers that only need "it fails" and the diagnosis, such as the mutation matrix.
    `policy`: "warn" reports what the static policy (checker/policy.py) finds and grades the
    file anyway (`kata check`); "enforce" fails such a file without running it (mock
    interviews, graded sets). `allow_imports`: modules the policy accepts beyond its list.
    `cancel`: when set (from another thread), the check stops and raises CheckCancelled.
    `progress`: called with each test's name as it starts, then "diagnosis".
    `keep_session`: this process grades again and again: the kata's pytest session is kept
    and run again (checker/driver.py) instead of being built for every check.
    `preread`: `read_source(path, lang)` as the caller already read it (checker/api.py reads
    the file before importing this module: a save after Enter must not change what is graded).
    `seed`: the salt of the graders' random inputs (None: `probes.new_salt`, a fresh secret
    one unless ATTNKATA_INPUT_SALT fixes it); the result records it.
    `nodes`: only these tests (TestResult ids, e.g. "forward[float64]"), for a quick first look
    at a candidate repair (checker/fix/verify.py); the status then covers only them.
    A Ctrl-C ends the candidate's processes and propagates as KeyboardInterrupt."""
    path = Path(path)
    from attnkata.checker.catalog import require_extras

    require_extras(kata, lang)  # (before anything is read or started: exit 3, how to install)
    if preread is None:
        # Before torch and pytest (~1-2 s): what is graded is the file as it was when asked.
        require_file(kata, path, lang)
        preread = read_source(path, lang)  # a byte-order mark is dropped; too large: a verdict
    source, static = preread
    import pytest
    import torch

    from attnkata.checker import driver, probes
    from attnkata.checker.adapter import adapt
    from attnkata.checker.proxy import Candidate

    # Graders work on small tensors: one thread avoids OpenMP's spin-up and oversubscription
    # when the machine is busy (batch grading runs one grader per core).
    torch.set_num_threads(1)

    limits = limits or Limits()
    t0 = time.perf_counter()
    result = Result(
        kata=kata.id,
        solution=str(path.resolve()),
        status=ERROR,
        required_tiers=list(kata.required_tiers),
        lang=lang,
        # What was graded is this one reading (the sandbox gets a copy of it): a
        # save during the check cannot mix two versions.
        source_sha256=hashlib.sha256(source.encode("utf-8")).hexdigest() if source else "",
    )
    result.attach_source(source)
    from attnkata.checker.sandbox import host

    # With a warm sandbox and a policy that only warns, the candidate starts loading while the
    # static checks (~10 ms for gqa's reference) run in a thread: the main thread only waits on
    # the sandbox meanwhile. Otherwise they come first: an enforced policy must see
    # the file before it runs, and a cold check must not wait for the sandbox to learn that a
    # file does not parse.
    overlap = not static and policy == "warn" and host.ready()
    if not overlap:
        static = static or check_source(
            kata, source, lang, policy=policy, allow_imports=allow_imports
        )
        if _stopped(result, static, t0):
            return result
    lines = source.splitlines()
    # A zygote not started yet loads what this grader will make the candidate use (no-op otherwise).
    host.prestart(warm=host.warm_ups_for(kata.grader_path))
    with Candidate(path, limits, source=source) as candidate:
        candidate.cancel = cancel
        if overlap:
            with ThreadPoolExecutor(1, thread_name_prefix="kata-static") as pool:
                checked = pool.submit(
                    check_source, kata, source, lang, policy=policy, allow_imports=allow_imports
                )
                candidate.start()
                static = checked.result()
            if _stopped(result, static, t0):
                return result  # (the candidate is killed on the way out)
        else:
            candidate.start()
        result.isolation = candidate.isolation
        result.limits = {
            "call_timeout": limits.call_timeout,
            "total_timeout": limits.total_timeout,
            "memory_mb": limits.memory_mb,
        }
        t_load = time.perf_counter()
        if candidate.load_error is not None:
            d = failure_diagnostic(candidate.load_error, lines, lang)
            if d.id == "exception":
                d.title = msg("load_title", lang)
            if isinstance(candidate.load_error, CandidateTimeout):
                result.status = TIMEOUT
            result.diagnostics.append(d)
            result.timings = {"total": round(time.perf_counter() - t0, 3)}
            return result
        salt = probes.new_salt(seed)  # the graders' inputs for this check, and its replays
        result.seed = salt
        # A variant's file is graded by the standard grader through the adapter of its
        # conventions (checker/adapter.py): the one place every grading path goes through.
        graded = adapt(candidate, kata)
        result.variant = kata.variant_values if kata.variant else {}
        with probes.salted(salt):
            code, collector, output = driver.run(
                kata,
                path,
                graded,
                lang,
                maxfail=maxfail,
                cancel=cancel,
                progress=progress,
                keep_session=keep_session,
                nodes=None if nodes is None else [f"{kata.grader_path}::test_{t}" for t in nodes],
            )
        if code == pytest.ExitCode.INTERRUPTED:  # pytest swallowed it; the caller must not
            raise (
                CheckCancelled() if cancel is not None and cancel.is_set() else KeyboardInterrupt()
            )
        t_tests = time.perf_counter()
        if collector.collect_errors or code in (
            pytest.ExitCode.INTERNAL_ERROR,
            pytest.ExitCode.USAGE_ERROR,
        ):
            detail = (collector.collect_errors or [output[-1500:]])[0]
            raise KataDefinitionError(f"the grader of {kata.id} is broken: {detail}")
        result.tests = collector.results
        result.timings.update(collector.speed)  # the GPU `speed` tier's figures, if it ran
        result.status = overall_status(result.tests, kata.required_tiers)
        result.diagnostics.extend(
            _dedupe([failure_diagnostic(f, lines, lang) for f in collector.failures])
        )
        if not result.passed and is_skeleton(kata, source):
            # Nothing of the candidate's to diagnose ("No known mistake matched" would mislead).
            result.diagnostics.insert(
                0,
                Diagnostic(
                    id="untouched-skeleton",
                    severity="essential",
                    title=msg("skeleton.title", lang),
                    explanation=msg("skeleton.explanation", lang, kata=kata.id, file=path.name),
                ),
            )
        elif diagnose and not result.passed:
            from attnkata.checker.diagnose import diagnose_result

            if progress is not None:
                progress("diagnosis")

            with probes.salted(
                salt
            ):  # the diagnosis' own probes are built unsalted (engine.load_spec)
                if kata.variant:
                    from attnkata.checker.diagnose.conventions import diagnose_variant

                    found = diagnose_variant(kata, path, source, result, candidate, graded, lang)
                else:
                    found = diagnose_result(kata, path, source, result, candidate, lang)
            result.diagnostics = joint_texts(found, lang) + result.diagnostics
    result.timings.update(
        {
            "load": round(t_load - t0, 3),
            "tests": round(t_tests - t_load, 3),
            "total": round(time.perf_counter() - t0, 3),
        }
    )
    return result
