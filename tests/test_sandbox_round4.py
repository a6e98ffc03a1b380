"""The fourth round of attacks, found by an independent red team after round 3:

- a program started from candidate code (any library's subprocess wrapper will do:
  `torch.utils.collect_env.run`) ran without the sandboxed process's own rules, so a dense
  score matrix or the fused kernel computed there passed: exec is refused by the kernel
  (seccomp), and the static policy names the wrapper;
- with `kata` run by a user who is not root, a candidate is uid 0 of its namespace and the
  zygote's /dev (which lives as long as a batch worker, `kata watch`, the web app) was
  writable: a note left there reached the next candidate. /dev is read-only now;
- an attention op by another name (`torch.onnx.ops.attention`) was neither banned nor named;
- a grader computed with a candidate's output before checking its shape (a 9000 x 9000
  product in the grading process, and a metamorphic test passed with garbage);
- Unicode bidi overrides in a student's folder name reached the reports (test_control_chars).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from attnkata.checker.catalog import get_kata
from attnkata.checker.proxy import Candidate, Limits
from attnkata.checker.runner import check
from attnkata.checker.sandbox import host

ROUND4 = Path(__file__).parent / "fixtures" / "round4"
LIMITS = Limits(call_timeout=3.0, total_timeout=12.0, memory_mb=2048)


def _rss() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(host.requested_mode() == "subprocess", reason="the fallback is best-effort")
def test_a_program_started_from_candidate_code_never_runs() -> None:
    result = check(get_kata("sdpa"), ROUND4 / "spawn_program.py", limits=LIMITS, policy="warn")
    assert result.status != "pass", result
    assert any("Operation not permitted" in t.message for t in result.tests)
    assert any(d.id == "policy-io" for d in result.diagnostics)  # and the policy names it


def test_an_attention_op_by_another_name_is_banned() -> None:
    result = check(get_kata("sdpa"), ROUND4 / "onnx_attention.py", limits=LIMITS, policy="warn")
    assert result.status != "pass"
    assert "banned-api" in [d.id for d in result.diagnostics], result.diagnostics
    assert any(d.id == "policy-private-api" for d in result.diagnostics)


def test_a_grader_checks_an_output_before_computing_with_it() -> None:
    before = _rss()
    result = check(get_kata("rope"), ROUND4 / "shape_bomb.py", limits=LIMITS, diagnose=False)
    assert result.status == "fail"
    shifted = next(t for t in result.tests if t.id == "scores_depend_on_relative_position")
    assert shifted.status == "fail" and "expected shape (1, 1, 5, 8)" in shifted.message
    assert _rss() - before < 512 << 20


def test_dev_is_read_only_when_kata_is_not_run_as_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not root, the candidate is uid 0 of its user namespace: only /dev's being read-only
    keeps a note out of the next candidate's reach (as root, the uid 65534 also does)."""
    if os.geteuid() != 0:
        pytest.skip("the tests run as a user who is not root: the other tests cover it")
    host.shutdown()  # a zygote of its own, made as if by a user who is not root
    monkeypatch.setattr(host.os, "geteuid", lambda: 1000)
    try:
        q = torch.randn(1, 1, 3, 4, dtype=torch.float64)
        with Candidate(ROUND4 / "dev_writer.py", LIMITS) as c:
            assert c.call("scaled_dot_product_attention", (q, q, q)).value.abs().sum() > 0
            assert c.isolation.get("backend") == "namespaces" and not host.zygote().drop_root
        with Candidate(ROUND4 / "dev_reader.py", LIMITS) as c:
            out = c.call("scaled_dot_product_attention", (q, q, q)).value
            assert torch.count_nonzero(out) == 0, "the note reached the next candidate"
    finally:
        host.shutdown()
