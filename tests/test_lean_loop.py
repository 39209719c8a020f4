"""The lean training loop's pieces: numpy acting, quick mode switches (issue: a lean loop).

Each is checked against what it replaces: the numpy exploration step against the torch step on
the same noise draws, the numpy head against ``AlphaProjection.forward``, the numpy network
against ``forward_mlp`` (also after the parameters change in place), and ``QuickTrainMode``'s
flags against torch's recursive ``Module.train``.
"""

from __future__ import annotations

import importlib.util

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tianshou.data import Batch  # noqa: E402

import tsg_envs  # noqa: E402,F401
from baselines import ddpg, ppo, sac  # noqa: E402
from baselines.nets import forward_mlp, numpy_mlp  # noqa: E402
from baselines.optim import Adam  # noqa: E402
from baselines.projection import AlphaProjection, RadialSquash  # noqa: E402
from tsg_envs.polytope import FEASIBILITY_TOL, violation  # noqa: E402

ENV_ID = "tsg/Screening-Window-5F-v1"


@pytest.fixture(scope="module")
def env() -> gym.Env:
    return gym.make(ENV_ID, instance_seed=0)


def _observations(env: gym.Env, n: int, seed: int) -> np.ndarray:
    """``n`` observations of a day played by random feasible actions (with the day's end)."""
    u = env.unwrapped
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    rows = [obs]
    while len(rows) < n:
        cat = int(np.argmax(obs[u.obs_layout["category"]]))
        obs, _, term, trunc, info = env.step(u.polytopes.sample(np.array([cat]), rng)[0])
        rows.append(obs)
        if term or trunc:
            obs, info = env.reset(seed=seed + len(rows))
            rows.append(obs)
    return np.asarray(rows[:n], dtype=np.float32)


def _actor(env: gym.Env, variant: str) -> tuple:
    torch.manual_seed(0)
    cfg = ddpg.VARIANTS[variant].config({"hidden_sizes": [32, 32]})
    algorithm, actor = ddpg.build(env, cfg, variant)
    return algorithm, actor


@pytest.mark.parametrize("variant", ["alpha-ddpg", "radial-ddpg", "proj-ddpg"])
def test_numpy_exploration_equals_the_torch_step(env: gym.Env, variant: str) -> None:
    """Same generator seed: the same noise draws, actions equal to float32 rounding."""
    algorithm, actor = _actor(env, variant)
    policy = algorithm.policy
    obs = _observations(env, 300, seed=1)
    rng_t, rng_n = np.random.default_rng(5), np.random.default_rng(5)
    policy.set_exploration_noise(ddpg.LogitNoise(0.3, rng_t))
    explore = actor.numpy_explorer(ddpg.LogitNoise(0.3, rng_n))
    assert explore is not None
    for rows in (obs[:1], obs[1:9], obs):  # one day at a time, and batches
        with torch.no_grad():
            obs_t = torch.from_numpy(rows)
            ref = policy.add_exploration_noise(actor.logits(obs_t), Batch(obs=obs_t))
        got = explore(rows)
        assert got.dtype == np.float64 and got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6)
    assert rng_t.bit_generator.state == rng_n.bit_generator.state


def test_numpy_exploration_is_feasible(env: gym.Env) -> None:
    """Every explored action of the α head is inside its passenger's polytope."""
    _, actor = _actor(env, "alpha-ddpg")
    explore = actor.numpy_explorer(ddpg.LogitNoise(1.0, np.random.default_rng(0)))
    u = env.unwrapped
    obs = _observations(env, 400, seed=2)
    acts = explore(obs)
    onehot = obs[:, u.obs_layout["category"]]
    waiting = onehot.max(axis=1) > 0.5
    cats = onehot.argmax(axis=1)
    for a, c in zip(acts[waiting], cats[waiting], strict=True):
        assert violation(a, u.polytopes.A_ub[c], u.polytopes.b_ub[c]) <= FEASIBILITY_TOL
    np.testing.assert_allclose(acts.sum(axis=1), 1.0, atol=1e-12)


def test_heads_without_a_numpy_twin_explore_in_torch(env: gym.Env) -> None:
    _, actor = _actor(env, "alpha-ddpg")
    actor.head = "l2"  # the L2 head's QP has no numpy twin
    assert actor.numpy_explorer(None) is None


def test_numpy_radial_squash_equals_the_torch_one(env: gym.Env) -> None:
    squash = RadialSquash.from_env(env)
    obs = _observations(env, 300, seed=5)
    z = np.random.default_rng(1).normal(0.0, 2.0, size=(len(obs), squash.n_teams))
    z[::11] = 0.7  # d = 0: the centre
    with torch.no_grad():
        ref = squash(torch.from_numpy(z), torch.from_numpy(obs)).numpy()
    np.testing.assert_allclose(squash.numpy_forward()(z, obs), ref, rtol=0, atol=1e-14)


@pytest.mark.parametrize("compiled", [True, False])
def test_numpy_head_equals_the_torch_head(env: gym.Env, compiled: bool,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import baselines.projection as projection_module

    if compiled and importlib.util.find_spec("numba") is None:
        pytest.skip("numba is not installed")
    proj = AlphaProjection.from_env(env)
    obs = _observations(env, 500, seed=3)
    obs[::7, env.unwrapped.obs_layout["category"]] = 0.0  # rows without a passenger
    s = np.random.default_rng(0).dirichlet(np.full(proj.n_teams, 0.3), size=len(obs))
    monkeypatch.setattr(projection_module, "_KERNEL", False)  # the reference: torch operations
    with torch.no_grad():
        ref = proj(torch.from_numpy(s), torch.from_numpy(obs)).numpy()
    monkeypatch.setattr(projection_module, "_KERNEL", None if compiled else False)
    project = proj.numpy_forward()
    if compiled:  # the compiled kernel is torch's arithmetic: bit for bit
        np.testing.assert_array_equal(project(s, obs), ref)
    else:
        np.testing.assert_allclose(project(s, obs), ref, rtol=0, atol=1e-14)
    np.testing.assert_array_equal(project(s, obs)[::7], s[::7])


def test_numpy_network_follows_the_parameters(env: gym.Env) -> None:
    _, actor = _actor(env, "alpha-ddpg")
    net = numpy_mlp(actor.net, actor.scale)
    obs = _observations(env, 64, seed=4)

    def ref() -> np.ndarray:
        with torch.no_grad():
            return forward_mlp(actor.net, actor.scale(torch.from_numpy(obs))).numpy()

    np.testing.assert_allclose(net(obs), ref(), rtol=1e-5, atol=1e-6)
    opt = Adam(actor.parameters(), lr=0.05)
    for _ in range(3):  # in-place updates: the numpy views see them
        loss = forward_mlp(actor.net, actor.scale(torch.from_numpy(obs))).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    np.testing.assert_allclose(net(obs), ref(), rtol=1e-5, atol=1e-6)
    actor.load_state_dict({k: v * 0.5 for k, v in actor.state_dict().items()})
    np.testing.assert_allclose(net(obs), ref(), rtol=1e-5, atol=1e-6)


def _algorithms(env: gym.Env) -> dict:
    small = {"hidden_sizes": [16, 16]}
    out = {v: ddpg.build(env, ddpg.VARIANTS[v].config(small), v)[0]
           for v in ("alpha-ddpg", "alpha-td3")}
    out["sac"] = sac.build(env, sac.SACConfig(hidden_sizes=(16, 16)))[0]
    out["ppo"] = ppo.build(env, ppo.PPOConfig(hidden_sizes=(16, 16)))
    return out


def test_quick_train_mode_sets_the_flags_torch_sets(env: gym.Env) -> None:
    """Lagged (target) networks stay in evaluation mode; everything else follows the mode."""
    for name, algorithm in _algorithms(env).items():
        for mode in (True, False, True, False):
            algorithm.train(mode)
            ours = [m.training for m in algorithm.modules()]
            torch.nn.Module.train(algorithm, mode)  # the recursive original
            for m in algorithm.modules():
                if type(m).__name__ == "EvalModeModuleWrapper":
                    m.module.eval()
            assert ours == [m.training for m in algorithm.modules()], (name, mode)
            if mode and name != "ppo":  # PPO has no target networks
                assert any(ours) and not all(ours), name  # targets stay in eval
        with pytest.raises(ValueError, match="boolean"):
            algorithm.train("yes")


def test_numpy_sac_exploration_equals_tianshous(env: gym.Env) -> None:
    """Same torch seed: the same Gaussian draws; actions equal to float32 rounding."""
    from tianshou.utils.torch_utils import policy_within_training_step

    torch.manual_seed(0)
    algorithm, actor = sac.build(env, sac.SACConfig(hidden_sizes=(32, 32)))
    explore = sac.numpy_explorer(actor)
    obs = _observations(env, 200, seed=6)
    for rows in (obs[:1], obs):
        torch.manual_seed(11)
        with torch.no_grad(), policy_within_training_step(algorithm.policy):
            ref = algorithm.policy(Batch(obs=rows, info={})).act.numpy().astype(np.float64)
        state = torch.get_rng_state()
        torch.manual_seed(11)
        got = explore(rows)
        assert torch.equal(torch.get_rng_state(), state)  # the same draws were taken
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5)
        assert np.abs(got - np.tanh(np.zeros_like(got))).max() > 0.01  # it did explore
