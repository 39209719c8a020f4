r"""Train (or solve) one baseline and evaluate it: ``python -m baselines.train``.

Example::

    python -m baselines.train --algo slack-guided --env tsg/Screening-v1 --seed 0 \
        --out runs/sg0 --eval-days 5
    python -m baselines.train --algo alpha-ddpg --gradient-steps 10000 --seed 1 --out runs/ddpg1 \
        --set actor_lr=3e-4 --set hidden_sizes=64,64 --env-kwarg risk_slack=0.05
    python -m baselines.train --algo alpha-td3 --show-config

Method names (``--algo``): :data:`baselines.api.METHOD_MODULES` (alpha-ddpg, alpha-td3,
radial-ddpg, l2-ddpg, proj-ddpg, proj-penalty-ddpg, penalty-ddpg, lp, slack-lp, slack-guided,
es-guided, myopic, centre, sac, ppo).

What it does:

1. ``get_method(algo).train(run)``: trains (learned methods; ``--gradient-steps`` mini-batches,
   10,000 by default as in the paper, on training days seeded ``seed * 1_000_003 + k``) or
   solves (LP methods) on instance ``--instance-seed`` of ``--env``, writing checkpoints under
   ``--out`` and resuming from the last one there. ``--set KEY=VALUE`` overrides a field of the
   method's config dataclass (``--show-config`` lists them with their docstrings);
   ``--env-kwarg KEY=VALUE`` is passed to ``gym.make``. Each value is parsed against the type
   of its field or ``gym.make`` argument (``3e-4``, ``None``, ``64,64``, ``true``, a word;
   :mod:`baselines.config`), never evaluated; a value that does not fit is a usage error.
2. Evaluates the returned agent on ``--eval-days`` days seeded ``--eval-seed + k`` (default
   10_000 + k, disjoint from training days; see :mod:`tsg_envs.seeds`), next to the static
   LP and the slack-guided LP on the same arrival samples.
3. Prints the mean wait, the delay ratios against the LP and slack-guided (reference wait /
   agent wait, higher is better) and the two lines ``proposed_violations: N`` and
   ``executed_violations: N``; writes everything to ``OUT/eval.json`` (and the run's arguments
   to ``OUT/run.json``).

Non-learning methods and the evaluation are deterministic; learned methods are deterministic
under ``--seed`` on the same machine and library versions.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from baselines.api import PAPER_GRADIENT_STEPS, RunConfig, get_method, method_names
from baselines.config import Text, describe, kwargs_types, parse_text
from baselines.evaluate import evaluate
from baselines.nonlearning import jsonable
from tsg_envs.provenance import git_commit
from tsg_envs.seeds import EVAL_SEED_BASE, evaluation_day_seeds, seed_ranges_overlap
from tsg_envs.validation import cli_int

__all__ = ["build_parser", "parse_assignments", "env_kwargs_from_text", "run_config_from_args",
           "main"]

#: Default number of evaluation days.
DEFAULT_EVAL_DAYS = 5


def parse_assignments(items: Sequence[str] | None, flag: str) -> dict[str, Text]:
    """Split ``KEY=VALUE`` strings into a dict of texts (``-`` in a key becomes ``_``).

    The texts (:class:`baselines.config.Text`) are typed later, against the config field or
    ``gym.make`` argument they set.

    Raises:
        ValueError: for an item without ``=`` or with an empty key.
    """
    out: dict[str, Text] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise ValueError(f"{flag} expects KEY=VALUE, got {item!r}")
        out[key] = Text(value.strip())
    return out


def env_kwargs_from_text(env_id: str, texts: dict[str, Text]) -> dict[str, Any]:
    """``--env-kwarg`` texts typed against the environment class's ``__init__`` annotations.

    Raises:
        ValueError: for a name the environment does not take or a value that does not fit.
    """
    if not texts:
        return {}
    import gymnasium as gym

    import tsg_envs  # noqa: F401  (registers the ids)

    try:
        creator = gym.envs.registration.load_env_creator(gym.spec(env_id).entry_point)
    except gym.error.Error as err:
        raise ValueError(str(err)) from None
    types = kwargs_types(creator)
    unknown = sorted(set(texts) - set(types))
    if unknown:
        raise ValueError(f"--env-kwarg: {env_id} takes no {unknown}; it takes {sorted(types)}")
    return {k: parse_text(v, types[k], f"--env-kwarg {k}") for k, v in texts.items()}


def build_parser() -> argparse.ArgumentParser:
    """The CLI's argument parser."""
    p = argparse.ArgumentParser(
        prog="python -m baselines.train",
        description="Train (or solve) a tsg-envs baseline, checkpoint it and evaluate it "
        "against the static LP and the slack-guided LP on the same arrival samples.",
    )
    p.add_argument("--algo", required=True, choices=method_names(), help="method name")
    p.add_argument("--env", default="tsg/Screening-v1", help="Gymnasium id (default %(default)s)")
    p.add_argument("--gradient-steps", type=cli_int(0), default=PAPER_GRADIENT_STEPS,
                   help="training budget in gradient steps (mini-batches; the paper's budget is "
                   "10,000); ignored by non-learning methods (default %(default)s)")
    p.add_argument("--seed", type=cli_int(0), default=0,
                   help="seeds networks, exploration and training days (default %(default)s)")
    p.add_argument("--out", type=Path, default=None,
                   help="output directory (default runs/<algo>-seed<seed>)")
    p.add_argument("--instance-seed", type=cli_int(0), default=0,
                   help="game instance of --env (default %(default)s)")
    p.add_argument("--eval-days", type=cli_int(1), default=DEFAULT_EVAL_DAYS,
                   help="evaluation days (default %(default)s)")
    p.add_argument("--eval-seed", type=cli_int(0), default=EVAL_SEED_BASE,
                   help="first evaluation day seed; days use eval_seed + k (default %(default)s)")
    p.add_argument("--set", dest="hparams", action="append", default=[], metavar="KEY=VALUE",
                   help="override a hyperparameter of the method's config (repeatable)")
    p.add_argument("--env-kwarg", dest="env_kwargs", action="append", default=[],
                   metavar="KEY=VALUE", help="extra gym.make kwarg (repeatable)")
    p.add_argument("--show-config", action="store_true",
                   help="print the method's config (every field, its type, value and docstring, "
                   "with the --set overrides applied) and exit")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def run_config_from_args(args: argparse.Namespace) -> RunConfig:
    """The :class:`RunConfig` described by parsed arguments (hyperparameters typed).

    Raises:
        ValueError: for a malformed assignment, an unknown name or a value that does not fit.
    """
    out = args.out if args.out is not None else Path("runs") / f"{args.algo}-seed{args.seed}"
    texts = parse_assignments(args.hparams, "--set")
    config = get_method(args.algo).build_config(texts)
    return RunConfig(
        algo=args.algo,
        env_id=args.env,
        gradient_steps=args.gradient_steps,
        seed=args.seed,
        out=Path(out),
        instance_seed=args.instance_seed,
        env_kwargs=env_kwargs_from_text(args.env,
                                        parse_assignments(args.env_kwargs, "--env-kwarg")),
        hparams={k: getattr(config, k) for k in texts},
        progress=not args.no_progress,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        run = run_config_from_args(args)
    except ValueError as err:
        parser.error(str(err))
    method = get_method(run.algo)
    if args.show_config:
        config = method.build_config(run.hparams)
        print(f"{run.algo}: {method.description}")
        print(describe(config, method.config_fields) if config is not None
              else "(no hyperparameters)")
        return 0
    eval_seeds = evaluation_day_seeds(args.eval_days, args.eval_seed)
    if method.learned:
        n_passengers = run.make_env().unwrapped.game.n_passengers
        # An upper bound on training days: every method takes at most 100 environment steps per
        # gradient step (PPO: 2,048 per 80) plus a warm-up of a few thousand.
        env_steps = 100 * run.gradient_steps + 10_000
        n_train_days = -(-env_steps // max(n_passengers, 1)) + 1
        if seed_ranges_overlap(run.seed, n_train_days, eval_seeds):
            warnings.warn(
                f"training days of seed {run.seed} may reuse evaluation seeds {eval_seeds[0]}.."
                f"{eval_seeds[-1]}; pick another --seed or --eval-seed", stacklevel=1,
            )
    run.out.mkdir(parents=True, exist_ok=True)
    (run.out / "run.json").write_text(
        json.dumps(jsonable({**vars(args), "out": run.out, "env_kwargs": run.env_kwargs,
                             "hparams": run.hparams}), indent=2) + "\n"
    )

    t0 = time.perf_counter()
    agent = method.train(run)
    t_train = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = evaluate(
        lambda env: agent, run.env_id, [run.instance_seed], eval_seeds,
        env_kwargs=run.env_kwargs, progress=run.progress,
    )
    t_eval = time.perf_counter() - t0
    summary = result.summary()
    record = {
        "algo": run.algo,
        "env_id": run.env_id,
        "instance_seed": run.instance_seed,
        "seed": run.seed,
        "gradient_steps": run.gradient_steps if method.learned else 0,
        "learned": method.learned,
        "hparams": jsonable(run.hparams),
        "eval_seeds": eval_seeds,
        "git_commit": git_commit(short=None, dirty_paths=None),
        **result.to_dict(),
    }
    (run.out / "eval.json").write_text(json.dumps(record, indent=2) + "\n")

    print(f"{run.algo} on {run.env_id} (instance {run.instance_seed}), "
          f"{len(eval_seeds)} evaluation days (seeds {eval_seeds[0]}..{eval_seeds[-1]}); "
          f"train/solve {t_train:.1f} s, evaluation {t_eval:.1f} s")
    print(f"mean_wait: {summary['mean_wait']:.4f} min (p95 {summary['p95_wait']:.2f}, "
          f"max {summary['max_wait']:.2f})")
    print(f"delay_ratio_lp: {summary['ratio_lp']:.4f} (LP mean wait "
          f"{summary['lp_mean_wait']:.4f} min on the same arrival samples)")
    print(f"delay_ratio_slack_guided: {summary['ratio_slack_guided']:.4f} (slack-guided mean "
          f"wait {summary['slack_guided_mean_wait']:.4f} min)")
    print(f"max_violation: {summary['max_violation']:.3g}")
    print(f"proposed_violations: {summary['proposed_violations']}")
    print(f"executed_violations: {summary['executed_violations']}")
    print(f"wrote {run.out / 'eval.json'}")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
