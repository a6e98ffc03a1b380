"""attnkata: an interview-prep trainer for hand-written attention.

Python API (for notebooks and scripts; everything is imported on first use, so `import
attnkata` stays cheap):

    attnkata.check("gqa", source=code)   # or path="gqa.py" -> Result (HTML in notebooks)
    attnkata.katas()                     # the katas
    attnkata.show("gqa")                 # the statement (Markdown in notebooks)

In IPython / Jupyter: `%load_ext attnkata`, then `%%kata gqa` on a cell (see cli/notebook.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from attnkata.checker.api import Statement
    from attnkata.checker.catalog import Kata
    from attnkata.checker.models import Result

__version__ = "0.1.0"


def check(kata: str, source: str | None = None, path: str | Path | None = None, *, lang: str | None = None,
          timeout: float | None = None) -> Result:
    """Grade `source` or the file at `path` as the solution of `kata` (as `kata check` does)."""
    from attnkata.checker import api

    return api.check(kata, source, path, lang=lang, timeout=timeout, mode="notebook")


def katas() -> list[Kata]:
    from attnkata.checker import api

    return api.katas()


def show(kata: str, lang: str | None = None) -> Statement:
    from attnkata.checker import api

    return api.show(kata, lang)


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext attnkata`."""
    from attnkata.cli.notebook import load

    load(ipython)
