"""Attackers for the duel: random, the exact best response, and a learned DQN timing attacker.

Every attacker implements :class:`AttackerPolicy` (``reset(seed)`` at the start of a day,
``act(obs, info) -> int`` on the duel attacker's observation and info, see
:mod:`tsg_envs.duel`); :func:`play_duel` plays one day of the duel between an attacker and a
defender ``Agent``.

* :class:`RandomAttacker`: strikes at a uniformly random arrival of the day with a uniformly
  random (flight, method).
* :class:`BestResponseAttacker`: the exact best response of SPEC §5 made playable. Before each
  day it probes the defender over that day's attack-free trajectory
  (:func:`tsg_envs.risk.worst_case_risk` with ``min_step=1``: the states the duel's attacker can
  reach) and strikes at the best (flight, method, moment) of its level. It knows the defender
  and the day (the seed): it is the worst case, not a realistic attacker. Against a
  deterministic defender in expected queue mode its realised gain equals the probe's exactly
  (the tests check this); the probe scores the *proposed* allocation, so in ``"project"`` mode
  against a defender that proposes infeasible allocations the realised gain can be lower.
* :class:`DQNAttacker`: a masked DQN (Tianshou 2.0.1 ``DQN`` algorithm and replay buffer, driven
  by a small loop written here) trained against a fixed defender; it sees only the onlooker
  observation (its level, queues, clock, schedule), never the defender's allocations, and
  learns from its gains. :func:`train_dqn_attacker` trains one; :func:`attacker_gain` scores
  any attacker against the best response on the same days, in the real duel.

Training samples with :func:`counterfactual_day`: one simulated day carries many attackers at
once (a strike's outcome is what the duel would give it, and no attacker disturbs what the
others see), each starting at a moment drawn uniformly over the day (*exploring starts*: with
ε-greedy exploration alone, random actions strike almost at once and late moments are never
tried). This gives dozens of outcomes per simulated day instead of one, which is what makes a
few minutes of CPU enough. Rewards are undiscounted (γ = 1 by default): the attacker's objective
is its gain, whenever it comes. :class:`tsg_envs.attacker_env.AttackerEnv` is the same
attacker's single-agent face for stock learners (one attacker per simulated day).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
import torch
from tianshou.algorithm.modelfree.dqn import DQN, DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Batch, ReplayBuffer
from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode
from torch import nn

from tsg_envs.attacker_env import AttackerEnv, DefenderSpec
from tsg_envs.duel import ATTACKER, DEFENDER, WAIT, DuelParallelEnv, encode_attack
from tsg_envs.env import ScreeningEnv
from tsg_envs.risk import RiskReport, worst_case_risk
from tsg_envs.rollout import Agent

__all__ = [
    "AttackerPolicy",
    "DuelOutcome",
    "play_duel",
    "RandomAttacker",
    "BestResponseAttacker",
    "DQNAttackerConfig",
    "DQNAttacker",
    "train_dqn_attacker",
    "counterfactual_day",
    "AttackerScore",
    "attacker_gain",
    "TianshouMaskObs",
]

#: Entropy word of the random attacker's per-day stream.
_RANDOM_STREAM = 0x5EED
#: Entropy word of the DQN's training-day seeds.
_TRAIN_STREAM = 0xD09


class AttackerPolicy(Protocol):
    """What every attacker implements."""

    def reset(self, seed: int | None = None) -> None:
        """Start a day (``seed`` is the duel's reset seed; attackers that plan may use it)."""
        ...

    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> int:
        """0 to wait, 1 + κ·M + m to strike (the duel's attacker action)."""
        ...


@dataclass(frozen=True)
class DuelOutcome:
    """One day of the duel.

    Attributes:
        theta: The attacker's level.
        struck: Whether it struck.
        flight: Its flight (-1 if it never struck).
        method: Its method (-1 if it never struck).
        strike_step: Index (in the attack-free day) of the passenger it cut in ahead of.
        strike_time: τ at which it joined the line (-1 if never).
        gain: Its gain (the attacker's return).
        detection_probability: z_m of the allocation it was screened with (-1 if never).
        defender_return: The defender's return (-waits - penalties - gain).
        mean_wait: The passengers' mean wait (the attacker included if it struck), minutes.
        decisions: Defender decisions (passengers of the day, +1 if the attacker struck).
    """

    theta: int
    struck: bool
    flight: int
    method: int
    strike_step: int
    strike_time: float
    gain: float
    detection_probability: float
    defender_return: float
    mean_wait: float
    decisions: int


def play_duel(
    duel: DuelParallelEnv,
    attacker: AttackerPolicy,
    defender: Agent,
    seed: int | None,
    theta: int | None = None,
) -> DuelOutcome:
    """Play one day of the parallel duel.

    Args:
        duel: The game.
        attacker: Its ``reset(seed)`` is called first.
        defender: A fixed defender ``Agent`` (its ``reset()`` is called if present).
        seed: The day's reset seed.
        theta: Fix the attacker's level (None: drawn from P_θ).

    Returns:
        The :class:`DuelOutcome`.
    """
    options = None if theta is None else {"attacker_theta": int(theta)}
    obs, infos = duel.reset(seed=seed, options=options)
    attacker.reset(seed)
    if hasattr(defender, "reset"):
        defender.reset()
    waits: list[float] = []
    d_return = gain = 0.0
    strike_step = -1
    while duel.agents:
        a = attacker.act(obs[ATTACKER], infos[ATTACKER])
        d = defender.act(obs[DEFENDER], infos[DEFENDER])
        obs, rewards, _, _, infos = duel.step({ATTACKER: a, DEFENDER: d})
        waits.append(float(infos[DEFENDER]["wait"]))
        d_return += rewards[DEFENDER]
        gain += rewards[ATTACKER]
        if duel.attacker_waiting:  # it stands where passenger `index` of the day stood
            strike_step = duel.screening.day.index
    info = infos[ATTACKER]
    return DuelOutcome(
        theta=int(info["theta"]),
        struck=bool(info["struck"]),
        flight=int(info["flight"]),
        method=int(info["method"]),
        strike_step=strike_step,
        strike_time=float(info["strike_time"]),
        gain=float(gain),
        detection_probability=float(info["detection_probability"]),
        defender_return=float(d_return),
        mean_wait=float(np.mean(waits)),
        decisions=len(waits),
    )


# Random ------------------------------------------------------------------------------------------
class RandomAttacker:
    """Strikes at a uniformly random arrival with a uniformly random (flight, method).

    Args:
        game: The instance (its day length N, flights K and methods M are public).
        seed: Seeds the choices when ``reset`` gets no seed.
    """

    def __init__(self, game: Any, seed: int = 0) -> None:
        self._n = int(game.n_passengers)
        self._n_strikes = int(game.n_flights * game.n_methods)
        self._rng = np.random.default_rng(seed)
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        """Draw the day's strike moment and (flight, method) (from ``seed`` if given)."""
        if seed is not None:
            self._rng = np.random.default_rng([int(seed), _RANDOM_STREAM])
        self._strike_at = int(self._rng.integers(self._n))
        self._strike = 1 + int(self._rng.integers(self._n_strikes))
        self._i = 0

    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> int:
        """Wait until the drawn arrival, then strike."""
        i = self._i
        self._i += 1
        if i == self._strike_at and not info["struck"]:
            return self._strike
        return WAIT


# Exact best response ----------------------------------------------------------------------------
class BestResponseAttacker:
    """The exact best response of SPEC §5 to a fixed defender, as a playable attacker.

    Args:
        defender: The defender it responds to (deterministic, side-effect-free ``act``; the
            same object plays the duel).
        **env_kwargs: The duel's ``ScreeningEnv`` kwargs (the same game and queue mode).
    """

    def __init__(self, defender: Agent, **env_kwargs: Any) -> None:
        self.defender = defender
        self._env = ScreeningEnv(**env_kwargs)
        self.report: RiskReport | None = None
        self._plans: dict[int, RiskReport] = {}
        self._i = 0

    def plan(self, seed: int | None) -> RiskReport:
        """The best response on day ``seed`` over the duel-reachable states (cached per seed).

        It becomes the :attr:`report` that :meth:`act` plays.
        """
        if seed is None or seed not in self._plans:
            report = worst_case_risk(self._env, self.defender, seed=seed, min_step=1)
            if seed is not None:
                self._plans[seed] = report
        else:
            report = self._plans[seed]
        self.report = report
        return report

    def reset(self, seed: int | None = None) -> None:
        """Plan the day ``seed`` (the duel's reset seed)."""
        self.plan(seed)
        self._i = 0

    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> int:
        """Strike at step best_step - 1 (it then cuts in ahead of passenger best_step)."""
        assert self.report is not None, "call reset(seed) first"
        i = self._i
        self._i += 1
        if info["struck"]:
            return WAIT
        theta = int(info["theta"])
        if i == int(self.report.best_step[theta]) - 1:
            m = int(self._env.game.n_methods)
            return encode_attack(
                int(self.report.best_flight[theta]), int(self.report.best_method[theta]), m
            )
        return WAIT

    def gain(self, theta: int) -> float:
        """The planned (expected) gain of level ``theta`` on the planned day."""
        assert self.report is not None, "call reset(seed) first"
        return float(self.report.best_gain[theta])


# Learned DQN timing attacker --------------------------------------------------------------------
@dataclass(kw_only=True)
class DQNAttackerConfig:
    """Hyper-parameters of the DQN attacker.

    Attributes:
        steps: Attacker decisions (stored transitions) of training.
        seed: Seeds the network, the exploration and the training days.
        attackers_per_day: Attackers B sharing each training day (see
            :func:`train_dqn_attacker`).
        hidden_sizes: Q-network MLP widths.
        lr: Adam learning rate.
        gamma: Discount per arrival (1: the gain counts whenever it comes).
        n_step: n-step return horizon.
        target_update_freq: Gradient steps between target-network copies.
        batch_size: Minibatch size.
        buffer_size: Replay capacity (transitions).
        warmup_steps: Transitions stored before the first gradient step.
        updates_per_step: Gradient steps per stored transition after warm-up.
        eps_start: ε of ε-greedy at the start (random actions are uniform over the mask).
        eps_end: ε after ``eps_decay_steps``.
        eps_decay_steps: Linear decay length of ε, in stored transitions.
        wait_scale: Minutes by which the queue features are divided.
        threads: ``torch.set_num_threads`` during training.
    """

    steps: int = 100_000
    seed: int = 0
    attackers_per_day: int = 64
    hidden_sizes: tuple[int, ...] = (128, 128)
    lr: float = 1e-3
    gamma: float = 1.0
    n_step: int = 1
    target_update_freq: int = 500
    batch_size: int = 256
    buffer_size: int = 200_000
    warmup_steps: int = 5_000
    updates_per_step: float = 0.1
    eps_start: float = 1.0
    eps_end: float = 0.05
    eps_decay_steps: int = 50_000
    wait_scale: float = 10.0
    threads: int = 1


class _QNet(nn.Module):
    """Q(s, ·): fixed scaling of the queue features, then an MLP (Tianshou model signature)."""

    def __init__(
        self,
        layout: dict[str, slice],
        obs_dim: int,
        n_actions: int,
        hidden_sizes: Sequence[int],
        wait_scale: float,
    ) -> None:
        super().__init__()
        scale = torch.ones(obs_dim)
        for name in ("backlog", "waits"):
            scale[layout[name]] = 1.0 / wait_scale
        self.register_buffer("scale_O", scale)
        layers: list[nn.Module] = []
        d = obs_dim
        for h in hidden_sizes:
            layers += [nn.Linear(d, h), nn.ReLU()]
            d = h
        layers.append(nn.Linear(d, n_actions))
        self.net = nn.Sequential(*layers)

    def forward(
        self, obs: np.ndarray | torch.Tensor, state: Any = None, info: Any = None
    ) -> tuple[torch.Tensor, Any]:
        """(Q-values (B, A), state)."""
        obs_BO = torch.as_tensor(obs, dtype=torch.float32, device=self.scale_O.device)
        return self.net(obs_BO * self.scale_O), state


class DQNAttacker:
    """A trained DQN attacker: the masked greedy action of its Q-network (stateless).

    Args:
        net: The Q-network.
        config: Its training config (saved with it).
        meta: What it was trained against (saved with it).
    """

    def __init__(self, net: _QNet, config: DQNAttackerConfig, meta: dict[str, Any]) -> None:
        self.net = net.eval()
        self.config = config
        self.meta = meta

    def reset(self, seed: int | None = None) -> None:
        """Nothing to plan."""

    def q_values(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        """Q(s, ·) of one observation, (1 + K·M,)."""
        with torch.no_grad():
            q, _ = self.net(np.asarray(obs["observation"], dtype=np.float32)[None])
        return q[0].numpy()

    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any] | None = None) -> int:
        """The action of largest Q among those the mask allows."""
        q = self.q_values(obs)
        q[np.asarray(obs["action_mask"]) == 0] = -np.inf
        return int(np.argmax(q))

    def save(self, path: Path) -> Path:
        """Write the network, config and meta to ``path`` (a ``.pt`` file)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(
            {
                "state_dict": self.net.state_dict(),
                "config": dataclasses.asdict(self.config),
                "meta": self.meta,
            },
            path,
        )
        return path

    @classmethod
    def load(cls, path: Path, env: AttackerEnv | DuelParallelEnv) -> DQNAttacker:
        """Rebuild the identical attacker from :meth:`save`'s file for ``env``'s game."""
        state = torch.load(Path(path), map_location="cpu", weights_only=True)
        cfg = DQNAttackerConfig(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in state["config"].items()}
        )
        net = _make_net(env, cfg)
        net.load_state_dict(state["state_dict"])
        return cls(net, cfg, state["meta"])


def _make_net(env: AttackerEnv | DuelParallelEnv, cfg: DQNAttackerConfig) -> _QNet:
    layout = env.attacker_obs_layout
    space = (
        env.observation_space if isinstance(env, AttackerEnv) else env.observation_space(ATTACKER)
    )
    obs_dim = int(space["observation"].shape[0])
    n_actions = int(space["action_mask"].shape[0])
    return _QNet(layout, obs_dim, n_actions, cfg.hidden_sizes, cfg.wait_scale)


def _resolve_defender(defender: DefenderSpec, screening: ScreeningEnv) -> Agent:
    if isinstance(defender, type) or not hasattr(defender, "act"):
        defender = defender(screening)
    return defender


def _defender_actions(
    defender: Agent, obs: np.ndarray, info: dict[str, Any], categories: np.ndarray, k: int,
    cat_slice: slice,
) -> np.ndarray:
    """The defender's proposed allocations for passengers of ``categories`` in one state."""
    block = np.repeat(np.asarray(obs, dtype=np.float32)[None], len(categories), axis=0)
    block[:, cat_slice] = 0.0
    block[np.arange(len(categories)), cat_slice.start + categories] = 1.0
    infos = [dict(info, category=int(c), theta=int(c) // k, flight=int(c) % k) for c in categories]
    act_batch = getattr(defender, "act_batch", None)
    if act_batch is not None:
        return np.asarray(act_batch(block, infos), dtype=float)
    return np.stack([np.asarray(defender.act(block[j], infos[j]), dtype=float)
                     for j in range(len(infos))])


def counterfactual_day(
    duel: DuelParallelEnv,
    defender: Agent,
    choose: Any,
    thetas: np.ndarray,
    starts: np.ndarray,
    seed: int,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """One day of the duel seen by B attackers at once (the training sampler).

    The day is played once with the attacker waiting (the defender's trajectory is then the
    single-agent one); attacker b (level ``thetas[b]``) makes its first decision at passenger
    ``starts[b]`` and, until it strikes, one decision per arrival: ``choose(x_AO, ids_A) ->
    actions_A`` on the observations of the attackers still deciding (``ids_A`` their indices).
    A strike decided at state s_i is screened, exactly as in the duel, at s_{i+1} with the
    attacker's category swapped in: its gain is (1 - z_m) L_{κ,m} for the defender's *proposed*
    allocation there (clipped, renormalised; expected queue mode) or L_{κ,m} with probability
    1 - E_{t*,m}, t* drawn from it (sampled mode). Attackers do not disturb one another or the
    day: each one's episode ends at its own screening, before its insertion could change
    anything it sees. The proposed allocation is the executed one for feasible defenders and in
    ``"penalize"`` mode; in ``"project"`` mode an infeasible proposal would be projected by the
    duel.

    Returns:
        Transitions as arrays: ``obs`` (n, O), ``act`` (n,), ``rew`` (n,), ``obs_next`` (n, O),
        ``terminated`` (n,); and ``gain`` (B,), ``strike_step`` (B,) (-1: never struck).
    """
    g = duel.game
    k, m_count = g.n_flights, g.n_methods
    lay = duel.attacker_obs_layout
    th_sl, st_sl = lay["theta"], lay["struck"]
    cat_slice = duel.defender_obs_layout["category"]
    b_count = len(thetas)
    obs, infos = duel.reset(seed=seed)
    if hasattr(defender, "reset"):
        defender.reset()
    n = g.n_passengers
    done_b = np.zeros(b_count, dtype=bool)
    gain_b = np.zeros(b_count)
    strike_b = np.full(b_count, -1)
    out: dict[str, list] = {k_: [] for k_ in ("obs", "act", "rew", "obs_next", "terminated")}

    def personal(x: np.ndarray, idx: np.ndarray, struck: np.ndarray | None = None) -> np.ndarray:
        xs = np.repeat(x[None], len(idx), axis=0)
        xs[:, th_sl] = 0.0
        xs[np.arange(len(idx)), th_sl.start + thetas[idx]] = 1.0
        xs[:, st_sl] = 0.0 if struck is None else struck[:, None]
        return xs

    for i in range(n):
        x_i = obs[ATTACKER]["observation"]
        active = np.flatnonzero(~done_b & (starts <= i))
        acts = None
        if active.size:
            x_a = personal(x_i, active)
            acts = np.asarray(choose(x_a, active), dtype=int)
        d = defender.act(obs[DEFENDER], infos[DEFENDER])
        obs, _, _, _, infos = duel.step({ATTACKER: WAIT, DEFENDER: d})
        if not active.size:
            continue
        strike = acts != WAIT
        rew = np.zeros(active.size)
        if strike.any():
            hit = active[strike]
            flights, methods = np.divmod(acts[strike] - 1, m_count)
            cats = thetas[hit] * k + flights
            pi = _defender_actions(defender, obs[DEFENDER], infos[DEFENDER], cats, k, cat_slice)
            pi = np.maximum(pi, 0.0)
            pi /= pi.sum(axis=1, keepdims=True)
            eff = g.team_efficacy[:, methods].T  # (S, T)
            loss = g.attack_loss[flights, methods]
            if duel.queue_mode == "expected":
                gains = (1.0 - (pi * eff).sum(axis=1)) * loss
            else:
                teams = np.array([rng.choice(pi.shape[1], p=row) for row in pi])
                detected = rng.random(len(hit)) < eff[np.arange(len(hit)), teams]
                gains = np.where(detected, 0.0, loss)
            rew[strike] = gains
            gain_b[hit] = gains
            strike_b[hit] = i + 1
            done_b[hit] = True
        last = i == n - 1
        out["obs"].append(x_a)
        out["act"].append(acts)
        out["rew"].append(rew)
        out["obs_next"].append(personal(obs[ATTACKER]["observation"], active, strike.astype(float)))
        out["terminated"].append(strike | last)
    arrays = {k_: np.concatenate(v) if v else np.zeros(0) for k_, v in out.items()}
    arrays["gain"] = gain_b
    arrays["strike_step"] = strike_b
    return arrays


def train_dqn_attacker(
    defender: DefenderSpec,
    dqn_config: DQNAttackerConfig | None = None,
    progress: bool = False,
    **env_kwargs: Any,
) -> DQNAttacker:
    """Train a masked DQN attacker against a fixed defender (expected queue mode by default).

    Tianshou's ``DQN`` (double Q-learning, target network) and ``ReplayBuffer`` learn from
    transitions sampled by :func:`counterfactual_day`: each training day (a fresh reset seed)
    carries ``attackers_per_day`` attackers with levels drawn from P_θ and first decisions drawn
    uniformly over the day (exploring starts), acting ε-greedily. Transitions store the plain
    observation; the mask only matters at acting time (a training episode ends at the strike,
    so every stored next state allows every action).

    Args:
        defender: An ``Agent`` or a factory ``f(screening_env) -> Agent`` (e.g. ``LPAgent``).
        dqn_config: Hyper-parameters (default :class:`DQNAttackerConfig`).
        progress: Show a progress bar.
        **env_kwargs: The duel's ``ScreeningEnv`` kwargs (``instance_seed``, ``config``, ...).

    Returns:
        The greedy :class:`DQNAttacker`.
    """
    cfg = DQNAttackerConfig() if dqn_config is None else dqn_config
    env_kwargs.setdefault("queue_mode", "expected")
    duel = DuelParallelEnv(**env_kwargs)
    defender = _resolve_defender(defender, duel.screening)
    torch.set_num_threads(cfg.threads)
    gen = torch.Generator().manual_seed(cfg.seed)
    net = _make_net(duel, cfg)
    with torch.no_grad():  # seeded initialisation without touching torch's global generator
        for p in net.parameters():
            if p.dim() > 1:
                bound = 1.0 / np.sqrt(p.shape[1])
                p.copy_(torch.empty_like(p).uniform_(-bound, bound, generator=gen))
            else:
                p.zero_()
    policy = DiscreteQLearningPolicy(model=net, action_space=duel.action_space(ATTACKER))
    algorithm = DQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=cfg.lr),
        gamma=cfg.gamma,
        n_step_return_horizon=cfg.n_step,
        target_update_freq=cfg.target_update_freq,
    )
    buffer = ReplayBuffer(cfg.buffer_size, random_seed=cfg.seed)
    rng = np.random.default_rng([cfg.seed, _TRAIN_STREAM])
    g = duel.game
    n_actions = duel.n_attack_actions
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.steps, desc="dqn-attacker", unit="step")
    step, credit, days, t0 = 0, 0.0, 0, time.perf_counter()
    day_gains: list[float] = []

    def eps_now() -> float:
        frac = max(0.0, 1.0 - step / max(cfg.eps_decay_steps, 1))
        return cfg.eps_end + (cfg.eps_start - cfg.eps_end) * frac

    def choose(x_ao: np.ndarray, ids: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            q, _ = net(x_ao)
        acts = q.argmax(dim=1).numpy()
        explore = rng.random(len(acts)) < eps_now()
        acts[explore] = rng.integers(n_actions, size=int(explore.sum()))
        return acts

    while step < cfg.steps:
        b = cfg.attackers_per_day
        thetas = rng.choice(g.n_risk_levels, size=b, p=g.attacker_prior)
        starts = rng.integers(g.n_passengers, size=b)
        policy.eval()
        data = counterfactual_day(
            duel, defender, choose, thetas, starts, int(rng.integers(2**31 - 1)), rng
        )
        days += 1
        day_gains.append(float(data["gain"].mean()))
        added = 0
        for j in range(len(data["act"])):
            if step + added >= cfg.steps:
                break
            buffer.add(
                Batch(
                    obs=data["obs"][j],
                    act=int(data["act"][j]),
                    rew=float(data["rew"][j]),
                    terminated=bool(data["terminated"][j]),
                    truncated=False,
                    obs_next=data["obs_next"][j],
                    info={},
                )
            )
            added += 1
        step += added
        if bar is not None:
            bar.update(added)
        if step > cfg.warmup_steps and len(buffer) >= cfg.batch_size:
            credit += cfg.updates_per_step * added
            with policy_within_training_step(policy), torch_train_mode(algorithm):
                while credit >= 1.0:
                    algorithm.update(buffer, cfg.batch_size)
                    credit -= 1.0
    if bar is not None:
        bar.close()
    meta = {
        "defender": getattr(defender, "name", type(defender).__name__),
        "env_kwargs": {k: v for k, v in env_kwargs.items() if isinstance(v, (int, float, str))},
        "days": days,
        "train_wall_s": round(time.perf_counter() - t0, 2),
        "last_10_days_mean_gain": float(np.mean(day_gains[-10:])) if day_gains else 0.0,
    }
    return DQNAttacker(net, cfg, meta)


# Scoring ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AttackerScore:
    """An attacker's expected gain against the exact best response's on the same days.

    Attributes:
        gain: Mean over days of Σ_θ P_θ (gain of the attacker playing level θ).
        best_response_gain: The same for the exact best response (the duel-reachable worst-case
            risk of the defender).
        fraction: gain / best_response_gain.
        per_theta_gain: (Θ,) mean gain per level.
        per_theta_best: (Θ,) mean best-response gain per level.
        seeds: The days (reset seeds).
    """

    gain: float
    best_response_gain: float
    fraction: float
    per_theta_gain: np.ndarray
    per_theta_best: np.ndarray
    seeds: tuple[int, ...]


def attacker_gain(
    attacker: AttackerPolicy,
    defender: Agent,
    seeds: Sequence[int],
    best: BestResponseAttacker | None = None,
    **env_kwargs: Any,
) -> AttackerScore:
    """Score ``attacker`` against ``defender`` as a fraction of the exact best response.

    Every level θ is played on every day (weighted by P_θ), in the queue mode of
    ``env_kwargs`` (default expected, where gains are deterministic); the best response is
    planned on the same days.

    Args:
        attacker: The attacker to score.
        defender: A deterministic defender ``Agent``.
        seeds: Reset seeds of the days.
        best: A :class:`BestResponseAttacker` of the same defender and kwargs to reuse (its
            plans are cached per day); None builds one.
        **env_kwargs: The duel's ``ScreeningEnv`` kwargs.
    """
    env_kwargs.setdefault("queue_mode", "expected")
    duel = DuelParallelEnv(**env_kwargs)
    if best is None:
        best = BestResponseAttacker(defender, **env_kwargs)
    prior = duel.game.attacker_prior
    n_theta = duel.game.n_risk_levels
    got = np.zeros((len(seeds), n_theta))
    opt = np.zeros((len(seeds), n_theta))
    for i, seed in enumerate(seeds):
        report = best.plan(int(seed))
        opt[i] = report.best_gain
        for theta in range(n_theta):
            got[i, theta] = play_duel(duel, attacker, defender, int(seed), theta=theta).gain
    gain = float(np.mean(got @ prior))
    best_gain = float(np.mean(opt @ prior))
    return AttackerScore(
        gain=gain,
        best_response_gain=best_gain,
        fraction=gain / best_gain if best_gain > 0 else float("nan"),
        per_theta_gain=got.mean(axis=0),
        per_theta_best=opt.mean(axis=0),
        seeds=tuple(int(s) for s in seeds),
    )



class TianshouMaskObs(gym.ObservationWrapper):
    """Rename the attacker observation's keys to Tianshou's masking convention.

    ``{"observation", "action_mask"}`` (PettingZoo's) becomes ``{"obs", "mask"}`` (what
    Tianshou's ``DiscreteQLearningPolicy`` reads), so stock Tianshou collectors and DQN run on
    :class:`~tsg_envs.attacker_env.AttackerEnv` unchanged.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        self.observation_space = gym.spaces.Dict(
            {"obs": space["observation"], "mask": space["action_mask"]}
        )

    def observation(self, observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The renamed observation."""
        return {"obs": observation["observation"], "mask": observation["action_mask"]}
