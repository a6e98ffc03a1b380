"""Grader blind spots that let a wrong solution pass, or failed a correct one, each closed by
a grader test and shown here on a tiny fixture (tests/fixtures/blind_spots/):

- a padding mask sized by max(lengths) instead of S passed, because every padding probe had a
  full-length row;
- the padding mask's device was checked only on CUDA machines (now on "meta", like the
  causal mask's);
- module-suite messages for float32 cases described the input as float64;
- perceiver-latent's structure test demanded the statement's names, so a correct module with
  `out_proj` (mapped to o_proj by every other module kata) was rejected.
"""

from __future__ import annotations

from pathlib import Path

from attnkata.checker.catalog import get_kata
from attnkata.checker.runner import check

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BLIND = FIXTURES / "blind_spots"
REFERENCE = Path(__file__).resolve().parent.parent / "reference"


def _failed(kata_id: str, path: Path) -> dict[str, str]:
    """{test id: message} of the tests `path` fails (skips excluded)."""
    result = check(get_kata(kata_id), path, lang="en", diagnose=False)
    return {t.id: t.message for t in result.tests if t.status not in ("pass", "skip")}


def _names(failed: dict[str, str]) -> set[str]:
    """Test names without the `test_` prefix, parameters kept: `padding[B=4,S=7]`."""
    return {test_id.rsplit("::", 1)[-1].removeprefix("test_") for test_id in failed}


def test_padding_mask_sized_by_max_length_fails() -> None:
    names = _names(_failed("causal-mask", BLIND / "padding_max_lengths.py"))
    assert any(n.startswith("padding[") and "max(lengths)<S" in n for n in names), names
    assert not any(n.startswith("causal") for n in names), names


def test_padding_mask_left_on_the_cpu_fails_without_cuda() -> None:
    names = _names(_failed("causal-mask", BLIND / "padding_on_cpu.py"))
    assert "padding_device" in names, names
    assert not any(n.startswith("causal") for n in names), names


def test_reference_masks_pass_the_new_cases() -> None:
    assert not _failed("causal-mask", REFERENCE / "causal_mask.py")


def test_float32_cases_describe_float32_inputs() -> None:
    failed = _failed("mha", FIXTURES / "mistakes" / "mha" / "missing-scale.py")
    float32 = {k: v for k, v in failed.items() if "float32" in k}
    assert float32, f"expected float32 cases to fail: {sorted(failed)}"
    for test_id, message in float32.items():
        assert "float64" not in message, f"{test_id}: {message}"


def test_perceiver_with_out_proj_passes() -> None:
    assert not _failed("perceiver-latent", BLIND / "perceiver_out_proj.py")
