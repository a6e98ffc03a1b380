"""Derive a kata's skeleton from its reference (nbgrader-style solution markers).

Inside a function, the lines between `# BEGIN SOLUTION` and `# END SOLUTION` become
`raise NotImplementedError`; at module level the region is dropped. Everything outside the
markers (imports, signatures, docstrings) is the contract and is kept verbatim, so the
skeleton and the reference cannot drift: a test regenerates every skeleton and compares.
"""

from __future__ import annotations

import re
from pathlib import Path

BEGIN = re.compile(r"^(\s*)# BEGIN SOLUTION\s*$")
END = re.compile(r"^\s*# END SOLUTION\s*$")
SKELETON_BODY = 'raise NotImplementedError("write this part")'


class MarkerError(ValueError):
    pass


def strip_solution(
    source: str, *, keep_markers: bool = False, filename: str = "<reference>"
) -> str:
    """Return `source` with every solution region blanked (see module docstring)."""
    out: list[str] = []
    inside: str | None = None
    for lineno, line in enumerate(source.splitlines(), start=1):
        begin = BEGIN.match(line)
        if begin:
            if inside is not None:
                raise MarkerError(f"{filename}:{lineno}: nested BEGIN SOLUTION")
            inside = begin.group(1)
            if keep_markers:
                out.append(line)
            if inside:
                out.append(f"{inside}{SKELETON_BODY}")
            continue
        if END.match(line):
            if inside is None:
                raise MarkerError(f"{filename}:{lineno}: END SOLUTION without BEGIN")
            if keep_markers:
                out.append(line)
            inside = None
            continue
        if inside is None:
            out.append(line)
    if inside is not None:
        raise MarkerError(f"{filename}: BEGIN SOLUTION is never closed")
    text = "\n".join(out).rstrip() + "\n"
    return re.sub(r"\n{3,}(?=\S)", "\n\n\n", text)


def strip_markers(source: str) -> str:
    """The reference as shown by `kata solution`: the marker comments removed, code kept."""
    return "".join(
        line
        for line in source.splitlines(keepends=True)
        if not BEGIN.match(line) and not END.match(line)
    )


def reference_path(kata_id: str) -> Path:
    import attnkata.reference

    return Path(attnkata.reference.__file__).parent / f"{kata_id.replace('-', '_')}.py"


def skeleton_for(kata_id: str) -> str:
    path = reference_path(kata_id)
    return strip_solution(path.read_text(encoding="utf-8"), filename=str(path))


def main() -> None:
    """`python -m attnkata.checker.skeleton`: rewrite every kata's skeleton.py from its reference."""
    from attnkata.checker.catalog import all_katas

    for kata in all_katas().values():
        text = skeleton_for(kata.id)
        if (
            not kata.skeleton_path.exists()
            or kata.skeleton_path.read_text(encoding="utf-8") != text
        ):
            kata.skeleton_path.write_text(text, encoding="utf-8")
            print(f"wrote {kata.skeleton_path}")


if __name__ == "__main__":
    main()
