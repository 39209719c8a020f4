"""A learned attacker for the duel: a masked DQN timing attacker (Tianshou 2.0.1).

:class:`DQNAttacker` is a masked DQN (Tianshou's ``DQN`` algorithm and replay buffer, driven by
a small loop written here) trained against a fixed defender; it sees only the onlooker
observation (its level, queues, clock, schedule), never the defender's allocations, and learns
from its gains. :func:`train_dqn_attacker` trains one; :func:`baselines.attackers.attacker_gain`
scores it against the best response on the same days, in the real duel. A trained attacker is
saved as one safetensors file (its network, config and what it was trained against as
metadata; :mod:`baselines.checkpoint`), never a pickle.

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

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tianshou.algorithm.modelfree.dqn import DQN, DiscreteQLearningPolicy
from tianshou.data import Batch, ReplayBuffer
from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode
from torch import nn

from baselines.checkpoint import module_tensors, read_weights, save_weights
from baselines.config import as_dict, config_from
from baselines.optim import adam
from tsg_envs.attacker_env import AttackerEnv, DefenderSpec
from tsg_envs.duel import ATTACKER, DEFENDER, WAIT, DuelParallelEnv
from tsg_envs.env import ScreeningEnv
from tsg_envs.rollout import Agent

__all__ = [
    "DQNAttackerConfig",
    "DQNAttacker",
    "train_dqn_attacker",
    "counterfactual_day",
    "TianshouMaskObs",
]

#: Entropy word of the DQN's training-day seeds.
_TRAIN_STREAM = 0xD09


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
        """Write the network, config and meta to ``path`` (one safetensors file)."""
        return save_weights(Path(path), module_tensors(self.net), method="dqn-attacker",
                            config=as_dict(self.config), extra={"meta": self.meta})

    @classmethod
    def load(cls, path: Path, env: AttackerEnv | DuelParallelEnv) -> DQNAttacker:
        """Rebuild the identical attacker from :meth:`save`'s file for ``env``'s game.

        Raises:
            ValueError: when the file is not a DQN attacker's (or not this format: convert a
                legacy ``.pt`` with ``python -m baselines.checkpoint convert``).
        """
        tensors, meta = read_weights(Path(path))
        if meta.get("method") != "dqn-attacker":
            raise ValueError(f"{path} holds a {meta.get('method')} checkpoint, not a DQN "
                             "attacker's")
        cfg = config_from(DQNAttackerConfig, meta["config"], what="the DQN attacker")
        net = _make_net(env, cfg)
        net.load_state_dict(tensors)
        return cls(net, cfg, meta.get("meta", {}))


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
        optim=adam(lr=cfg.lr),
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
