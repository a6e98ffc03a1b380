"""IPython / Jupyter front end: `%load_ext attnkata` registers

    %%kata KATA [--lang zh] [--timeout S] [--record] [--variant SPEC] [--fix]
                                            grade the cell as the solution of KATA, then run it
                                            in the kernel too (unless it could not even load);
                                            --record counts it in your history (a cell is not
                                            your practice file unless you say so); --variant
                                            grades it in a variant's conventions; --fix also
                                            shows each diagnosed mistake's verified fix on the
                                            cell's code (`kata fix`, standard kata only;
                                            nothing is recorded)
    %kata show|hint|start|list|fix [KATA]    the CLI's commands, inside the notebook
                                            (`%kata start KATA --variant random`: the cell it
                                            writes grades in that variant)

A thin layer like the CLI: grading is `checker.api.check`; results render as HTML in notebooks
(`checker/html.py`, registered with IPython's display formatter: the result model knows no
renderer) and through the terminal renderer in terminal IPython."""

from __future__ import annotations

import shlex
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class

from attnkata.checker.errors import KataError
from attnkata.checker.messages import msg

# A cell whose file never loaded in the sandbox (syntax error, hang or crash at import) is
# not run in the kernel either: a `while True` at the top of a cell would hang the kernel.
_NOT_LOADED = {"syntax-error", "source-too-complex", "source-too-large", "missing-entry-point"}
_LINE_COMMANDS = ("show", "hint", "start", "list", "fix")


def _options(words: list[str]) -> tuple[list[str], dict[str, Any]]:
    rest, opts = [], {}
    it = iter(words)
    for w in it:
        if w in ("--record", "--no-record"):
            opts["record"] = w == "--record"
        elif w == "--fix":
            opts["fix"] = True
        elif w in ("--lang", "--timeout", "--variant"):
            value = next(it, None)
            if value is None:
                raise KataError(f"{w} needs a value")
            opts[w[2:]] = value
        else:
            rest.append(w)
    if "timeout" in opts:
        try:
            opts["timeout"] = float(opts["timeout"])
        except ValueError:
            raise KataError("--timeout must be a number of seconds") from None
    return rest, opts


def _in_notebook(shell: Any) -> bool:
    return type(shell).__name__ == "ZMQInteractiveShell"


@magics_class
class KataMagics(Magics):
    @line_cell_magic
    def kata(self, line: str, cell: str | None = None) -> Any:
        try:
            return self._grade(line, cell) if cell is not None else self._command(line)
        except KataError as exc:
            print(f"error: {exc.message}" + (f"\n  {exc.hint}" if exc.hint else ""))
            return None

    def _grade(self, line: str, cell: str) -> None:
        from IPython.display import display

        from attnkata.checker import api

        words, opts = _options(shlex.split(line))
        if len(words) != 1:
            raise KataError(
                "usage: %%kata KATA [--lang en|zh] [--timeout SECONDS] [--record] [--variant SPEC] [--fix]"
            )
        report = None
        if opts.get("fix") and opts.get("variant"):
            raise KataError("--fix grades the standard kata: leave out --variant")
        if opts.get("fix"):
            report = api.fix_source(
                words[0], cell, lang=opts.get("lang"), timeout=opts.get("timeout")
            )
            result = report.result
            assert result is not None
        else:
            result = api.check(
                words[0],
                source=cell,
                lang=opts.get("lang"),
                timeout=opts.get("timeout"),
                record=opts.get("record", False),
                mode="notebook",
                variant=opts.get("variant"),
            )
        if _in_notebook(self.shell):
            display(result)
            if report is not None and not result.passed:
                display(report)
        else:
            from attnkata.cli.console import out
            from attnkata.cli.render import render_fix_report, render_result

            render_result(out, result, cell)
            if report is not None and not result.passed:
                render_fix_report(out, report, words[0])
        loaded = bool(result.tests) and not any(d.id in _NOT_LOADED for d in result.diagnostics)
        if loaded:
            self.shell.run_cell(cell, store_history=False)
        else:
            print(msg("notebook.not_run", result.lang))
        return None

    def _command(self, line: str) -> None:
        words, opts = _options(shlex.split(line))
        if not words or words[0] not in _LINE_COMMANDS:
            raise KataError(
                f"usage: %kata {{{'|'.join(_LINE_COMMANDS)}}} [KATA]  (grade a cell with %%kata KATA)"
            )
        if words[0] == "start":
            from attnkata.checker import catalog
            from attnkata.checker.store import History

            if len(words) != 2:
                raise KataError("usage: %kata start KATA [--variant random|SPEC]")
            k = catalog.get_kata(words[1])
            flag = ""
            if opts.get("variant") is not None:
                from attnkata.checker import variants

                k = k.with_variant(variants.parse_spec(k.variants, opts["variant"], k.id))
                flag = f" --variant {k.variant_key}" if k.variant else ""
            with History() as h:
                h.record_event(
                    k.id,
                    "start",
                    {"file": "notebook", **({"variant": k.variant_values} if k.variant else {})},
                )
            lang = str(opts.get("lang") or "en")
            cell = f"%%kata {k.id} --record{flag}\n" + k.skeleton_path.read_text(encoding="utf-8")
            self.shell.set_next_input(cell, replace=False)
            # The new cell exists only where a live front end takes the kernel's payload: in a
            # script, nbclient or papermill nothing appears, so say what happened and where
            # the skeleton is, and outside a kernel print the cell itself.
            print(msg("notebook.started", lang, kata=k.id, path=k.skeleton_path))
            if not _in_notebook(self.shell):
                print(cell)
            return None
        from attnkata.cli.app import app

        args = list(words)
        if "lang" in opts:
            args += ["--lang", str(opts["lang"])]
        try:
            app(args, standalone_mode=False)
        except SystemExit:
            pass
        return None


def register_html(shell: Any | None = None) -> None:
    """Show a `Result` as HTML in `shell` (the running IPython when None, if any)."""
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    if shell is None:
        return
    from attnkata.checker.html import fix_html, result_html
    from attnkata.checker.models import FixReport, Result

    html = shell.display_formatter.formatters["text/html"]
    html.for_type(Result, lambda r: result_html(r, r.graded_source))
    html.for_type(FixReport, fix_html)


def load(ipython: Any) -> None:
    ipython.register_magics(KataMagics)
    register_html(ipython)
