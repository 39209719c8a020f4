"""Behaviour cloning through the α-projection: method ``bc``, an offline agent.

The policy is an MLP on the scaled observation (:class:`~baselines.nets.ObsScale`) whose T
outputs go through a softmax onto the simplex and then through the α-projection toward the
waiting category's centre (:class:`~baselines.projection.AlphaProjection`, the same layer as
α-DDPG's actor), so every action it plays is inside its polytope *by construction*, whatever the
weights. Training fits the projected allocation to the expert's executed allocation, mean
squared error summed over the teams, by Adam on mini-batches of the expert's steps; the
gradient flows through the projection (α is a differentiable minimum of row ratios).

It learns from data only, never from the environment's rewards:

* ``dataset=ID``: a Minari dataset written by ``python -m leaderboard dataset`` (read with
  ``minari.load_dataset``; extra ``tsg-envs[minari]``). Its environment id and instance must be
  the run's (the projection uses the run's polytopes); every seed of a run reads the same days.
* else (the default, e.g. under ``python -m leaderboard evaluate --agent bc``, where a sealed
  submission reads no outside files): ``expert_days`` days of ``expert`` collected in memory
  on the run seed's training days (:func:`baselines.experts.collect`, the same days a dataset
  would hold).

The budget is ``run.gradient_steps`` mini-batches; seeds set the initial weights and the
mini-batch order. The returned weights are the last ones (``best.safetensors``: the networks'
tensors; metadata: config, run identity, budget, where the data came from). Training is a few
seconds per thousand gradient steps on a CPU core.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from baselines.api import Method, RunConfig
from baselines.checkpoint import (
    BEST_NAME,
    find_weights,
    load_module_tensors,
    module_tensors,
    read_weights,
    save_weights,
)
from baselines.config import as_dict, config_from
from baselines.experts import ExpertDay, collect, read_days
from baselines.nets import ObsScale, TorchAgent, forward_mlp, mlp
from baselines.optim import Adam
from baselines.projection import AlphaProjection
from baselines.runs import CurveLog, day_seed, progress_bar, run_identity

__all__ = ["BCConfig", "BCPolicy", "make_config", "expert_arrays", "fit", "train", "load",
           "METHOD"]


@dataclass(kw_only=True)
class BCConfig:
    """Behaviour cloning's hyper-parameters and data."""

    dataset: str = ""
    """Minari dataset id to learn from (``python -m leaderboard dataset`` writes one); empty:
    collect ``expert_days`` days of ``expert`` in memory on the run seed's training days."""
    expert: str = "slack-guided"
    """Expert collected in memory when ``dataset`` is empty (``lp``, ``slack-guided``,
    ``clairvoyant``, ...; a learned one cannot be: it needs a checkpoint)."""
    expert_days: int = 10
    """Days collected in memory when ``dataset`` is empty."""
    hidden_sizes: tuple[int, ...] = (128, 128)
    """Hidden widths of the MLP."""
    lr: float = 3e-3
    """Adam learning rate."""
    batch_size: int = 256
    """Expert steps per mini-batch."""
    wait_scale: float = 10.0
    """Minutes by which the queue features of the observation are divided."""
    log_every: int = 500
    """Write the mean training loss to ``curve.csv`` every this many gradient steps (0: off)."""
    threads: int = 1
    """``torch.set_num_threads`` during training."""


def make_config(hparams: Any = None) -> BCConfig:
    """BC's config from ``hparams`` (text parsed by field type)."""
    cfg = config_from(BCConfig, hparams, what="bc")
    if cfg.expert_days < 1 or cfg.batch_size < 1 or not cfg.hidden_sizes or cfg.lr <= 0:
        raise ValueError("bc needs expert_days >= 1, batch_size >= 1, hidden_sizes and lr > 0")
    return cfg


class BCPolicy(nn.Module):
    """``obs (B, O) -> allocations (B, T)``: MLP logits, softmax, α-projection.

    Args:
        env: The environment whose polytopes and observation layout the policy uses.
        cfg: Its config (widths, observation scale).
    """

    def __init__(self, env: gym.Env, cfg: BCConfig) -> None:
        super().__init__()
        u: Any = env.unwrapped
        obs_dim = int(np.prod(env.observation_space.shape or (0,)))
        self.scale = ObsScale(u.obs_layout, obs_dim, cfg.wait_scale)
        self.net = mlp(obs_dim, cfg.hidden_sizes, int(u.game.n_teams))
        self.projection = AlphaProjection.from_env(env)  # buffers not saved: the env's own

    def forward(self, obs_BO: torch.Tensor | np.ndarray,
                cat_B: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T) float64 allocations, each inside its category's polytope.

        The category is ``cat_B`` where given, else the observation's one-hot.
        """
        obs = torch.as_tensor(obs_BO, dtype=torch.float32)
        s_BT = torch.softmax(forward_mlp(self.net, self.scale(obs)).double(), dim=-1)
        if cat_B is None:
            return self.projection(s_BT, obs_BO=obs)
        return self.projection(s_BT, cat_B=cat_B)


def expert_arrays(days: list[ExpertDay]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(obs (N, O) float32, actions (N, T) float64, categories (N,) int64)`` of the days."""
    obs = np.concatenate([d.observations[:-1] for d in days])
    act = np.concatenate([d.actions for d in days])
    cats = np.concatenate([d.categories for d in days]).astype(np.int64)
    return obs, act, cats


def fit(policy: BCPolicy, obs: np.ndarray, act: np.ndarray, cats: np.ndarray, steps: int,
        cfg: BCConfig, seed: int, log: Any = None, bar: Any = None) -> list[float]:
    """Fit ``policy`` to the expert's ``(obs, act, cats)`` for ``steps`` mini-batches.

    Returns:
        The mean loss of each logging window (``cfg.log_every`` steps).
    """
    gen = torch.Generator().manual_seed(int(seed))
    obs_t = torch.as_tensor(obs, dtype=torch.float32)
    act_t = torch.as_tensor(act, dtype=torch.float64)
    cat_t = torch.as_tensor(cats, dtype=torch.long)
    params = [p for p in policy.parameters() if p.requires_grad]
    opt = Adam(params, lr=cfg.lr)
    n = len(obs_t)
    losses: list[float] = []
    window: list[float] = []
    start = time.perf_counter()
    for step in range(1, steps + 1):
        idx = torch.randint(n, (min(cfg.batch_size, n),), generator=gen)
        y_BT = policy(obs_t[idx], cat_t[idx])
        loss = (y_BT - act_t[idx]).pow(2).sum(dim=-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        window.append(float(loss.detach()))
        if bar is not None:
            bar.update(1)
        if (cfg.log_every and step % cfg.log_every == 0) or step == steps:
            losses.append(float(np.mean(window)))
            if log is not None:
                log.write(gradient_steps=step, step=0, wall_s=time.perf_counter() - start,
                          actor_loss=losses[-1])
            window = []
    return losses


def _agent(policy: BCPolicy) -> TorchAgent:
    policy.eval()

    def act(obs: np.ndarray) -> np.ndarray:
        return policy(obs).numpy()

    return TorchAgent(act, "bc")


def _data(run: RunConfig, cfg: BCConfig, env: gym.Env) -> tuple[list[ExpertDay], dict[str, Any]]:
    """The expert days a run learns from, and a record of where they came from."""
    if cfg.dataset:
        meta, days = read_days(cfg.dataset)
        ours = {"env_id": run.env_id, "instance_seed": int(run.instance_seed)}
        theirs = {k: meta.get(k) for k in ours}
        if theirs != ours:
            raise ValueError(f"dataset {cfg.dataset} holds days of {theirs}, the run is on {ours}")
        return days, {"dataset": cfg.dataset, "expert": meta.get("expert"),
                      "seeds": [d.seed for d in days]}
    seeds = [day_seed(run.seed, k) for k in range(cfg.expert_days)]
    days = collect(env, cfg.expert, seeds)
    return days, {"dataset": None, "expert": cfg.expert, "seeds": seeds}


def train(run: RunConfig) -> TorchAgent:
    """Clone the expert's days of ``run`` (hparams: :class:`BCConfig`); returns the policy.

    A finished run's ``best.safetensors`` under ``run.out`` is loaded instead of training again
    (another run's there is refused).
    """
    cfg = make_config(run.hparams)
    out = Path(run.out)
    env = run.make_env()
    identity = {"run": run_identity(run), "gradient_steps": int(run.gradient_steps)}
    done = out / BEST_NAME
    if done.exists():
        _, meta = read_weights(done)
        if meta.get("method") != "bc" or meta.get("identity") != identity or (
                meta.get("config") != as_dict(cfg)):
            raise ValueError(f"{done} belongs to another run; train into another out directory "
                             "or delete it")
        return load(done, env)
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(run.seed)
    days, source = _data(run, cfg, env)
    obs, act, cats = expert_arrays(days)
    policy = BCPolicy(env, cfg)
    bar = progress_bar(run, 0)
    log = CurveLog(out / "curve.csv", "bc", run)
    losses = fit(policy, obs, act, cats, int(run.gradient_steps), cfg, run.seed, log, bar)
    if bar is not None:
        bar.close()
    save_weights(done, module_tensors(policy), method="bc", config=as_dict(cfg),
                 extra={"identity": identity, "data": source, "final_loss": losses[-1],
                        "expert_steps": int(len(obs))})
    return _agent(policy)


def load(path: Path, env: gym.Env) -> TorchAgent:
    """The BC policy of checkpoint ``path`` (a ``.safetensors`` file or a run folder)."""
    file = find_weights(Path(path))
    tensors, meta = read_weights(file)
    if meta.get("method") != "bc":
        raise ValueError(f"{file} holds a {meta.get('method')} run, not bc")
    cfg = config_from(BCConfig, meta["config"], what="bc")
    policy = BCPolicy(env, cfg)
    load_module_tensors(policy, tensors)
    return _agent(policy)


METHOD = Method(
    name="bc", train=train, load=load, learned=True, config=BCConfig, make_config=make_config,
    description="behaviour cloning of an expert's days (a Minari dataset) through the "
    "α-projection: feasible by construction, trained offline",
)
