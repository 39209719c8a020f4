"""The attacker-defender duel as a PettingZoo game (parallel first, AEC derived).

Provenance: the threat screening game of Shah, Sinha, Varakantham, Perrault and Tambe (AAAI
2020), whose defender faces "an adversary who can observe the screening procedure and choose the
flight, attack method and time of attack"; SPEC §1-§3 and §5 fix the model. The defender's side
is the single-agent :class:`~tsg_envs.env.ScreeningEnv` itself (one queue model,
:class:`~tsg_envs.dynamics.ScreeningDay`); the attacker is inserted into its day as one extra
passenger with :meth:`ScreeningDay.insert_passenger`.

``parallel_env(**kwargs)`` builds :class:`DuelParallelEnv`; ``env(**kwargs)`` is its AEC form
(PettingZoo's parallel-to-AEC conversion, order-enforcing, with each action checked on its
agent's own turn).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec_wrapper
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from tsg_envs.env import ScreeningEnv

__all__ = [
    "ATTACKER",
    "DEFENDER",
    "DuelParallelEnv",
    "WAIT",
    "decode_attack",
    "encode_attack",
    "env",
    "parallel_env",
    "raw_env",
]

ATTACKER = "attacker"
DEFENDER = "defender"
#: The attacker's "wait" (before striking) or "no-op" (after) action.
WAIT = 0
#: Entropy word mixed into the reset seed for the attacker's own stream (θ draw, detection), so
#: that it never touches the defender environment's generator.
_ATTACKER_STREAM = 0xA77AC


def encode_attack(flight: int, method: int, n_methods: int) -> int:
    """The attacker's action "strike as a passenger of ``flight`` with ``method``": 1 + κ·M + m."""
    return 1 + int(flight) * int(n_methods) + int(method)


def decode_attack(action: int, n_methods: int) -> tuple[int, int]:
    """Inverse of :func:`encode_attack`: (κ, m) of a strike action (``action`` ≥ 1)."""
    if action < 1:
        raise ValueError(f"action {action} is not a strike (strikes are >= 1)")
    return divmod(int(action) - 1, int(n_methods))


class DuelParallelEnv(ParallelEnv):
    """An attacker picks flight, method and moment; a defender screens every passenger.

    ## Description
    One day of the online threat screening game (see ``ScreeningEnv``) with an adversary in the
    crowd. At reset the attacker's risk level θ_a is drawn from the prior P_θ
    (``game.attacker_prior``); it is private to the attacker. At every step the defender
    allocates the passenger waiting at the checkpoint (a point of the simplex, as in
    ``ScreeningEnv``) and the attacker, watching the checkpoint, either waits or strikes as a
    passenger of a flight κ of its choice with an attack method m.

    **What a strike does.** A strike decided at step i (when passenger i is waiting) puts the
    attacker in line at the next arrival moment, ahead of passenger i + 1: it becomes an extra
    passenger of category c_a = ⟨θ_a, κ⟩ arriving at τ_{i+1} (after the last passenger: at the
    last arrival time). The defender's next decision is then the attacker, in exactly the state
    ⟨c_a, ξ, h, τ⟩ that the attack-free day would have shown with passenger i + 1 (queues,
    history and clock unchanged, only the category replaced); it cannot tell the attacker from
    any passenger of category c_a. The day gets one more step. These are the states that
    :func:`tsg_envs.risk.worst_case_risk` probes (all but the first: nobody can cut in ahead of
    the day's first passenger; ``min_step=1`` gives exactly the reachable ones), so an attacker
    can realise its best response.
    With an attacker that never strikes, the defender's trajectory (observations, rewards, infos,
    team draws) is identical to ``ScreeningEnv``'s for the same seed.

    **Outcome.** When the attacker is screened with the executed allocation π: in
    ``queue_mode="expected"`` its gain is (1 - z_m) L_{κ,m} with z_m = Σ_t E_{t,m} π_t; in
    ``"sampled"`` the environment draws the team t* (as for every passenger) and detection with
    probability E_{t*,m}: the gain is L_{κ,m} if undetected, else 0.

    ## Agents
    ``"attacker"`` and ``"defender"``; both act at every step and both are removed when the day
    ends (after its last passenger, the attacker included). Neither truncates.

    ## Action Spaces
    * defender: ``Box(0, 1, (T,), float32)``, π for the waiting passenger, which must lie in its
      category's polytope (``ScreeningEnv``'s rules; its ``invalid_action`` decides).
    * attacker: ``Discrete(1 + K·M)``; 0: wait (the no-op after striking); 1 + κ·M + m: strike
      as a passenger of flight κ with method m (:func:`encode_attack`, :func:`decode_attack`).

    The attacker's ``action_mask`` (in its observation) allows everything before the strike and
    only 0 after it. An action outside the mask raises ``ValueError``; one that is not an integer
    (a float, an array with a non-integer dtype or more than one element, a bool) raises
    ``TypeError``.

    ## Observation Spaces
    The defender observes exactly ``ScreeningEnv``'s observation (``Box``, layout
    ``defender_obs_layout`` = ``ScreeningEnv.obs_layout``). The attacker observes what an
    onlooker at the checkpoint sees, plus its own level, as a
    ``Dict({"observation": Box(float32), "action_mask": Box(0, 1, (1 + K·M,), int8)})``;
    ``attacker_obs_layout`` maps names to slices of ``"observation"``:

    | name | size | meaning |
    |---|---|---|
    | ``theta`` | Θ | one-hot of its own risk level θ_a (private) |
    | ``backlog`` | R | queue backlog of each resource in minutes, ξ_r / f_r (visible lines) |
    | ``waits`` | T | each team's current wait w_t, minutes |
    | ``clock`` | 1 | τ / day length |
    | ``departures`` | K | (d_κ - τ) / day length: the published schedule, time to departure |
    | ``struck`` | 1 | 1 once it has struck |

    It does not see the other passengers' categories, the defender's history counts or its
    allocations. The game (rates, efficacies E, losses L, schedule) is public through
    ``game``.

    ## Rewards
    Attacker: its gain at the step it is screened (0 otherwise, 0 if detected, 0 if it never
    strikes). Defender: ``-wait - penalty - attack_loss`` (``ScreeningEnv``'s reward minus the
    attacker's gain, zero-sum in the attack part); the three components are in its ``info``.

    ## Info
    Defender: ``ScreeningEnv``'s reset/step info (``category``, ``theta``, ``flight``, ``time`` of
    the passenger now waiting, which may be the attacker; ``queues``, ``wait``, ``penalty``,
    ``proposed_violation``, ``executed_action``, ``team``) plus ``attack_loss``. Attacker:
    ``theta`` (its level), ``struck``, ``flight``, ``method``, ``strike_time`` (τ at which it
    joined the line; -1 before), ``screened`` (whether its outcome is known), ``gain`` (this
    step's), ``detection_probability`` (z_m of the executed allocation, -1 before screening) and
    ``detected`` (sampled mode: 1 or 0 once screened; otherwise -1).

    ## Starting State
    ``reset(seed)`` draws the day exactly as ``ScreeningEnv.reset(seed)`` does (same arrivals)
    and θ_a from an independent stream derived from the same seed. ``options``:
    ``{"attacker_theta": θ}`` fixes θ_a, ``{"arrivals": Arrivals}`` replays a day.

    ## Episode End
    Both agents terminate after the day's last passenger has been screened (the attacker counts
    as a passenger once it has struck).

    ## Arguments
    Every ``ScreeningEnv`` kwarg (``n_flights``, ``arrival_std``, ``horizon``,
    ``instance_seed``, ``queue_mode``, ``invalid_action``, ``risk_bound``, ``risk_slack``,
    ``lp_window_minutes``, ``schedule``, ``capacity_ratio``, ``departure_span``,
    ``planning_utilisation``, ``violation_penalty``,
    ``config``, ``game``) plus ``render_mode`` (``"ansi"`` or None).

    ```python
    from tsg_envs import duel

    env = duel.parallel_env(instance_seed=0, queue_mode="expected")
    obs, infos = env.reset(seed=1)
    while env.agents:
        actions = {a: env.action_space(a).sample(obs[a]["action_mask"] if a == "attacker"
                                                 else None) for a in env.agents}
        obs, rewards, terms, truncs, infos = env.step(actions)
    ```

    ## Version History
    * v0: initial release.
    """

    metadata = {"name": "tsg_duel_v0", "render_modes": ["ansi"], "is_parallelizable": True}

    def __init__(self, render_mode: str | None = None, **env_kwargs: Any) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:  # type: ignore[operator]
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        #: The defender's face: the single-agent environment whose day the attacker joins.
        self.screening = ScreeningEnv(render_mode=render_mode, **env_kwargs)
        g = self.screening.game
        self.game = g
        self.queue_mode = self.screening.queue_mode
        self.possible_agents = [ATTACKER, DEFENDER]
        self.agents: list[str] = []
        self.n_attack_actions = 1 + g.n_flights * g.n_methods

        # Attacker observation layout -----------------------------------------------------
        sizes = [
            ("theta", g.n_risk_levels),
            ("backlog", g.n_resources),
            ("waits", g.n_teams),
            ("clock", 1),
            ("departures", g.n_flights),
            ("struck", 1),
        ]
        self.attacker_obs_layout: dict[str, slice] = {}
        start = 0
        for name, size in sizes:
            self.attacker_obs_layout[name] = slice(start, start + size)
            start += size
        lay = self.attacker_obs_layout
        low = np.zeros(start, dtype=np.float32)
        high = np.ones(start, dtype=np.float32)
        high[lay["backlog"]] = np.inf
        high[lay["waits"]] = np.inf
        # d_κ - τ lies in [-L, L + cutoff] (τ in [0, L], d_κ in (0, L + cutoff]); a margin
        # absorbs float rounding.
        low[lay["departures"]] = -1.0 - 1e-3
        high[lay["departures"]] = 1.0 + g.arrival_cutoff / g.day_length + 1e-3
        self.defender_obs_layout: dict[str, slice] = self.screening.obs_layout
        self._spaces_obs = {
            ATTACKER: spaces.Dict(
                {
                    "observation": spaces.Box(low, high, dtype=np.float32),
                    "action_mask": spaces.Box(
                        0, 1, shape=(self.n_attack_actions,), dtype=np.int8
                    ),
                }
            ),
            DEFENDER: self.screening.observation_space,
        }
        self._spaces_act = {
            ATTACKER: spaces.Discrete(self.n_attack_actions),
            DEFENDER: self.screening.action_space,
        }
        self._inv_day = 1.0 / g.day_length
        self._dep_scaled = g.departures * self._inv_day
        self._clock_pos = lay["clock"].start
        self._rng: np.random.Generator | None = None
        self._attacker_waiting = False
        self._reset_attacker_state(theta=0)
        self._defender_obs = np.zeros(cast(tuple[int], self.screening.observation_space.shape),
                                      np.float32)
        self._defender_info: dict[str, Any] = {}

    # Spaces ---------------------------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Space:
        """The agent's observation space (the same object at every call)."""
        return self._spaces_obs[agent]

    def action_space(self, agent: str) -> spaces.Space:
        """The agent's action space (the same object at every call)."""
        return self._spaces_act[agent]

    # PettingZoo API ---------------------------------------------------------------------
    def step(
        self, actions: dict[str, Any]
    ) -> tuple[
        dict[str, Any],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        """Screen the waiting passenger with the defender's action; apply the attacker's."""
        if not self.agents:
            raise RuntimeError("the day is over: call reset() before step()")
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"actions must hold one action per live agent; missing {missing}")
        attack = self._check_attack(actions[ATTACKER])
        self.screening.check_action(actions[DEFENDER])  # nothing has moved if either is bad
        day = self.screening.day
        screening_attacker: bool = self._attacker_waiting
        d_obs, d_reward, _, _, d_info = self.screening.step(actions[DEFENDER])

        gain = 0.0
        if screening_attacker:
            gain = self._resolve(d_info)
        self._gain_step = gain
        if attack != WAIT:
            flight, method = decode_attack(attack, self.game.n_methods)
            self.screening.insert_passenger(self.theta, flight)
            self.struck = True
            self.flight, self.method = flight, method
            self.strike_time = float(day.clock)
            self._attacker_waiting = True
        else:
            self._attacker_waiting = False

        if self._attacker_waiting:
            # The state after the insertion: the defender faces the attacker next.
            d_obs = self.screening.observation()
            d_info.update(self.screening.waiting_info())
        d_info["attack_loss"] = gain
        done = day.done
        self._defender_obs, self._defender_info = d_obs, d_info
        obs = {ATTACKER: self._attacker_obs(), DEFENDER: d_obs}
        rewards = {ATTACKER: gain, DEFENDER: float(d_reward) - gain}
        terms = {a: done for a in self.agents}
        truncs = {a: False for a in self.agents}
        infos = {ATTACKER: self._attacker_info(), DEFENDER: d_info}
        if done:
            self.agents = []
        return obs, rewards, terms, truncs, infos

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Draw the day (as ``ScreeningEnv.reset(seed)``) and the attacker's level θ_a."""
        options = {} if options is None else options
        s_opts = {"arrivals": options["arrivals"]} if "arrivals" in options else None
        d_obs, d_info = self.screening.reset(seed=seed, options=s_opts)
        if seed is not None:
            self._rng = np.random.default_rng([int(seed), _ATTACKER_STREAM])
        elif self._rng is None:
            self._rng = np.random.default_rng()
        g = self.game
        theta = int(self._rng.choice(g.n_risk_levels, p=g.attacker_prior))
        if options.get("attacker_theta") is not None:
            theta = int(options["attacker_theta"])
            if not 0 <= theta < g.n_risk_levels:
                raise ValueError(f"attacker_theta must be in [0, {g.n_risk_levels}), got {theta}")
        self._reset_attacker_state(theta)
        d_info["attack_loss"] = 0.0
        self._defender_obs, self._defender_info = d_obs, d_info
        self.agents = list(self.possible_agents)
        obs = {ATTACKER: self._attacker_obs(), DEFENDER: d_obs}
        infos = {ATTACKER: self._attacker_info(), DEFENDER: d_info}
        return obs, infos

    def render(self) -> str | None:
        """``"ansi"``: the checkpoint line of ``ScreeningEnv`` plus the attacker's status."""
        if self.render_mode is None:
            return None
        line = str(self.screening.render())
        if not self.struck:
            status = f"attacker theta={self.theta} waiting"
        else:
            status = (
                f"attacker theta={self.theta} struck flight={self.flight} method={self.method} "
                f"at {self.strike_time:.1f} min"
            )
            if self.screened:
                status += f", gain {self.gain:.3f}"
        return line + status + "\n"

    def close(self) -> None:
        """Close the defender's environment."""
        self.screening.close()

    # Public helpers ---------------------------------------------------------------------
    @property
    def attacker_waiting(self) -> bool:
        """Whether the passenger now waiting for the defender is the attacker (for tests)."""
        return self._attacker_waiting

    def action_mask(self) -> np.ndarray:
        """The attacker's current action mask, int8 (1 + K·M,)."""
        mask = np.zeros(self.n_attack_actions, dtype=np.int8)
        if self.struck:
            mask[WAIT] = 1
        else:
            mask[:] = 1
        return mask

    # Internals ---------------------------------------------------------------------------
    def _reset_attacker_state(self, theta: int) -> None:
        self.theta = int(theta)
        self.struck = False
        self.screened = False
        self.flight = -1
        self.method = -1
        self.strike_time = -1.0
        self.gain = 0.0
        self._gain_step = 0.0
        self.detection_probability = -1.0
        self.detected = -1
        self._attacker_waiting = False

    def check_action(self, agent: str, action: Any) -> None:
        """Refuse a malformed action of ``agent`` now, as :meth:`step` would; change nothing.

        The attacker's must be an allowed integer (see the class docstring); the defender's is
        checked by :meth:`ScreeningEnv.check_action` (shape, NaN/inf, and the polytope in
        ``"raise"`` mode). The AEC form calls this on the acting agent's own turn.
        """
        if agent == ATTACKER:
            self._check_attack(action)
        elif agent == DEFENDER:
            self.screening.check_action(action)
        else:
            raise ValueError(f"unknown agent {agent!r}; the agents are {self.possible_agents}")

    def _check_attack(self, action: Any) -> int:
        n = self.n_attack_actions
        if isinstance(action, np.ndarray):
            if action.size != 1 or not np.issubdtype(action.dtype, np.integer):
                raise TypeError(
                    "the attacker's action must be one integer in "
                    f"[0, {n}); got an array of dtype {action.dtype} and shape {action.shape}"
                )
            action = action.reshape(()).item()
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise TypeError(
                f"the attacker's action must be an integer in [0, {n}) (0 wait, "
                f"1 + flight*M + method strike); got {type(action).__name__} {action!r}"
            )
        a = int(action)
        if not 0 <= a < n:
            raise ValueError(f"the attacker's action {a} is out of range [0, {n})")
        if self.struck and a != WAIT:
            raise ValueError(
                f"the attacker's action {a} is masked out: it has already struck, only the "
                f"no-op {WAIT} is allowed"
            )
        return a

    def _resolve(self, d_info: dict[str, Any]) -> float:
        """The attacker's outcome from the allocation the defender executed for it."""
        g = self.game
        executed = np.asarray(d_info["executed_action"], dtype=float)
        z = float(executed @ g.team_efficacy[:, self.method])
        loss = float(g.attack_loss[self.flight, self.method])
        self.detection_probability = z
        if self.queue_mode == "expected":
            gain = (1.0 - z) * loss
        else:
            assert self._rng is not None
            p = float(g.team_efficacy[d_info["team"], self.method])
            self.detected = int(self._rng.random() < p)
            gain = 0.0 if self.detected else loss
        self.screened = True
        self.gain = gain
        return gain

    def _attacker_obs(self) -> dict[str, np.ndarray]:
        day = self.screening.day
        lay = self.attacker_obs_layout
        box = cast(spaces.Dict, self._spaces_obs[ATTACKER])["observation"]
        x = np.zeros(cast(tuple[int], box.shape), dtype=np.float32)
        x[lay["theta"].start + self.theta] = 1.0
        x[lay["backlog"]] = day.backlog
        x[lay["waits"]] = day.team_waits
        clock = day.clock * self._inv_day
        x[self._clock_pos] = min(clock, 1.0)
        x[lay["departures"]] = self._dep_scaled - clock
        x[lay["struck"]] = float(self.struck)
        return {"observation": x, "action_mask": self.action_mask()}

    def _attacker_info(self) -> dict[str, Any]:
        return {
            "theta": self.theta,
            "struck": self.struck,
            "flight": self.flight,
            "method": self.method,
            "strike_time": self.strike_time,
            "screened": self.screened,
            "gain": self._gain_step,
            "detection_probability": self.detection_probability,
            "detected": self.detected,
        }


def parallel_env(**kwargs: Any) -> DuelParallelEnv:
    """The duel as a PettingZoo ``ParallelEnv`` (see :class:`DuelParallelEnv`)."""
    return DuelParallelEnv(**kwargs)


class _DuelAEC(parallel_to_aec_wrapper):
    """PettingZoo's parallel-to-AEC conversion that checks each action on its agent's turn.

    The stock conversion stores the attacker's action and only hands it to the parallel step on
    the defender's turn: a malformed attacker action would then raise on the defender's turn, and
    again on every later call (it stays stored). Here it is refused when it is given.
    """

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if not (self.terminations[agent] or self.truncations[agent]):
            self.env.check_action(agent, action)
        super().step(action)


def raw_env(**kwargs: Any) -> AECEnv:
    """The duel as an AEC env: the parallel env converted, each action checked on its turn."""
    return OrderEnforcingWrapper(_DuelAEC(DuelParallelEnv(**kwargs)))


def env(**kwargs: Any) -> AECEnv:
    """The duel as a PettingZoo ``AECEnv`` (see :func:`raw_env`)."""
    return raw_env(**kwargs)

