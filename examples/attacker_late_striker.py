"""A minimal attacker submission: strike halfway through the day as a passenger of flight θ mod K.

Evaluate it against the panel of defenders with::

    python -m leaderboard evaluate --attacker examples/attacker_late_striker.py --suite micro \
        --out runs/lb
"""

NAME = "late-striker"
DESCRIPTION = "strikes at the middle arrival of the day, method 0, flight theta mod K"


class LateStriker:
    """Waits for half the day's arrivals, then strikes (one decision per arrival)."""

    def __init__(self, env):
        self.n_passengers = env.game.n_passengers
        self.n_flights = env.game.n_flights
        self.n_methods = env.game.n_methods
        self.i = 0

    def reset(self, seed=None):
        """A new day: count arrivals from 0 (the seed is for an attacker's own randomness)."""
        self.i = 0

    def act(self, obs, info):
        """0 to wait; 1 + flight * M + method to strike."""
        i = self.i
        self.i += 1
        if i == self.n_passengers // 2:
            return 1 + (int(info["theta"]) % self.n_flights) * self.n_methods
        return 0


def make_attacker(env):
    """Called once per unit with its AttackerEnv (spaces and public game data)."""
    return LateStriker(env)
