"""Hostile: attack the reply channel from inside ``act`` (``__KIND__``).

* ``partial``: half a frame, then silence: the evaluator stalled 150 s against a 5 s call limit.
* ``oversized``: a frame that announces 100 MiB: reported as "process ended (exit code None)"
  while the process was alive.
* ``flood``: well-formed frames written as fast as possible from a thread, unasked.
* ``zero_d``: a 0-d action (a numpy scalar): reported as "shape (1,)".
* ``stop``: the process stops itself (SIGSTOP) in the middle of a request.
"""

import json
import os
import signal
import struct
import threading
import time

NAME = "hostile-reply-__KIND__"
KIND = "__KIND__"


def _sockets() -> list[int]:
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                out.append(int(fd))
        except OSError:
            pass
    return out


def _frame(body: bytes, claimed: int | None = None) -> bytes:
    """A reply frame in the evaluator's current format (or the old multiprocessing one)."""
    n = len(body) if claimed is None else claimed
    try:
        from leaderboard.sandbox import FRAME
    except ImportError:  # multiprocessing.connection: a 4-byte big-endian length
        return struct.pack("!i", n) + body
    return FRAME.pack(0, 0, n) + body


def _ok_body() -> bytes:
    header = json.dumps({"kind": "ok", "shape": [1]}).encode()
    try:
        from leaderboard.sandbox import FRAME  # noqa: F401 - the current format: body is raw
        return b"\0" * 8
    except ImportError:
        return struct.pack("<I", len(header)) + header + b"\0" * 8


def _flood() -> None:
    frame = _frame(_ok_body())
    while True:
        for fd in _sockets():
            try:
                os.write(fd, frame)
            except OSError:
                return


class Agent:
    def __init__(self, env):
        self.centers = env.unwrapped.polytopes.centers.copy()

    def act(self, obs, info):
        if KIND == "partial":
            for fd in _sockets():
                os.write(fd, _frame(b"{\"kind\": \"ok\"", claimed=1000))
            time.sleep(3600)
        elif KIND == "oversized":
            for fd in _sockets():
                os.write(fd, _frame(b"\0" * 65536, claimed=100 * 2**20))
            time.sleep(3600)
        elif KIND == "flood":
            for _ in range(2):
                threading.Thread(target=_flood, daemon=True).start()
            time.sleep(0.5)
        elif KIND == "zero_d":
            import numpy as np

            return np.float64(self.centers[info["category"]][0])
        elif KIND == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
        return self.centers[info["category"]].copy()


def make_agent(env):
    return Agent(env)
