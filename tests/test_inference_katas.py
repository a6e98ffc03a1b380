"""The inference katas (rope, kv-cache, mla-decode, attention-sinks, alibi): what the shared
suites do not cover.

- mla-decode's right-but-naive solution (per-head keys/values of the whole cache) fails
  exactly the `efficient` tier;
- a cache passed as a tuple of tensors travels to the candidate and back: casting, and
  in-place writes into it are caught by the grader;
- the pictures of the diagnoses (feature pairing, position timeline, cache shapes, the sink
  cache before and after eviction, ALiBi's bias and slopes per head) are there and
  JSON-serialisable.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from attnkata.checker.catalog import get_kata
from attnkata.checker.compare import unchanged
from attnkata.checker.probes import cast
from attnkata.checker.runner import check

MISTAKES = Path(__file__).resolve().parent / "fixtures" / "mistakes"


def test_naive_mla_decode_fails_only_the_efficient_tier():
    path = MISTAKES / "mla-decode" / "mla-materializes-cache-heads.py"
    result = check(get_kata("mla-decode"), path)
    failing = {t.tier for t in result.tests if t.status not in ("pass", "skip")}
    assert failing == {"efficient"}, [(t.id, t.status) for t in result.tests]
    ids = [d.id for d in result.diagnostics if d.is_error]
    assert ids == ["mla-materializes-cache-heads"], ids


def test_cast_and_unchanged_walk_into_a_cache_tuple():
    k, v = torch.zeros(1, 2, 3, 4, dtype=torch.float64), torch.ones(1, 2, 3, 4, dtype=torch.float64)
    k32, v32 = cast((k, v), torch.float32)
    assert k32.dtype == v32.dtype == torch.float32
    assert unchanged((k, v), (k.clone(), v.clone()))
    touched = v.clone()
    touched[0, 0, 0, 0] = 5.0
    assert not unchanged((k, v), (k.clone(), touched))
    assert not unchanged((k, v), None)


def _diagnosis(kata: str, fixture: str) -> dict:
    result = check(get_kata(kata), MISTAKES / kata / f"{fixture}.py", maxfail=1)
    top = result.diagnostics[0]
    assert top.id == fixture.split("--")[0]
    return json.loads(json.dumps(top.data))


@pytest.mark.parametrize(
    ("kata", "fixture", "columns"),
    [
        ("rope", "rope-wrong-layout", {2}),  # the candidate's partner column
        ("kv-cache", "cache-positions-restart", {4}),  # the positions it used
        ("kv-cache", "cache-stores-repeated-heads", {2, 3}),  # its k and v shapes
        ("attention-sinks", "sink-tokens-evicted", {4, 5}),  # its slots and positions
        ("alibi", "alibi-bias-not-symmetric", {3}),  # the bias its output shows
        ("alibi", "alibi-slopes-wrong-for-non-power-of-two", {2}),  # its slopes
    ],
)
def test_pictures(kata, fixture, columns):
    data = _diagnosis(kata, fixture)
    (picture,) = data["pictures"]
    assert picture["caption"]["en"] and picture["caption"]["zh"]
    assert 0 < len(picture["rows"]) <= 12 and all(
        len(r) == len(picture["columns"]) <= 8 for r in picture["rows"]
    )
    assert picture["differs"] and {c for _, c in picture["differs"]} == columns


def test_position_timeline_reads_the_positions_the_code_used():
    rows = _diagnosis("kv-cache", "cache-positions-restart")["pictures"][0]["rows"]
    # (step, P, i, expected P + i, used): prefill right, then every step restarts at 0.
    assert [r[4] for r in rows if r[0] == "prefill"] == [r[3] for r in rows if r[0] == "prefill"]
    assert [r[4] for r in rows if r[0] != "prefill"] == [r[2] for r in rows if r[0] != "prefill"]


def test_sink_cache_picture_reads_each_slots_token_and_position():
    # (token, position before, slot and position by the contract, yours): rotated by +e, each
    # kept window key lands 2e positions past its slot; the sinks (labelled in both languages)
    # and the slots are right.
    rows = _diagnosis("attention-sinks", "rerotation-wrong-direction")["pictures"][0]["rows"]
    kept = [r for r in rows if r[2] is not None]
    e = len(rows) - len(kept)
    assert e and [r[4] for r in kept] == [r[2] for r in kept]
    assert [r[5] - r[3] for r in kept] == [0 if isinstance(r[0], dict) else 2 * e for r in kept]


def test_cache_written_in_place_is_caught_by_the_grader():
    result = check(
        get_kata("kv-cache"), MISTAKES / "kv-cache" / "input-mutated.py", maxfail=1, diagnose=False
    )
    failed = [t for t in result.tests if t.status == "fail"]
    assert failed and "modified its input" in failed[0].message
