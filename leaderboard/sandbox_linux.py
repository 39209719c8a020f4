"""Linux pieces of :mod:`leaderboard.sandbox`: seccomp, the process tree, user ids, cgroups, paths.

Nothing here starts a process; :class:`leaderboard.sandbox.Sandbox` puts these together.
"""

from __future__ import annotations

import fcntl
import functools
import os
import platform
import random
import resource
import shutil
import stat
import struct
import tempfile
import time
from pathlib import Path

__all__ = [
    "LOCKS",
    "UID_BASE",
    "Output",
    "cgroup_oom",
    "cpu_seconds",
    "join_cgroup",
    "make_cgroup",
    "release_uid",
    "remove_cgroup",
    "cgroup_parent",
    "children",
    "claim_uid",
    "first_closed",
    "is_closed",
    "folder_bytes",
    "make_scratch",
    "owned_by",
    "parents",
    "private_memory",
    "resident",
    "seccomp_program",
    "state",
    "tree",
    "under",
]

#: As root, each sealed tree runs as its own user id, drawn from [UID_BASE, UID_BASE + 2**20).
UID_BASE = 2_000_000_000
#: Where the user-id locks live (one file per id in use; the lock dies with its holder).
LOCKS = (Path("/run/tsg-sandbox") if os.access("/run", os.W_OK)
         else Path(tempfile.gettempdir()) / "tsg-sandbox-locks")

# Seccomp ----------------------------------------------------------------------------------------
#: Per machine: audit architecture; the refused system calls: unshare, setns, mount, umount2,
#: pivot_root, chroot, mount_setattr, open_tree, move_mount, fsopen, fsconfig, fsmount, fspick,
#: keyctl, add_key, request_key, bpf, perf_event_open, userfaultfd, memfd_create, shmget,
#: io_uring_setup; clone; clone3.
_SYSCALLS = {
    "x86_64": (0xC000003E, (272, 308, 165, 166, 155, 161, 442, 428, 429, 430, 431, 432, 433,
                            250, 248, 249, 321, 298, 323, 319, 29, 425), 56, 435),
    "aarch64": (0xC00000B7, (97, 268, 40, 39, 41, 51, 442, 428, 429, 430, 431, 432, 433, 219,
                             217, 218, 280, 241, 282, 279, 194, 425), 220, 435),
}
_CLONE_NS = 0x7E020000  # CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET}
_ALLOW, _ERRNO, _EPERM, _ENOSYS = 0x7FFF0000, 0x00050000, 1, 38


@functools.cache
def seccomp_program() -> bytes | None:
    """The sandbox's seccomp filter, a classic BPF program (None on other machines).

    The refused calls (``_SYSCALLS``: new namespaces, mounts, keyrings, BPF, perf, userfaultfd,
    ``memfd_create`` and SysV shared memory, whose memory no process owns, io_uring) fail with
    EPERM; ``clone`` with a new-namespace flag too; ``clone3`` (whose flags a filter cannot
    read) with ENOSYS, so the C library falls back to ``clone``; a call from another ABI (i386,
    x32) with EPERM.
    """
    spec = _SYSCALLS.get(platform.machine())
    if spec is None:
        return None
    arch, refused, clone, clone3 = spec
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    prog: list[tuple[int, str | None, str | None, int]] = [
        (ld, None, None, 4), (jeq, None, "deny", arch), (ld, None, None, 0)]
    if arch == 0xC000003E:
        prog.append((jge, "deny", None, 0x40000000))  # the x32 ABI
    prog += [(jeq, "deny", None, nr) for nr in refused]
    prog += [(jeq, "enosys", None, clone3), (jeq, "clone", None, clone),
             (ret, None, None, _ALLOW)]
    labels = {"clone": len(prog), "deny": len(prog) + 3, "enosys": len(prog) + 4}
    prog += [(ld, None, None, 16), (jset, "deny", None, _CLONE_NS), (ret, None, None, _ALLOW),
             (ret, None, None, _ERRNO | _EPERM), (ret, None, None, _ERRNO | _ENOSYS)]
    out = b""
    for i, (code, jt, jf, k) in enumerate(prog):
        jump = [0 if j is None else labels[j] - i - 1 for j in (jt, jf)]
        out += struct.pack("<HBBI", code, jump[0], jump[1], k)
    return out


# The process tree -------------------------------------------------------------------------------
def children(pid: int) -> tuple[list[int], int]:
    """The children of ``pid`` (every thread's) and its number of threads (0: gone)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return [], 0
    kids: list[int] = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                kids += [int(x) for x in fh.read().split()]
        except OSError:
            pass
    return kids, len(tids)


def tree(root: int) -> tuple[list[int], int]:
    """Every process of the tree under ``root`` (itself included) and its number of tasks."""
    pids, tasks, todo = [], 0, [root]
    while todo:
        pid = todo.pop()
        kids, n = children(pid)
        if n:
            pids.append(pid)
            tasks += n
        todo += kids
    return pids, tasks


def state(pid: int) -> str:
    """The process's state letter (``R``, ``S``, ``T`` stopped, ``Z``...), or ``""``."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            text = fh.read()
        return text[text.rindex(")") + 2]
    except (OSError, ValueError, IndexError):
        return ""


def owned_by(uid: int) -> list[int]:
    """Every live process (zombies left out) whose user is ``uid``."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid and state(int(name)) not in "ZX":
                    out.append(int(name))
            except OSError:
                pass
    return out


def cpu_seconds(pids: list[int]) -> float:
    """CPU time of ``pids`` and of the children each has reaped (user and system, seconds)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                text = fh.read()
            total += sum(int(x) for x in text[text.rindex(")") + 2:].split()[11:15])
        except (OSError, ValueError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


def resident(pids: list[int]) -> int:
    """Resident memory of ``pids`` (bytes, shared pages counted in each): an upper bound."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm") as fh:
                total += int(fh.read().split()[1]) * resource.getpagesize()
        except (OSError, IndexError, ValueError):
            pass
    return total


def _kib(text: str, key: str) -> int:
    i = text.find(key + ":")
    return 0 if i < 0 else int(text[i + len(key) + 1:].split(None, 1)[0]) * 1024


def private_memory(pid: int, tmpfs: tuple[str, ...] = ()) -> int:
    """Proportional anonymous and shared memory of ``pid`` (bytes, swap included).

    Pages of files in ``tmpfs`` folders that the process maps are left out (they are counted
    with what those folders hold); file pages (the page cache) are not memory of the process.
    """
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            text = fh.read()
    except OSError:
        return 0
    if "Pss_Anon:" not in text:  # an older kernel: everything but file pages
        return _kib(text, "Pss") - _kib(text, "Pss_File") + _kib(text, "SwapPss")
    shmem = _kib(text, "Pss_Shmem")
    if shmem > 16 * 2**20 and tmpfs:
        try:
            with open(f"/proc/{pid}/smaps") as fh:
                on_tmpfs = False
                for line in fh:
                    head = line.split(None, 5)
                    if "-" in head[0] and len(head) >= 5 and ":" in head[3]:  # a mapping
                        on_tmpfs = len(head) == 6 and head[5].startswith(tmpfs)
                    elif on_tmpfs and line.startswith("Pss:"):
                        shmem -= int(line.split()[1]) * 1024
        except (OSError, IndexError, ValueError):
            pass
    return _kib(text, "Pss_Anon") + max(shmem, 0) + _kib(text, "SwapPss")


# User ids, cgroups, scratch folders -------------------------------------------------------------
def claim_uid() -> tuple[int, int]:
    """A user id no process holds, locked for one sandbox: (uid, the lock's file descriptor).

    The lock (``flock``) is released when the descriptor is closed or its holder dies.
    """
    LOCKS.mkdir(mode=0o700, exist_ok=True)
    for _ in range(100):
        uid = UID_BASE + random.randrange(2**20)
        fd = os.open(LOCKS / f"uid-{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        if not owned_by(uid):
            return uid, fd
        os.close(fd)
    raise OSError("no free user id for the sandbox")


def release_uid(uid: int | None, fd: int) -> None:
    """Give back a user id of :func:`claim_uid` (its lock file removed, then unlocked)."""
    if uid is not None:
        try:
            os.unlink(LOCKS / f"uid-{uid}.lock")
        except OSError:
            pass
    os.close(fd)


def cgroup_parent() -> Path | None:
    """The evaluator's cgroup v2 folder, when it delegates memory and pids to new children."""
    try:
        line = next(x for x in Path("/proc/self/cgroup").read_text().splitlines()
                    if x.startswith("0::"))
        base = Path("/sys/fs/cgroup") / line[3:].lstrip("/")
        enabled = (base / "cgroup.subtree_control").read_text().split()
    except (OSError, StopIteration):
        return None
    if {"memory", "pids"} <= set(enabled) and os.access(base, os.W_OK):
        return base
    return None


def make_scratch() -> str:
    """A host scratch folder (unsealed runs); those left by evaluators that died are removed."""
    base = Path(tempfile.gettempdir())
    for old in base.glob("tsg-sandbox-*-*"):
        try:
            pid = int(old.name.split("-")[2])
        except (IndexError, ValueError):
            continue
        if pid != os.getpid() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(old, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"tsg-sandbox-{os.getpid()}-")


def folder_bytes(path: str) -> int:
    """Bytes the files under ``path`` occupy."""
    total = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def make_cgroup(memory_mb: int | None, max_procs: int) -> Path | None:
    """A new cgroup for one tree under :func:`cgroup_parent`, with its limits; None: none here."""
    parent = cgroup_parent()
    if parent is None:
        return None
    path = parent / f"tsg-sandbox-{os.getpid()}-{random.randrange(2**32):08x}"
    try:
        path.mkdir()
        if memory_mb is not None:
            (path / "memory.max").write_text(str(memory_mb * 2**20))
            (path / "memory.swap.max").write_text("0")
        (path / "pids.max").write_text(str(max_procs))
        (path / "memory.oom.group").write_text("1")  # an OOM kill takes the whole tree
    except OSError:
        remove_cgroup(path)
        return None
    return path


def join_cgroup(path: Path) -> None:  # pragma: no cover - runs between fork and exec
    """Move the calling process into the cgroup ``path``."""
    fd = os.open(path / "cgroup.procs", os.O_WRONLY)
    os.write(fd, b"0")
    os.close(fd)


def cgroup_oom(path: Path) -> bool:
    """Whether the kernel killed something in the cgroup for want of memory."""
    try:
        events = (path / "memory.events").read_text().split()
        return int(events[events.index("oom_kill") + 1]) > 0
    except (OSError, ValueError, IndexError):
        return False


def remove_cgroup(path: Path) -> None:
    """Remove the cgroup once its last process has exited (waits up to 2 s)."""
    for _ in range(100):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


class Output:
    """The first and last ``keep`` bytes of a stream, and how many there were in all."""

    def __init__(self, keep: int) -> None:
        self.keep, self.head, self.tail, self.total = keep, bytearray(), bytearray(), 0

    def feed(self, data: bytes) -> None:
        """Take ``data``, the next bytes of the stream."""
        self.total += len(data)
        room = self.keep - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if self.keep and data:
            self.tail = (self.tail + data)[-self.keep:]

    def text(self) -> str:
        """The kept output, with a line saying how much was dropped in between."""
        dropped = self.total - len(self.head) - len(self.tail)
        mid = f"\n[... {dropped} bytes dropped ...]\n" if dropped > 0 else ""
        return (bytes(self.head).decode(errors="replace") + mid
                + bytes(self.tail).decode(errors="replace"))



# Paths ------------------------------------------------------------------------------------------
def under(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or inside it."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def parents(path: str, covers: tuple[str, ...]) -> list[str]:
    """``--dir`` arguments for the folders between the cover (a tmpfs) holding ``path`` and it.

    bubblewrap would create them itself, but with modes that only its own user may enter.
    """
    cover = max((c for c in covers if under(path, c) and c != path), key=len, default=None)
    if cover is None:
        return []
    out: list[str] = []
    here = os.path.dirname(path)
    while here != cover and under(here, cover):
        out[:0] = ["--dir", here]
        here = os.path.dirname(here)
    return out


def is_closed(path: str) -> bool:
    """Whether others may not enter ``path`` (a folder) or read it (a file)."""
    try:
        st = os.stat(path)
    except OSError:
        return True
    return not st.st_mode & (0o001 if stat.S_ISDIR(st.st_mode) else 0o004)


def first_closed(path: str) -> str | None:
    """The topmost folder on ``path``'s way (``path`` included) that others may not enter.

    A file counts as closed when others may not read it. None when all is open.
    """
    parts = Path(path).parts
    for i in range(2, len(parts) + 1):
        here = str(Path(*parts[:i]))
        if is_closed(here):
            return here if os.path.exists(here) else None
    return None
