r"""Train learned baselines on every unit of a suite with several seeds, resumably.

Usage::

    .venv/bin/python -m experiments.multiseed --suite quick \
        --plan alpha-ddpg=5 alpha-td3=5 radial-ddpg=5 proj-ddpg=5 sac=3 ppo=3 l2-ddpg=3@300 \
        [--gradient-steps 10000] [--workers 2] [--out runs/multiseed]

``METHOD=SEEDS@STEPS`` gives one method its own budget in gradient steps (L2-DDPG's QP layer
makes a gradient step about 25 times dearer, so it gets the number that takes α-DDPG's wall
time; label the row with ``--train-gradient-steps`` when it is evaluated).

Each (method, unit, seed) trains under ``OUT/METHOD/{env}_i{instance}/s{seed}`` (the id's
``/`` replaced by ``_``) with the suite's budget in gradient steps (mini-batches), and writes
``done.json`` (budget, wall time) when it has finished. An interrupted run resumes from its
last checkpoint (at a day boundary); finished ones are skipped, so the plan can be completed in
chunks. Seeds go outermost (all methods' seed 0 first), so a partial plan stays balanced.
The leaderboard then evaluates every seed of a method with::

    python -m leaderboard evaluate --agent alpha-ddpg --suite quick --train-seeds 0,1,2,3,4 \
        --checkpoint 'runs/multiseed/alpha-ddpg/{env}_i{instance}/s{seed}'
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path


def run_dir(out: Path, method: str, env_id: str, instance: int, seed: int) -> Path:
    """Where one (method, unit, seed) run lives."""
    return Path(out) / method / f"{env_id.replace('/', '_')}_i{instance}" / f"s{seed}"


def _train(args: tuple[str, str, int, int, int, str]) -> dict[str, object]:
    method, env_id, instance, seed, budget, out = args
    from baselines.api import RunConfig, get_method

    where = run_dir(Path(out), method, env_id, instance, seed)
    run = RunConfig(algo=method, env_id=env_id, gradient_steps=budget, seed=seed, out=where,
                    instance_seed=instance, progress=False)
    t = time.perf_counter()
    get_method(method).train(run)
    record = {"method": method, "env_id": env_id, "instance_seed": instance, "seed": seed,
              "gradient_steps": budget, "train_s": round(time.perf_counter() - t, 1)}
    (where / "done.json").write_text(json.dumps(record) + "\n", encoding="utf-8")
    return record


def main(argv: list[str] | None = None) -> int:
    """Train the missing runs of the plan."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", default="quick", help="suite whose units are trained")
    p.add_argument("--plan", nargs="+", required=True, metavar="METHOD=SEEDS",
                   help="method and number of seeds (0..SEEDS-1)")
    p.add_argument("--gradient-steps", type=int, default=None,
                   help="budget in gradient steps (default: the suite's)")
    p.add_argument("--workers", type=int, default=1, help="parallel training processes")
    p.add_argument("--out", default="runs/multiseed", help="root of the runs")
    args = p.parse_args(argv)

    from leaderboard.suites import get_suite

    suite = get_suite(args.suite)
    budget = args.gradient_steps or suite.train_gradient_steps
    plan: dict[str, tuple[int, int]] = {}
    for item in args.plan:
        method, _, rest = item.partition("=")
        n, _, steps = rest.partition("@")
        try:
            plan[method] = (int(n or 1), int(steps) if steps else budget)
        except ValueError:
            p.error(f"--plan {item!r}: expected METHOD=SEEDS or METHOD=SEEDS@GRADIENT_STEPS")
    jobs = []
    for seed in range(max(n for n, _ in plan.values())):
        for method, (n, steps) in plan.items():
            if seed >= n:
                continue
            for env_id, instance in suite.units:
                done = run_dir(Path(args.out), method, env_id, instance, seed) / "done.json"
                if not done.is_file():
                    jobs.append((method, env_id, instance, seed, steps, args.out))
                elif (had := json.loads(done.read_text())["gradient_steps"]) != steps:
                    p.error(f"{done} was trained for {had} gradient steps, not {steps}; "
                            "give that budget or another --out")
    total = sum(n * len(suite.units) for n, _ in plan.values())
    print(f"{total - len(jobs)} of {total} runs done; training {len(jobs)}", flush=True)
    if args.workers <= 1:
        for job in jobs:
            print(json.dumps(_train(job)), flush=True)
        return 0
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = [pool.submit(_train, job) for job in jobs]
        for fut in as_completed(futures):
            print(json.dumps(fut.result()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
