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
   also run from the native vector environment (``num_envs`` days at once). The same run
   measures a fresh process's start-up (launch to the first gradient step of alpha-ddpg:
   :func:`bench_startup`) and what the α-projection adds to alpha-ddpg's actor update and
   exploration step (:func:`bench_projection_share`); :func:`loops_block` renders all three
   for the docs (``python -m experiments.readme``).

Prints a Markdown table naming the machine; ``--json PATH`` also writes the numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

import tsg_envs  # noqa: F401  (registers the ids)
from baselines.projection import AlphaProjection
from tsg_envs.provenance import cpu_model
from tsg_envs.validation import cli_int

__all__ = ["BenchConfig", "LOOP_METHODS", "DEFAULT_LOOP_METHODS", "TARGETS", "bench_projection",
           "bench_training", "bench_loops", "bench_startup", "bench_projection_share",
           "build_algorithm", "filled_buffer", "bare_update_seconds", "loops_table",
           "startup_table", "loops_block", "machine", "main"]


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
    from baselines.api import RunConfig, get_method

    method = get_method("alpha-ddpg")
    rows = []
    defaults = method.build_config(cfg.hparams)
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
        method.train(run)
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


#: Off-policy methods the loop benchmark can run (the DDPG family collects N days at once).
LOOP_METHODS: tuple[str, ...] = ("alpha-ddpg", "alpha-td3", "radial-ddpg", "l2-ddpg",
                                 "proj-ddpg", "proj-penalty-ddpg", "penalty-ddpg", "sac")
#: The methods ``--loops`` runs by default.
DEFAULT_LOOP_METHODS: tuple[str, ...] = ("alpha-ddpg", "alpha-td3", "radial-ddpg", "proj-ddpg",
                                         "sac")
#: The targets the loops block states: loop / bare update, start-up seconds, projection share.
TARGETS = {"overhead_ratio": 1.1, "startup_s": 3.0, "projection_share": 0.25}


def _is_ddpg(method: str) -> bool:
    from baselines.ddpg import VARIANTS

    return method in VARIANTS


def build_algorithm(method: str, hparams: dict[str, Any], env_id: str = "tsg/Screening-v1",
                    seed: int = 0) -> tuple[Any, Any, gym.Env]:
    """``(algorithm, config, env)``: ``method``'s Tianshou algorithm as its training builds it.

    The environment is the one the method trains on (the DDPG variant's ``invalid_action``;
    SAC's ``SoftmaxAlphaProjection`` wrapper); the networks are seeded with ``seed``.
    """
    torch.manual_seed(seed)
    if _is_ddpg(method):
        from baselines.ddpg import VARIANTS, build

        variant = VARIANTS[method]
        cfg = variant.config(hparams)
        env = gym.make(env_id, instance_seed=0, invalid_action=variant.invalid_action)
        return build(env, cfg, variant)[0], cfg, env
    if method != "sac":
        raise ValueError(f"the loop benchmark runs the off-policy methods {LOOP_METHODS}, "
                         f"not {method!r}")
    from baselines.sac import build as build_sac
    from baselines.sac import make_config
    from tsg_envs.wrappers import SoftmaxAlphaProjection

    cfg = make_config(hparams)
    env = SoftmaxAlphaProjection(gym.make(env_id, instance_seed=0, invalid_action="raise"),
                                 beta=cfg.beta)
    return build_sac(env, cfg)[0], cfg, env


def filled_buffer(n: int, seed: int, env_id: str = "tsg/Screening-v1") -> Any:
    """A replay buffer of ``n`` transitions of Dirichlet points of the simplex (not timed).

    The environment projects them (``invalid_action="project"``); the stored action is the
    proposal, a valid input of every method's critic (SAC's logits live in [-1, 1]).
    """
    from baselines.replay import ArrayReplayBuffer

    env = gym.make(env_id, instance_seed=0, invalid_action="project")
    rng = np.random.default_rng(seed)
    buffer = ArrayReplayBuffer(n)
    t = env.action_space.shape[0]
    obs, _ = env.reset(seed=seed)
    while len(buffer) < n:
        act = rng.dirichlet(np.ones(t))
        nxt, rew, term, trunc, _ = env.step(act)
        buffer.add_rows(obs[None], act[None], np.array([0.1 * rew]), np.array([term]),
                        np.array([trunc]), nxt[None])
        obs = nxt if not (term or trunc) else env.reset(seed=int(rng.integers(2**31)))[0]
    return buffer


def loop_buffer_size(cfg: Any, grad_steps: int) -> int:
    """The replay buffer's mean size over a loop's updates: the bare update's fair buffer.

    Updates start when the warm-up is stored and go on while the buffer grows by
    ``1 / updates_per_step`` transitions per update, so its mean size is half-way between the
    warm-up and the run's last environment step (capped by the buffer's capacity). Sampling a
    mini-batch from a larger buffer costs more (its rows are spread over more memory): a bare
    update timed on a smaller buffer than the loop's would count that as loop overhead.
    """
    last = cfg.warmup_steps + grad_steps / cfg.updates_per_step
    return int(min(cfg.buffer_size, max(cfg.warmup_steps, cfg.batch_size) / 2 + last / 2))


def bare_update_seconds(method: str, hparams: dict[str, Any], repeats: int, seed: int = 0,
                        loop_grad_steps: int | None = None) -> dict[str, float]:
    """Seconds of one bare ``algorithm.update`` of ``method`` (item 3), wall and process CPU.

    The algorithm is built as its training builds it, the buffer holds
    ``max(4 × batch_size, 2000)`` transitions, or with ``loop_grad_steps`` the mean of a loop of
    that many gradient steps (:func:`loop_buffer_size`); each update samples a mini-batch and
    updates,
    inside Tianshou's training-step context, as the loop calls it. Medians of 5 blocks of
    ``repeats // 5`` updates (robust to a busy moment of the machine):
    ``{"wall_s", "cpu_s", "buffer_size"}``.
    """
    from tianshou.utils.torch_utils import policy_within_training_step

    algorithm, cfg, _ = build_algorithm(method, hparams, seed=seed)
    size = (max(4 * cfg.batch_size, 2_000) if loop_grad_steps is None
            else loop_buffer_size(cfg, loop_grad_steps))
    buffer = filled_buffer(size, seed)
    walls, cpus = [], []
    block = max(1, repeats // 5)
    with policy_within_training_step(algorithm.policy):
        for _ in range(10):
            algorithm.update(buffer, cfg.batch_size)
        for _ in range(5):
            t, c = time.perf_counter(), time.process_time()
            for _ in range(block):
                algorithm.update(buffer, cfg.batch_size)
            walls.append((time.perf_counter() - t) / block)
            cpus.append((time.process_time() - c) / block)
    return {"wall_s": float(statistics.median(walls)), "cpu_s": float(statistics.median(cpus)),
            "buffer_size": size}


@contextlib.contextmanager
def timed_updates() -> Iterator[dict[str, float]]:
    """Within the block, every Tianshou off-policy ``update`` call adds its process CPU time.

    Yields ``{"cpu_s": total, "calls": n}``: the updates a training loop runs, timed inside the
    run itself (the same moments of a shared machine as the loop around them). The wrapper
    costs two clock reads per update; the original method is restored on exit.
    """
    from tianshou.algorithm.algorithm_base import OffPolicyAlgorithm

    total = {"cpu_s": 0.0, "calls": 0.0}
    original = OffPolicyAlgorithm.update

    def update(self: Any, *args: Any, **kwargs: Any) -> Any:
        c = time.process_time()
        try:
            return original(self, *args, **kwargs)
        finally:
            total["cpu_s"] += time.process_time() - c
            total["calls"] += 1

    OffPolicyAlgorithm.update = update  # type: ignore[method-assign]
    try:
        yield total
    finally:
        OffPolicyAlgorithm.update = original  # type: ignore[method-assign]


def bench_loops(methods: tuple[str, ...], grad_steps: int, num_envs: tuple[int, ...],
                hparams: dict[str, Any], threads: int = 1, seed: int = 0,
                bare_repeats: int = 500,
                on_row: Callable[[list[dict[str, Any]]], None] | None = None
                ) -> list[dict[str, Any]]:
    """Item 3: per method (and vector width), the loop's rates and its overhead ratio.

    ``on_row(rows)`` is called after each row (the CLI saves the rows so far: a long run that
    is stopped keeps what it measured).

    Per row, the bare update is timed first (which also makes the process's one-off imports,
    so that the run does not pay them), on a buffer of the loop's mean size
    (:func:`loop_buffer_size`), then the run. ``overhead_ratio`` compares process CPU
    time, the fair measure on a shared machine: the run's (the whole ``train`` call, whose
    set-up, the environment and the networks, is a fraction of a percent of it) per gradient
    step against the bare update's. ``wall_ratio`` does the same with wall-clock time (the loop's
    own clock, ``curve.csv``'s last ``wall_s``, from its first step to its end).
    ``in_run_ratio`` divides the run's CPU time by that of its own updates (:func:`timed_updates`):
    the same moments of the machine on both sides, so a busy moment cannot tilt it; the separate
    bare update also counts what the run's updates pay more than a tight loop of updates does
    (a bigger buffer, caches the loop's other work evicts), the in-run ratio does not.
    """
    from baselines.api import RunConfig, get_method
    from baselines.checkpoint import latest_checkpoint, read_checkpoint

    torch.set_num_threads(threads)
    rows = []
    for method in methods:
        widths = num_envs if _is_ddpg(method) else (1,)
        for n in widths:
            bare = bare_update_seconds(method, hparams, bare_repeats, seed,
                                       loop_grad_steps=grad_steps)
            tmp = Path(tempfile.mkdtemp(prefix="tsg-bench-"))
            hp = {**hparams, "eval_every": 0, "checkpoint_every": 10**9, "threads": threads,
                  "keep_best": False, **({"num_envs": n} if _is_ddpg(method) else {})}
            run = RunConfig(algo=method, gradient_steps=grad_steps, seed=seed, out=tmp,
                            hparams=hp, progress=False)
            with timed_updates() as updates:
                t, c = time.perf_counter(), time.process_time()
                get_method(method).train(run)
                wall, cpu = time.perf_counter() - t, time.process_time() - c
            state = read_checkpoint(latest_checkpoint(tmp)).state  # type: ignore[arg-type]
            loop = _last_wall(tmp / "curve.csv")
            shutil.rmtree(tmp, ignore_errors=True)
            g, s = int(state["gradient_steps"]), int(state["step"])
            row = {
                "method": method, "num_envs": n, "gradient_steps": g, "env_steps": s,
                "wall_s": wall, "cpu_s": cpu, "loop_s": loop, "env_steps_per_s": s / loop,
                "gradient_steps_per_s": g / loop, "loop_s_per_gradient_step": loop / max(1, g),
                "cpu_s_per_gradient_step": cpu / max(1, g),
                "bare_update_s": bare["wall_s"], "bare_update_cpu_s": bare["cpu_s"],
                "bare_buffer_size": bare["buffer_size"],
            }
            row["overhead_ratio"] = row["cpu_s_per_gradient_step"] / bare["cpu_s"]
            row["in_run_update_cpu_s"] = updates["cpu_s"] / max(1.0, updates["calls"])
            row["in_run_ratio"] = cpu / max(updates["cpu_s"], 1e-12)
            row["wall_ratio"] = row["loop_s_per_gradient_step"] / bare["wall_s"]
            rows.append(row)
            if on_row is not None:
                on_row(rows)
            print(f"  {method} x{n}: loop {loop:.1f} s ({cpu:.1f} s CPU) for {g} gradient "
                  f"steps ({s} env steps); loop / bare: CPU {row['overhead_ratio']:.2f}, wall "
                  f"{row['wall_ratio']:.2f}", flush=True)
    return rows


def _last_wall(curve: Path) -> float:
    import csv

    with curve.open(newline="") as f:
        return float(list(csv.DictReader(f))[-1]["wall_s"])


def _startup_child(method: str) -> None:
    """The measured process of :func:`bench_startup`: prints its phases' seconds as JSON."""
    t0 = time.perf_counter()
    import tianshou  # noqa: F401  (its package imports pandas, matplotlib, numba, ray, ...)

    ta = time.perf_counter()
    from baselines.api import RunConfig, get_method

    get_method(method)  # the method's own modules
    t1 = time.perf_counter()
    run = RunConfig(algo=method)
    env = run.make_env()
    obs, _ = env.reset(seed=0)
    u = env.unwrapped
    cat = int(np.argmax(obs[u.obs_layout["category"]]))
    env.step(u.polytopes.sample(np.array([cat]), np.random.default_rng(0))[0])  # the kernel
    t2 = time.perf_counter()
    algorithm, cfg, _ = build_algorithm(method, {})
    torch.set_num_threads(cfg.threads)  # as training sets it
    t3 = time.perf_counter()
    buffer = filled_buffer(cfg.batch_size, 0)
    t4 = time.perf_counter()
    from tianshou.utils.torch_utils import policy_within_training_step

    with policy_within_training_step(algorithm.policy):
        algorithm.update(buffer, cfg.batch_size)
    t5 = time.perf_counter()
    print(json.dumps({"tianshou_import_s": ta - t0, "method_import_s": t1 - ta,
                      "env_s": t2 - t1, "build_s": t3 - t2,
                      "first_update_s": t5 - t4, "unmeasured_s": t4 - t3}))


def bench_startup(method: str = "alpha-ddpg", repeats: int = 3) -> dict[str, Any]:
    """A fresh process's start-up: launch to the first gradient step done (median of repeats).

    The process (``python -m benchmarks.training --startup-child METHOD``) imports the method,
    makes the environment (LP and polytopes) and takes its first step (where the environment's
    compiled kernel, if any, is loaded), builds the algorithm and takes one gradient step;
    the time it spends filling a small buffer is left out. Reports the median total and the
    phases of that run: ``python_s`` (the interpreter, torch, gymnasium and this module's
    imports), ``tianshou_import_s`` (Tianshou's package, which imports pandas, matplotlib,
    numba and ray itself), ``method_import_s`` (this package's modules), ``env_s``,
    ``build_s``, ``first_update_s``; and ``dependencies_floor_s``, the median launch of a
    process that only imports torch and Tianshou (what no code of this package can take off).
    """
    import subprocess
    import sys

    runs = []
    root = Path(__file__).resolve().parent.parent  # benchmarks/ is not installed: run from here
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": path}
    for _ in range(repeats):
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "benchmarks.training", "--startup-child",
                              method], capture_output=True, text=True, check=True, env=env,
                             cwd=root)
        total = time.perf_counter() - t
        phases = json.loads(out.stdout.strip().splitlines()[-1])
        measured = sum(phases.values())
        runs.append({"startup_s": total - phases.pop("unmeasured_s"),
                     "python_s": total - measured, **phases})
    runs.sort(key=lambda r: r["startup_s"])
    floors = []
    for _ in range(repeats):  # the dependencies alone: a process that imports torch, Tianshou
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch, tianshou"], check=True, env=env,
                       cwd=root, capture_output=True)
        floors.append(time.perf_counter() - t)
    return {"method": method, "repeats": repeats, **runs[len(runs) // 2],
            "dependencies_floor_s": statistics.median(floors)}


def bench_projection_share(hparams: dict[str, Any], repeats: int = 200, seed: int = 0
                           ) -> dict[str, Any]:
    """What the α-projection adds to alpha-ddpg's actor update and exploration step.

    The actor update (:func:`baselines.ddpg.actor_loss`, backward, Adam step) on a mini-batch
    of the default size, and the exploration step on one observation, as the loop takes it
    (``explore``: numpy, :meth:`~baselines.ddpg.SimplexActor.numpy_explorer`) and in torch
    (``explore_torch``: ``add_exploration_noise``, ``numpy_acting=False``), each timed with the
    α-projection head and with the head removed (the softmax point itself), alternating blocks
    of ``repeats // 10``, medians of process CPU time.
    ``projection_share`` is (with - without) / with; ``projection_added`` is with / without - 1.
    """
    from tianshou.data import Batch

    from baselines.ddpg import LogitNoise, actor_loss
    from baselines.optim import Adam

    algorithm, cfg, env = build_algorithm("alpha-ddpg", hparams, seed=seed)
    actor, critic, policy = algorithm.policy.actor, algorithm.critic, algorithm.policy
    policy.set_exploration_noise(LogitNoise(0.1, np.random.default_rng(seed)))
    buffer = filled_buffer(max(4 * cfg.batch_size, 2_000), seed)
    batch, _ = buffer.sample(cfg.batch_size)
    obs_BO = torch.as_tensor(batch.obs, dtype=torch.float32)
    obs_1O = obs_BO[:1]
    head = actor.projection
    optim = Adam(actor.parameters(), lr=cfg.actor_lr)

    def update() -> None:
        loss = actor_loss(actor, critic, obs_BO, cfg.reg_weight)
        optim.zero_grad()
        loss.backward()
        optim.step()

    def explore_torch() -> None:
        with torch.no_grad():
            policy.add_exploration_noise(actor.logits(obs_1O), Batch(obs=obs_1O))

    obs_np = obs_1O.numpy()
    noise = LogitNoise(0.1, np.random.default_rng(seed))
    numpy_step = {True: actor.numpy_explorer(noise)}
    actor.head, actor.projection = "softmax", None
    numpy_step[False] = actor.numpy_explorer(noise)
    actor.head = "alpha"

    def explore() -> None:  # as the loop explores (numpy_acting, the default)
        numpy_step[actor.projection is not None](obs_np)  # type: ignore[misc]

    out: dict[str, Any] = {"batch": cfg.batch_size}
    for name, fn, reps in (("actor_update", update, repeats), ("explore", explore, 5 * repeats),
                           ("explore_torch", explore_torch, 5 * repeats)):
        times: dict[bool, list[float]] = {True: [], False: []}
        block = max(1, reps // 10)
        for _ in range(10):
            for with_head in (True, False):
                actor.projection = head if with_head else None
                fn()
                c = time.process_time()
                for _ in range(block):
                    fn()
                times[with_head].append((time.process_time() - c) / block)
        actor.projection = head
        w, wo = statistics.median(times[True]), statistics.median(times[False])
        out[f"{name}_s"], out[f"{name}_unprojected_s"] = w, wo
        out[f"{name}_projection_share"] = (w - wo) / w
        out[f"{name}_projection_added"] = w / wo - 1.0
    out["projection_share"] = out["actor_update_projection_share"]
    return out


def loops_table(rows: list[dict[str, Any]]) -> str:
    """The loop benchmark as a Markdown table."""
    lines = ["| method | days at once | gradient steps | env steps | loop (CPU) | env steps/s | "
             "gradient steps/s | CPU per gradient step: loop | bare update | loop / bare "
             "(CPU) | loop / bare (wall) | its updates, CPU each | loop / its updates (CPU) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        in_run = (f"{r['in_run_update_cpu_s'] * 1e3:.2f} ms | **{r['in_run_ratio']:.2f}**"
                  if "in_run_ratio" in r else " | ")
        lines.append(
            f"| {r['method']} | {r['num_envs']} | {r['gradient_steps']:,} | {r['env_steps']:,} | "
            f"{r['loop_s']:.1f} s ({r['cpu_s']:.1f} s) | {r['env_steps_per_s']:,.0f} | "
            f"{r['gradient_steps_per_s']:,.0f} | {r['cpu_s_per_gradient_step'] * 1e3:.2f} ms | "
            f"{r['bare_update_cpu_s'] * 1e3:.2f} ms | **{r['overhead_ratio']:.2f}** | "
            f"{r['wall_ratio']:.2f} | {in_run} |")
    return "\n".join(lines)


def startup_table(startup: dict[str, Any], share: dict[str, Any]) -> str:
    """Start-up and the α-projection's share as a Markdown table, against the targets."""
    s, p = startup, share
    return "\n".join([
        "| one-off or per-update cost | measured | target |",
        "|---|---:|---:|",
        f"| {s['method']} process start-up, launch to first gradient step (interpreter and "
        f"imports {s['python_s']:.1f} s, "
        + (f"Tianshou's import {s['tianshou_import_s']:.1f} s, " if "tianshou_import_s" in s
           else "")
        + f"method {s['method_import_s']:.1f} s, environment "
        f"{s['env_s']:.1f} s, algorithm {s['build_s']:.1f} s, first update "
        f"{s['first_update_s']:.2f} s) | {s['startup_s']:.1f} s | "
        f"≤ {TARGETS['startup_s']:.0f} s |",
        *([f"| of which the dependencies alone (a process that imports torch and Tianshou, "
           f"nothing else) | {s['dependencies_floor_s']:.1f} s | |"]
          if "dependencies_floor_s" in s else []),
        f"| α-projection's share of an actor update (batch {p['batch']}: "
        f"{p['actor_update_s'] * 1e3:.2f} ms, {p['actor_update_unprojected_s'] * 1e3:.2f} ms "
        f"without) | {p['actor_update_projection_share']:.0%} | "
        f"≤ {TARGETS['projection_share']:.0%} |",
        f"| α-projection's share of an exploration step (one observation, numpy: "
        f"{p['explore_s'] * 1e6:.0f} µs, {p['explore_unprojected_s'] * 1e6:.0f} µs without) | "
        f"{p['explore_projection_share']:.0%} | |",
        *([f"| the same step in torch (`numpy_acting=False`: "
           f"{p['explore_torch_s'] * 1e6:.0f} µs, {p['explore_torch_unprojected_s'] * 1e6:.0f} µs "
           f"without) | {p['explore_torch_projection_share']:.0%} | |"]
          if "explore_torch_s" in p else []),
    ])


def loops_block(payload: dict[str, Any]) -> str:
    """The README/docs ``loops`` block from ``--loops --json``'s file."""
    cfg = payload["config"]
    text = loops_table(payload["loops"])
    if payload.get("startup") and payload.get("projection_share"):
        text += "\n\n" + startup_table(payload["startup"], payload["projection_share"])
    sizes = sorted({r["bare_buffer_size"] for r in payload["loops"] if "bare_buffer_size" in r})
    bare = (f"bare update on a buffer of {', '.join(f'{s:,}' for s in sizes)} transitions; "
            if sizes else "")
    return text + (f"\n\n({payload['machine']}; {cfg['grad_steps']:,} gradient steps per run; "
                   f"{bare}target loop / bare ≤ {TARGETS['overhead_ratio']}; "
                   "`results/bench_loops.json` from "
                   "`python -m benchmarks.training --loops --json results/bench_loops.json`)")


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
    p.add_argument("--methods", nargs="+", default=list(DEFAULT_LOOP_METHODS),
                   choices=LOOP_METHODS, metavar="METHOD",
                   help=f"methods of the loop benchmark, of {', '.join(LOOP_METHODS)} "
                   f"(default {' '.join(DEFAULT_LOOP_METHODS)})")
    p.add_argument("--num-envs", type=cli_int(1), nargs="+", default=[1, 8],
                   help="vector widths of the loop benchmark (DDPG family; default 1 8)")
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument("--startup-only", action="store_true",
                   help="with --loops: measure again only the start-up and the α-projection's "
                   "share, and update them in the existing --json file (the loop rows kept)")
    p.add_argument("--startup-child", metavar="METHOD", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.startup_child:  # the measured process of bench_startup
        _startup_child(args.startup_child)
        return {}
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
        if args.startup_only:
            if args.json is None or not args.json.exists():
                p.error("--startup-only updates an existing --json file")
            result = json.loads(args.json.read_text(encoding="utf-8"))
            result["startup"] = bench_startup("alpha-ddpg", repeats=1 if args.quick else 5)
            result["projection_share"] = bench_projection_share(
                hp, repeats=20 if args.quick else 500)
            print("\n" + loops_block(result))
            args.json.write_text(json.dumps(result, indent=2))
            return result
        print(f"\ntraining loops, {steps} gradient steps each:", flush=True)
        def save(rows: list[dict[str, Any]]) -> None:
            if args.json:
                args.json.parent.mkdir(parents=True, exist_ok=True)
                args.json.write_text(json.dumps({**result, "loops": rows}, indent=2))

        rows = bench_loops(tuple(args.methods), steps, tuple(args.num_envs), hp,
                           threads=cfg.threads, bare_repeats=50 if args.quick else 1000,
                           on_row=save)
        result["loops"] = rows
        print("\nstart-up and the α-projection's share:", flush=True)
        result["startup"] = bench_startup("alpha-ddpg", repeats=1 if args.quick else 5)
        result["projection_share"] = bench_projection_share(
            hp, repeats=20 if args.quick else 500)
        print("\n" + loops_block(result))
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
