"""The `kata` that the benches time: the console script installed beside this interpreter.

That is what a virtual environment puts on PATH (and what CI runs). A version manager's shim
found on PATH instead (pyenv's is a bash script that runs `pyenv exec`) costs tens of
milliseconds before Python starts; that is the shim's start-up, not kata's, and the baselines
run the interpreter directly too."""

from __future__ import annotations

import os
import shutil
import sys


def kata_script() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "kata")
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which("kata") or sys.exit(
        "`kata` is not installed beside this Python nor on PATH"
    )
