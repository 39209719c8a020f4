"""``python -m experiments.paper``: regenerate the paper's four experiments (PNG + CSV).

Run from the repository's root (the package is not installed). Each (experiment, point,
instance) is a unit cached under ``OUT/units/`` as it finishes and reused while its key matches,
so a run resumes, can be completed in chunks (``--figures``, ``--flights``) and spread over local
processes or Ray tasks; ``--render-only`` redraws every figure and ``summary.md`` from the cached
units, ``--verify N`` computes N cached units again and compares them with the cache. E.g. the
committed ``results/paper/``::

    python -m experiments.paper --train-adaptive --render-only
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from experiments.paper.config import PaperConfig
from leaderboard.runner import BACKENDS, Execution
from tsg_envs.validation import cli_int

__all__ = ["build_parser", "config_from_args", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m experiments.paper``."""
    pp = argparse.ArgumentParser(prog="python -m experiments.paper", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    pp.add_argument("--quick", action="store_true", help="a small protocol for CI")
    pp.add_argument("--out", default="results/paper", help="output directory")
    pp.add_argument(
        "--adaptive-checkpoint",
        default=None,
        help="alpha-DDPG checkpoint template ({env}, {instance}) for the adaptive "
        "curve; without it the non-learning online baselines stand in",
    )
    pp.add_argument("--train-adaptive", action="store_true",
                    help="train alpha-DDPG on every (point, instance) unit (the paper's agent)")
    pp.add_argument("--gradient-steps", type=cli_int(1), default=None,
                    help="its budget in gradient steps (default 10,000, the paper's; 200 "
                    "with --quick)")
    pp.add_argument("--workers", type=cli_int(1), default=1, help="parallel unit processes")
    pp.add_argument("--backend", choices=BACKENDS, default="local",
                    help="local processes or one Ray task per unit")
    pp.add_argument("--address", default=None, help="Ray cluster address (--backend ray)")
    pp.add_argument("--instances", type=cli_int(1), default=None,
                    help="override: instances 0..N-1 (experiment 1; experiments 2 and 4 keep "
                    "at most their own count)")
    pp.add_argument("--other-instances", type=cli_int(1), default=None,
                    help="override: experiments 2 and 4 use the first N instances (default 10)")
    pp.add_argument("--days", type=cli_int(1), default=None, help="override: days per instance")
    pp.add_argument("--figures", nargs="+", choices=("fig1", "fig2", "fig4"), default=None,
                    help="compute the missing units of these experiments only (default: all); "
                    "the others reuse their cached units, and every figure is redrawn "
                    "(figure 3 reads experiment 1's trainings)")
    pp.add_argument("--flights", nargs="+", type=cli_int(1), default=None, metavar="N",
                    help="override: experiment 1's flight counts (default 5 10 20 50 100 300)")
    pp.add_argument("--render-only", action="store_true",
                    help="compute no unit: redraw every figure and the summary from the cached "
                    "units (a point shows the instances it has; the CSVs count them)")
    pp.add_argument("--verify", type=cli_int(1), default=None, metavar="N",
                    help="compute N cached units again from scratch (drawn at random from the "
                    "experiments of --figures and the points this configuration names; alpha-"
                    "DDPG retrained in a scratch folder) and compare them with the cache; "
                    "exit 1 if one differs; draws nothing")
    pp.add_argument("--verify-seed", type=cli_int(0), default=0,
                    help="seed of --verify's draw (default 0)")
    pp.add_argument("--no-progress", action="store_true", help="no progress bar")
    return pp


def config_from_args(args: argparse.Namespace) -> PaperConfig:
    """The :class:`PaperConfig` the parsed arguments ask for.

    Raises:
        ValueError: for contradictory or unknown options (the message says which).
    """
    if args.gradient_steps is not None and not args.train_adaptive:
        raise ValueError("--gradient-steps is alpha-DDPG's training budget: it needs "
                         "--train-adaptive")
    cfg = PaperConfig.quick_config() if args.quick else PaperConfig()
    if args.adaptive_checkpoint:
        cfg = cfg.replace(adaptive_checkpoint=args.adaptive_checkpoint)
    if args.instances is not None:
        cfg = cfg.replace(instances=tuple(range(args.instances)))
    if args.other_instances is not None:
        cfg = cfg.replace(other_instances=args.other_instances)
    if args.days is not None:
        cfg = cfg.replace(days=args.days)
    if args.figures:
        cfg = cfg.replace(figures=tuple(args.figures))
    if args.render_only:
        cfg = cfg.replace(figures=())
    if args.flights:
        import gymnasium as gym

        import tsg_envs  # noqa: F401 - registers the ids

        missing = [k for k in args.flights if f"tsg/Screening-Window-{k}F-v1" not in gym.registry]
        if missing or len(set(args.flights)) != len(args.flights):
            raise ValueError(f"--flights takes distinct flight counts of registered window ids "
                             f"(tsg/Screening-Window-<N>F-v1); not registered: {missing}")
        cfg = cfg.replace(flights=tuple(sorted(args.flights)))
    if args.train_adaptive:
        steps = args.gradient_steps or (200 if args.quick else 10_000)
        cfg = cfg.replace(adaptive_gradient_steps=steps)
    if args.verify is not None and args.render_only:
        raise ValueError("--verify computes units again; --render-only computes none")
    return cfg


def main(argv: list[str] | None = None) -> int:
    """Entry point: run (or verify) the experiments; 2 on a usage error, 1 if a unit differs."""
    args = build_parser().parse_args(argv)
    try:
        cfg = config_from_args(args)
        run = Execution(workers=args.workers, backend=args.backend, address=args.address,
                        progress=not args.no_progress)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.verify is not None:
        from experiments.paper.verify import verify_units

        try:
            checks = verify_units(cfg, Path(args.out), count=args.verify, seed=args.verify_seed,
                                  execution=run)
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        for check in checks:
            print(f"{check.path}: {check.message}")
        bad = sum(not c.ok for c in checks)
        print(f"{len(checks) - bad} of {len(checks)} unit(s) reproduced"
              f" ({sum(c.exact for c in checks)} bit for bit)")
        return 1 if bad else 0
    from experiments.paper.run import run_paper

    for path in run_paper(cfg, Path(args.out), run):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
