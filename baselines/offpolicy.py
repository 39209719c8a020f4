"""The off-policy training loop of the DDPG family and SAC, read top to bottom.

The learned methods are Tianshou 2.0.1 ``Algorithm`` objects: Tianshou's update rules, target
networks, optimisers and replay buffer (:class:`~baselines.replay.ArrayReplayBuffer`) are used
unchanged, and so are its policy hooks (``add_exploration_noise``, a random warm-up policy).
The loop around them is written here, CleanRL-style, because the constrained action space needs
what Tianshou's collector and trainer do not do: warm-up with *feasible* actions (the collector's
random phase samples the raw ``Box``), collection from the native vector environment
(``tsg_envs.vector``, not one of Tianshou's ``BaseVectorEnv``), checkpoints at day boundaries that
resume bit for bit, and little per-step overhead (``python -m benchmarks.training --loops``
times the loop against the bare ``algorithm.update``).

One training day is one episode reset with ``tsg_envs.seeds.training_day_seed(run seed, day)``;
with ``num_envs = N`` the loop steps N consecutive days at once. The first ``warmup_steps``
environment steps use the method's warm-up policy, later ones its behaviour policy; every stored
action is the executed one. After warm-up, ``updates_per_step`` gradient steps follow each
environment step (fractions accumulate) until the budget of gradient steps is spent, so a run
takes ``warmup_steps + gradient_steps / updates_per_step`` environment steps. Every
``eval_every`` gradient steps the greedy policy is validated (the learning curve, and the best
weights kept). Rewards (minus the wait in minutes) are multiplied by ``reward_scale`` before they
enter the buffer; reported waits are always in minutes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tianshou.utils.torch_utils import policy_within_training_step

from baselines.api import RunConfig
from baselines.checkpoint import (
    BEST_NAME,
    load_module_tensors,
    module_tensors,
    read_weights,
    save_checkpoint,
    save_weights,
    set_generator_state,
)
from baselines.config import as_dict
from baselines.nets import TorchAgent
from baselines.replay import ArrayReplayBuffer
from baselines.runs import CurveLog, day_seed, progress_bar, resume, run_identity, validate
from tsg_envs.wrappers import DEFAULT_BETA

__all__ = ["OffPolicyConfig", "OffPolicyParts", "Days", "train_off_policy"]


@dataclass(kw_only=True)
class OffPolicyConfig:
    """Hyper-parameters of the off-policy loop and its networks (DDPG family, SAC)."""

    hidden_sizes: tuple[int, ...] = (128, 128)
    """Hidden layer widths of the actor and critic MLPs."""
    actor_lr: float = 1e-4
    """Adam learning rate of the actor."""
    critic_lr: float = 1e-3
    """Adam learning rate of the critic(s)."""
    gamma: float = 0.95
    """Discount per passenger (one step is one arriving passenger; 0.95 looks about 20
    passengers ahead, the best of the README's gamma study)."""
    tau: float = 0.005
    """Polyak rate of the target networks."""
    n_step: int = 1
    """n-step return horizon."""
    batch_size: int = 128
    """Mini-batch size of each gradient step."""
    buffer_size: int = 200_000
    """Replay buffer capacity (transitions)."""
    warmup_steps: int = 2_000
    """Environment steps with the warm-up policy (feasible random actions) before learning."""
    updates_per_step: float = 0.5
    """Gradient steps per environment step after warm-up."""
    reward_scale: float = 0.1
    """Multiplies rewards (minus minutes of wait) before they are stored."""
    reward_centering: bool = False
    """Store r - r̄ instead of r, r̄ a running mean of the rewards (Naik et al., "Reward
    Centering", RLC 2024): with γ near 1 this approximates the average-reward objective, the
    paper's undiscounted mean wait per passenger, without the value scale growing as 1/(1-γ)."""
    centering_rate: float = 1e-3
    """Step size of the running mean r̄ (per environment step)."""
    wait_scale: float = 10.0
    """Minutes by which the queue features of the observation are divided."""
    beta: float = DEFAULT_BETA
    """Logit scale β of the softmax (as ``tsg_envs.wrappers.SoftmaxAlphaProjection``)."""
    checkpoint_every: int = 20_000
    """Save a checkpoint at the first day boundary after every this many environment steps."""
    save_buffer: bool = False
    """Also save the replay buffer in checkpoints (an exact resume; large files)."""
    eval_every: int = 2_000
    """Validate the greedy policy every this many gradient steps (the learning curve); 0: off."""
    eval_days: int = 2
    """Validation days per curve point."""
    threads: int = 1
    """``torch.set_num_threads`` during training."""
    keep_best: bool = True
    """Return (and save as ``best.safetensors``) the weights of the best validation (early
    stopping on the validation days, disjoint from training and test days); False: the last."""


@dataclass(kw_only=True)
class OffPolicyParts:
    """What a method hands :func:`train_off_policy`.

    Attributes:
        algorithm: The Tianshou off-policy algorithm (its ``update`` is called).
        warmup: ``obs (N, O) -> actions (N, T)``: the warm-up policy (feasible random).
        explore: ``obs (N, O) -> actions (N, T)``: the behaviour policy (exploration inside).
        greedy: ``obs (N, O) -> actions (N, T)``: the deterministic policy (validation, Agent).
        env: The training environment (one day at a time).
        eval_env: The environment validation days are played on.
        vector_env: ``n -> VectorEnv`` of the training environment, or None (one day at a time
            only).
        rng: The run's generator, used by ``warmup`` and ``explore`` (saved in checkpoints).
    """

    algorithm: Any
    warmup: Callable[[np.ndarray], np.ndarray]
    explore: Callable[[np.ndarray], np.ndarray]
    greedy: Callable[[np.ndarray], np.ndarray]
    env: gym.Env
    eval_env: gym.Env
    vector_env: Callable[[int], Any] | None
    rng: np.random.Generator


class Days:
    """N training days stepped together: the single environment (N = 1) or the vector one.

    ``reset(seeds) -> obs (N, O)``; ``step(actions (N, T)) -> (obs, rewards (N,) float64,
    terminated (N,), truncated (N,), waits (N,))``.
    """

    def __init__(self, env: gym.Env | None = None, venv: Any = None) -> None:
        self.env, self.venv = env, venv
        self.num_envs = 1 if venv is None else int(venv.num_envs)

    def reset(self, seeds: list[int]) -> np.ndarray:
        """Start the days of ``seeds``."""
        if self.venv is None:
            return self.env.reset(seed=seeds[0])[0][None]
        return self.venv.reset(seed=seeds)[0]

    def step(self, acts: np.ndarray) -> tuple[np.ndarray, ...]:
        """One passenger of every day."""
        if self.venv is None:
            obs, rew, term, trunc, info = self.env.step(acts[0])
            return (obs[None], np.array([rew], dtype=np.float64), np.array([term]),
                    np.array([trunc]), np.array([info["wait"]]))
        obs, rew, term, trunc, infos = self.venv.step(acts)
        return obs, np.asarray(rew, dtype=np.float64), term, trunc, infos["wait"]


def _actor_loss_of(stats: Any) -> float | None:
    loss = getattr(stats, "actor_loss", None)
    if loss is None:
        return None
    loss = getattr(loss, "mean", loss)  # Tianshou may wrap it in a sequence summary
    try:
        return float(loss() if callable(loss) else loss)
    except (TypeError, ValueError):
        return None


def train_off_policy(run: RunConfig, method: str, cfg: Any, parts: OffPolicyParts,
                     num_envs: int = 1, vector: bool = False) -> TorchAgent:
    """Train ``parts.algorithm`` for ``run.gradient_steps`` mini-batches; checkpoint; resume.

    Checkpoints (``ckpt_<step>/``: networks and optimisers, counters, generators, optionally
    the replay buffer; :mod:`baselines.checkpoint`) are written at the first day boundary after
    every ``cfg.checkpoint_every`` environment steps and at the end; a run whose ``run.out``
    holds one resumes from it. The learning curve goes to ``run.out/curve.csv``.

    Args:
        run: The run (budget, seed, output folder).
        method: Method name (checkpoints record it).
        cfg: The method's config (an :class:`OffPolicyConfig`).
        parts: The algorithm and its policies.
        num_envs: Days collected at once (>1 needs ``parts.vector_env``).
        vector: Collect through the vector environment even for one day.

    Returns:
        The greedy policy as an Agent (the best validation's weights under ``keep_best``).
    """
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(run.seed)
    algorithm, rng, out = parts.algorithm, parts.rng, Path(run.out)
    policy = algorithm.policy
    buffer = ArrayReplayBuffer(cfg.buffer_size)
    step, day, update_credit, wall_before, grad = 0, 0, 0.0, 0.0, 0
    mean_reward = 0.0  # r̄ of reward centering
    best_eval = float("inf")
    losses: list[float] = []
    ckpt = resume(out, method, run)
    if ckpt is not None:
        ckpt.restore(algorithm)
        s = ckpt.state
        step, day, grad = s["step"], s["day"], s["gradient_steps"]
        mean_reward, update_credit, wall_before = s["mean_reward"], s["update_credit"], s["wall_s"]
        best_eval, losses = s["best_eval"], list(s["losses"])
        set_generator_state(rng, s["rng"])
        torch.set_rng_state(ckpt.torch_rng())
        buffer = ckpt.buffer() or buffer
        if s.get("algorithm_state") is not None:
            algorithm.set_loop_state(s["algorithm_state"])
    curve = CurveLog(out / "curve.csv", method, run)
    agent = TorchAgent(parts.greedy, method)
    bar = progress_bar(run, grad)
    t0 = time.perf_counter() - wall_before
    next_eval = (grad // cfg.eval_every + 1) * cfg.eval_every if cfg.eval_every > 0 else None
    next_ckpt = (step // cfg.checkpoint_every + 1) * cfg.checkpoint_every
    config = as_dict(cfg)

    def checkpoint() -> None:
        counters = {"gradient_steps": grad, "step": step, "day": day, "mean_reward": mean_reward,
                    "update_credit": update_credit, "wall_s": time.perf_counter() - t0,
                    "best_eval": best_eval, "losses": losses, "algorithm_state": (
                        algorithm.loop_state() if hasattr(algorithm, "loop_state") else None)}
        save_checkpoint(out, step, method=method, run=run_identity(run), config=config,
                        algorithm=algorithm, counters=counters, rng=rng,
                        buffer=buffer if cfg.save_buffer else None)

    def evaluate() -> float:
        nonlocal best_eval
        ev, viol = validate(parts.eval_env, agent, cfg.eval_days)
        curve.write(gradient_steps=grad, step=step, wall_s=round(time.perf_counter() - t0, 2),
                    eval_mean_wait=ev, eval_days=cfg.eval_days, max_violation=viol,
                    actor_loss=float(np.mean(losses)) if losses else "")
        losses.clear()
        if ev < best_eval:
            best_eval = ev
            if cfg.keep_best:
                save_weights(out / BEST_NAME, module_tensors(algorithm), method=method,
                             config=config, extra={"gradient_steps": grad, "step": step,
                                                   "run": run_identity(run)})
        return ev

    policy.eval()
    if step == 0 and cfg.eval_every > 0:
        evaluate()
    if num_envs > 1 or vector:
        if parts.vector_env is None:
            raise ValueError(f"{method} has no vector loop: use num_envs=1 (the DDPG family "
                             "collects from the vector environment)")
        days = Days(venv=parts.vector_env(int(num_envs)))
    else:
        days = Days(env=parts.env)
    n = days.num_envs
    n_teams = int(parts.env.action_space.shape[0])

    while grad < run.gradient_steps:
        obs = days.reset([day_seed(run.seed, day + i) for i in range(n)])
        day += n
        day_waits: list[float] = []
        done = False
        while not done:
            # act: the first rows still in warm-up get the warm-up policy, the rest explore
            acts = np.empty((n, n_teams))
            n_warm = min(max(cfg.warmup_steps - step, 0), n)
            with torch.no_grad():
                if n_warm:
                    acts[:n_warm] = parts.warmup(obs[:n_warm])
                if n_warm < n:
                    acts[n_warm:] = parts.explore(obs[n_warm:])
            obs_next, rew, terminated, truncated, waits = days.step(acts)
            if terminated.any() != terminated.all():
                raise RuntimeError("the vector environment's days ended apart")
            done = bool(terminated.all() or truncated.any())
            # store: scaled (and centred) rewards; the update credit grows after warm-up
            stored = cfg.reward_scale * rew
            for i in range(n):
                if cfg.reward_centering:
                    mean_reward += cfg.centering_rate * (float(stored[i]) - mean_reward)
                    stored[i] -= mean_reward
                step += 1
                if step > cfg.warmup_steps:
                    update_credit += cfg.updates_per_step
            day_waits.extend(waits.tolist())
            buffer.add_rows(obs, acts, stored, terminated, truncated, obs_next)
            obs = obs_next
            # learn: the credit's whole gradient steps, on mini-batches of the buffer
            if update_credit >= 1.0 and len(buffer) >= cfg.batch_size:
                with policy_within_training_step(policy):
                    while update_credit >= 1.0 and grad < run.gradient_steps:
                        loss = _actor_loss_of(algorithm.update(buffer, cfg.batch_size))
                        if loss is not None:
                            losses.append(loss)
                        update_credit -= 1.0
                        grad += 1
                        if bar is not None:
                            bar.update(1)
            if next_eval is not None and grad >= next_eval:
                ev = evaluate()
                if bar is not None:
                    bar.set_postfix(eval_wait=f"{ev:.2f}")
                next_eval += cfg.eval_every
            if grad >= run.gradient_steps:
                break
        # the day boundary: its curve row and, when due, a checkpoint (bit-exact resume point)
        curve.write(gradient_steps=grad, step=step, wall_s=round(time.perf_counter() - t0, 2),
                    train_day_mean_wait=float(np.mean(day_waits)))
        if step >= next_ckpt or grad >= run.gradient_steps:
            checkpoint()
            next_ckpt = (step // cfg.checkpoint_every + 1) * cfg.checkpoint_every
    if bar is not None:
        bar.close()
    if cfg.keep_best and (out / BEST_NAME).exists():
        load_module_tensors(algorithm, read_weights(out / BEST_NAME)[0])
    policy.eval()
    return agent
