"""α-projected DDPG, the method of Shah et al. (AAAI 2020), on Tianshou 2.0.1's ``DDPG``.

Actor: MLP → tanh logits u ∈ (-1, 1)^T → softmax(β u) → :class:`~baselines.projection.
AlphaProjection` toward the waiting category's polytope centre (category read from the
observation's one-hot, so Tianshou's target actor, which gets no ``info``, projects correctly).
Tianshou's action scaling and bounding are off (``action_scaling=False``,
``action_bound_method=None``): the actor's output *is* the allocation. Exploration: Gaussian
noise on u *before* the softmax and the projection, so every executed and every stored action is
feasible; warm-up draws feasible allocations (``PolytopeSet.sample``), never ``Box.sample()``.
During training the env is made with ``invalid_action="raise"``, so any infeasible action would
fail loudly.

Optional regulariser (``reg_weight``): the actor loss adds ``reg_weight · ‖s - y‖²`` (s the
softmax point, y its projection), as the authors' released layer asks; the paper is silent.

This module also holds the DDPG-family builder shared by ``alpha_td3``, ``penalty_ddpg`` and
``l2_ddpg`` (they differ in the projection, the env's ``invalid_action`` and TD3's extras).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import torch
from tianshou.algorithm import DDPG, TD3
from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy, DDPGTrainingStats
from tianshou.algorithm.modelfree.td3 import TD3TrainingStats
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Batch

from baselines._torch_common import (
    Critic,
    OffPolicyConfig,
    OffPolicyHooks,
    RadialActor,
    SimplexActor,
    TorchAgent,
    greedy_simplex_act,
    load_checkpoint,
    make_config,
    train_off_policy,
)
from baselines.api import Method, RunConfig
from baselines.projection import (
    AlphaProjection,
    L2Projection,
    RadialSquash,
    projection_distance,
)

__all__ = ["AlphaDDPGConfig", "METHOD", "train", "load", "build", "RegularisedDDPG"]

ProjectionKind = Literal["alpha", "l2", "radial", "none"]


@dataclass(kw_only=True)
class AlphaDDPGConfig(OffPolicyConfig):
    """α-DDPG hyper-parameters (see :class:`~baselines._torch_common.OffPolicyConfig`).

    Attributes:
        reg_weight: Weight of the ‖s - y‖² regulariser on the projection's move (0: off).
    """

    reg_weight: float = 0.0


def _actor_loss(
    actor: SimplexActor, critic: torch.nn.Module, obs: Any, reg_weight: float,
    penalty: tuple[torch.nn.Module, float] | None = None,
) -> torch.Tensor:
    """-Q(s, π(s)) averaged, plus the optional regularisers.

    ``reg_weight · ‖s - y‖²`` penalises the actor's own projection's move; ``penalty = (P, w)``
    adds ``w · ‖y - P(y)‖²``, the distance from the action to its α-projection (the
    projection-penalty rival, whose actions are projected by the environment, not the actor).
    """
    y, s = actor.from_logits(actor.logits(obs), obs)
    loss = -critic(obs, y.float()).mean()
    if reg_weight > 0:
        loss = loss + reg_weight * projection_distance(s.float(), y.float()).mean()
    if penalty is not None and penalty[1] > 0:
        proj, weight = penalty
        obs_BO = torch.as_tensor(obs, dtype=torch.float32)
        loss = loss + weight * projection_distance(y.float(), proj(y, obs_BO).float()).mean()
    return loss


class RegularisedDDPG(DDPG):
    """Tianshou ``DDPG`` whose actor loss may add regularisers (see :func:`_actor_loss`)."""

    def __init__(self, *, reg_weight: float = 0.0,
                 penalty: tuple[torch.nn.Module, float] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reg_weight = float(reg_weight)
        self.penalty = penalty

    def _update_with_batch(self, batch: Any) -> DDPGTrainingStats:
        td, critic_loss = self._minimize_critic_squared_loss(batch, self.critic, self.critic_optim)
        batch.weight = td  # prio-buffer
        actor_loss = _actor_loss(self.policy.actor, self.critic, batch.obs, self.reg_weight,
                                 self.penalty)
        self.policy_optim.step(actor_loss)
        self._update_lagged_network_weights()
        return DDPGTrainingStats(actor_loss=actor_loss.item(), critic_loss=critic_loss.item())


class AlphaTD3(TD3):
    """Tianshou ``TD3`` with target smoothing in logit space, re-projected.

    The lagged actor's logits u get clipped Gaussian noise (``policy_noise``, ``noise_clip`` in
    tanh-logit units), are clipped to [-1, 1], then go through softmax and the projection again,
    so every target action is feasible. The actor loss may add the regulariser.
    """

    def __init__(self, *, reg_weight: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reg_weight = float(reg_weight)

    def _target_q_compute_action(self, obs_batch: Batch) -> Any:
        actor: SimplexActor = self.actor_old.module
        actor.eval()
        u = actor.logits(obs_batch.obs)
        noise = torch.randn_like(u) * self.policy_noise
        if self.noise_clip > 0.0:
            noise = noise.clamp(-self.noise_clip, self.noise_clip)
        y, _ = actor.from_logits((u + noise).clamp(-1.0, 1.0), obs_batch.obs)
        return Batch(act=y.float(), state=None)

    def _update_with_batch(self, batch: Any) -> TD3TrainingStats:
        td1, critic1_loss = self._minimize_critic_squared_loss(
            batch, self.critic, self.critic_optim
        )
        td2, critic2_loss = self._minimize_critic_squared_loss(
            batch, self.critic2, self.critic2_optim
        )
        batch.weight = (td1 + td2) / 2.0
        if self._cnt % self.update_actor_freq == 0:
            actor_loss = _actor_loss(self.policy.actor, self.critic, batch.obs, self.reg_weight)
            self._last = actor_loss.item()
            self.policy_optim.step(actor_loss)
            self._update_lagged_network_weights()
        self._cnt += 1
        return TD3TrainingStats(
            actor_loss=self._last,
            critic1_loss=critic1_loss.item(),
            critic2_loss=critic2_loss.item(),
        )


def _projection(env: gym.Env, kind: ProjectionKind) -> torch.nn.Module | None:
    if kind == "alpha":
        return AlphaProjection.from_env(env)
    if kind == "l2":
        return L2Projection.from_env(env)
    if kind == "radial":
        return RadialSquash.from_env(env)
    return None


def build(
    env: gym.Env,
    cfg: OffPolicyConfig,
    projection: ProjectionKind = "alpha",
    td3: dict[str, Any] | None = None,
) -> tuple[Any, SimplexActor]:
    """Build the Tianshou algorithm (``RegularisedDDPG`` or ``AlphaTD3``) and its actor.

    Args:
        env: The (unwrapped-compatible) screening env: its polytopes and obs layout are used.
        cfg: Hyper-parameters (``reg_weight`` read when present).
        projection: ``"alpha"``, ``"l2"`` (cvxpylayers), ``"radial"`` (radial squashing of
            the logits, :class:`~baselines._torch_common.RadialActor`) or ``"none"`` (plain
            softmax). With ``"none"``, a config field ``projection_penalty`` > 0 adds its
            weight times the distance to the α-projection to the actor loss (DDPG only).
        td3: ``None`` for DDPG, else TD3's ``policy_noise``, ``noise_clip``,
            ``update_actor_freq``.
    """
    u = env.unwrapped
    obs_dim = int(env.observation_space.shape[0])
    n_teams = int(env.action_space.shape[0])
    actor_cls = RadialActor if projection == "radial" else SimplexActor
    actor = actor_cls(
        u.obs_layout,
        obs_dim,
        n_teams,
        cfg.hidden_sizes,
        cfg.wait_scale,
        cfg.beta,
        _projection(env, projection),
    )
    policy = ContinuousDeterministicPolicy(
        actor=actor,
        exploration_noise=None,
        action_space=env.action_space,
        observation_space=env.observation_space,
        action_scaling=False,
        action_bound_method=None,
    )

    def critic() -> Critic:
        return Critic(u.obs_layout, obs_dim, n_teams, cfg.hidden_sizes, cfg.wait_scale)

    common = {
        "policy": policy,
        "policy_optim": AdamOptimizerFactory(lr=cfg.actor_lr),
        "critic": critic(),
        "critic_optim": AdamOptimizerFactory(lr=cfg.critic_lr),
        "tau": cfg.tau,
        "gamma": cfg.gamma,
        "n_step_return_horizon": cfg.n_step,
        "reg_weight": getattr(cfg, "reg_weight", 0.0),
    }
    if td3 is None:
        weight = float(getattr(cfg, "projection_penalty", 0.0))
        penalty = (AlphaProjection.from_env(env), weight) if weight > 0 else None
        return RegularisedDDPG(penalty=penalty, **common), actor
    return AlphaTD3(critic2=critic(), **td3, **common), actor


def explore_fn(actor: SimplexActor, sigma: float) -> Any:
    """Behaviour policy: Gaussian noise on the tanh logits, clipped to [-1, 1], then projected."""

    @torch.no_grad()
    def explore(obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        obs_BO = torch.as_tensor(obs[None], dtype=torch.float32)
        u = actor.logits(obs_BO).double()
        noise = torch.from_numpy(rng.normal(0.0, sigma, size=tuple(u.shape)))
        y, _ = actor.from_logits((u + noise).clamp(-1.0, 1.0), obs_BO, double=True)
        return y[0].numpy()

    return explore


def explore_batch_fn(actor: SimplexActor, sigma: float) -> Any:
    """:func:`explore_fn` on N observations at once (the same draws when N = 1)."""

    @torch.no_grad()
    def explore(obs_NO: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        obs_t = torch.as_tensor(obs_NO, dtype=torch.float32)
        u = actor.logits(obs_t).double()
        noise = torch.from_numpy(rng.normal(0.0, sigma, size=tuple(u.shape)))
        y, _ = actor.from_logits((u + noise).clamp(-1.0, 1.0), obs_t, double=True)
        return y.numpy()

    return explore


def feasible_warmup(env: gym.Env) -> Any:
    """Warm-up sampler: ``PolytopeSet.sample`` for the waiting category (always feasible)."""
    polys = env.unwrapped.polytopes

    def warmup(obs: np.ndarray, info: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
        return polys.sample(np.array([info["category"]]), rng)[0]

    return warmup


def train_ddpg_family(
    run: RunConfig,
    method: str,
    cfg: OffPolicyConfig,
    projection: ProjectionKind,
    invalid_action: str,
    warmup: Any = None,
    td3: dict[str, Any] | None = None,
) -> TorchAgent:
    """Shared trainer of the DDPG-family methods (see :func:`train_off_policy`)."""
    torch.manual_seed(run.seed)  # network initialisation
    env = run.make_env(invalid_action=invalid_action)
    eval_env = run.make_env()
    algorithm, actor = build(env, cfg, projection, td3)
    hooks = OffPolicyHooks(
        algorithm=algorithm,
        warmup_action=warmup if warmup is not None else feasible_warmup(env),
        explore_action=explore_fn(actor, cfg.exploration_sigma),
        explore_batch=explore_batch_fn(actor, cfg.exploration_sigma),
        vector_env=lambda n: run.make_vector_env(n, invalid_action=invalid_action),
        greedy_act=greedy_simplex_act(actor),
        config=cfg,
    )
    return train_off_policy(run, method, cfg, env, eval_env, hooks)


def load_ddpg_family(
    path: Path,
    env: gym.Env,
    method: str,
    cfg_cls: type,
    projection: ProjectionKind,
    td3: dict[str, Any] | None = None,
) -> TorchAgent:
    """Rebuild a DDPG-family agent from a checkpoint; projects onto ``env``'s polytopes."""
    state = load_checkpoint(path)
    if state["method"] != method:
        raise ValueError(f"{path} holds a {state['method']} run, not {method}")
    cfg = make_config(cfg_cls, state["config"])
    algorithm, actor = build(env, cfg, projection, td3)
    algorithm.load_state_dict(state["algorithm"])
    algorithm.eval()
    return TorchAgent(greedy_simplex_act(actor), method)


def train(run: RunConfig) -> TorchAgent:
    """Train α-DDPG on ``run`` (hparams: :class:`AlphaDDPGConfig` fields)."""
    cfg = make_config(AlphaDDPGConfig, run.hparams)
    return train_ddpg_family(run, "alpha-ddpg", cfg, "alpha", "raise")


def load(path: Path, env: gym.Env) -> TorchAgent:
    """The greedy α-DDPG policy of checkpoint ``path``, acting on ``env``."""
    return load_ddpg_family(path, env, "alpha-ddpg", AlphaDDPGConfig, "alpha")


METHOD = Method(
    name="alpha-ddpg",
    train=train,
    load=load,
    learned=True,
    description="α-projected DDPG (the paper's method): softmax actor projected toward the "
    "polytope centre, exploration in logit space",
)
