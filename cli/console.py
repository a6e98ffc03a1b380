"""Rich consoles: colour on a terminal, plain text when piped; errors on stderr."""

from __future__ import annotations

import json
import locale
import os
import sys
from typing import Any

from rich.console import Console

out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False)


def default_lang() -> str:
    """KATA_LANG, else the locale: Chinese for zh_*, English otherwise."""
    env = os.environ.get("KATA_LANG")
    if env:
        return "zh" if env.lower().startswith("zh") else "en"
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(var)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    loc = locale.getlocale()[0] or ""
    return "zh" if loc.lower().startswith("zh") else "en"


def print_json(data: Any) -> None:
    """Write JSON to stdout and nothing else (for --json)."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()
