"""The third round of attacks (issue 22): what a candidate *returns* and what it leaves behind.

Each attack file in tests/fixtures/attacks/ written for this round is graded through `check`
(in process: no exception reaches the caller, a verdict that is not a pass, within the call
limit + 2 s, the grader's memory bounded), through a batch with the attacker first and honest
classmates after (exact grades), and through `kata watch` (the watcher keeps going and the
next honest save passes). Nothing a candidate leaves in /tmp, /dev/shm or the kernel keyring
reaches the next candidate (tests/fixtures/round3/writer.py and reader.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
from io import StringIO
from pathlib import Path

import pytest
import torch

from attnkata.checker import replies, static
from attnkata.checker.catalog import get_kata
from attnkata.checker.proxy import Limits
from attnkata.checker.runner import check
from attnkata.checker.sandbox import wire, zygote

FIXTURES = Path(__file__).parent / "fixtures"
ATTACKS = FIXTURES / "attacks"
ROUND3 = FIXTURES / "round3"
REFERENCE = Path(__file__).parent.parent / "reference" / "sdpa.py"
LIMITS = Limits(call_timeout=2.0, total_timeout=8.0, memory_mb=1024)
NEW_ATTACKS = [
    "utf7_cookie.py",
    "json_bomb.py",
    "json_deep.py",
    "hostile_fields.py",
    "hostile_trace.py",
    "hostile_device.py",
    "long_type_name.py",
    "public_composite.py",
    "mha_forward_direct.py",
]
GRADER_RSS_LIMIT = 1 << 30
# Any C0 control but newline and tab, DEL, and C1 (the 8-bit CSI among them).
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")


def _rss() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _PeakRss:
    """The grading process's largest resident size while the block runs (sampled every 5 ms)."""

    def __enter__(self) -> _PeakRss:
        self.peak, self._stop = _rss(), threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, _rss())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _rendered(result) -> str:  # noqa: ANN001
    from rich.console import Console

    from attnkata.cli.render import render_result

    out = StringIO()
    render_result(Console(file=out, width=100, force_terminal=False, color_system=None), result)
    return out.getvalue()


@pytest.mark.parametrize("name", NEW_ATTACKS)
def test_an_attack_gets_a_verdict_in_time_with_the_grader_intact(name: str) -> None:
    with _PeakRss() as rss:
        t0 = time.monotonic()
        result = check(get_kata("sdpa"), ATTACKS / name, limits=LIMITS, policy="warn")
        elapsed = time.monotonic() - t0
    assert result.status != "pass", name
    # The first test's call is where every attack strikes; its verdict comes within the call
    # limit + 2 s (a second of spawning and loading each for it and for the next test's process).
    for t in result.tests:
        assert t.duration < LIMITS.call_timeout + 2, (name, t.id, t.duration)
    assert elapsed < LIMITS.total_timeout + 10, (name, elapsed)
    assert rss.peak - _rss() < GRADER_RSS_LIMIT and rss.peak < 3 * GRADER_RSS_LIMIT, name
    text = _rendered(result) + json.dumps(result.to_dict(), ensure_ascii=False)
    assert not CONTROL.search(text), (name, CONTROL.search(text))
    assert len(json.dumps(result.to_dict())) < 2_000_000, "a candidate's text is clipped"


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["long_type_name.py", "json_bomb.py", "hostile_fields.py", "utf7_cookie.py"]
)
def test_an_attack_through_the_cli_is_a_failure_not_an_internal_error(
    name: str, tmp_path: Path
) -> None:
    env = {**os.environ, "KATA_HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "attnkata", "check", "sdpa", str(ATTACKS / name), "--timeout", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-500:])
    assert not CONTROL.search(proc.stdout + proc.stderr)


def test_the_coding_line_cannot_show_the_sandbox_other_code() -> None:
    """The grader refuses a non-UTF-8 declaration; and were the file run anyway, the child
    compiles the text the grader read, in which the UTF-7 payload is only a comment."""
    result = check(get_kata("sdpa"), ATTACKS / "utf7_cookie.py", limits=LIMITS)
    assert [d.id for d in result.diagnostics] == ["source-encoding"] and result.status == "error"
    assert static.foreign_encoding("# -*- coding: utf-8 -*-\nx = 1\n") is None
    assert static.foreign_encoding(
        "#!/usr/bin/env python\n# vim: set fileencoding=latin-1 :\n"
    ) == (2, "latin-1")

    from attnkata.checker.proxy import Candidate

    q = torch.randn(1, 1, 3, 4, dtype=torch.float64)
    with Candidate(ATTACKS / "utf7_cookie.py", LIMITS) as c:
        out = c.call("scaled_dot_product_attention", (q, q, q))
    assert torch.count_nonzero(out.value) == 0, "the visible code ran, not the hidden one"


def test_the_source_limits_agree_and_control_characters_do_not_count_against_the_student() -> None:
    assert static.MAX_SOURCE_BYTES + 4096 < zygote.SOURCE_FRAME_BYTES
    path = ROUND3 / "control_blob.py"
    assert 600_000 < path.stat().st_size <= static.MAX_SOURCE_BYTES
    assert check(get_kata("sdpa"), path).status == "pass"


def test_replies_are_validated_and_clipped() -> None:
    ok = replies.clean(
        {
            "ok": False,
            "kind": "exception",
            "type": "E" * 10_000,
            "message": "m" * 10_000,
            "frames": [{"line": 3, "text": "x", "function": "f"}] * 1000,
        },
        "call",
    )
    assert len(ok["type"]) == replies.TYPE_CHARS and len(ok["message"]) == replies.MESSAGE_CHARS
    assert len(ok["frames"]) == replies.MAX_ITEMS
    for bad, op in (
        ({"ok": False, "type": ["E"]}, "call"),
        ({"ok": False, "frames": [{"line": "9"}]}, "call"),
        ({"ok": True, "trace": "x"}, "call"),
        ({"ok": True, "warnings": [1]}, "call"),
        ({"ok": True, "handle": "1", "structure": {}}, "new"),
        ({"ok": "yes"}, "call"),
        ([], "load"),
    ):
        with pytest.raises(replies.BadReply):
            replies.clean(bad, op)
    assert (
        replies.clean({"ok": False, "kind": "'; drop", "type": "E"}, "call")["kind"] == "exception"
    )


def _body(header: bytes, buffers: bytes = b"") -> bytes:
    return struct.pack("<I", len(header)) + header + buffers


def test_decoding_is_bounded_before_anything_is_built() -> None:
    bomb = _body(b"[" + b"[]," * 200_000 + b"[]]")
    t0 = time.perf_counter()
    with pytest.raises(wire.WireError, match="items"):
        wire.decode(bomb)
    assert time.perf_counter() - t0 < 0.05
    with pytest.raises(wire.WireError, match="header of"):
        wire.decode(_body(b'"' + b"x" * (wire.MAX_HEADER_BYTES + 1) + b'"'))
    with pytest.raises(wire.WireError):
        wire.decode(_body(b"[" * 40_000 + b"]" * 40_000))
    for device in ("hpu", "privateuseone:0", "cuda:0; rm", 7):
        node = json.dumps({"$t": 0, "dtype": "float32", "shape": [1], "device": device}).encode()
        with pytest.raises(wire.WireError, match="device"):
            wire.decode(_body(node, b"\0\0\0\0"))
    with pytest.raises(wire.WireError):
        wire.decode(_body(b'{"$device": "hpu"}'))
    assert wire.roundtrip(torch.ones(2)).device.type == "cpu"


def test_fused_attention_is_refused_at_the_dispatcher_in_the_sandbox() -> None:
    from attnkata.checker.proxy import Candidate, CandidateBanned

    q = torch.randn(1, 1, 3, 4, dtype=torch.float64)
    for name, what in (
        ("public_composite.py", "aten::scaled_dot_product_attention"),
        ("mha_forward_direct.py", "multi_head_attention_forward"),
    ):
        with Candidate(ATTACKS / name, LIMITS) as c, pytest.raises(CandidateBanned, match=what):
            c.call("scaled_dot_product_attention", (q, q, q))


def _seen(seed: int | None = None) -> tuple[set[str], int | None]:
    """The fingerprints of the q's a check sends (echo_inputs.py), and the check's seed."""
    result = check(
        get_kata("sdpa"), ROUND3 / "echo_inputs.py", limits=LIMITS, diagnose=False, seed=seed
    )
    return {
        t.message.split("seen ")[1][:16] for t in result.tests if "seen " in t.message
    }, result.seed


def test_every_check_meets_inputs_of_its_own_and_its_seed_repeats_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ATTNKATA_INPUT_SALT", raising=False)  # as a candidate's kata check
    first, seed = _seen()
    second, other = _seen()
    assert first and second and seed != other and not first & second
    assert _seen(seed) == (first, seed)  # `kata check --seed` grades with the same inputs
    published, zero = _seen(0)
    assert zero == 0 and not published & (first | second)


def test_a_lookup_table_of_the_published_inputs_passes_nowhere_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ATTNKATA_INPUT_SALT", raising=False)
    table = tmp_path / "sdpa.py"
    published, _ = _seen(0)
    table.write_text(
        (ROUND3 / "lookup_table.py")
        .read_text()
        .replace("SEEN = set()", f"SEEN = {sorted(published)!r}")
    )

    def grade(seed: int | None) -> str:
        return check(get_kata("sdpa"), table, limits=LIMITS, diagnose=False, seed=seed).status

    assert grade(0) == "pass"  # the attack works against inputs that never change...
    assert grade(None) == "fail"  # ...and not against a check's own secret inputs
    from attnkata.checker.sets.create import CreateOptions, create_set
    from attnkata.checker.sets.grade import GradeOptions, grade_set

    bundle = tmp_path / "set"
    manifest = create_set(CreateOptions(katas=["sdpa"], out=bundle, public_tests=0))
    assert manifest.grading.input_salt > 0  # drawn when the set was made, kept by the instructor
    assert "input_salt" not in "".join(
        p.read_text(errors="replace") for p in (bundle / "student").rglob("*") if p.is_file()
    )
    (tmp_path / "subs" / "mallory").mkdir(parents=True)
    shutil.copy(table, tmp_path / "subs" / "mallory" / "sdpa.py")
    (tmp_path / "subs" / "alice").mkdir()
    shutil.copy(REFERENCE, tmp_path / "subs" / "alice" / "sdpa.py")
    grades = []
    for run in ("a", "b"):
        results = grade_set(
            bundle,
            tmp_path / "subs",
            GradeOptions(jobs=1, timeout=8, call_timeout=2, out=tmp_path / run, fresh=True),
        )
        grades.append({s: results.entry(s, "sdpa").score for s in ("mallory", "alice")})
        assert results.entry("mallory", "sdpa").status == "fail"
        assert results.entry("alice", "sdpa").status == "pass"
    assert grades[0] == grades[1]  # the set's one salt: a regrade gives the same grade


def test_a_dense_matrix_in_numpy_fails_the_efficient_tier() -> None:
    result = check(get_kata("sliding-window"), ROUND3 / "numpy_dense_sliding.py", diagnose=False)
    efficient = [t for t in result.tests if t.tier == "efficient"]
    assert (
        efficient
        and efficient[0].status == "fail"
        and "memory this test allows" in efficient[0].message
    )


def test_nothing_a_candidate_leaves_reaches_the_next_one() -> None:
    from attnkata.checker.proxy import Candidate

    q = torch.randn(1, 1, 3, 4, dtype=torch.float64)
    with Candidate(ROUND3 / "writer.py", LIMITS) as c:
        assert torch.count_nonzero(c.call("scaled_dot_product_attention", (q, q, q)).value) > 0
    with Candidate(ROUND3 / "reader.py", LIMITS) as c:
        assert torch.count_nonzero(c.call("scaled_dot_product_attention", (q, q, q)).value) == 0


@pytest.mark.slow
def test_a_batch_with_attackers_first_grades_every_honest_student_exactly(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from attnkata.checker.sets.grade import GradeOptions, grade_set
    from attnkata.checker.sets.manifest import MANIFEST_PATH
    from attnkata.cli.app import app

    bundle = tmp_path / "set"
    res = CliRunner().invoke(
        app, ["set", "create", "--katas", "sdpa", "--out", str(bundle), "--public-tests", "0"]
    )
    assert res.exit_code == 0, res.output
    manifest = bundle / MANIFEST_PATH
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["grading"]["policy"] = "warn"  # only the sandbox stands between attackers and classmates
    manifest.write_text(json.dumps(data), encoding="utf-8")
    subs = tmp_path / "subs"
    # Graded in name order by one worker: every attacker, then the relay's writer, then the
    # reader (which passes only if the writer's source reached it), then honest classmates.
    students = {f"a{i:02d}_{Path(n).stem}": ATTACKS / n for i, n in enumerate(NEW_ATTACKS)}
    students |= {
        "m_writer": ROUND3 / "writer.py",
        "n_reader": ROUND3 / "reader.py",
        "x_alice": REFERENCE,
        "y_bob": REFERENCE,
    }
    for student, source in students.items():
        (subs / student).mkdir(parents=True)
        shutil.copy(source, subs / student / "sdpa.py")
    results = grade_set(
        bundle, subs, GradeOptions(jobs=1, timeout=8, call_timeout=2, out=tmp_path / "out")
    )
    full = results.entry("x_alice", "sdpa")
    assert full.status == "pass" and full.score == full.points > 0
    for student in ("y_bob", "m_writer"):
        entry = results.entry(student, "sdpa")
        assert (entry.status, entry.score) == ("pass", full.points), student
    for student in [s for s in students if s.startswith("a")] + ["n_reader"]:
        assert results.entry(student, "sdpa").status != "pass", student
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file() and path.suffix in (".md", ".json", ".jsonl", ".csv", ".txt", ".html"):
            text = path.read_text(encoding="utf-8", errors="replace")
            assert not CONTROL.search(text), (path, CONTROL.search(text))
            assert path.stat().st_size < 5_000_000, path


@pytest.mark.slow
def test_watch_survives_the_attacks_and_shares_nothing_between_saves(tmp_path: Path) -> None:
    from test_everyday import _JsonLines  # tests/ is on sys.path (pytest, rootdir-relative)

    path = tmp_path / "sdpa.py"
    path.write_text(REFERENCE.read_text())
    proc = subprocess.Popen(
        [sys.executable, "-m", "attnkata", "watch", "sdpa", str(path), "--json", "--timeout", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "KATA_HOME": str(tmp_path / "home")},
    )
    lines = _JsonLines(proc)
    try:
        assert lines.next(timeout=60)["status"] == "pass"
        for source, want_pass in (
            (ROUND3 / "writer.py", True),
            (ROUND3 / "reader.py", False),
            (ATTACKS / "long_type_name.py", False),
            (ATTACKS / "hostile_fields.py", False),
            (ATTACKS / "json_bomb.py", False),
            (REFERENCE, True),
        ):
            path.write_text(source.read_text())
            result = lines.next(timeout=60)
            assert (result["status"] == "pass") == want_pass, (source.name, result["status"])
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.slow
def test_the_mock_interviews_worker_shares_nothing_between_checks(tmp_path: Path) -> None:
    """The live mock screen's worker grades save after save in one process, as watch does. A
    mock interview enforces the static policy, so the writer (it opens files) is refused before
    it runs; the reader still finds nothing, an attack does not stop the worker, and the next
    honest save passes."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "attnkata.checker.mock.worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "KATA_HOME": str(tmp_path / "home")},
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert json.loads(proc.stdout.readline()).get("ready")
        statuses = []
        for source in (
            ROUND3 / "writer.py",
            ROUND3 / "reader.py",
            ATTACKS / "long_type_name.py",
            REFERENCE,
        ):
            path = tmp_path / "sdpa.py"
            path.write_text(source.read_text())
            proc.stdin.write(json.dumps({"kata": "sdpa", "path": str(path), "lang": "en"}) + "\n")
            proc.stdin.flush()
            reply = json.loads(proc.stdout.readline())
            assert reply["ok"], reply
            statuses.append(reply["result"]["status"])
    finally:
        proc.stdin.close()
        proc.wait(30)
    assert statuses[:2] == ["fail", "fail"] and statuses[2] != "pass" and statuses[3] == "pass", (
        statuses
    )
