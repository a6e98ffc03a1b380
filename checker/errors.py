"""One domain exception family.

Anything the user can fix (a typo in a kata name, a missing file) or that is the
installation's fault (a broken kata.toml) is a `KataError`; the CLI maps it to a
message and an exit code in one place. Mistakes in the *candidate's* code are never
exceptions: they are results.
"""

from __future__ import annotations


class KataError(Exception):
    """A problem the user is told about in one line; `exit_code` follows the CLI convention."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(KataError):
    """Bad input on the command line: unknown kata, missing file, bad option value."""

    exit_code = 2


class UnknownKataError(UsageError):
    def __init__(self, name: str, suggestions: list[str]) -> None:
        # Every id a prefix matched is named (`flash`: all four flash katas), up to six.
        hint = (
            f"did you mean {' or '.join(repr(s) for s in suggestions[:6])}?"
            if suggestions
            else "run `kata list` to see the katas"
        )
        super().__init__(f"unknown kata {name!r}", hint)
        self.name = name
        self.suggestions = suggestions


class MissingExtra(KataError):
    """The kata needs an optional part of attnkata that is not installed (`kata.toml`
    `requires`): the installation's to fix, not the candidate's, hence exit 3."""

    exit_code = 3


class KataDefinitionError(KataError):
    """A kata shipped with attnkata is broken (not the candidate's fault)."""

    exit_code = 3


class CheckCancelled(KeyboardInterrupt):
    """A check stopped because the file changed again (`kata watch` starts over). A
    KeyboardInterrupt subclass so that pytest ends its session instead of recording a failure;
    nothing of a cancelled check is recorded."""
