"""The grading process's side of the sandbox: starts the zygote, asks it for candidate
processes, kills them, and says which isolation is in force.

One zygote per grading process (a batch worker has its own), started early and reused: every
candidate is a fresh fork of it in namespaces of its own, so candidates never share anything
with each other or with the zygote. Killing the launcher ends the zygote's pid namespace and
with it every process a candidate ever started.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from attnkata.checker.errors import KataError

MODES = ("auto", "namespaces", "subprocess")
ENV_MODE = "ATTNKATA_SANDBOX"
READY_TIMEOUT = 120.0  # a cold torch import on a loaded 2-core machine can take tens of seconds

_PACKAGE = Path(__file__).resolve().parent.parent.parent  # the installed `attnkata` folder
# What the zygote needs of attnkata: the harness, nothing else (no references, no graders).
_HARNESS_FILES = (
    "checker/sandbox/child.py",
    "checker/sandbox/wire.py",
    "checker/sandbox/autograd.py",
    "checker/sandbox/zygote.py",
    "checker/sandbox/linux.py",
    "checker/sandbox/triton_guard.py",
    "checker/sandbox/layouts.py",
    "checker/sandbox/speed.py",
)
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
)
# Imported by the zygote so that candidates find them loaded: what the static policy allows
# (a fallback running as an unprivileged uid may not be able to read the library folders).
_PREIMPORT = (
    "einops",
    "einops._backends",
    "einops._torch_specific",
    "math",
    "cmath",
    "functools",
    "itertools",
    "dataclasses",
    "collections",
    "typing",
    "typing_extensions",
    "enum",
    "abc",
    "numbers",
    "warnings",
    "copy",
    "random",
    "numpy.random",
    "numpy.linalg",
    "torch.nn.attention.flex_attention",
    "importlib.util",
    "traceback",
)


class SandboxUnavailable(KataError):
    """No sandbox could be started at all (not even the fallback)."""

    exit_code = 3


@dataclass
class Spawn:
    token: int
    sock: socket.socket
    log_path: str
    limits: dict[str, Any]


@dataclass
class _Cgroups:
    """Memory and process-count limits for the zygote's whole tree, where cgroups are writable."""

    dirs: list[str] = field(default_factory=list)
    memory_file: str | None = None
    usage_file: str | None = None

    @classmethod
    def create(cls, name: str, pids_max: int) -> _Cgroups:
        cg = cls()
        if os.geteuid() != 0:
            return cg
        v2 = "/sys/fs/cgroup/cgroup.controllers"
        try:
            if os.path.exists(v2):
                d = f"/sys/fs/cgroup/attnkata-{name}"
                os.mkdir(d)
                cg.dirs.append(d)
                Path(d, "pids.max").write_text(str(pids_max))
                cg.memory_file, cg.usage_file = f"{d}/memory.max", f"{d}/memory.current"
                return cg
            for ctrl in ("memory", "pids"):
                base = f"/sys/fs/cgroup/{ctrl}"
                if not os.access(base, os.W_OK):
                    continue
                parent = f"{base}/attnkata"
                os.makedirs(parent, exist_ok=True)
                for stale in glob.glob(f"{parent}/*/"):
                    if not _owner_alive(os.path.basename(stale.rstrip("/"))):
                        with contextlib.suppress(OSError):
                            os.rmdir(stale)  # left by a killed grader; one in use refuses
                d = f"{parent}/{name}"
                os.mkdir(d)
                cg.dirs.append(d)
                if ctrl == "pids":
                    Path(d, "pids.max").write_text(str(pids_max))
                else:
                    cg.memory_file, cg.usage_file = (
                        f"{d}/memory.limit_in_bytes",
                        f"{d}/memory.usage_in_bytes",
                    )
        except OSError:
            cg.remove()
            return cls()
        return cg

    @property
    def memory(self) -> bool:
        return self.memory_file is not None

    @property
    def pids(self) -> bool:
        return any(os.path.exists(f"{d}/pids.max") for d in self.dirs)

    def add(self, pid: int) -> None:
        try:
            for d in self.dirs:
                Path(d, "cgroup.procs").write_text(str(pid))
        except OSError:  # the rlimits still hold; the isolation label says which applies
            self.remove()
            self.memory_file = self.usage_file = None

    def limit_memory(self, extra_mb: int) -> None:
        """The tree's limit: what the zygote already uses plus the candidate's allowance."""
        if not self.memory_file or not self.usage_file:
            return
        with contextlib.suppress(OSError, ValueError):
            usage = int(Path(self.usage_file).read_text())
            Path(self.memory_file).write_text(str(usage + ((extra_mb + 256) << 20)))

    def remove(self) -> None:
        for d in self.dirs:
            for _ in range(20):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.025)
        self.dirs = []


def _owner_alive(name: str) -> bool:
    """Cgroups are named z<pid>-<n> / s<pid>-<n> after the grading process that made them."""
    try:
        os.kill(int(name[1:].split("-")[0]), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def _harness() -> str:
    """A world-readable copy of the harness modules as a tiny `attnkata` package."""
    tmp = tempfile.mkdtemp(prefix="attnkata-sandbox-")
    os.chmod(tmp, 0o755)
    lib = Path(tmp, "lib")
    for pkg in ("attnkata", "attnkata/checker", "attnkata/checker/sandbox"):
        (lib / pkg).mkdir(parents=True)
        (lib / pkg / "__init__.py").write_text("")
    for rel in _HARNESS_FILES:
        shutil.copyfile(_PACKAGE / rel, lib / "attnkata" / rel)
    for dirpath, dirnames, filenames in os.walk(tmp):
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)
    Path(tmp, "root").mkdir(mode=0o755)
    return tmp


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _library_path(path: str, package: str, tmp: str) -> bool:
    site = os.path.basename(path) in ("site-packages", "dist-packages")
    # A virtual environment may live under the temp dir (CI, throwaway venvs) or in the
    # checkout (`.venv`, whose packages, e.g. an extra's, may be installed nowhere else): its
    # site-packages is a library folder like any other; the rest of those folders is not.
    if (_inside(path, package) or _inside(path, tmp)) and not site or path == "/":
        return False
    return not _inside(package, path) or site


def _config(mode: str, harness: str, native: bool = False) -> dict[str, Any]:
    package = str(_PACKAGE)
    tmp = os.path.realpath(tempfile.gettempdir())
    # Library paths only: not the attnkata tree (its references), not a folder that holds it
    # unless it is a site-packages (then the package is covered, see "hide"), not a temp dir.
    pythonpath = [
        p
        for p in sys.path
        if p and os.path.isdir(p) and _library_path(os.path.realpath(p), package, tmp)
    ]
    symlinks, binds = {}, []
    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            symlinks[d.lstrip("/")] = os.readlink(d)
        elif os.path.isdir(d):
            binds.append(d)
    wanted = [
        os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, *pythonpath)
    ]
    for p in sorted(set(wanted), key=len):
        if not any(_inside(p, b) for b in binds) and os.path.isdir(p):
            binds.append(p)
    binds += [f for f in _ETC_FILES if os.path.exists(f)]
    binds += [
        d for d in ("/sys/devices/system/cpu", "/sys/devices/system/node") if os.path.isdir(d)
    ]
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
        **TRITON_CACHES,
    }
    if not native:
        # Candidates' @triton.jit kernels run in Triton's interpreter: a check must run
        # anywhere, and the interpreter is where every load and store can be checked. Set from
        # the start: whatever imports triton in the zygote (torch may), imports it for that.
        env["TRITON_INTERPRET"] = "1"
    for name in ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH"):
        if name in os.environ:
            env[name] = os.environ[name]
    return {
        "mode": mode,
        "parent": os.getpid(),
        "harness": f"{harness}/lib",
        # As root the candidate always runs as the unprivileged uid 65534: as root, kill(-1)
        # alone would reach every process on the machine. The fallback sees the host's file
        # system, where that uid may not read the library folders (/root/.pyenv is mode 700):
        # what the zygote did not import already then fails to import, never runs as root.
        "drop_root": os.geteuid() == 0,
        "mountpoint": f"{harness}/root",
        "binds": binds,
        "symlinks": symlinks,
        # An installed (not editable) attnkata under site-packages holds the references.
        "hide": [package] if any(_inside(package, b) for b in binds) else [],
        "devices": sorted(glob.glob("/dev/nvidia*")),
        "pythonpath": pythonpath,
        "env": env,
        "preimport": list(_PREIMPORT),
        # (the native zygote serves one timing call per check: warm-ups would only delay it)
        "warm": [] if native else [WARM_UPS[w] for w in sorted(_wanted_warm())],
        # Only the native zygote's candidates may start programs (ptxas compiles their GPU
        # kernels); they serve the informative speed tier alone (zygote._candidate).
        "allow_exec": native,
    }


def requested_mode() -> str:
    mode = os.environ.get(ENV_MODE, "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise KataError(f"{ENV_MODE}={mode!r}: expected one of {', '.join(MODES)}")
    return mode


class Usage(NamedTuple):
    cpu: float  # seconds of CPU (user + system), the reaped children's included
    running: bool  # a process of the tree is running or runnable (state R)


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def tree_usage(root: int) -> Usage | None:
    """Usage of `root` and every process below it, from /proc (the kernel's own counts: a
    candidate cannot change them). None where /proc is not there."""
    cpu, running, stack, seen = 0, False, [root], set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            tasks = os.listdir(f"/proc/{pid}/task")
        except (FileNotFoundError, ProcessLookupError):
            continue  # it ended meanwhile: its time is in its parent's reaped children
        except OSError:
            return None
        running |= fields[0] == b"R"
        cpu += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                    stack.extend(int(c) for c in fh.read().split())
            except OSError:
                continue
    return Usage(cpu / _TICK, running)


class Zygote:
    """One running zygote. `spawn` a candidate, `kill` it, `close` the whole sandbox."""

    def __init__(self, mode: str, note: str = "", native: bool = False) -> None:
        self.mode = mode
        self.note = note
        # Triton kernels compiled for the GPU, not interpreted (the `speed` tier's zygote): a
        # process that imported triton for its interpreter can never compile for a GPU.
        self.native = native
        self.owner = os.getpid()
        self.harness = _harness()
        self.cgroups = _Cgroups.create(f"{mode[0]}{os.getpid()}-{id(self):x}", pids_max=256)
        config = _config(mode, self.harness, native)
        self.drop_root = config["drop_root"]
        self.ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.log = tempfile.NamedTemporaryFile(
            prefix="attnkata-zygote-", suffix=".log", delete=False
        )  # noqa: SIM115
        lib = f"{self.harness}/lib"
        boot = f"import sys; sys.path.insert(0, {lib!r}); from attnkata.checker.sandbox import zygote; zygote.main()"
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", boot, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
            start_new_session=True,
            env=config["env"],
            cwd="/",
        )
        theirs.close()
        self.cgroups.add(self.proc.pid)  # before it does anything: the whole tree is inside
        self.ctl.send(json.dumps(config).encode())
        self.ready = False
        self.failed: str | None = None
        self.next_token = 0
        self.spawned: dict[int, bool] = {}
        self.exits: dict[int, int] = {}
        # Candidates told to die whose death is not confirmed yet: token -> deadline (see release).
        self.dying: dict[int, float] = {}
        # With keep_spare (a process that grades again and again: `kata watch`, batch workers),
        # the next candidate's process is started while this one is graded, with the same
        # limits: namespaces, scratch and privileges are set up before the file exists, and a
        # re-check only sends its source.
        self.keep_spare = False
        self.spare: Spawn | None = None
        self.limits: dict[str, Any] | None = None  # the last candidate's

    # -- state ----------------------------------------------------------------------------------
    @property
    def isolation(self) -> dict[str, Any]:
        """What protects the grader, for results and reports."""
        ns = self.mode == "namespaces"
        uid = (
            "unprivileged (65534)"
            if self.drop_root
            else "yours, no capabilities"
            if ns
            else "yours"
        )
        return {
            "backend": self.mode,
            "namespaces": ["user", "pid", "mount", "net", "ipc", "uts"] if ns else [],
            "filesystem": "private read-only root, scratch tmpfs"
            if ns
            else "host filesystem, temp scratch dir",
            "uid": uid,
            "memory": "cgroup + RLIMIT_AS" if self.cgroups.memory else "RLIMIT_AS per process",
            "processes": "cgroup pids"
            if self.cgroups.pids
            else "RLIMIT_NPROC"
            if ns or self.drop_root
            else "none",
            "note": self.note,
        }

    def usage(self) -> Usage | None:
        """What the kernel says the sandbox's processes have done: CPU seconds used so far by
        all of them (the zygote's, its spare's and the candidate's; only a candidate's call
        moves it), and whether any of them is running or waiting for a CPU now. None where
        /proc cannot tell (not Linux): callers fall back to the wall clock."""
        return tree_usage(self.proc.pid)

    def alive(self) -> bool:
        return self.failed is None and self.proc.poll() is None

    def _pump(self, timeout: float) -> None:
        """Read control messages for up to `timeout` seconds (returns after the first batch)."""
        ready, _, _ = select.select([self.ctl], [], [], max(timeout, 0))
        while ready:
            try:
                data = self.ctl.recv(65536)
            except OSError:
                data = b""
            if not data:
                self.failed = self.failed or f"the sandbox ended ({self._log_tail()})"
                return
            msg = json.loads(data)
            op = msg.get("op")
            if op == "ready":
                self.ready = True
            elif op == "failed":
                self.failed = str(msg.get("error"))
            elif op == "spawned":
                self.spawned[msg["token"]] = bool(msg.get("ok"))
            elif op == "exit":
                self.exits[msg["token"]] = int(msg["status"])
            ready, _, _ = select.select([self.ctl], [], [], 0)

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        end = time.monotonic() + timeout
        while not self.ready and self.failed is None:
            left = end - time.monotonic()
            if left <= 0:
                self.failed = f"the sandbox did not start within {timeout:.0f} s"
                break
            self._pump(min(left, 0.5))
            if not self.ready and self.proc.poll() is not None and self.failed is None:
                self._pump(0.05)
                self.failed = self.failed or f"the sandbox exited ({self._log_tail()})"
        if self.failed is not None:
            self.close()
            raise SandboxUnavailable(f"the {self.mode} sandbox could not start: {self.failed}")

    def _log_tail(self) -> str:
        try:
            return Path(self.log.name).read_text(errors="replace")[-400:].strip() or "no output"
        except OSError:
            return "no output"

    # -- candidates -------------------------------------------------------------------------------
    def spawn(self, source: str, name: str, limits: dict[str, Any]) -> Spawn:
        """A confined process running the harness on `source` (saved as `name` in its scratch)."""
        import numpy as np

        from attnkata.checker.sandbox import wire

        self.settle()  # the last candidate is gone before the next one starts
        self.wait_ready()
        self.cgroups.limit_memory(int(limits.get("memory_mb", 0)))
        if self.spare is not None and (
            self.spare.limits != limits or not self._started(self.spare)
        ):
            self._drop_spare()  # made for other limits, or it did not start
            self.settle()
        started, self.spare = self.spare or self._start(limits), None
        if not self._started(started):
            started.sock.close()
            raise SandboxUnavailable(
                f"the sandbox could not start a process for {name}: {self.failed or 'no answer'}"
            )
        try:
            # Raw UTF-8 bytes, not a JSON string (where a control character takes 6 bytes): the
            # frame never grows past the source limit plus its header (zygote.SOURCE_FRAME_BYTES).
            wire.send(
                started.sock,
                {"name": name, "source": np.frombuffer(source.encode("utf-8"), np.uint8)},
            )
        except OSError:
            pass  # it died meanwhile: the grader's read reports it
        self.limits = limits
        return started

    def _start(self, limits: dict[str, Any]) -> Spawn:
        """Ask for a confined process that waits for its source (answered later: _started)."""
        self.next_token += 1
        token = self.next_token
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        fd, log_path = tempfile.mkstemp(prefix="attnkata-child-", suffix=".log")
        try:
            message = json.dumps({"op": "spawn", "token": token, "limits": limits}).encode()
            socket.send_fds(self.ctl, [message], [theirs.fileno(), fd])
        except OSError as exc:
            self.failed = f"the sandbox stopped answering ({exc})"
            mine.close()
            raise SandboxUnavailable(self.failed) from None
        finally:
            theirs.close()
            os.close(fd)
        return Spawn(token, mine, log_path, limits)

    def _started(self, spawn: Spawn, wait: float = 30.0) -> bool:
        """The zygote reported `spawn`'s process as started (and it has not ended since)."""
        end = time.monotonic() + wait
        while spawn.token not in self.spawned and self.failed is None and time.monotonic() < end:
            self._pump(0.5)
        return bool(self.spawned.get(spawn.token)) and spawn.token not in self.exits

    def exit_status(self, token: int, wait: float = 0.0) -> int | None:
        end = time.monotonic() + wait
        while token not in self.exits and self.alive():
            left = end - time.monotonic()
            if left <= 0:
                break
            self._pump(min(left, 0.1))
        return self.exits.pop(token, None)

    def kill(self, token: int, wait: float = 2.0) -> int | None:
        """Kill a candidate's whole tree; its wait status, or None if the zygote had to go."""
        if token in self.exits:
            return self.exits.pop(token)
        if self.alive():
            with contextlib.suppress(OSError):
                self.ctl.send(json.dumps({"op": "kill", "token": token}).encode())
            status = self.exit_status(token, wait)
            if status is not None:
                return status
        self.close()  # a zygote that cannot kill on demand is not trusted with another candidate
        return None

    def release(self, token: int, wait: float = 2.0) -> None:
        """Kill a candidate that is done with, without waiting for its death to be reported:
        the kill is sent now, the confirmation is awaited by settle(), before this zygote
        starts another candidate or is handed out again (host.zygote()) and at shutdown. That
        wait was 19 ms of a profiled gqa check; the guarantee is kill()'s, only later.
        With keep_spare, the next candidate's process is started now (see spawn)."""
        self._send_kill(token, wait)
        if self.keep_spare and self.spare is None and self.limits is not None and self.alive():
            # Started after the kill (the zygote reads its requests in order); it runs nothing
            # of a candidate's until spawn() has seen every death confirmed (settle).
            with contextlib.suppress(SandboxUnavailable):
                self.spare = self._start(self.limits)

    def _send_kill(self, token: int, wait: float) -> None:
        if token in self.exits:
            self.exits.pop(token)
            return
        if not self.alive():
            return
        try:
            self.ctl.send(json.dumps({"op": "kill", "token": token}).encode())
        except OSError:
            self.close()
            return
        self.dying[token] = time.monotonic() + wait

    def _drop_spare(self) -> None:
        """Its end of the channel closes (it leaves if still there) and it is killed."""
        if self.spare is not None:
            spawn, self.spare = self.spare, None
            spawn.sock.close()
            self._send_kill(spawn.token, 2.0)
            with contextlib.suppress(OSError):
                os.unlink(spawn.log_path)

    def settle(self) -> None:
        """Wait for every released candidate's death; a zygote that cannot confirm one in time
        is closed, as kill() does (one that cannot kill on demand is not trusted again)."""
        while self.dying and self.alive():
            for token in [t for t in self.dying if t in self.exits]:
                self.exits.pop(token)
                del self.dying[token]
            if not self.dying:
                return
            left = min(self.dying.values()) - time.monotonic()
            if left <= 0:
                break
            self._pump(min(left, 0.1))
        if self.dying:
            self.dying.clear()
            self.close()

    def close(self) -> None:
        if self.owner != os.getpid():
            return  # a forked copy: the parent's zygote is the parent's to close
        self._drop_spare()
        with contextlib.suppress(OSError):
            self.ctl.close()
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)
        self.failed = self.failed or "closed"
        self.cgroups.remove()
        shutil.rmtree(self.harness, ignore_errors=True)
        with contextlib.suppress(OSError):
            self.log.close()
            os.unlink(self.log.name)


# -- the process's zygote ---------------------------------------------------------------------------
_current: Zygote | None = None
_fallback_note = ""


def _namespaces_possible() -> str:
    if not sys.platform.startswith("linux"):
        return f"Linux namespaces are not available on {sys.platform}"
    if not os.path.exists("/proc/self/ns/user"):
        return "this kernel has no user namespaces"
    return ""


def _new_zygote(native: bool = False) -> Zygote:
    mode = requested_mode()
    if mode != "auto":
        note = f"forced by {ENV_MODE}={mode}" if mode == "subprocess" else ""
        z = Zygote(mode, note=note, native=native)
    else:
        why = _fallback_note or _namespaces_possible()
        z = (
            Zygote("subprocess", note=f"namespaces unavailable: {why}", native=native)
            if why
            else Zygote("namespaces", native=native)
        )
    z.keep_spare = _spares and not native
    return z


_native: Zygote | None = None


def native_zygote() -> Zygote:
    """A second zygote whose candidates compile Triton kernels for the GPU (the Triton katas'
    `speed` tier), started on first use; the same sandbox as `zygote()`'s."""
    global _native
    if _native is None or _native.owner != os.getpid() or not _native.alive():
        _native = _new_zygote(native=True)
    _native.wait_ready()
    return _native


_spares = False


def keep_spares() -> None:
    """This process grades again and again (`kata watch`, a batch worker): each candidate's
    successor process is started as soon as it is released (Zygote.keep_spare)."""
    global _spares
    _spares = True
    if _current is not None:
        _current.keep_spare = True


def zygote(start_only: bool = False) -> Zygote:
    """This process's running zygote, started on first use (or after the last one died).
    In "auto" mode a namespaces zygote that cannot start gives way to the fallback, once."""
    global _current, _fallback_note
    if _current is not None and _current.owner == os.getpid() and _current.dying:
        _current.settle()  # closes it when a released candidate did not die in time
    if _current is None or _current.owner != os.getpid() or not _current.alive():
        _current = _new_zygote()
    if start_only:
        return _current
    try:
        _current.wait_ready()
    except SandboxUnavailable as exc:
        mode, _current = _current.mode, None
        if mode != "namespaces" or requested_mode() != "auto":
            raise
        _fallback_note = str(exc)
        return zygote()
    return _current


def ready() -> bool:
    """This process has a started, answering zygote (a check will not wait for one)."""
    return (
        _current is not None
        and _current.owner == os.getpid()
        and _current.ready
        and _current.alive()
    )


def prestart(warm: Iterable[str] = ()) -> None:
    """Start the zygote now, without waiting for it: `kata check` overlaps its torch import
    with the grading process's own. `warm`: lazy parts of torch the kata's grader makes the
    candidate use, loaded once in the zygote instead of in every candidate (see WARM_UPS)."""
    _wanted_warm().update(w for w in warm if w in WARM_UPS)
    with contextlib.suppress(KataError, OSError):
        zygote(start_only=True)


# The meta device (graders build masks on it to check `device=` without a GPU) runs Python
# meta kernels whose first use imports ~800 modules (sympy, torch._refs...): 2.5-4 s in a fresh
# process. Only katas whose graders use it pay for it, once per zygote.
WARM_UPS = {
    "meta": "torch.ones(2, 3, device='meta').tril().masked_fill(torch.zeros(2, 3, dtype=torch.bool, "
    "device='meta'), 0.0).topk(1)",
    # The Triton katas: triton and its language module (~0.5 s), for the interpreter.
    "triton": "import triton, triton.language",
}
# Where Triton writes its caches: the candidate's own /tmp (a fresh tmpfs).
TRITON_CACHES = {
    "TRITON_HOME": "/tmp/triton",
    "TRITON_CACHE_DIR": "/tmp/triton/cache",
    "TRITON_DUMP_DIR": "/tmp/triton/dump",
    "TRITON_OVERRIDE_DIR": "/tmp/triton/override",
}
_warm: set[str] = set()
_warm_owner = os.getpid()


def _wanted_warm() -> set[str]:
    """This process's warm-ups: a forked grading worker starts without its parent's (each
    worker asks for what its own katas' graders need)."""
    global _warm_owner
    if _warm_owner != os.getpid():
        _warm.clear()
        _warm_owner = os.getpid()
    return _warm


def warm_ups_for(grader: Path) -> tuple[str, ...]:
    """The warm-ups a grader needs, from its source and its kata.toml (a grader that never
    says "meta" never sends a candidate there; a kata that `requires = ["triton"]` runs
    candidates' Triton kernels)."""
    source = grader.read_text(encoding="utf-8")
    with contextlib.suppress(OSError):
        source += (grader.parent / "kata.toml").read_text(encoding="utf-8")
    return tuple(name for name in WARM_UPS if f'"{name}"' in source or f"'{name}'" in source)


def shutdown() -> None:
    global _current, _native
    if _native is not None:
        if _native.owner == os.getpid():
            _native.settle()
        _native.close()
        _native = None
    if _current is not None:
        if _current.owner == os.getpid():
            _current._drop_spare()
            _current.settle()
        _current.close()
        _current = None


atexit.register(shutdown)
