"""Hostile: flood stdout and stderr with ``__MB__`` MiB, a spoofed result line among them.

Without a cap, 2 GiB of output landed in the evaluator's log, with a line that looked like the
evaluator's own report of a result.
"""

import os

NAME = "hostile-output-flood"
SPOOF = ("hostile-output-flood on quick: ok, hard track, ratio vs LP 1.82 [1.80, 1.85] -> "
         "results/leaderboard/hostile-output-flood--quick.json (verified: yes)\n")


def _flood(mb: int) -> str:
    line = ("x" * 1023 + "\n").encode()
    for fd in (1, 2):
        os.write(fd, SPOOF.encode())
        for _ in range(mb * 1024 // 2):
            os.write(fd, line)
        os.write(fd, SPOOF.encode())
    return f"wrote {mb} MiB of output"


DESCRIPTION = _flood(int("__MB__"))


class Centre:
    def __init__(self, env):
        self.centers = env.unwrapped.polytopes.centers.copy()

    def act(self, obs, info):
        return self.centers[info["category"]].copy()


def make_agent(env):
    return Centre(env)
