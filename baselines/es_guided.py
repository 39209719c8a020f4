"""Slack-guided with learned prices (method ``es-guided``): CMA-ES tunes μ and per-team prices.

The policy is the slack-guided per-passenger LP (:mod:`baselines.slack_guided`) with two learned
parts: its μ, and a price p_t (minutes) added to every team's cost,

    π* = argmin_{π ∈ polytope(c)}  π·(w + p + ε s) + μ ‖π − π^slack_{c,w}‖₁ .

The T + 1 parameters θ = (log μ, p_1 .. p_T) are learned per instance by CMA-ES (the ``cma``
package, Hansen's pycma) from the simulated mean wait of training days, with common random
numbers: every candidate of a generation plays the same ``days_per_generation`` training days
(``tsg_envs.seeds.training_day_seed(seed, k)``), so candidates are ranked on equal days. The
search starts at θ = (log 1, 0, .., 0), which *is* slack-guided at its default μ = 1 minute: the
learned part zeroed is the ablation, and any gain over slack-guided comes from learning.
The answer is CMA-ES's final mean (not the best sample, whose score is optimistic), kept if it
waits less than θ = 0 on ``validation_days`` validation days (seeds 5,000 + i, disjoint from
training and evaluation days), else θ = 0 (``selection.json`` says which).

Why these parameters: slack-guided's best μ differs by instance (0.1 to 1 minute; its module
docstring), and a price steers passengers off teams whose current wait understates what they
cost the passengers to come (a team using the day's bottleneck resource). Every action stays in
the polytope (the LP's constraints are the environment's), so the agent plays at the same ψ.

Budget. Not gradient steps: ``generations x popsize x days_per_generation`` simulated training
days (default 12 x 8 x 4 = 384 days, about 3 minutes on a 2-core machine for the default
environment); ``RunConfig.gradient_steps`` is ignored. Resumable at generation boundaries: the
candidates and scores of every generation are saved after it (``es_history.npz``, named by
``es_state.json``; nothing is pickled), and a resumed run replays CMA-ES's ask and tell from them
(its sampler draws from the run's own ``numpy.random.Generator``, never the global one), so it
continues bit for bit. ``curve.csv`` logs per generation the mean wait of the candidates and of
the best, μ, the prices and CMA-ES's step size.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm.auto import tqdm

from baselines.api import Method, RunConfig
from baselines.nonlearning import (
    check_env_matches,
    config_from_hparams,
    jsonable,
    read_checkpoint,
    write_checkpoint,
)
from baselines.slack_guided import DEFAULT_MU, PerPassengerLP, SlackGuidedAgent
from baselines.slack_lp import SlackLPConfig, SlackLPSolution, slack_lp_for_env
from tsg_envs.rollout import rollout
from tsg_envs.seeds import VALIDATION_SEED_BASE, training_day_seed

__all__ = ["ESGuidedConfig", "ESGuidedAgent", "day_mean_wait", "train", "load", "METHOD"]

#: The resume state: JSON (what the run must match, generations done) beside an npz of every
#: generation's candidates and scores. CMA-ES is not pickled: resuming replays its ask/tell
#: from those arrays (its own seeded generator makes the replay exact).
STATE_NAME = "es_state.json"
HISTORY_NAME = "es_history.npz"


@dataclass(kw_only=True)
class ESGuidedConfig:
    """Hyperparameters of the learned-price slack-guided LP.

    Attributes:
        generations: CMA-ES generations. [ours]
        popsize: Candidates per generation. [ours]
        days_per_generation: Training days every candidate of a generation plays. [ours]
        sigma_log_mu: CMA-ES's initial step size in log μ (slack-guided's best μ spans a
            factor of 10 across instances). [ours]
        sigma_price: Its initial step size in price, minutes (waits are about a minute on the
            default environment; wide price steps hide the gain of a small μ). [ours]
        validation_days: Days (``VALIDATION_SEED_BASE + i``) on which the final CMA-ES mean is
            checked against θ = 0 (slack-guided); the better one is kept, so a search that
            drifted returns slack-guided rather than something worse. 0 keeps the mean. [ours]
        max_price: Prices are searched in [-max_price, max_price] minutes. [ours]
        mu_range: μ is searched in this range (minutes). [ours]
        tie_break: ε of slack-guided. [slack-guided's]
        margin: Risk-row tightening. [slack-guided's]
        window_minutes: Windows of the guiding slack LP (``"env"``: the environment's). [ours]
    """

    generations: int = 12
    popsize: int = 8
    days_per_generation: int = 4
    sigma_log_mu: float = 1.0
    sigma_price: float = 0.1
    validation_days: int = 8
    max_price: float = 5.0
    mu_range: tuple[float, float] = (0.01, 100.0)
    tie_break: float = 1e-5
    margin: float = 1e-9
    window_minutes: float | str | None = "env"

    def __post_init__(self) -> None:
        if int(self.validation_days) < 0:
            raise ValueError(f"validation_days must be >= 0, got {self.validation_days}")
        for name in ("generations", "popsize", "days_per_generation"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.popsize < 2:
            raise ValueError(f"popsize must be >= 2 (CMA-ES ranks candidates), got {self.popsize}")
        for name in ("sigma_log_mu", "sigma_price"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be > 0, got {v}")
        if not (np.isfinite(self.max_price) and self.max_price > 0):
            raise ValueError(f"max_price must be > 0, got {self.max_price}")
        lo, hi = (float(v) for v in self.mu_range)
        if not (0 < lo <= DEFAULT_MU <= hi < np.inf):
            raise ValueError(
                f"mu_range must hold {DEFAULT_MU} inside (0, inf), got {self.mu_range}"
            )
        self.mu_range = (lo, hi)


class ESGuidedAgent(SlackGuidedAgent):
    """Slack-guided's per-passenger LP at a learned μ and learned team prices.

    It acts as :class:`~baselines.slack_guided.SlackGuidedAgent` does (``act``, ``act_batch``);
    only its LP's μ and prices differ.

    Args:
        env: The environment (its instance, polytopes and observation layout).
        theta: (log μ, p_1 .. p_T); zeros give slack-guided at μ = 1 exactly.
        guide: The slack LP solution; solved from ``env`` when None.
        config: The config (tie-break, margin, windows).
    """

    def __init__(
        self,
        env: gym.Env,
        theta: np.ndarray,
        guide: SlackLPSolution | None = None,
        config: ESGuidedConfig | None = None,
    ) -> None:
        self.config = config = config or ESGuidedConfig()
        u = env.unwrapped
        theta = np.asarray(theta, dtype=float)
        if theta.shape != (u.game.n_teams + 1,) or not np.isfinite(theta).all():
            raise ValueError(
                f"theta must be {u.game.n_teams + 1} finite numbers (log mu, one price per "
                f"team), got shape {theta.shape}"
            )
        if guide is None:
            guide = slack_lp_for_env(
                env, SlackLPConfig(window_minutes=config.window_minutes, margin=config.margin)
            )
        self.guide = guide
        self.theta = theta
        self.mu = float(math.exp(theta[0]))
        self.prices = theta[1:].copy()
        self._waits = u.obs_layout["waits"]
        self.lp = PerPassengerLP(
            u.game, u.polytopes, self.mu, config.tie_break, guide, config.margin, self.prices
        )


def day_mean_wait(env: gym.Env, agent: Any, seed: int) -> float:
    """Mean expected wait per passenger (minutes) of ``agent`` over the day ``reset(seed)``."""
    return rollout(env, agent, int(seed)).mean_wait


class _Randn:
    """CMA-ES's ``randn(lam, N)`` drawn from an explicit Generator (picklable, unlike a lambda)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def __call__(self, *shape: int) -> np.ndarray:
        return self.rng.standard_normal(shape)


def _strategy(config: ESGuidedConfig, n_teams: int, seed: int) -> Any:
    import cma

    lo = [math.log(config.mu_range[0])] + [-config.max_price] * n_teams
    hi = [math.log(config.mu_range[1])] + [config.max_price] * n_teams
    x0 = np.zeros(n_teams + 1)  # μ = 1, no prices: slack-guided
    opts = {
        "popsize": int(config.popsize),
        "bounds": [lo, hi],
        "CMA_stds": [float(config.sigma_log_mu)] + [float(config.sigma_price)] * n_teams,
        "seed": float("nan"),  # never touch numpy's global generator
        "randn": _Randn(np.random.default_rng([int(seed), 0x0E5])),
        "verbose": -9,
        "verb_disp": 0,
        "verb_log": 0,
        "tolfun": 0.0,
        "tolx": 0.0,
        "tolflatfitness": 10**9,
    }
    return cma.CMAEvolutionStrategy(x0, 1.0, opts)  # per-coordinate steps: CMA_stds


def _signature(run: RunConfig, config: ESGuidedConfig) -> dict[str, Any]:
    """What a saved CMA-ES state must match to be resumed (any budget: it can be extended)."""
    cfg = jsonable(dataclasses.asdict(config))
    cfg.pop("generations")
    return {
        "env_id": run.env_id,
        "instance_seed": int(run.instance_seed),
        "env_kwargs": jsonable(run.env_kwargs),
        "seed": int(run.seed),
        "config": cfg,
    }


def train(run: RunConfig) -> ESGuidedAgent:
    """Learn θ by CMA-ES on training days (resuming from ``run.out``) and save the agent."""
    config = config_from_hparams(ESGuidedConfig, run.hparams)
    out = Path(run.out)
    out.mkdir(parents=True, exist_ok=True)
    env = run.make_env()
    n_teams = env.unwrapped.game.n_teams
    guide = slack_lp_for_env(
        env, SlackLPConfig(window_minutes=config.window_minutes, margin=config.margin)
    )
    signature = _signature(run, config)
    es = _strategy(config, n_teams, run.seed)
    history = _resume(out, signature, es)
    if history is None:
        history = {"candidates": [], "scores": []}
        with (out / "curve.csv").open("w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerow(["generation", "training_days", "mean_wait", "best_wait",
                                    "mu", "sigma", *[f"price_{t}" for t in range(n_teams)]])
    state = {"generation": len(history["scores"])}
    bar = tqdm(total=config.generations, initial=state["generation"], desc="es-guided",
               unit="gen", disable=not run.progress)
    while state["generation"] < config.generations:
        g = state["generation"]
        days = [training_day_seed(run.seed, g * config.days_per_generation + j)
                for j in range(config.days_per_generation)]
        candidates = es.ask()
        scores = []
        for x in candidates:
            agent = ESGuidedAgent(env, np.asarray(x), guide, config)
            scores.append(float(np.mean([day_mean_wait(env, agent, d) for d in days])))
        es.tell(candidates, scores)
        state["generation"] = g + 1
        mean = np.asarray(es.mean, dtype=float)
        with (out / "curve.csv").open("a", newline="", encoding="utf-8") as f:
            csv.writer(f).writerow([g + 1, (g + 1) * config.days_per_generation * len(scores),
                                    float(np.mean(scores)), float(np.min(scores)),
                                    math.exp(mean[0]), float(es.sigma), *mean[1:].tolist()])
        history["candidates"].append(np.asarray(candidates, dtype=float))
        history["scores"].append(np.asarray(scores, dtype=float))
        _save_state(out, signature, history)
        bar.update(1)
        bar.set_postfix(mean_wait=f"{np.mean(scores):.3f}", mu=f"{math.exp(mean[0]):.3g}")
    bar.close()
    theta = _select(env, np.asarray(es.mean, dtype=float), guide, config, out)
    write_checkpoint(run, env, config, {**guide.arrays(), "theta": theta})
    return ESGuidedAgent(env, theta, guide, config)


def _save_state(out: Path, signature: dict[str, Any], history: dict[str, list[np.ndarray]]
                ) -> None:
    """Write the resume state: the arrays first, then the JSON that names them (atomic each)."""
    tmp = out / (HISTORY_NAME + ".tmp.npz")
    np.savez(tmp, candidates=np.stack(history["candidates"]), scores=np.stack(history["scores"]))
    tmp.replace(out / HISTORY_NAME)
    meta = out / (STATE_NAME + ".tmp")
    meta.write_text(json.dumps({"signature": signature, "generations": len(history["scores"])},
                               indent=1, sort_keys=True), encoding="utf-8")
    meta.replace(out / STATE_NAME)


def _resume(out: Path, signature: dict[str, Any], es: Any) -> dict[str, list[np.ndarray]] | None:
    """Replay a saved run's generations into the fresh strategy ``es``; None: start again.

    Nothing is unpickled: the strategy asks for each saved generation's candidates again (they
    must be the saved ones bit for bit, else the saved state is another run's and is ignored)
    and is told the saved scores, which leaves it exactly where the interrupted run was.
    """
    meta, arrays = out / STATE_NAME, out / HISTORY_NAME
    if not (meta.exists() and arrays.exists()):
        return None
    saved = json.loads(meta.read_text(encoding="utf-8"))
    if saved.get("signature") != signature:
        return None  # another run's state: start again
    with np.load(arrays, allow_pickle=False) as data:
        candidates, scores = data["candidates"], data["scores"]
    n = int(saved.get("generations", -1))
    if n != len(scores) or n != len(candidates):
        return None
    for g in range(n):
        asked = np.asarray(es.ask(), dtype=float)
        if asked.shape != candidates[g].shape or not np.array_equal(asked, candidates[g]):
            raise RuntimeError(f"{arrays}: generation {g} does not replay (another CMA-ES "
                               "version?); delete the state files to start again")
        es.tell(list(asked), scores[g].tolist())
    return {"candidates": list(candidates), "scores": list(scores)}


def _select(env: gym.Env, theta: np.ndarray, guide: SlackLPSolution, config: ESGuidedConfig,
            out: Path) -> np.ndarray:
    """θ, or zeros (slack-guided) when those wait less on the validation days; logged."""
    if config.validation_days == 0:
        return theta
    days = [VALIDATION_SEED_BASE + i for i in range(config.validation_days)]
    zero = np.zeros_like(theta)
    waits = {
        name: float(np.mean([day_mean_wait(env, ESGuidedAgent(env, x, guide, config), d)
                             for d in days]))
        for name, x in (("learned", theta), ("slack_guided", zero))
    }
    keep = "learned" if waits["learned"] <= waits["slack_guided"] else "slack_guided"
    record = {"validation_days": days, "mean_wait": waits, "kept": keep,
              "learned_theta": theta.tolist()}
    (out / "selection.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return theta if keep == "learned" else zero


def load(path: Path, env: gym.Env) -> ESGuidedAgent:
    """The saved θ, config and guiding slack-LP policy, after checking ``env`` is its instance."""
    record, arrays = read_checkpoint(path, "es-guided")
    check_env_matches(record, env, path)
    cfg = dict(record["config"])
    cfg["mu_range"] = tuple(cfg["mu_range"])
    config = ESGuidedConfig(**cfg)
    return ESGuidedAgent(env, arrays["theta"], SlackLPSolution.from_arrays(arrays), config)


METHOD = Method(
    name="es-guided",
    train=train,
    load=load,
    learned=True,
    description="slack-guided with mu and per-team prices learned by CMA-ES on training days",
    config=ESGuidedConfig,
)
