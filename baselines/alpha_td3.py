"""α-projected TD3 on Tianshou 2.0.1's ``TD3``: α-DDPG's actor with twin critics.

Same actor, exploration and warm-up as :mod:`baselines.alpha_ddpg`. TD3's target-policy
smoothing noise is added to the lagged actor's tanh logits and the result is softmaxed and
α-projected again, so every target action is feasible (Tianshou's stock TD3 would add the noise
to the allocation and leave the polytope). Delayed actor updates as in TD3.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym

from baselines._torch_common import TorchAgent, make_config
from baselines.alpha_ddpg import AlphaDDPGConfig, load_ddpg_family, train_ddpg_family
from baselines.api import Method, RunConfig

__all__ = ["AlphaTD3Config", "METHOD", "train", "load"]


@dataclass(kw_only=True)
class AlphaTD3Config(AlphaDDPGConfig):
    """α-TD3 hyper-parameters (α-DDPG's plus TD3's).

    Attributes:
        policy_noise: Std of the target-smoothing noise on the tanh logits.
        noise_clip: Clip of that noise (0 disables clipping).
        update_actor_freq: Critic updates per actor (and target) update.
    """

    policy_noise: float = 0.1
    noise_clip: float = 0.25
    update_actor_freq: int = 2


def _td3(cfg: AlphaTD3Config) -> dict[str, float]:
    return {
        "policy_noise": cfg.policy_noise,
        "noise_clip": cfg.noise_clip,
        "update_actor_freq": cfg.update_actor_freq,
    }


def train(run: RunConfig) -> TorchAgent:
    """Train α-TD3 on ``run`` (hparams: :class:`AlphaTD3Config` fields)."""
    cfg = make_config(AlphaTD3Config, run.hparams)
    return train_ddpg_family(run, "alpha-td3", cfg, "alpha", "raise", td3=_td3(cfg))


def load(path: Path, env: gym.Env) -> TorchAgent:
    """The greedy α-TD3 policy of checkpoint ``path``, acting on ``env``."""
    from baselines._torch_common import load_checkpoint

    cfg = make_config(AlphaTD3Config, load_checkpoint(path)["config"])
    return load_ddpg_family(path, env, "alpha-td3", AlphaTD3Config, "alpha", td3=_td3(cfg))


METHOD = Method(
    name="alpha-td3",
    train=train,
    load=load,
    learned=True,
    description="α-projected TD3: twin critics, target smoothing in logit space re-projected",
)
