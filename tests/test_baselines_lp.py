"""Non-learning baselines (slack LP, slack-guided, myopic, LP, centre) and the evaluation."""

from __future__ import annotations

import itertools
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from baselines import centre, myopic, slack_guided, slack_lp, static_lp
from baselines.api import RunConfig
from baselines.evaluate import (
    REFERENCES,
    EvaluationResult,
    clear_reference_cache,
    evaluate,
)
from baselines.nonlearning import CHECKPOINT_NAME
from baselines.slack_guided import PerPassengerLP, SlackGuidedConfig
from baselines.slack_lp import SlackLPSolution, solve_slack_lp, window_utilisation
from tsg_envs import FEASIBILITY_TOL, Game, GameConfig, build_polytopes
from tsg_envs.harness import EpisodeRecord, delay_ratio
from tsg_envs.risk import worst_case_risk
from tsg_envs.rollout import CentreAgent, LPAgent, rollout
from tsg_envs.seeds import seed_ranges_overlap, training_day_seed

ENV_ID = "tsg/Screening-v1"
SMALL_ID = "tsg/Screening-Shift-5F-v1"  # 450 passengers, 9 LP windows


@pytest.fixture(scope="module")
def env() -> gym.Env:
    return gym.make(ENV_ID, instance_seed=0)


@pytest.fixture(scope="module")
def small_env() -> gym.Env:
    return gym.make(SMALL_ID, instance_seed=1)


@pytest.fixture(scope="module")
def slack_agent(env: gym.Env) -> slack_lp.SlackLPAgent:
    return slack_lp.make_agent(env)


def hand_game(rates, members, efficacy, loss=10.0) -> Game:
    """A one-method, one-level, one-flight game with given teams (rows of ``members``)."""
    members = np.asarray(members, dtype=bool)
    efficacy = np.asarray(efficacy, dtype=float).reshape(-1, 1)  # (T, 1)
    r = members.shape[1]
    return Game(
        config=GameConfig(n_resources=r, n_methods=1, n_risk_levels=1, team_size=1,
                          n_flights=1),
        seed=None,
        rates=np.asarray(rates, dtype=float),
        team_members=members,
        resource_efficacy=np.zeros((r, 1)),
        team_efficacy=efficacy,
        attacker_prior=np.array([1.0]),
        risk_mix=np.array([1.0]),
        attack_loss=np.array([[loss]]),
        departures=np.array([120.0]),
        flight_sizes=np.array([60]),
        arrival_mean=90.0,
        arrival_std=0.0,
        arrival_cutoff=20.0,
        day_start=0.0,
        day_length=60.0,
    )


# --- slack LP: hand-solved instances -----------------------------------------------------


def test_slack_lp_balances_two_resources_by_hand():
    # Teams = single resources r0 (f=1/min, E=0.9) and r1 (f=3/min, E=0.3); one window of 60
    # min with N = 120 passengers, P = 1, L = 10, so util_0 = 120 π0 / 60 = 2 π0 and
    # util_1 = 120 π1 / 180 = (2/3) π1; risk 10 (1 - z) <= ψ with z = 0.9 π0 + 0.3 π1.
    game = hand_game([1.0, 3.0], [[1, 0], [0, 1]], [0.9, 0.3])
    counts, edges = np.array([[120.0]]), np.array([0.0, 60.0])
    # ψ = 6: z >= 0.4 <=> π0 >= 1/6. Unconstrained balance 2 π0 = (2/3)(1 - π0) gives π0 = 1/4
    # (z = 0.45, feasible): π = (0.25, 0.75), both utilisations 0.5.
    sol = solve_slack_lp(game, build_polytopes(game, np.array([6.0])), counts, edges)
    np.testing.assert_allclose(sol.policy[0, 0], [0.25, 0.75], atol=1e-6)
    np.testing.assert_allclose(sol.utilisation[0], [0.5, 0.5], atol=1e-6)
    # ψ = 4: z >= 0.6 <=> 0.3 + 0.6 π0 >= 0.6 <=> π0 >= 0.5, so the bound binds: π = (0.5, 0.5),
    # util = (1, 1/3), peak 1.
    sol = solve_slack_lp(game, build_polytopes(game, np.array([4.0])), counts, edges)
    np.testing.assert_allclose(sol.policy[0, 0], [0.5, 0.5], atol=1e-6)
    np.testing.assert_allclose(sol.utilisation[0], [1.0, 1.0 / 3.0], atol=1e-6)
    np.testing.assert_allclose(sol.peak_utilisation, [1.0], atol=1e-6)


def test_slack_lp_leximin_balances_the_non_bottleneck_resources():
    # Three single-resource teams, f = 1/min each, N = 60 in a 60-min window: util_r = π_r.
    # Only team 0 detects (E = 1, 0, 0); ψ = 5 with L = 10 forces π0 >= 0.5, so the peak is
    # util_0 = 0.5 and π1 + π2 = 0.5. A linear tie-break could put all of it on one team;
    # the leximin second round minimises max(π1, π2): π = (0.5, 0.25, 0.25).
    game = hand_game([1.0, 1.0, 1.0], np.eye(3), [1.0, 0.0, 0.0])
    polys = build_polytopes(game, np.array([5.0]))
    sol = solve_slack_lp(game, polys, np.array([[60.0]]), np.array([0.0, 60.0]))
    np.testing.assert_allclose(sol.policy[0, 0], [0.5, 0.25, 0.25], atol=1e-6)
    np.testing.assert_allclose(sol.utilisation[0], [0.5, 0.25, 0.25], atol=1e-6)


def test_slack_lp_zero_count_window_gets_centres():
    game = hand_game([1.0, 3.0], [[1, 0], [0, 1]], [0.9, 0.3])
    polys = build_polytopes(game, np.array([6.0]))
    sol = solve_slack_lp(game, polys, np.array([[0.0], [120.0]]), np.array([0.0, 30.0, 60.0]))
    np.testing.assert_array_equal(sol.policy[0], polys.centers)
    np.testing.assert_allclose(sol.utilisation[0], [0.0, 0.0])


# --- slack LP on the default instance ------------------------------------------------------


@pytest.mark.parametrize("env_id", [ENV_ID, "tsg/Screening-Window-10F-v1"])
def test_slack_lp_peak_at_most_the_lp_peak_in_every_window(env_id):
    e = gym.make(env_id, instance_seed=2)
    u = e.unwrapped
    lp = u.lp_solution
    sol = slack_lp.slack_lp_for_env(e)
    np.testing.assert_array_equal(sol.window_edges, lp.window_edges)
    lp_util = window_utilisation(u.game, lp.expected_counts, lp.window_edges, lp.policy)
    assert np.all(sol.peak_utilisation <= lp_util.max(axis=1) * (1 + 1e-6) + 1e-9)
    # It spends the unused risk budget: strictly lower peak in some window.
    assert np.any(sol.peak_utilisation < lp_util.max(axis=1) - 1e-3)
    w, c = sol.policy.shape[:2]
    viol = u.polytopes.violation(sol.policy.reshape(w * c, -1), np.tile(np.arange(c), w))
    assert viol.max() <= FEASIBILITY_TOL / 100


def test_slack_lp_is_deterministic(env, slack_agent):
    u = env.unwrapped
    lp = u.lp_solution
    # Solved again from scratch (not through the cache): the same policy, bit for bit.
    again = solve_slack_lp(u.game, u.polytopes, lp.expected_counts, lp.window_edges)
    np.testing.assert_array_equal(again.policy, slack_agent.solution.policy)


def test_pin_test_answers_without_an_lp_worked_by_hand():
    # peak 0.8, tolerance 1e-7: cap = 0.8(1 + 1e-7) + 1e-7, floor = 0.8(1 - 1e-6) - 1e-7.
    peak, tol = 0.8, 1e-7
    cap, floor = peak * (1 + tol) + tol, peak * (1 - 10 * tol) - tol
    known = slack_lp._pin_known
    assert known(0.79, 0.0, peak, cap, floor) is False  # already below the floor: free
    # dual 1: L >= cap - (cap - peak) = peak >= floor: pinned without an LP.
    assert known(0.8, 1.0, peak, cap, floor) is True
    # dual 0.2: L >= cap - 5 (cap - peak) = 0.8 - 7.2e-7, above the floor 0.8 - 9e-7 (and
    # above it by more than the margin of 1e-3 of the band): pinned.
    assert known(0.8, 0.2, peak, cap, floor) is True
    # dual 0.1: the bound is 0.8 - 1.62e-6, below the floor: the LP decides.
    assert known(0.8, 0.1, peak, cap, floor) is None
    assert known(0.8, 0.0, peak, cap, floor) is None  # no dual: the LP decides


@pytest.mark.parametrize("env_id", [ENV_ID, "tsg/Screening-Window-10F-v1"])
def test_pin_tests_skipped_by_the_duals_pin_the_same_resources(env_id, monkeypatch):
    # The leximin with every pin test run as an LP, and with the answers the min-peak LP
    # already gives: the same leximin caps (to the solver's tolerance) and the same policy up
    # to HiGHS's path through the tie-break's optimal face (rounding).
    e = gym.make(env_id, instance_seed=1)
    u, lp = e.unwrapped, e.unwrapped.lp_solution
    fast = solve_slack_lp(u.game, u.polytopes, lp.expected_counts, lp.window_edges)
    monkeypatch.setattr(slack_lp, "_pin_known", lambda *args: None)
    slow = solve_slack_lp(u.game, u.polytopes, lp.expected_counts, lp.window_edges)
    np.testing.assert_allclose(fast.peak_utilisation, slow.peak_utilisation, rtol=1e-9)
    np.testing.assert_allclose(fast.policy, slow.policy, atol=1e-7)


def test_slack_lp_is_solved_once_per_instance_and_shared(small_env):
    # The slack-LP and slack-guided agents of one instance share one solve (a protocol unit
    # builds both); the cache is keyed by content, so another ψ or another margin is re-solved.
    slack_lp.SLACK_LP_CACHE.clear()
    calls = []
    real = slack_lp.solve_slack_lp

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    slack_lp.solve_slack_lp = counting
    try:
        plain = slack_lp.make_agent(small_env)
        guided = slack_guided.make_agent(small_env)
        assert guided.guide is plain.solution and len(calls) == 1
        other_margin = slack_lp.slack_lp_for_env(small_env, slack_lp.SlackLPConfig(margin=1e-8))
        assert len(calls) == 2 and other_margin is not plain.solution
        u = small_env.unwrapped
        looser = gym.make(SMALL_ID, instance_seed=1,
                          risk_bound=np.asarray(u.polytopes.risk_bound) * 1.5)
        assert slack_lp.slack_lp_key(u.game, u.polytopes, 60.0, slack_lp.SlackLPConfig()) != \
            slack_lp.slack_lp_key(looser.unwrapped.game, looser.unwrapped.polytopes, 60.0,
                                  slack_lp.SlackLPConfig())
        wider = slack_lp.slack_lp_for_env(looser)
        assert len(calls) == 3
        # A looser ψ leaves more risk budget to spend on delay: no window's peak is higher.
        assert np.all(wider.peak_utilisation <= plain.solution.peak_utilisation + 1e-9)
    finally:
        slack_lp.solve_slack_lp = real
    # A hand-built game has no cache key: never cached.
    game = hand_game([1.0, 3.0], [[1, 0], [0, 1]], [0.9, 0.3])
    polys = build_polytopes(game, np.array([6.0]))
    assert slack_lp.slack_lp_key(game, polys, None, slack_lp.SlackLPConfig()) is None


# --- per-passenger LPs: hand-solved ------------------------------------------------------


@pytest.mark.parametrize("mu,expected", [(0.0, [0.5, 0.5, 0.0]), (0.4, [0.5, 0.5, 0.0]),
                                         (0.6, [0.5, 0.25, 0.25])])
def test_slack_guided_by_hand(mu, expected):
    # Three single-resource teams with equal rates (so the ε tie-break is equal for all teams);
    # ψ = 5 forces π0 >= 0.5 (as above). Waits w = (3, 1, 2), guide p = (0.5, 0.25, 0.25).
    # π0 cannot drop below 0.5 and raising it costs, so π0 = 0.5; moving δ from team 2 to
    # team 1 saves δ (2 - 1) of wait and costs μ 2δ of L1 distance: it pays iff μ < 0.5.
    # μ = 0 (myopic) and 0.4: π = (0.5, 0.5, 0); μ = 0.6: π = p.
    game = hand_game([1.0, 1.0, 1.0], np.eye(3), [1.0, 0.0, 0.0])
    polys = build_polytopes(game, np.array([5.0]))
    guide = SlackLPSolution(
        policy=np.array([[[0.5, 0.25, 0.25]]]), window_edges=np.array([0.0, 60.0]),
        expected_counts=np.array([[60.0]]), utilisation=np.array([[0.5, 0.25, 0.25]]),
        risk_bound=np.array([5.0]),
    )
    lp = PerPassengerLP(game, polys, mu, guide=guide if mu > 0 else None)
    pi = lp.solve(0, np.array([3.0, 1.0, 2.0]), 10.0)
    np.testing.assert_allclose(pi, expected, atol=1e-6)


def _polygon_vertices(a_ub: np.ndarray, b_ub: np.ndarray) -> np.ndarray:
    """Brute force: every vertex of {A π <= b, Σπ = 1} for T = 3 (pairs of active rows)."""
    verts = []
    for i, j in itertools.combinations(range(a_ub.shape[0]), 2):
        mat = np.vstack([a_ub[i], a_ub[j], np.ones(3)])
        if abs(np.linalg.det(mat)) < 1e-12:
            continue
        v = np.linalg.solve(mat, np.array([b_ub[i], b_ub[j], 1.0]))
        if np.all(a_ub @ v <= b_ub + 1e-9):
            verts.append(v)
    return np.array(verts)


def test_myopic_matches_brute_force_on_a_three_team_instance():
    cfg = GameConfig(n_resources=3, team_size=2, n_flights=3)
    e = gym.make(ENV_ID, config=cfg, n_flights=3, instance_seed=0)
    u = e.unwrapped
    assert u.game.n_teams == 3
    agent = myopic.make_agent(e)
    s = slack_guided.capacity_use(u.game)
    eps = agent.config.tie_break
    obs, info = e.reset(seed=5)
    done, checked, unique = False, 0, 0
    while not done:
        c = info["category"]
        w = np.asarray(obs[u.obs_layout["waits"]], dtype=float)
        pi = agent.act(obs, info)
        verts = _polygon_vertices(u.polytopes.A_ub[c], u.polytopes.b_ub[c])
        values = verts @ w
        best = values.min()
        # The LP optimum is attained at a vertex; the ε s_t tie-break can cost at most
        # ε (max s - min s) of wait.
        assert pi @ w <= best + eps * (s.max() - s.min()) + 1e-9
        assert pi @ w >= best - 1e-9
        second = np.sort(np.unique(values.round(9)))
        if second.size > 1 and second[1] > best + 1e-3:
            np.testing.assert_allclose(pi, verts[values.argmin()], atol=1e-6)
            unique += 1
        checked += 1
        obs, _, done, _, info = e.step(pi)
    assert checked == u.game.n_passengers
    assert unique > checked // 4  # the waits separate the vertices often


# --- slack-guided tends to the slack LP as μ grows ---------------------------------------


def test_default_mu_is_one_minute():
    assert slack_guided.DEFAULT_MU == 1.0
    assert SlackGuidedConfig().mu == 1.0


def test_slack_guided_tends_to_slack_lp_as_mu_grows(small_env):
    guide = slack_lp.slack_lp_for_env(small_env)
    slack_agent = slack_lp.SlackLPAgent(guide)
    # States visited by the slack LP over a day, every 5th passenger.
    states = []
    obs, info = small_env.reset(seed=3)
    done, i = False, 0
    while not done:
        if i % 5 == 0:
            states.append((obs, info))
        obs, _, done, _, info = small_env.step(slack_agent.act(obs, info))
        i += 1
    mus = [0.0, 0.1, 1.0, 10.0, 1e5]
    agents = [slack_guided.SlackGuidedAgent(small_env, SlackGuidedConfig(mu=m), guide=guide)
              for m in mus]
    dist = np.array([[np.abs(a.act(o, inf) - slack_agent.act(o, inf)).sum() for o, inf in states]
                     for a in agents])  # (μ, state)
    # For min f(π) + μ g(π) the optimal g is non-increasing in μ, state by state.
    assert np.all(np.diff(dist, axis=0) <= 1e-7)
    assert dist[0].mean() > 0.1  # myopic strays far from the plan
    assert dist[-1].max() <= 1e-7  # large μ: exactly the slack LP
    # and a whole day with large μ is the slack LP's day.
    a = rollout(small_env, agents[-1], seed=4)
    b = rollout(small_env, slack_agent, seed=4)
    np.testing.assert_allclose(a.waits, b.waits, atol=1e-6)


def test_slack_guided_beats_lp_and_myopic_on_a_day(env, slack_agent):
    sg = slack_guided.SlackGuidedAgent(env, guide=slack_agent.solution)
    lp = rollout(env, LPAgent(env), seed=10_000).mean_wait
    sgw = rollout(env, sg, seed=10_000).mean_wait
    my = rollout(env, myopic.make_agent(env), seed=10_000).mean_wait
    assert sgw < my < lp


# --- feasibility, side effects --------------------------------------------------------------


@pytest.mark.parametrize("name", ["lp", "slack-lp", "slack-guided", "myopic", "centre"])
def test_every_action_is_feasible_on_a_full_day(name):
    e = gym.make(ENV_ID, instance_seed=1, invalid_action="raise")
    make = {"lp": static_lp.make_agent, "slack-lp": slack_lp.make_agent,
            "slack-guided": slack_guided.make_agent, "myopic": myopic.make_agent,
            "centre": centre.make_agent}[name]
    stats = rollout(e, make(e), seed=10_001)  # "raise" mode raises on any violation > 1e-6
    assert stats.proposed_violations == 0 and stats.executed_violations == 0
    assert stats.max_violation <= FEASIBILITY_TOL
    assert stats.waits.shape == (e.unwrapped.game.n_passengers,)


def test_slack_guided_act_has_no_side_effects(small_env):
    fresh = rollout(small_env, slack_guided.make_agent(small_env), seed=7)
    agent = slack_guided.make_agent(small_env)
    report = worst_case_risk(small_env, agent, seed=8, max_states=20)  # probes every category
    assert report.within_bound
    after = rollout(small_env, agent, seed=7)
    np.testing.assert_array_equal(after.waits, fresh.waits)  # bit-identical: cold starts


# --- checkpoints -----------------------------------------------------------------------------

MODULES = {"lp": static_lp, "slack-lp": slack_lp, "slack-guided": slack_guided,
           "myopic": myopic, "centre": centre}


@pytest.mark.parametrize("name", list(MODULES))
def test_checkpoint_round_trip(name, tmp_path: Path):
    mod = MODULES[name]
    run = RunConfig(algo=name, env_id=SMALL_ID, instance_seed=1, out=tmp_path, progress=False)
    agent = mod.METHOD.train(run)
    path = tmp_path / CHECKPOINT_NAME
    assert path.exists()
    e = run.make_env()
    loaded = mod.METHOD.load(path, e)
    loaded_dir = mod.METHOD.load(tmp_path, e)  # a directory works too
    # Resume: a second train with the same run reuses the checkpoint untouched.
    mtime = path.stat().st_mtime_ns
    again = mod.METHOD.train(run)
    assert path.stat().st_mtime_ns == mtime
    # Identical policy: the same actions at every 10th state of a day (and the same day).
    obs, info = e.reset(seed=11)
    done, i = False, 0
    while not done:
        a = agent.act(obs, info)
        if i % 10 == 0:
            for other in (loaded, loaded_dir, again):
                np.testing.assert_array_equal(other.act(obs, info), a)
        obs, _, done, _, info = e.step(a)
        i += 1
    np.testing.assert_array_equal(rollout(e, loaded, seed=12).waits,
                                  rollout(e, agent, seed=12).waits)
    # Another instance is refused.
    with pytest.raises(ValueError, match="instance_seed"):
        mod.METHOD.load(path, gym.make(SMALL_ID, instance_seed=2))


def test_checkpoint_is_rewritten_when_hparams_change(tmp_path: Path):
    run = RunConfig(algo="slack-guided", env_id=SMALL_ID, instance_seed=1, out=tmp_path)
    slack_guided.METHOD.train(run)
    run2 = RunConfig(algo="slack-guided", env_id=SMALL_ID, instance_seed=1, out=tmp_path,
                     hparams={"mu": 0.25})
    agent = slack_guided.METHOD.train(run2)
    assert agent.config.mu == 0.25
    loaded = slack_guided.METHOD.load(tmp_path, run2.make_env())
    assert loaded.config.mu == 0.25


def test_slack_lp_checkpoint_refuses_another_risk_bound(tmp_path: Path):
    run = RunConfig(algo="slack-lp", env_id=SMALL_ID, instance_seed=1, out=tmp_path)
    slack_lp.METHOD.train(run)
    with pytest.raises(ValueError, match="risk bound"):
        slack_lp.METHOD.load(tmp_path, gym.make(SMALL_ID, instance_seed=1, risk_slack=0.05))


def test_unknown_hparam_is_rejected(tmp_path: Path):
    run = RunConfig(algo="slack-guided", env_id=SMALL_ID, out=tmp_path, hparams={"muu": 1})
    with pytest.raises(ValueError, match="muu"):
        slack_guided.METHOD.train(run)


# --- evaluation harness ----------------------------------------------------------------------


def test_delay_ratio_and_summary_by_hand():
    assert delay_ratio(6.0, 2.0) == 3.0
    assert delay_ratio(0.0, 0.0) == 1.0
    assert delay_ratio(1.0, 0.0) is None  # a zero-wait agent: no ratio (results are strict JSON)

    def rec(day, wait, lp, sg, prop, exe, viol):
        return EpisodeRecord(
            agent="agent", env_id="x", instance_seed=0, day_seed=day, n_passengers=10,
            mean_wait=wait, p95_wait=2 * wait, max_wait=3 * wait, proposed_violations=prop,
            executed_violations=exe, max_violation=viol, total_reward=-10 * wait,
        ).with_references({"lp": lp, "slack-guided": sg})

    res = EvaluationResult("x", {}, [rec(0, 1.0, 4.0, 1.0, 0, 0, 0.0),
                                     rec(1, 3.0, 8.0, 2.0, 2, 1, 0.5)])
    s = res.summary()
    # mean wait (1 + 3) / 2 = 2; LP (4 + 8) / 2 = 6 -> pooled ratio 3; slack-guided 1.5 -> 0.75
    assert s["mean_wait"] == 2.0 and s["lp_mean_wait"] == 6.0 and s["ratio_lp"] == 3.0
    assert s["slack_guided_mean_wait"] == 1.5 and s["ratio_slack_guided"] == 0.75
    assert s["p95_wait"] == 4.0 and s["max_wait"] == 9.0
    assert s["proposed_violations"] == 2 and s["executed_violations"] == 1
    assert s["max_violation"] == 0.5 and s["n_episodes"] == 2
    flat = res.to_dict()["episodes"][1]
    assert flat["lp_mean_wait"] == 8.0 and flat["slack_guided_mean_wait"] == 2.0
    assert flat["ratio_lp"] == 8.0 / 3.0 and flat["ratio_slack_guided"] == 2.0 / 3.0
    assert list(flat) == ["env_id", "instance_seed", "day_seed", "n_passengers", "mean_wait",
                          "p95_wait", "max_wait", "proposed_violations", "executed_violations",
                          "max_violation", "ratio_lp", "ratio_slack_guided", "lp_mean_wait",
                          "slack_guided_mean_wait"]


def test_evaluate_matches_rollouts_and_caches_references(monkeypatch):
    clear_reference_cache()
    calls = []
    lp_factory = REFERENCES["lp"]

    def counting(env):
        calls.append(1)
        return lp_factory(env)

    monkeypatch.setitem(REFERENCES, "lp", counting)
    res = evaluate(CentreAgent, SMALL_ID, [1], [20, 21], references=("lp",))
    assert len(calls) == 1 and len(res.records) == 2
    e = gym.make(SMALL_ID, instance_seed=1)
    for rec, day in zip(res.records, [20, 21], strict=True):
        assert rec.day_seed == day and rec.instance_seed == 1
        # The harness batches days through the vector env: equal to rounding (batched sums).
        assert rec.mean_wait == pytest.approx(rollout(e, CentreAgent(e), seed=day).mean_wait,
                                              rel=1e-12)
        lp = rollout(e, LPAgent(e), seed=day).mean_wait
        assert rec.reference_mean_wait["lp"] == pytest.approx(lp, rel=1e-12)
        assert rec.ratio("lp") == rec.reference_mean_wait["lp"] / rec.mean_wait
        assert rec.ratio("slack-guided") is None
    # Second evaluation on the same days: references come from the cache.
    evaluate(LPAgent, SMALL_ID, [1], [20, 21], references=("lp",))
    assert len(calls) == 1
    # Other env kwargs are another cache entry.
    evaluate(LPAgent, SMALL_ID, [1], [20], env_kwargs={"risk_slack": 0.02}, references=("lp",))
    assert len(calls) == 2


def test_seed_convention():
    assert training_day_seed(0, 5) == 5 and training_day_seed(2, 1) == 2_000_007
    assert not seed_ranges_overlap(0, 10_000, range(10_000, 10_005))
    assert seed_ranges_overlap(0, 10_001, range(10_000, 10_005))
    assert not seed_ranges_overlap(1, 10**6, range(10_000, 10_005))

