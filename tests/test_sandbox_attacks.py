"""Attack files (tests/fixtures/attacks/, written for these tests) against the sandbox: each
one gets a verdict that is not a pass, within the call limit + 2 s, leaves no process behind,
changes nothing outside its scratch directory, and cannot run code in the grading process."""

from __future__ import annotations

import math
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from attnkata.checker.catalog import get_kata
from attnkata.checker.proxy import Candidate, CandidateFailure, Limits
from attnkata.checker.runner import check
from attnkata.checker.sandbox import host

ATTACKS = Path(__file__).parent / "fixtures" / "attacks"
REFERENCE = Path(__file__).parent.parent / "reference" / "sdpa.py"
FN = "scaled_dot_product_attention"
LIMITS = Limits(call_timeout=2.0, total_timeout=8.0, memory_mb=1024)
MARKERS = ("akdaemon", "akbomb")
HOST_FILES = (Path("/tmp/attnkata-forged-history"), Path("/tmp/attnkata-pwned"))


def _inputs() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(2, 3, 4, 8, dtype=torch.float64, generator=g) for _ in range(3))


def _expected(q, k, v) -> torch.Tensor:  # noqa: ANN001
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    return w @ v


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            tree.setdefault(ppid, []).append(int(name))
    return tree


def _descendants(pid: int) -> list[int]:
    tree, out, todo = _children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _marked() -> list[str]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                comm = Path(f"/proc/{name}/comm").read_text().strip()
            except OSError:
                continue
            if comm in MARKERS:
                found.append(f"{name}:{comm}")
    return found


def _leftovers() -> list[int]:
    """Processes under this process's zygote other than the zygote itself."""
    z = host.zygote()
    procs = _descendants(z.proc.pid)
    if z.mode == "namespaces":  # launcher -> zygote (pid 1 of the namespace)
        procs = [p for p in procs if p not in _children().get(z.proc.pid, [])]
    return procs


@pytest.fixture
def bait(tmp_path: Path):
    """A classmate's solution and a planted file that no attack may touch."""
    for p in HOST_FILES:
        p.unlink(missing_ok=True)
    folder = tmp_path / "classmate"
    folder.mkdir()
    shutil.copy(REFERENCE, folder / "sdpa.py")
    before = (folder / "sdpa.py").read_bytes()
    yield folder
    assert (folder / "sdpa.py").read_bytes() == before
    for p in HOST_FILES:
        assert not p.exists(), p


ALL = sorted(p.name for p in ATTACKS.glob("*.py"))
# Beaten by the static policy, not at run time (see test_policy_stops_what_runtime_cannot).
POLICY_ONLY = {"pop_modes.py"}
# What the portable fallback also contains. It does not hide the file system (exec_reference,
# read_others), lets a daemon leave its session, and for a non-root user neither bounds the
# number of processes nor stops kill(-1) from reaching the user's own processes: those
# attacks are never run against it here (README: threat model).
FALLBACK_SAFE = {
    "close_channel.py",
    "half_frame.py",
    "huge_frame.py",
    "print_flood.py",
    "tiny_view.py",
    "forge_fds.py",
    "hide_mutation.py",
    "aten_composite.py",
    "rewrite_own_file.py",
    "forge_stdout.py",
    "gc_frames.py",
    "json_bomb.py",
    "json_deep.py",
    "hostile_fields.py",
    "hostile_trace.py",
    "hostile_device.py",
    "long_type_name.py",
    "utf7_cookie.py",
    "public_composite.py",
    "mha_forward_direct.py",
}
GRADER_GROWTH_LIMIT = 300 << 20  # bytes of RSS the grading process may gain from one attack


@pytest.fixture(scope="module", autouse=True)
def fresh_sandbox():
    """This module switches sandboxes: leave none of its zygotes to the next module."""
    host.shutdown()
    yield
    host.shutdown()


def _use(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(host.ENV_MODE, "auto" if backend == "namespaces" else "subprocess")
    # An earlier test of this worker may have asked for spares (`kata fix`, watch): a spare is
    # a started process that has run nothing yet, but _leftovers would count it.
    monkeypatch.setattr(host, "_spares", False)
    if host._current is not None:
        host._current.keep_spare = False
        host._current._drop_spare()
    if host._current is not None and host._current.alive() and host._current.mode != backend:
        host.shutdown()
    if backend == "namespaces" and host.zygote().mode != "namespaces":
        pytest.skip("no user namespaces on this machine")


def _rss() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_hidden_mutation_is_seen_by_the_grader() -> None:
    q, k, v = _inputs()
    with Candidate(ATTACKS / "hide_mutation.py", LIMITS) as c:
        out = c.call(FN, (q, k, v))
    assert out.mutated == ["argument 0"]
    assert torch.allclose(out.value, _expected(q, k, v))


def test_no_network() -> None:
    servers = []
    for port in range(47000, 47010):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            s.close()
            continue
        s.listen()
        s.setblocking(False)
        servers.append(s)
    try:
        with Candidate(ATTACKS / "network.py", LIMITS) as c:
            c.call(FN, _inputs())
        for s in servers:
            with pytest.raises(BlockingIOError):
                s.accept()
    finally:
        for s in servers:
            s.close()


def test_memory_is_bounded_for_the_whole_tree() -> None:
    z = host.zygote()
    if z.mode != "namespaces" or not z.cgroups.memory:
        pytest.skip("no writable memory cgroup here: RLIMIT_AS bounds each process only")
    with Candidate(ATTACKS / "memory_helpers.py", LIMITS) as c, pytest.raises(CandidateFailure):
        c.call(FN, _inputs())


@pytest.mark.parametrize(
    "name", sorted(POLICY_ONLY) + ["exec_reference.py", "gc_frames.py", "forge_fds.py"]
)
def test_policy_stops_what_runtime_cannot(name: str) -> None:
    result = check(
        get_kata("sdpa"), ATTACKS / name, limits=LIMITS, policy="enforce", diagnose=False
    )
    assert result.status != "pass"
    assert any(d.id.startswith("policy-") and d.is_error for d in result.diagnostics), (
        result.diagnostics
    )


def test_a_candidate_process_never_shares_the_graders_memory() -> None:
    """The zygote is a fresh interpreter: the references were never imported in it."""
    z = host.zygote()
    assert z.proc.pid != os.getpid()
    cmdline = Path(f"/proc/{z.proc.pid}/cmdline").read_bytes().split(b"\0")
    assert b"-I" in cmdline and b"-S" in cmdline


@pytest.mark.slow
@pytest.mark.parametrize("name", ["forge_stdout.py", "kill_everything.py", "daemon.py"])
def test_attacks_through_the_cli(name: str, tmp_path: Path) -> None:
    env = {**os.environ, "KATA_HOME": str(tmp_path)}
    t0 = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "attnkata",
            "check",
            "sdpa",
            str(ATTACKS / name),
            "--timeout",
            "2",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 1, proc.stderr
    import json

    data = json.loads(proc.stdout)  # exactly one JSON document: nothing forged got in
    assert data["status"] != "pass" and data["isolation"]["backend"] in ("namespaces", "subprocess")
    assert time.monotonic() - t0 < 120
    time.sleep(0.2)
    assert _marked() == []


@pytest.mark.slow
def test_forced_fallback_still_grades_and_says_so(tmp_path: Path) -> None:
    env = {**os.environ, "KATA_HOME": str(tmp_path), host.ENV_MODE: "subprocess"}
    for name, code in ((REFERENCE, 0), (ATTACKS / "forge_stdout.py", 1)):
        proc = subprocess.run(
            [sys.executable, "-m", "attnkata", "check", "sdpa", str(name), "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert proc.returncode == code, proc.stderr
        import json

        data = json.loads(proc.stdout)
        assert data["isolation"]["backend"] == "subprocess"
        assert "ATTNKATA_SANDBOX" in data["isolation"]["note"]


@pytest.mark.slow
def test_attackers_in_a_batch_change_no_other_grade_or_file(tmp_path: Path) -> None:
    """With the static policy relaxed to a warning, only the sandbox stands between the
    attackers and their classmates: every honest student still passes, with their file intact,
    and the journal has exactly one line per submission."""
    import json

    from typer.testing import CliRunner

    from attnkata.checker.sets.grade import JOURNAL, GradeOptions, grade_set
    from attnkata.checker.sets.manifest import MANIFEST_PATH
    from attnkata.cli.app import app

    bundle = tmp_path / "set"
    res = CliRunner().invoke(
        app, ["set", "create", "--katas", "sdpa", "--out", str(bundle), "--public-tests", "0"]
    )
    assert res.exit_code == 0, res.output
    manifest = bundle / MANIFEST_PATH
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["grading"]["policy"] = "warn"
    manifest.write_text(json.dumps(data), encoding="utf-8")
    subs = tmp_path / "subs"
    attackers = {
        "mallory": "read_others.py",
        "eve": "forge_fds.py",
        "trent": "kill_everything.py",
        "oscar": "daemon.py",
        "peggy": "forge_stdout.py",
    }
    honest = ("alice", "bob", "carol")
    for student in honest:
        (subs / student).mkdir(parents=True)
        shutil.copy(REFERENCE, subs / student / "sdpa.py")
    for student, attack in attackers.items():
        (subs / student).mkdir(parents=True)
        shutil.copy(ATTACKS / attack, subs / student / "sdpa.py")
    before = {s: (subs / s / "sdpa.py").read_bytes() for s in (*honest, *attackers)}
    out = tmp_path / "out"
    results = grade_set(bundle, subs, GradeOptions(jobs=2, timeout=8, call_timeout=2, out=out))
    for student in honest:
        assert results.entry(student, "sdpa").status == "pass", student
    for student in attackers:
        assert results.entry(student, "sdpa").status != "pass", student
    assert {s: (subs / s / "sdpa.py").read_bytes() for s in before} == before
    lines = [json.loads(line) for line in (out / JOURNAL).read_text().splitlines() if line.strip()]
    assert sorted(r["student"] for r in lines) == sorted((*honest, *attackers))
    time.sleep(0.2)
    assert _marked() == []


# Last in the module: the fallback's zygote must not serve the tests above.
@pytest.mark.parametrize("name", [n for n in ALL if n not in POLICY_ONLY])
@pytest.mark.parametrize("backend", ["namespaces", "subprocess"])
def test_attack_is_contained(
    backend: str, name: str, bait: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend == "subprocess" and name not in FALLBACK_SAFE:
        pytest.skip("not contained by the fallback (README: threat model)")
    _use(backend, monkeypatch)
    host.zygote().wait_ready()  # the first test of a backend must not time the sandbox's own start
    rss = _rss()
    q, k, v = _inputs()
    t0 = time.monotonic()
    verdict = "pass"
    with Candidate(ATTACKS / name, LIMITS) as c:
        try:
            out = c.call(FN, (q, k, v))
            ok = (
                isinstance(out.value, torch.Tensor)
                and out.value.shape == q.shape
                and torch.allclose(out.value, _expected(q, k, v))
                and not out.mutated
            )
            verdict = "pass" if ok else "fail"
        except CandidateFailure as exc:
            verdict = exc.status
        elapsed = time.monotonic() - t0
    assert verdict != "pass", name
    assert elapsed < LIMITS.call_timeout + 2 + 1.5, (name, elapsed)  # + spawn and load
    time.sleep(0.2)
    assert _leftovers() == [], name
    assert _marked() == [], name
    assert (ATTACKS / name).read_text().startswith("#"), "the graded file itself is untouched"
    assert _rss() - rss < GRADER_GROWTH_LIMIT, name


def test_only_library_folders_are_bound_and_an_installed_attnkata_is_hidden(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    site = tmp_path / "venv" / "lib" / "site-packages"
    (site / "attnkata" / "reference").mkdir(parents=True)
    checkout = tmp_path / "checkout"
    (checkout / "reference").mkdir(parents=True)
    work = tmp_path / "work"
    work.mkdir()
    for package, path_entries, hidden in (
        (site / "attnkata", [str(site), str(work)], [str(site / "attnkata")]),
        (checkout, [str(checkout), str(tmp_path)], []),
    ):
        monkeypatch.setattr(host, "_PACKAGE", package)
        monkeypatch.setattr(sys, "path", path_entries)
        monkeypatch.setattr(host.tempfile, "gettempdir", lambda: "/nonexistent-tmp")
        config = host._config("namespaces", str(tmp_path / "h"))
        assert config["hide"] == hidden
        for entry in config["pythonpath"]:
            assert not host._inside(str(package), entry) or entry == str(site)
    assert str(checkout) not in config["pythonpath"] and str(tmp_path) not in config["pythonpath"]
