"""``python -m benchmarks.envs``: environment speed against CartPole-v1, and LP solve times.

Two measurements, printed as Markdown tables with the machine they ran on:

1. **Environment steps per second** of an id through ``gym.make`` against ``CartPole-v1`` made
   the same way (so both carry Gymnasium's default wrappers), in the same process, once per
   implementation of the step (``TSG_ENVS_KERNEL``: the plain numpy path, and the compiled numba
   kernel when numba is installed; see :mod:`tsg_envs.kernel`). Both are driven by the same
   kind of cheap precomputed action source: one array lookup per step (the screening env looks
   up a feasible allocation of the waiting category, drawn once per category from its polytope;
   CartPole looks up the next of a precomputed run of random actions). Episode resets count as
   part of stepping for both. Time is the process's CPU time (robust to other jobs on a shared
   machine). Each screening env alternates with CartPole in short blocks of equal step counts,
   so a change in the machine's state hits both alike; the ratio of each block pair is taken and
   the median over pairs reported (target >= 1.0, aim 2). The first step of a fresh process is
   timed apart (CPU seconds, in a child process): for numba it imports numba and loads the
   compiled kernel from numba's cache, or compiles it when there is no cache (a fresh
   ``NUMBA_CACHE_DIR``).
2. **Window LP solve time** of :func:`tsg_envs.solve_window_lp` (60-minute windows) on
   ``GameConfig(horizon="day", n_flights=n)`` for several n (target <= 5 s at 300 flights), with
   the time to build the per-category polytopes (:func:`tsg_envs.build_polytopes`) at the LP's
   ψ × 1.01. The LP cache is bypassed so every solve is a real one. CPU time is reported (and
   wall time in parentheses): on a shared machine the wall time includes other jobs' turns.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np

import tsg_envs
from benchmarks.lp import (
    BOUND_CORNERS,
    ConstructionCost,
    LPAgreement,
    LPStages,
    construct_corner,
    construction_costs,
    format_bounds,
    format_lp_agreement,
    format_lp_stages,
    lp_agreement,
    lp_stages,
)
from benchmarks.speed import (
    DEFAULT_CONFIG,
    QUICK,
    BenchConfig,
    SpeedResult,
    compare_env_speed,
    first_step_seconds,
    speed_kernels,
)
from tsg_envs import family
from tsg_envs.env import DEFAULT_RISK_SLACK
from tsg_envs.game import GameConfig
from tsg_envs.instances import make_game
from tsg_envs.lp import solve_window_lp
from tsg_envs.polytope import build_polytopes
from tsg_envs.provenance import cpu_model, git_commit
from tsg_envs.validation import cli_int

#: The repository's root (the benchmarks are not installed: their own processes start there).
ROOT = Path(__file__).resolve().parent.parent

__all__ = [
    "BOUND_CORNERS",
    "ConstructionCost",
    "construction_costs",
    "format_bounds",
    "HarnessSpeed",
    "harness_speeds",
    "format_harness",
    "VectorSpeed",
    "AgentCost",
    "agent_costs",
    "format_agents",
    "vector_speeds",
    "format_vector",
    "BenchConfig",
    "SpeedResult",
    "LPTiming",
    "machine_info",
    "compare_env_speed",
    "first_step_seconds",
    "speed_kernels",
    "lp_timings",
    "main",
]


@dataclass(frozen=True)
class LPTiming:
    """One LP timing row.

    Attributes:
        n_flights: Flights of the day.
        n_passengers: Passengers of the day.
        n_categories: Categories |Θ|·|K|.
        n_windows: 60-minute LP windows.
        max_stretch: Largest overload stretch λ_w of the day.
        lp_seconds: CPU time of ``solve_window_lp`` (this process, all threads).
        polytope_seconds: CPU time of ``build_polytopes`` at ψ^LP × (1 + default slack).
        lp_wall_seconds: Wall time of ``solve_window_lp``.
        polytope_wall_seconds: Wall time of ``build_polytopes``.
    """

    n_flights: int
    n_passengers: int
    n_categories: int
    n_windows: int
    max_stretch: float
    lp_seconds: float
    polytope_seconds: float
    lp_wall_seconds: float
    polytope_wall_seconds: float


def machine_info() -> dict[str, str]:
    """CPU model, core count, OS, Python / numpy / gymnasium / tsg-envs versions, git commit."""
    import highspy  # noqa: F401  (only to report that it imports; HiGHS has no __version__)
    import scipy

    return {
        "cpu": cpu_model() or platform.machine() or "unknown",
        "cores": str(os.cpu_count()),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "gymnasium": gym.__version__,
        "tsg-envs": tsg_envs.__version__,
        "git commit": git_commit(dirty_paths=("tsg_envs",)) or "unknown",
    }


def lp_timings(config: BenchConfig = DEFAULT_CONFIG) -> list[LPTiming]:
    """Time the day's window LP and the polytope build for each of ``config.lp_flights``."""
    rows = []
    for n in config.lp_flights:
        game = make_game(GameConfig(horizon="day", n_flights=n), config.seed)
        fresh = dataclasses.replace(game, key=None)  # bypass the LP cache
        c0, t0 = time.process_time(), time.perf_counter()
        sol = solve_window_lp(fresh, 60.0)
        c1, t1 = time.process_time(), time.perf_counter()
        build_polytopes(game, sol.psi * (1.0 + DEFAULT_RISK_SLACK))
        c2, t2 = time.process_time(), time.perf_counter()
        rows.append(
            LPTiming(
                n_flights=n,
                n_passengers=game.n_passengers,
                n_categories=game.n_categories,
                n_windows=sol.n_windows,
                max_stretch=float(sol.stretch.max()),
                lp_seconds=c1 - c0,
                polytope_seconds=c2 - c1,
                lp_wall_seconds=t1 - t0,
                polytope_wall_seconds=t2 - t1,
            )
        )
    return rows


def format_report(
    info: dict[str, str], speed: list[SpeedResult] | SpeedResult | None, lps: list[LPTiming]
) -> str:
    """The Markdown report: machine, env speed table (one row per kernel), LP timing table."""
    lines = ["Machine: " + ", ".join(f"{k} {v}" for k, v in info.items()), ""]
    rows = [speed] if isinstance(speed, SpeedResult) else (speed or [])
    if rows:
        first = rows[0]
        lines += [
            f"| env (via gym.make) | step | steps/s (median) | ratio to `{first.reference_id}` "
            f"(median of {len(first.ratios)} block pairs; target >= 1.0) "
            "| first step, CPU s (compiling) |",
            "|---|---|---:|---:|---:|",
        ]
        for row in rows:
            if row.first_step_seconds is None:
                first_step = "-"
            else:
                x = row.first_step_seconds
                first_step = f"{x:.3f}" if x >= 0.001 else "< 0.001"
                if row.compile_seconds is not None:
                    first_step += f" ({row.compile_seconds:.2f})"
            lines.append(f"| `{row.env_id}` | {row.kernel} | {row.env_sps:,.0f} "
                         f"| **{row.ratio:.2f}** | {first_step} |")
        ref_sps = float(np.median([r.reference_sps for r in rows]))
        lines += [f"| `{first.reference_id}` | | {ref_sps:,.0f} | 1 | |", ""]
        lines += [f"pair ratios ({row.kernel}): " + " ".join(f"{r:.2f}" for r in row.ratios)
                  for row in rows]
        lines.append("")
    if lps:
        lines += [
            "| flights (day) | passengers | categories | LP windows | max stretch "
            "| LP solve, CPU s (wall) | polytopes, CPU s (wall) |",
            "|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for row in lps:
            lines.append(
                f"| {row.n_flights} | {row.n_passengers:,} | {row.n_categories:,} "
                f"| {row.n_windows} | {row.max_stretch:.3f} "
                f"| {row.lp_seconds:.2f} ({row.lp_wall_seconds:.2f}) "
                f"| {row.polytope_seconds:.2f} ({row.polytope_wall_seconds:.2f}) |"
            )
        lines.append("")
    return "\n".join(lines)


@dataclass(frozen=True)
class VectorSpeed:
    """Sub-environment steps per second of the native vector env against SyncVectorEnv.

    Attributes:
        n: Sub-environments N.
        infeasible: Share of proposals outside their polytope (projected by the env).
        native_sps: Native ``gym.make_vec`` (vector entry point), sub-env steps per CPU second.
        sync_sps: ``SyncVectorEnv`` over the single environment, the same.
        ratio: native / sync, over the whole timed span.
        resets: Sub-environment day resets inside the timed span (each side makes the same).
        kernel: The native env's implementation (``TSG_ENVS_KERNEL`` as it was made;
            ``SyncVectorEnv``'s single envs run the default); "" before it was kept.
    """

    n: int
    infeasible: float
    native_sps: float
    sync_sps: float
    ratio: float
    resets: int = 0
    kernel: str = ""


def vector_speeds(
    env_id: str = "tsg/Screening-v1",
    sizes: tuple[int, ...] = (1, 16, 256, 1024),
    infeasible: tuple[float, ...] = (0.0, 0.1),
    days: float = 2.0,
    blocks: int = 6,
    seed: int = 0,
    kernels: tuple[str, ...] = ("numpy", "numba"),
) -> list[VectorSpeed]:
    """Native vector env vs ``SyncVectorEnv`` in the same process, alternating blocks.

    One row per native implementation in ``kernels`` (``TSG_ENVS_KERNEL`` as the native env is
    made: ``numpy``, the default's step, and ``numba``, the compiled step that runs only when
    asked for; skipped without numba); ``SyncVectorEnv``'s single envs run the default (their
    kernel where numba is installed).

    Every step gets a fresh action array, gathered from precomputed proposals of each waiting
    category (feasible ones, and with probability ``infeasible`` a point of the simplex outside
    the polytope, which the env projects), so both sides pay the same for their actions. The
    timed span is ``days`` days of steps (a day is the instance's passengers plus the autoreset
    step), cut into ``blocks`` blocks that alternate between the two envs, so every day's end
    and reset (drawing the next day's arrivals) is inside it; CPU time; ratio of the totals.
    Both sides step once before (loading their compiled kernels, where numba is installed).
    """
    from tsg_envs.kernel import chosen, kernel_name

    if kernel_name("auto") != "numba":
        kernels = tuple(k for k in kernels if k != "numba")
    rows = []
    for n, kernel in ((n, k) for n in sizes for k in kernels):
        with chosen(kernel):
            native = gym.make_vec(env_id, num_envs=n)
        sync = gym.make_vec(env_id, num_envs=n, vectorization_mode="sync")
        polys = native.polytopes
        rng = np.random.default_rng(seed)
        cats = np.arange(polys.n_categories)
        good = polys.sample(cats, rng)
        bad = rng.dirichlet(np.full(good.shape[1], 0.2), size=good.shape[0])
        bad_ok = polys.violation(bad, cats) > 1e-3  # keep only proposals that are outside
        bad[~bad_ok] = np.eye(good.shape[1])[rng.integers(good.shape[1], size=(~bad_ok).sum())]
        steps = max(1, int(round(days * (native.game.n_passengers + 1))))
        cuts = np.linspace(0, steps, blocks + 1).round().astype(int)
        for env in (native, sync):  # each side's compiled kernels load outside the timed span
            info = env.reset(seed=seed)[1]
            env.step(good[np.maximum(info["category"], 0)])
        for share in infeasible:
            flips = rng.random((steps, n)) < share
            state = []
            for env in (native, sync):
                state.append([env.reset(seed=seed)[1], np.zeros(n, dtype=bool), 0.0, 0])
            for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
                for env, st in zip((native, sync), state, strict=True):
                    info, term, _, resets = st
                    t0 = time.process_time()
                    for j in range(lo, hi):
                        resets += int(term.sum())  # rows whose day ended: this step resets them
                        c = np.maximum(info["category"], 0)
                        a = np.where(flips[j][:, None], bad[c], good[c])
                        _, _, term, _, info = env.step(a)
                    st[:] = [info, term, st[2] + time.process_time() - t0, resets]
            (nat_s, nat_r), (syn_s, syn_r) = ((st[2], st[3]) for st in state)
            if nat_r != syn_r:  # pragma: no cover - both step the same days
                raise RuntimeError(f"resets differ: native {nat_r}, sync {syn_r}")
            rows.append(VectorSpeed(n, share, steps * n / nat_s, steps * n / syn_s,
                                    syn_s / nat_s, nat_r, native.kernel))
        native.close()
        sync.close()
    return rows


def format_vector(rows: list[VectorSpeed]) -> str:
    """Markdown table of :func:`vector_speeds`.

    Results from before resets were counted (every row's ``resets`` 0) keep their old table.
    """
    counted = any(r.resets for r in rows)
    kernels = sorted({r.kernel for r in rows if r.kernel})
    per_kernel = len(kernels) > 1
    lines = [
        "| N | " + ("native step | " if per_kernel else "")
        + "infeasible proposals | native, sub-env steps/s | SyncVectorEnv, steps/s "
        + ("| day resets timed " if counted else "") + "| native / sync |",
        "|---:|" + (":---|" if per_kernel else "") + "---:|---:|---:|"
        + ("---:|" if counted else "") + "---:|",
    ]
    for r in rows:
        resets = f"| {r.resets:,} " if counted else ""
        step = f"{r.kernel} | " if per_kernel else ""
        lines.append(f"| {r.n} | {step}{r.infeasible:.0%} | {r.native_sps:,.0f} "
                     f"| {r.sync_sps:,.0f} {resets}| **{r.ratio:.1f}x** |")
    if per_kernel:
        lines += ["", "Native step: `numpy` is the default's (`TSG_ENVS_KERNEL=auto`), `numba` the "
                  "compiled one that runs with `TSG_ENVS_KERNEL=numba` (equal to rounding, not bit "
                  "for bit); `SyncVectorEnv`'s single envs run their default (their compiled "
                  "kernel, bit for bit the numpy step)."]
    elif kernels:
        lines += ["", f"Both sides on the {' / '.join(kernels)} implementation "
                  "(`TSG_ENVS_KERNEL`, `tsg_envs.kernel`)."]
    return "\n".join(lines)


@dataclass(frozen=True)
class HarnessSpeed:
    """One agent's days through the harness against the per-day loop it replaces.

    Attributes:
        agent: The agent's name.
        days: Days rolled out (each way).
        loop_s_per_day: ``rollout(env, agent, seed)`` day by day, CPU s per day.
        harness_s_per_day: :func:`tsg_envs.harness.evaluate` (all days in one batch), CPU s per
            day.
        speedup: loop / harness.
    """

    agent: str
    days: int
    loop_s_per_day: float
    harness_s_per_day: float
    speedup: float


def harness_speeds(
    env_id: str = "tsg/Screening-v1", days: int = 100, agents: tuple[str, ...] | None = None
) -> list[HarnessSpeed]:
    """The harness against the per-day loop for the LP, centre and slack-guided agents.

    Slack-guided is the ``baselines`` package's (the benchmarks stand above every package).
    """
    from baselines.slack_guided import make_agent as slack_guided
    from tsg_envs.harness import Unit, evaluate
    from tsg_envs.rollout import CentreAgent, LPAgent, rollout
    from tsg_envs.seeds import evaluation_day_seeds

    factories: dict[str, Callable[[gym.Env], object]] = {
        "lp": LPAgent, "centre": CentreAgent, "slack-guided": slack_guided}
    if agents is not None:
        factories = {k: v for k, v in factories.items() if k in agents}
    seeds = evaluation_day_seeds(days)
    env = gym.make(env_id)
    rows = []
    for name, factory in factories.items():
        agent = factory(env)
        t0 = time.process_time()
        for seed in seeds:
            rollout(env, agent, seed=seed)
        loop = (time.process_time() - t0) / days
        t0 = time.process_time()
        evaluate({name: lambda e, a=agent: a}, [Unit(env_id, 0)], seeds, batch=days)
        batched = (time.process_time() - t0) / days
        rows.append(HarnessSpeed(name, days, loop, batched, loop / batched))
    return rows


def format_harness(rows: list[HarnessSpeed], protocol_hours: float | None = None) -> str:
    """Markdown table of :func:`harness_speeds` (and the scaled protocol estimate)."""
    lines = [
        "| agent | days | per-day loop, CPU s / day | harness, CPU s / day | speed-up |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r.agent} | {r.days} | {r.loop_s_per_day:.4f} "
                     f"| {r.harness_s_per_day:.4f} | **{r.speedup:.1f}x** |")
    return "\n".join(lines)


@dataclass(frozen=True)
class AgentCost:
    """One agent's CPU per day through the harness, against the static LP's in the same run.

    Attributes:
        agent: The agent's name.
        days: Days rolled out at once per evaluation.
        s_per_day: Median CPU seconds per day of :func:`tsg_envs.harness.evaluate`, the
            agent's set-up (its factory: LPs solved, models built) included; the instance's
            window LP and polytopes are cached beforehand (the LP agent's own set-up is free).
        lp_s_per_day: The same for the static LP agent, timed alternately with it.
        ratio: Median over the repeats of agent / LP.
        cold_ratio: The same ratio when every evaluation also builds the instance (window LP,
            polytopes) from scratch, the LP's own set-up then counted too.
    """

    agent: str
    days: int
    s_per_day: float
    lp_s_per_day: float
    ratio: float
    cold_ratio: float = float("nan")


def agent_costs(
    env_id: str = "tsg/Screening-v1", days: int = 20, repeats: int = 5,
    agents: tuple[str, ...] = ("slack-guided", "myopic", "slack-lp", "centre"),
) -> list[AgentCost]:
    """CPU per day of each agent through the harness against the static LP's (item 1 of #35).

    Each repeat evaluates the LP and then every agent on the same ``days`` days of instance 0
    (one batch), set-up included (the slack LP solved afresh for each agent that needs it), with
    the instance's window LP and polytopes cached (as after the environment's construction; the
    LP agent then costs its rollout alone); the ratio to
    that repeat's LP time is taken and the median over repeats reported. The cold ratio adds to
    both the instance's construction from scratch (its window LP and polytopes, timed in the
    same repeat), as every evaluation would pay without the caches. Agents of the ``baselines``
    package are skipped when it cannot be imported.
    """
    import importlib

    from tsg_envs.harness import Unit, evaluate
    from tsg_envs.rollout import CentreAgent, LPAgent
    from tsg_envs.seeds import evaluation_day_seeds

    factories: dict[str, Callable[[gym.Env], object]] = {"centre": CentreAgent}
    for name in agents:
        if name not in factories:
            try:
                module = importlib.import_module(f"baselines.{name.replace('-', '_')}")
            except ImportError:  # pragma: no cover - baselines not installed
                continue
            factories[name] = module.make_agent
    seeds = evaluation_day_seeds(days)
    unit = Unit(env_id, 0)
    names = ["lp", *(name for name in agents if name in factories)]
    times: dict[str, list[float]] = {n: [] for n in names}
    build: list[float] = []
    env = gym.make(env_id)  # the LP and polytopes, cached for every agent alike
    u = env.unwrapped
    try:  # an agent's own set-up is timed whole: the slack LP is not reused across agents
        from baselines.slack_lp import SLACK_LP_CACHE as slack_cache
    except ImportError:  # pragma: no cover - baselines not installed
        slack_cache = None
    for _ in range(repeats):
        for name in names:
            factory = LPAgent if name == "lp" else factories[name]
            if slack_cache is not None:
                slack_cache.clear()
            t0 = time.process_time()
            evaluate({name: factory}, [unit], seeds, batch=days)
            times[name].append((time.process_time() - t0) / days)
        # The instance's construction from scratch (what every agent's evaluation would add
        # without the caches): the window LP and the polytopes of a game with no cache key.
        fresh = dataclasses.replace(u.game, key=None)
        t0 = time.process_time()
        sol = solve_window_lp(fresh, u.lp_window_minutes)
        build_polytopes(fresh, sol.psi * (1.0 + u.risk_slack))
        build.append((time.process_time() - t0) / days)
    env.close()
    lp, extra = np.array(times["lp"]), np.array(build)
    return [AgentCost(name, days, float(np.median(times[name])), float(np.median(lp)),
                      float(np.median(np.array(times[name]) / lp)),
                      float(np.median((np.array(times[name]) + extra) / (lp + extra))))
            for name in names[1:]]


def format_agents(rows: list[AgentCost]) -> str:
    """Markdown table of :func:`agent_costs`."""
    lines = ["| agent | days at once | CPU s / day (set-up included) | static LP, CPU s / day "
             "| agent / LP | agent / LP, instance built cold |", "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.agent} | {r.days} | {r.s_per_day:.4f} | {r.lp_s_per_day:.4f} "
                     f"| **{r.ratio:.1f}x** | {r.cold_ratio:.1f}x |")
    return "\n".join(lines)


def replace_block(path: Path, name: str, text: str) -> None:
    """Replace the text between ``<!-- name:begin -->`` and ``<!-- name:end -->`` in a file."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    doc = path.read_text(encoding="utf-8")
    if begin not in doc or end not in doc:
        raise ValueError(f"{path} has no {begin} ... {end} block")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{begin}\n{text}\n{end}{tail}", encoding="utf-8")


#: The env whose construction ``--lp-stages`` times unless ``--env`` names another.
LP_STAGES_ENV = "tsg/Screening-Day-300F-v1"


def _format_speed(rows: list[dict]) -> str:
    """The env-speed and LP tables of the default run, from its JSON rows."""
    speed = [SpeedResult(**{**r, "ratios": tuple(r["ratios"])}) for r in rows if "env_sps" in r]
    lps = [LPTiming(**r) for r in rows if "n_windows" in r and "lp_seconds" in r]
    report = format_report({}, speed, lps)
    return report.split("\n", 2)[2].rstrip()  # drop the machine line: the block names it


#: How each published measurement's JSON rows become its README table.
FORMATTERS: dict[str, Callable[[list[dict]], str]] = {
    "bounds": lambda rows: format_bounds([ConstructionCost(**r) for r in rows]),
    "vector": lambda rows: format_vector([VectorSpeed(**r) for r in rows]),
    "harness": lambda rows: format_harness([HarnessSpeed(**r) for r in rows]),
    "agents": lambda rows: format_agents([AgentCost(**r) for r in rows]),
    "speed": _format_speed,
    "family": lambda rows: family.format_family([family.FamilyRow(**r) for r in rows]),
    "lp-agreement": lambda rows: format_lp_agreement([LPAgreement(**r) for r in rows]),
    "lp-stages": lambda rows: format_lp_stages([LPStages(**r) for r in rows]),
}


def block_text(name: str, payload: dict, json_path: str) -> str:
    """The block of a published measurement (README or docs page): its table and its source."""
    table = FORMATTERS[name](payload["rows"])
    info = payload["machine"]
    env_id = payload.get("env_id")
    where = f"`{env_id}`; " if env_id else ""
    machine = f"{info['cpu']}, {info['cores']} cores, commit {info['git commit']}"
    return (f"{table}\n\n({where}{machine}; `{json_path}` from `{payload['command']}`, placed "
            "by `python -m experiments.readme`)")


def _publish(name: str, json_path: str, readme: str | None, rows: list,
             env_id: str | None) -> None:
    """Write a measurement's rows, machine and command to JSON; print and place its table.

    The table goes into the README's ``name`` block with the command that regenerates it
    (``python -m leaderboard readme`` rebuilds the same block from the JSON).
    """
    import json

    command = f"python -m benchmarks.envs --{name} {json_path}"
    payload = {"machine": machine_info(), "command": command, "env_id": env_id,
               "rows": [r if isinstance(r, dict) else dataclasses.asdict(r) for r in rows]}
    Path(json_path).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    text = block_text(name, payload, json_path)
    print(text)
    if readme:
        replace_block(Path(readme), name, text)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.envs``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.envs", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="short blocks and small LPs (a few seconds)")
    parser.add_argument("--env", default=BenchConfig.env_id, help="screening id to time")
    parser.add_argument("--pairs", type=cli_int(1), default=None, help="timed block pairs")
    parser.add_argument("--block-steps", type=cli_int(1), default=None, help="steps per block")
    parser.add_argument("--flights", type=cli_int(1), nargs="*", default=None,
                        help="flight counts of the LP timings (none: skip them)")
    parser.add_argument("--skip-speed", action="store_true", help="only the LP timings")
    parser.add_argument("--bounds", metavar="JSON", default=None,
                        help="measure construction at the input bounds (each corner in a fresh "
                        "process), write the rows to JSON and the README's bounds block; "
                        "nothing else is run")
    parser.add_argument("--vector", metavar="JSON", default=None,
                        help="native vector env vs SyncVectorEnv at N in 1, 16, 256, 1024 (with "
                        "0%% and 10%% infeasible proposals), written to JSON and the README's "
                        "vector block; nothing else is run")
    parser.add_argument("--harness", metavar="JSON", default=None,
                        help="the evaluation harness vs the per-day loop (LP, centre, "
                        "slack-guided; 100 days, --quick: 5), written to JSON and the README's "
                        "harness block; nothing else is run")
    parser.add_argument("--agents", metavar="JSON", default=None,
                        help="CPU per day of the LP-based agents (slack-guided, myopic, slack-lp, "
                        "centre) through the harness against the static LP's, 20 days at once, "
                        "set-up included (--quick: 2 days, 1 repeat), written to JSON and the "
                        "README's agents block; nothing else is run")
    parser.add_argument("--speed", metavar="JSON", default=None,
                        help="write the default run (env speed vs CartPole for each step "
                        "implementation, first-step costs, LP timings) to JSON and the README's "
                        "speed block")
    parser.add_argument("--family", metavar="JSON", default=None,
                        help="the single-window family report (binding draws, stretch, capacity "
                        "loss, LP waits, radii per id; instance seeds 0..--instances-1), written "
                        "to JSON and the README's family block; nothing else is run")
    parser.add_argument("--lp-agreement", metavar="JSON", default=None,
                        help="the LP policy's agreement across HiGHS solver paths and under a "
                        "reordering of the game (4 families x --instances seeds, default 20 "
                        "here), written to JSON and the README's lp-agreement block")
    parser.add_argument("--lp-stages", metavar="JSON", default=None,
                        help="CPU seconds per stage of constructing --env's LP and polytopes "
                        "(default here tsg/Screening-Day-300F-v1), on the reference path and the "
                        "fast one in one process, written to JSON and the lp-stages block of "
                        "docs/benchmarks.md; nothing else is run")
    parser.add_argument("--instances", type=cli_int(1), default=None,
                        help="instance seeds per id of --family (default 100) or per family of "
                        "--lp-agreement (default 20)")
    parser.add_argument("--workers", type=cli_int(1), default=1, help="processes for --family")
    parser.add_argument("--readme", default=None,
                        help="a page holding the measurement's block (README.md or a docs page, "
                        "e.g. docs/benchmarks.md) to update; python -m experiments.readme "
                        "places every block from the JSON files")
    parser.add_argument("--construct", choices=sorted(BOUND_CORNERS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.construct:
        import json

        print(json.dumps(construct_corner(args.construct)))
        return 0
    if args.lp_stages:
        env_id = args.env if args.env != BenchConfig.env_id else LP_STAGES_ENV
        _publish("lp-stages", args.lp_stages, args.readme, lp_stages(env_id), env_id)
        return 0
    if args.lp_agreement:
        arows = lp_agreement(range(2 if args.quick else (args.instances or 20)))
        _publish("lp-agreement", args.lp_agreement, args.readme, arows, None)
        return 0
    if args.family:
        n = 2 if args.quick else (args.instances or 100)
        frows = family.family_rows(instance_seeds=range(n), workers=args.workers)
        _publish("family", args.family, args.readme, frows, None)
        return 0
    if args.harness:
        hrows = harness_speeds(args.env, days=5 if args.quick else 100)
        _publish("harness", args.harness, args.readme, hrows, args.env)
        return 0
    if args.agents:
        crows = agent_costs(args.env, days=2 if args.quick else 20,
                            repeats=1 if args.quick else 5)
        _publish("agents", args.agents, args.readme, crows, args.env)
        return 0
    if args.vector:
        sizes = (1, 16) if args.quick else (1, 16, 256, 1024)
        vrows = vector_speeds(args.env, sizes=sizes, days=1.0 if args.quick else 2.0)
        _publish("vector", args.vector, args.readme, vrows, args.env)
        return 0
    if args.bounds:
        rows = construction_costs()
        _publish("bounds", args.bounds, args.readme, rows, None)
        return 0
    config = QUICK if args.quick else BenchConfig()
    changes: dict[str, object] = {"env_id": args.env}
    if args.pairs is not None:
        changes["pairs"] = args.pairs
    if args.block_steps is not None:
        changes["block_steps"] = args.block_steps
    if args.flights is not None:
        changes["lp_flights"] = tuple(args.flights)
    config = dataclasses.replace(config, **changes)
    info = machine_info()
    speed = [] if args.skip_speed else compare_env_speed(config, first_step=not args.quick)
    lps = lp_timings(config)
    if args.speed:
        rows = [dataclasses.asdict(r) for r in speed] + [dataclasses.asdict(r) for r in lps]
        _publish("speed", args.speed, args.readme, rows, config.env_id)
        return 0
    print(format_report(info, speed, lps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
