"""Linux primitives the sandbox needs, through ctypes (Python 3.11 has no os.unshare, mount,
pivot_root or capset). Runs in the zygote and its children only; stdlib only."""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import signal

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4

_SYSCALLS = {  # (pivot_root, capset, mount_setattr)
    "x86_64": (155, 126, 442),
    "aarch64": (41, 91, 442),
}

_libc = ctypes.CDLL(None, use_errno=True)


class SandboxError(OSError):
    pass


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise SandboxError(err, f"{what}: {os.strerror(err)}")


def _nr(index: int) -> int:
    try:
        return _SYSCALLS[platform.machine()][index]
    except KeyError:
        raise SandboxError(0, f"no syscall table for {platform.machine()}") from None


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def mount(
    source: str | None, target: str, fstype: str | None, flags: int = 0, data: str | None = None
) -> None:
    enc = [None if s is None else s.encode() for s in (source, target, fstype, data)]
    _check(_libc.mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), enc[3]), f"mount {target}")


def umount(target: str, flags: int = MNT_DETACH) -> None:
    _check(_libc.umount2(target.encode(), ctypes.c_int(flags)), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    _check(_libc.syscall(_nr(0), new_root.encode(), put_old.encode()), "pivot_root")


def prctl(option: int, arg: int = 0, arg3: int = 0) -> None:
    _check(
        _libc.prctl(
            ctypes.c_int(option),
            ctypes.c_ulong(arg),
            ctypes.c_ulong(arg3),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
        ),
        f"prctl {option}",
    )


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    prctl(PR_SET_PDEATHSIG, sig)


# Per-mount flags that a user namespace may not clear on a bind mount it did not create:
# a read-only remount must repeat them (statvfs bit -> mount bit).
_LOCKED = (
    (os.ST_NOSUID, MS_NOSUID),
    (os.ST_NODEV, MS_NODEV),
    (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NOATIME, MS_NOATIME),
    (os.ST_NODIRATIME, MS_NODIRATIME),
    (os.ST_RELATIME, MS_RELATIME),
)


def bind_readonly(source: str, target: str) -> None:
    """Bind `source` at `target` (with its submounts), then make the whole tree read-only."""
    mount(source, target, None, MS_BIND | MS_REC)
    kept = 0
    f_flag = os.statvfs(target).f_flag
    for st_bit, ms_bit in _LOCKED:
        if f_flag & st_bit:
            kept |= ms_bit
    mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | kept)
    _readonly_submounts(target)


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def _readonly_submounts(target: str) -> None:
    """mount_setattr(AT_RECURSIVE, MOUNT_ATTR_RDONLY): submounts too (Linux >= 5.12). Older
    kernels keep the top mount read-only only; said in the README's threat model."""
    attr = _MountAttr(attr_set=0x1)  # MOUNT_ATTR_RDONLY
    at_fdcwd, at_recursive = -100, 0x8000
    _libc.syscall(
        _nr(2),
        ctypes.c_int(at_fdcwd),
        target.encode(),
        ctypes.c_uint(at_recursive),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_bounding_set() -> None:
    """Empty the bounding set, so that no later execve can grant any capability (needs
    CAP_SETPCAP: before any change of uid)."""
    for cap in range(64):
        try:
            prctl(PR_CAPBSET_DROP, cap)
        except SandboxError:
            break  # past the last capability this kernel knows


def drop_capabilities() -> None:
    """Clear the ambient set, then the effective/permitted/inheritable sets of this process."""
    try:
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    except SandboxError:
        pass
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    _check(_libc.syscall(_nr(1), ctypes.byref(header), ctypes.byref(data)), "capset")


def no_new_privs() -> None:
    prctl(PR_SET_NO_NEW_PRIVS, 1)


def set_limit(which: int, value: int) -> None:
    """Soft and hard limit to `value`, or to the hard limit already in force if it is lower."""
    hard = resource.getrlimit(which)[1]
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(which, (value, value))


def write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


# -- seccomp: the kernel keyring, and starting programs ----------------------------------------
# Every candidate runs as the same uid, and the kernel keeps one user keyring per uid (per user
# namespace): a key one candidate adds, the next could read. No solution needs keys, so the
# three keyring syscalls fail with EPERM, for each ABI a process on this machine can call them
# through (x86-64 with x32, i386 via int 0x80, aarch64).
# Nor does a solution start programs: a fresh interpreter started from candidate code (any
# library's subprocess call will do: torch.utils.collect_env.run) would have none of the
# sandboxed process's own rules -- the fused-attention ban at the dispatcher, the op trace,
# the efficient tiers' address-space cap sized for a process that already maps torch. So
# execve and execveat fail with EPERM too (the harness never execs once a candidate runs).
_AUDIT_ARCH = {"x86_64": 0xC000003E, "i386": 0x40000003, "aarch64": 0xC00000B7}
_KEYRING_SYSCALLS = {"x86_64": (248, 249, 250), "i386": (286, 287, 288), "aarch64": (217, 218, 219)}
_EXEC_SYSCALLS = {"x86_64": (59, 322), "i386": (11, 358), "aarch64": (221, 281)}
_X32_BIT = 0x40000000
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x06
_SECCOMP_RET_ALLOW, _SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_ushort),
        ("jt", ctypes.c_ubyte),
        ("jf", ctypes.c_ubyte),
        ("k", ctypes.c_uint),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _filter(exec_too: bool) -> list[tuple[int, int, int, int]]:
    """The BPF program: per architecture, load the syscall number and send the keyring calls
    (and exec, with `exec_too`; on x86-64, every x32 call) to `deny`; anything else is allowed."""
    prog: list[tuple[int, int, int, int]] = []
    deny_at: list[int] = []  # instructions whose jt jumps to `deny`, patched below
    for arch, keyring in _KEYRING_SYSCALLS.items():
        numbers = keyring + (_EXEC_SYSCALLS[arch] if exec_too else ())
        block = 2 + (arch == "x86_64") + len(numbers) + 1  # the instructions after the arch test
        prog.append((_BPF_LD_W_ABS, 0, 0, 4))  # seccomp_data.arch
        prog.append((_BPF_JEQ_K, 0, block, _AUDIT_ARCH[arch]))
        prog.append((_BPF_LD_W_ABS, 0, 0, 0))  # seccomp_data.nr
        if arch == "x86_64":
            deny_at.append(len(prog))
            prog.append((_BPF_JGE_K, 0, 0, _X32_BIT))
        for nr in numbers:
            deny_at.append(len(prog))
            prog.append((_BPF_JEQ_K, 0, 0, nr))
        prog.append((_BPF_RET_K, 0, 0, _SECCOMP_RET_ALLOW))
    prog.append((_BPF_RET_K, 0, 0, _SECCOMP_RET_ALLOW))  # an architecture not listed
    deny = len(prog)
    prog.append((_BPF_RET_K, 0, 0, _SECCOMP_RET_ERRNO | 1))  # EPERM
    for i in deny_at:
        code, _, jf, k = prog[i]
        prog[i] = (code, deny - i - 1, jf, k)
    return prog


def deny_syscalls(exec_too: bool = True) -> None:
    """Install the filter on this process and everything it starts (after no_new_privs)."""
    prog = _filter(exec_too)
    filters = (_SockFilter * len(prog))(*[_SockFilter(*ins) for ins in prog])
    fprog = _SockFprog(len(prog), filters)
    _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")
