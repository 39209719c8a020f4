"""``python -m tsg_envs``: run the static LP policy through one day and print its row.

Builds the environment (default ``tsg/Screening-v1``), runs the static window LP policy for one
day, and prints mean / p95 / max wait and the worst-case risk against the bound Σ_θ ψ_θ.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import gymnasium as gym

import tsg_envs  # noqa: F401  (registers the ids)
from tsg_envs.risk import worst_case_risk
from tsg_envs.rollout import LPAgent, rollout
from tsg_envs.validation import cli_int


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="python -m tsg_envs", description=__doc__)
    parser.add_argument("--env", default="tsg/Screening-v1", help="environment id")
    parser.add_argument("--instance-seed", type=cli_int(0), default=0, help="which game instance")
    parser.add_argument("--seed", type=cli_int(0), default=0, help="which day of arrivals")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    env = gym.make(args.env, instance_seed=args.instance_seed)
    u: Any = env.unwrapped
    agent = LPAgent(env)
    stats = rollout(env, agent, seed=args.seed)
    report = worst_case_risk(env, agent, seed=args.seed)
    g = u.game
    print(
        f"{args.env} instance {args.instance_seed} day {args.seed}: {g.n_flights} flights, "
        f"{g.n_passengers} passengers, {g.n_teams} teams, risk slack {u.risk_slack:g}"
    )
    print(f"{'agent':<10} {'mean wait':>10} {'p95':>8} {'max':>8} {'risk':>9} {'bound':>9}"
          f" {'violations':>10}")
    print(
        f"{'static LP':<10} {stats.mean_wait:10.2f} {stats.p95_wait:8.2f} {stats.max_wait:8.2f}"
        f" {report.risk:9.4f} {report.bound:9.4f} {stats.proposed_violations:10d}"
    )
    print(f"(waits in minutes; risk = best-responding attacker's expected gain; "
          f"{time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
