"""SAC through ``SoftmaxAlphaProjection``: stock Tianshou 2.0.1 ``SAC`` on the wrapped env.

The env is wrapped by :class:`tsg_envs.wrappers.SoftmaxAlphaProjection` (its action space is
``Box(-1, 1, (T,))`` logits; softmax(β x) is α-projected toward the waiting category's centre),
so every action SAC can emit is feasible and the algorithm runs unchanged: a tanh-squashed
Gaussian actor, twin critics on (obs, logits), automatic entropy tuning. Warm-up draws uniform
logits (every point of the logit box is feasible after the wrapper). The returned Agent acts on
the *unwrapped* env: it maps its deterministic logits through the same softmax and
α-projection (torch, category from the observation).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tianshou.algorithm import SAC
from tianshou.algorithm.modelfree.sac import AutoAlpha, SACPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Batch
from tianshou.utils.net.continuous import ContinuousActorProbabilistic
from tianshou.utils.torch_utils import policy_within_training_step

from baselines._torch_common import (
    Critic,
    ObsScale,
    OffPolicyConfig,
    OffPolicyHooks,
    ScaledMLP,
    TorchAgent,
    load_checkpoint,
    make_config,
    train_off_policy,
)
from baselines.api import Method, RunConfig
from baselines.projection import AlphaProjection
from tsg_envs.wrappers import SoftmaxAlphaProjection

__all__ = ["SACConfig", "METHOD", "train", "load", "build"]


@dataclass(kw_only=True)
class SACConfig(OffPolicyConfig):
    """SAC hyper-parameters (``OffPolicyConfig``; ``exploration_sigma`` is unused).

    Attributes:
        actor_lr: Adam learning rate of the actor.
        alpha_lr: Adam learning rate of the entropy coefficient.
        init_log_alpha: Initial log entropy coefficient.
        target_entropy_per_dim: Target entropy is this times T (−1 is SAC's usual −dim(A)).
    """

    actor_lr: float = 3e-4
    alpha_lr: float = 3e-4
    init_log_alpha: float = -2.0
    target_entropy_per_dim: float = -1.0


def build(env: gym.Env, cfg: SACConfig) -> tuple[SAC, ContinuousActorProbabilistic]:
    """Tianshou SAC for the wrapped env ``env`` (``SoftmaxAlphaProjection`` around the base)."""
    u = env.unwrapped
    obs_dim = int(env.observation_space.shape[0])
    n_teams = int(env.action_space.shape[0])
    actor = ContinuousActorProbabilistic(
        preprocess_net=ScaledMLP(
            ObsScale(u.obs_layout, obs_dim, cfg.wait_scale), obs_dim, cfg.hidden_sizes
        ),
        action_shape=(n_teams,),
        unbounded=True,
        conditioned_sigma=True,
    )
    policy = SACPolicy(
        actor=actor,
        action_space=env.action_space,
        observation_space=env.observation_space,
        action_scaling=False,
    )

    def critic() -> Critic:
        return Critic(u.obs_layout, obs_dim, n_teams, cfg.hidden_sizes, cfg.wait_scale)

    alpha = AutoAlpha(
        target_entropy=cfg.target_entropy_per_dim * n_teams,
        log_alpha=cfg.init_log_alpha,
        optim=AdamOptimizerFactory(lr=cfg.alpha_lr),
    )
    algorithm = SAC(
        policy=policy,
        policy_optim=AdamOptimizerFactory(lr=cfg.actor_lr),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(lr=cfg.critic_lr),
        critic2=critic(),
        critic2_optim=AdamOptimizerFactory(lr=cfg.critic_lr),
        tau=cfg.tau,
        gamma=cfg.gamma,
        alpha=alpha,
        n_step_return_horizon=cfg.n_step,
    )
    return algorithm, actor


def logits_agent_fn(logits_fn: Any, projection: AlphaProjection, beta: float) -> Any:
    """``obs (B, O) -> allocations (B, T)`` on the unwrapped env: softmax(β logits), α-projected."""

    @torch.no_grad()
    def act(obs: np.ndarray) -> np.ndarray:
        obs_BO = torch.as_tensor(obs, dtype=torch.float32)
        x = logits_fn(obs_BO).double().clamp(-1.0, 1.0)
        s = torch.softmax(beta * x, dim=-1)
        return projection(s, obs_BO).numpy()

    return act


def _greedy_logits(algorithm: SAC) -> Any:
    def logits(obs_BO: torch.Tensor) -> torch.Tensor:
        return algorithm.policy(Batch(obs=obs_BO, info={})).act

    return logits


def train(run: RunConfig) -> TorchAgent:
    """Train SAC on ``run`` wrapped in ``SoftmaxAlphaProjection`` (hparams: SACConfig)."""
    cfg = make_config(SACConfig, run.hparams)
    torch.manual_seed(run.seed)
    base = run.make_env(invalid_action="raise")
    env = SoftmaxAlphaProjection(base, beta=cfg.beta)
    eval_env = run.make_env()
    algorithm, _ = build(env, cfg)
    policy = algorithm.policy
    n_teams = env.action_space.shape[0]

    def warmup(obs: np.ndarray, info: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
        return rng.uniform(-1.0, 1.0, size=n_teams)

    def explore(obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        with policy_within_training_step(policy):
            return policy(Batch(obs=obs[None], info={})).act[0].numpy().astype(np.float64)

    hooks = OffPolicyHooks(
        algorithm=algorithm,
        warmup_action=warmup,
        explore_action=explore,
        greedy_act=logits_agent_fn(
            _greedy_logits(algorithm), AlphaProjection.from_env(eval_env), cfg.beta
        ),
        config=cfg,
    )
    return train_off_policy(run, "sac", cfg, env, eval_env, hooks)


def load(path: Path, env: gym.Env) -> TorchAgent:
    """The deterministic SAC policy of checkpoint ``path``, acting on the unwrapped ``env``."""
    state = load_checkpoint(path)
    if state["method"] != "sac":
        raise ValueError(f"{path} holds a {state['method']} run, not sac")
    cfg = make_config(SACConfig, state["config"])
    algorithm, _ = build(SoftmaxAlphaProjection(env, beta=cfg.beta), cfg)
    algorithm.load_state_dict(state["algorithm"])
    algorithm.eval()
    return TorchAgent(
        logits_agent_fn(_greedy_logits(algorithm), AlphaProjection.from_env(env), cfg.beta), "sac"
    )


METHOD = Method(
    name="sac",
    train=train,
    load=load,
    learned=True,
    description="Tianshou SAC on the SoftmaxAlphaProjection-wrapped env (logit actions)",
)
