"""PPO through ``SoftmaxAlphaProjection``: stock Tianshou 2.0.1 ``PPO`` on the wrapped env.

The env is wrapped by :class:`tsg_envs.wrappers.SoftmaxAlphaProjection` (``Box(-1, 1, (T,))``
logits, softmax(β x) α-projected toward the waiting category's centre), so every action is
feasible. A Gaussian actor with a state-independent log-std, Tianshou's clip bounding
(``action_bound_method="clip"``, no scaling: the box is already [-1, 1]), GAE, clipped surrogate.
Rollouts of ``n_steps`` transitions, then ``repeat`` epochs of minibatches. The returned Agent
acts on the *unwrapped* env with the mean logits mapped through the same softmax and
α-projection. Checkpoints at day boundaries hold the partial rollout, so resuming is exact.
"""

from __future__ import annotations

import dataclasses
import pickle
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tianshou.algorithm import PPO
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Batch, ReplayBuffer
from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic
from tianshou.utils.torch_utils import policy_within_training_step
from torch.distributions import Independent, Normal

from baselines._torch_common import (
    BEST_NAME,
    CurveLog,
    ObsScale,
    ScaledMLP,
    TorchAgent,
    day_seed,
    end_day,
    evaluate_mean_wait,
    load_checkpoint,
    make_config,
    progress_bar,
    resume_state,
    rng_state,
    run_identity,
    save_best,
    set_rng_state,
)
from baselines.api import Method, RunConfig
from baselines.projection import AlphaProjection
from baselines.sac import logits_agent_fn
from tsg_envs.wrappers import DEFAULT_BETA, SoftmaxAlphaProjection

__all__ = ["PPOConfig", "METHOD", "train", "load", "build"]


@dataclass(kw_only=True)
class PPOConfig:
    """PPO hyper-parameters.

    Attributes:
        hidden_sizes: Hidden widths of actor and critic MLPs.
        lr: Adam learning rate (actor and critic together).
        gamma: Discount per passenger.
        gae_lambda: GAE λ.
        n_steps: Transitions per rollout (one update each).
        batch_size: Minibatch size.
        repeat: Epochs over each rollout.
        eps_clip: PPO's ratio clip.
        vf_coef: Value-loss weight.
        ent_coef: Entropy bonus weight.
        max_grad_norm: Gradient clipping norm.
        reward_scale: Multiplies rewards (minus minutes) before they are stored.
        wait_scale: Minutes by which queue features are divided (``ObsScale``).
        beta: Logit scale β of the wrapper.
        checkpoint_every: Checkpoint at the first day boundary after every this many steps.
        eval_every: Learning-curve evaluation period in gradient steps (0 disables).
        eval_days: Days per curve point.
        threads: ``torch.set_num_threads`` during training.
        keep_best: Return the weights with the lowest learning-curve evaluation (see
            ``OffPolicyConfig.keep_best``).
    """

    hidden_sizes: tuple[int, ...] = (128, 128)
    lr: float = 3e-4
    gamma: float = 0.95
    gae_lambda: float = 0.95
    n_steps: int = 2048
    batch_size: int = 256
    repeat: int = 10
    eps_clip: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    max_grad_norm: float = 0.5
    reward_scale: float = 0.1
    wait_scale: float = 10.0
    beta: float = DEFAULT_BETA
    checkpoint_every: int = 20_000
    eval_every: int = 2_000
    eval_days: int = 2
    threads: int = 1
    keep_best: bool = True


def _dist(loc_scale: tuple[torch.Tensor, torch.Tensor]) -> Independent:
    loc, scale = loc_scale
    return Independent(Normal(loc, scale), 1)


def build(env: gym.Env, cfg: PPOConfig) -> PPO:
    """Tianshou PPO for the wrapped env ``env``."""
    u = env.unwrapped
    obs_dim = int(env.observation_space.shape[0])
    n_teams = int(env.action_space.shape[0])

    def trunk() -> ScaledMLP:
        return ScaledMLP(ObsScale(u.obs_layout, obs_dim, cfg.wait_scale), obs_dim, cfg.hidden_sizes)

    actor = ContinuousActorProbabilistic(
        preprocess_net=trunk(), action_shape=(n_teams,), unbounded=True
    )
    policy = ProbabilisticActorPolicy(
        actor=actor,
        dist_fn=_dist,
        deterministic_eval=True,
        action_space=env.action_space,
        observation_space=env.observation_space,
        action_scaling=False,
        action_bound_method="clip",
    )
    return PPO(
        policy=policy,
        critic=ContinuousCritic(preprocess_net=trunk()),
        optim=AdamOptimizerFactory(lr=cfg.lr),
        eps_clip=cfg.eps_clip,
        vf_coef=cfg.vf_coef,
        ent_coef=cfg.ent_coef,
        max_grad_norm=cfg.max_grad_norm,
        gae_lambda=cfg.gae_lambda,
        gamma=cfg.gamma,
    )


def _greedy_logits(algorithm: PPO) -> Any:
    def logits(obs_BO: torch.Tensor) -> torch.Tensor:
        return algorithm.policy(Batch(obs=obs_BO, info={})).act

    return logits


def train(run: RunConfig) -> TorchAgent:
    """Train PPO on ``run`` wrapped in ``SoftmaxAlphaProjection`` (hparams: PPOConfig)."""
    cfg = make_config(PPOConfig, run.hparams)
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(run.seed)
    env = SoftmaxAlphaProjection(run.make_env(invalid_action="raise"), beta=cfg.beta)
    eval_env = run.make_env()
    algorithm = build(env, cfg)
    policy = algorithm.policy
    agent = TorchAgent(
        logits_agent_fn(_greedy_logits(algorithm), AlphaProjection.from_env(eval_env), cfg.beta),
        "ppo",
    )
    out = Path(run.out)
    buffer = ReplayBuffer(cfg.n_steps)
    step, day, wall_before, grad = 0, 0, 0.0, 0
    best_eval = float("inf")
    shuffle_state = np.random.RandomState(run.seed).get_state()  # Tianshou's mini-batch order
    # Gradient steps (mini-batches) of one update: ``repeat`` passes over n_steps transitions.
    per_update = cfg.repeat * -(-cfg.n_steps // cfg.batch_size)
    state = resume_state(out, "ppo", run)
    if state is not None:
        algorithm.load_state_dict(state["algorithm"])
        step, day, wall_before = state["step"], state["day"], state["wall_s"]
        grad = state["gradient_steps"]
        set_rng_state(np.random.default_rng(), state["rng"])  # restores torch's RNG
        shuffle_state = state.get("shuffle_rng", shuffle_state)
        buffer = pickle.loads(state["buffer"])
        best_eval = state.get("best_eval", best_eval)
    curve = CurveLog(out / "curve.csv", "ppo", run)
    bar = progress_bar(run, grad)
    t0 = time.perf_counter() - wall_before
    next_eval = (grad // cfg.eval_every + 1) * cfg.eval_every if cfg.eval_every > 0 else None
    next_ckpt = (step // cfg.checkpoint_every + 1) * cfg.checkpoint_every

    def payload() -> dict[str, Any]:
        return {
            "method": "ppo",
            "run": run_identity(run),
            "config": dataclasses.asdict(cfg),
            "algorithm": algorithm.state_dict(),
            "gradient_steps": grad,
            "step": step,
            "day": day,
            "wall_s": time.perf_counter() - t0,
            "rng": rng_state(np.random.default_rng()),
            "shuffle_rng": shuffle_state,
            "best_eval": best_eval,
            "buffer": pickle.dumps(buffer),
        }

    def evaluate() -> None:
        nonlocal best_eval
        ev, viol = evaluate_mean_wait(eval_env, agent, cfg.eval_days)
        curve.write(
            gradient_steps=grad,
            step=step,
            wall_s=round(time.perf_counter() - t0, 2),
            eval_mean_wait=ev,
            eval_days=cfg.eval_days,
            max_violation=viol,
        )
        if ev < best_eval:
            best_eval = ev
            save_best(out, payload())

    if step == 0 and cfg.eval_every > 0:
        evaluate()
    while grad < run.gradient_steps:
        obs, info = env.reset(seed=day_seed(run.seed, day))
        day += 1
        done = False
        day_waits = []
        while not done:
            with torch.no_grad(), policy_within_training_step(policy):
                raw = policy(Batch(obs=obs[None], info={})).act[0].numpy()
            obs_next, rew, terminated, truncated, info = env.step(policy.map_action(raw))
            done = terminated or truncated
            day_waits.append(info["wait"])
            buffer.add(
                Batch(
                    obs=obs,
                    act=raw,
                    rew=cfg.reward_scale * rew,
                    terminated=terminated,
                    truncated=truncated,
                    obs_next=obs_next,
                    info={},
                )
            )
            obs = obs_next
            step += 1
            if len(buffer) >= cfg.n_steps:
                with policy_within_training_step(policy):
                    # Tianshou shuffles the mini-batches with numpy's global generator: run
                    # it from this training's own saved state, and put the caller's back
                    outer = np.random.get_state()
                    np.random.set_state(shuffle_state)
                    try:
                        algorithm.update(buffer, batch_size=cfg.batch_size, repeat=cfg.repeat)
                    finally:
                        shuffle_state = np.random.get_state()
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
        next_ckpt = end_day(curve, out, grad=grad, step=step, wall_s=time.perf_counter() - t0,
                            day_waits=day_waits, next_ckpt=next_ckpt,
                            checkpoint_every=cfg.checkpoint_every,
                            final=grad >= run.gradient_steps, payload=payload)
    if bar is not None:
        bar.close()
    if cfg.keep_best and (out / BEST_NAME).exists():
        algorithm.load_state_dict(load_checkpoint(out / BEST_NAME)["algorithm"])
    algorithm.eval()
    return agent


def load(path: Path, env: gym.Env) -> TorchAgent:
    """The deterministic PPO policy of checkpoint ``path``, acting on the unwrapped ``env``."""
    state = load_checkpoint(path)
    if state["method"] != "ppo":
        raise ValueError(f"{path} holds a {state['method']} run, not ppo")
    cfg = make_config(PPOConfig, state["config"])
    algorithm = build(SoftmaxAlphaProjection(env, beta=cfg.beta), cfg)
    algorithm.load_state_dict(state["algorithm"])
    algorithm.eval()
    return TorchAgent(
        logits_agent_fn(_greedy_logits(algorithm), AlphaProjection.from_env(env), cfg.beta), "ppo"
    )


METHOD = Method(
    name="ppo",
    train=train,
    load=load,
    learned=True,
    description="Tianshou PPO on the SoftmaxAlphaProjection-wrapped env (logit actions)",
)
