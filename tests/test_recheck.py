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


def test_a_block_that_raises_still_reads_the_reply_so_the_next_call_gets_its_own(
    candidate: Candidate,
):
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
    source = (
        "x = 'é' + \"ü\"  # comment\r\n"
        "y = (1,\r\n     2)\r"
        "def f(a):\n    return [a\n            for _ in range(3)]\n\x0cz = 1\n"
        "if x:\n    pass\n"
    )
    lines = physical_lines(source)
    nodes = [n for n in ast.walk(ast.parse(source)) if hasattr(n, "lineno")]
    assert len(nodes) > 20
    for node in nodes:
        assert segment(lines, node) == (ast.get_source_segment(source, node) or "")


@pytest.mark.parametrize(
    "text",
    [
        "def scaled_dot_product_attention(q, k, v:\n    pass\n",  # syntax error
        "import torch\n\ndef attention(q, k, v):\n    return q\n",
    ],
)  # no entry point
def test_static_checks_beside_the_loading_candidate_decide_as_before(
    tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch
):
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


MODULE = """\
import torch


class Scale(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(n))

    def forward(self, x):
        return x * self.w
"""


def test_weights_travel_with_the_next_call_and_a_failed_load_is_that_calls_failure(tmp_path: Path):
    path = tmp_path / "scale.py"
    path.write_text(MODULE, encoding="utf-8")
    x = torch.arange(3.0)
    with Candidate(path, Limits(call_timeout=10, total_timeout=60)) as c:
        module = c.new("Scale", (3,))
        module.load_state({"w": torch.ones(3)})
        assert module.staged is not None  # nothing sent yet
        assert torch.equal(module.call((x,)).value, x)
        assert module.staged is None
        module.load_state({"w": torch.ones(4)})
        with pytest.raises(CandidateRaised, match="shape"):
            module.call((x,))
        module.load_state({"w": torch.full((3,), 2.0)})
        with module.submit((x,)) as pending:
            pass
        assert torch.equal(pending.result().value, 2 * x)


def test_a_module_is_built_while_the_grader_works(tmp_path: Path):
    path = tmp_path / "scale.py"
    path.write_text(MODULE, encoding="utf-8")
    with Candidate(path, Limits(call_timeout=10, total_timeout=60)) as c:
        with c.new_later("Scale", (2,)) as building:
            grader_side = torch.ones(2)  # e.g. the reference module, built meanwhile
        module = building.result()
        assert module.params == {"w": (2,)}
        module.load_state({"w": grader_side})
        assert torch.equal(module.call((torch.ones(2),)).value, torch.ones(2))
        with c.new_later("Scale", ("not a size",)) as building:
            pass
        with pytest.raises(CandidateRaised, match="TypeError"):
            building.result()


def test_the_op_trace_skips_only_views_when_it_measures_memory():
    from attnkata.checker.sandbox.child import _op_info

    aten = torch.ops.aten
    for op in (aten.view.default, aten.expand.default, aten.transpose.int, aten.split.Tensor):
        assert _op_info(op)[3], op  # a view: no new memory
    for op in (
        aten.add_.Tensor,
        aten.resize_.default,
        aten.add.out,
        aten.set_.source_Tensor,
        aten.mm.default,
        aten.max.dim,
    ):
        assert not _op_info(op)[3], op  # writes or allocates: measured
    assert _op_info(aten._scaled_dot_product_flash_attention_for_cpu.default)[2]  # banned
    assert not _op_info(aten.mm.default)[2]


def test_the_zygotes_warm_up_serves_its_requests():
    # In the zygote a failing warm-up is skipped silently (it only saves time): here it must not fail.
    from attnkata.checker.sandbox import child

    child.exercise()


@pytest.fixture
def spares():
    z = host.zygote()
    z.keep_spare = True
    yield z
    z.keep_spare = False
    z._drop_spare()
    z.settle()


def test_a_spare_process_serves_the_next_candidate_with_the_same_limits(
    tmp_path: Path, spares: host.Zygote
):
    path = tmp_path / "sol.py"
    path.write_text(SOLUTION, encoding="utf-8")
    limits = Limits(call_timeout=10, total_timeout=60)
    x = torch.arange(3.0)
    with Candidate(path, limits) as first:
        assert torch.equal(first.call("double", (x,)).value, 2 * x)
    assert spares.spare is not None  # started once the first was released
    spare_token = spares.spare.token
    with Candidate(path, limits, source=SOLUTION.replace("x * 2", "x * 3")) as second:
        second.ensure_started()
        assert second._spawn.token == spare_token and spares.spare is None
        assert torch.equal(second.call("double", (x,)).value, 3 * x)  # its own source
    assert spares.spare is not None and spares.spare.token != spare_token
    other = Limits(call_timeout=5, total_timeout=30)
    replaced = spares.spare.token
    with Candidate(path, other) as third:
        third.ensure_started()
        assert third._spawn.token not in (spare_token, replaced)  # made for other limits: not used
        assert torch.equal(third.call("double", (x,)).value, 2 * x)
    assert replaced not in spares.dying  # its death was confirmed before the new one started


def _graded(result) -> tuple:
    return (
        result.status,
        [(t.id, t.status, t.message) for t in result.tests],
        [(d.id, d.severity, d.title, [s.line for s in d.source]) for d in result.diagnostics],
    )


@pytest.mark.parametrize(
    "file", ["reference/gqa.py", "tests/fixtures/mistakes/gqa/kv-repeat-instead-of-interleave.py"]
)
def test_a_kept_session_grades_as_a_fresh_one(file: str, monkeypatch: pytest.MonkeyPatch):
    from attnkata.checker import catalog, driver, runner

    monkeypatch.setenv("ATTNKATA_INPUT_SALT", "0")  # the same inputs in the three checks

    kata = catalog.get_kata("gqa")
    path = Path(__file__).resolve().parent.parent / file
    fresh = runner.check(kata, path)
    kept = runner.check(kata, path, keep_session=True)
    made = driver._kept[str(kata.grader_path)]
    again = runner.check(kata, path, keep_session=True)
    assert driver._kept[str(kata.grader_path)] is made  # configured and collected once
    assert _graded(fresh) == _graded(kept) == _graded(again)


def test_a_cancelled_run_of_a_kept_session_is_not_reused():
    import threading

    from attnkata.checker import catalog, driver, runner
    from attnkata.checker.errors import CheckCancelled

    kata = catalog.get_kata("sdpa")
    path = Path(__file__).resolve().parent.parent / "reference" / "sdpa.py"
    runner.check(kata, path, keep_session=True)
    assert str(kata.grader_path) in driver._kept
    cancel = threading.Event()  # a save during the run's first test
    with pytest.raises(CheckCancelled):
        runner.check(
            kata, path, keep_session=True, cancel=cancel, progress=lambda test: cancel.set()
        )
    assert str(kata.grader_path) not in driver._kept
    assert runner.check(kata, path, keep_session=True).passed
