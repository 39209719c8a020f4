"""The batched per-passenger LP of slack-guided and myopic against HiGHS, state by state.

Every decision of :class:`baselines.per_passenger_lp.PerPassengerLP` must be optimal for its own LP,
min π·(w + ε s) + μ ‖π − π^slack‖₁ over the category's polytope (risk rows tightened by the
margin): its objective equals HiGHS's optimum of the same LP (solved here to tight tolerances)
to 1e-9, it stays inside the polytope, and a row of a batch is bit for bit the passenger solved
alone (so ``act_batch`` and ``act`` agree, and nothing depends on what else was solved).
"""

from __future__ import annotations

import gymnasium as gym
import highspy
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baselines import myopic, slack_guided
from baselines.slack_guided import PerPassengerLP
from baselines.slack_lp import slack_lp_for_env
from tsg_envs import highs
from tsg_envs.harness import Unit, evaluate

ENV_ID = "tsg/Screening-v1"
MUS = (0.0, 0.2, 1.0, 4.0)


@pytest.fixture(scope="module")
def setup():
    env = gym.make(ENV_ID, instance_seed=0)
    guide = slack_lp_for_env(env)
    u = env.unwrapped
    lps = {mu: PerPassengerLP(u.game, u.polytopes, mu, guide=guide if mu > 0 else None)
           for mu in MUS}
    return env, guide, lps


def highs_optimum(lp: PerPassengerLP, c: int, waits: np.ndarray, time: float) -> float:
    """HiGHS's optimal value of the passenger's LP, at feasibility tolerances of 1e-10."""
    t, m = lp._t, lp._m
    cost = waits + lp.reference.bias
    a_risk, b_risk = lp._a_risk[c], lp._b_risk[c]
    if lp.mu == 0:
        a = np.vstack([a_risk, np.ones((1, t))])
        lo, hi = np.r_[np.full(m, -np.inf), 1.0], np.r_[b_risk, 1.0]
        h = highs.model(cost, a, lo, hi, np.zeros(t), np.full(t, np.inf))
    else:
        p = lp.guide.policy[lp.guide.window_of(time), c]
        eye = np.eye(t)
        a = np.block([[a_risk, np.zeros((m, t))], [np.ones((1, t)), np.zeros((1, t))],
                      [-eye, eye], [eye, eye]])
        lo = np.r_[np.full(m, -np.inf), 1.0, -p, p]
        hi = np.r_[b_risk, 1.0, np.full(2 * t, np.inf)]
        h = highs.model(np.r_[cost, np.full(t, lp.mu)], a, lo, hi, np.zeros(2 * t),
                        np.full(2 * t, np.inf))
    for name in ("primal_feasibility_tolerance", "dual_feasibility_tolerance"):
        h.setOptionValue(name, 1e-10)
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return float(h.getInfo().objective_function_value)


def objective(lp: PerPassengerLP, c: int, waits: np.ndarray, time: float,
              pi: np.ndarray) -> float:
    value = float(pi @ (waits + lp.reference.bias))
    if lp.mu > 0:
        value += lp.mu * float(np.abs(pi - lp.guide.policy[lp.guide.window_of(time), c]).sum())
    return value


waits_st = st.lists(
    st.one_of(st.sampled_from([0.0, 1.0, 2.5]), st.floats(0.0, 60.0)), min_size=10, max_size=10)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mu=st.sampled_from(MUS), cats=st.lists(st.integers(0, 49), min_size=1, max_size=6),
       waits=st.lists(waits_st, min_size=6, max_size=6),
       times=st.lists(st.floats(0.0, 520.0), min_size=6, max_size=6))
def test_every_batched_decision_is_optimal_feasible_and_row_independent(
        setup, mu, cats, waits, times):
    env, _, lps = setup
    lp = lps[mu]
    n = len(cats)
    c = np.array(cats)
    w = np.array(waits[:n], dtype=float)
    tm = np.array(times[:n])
    pi = lp.solve_batch(c, w, tm)
    polys = env.unwrapped.polytopes
    assert polys.violation(pi, c).max() <= 1e-12
    for i in range(n):
        alone = lp.solve(int(c[i]), w[i], float(tm[i]))
        np.testing.assert_array_equal(alone, pi[i])  # bit for bit, whatever else is batched
        best = highs_optimum(lp, int(c[i]), w[i], float(tm[i]))
        assert objective(lp, int(c[i]), w[i], float(tm[i]), pi[i]) == pytest.approx(
            best, abs=1e-9)


@pytest.mark.parametrize("mu", [0.0, 1.0])
def test_a_day_of_real_states_is_solved_exactly_by_every_path(setup, mu):
    """States slack-guided meets on a day: each of the three paths is taken and optimal."""
    env, guide, lps = setup
    lp = lps[mu]
    u = env.unwrapped
    agent = slack_guided.SlackGuidedAgent(env, guide=guide)
    obs, info = env.reset(seed=10_000)
    states, done = [], False
    while not done:
        states.append((info["category"], np.asarray(obs[u.obs_layout["waits"]], float),
                       info["time"]))
        obs, _, done, _, info = env.step(agent.act(obs, info))
    cats = np.array([s[0] for s in states])
    waits = np.stack([s[1] for s in states])
    times = np.array([s[2] for s in states])
    paths = {"certificate": 0, "pivots": 0}
    if mu > 0:
        for name in paths:
            method = {"certificate": "_guide_optimal", "pivots": "_pivot"}[name]
            orig = getattr(lp, method)

            def counted(*args, _orig=orig, _name=name):
                out = _orig(*args)
                paths[_name] += int(np.sum(out)) if _name == "certificate" else 1
                return out

            setattr(lp, method, counted)
    try:
        pi = lp.solve_batch(cats, waits, times)
    finally:
        for method in ("_guide_optimal", "_pivot"):
            lp.__dict__.pop(method, None)
    if mu > 0:
        assert paths["certificate"] > 20 and paths["pivots"] > 5  # every path is exercised
    for i in range(0, len(cats), 7):
        best = highs_optimum(lp, int(cats[i]), waits[i], float(times[i]))
        assert objective(lp, int(cats[i]), waits[i], float(times[i]), pi[i]) == pytest.approx(
            best, abs=1e-9)


def test_act_batch_through_the_harness_equals_act_day_by_day(setup):
    """The harness's batched rollout plays exactly the decisions ``act`` makes alone."""
    from tsg_envs.rollout import rollout

    env, _, _ = setup
    for make in (slack_guided.make_agent, myopic.make_agent):
        agent = make(env)
        recs = evaluate({"a": lambda e, a=agent: a}, [Unit(ENV_ID, 0)], [10_000, 10_001],
                        batch=2)
        for rec in recs:
            alone = rollout(env, agent, seed=rec.day_seed)
            assert rec.mean_wait == pytest.approx(alone.mean_wait, rel=1e-12)


def test_a_guide_on_a_risk_row_is_moved_inside_the_margin(setup):
    """A guide exactly on a risk row breaks the row tightened by the margin: the waits give no
    reason to move, yet the answer must move inside (the guide's certificate does not apply)."""
    from baselines.per_passenger_lp import _polytope_vertices
    from baselines.slack_lp import SlackLPSolution

    env, guide, _ = setup
    u = env.unwrapped
    m = u.game.n_methods
    a_risk, b_risk = u.polytopes.A_ub[:, :m], u.polytopes.b_ub[:, :m]
    verts = _polytope_vertices(a_risk, b_risk)  # vertices of the untightened polytopes
    policy = np.array(guide.policy)
    on_row = []
    for c in range(verts.shape[0]):
        v = verts[c][~np.isnan(verts[c, :, 0])]
        slack = b_risk[c] - v @ a_risk[c].T
        hit = np.flatnonzero((np.abs(slack) < 1e-12).any(axis=1))
        if hit.size:
            policy[:, c] = v[hit[0]]
            on_row.append(c)
    assert len(on_row) > 10
    edge = SlackLPSolution(policy=policy, window_edges=guide.window_edges,
                           expected_counts=guide.expected_counts,
                           utilisation=guide.utilisation, risk_bound=guide.risk_bound)
    lp = PerPassengerLP(u.game, u.polytopes, 1.0, guide=edge)
    cats = np.array(on_row)
    waits = np.zeros((cats.size, u.game.n_teams))
    times = np.full(cats.size, 100.0)
    pi = lp.solve_batch(cats, waits, times)
    assert (np.einsum("bmt,bt->bm", lp._a_risk[cats], pi) <= lp._b_risk[cats] + 1e-12).all()
    for i, c in enumerate(cats.tolist()):
        best = highs_optimum(lp, c, waits[i], 100.0)
        assert objective(lp, c, waits[i], 100.0, pi[i]) == pytest.approx(best, abs=1e-9)
