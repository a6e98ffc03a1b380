"""Candidate code is untrusted: every way it can misbehave is a verdict, never a crash of the
grader, and nothing it does reaches the process that decides the verdict."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from attnkata.checker.catalog import get_kata
from attnkata.checker.proxy import (
    Candidate,
    CandidateBanned,
    CandidateCrashed,
    CandidateExited,
    CandidateMemory,
    CandidateTimeout,
    Limits,
)
from attnkata.checker.runner import check
from attnkata.checker.sandbox import host

HOSTILE = Path(__file__).parent / "fixtures" / "hostile"
REFERENCE = Path(__file__).parent.parent / "reference" / "sdpa.py"
FN = "scaled_dot_product_attention"
QKV = tuple(torch.randn(2, 3, 4, 8, dtype=torch.float64) for _ in range(3))
FAST = Limits(call_timeout=1.5, total_timeout=4.0)


def call_hostile(name: str, limits: Limits = FAST):
    with Candidate(HOSTILE / name, limits) as c:
        return c.call(FN, QKV)


def test_infinite_loop_times_out():
    host.zygote()  # started (and the last test's candidates confirmed dead): this times the loop
    t0 = time.monotonic()
    with pytest.raises(CandidateTimeout, match=r"timed out after 1.5 s"):
        call_hostile("loop.py")
    assert time.monotonic() - t0 < 5


def test_loop_at_import_times_out_while_loading():
    with Candidate(HOSTILE / "loop_at_import.py", FAST) as c:
        c.start()
        assert isinstance(c.load_error, CandidateTimeout)
        assert "loading your file" in c.load_error.message


def test_sys_exit_is_a_verdict():
    with pytest.raises(CandidateExited, match=r"ended the interpreter: it called sys.exit\(0\)"):
        call_hostile("sys_exit.py")


def test_os_exit_is_a_verdict():
    with pytest.raises(CandidateCrashed, match=r"ended the interpreter .*exit code 7"):
        call_hostile("os_exit.py")


def test_segfault_is_a_verdict():
    with pytest.raises(CandidateCrashed, match=r"SIGSEGV"):
        call_hostile("segfault.py")


def test_huge_allocation_hits_the_memory_limit():
    with pytest.raises(CandidateMemory, match=r"memory limit exceeded \(4096 MiB\)"):
        call_hostile("huge_alloc.py", Limits(call_timeout=10, total_timeout=20))


def test_code_that_timed_out_is_not_run_again():
    with Candidate(HOSTILE / "loop.py", Limits(call_timeout=1.0, total_timeout=30)) as c:
        with pytest.raises(CandidateTimeout, match="timed out after 1 s"):
            c.call(FN, QKV)
        t0 = time.monotonic()
        for _ in range(3):  # every later test that needs the same function: at once
            with pytest.raises(
                CandidateTimeout, match="not run: `scaled_dot_product_attention` already ran"
            ):
                c.call(FN, QKV)
        assert time.monotonic() - t0 < 0.5


def test_total_time_limit_stops_later_calls():
    with Candidate(HOSTILE / "loop.py", Limits(call_timeout=1.0, total_timeout=1.5)) as c:
        with pytest.raises(CandidateTimeout):
            c.call(FN, QKV)
        c.timed_out.clear()  # as if a second entry point were called
        c.ran_out.clear()  # (one that never timed out: it gets the full call limit)
        with pytest.raises(CandidateTimeout, match="total time limit"):
            c.call(FN, QKV)
        c.timed_out.clear()
        t0 = time.monotonic()
        with pytest.raises(CandidateTimeout, match="not run"):
            c.call(FN, QKV)
        assert time.monotonic() - t0 < 0.5


def test_monkeypatching_libraries_changes_nothing_here():
    kata = get_kata("sdpa")
    result = check(kata, HOSTILE / "patches_grader.py", limits=FAST, diagnose=False)
    assert result.status == "fail"
    assert result.tests and not any(t.status == "pass" for t in result.tests)
    assert torch.allclose(torch.zeros(1), torch.ones(1)) is False


def test_a_forged_reply_cannot_run_code_in_the_grader():
    marker = Path("/tmp/attnkata-pwned")
    marker.unlink(missing_ok=True)
    with pytest.raises(CandidateCrashed, match="unreadable|unexpected"):
        call_hostile("evil_reply.py")
    assert not marker.exists()


@pytest.mark.parametrize(
    "name", ["uses_sdpa.py", "cheats_via_c_api.py", "uses_mha_module.py", "uses_flex_attention.py"]
)
def test_banned_attention_apis_are_caught_at_runtime(name):
    with pytest.raises(
        CandidateBanned, match="banned|scaled_dot_product|multi_head|flex_attention"
    ):
        call_hostile(name, Limits(call_timeout=10, total_timeout=20))


def test_importing_the_reference_is_banned():
    with Candidate(HOSTILE / "imports_reference.py", FAST) as c:
        c.start()
        assert isinstance(c.load_error, CandidateBanned)
        assert "attnkata" in c.load_error.message


def test_fork_after_a_multithreaded_torch_op_does_not_hang():
    # OpenMP's pool does not survive fork: the child must not use it.
    if torch.get_num_threads() < 2:
        torch.set_num_threads(2)
    a = torch.randn(1500, 1500)
    (a @ a).exp().sum()
    with Candidate(REFERENCE, Limits(call_timeout=20, total_timeout=30)) as c:
        big = torch.randn(600, 600)
        out = c.call(FN, (big, big, big))
    assert out.value.shape == (600, 600)


def test_hostile_runs_end_with_a_verdict_from_the_cli(tmp_path):
    """The real `kata` process survives each hostile candidate and exits 1 (a verdict)."""
    env = {**os.environ, "KATA_HOME": str(tmp_path)}
    for name in ("loop.py", "sys_exit.py", "os_exit.py", "huge_alloc.py"):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "attnkata",
                "check",
                "sdpa",
                str(HOSTILE / name),
                "--timeout",
                "1",
                "--json",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 1, (name, proc.stderr)
        assert "Traceback" not in proc.stderr
        import json

        data = json.loads(proc.stdout)
        assert data["status"] in ("timeout", "error", "fail"), name
        assert data["diagnostics"], name


def test_code_that_closes_its_channel_and_stays_alive_is_stopped_once_not_waited_for_again():
    attack = Path(__file__).parent / "fixtures" / "attacks" / "close_channel.py"
    # A generous limit: walking gc.get_objects() on a busy machine must not become a timeout.
    with Candidate(attack, Limits(call_timeout=15.0, total_timeout=30.0)) as c:
        with pytest.raises(
            CandidateCrashed, match="closed its connection to the grader and was stopped"
        ):
            c.call(FN, QKV)
        t0 = time.monotonic()
        with pytest.raises(CandidateCrashed, match="not run: .* closed its connection"):
            c.call(FN, QKV)
        assert time.monotonic() - t0 < 0.2
