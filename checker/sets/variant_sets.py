"""A problem set handed out in per-student variants (`kata set create --variants`).

    DIR/student/<id>/               one folder per student on the roster (hand each their own)
        README.md, handout.html     as the set's, with the student's own statements
        <kata>/statement*.md        the statement in the student's conventions (en and zh)
        <kata>/<file>.py            the skeleton with the student's names and signature
        <kata>/test_public_*.py + public_*.json   samples in the student's conventions
    DIR/instructor/variants.csv     who got which variant (never in the student bundle)
    DIR/instructor/variants/<kata>/<variant>.py   each variant's reference (`kata set solution`)

Each variant handed out has passed its checks first (checker/sets/variant_check.py); the
manifest records every student's variant and the secret they were drawn from.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attnkata.checker import variants as vs
from attnkata.checker.catalog import Kata
from attnkata.checker.errors import KataDefinitionError
from attnkata.checker.sets.manifest import Manifest


def share_out(
    manifest: Manifest,
    katas: list[Kata],
    students: list[str],
    opts: Any,
    student_dir: Path,
    instructor_dir: Path,
    recordings: dict[str, list[Any]],
    say: Callable[[str], None],
) -> list[str]:
    """Draw, check and write every student's variants; fills `manifest.variants` and
    `manifest.variant_secret`. Returns the variants' reference sources (hidden material the
    leak check must not find in the student folder)."""
    from attnkata.checker.sets import roster, samples
    from attnkata.checker.sets.create import write_kata
    from attnkata.checker.sets.handout import render_handout
    from attnkata.checker.sets.readme import student_readme
    from attnkata.checker.sets.variant_check import checked
    from attnkata.checker.variant_text import reference_source

    secret = opts.variant_seed or roster.new_secret()
    pool, refused = roster.pools(
        [k for k in katas if k.variants],
        secret,
        opts.variant_pool,
        lambda v: checked(v).problems,
        say,
    )
    opts.warnings += [f"variant refused: {r}" for r in refused]
    for kata in katas:
        if kata.variants and not pool.get(kata.id):
            raise KataDefinitionError(f"{kata.id}: none of its variants passed its checks")
    manifest.variants = roster.assign(students, katas, secret, pool)
    manifest.variant_secret = secret
    manifest.options["variants"] = {
        "roster": Path(opts.roster).name,
        "students": len(students),
        "pools": pool,
        "refused": len(refused),
    }
    langs = ["en", "zh"] if opts.lang == "both" else [opts.lang]
    docs: dict[tuple[str, str], dict[str, Any]] = {}
    sources: dict[tuple[str, str], str] = {}
    for kata in katas:
        for variant in pool.get(kata.id, []) or [vs.complete(kata.variants, {})]:
            kv = kata.with_variant(variant)
            say(f"{kata.id}: public samples of variant {kv.variant_key}")
            docs[(kata.id, kv.variant_key)] = samples.build_samples(
                kv, opts.public_tests, opts.seed, recorded=recordings[kata.id]
            )[0]
            sources[(kata.id, kv.variant_key)] = reference_source(kv)
    for student in students:
        say(f"handout of {student}")
        mine = [k.with_variant(manifest.variants[student][k.id]) for k in katas]
        folder = student_dir / student
        for kv in mine:
            write_kata(kv, folder / kv.id, opts.level, langs, docs[(kv.id, kv.variant_key)])
        (folder / "README.md").write_text(student_readme(manifest), encoding="utf-8")
        (folder / "handout.html").write_text(
            render_handout(
                f"{manifest.title} — {student}",
                mine,
                lang=opts.lang,
                level=opts.level,
                due=manifest.grading.due,
                created=manifest.created[:10],
            ),
            encoding="utf-8",
        )
    (instructor_dir / "variants.csv").write_text(table(manifest, katas), encoding="utf-8")
    for (kata_id, key), text in sources.items():
        path = instructor_dir / "variants" / kata_id / f"{key}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(sources.values())


def table(manifest: Manifest, katas: list[Kata]) -> str:
    """The variant table: one row per student and kata, one column per parameter."""
    params = sorted({p.name for k in katas for p in k.variants})
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["student", "kata", "variant", *params])
    by_id = {k.id: k for k in katas}
    for student, per in manifest.variants.items():
        for kata_id, variant in per.items():
            key = vs.key(by_id[kata_id].variants, variant)
            w.writerow([student, kata_id, key, *(variant.get(p, "") for p in params)])
    return buf.getvalue()


def student_reference(bundle: Path, student: str, kata_id: str) -> tuple[dict[str, str], str]:
    """(the student's variant of `kata_id`, that variant's reference without its solution
    markers): `kata set solution`. Unknown students and katas get the closest names."""
    from attnkata.checker.catalog import suggest
    from attnkata.checker.errors import UsageError
    from attnkata.checker.sets.manifest import load_set_kata, read_manifest
    from attnkata.checker.skeleton import strip_markers
    from attnkata.checker.variant_text import reference_source

    manifest = read_manifest(Path(bundle))
    if kata_id not in manifest.kata_ids:
        close = suggest(kata_id, manifest.kata_ids)
        raise UsageError(
            f"the set has no kata {kata_id!r}",
            f"did you mean {', '.join(close)}?"
            if close
            else f"its katas: {', '.join(manifest.kata_ids)}",
        )
    if manifest.variants and student not in manifest.variants:
        close = suggest(student, sorted(manifest.variants))
        raise UsageError(
            f"{student!r} is not on the set's roster",
            f"did you mean {', '.join(close[:3])}?" if close else "see instructor/variants.csv",
        )
    variant = manifest.variant_of(student, kata_id) or {}
    kata = load_set_kata(kata_id).with_variant(variant)
    return kata.variant_values, strip_markers(reference_source(kata))
