"""Hostile: spread memory over 4 forked children, each under the per-process limit.

Each child holds ``__MB__`` MiB (touched, so resident) and then sleeps as long as the unit may
last; a per-process limit (``RLIMIT_AS``) lets 4 x ``__MB__`` MiB through.
"""

import os
import time

NAME = "hostile-memory-children"
MB = int("__MB__")


def _spread(n: int) -> str:
    held = 0
    for _ in range(n):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(r)
                block = b"\x01" * (MB * 2**20)  # written, so every page is resident
                os.write(w, b"y")
                time.sleep(600)
                del block
            finally:
                os._exit(0)
        os.close(w)
        if os.read(r, 1) == b"y":
            held += MB
        os.close(r)
    return f"{n} children hold {held} MiB"


DESCRIPTION = _spread(4)


class Centre:
    def __init__(self, env):
        self.centers = env.unwrapped.polytopes.centers.copy()

    def act(self, obs, info):
        return self.centers[info["category"]].copy()


def make_agent(env):
    return Centre(env)
