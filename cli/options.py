"""Options shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from attnkata.checker.errors import UsageError
from attnkata.cli.console import default_lang

KataArg = Annotated[
    str,
    typer.Argument(
        metavar="KATA", help="Kata id, e.g. sdpa (see `kata list`).", show_default=False
    ),
]
FileArg = Annotated[
    Path | None,
    typer.Argument(
        metavar="[FILE]",
        help="Your solution (default: the workspace file).",
        show_default=False,
    ),
]
LangOption = Annotated[
    str | None,
    typer.Option(
        "--lang",
        help="Language of statements, hints and messages: en or zh (env KATA_LANG).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print only a JSON document on stdout.")]
SeedOption = Annotated[
    int | None,
    typer.Option(
        "--seed",
        min=0,
        help="Grade with the inputs of an earlier check (the seed its result shows); default: new secret ones.",
        show_default=False,
    ),
]
RecordOption = Annotated[
    bool | None,
    typer.Option(
        "--record/--no-record",
        help="Count this check in your history (default: only your workspace file, the one `kata start` made).",
        show_default=False,
    ),
]


def resolve_lang(lang: str | None) -> str:
    if lang is None:
        return default_lang()
    if lang not in ("en", "zh"):
        raise UsageError(f"unknown language {lang!r}", "use --lang en or --lang zh")
    return lang
