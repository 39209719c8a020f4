"""The risk–delay frontier of the paper's Theorem 1, and the ψ a trade-off weight selects.

Shah et al. (AAAI 2020, "Game-theoretic view") show that for any weight w of the unrestricted
objective Σ_θ P_θ U_θ + w·V_o (U_θ ≤ 0 the defender's detection utility against a best
responding attacker of level θ, V_o ≤ 0 minus the mean wait per passenger) some risk bound ψ
makes the ψ-restricted optimum a Strong Stackelberg equilibrium, and suggest building the
Pareto frontier over many ψ a priori, then picking, for a given w, the point maximising that
objective. :func:`sweep` builds the points for one policy that is re-solved or retrained per ψ:
ψ = s·ψ^LP for each scale s (the ratio of the ψ_θ kept, as in the paper's figure 2), each
point measured by the worst-case risk R = Σ_θ P_θ |U_θ| (:func:`tsg_envs.risk.worst_case_risk`,
so Σ_θ P_θ U_θ = -R) and the mean wait W over evaluation days (V_o = -W).
:func:`pareto_front` keeps the points no other point beats in both R and W, and :func:`select`
returns the frontier point maximising -R - w·W (ties: the lower risk).

``python -m leaderboard frontier --agent NAME --scales ... --weight W ...`` runs it, writes
``frontier.csv`` (every point, ``on_front``), ``selection.csv`` (the chosen ψ per weight) and
``frontier.png``.
"""

from __future__ import annotations

import csv
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import tsg_envs  # noqa: F401  (registers the ids)

__all__ = ["FrontierPoint", "pareto_front", "select", "sweep", "write_frontier"]


@dataclass(frozen=True)
class FrontierPoint:
    """One policy at one risk bound.

    Attributes:
        scale: s, with ψ = s·ψ^LP.
        psi: ψ, (Θ,).
        risk: R, the probed worst-case risk Σ_θ P_θ |U_θ| (the objective's -Σ_θ P_θ U_θ).
        bound: Σ_θ ψ_θ.
        mean_wait: W, minutes per passenger over the evaluation days (the objective's -V_o).
        days: Evaluation days.
        agent: The policy's name.
    """

    scale: float
    psi: tuple[float, ...]
    risk: float
    bound: float
    mean_wait: float
    days: int
    agent: str

    def objective(self, weight: float) -> float:
        """Σ_θ P_θ U_θ + w·V_o = -R - w·W."""
        return -self.risk - float(weight) * self.mean_wait


def pareto_front(points: list[FrontierPoint]) -> list[FrontierPoint]:
    """The points that no other point beats in both risk and wait, by increasing risk."""
    front = []
    for p in points:
        dominated = any(
            q.risk <= p.risk and q.mean_wait <= p.mean_wait
            and (q.risk < p.risk or q.mean_wait < p.mean_wait)
            for q in points
        )
        if not dominated:
            front.append(p)
    return sorted(front, key=lambda p: (p.risk, p.mean_wait))


def select(points: list[FrontierPoint], weight: float) -> FrontierPoint:
    """The frontier point maximising -R - w·W (ties go to the lower risk).

    Raises:
        ValueError: for no points or a negative weight.
    """
    if not points:
        raise ValueError("no frontier points to select from")
    if not weight >= 0:
        raise ValueError(f"the weight w must be >= 0, got {weight}")
    front = pareto_front(points)
    return max(front, key=lambda p: (p.objective(weight), -p.risk))


def _agent(name: str, env: gym.Env, run_dir: Path, gradient_steps: int, seed: int) -> Any:
    if name in ("alpha-ddpg", "alpha-td3", "radial-ddpg", "sac", "ppo"):
        from baselines.api import RunConfig, get_method

        u = env.unwrapped
        run = RunConfig(algo=name, env_id=env.spec.id, gradient_steps=gradient_steps, seed=seed,
                        out=run_dir, instance_seed=int(u.instance_seed),
                        env_kwargs={"risk_bound": np.asarray(u.risk_bound)}, progress=False)
        return get_method(name).train(run)
    from baselines.api import build_agent

    return build_agent(name, env)


def sweep(agent: str, env_id: str, instance_seed: int, scales: list[float], days: int = 5,
          gradient_steps: int = 10_000, seed: int = 0, risk_max_states: int | None = 100,
          run_root: Path = Path("runs/frontier"), progress: bool = True) -> list[FrontierPoint]:
    """One point per scale: the policy re-solved (or retrained) at ψ = s·ψ^LP, then measured.

    Args:
        agent: ``lp`` (its allocation does not depend on ψ: one point per scale, the same
            policy), a non-learning baseline (``slack-lp``, ``slack-guided``, ``myopic``, ...) or
            a learned one (``alpha-ddpg``, ...) trained per point for ``gradient_steps``
            mini-batches under ``run_root`` (resumable).
        env_id: Registered id.
        instance_seed: The instance.
        scales: The values s (> 1 keeps an interior in every polytope).
        days: Evaluation days (seeds from the leaderboard's evaluation range).
        gradient_steps: Training budget of a learned agent.
        seed: Its training seed.
        risk_max_states: States of the worst-case-risk probe (None: the whole day).
        run_root: Where learned agents train.
        progress: Show a progress bar.
    """
    from tqdm.auto import tqdm

    from tsg_envs.harness import Unit
    from tsg_envs.harness import evaluate as harness_evaluate
    from tsg_envs.risk import worst_case_risk
    from tsg_envs.seeds import LEADERBOARD_SEED_BASE

    base = gym.make(env_id, instance_seed=instance_seed)
    psi_lp = np.asarray(base.unwrapped.lp_solution.psi, dtype=float)
    seeds = [LEADERBOARD_SEED_BASE + d for d in range(days)]
    points = []
    for s in tqdm(scales, desc=f"frontier of {agent}", disable=not progress):
        psi = psi_lp * float(s)
        env = gym.make(env_id, instance_seed=instance_seed, risk_bound=psi)
        slug = f"{env_id.replace('/', '_')}_i{instance_seed}_s{s:g}"
        policy = _agent(agent, env, Path(run_root) / agent / slug, gradient_steps, seed)
        unit = Unit.of(env_id, instance_seed, risk_bound=psi)
        records = harness_evaluate({agent: lambda e, p=policy: p}, [unit], seeds)
        report = worst_case_risk(env, policy, seed=seeds[0], max_states=risk_max_states)
        points.append(FrontierPoint(
            scale=float(s), psi=tuple(float(x) for x in psi), risk=float(report.risk),
            bound=float(report.bound), mean_wait=float(np.mean([r.mean_wait for r in records])),
            days=days, agent=agent,
        ))
    return points


def write_frontier(points: list[FrontierPoint], weights: list[float], out: Path,
                   title: str = "") -> list[Path]:
    """``frontier.csv``, ``selection.csv`` and ``frontier.png`` under ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    front = pareto_front(points)
    rows = [{**{k: v for k, v in asdict(p).items() if k != "psi"},
             "psi": " ".join(f"{x:.6g}" for x in p.psi), "on_front": p in front}
            for p in points]
    with (out / "frontier.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    chosen = [(wt, select(points, wt)) for wt in weights]
    with (out / "selection.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["weight", "scale", "risk", "mean_wait", "objective", "psi"])
        for wt, p in chosen:
            w.writerow([wt, p.scale, p.risk, p.mean_wait, p.objective(wt),
                        " ".join(f"{x:.6g}" for x in p.psi)])
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    ax.scatter([p.risk for p in points], [p.mean_wait for p in points], color="grey",
               label="policy at ψ = s·ψ^LP")
    ax.plot([p.risk for p in front], [p.mean_wait for p in front], color="tab:blue",
            marker="o", label="Pareto frontier")
    for p in points:
        ax.annotate(f"s={p.scale:g}", (p.risk, p.mean_wait), fontsize=7,
                    textcoords="offset points", xytext=(4, 4))
    by_point: dict[int, tuple[Any, list[float]]] = {}  # weights that select the same point
    for wt, p in chosen:
        by_point.setdefault(id(p), (p, []))[1].append(wt)
    for p, wts in by_point.values():
        ax.scatter([p.risk], [p.mean_wait], s=120, facecolors="none", edgecolors="tab:red")
        ax.annotate("w=" + ", ".join(f"{wt:g}" for wt in wts), (p.risk, p.mean_wait),
                    fontsize=7, color="tab:red", textcoords="offset points", xytext=(-10, -14))
    ax.set_xlabel("worst-case risk Σθ Pθ |Uθ| (= -Σθ Pθ Uθ)")
    ax.set_ylabel("mean wait per passenger, minutes (= -V_o)")
    ax.set_title(title or "Risk-delay frontier (the paper's Theorem 1)", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "frontier.png", dpi=110)
    plt.close(fig)
    return [out / "frontier.csv", out / "selection.csv", out / "frontier.png"]


def main_frontier(agent: str, env_id: str, instance_seed: int, scales: list[float],
                  weights: list[float], out: Path, days: int, gradient_steps: int,
                  progress: bool = True) -> list[Path]:
    """The CLI's work: sweep, then write the files and print the selections."""
    t = time.perf_counter()
    points = sweep(agent, env_id, instance_seed, scales, days=days,
                   gradient_steps=gradient_steps, progress=progress)
    paths = write_frontier(points, weights, out,
                           title=f"{agent} on {env_id} instance {instance_seed}: risk-delay "
                           "frontier")
    for wt in weights:
        p = select(points, wt)
        print(f"w = {wt:g}: ψ = {p.scale:g}·ψ^LP (risk {p.risk:.4f}, mean wait "
              f"{p.mean_wait:.2f} min, objective {p.objective(wt):.4f})")
    print(f"{len(points)} points in {time.perf_counter() - t:.0f} s -> {out}")
    return paths
