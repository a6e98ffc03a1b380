"""attnkata: an interview-prep trainer for hand-written attention.

Python API (for notebooks and scripts; everything is imported on first use, so `import
attnkata` stays cheap):

    attnkata.check("gqa", source=code)   # or path="gqa.py" -> Result (HTML in notebooks)
    attnkata.fix("gqa", source=code)     # or path=... -> FixReport: verified fixes (`kata fix`)
    attnkata.list_katas()                # the katas
    attnkata.show("gqa")                 # the statement (Markdown in notebooks)

In IPython / Jupyter: `%load_ext attnkata`, then `%%kata gqa` on a cell (see cli/notebook.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from attnkata.checker.api import Statement
    from attnkata.checker.catalog import Kata
    from attnkata.checker.models import FixReport, Result

from attnkata.checker.version import __version__

__all__ = ["__version__", "check", "fix", "list_katas", "load_ipython_extension", "show"]


def check(
    kata: str,
    source: str | None = None,
    path: str | Path | None = None,
    *,
    lang: str | None = None,
    timeout: float | None = None,
) -> Result:
    """Grade `source` or the file at `path` as the solution of `kata` (as `kata check` does)."""
    import sys

    from attnkata.checker import api

    result = api.check(kata, source, path, lang=lang, timeout=timeout, mode="notebook")
    if "IPython" in sys.modules:  # a notebook shows it as HTML
        from attnkata.cli.notebook import register_html

        register_html()
    return result


def fix(
    kata: str,
    source: str | None = None,
    path: str | Path | None = None,
    *,
    lang: str | None = None,
    timeout: float | None = None,
) -> FixReport:
    """The verified fixes of `source` or of the file at `path` (as `kata fix` shows them; the
    file is never changed). `.result` is the check they start from."""
    import sys
    from pathlib import Path

    from attnkata.checker import api, catalog
    from attnkata.checker.errors import UsageError

    if (source is None) == (path is None):
        raise UsageError("give either source=... or path=...")
    lang = lang if lang in ("en", "zh") else "en"
    if source is not None:
        report = api.fix_source(kata, source, lang=lang, timeout=timeout)
    else:
        report = api.fix(catalog.get_kata(kata), Path(path), lang=lang, timeout=timeout)
    if "IPython" in sys.modules:
        from attnkata.cli.notebook import register_html

        register_html()
    return report


def list_katas() -> list[Kata]:
    """The bundled katas, in teaching order. (Not `attnkata.katas`: that name is the package
    of kata folders.)"""
    from attnkata.checker import api

    return api.katas()


def show(kata: str, lang: str | None = None) -> Statement:
    from attnkata.checker import api

    return api.show(kata, lang)


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext attnkata`."""
    from attnkata.cli.notebook import load

    load(ipython)
