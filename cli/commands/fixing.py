"""`kata fix`: a verified repair of your own file for each diagnosed mistake (checker/fix/)."""

from __future__ import annotations

from typing import Annotated

import typer

from attnkata.checker import catalog, workspace
from attnkata.checker.errors import UsageError
from attnkata.checker.messages import msg
from attnkata.cli.console import err, out, print_json
from attnkata.cli.options import FileArg, JsonOption, KataArg, LangOption, resolve_lang


def fix(
    kata: KataArg,
    file: FileArg = None,
    json_out: JsonOption = False,
    write: Annotated[
        bool,
        typer.Option(
            "--write", help="Apply the verified fixes to FILE (its previous version is kept)."
        ),
    ] = False,
    undo: Annotated[
        bool,
        typer.Option("--undo", help="Put back the version the last `kata fix --write` kept."),
    ] = False,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", help="Seconds per call of your code (as `kata check`)."),
    ] = None,
    lang: LangOption = None,
    debug_search: Annotated[
        bool, typer.Option("--debug-search", hidden=True, help="Print every candidate tried.")
    ] = False,
) -> None:
    """Find, for each mistake the diagnosis names, the smallest edit of FILE that removes it,
    verified by grading the edited file in the sandbox. Exit codes as `kata check` (of the file
    as it is afterwards): 0 passes, 1 fails."""
    from attnkata.checker import api
    from attnkata.checker.fix import files
    from attnkata.checker.mock.session import ACTIVE, blocking_session

    lang = resolve_lang(lang)
    k = catalog.get_kata(kata)
    path = file if file is not None else workspace.solution_path(k)
    if write and undo:
        raise UsageError(msg("fix.write_undo", lang))
    if (mock := blocking_session(k.id)) is not None and mock.state == ACTIVE:
        raise UsageError(
            msg("fix.in_mock", lang, kata=k.id, id=mock.id),
            msg("fix.in_mock_hint", lang, kata=k.id),
        )
    shown = "" if file is None else f" {file}"
    if undo:
        try:
            done = files.undo(k.id, path)
        except FileNotFoundError as exc:
            raise UsageError(msg("fix.backup_missing", lang, backup=str(exc))) from None
        if done is None:
            raise UsageError(msg("fix.nothing_to_undo", lang, file=path))
        out.print(
            msg("fix.undone", lang, file=path, backup=done.restored_from, kept=done.kept),
            markup=False,
            highlight=False,
        )
        return
    try:
        import libcst  # noqa: F401
    except ImportError:
        from attnkata.checker.errors import KataDefinitionError

        raise KataDefinitionError(
            msg("fix.needs_libcst", lang), msg("fix.needs_libcst_hint", lang)
        ) from None
    debug: list[str] | None = [] if debug_search else None
    report = api.fix(k, path, timeout=timeout, lang=lang, debug=debug)
    result = report.result
    assert result is not None
    if write and report.fixes and report.fixed_source is not None:
        try:
            kept = files.write(k.id, path, report.fixed_source, result.source_sha256)
        except files.Changed:
            raise UsageError(msg("fix.changed", lang, file=path)) from None
        report.written, report.backup = str(path), str(kept)
    _record_rungs(k.id, report)
    if json_out:
        print_json(report.to_dict())
    else:
        from attnkata.cli.render import render_fix_report

        render_fix_report(out, report, k.id, shown)
        for line in debug or []:
            err.print(line, markup=False, highlight=False)
    if result.passed:
        raise typer.Exit(0)
    now_passes = bool(report.written) and report.fixed_status == "pass"
    raise typer.Exit(0 if now_passes else 1)


def _record_rungs(kata: str, report: object) -> None:
    """A shown fix is the ladder's last rung for its mistake (`kata history`, `kata stats`)."""
    from attnkata.checker.store import History

    fixes = getattr(report, "fixes", [])
    if not fixes:
        return
    with History() as h:
        for f in fixes:
            h.record_event(kata, "hint", {"id": f"rung:{f.mistake}:3", "via": "fix"})


def register(app: typer.Typer) -> None:
    app.command("fix")(fix)
