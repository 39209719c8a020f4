"""Hostile: fork up to ``__N__`` detached processes that outlive the unit.

Each child starts its own session (so a process-group kill misses it) and becomes
``sleep __MARK__`` (the marker the test looks for). Without a cap on the tree, 600 such
processes stayed alive after the evaluator exited.
"""

import os

NAME = "hostile-fork-bomb"


def _bomb(n: int) -> str:
    made = 0
    for _ in range(n):
        try:
            pid = os.fork()
        except OSError as err:
            return f"forked {made} (then {err.strerror})"
        if pid == 0:
            try:
                os.setsid()
                os.execv("/bin/sleep", ["/bin/sleep", "__MARK__"])
            finally:
                os._exit(0)
        made += 1
    return f"forked {made}"


DESCRIPTION = _bomb(int("__N__"))


class Centre:
    def __init__(self, env):
        self.centers = env.unwrapped.polytopes.centers.copy()

    def act(self, obs, info):
        return self.centers[info["category"]].copy()


def make_agent(env):
    return Centre(env)
