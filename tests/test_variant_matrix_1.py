"""The per-variant mutation matrix (issue 27), for half of the katas (tests/variant_matrix_support.py):
in a sampled variant of each, its reference passes its own grader, every mutant written in the
variant's conventions fails and behaves on the diagnosis probes as the standard kata's (so it
gets its own id), and correct code in each nearby variant's conventions is named by exactly the
conventions it kept. The same check `kata set create --variants` runs before handing a variant out."""

from __future__ import annotations

import pytest
from variant_matrix_support import check, half


@pytest.mark.slow
@pytest.mark.parametrize("kata_id", half(True))
def test_the_variant_passes_its_mutation_matrix(kata_id, monkeypatch):
    check(kata_id, monkeypatch)
