"""The native vector environment against SyncVectorEnv over the single environment.

For the same seeds and actions every sub-environment must give what the single environment
gives under ``SyncVectorEnv``: the same terminations, discrete info (categories, teams) and info
keys with the same dtypes; floats to rounding (rtol 1e-12: a batched product sums in another
order). Also: the batched core against the single day on whole days, autoreset, reset masks,
shapes, and the action contract under generated proposals.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_action_contract import EXAMPLES, ROUNDING, build, measured_violation, recipe

import tsg_envs  # noqa: F401  (registers the ids)
from tsg_envs import FEASIBILITY_TOL, make_game, sample_arrivals
from tsg_envs.dynamics import DayBatch, ScreeningDay
from tsg_envs.vector import ScreeningVectorEnv

ENV_ID = "tsg/Screening-Window-5F-v1"
DISCRETE = ("category", "theta", "flight", "team")


def _pair(n: int, **kwargs) -> tuple[gym.vector.VectorEnv, gym.vector.VectorEnv]:
    native = gym.make_vec(ENV_ID, num_envs=n, **kwargs)
    sync = gym.make_vec(ENV_ID, num_envs=n, vectorization_mode="sync", **kwargs)
    return native, sync


def _assert_same(native_out: tuple, sync_out: tuple) -> None:
    (o1, r1, t1, u1, i1), (o2, r2, t2, u2, i2) = native_out, sync_out
    np.testing.assert_array_equal(t1, t2)
    np.testing.assert_array_equal(u1, u2)
    assert o1.dtype == o2.dtype == np.float32 and o1.shape == o2.shape
    np.testing.assert_allclose(o1, o2, rtol=1e-6, atol=1e-9)  # float32 casts of close values
    np.testing.assert_allclose(r1, r2, rtol=1e-12, atol=1e-12)
    assert list(i1) == list(i2)
    for key in i2:
        assert i1[key].dtype == i2[key].dtype and i1[key].shape == i2[key].shape, key
        if key.startswith("_") or key in DISCRETE:
            np.testing.assert_array_equal(i1[key], i2[key], err_msg=key)
        else:
            np.testing.assert_allclose(i1[key], i2[key], rtol=1e-12, atol=1e-12, err_msg=key)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"queue_mode": "expected", "invalid_action": "project"},
        {"queue_mode": "sampled", "invalid_action": "project"},
        {"queue_mode": "expected", "invalid_action": "penalize"},
        {"queue_mode": "sampled", "invalid_action": "penalize"},
        {"queue_mode": "expected", "invalid_action": "raise"},
    ],
)
def test_vector_equals_sync_over_whole_days_and_an_autoreset(kwargs: dict) -> None:
    n = 3
    native, sync = _pair(n, **kwargs)
    o1, i1 = native.reset(seed=11)
    o2, i2 = sync.reset(seed=11)
    np.testing.assert_array_equal(o1, o2)
    assert all(np.array_equal(i1[k], i2[k]) for k in i2) and list(i1) == list(i2)
    polys = native.polytopes
    rng = np.random.default_rng(0)
    steps = native.game.n_passengers + 5  # a whole day, the autoreset step, a few more
    for k in range(steps):
        c = np.maximum(i1["category"], 0)
        a = polys.sample(c, rng)
        if kwargs["invalid_action"] != "raise":
            off = rng.random(n) < 0.3  # some proposals off the polytope
            a[off] = rng.dirichlet(np.ones(a.shape[1]), size=int(off.sum()))
        if k % 4 == 1:
            a = a.astype(np.float32)  # renormalised path
        out1, out2 = native.step(a), sync.step(a)
        _assert_same(out1, out2)
        i1 = out1[4]
        if k == native.game.n_passengers - 1:
            assert out1[2].all()  # every day of an instance has the same passengers
        if k == native.game.n_passengers:  # the autoreset step: reset infos only, reward 0
            assert not out1[2].any() and np.all(out1[1] == 0.0) and "wait" not in out1[4]


def test_reset_mask_resets_some_rows_apart() -> None:
    native, sync = _pair(3)
    i1, _ = native.reset(seed=5)[1], sync.reset(seed=5)
    rng = np.random.default_rng(1)
    for k in range(40):
        a = native.polytopes.sample(np.maximum(i1["category"], 0), rng)
        out1, out2 = native.step(a), sync.step(a)
        _assert_same(out1, out2)
        i1 = out1[4]
        if k == 20:
            mask = np.array([False, True, False])
            r1, r2 = native.reset(seed=99, options={"reset_mask": mask}), sync.reset(
                seed=99, options={"reset_mask": mask.copy()}
            )
            np.testing.assert_array_equal(r1[0], r2[0])
            assert list(r1[1]) == list(r2[1]) and all(
                np.array_equal(r1[1][k_], r2[1][k_]) for k_ in r2[1]
            )
            i1 = r1[1]
            i1["category"] = np.where(mask, i1["category"], out1[4]["category"])
    # Rows now sit at different passengers of their days.
    assert len(set(native.days.index.tolist())) == 2


def test_raise_mode_refuses_before_any_state_changes() -> None:
    env = gym.make_vec(ENV_ID, num_envs=2, invalid_action="raise")
    _, info = env.reset(seed=0)
    index = env.days.index.copy()
    bad = np.full((2, env.single_action_space.shape[0]), 1.0)  # sums to T
    with pytest.raises(ValueError, match="violates the polytope"):
        env.step(bad)
    with pytest.raises(ValueError, match="finite"):
        env.step(np.full_like(bad, np.nan))
    with pytest.raises(ValueError, match="shape"):
        env.step(bad[:1])
    np.testing.assert_array_equal(env.days.index, index)


def test_spaces_metadata_and_construction_checks() -> None:
    env = gym.make_vec("tsg/Screening-v1", num_envs=4)
    assert isinstance(env, ScreeningVectorEnv)
    assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    t, d = env.single_action_space.shape[0], env.single_observation_space.shape[0]
    assert env.action_space.shape == (4, t) and env.observation_space.shape == (4, d)
    obs, info = env.reset(seed=0)
    assert obs.shape == (4, d) and obs.dtype == np.float32 and obs in env.observation_space
    with pytest.raises(TypeError, match="num_envs"):
        ScreeningVectorEnv(num_envs=2.0)
    with pytest.raises(TypeError, match="instance_seed"):
        gym.make_vec("tsg/Screening-v1", num_envs=2, instance_seed=1.5)
    with pytest.raises(ValueError, match="render_mode"):
        gym.make_vec("tsg/Screening-v1", num_envs=2, render_mode="rgb_array")


@pytest.mark.parametrize("queue_mode", ["expected", "sampled"])
def test_batched_core_agrees_with_the_single_day_on_whole_days(queue_mode: str) -> None:
    """DayBatch row by row against ScreeningDay on the same arrivals, allocations and draws."""
    game = make_game(seed=3)
    rng = np.random.default_rng(4)
    days = [sample_arrivals(game, np.random.default_rng(s)) for s in range(3)]
    batch = DayBatch(game, 3, queue_mode)
    batch.reset(days)
    singles = [ScreeningDay(game, queue_mode) for _ in range(3)]
    for day, arr in zip(singles, days, strict=True):
        day.reset(arr)
    draw_rngs = [np.random.default_rng(10 + i) for i in range(3)]
    shadow = [np.random.default_rng(10 + i) for i in range(3)]
    for _ in range(game.n_passengers):
        np.testing.assert_array_equal(batch.category, [d.category for d in singles])
        x = rng.dirichlet(np.ones(game.n_teams), size=3)
        u = np.array([g.random() for g in shadow]) if queue_mode == "sampled" else None
        res = batch.step(x, u=u)
        for i, day in enumerate(singles):
            one = day.step(x[i], draw_rngs[i])
            assert res.team[i] == one.team
            assert math.isclose(res.wait[i], one.wait, rel_tol=1e-12, abs_tol=1e-12)
            np.testing.assert_allclose(res.queues[i], one.queues, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(batch.team_waits[i], day.team_waits, rtol=1e-12,
                                       atol=1e-12)
    assert batch.done.all() and all(d.done for d in singles)
    np.testing.assert_array_equal(batch.history, [d.history for d in singles])
    np.testing.assert_array_equal(batch.clock, [d.clock for d in singles])


@pytest.mark.parametrize("mode", ["project", "raise", "penalize"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), recipes=st.lists(st.lists(recipe, min_size=2, max_size=2),
                                                    min_size=1, max_size=40))
def test_vector_action_contract(mode: str, seed: int, recipes: list) -> None:
    """The hardening properties on the vector env: a clear error or executed actions inside
    every polytope (re-measured here from the polytopes' public fields)."""
    env = _VEC.setdefault(mode, gym.make_vec(ENV_ID, num_envs=2, invalid_action=mode))
    _, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for pair in recipes:
        cats = np.maximum(info["category"], 0)
        polys = [env.polytope(int(c)) for c in cats]
        a = np.stack([build(r, p, rng).astype(np.float64) for r, p in zip(pair, polys,
                                                                           strict=True)])
        if not np.all(np.isfinite(a)):
            with pytest.raises(ValueError, match="finite"):
                env.step(a)
            continue
        viols = [measured_violation(p, x) for p, x in zip(polys, a, strict=True)]
        near = any(abs(v - FEASIBILITY_TOL) <= FEASIBILITY_TOL * 1e-9 for v in viols)
        if mode == "raise" and near:
            continue
        if mode == "raise" and max(viols) > FEASIBILITY_TOL:
            with pytest.raises(ValueError, match="violates the polytope"):
                env.step(a)
            continue
        _, reward, term, _, info = env.step(a)
        assert np.all(np.isfinite(reward))
        if "executed_action" not in info:
            continue  # an autoreset step
        for p, x, v in zip(polys, info["executed_action"], viols, strict=True):
            if mode != "penalize" or v <= FEASIBILITY_TOL * (1 - 1e-9):
                assert measured_violation(p, x) <= FEASIBILITY_TOL + ROUNDING


_VEC: dict[str, gym.vector.VectorEnv] = {}


def test_vector_softmax_alpha_projection_matches_the_single_wrapper() -> None:
    """Row i of the vector wrapper executes what the single wrapper executes on day seed + i."""
    from tsg_envs.wrappers import SoftmaxAlphaProjection, VectorSoftmaxAlphaProjection

    n = 2
    vec = VectorSoftmaxAlphaProjection(gym.make_vec(ENV_ID, num_envs=n, invalid_action="raise"))
    singles = [SoftmaxAlphaProjection(gym.make(ENV_ID, invalid_action="raise")) for _ in range(n)]
    vec.reset(seed=3)
    for i, s in enumerate(singles):
        s.reset(seed=3 + i)
    assert vec.action_space.shape == (n, vec.env.single_action_space.shape[0])
    rng = np.random.default_rng(0)
    for _ in range(vec.env.game.n_passengers + 2):  # through the autoreset
        logits = rng.uniform(-1, 1, vec.action_space.shape).astype(np.float32)
        _, r, term, _, info = vec.step(logits)  # "raise" mode: every action was feasible
        for i, s in enumerate(singles):
            if "executed_action" in info and info["_executed_action"][i]:
                _, r1, t1, _, i1 = s.step(logits[i])
                np.testing.assert_allclose(info["executed_action"][i], i1["executed_action"],
                                           rtol=1e-12, atol=1e-15)
                assert math.isclose(r[i], r1, rel_tol=1e-12, abs_tol=1e-12) and term[i] == t1
            else:
                s.reset()


@pytest.mark.parametrize("config_kwargs", [{}, {"horizon": "window"}, {"arrival_std": 0.0}])
def test_batched_arrivals_equal_the_single_sampler(config_kwargs: dict) -> None:
    """sample_arrivals_batch draws each day bit for bit as sample_arrivals, and leaves every
    generator in the same state (sampled mode draws teams from it next)."""
    from tsg_envs import GameConfig
    from tsg_envs.dynamics import sample_arrivals_batch

    game = make_game(GameConfig(**config_kwargs), 2)
    batch_rngs = [np.random.default_rng(s) for s in range(5)]
    single_rngs = [np.random.default_rng(s) for s in range(5)]
    for got, rng in zip(sample_arrivals_batch(game, batch_rngs), single_rngs, strict=True):
        want = sample_arrivals(game, rng)
        for field in ("times", "categories", "thetas", "flights"):
            np.testing.assert_array_equal(getattr(got, field), getattr(want, field))
    assert [r.random() for r in batch_rngs] == [r.random() for r in single_rngs]


@pytest.mark.parametrize("cutoff", [30.0, 90.0, 120.0])  # a < 0 (the usual), a = 0, a > 0
def test_arrival_draws_are_scipys_truncnorm_bit_for_bit(cutoff: float) -> None:
    """The closed-form inverse CDF draws exactly what ``scipy.stats.truncnorm.rvs`` draws from
    the same generator for a cut-off before the mean (so committed results keep their days),
    and the same to rounding past it."""
    from scipy import stats

    from tsg_envs.dynamics import truncated_normal_ppf

    mean, std = 90.0, 45.0
    a = (cutoff - mean) / std
    check = (np.testing.assert_array_equal if a <= 0 else
             lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-13))
    for seed in range(20):
        want = stats.truncnorm.rvs(a, 3.0, loc=mean, scale=std, size=937,
                                   random_state=np.random.default_rng(seed))
        got = truncated_normal_ppf(np.random.default_rng(seed).uniform(size=937), a, 3.0)
        check(got * std + mean, want)
    u = np.random.default_rng(0).uniform(size=(4, 500))
    check(truncated_normal_ppf(u, a, 3.0), stats.truncnorm.ppf(u, a, 3.0))
