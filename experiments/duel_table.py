"""The README's duel table: each defender's worst-case risk against Σψ, and what attackers gain.

For every defender (by default the static LP, α-DDPG, penalty DDPG and the centre policy, built
or trained through :func:`baselines.api.get_method`) on one instance of ``env_id``:

* ``worst_case_risk``: the largest, over the evaluation days, of SPEC §5's worst-case risk
  (:func:`tsg_envs.risk.worst_case_risk`, every category probed at every visited state, proposed
  allocations), against ``bound`` = Σ_θ ψ_θ; ``max_level_excess`` = max over days and θ of
  P_θ max (1 - z) L - ψ_θ; ``within_bound``: no level above ψ_θ + 1e-6 (``FEASIBILITY_TOL``)
  on any day. The LP and α-projected defenders must be within; a penalty defender's leak shows
  as a positive excess.
* ``best_response_gain``: the exact best response's expected gain Σ_θ P_θ gain_θ in the duel
  (reachable states), averaged over the days; ``random_*`` and ``dqn_*``: the random attacker's
  and the learned DQN timing attacker's (trained against that defender with ``--dqn-steps``
  transitions), as values and as fractions of the best response on the same days (every θ
  played on every day, expected queue mode).

The penalty defender runs in ``invalid_action="penalize"`` (the env executes its proposals, so
its leak is real in the duel); the others in the default ``"project"`` mode. Learned defenders
are trained for ``--ddpg-gradient-steps`` gradient steps (the paper's budget, 10,000, by default;
the table checks risk, not delay). Writes ``--out`` (CSV) and prints a Markdown version.

    python -m experiments.duel_table [--defenders lp,alpha-ddpg,penalty-ddpg,centre]
        [--days 3] [--ddpg-gradient-steps 10000] [--dqn-steps 100000] [--out results/duel_table.csv]
"""

from __future__ import annotations

import argparse
import csv
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import tsg_envs
from baselines.api import RunConfig, get_method
from baselines.attackers import BestResponseAttacker, RandomAttacker, attacker_gain
from baselines.dqn_attacker import DQNAttackerConfig, train_dqn_attacker
from tsg_envs.polytope import FEASIBILITY_TOL
from tsg_envs.provenance import git_commit
from tsg_envs.risk import worst_case_risk
from tsg_envs.seeds import DUEL_SEED_BASE

__all__ = ["DuelTableConfig", "FIELDS", "main", "run_table"]

#: Evaluation days (reset seeds) start here, away from any training day.
DAY_SEED_BASE = DUEL_SEED_BASE

FIELDS = (
    "defender",
    "training",
    "invalid_action",
    "env_id",
    "instance_seed",
    "risk_slack",
    "days",
    "bound",
    "worst_case_risk",
    "max_level_excess",
    "within_bound",
    "tolerance",
    "best_response_gain",
    "random_gain",
    "random_fraction",
    "dqn_gain",
    "dqn_fraction",
    "dqn_steps",
    "dqn_train_s",
    "commit",
)


@dataclass(kw_only=True)
class DuelTableConfig:
    """What the table covers.

    Attributes:
        env_id: Gymnasium id of the instance family.
        instance_seed: Which instance.
        env_kwargs: Extra ``gym.make``/duel kwargs (e.g. a ``config`` for tiny smoke runs).
        defenders: Method names (:data:`baselines.api.METHOD_MODULES`).
        days: Evaluation days (probed and played).
        ddpg_gradient_steps: Training budget of the learned defenders, in gradient steps.
        dqn_steps: Training transitions of each DQN attacker.
        dqn_attackers_per_day: Attackers per simulated training day of the DQN.
        seed: Seeds the defenders' and attackers' training.
        out: CSV path.
        runs_dir: Where defender checkpoints go (a rerun resumes from them).
    """

    env_id: str = "tsg/Screening-v1"
    instance_seed: int = 0
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    defenders: tuple[str, ...] = ("lp", "alpha-ddpg", "penalty-ddpg", "centre")
    days: int = 3
    ddpg_gradient_steps: int = 10_000
    dqn_steps: int = 100_000
    dqn_attackers_per_day: int = 512
    seed: int = 0
    out: Path = Path("results/duel_table.csv")
    runs_dir: Path = Path("runs/duel_table")


def _defender_row(cfg: DuelTableConfig, name: str, commit: str) -> dict[str, Any]:
    mode = "penalize" if name == "penalty-ddpg" else "project"
    kwargs = {**cfg.env_kwargs, "invalid_action": mode}
    method = get_method(name)
    run = RunConfig(
        algo=name,
        env_id=cfg.env_id,
        gradient_steps=cfg.ddpg_gradient_steps,
        seed=cfg.seed,
        out=cfg.runs_dir / name,
        instance_seed=cfg.instance_seed,
        env_kwargs=dict(cfg.env_kwargs),
        progress=False,
    )
    defender = method.train(run)
    env = gym.make(cfg.env_id, instance_seed=cfg.instance_seed, **kwargs)
    days = [DAY_SEED_BASE + i for i in range(cfg.days)]
    reports = [worst_case_risk(env, defender, seed=d) for d in days]
    psi = np.asarray(env.unwrapped.risk_bound)
    duel_kwargs = {
        **tsg_envs.PRESETS[cfg.env_id].kwargs,
        "instance_seed": cfg.instance_seed,
        **kwargs,
        "queue_mode": "expected",
    }
    best = BestResponseAttacker(defender, **duel_kwargs)
    rand = attacker_gain(
        RandomAttacker(env.unwrapped.game, seed=cfg.seed), defender, days, best=best,
        **duel_kwargs,
    )
    t0 = time.perf_counter()
    dqn = train_dqn_attacker(
        defender,
        DQNAttackerConfig(
            steps=cfg.dqn_steps,
            seed=cfg.seed,
            attackers_per_day=cfg.dqn_attackers_per_day,
            warmup_steps=min(5_000, cfg.dqn_steps // 5),
            eps_decay_steps=max(1, cfg.dqn_steps // 2),
        ),
        **duel_kwargs,
    )
    dqn_s = time.perf_counter() - t0
    learned = attacker_gain(dqn, defender, days, best=best, **duel_kwargs)
    return {
        "defender": name,
        "training": (f"{cfg.ddpg_gradient_steps} gradient steps" if method.learned
                     else "none (solved/fixed)"),
        "invalid_action": mode,
        "env_id": cfg.env_id,
        "instance_seed": cfg.instance_seed,
        "risk_slack": env.unwrapped.risk_slack,
        "days": len(days),
        "bound": float(psi.sum()),
        "worst_case_risk": max(r.risk for r in reports),
        "max_level_excess": max(r.excess for r in reports),
        "within_bound": all(r.within_bound for r in reports),
        "tolerance": FEASIBILITY_TOL,
        "best_response_gain": learned.best_response_gain,
        "random_gain": rand.gain,
        "random_fraction": rand.fraction,
        "dqn_gain": learned.gain,
        "dqn_fraction": learned.fraction,
        "dqn_steps": cfg.dqn_steps,
        "dqn_train_s": round(dqn_s, 1),
        "commit": commit,
    }


def run_table(cfg: DuelTableConfig) -> list[dict[str, Any]]:
    """Compute every defender's row, write ``cfg.out`` and return the rows."""
    commit = git_commit(7, ("baselines", "tsg_envs")) or "unknown"
    rows = []
    cfg.out.parent.mkdir(parents=True, exist_ok=True)
    with cfg.out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        for name in cfg.defenders:
            row = _defender_row(cfg, name, commit)
            writer.writerow(row)
            f.flush()
            rows.append(row)
    return rows


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as the README's Markdown table."""
    head = (
        "| defender | worst-case risk | bound Σψ | max level excess | within (1e-6) | "
        "best response gain | random attacker | DQN attacker |\n"
        "|---|---|---|---|---|---|---|---|\n"
    )
    lines = [
        f"| {r['defender']} | {r['worst_case_risk']:.4f} | {r['bound']:.4f} | "
        f"{r['max_level_excess']:+.2e} | {'yes' if r['within_bound'] else '**no**'} | "
        f"{r['best_response_gain']:.4f} | {r['random_gain']:.4f} "
        f"({100 * r['random_fraction']:.0f}%) | {r['dqn_gain']:.4f} "
        f"({100 * r['dqn_fraction']:.0f}%) |"
        for r in rows
    ]
    return head + "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    d = DuelTableConfig()
    p.add_argument("--env-id", default=d.env_id)
    p.add_argument("--instance-seed", type=int, default=d.instance_seed)
    p.add_argument("--defenders", default=",".join(d.defenders))
    p.add_argument("--days", type=int, default=d.days)
    p.add_argument("--ddpg-gradient-steps", type=int, default=d.ddpg_gradient_steps)
    p.add_argument("--dqn-steps", type=int, default=d.dqn_steps)
    p.add_argument("--dqn-attackers-per-day", type=int, default=d.dqn_attackers_per_day)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--out", type=Path, default=d.out)
    p.add_argument("--runs-dir", type=Path, default=d.runs_dir)
    p.add_argument(
        "--small", action="store_true",
        help="only 2 flights of the instance family (smoke tests)",
    )
    args = p.parse_args(argv)
    env_kwargs: dict[str, Any] = {"n_flights": 2} if args.small else {}
    cfg = DuelTableConfig(
        env_id=args.env_id,
        instance_seed=args.instance_seed,
        env_kwargs=env_kwargs,
        defenders=tuple(x for x in args.defenders.split(",") if x),
        days=args.days,
        ddpg_gradient_steps=args.ddpg_gradient_steps,
        dqn_steps=args.dqn_steps,
        dqn_attackers_per_day=args.dqn_attackers_per_day,
        seed=args.seed,
        out=args.out,
        runs_dir=args.runs_dir,
    )
    rows = run_table(cfg)
    print(markdown(rows), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
