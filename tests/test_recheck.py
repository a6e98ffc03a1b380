"""What makes a `kata watch` re-check faster (P2 of issue 13) must not change what a check
decides: the overlapped call (Pending), the deferred confirmation of a candidate's death, the
diagnosis' kept comparisons and the AST segments."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import torch

from attnkata.checker.diagnose.ast_rules import physical_lines, segment
from attnkata.checker.diagnose.behaviour import differs, differs_kept, flat
from attnkata.checker.diagnose.subjects import Observed
from attnkata.checker.proxy import Candidate, CandidateRaised, Limits
from attnkata.checker.sandbox import host

SOLUTION = """\
import torch


def double(x):
    return x * 2


def fails(x):
    raise ValueError("no")
"""


@pytest.fixture
def candidate(tmp_path: Path):
    path = tmp_path / "sol.py"
    path.write_text(SOLUTION, encoding="utf-8")
    with Candidate(path, Limits(call_timeout=10, total_timeout=60)) as c:
        yield c


def test_a_block_that_raises_still_reads_the_reply_so_the_next_call_gets_its_own(candidate: Candidate):
    x = torch.arange(4.0)
    with pytest.raises(KeyError):
        with candidate.submit("double", (x,)):
            raise KeyError("the grader's own bug")
    # Had the first reply stayed in the channel, this call would have read it (x * 2).
    assert torch.equal(candidate.call("double", (x + 1,)).value, (x + 1) * 2)
    with candidate.submit("fails", (x,)) as pending:
        expected = x * 2  # the grader's work while the candidate runs
    with pytest.raises(CandidateRaised, match="ValueError"):
        pending.result()
    with candidate.submit("double", (x,)) as pending:
        pass
    assert torch.equal(pending.result().value, expected)


def test_a_released_candidate_is_dead_before_the_zygote_is_handed_out_again(candidate: Candidate):
    candidate.ensure_started()
    z = candidate._zygote
    token = candidate._spawn.token
    candidate.close()
    assert token in z.dying
    assert host.zygote() is z and not z.dying  # settled: the death was confirmed
    assert token not in z.exits


def test_a_zygote_that_cannot_confirm_a_death_is_not_used_again():
    z = host.zygote()
    z.release(10**9, wait=0.2)  # no such candidate: no death will ever be reported
    assert host.zygote() is not z
    assert not z.alive()


def test_kept_comparisons_equal_fresh_ones_and_cannot_be_written():
    ref = Observed(value=torch.tensor([1.0, 2.0, 3.0]))
    mutant = Observed(value=torch.tensor([1.0, 2.5, 3.0]))
    kept = differs_kept(mutant, ref, 3)
    assert kept.tolist() == differs(mutant, ref, 3).tolist() == [False, True, False, False]
    assert differs_kept(mutant, ref, 3) is kept
    with pytest.raises(ValueError):
        kept[0] = True
    first = flat(ref)
    assert flat(ref) is first
    ref.value = torch.tensor([9.0])  # a new value is flattened again
    assert np.array_equal(flat(ref)[1], [9.0])


def test_segments_equal_ast_get_source_segment():
    source = ("x = 'é' + \"ü\"  # comment\r\n"
              "y = (1,\r\n     2)\r"
              "def f(a):\n    return [a\n            for _ in range(3)]\n\x0cz = 1\n"
              "if x:\n    pass\n")
    lines = physical_lines(source)
    nodes = [n for n in ast.walk(ast.parse(source)) if hasattr(n, "lineno")]
    assert len(nodes) > 20
    for node in nodes:
        assert segment(lines, node) == (ast.get_source_segment(source, node) or "")


@pytest.mark.parametrize("text", ["def scaled_dot_product_attention(q, k, v:\n    pass\n",  # syntax error
                                  "import torch\n\ndef attention(q, k, v):\n    return q\n"])  # no entry point
def test_static_checks_beside_the_loading_candidate_decide_as_before(tmp_path: Path, text: str,
                                                                     monkeypatch: pytest.MonkeyPatch):
    from attnkata.checker import catalog, runner

    path = tmp_path / "sdpa.py"
    path.write_text(text, encoding="utf-8")
    kata = catalog.get_kata("sdpa")
    host.zygote()  # warm: the static checks run in a thread while the candidate loads
    assert host.ready()
    overlapped = runner.check(kata, path)
    monkeypatch.setattr(host, "ready", lambda: False)  # as a cold check: static checks first
    first = runner.check(kata, path)
    assert overlapped.status == first.status == "error"
    assert [d.id for d in overlapped.diagnostics] == [d.id for d in first.diagnostics]
    assert overlapped.tests == first.tests == []
