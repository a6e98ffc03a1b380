"""Who gets which variant: the class roster and the draw.

`kata set create --variants --roster FILE [--variant-seed SECRET]`. FILE is one student id per
line (`#` starts a comment), or the gradebook CSV that Canvas exports (the id is the SIS Login
ID, else Canvas's ID): each student's submission folder is named by that id. For each kata the
secret orders the variants (every one but the standard kata's), and the class's pool is the
first `pool` of them that pass their checks (checker/sets/variant_check.py); each student
then gets the pool's variant that the secret and their id pick. So the same secret gives the
same student the same variant again, whoever else is on the roster. Stdlib only.
"""

from __future__ import annotations

import csv
import io
import re
import secrets
from collections.abc import Callable
from pathlib import Path

from attnkata.checker import variants as vs
from attnkata.checker.catalog import Kata
from attnkata.checker.errors import UsageError

SAFE_ID = re.compile(r"^[A-Za-z0-9@._+-]{1,128}$")


def read_roster(path: Path) -> list[str]:
    """The student ids of a roster file, in its order (duplicates are an error)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the roster {path}: {exc}") from None
    first = text.splitlines()[0] if text.strip() else ""
    if "SIS Login ID" in first or ("Student" in first and "," in first):
        ids = _canvas_ids(text, path)
    else:
        ids = [ln.split("#", 1)[0].strip() for ln in text.splitlines()]
        ids = [i for i in ids if i]
    if not ids:
        raise UsageError(f"the roster {path} names no student", "one student id per line")
    bad = [i for i in ids if not SAFE_ID.match(i) or i.startswith(".")]
    if bad:
        raise UsageError(
            f"roster {path}: {bad[0]!r} cannot name a submission folder",
            "use ids of letters, digits and @._+- (a student's folder is named by their id)",
        )
    seen: set[str] = set()
    twice = [i for i in ids if i in seen or seen.add(i)]  # type: ignore[func-returns-value]
    if twice:
        raise UsageError(f"roster {path}: {twice[0]!r} is listed twice")
    return ids


def _canvas_ids(text: str, path: Path) -> list[str]:
    rows = list(csv.DictReader(io.StringIO(text)))
    ids = []
    for row in rows:
        name = (row.get("Student") or "").strip()
        if not name or "Points Possible" in name or name == "Student, Test":
            continue
        sid = (row.get("SIS Login ID") or "").strip() or (row.get("ID") or "").strip()
        if not sid:
            raise UsageError(f"roster {path}: {name!r} has no SIS Login ID or ID")
        ids.append(sid)
    return ids


def new_secret() -> str:
    return secrets.token_hex(16)


def pools(
    katas: list[Kata],
    secret: str,
    size: int,
    accept: Callable[[Kata], list[str]],
    log: Callable[[str], None] = lambda _m: None,
) -> tuple[dict[str, list[dict[str, str]]], list[str]]:
    """Each kata's pool: the first `size` variants, in the secret's order, that `accept`
    finds no problem with (it returns the problems). Returns ({kata: pool}, refusals)."""
    out: dict[str, list[dict[str, str]]] = {}
    refused: list[str] = []
    for kata in katas:
        pool: list[dict[str, str]] = []
        order = vs.ordering(kata.variants, secret, kata.id)
        for variant in order:
            if len(pool) >= size:
                break
            v = kata.with_variant(variant)
            log(
                f"{kata.id}: checking variant {v.variant_key} ({len(pool) + 1}/{min(size, len(order))})"
            )
            problems = accept(v)
            if problems:
                refused.append(f"{kata.id} {v.variant_key}: " + "; ".join(problems[:3]))
                continue
            pool.append(vs.complete(kata.variants, variant))
        out[kata.id] = pool
    return out, refused


def assign(
    students: list[str], katas: list[Kata], secret: str, pool: dict[str, list[dict[str, str]]]
) -> dict[str, dict[str, dict[str, str]]]:
    """{student: {kata: {parameter: value}}}; a kata without variants gets the standard kata."""
    return {
        s: {
            k.id: vs.pick(pool[k.id], secret, k.id, s)
            if pool.get(k.id)
            else vs.complete(k.variants, {})
            for k in katas
        }
        for s in students
    }
