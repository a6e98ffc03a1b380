"""The per-variant mutation matrix for the other half of the katas (see test_variant_matrix_1.py)."""

from __future__ import annotations

import pytest
from variant_matrix_support import check, half


@pytest.mark.slow
@pytest.mark.parametrize("kata_id", half(False))
def test_the_variant_passes_its_mutation_matrix(kata_id, monkeypatch):
    check(kata_id, monkeypatch)
