"""``python -m benchmarks.instructions``: instructions per step, counted by cachegrind.

A measure of the single environment's step that the machine's load does not move (timings on a
shared machine do): valgrind's cachegrind counts the instructions a child process executes,
once with ``--steps`` steps after a warm-up and once with a fifth of them, and the difference
per step is reported, so start-up, imports and the warm-up cancel. The children step
``tsg/Screening-v1`` with each implementation (``TSG_ENVS_KERNEL``) and ``CartPole-v1``
through ``gym.make``, driven as in ``python -m benchmarks.envs``' speed run (precomputed actions,
resets at episode ends).

numba compiles for the CPU it sees, and valgrind shows it another one, so the children run with
``NUMBA_CPU_NAME=generic`` (the kernel compiled for a generic x86-64, loaded from numba's cache
inside valgrind after one compile outside it). Needs valgrind; slow (minutes per child).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from benchmarks.envs import machine_info
from benchmarks.speed import ROOT, speed_kernels

__all__ = ["instructions_per_step", "main"]

_CHILD = """
import os, sys
kind, n = sys.argv[1], int(sys.argv[2])
import numpy as np, gymnasium as gym
if kind == "reference":
    env = gym.make("CartPole-v1")
    env.action_space.seed(0)
    table = [env.action_space.sample() for _ in range(4096)]
    pick = lambda i, info: table[i & 4095]
else:
    os.environ["TSG_ENVS_KERNEL"] = kind
    import tsg_envs
    env = gym.make("tsg/Screening-v1")
    polys = env.unwrapped.polytopes
    table = polys.sample(np.arange(polys.n_categories), np.random.default_rng(0))
    pick = lambda i, info: table[info["category"]]
_, info = env.reset(seed=0)
for i in range(200 + n):  # 200 warm-up steps (the kernel's load, caches), then n
    _, _, terminated, truncated, info = env.step(pick(i, info))
    if terminated or truncated:
        _, info = env.reset()
"""


def _count(kind: str, steps: int, env: dict[str, str]) -> int:
    out = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, "-c", _CHILD, kind, str(steps)],
        capture_output=True, text=True, env=env, check=True, cwd=ROOT,
    )
    match = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if match is None:
        raise RuntimeError(f"no instruction count in cachegrind's output:\n{out.stderr[-2000:]}")
    return int(match.group(1).replace(",", ""))


def instructions_per_step(kind: str, steps: int = 5000) -> float:
    """Instructions per step of ``kind`` (``numpy``, ``numba`` or ``reference``: CartPole-v1)."""
    env = {**os.environ, "NUMBA_CPU_NAME": "generic",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    if kind == "numba":  # compile once outside valgrind (a generic CPU: the same cache key)
        subprocess.run([sys.executable, "-c", _CHILD, kind, "1"], check=True, env=env, cwd=ROOT,
                       capture_output=True)
    few = max(steps // 5, 1)
    return (_count(kind, steps, env) - _count(kind, few, env)) / (steps - few)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.instructions``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.instructions", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=5000, help="steps of the longer child")
    parser.add_argument("--json", default=None, help="write the counts (and the machine) here")
    args = parser.parse_args(argv)
    rows = {kind: instructions_per_step(kind, args.steps)
            for kind in (*speed_kernels(), "reference")}
    ref = rows["reference"]
    lines = ["| step | instructions per step | CartPole-v1 / this |", "|---|---:|---:|"]
    for kind, count in rows.items():
        name = "`CartPole-v1`" if kind == "reference" else f"`tsg/Screening-v1`, {kind}"
        lines.append(f"| {name} | {count:,.0f} | {ref / count:.2f} |")
    print("\n".join(lines))
    if args.json:
        payload = {"machine": machine_info(), "command": "python -m benchmarks.instructions "
                   f"--json {args.json}", "steps": args.steps, "instructions_per_step": rows}
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
