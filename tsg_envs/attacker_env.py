"""The attacker's side of the duel as a single-agent Gymnasium environment.

Provenance: the adversary of Shah et al. (AAAI 2020), who "can observe the screening procedure
and choose the flight, attack method and time of attack". The game is
:class:`tsg_envs.duel.DuelParallelEnv` (itself a face over the one queue model); here the
defender is folded in as a fixed policy, so that single-agent learners (Tianshou's DQN, whose
``PettingZooEnv`` needs identical spaces for all agents) can train an attacker against it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from tsg_envs.duel import ATTACKER, DEFENDER, WAIT, DuelParallelEnv
from tsg_envs.rollout import Agent

__all__ = ["AttackerEnv", "DefenderSpec"]

#: A fixed defender: an ``Agent`` instance, or a factory called with the defender's
#: ``ScreeningEnv`` (e.g. ``tsg_envs.rollout.LPAgent``).
DefenderSpec = Agent | Callable[[gym.Env], Agent]


class AttackerEnv(gym.Env):
    """Pick flight, method and moment against a fixed defender (the duel's attacker side).

    ## Description
    One day of :class:`~tsg_envs.duel.DuelParallelEnv` in which the defender is a fixed
    ``Agent`` (``act(obs, info)``, the ``tsg_envs.rollout`` protocol). The attacker's level θ_a
    is drawn from P_θ at reset (or fixed by ``options={"attacker_theta": θ}``). Each step is one
    arrival at the checkpoint; the attacker waits or strikes as a passenger of flight κ with
    method m (see the duel for what a strike does). After a strike the environment plays on
    until the defender has screened the attacker, then ends with the gain as reward.

    ## Action Space
    ``Discrete(1 + K·M)``: 0 wait, 1 + κ·M + m strike (``tsg_envs.duel.encode_attack``).
    Every action is allowed while the episode runs (after a strike it ends), so the mask is
    all ones; it is provided for masked learners and for symmetry with the duel.

    ## Observation Space
    The duel attacker's ``Dict({"observation": Box, "action_mask": Box(int8)})``; the layout of
    ``"observation"`` is ``attacker_obs_layout`` (θ one-hot, backlogs, waits, clock, time to
    each departure, struck flag).

    ## Rewards
    0 while waiting; on the step of the strike, its gain: (1 - z_m) L_{κ,m} in expected queue
    mode, L_{κ,m} or 0 (detection drawn with the drawn team's efficacy) in sampled mode. 0 if
    the day ends without a strike.

    ## Starting State
    ``reset(seed)`` draws the day and θ_a as the duel does; ``options``: ``{"attacker_theta":
    θ}`` fixes θ_a, ``{"start_step": i}`` first plays the day with the attacker waiting until
    passenger i is waiting (the attacker's first decision is then at step i).

    ## Episode End
    Terminates once the attacker has been screened or the day is over; never truncates.

    ## Info
    The duel attacker's info, plus ``defender_reward`` (the defender's reward summed over the
    steps taken) and ``step`` (the index of the passenger now waiting in the attack-free day).

    ## Arguments
    | kwarg | meaning |
    |---|---|
    | ``defender`` | an ``Agent``, or a factory ``f(screening_env) -> Agent`` (e.g. ``LPAgent``) |
    | ``**duel_kwargs`` | every ``ScreeningEnv`` kwarg (``instance_seed``, ``queue_mode``, ...) |

    ```python
    from tsg_envs.attacker_env import AttackerEnv
    from tsg_envs.rollout import LPAgent

    env = AttackerEnv(LPAgent, instance_seed=0)
    obs, info = env.reset(seed=1)
    ```

    ## Version History
    * v0: initial release.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        defender: DefenderSpec,
        render_mode: str | None = None,
        **duel_kwargs: Any,
    ) -> None:
        self.duel = DuelParallelEnv(render_mode=render_mode, **duel_kwargs)
        self.render_mode = render_mode
        if isinstance(defender, type) or not hasattr(defender, "act"):
            defender = defender(self.duel.screening)
        if not hasattr(defender, "act"):
            raise TypeError("defender must be an Agent (with act(obs, info)) or a factory of one")
        self.defender: Agent = defender
        self.game = self.duel.game
        self.attacker_obs_layout = self.duel.attacker_obs_layout
        self.observation_space = self.duel.observation_space(ATTACKER)
        self.action_space = self.duel.action_space(ATTACKER)
        self._d_obs: np.ndarray | None = None
        self._d_info: dict[str, Any] = {}
        self._a_obs: dict[str, np.ndarray] | None = None
        self._a_info: dict[str, Any] = {}
        self._done = True

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        """Wait or strike; after a strike, play on until the attacker is screened."""
        if self._done:
            raise RuntimeError("episode is over: call reset() before step()")
        reward, done = self._duel_step(action)
        total_def = self._last_def_reward
        if self.duel.attacker_waiting and not done:
            r2, done = self._duel_step(WAIT)  # the defender screens the attacker now
            reward += r2
            total_def += self._last_def_reward
        done = done or self.duel.screened
        self._done = done
        info = dict(self._a_info, defender_reward=total_def, step=self._day_step())
        assert self._a_obs is not None  # set by reset()
        return self._a_obs, reward, done, False, info

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Draw the day and θ_a (as the duel); ``start_step`` skips to a later moment."""
        super().reset(seed=seed)
        options = {} if options is None else dict(options)
        start = options.pop("start_step", None)
        obs, infos = self.duel.reset(seed=seed, options=options)
        if hasattr(self.defender, "reset"):
            self.defender.reset()
        self._a_obs, self._a_info = obs[ATTACKER], infos[ATTACKER]
        self._d_obs, self._d_info = obs[DEFENDER], infos[DEFENDER]
        self._done = False
        n = self.game.n_passengers
        if start is not None:
            if not 0 <= int(start) < n:
                raise ValueError(f"start_step must be in [0, {n}), got {start}")
            for _ in range(int(start)):
                self._duel_step(WAIT)
        return self._a_obs, dict(self._a_info, defender_reward=0.0, step=self._day_step())

    def render(self) -> str | None:
        """The duel's ``"ansi"`` line."""
        return self.duel.render()

    def close(self) -> None:
        """Close the duel."""
        self.duel.close()

    def action_masks(self) -> np.ndarray:
        """The current action mask as booleans (the convention of masked-PPO libraries)."""
        assert self._a_obs is not None
        return self._a_obs["action_mask"].astype(bool)

    # Internals ---------------------------------------------------------------------------
    def _duel_step(self, attack: Any) -> tuple[float, bool]:
        assert self._d_obs is not None  # set by reset()
        d_action = self.defender.act(self._d_obs, self._d_info)
        obs, rewards, terms, _, infos = self.duel.step({ATTACKER: attack, DEFENDER: d_action})
        self._a_obs, self._a_info = obs[ATTACKER], infos[ATTACKER]
        self._d_obs, self._d_info = obs[DEFENDER], infos[DEFENDER]
        self._last_def_reward = float(rewards[DEFENDER])
        return float(rewards[ATTACKER]), bool(terms[ATTACKER])

    def _day_step(self) -> int:
        """Index, in the attack-free day, of the passenger now waiting (N after the last)."""
        return self.duel.screening.day.index - int(self.duel.screened)
