"""`kata`: the root command. Maps the one domain exception to a message and an exit code, in
one place; every command module below is a thin layer over `attnkata.checker`."""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from typing import Annotated, Any

import typer
import typer.core
import typer.main
from typer.core import TyperGroup

from attnkata.checker.errors import KataError
from attnkata.checker.version import __version__
from attnkata.cli.console import drop_output, err

EXIT_BROKEN = 3
EXIT_INTERRUPTED = 130

# Recent typer vendors its own click (typer._click); older typer uses click itself.
_click = getattr(typer.core, "_click", None) or typer.core.click
_PASS_THROUGH = tuple(
    cls
    for cls in (
        typer.Exit,
        typer.Abort,
        KeyboardInterrupt,
        getattr(_click.exceptions, "ClickException", None),
        getattr(_click.exceptions, "Exit", None),
        getattr(_click.exceptions, "Abort", None),
    )
    if cls is not None
)


# Which module defines each command, in `kata --help` order. A command's module is imported
# only when that command runs: `kata list` must not pay for the mock interview's or the
# instructor's modules (P4: start-up within 1.5x of importing typer and rich).
COMMAND_MODULES = {
    "list": "practice",
    "show": "practice",
    "start": "practice",
    "check": "practice",
    "watch": "practice",
    "hint": "practice",
    "fix": "fixing",
    "solution": "practice",
    "history": "practice",
    "stats": "practice",
    "next": "practice",
    "demo": "practice",
    "mistakes": "mistakes",
    "explain": "mistakes",
    "mock": "mock",
    "set": "sets",
    "web": "web",
}


class KataGroup(TyperGroup):
    """Turns KataError (and unexpected exceptions) into one stderr line and an exit code, and
    loads each command's module on first use."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMAND_MODULES) + [
            n for n in super().list_commands(ctx) if n not in COMMAND_MODULES
        ]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            module = importlib.import_module(f"attnkata.cli.commands.{COMMAND_MODULES[cmd_name]}")
            holder = typer.Typer(
                rich_markup_mode=None, pretty_exceptions_enable=False, add_completion=False
            )
            module.register(holder)
            # Convert only the command asked for: typer builds every parameter of every command
            # it converts, and `kata list` needs one.
            holder.registered_commands = [
                c for c in holder.registered_commands if _name(c) == cmd_name
            ]
            for name, command in typer.main.get_group(holder).commands.items():
                self.commands.setdefault(name, command)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KataError as exc:
            _report(ctx, exc.message, exc.hint, exc)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            # Ctrl-C: the candidate's processes are already gone (the check's context managers
            # ran) and nothing was recorded; click would say "Aborted!" and exit 1.
            err.print("[dim]interrupted[/]")
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except _PASS_THROUGH:
            raise
        except Exception as exc:  # noqa: BLE001 - a bug in attnkata, not the user's fault
            _report(
                ctx,
                f"internal error: {type(exc).__name__}: {exc}",
                "run again with --debug for the traceback, and please report it",
                exc,
            )
            raise typer.Exit(EXIT_BROKEN) from None


def _name(info: Any) -> str:
    return info.name or info.callback.__name__.lower().replace("_", "-")


def _report(ctx: Any, message: str, hint: str | None, exc: BaseException) -> None:
    root = ctx.find_root()
    if (root.obj or {}).get("debug"):
        err.print("".join(traceback.format_exception(exc)), markup=False, highlight=False)
    from rich.markup import escape  # a message may hold brackets: "attnkata[triton]", paths

    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    if hint:
        err.print(f"  {hint}", highlight=False, markup=False)


app = typer.Typer(
    cls=KataGroup,
    help="attnkata: practise hand-written attention; `kata check` names the mistake.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        print(f"attnkata {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of errors.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    ctx.obj = {"debug": debug}


def main() -> None:
    try:
        app()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        if isinstance(exc.code, str):
            err.print(exc.code, markup=False, highlight=False)
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # `kata ... | head`: the reader is gone; the exit code stands
            drop_output(stream)
    sandbox = sys.modules.get("attnkata.checker.sandbox.host")
    if sandbox is not None:
        sandbox.shutdown()  # os._exit below skips atexit: end every candidate process now
    if "torch" in sys.modules:
        # Everything is written and closed by now (history committed, candidate processes
        # killed). Tearing down torch's interpreter state would cost ~0.3 s for nothing.
        os._exit(code)
    sys.exit(code)
