"""The evaluation harness against the per-day loop it replaces, and its isolation from agents."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import tsg_envs  # noqa: F401  (registers the ids)
from tsg_envs.harness import EpisodeRecord, Unit, delay_ratio, evaluate
from tsg_envs.rollout import CentreAgent, LPAgent, rollout

MICRO = [Unit("tsg/Screening-Window-5F-v1", 0), Unit.of("tsg/Screening-v1", 1, risk_slack=0.05)]
DAYS = [10_000, 10_001, 10_002]


class RowByRow:
    """The LP agent without act_batch (the harness calls act row by row)."""

    def __init__(self, env: gym.Env) -> None:
        self.inner = LPAgent(env)

    def act(self, obs: np.ndarray, info: dict) -> np.ndarray:
        return self.inner.act(obs, info)


class Stateful(RowByRow):
    """An agent with reset(): rolled out one day at a time, reset before each day."""

    resets = 0

    def reset(self) -> None:
        Stateful.resets += 1


@pytest.mark.parametrize("batch", [1, 2, 64])
def test_records_equal_the_per_day_rollouts(batch: int) -> None:
    factories = {"lp": LPAgent, "centre": CentreAgent, "row-by-row": RowByRow}
    records = evaluate(factories, MICRO, DAYS, batch=batch)
    assert len(records) == len(MICRO) * len(factories) * len(DAYS)
    assert all(isinstance(r, EpisodeRecord) for r in records)
    it = iter(records)
    for unit in MICRO:
        env = gym.make(unit.env_id, **unit.kwargs)
        for name, factory in factories.items():
            agent = factory(env)
            for day in DAYS:
                rec = next(it)
                assert (rec.agent, rec.env_id, rec.instance_seed, rec.day_seed) == (
                    name, unit.env_id, unit.instance_seed, day)
                want = rollout(env, agent, seed=day)
                assert rec.n_passengers == want.waits.shape[0]
                for key, value in want.summary().items():
                    got = getattr(rec, key)
                    if isinstance(value, int):
                        assert got == value, key
                    else:
                        assert got == pytest.approx(value, rel=1e-10, abs=1e-12), key


def test_agents_with_reset_run_day_by_day() -> None:
    Stateful.resets = 0
    records = evaluate({"stateful": Stateful}, MICRO[:1], DAYS, batch=64)
    assert Stateful.resets == len(DAYS) and len(records) == len(DAYS)


def test_delay_ratio_is_strict_json() -> None:
    assert delay_ratio(6.0, 3.0) == 2.0
    assert delay_ratio(0.0, 0.0) == 1.0
    assert delay_ratio(2.0, 0.0) is None  # a zero-wait agent beside a waiting reference
    assert delay_ratio(None, 1.0) is None  # no reference


def test_a_record_carries_its_references_and_their_ratios() -> None:
    rec = EpisodeRecord(agent="a", env_id="e", instance_seed=0, day_seed=1, n_passengers=3,
                        mean_wait=2.0, p95_wait=3.0, max_wait=4.0, proposed_violations=0,
                        executed_violations=0, max_violation=0.0, total_reward=-6.0)
    both = rec.with_references({"lp": 6.0, "slack-guided": 1.0})
    assert rec.reference_mean_wait == {} and rec.ratio("lp") is None
    assert both.ratio("lp") == 3.0 and both.ratio("slack-guided") == 0.5
    assert both.summary() == rec.summary() and hash(both) == hash(rec)


def test_the_harness_imports_no_agent_package() -> None:
    code = (
        "import json, sys\n"
        "from tsg_envs.harness import Unit, evaluate\n"
        "from tsg_envs.rollout import LPAgent\n"
        "recs = evaluate({'lp': LPAgent}, [Unit('tsg/Screening-Window-5F-v1', 0)], [1, 2])\n"
        "mods = [m for m in ('torch', 'baselines', 'leaderboard') if m in sys.modules]\n"
        "print(json.dumps({'records': len(recs), 'loaded': mods}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"records": 2, "loaded": []}
