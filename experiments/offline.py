"""The named offline datasets and the behaviour-cloning rows: ``python -m experiments.offline``.

From the repository's root:

1. writes every named dataset of :data:`leaderboard.datasets.NAMED` (the LP, slack-guided and
   the clairvoyant plan on ``tsg/Screening-v1`` and ``tsg/Screening-Window-10F-v2``, instance 0,
   ``--days`` training days of run seed 0) under ``MINARI_DATASETS_PATH`` (replacing them), and
   records their sizes, digests and cost in ``results/offline/datasets.json``;
2. trains ``bc`` (:mod:`baselines.bc`) from each dataset alone, one run per ``--bc-seeds`` seed
   and ``--bc-steps`` gradient steps, checkpoints under ``runs/offline/bc/EXPERT/ENV_iI/sSEED``;
3. plays every seed's policy and the expert on ``--eval-days`` evaluation days
   (``tsg_envs.seeds.EVAL_SEED_BASE + k``, never training days) with the static LP on the same
   passengers; the clairvoyant expert's wait of a day is its bracket's plan replayed. Writes
   ``results/offline/bc.json``: per dataset the expert's and each seed's mean wait, the delay
   ratio expert wait / BC wait (1: as good as its expert; higher is better), the ratio against
   the LP, the largest proposed violation.

``--only datasets`` or ``--only bc`` runs one half (``bc`` reads the datasets already written);
``--dataset ID`` (repeatable) redoes some of the named datasets, replacing their rows only.
``python -m experiments.readme`` then fills the docs' ``offline-datasets`` and ``offline-bc``
blocks from the two files.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from leaderboard.datasets import NAMED, NamedDataset, write_named
from tsg_envs.provenance import provenance
from tsg_envs.seeds import evaluation_day_seeds
from tsg_envs.validation import cli_int

__all__ = ["DEFAULT_DAYS", "DEFAULT_BC_STEPS", "bc_rows", "main"]

#: Days per named dataset by default (the command takes a few hundred as well).
DEFAULT_DAYS = 20
#: BC's default budget (gradient steps) per seed.
DEFAULT_BC_STEPS = 2_000
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "results" / "offline"
RUNS = ROOT / "runs" / "offline" / "bc"


def _slug(env_id: str) -> str:
    return env_id.replace("/", "_")


def checkpoint_dir(spec: NamedDataset, seed: int, runs: Path = RUNS) -> Path:
    """Where the BC run of ``spec``'s dataset and ``seed`` keeps its checkpoint."""
    return runs / spec.expert / f"{_slug(spec.env_id)}_i{spec.instance_seed}" / f"s{seed}"


def _expert_waits(spec: NamedDataset, days: list[int]) -> list[float]:
    """The expert's mean wait on each evaluation day (the clairvoyant: its bracket's plan)."""
    import gymnasium as gym

    from baselines import slack_guided
    from baselines.api import build_agent
    from tsg_envs.bracket import bracket
    from tsg_envs.rollout import rollout

    env = gym.make(spec.env_id, instance_seed=spec.instance_seed)
    if spec.expert == "clairvoyant":
        return [bracket(env, d, candidates={"slack-guided": slack_guided.make_agent}).plan_wait
                for d in days]
    agent = build_agent(spec.expert, env)
    return [rollout(env, agent, seed=d).mean_wait for d in days]


def bc_rows(named: tuple[NamedDataset, ...], seeds: list[int], steps: int, eval_days: int,
            runs: Path = RUNS, progress: bool = False) -> list[dict[str, Any]]:
    """Train BC from each dataset per seed and score it against its expert (see the module)."""
    from baselines.api import RunConfig, get_method
    from tsg_envs.harness import Unit, evaluate
    from tsg_envs.rollout import LPAgent

    method = get_method("bc")
    days = evaluation_day_seeds(eval_days)
    rows = []
    for spec in named:
        agents: dict[str, Any] = {}
        train_s = []
        for seed in seeds:
            out = checkpoint_dir(spec, seed, runs)
            shutil.rmtree(out, ignore_errors=True)
            run = RunConfig(algo="bc", env_id=spec.env_id, instance_seed=spec.instance_seed,
                            gradient_steps=steps, seed=seed, out=out, progress=progress,
                            hparams={"dataset": spec.dataset_id})
            start = time.process_time()
            agent = method.train(run)
            train_s.append(time.process_time() - start)
            agents[f"bc-s{seed}"] = lambda env, a=agent: a
        recs = evaluate({**agents, "lp": LPAgent},
                        [Unit(spec.env_id, spec.instance_seed)], days)
        by = {name: [r for r in recs if r.agent == name] for name in [*agents, "lp"]}
        start = time.process_time()
        expert = _expert_waits(spec, days)
        expert_s = time.process_time() - start
        lp = [r.mean_wait for r in by["lp"]]
        per_seed = {}
        for seed in seeds:
            waits = [r.mean_wait for r in by[f"bc-s{seed}"]]
            per_seed[str(seed)] = {
                "mean_wait": float(np.mean(waits)),
                "ratio_vs_expert": float(np.mean([e / w for e, w in zip(expert, waits,
                                                                          strict=True)])),
                "ratio_vs_lp": float(np.mean([v / w for v, w in zip(lp, waits, strict=True)])),
                "max_violation": max(r.max_violation for r in by[f"bc-s{seed}"]),
                "proposed_violations": sum(r.proposed_violations for r in by[f"bc-s{seed}"]),
            }
        ratios = [s["ratio_vs_expert"] for s in per_seed.values()]
        rows.append({
            "dataset_id": spec.dataset_id, "env_id": spec.env_id,
            "instance_seed": spec.instance_seed, "expert": spec.expert,
            "eval_days": days, "gradient_steps": steps, "seeds": seeds,
            "expert_mean_wait": float(np.mean(expert)), "lp_mean_wait": float(np.mean(lp)),
            "expert_ratio_vs_lp": float(np.mean([v / e for v, e in zip(lp, expert,
                                                                       strict=True)])),
            "bc": per_seed,
            "bc_mean_wait": float(np.mean([s["mean_wait"] for s in per_seed.values()])),
            "ratio_vs_expert": {"mean": float(np.mean(ratios)), "min": float(np.min(ratios)),
                                "max": float(np.max(ratios))},
            "train_cpu_s": float(np.mean(train_s)), "expert_eval_cpu_s": expert_s,
        })
    return rows


def _merge(path: Path, key: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` over those already in ``path`` (by dataset id), in :data:`NAMED`'s order.

    A run over some of the named datasets (``--dataset``) replaces their rows only.
    """
    old = json.loads(path.read_text(encoding="utf-8"))[key] if path.exists() else []
    by_id = {r["dataset_id"]: r for r in old} | {r["dataset_id"]: r for r in rows}
    order = [n.dataset_id for n in NAMED]
    return sorted(by_id.values(), key=lambda r: (order.index(r["dataset_id"])
                                                 if r["dataset_id"] in order else len(order)))


def _write(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1, allow_nan=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m experiments.offline``."""
    parser = argparse.ArgumentParser(prog="python -m experiments.offline", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=cli_int(1), default=DEFAULT_DAYS,
                        help="days per named dataset (default %(default)s)")
    parser.add_argument("--only", choices=("datasets", "bc"), default=None)
    parser.add_argument("--bc-steps", type=cli_int(1), default=DEFAULT_BC_STEPS,
                        help="BC gradient steps per seed (default %(default)s)")
    parser.add_argument("--bc-seeds", type=cli_int(0), nargs="+", default=[0, 1, 2])
    parser.add_argument("--eval-days", type=cli_int(1), default=5,
                        help="evaluation days (EVAL_SEED_BASE + k; default %(default)s)")
    parser.add_argument("--dataset", action="append", default=None,
                        help="only these named datasets (repeatable; default all)")
    parser.add_argument("--out", type=Path, default=OUT, help="results folder")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    named = NAMED
    if args.dataset:
        unknown = sorted(set(args.dataset) - {n.dataset_id for n in NAMED})
        if unknown:
            parser.error(f"not a named dataset: {', '.join(unknown)}")
        named = tuple(n for n in NAMED if n.dataset_id in args.dataset)
    machine = provenance()
    if args.only in (None, "datasets"):
        start = time.time()
        rows = write_named(named, args.days, force=True, progress=not args.no_progress)
        _write(args.out / "datasets.json", {
            "command": f"python -m experiments.offline --only datasets --days {args.days}",
            "days": args.days, "wall_s": time.time() - start, "machine": machine,
            "datasets": _merge(args.out / "datasets.json", "datasets", rows)})
        for r in rows:
            print(f"{r['dataset_id']}: {r['episodes']} days, {r['bytes']:,} bytes, "
                  f"{r['cpu_s']:.0f} s CPU, content sha256 {r['content_sha256']}")
    if args.only in (None, "bc"):
        rows = bc_rows(named, list(args.bc_seeds), args.bc_steps, args.eval_days,
                       progress=not args.no_progress)
        _write(args.out / "bc.json", {
            "command": (f"python -m experiments.offline --only bc --bc-steps {args.bc_steps} "
                        f"--bc-seeds {' '.join(map(str, args.bc_seeds))} "
                        f"--eval-days {args.eval_days}"),
            "machine": machine, "rows": _merge(args.out / "bc.json", "rows", rows)})
        for r in rows:
            rv = r["ratio_vs_expert"]
            print(f"bc <- {r['dataset_id']}: wait {r['bc_mean_wait']:.3f} vs expert "
                  f"{r['expert_mean_wait']:.3f} min, ratio vs expert {rv['mean']:.3f} "
                  f"[{rv['min']:.3f}, {rv['max']:.3f}] over {len(r['seeds'])} seeds")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
