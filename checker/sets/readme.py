"""The student folder's README: what is in it, how to check, how to hand in (en and/or zh)."""

from __future__ import annotations

from attnkata.checker.messages import label, msg
from attnkata.checker.sets.manifest import Manifest

TABLE_COLUMNS = 5  # readme.table.0 .. readme.table.4


def _section(m: Manifest, lang: str) -> str:
    g = m.grading
    # Only the tiers these katas have tests in: a kata's points are split over its own tiers.
    present = {tier for k in m.katas for tier in k.tests} or set(g.tier_weights)
    used = {tier: w for tier, w in g.tier_weights.items() if w > 0 and tier in present}
    total_w = sum(used.values()) or 1.0
    weights = ", ".join(
        f"{label('readme.tier', tier, lang)} {100 * w / total_w:.0f}%" for tier, w in used.items()
    )
    points = {m.points(k) for k in m.kata_ids}
    lines = [
        msg("readme.intro", lang),
        "",
        *([msg("variant.readme", lang), ""] if m.variants else []),
        "| " + " | ".join(msg(f"readme.table.{i}", lang) for i in range(TABLE_COLUMNS)) + " |",
        "|---|---|---|---|---|",
    ]
    for k in m.katas:
        lines.append(
            f"| `{k.id}` | {k.title[lang]} | {k.difficulty} | {k.minutes} | `{k.id}/{k.solution_file}` |"
        )
    level = m.options.get("level", "scratch")
    lines += [
        "",
        f"### {msg('readme.write_h', lang)}",
        "",
        msg("readme.write", lang, file="<file>.py"),
        "",
        msg(f"readme.{level}", lang),
        "",
        f"### {msg('readme.check_h', lang)}",
        "",
        msg("readme.check", lang),
        "",
        "```sh",
    ]
    with_samples = [k.id for k in m.katas if k.public_samples]
    lines.append(f"python -m pytest -q{' ' * 8}# {msg('readme.every', lang)}")
    if with_samples:
        lines.append(
            f"python -m pytest -q {with_samples[0]}{' ' * max(1, 7 - len(with_samples[0]))}# {msg('readme.one', lang)}"
        )
    lines += [
        "```",
        "",
        msg("readme.check_note", lang),
        "",
        f"### {msg('readme.hand_h', lang)}",
        "",
        msg("readme.hand", lang),
        "",
        "```",
    ]
    lines.append("<your-id>/")
    lines += [f"    {k.solution_file}" for k in m.katas]
    lines += ["```", "", msg("readme.hand_note", lang)]
    if g.due:
        lines += ["", msg("readme.due", lang, due=g.due)]
    lines += [
        "",
        f"### {msg('readme.grading_h', lang)}",
        "",
        msg(
            "readme.grading",
            lang,
            points="/".join(f"{p:g}" for p in sorted(points)),
            weights=weights,
            timeout=g.timeout,
        ),
    ]
    return "\n".join(lines)


def student_readme(m: Manifest) -> str:
    lang = m.options.get("lang", "both")
    langs = ["en", "zh"] if lang == "both" else [lang]
    parts = [f"# {m.title}"]
    for lng in langs:
        parts.append(msg("readme.heading", lng) if len(langs) > 1 else "")
        parts.append(_section(m, lng))
    return "\n\n".join(p for p in parts if p) + "\n"
