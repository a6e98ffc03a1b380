"""flash repairs."""

from __future__ import annotations
