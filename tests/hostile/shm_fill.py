"""Hostile: fill ``__DIR__`` with ``__MB__`` MiB (memory no per-process limit sees).

A file in ``/dev/shm`` (or a temporary folder on tmpfs) is memory that belongs to no process:
1.5 GiB went into ``/dev/shm`` under ``--memory-mb 512`` and stayed there after the run.
"""

import os
import tempfile

NAME = "hostile-fill"


def _fill(folder: str, mb: int) -> str:
    path = os.path.join(folder, "hostile-__MARK__")
    chunk = b"\x02" * 2**20
    done = 0
    try:
        with open(path, "wb") as fh:
            for _ in range(mb):
                fh.write(chunk)
                fh.flush()
                done += 1
    except OSError as err:
        return f"wrote {done} MiB to {folder} (then {err.strerror})"
    return f"wrote {done} MiB to {folder}"


_DIR = "__DIR__"
DESCRIPTION = _fill(tempfile.gettempdir() if _DIR == "TMPDIR" else _DIR, int("__MB__"))


class Centre:
    def __init__(self, env):
        self.centers = env.unwrapped.polytopes.centers.copy()

    def act(self, obs, info):
        return self.centers[info["category"]].copy()


def make_agent(env):
    return Centre(env)
