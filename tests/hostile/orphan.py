"""Hostile: a double-forked daemon that outlives the unit and writes afterwards.

The daemon leaves its session, waits until the evaluator is done, tries to make ``/`` writable
and writes ``__OUT__/late-orphan.txt`` (a stand-in for rewriting the finished result), then
sleeps as ``sleep __MARK__``.
"""

import ctypes
import os
import time

NAME = "hostile-orphan"


def _daemon() -> None:
    if os.fork() > 0:
        return
    try:
        os.setsid()
        if os.fork() > 0:
            os._exit(0)
        for fd in range(3, 256):  # drop the reply channel: the evaluator must not wait on it
            try:
                os.close(fd)
            except OSError:
                pass
        time.sleep(float("__DELAY__"))
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mount(None, b"/", None, 32 | 4096, None)  # MS_REMOUNT | MS_BIND: read-write
        try:
            with open("__OUT__/late-orphan.txt", "w") as fh:
                fh.write("written after the unit ended\n")
        except OSError:
            pass
        os.execv("/bin/sleep", ["/bin/sleep", "__MARK__"])
    finally:
        os._exit(0)


_daemon()
os.wait()  # the first child exits at once
DESCRIPTION = "left a daemon behind"


class Centre:
    def __init__(self, env):
        self.centers = env.unwrapped.polytopes.centers.copy()

    def act(self, obs, info):
        return self.centers[info["category"]].copy()


def make_agent(env):
    return Centre(env)
