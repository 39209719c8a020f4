"""The DDPG family: α-projected DDPG (the paper's method), its TD3 twin and its rivals, as data.

Every member is Tianshou 2.0.1's ``DDPG`` (or ``TD3``) with one actor: an MLP's tanh logits
u ∈ (-1, 1)^T, then a *head* that turns them into an allocation. What distinguishes the members
is data (:class:`Variant`, :data:`VARIANTS`):

==================  ===========  ============  ==========  ===============================
method              head         env's mode    warm-up     extra
==================  ===========  ============  ==========  ===============================
alpha-ddpg          α-project    raise         feasible    ``reg_weight`` (‖s - y‖² loss)
alpha-td3           α-project    raise         feasible    twin critics, target smoothing
radial-ddpg         radial       raise         feasible
l2-ddpg             L2 (QP)      raise         feasible    cvxpylayers (extra ``l2``)
proj-ddpg           softmax      project       Dirichlet
proj-penalty-ddpg   softmax      project       Dirichlet   ``projection_penalty``
penalty-ddpg        softmax      penalize      Dirichlet
==================  ===========  ============  ==========  ===============================

Heads (:class:`SimplexActor`): **α-project** is softmax(β u) α-projected toward the waiting
category's polytope centre (Shah et al., AAAI 2020; :class:`~baselines.projection.
AlphaProjection`, the category read from the observation's one-hot, so Tianshou's target actor,
which gets no ``info``, projects correctly); **radial** squashes β u radially into the polytope
(Kasaura et al., RA-L 2023; :class:`~baselines.projection.RadialSquash`); **L2** is the
Euclidean projection, a differentiable QP (the OptLayer route the paper argues against;
:class:`~baselines.projection.L2Projection`); **softmax** is the unconstrained softmax(β u),
whose proposals the environment projects (``invalid_action="project"``, the critic learning on
the proposals) or penalises (``"penalize"``): those land on the open track.

Tianshou's hooks carry the constraint through training. The policy's ``add_exploration_noise``
puts Gaussian noise on the logits u, not on the allocation, and runs the head again on the
batch's observations, so every explored and stored action is feasible; TD3's target smoothing
is done the same way (:class:`ProjectedTD3`). The warm-up policy draws feasible allocations
(``PolytopeSet.sample``; Dirichlet points of the simplex for the softmax heads), never
``Box.sample()``. Action scaling and bounding are off (``action_scaling=False``,
``action_bound_method=None``): the actor's output *is* the allocation. Environments of the
projected heads are made with ``invalid_action="raise"``, so an infeasible action would fail
loudly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import torch
from tianshou.algorithm import DDPG, TD3
from tianshou.algorithm.algorithm_base import Policy
from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy, DDPGTrainingStats
from tianshou.algorithm.modelfree.td3 import TD3TrainingStats
from tianshou.data import Batch
from tianshou.exploration import BaseNoise
from tianshou.utils.net.common import ModuleWithVectorOutput
from tianshou.utils.net.continuous import AbstractContinuousActorDeterministic
from torch import nn

from baselines.api import Method, RunConfig
from baselines.checkpoint import find_weights, load_module_tensors, read_weights
from baselines.config import config_from
from baselines.nets import (
    Critic,
    ObsScale,
    QuickTrainMode,
    TorchAgent,
    forward_mlp,
    mlp,
    numpy_mlp,
)
from baselines.offpolicy import OffPolicyConfig, OffPolicyParts, train_off_policy
from baselines.optim import adam
from baselines.projection import (
    AlphaProjection,
    L2Projection,
    RadialSquash,
    projection_distance,
)
from baselines.replay import NoNumbaCompile, nstep_targets

__all__ = ["DDPGConfig", "Variant", "VARIANTS", "METHODS", "SimplexActor", "LogitNoise",
           "ExploringPolicy", "WarmupPolicy", "ProjectedDDPG", "ProjectedTD3", "build", "train",
           "load"]

Head = Literal["alpha", "radial", "l2", "softmax"]


# Config and variants -------------------------------------------------------------------------
@dataclass(kw_only=True)
class DDPGConfig(OffPolicyConfig):
    """Hyper-parameters of the DDPG family (the loop's, :class:`OffPolicyConfig`, and these).

    A field below that its variant does not list (:attr:`Variant.fields`) cannot be set.
    """

    exploration_sigma: float = 0.1
    """Std of the Gaussian exploration noise on the actor's tanh logits (before the head), in
    [-1, 1] logit units."""
    num_envs: int = 1
    """Days collected at once from the native vector environment, the actor batched over them;
    1 steps one day at a time."""
    vector: bool = False
    """Collect through the vector environment even when ``num_envs`` is 1 (it then stores the
    transitions of the one-day loop, to rounding)."""
    numpy_acting: bool = True
    """Explore in numpy (the network's float32 products by numpy, the head in float64): about a
    fifth of the torch step's cost on one observation, equal to it to float32 rounding. False
    explores in torch, as runs made before this option did (bit for bit). The L2 head (no numpy
    twin) always explores in torch."""
    reg_weight: float = 0.0
    """α-projection heads: weight of ‖s - y‖² in the actor loss (s the softmax point, y its
    projection), as the authors' released layer asks; the paper is silent (0: off)."""
    projection_penalty: float = 0.0
    """proj-penalty-ddpg: weight of ‖a - P(a)‖² in the actor loss, P the α-projection (the
    critic's Q values are rewards × ``reward_scale`` summed with discount γ, of order 10-100)."""
    policy_noise: float = 0.1
    """TD3: std of the target-smoothing noise on the lagged actor's tanh logits."""
    noise_clip: float = 0.25
    """TD3: clip of that noise (0 disables clipping)."""
    update_actor_freq: int = 2
    """TD3: critic updates per actor (and target) update."""


#: Fields every variant accepts: the loop's and the collection's.
_COMMON = frozenset(OffPolicyConfig.__dataclass_fields__) | {"exploration_sigma", "num_envs",
                                                             "vector", "numpy_acting"}
_TD3 = frozenset({"policy_noise", "noise_clip", "update_actor_freq"})


@dataclass(frozen=True, kw_only=True)
class Variant:
    """One member of the DDPG family.

    Attributes:
        name: Method name (the CLI's ``--algo``).
        description: One line for ``--help`` and the README.
        head: What maps the logits to an allocation (see the module's docstring).
        invalid_action: The training environment's ``invalid_action`` mode.
        warmup: ``"feasible"`` (``PolytopeSet.sample``) or ``"dirichlet"`` (the simplex).
        twin_critics: TD3 (twin critics, delayed actor updates, target smoothing).
        extra: Config fields beyond the common ones that this variant takes.
        defaults: Its own defaults of config fields.
    """

    name: str
    description: str
    head: Head
    invalid_action: Literal["raise", "project", "penalize"]
    warmup: Literal["feasible", "dirichlet"]
    twin_critics: bool = False
    extra: frozenset[str] = frozenset()
    defaults: Mapping[str, Any] = field(default_factory=dict)

    @property
    def fields(self) -> frozenset[str]:
        """Every config field this variant accepts."""
        return _COMMON | self.extra

    def config(self, hparams: Mapping[str, Any] | None = None) -> DDPGConfig:
        """Its config from ``hparams`` (text parsed by field type; see ``baselines.config``)."""
        return config_from(DDPGConfig, hparams, defaults=self.defaults, allowed=self.fields,
                           what=self.name)


VARIANTS: dict[str, Variant] = {v.name: v for v in [
    Variant(name="alpha-ddpg", head="alpha", invalid_action="raise", warmup="feasible",
            extra=frozenset({"reg_weight"}),
            description="α-projected DDPG (the paper's method): softmax actor projected toward "
            "the polytope centre, exploration in logit space"),
    Variant(name="alpha-td3", head="alpha", invalid_action="raise", warmup="feasible",
            twin_critics=True, extra=frozenset({"reg_weight"}) | _TD3,
            description="α-projected TD3: twin critics, target smoothing in logit space "
            "re-projected"),
    Variant(name="radial-ddpg", head="radial", invalid_action="raise", warmup="feasible",
            description="DDPG whose logits are radially squashed into the polytope around its "
            "centre (Kasaura et al. 2023's rival of the alpha-projection)"),
    Variant(name="l2-ddpg", head="l2", invalid_action="raise", warmup="feasible",
            defaults={"batch_size": 32, "updates_per_step": 0.05},
            description="DDPG with a differentiable L2 projection (cvxpylayers QP; the OptLayer "
            "route)"),
    Variant(name="proj-ddpg", head="softmax", invalid_action="project", warmup="dirichlet",
            description="DDPG with an unconstrained softmax actor; the environment "
            "alpha-projects its proposals, the critic learns on the proposals (Kasaura et al. "
            "2023's projection baseline)"),
    Variant(name="proj-penalty-ddpg", head="softmax", invalid_action="project",
            warmup="dirichlet", extra=frozenset({"projection_penalty"}),
            defaults={"projection_penalty": 10.0},
            description="projection DDPG whose actor loss adds a penalty on the distance to the "
            "alpha-projection (Kasaura et al. 2023's variant)"),
    Variant(name="penalty-ddpg", head="softmax", invalid_action="penalize", warmup="dirichlet",
            description="DDPG with an unconstrained softmax actor; the env penalises "
            "violations"),
]}


# The actor -------------------------------------------------------------------------------------
class SimplexActor(AbstractContinuousActorDeterministic):
    """Deterministic actor onto the polytope: MLP → tanh logits u → head.

    Heads: ``"alpha"``/``"l2"``: s = softmax(β u), then ``projection(s, obs)``; ``"radial"``:
    ``projection(β u, obs)`` (a :class:`~baselines.projection.RadialSquash`); ``"softmax"``: s.

    Args:
        obs_layout: ``env.unwrapped.obs_layout``.
        obs_dim: O.
        n_teams: T.
        hidden_sizes: MLP widths.
        wait_scale: See :class:`~baselines.nets.ObsScale`.
        beta: Logit scale β.
        head: The head.
        projection: The head's module (None for ``"softmax"``).
    """

    def __init__(self, obs_layout: dict[str, slice], obs_dim: int, n_teams: int,
                 hidden_sizes: tuple[int, ...], wait_scale: float, beta: float, head: Head,
                 projection: nn.Module | None) -> None:
        super().__init__(n_teams)
        self.scale = ObsScale(obs_layout, obs_dim, wait_scale)
        self.net = mlp(obs_dim, hidden_sizes, n_teams)
        self.beta = float(beta)
        self.head = head
        self.projection = projection
        self.max_action = 1.0

    def get_preprocess_net(self) -> ModuleWithVectorOutput:
        """No separate preprocess stage."""
        return ModuleWithVectorOutput.from_module(nn.Identity(), self.output_dim)

    def get_output_dim(self) -> int:
        """T."""
        return self.output_dim

    def logits(self, obs: np.ndarray | torch.Tensor) -> torch.Tensor:
        """The logits u = tanh(MLP(scaled obs)) ∈ (-1, 1)^T, float32 (B, T)."""
        return torch.tanh(forward_mlp(self.net, self.scale(obs)))

    def from_logits(self, u_BT: torch.Tensor, obs: np.ndarray | torch.Tensor,
                    double: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """``(y, s)``: the head's allocation y and the softmax point s (y itself when radial).

        ``double`` computes in float64, for acting: the action handed to the environment is
        then feasible to far below the 1e-6 tolerance.
        """
        z = self.beta * (u_BT.double() if double else u_BT)
        if self.head == "radial":
            y = self.projection(z, torch.as_tensor(obs, dtype=torch.float32))
            return y, y
        s_BT = torch.softmax(z, dim=-1)
        if self.projection is None:
            return s_BT, s_BT
        return self.projection(s_BT, torch.as_tensor(obs, dtype=torch.float32)), s_BT

    def forward(self, obs: np.ndarray | torch.Tensor, state: Any = None, info: Any = None
                ) -> tuple[torch.Tensor, Any]:
        """(y float32 (B, T), state): the head's allocation (the critic's input)."""
        y, _ = self.from_logits(self.logits(obs), obs)
        return y.float(), state

    def numpy_explorer(self, noise: Callable[[tuple[int, ...]], np.ndarray] | None
                       ) -> Callable[[np.ndarray], np.ndarray] | None:
        """``obs (N, O) -> actions (N, T)``: the exploration step in numpy, or None (L2 head).

        What :meth:`ExploringPolicy.add_exploration_noise` does to the actor's logits (noise
        drawn by ``noise`` as there, clip, softmax, the head in float64), with the network's
        float32 products by numpy (:func:`~baselines.nets.numpy_mlp`).
        """
        if self.head not in ("alpha", "radial", "softmax"):
            return None
        net = numpy_mlp(self.net, self.scale)
        project = None if self.projection is None else self.projection.numpy_forward()
        beta, radial = self.beta, self.head == "radial"

        def explore(obs_NO: np.ndarray) -> np.ndarray:
            obs = np.asarray(obs_NO, dtype=np.float32)
            u = np.tanh(net(obs)).astype(np.float64)
            if noise is not None:
                u = u + noise(u.shape)
            z = beta * np.clip(u, -1.0, 1.0)
            if radial:
                return project(z, obs)  # type: ignore[misc]
            z = np.exp(z - z.max(axis=-1, keepdims=True))
            s = z / z.sum(axis=-1, keepdims=True)
            return s if project is None else project(s, obs)

        return explore

    @torch.no_grad()
    def greedy(self, obs_NO: np.ndarray) -> np.ndarray:
        """The noiseless allocations (N, T), float64 (the Agent's)."""
        obs_t = torch.as_tensor(obs_NO, dtype=torch.float32)
        y, _ = self.from_logits(self.logits(obs_t), obs_t, double=True)
        return y.numpy()


def _head_module(env: gym.Env, head: Head) -> nn.Module | None:
    if head == "alpha":
        return AlphaProjection.from_env(env)
    if head == "l2":
        return L2Projection.from_env(env)
    if head == "radial":
        return RadialSquash.from_env(env)
    return None


# Policies: exploration in logit space and a feasible warm-up -----------------------------------
class LogitNoise(BaseNoise):
    """Gaussian noise N(0, σ²) drawn from the run's generator (Tianshou's noise interface)."""

    def __init__(self, sigma: float, rng: np.random.Generator) -> None:
        self.sigma, self.rng = float(sigma), rng

    def __call__(self, size: Any) -> np.ndarray:
        """A float64 array of ``size``."""
        return self.rng.normal(0.0, self.sigma, size=tuple(size))

    def reset(self) -> None:
        """Stateless (the generator is the run's)."""


class ExploringPolicy(NoNumbaCompile, ContinuousDeterministicPolicy):
    """The DDPG policy whose exploration noise goes on the logits, then through the head again.

    ``add_exploration_noise(act, batch)`` (Tianshou's hook): ``act`` is the actor's logits u
    (a tensor, as the training loop passes it) or, as Tianshou's collector passes it, the
    projected action (an array; the logits are then recomputed from ``batch.obs``). The result
    is head(clip(u + noise, -1, 1)) on the batch's observations, in float64: feasible.
    """

    actor: SimplexActor

    def add_exploration_noise(self, act: Any, batch: Any) -> Any:
        """Logit-space noise, re-projected onto each observation's polytope."""
        u = act if isinstance(act, torch.Tensor) else self.actor.logits(batch.obs)
        u = u.double()
        if self.exploration_noise is not None:
            u = u + torch.from_numpy(self.exploration_noise(u.shape))
        y, _ = self.actor.from_logits(u.clamp(-1.0, 1.0), batch.obs, double=True)
        return y.numpy()


class WarmupPolicy(NoNumbaCompile, Policy):
    """Random allocations for the warm-up: feasible ones, or Dirichlet(1) points of the simplex.

    Each row is drawn in turn from the run's generator (row i of a batch draws what a batch of
    one would after rows 0..i-1).

    Args:
        env: The environment (its polytopes and observation layout).
        kind: ``"feasible"`` (``PolytopeSet.sample`` for the observation's category) or
            ``"dirichlet"``.
        rng: The run's generator.
    """

    def __init__(self, env: gym.Env, kind: Literal["feasible", "dirichlet"],
                 rng: np.random.Generator) -> None:
        super().__init__(action_space=env.action_space,
                         observation_space=env.observation_space, action_scaling=False,
                         action_bound_method=None)
        self.polytopes = env.unwrapped.polytopes
        self.category = env.unwrapped.obs_layout["category"]
        self.kind, self.rng = kind, rng

    def forward(self, batch: Any, state: Any = None, **kwargs: Any) -> Batch:
        """``Batch(act=(N, T) allocations)``."""
        obs = np.asarray(batch.obs)
        if self.kind == "dirichlet":
            ones = np.ones(self.action_space.shape[0])
            act = np.stack([self.rng.dirichlet(ones) for _ in range(len(obs))])
        else:
            cats = obs[:, self.category].argmax(-1)
            act = np.stack([self.polytopes.sample(cats[i:i + 1], self.rng)[0]
                            for i in range(len(obs))])
        return Batch(act=act, state=state)


# The algorithms ---------------------------------------------------------------------------------
class _NumpyReturns:
    """Algorithm mixin: n-step targets in numpy (:func:`~baselines.replay.nstep_targets`)."""

    def _preprocess_batch(self, batch: Any, buffer: Any, indices: np.ndarray) -> Any:
        batch.returns = nstep_targets(buffer, indices, self._target_q, self.gamma,
                                      self.n_step_return_horizon)
        return batch

    def _target_q(self, buffer: Any, indices: np.ndarray) -> torch.Tensor:
        obs_next = Batch(obs=buffer.obs_next[indices], info=[None] * len(indices))
        act = self._target_q_compute_action(obs_next)
        return self._target_q_compute_value(obs_next, act)


def actor_loss(actor: SimplexActor, critic: nn.Module, obs: Any, reg_weight: float,
               penalty: tuple[nn.Module, float] | None = None) -> torch.Tensor:
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


class ProjectedDDPG(QuickTrainMode, _NumpyReturns, DDPG):
    """Tianshou ``DDPG`` whose actor loss may add regularisers (see :func:`actor_loss`)."""

    def __init__(self, *, reg_weight: float = 0.0,
                 penalty: tuple[nn.Module, float] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reg_weight = float(reg_weight)
        self.penalty = penalty

    def _update_with_batch(self, batch: Any) -> DDPGTrainingStats:
        td, critic_loss = self._minimize_critic_squared_loss(batch, self.critic, self.critic_optim)
        batch.weight = td  # prio-buffer
        loss = actor_loss(self.policy.actor, self.critic, batch.obs, self.reg_weight,
                          self.penalty)
        self.policy_optim.step(loss)
        self._update_lagged_network_weights()
        return DDPGTrainingStats(actor_loss=loss.item(), critic_loss=critic_loss.item())


class ProjectedTD3(QuickTrainMode, _NumpyReturns, TD3):
    """Tianshou ``TD3`` with target smoothing in logit space, re-projected.

    The lagged actor's logits u get clipped Gaussian noise (``policy_noise``, ``noise_clip`` in
    tanh-logit units), are clipped to [-1, 1], then go through the head again, so every target
    action is feasible. The actor loss may add the regulariser. Its update counter is part of
    the checkpoint (:meth:`loop_state`), so a resume is exact.
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
        td1, critic1_loss = self._minimize_critic_squared_loss(batch, self.critic,
                                                               self.critic_optim)
        td2, critic2_loss = self._minimize_critic_squared_loss(batch, self.critic2,
                                                               self.critic2_optim)
        batch.weight = (td1 + td2) / 2.0
        if self._cnt % self.update_actor_freq == 0:
            loss = actor_loss(self.policy.actor, self.critic, batch.obs, self.reg_weight)
            self._last = loss.item()
            self.policy_optim.step(loss)
            self._update_lagged_network_weights()
        self._cnt += 1
        return TD3TrainingStats(actor_loss=self._last, critic1_loss=critic1_loss.item(),
                                critic2_loss=critic2_loss.item())

    def loop_state(self) -> dict[str, Any]:
        """The update counter and last actor loss (what ``state_dict`` leaves out)."""
        return {"cnt": int(self._cnt), "last": float(self._last)}

    def set_loop_state(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`loop_state`."""
        self._cnt, self._last = int(state["cnt"]), float(state["last"])


def build(env: gym.Env, cfg: DDPGConfig, variant: Variant | str = "alpha-ddpg"
          ) -> tuple[DDPG, SimplexActor]:
    """The Tianshou algorithm of ``variant`` on ``env`` (its polytopes and layout) and its actor.

    The exploration noise is not set: :func:`train` gives the policy a :class:`LogitNoise` on
    the run's generator.
    """
    variant = VARIANTS[variant] if isinstance(variant, str) else variant
    u = env.unwrapped
    obs_dim = int(env.observation_space.shape[0])
    n_teams = int(env.action_space.shape[0])
    actor = SimplexActor(u.obs_layout, obs_dim, n_teams, tuple(cfg.hidden_sizes),
                         cfg.wait_scale, cfg.beta, variant.head, _head_module(env, variant.head))
    policy = ExploringPolicy(actor=actor, exploration_noise=None, action_space=env.action_space,
                             observation_space=env.observation_space, action_scaling=False,
                             action_bound_method=None)

    def critic() -> Critic:
        return Critic(u.obs_layout, obs_dim, n_teams, cfg.hidden_sizes, cfg.wait_scale)

    common = {"policy": policy, "policy_optim": adam(lr=cfg.actor_lr),
              "critic": critic(), "critic_optim": adam(lr=cfg.critic_lr),
              "tau": cfg.tau, "gamma": cfg.gamma, "n_step_return_horizon": cfg.n_step,
              "reg_weight": cfg.reg_weight}
    if not variant.twin_critics:
        weight = float(cfg.projection_penalty)
        penalty = (AlphaProjection.from_env(env), weight) if weight > 0 else None
        return ProjectedDDPG(penalty=penalty, **common), actor
    return ProjectedTD3(critic2=critic(), policy_noise=cfg.policy_noise,
                        noise_clip=cfg.noise_clip, update_actor_freq=cfg.update_actor_freq,
                        **common), actor


# Training and loading ----------------------------------------------------------------------------
def train(run: RunConfig, variant: Variant | str = "alpha-ddpg") -> TorchAgent:
    """Train ``variant`` on ``run`` (hparams: :class:`DDPGConfig` fields the variant takes)."""
    variant = VARIANTS[variant] if isinstance(variant, str) else variant
    cfg = variant.config(run.hparams)
    torch.manual_seed(run.seed)  # network initialisation
    env = run.make_env(invalid_action=variant.invalid_action)
    algorithm, actor = build(env, cfg, variant)
    rng = np.random.default_rng(run.seed)
    policy: ExploringPolicy = algorithm.policy
    policy.set_exploration_noise(LogitNoise(cfg.exploration_sigma, rng))
    warmup = WarmupPolicy(env, variant.warmup, rng)

    in_numpy = actor.numpy_explorer(policy.exploration_noise) if cfg.numpy_acting else None

    def explore(obs_NO: np.ndarray) -> np.ndarray:
        if in_numpy is not None:
            return in_numpy(obs_NO)
        obs_t = torch.from_numpy(np.asarray(obs_NO, dtype=np.float32))
        return policy.add_exploration_noise(actor.logits(obs_t), Batch(obs=obs_t))

    parts = OffPolicyParts(
        algorithm=algorithm, rng=rng, env=env, eval_env=run.make_env(),
        warmup=lambda obs_NO: warmup(Batch(obs=obs_NO, info={})).act,
        explore=explore, greedy=actor.greedy,
        vector_env=partial(run.make_vector_env, invalid_action=variant.invalid_action))
    return train_off_policy(run, variant.name, cfg, parts, num_envs=cfg.num_envs,
                            vector=cfg.vector)


def load(path: Path, env: gym.Env, variant: Variant | str = "alpha-ddpg") -> TorchAgent:
    """The greedy policy of ``variant``'s checkpoint ``path``, acting on ``env``'s polytopes.

    ``path``: a run folder, a checkpoint folder or a ``.safetensors`` file.
    """
    variant = VARIANTS[variant] if isinstance(variant, str) else variant
    file = find_weights(path)
    tensors, meta = read_weights(file)
    if meta.get("method") != variant.name:
        raise ValueError(f"{file} holds a {meta.get('method')} run, not {variant.name}")
    cfg = config_from(DDPGConfig, meta["config"], what=variant.name)
    algorithm, actor = build(env, cfg, variant)
    load_module_tensors(algorithm, tensors)
    algorithm.eval()
    return TorchAgent(actor.greedy, variant.name)


#: Method name -> :class:`~baselines.api.Method` of every variant.
METHODS: dict[str, Method] = {
    name: Method(name=name, train=partial(train, variant=v), load=partial(load, variant=v),
                 learned=True, description=v.description, config=DDPGConfig,
                 make_config=v.config, config_fields=v.fields)
    for name, v in VARIANTS.items()
}
