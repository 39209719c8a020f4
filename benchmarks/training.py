"""Benchmarks of the torch baselines: ``python -m benchmarks.training [--quick]``.

1. Projection layers, forward plus backward at batch 256 on the default environment's
   polytopes, measured in the same run: the α-projection (:class:`~baselines.projection.
   AlphaProjection`) against the cvxpylayers L2 projection (:class:`~baselines.projection.
   L2Projection`, optional extra ``l2``). Reports medians and the speed-up.
2. Wall-clock time of α-DDPG (default config, but one gradient step per environment step) to
   take N gradient steps (after a warm-up of one batch of feasible random steps) at 10, 20,
   50, 100 and 300 flights, excluding the environment's construction (LP and polytopes,
   reported separately), wall-clock and process CPU time (the fair number on a shared
   machine), with a power-law fit of the CPU time, t ∝ flights^k.

3. The training loops' overhead (``--loops``), per learned off-policy method: one run of the
   default config (warm-up, updates per environment step) on ``tsg/Screening-v1`` for N
   gradient steps, reporting environment steps/s, gradient steps/s and the loop's time per
   gradient step against the bare Tianshou update of the same algorithm (``algorithm.update``:
   sample a mini-batch from a filled buffer and update, nothing else), timed in the same run:
   the ratio is what collecting, acting, storing and bookkeeping add. DDPG-family methods are
   also run from the native vector environment (``num_envs`` days at once).

Prints a Markdown table naming the machine; ``--json PATH`` also writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from baselines.alpha_ddpg import AlphaDDPGConfig
from baselines.alpha_ddpg import train as train_alpha_ddpg

import tsg_envs  # noqa: F401  (registers the ids)
from baselines.api import RunConfig
from baselines.projection import AlphaProjection
from tsg_envs.provenance import cpu_model
from tsg_envs.validation import cli_int

__all__ = ["BenchConfig", "bench_projection", "bench_training", "bench_loops",
           "bare_update_seconds", "loops_table", "machine", "main"]


@dataclass(kw_only=True)
class BenchConfig:
    """What to measure.

    Attributes:
        batch: Batch size of the projection benchmark.
        alpha_repeats: Timed repetitions of the α-projection.
        l2_repeats: Timed repetitions of the cvxpylayers projection.
        flights: Flight counts of the training benchmark.
        grad_steps: Gradient steps timed per flight count.
        threads: ``torch.set_num_threads``.
        seed: Seed of the inputs and the runs.
        hparams: Overrides of α-DDPG's config for the training benchmark.
    """

    batch: int = 256
    alpha_repeats: int = 200
    l2_repeats: int = 5
    flights: tuple[int, ...] = (10, 20, 50, 100, 300)
    grad_steps: int = 10_000
    threads: int = 1
    seed: int = 0
    hparams: dict[str, Any] = field(default_factory=dict)


def machine() -> str:
    """A one-line description of this machine and the torch threads used."""
    cpu = cpu_model() or platform.machine()
    return (
        f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__} "
        f"({torch.get_num_threads()} thread(s)), Python {platform.python_version()}"
    )


def _time(fn: Any, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def bench_projection(cfg: BenchConfig) -> dict[str, Any]:
    """Median seconds of forward+backward at ``cfg.batch`` for both projections."""
    env = gym.make("tsg/Screening-v1", instance_seed=0)
    polys = env.unwrapped.polytopes
    rng = np.random.default_rng(cfg.seed)
    cats = torch.tensor(rng.integers(0, polys.n_categories, cfg.batch))
    logits = torch.tensor(rng.normal(size=(cfg.batch, polys.centers.shape[1])) * 3.0)
    alpha = AlphaProjection.from_env(env)

    def run(layer: Any) -> None:
        x = logits.clone().requires_grad_(True)
        y = layer(torch.softmax(x, -1), cat_B=cats)
        y.sum().backward()

    out: dict[str, Any] = {
        "batch": cfg.batch,
        "alpha_s": _time(lambda: run(alpha), cfg.alpha_repeats),
    }
    try:
        from baselines.projection import L2Projection

        l2 = L2Projection.from_env(env)
    except ImportError as err:
        out["l2_s"] = None
        out["l2_error"] = str(err)
        return out
    out["l2_s"] = _time(lambda: run(l2), cfg.l2_repeats)
    out["speedup"] = out["l2_s"] / out["alpha_s"]
    return out


def bench_training(cfg: BenchConfig) -> list[dict[str, Any]]:
    """Seconds of α-DDPG training to ``cfg.grad_steps`` gradient steps, per flight count."""
    from tianshou.algorithm.algorithm_base import Policy

    Policy._compile()  # Tianshou's one-off numba compilation, kept out of the timings
    rows = []
    defaults = AlphaDDPGConfig(**cfg.hparams)
    for k in cfg.flights:
        t = time.perf_counter()
        env = gym.make("tsg/Screening-v1", instance_seed=0, n_flights=k)
        setup = time.perf_counter() - t
        u = env.unwrapped
        tmp = Path(tempfile.mkdtemp(prefix="tsg-bench-"))
        hp = {
            **cfg.hparams,
            "warmup_steps": defaults.batch_size,
            "updates_per_step": 1.0,  # one gradient step per environment step
            "eval_every": 0,
            "checkpoint_every": 10**9,
            "threads": cfg.threads,
        }
        run = RunConfig(
            algo="alpha-ddpg",
            gradient_steps=cfg.grad_steps,
            seed=cfg.seed,
            out=tmp,
            env_kwargs={"n_flights": k},
            hparams=hp,
            progress=False,
        )
        t, c = time.perf_counter(), time.process_time()
        train_alpha_ddpg(run)
        train_s, cpu_s = time.perf_counter() - t, time.process_time() - c
        shutil.rmtree(tmp, ignore_errors=True)
        rows.append(
            {
                "flights": k,
                "passengers": int(u.game.n_passengers),
                "categories": int(u.game.n_categories),
                "obs_dim": int(env.observation_space.shape[0]),
                "env_setup_s": setup,
                "train_s": train_s,
                "train_cpu_s": cpu_s,
            }
        )
        print(
            f"  {k} flights: setup {setup:.1f} s, {cfg.grad_steps} grad steps {train_s:.1f} s "
            f"wall, {cpu_s:.1f} s CPU",
            flush=True,
        )
    return rows


#: Off-policy methods of the loop benchmark: (config class path, projection, td3?, env mode).
LOOP_METHODS: dict[str, tuple[str, str, bool, str]] = {
    "alpha-ddpg": ("baselines.alpha_ddpg:AlphaDDPGConfig", "alpha", False, "raise"),
    "alpha-td3": ("baselines.alpha_td3:AlphaTD3Config", "alpha", True, "raise"),
    "radial-ddpg": ("baselines.radial_ddpg:RadialDDPGConfig", "radial", False, "raise"),
    "proj-ddpg": ("baselines.proj_ddpg:ProjDDPGConfig", "none", False, "project"),
    "proj-penalty-ddpg": ("baselines.proj_penalty_ddpg:ProjPenaltyDDPGConfig", "none", False,
                          "project"),
    "penalty-ddpg": ("baselines.penalty_ddpg:PenaltyDDPGConfig", "none", False, "penalize"),
    "sac": ("baselines.sac:SACConfig", "sac", False, "raise"),
}


def _config(method: str, hparams: dict[str, Any]) -> Any:
    import importlib

    from baselines._torch_common import make_config

    module, _, name = LOOP_METHODS[method][0].partition(":")
    return make_config(getattr(importlib.import_module(module), name), hparams)


def _filled_buffer(env: gym.Env, n: int, seed: int) -> Any:
    """A replay buffer of ``n`` transitions of random points of the simplex (not timed)."""
    from tianshou.data import Batch, ReplayBuffer

    rng = np.random.default_rng(seed)
    buffer = ReplayBuffer(n)
    t = env.action_space.shape[0]
    obs, _ = env.reset(seed=seed)
    while len(buffer) < n:
        act = rng.dirichlet(np.ones(t))
        nxt, rew, term, trunc, _ = env.step(act)
        buffer.add(Batch(obs=obs, act=act, rew=0.1 * rew, terminated=term, truncated=trunc,
                         obs_next=nxt, info={}))
        obs = nxt if not (term or trunc) else env.reset(seed=int(rng.integers(2**31)))[0]
    return buffer


def bare_update_seconds(method: str, hparams: dict[str, Any], repeats: int, seed: int = 0
                        ) -> float:
    """Seconds of one bare ``algorithm.update`` of ``method`` (see item 3): median of 5 blocks."""
    from tianshou.utils.torch_utils import policy_within_training_step

    cfg = _config(method, hparams)
    _, projection, td3, mode = LOOP_METHODS[method]
    torch.manual_seed(seed)
    env = gym.make("tsg/Screening-v1", instance_seed=0, invalid_action="project")
    if projection == "sac":
        from baselines.sac import build as build_sac
        from tsg_envs.wrappers import SoftmaxAlphaProjection

        algorithm, _ = build_sac(SoftmaxAlphaProjection(
            gym.make("tsg/Screening-v1", instance_seed=0, invalid_action="raise"),
            beta=cfg.beta), cfg)
    else:
        from baselines.alpha_ddpg import build

        td3_kw = ({"policy_noise": cfg.policy_noise, "noise_clip": cfg.noise_clip,
                   "update_actor_freq": cfg.update_actor_freq} if td3 else None)
        algorithm, _ = build(env, cfg, projection, td3_kw)  # type: ignore[arg-type]
    buffer = _filled_buffer(env, max(4 * cfg.batch_size, 2_000), seed)
    policy = algorithm.policy
    blocks = []
    with policy_within_training_step(policy):
        for _ in range(10):
            algorithm.update(buffer, cfg.batch_size)
        for _ in range(5):  # the median of 5 blocks: robust to a busy moment of the machine
            t = time.perf_counter()
            for _ in range(max(1, repeats // 5)):
                algorithm.update(buffer, cfg.batch_size)
            blocks.append((time.perf_counter() - t) / max(1, repeats // 5))
    return float(statistics.median(blocks))


def bench_loops(methods: tuple[str, ...], grad_steps: int, num_envs: tuple[int, ...],
                hparams: dict[str, Any], threads: int = 1, seed: int = 0,
                bare_repeats: int = 500) -> list[dict[str, Any]]:
    """Item 3: per method (and vector width), the loop's rates and its overhead ratio."""
    from tianshou.algorithm.algorithm_base import Policy

    from baselines.api import get_method

    Policy._compile()
    torch.set_num_threads(threads)
    rows = []
    for method in methods:
        widths = num_envs if LOOP_METHODS[method][1] != "sac" else (1,)
        for n in widths:
            tmp = Path(tempfile.mkdtemp(prefix="tsg-bench-"))
            hp = {**hparams, "eval_every": 0, "checkpoint_every": 10**9, "threads": threads,
                  "num_envs": n, "keep_best": False}
            run = RunConfig(algo=method, gradient_steps=grad_steps, seed=seed, out=tmp,
                            hparams=hp, progress=False)
            t, c = time.perf_counter(), time.process_time()
            get_method(method).train(run)
            wall, cpu = time.perf_counter() - t, time.process_time() - c
            from baselines._torch_common import latest_checkpoint, load_checkpoint

            state = load_checkpoint(latest_checkpoint(tmp))
            shutil.rmtree(tmp, ignore_errors=True)
            # the bare update, timed right after the run, in the same conditions
            bare = bare_update_seconds(method, hparams, bare_repeats, seed)
            row = {
                "method": method, "num_envs": n, "gradient_steps": int(state["gradient_steps"]),
                "env_steps": int(state["step"]), "wall_s": wall, "cpu_s": cpu,
                "env_steps_per_s": state["step"] / wall,
                "gradient_steps_per_s": state["gradient_steps"] / wall,
                "loop_s_per_gradient_step": wall / max(1, state["gradient_steps"]),
                "bare_update_s": bare,
            }
            row["overhead_ratio"] = row["loop_s_per_gradient_step"] / bare
            rows.append(row)
            print(f"  {method} x{n}: {wall:.1f} s for {row['gradient_steps']} gradient steps "
                  f"({row['env_steps']} env steps); loop/bare = {row['overhead_ratio']:.2f}",
                  flush=True)
    return rows


def loops_table(rows: list[dict[str, Any]]) -> str:
    """The loop benchmark as a Markdown table."""
    lines = ["| method | days at once | gradient steps | env steps | wall | env steps/s | "
             "gradient steps/s | loop per gradient step | bare update | loop / bare |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['method']} | {r['num_envs']} | {r['gradient_steps']:,} | {r['env_steps']:,} | "
            f"{r['wall_s']:.1f} s | {r['env_steps_per_s']:,.0f} | "
            f"{r['gradient_steps_per_s']:,.0f} | {r['loop_s_per_gradient_step'] * 1e3:.2f} ms | "
            f"{r['bare_update_s'] * 1e3:.2f} ms | {r['overhead_ratio']:.2f} |")
    return "\n".join(lines)


def _fit(rows: list[dict[str, Any]]) -> tuple[float, float] | None:
    if len(rows) < 2:
        return None
    x = np.log([r["flights"] for r in rows])
    y = np.log([r["train_cpu_s"] for r in rows])
    k, c = np.polyfit(x, y, 1)
    return float(k), float(np.exp(c))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """CLI entry point; returns the measurements."""
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.training", description=__doc__.split("\n")[0]
    )
    p.add_argument("--quick", action="store_true", help="smoke test: tiny sizes, seconds")
    p.add_argument("--skip-training", action="store_true", help="projection benchmark only")
    p.add_argument(
        "--flights", type=cli_int(1), nargs="+", help="flight counts (default 10 20 50 100 300)"
    )
    p.add_argument("--grad-steps", type=cli_int(1), help="gradient steps per size (default 10000)")
    p.add_argument("--threads", type=cli_int(1), default=1)
    p.add_argument("--loops", action="store_true",
                   help="only the loop benchmark (item 3): rates and overhead per method")
    p.add_argument("--methods", nargs="+", default=list(LOOP_METHODS),
                   help="methods of the loop benchmark (default: all off-policy ones)")
    p.add_argument("--num-envs", type=cli_int(1), nargs="+", default=[1, 8],
                   help="vector widths of the loop benchmark (DDPG family; default 1 8)")
    p.add_argument("--json", type=Path, help="also write the results here")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore", category=DeprecationWarning)  # cvxpylayers/numpy 2 noise
    cfg = BenchConfig(threads=args.threads)
    if args.quick:
        cfg = BenchConfig(
            alpha_repeats=20,
            l2_repeats=1,
            flights=(10, 20),
            grad_steps=200,
            threads=args.threads,
            hparams={"hidden_sizes": (64, 64)},
        )
    if args.flights:
        cfg.flights = tuple(args.flights)
    if args.grad_steps:
        cfg.grad_steps = args.grad_steps
    torch.set_num_threads(cfg.threads)
    result: dict[str, Any] = {
        "machine": machine(),
        "config": {
            "batch": cfg.batch,
            "grad_steps": cfg.grad_steps,
            "flights": list(cfg.flights),
            "quick": bool(args.quick),
        },
    }
    print(f"machine: {result['machine']}", flush=True)
    if args.loops:
        steps = args.grad_steps or (100 if args.quick else 10_000)
        hp = {"warmup_steps": 200, "hidden_sizes": (64, 64)} if args.quick else {}
        result["config"].update(grad_steps=steps, num_envs=list(args.num_envs),
                                methods=list(args.methods), hparams=hp)
        print(f"\ntraining loops, {steps} gradient steps each:", flush=True)
        rows = bench_loops(tuple(args.methods), steps, tuple(args.num_envs), hp,
                           threads=cfg.threads, bare_repeats=50 if args.quick else 1000)
        result["loops"] = rows
        print("\n" + loops_table(rows))
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(result, indent=2))
        return result
    proj = bench_projection(cfg)
    result["projection"] = proj
    print(f"\n| projection (batch {cfg.batch}, forward+backward) | median time | speed-up |")
    print("|---|---|---|")
    print(f"| α-projection (torch) | {proj['alpha_s'] * 1e3:.3f} ms | 1x |")
    if proj.get("l2_s") is not None:
        print(
            f"| L2 projection (cvxpylayers) | {proj['l2_s'] * 1e3:.0f} ms | "
            f"α is {proj['speedup']:.0f}x faster |"
        )
    else:
        print(f"| L2 projection (cvxpylayers) | not installed | {proj.get('l2_error', '')} |")
    if not args.skip_training:
        print(f"\ntraining α-DDPG for {cfg.grad_steps} gradient steps:", flush=True)
        rows = bench_training(cfg)
        result["training"] = rows
        fit = _fit(rows)
        result["fit"] = None if fit is None else {"exponent": fit[0], "coefficient": fit[1]}
        n = cfg.grad_steps
        print(f"\n| flights | passengers/day | obs dim | env setup | {n} grad steps | (CPU) |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['flights']} | {r['passengers']} | {r['obs_dim']} | "
                f"{r['env_setup_s']:.1f} s | {r['train_s']:.1f} s | {r['train_cpu_s']:.1f} s |"
            )
        if fit is not None:
            print(f"\nfit (CPU time): t ≈ {fit[1]:.2f} s · flights^{fit[0]:.2f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
