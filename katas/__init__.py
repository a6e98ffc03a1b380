"""The kata folders (package data). Importing this package replaces the function
`attnkata.katas` with the module (Python sets a subpackage as its parent's attribute), so the
module itself is callable: `attnkata.katas()` lists the katas either way."""

from __future__ import annotations

import sys
import types
from typing import Any


class _CallableModule(types.ModuleType):
    def __call__(self) -> list[Any]:
        from attnkata.checker import api

        return api.katas()


sys.modules[__name__].__class__ = _CallableModule
