"""The sandboxed process's side of :mod:`leaderboard.sandbox` (run as a script, stdlib only).

``python -P sandbox_child.py FD CONFIG`` is what a sandbox runs: before anything else it sets its
limits and, where the evaluator is root, drops every capability (the bounding and inheritable
sets included) and becomes the user id it was given, then checks that nothing is left; only then
does it read its ``(entry, setup)`` from the socket ``FD``, import ``entry``'s module and call
``entry(channel, setup)`` with a :class:`Channel`. It is run as a script, not imported through
the ``leaderboard`` package, so that nothing runs before the privileges are gone.

Both directions are frames (:data:`FRAME`) of a JSON header and raw bytes; nothing is pickled
either way. Requests (:func:`encode` / :func:`decode`) carry plain data only: JSON's scalars and
lists, tuples and mappings tagged as such, and numpy arrays and scalars of booleans or numbers as
their raw bytes in the payload (numpy is imported for them only after the privileges are gone).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import struct
import sys
from typing import Any

__all__ = ["FRAME", "Channel", "decode", "encode"]

#: A frame: sequence number, header bytes, payload bytes (then the header, then the payload).
FRAME = struct.Struct("<III")
#: numpy dtype kinds a request may carry: booleans, integers and floating-point numbers.
ARRAY_KINDS = "biufc"


def encode(obj: Any) -> tuple[bytes, bytes]:
    """``obj`` as a request: its JSON header and the raw bytes of its arrays.

    ``None``, booleans, integers, floats (NaN and infinities included), strings and lists stay
    themselves; a tuple becomes ``{"tuple": [...]}``, a mapping ``{"dict": [[key, value], ...]}``
    and a numpy array (or scalar) of a kind in :data:`ARRAY_KINDS` ``{"array"|"scalar":
    [offset, nbytes], "dtype": ..., "shape": [...]}`` with its bytes at ``offset`` of the
    payload. :func:`decode` gives back equal values of the same types.

    Raises:
        TypeError: something else (an object, an array of objects): it is not sent.
    """
    chunks: list[bytes] = []
    size = [0]

    def walk(x: Any) -> Any:
        if x is None or type(x) in (bool, int, float, str):
            return x
        if type(x) is list:
            return [walk(v) for v in x]
        if type(x) is tuple:
            return {"tuple": [walk(v) for v in x]}
        if type(x) is dict:
            return {"dict": [[walk(k), walk(v)] for k, v in x.items()]}
        dtype = getattr(x, "dtype", None)
        if dtype is not None and type(x).__module__ == "numpy" and hasattr(x, "tobytes"):
            if dtype.kind not in ARRAY_KINDS:
                raise TypeError(f"cannot send an array of {dtype} to the sandboxed process")
            raw = x.tobytes()  # C order
            tag = "array" if type(x).__name__ == "ndarray" else "scalar"
            out = {tag: [size[0], len(raw)], "dtype": dtype.str, "shape": list(x.shape)}
            chunks.append(raw)
            size[0] += len(raw)
            return out
        raise TypeError(f"cannot send {type(x).__name__} to the sandboxed process")

    header = json.dumps(walk(obj), separators=(",", ":")).encode()
    return header, b"".join(chunks)


def decode(header: bytes, payload: bytes) -> Any:
    """What :func:`encode` gave ``(header, payload)`` for; arrays are writable and own copies."""
    buf = bytearray(payload)  # writable: a request's arrays are the process's own to change

    def walk(x: Any) -> Any:
        if isinstance(x, list):
            return [walk(v) for v in x]
        if not isinstance(x, dict):
            return x
        if "tuple" in x:
            return tuple(walk(v) for v in x["tuple"])
        if "dict" in x:
            return {walk(k): walk(v) for k, v in x["dict"]}
        import numpy as np

        (offset, nbytes), dtype = x.get("array") or x["scalar"], np.dtype(x["dtype"])
        a = np.frombuffer(buf, dtype=dtype, count=nbytes // max(dtype.itemsize, 1),
                          offset=offset).reshape(x["shape"])
        return a if "array" in x else a[()]

    return walk(json.loads(header))


class Channel:
    """The sandboxed process's end of the socket: blocking requests in, framed replies out."""

    def __init__(self, fd: int) -> None:
        self._sock = socket.socket(fileno=fd)
        self._sock.setblocking(True)
        self._seq = 0

    def _read(self, n: int) -> bytes | None:
        buf = bytearray()
        while len(buf) < n:
            chunk = self._sock.recv(min(n - len(buf), 2**20))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def recv(self) -> Any:
        """The next request (:func:`decode`), or None at the end."""
        head = self._read(FRAME.size)
        if head is None:
            return None
        self._seq, n_head, n_body = FRAME.unpack(head)
        body = self._read(n_head + n_body)
        return None if body is None else decode(body[:n_head], body[n_head:])

    def reply(self, header: dict[str, Any], payload: bytes = b"") -> None:
        """Answer the last request with a JSON ``header`` and raw ``payload`` bytes."""
        blob = json.dumps(header).encode()
        self._sock.sendall(FRAME.pack(self._seq, len(blob), len(payload)) + blob + payload)


def _drop(uid: int) -> None:
    """As root inside bubblewrap: drop every capability and become ``uid`` (and its group)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    with open("/proc/sys/kernel/cap_last_cap") as fh:
        last = int(fh.read())
    for cap in range(last + 1):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise SystemExit(f"sandbox: cannot drop capability {cap} from the bounding set")
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # clears the permitted and effective sets
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    if libc.capset(header, (ctypes.c_uint32 * 6)()) != 0:  # the inheritable set too
        raise SystemExit("sandbox: cannot clear the inheritable capabilities")


def _check_sealed() -> None:
    with open("/proc/self/status") as fh:
        status = dict(line.split(":", 1) for line in fh if ":" in line)
    caps = {k: int(status[k], 16) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}
    if any(caps.values()) or status["NoNewPrivs"].strip() != "1" or os.getuid() == 0:
        raise SystemExit(f"sandbox: privileges not dropped (uid {os.getuid()}, {caps})")


def main(argv: list[str]) -> None:
    """Limits, privileges, then the entry point named by the evaluator (see the module doc)."""
    fd, cfg = int(argv[0]), json.loads(argv[1])
    for name, value in (("RLIMIT_AS", cfg["as"]), ("RLIMIT_FSIZE", cfg["fsize"]),
                        ("RLIMIT_CORE", 0), ("RLIMIT_NPROC", cfg["nproc"])):
        if value is not None:
            resource.setrlimit(getattr(resource, name), (value, value))
    if cfg.get("uid") is not None:
        _drop(int(cfg["uid"]))
    if cfg["mode"] == "off":
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the evaluator
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans stay in its tree
    else:
        _check_sealed()
    if cfg.get("path"):
        sys.path[:0] = [p for p in cfg["path"] if p not in sys.path]
    channel = Channel(fd)
    setup = channel.recv()
    if setup is None:
        return
    entry, payload = setup
    if entry == "probe":
        channel.reply({"kind": "ready", "uid": os.getuid()})
        return
    module, _, function = entry.partition(":")
    import importlib

    getattr(importlib.import_module(module), function)(channel, payload)


if __name__ == "__main__":
    main(sys.argv[1:])
