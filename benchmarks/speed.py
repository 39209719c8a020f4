"""The single environment's steps per second against CartPole-v1 (``benchmarks.envs``' speed run).

Split from :mod:`benchmarks.envs`, which re-exports every name here; see its docstring for the
method (alternating blocks of CPU time, one row per step implementation, first-step costs).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import gymnasium as gym
import numpy as np

from tsg_envs.kernel import KERNEL_ENV_VAR, chosen, kernel_name

#: The repository's root (the child processes start there).
ROOT = Path(__file__).resolve().parent.parent

__all__ = [
    "BenchConfig",
    "DEFAULT_CONFIG",
    "QUICK",
    "SpeedResult",
    "compare_env_speed",
    "first_step_seconds",
    "speed_kernels",
]

@dataclass(frozen=True)
class BenchConfig:
    """What to measure and how long.

    Attributes:
        env_id: The screening id whose step rate is compared with CartPole's.
        reference_id: The reference Gymnasium id.
        block_steps: Steps per timed block (each env, each pair).
        pairs: Timed block pairs; the median ratio over them is reported.
        lp_flights: Flight counts of the day-horizon games whose LP is timed.
        seed: Instance seed of the LP games, and seed of the action sources and days.
    """

    env_id: str = "tsg/Screening-v1"
    reference_id: str = "CartPole-v1"
    block_steps: int = 5000
    pairs: int = 9
    lp_flights: tuple[int, ...] = (10, 20, 50, 100, 300)
    seed: int = 0


#: The ``--quick`` configuration (a few seconds; used by the smoke test).
#: The default configuration.
DEFAULT_CONFIG = BenchConfig()
QUICK = BenchConfig(block_steps=500, pairs=3, lp_flights=(10, 20))


@dataclass(frozen=True)
class SpeedResult:
    """Steps per second of the screening env and the reference, measured in alternating blocks.

    Attributes:
        env_id: The screening id.
        reference_id: The reference id.
        env_sps: Median steps per second of the screening env over the blocks.
        reference_sps: Median steps per second of the reference.
        ratio: Median over block pairs of env / reference steps per second.
        ratios: Every pair's ratio.
        kernel: The step's implementation (``TSG_ENVS_KERNEL``): ``numpy`` or ``numba``.
        first_step_seconds: CPU seconds of a fresh process's first step (numba: import and
            load from its cache), None if not measured.
        compile_seconds: CPU seconds of that first step with an empty numba cache (compiling the
            kernel); None for numpy.
    """

    env_id: str
    reference_id: str
    env_sps: float
    reference_sps: float
    ratio: float
    ratios: tuple[float, ...] = field(default=())
    kernel: str = "numpy"
    first_step_seconds: float | None = None
    compile_seconds: float | None = None


def _timed_block(
    env: gym.Env, pick: Callable[[int, dict], object], n_steps: int, state: dict
) -> float:
    """Step ``env`` ``n_steps`` times (resetting at episode ends); return the CPU seconds taken.

    CPU time of this process, not wall time: on a shared machine the time the process spends
    descheduled would otherwise land on whichever env happened to be running.
    """
    info = state["info"]
    i = state["i"]
    step = env.step
    t0 = time.process_time()
    for _ in range(n_steps):
        _, _, terminated, truncated, info = step(pick(i, info))
        i += 1
        if terminated or truncated:
            _, info = env.reset()
    elapsed = time.process_time() - t0
    state["info"], state["i"] = info, i
    return elapsed


def speed_kernels() -> tuple[str, ...]:
    """The step implementations measured here: numpy, and numba when it is installed."""
    return ("numpy", "numba") if kernel_name("auto") == "numba" else ("numpy",)


_FIRST_STEP = """
import sys, time
import gymnasium as gym, numpy as np
import tsg_envs
env = gym.make(sys.argv[1])
_, info = env.reset(seed=0)
action = env.unwrapped.polytopes.centers[info["category"]].copy()
t0 = time.process_time()
env.step(action)
print(time.process_time() - t0)
"""


def first_step_seconds(env_id: str, kernel: str, cache_dir: str | None = None) -> float:
    """CPU seconds of the first step of ``env_id`` in a fresh process with ``kernel``.

    Args:
        env_id: The screening id.
        kernel: ``numpy`` or ``numba``.
        cache_dir: numba's cache directory for the child (``NUMBA_CACHE_DIR``); an empty one
            makes it compile. None: numba's own choice (the package's ``__pycache__``).
    """
    import subprocess
    import sys

    env = {**os.environ, KERNEL_ENV_VAR: kernel,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    out = subprocess.run([sys.executable, "-c", _FIRST_STEP, env_id], capture_output=True,
                         text=True, env=env, check=True, cwd=ROOT)
    return float(out.stdout.split()[-1])


def compare_env_speed(config: BenchConfig = DEFAULT_CONFIG,
                      kernels: tuple[str, ...] | None = None,
                      first_step: bool = True) -> list[SpeedResult]:
    """Steps per second of ``config.env_id`` against ``config.reference_id`` (see module doc).

    One row per step implementation (``kernels``, default :func:`speed_kernels`), each measured
    in alternating blocks against the reference in the same process.
    """
    import tempfile

    kernels = speed_kernels() if kernels is None else kernels
    rng = np.random.default_rng(config.seed)
    envs = []
    for name in kernels:
        with chosen(name):
            envs.append(gym.make(config.env_id))
        if envs[-1].unwrapped.kernel != name:
            raise RuntimeError(f"asked for the {name} kernel, got {envs[-1].unwrapped.kernel}")
    ref = gym.make(config.reference_id)
    polys = envs[0].unwrapped.polytopes
    table = polys.sample(np.arange(polys.n_categories), rng)  # one feasible action per category
    ref.action_space.seed(config.seed)
    ref_actions = [ref.action_space.sample() for _ in range(4096)]

    def pick_env(i: int, info: dict) -> np.ndarray:
        return table[info["category"]]

    def pick_ref(i: int, info: dict) -> object:
        return ref_actions[i & 4095]

    states = []
    for e in envs:
        _, info = e.reset(seed=config.seed)
        states.append({"info": info, "i": 0})
    _, info = ref.reset(seed=config.seed)
    ref_state = {"info": info, "i": 0}
    # Warm-up (first-step checks, the kernel's load, caches), not timed.
    for e, st in zip(envs, states, strict=True):
        _timed_block(e, pick_env, min(config.block_steps, 500), st)
    _timed_block(ref, pick_ref, min(config.block_steps, 500), ref_state)
    env_sps: list[list[float]] = [[] for _ in envs]
    ref_sps: list[list[float]] = [[] for _ in envs]
    ratios: list[list[float]] = [[] for _ in envs]
    for _ in range(config.pairs):
        for k, (e, st) in enumerate(zip(envs, states, strict=True)):
            a = config.block_steps / _timed_block(e, pick_env, config.block_steps, st)
            b = config.block_steps / _timed_block(ref, pick_ref, config.block_steps, ref_state)
            env_sps[k].append(a)
            ref_sps[k].append(b)
            ratios[k].append(a / b)
    for e in envs:
        e.close()
    ref.close()
    rows = []
    for k, name in enumerate(kernels):
        first = compile_s = None
        if first_step:
            if name == "numba":
                with tempfile.TemporaryDirectory(prefix="tsg-numba-cache-") as empty:
                    compile_s = first_step_seconds(config.env_id, name, cache_dir=empty)
            first = first_step_seconds(config.env_id, name)
        rows.append(SpeedResult(
            env_id=config.env_id,
            reference_id=config.reference_id,
            env_sps=float(np.median(env_sps[k])),
            reference_sps=float(np.median(ref_sps[k])),
            ratio=float(np.median(ratios[k])),
            ratios=tuple(float(r) for r in ratios[k]),
            kernel=name,
            first_step_seconds=first,
            compile_seconds=compile_s,
        ))
    return rows
