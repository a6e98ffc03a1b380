"""The typed result of grading one file. Every renderer (terminal, JSON, HTML, Markdown) reads
only this model; it round-trips through versioned JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

RESULT_VERSION = 1

# Overall and per-test statuses.
PASS, FAIL, ERROR, TIMEOUT, SKIP = "pass", "fail", "error", "timeout", "skip"

# Exercism's analyzer scale, most severe first. "essential" means "this is why it fails".
SEVERITIES = ("essential", "actionable", "informative", "celebratory")


@dataclass
class SourceRef:
    """Lines of the candidate's own file that a diagnostic points at (1-based, inclusive)."""

    line: int
    end_line: int | None = None
    text: str = ""


@dataclass
class Diagnostic:
    """One finding about the candidate's code.

    `id` is a catalogue id (e.g. `kv-repeat-instead-of-interleave`) or one of the load-time ids
    (`syntax-error`, `missing-entry-point`, `signature-mismatch`, `exception`, ...).
    `title`/`explanation`/`fix` are already in the user's language; `evidence` says what decided it
    (which probe, which op, which line); `data` carries structured extras for renderers
    (e.g. mask grids, head maps)."""

    id: str
    severity: str
    title: str
    explanation: str = ""
    fix: str = ""
    evidence: list[str] = field(default_factory=list)
    source: list[SourceRef] = field(default_factory=list)
    link: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def is_error(self) -> bool:
        return self.severity == "essential"


@dataclass
class TestResult:
    id: str
    tier: str
    status: str
    message: str = ""
    duration: float = 0.0


@dataclass
class Result:
    kata: str
    solution: str
    status: str
    tests: list[TestResult] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    required_tiers: list[str] = field(default_factory=lambda: ["core", "edge"])
    lang: str = "en"
    # How the candidate's code was isolated (checker/sandbox/host.py `Zygote.isolation`).
    isolation: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)  # call_timeout, total_timeout, memory_mb
    source_sha256: str = ""  # of the text that was graded
    # The salt of the graders' random inputs (checker/probes.py): `kata check --seed` repeats
    # the check with the same inputs. None: nothing was run.
    seed: int | None = None
    # The variant's conventions it was graded in ({parameter: value}, checker/variants.py);
    # empty: the standard kata.
    variant: dict[str, str] = field(default_factory=dict)
    version: int = RESULT_VERSION

    @property
    def passed(self) -> bool:
        return self.status == PASS

    def tier_counts(self) -> dict[str, tuple[int, int]]:
        """tier -> (passed, total), in tier order of appearance."""
        counts: dict[str, list[int]] = {}
        for t in self.tests:
            c = counts.setdefault(t.tier, [0, 0])
            c[1] += 1
            c[0] += t.status == PASS
        return {k: (v[0], v[1]) for k, v in counts.items()}

    @property
    def failed_tests(self) -> list[TestResult]:
        return [t for t in self.tests if t.status != PASS]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __repr__(self) -> str:
        counts = self.tier_counts()
        passed, total = sum(p for p, _ in counts.values()), sum(t for _, t in counts.values())
        ids = ", ".join(d.id for d in self.diagnostics) or "-"
        return f"<Result {self.kata}: {self.status}, {passed}/{total} tests passed; diagnostics: {ids}>"

    def attach_source(self, source: str) -> None:
        """The graded text, for renderers that show its lines (not part of the JSON)."""
        self._source = source

    @property
    def graded_source(self) -> str | None:
        """The text that was graded (attached by the runner), whatever the file holds now."""
        return getattr(self, "_source", None)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        version = data.get("version")
        if version != RESULT_VERSION:
            raise ValueError(f"unsupported result version {version!r} (expected {RESULT_VERSION})")
        data = dict(data)
        data["tests"] = [TestResult(**t) for t in data.get("tests", [])]
        data["diagnostics"] = [
            Diagnostic(**{**d, "source": [SourceRef(**s) for s in d.get("source", [])]})
            for d in data.get("diagnostics", [])
        ]
        return cls(**data)


def overall_status(tests: list[TestResult], required_tiers: list[str] | tuple[str, ...]) -> str:
    """pass only when every test of every required tier passed; timeout beats error beats fail."""
    # A skipped test (e.g. the CUDA test on a machine without a GPU) neither passes nor fails.
    required = [t for t in tests if t.tier in required_tiers and t.status != SKIP]
    if not required:
        return ERROR
    statuses = {t.status for t in required}
    if statuses <= {PASS}:
        return PASS
    if TIMEOUT in statuses:
        return TIMEOUT
    if statuses == {ERROR}:
        return ERROR
    return FAIL


def excerpt_blocks(
    refs: list[SourceRef], n_lines: int, context: int = 1
) -> list[tuple[int, int, set[int]]]:
    """The candidate's lines to show for `refs`: (first, last, highlighted) blocks with
    `context` lines around each ref, overlapping or touching blocks merged, so that no line is
    printed twice. Refs outside the file are left out (renderers show their text instead)."""
    spans = sorted((ref.line, ref.end_line or ref.line) for ref in refs if 0 < ref.line <= n_lines)
    blocks: list[tuple[int, int, set[int]]] = []
    for start, end in spans:
        lo, hi = max(1, start - context), min(n_lines, end + context)
        marked = set(range(start, min(end, n_lines) + 1))
        if blocks and lo <= blocks[-1][1] + 1:
            first, last, seen = blocks[-1]
            blocks[-1] = (first, max(last, hi), seen | marked)
        else:
            blocks.append((lo, hi, marked))
    return blocks


def localized(value: Any, lang: str) -> str:
    """A picture's text in a Diagnostic's data: a plain string, or {"en": ..., "zh": ...}
    (mutants modules do not know the user's language)."""
    if isinstance(value, dict):
        return str(value.get(lang) or value.get("en") or "")
    return "" if value is None else str(value)


@dataclass
class Fix:
    """A verified repair of one diagnosed mistake in the candidate's own file (`kata fix`):
    the edit as a unified diff against the version it was found on, which lines of that
    version it changes, and what re-grading the edited file in the sandbox showed."""

    mistake: str
    title: str
    diff: str
    lines: list[int]
    touched: int  # lines changed, added or removed
    tests_fixed: int  # failing tests that pass after this edit
    tests_failing: int  # failing tests of the file as it was checked
    fixed_tests: list[str] = field(default_factory=list)
    template: str = ""  # which repair template made it (for --debug and the bench)


@dataclass
class FixReport:
    """What `kata fix` found for one file: the verified fixes (each applies on top of the ones
    before it, in order), the diagnosed mistakes without one, and the verified status of the
    file with every fix applied."""

    kata: str
    solution: str
    status: str  # of the file as checked
    fixes: list[Fix] = field(default_factory=list)
    unfixed: list[str] = field(default_factory=list)
    failing: int = 0
    fixed_status: str = ""  # of the file with every fix applied ("" without a fix)
    graded: int = 0  # candidate repairs graded in the sandbox
    written: str = ""  # `--write`: the file that was changed
    backup: str = ""  # ... and where its previous version is kept
    lang: str = "en"
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def attach(self, result: Result, fixed_source: str | None) -> None:
        """The check it started from and the verified source (renderers; not in the JSON)."""
        self._result = result
        self._fixed = fixed_source

    @property
    def result(self) -> Result | None:
        return getattr(self, "_result", None)

    @property
    def fixed_source(self) -> str | None:
        return getattr(self, "_fixed", None)


def explained_tests(result: Result) -> tuple[list[tuple[Diagnostic, list[str]]], list[TestResult]]:
    """The diagnosis first: each diagnostic with the failing tests it explains (as the
    diagnosis counted them, `data["explains"]`; two mistakes may explain the same test), and
    the failing tests no diagnostic explains."""
    failing = [t for t in result.failed_tests if t.status != SKIP]
    ids = {t.id for t in failing}
    folded: list[tuple[Diagnostic, list[str]]] = []
    for d in result.diagnostics:
        ex = d.data.get("explains") if isinstance(d.data, dict) else None
        if not isinstance(ex, dict):
            continue
        listed = ex.get("ids")
        if isinstance(listed, list) and listed:
            mine = [str(t) for t in listed if t in ids]
        elif ex.get("tests") and ex.get("tests") == len(failing):
            mine = [t.id for t in failing]
        else:
            continue
        if mine:
            folded.append((d, mine))
    taken = {t for _, tests in folded for t in tests}
    return folded, [t for t in failing if t.id not in taken]
