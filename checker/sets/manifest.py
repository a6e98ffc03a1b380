"""The problem-set bundle's manifest: which katas (with content hashes), the options it was
created with, the grading configuration (tier weights, points, limits, deadline) and a hash
of every file written into the bundle.

Grading refuses a bundle whose katas no longer hash to what the manifest recorded: the hidden
grader or reference would not be the ones the set was made with. Stdlib only.
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from attnkata.checker.catalog import TIERS, Kata, get_kata, katas_root, load_kata
from attnkata.checker.errors import KataDefinitionError, KataError, UsageError
from attnkata.checker.version import __version__

FORMAT = 1
MANIFEST_PATH = Path("instructor") / "manifest.json"
LEVELS = ("scratch", "guided")
SET_LANGS = ("en", "zh", "both")
DEFAULT_WEIGHTS = {"core": 0.6, "edge": 0.3, "efficient": 0.1}
DEFAULT_POINTS = 10.0
DEFAULT_TIMEOUT = 60.0  # candidate seconds per submission, like `kata check`'s total limit
DEFAULT_CALL_TIMEOUT = 10.0
DEFAULT_MEMORY_MB = 4096
# What a static-policy finding costs (checker/sets/policy_cost.py): "flag" (nothing),
# "penalty:<fraction>" (that share of the file's score) or "zero". The file runs in every case.
DEFAULT_POLICY = "flag"
POLICY_FORMS = ("flag", "zero", "penalty:<fraction>")
# Older manifests: "warn" only reported (now "flag"); "enforce" refused the file (now "zero",
# the file run and diagnosed all the same).
LEGACY_POLICIES = {"warn": "flag", "enforce": "zero"}
# Folders of a kata that do not take part in grading (so editing them is no tampering).
_UNGRADED_PARTS = {"examples", "__pycache__"}


class BundleError(KataError):
    """The bundle does not match the manifest or the installed katas: refuse to grade."""

    exit_code = 3


def load_set_kata(kata_id: str) -> Kata:
    """The kata `kata_id`, loaded on its own, so a half-written kata elsewhere in the catalogue
    cannot break a set that does not use it (falls back to the catalogue for suggestions)."""
    folder = katas_root() / kata_id.strip()
    if (folder / "kata.toml").is_file() and "/" not in kata_id and not kata_id.startswith("."):
        return load_kata(folder)
    return get_kata(kata_id)


def reference_file(kata: Kata) -> Path:
    from attnkata.checker.skeleton import reference_path

    return reference_path(kata.id)


def kata_sources(kata: Kata) -> list[tuple[str, Path]]:
    """Every file that decides how `kata` is stated and graded, with a stable name."""
    files = []
    for p in sorted(kata.folder.rglob("*")):
        rel = p.relative_to(kata.folder)
        if p.is_file() and not (_UNGRADED_PARTS & set(rel.parts)) and p.suffix != ".pyc":
            files.append((f"katas/{kata.id}/{rel.as_posix()}", p))
    for name in ("conventions.md", "conventions.zh.md"):
        files.append((f"katas/{name}", katas_root() / name))
    ref = reference_file(kata)
    if ref.is_file():
        files.append((f"reference/{ref.name}", ref))
    return files


def kata_hash(kata: Kata) -> str:
    h = hashlib.sha256()
    for name, path in kata_sources(kata):
        h.update(name.encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return "sha256:" + h.hexdigest()


def kata_version(kata: Kata) -> str:
    """kata.toml's optional `version`, else the attnkata version that ships the kata."""
    try:
        data = tomllib.loads((kata.folder / "kata.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        data = {}
    version = data.get("version")
    return str(version) if version is not None else __version__


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def parse_weights(text: str) -> dict[str, float]:
    """`core=0.6,edge=0.3,efficient=0.1` -> {tier: weight}; tiers left out weigh 0."""
    weights = dict.fromkeys(TIERS, 0.0)
    for part in filter(None, (p.strip() for p in text.split(","))):
        tier, sep, value = part.partition("=")
        tier = tier.strip()
        if not sep or tier not in TIERS:
            raise UsageError(
                f"bad tier weight {part!r}",
                f"write e.g. core=0.6,edge=0.3,efficient=0.1 (tiers: {', '.join(TIERS)})",
            )
        try:
            weights[tier] = float(value)
        except ValueError:
            raise UsageError(f"bad tier weight {part!r}: {value!r} is not a number") from None
    check_weights(weights, UsageError)
    return weights


def check_weights(weights: dict[str, float], error: type[KataError]) -> None:
    bad = [
        t
        for t, w in weights.items()
        if t not in TIERS or not isinstance(w, int | float) or not math.isfinite(w) or w < 0
    ]
    if bad:
        raise error(
            f"tier weights must be non-negative numbers for the tiers {', '.join(TIERS)}; "
            f"bad: {', '.join(map(str, bad))}"
        )
    if sum(weights.values()) <= 0:
        raise error("at least one tier weight must be positive")


def parse_policy(spec: object) -> tuple[str, float]:
    """`"flag" | "zero" | "penalty:<fraction>"` (or a legacy "warn"/"enforce") -> (kind,
    fraction of the file's score a finding takes). Raises ValueError naming the accepted forms."""
    if isinstance(spec, str):
        text = LEGACY_POLICIES.get(spec.strip(), spec.strip())
        if text == "flag":
            return "flag", 0.0
        if text == "zero":
            return "zero", 1.0
        kind, sep, value = text.partition(":")
        if kind == "penalty" and sep:
            try:
                fraction = float(value)
            except ValueError:
                fraction = -1.0
            if 0.0 <= fraction <= 1.0:
                return "penalty", fraction
    raise ValueError(
        f"policy must be one of {', '.join(POLICY_FORMS)} (a fraction between 0 and 1, "
        f"e.g. penalty:0.2), not {spec!r}"
    )


def check_policy(
    mode: object, allow_imports: object, error: type[KataError], where: str = "manifest"
) -> None:
    """`policy` is "flag", "zero" or "penalty:<fraction>"; `allow_imports` a list of dotted module names."""
    try:
        parse_policy(mode)
    except ValueError as exc:
        raise error(f"{where}: {exc}") from None
    if not isinstance(allow_imports, list) or not all(
        isinstance(m, str) and m and all(part.isidentifier() for part in m.split("."))
        for m in allow_imports
    ):
        raise error(
            f'{where}: allow_imports must be a list of module names, e.g. ["scipy", "scipy.special"]'
        )


def parse_deadline(text: str) -> str:
    """An ISO 8601 time (`2025-06-01T23:59`, local time unless it says otherwise) -> ISO with offset."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"bad deadline {text!r}", "write it as ISO 8601, e.g. 2025-06-01T23:59"
        ) from None
    return when.astimezone().isoformat(timespec="seconds")


def check_penalty(value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise UsageError("--late-penalty must be between 0 (none) and 1 (no credit for late files)")
    return value


@dataclass
class GradingConfig:
    """How `kata set grade` scores: edit instructor/manifest.json to change it after creation."""

    tier_weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    points: dict[str, float] = field(default_factory=dict)  # kata id -> points
    due: str | None = None  # ISO 8601 with offset; a file modified later is late
    late_penalty: float = 0.0  # fraction of the score a late file loses
    timeout: float = DEFAULT_TIMEOUT  # candidate seconds per submission (all calls together)
    call_timeout: float = DEFAULT_CALL_TIMEOUT  # seconds per call of candidate code
    memory_mb: int = DEFAULT_MEMORY_MB
    # What a finding of the static policy (checker/policy.py: a file that imports or touches
    # what solutions may not) costs: "flag" (reported, no points taken), "penalty:0.2" (a
    # fifth of the file's score) or "zero". The file is run and diagnosed in every case; one
    # that reaches a fused attention kernel earns nothing whatever this says. `allow_imports`:
    # modules (with their submodules) accepted beyond the allowlist, e.g. ["scipy"].
    policy: str = DEFAULT_POLICY
    allow_imports: list[str] = field(default_factory=list)
    # The set's secret salt of the graders' random inputs (checker/probes.py): drawn when the
    # set is made, so every student meets the same inputs, a regrade gives the same grade, and
    # no file can hold a table of expected outputs. Sets made before it existed: 0, the seeds
    # as published. Only instructor/ holds it: the student bundle never does.
    input_salt: int = 0


@dataclass
class KataEntry:
    id: str
    title: dict[str, str]
    version: str
    hash: str
    solution_file: str
    entry_points: list[str]
    required_tiers: list[str]
    difficulty: str
    minutes: int
    tests: dict[str, int] = field(default_factory=dict)  # tier -> number of hidden tests
    public_samples: int = 0


@dataclass
class Manifest:
    title: str
    katas: list[KataEntry]
    options: dict[str, Any]
    grading: GradingConfig
    files: dict[str, str] = field(default_factory=dict)  # bundle path -> sha256
    created: str = ""
    attnkata_version: str = __version__
    format: int = FORMAT
    # Per-student variants (`kata set create --variants`): {student: {kata: {parameter:
    # value}}}, and the secret they were drawn from (the same secret and student id give the
    # same variant again). Empty: every student gets the standard katas.
    variants: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    variant_secret: str = ""

    def variant_of(self, student: str, kata_id: str) -> dict[str, str] | None:
        """The student's variant of `kata_id`; None when the set has no variants or the
        student is not on its roster (then graded against the standard kata)."""
        return self.variants.get(student, {}).get(kata_id) if self.variants else None

    @property
    def kata_ids(self) -> list[str]:
        return [k.id for k in self.katas]

    def points(self, kata_id: str) -> float:
        return float(self.grading.points.get(kata_id, DEFAULT_POINTS))

    @property
    def max_points(self) -> float:
        return sum(self.points(k) for k in self.kata_ids)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "manifest") -> Manifest:
        try:
            if data.get("format") != FORMAT:
                raise BundleError(
                    f"{where}: unsupported manifest format {data.get('format')!r} "
                    f"(this attnkata reads format {FORMAT})"
                )
            grading = GradingConfig(**data["grading"])
            katas = [KataEntry(**k) for k in data["katas"]]
            manifest = cls(
                title=str(data["title"]),
                katas=katas,
                options=dict(data["options"]),
                grading=grading,
                files=dict(data.get("files", {})),
                created=str(data.get("created", "")),
                attnkata_version=str(data.get("attnkata_version", "")),
                format=FORMAT,
                variants=_variants(data.get("variants", {}), where),
                variant_secret=str(data.get("variant_secret", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise BundleError(
                f"{where}: malformed manifest ({type(exc).__name__}: {exc})"
            ) from None
        check_weights(grading.tier_weights, BundleError)
        if not katas:
            raise BundleError(f"{where}: the set has no katas")
        for k, v in grading.points.items():
            if not isinstance(v, int | float) or v < 0:
                raise BundleError(f"{where}: points of {k!r} must be a non-negative number")
        if not 0 <= grading.late_penalty <= 1:
            raise BundleError(f"{where}: late_penalty must be between 0 and 1")
        check_policy(grading.policy, grading.allow_imports, BundleError, where)
        return manifest


def _variants(data: Any, where: str) -> dict[str, dict[str, dict[str, str]]]:
    ok = isinstance(data, dict) and all(
        isinstance(per, dict)
        and all(
            isinstance(v, dict) and all(isinstance(x, str) for x in [*v, *v.values()])
            for v in per.values()
        )
        for per in data.values()
    )
    if not ok:
        raise BundleError(f"{where}: `variants` must map student -> kata -> {{parameter: value}}")
    return data


def write_manifest(bundle: Path, manifest: Manifest) -> Path:
    path = bundle / MANIFEST_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(manifest.to_dict(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    return path


def read_manifest(bundle: Path) -> Manifest:
    path = bundle / MANIFEST_PATH
    if not path.is_file():
        raise UsageError(
            f"{bundle} is not a problem set: {MANIFEST_PATH} is missing",
            "create one with `kata set create --katas ... --out DIR`",
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BundleError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BundleError(f"{path}: not a manifest")
    return Manifest.from_dict(data, str(path))


def bundle_files(bundle: Path) -> dict[str, str]:
    """sha256 of every file in the bundle except the manifest itself (which may be edited)."""
    out = {}
    for p in sorted(bundle.rglob("*")):
        rel = p.relative_to(bundle).as_posix()
        if p.is_file() and rel != MANIFEST_PATH.as_posix():
            out[rel] = file_sha256(p)
    return out


def verify_bundle(bundle: Path) -> tuple[Manifest, list[str]]:
    """The manifest, after checking the bundle against it; returns non-fatal warnings.

    Raises BundleError (exit 3) when a file of the bundle changed or went missing, or when an
    installed kata no longer hashes to the manifest's hash."""
    manifest = read_manifest(bundle)
    problems: list[str] = []
    warnings: list[str] = []
    for rel, digest in manifest.files.items():
        p = bundle / rel
        if not p.is_file():
            problems.append(f"{rel}: missing from the bundle")
        elif file_sha256(p) != digest:
            problems.append(f"{rel}: changed since the set was created")
    for entry in manifest.katas:
        try:
            kata = load_set_kata(entry.id)
        except KataError as exc:
            problems.append(f"kata {entry.id}: not installed or broken ({exc.message})")
            continue
        if kata_hash(kata) != entry.hash:
            problems.append(
                f"kata {entry.id}: its statement, grader or reference differ from the "
                f"ones this set was created with (hash {entry.hash[:19]}...)"
            )
    if problems:
        shown = problems[:12] + (
            [f"... and {len(problems) - 12} more"] if len(problems) > 12 else []
        )
        raise BundleError(
            f"refusing to grade {bundle}: the bundle does not match its manifest:\n  - "
            + "\n  - ".join(shown),
        )
    if manifest.attnkata_version != __version__:
        warnings.append(
            f"the set was created with attnkata {manifest.attnkata_version}; "
            f"grading with {__version__} (the katas' hashes match)"
        )
    return manifest, warnings


def tier_fractions(tests: list[dict[str, Any]] | list[Any]) -> dict[str, tuple[int, int]]:
    """tier -> (passed, graded) over tests that ran (a skipped test neither passes nor fails)."""
    counts: dict[str, list[int]] = {}
    for t in tests:
        tier, status = (t["tier"], t["status"]) if isinstance(t, dict) else (t.tier, t.status)
        if status == "skip":
            continue
        c = counts.setdefault(tier, [0, 0])
        c[1] += 1
        c[0] += status == "pass"
    return {k: (v[0], v[1]) for k, v in counts.items()}


def score(tests: list[Any], weights: dict[str, float], points: float) -> float:
    """Partial credit: each tier's share of passed tests, weighted, normalised over the tiers
    this kata has tests in (a kata without `efficient` tests can still reach full points)."""
    fractions = tier_fractions(tests)
    present = {t: w for t, w in weights.items() if t in fractions and w > 0}
    total = sum(present.values())
    if total <= 0:
        return 0.0
    earned = sum(w * fractions[t][0] / fractions[t][1] for t, w in present.items())
    return round(points * earned / total, 2)


def require_kata_definition(kata: Kata) -> None:
    """A kata that cannot be handed out (no reference to compute samples or verify against)."""
    if not reference_file(kata).is_file():
        raise KataDefinitionError(
            f"{kata.id}: reference solution {reference_file(kata)} is missing"
        )
