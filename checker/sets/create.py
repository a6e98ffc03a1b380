"""`kata set create`: write a problem-set bundle.

    DIR/student/              what the students get (hand it out as is)
        README.md             how to check and how to hand in
        handout.html          printable handout (statements, signatures, shape legend)
        <kata>/statement*.md  the statement(s) with the shared conventions
        <kata>/<file>.py      the file to complete (scratch: signatures and docstrings;
                              guided: the reference with its solution regions blanked)
        <kata>/test_public_*.py + public_*.json   a few self-contained sample tests
    DIR/instructor/           never handed out
        manifest.json         katas + hashes, options, grading configuration, file hashes
        reference/, graders/  copies of the reference solutions and hidden graders

The bundle is built in a temporary folder and moved into place, and it is checked for leaks
(reference code, grader code, hidden inputs) before it is.
"""

from __future__ import annotations

import html
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from attnkata.checker.catalog import TIERS, Kata
from attnkata.checker.errors import KataDefinitionError, UsageError
from attnkata.checker.seeds import secret_salt
from attnkata.checker.sets.manifest import (
    DEFAULT_POINTS,
    DEFAULT_POLICY,
    LEVELS,
    MANIFEST_PATH,
    SET_LANGS,
    GradingConfig,
    KataEntry,
    Manifest,
    bundle_files,
    check_penalty,
    check_policy,
    kata_hash,
    kata_version,
    load_set_kata,
    parse_deadline,
    reference_file,
    require_kata_definition,
    write_manifest,
)
from attnkata.checker.skeleton import BEGIN, END, strip_solution

MAX_PUBLIC_TESTS = 20


@dataclass
class CreateOptions:
    katas: list[str]
    out: Path
    level: str = "scratch"
    lang: str = "both"
    title: str | None = None
    public_tests: int = 3
    tier_weights: dict[str, float] | None = None
    points: float = DEFAULT_POINTS
    due: str | None = None
    late_penalty: float = 0.0
    seed: int = 1
    force: bool = False
    timeout: float | None = None
    call_timeout: float | None = None
    policy: str = (
        DEFAULT_POLICY  # what a static-policy finding costs: "flag", "zero" or "penalty:<fraction>"
    )
    allow_imports: list[str] = field(
        default_factory=list
    )  # modules allowed beyond the policy's list
    warnings: list[str] = field(default_factory=list)
    # Per-student variants (checker/sets/roster.py): the roster file, the secret they are
    # drawn from (None: a fresh one, kept in the instructor's manifest) and how many variants
    # of each kata the class shares out (each one checked before it is handed out).
    variants: bool = False
    roster: Path | None = None
    variant_seed: str | None = None
    variant_pool: int = 12


def _validate(opts: CreateOptions) -> list[Kata]:
    if opts.level not in LEVELS:
        raise UsageError(f"unknown level {opts.level!r}", f"use one of: {', '.join(LEVELS)}")
    if opts.lang not in SET_LANGS:
        raise UsageError(f"unknown language {opts.lang!r}", f"use one of: {', '.join(SET_LANGS)}")
    if not 0 <= opts.public_tests <= MAX_PUBLIC_TESTS:
        raise UsageError(f"--public-tests must be between 0 and {MAX_PUBLIC_TESTS}")
    if opts.points <= 0:
        raise UsageError("--points must be positive")
    check_penalty(opts.late_penalty)
    check_policy(opts.policy, opts.allow_imports, UsageError, "--policy/--allow-imports")
    if opts.variants and opts.roster is None:
        raise UsageError("--variants needs the class: --roster FILE (one student id per line)")
    if opts.roster is not None and not opts.variants:
        raise UsageError("--roster is for per-student variants: add --variants")
    if opts.variants and opts.variant_pool < 1:
        raise UsageError("--variant-pool must be at least 1")
    ids = [k.strip() for k in opts.katas if k.strip()]
    if not ids:
        raise UsageError("no katas given", "pass e.g. --katas sdpa,mha (see `kata list`)")
    katas: list[Kata] = []
    for kata_id in ids:
        kata = load_set_kata(kata_id)
        if kata.requires:
            # Public samples run the reference here and the exports install attnkata without
            # extras: neither carries Triton yet.
            raise UsageError(
                f"{kata.id} needs attnkata[{','.join(kata.requires)}] and cannot be put in a "
                "problem set yet",
                "practise it with `kata check`; sets take the katas that need no extra",
            )
        if kata.id not in {k.id for k in katas}:
            require_kata_definition(kata)
            katas.append(kata)
    return katas


def _prepare_out(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise UsageError(
                f"{out} already exists and is not empty",
                "pass --force to replace a problem set there",
            )
        if not (out / MANIFEST_PATH).is_file():
            # --force only ever replaces a problem set: never someone's unrelated folder.
            raise UsageError(
                f"{out} is not a problem set; refusing to replace it, even with --force"
            )
        results = out / "instructor" / "results"
        if results.is_dir() and any(results.iterdir()):
            raise UsageError(
                f"{out} holds grading results ({results}); refusing to replace it",
                "move the results elsewhere first, or create the new set in another folder",
            )


def student_file(kata: Kata, level: str) -> str:
    if level == "guided":
        from attnkata.checker.variant_text import reference_source

        return strip_solution(reference_source(kata), keep_markers=True, filename=kata.id)
    return kata.skeleton_path.read_text(encoding="utf-8")


def write_kata(kata: Kata, folder: Path, level: str, langs: list[str], doc: dict) -> int:
    """A kata's student folder (statements, the file to complete, public samples); the
    number of samples written. `kata` may be a variant: its own texts and samples."""
    from attnkata.checker.sets import samples

    folder.mkdir(parents=True)
    for lang in langs:
        (folder / kata.statement_path(lang).name).write_text(kata.statement(lang), encoding="utf-8")
    (folder / kata.solution_file).write_text(student_file(kata, level), encoding="utf-8")
    return samples.write_doc(kata, folder, doc)


def create_set(opts: CreateOptions, log: Callable[[str], None] | None = None) -> Manifest:
    """Build the bundle described by `opts` at `opts.out`; returns its manifest."""
    from attnkata.checker.sets import samples
    from attnkata.checker.sets.handout import render_handout
    from attnkata.checker.sets.readme import student_readme

    say = log or (lambda _msg: None)
    katas = _validate(opts)
    students: list[str] = []
    if opts.variants:
        from attnkata.checker.sets.roster import read_roster

        assert opts.roster is not None
        students = read_roster(opts.roster)  # before any work: a bad roster is a usage error
    out = Path(opts.out)
    _prepare_out(out, opts.force)
    due = parse_deadline(opts.due) if opts.due else None
    created = datetime.now().astimezone().isoformat(timespec="seconds")
    title = opts.title or "Attention katas: " + ", ".join(k.id for k in katas)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.creating-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        student, instructor = tmp / "student", tmp / "instructor"
        entries = []
        langs = ["en", "zh"] if opts.lang == "both" else [opts.lang]
        recordings: dict[str, list[samples.RecordedTest]] = {}
        for kata in katas:
            say(f"{kata.id}: statement, skeleton, public samples")
            doc, _skipped, recorded = samples.build_samples(kata, opts.public_tests, opts.seed)
            recordings[kata.id] = recorded
            if opts.variants:  # every student gets a folder of their own variants instead
                n = len(doc["cases"])
            else:
                n = write_kata(kata, student / kata.id, opts.level, langs, doc)
            if n < opts.public_tests:
                opts.warnings.append(
                    f"{kata.id}: {n} public sample(s) instead of {opts.public_tests} "
                    f"(the grader has no more tests that can be shared)"
                )
            failing = [
                t.id
                for t in recorded
                if t.status not in ("pass", "skip") and t.tier in kata.required_tiers
            ]
            if failing:
                raise KataDefinitionError(
                    f"{kata.id}: the reference fails its own grader ({', '.join(failing[:5])})"
                )
            tests: dict[str, int] = {}
            for t in recorded:
                if t.status != "skip":
                    tests[t.tier] = tests.get(t.tier, 0) + 1
            entries.append(
                KataEntry(
                    id=kata.id,
                    title={"en": kata.title.en, "zh": kata.title.zh},
                    version=kata_version(kata),
                    hash=kata_hash(kata),
                    solution_file=kata.solution_file,
                    entry_points=list(kata.entry_points),
                    required_tiers=list(kata.required_tiers),
                    difficulty=kata.difficulty,
                    minutes=kata.minutes,
                    tests=tests,
                    public_samples=n,
                )
            )
            (instructor / "reference").mkdir(parents=True, exist_ok=True)
            shutil.copy2(reference_file(kata), instructor / "reference" / reference_file(kata).name)
            (instructor / "graders" / kata.id).mkdir(parents=True, exist_ok=True)
            shutil.copy2(kata.grader_path, instructor / "graders" / kata.id / kata.grader_path.name)
        grading = GradingConfig(
            tier_weights=dict(opts.tier_weights)
            if opts.tier_weights
            else GradingConfig().tier_weights,
            points={k.id: float(opts.points) for k in katas},
            due=due,
            late_penalty=opts.late_penalty,
            policy=opts.policy,
            allow_imports=list(opts.allow_imports),
            input_salt=secret_salt(),
        )
        if opts.timeout is not None:
            grading.timeout = opts.timeout
        if opts.call_timeout is not None:
            grading.call_timeout = opts.call_timeout
        manifest = Manifest(
            title=title,
            katas=entries,
            grading=grading,
            created=created,
            options={
                "level": opts.level,
                "lang": opts.lang,
                "public_tests": opts.public_tests,
                "seed": opts.seed,
            },
        )
        extra: list[str] = []
        if opts.variants:
            from attnkata.checker.sets.variant_sets import share_out

            extra = share_out(manifest, katas, students, opts, student, instructor, recordings, say)
        say("README and handout")
        (student / "README.md").write_text(student_readme(manifest), encoding="utf-8")
        if not opts.variants:
            (student / "handout.html").write_text(
                render_handout(
                    title, katas, lang=opts.lang, level=opts.level, due=due, created=created[:10]
                ),
                encoding="utf-8",
            )
        leaks = find_leaks(student, katas, extra)
        if leaks:
            raise KataDefinitionError(
                "the student folder would leak hidden material:\n  - " + "\n  - ".join(leaks[:10])
            )
        manifest.files = bundle_files(tmp)
        write_manifest(tmp, manifest)
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


# -- leak detection --------------------------------------------------------------------------
def _visible_text(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".html":
        # Highlighted code is split into spans: compare what a reader sees.
        text = html.unescape(re.sub(r"<[^>]+>", "", text))
    return text


def _solution_lines(source: str) -> set[str]:
    lines, inside = set(), False
    for line in source.splitlines():
        if BEGIN.match(line):
            inside = True
        elif END.match(line):
            inside = False
        elif inside:
            lines.add(line.strip())
    return lines


def _public_lines(kata: Kata) -> set[str]:
    """Lines that are public by design: the statements, skeleton and sample-test template."""
    from attnkata.checker.sets.samples import public_template

    texts = [kata.statement(lang) for lang in ("en", "zh")] + [public_template()]
    if kata.skeleton_path.is_file():
        texts.append(kata.skeleton_path.read_text(encoding="utf-8"))
    return {ln.strip() for t in texts for ln in t.splitlines()}


def find_leaks(
    student: Path, katas: list[Kata], extra: list[str] | None = None, min_length: int = 16
) -> list[str]:
    """What in `student` comes from hidden material: a line of a reference's solution regions
    or of a hidden grader (that is not also public), or an import of attnkata. `extra`: more
    hidden sources (variants' references) whose solution regions count as a reference's."""
    files = {
        p: _visible_text(p)
        for p in sorted(student.rglob("*"))
        if p.is_file() and p.suffix in (".py", ".md", ".html", ".json", ".txt")
    }
    leaks = []
    for kata in katas:
        public = _public_lines(kata)
        hidden = [reference_file(kata).read_text(encoding="utf-8"), *(extra or [])]
        secret = {("reference", ln) for text in hidden for ln in _solution_lines(text)}
        secret |= {
            ("grader", ln.strip())
            for ln in kata.grader_path.read_text(encoding="utf-8").splitlines()
        }
        secret = {(what, ln) for what, ln in secret if len(ln) >= min_length and ln not in public}
        for path, text in files.items():
            present = {ln.strip() for ln in text.splitlines()}
            for what, ln in sorted(secret):
                if ln in present:
                    leaks.append(
                        f"{path.relative_to(student)}: a line of the {kata.id} {what}: {ln[:80]!r}"
                    )
    for path, text in files.items():
        if re.search(r"^\s*(from|import)\s+attnkata\b", text, re.M):
            leaks.append(f"{path.relative_to(student)}: imports attnkata")
    return leaks


__all__ = ["CreateOptions", "create_set", "find_leaks", "student_file", "TIERS"]
