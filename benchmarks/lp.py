"""The LP side of the environment benchmarks: construction at the input bounds, LP agreement.

Run through ``python -m benchmarks.envs`` (``--bounds JSON``, ``--lp-agreement JSON``,
``--lp-stages JSON``):

* :func:`construction_costs`: construction time and peak memory of ``ScreeningEnv`` at each
  corner of the documented input bounds (:mod:`tsg_envs.validation`), each in a fresh process;
* :func:`lp_agreement`: how far the static window LP's policy moves with HiGHS's solver path and
  with a reordering of the game's entities (it should not: the LP is unique);
* :func:`lp_stages` (``--lp-stages JSON``): CPU seconds per stage of constructing the largest
  registered day, on the reference path and the fast one, and how far their answers are apart.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import tsg_envs
from tsg_envs.game import GameConfig
from tsg_envs.instances import make_game
from tsg_envs.lp import SolverPath, WindowLPSolution, solve_window_lp

#: The repository's root (the benchmarks are not installed: their own processes start there).
ROOT = Path(__file__).resolve().parent.parent


#: The corners of the documented input bounds (:mod:`tsg_envs.validation`), each the most
#: expensive construction its bounds admit: name -> (what it pushes, ``ScreeningEnv`` kwargs).
#: ``"csv:<long day>"`` is replaced by a generated schedule of 250 departures over 48 hours.
BOUND_CORNERS: dict[str, tuple[str, dict]] = {
    "flights": (
        "500 flights (MAX_FLIGHTS; 2,500 categories x 10 teams = MAX_ALLOCATIONS), day horizon",
        {"config": GameConfig(horizon="day", n_flights=500)},
    ),
    "passengers": (
        "100 flights of 1,000 passengers (MAX_PASSENGERS), day horizon",
        {"config": GameConfig(horizon="day", n_flights=100, flight_size_range=(1000, 1000))},
    ),
    "day-window": (
        "a 3,563-minute day (departures over 48 h, arrival lead 720 min) cut into 15-minute LP "
        "windows: 238 windows x 1,250 categories x 10 teams, near MAX_LP_SIZE",
        {
            "config": GameConfig(
                horizon="day", n_flights=None, schedule="csv:<long day>",
                arrival_mean=120.0, arrival_std=200.0,
            ),
            "lp_window_minutes": 15.0,
        },
    ),
    "teams-methods": (
        "10 resources (45 teams), 10 methods, 10 risk levels, 55 flights (24,750 allocations)",
        {"config": GameConfig(horizon="day", n_flights=55, n_resources=10, n_methods=10,
                              n_risk_levels=10)},
    ),
}


@dataclass(frozen=True)
class ConstructionCost:
    """Construction of one bound corner, measured in a fresh process.

    Attributes:
        corner: Key of :data:`BOUND_CORNERS`.
        description: What it pushes to its bound.
        wall_seconds: Wall time of ``ScreeningEnv(**kwargs)`` (LP, polytopes included).
        cpu_seconds: CPU time of the same.
        peak_mib: Peak resident memory of the whole process (imports included), MiB.
        n_passengers: Passengers of the day.
        n_categories: Categories.
        n_teams: Teams.
        n_windows: LP windows.
    """

    corner: str
    description: str
    wall_seconds: float
    cpu_seconds: float
    peak_mib: float
    n_passengers: int
    n_categories: int
    n_teams: int
    n_windows: int


def construct_corner(name: str) -> dict:
    """Build one corner's env in this process and return its costs (the child's job)."""
    import resource
    import tempfile

    description, kwargs = BOUND_CORNERS[name]
    kwargs = dict(kwargs)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = kwargs["config"]
        if cfg.schedule == "csv:<long day>":
            path = Path(tmp) / "long_day.csv"
            times = np.sort(np.random.default_rng(0).uniform(0.0, 2879.0, 250))
            path.write_text("minutes\n" + "\n".join(f"{x:.1f}" for x in times) + "\n")
            kwargs["config"] = cfg.replace(schedule=f"csv:{path}")
        c0, t0 = time.process_time(), time.perf_counter()
        env = tsg_envs.ScreeningEnv(**kwargs)
        c1, t1 = time.process_time(), time.perf_counter()
    g = env.game
    return dataclasses.asdict(
        ConstructionCost(
            corner=name,
            description=description,
            wall_seconds=t1 - t0,
            cpu_seconds=c1 - c0,
            peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
            n_passengers=g.n_passengers,
            n_categories=g.n_categories,
            n_teams=g.n_teams,
            n_windows=env.lp_solution.n_windows,
        )
    )


def construction_costs(corners: tuple[str, ...] = tuple(BOUND_CORNERS)) -> list[ConstructionCost]:
    """Construction time and peak memory at each bound corner, each in a fresh process."""
    import json

    rows = []
    for name in corners:
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.envs", "--construct", name],
            check=True, capture_output=True, text=True, cwd=ROOT,
        ).stdout
        rows.append(ConstructionCost(**json.loads(out.strip().splitlines()[-1])))
    return rows


def format_bounds(rows: list[ConstructionCost]) -> str:
    """Markdown table of :func:`construction_costs`."""
    lines = [
        "| corner | passengers | categories x teams | LP windows | construction, s "
        "(CPU) | peak memory, MiB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.description} | {r.n_passengers:,} | {r.n_categories:,} x {r.n_teams} "
            f"| {r.n_windows} | {r.wall_seconds:.1f} ({r.cpu_seconds:.1f}) | {r.peak_mib:.0f} |"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class LPAgreement:
    """How far one instance's LP policy moves with the solver path and with a reordering.

    Attributes:
        family: The game family (``"window-10F"``, ``"shift-10F"``, ...).
        instance_seed: The instance.
        path_policy: Largest |π - π_default| over the HiGHS paths (simplex, interior point,
            each with presolve on and off).
        path_psi: Largest |ψ - ψ_default| over those paths.
        perm_policy: Largest |π(permuted game) - permuted π| for one random reordering of
            resources, teams, flights, levels and methods at once.
        perm_psi: The same for ψ.
    """

    family: str
    instance_seed: int
    path_policy: float
    path_psi: float
    perm_policy: float
    perm_psi: float


#: Game families of :func:`lp_agreement`: label -> (config, LP window minutes).
LP_FAMILIES: dict[str, tuple[GameConfig, float | None]] = {
    "window-10F": (GameConfig(horizon="window", n_flights=10), None),
    "window-20F": (GameConfig(horizon="window", n_flights=20), None),
    "shift-10F": (GameConfig(), 60.0),
    "day-20F": (GameConfig(horizon="day", n_flights=20), 60.0),
}


def lp_agreement(seeds: range | tuple[int, ...] = range(20)) -> list[LPAgreement]:
    """:class:`LPAgreement` for every family of :data:`LP_FAMILIES` and seed."""
    from tsg_envs.lp import SolverPath

    rows = []
    for label, (config, minutes) in LP_FAMILIES.items():
        for seed in seeds:
            game = make_game(config, seed)
            ref = solve_window_lp(game, minutes)
            dp = dpsi = 0.0
            for solver in ("simplex", "ipm"):
                for presolve in (True, False):
                    sol = solve_window_lp(game, minutes, path=SolverPath(solver, presolve))
                    dp = max(dp, float(np.abs(sol.policy - ref.policy).max()))
                    dpsi = max(dpsi, float(np.abs(sol.psi - ref.psi).max()))
            rng = np.random.default_rng(seed)
            tp, rp, fp = (rng.permutation(n)
                          for n in (game.n_teams, game.n_resources, game.n_flights))
            lv, mp = rng.permutation(game.n_risk_levels), rng.permutation(game.n_methods)
            perm = game.reordered(resources=rp, teams=tp, methods=mp, levels=lv, flights=fp)
            psol = solve_window_lp(perm, minutes)
            old = (lv[:, None] * game.n_flights + fp[None, :]).reshape(-1)
            rows.append(LPAgreement(
                family=label, instance_seed=int(seed), path_policy=dp, path_psi=dpsi,
                perm_policy=float(np.abs(psol.policy - ref.policy[:, old][:, :, tp]).max()),
                perm_psi=float(np.abs(psol.psi - ref.psi[lv]).max()),
            ))
    return rows


def format_lp_agreement(rows: list[LPAgreement]) -> str:
    """Markdown table per family: the worst and the median disagreement."""
    lines = ["| games | instances | policy vs solver path, max / median | policy vs reordering, "
             "max / median | ψ, max | instances within 1e-7 |", "|---|---:|---:|---:|---:|---:|"]
    for label in dict.fromkeys(r.family for r in rows):
        rs = [r for r in rows if r.family == label]
        path = np.array([r.path_policy for r in rs])
        perm = np.array([r.perm_policy for r in rs])
        psi = max(max(r.path_psi, r.perm_psi) for r in rs)
        within = int(sum(max(r.path_policy, r.perm_policy) <= 1e-7 for r in rs))
        lines.append(f"| {label} | {len(rs)} | {path.max():.1e} / {np.median(path):.1e} "
                     f"| {perm.max():.1e} / {np.median(perm):.1e} | {psi:.1e} "
                     f"| {within} of {len(rs)} |")
    return "\n".join(lines)


#: The stages of :func:`lp_stages`, in the order of its table: key -> label.
LP_STAGES: dict[str, str] = {
    "stage1": "stage 1: main LP (HiGHS)",
    "stage2": "stage 2: delay-aware LP (HiGHS)",
    "stage3": "stage 3: unique-policy QP (Clarabel)",
    "lp_other": "LP set-up (matrices, stretch, min-risk allocations)",
    "centres": "polytope centres",
    "other": "the rest of the construction",
    "total": "construction",
}


@dataclass(frozen=True)
class LPStages:
    """CPU seconds of one env construction, per stage, on one path.

    Attributes:
        path: ``"reference"`` (``SolverPath(reference=True)`` and one centre LP + QP per
            category: the code before the fast path), ``"fast"`` (the default) or ``"lean"``
            (the default with ``SolverPath(lean_qp=True)``: the last stage's first Clarabel run
            without iterative refinement; opt-in, as it moves the policy in its last digits).
        seconds: Stage key of :data:`LP_STAGES` -> process CPU seconds.
        policy_diff: Largest |π - π_reference| of the LP's policy (0 on the reference row).
        psi_diff: Largest |ψ - ψ_reference|.
        centre_diff: Largest difference of the polytope centres from the reference's.
    """

    path: str
    seconds: dict[str, float]
    policy_diff: float
    psi_diff: float
    centre_diff: float


def lp_stages(env_id: str = "tsg/Screening-Day-300F-v1") -> list[LPStages]:
    """CPU seconds per stage of constructing ``env_id``: the reference, fast and lean paths.

    All run in this process, one after the other, on a fresh copy of the game (no cache). The
    stages are timed by wrapping the functions that run them (process CPU time, so other load on
    the machine counts only through caches and memory bandwidth).
    """
    import gymnasium as gym

    base = gym.make(env_id).unwrapped
    assert isinstance(base, tsg_envs.ScreeningEnv)
    kwargs = {"game": dataclasses.replace(base.game, key=None),
              "lp_window_minutes": base.lp_window_minutes}
    rows: list[LPStages] = []
    ref: tuple[WindowLPSolution, np.ndarray] | None = None
    for label, path, batched in (("reference", SolverPath(reference=True), False),
                                 ("fast", SolverPath(), True),
                                 ("lean", SolverPath(lean_qp=True), True)):
        seconds, sol, env = _timed_construction(kwargs, path, batched)
        if ref is None:
            ref = (sol, env.polytopes.centers)
        rows.append(LPStages(
            path=label, seconds=seconds,
            policy_diff=float(np.abs(sol.policy - ref[0].policy).max()),
            psi_diff=float(np.abs(sol.psi - ref[0].psi).max()),
            centre_diff=float(np.abs(env.polytopes.centers - ref[1]).max()),
        ))
    return rows


def _timed_construction(
    kwargs: dict[str, Any], path: SolverPath, batched: bool
) -> tuple[dict[str, float], WindowLPSolution, tsg_envs.ScreeningEnv]:
    """Construct ``ScreeningEnv(**kwargs)`` on one path, timing each stage (see lp_stages).

    The functions that run the stages are wrapped for the construction and put back after.
    """
    import tsg_envs.env as env_mod
    from tsg_envs import lp as lp_mod
    from tsg_envs import qp

    seconds = dict.fromkeys(LP_STAGES, 0.0)
    seconds["lp_all"] = 0.0
    solved: list[WindowLPSolution] = []
    env_ns = vars(env_mod)
    saved = (lp_mod.run_stage, qp.solve_qp, env_ns["build_polytopes"],
             env_ns["solve_window_lp"])

    def timed(key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*a: Any, **k: Any) -> Any:
            c0 = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                seconds[key] += time.process_time() - c0
        return call

    def run_stage(h: Any, solver: str, what: str, model: Any = None) -> Any:
        return timed("stage2" if "delay" in what else "stage1", saved[0])(h, solver, what, model)

    def solve_qp(*a: Any, **k: Any) -> Any:
        # Only the last stage's QP is a stage of its own (the others count where they run).
        if k.get("what") == "window LP unique-policy QP":
            return timed("stage3", saved[1])(*a, **k)
        return saved[1](*a, **k)

    def build(game: Any, psi: np.ndarray) -> Any:
        return timed("centres", saved[2])(game, psi, batched=batched)

    def solve_lp(game: Any, minutes: float | None = 60.0, *, path: Any = None) -> Any:
        # The path timed is this construction's, whatever the caller asks for.
        solved.append(timed("lp_all", saved[3])(game, minutes, path=path_))
        return solved[-1]

    path_ = path
    try:
        lp_mod.run_stage = run_stage
        qp.solve_qp = solve_qp
        env_ns["build_polytopes"] = build
        env_ns["solve_window_lp"] = solve_lp
        c0 = time.process_time()
        env = tsg_envs.ScreeningEnv(**kwargs)
        seconds["total"] = time.process_time() - c0
    finally:
        lp_mod.run_stage, qp.solve_qp = saved[0], saved[1]
        env_ns["build_polytopes"], env_ns["solve_window_lp"] = saved[2], saved[3]
    lp_all = seconds.pop("lp_all")
    seconds["lp_other"] += lp_all - seconds["stage1"] - seconds["stage2"] - seconds["stage3"]
    seconds["other"] = seconds["total"] - lp_all - seconds["centres"]
    return seconds, solved[-1], env


def format_lp_stages(rows: list[LPStages]) -> str:
    """Markdown table of :func:`lp_stages`: CPU seconds per stage, before and after."""
    ref, fast, lean = (next(r for r in rows if r.path == p)
                       for p in ("reference", "fast", "lean"))
    lines = ["| stage | reference path (before), CPU s | fast path (default), CPU s | speed-up "
             "| lean QP (opt-in), CPU s |", "|---|---:|---:|---:|---:|"]
    for key, label in LP_STAGES.items():
        a, b = ref.seconds[key], fast.seconds[key]
        bold = "**" if key == "total" else ""
        lines.append(f"| {bold}{label}{bold} | {a:.2f} | {bold}{b:.2f}{bold} "
                     f"| {a / b if b > 0 else float('inf'):.1f}x | {lean.seconds[key]:.2f} |")
    lines.append("")
    lines.append(f"The fast path's LP agrees with the reference path's: policy to "
                 f"{fast.policy_diff:.1e}, ψ to {fast.psi_diff:.1e}; polytope centres to "
                 f"{fast.centre_diff:.1e}.")
    lines.append(f"The lean QP's: policy to {lean.policy_diff:.1e}, ψ to {lean.psi_diff:.1e}.")
    return "\n".join(lines)
