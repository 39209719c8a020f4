"""PPO through ``SoftmaxAlphaProjection``: stock Tianshou 2.0.1 ``PPO`` on the wrapped env.

The env is wrapped by :class:`tsg_envs.wrappers.SoftmaxAlphaProjection` (``Box(-1, 1, (T,))``
logits, softmax(β x) α-projected toward the waiting category's centre), so every action is
feasible. A Gaussian actor with a state-independent log-std, Tianshou's clip bounding
(``action_bound_method="clip"``, no scaling: the box is already [-1, 1]), GAE (computed in
numpy, :func:`baselines.replay.episodic_return`), clipped surrogate. Rollouts of ``n_steps``
transitions, then ``repeat`` epochs of mini-batches; Tianshou shuffles them with numpy's global
generator, which the loop runs from the training's own saved state (and gives back). The
returned Agent acts on the *unwrapped* env with the mean logits mapped through the same softmax
and α-projection. Checkpoints at day boundaries hold the partial rollout, so resuming is exact.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tianshou.algorithm import PPO
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.data import Batch
from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic
from tianshou.utils.torch_utils import policy_within_training_step
from torch.distributions import Independent, Normal

from baselines.api import Method, RunConfig
from baselines.checkpoint import (
    BEST_NAME,
    find_weights,
    load_module_tensors,
    module_tensors,
    read_weights,
    save_checkpoint,
    save_weights,
)
from baselines.config import as_dict, config_from
from baselines.nets import ObsScale, QuickTrainMode, ScaledMLP, TorchAgent
from baselines.optim import adam
from baselines.projection import AlphaProjection
from baselines.replay import ArrayReplayBuffer, NoNumbaCompile, episodic_return
from baselines.runs import CurveLog, day_seed, progress_bar, resume, run_identity, validate
from baselines.sac import logits_agent_fn
from tsg_envs.wrappers import DEFAULT_BETA, SoftmaxAlphaProjection

__all__ = ["PPOConfig", "METHOD", "train", "load", "build"]


@dataclass(kw_only=True)
class PPOConfig:
    """PPO hyper-parameters."""

    hidden_sizes: tuple[int, ...] = (128, 128)
    """Hidden widths of the actor and critic MLPs."""
    lr: float = 3e-4
    """Adam learning rate (actor and critic together)."""
    gamma: float = 0.95
    """Discount per passenger."""
    gae_lambda: float = 0.95
    """GAE λ."""
    n_steps: int = 2048
    """Transitions per rollout (one update each)."""
    batch_size: int = 256
    """Mini-batch size."""
    repeat: int = 10
    """Epochs over each rollout."""
    eps_clip: float = 0.2
    """PPO's ratio clip."""
    vf_coef: float = 0.5
    """Value-loss weight."""
    ent_coef: float = 0.0
    """Entropy bonus weight."""
    max_grad_norm: float = 0.5
    """Gradient clipping norm."""
    reward_scale: float = 0.1
    """Multiplies rewards (minus minutes) before they are stored."""
    wait_scale: float = 10.0
    """Minutes by which queue features are divided (``ObsScale``)."""
    beta: float = DEFAULT_BETA
    """Logit scale β of the wrapper."""
    checkpoint_every: int = 20_000
    """Checkpoint at the first day boundary after every this many environment steps."""
    eval_every: int = 2_000
    """Learning-curve validation period in gradient steps (0 disables)."""
    eval_days: int = 2
    """Validation days per curve point."""
    threads: int = 1
    """``torch.set_num_threads`` during training."""
    keep_best: bool = True
    """Return the weights of the best validation (see ``OffPolicyConfig.keep_best``)."""


def _dist(loc_scale: tuple[torch.Tensor, torch.Tensor]) -> Independent:
    loc, scale = loc_scale
    return Independent(Normal(loc, scale), 1)


class _Policy(NoNumbaCompile, ProbabilisticActorPolicy):
    """Tianshou's ``ProbabilisticActorPolicy`` without its numba compilation."""


class _PPO(QuickTrainMode, PPO):
    """Tianshou's ``PPO`` with GAE computed in numpy (the same values)."""

    compute_episodic_return = staticmethod(episodic_return)  # type: ignore[assignment]


def build(env: gym.Env, cfg: PPOConfig) -> PPO:
    """Tianshou PPO for the wrapped env ``env``."""
    u = env.unwrapped
    obs_dim = int(env.observation_space.shape[0])
    n_teams = int(env.action_space.shape[0])

    def trunk() -> ScaledMLP:
        return ScaledMLP(ObsScale(u.obs_layout, obs_dim, cfg.wait_scale), obs_dim, cfg.hidden_sizes)

    actor = ContinuousActorProbabilistic(preprocess_net=trunk(), action_shape=(n_teams,),
                                         unbounded=True)
    policy = _Policy(actor=actor, dist_fn=_dist, deterministic_eval=True,
                     action_space=env.action_space, observation_space=env.observation_space,
                     action_scaling=False, action_bound_method="clip")
    return _PPO(policy=policy, critic=ContinuousCritic(preprocess_net=trunk()),
                optim=adam(lr=cfg.lr), eps_clip=cfg.eps_clip,
                vf_coef=cfg.vf_coef, ent_coef=cfg.ent_coef, max_grad_norm=cfg.max_grad_norm,
                gae_lambda=cfg.gae_lambda, gamma=cfg.gamma)


def _greedy_logits(algorithm: PPO) -> Any:
    def logits(obs_BO: torch.Tensor) -> torch.Tensor:
        return algorithm.policy(Batch(obs=obs_BO, info={})).act

    return logits


def make_config(hparams: Any = None) -> PPOConfig:
    """PPO's config from ``hparams`` (text parsed by field type)."""
    return config_from(PPOConfig, hparams, what="ppo")


def train(run: RunConfig) -> TorchAgent:
    """Train PPO on ``run`` wrapped in ``SoftmaxAlphaProjection`` (hparams: PPOConfig)."""
    cfg = make_config(run.hparams)
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(run.seed)
    env = SoftmaxAlphaProjection(run.make_env(invalid_action="raise"), beta=cfg.beta)
    eval_env = run.make_env()
    algorithm = build(env, cfg)
    policy = algorithm.policy
    agent = TorchAgent(
        logits_agent_fn(_greedy_logits(algorithm), AlphaProjection.from_env(eval_env), cfg.beta),
        "ppo")
    out = Path(run.out)
    buffer = ArrayReplayBuffer(cfg.n_steps)
    step, day, wall_before, grad = 0, 0, 0.0, 0
    best_eval = float("inf")
    shuffle = np.random.RandomState(run.seed)  # Tianshou's mini-batch order (numpy's global)
    # Gradient steps (mini-batches) of one update: ``repeat`` passes over n_steps transitions.
    per_update = cfg.repeat * -(-cfg.n_steps // cfg.batch_size)
    ckpt = resume(out, "ppo", run)
    if ckpt is not None:
        ckpt.restore(algorithm)
        s = ckpt.state
        step, day, wall_before, grad, best_eval = (s["step"], s["day"], s["wall_s"],
                                                   s["gradient_steps"], s["best_eval"])
        torch.set_rng_state(ckpt.torch_rng())
        shuffle.set_state(ckpt.random_state("shuffle"))
        buffer = ckpt.buffer() or buffer
    curve = CurveLog(out / "curve.csv", "ppo", run)
    bar = progress_bar(run, grad)
    t0 = time.perf_counter() - wall_before
    next_eval = (grad // cfg.eval_every + 1) * cfg.eval_every if cfg.eval_every > 0 else None
    next_ckpt = (step // cfg.checkpoint_every + 1) * cfg.checkpoint_every
    config = as_dict(cfg)

    def checkpoint() -> None:
        counters = {"gradient_steps": grad, "step": step, "day": day,
                    "wall_s": time.perf_counter() - t0, "best_eval": best_eval}
        save_checkpoint(out, step, method="ppo", run=run_identity(run), config=config,
                        algorithm=algorithm, counters=counters, rng=None, buffer=buffer,
                        random_states={"shuffle": shuffle})

    def evaluate() -> None:
        nonlocal best_eval
        ev, viol = validate(eval_env, agent, cfg.eval_days)
        curve.write(gradient_steps=grad, step=step, wall_s=round(time.perf_counter() - t0, 2),
                    eval_mean_wait=ev, eval_days=cfg.eval_days, max_violation=viol)
        if ev < best_eval:
            best_eval = ev
            if cfg.keep_best:
                save_weights(out / BEST_NAME, module_tensors(algorithm), method="ppo",
                             config=config, extra={"gradient_steps": grad, "step": step,
                                                   "run": run_identity(run)})

    if step == 0 and cfg.eval_every > 0:
        evaluate()
    while grad < run.gradient_steps:
        obs, _ = env.reset(seed=day_seed(run.seed, day))
        day += 1
        done = False
        day_waits = []
        while not done:
            with torch.no_grad(), policy_within_training_step(policy):
                raw = policy(Batch(obs=obs[None], info={})).act[0].numpy()
            obs_next, rew, terminated, truncated, info = env.step(policy.map_action(raw))
            done = terminated or truncated
            day_waits.append(info["wait"])
            buffer.add_rows(obs[None], raw[None], np.array([cfg.reward_scale * rew]),
                            np.array([terminated]), np.array([truncated]), obs_next[None])
            obs = obs_next
            step += 1
            if len(buffer) >= cfg.n_steps:
                with policy_within_training_step(policy):
                    # Tianshou shuffles the mini-batches with numpy's global generator: run it
                    # from this training's own state, and put the caller's back
                    outer = np.random.get_state()
                    np.random.set_state(shuffle.get_state())
                    try:
                        algorithm.update(buffer, batch_size=cfg.batch_size, repeat=cfg.repeat)
                    finally:
                        shuffle.set_state(np.random.get_state())
                        np.random.set_state(outer)
                buffer.reset()
                grad += per_update
                if bar is not None:
                    bar.update(per_update)
            if next_eval is not None and grad >= next_eval:
                evaluate()
                next_eval += cfg.eval_every
            if grad >= run.gradient_steps:
                break
        curve.write(gradient_steps=grad, step=step, wall_s=round(time.perf_counter() - t0, 2),
                    train_day_mean_wait=float(np.mean(day_waits)))
        if step >= next_ckpt or grad >= run.gradient_steps:
            checkpoint()
            next_ckpt = (step // cfg.checkpoint_every + 1) * cfg.checkpoint_every
    if bar is not None:
        bar.close()
    if cfg.keep_best and (out / BEST_NAME).exists():
        load_module_tensors(algorithm, read_weights(out / BEST_NAME)[0])
    algorithm.eval()
    return agent


def load(path: Path, env: gym.Env) -> TorchAgent:
    """The deterministic PPO policy of checkpoint ``path``, acting on the unwrapped ``env``."""
    file = find_weights(path)
    tensors, meta = read_weights(file)
    if meta.get("method") != "ppo":
        raise ValueError(f"{file} holds a {meta.get('method')} run, not ppo")
    cfg = config_from(PPOConfig, meta["config"], what="ppo")
    algorithm = build(SoftmaxAlphaProjection(env, beta=cfg.beta), cfg)
    load_module_tensors(algorithm, tensors)
    algorithm.eval()
    return TorchAgent(
        logits_agent_fn(_greedy_logits(algorithm), AlphaProjection.from_env(env), cfg.beta), "ppo")


METHOD = Method(
    name="ppo", train=train, load=load, learned=True, config=PPOConfig, make_config=make_config,
    description="Tianshou PPO on the SoftmaxAlphaProjection-wrapped env (logit actions)",
)
