"""`kata set`: problem sets for a class (create a bundle, verify it, grade submissions).

A thin layer over `attnkata.checker.sets`; only `grade` and `create` import torch (lazily)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from attnkata.checker.errors import UsageError
from attnkata.cli.console import err, out, print_json

set_app = typer.Typer(
    help="Problem sets for a class: create a bundle for students, grade their submissions.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


@set_app.command("create")
def create(
    katas: Annotated[
        str,
        typer.Option(
            "--katas",
            help="Comma-separated kata ids, e.g. sdpa,mha (see `kata list`).",
            show_default=False,
        ),
    ],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Folder to create the set in.", show_default=False)
    ],
    level: Annotated[
        str,
        typer.Option(
            "--level",
            help="scratch: signatures and docstrings only; guided: the "
            "reference with its solution regions blanked.",
        ),
    ] = "scratch",
    lang: Annotated[str, typer.Option("--lang", help="Statements in en, zh or both.")] = "both",
    title: Annotated[
        str | None, typer.Option("--title", help="Title of the set.", show_default=False)
    ] = None,
    public_tests: Annotated[
        int, typer.Option("--public-tests", help="Public sample tests per kata.")
    ] = 3,
    weights: Annotated[
        str | None,
        typer.Option(
            "--weights",
            help="Tier weights, e.g. core=0.6,edge=0.3,efficient=0.1.",
            show_default=False,
        ),
    ] = None,
    points: Annotated[float, typer.Option("--points", help="Points per kata.")] = 10.0,
    due: Annotated[
        str | None,
        typer.Option(
            "--due",
            help="Deadline (ISO 8601, e.g. 2025-06-01T23:59); files modified later are late.",
            show_default=False,
        ),
    ] = None,
    late_penalty: Annotated[
        float, typer.Option("--late-penalty", help="Fraction of the score a late file loses.")
    ] = 0.0,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            help="Default seconds of candidate time per submission when grading (60).",
            show_default=False,
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the public samples' inputs.")] = 1,
    policy: Annotated[
        str,
        typer.Option(
            "--policy",
            help="What a static-policy finding (a file importing os, "
            "reaching torch._C, ...) costs: flag (reported only), zero, or "
            "penalty:<fraction> (e.g. penalty:0.2). The file is run either way.",
        ),
    ] = "flag",
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing problem set at --out.")
    ] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print only the manifest as JSON.")
    ] = False,
    variants: Annotated[
        bool,
        typer.Option(
            "--variants",
            help="Give every student on --roster a variant of each kata (its conventions: "
            "layout, mask polarity, names...), each checked before it is handed out.",
        ),
    ] = False,
    roster: Annotated[
        Path | None,
        typer.Option(
            "--roster",
            help="The class: one student id per line, or Canvas's gradebook CSV. A "
            "submission folder is named by the student id.",
            show_default=False,
        ),
    ] = None,
    variant_seed: Annotated[
        str | None,
        typer.Option(
            "--variant-seed",
            help="The secret the variants are drawn from (the same secret gives each student "
            "the same variant again); default: a fresh one, kept in instructor/manifest.json.",
            show_default=False,
        ),
    ] = None,
    variant_pool: Annotated[
        int,
        typer.Option("--variant-pool", help="Variants of each kata the class shares out."),
    ] = 12,
) -> None:
    """Create a problem set: DIR/student (hand it out), DIR/instructor (keep it)."""
    from attnkata.checker.sets.create import CreateOptions, create_set
    from attnkata.checker.sets.manifest import parse_weights

    if timeout is not None and timeout <= 0:
        raise UsageError("--timeout must be positive")
    opts = CreateOptions(
        katas=_split(katas),
        out=out_dir,
        level=level,
        lang=lang,
        title=title,
        public_tests=public_tests,
        tier_weights=parse_weights(weights) if weights else None,
        points=points,
        due=due,
        late_penalty=late_penalty,
        seed=seed,
        force=force,
        timeout=timeout,
        policy=policy,
        variants=variants,
        roster=roster,
        variant_seed=variant_seed,
        variant_pool=variant_pool,
    )
    t0 = time.perf_counter()
    with err.status("creating the problem set...") as status:
        manifest = create_set(opts, log=lambda m: status.update(m))
    if json_out:
        print_json(manifest.to_dict())
        return
    for w in opts.warnings:
        err.print(Text.assemble(("warning:", "yellow"), f" {w}"), highlight=False)
    table = Table(title=manifest.title)
    for col in ("kata", "file", "hidden tests", "public samples"):
        table.add_column(col)
    for k in manifest.katas:
        table.add_row(
            k.id,
            k.solution_file,
            ", ".join(f"{t} {n}" for t, n in k.tests.items()),
            str(k.public_samples),
        )
    out.print(table)
    out.print(f"[green]Created[/] {out_dir} in {time.perf_counter() - t0:.1f}s")
    if manifest.variants:
        distinct = {json.dumps(v, sort_keys=True) for v in manifest.variants.values()}
        out.print(
            f"  variants:  {len(manifest.variants)} students, {len(distinct)} distinct variants "
            f"(table: {out_dir / 'instructor' / 'variants.csv'})"
        )
        out.print(f"  hand out:  {out_dir / 'student'}/<student id>/  (each their own folder)")
    else:
        out.print(
            f"  hand out:  {out_dir / 'student'}  (handout: {out_dir / 'student' / 'handout.html'})"
        )
    out.print(f"  keep:      {out_dir / 'instructor'}")
    out.print(f"  grade:     kata set grade {out_dir} SUBMISSIONS")


@set_app.command("verify")
def verify(
    bundle: Annotated[Path, typer.Argument(help="The problem set folder.", show_default=False)],
) -> None:
    """Check a problem set against its manifest and the installed katas (exit 3 if they differ)."""
    from attnkata.checker.sets.manifest import verify_bundle

    manifest, warnings = verify_bundle(bundle)
    for w in warnings:
        err.print(Text.assemble(("warning:", "yellow"), f" {w}"), highlight=False)
    out.print(
        f"[green]OK[/] {manifest.title}: {', '.join(manifest.kata_ids)} ({len(manifest.files)} files match)"
    )


class _Bar:
    """Rich progress for grading. Refreshed from the grading loop (no refresh thread), so
    workers forked mid-run never inherit a thread holding the console's lock."""

    def __init__(self, enabled: bool) -> None:
        self.progress = Progress(
            TextColumn("grading"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("[red]{task.fields[failed]} not passing[/]"),
            TextColumn("[dim]{task.fields[last]}[/]"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=err,
            auto_refresh=False,
            transient=False,
            disable=not enabled,
        )
        self.task: Any = None
        self.last = ""
        self.next_refresh = 0.0

    def __enter__(self) -> _Bar:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.refresh()
        self.progress.stop()

    def __call__(self, c: dict[str, Any]) -> None:
        if self.task is None:
            self.task = self.progress.add_task("grading", total=c["total"], failed=0, last="")
        if c.get("last"):
            self.last = f"{c['last']}: {c['status']}"
        self.progress.update(self.task, completed=c["done"], failed=c["failed"], last=self.last)
        now = time.monotonic()
        if now >= self.next_refresh or c["done"] == c["total"]:
            self.progress.refresh()
            self.next_refresh = now + 0.1


@set_app.command("grade")
def grade(
    bundle: Annotated[
        Path,
        typer.Argument(help="The problem set folder (from `kata set create`).", show_default=False),
    ],
    submissions: Annotated[
        Path, typer.Argument(help="One folder per student with their files.", show_default=False)
    ],
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-j",
            help="Parallel grading processes (default: CPU cores).",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            help="Seconds of candidate time per submission (default: the set's, 60).",
            show_default=False,
        ),
    ] = None,
    call_timeout: Annotated[
        float | None,
        typer.Option(
            "--call-timeout",
            help="Seconds per call of candidate code (default 10, at most --timeout).",
            show_default=False,
        ),
    ] = None,
    memory_mb: Annotated[
        int | None,
        typer.Option(
            "--memory-mb", help="Memory limit of each candidate (MiB).", show_default=False
        ),
    ] = None,
    csv_path: Annotated[
        Path | None,
        typer.Option(
            "--csv", help="Gradebook CSV (default: OUT/gradebook.csv).", show_default=False
        ),
    ] = None,
    html_path: Annotated[
        Path | None,
        typer.Option("--html", help="Class report (default: OUT/report.html).", show_default=False),
    ] = None,
    json_path: Annotated[
        Path | None,
        typer.Option(
            "--json", help="Every result (default: OUT/results.json).", show_default=False
        ),
    ] = None,
    feedback: Annotated[
        str | None,
        typer.Option(
            "--feedback",
            help="`fixes`: put each failing file's verified fixes (`kata fix`) into its "
            "student's feedback (off by default: a graded set shows no fix). Any other value: "
            "the feedback folder, as --feedback-dir.",
            show_default=False,
        ),
    ] = None,
    feedback_dir: Annotated[
        Path | None,
        typer.Option(
            "--feedback-dir",
            help="Folder for per-student Markdown feedback (default: OUT/feedback).",
            show_default=False,
        ),
    ] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Results folder, with the resume journal (default: "
            "BUNDLE/instructor/results/<submissions folder name>).",
            show_default=False,
        ),
    ] = None,
    deadline: Annotated[
        str | None,
        typer.Option(
            "--deadline", help="Override the set's deadline (ISO 8601).", show_default=False
        ),
    ] = None,
    late_penalty: Annotated[
        float | None,
        typer.Option(
            "--late-penalty", help="Override the set's late penalty (0-1).", show_default=False
        ),
    ] = None,
    lang: Annotated[
        str | None,
        typer.Option(
            "--lang",
            help="Language of diagnoses, feedback and report: en or zh.",
            show_default=False,
        ),
    ] = None,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Regrade everything (ignore earlier results).")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or table.")] = False,
    canvas: Annotated[
        Path | None,
        typer.Option(
            "--canvas",
            help="A Canvas gradebook export (CSV): also write a "
            "Canvas import file with the set's totals.",
            show_default=False,
        ),
    ] = None,
    canvas_out: Annotated[
        Path | None,
        typer.Option(
            "--canvas-out",
            help="The Canvas import file (default: OUT/canvas-import.csv).",
            show_default=False,
        ),
    ] = None,
    dask: Annotated[
        str | None,
        typer.Option(
            "--dask",
            help="Grade on a Dask cluster: its scheduler address "
            "(tcp://host:8786), or local[:N] for N local workers.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Grade every student folder in SUBMISSIONS; resumes an interrupted run.

    Exit 0 once every file is graded (whatever the students scored), 2 on a usage error, 3 when
    the bundle does not match its manifest or the installed katas."""
    from attnkata.checker.sets.grade import GradeOptions, grade_set
    from attnkata.checker.sets.report import mistake_histogram, mistake_sentence, write_all

    fixes = feedback == "fixes"
    if feedback is not None and not fixes:
        if feedback_dir is not None:
            raise UsageError("--feedback FOLDER and --feedback-dir FOLDER: give the folder once")
        feedback_dir = Path(feedback)  # the folder, as older scripts pass it
    if canvas_out is not None and canvas is None:
        raise UsageError(
            "--canvas-out needs --canvas EXPORT.csv (the gradebook exported from Canvas)"
        )
    if canvas is not None:
        from attnkata.checker.sets.canvas import read_export

        read_export(canvas)  # a bad export is a usage error before, not after, grading
    if dask is not None:
        from attnkata.checker.sets.cluster import check_address

        check_address(dask)
    opts = GradeOptions(
        jobs=jobs,
        timeout=timeout,
        call_timeout=call_timeout,
        memory_mb=memory_mb,
        lang=lang,
        deadline=deadline,
        late_penalty=late_penalty,
        out=out_dir,
        fresh=fresh,
        dask=dask,
        fixes=fixes,
    )
    try:
        with _Bar(enabled=not quiet) as bar:
            results = grade_set(bundle, submissions, opts, progress=bar)
    except KeyboardInterrupt:
        err.print(
            "[yellow]interrupted[/]: finished results are saved; run the same command again to resume"
        )
        raise typer.Exit(130) from None
    paths = write_all(
        results,
        csv_path=csv_path,
        json_path=json_path,
        html_path=html_path,
        feedback_dir=feedback_dir,
    )
    if canvas is not None:
        from attnkata.checker.sets.canvas import build_import, canvas_warnings, write_import

        imp = build_import(results, canvas)
        paths["canvas"] = write_import(imp, canvas_out or results.out / "canvas-import.csv")
        results.warnings += canvas_warnings(imp)
    for w in results.warnings:
        err.print(Text.assemble(("warning:", "yellow"), f" {w}"), highlight=False)
    s = results.stats
    if not quiet:
        table = Table(title=results.manifest.title)
        table.add_column("student")
        for k in results.manifest.kata_ids:
            table.add_column(k, justify="right")
        table.add_column("total", justify="right")
        style = {
            "pass": "green",
            "fail": "red",
            "error": "red",
            "timeout": "yellow",
            "missing": "dim",
        }
        for st in results.students:
            cells = [
                f"[{style.get(results.entry(st, k).status, 'red')}]{results.entry(st, k).score:g}[/]"
                for k in results.manifest.kata_ids
            ]
            table.add_row(st, *cells, f"{results.total(st):g}/{results.manifest.max_points:g}")
        out.print(table)
        for row in mistake_histogram(results)[:5]:
            out.print("  " + mistake_sentence(row, results.lang), markup=False, highlight=False)
    where = f"the Dask cluster {s['dask']}" if s.get("dask") else f"{s['jobs']} worker(s)"
    out.print(
        f"graded {s['graded']} file(s) in {s['seconds']:.1f}s on {where}; "
        f"{s['reused']} reused from an earlier run; {s['missing']} missing"
    )
    for name in ("csv", "json", "html", "feedback", "canvas"):
        if name in paths:
            out.print(f"  {name:<9}{paths[name]}", markup=False, highlight=False)


def _tiers_option(text: str | None) -> list[str] | None:
    return None if text is None else _split(text)


@set_app.command("autograde")
def autograde(
    bundle: Annotated[Path, typer.Argument(help="The problem set folder.", show_default=False)],
    submission: Annotated[
        Path, typer.Argument(help="One student's folder (one file per kata).", show_default=False)
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="gradescope, prairielearn, github-classroom or classroom50.",
            show_default=False,
        ),
    ],
    out_file: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Write the result JSON here (default: stdout).", show_default=False
        ),
    ] = None,
    github_output: Annotated[
        bool,
        typer.Option(
            "--github-output",
            help="Print result=<base64> for $GITHUB_OUTPUT (GitHub Classroom's reporter).",
        ),
    ] = False,
    kata_ids: Annotated[
        str | None,
        typer.Option(
            "--kata",
            help="Grade only these katas of the set (comma-separated).",
            show_default=False,
        ),
    ] = None,
    hidden: Annotated[
        str | None,
        typer.Option(
            "--hidden-tiers",
            help="Tiers students see only once grades are "
            "published (Gradescope; default: tiers a kata does not require).",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            help="Seconds of candidate time per file (default: the set's).",
            show_default=False,
        ),
    ] = None,
    lang: Annotated[
        str | None,
        typer.Option("--lang", help="Language of the feedback: en or zh.", show_default=False),
    ] = None,
    student: Annotated[
        str | None,
        typer.Option(
            "--student",
            help="Grade it as this roster id, in that student's variants (default: the "
            "folder's name when it is on the roster).",
            show_default=False,
        ),
    ] = None,
    student_from: Annotated[
        Path | None,
        typer.Option(
            "--student-from",
            help="Gradescope's submission_metadata.json (the student) or PrairieLearn's "
            "data.json (the variants its question params drew).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Grade one submission and write the platform's result file (exit 0 whatever it scored)."""
    from attnkata.checker.sets.grade import GradeOptions
    from attnkata.checker.sets.platforms import FORMATS, github_output_line, write_result
    from attnkata.checker.sets.platforms import autograde as run

    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}", f"use one of: {', '.join(FORMATS)}")
    if github_output and fmt != "github-classroom":
        raise UsageError("--github-output goes with --format github-classroom")
    opts = GradeOptions(timeout=timeout, lang=lang, katas=_split(kata_ids) if kata_ids else None)
    payload = run(
        bundle,
        submission,
        fmt,
        opts=opts,
        hidden_tiers=_tiers_option(hidden),
        student=student,
        student_from=student_from,
    )
    if out_file is not None:
        write_result(payload, out_file)
    if github_output:
        print(github_output_line(payload), flush=True)
    elif out_file is None:
        print_json(payload)


@set_app.command("export")
def export(
    bundle: Annotated[Path, typer.Argument(help="The problem set folder.", show_default=False)],
    target: Annotated[
        str,
        typer.Option(
            "--to", help="gradescope, prairielearn or github-classroom.", show_default=False
        ),
    ],
    out_path: Annotated[
        Path,
        typer.Option(
            "--out",
            help="gradescope: the zip (or a folder for autograder.zip); "
            "prairielearn: a new folder; github-classroom: the template repository.",
            show_default=False,
        ),
    ],
    wheel: Annotated[
        Path | None,
        typer.Option(
            "--wheel",
            help="Ship this attnkata wheel (default: the wheel of "
            "this attnkata, built at export time).",
            show_default=False,
        ),
    ] = None,
    from_index: Annotated[
        bool,
        typer.Option(
            "--from-index",
            help="Carry no wheel: the autograder installs "
            "attnkata at this version from PyPI (or --index-url).",
        ),
    ] = False,
    index_url: Annotated[
        str | None,
        typer.Option(
            "--index-url",
            help="The package index that has this attnkata (implies --from-index).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Package the set as a platform's autograder (see the README's instructors section)."""
    from attnkata.checker.messages import msg
    from attnkata.checker.sets.export import export_set

    with err.status(msg("export.building", "en")):
        written, notes = export_set(
            bundle, target, out_path, wheel, from_index=from_index, index_url=index_url
        )
    for note in notes:
        err.print(Text.assemble(("note:", "cyan"), f" {note}"), highlight=False)
    out.print(f"[green]Exported[/] {bundle} for {target}: {written}", highlight=False)


@set_app.command("similarity")
def similarity(
    submissions: Annotated[
        Path, typer.Argument(help="One folder per student with their files.", show_default=False)
    ],
    json_out: Annotated[
        bool,
        typer.Option(
            "--json", help="Print every pair as JSON: [{a, b, kata, similarity, flagged}]."
        ),
    ] = False,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            help="Flag pairs at least this similar (0-1; "
            "default 0.8, calibrated on independent solutions).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Find submissions of the same kata that are one program up to renaming, reordering and formatting."""
    from attnkata.checker.sets.similarity import DEFAULT_THRESHOLD, scan

    limit = DEFAULT_THRESHOLD if threshold is None else threshold
    if not 0 < limit <= 1:
        raise UsageError("--threshold must be in (0, 1]")
    pairs, _paths = scan(submissions, limit)
    if json_out:
        print_json([p.to_dict() for p in pairs])
        return
    flagged = [p for p in pairs if p.flagged]
    for p in flagged:
        out.print(f"{p.similarity:>5.0%}  {p.kata}: {p.a} <-> {p.b}", markup=False, highlight=False)
    out.print(
        f"{len(flagged)} of {len(pairs)} pair(s) at or above {limit:g}",
        markup=False,
        highlight=False,
    )


@set_app.command("solution")
def solution(
    bundle: Annotated[Path, typer.Argument(help="The problem set's folder.", show_default=False)],
    student: Annotated[str, typer.Argument(help="A student id of its roster.", show_default=False)],
    kata: Annotated[str, typer.Argument(help="One of its katas.", show_default=False)],
    json_out: Annotated[
        bool, typer.Option("--json", help="The variant and its reference as JSON.")
    ] = False,
) -> None:
    """Print the reference solution of STUDENT's variant of KATA (instructors only)."""
    from attnkata.checker.sets.variant_sets import student_reference

    variant, source = student_reference(bundle, student, kata)
    if json_out:
        print_json({"student": student, "kata": kata, "variant": variant, "reference": source})
        return
    from rich.syntax import Syntax

    out.print(Syntax(source, "python", line_numbers=True, theme="ansi_dark", word_wrap=True))


def register(app: typer.Typer) -> None:
    app.add_typer(set_app, name="set")
