"""The sandbox a submission's code runs in: launching, limits on its process tree, framed replies.

It knows nothing of agents or attackers (:mod:`leaderboard.sealed` wraps it for both roles): a
:class:`Sandbox` starts a fresh Python process (:mod:`leaderboard.sandbox_child`) that imports
``entry`` (``"module:function"``) and calls it with a channel and the ``setup`` object, then
carries requests to it and replies back, each within a deadline.

**Sealed** (SPEC §7), where bubblewrap works, whether the evaluator is root (the usual CI
container) or not:

* its own PID, network, IPC, UTS (and cgroup) namespaces: it sees and signals only its own
  processes and has no network; the whole tree dies with its namespace's first process, which
  dies with the evaluator (``--die-with-parent``) and is killed when the unit ends;
* no capabilities: as root, the process drops every capability (the bounding and inheritable
  sets too) and runs as a user id of its own (one per sandbox, from
  :data:`~leaderboard.sandbox_linux.UID_BASE`), which also makes ``RLIMIT_NPROC`` a cap on the
  tree; otherwise, a user namespace without capabilities;
* a seccomp filter refuses new namespaces, mounts, ``memfd_create``, SysV shared memory, BPF,
  perf, keyrings, userfaultfd and io_uring (:func:`~leaderboard.sandbox_linux.seccomp_program`);
* the file system read-only, ``/run`` and the evaluator's home hidden (what Python needs from
  them bound back, read-only), the signing key (:func:`leaderboard.signing.key_path`) an empty
  file wherever it is, a private ``/tmp`` and ``/dev/shm`` of ``scratch_mb`` each, gone with the
  namespace;
* limits on the whole tree: memory (the kernel's, through cgroup v2, where the evaluator's cgroup
  delegates the memory and pids controllers; else polled every :data:`POLL_S` s: the
  proportional resident memory of every process plus what ``/tmp`` and ``/dev/shm`` hold, and
  the tree killed over the limit), tasks (``RLIMIT_NPROC`` or the pids controller) and output
  (the first and last ``output_kib`` KiB of stdout and stderr kept).

**Unsealed** (no bubblewrap, not permitted, privileges that could not be dropped, or
``Limits(isolate=False)``): a plain process with the same framing, deadlines, output cap and
polled limits, a host scratch folder removed at the end (and at the next start, if the evaluator
died), and a best-effort kill of its tree. :func:`isolation` says which (every result records
it), and an unsealed row never ranks on the hard track.

**Replies** are frames (:data:`~leaderboard.sandbox_child.FRAME`: sequence number, header and
payload sizes, then a JSON header and raw bytes) read from a non-blocking socket against the
call's and the unit's deadlines; a frame announcing more than :data:`MAX_REPLY_BYTES` is refused
before its body is read. Nothing is pickled either way: requests are frames too, of plain data
(:func:`~leaderboard.sandbox_child.encode`). A partial, oversized,
out-of-sequence or missing reply and a stopped or dead process each raise :class:`SandboxError`
with the reason, and the tree is killed.
"""

from __future__ import annotations

import functools
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leaderboard import sandbox_child, sandbox_linux
from leaderboard.sandbox_child import FRAME, encode
from leaderboard.sandbox_linux import under

__all__ = [
    "MAX_REPLY_BYTES",
    "Limits",
    "Sandbox",
    "SandboxError",
    "is_unsealed",
    "isolation",
    "sealed_cpu_seconds",
    "weakest",
]

#: Largest reply accepted (header and payload, bytes): a batch of actions is far smaller.
MAX_REPLY_BYTES = 64 * 2**20
#: Largest JSON header of a reply (bytes).
MAX_HEADER_BYTES = 2**20
#: Seconds between two polls of the tree's memory (where no cgroup enforces it).
POLL_S = 0.1
#: Environment variables passed to the process when set (everything else is cleared).
PASS_ENV = ("PATH", "LANG", "LC_ALL", "PYTHONHASHSEED", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
            "OPENBLAS_NUM_THREADS", "CUDA_VISIBLE_DEVICES")
_SEALED_CPU = [0.0]


def sealed_cpu_seconds() -> float:
    """CPU seconds of this process's sealed trees so far, read as each was killed.

    A sealed tree dies with its namespace, reaped outside this process: the operating system's
    count of this process's children (``RUSAGE_CHILDREN``) never holds it.
    """
    return _SEALED_CPU[0]


@dataclass(frozen=True)
class Limits:
    """Limits of a submission's process tree.

    Attributes:
        call_s: Seconds one request may take.
        unit_s: Seconds the whole unit may take in the sandbox, start-up and ``make_agent``
            (which may train) included.
        memory_mb: Memory of the whole tree, MiB (the proportional resident memory of every
            process plus ``/tmp`` and ``/dev/shm``; each process is also held to it as an
            address-space limit, ``RLIMIT_AS``); None: none.
        isolate: Seal the tree with bubblewrap where it works (:func:`isolation`).
        max_procs: Tasks (processes and threads) the tree may hold at once.
        scratch_mb: Size of the private ``/tmp`` and of ``/dev/shm`` (each), MiB; also the
            largest file the tree may write.
        output_kib: KiB kept from the start and from the end of the tree's stdout and stderr.
    """

    call_s: float = 60.0
    unit_s: float = 4 * 3600.0
    memory_mb: int | None = 16_384
    isolate: bool = True
    max_procs: int = 512
    scratch_mb: int = 1024
    output_kib: int = 4

    def __post_init__(self) -> None:
        if not self.call_s > 0 or not self.unit_s > 0:
            raise ValueError(f"time limits must be > 0, got {self.call_s}, {self.unit_s}")
        if self.memory_mb is not None and self.memory_mb < 64:
            raise ValueError(f"memory_mb must be >= 64 or None, got {self.memory_mb}")
        if self.max_procs < 8 or self.scratch_mb < 1 or self.output_kib < 0:
            raise ValueError(f"max_procs must be >= 8, scratch_mb >= 1 and output_kib >= 0, got "
                             f"{self.max_procs}, {self.scratch_mb}, {self.output_kib}")


class SandboxError(Exception):
    """The sandboxed process failed; ``str(err)`` is the one-line reason."""


# How to seal here -------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Mode:
    name: str  # "root" (bubblewrap as root, a user id of its own), "user", or "off"
    why: str = ""  # for "off": the reason


@functools.cache
def _seal_mode() -> _Mode:
    """How sandboxes are sealed here, found once per process by starting one."""
    if shutil.which("bwrap") is None:
        return _Mode("off", "bubblewrap not installed")
    mode = _Mode("root" if os.geteuid() == 0 else "user")
    try:
        box = Sandbox("probe", None, Limits(call_s=60.0, unit_s=60.0, memory_mb=None), mode=mode)
        try:
            header, _ = box.receive("the probe")
        finally:
            box.close()
    except SandboxError as err:
        return _Mode("off", f"bubblewrap cannot seal here ({err})")
    if header.get("uid") == 0:
        return _Mode("off", "privileges were not dropped")
    return mode


@functools.cache
def _bwrap_has(flag: str) -> bool:
    try:
        out = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return flag in out.stdout + out.stderr


def isolation(limits: Limits | None = None) -> str:
    """How submissions' processes run here: a result's ``provenance.isolation``.

    ``"sealed: ..."`` or ``"unsealed: <why>"`` (see :func:`is_unsealed`).
    """
    if limits is not None and not limits.isolate:
        return _describe(_Mode("off", "--no-isolation"))
    return _describe(_seal_mode())


def _describe(mode: _Mode) -> str:
    if mode.name == "off":
        return f"unsealed: {mode.why}"
    who = ("a user id of its own, every capability dropped" if mode.name == "root"
           else "a user namespace without capabilities")
    bpf = ("seccomp" if sandbox_linux.seccomp_program() is not None
           else "no seccomp filter on this machine")
    memory = "cgroup v2" if sandbox_linux.cgroup_parent() is not None else "polled"
    return (f"sealed: bubblewrap; own PID, network, IPC and UTS namespaces; {who}; {bpf}; "
            f"read-only file system, private /tmp and /dev/shm; tree limits: memory ({memory}), "
            f"processes, output")


def is_unsealed(text: str | None) -> bool:
    """Whether a result's ``provenance.isolation`` says its submission ran unsealed."""
    return text is None or text.startswith(("unsealed", "off"))


def weakest(ran: list[str | None], limits: Limits | None = None) -> str:
    """How a run's sandboxes ran, taken together: the first unsealed of ``ran``, else its first.

    With nothing in ``ran`` (no sandbox started), :func:`isolation` of ``limits``.
    """
    known = [r for r in ran if r]
    return next((r for r in known if is_unsealed(r)), known[0] if known else isolation(limits))


def _secrets() -> list[str]:
    """Files a submission must never read, wherever they are: this machine's signing key."""
    from leaderboard.signing import key_path

    path = os.path.realpath(key_path())
    return [path] if os.path.isfile(path) else []


# The sandbox ------------------------------------------------------------------------------------
class Sandbox:
    """A fresh process running ``entry(channel, setup)``, sealed where possible (module doc).

    Args:
        entry: ``"module:function"`` that the process calls with its
            :class:`~leaderboard.sandbox_child.Channel` and ``setup``.
        setup: Sent to the process: plain data (:func:`~leaderboard.sandbox_child.encode`).
        limits: The tree's limits.
        read_only: Host paths the process needs (a checkpoint, a submission's folder): made
            visible, read-only, at the same place where they would be hidden.
        files: Host paths the process must read whatever their permissions (a submission
            file), with their bytes: copied into the sandbox, read-only, at the same place.
        mode: How to run (default: sealed where possible, per ``limits.isolate``).

    Attributes:
        sealed: Whether the process runs sealed.
        isolation: How it runs (a result's ``provenance.isolation``).
        output: The kept output (``output.text()``).

    Raises:
        SandboxError: the process could not be started.
    """

    def __init__(self, entry: str, setup: Any, limits: Limits, read_only: tuple[str, ...] = (),
                 files: dict[str, bytes] | None = None, mode: _Mode | None = None) -> None:
        if mode is None:
            mode = _seal_mode() if limits.isolate else _Mode("off", "--no-isolation")
        self.limits, self._mode, self.sealed = limits, mode, mode.name != "off"
        self.isolation = _describe(mode)
        self.output = sandbox_linux.Output(limits.output_kib * 1024)
        self._deadline = time.monotonic() + limits.unit_s
        self._seq = 0
        self._buf = bytearray()
        self._killed: str | None = None  # why the watchdog or the evaluator killed the tree
        self._closed = self._out_done = False
        self._uid: int | None = None
        self._lock_fd: int | None = None
        self._scratch: str | None = None
        self._cgroup: Path | None = None
        self._init: int | None = None  # host pid of the PID namespace's first process
        self._cpu_read = False  # the tree's CPU time added to sealed_cpu_seconds()
        self._app: int | None = None  # host pid of the process running entry (sealed)
        self._status_r: int | None = None
        self._watch: threading.Thread | None = None
        self._sel: selectors.BaseSelector | None = None
        ours, theirs = socket.socketpair()
        out_r, out_w = os.pipe()
        keep: list[int] = []
        try:
            cmd, env, keep = self._command(theirs.fileno(), read_only, files or {})
            self._cgroup = sandbox_linux.make_cgroup(limits.memory_mb, limits.max_procs)
            try:
                self._proc = self._popen(cmd, env, [theirs.fileno(), *keep], out_w)
            except subprocess.SubprocessError:  # it could not join its cgroup: poll instead
                if self._cgroup is not None:
                    sandbox_linux.remove_cgroup(self._cgroup)
                    self._cgroup = None
                self._proc = self._popen(cmd, env, [theirs.fileno(), *keep], out_w)
        except (OSError, SandboxError) as err:
            os.close(out_r)
            ours.close()
            self._release()
            raise SandboxError(f"the sandbox could not start: {err}") from None
        finally:
            theirs.close()
            os.close(out_w)
            for fd in keep:
                os.close(fd)
        self._sock, self._out = ours, out_r
        self._sock.setblocking(False)
        os.set_blocking(out_r, False)
        self._sel = self._selector(selectors.EVENT_READ)
        if self.sealed:
            self._init = self._wait_init()
        if self._cgroup is None and (limits.memory_mb is not None or not self.sealed):
            self._watch = threading.Thread(target=self._watchdog, daemon=True)
            self._watch.start()
        self._send((entry, setup), "start-up")

    @property
    def uid(self) -> int | None:
        """The tree's own user id (sealed as root), else None."""
        return self._uid

    @property
    def init_pid(self) -> int | None:
        """The host pid of its PID namespace's first process (sealed), else None."""
        return self._init

    # Launching ----------------------------------------------------------------------------------
    def _popen(self, cmd: list[str], env: dict[str, str], fds: list[int], out: int
               ) -> subprocess.Popen:
        join = (None if self._cgroup is None
                else functools.partial(sandbox_linux.join_cgroup, self._cgroup))
        return subprocess.Popen(cmd, pass_fds=fds, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=out, env=env, start_new_session=True, preexec_fn=join)

    def _command(self, fd: int, read_only: tuple[str, ...], files: dict[str, bytes]
                 ) -> tuple[list[str], dict[str, str], list[int]]:
        lim = self.limits
        homes = sorted({os.path.dirname(os.path.dirname(os.path.realpath(m.__file__)))
                        for m in _packages()})
        cfg: dict[str, Any] = {
            "mode": self._mode.name, "fsize": lim.scratch_mb * 2**20, "nproc": lim.max_procs,
            "as": None if lim.memory_mb is None else lim.memory_mb * 2**20, "path": homes}
        env = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
        if os.environ.get("PYTHONPATH"):
            env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in
                                                os.environ["PYTHONPATH"].split(os.pathsep) if p)
        env.update(PYTHONDONTWRITEBYTECODE="1", USER="sandbox", LOGNAME="sandbox")
        child = [sys.executable, "-P", sandbox_child.__file__, str(fd)]
        if not self.sealed:
            self._scratch = sandbox_linux.make_scratch()
            env.update(HOME=self._scratch, TMPDIR=self._scratch,
                       MPLCONFIGDIR=os.path.join(self._scratch, "mpl"))
            return [*child, json.dumps(cfg)], env, []
        env.update(HOME="/tmp", TMPDIR="/tmp", MPLCONFIGDIR="/tmp/mpl")
        args = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--hostname", "sandbox", "--die-with-parent",
                "--new-session", "--cap-drop", "ALL"]
        if self._mode.name == "root":  # bubblewrap keeps them for the child to drop itself
            self._uid, self._lock_fd = sandbox_linux.claim_uid()
            cfg["uid"] = self._uid
            args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add",
                     "CAP_SETPCAP"]
        else:
            args += ["--unshare-user"] + (["--disable-userns"] if _bwrap_has("--disable-userns")
                                          else [])
        keep: list[int] = []
        args += self._mounts(read_only, files, keep, homes)
        prog = sandbox_linux.seccomp_program()
        if prog is not None:
            r, w = os.pipe()
            os.write(w, prog)
            os.close(w)
            keep.append(r)
            args += ["--seccomp", str(r)]
        self._status_r, status_w = os.pipe()
        keep.append(status_w)
        args += ["--json-status-fd", str(status_w), "--clearenv"]
        for k, v in env.items():
            args += ["--setenv", k, v]
        args += ["--chdir", self._cwd, "--", *child, json.dumps(cfg)]
        return args, {}, keep

    def _mounts(self, read_only: tuple[str, ...], files: dict[str, bytes], keep: list[int],
                homes: list[str]) -> list[str]:
        """Bubblewrap's file-system arguments (see the module doc)."""
        size = str(self.limits.scratch_mb * 2**20)
        args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        needed = {os.path.realpath(p) for p in (
            sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
            os.path.dirname(os.path.realpath(sys.executable)), *sys.path, *read_only, *homes,
            os.getcwd()) if p and os.path.exists(p)}
        hidden = {os.path.realpath(h) for h in ("/run", os.path.expanduser("~"))
                  if os.path.isdir(h) and os.path.realpath(h) != "/"}
        scratch = ("/tmp", "/dev/shm")
        if self._mode.name == "root":  # its user id must reach what it needs
            for p in sorted(needed):
                if sandbox_linux.is_closed(p):  # bound back, it would still be closed to it
                    needed.discard(p)
                    continue
                closed = sandbox_linux.first_closed(p)
                if closed is not None and not any(under(closed, t) for t in scratch):
                    hidden.add(closed)  # hidden, and p bound back below it
            for path in files:  # copied in below the first folder its user could not enter
                closed = sandbox_linux.first_closed(os.path.dirname(os.path.abspath(path)))
                if closed is not None and not any(under(closed, t) for t in scratch):
                    hidden.add(closed)
        for h in sorted(hidden, key=len):
            args += ["--perms", "0755", "--size", "65536", "--tmpfs", h]
        for t in scratch:
            args += ["--size", size, "--perms", "1777", "--tmpfs", t]
        covers = (*hidden, *scratch)
        cwd = os.path.realpath(os.getcwd())
        self._cwd = cwd if cwd in needed and cwd not in covers else "/tmp"
        done: list[str] = []
        for p in sorted(needed):
            if p not in covers and any(under(p, c) for c in covers) and not any(
                    under(p, d) for d in done):
                args += [*sandbox_linux.parents(p, covers), "--ro-bind", p, p]
                done.append(p)
        for path, data in files.items():
            with tempfile.TemporaryFile() as fh:
                fh.write(data)
                fh.flush()
                fd = os.dup(fh.fileno())
            os.lseek(fd, 0, os.SEEK_SET)
            keep.append(fd)
            dest = os.path.abspath(path)
            args += [*sandbox_linux.parents(dest, covers), "--perms", "0444", "--ro-bind-data",
                     str(fd), dest]
        for secret in _secrets():  # the signing key: an empty file wherever it shows
            if not any(under(secret, c) for c in covers) or any(under(secret, d) for d in done):
                with tempfile.TemporaryFile() as fh:
                    fd = os.dup(fh.fileno())
                keep.append(fd)
                args += ["--perms", "0444", "--ro-bind-data", str(fd), secret]
        for h in sorted(hidden, key=len):
            args += ["--remount-ro", h]
        return args

    def _wait_init(self) -> int:
        """The host pid of the namespace's first process, from bubblewrap's status line."""
        assert self._status_r is not None
        buf = b""
        end = time.monotonic() + 30.0
        while b"\n" not in buf and time.monotonic() < end:
            sel = selectors.DefaultSelector()
            sel.register(self._status_r, selectors.EVENT_READ)
            ready = sel.select(0.1)
            sel.close()
            if ready:
                chunk = os.read(self._status_r, 4096)
                if not chunk:
                    break
                buf += chunk
            self._drain()
        try:
            return int(json.loads(buf.split(b"\n")[0])["child-pid"])
        except (ValueError, KeyError, TypeError):
            try:
                self._proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                pass
            self._drain()
            last = self.output.text().strip().splitlines()[-1:] or ["no output"]
            self.close()
            raise SandboxError(f"the sandbox did not start: {last[0][:300]}") from None

    # The tree -----------------------------------------------------------------------------------
    def _root(self) -> int:
        return self._init if self._init is not None else self._proc.pid

    def _main_pid(self) -> int | None:
        """The host pid of the process running ``entry`` (the namespace's second process)."""
        if self._init is None:
            return self._proc.pid
        if self._app is None:  # its first child, before any orphan could join it
            kids, _ = sandbox_linux.children(self._init)
            self._app = min(kids) if kids else None
        return self._app

    def usage(self) -> tuple[int, int, int]:
        """The tree's memory now (bytes, as the limit counts it), its processes and tasks."""
        pids, tasks = sandbox_linux.tree(self._root())
        tmpfs: tuple[str, ...] = ()
        held = 0
        main = self._main_pid() if self._init is not None else None
        if main is not None:  # its /tmp and /dev/shm, seen through its root
            tmpfs = ("/tmp/", "/dev/shm/")
            for sub in ("tmp", "dev/shm"):
                try:
                    st = os.statvfs(f"/proc/{main}/root/{sub}")
                except OSError:
                    continue
                if st.f_blocks * st.f_frsize == self.limits.scratch_mb * 2**20:
                    held += (st.f_blocks - st.f_bfree) * st.f_frsize
        elif self._scratch is not None:
            held += sandbox_linux.folder_bytes(self._scratch)
        quick = held + sandbox_linux.resident(pids)
        if self.limits.memory_mb is not None and quick <= self.limits.memory_mb * 2**20:
            return quick, len(pids), tasks  # an upper bound, under the limit
        return (held + sum(sandbox_linux.private_memory(p, tmpfs) for p in pids), len(pids),
                tasks)

    def _watchdog(self) -> None:
        lim = self.limits
        while not self._closed and self._proc.poll() is None:
            try:
                used, procs, tasks = self.usage()
            except Exception:  # noqa: BLE001 - a process that vanished mid-read
                used, procs, tasks = 0, 0, 0
            why = None
            if lim.memory_mb is not None and used > lim.memory_mb * 2**20:
                why = (f"the process tree held {used / 2**20:.0f} MiB ({procs} processes; /tmp "
                       f"and /dev/shm included), over the memory limit of {lim.memory_mb} MiB")
            elif not self.sealed and tasks > lim.max_procs:
                why = f"the process tree reached {tasks} tasks, over the limit of {lim.max_procs}"
            if why is not None:
                self._killed = self._killed or why
                self._kill_tree()
                return
            time.sleep(POLL_S)

    def _kill_tree(self) -> None:
        """SIGKILL every process of the tree (sealed: its namespace's first process first)."""
        if self._init is not None and not self._cpu_read:
            self._cpu_read = True
            _SEALED_CPU[0] += sandbox_linux.cpu_seconds(sandbox_linux.tree(self._init)[0])
        if self._cgroup is not None:
            try:
                (self._cgroup / "cgroup.kill").write_text("1")
            except OSError:
                pass
        for _ in range(100):
            pids = [] if self._init is None else [self._init]
            pids += sandbox_linux.tree(self._root())[0]
            if self._uid is not None:
                pids += sandbox_linux.owned_by(self._uid)
            if self._init is None:
                try:
                    os.killpg(self._proc.pid, signal.SIGKILL)
                except OSError:
                    pass
            alive = [p for p in pids if sandbox_linux.state(p) not in ("", "Z", "X")]
            if not alive:
                break
            for pid in alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.01)
        try:
            self._proc.kill()
        except OSError:
            pass

    # Framing ------------------------------------------------------------------------------------
    def _drain(self) -> None:
        while not self._out_done:
            try:
                chunk = os.read(self._out, 65536)
            except (BlockingIOError, OSError):
                return
            if not chunk:
                self._out_done = True
                if self._sel is not None:
                    self._sel.unregister(self._out)
                return
            self.output.feed(chunk)

    def _selector(self, events: int) -> selectors.BaseSelector:
        sel = selectors.DefaultSelector()
        sel.register(self._sock, events, "sock")
        if not self._out_done:
            sel.register(self._out, selectors.EVENT_READ, "out")
        return sel

    def _limit(self, timeout: float | None) -> tuple[float, str, float]:
        """(deadline, which limit, its seconds) of a request that may take ``timeout`` s."""
        timeout = self.limits.call_s if timeout is None else timeout
        left = self._deadline - time.monotonic()
        if left <= timeout:
            return time.monotonic() + max(left, 0.0), "unit", self.limits.unit_s
        return time.monotonic() + timeout, "call", timeout

    def _late(self, what: str, which: str, limit: float, got: int, want: int | None) -> str:
        main = self._main_pid()
        note = ""
        if main is not None and sandbox_linux.state(main) in ("T", "t"):
            note = " (the submission's process is stopped, e.g. by SIGSTOP)"
        elif want is not None:
            note = f" (its reply was incomplete: {got} of {want} bytes arrived)"
        return f"{what} exceeded the {which} time limit of {limit:g} s{note}"

    def _gone(self) -> bool:
        """Whether the process running ``entry`` has ended."""
        if self._proc.poll() is not None:
            return True
        main = self._main_pid()
        return main is not None and sandbox_linux.state(main) in ("", "Z", "X")

    def _send(self, obj: Any, what: str) -> None:
        self._seq += 1
        try:
            head, body = encode(obj)
        except TypeError:  # the evaluator's own mistake, not the submission's: say so, loudly
            self.close()
            raise
        data = memoryview(FRAME.pack(self._seq, len(head), len(body)) + head + body)
        end, which, limit = self._limit(None)
        sel: selectors.BaseSelector | None = None
        try:
            while data:
                try:
                    data = data[self._sock.send(data):]
                    continue
                except BlockingIOError:  # its socket buffer is full: wait until it reads
                    pass
                except OSError:
                    raise self._ended(what) from None
                left = end - time.monotonic()
                if left <= 0:
                    self._fail(self._late(what, which, limit, 0, None))
                if sel is None:
                    sel = self._selector(selectors.EVENT_WRITE)
                for k, _ in sel.select(min(left, POLL_S)):
                    if k.data == "out":
                        self._drain()
                if self._gone():
                    raise self._ended(what)
        finally:
            if sel is not None:
                sel.close()

    def receive(self, what: str, timeout: float | None = None) -> tuple[dict[str, Any], bytes]:
        """The process's next reply: its JSON header (a dict) and raw payload.

        Args:
            what: What is being waited for, for the reason of a failure (``"act"``).
            timeout: Seconds it may take (default: the call limit); never past the unit's end.

        Raises:
            SandboxError: a deadline passed, the process ended, or the reply is malformed,
                oversized or out of sequence (the tree is then killed).
        """
        if self._closed:
            raise SandboxError(f"the submission's process was closed before {what}")
        end, which, limit = self._limit(timeout)
        want: int | None = None
        n_head = 0
        ended = False  # the process is gone: what it sent is all there will be
        while True:
            if want is None and len(self._buf) >= FRAME.size:
                _, n_head, n_body = FRAME.unpack_from(self._buf)
                if n_head > MAX_HEADER_BYTES or n_head + n_body > MAX_REPLY_BYTES:
                    self._fail(f"{what}: reply of {n_head + n_body} bytes exceeds the "
                               f"{MAX_REPLY_BYTES // 2**20} MiB limit")
                want = FRAME.size + n_head + n_body
            if want is not None and len(self._buf) >= want:
                break
            if ended:
                raise self._ended(what)
            try:  # what has arrived (more than this frame is kept for the next one)
                chunk = self._sock.recv(min(2**20, max(2**16, (want or 0) - len(self._buf))))
            except BlockingIOError:
                chunk = None
            except OSError:
                chunk = b""
            if chunk is not None:
                self._buf += chunk
                ended = not chunk  # the end of the stream
                continue
            left = end - time.monotonic()
            if left <= 0:
                self._fail(self._late(what, which, limit, len(self._buf), want))
            assert self._sel is not None
            events = self._sel.select(min(left, POLL_S))
            for k, _ in events:
                if k.data == "out":
                    self._drain()
            if not events:  # quiet for a while: is it still there?
                ended = self._gone() and not _readable(self._sock)
        frame = bytes(self._buf[:want])
        del self._buf[:want]
        seq = FRAME.unpack_from(frame)[0]
        if seq != self._seq:
            self._fail(f"{what}: reply out of sequence (number {seq}, expected {self._seq}): "
                       "something in the submission's process wrote to the reply channel")
        try:
            header = json.loads(frame[FRAME.size:FRAME.size + n_head])
            if not isinstance(header, dict):
                raise ValueError("the header is not an object")
        except (ValueError, UnicodeDecodeError) as err:
            self._fail(f"malformed reply from the submission's process during {what} ({err})")
        return header, frame[FRAME.size + n_head:]

    def request(self, obj: Any, what: str) -> tuple[dict[str, Any], bytes]:
        """Send ``obj`` and wait for its reply, within the call's and the unit's limits.

        Raises:
            SandboxError: as :meth:`receive`, or the request could not be delivered in time.
        """
        if self._closed:
            raise SandboxError(f"the submission's process was closed before {what}")
        self._send(obj, what)
        return self.receive(what)

    def _fail(self, reason: str) -> None:
        self._killed = self._killed or reason
        self.close()
        raise SandboxError(reason)

    def _ended(self, what: str) -> SandboxError:
        try:  # bubblewrap exits with the entry's process (and takes the rest with it)
            code: int | None = self._proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            code = None
        killed = self._killed
        oom = self._cgroup is not None and sandbox_linux.cgroup_oom(self._cgroup)
        self.close()
        if killed is not None:
            return SandboxError(f"the submission's process was killed during {what}: {killed}")
        if code is not None and self.sealed and code > 128:
            code = 128 - code  # bubblewrap reports a signal as 128 + its number
        if code is None:
            how = "it closed its reply channel"
        elif code < 0:
            name = _signal_name(-code)
            how = f"killed by {name}" + (" (out of memory?)" if name == "SIGKILL" else "")
        else:
            how = f"exit code {code}"
        if oom:
            how += f"; the process tree exceeded the memory limit of {self.limits.memory_mb} MiB"
        last = [x for x in self.output.text().strip().splitlines() if x.strip()][-1:]
        tail = f"; last output: {last[0][:300]}" if last and self._seq <= 1 else ""
        return SandboxError(f"the submission's process ended during {what} ({how}){tail}")

    # Closing ------------------------------------------------------------------------------------
    def close(self) -> None:
        """End the tree (asked, then killed), remove its scratch folder, free its user id."""
        if self._closed:
            return
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_WR)  # the process reads the end of its requests
        except OSError:
            pass
        end = time.monotonic() + 0.5
        while self._proc.poll() is None and time.monotonic() < end:
            self._drain()
            time.sleep(0.01)
        self._kill_tree()
        try:
            self._proc.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            pass
        if self._watch is not None and self._watch is not threading.current_thread():
            self._watch.join(timeout=5.0)
        self._drain()
        if self._sel is not None:
            self._sel.close()
        for fd in (self._out, self._status_r):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._sock.close()
        self._release()

    def _release(self) -> None:
        if self._uid is not None:
            for _ in range(100):  # the user id is free again once its last process is gone
                if not sandbox_linux.owned_by(self._uid):
                    break
                time.sleep(0.02)
        if self._lock_fd is not None:
            sandbox_linux.release_uid(self._uid, self._lock_fd)
            self._lock_fd = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
        if self._cgroup is not None:
            sandbox_linux.remove_cgroup(self._cgroup)
            self._cgroup = None


def _readable(sock: socket.socket) -> bool:
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ)
    try:
        return bool(sel.select(0.0))
    finally:
        sel.close()


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"


def _packages() -> list[Any]:
    """The packages the sandboxed process imports from (their folders are made visible).

    The leaderboard's own package is this module's parent (not imported here: the sandbox sits
    below the rest of the leaderboard); tsg_envs and baselines where the evaluator loaded them.
    """
    out = [sys.modules[__name__.rpartition(".")[0]]]
    for name in ("tsg_envs", "baselines"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            out.append(module)
    return out
