"""Secret salts for the graders' random inputs (checker/probes.py mixes them into every seed).

A salt is drawn from the operating system's CSPRNG and never reaches the candidate's process:
a practice check draws one per check, a problem set one when it is made (its manifest).
Torch-free, so `kata set create` can draw one without importing the grader.
"""

from __future__ import annotations

import secrets

SALT_BITS = 40


def secret_salt() -> int:
    """A fresh salt, never 0 (0 means "the seeds as written")."""
    return secrets.randbits(SALT_BITS) + 1
