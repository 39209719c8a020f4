"""SAC through ``SoftmaxAlphaProjection``: stock Tianshou 2.0.1 ``SAC`` on the wrapped env.

The env is wrapped by :class:`tsg_envs.wrappers.SoftmaxAlphaProjection` (its action space is
``Box(-1, 1, (T,))`` logits; softmax(β x) is α-projected toward the waiting category's centre),
so every action SAC can emit is feasible and the algorithm runs unchanged: a tanh-squashed
Gaussian actor, twin critics on (obs, logits), automatic entropy tuning. The warm-up policy
draws uniform logits (every point of the logit box is feasible after the wrapper); the
behaviour policy samples the actor (Tianshou's stochastic forward within a training step). The
returned Agent acts on the *unwrapped* env: it maps its deterministic logits through the same
softmax and α-projection (torch, category from the observation). The loop is
:func:`baselines.offpolicy.train_off_policy` (one day at a time).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tianshou.algorithm import SAC
from tianshou.algorithm.modelfree.sac import AutoAlpha, SACPolicy
from tianshou.data import Batch
from tianshou.utils.net.continuous import SIGMA_MAX, SIGMA_MIN, ContinuousActorProbabilistic
from tianshou.utils.torch_utils import policy_within_training_step

from baselines.api import Method, RunConfig
from baselines.checkpoint import find_weights, load_module_tensors, read_weights
from baselines.config import config_from
from baselines.nets import Critic, ObsScale, QuickTrainMode, ScaledMLP, TorchAgent, numpy_mlp
from baselines.offpolicy import OffPolicyConfig, OffPolicyParts, train_off_policy
from baselines.optim import adam
from baselines.projection import AlphaProjection
from baselines.replay import NoNumbaCompile, nstep_targets
from tsg_envs.wrappers import SoftmaxAlphaProjection

__all__ = ["SACConfig", "METHOD", "train", "load", "build", "logits_agent_fn",
           "numpy_explorer"]


@dataclass(kw_only=True)
class SACConfig(OffPolicyConfig):
    """SAC hyper-parameters: the loop's (:class:`~baselines.offpolicy.OffPolicyConfig`), these."""

    actor_lr: float = 3e-4
    """Adam learning rate of the actor."""
    alpha_lr: float = 3e-4
    """Adam learning rate of the entropy coefficient."""
    init_log_alpha: float = -2.0
    """Initial log entropy coefficient."""
    target_entropy_per_dim: float = -1.0
    """Target entropy is this times T (−1 is SAC's usual −dim(A))."""
    numpy_acting: bool = True
    """Explore in numpy (the actor's float32 products by numpy, the Gaussian draws from torch's
    generator as Tianshou's ``rsample`` draws them): equal to the torch step to float32
    rounding; False explores through Tianshou's policy, as runs before this option did."""


class _SACPolicy(NoNumbaCompile, SACPolicy):
    """Tianshou's ``SACPolicy`` without its numba compilation (returns are computed in numpy)."""


class _SAC(QuickTrainMode, SAC):
    """Tianshou's ``SAC`` with its n-step targets computed in numpy (the same values)."""

    def extra_optimizers(self) -> list[torch.optim.Optimizer]:
        """The entropy coefficient's optimiser (``state_dict`` leaves it out; checkpoints not)."""
        optim = getattr(self.alpha, "_optim", None)
        return [optim] if optim is not None else []

    def _preprocess_batch(self, batch: Any, buffer: Any, indices: np.ndarray) -> Any:
        batch.returns = nstep_targets(buffer, indices, self._target_q, self.gamma,
                                      self.n_step_return_horizon)
        return batch

    def _target_q(self, buffer: Any, indices: np.ndarray) -> torch.Tensor:
        obs_next = Batch(obs=buffer.obs_next[indices], info=[None] * len(indices))
        return self._target_q_compute_value(obs_next, self._target_q_compute_action(obs_next))


def build(env: gym.Env, cfg: SACConfig) -> tuple[SAC, ContinuousActorProbabilistic]:
    """Tianshou SAC for the wrapped env ``env`` (``SoftmaxAlphaProjection`` around the base)."""
    u = env.unwrapped
    obs_dim = int(env.observation_space.shape[0])
    n_teams = int(env.action_space.shape[0])
    actor = ContinuousActorProbabilistic(
        preprocess_net=ScaledMLP(ObsScale(u.obs_layout, obs_dim, cfg.wait_scale), obs_dim,
                                 cfg.hidden_sizes),
        action_shape=(n_teams,), unbounded=True, conditioned_sigma=True)
    policy = _SACPolicy(actor=actor, action_space=env.action_space,
                        observation_space=env.observation_space, action_scaling=False)

    def critic() -> Critic:
        return Critic(u.obs_layout, obs_dim, n_teams, cfg.hidden_sizes, cfg.wait_scale)

    alpha = AutoAlpha(target_entropy=cfg.target_entropy_per_dim * n_teams,
                      log_alpha=cfg.init_log_alpha, optim=adam(lr=cfg.alpha_lr))
    algorithm = _SAC(policy=policy, policy_optim=adam(lr=cfg.actor_lr),
                     critic=critic(), critic_optim=adam(lr=cfg.critic_lr),
                     critic2=critic(), critic2_optim=adam(lr=cfg.critic_lr),
                     tau=cfg.tau, gamma=cfg.gamma, alpha=alpha,
                     n_step_return_horizon=cfg.n_step)
    return algorithm, actor


def logits_agent_fn(logits_fn: Callable[[torch.Tensor], torch.Tensor],
                    projection: AlphaProjection, beta: float
                    ) -> Callable[[np.ndarray], np.ndarray]:
    """``obs (B, O) -> allocations (B, T)`` on the unwrapped env: softmax(β logits), α-projected."""

    @torch.no_grad()
    def act(obs: np.ndarray) -> np.ndarray:
        obs_BO = torch.as_tensor(obs, dtype=torch.float32)
        x = logits_fn(obs_BO).double().clamp(-1.0, 1.0)
        s = torch.softmax(beta * x, dim=-1)
        return projection(s, obs_BO).numpy()

    return act


def numpy_explorer(actor: ContinuousActorProbabilistic) -> Callable[[np.ndarray], np.ndarray]:
    """``obs (N, O) -> logits (N, T)``: SAC's stochastic exploration step in numpy.

    What Tianshou's ``SACPolicy`` does in a training step (the squashed Gaussian tanh(μ + σ ε),
    σ = exp(clip(·, SIGMA_MIN, SIGMA_MAX))), on numpy views of the actor's parameters; ε comes
    from torch's generator exactly as ``rsample`` draws it, so the random stream (and a
    checkpoint's generator state) is the torch step's.
    """
    features = numpy_mlp(actor.preprocess.net, actor.preprocess.scale)
    mu, sigma = numpy_mlp(actor.mu.model), numpy_mlp(actor.sigma.model)

    def explore(obs_NO: np.ndarray) -> np.ndarray:
        h = features(obs_NO)
        loc = mu(h)
        scale = np.exp(np.clip(sigma(h), SIGMA_MIN, SIGMA_MAX))
        # as torch.distributions' rsample draws ε (``_standard_normal``): the same stream
        eps = torch.empty(loc.shape, dtype=torch.float32).normal_().numpy()
        return np.tanh(loc + eps * scale).astype(np.float64)

    return explore


def _greedy_logits(algorithm: SAC) -> Callable[[torch.Tensor], torch.Tensor]:
    def logits(obs_BO: torch.Tensor) -> torch.Tensor:
        return algorithm.policy(Batch(obs=obs_BO, info={})).act

    return logits


def make_config(hparams: Any = None) -> SACConfig:
    """SAC's config from ``hparams`` (text parsed by field type)."""
    return config_from(SACConfig, hparams, what="sac")


def train(run: RunConfig) -> TorchAgent:
    """Train SAC on ``run`` wrapped in ``SoftmaxAlphaProjection`` (hparams: SACConfig)."""
    cfg = make_config(run.hparams)
    torch.manual_seed(run.seed)
    env = SoftmaxAlphaProjection(run.make_env(invalid_action="raise"), beta=cfg.beta)
    eval_env = run.make_env()
    algorithm, _ = build(env, cfg)
    policy = algorithm.policy
    rng = np.random.default_rng(run.seed)
    n_teams = env.action_space.shape[0]

    def warmup(obs_NO: np.ndarray) -> np.ndarray:  # uniform logits: feasible after the wrapper
        return np.stack([rng.uniform(-1.0, 1.0, size=n_teams) for _ in range(len(obs_NO))])

    in_numpy = numpy_explorer(policy.actor) if cfg.numpy_acting else None

    def explore(obs_NO: np.ndarray) -> np.ndarray:  # the actor's stochastic forward
        if in_numpy is not None:
            return in_numpy(obs_NO)
        with policy_within_training_step(policy):
            return policy(Batch(obs=obs_NO, info={})).act.numpy().astype(np.float64)

    parts = OffPolicyParts(
        algorithm=algorithm, rng=rng, env=env, eval_env=eval_env, warmup=warmup,
        explore=explore, vector_env=None,
        greedy=logits_agent_fn(_greedy_logits(algorithm), AlphaProjection.from_env(eval_env),
                               cfg.beta))
    return train_off_policy(run, "sac", cfg, parts)


def load(path: Path, env: gym.Env) -> TorchAgent:
    """The deterministic SAC policy of checkpoint ``path``, acting on the unwrapped ``env``."""
    file = find_weights(path)
    tensors, meta = read_weights(file)
    if meta.get("method") != "sac":
        raise ValueError(f"{file} holds a {meta.get('method')} run, not sac")
    cfg = config_from(SACConfig, meta["config"], what="sac")
    algorithm, _ = build(SoftmaxAlphaProjection(env, beta=cfg.beta), cfg)
    load_module_tensors(algorithm, tensors)
    algorithm.eval()
    return TorchAgent(
        logits_agent_fn(_greedy_logits(algorithm), AlphaProjection.from_env(env), cfg.beta), "sac")


METHOD = Method(
    name="sac", train=train, load=load, learned=True, config=SACConfig, make_config=make_config,
    description="Tianshou SAC on the SoftmaxAlphaProjection-wrapped env (logit actions)",
)
