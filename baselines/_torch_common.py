"""Shared pieces of the torch baselines: networks, observation scaling, the training loop.

The learned methods are Tianshou 2.0.1 ``Algorithm`` objects (DDPG, TD3, SAC, PPO) driven by a
small CleanRL-style loop written here instead of Tianshou's collector and trainer, because the
constrained action space needs three things the stock loop does not do: warm-up with *feasible*
actions (never the raw ``Box.sample()``), exploration noise added *before* the projection (in
logit space, so that every executed and every stored action is feasible), and checkpoints at day
boundaries that resume bit for bit. Tianshou's replay buffer, n-step returns, target networks,
optimisers and update rules are used unchanged.

Observation scaling is fixed and documented (:class:`ObsScale`): the queue features (backlog and
team waits, minutes) are divided by ``wait_scale`` (10 minutes); the one-hot, history fractions
and clock are already of order 1. Rewards (minus the wait in minutes) are multiplied by
``reward_scale`` before they enter the buffer; reported waits are always in minutes.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import pickle
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tianshou.data import Batch, ReplayBuffer
from tianshou.utils.net.common import ModuleWithVectorOutput
from tianshou.utils.net.continuous import AbstractContinuousActorDeterministic
from tianshou.utils.torch_utils import policy_within_training_step
from torch import nn

from baselines.api import RunConfig
from tsg_envs import harness, provenance
from tsg_envs.seeds import VALIDATION_SEED_BASE, training_day_seed
from tsg_envs.wrappers import DEFAULT_BETA

__all__ = [
    "OffPolicyConfig",
    "ObsScale",
    "ScaledMLP",
    "SimplexActor",
    "Critic",
    "TorchAgent",
    "RadialActor",
    "OffPolicyHooks",
    "train_off_policy",
    "make_config",
    "day_seed",
    "evaluate_mean_wait",
    "git_commit",
    "CurveLog",
    "latest_checkpoint",
    "resume_state",
    "run_identity",
    "save_checkpoint",
    "end_day",
    "save_best",
    "load_checkpoint",
    "BEST_NAME",
]

#: File name of the best-evaluated weights inside ``run.out`` (see ``keep_best``).
BEST_NAME: str = "best.pt"


@dataclass(kw_only=True)
class OffPolicyConfig:
    """Hyper-parameters shared by the off-policy methods (DDPG, TD3, SAC families).

    Attributes:
        hidden_sizes: Hidden layer widths of actor and critic MLPs.
        actor_lr: Adam learning rate of the actor.
        critic_lr: Adam learning rate of the critic(s).
        gamma: Discount per passenger (one step is one arriving passenger).
        tau: Polyak rate of the target networks.
        n_step: n-step return horizon.
        batch_size: Minibatch size of each gradient step.
        buffer_size: Replay buffer capacity (transitions).
        warmup_steps: Environment steps with feasible random actions before learning starts.
        updates_per_step: Gradient steps per environment step after warm-up.
        reward_scale: Multiplies rewards (minus minutes of wait) before they are stored.
        reward_centering: Store r - r̄ instead of r, with r̄ a running mean of the rewards
            (Naik et al., "Reward Centering", RLC 2024): with γ near 1 this approximates the
            average-reward objective, the paper's undiscounted mean wait per passenger, without
            the value scale growing as 1 / (1 - γ).
        centering_rate: Step size of the running mean r̄ (per environment step).
        wait_scale: Minutes by which queue features of the observation are divided.
        beta: Logit scale β of the softmax (as ``SoftmaxAlphaProjection``).
        exploration_sigma: Std of the Gaussian exploration noise on the actor's tanh logits
            (before softmax and projection), in [-1, 1] logit units.
        checkpoint_every: Save a checkpoint at the first day boundary after every this many steps.
        save_buffer: Also save the replay buffer in checkpoints (exact resume; large files).
        eval_every: Evaluate the greedy policy on ``eval_days`` fixed days every this many
            gradient steps (the learning curve); 0 disables.
        eval_days: Days per curve point.
        threads: ``torch.set_num_threads`` during training.
        num_envs: Days collected at once from the native vector environment
            (:class:`tsg_envs.vector.ScreeningVectorEnv`), the actor batched over them; 1 steps
            one day at a time (DDPG-family methods support more).
        vector: Collect through the vector environment even when ``num_envs`` is 1 (it then
            stores the transitions of the one-day loop, to rounding).
        keep_best: Return (and save as ``best.pt``) the weights with the lowest learning-curve
            evaluation (early stopping on the validation days ``VALIDATION_SEED_BASE + i``, which
            are disjoint from training days and from the leaderboard's test days); False
            returns the final weights.
    """

    hidden_sizes: tuple[int, ...] = (128, 128)
    actor_lr: float = 1e-4
    critic_lr: float = 1e-3
    gamma: float = 0.95
    tau: float = 0.005
    n_step: int = 1
    batch_size: int = 128
    buffer_size: int = 200_000
    warmup_steps: int = 2_000
    updates_per_step: float = 0.5
    reward_scale: float = 0.1
    reward_centering: bool = False
    centering_rate: float = 1e-3
    wait_scale: float = 10.0
    beta: float = DEFAULT_BETA
    exploration_sigma: float = 0.1
    checkpoint_every: int = 20_000
    save_buffer: bool = False
    eval_every: int = 2_000
    eval_days: int = 2
    threads: int = 1
    num_envs: int = 1
    vector: bool = False
    keep_best: bool = True


def make_config(cls: type, hparams: dict[str, Any]) -> Any:
    """Build config dataclass ``cls`` from overrides, rejecting unknown names.

    Lists are turned into tuples (JSON/CLI round trips).
    """
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(hparams) - names
    if unknown:
        raise ValueError(
            f"unknown hparams {sorted(unknown)} for {cls.__name__}; known: {sorted(names)}"
        )
    clean = {k: tuple(v) if isinstance(v, list) else v for k, v in hparams.items()}
    return cls(**clean)


# Networks ---------------------------------------------------------------------------------------
class ObsScale(nn.Module):
    """Fixed observation scaling: queue features (backlog, waits; minutes) / ``wait_scale``.

    Args:
        obs_layout: ``env.unwrapped.obs_layout``.
        obs_dim: Observation size O.
        wait_scale: Minutes that map to 1.0.
    """

    def __init__(self, obs_layout: dict[str, slice], obs_dim: int, wait_scale: float) -> None:
        super().__init__()
        scale = torch.ones(obs_dim)
        for name in ("backlog", "waits"):
            scale[obs_layout[name]] = 1.0 / wait_scale
        self.register_buffer("scale_O", scale)

    def forward(self, obs: np.ndarray | torch.Tensor) -> torch.Tensor:
        """(B, O) float32 scaled observations."""
        obs_BO = torch.as_tensor(obs, dtype=torch.float32, device=self.scale_O.device)
        return obs_BO * self.scale_O


def _mlp(input_dim: int, hidden_sizes: Sequence[int], output_dim: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    d = input_dim
    for h in hidden_sizes:
        layers += [nn.Linear(d, h), nn.ReLU()]
        d = h
    if output_dim > 0:
        layers.append(nn.Linear(d, output_dim))
    return nn.Sequential(*layers)


class ScaledMLP(ModuleWithVectorOutput):
    """Tianshou preprocess net: :class:`ObsScale` then an MLP; ``forward(obs, state)``."""

    def __init__(self, scale: ObsScale, obs_dim: int, hidden_sizes: Sequence[int]) -> None:
        super().__init__(int(hidden_sizes[-1]))
        self.scale = scale
        self.net = _mlp(obs_dim, hidden_sizes, 0)

    def forward(
        self, obs: np.ndarray | torch.Tensor, state: Any = None, info: Any = None
    ) -> tuple[torch.Tensor, Any]:
        """(features (B, H), state)."""
        return self.net(self.scale(obs)), state


class SimplexActor(AbstractContinuousActorDeterministic):
    """Deterministic actor onto the simplex, optionally projected: MLP → tanh → softmax(β·) → P.

    The MLP's tanh output ``u`` ∈ (-1, 1)^T are the logits (the same parametrisation as
    ``SoftmaxAlphaProjection``); ``s = softmax(β u)``; ``projection(s, obs)`` (an
    :class:`~baselines.projection.AlphaProjection` or ``L2Projection``; None for the
    unconstrained penalty actor). Exploration noise is added to ``u`` by the caller
    (:meth:`from_logits`), so the projection sees it.

    Args:
        obs_layout: ``env.unwrapped.obs_layout``.
        obs_dim: O.
        n_teams: T.
        hidden_sizes: MLP widths.
        wait_scale: see :class:`ObsScale`.
        beta: logit scale β.
        projection: module ``(s_BT, obs_BO) -> y_BT`` or None.
    """

    def __init__(
        self,
        obs_layout: dict[str, slice],
        obs_dim: int,
        n_teams: int,
        hidden_sizes: Sequence[int],
        wait_scale: float,
        beta: float,
        projection: nn.Module | None,
    ) -> None:
        super().__init__(n_teams)
        self.scale = ObsScale(obs_layout, obs_dim, wait_scale)
        self.net = _mlp(obs_dim, hidden_sizes, n_teams)
        self.beta = float(beta)
        self.projection = projection
        self.max_action = 1.0

    def get_preprocess_net(self) -> ModuleWithVectorOutput:
        """No separate preprocess stage."""
        return ModuleWithVectorOutput.from_module(nn.Identity(), self.output_dim)

    def get_output_dim(self) -> int:
        """T."""
        return self.output_dim

    def logits(self, obs: np.ndarray | torch.Tensor) -> torch.Tensor:
        """U = tanh(MLP(scaled obs)) ∈ (-1, 1)^T."""
        return torch.tanh(self.net(self.scale(obs)))

    def from_logits(
        self, u_BT: torch.Tensor, obs: np.ndarray | torch.Tensor, double: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(y, s)``: the softmax point s = softmax(β u) and its projection y.

        ``double`` computes the softmax (and returns both) in float64, for acting: the action
        handed to the environment is then feasible to far below the 1e-6 tolerance.
        """
        z = self.beta * (u_BT.double() if double else u_BT)
        s_BT = torch.softmax(z, dim=-1)
        if self.projection is None:
            return s_BT, s_BT
        obs_BO = torch.as_tensor(obs, dtype=torch.float32, device=u_BT.device)
        return self.projection(s_BT, obs_BO), s_BT

    def forward(
        self, obs: np.ndarray | torch.Tensor, state: Any = None, info: Any = None
    ) -> tuple[torch.Tensor, Any]:
        """(y_BT float32, state): the projected action (the critic's input)."""
        y, _ = self.from_logits(self.logits(obs), obs)
        return y.float(), state


class RadialActor(SimplexActor):
    """:class:`SimplexActor` whose logits are radially squashed into the polytope (no softmax).

    ``from_logits`` returns ``(y, y)`` with y = ``projection(β u, obs)``, the projection a
    :class:`~baselines.projection.RadialSquash`: there is no separate proposal to project.
    """

    def from_logits(
        self, u_BT: torch.Tensor, obs: np.ndarray | torch.Tensor, double: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(y, y)``: the squashed point (float64 when ``double``)."""
        z = self.beta * (u_BT.double() if double else u_BT)
        obs_BO = torch.as_tensor(obs, dtype=torch.float32, device=u_BT.device)
        assert self.projection is not None
        y = self.projection(z, obs_BO)
        return y, y


class Critic(nn.Module):
    """Q(s, a): :class:`ObsScale`, concatenate the action, MLP → 1 (Tianshou critic signature)."""

    def __init__(
        self,
        obs_layout: dict[str, slice],
        obs_dim: int,
        act_dim: int,
        hidden_sizes: Sequence[int],
        wait_scale: float,
    ) -> None:
        super().__init__()
        self.scale = ObsScale(obs_layout, obs_dim, wait_scale)
        self.net = _mlp(obs_dim + act_dim, hidden_sizes, 1)

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        act: np.ndarray | torch.Tensor | None = None,
        info: Any = None,
    ) -> torch.Tensor:
        """(B, 1) Q-values."""
        obs_BO = self.scale(obs)
        act_BA = torch.as_tensor(act, dtype=torch.float32, device=obs_BO.device)
        return self.net(torch.cat([obs_BO, act_BA], dim=-1))


class TorchAgent:
    """A trained policy as a :class:`tsg_envs.rollout.Agent`: deterministic, side-effect free.

    Args:
        act_fn: ``obs (B, O) -> actions (B, T)`` numpy; called under ``torch.no_grad``.
        name: Method name (for reprs and logs).
    """

    def __init__(self, act_fn: Callable[[np.ndarray], np.ndarray], name: str) -> None:
        self._act_fn = act_fn
        self.name = name

    def act(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        """The policy's action for one observation (``info`` is not needed)."""
        return self.act_batch(np.asarray(obs)[None], [info])[0]

    def act_batch(self, obs: np.ndarray, infos: Sequence[dict[str, Any]]) -> np.ndarray:
        """Actions (B, T) for observations (B, O), as :func:`tsg_envs.risk` probes them."""
        with torch.no_grad():
            out = self._act_fn(np.asarray(obs, dtype=np.float32))
        return np.asarray(out, dtype=np.float64)

    def __repr__(self) -> str:
        return f"TorchAgent({self.name})"


def greedy_simplex_act(actor: SimplexActor) -> Callable[[np.ndarray], np.ndarray]:
    """``obs (B, O) -> actions (B, T)`` of a :class:`SimplexActor` without noise (float64)."""

    @torch.no_grad()
    def act(obs: np.ndarray) -> np.ndarray:
        obs_BO = torch.as_tensor(obs, dtype=torch.float32)
        y, _ = actor.from_logits(actor.logits(obs_BO), obs_BO, double=True)
        return y.numpy()

    return act


# Runs, seeds, evaluation, logging -------------------------------------------------------------
def day_seed(seed: int, day: int) -> int:
    """Reset seed of training day ``day`` of a run seeded ``seed`` (the project convention)."""
    return training_day_seed(seed, day)


def evaluate_mean_wait(env: gym.Env, agent: Any, n_days: int) -> tuple[float, float]:
    """Mean over ``n_days`` fixed validation days of (mean wait, largest proposed violation).

    The days run through the evaluation harness (batched, ``act_batch`` where the agent has it)
    on the unit ``env`` was made for (its id and kwargs).
    """
    spec = env.spec
    if spec is None:
        raise ValueError("evaluate_mean_wait needs an env made by gym.make (it reads env.spec)")
    kwargs = dict(spec.kwargs)
    unit = harness.Unit.of(spec.id, int(kwargs.pop("instance_seed", 0)), **kwargs)
    days = [VALIDATION_SEED_BASE + i for i in range(n_days)]
    recs = harness.evaluate({"agent": lambda e: agent}, [unit], days)
    return float(np.mean([r.mean_wait for r in recs])), max(r.max_violation for r in recs)


def git_commit() -> str:
    """Short hash of HEAD (``+dirty`` if baselines/ or tsg_envs/ differ), or ``unknown``."""
    return provenance.git_commit(7, ("baselines", "tsg_envs")) or "unknown"


class CurveLog:
    """Append-only CSV of the learning curve under ``run.out/curve.csv``.

    Columns: method, env_id, instance_seed, seed, commit, gradient_steps (mini-batches so far,
    the budget's unit), step (environment steps so far), wall_s, eval_mean_wait, eval_days,
    train_day_mean_wait, max_violation, actor_loss (mean over the gradient steps since the last
    row, where the method reports one).
    """

    FIELDS = (
        "method",
        "env_id",
        "instance_seed",
        "seed",
        "commit",
        "gradient_steps",
        "step",
        "wall_s",
        "eval_mean_wait",
        "eval_days",
        "train_day_mean_wait",
        "max_violation",
        "actor_loss",
    )

    def __init__(self, path: Path, method: str, run: RunConfig) -> None:
        self.path = path
        self.base = {
            "method": method,
            "env_id": run.env_id,
            "instance_seed": run.instance_seed,
            "seed": run.seed,
            "commit": git_commit(),
        }
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w", newline="") as f:
                csv.writer(f).writerow(self.FIELDS)

    def write(self, **row: Any) -> None:
        """Append one row (missing fields empty)."""
        full = {**self.base, **row}
        with self.path.open("a", newline="") as f:
            csv.writer(f).writerow([full.get(k, "") for k in self.FIELDS])


# Checkpoints -----------------------------------------------------------------------------------
def latest_checkpoint(out: Path) -> Path | None:
    """The newest ``ckpt_*.pt`` under ``out`` (by step), or None."""
    out = Path(out)
    if not out.is_dir():
        return None
    cks = sorted(out.glob("ckpt_*.pt"), key=lambda p: int(p.stem.split("_")[1]))
    return cks[-1] if cks else None


def run_identity(run: RunConfig) -> dict[str, Any]:
    """What a run trains on (environment, instance, env kwargs, seed), as checkpoints record it.

    A resume checks it: continuing another run's checkpoint would train a mix of two runs.
    """
    from baselines.nonlearning import jsonable

    return {"env_id": run.env_id, "instance_seed": int(run.instance_seed),
            "env_kwargs": jsonable(run.env_kwargs), "seed": int(run.seed)}


def resume_state(out: Path, method: str, run: RunConfig) -> dict[str, Any] | None:
    """The newest checkpoint under ``out`` to resume ``run`` from, or None when there is none.

    Raises:
        ValueError: when it holds another method, or another run's environment, instance, env
            kwargs or seed (checkpoints written before runs recorded theirs are not checked).
    """
    ckpt = latest_checkpoint(out)
    if ckpt is None:
        return None
    state = load_checkpoint(ckpt)
    if state["method"] != method:
        raise ValueError(f"{ckpt} holds a {state['method']} run, not {method}")
    saved, ours = state.get("run"), run_identity(run)
    if saved is not None and saved != ours:
        differ = sorted(k for k in ours if saved.get(k) != ours[k])
        raise ValueError(
            f"{ckpt} belongs to another run (its {', '.join(differ)} differ: "
            f"{ {k: saved.get(k) for k in differ} } there, { {k: ours[k] for k in differ} } "
            "here); train into another out directory or delete that one")
    return state


def save_checkpoint(out: Path, step: int, payload: dict[str, Any]) -> Path:
    """Write ``payload`` atomically to ``out/ckpt_{step}.pt`` and return the path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"ckpt_{step:08d}.pt"
    tmp = path.with_suffix(".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)
    return path


def end_day(curve: CurveLog, out: Path, *, grad: int, step: int, wall_s: float,
            day_waits: list[float], next_ckpt: int, checkpoint_every: int, final: bool,
            payload: Callable[[], dict[str, Any]]) -> int:
    """A day boundary of a training loop: the day's curve row and, when due, a checkpoint.

    Checkpoints are written only here, at day boundaries, so that a resume is bit-exact.

    Returns:
        The step at which the next checkpoint is due.
    """
    curve.write(gradient_steps=grad, step=step, wall_s=round(wall_s, 2),
                train_day_mean_wait=float(np.mean(day_waits)))
    if step >= next_ckpt or final:
        save_checkpoint(out, step, payload())
        next_ckpt = (step // checkpoint_every + 1) * checkpoint_every
    return next_ckpt


def save_best(out: Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` atomically to ``out/best.pt`` (same layout as a checkpoint)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / BEST_NAME
    tmp = path.with_suffix(".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(path: Path) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` or :func:`save_best`.

    ``path`` may be a run directory: its ``best.pt`` (the weights ``train`` returned under
    ``keep_best``) if present, else its latest ``ckpt_*.pt``. Read with
    ``torch.load(weights_only=True)``: tensors and plain containers only, never code (a replay
    buffer inside stays bytes; only a resumed run of one's own unpickles it).
    """
    path = Path(path)
    if path.is_dir():
        found = path / BEST_NAME if (path / BEST_NAME).exists() else latest_checkpoint(path)
        if found is None:
            raise FileNotFoundError(f"no checkpoint under {path}")
        path = found
    # Plain numpy arrays (a numeric RNG state) are allowed too; object arrays still are not.
    with torch.serialization.safe_globals(_NUMPY_ARRAY_GLOBALS):
        return torch.load(path, map_location="cpu", weights_only=True)


#: What ``torch.load(weights_only=True)`` needs to rebuild a numeric numpy array.
_NUMPY_ARRAY_GLOBALS = [np.ndarray, np.dtype, np.dtypes.UInt32DType, np.dtypes.Float64DType,
                        np.dtypes.Int64DType, np.dtypes.Float32DType,
                        getattr(np, "_core", np).multiarray._reconstruct]


def rng_state(rng: np.random.Generator) -> dict[str, Any]:
    return {"numpy": rng.bit_generator.state, "torch": torch.get_rng_state()}


def set_rng_state(rng: np.random.Generator, state: dict[str, Any]) -> None:
    rng.bit_generator.state = state["numpy"]
    torch.set_rng_state(state["torch"])


# The off-policy loop -----------------------------------------------------------------------------
@dataclass
class OffPolicyHooks:
    """What a method plugs into :func:`train_off_policy`.

    Attributes:
        algorithm: The Tianshou off-policy ``Algorithm`` (its ``update`` is called).
        warmup_action: ``(obs, info, rng) -> action`` for the warm-up steps (feasible sampler).
        explore_action: ``(obs, rng) -> action`` of the behaviour policy (noise inside).
        greedy_act: ``obs -> action`` of the deterministic policy (evaluation / the Agent).
        config: The method's config dataclass (saved in checkpoints).
        explore_batch: ``(obs_NO, rng) -> actions_NT``, the behaviour policy on N observations
            at once (the vector loop; for N = 1 it draws what ``explore_action`` draws).
        vector_env: ``n -> ScreeningVectorEnv`` of the training environment (the vector loop).
    """

    algorithm: Any
    warmup_action: Callable[[np.ndarray, dict[str, Any], np.random.Generator], np.ndarray]
    explore_action: Callable[[np.ndarray, np.random.Generator], np.ndarray]
    greedy_act: Callable[[np.ndarray], np.ndarray]
    config: Any
    explore_batch: Callable[[np.ndarray, np.random.Generator], np.ndarray] | None = None
    vector_env: Callable[[int], Any] | None = None


def progress_bar(run: RunConfig, initial: int) -> Any:
    """A bar over the run's gradient steps (mini-batches), or None without progress."""
    if not run.progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=run.gradient_steps, initial=initial, desc=run.algo, unit="mini-batch",
                smoothing=0.05)


def _actor_loss_of(stats: Any) -> float | None:
    loss = getattr(stats, "actor_loss", None)
    if loss is None:
        return None
    loss = getattr(loss, "mean", loss)  # Tianshou may wrap it in a sequence summary
    try:
        return float(loss() if callable(loss) else loss)
    except (TypeError, ValueError):
        return None


def train_off_policy(
    run: RunConfig,
    method: str,
    cfg: OffPolicyConfig,
    env: gym.Env,
    eval_env: gym.Env,
    hooks: OffPolicyHooks,
) -> TorchAgent:
    """Train ``hooks.algorithm`` for ``run.gradient_steps`` mini-batches; checkpoint; resume.

    One training day is one episode reset with :func:`day_seed` (run seed, day index). Warm-up
    steps use ``hooks.warmup_action``; afterwards ``hooks.explore_action``; every stored action is
    the executed one. After warm-up ``cfg.updates_per_step`` gradient steps follow each
    environment step (fractions accumulate), until the budget of gradient steps is spent (so a
    run takes ``warmup_steps + gradient_steps / updates_per_step`` environment steps). The
    learning curve is evaluated every ``cfg.eval_every`` gradient steps. Checkpoints
    (``ckpt_<step>.pt``: networks and optimisers, step, gradient-step and day counters, numpy
    and torch RNG states, optionally the buffer) are written at the first day boundary after
    every ``cfg.checkpoint_every`` environment steps and at the end;
    a run whose ``run.out`` holds one resumes from it at the next day. The learning curve goes to
    ``run.out/curve.csv``.

    Returns:
        The greedy policy as an Agent.
    """
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(run.seed)
    rng = np.random.default_rng(run.seed)
    algorithm = hooks.algorithm
    policy = algorithm.policy
    out = Path(run.out)
    buffer = ReplayBuffer(cfg.buffer_size)
    step, day, update_credit, wall_before, grad = 0, 0, 0.0, 0.0, 0
    mean_reward = 0.0  # r̄ of reward centering
    best_eval = float("inf")
    losses: list[float] = []
    state = resume_state(out, method, run)
    if state is not None:
        algorithm.load_state_dict(state["algorithm"])
        step, day, grad = state["step"], state["day"], state["gradient_steps"]
        mean_reward = state.get("mean_reward", 0.0)
        update_credit, wall_before = state["update_credit"], state["wall_s"]
        set_rng_state(rng, state["rng"])
        if state.get("buffer") is not None:
            buffer = pickle.loads(state["buffer"])
        best_eval = state.get("best_eval", best_eval)
    curve = CurveLog(out / "curve.csv", method, run)
    agent = TorchAgent(hooks.greedy_act, method)
    bar = progress_bar(run, grad)
    t0 = time.perf_counter() - wall_before
    next_eval = (grad // cfg.eval_every + 1) * cfg.eval_every if cfg.eval_every > 0 else None
    next_ckpt = (step // cfg.checkpoint_every + 1) * cfg.checkpoint_every

    def payload(with_buffer: bool) -> dict[str, Any]:
        return {
            "method": method,
            "run": run_identity(run),
            "config": dataclasses.asdict(cfg),
            "algorithm": algorithm.state_dict(),
            "gradient_steps": grad,
            "step": step,
            "day": day,
            "mean_reward": mean_reward,
            "update_credit": update_credit,
            "wall_s": time.perf_counter() - t0,
            "rng": rng_state(rng),
            "best_eval": best_eval,
            "buffer": pickle.dumps(buffer) if with_buffer else None,
        }

    def evaluate() -> float:
        nonlocal best_eval
        ev, viol = evaluate_mean_wait(eval_env, agent, cfg.eval_days)
        curve.write(
            gradient_steps=grad,
            step=step,
            wall_s=round(time.perf_counter() - t0, 2),
            eval_mean_wait=ev,
            eval_days=cfg.eval_days,
            max_violation=viol,
            actor_loss=float(np.mean(losses)) if losses else "",
        )
        losses.clear()
        if ev < best_eval:
            best_eval = ev
            save_best(out, payload(False))
        return ev

    policy.eval()
    if step == 0 and cfg.eval_every > 0:
        evaluate()

    vector = cfg.vector or cfg.num_envs > 1
    venv = None
    if vector:
        if hooks.vector_env is None or hooks.explore_batch is None:
            raise ValueError(f"{method} has no vector loop: use num_envs=1 (the DDPG family "
                             "collects from the vector environment)")
        venv = hooks.vector_env(int(cfg.num_envs))

    def store(obs: Any, act: Any, rew: float, terminated: bool, truncated: bool,
              obs_next: Any) -> None:
        nonlocal mean_reward, step, update_credit
        stored = cfg.reward_scale * rew
        if cfg.reward_centering:
            mean_reward += cfg.centering_rate * (stored - mean_reward)
            stored -= mean_reward
        buffer.add(Batch(obs=obs, act=act, rew=stored, terminated=terminated,
                         truncated=truncated, obs_next=obs_next, info={}))
        step += 1
        if step > cfg.warmup_steps:
            update_credit += cfg.updates_per_step

    def update() -> None:
        nonlocal update_credit, grad
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

    def maybe_evaluate() -> None:
        nonlocal next_eval
        if next_eval is not None and grad >= next_eval:
            ev = evaluate()
            if bar is not None:
                bar.set_postfix(eval_wait=f"{ev:.2f}")
            next_eval += cfg.eval_every

    def end_of_day(day_waits: list[float]) -> None:
        nonlocal next_ckpt
        next_ckpt = end_day(curve, out, grad=grad, step=step, wall_s=time.perf_counter() - t0,
                            day_waits=day_waits, next_ckpt=next_ckpt,
                            checkpoint_every=cfg.checkpoint_every,
                            final=grad >= run.gradient_steps,
                            payload=lambda: payload(cfg.save_buffer))

    while grad < run.gradient_steps and venv is not None:
        n = venv.num_envs
        obs_n, infos = venv.reset(seed=[day_seed(run.seed, day + i) for i in range(n)])
        day += n
        day_waits: list[float] = []
        done = False
        while not done:
            acts = np.empty((n, venv.single_action_space.shape[0]))
            warm = np.array([step + i < cfg.warmup_steps for i in range(n)])
            with torch.no_grad():
                for i in np.flatnonzero(warm):
                    info_i = {k: v[i] for k, v in infos.items() if not k.startswith("_")}
                    acts[i] = hooks.warmup_action(obs_n[i], info_i, rng)
                if not warm.all():
                    rows = np.flatnonzero(~warm)
                    acts[rows] = hooks.explore_batch(obs_n[rows], rng)
            obs_next, rew, terminated, truncated, infos = venv.step(acts)
            if terminated.any() != terminated.all():
                raise RuntimeError("the vector environment's days ended apart")
            done = bool(terminated.all() or truncated.any())
            for i in range(n):
                day_waits.append(float(infos["wait"][i]))
                store(obs_n[i], acts[i], float(rew[i]), bool(terminated[i]),
                      bool(truncated[i]), obs_next[i])
            obs_n = obs_next
            update()
            maybe_evaluate()
            if grad >= run.gradient_steps:
                break
        end_of_day(day_waits)

    while grad < run.gradient_steps and venv is None:
        obs, info = env.reset(seed=day_seed(run.seed, day))
        day += 1
        done = False
        day_waits = []
        while not done:
            with torch.no_grad():
                if step < cfg.warmup_steps:
                    act = hooks.warmup_action(obs, info, rng)
                else:
                    act = hooks.explore_action(obs, rng)
            obs_next, rew, terminated, truncated, info = env.step(act)
            done = terminated or truncated
            day_waits.append(info["wait"])
            store(obs, act, rew, terminated, truncated, obs_next)
            obs = obs_next
            update()
            maybe_evaluate()
            if grad >= run.gradient_steps:
                break
        end_of_day(day_waits)
    if bar is not None:
        bar.close()
    if cfg.keep_best and (out / BEST_NAME).exists():
        algorithm.load_state_dict(load_checkpoint(out / BEST_NAME)["algorithm"])
    policy.eval()
    return agent
