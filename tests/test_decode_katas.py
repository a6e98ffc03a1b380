"""paged-attention and flash-decoding: what the shared suites do not cover.

- correct solutions in other styles pass (vLLM's token loop, a varlen flat gather, an online
  softmax over blocks; padded splits, a softmax over the splits), and paged attention's
  dense padded gather fails exactly the `efficient` tier;
- flash-decoding's partials are recorded from the candidate's call of its own `combine` and
  judged as values: fabricated partials fail, a malformed record is the candidate's failure,
  trusted code records the same way and leaves the module as it was;
- the pictures (the block table row with the blocks read, the head map, the splits with
  their lse and weights) are there and JSON-serialisable.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from attnkata.checker.catalog import get_kata
from attnkata.checker.local import LocalCandidate
from attnkata.checker.replies import BadReply, clean
from attnkata.checker.runner import check
from attnkata.reference import flash_decoding as ref_fd

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ALTERNATIVES = [
    pytest.param(kata, path, id=f"{kata}/{path.stem}")
    for kata in ("paged-attention", "flash-decoding")
    for path in sorted((FIXTURES / "alt" / kata).glob("*.py"))
]


@pytest.mark.parametrize(("kata", "path"), ALTERNATIVES)
def test_alternative_styles_pass(kata: str, path: Path) -> None:
    result = check(get_kata(kata), path, diagnose=False)
    failed = [f"{t.id}: {t.message}" for t in result.tests if t.status not in ("pass", "skip")]
    assert result.passed, f"{path.name}: " + "; ".join(failed)


def test_a_dense_padded_gather_fails_only_the_efficient_tier() -> None:
    path = FIXTURES / "mistakes" / "paged-attention" / "paged-gathers-dense-kv.py"
    result = check(get_kata("paged-attention"), path)
    failing = {t.tier for t in result.tests if t.status not in ("pass", "skip")}
    assert failing == {"efficient"}, [(t.id, t.status) for t in result.tests]
    [test] = [t for t in result.tests if t.tier == "efficient"]
    assert "memory" in test.message and "k_cache[block_table]" in test.message
    assert [d.id for d in result.diagnostics if d.is_error] == ["paged-gathers-dense-kv"]


def test_fabricated_partials_fail_the_recorded_partials_only() -> None:
    path = FIXTURES / "golden" / "flash-decoding" / "fabricated_partials.py"
    result = check(get_kata("flash-decoding"), path, diagnose=False)
    failing = {t.id for t in result.tests if t.status not in ("pass", "skip")}
    assert failing == {"recorded_partials[float64]", "recorded_partials[float32]"}, failing
    message = next(t.message for t in result.tests if t.id == "recorded_partials[float64]")
    assert "combine's partial_out" in message and "differ" in message


def test_a_malformed_record_is_the_candidates_failure() -> None:
    reply = {"ok": True, "value": None, "trace": {}, "seconds": 0.0}
    assert clean({**reply, "calls": {}}, "call")["calls"] == {}
    kept = clean({**reply, "calls": {"combine": {"count": 1, "calls": [{"args": [1, 2]}]}}}, "call")
    assert kept["calls"]["combine"] == {"count": 1, "calls": [{"args": [1, 2], "kwargs": {}}]}
    for bad in (
        {"combine": {"count": "1"}},
        {"combine": {"count": 1, "calls": [5]}},
        {"combine": {"count": 1, "calls": {"args": []}}},
        ["combine"],
    ):
        with pytest.raises(BadReply):
            clean({**reply, "calls": bad}, "call")


def test_trusted_code_records_its_combine_call_and_restores_the_name() -> None:
    q, k, v = torch.randn(2, 4, 8), torch.randn(2, 2, 9, 8), torch.randn(2, 2, 9, 5)
    original = ref_fd.combine
    outcome = LocalCandidate(ref_fd).call(
        "flash_decode", (q, k, v, 4), {"lengths": torch.tensor([9, 3])}, record=("combine",)
    )
    assert ref_fd.combine is original
    log = outcome.calls["combine"]
    assert log["count"] == 1
    partial_out, partial_lse = log["calls"][0]["args"]
    assert partial_out.shape == (2, 4, 4, 5) and partial_lse.shape == (2, 4, 4)
    assert torch.isinf(partial_lse[1, :, 1:]).all()  # sequence 1's keys are all in split 0
    assert torch.allclose(original(partial_out, partial_lse)[0], outcome.value)


@pytest.mark.parametrize(
    ("kata", "fixture", "key"),
    [
        ("paged-attention", "block-table-ignored", "pictures"),
        ("paged-attention", "kv-repeat-instead-of-interleave", "head_map_got"),
        ("flash-decoding", "lse-wrong", "pictures"),
    ],
)
def test_the_pictures_are_there_and_serialisable(kata: str, fixture: str, key: str) -> None:
    result = check(get_kata(kata), FIXTURES / "mistakes" / kata / f"{fixture}.py", maxfail=1)
    top = result.diagnostics[0]
    assert top.id == fixture
    data = json.loads(json.dumps(top.data))
    assert data.get(key), data
    if key == "pictures":
        [picture] = data["pictures"]
        assert picture["rows"] and picture["differs"], picture
        assert picture["caption"]["en"] and picture["caption"]["zh"]
    else:
        assert data["head_map_expected"] == [0, 0, 0, 1, 1, 1]
        assert data["head_map_got"] == [0, 1, 0, 1, 0, 1]
