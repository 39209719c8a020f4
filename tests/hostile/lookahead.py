"""A submission that knows the public days: it replays them in ``make_agent`` and plans ahead.

The suites' arrival seeds are public (``leaderboard.suites``). In ``make_agent`` this submission
plays each of them on its own copy of the unit's environment with the static LP and remembers,
for every state it meets, the LP's allocation. On those days it then answers every state from
memory (a lookahead: it knows what comes next); on any other day it recognises nothing and plays
the polytope's centre, a far worse policy. ``act`` is a pure function of ``(obs, info)`` (a dict
lookup), so it passes the replay check. Against public days it scores like the LP; against fresh
days, drawn when the evaluation starts, like the centre: the board never ranks the first on the
hard track (SPEC §7, "Official rows play fresh days").
"""

from __future__ import annotations

from typing import Any

import numpy as np

NAME = "lookahead"


def make_agent(env: Any) -> Any:
    from leaderboard.suites import SUITES
    from tsg_envs.rollout import LPAgent

    base = env.unwrapped
    lp = LPAgent(env)
    memory: dict[bytes, np.ndarray] = {}
    seeds = {s for suite in SUITES.values() for s in suite.arrival_seeds}
    for seed in sorted(seeds)[:5]:  # the first public days of every suite
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            action = lp.act(obs, info)
            memory[obs.tobytes()] = np.array(action, dtype=np.float64)
            obs, _, term, trunc, info = env.step(action)
            done = term or trunc
    centers = np.asarray(base.polytopes.centers, dtype=np.float64)

    class Lookahead:
        recognised = len(memory)

        def act(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
            known = memory.get(np.asarray(obs, dtype=np.float32).tobytes())
            return known.copy() if known is not None else centers[int(info["category"])].copy()

    return Lookahead()
