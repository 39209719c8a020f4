"""es-guided: slack-guided with μ and team prices learned by CMA-ES (baselines/es_guided.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import tsg_envs  # noqa: F401  (registers the ids)
from baselines.api import RunConfig, get_method
from baselines.es_guided import ESGuidedAgent, ESGuidedConfig, day_mean_wait
from baselines.slack_guided import PerPassengerLP, make_agent

ENV_ID = "tsg/Screening-Window-5F-v1"
TINY = {"generations": 2, "popsize": 3, "days_per_generation": 1}


@pytest.fixture(scope="module")
def env() -> gym.Env:
    return gym.make(ENV_ID, instance_seed=0)


def _day_actions(env: gym.Env, agent, seed: int, n: int = 150) -> np.ndarray:
    obs, info = env.reset(seed=seed)
    out = []
    for _ in range(n):
        a = agent.act(obs, info)
        out.append(a)
        obs, _, term, trunc, info = env.step(a)
        if term or trunc:
            break
    return np.array(out)


def test_learned_part_zeroed_is_slack_guided(env):
    """θ = 0 (μ = 1, no prices) is slack-guided at its default μ, action for action."""
    zero = ESGuidedAgent(env, np.zeros(env.unwrapped.game.n_teams + 1))
    sg = make_agent(env)
    np.testing.assert_array_equal(_day_actions(env, zero, 11), _day_actions(env, sg, 11))


def test_a_price_common_to_every_team_changes_nothing(env):
    """Σπ = 1, so adding one constant to every team's price shifts every cost equally."""
    n = env.unwrapped.game.n_teams
    a = ESGuidedAgent(env, np.zeros(n + 1))
    b = ESGuidedAgent(env, np.concatenate([[0.0], np.full(n, 2.5)]))
    np.testing.assert_allclose(_day_actions(env, a, 12), _day_actions(env, b, 12), atol=1e-12)


def test_a_high_price_moves_mass_off_a_team(env):
    """Pricing one team up never puts more of a passenger on it (same state, same polytope)."""
    u = env.unwrapped
    obs, info = env.reset(seed=3)
    base = ESGuidedAgent(env, np.zeros(u.game.n_teams + 1)).act(obs, info)
    t = int(np.argmax(base))
    theta = np.zeros(u.game.n_teams + 1)
    theta[1 + t] = 4.0
    priced = ESGuidedAgent(env, theta).act(obs, info)
    assert priced[t] <= base[t] + 1e-12
    c = int(info["category"])
    assert (u.polytopes.A_ub[c] @ priced - u.polytopes.b_ub[c]).max() <= 1e-9


def test_bad_prices_and_configs_are_refused(env):
    u = env.unwrapped
    with pytest.raises(ValueError, match="prices must be"):
        PerPassengerLP(u.game, u.polytopes, 0.0, prices=np.zeros(u.game.n_teams + 2))
    with pytest.raises(ValueError, match="theta must be"):
        ESGuidedAgent(env, np.zeros(3))
    with pytest.raises(ValueError, match="theta must be"):
        ESGuidedAgent(env, np.full(u.game.n_teams + 1, np.nan))
    for bad in ({"popsize": 1}, {"generations": 0}, {"sigma_price": 0.0},
                {"sigma_log_mu": -1.0}, {"max_price": -1.0}, {"mu_range": (2.0, 10.0)},
                {"validation_days": -1}):
        with pytest.raises(ValueError):
            ESGuidedConfig(**bad)


def _train(out: Path, generations: int, seed: int = 0) -> ESGuidedAgent:
    run = RunConfig(algo="es-guided", env_id=ENV_ID, seed=seed, out=out, progress=False,
                    hparams={**TINY, "generations": generations})
    return get_method("es-guided").train(run)


def test_training_is_seeded_resumable_and_leaves_the_global_generator_alone(tmp_path, env):
    np.random.seed(1)
    before = np.random.get_state()[1].copy()
    straight = _train(tmp_path / "a", 2)
    assert np.array_equal(np.random.get_state()[1], before)  # numpy's global state untouched
    # Interrupted after one generation, then extended to two: the same θ, bit for bit.
    _train(tmp_path / "b", 1)
    resumed = _train(tmp_path / "b", 2)
    np.testing.assert_array_equal(straight.theta, resumed.theta)
    assert not np.array_equal(straight.theta, np.zeros_like(straight.theta))
    other = _train(tmp_path / "c", 2, seed=1)
    assert not np.array_equal(straight.theta, other.theta)
    rows = (tmp_path / "b" / "curve.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows] == ["generation", "1", "2"]
    assert rows[2].split(",")[1] == str(2 * TINY["popsize"] * TINY["days_per_generation"])
    # The checkpoint reloads the identical policy and refuses another instance.
    loaded = get_method("es-guided").load(tmp_path / "a", env)
    np.testing.assert_array_equal(loaded.theta, straight.theta)
    np.testing.assert_array_equal(_day_actions(env, loaded, 5, 60),
                                  _day_actions(env, straight, 5, 60))
    with pytest.raises(ValueError, match="instance_seed"):
        get_method("es-guided").load(tmp_path / "a", gym.make(ENV_ID, instance_seed=1))


def test_every_action_of_a_trained_agent_is_feasible(tmp_path, env):
    agent = _train(tmp_path, 1)
    obs, info = env.reset(seed=9)
    done = False
    while not done:
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        assert info["proposed_violation"] <= 1e-9
        done = term or trunc
    assert day_mean_wait(env, agent, 9) >= 0


def test_validation_keeps_whichever_of_the_search_and_slack_guided_waits_less(tmp_path, env):
    run = RunConfig(algo="es-guided", env_id=ENV_ID, out=tmp_path, progress=False,
                    hparams={**TINY, "generations": 1, "validation_days": 2})
    agent = get_method("es-guided").train(run)
    sel = json.loads((tmp_path / "selection.json").read_text())
    assert sel["validation_days"] == [5000, 5001]
    # The logged waits are the two policies' own means over those days.
    zero = ESGuidedAgent(env, np.zeros_like(agent.theta))
    assert sel["mean_wait"]["slack_guided"] == pytest.approx(
        np.mean([day_mean_wait(env, zero, d) for d in (5000, 5001)]), rel=1e-12)
    learned = np.asarray(sel["learned_theta"])
    if sel["mean_wait"]["learned"] <= sel["mean_wait"]["slack_guided"]:
        assert sel["kept"] == "learned"
        np.testing.assert_array_equal(agent.theta, learned)
    else:
        assert sel["kept"] == "slack_guided"
        np.testing.assert_array_equal(agent.theta, np.zeros_like(learned))


def test_cli_tiny_budget(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "baselines.train", "--algo", "es-guided", "--env", ENV_ID,
         "--out", str(out), "--set", "generations=1", "--set", "popsize=2",
         "--set", "days_per_generation=1", "--eval-days", "1", "--no-progress"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (out / "checkpoint.json").exists() and (out / "es_state.json").exists()
    assert not list(out.glob("*.pkl"))  # the resume state is JSON and npz, never a pickle


def test_resume_replays_cma_es_from_plain_arrays_and_refuses_another_runs_history(tmp_path):
    """The resume state holds no pickle: a fresh strategy told the saved generations again ends
    exactly where the interrupted one was; a history that does not replay is refused."""
    from baselines.es_guided import HISTORY_NAME, _resume, _save_state, _strategy

    config = ESGuidedConfig(**TINY)
    es = _strategy(config, 3, seed=4)
    history: dict[str, list[np.ndarray]] = {"candidates": [], "scores": []}
    rng = np.random.default_rng(0)
    for _ in range(3):
        cands = es.ask()
        scores = rng.uniform(10, 20, len(cands)).tolist()
        es.tell(cands, scores)
        history["candidates"].append(np.asarray(cands))
        history["scores"].append(np.asarray(scores))
    _save_state(tmp_path, {"run": 1}, history)
    with np.load(tmp_path / HISTORY_NAME, allow_pickle=False) as data:
        assert data["candidates"].shape == (3, 3, 4) and data["scores"].shape == (3, 3)

    fresh = _strategy(config, 3, seed=4)
    replayed = _resume(tmp_path, {"run": 1}, fresh)
    assert replayed is not None and len(replayed["scores"]) == 3
    np.testing.assert_array_equal(fresh.mean, es.mean)
    assert fresh.sigma == es.sigma
    np.testing.assert_array_equal(np.asarray(fresh.ask()), np.asarray(es.ask()))

    assert _resume(tmp_path, {"run": 2}, _strategy(config, 3, seed=4)) is None  # other run
    with pytest.raises(RuntimeError, match="does not replay"):  # same signature, other seed
        _resume(tmp_path, {"run": 1}, _strategy(config, 3, seed=5))
