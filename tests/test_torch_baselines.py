"""Tests of the torch baselines: feasibility fuzzing, tiny smoke trainings, checkpoints."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tianshou")

from tianshou.data import Batch  # noqa: E402

import tsg_envs  # noqa: E402,F401
from baselines.api import RunConfig, get_method  # noqa: E402
from baselines.checkpoint import latest_checkpoint, read_checkpoint  # noqa: E402
from baselines.ddpg import DDPGConfig, LogitNoise, WarmupPolicy, build  # noqa: E402
from tsg_envs.polytope import FEASIBILITY_TOL, violation  # noqa: E402
from tsg_envs.rollout import CentreAgent, rollout  # noqa: E402

HAS_CVXPYLAYERS = importlib.util.find_spec("cvxpylayers") is not None
TINY = {"hidden_sizes": [16, 16], "eval_every": 0, "threads": 1}


@pytest.fixture(scope="module")
def env() -> gym.Env:
    return gym.make("tsg/Screening-v1", instance_seed=0)


def _random_obs(env: gym.Env, rng: np.random.Generator, n: int) -> np.ndarray:
    """Observations with random categories and queue features up to an hour."""
    lay = env.unwrapped.obs_layout
    obs = np.zeros((n, env.observation_space.shape[0]), dtype=np.float32)
    cats = rng.integers(0, env.unwrapped.game.n_categories, n)
    obs[np.arange(n), lay["category"].start + cats] = 1.0
    obs[:, lay["backlog"]] = rng.exponential(10.0, size=(n, lay["backlog"].stop - 50))
    obs[:, lay["waits"]] = rng.exponential(10.0, size=(n, lay["waits"].stop - lay["waits"].start))
    obs[:, lay["history"]] = rng.uniform(0, 1.2, size=(n, lay["history"].stop - 65))
    obs[:, lay["clock"]] = rng.uniform(0, 1, size=(n, 1))
    return obs


def _state(run: RunConfig) -> dict:
    """The newest checkpoint's ``state.json`` of a run."""
    return read_checkpoint(latest_checkpoint(run.out)).state


def _tensors_of(run: RunConfig) -> dict:
    return read_checkpoint(latest_checkpoint(run.out)).tensors


def _explore(env: gym.Env, algorithm, sigma: float, rng: np.random.Generator):
    """The behaviour policy of a DDPG-family algorithm, as the training loop calls it."""
    policy = algorithm.policy
    policy.set_exploration_noise(LogitNoise(sigma, rng))

    def explore(obs: np.ndarray) -> np.ndarray:
        obs_t = torch.as_tensor(np.atleast_2d(obs), dtype=torch.float32)
        with torch.no_grad():
            return policy.add_exploration_noise(policy.actor.logits(obs_t), Batch(obs=obs_t))

    return explore


def _assert_feasible(env: gym.Env, obs: np.ndarray, actions: np.ndarray) -> None:
    polys = env.unwrapped.polytopes
    cats = obs[:, env.unwrapped.obs_layout["category"]].argmax(-1)
    v = violation(np.asarray(actions, dtype=np.float64), polys.A_ub[cats], polys.b_ub[cats])
    assert v.max() <= FEASIBILITY_TOL, f"max violation {v.max():.3g}"


def test_alpha_actor_fuzz_explore_greedy_target_and_warmup(env: gym.Env) -> None:
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    algorithm, actor = build(env, DDPGConfig(hidden_sizes=(32, 32)))
    # make the untrained actor's logits extreme, as a badly trained one's can be
    with torch.no_grad():
        actor.net[-1].weight.mul_(50.0)
    obs = _random_obs(env, rng, 200)
    for sigma in (0.0, 0.3, 3.0):
        explore = _explore(env, algorithm, sigma, rng)
        acts = np.concatenate([explore(o) for o in obs])
        _assert_feasible(env, obs, acts)
        _assert_feasible(env, obs, explore(obs))  # a batch at once (the vector loop)
    # Tianshou's collector passes the projected action, not the logits: recomputed from obs
    with torch.no_grad():
        y = algorithm.policy(Batch(obs=obs, info={})).act.numpy()
        _assert_feasible(env, obs, algorithm.policy.add_exploration_noise(y, Batch(obs=obs)))
    # the batched float32 forward (what the critic and Tianshou's target actor see)
    with torch.no_grad():
        y = actor(torch.tensor(obs))[0]
    assert y.dtype == torch.float32
    _assert_feasible(env, obs, y.numpy())
    # warm-up policy (a Tianshou policy): row by row, the same draws as one at a time
    warm = WarmupPolicy(env, "feasible", np.random.default_rng(4))
    acts = warm(Batch(obs=obs, info={})).act
    _assert_feasible(env, obs, acts)
    again = WarmupPolicy(env, "feasible", np.random.default_rng(4))
    np.testing.assert_array_equal(
        np.concatenate([again(Batch(obs=o[None], info={})).act for o in obs]), acts)


def test_td3_target_smoothing_is_reprojected(env: gym.Env) -> None:
    from tianshou.data import Batch

    torch.manual_seed(1)
    cfg = DDPGConfig(hidden_sizes=(32, 32), policy_noise=2.0, noise_clip=0.0)
    algorithm, _ = build(env, cfg, "alpha-td3")
    obs = _random_obs(env, np.random.default_rng(1), 500)
    with torch.no_grad():
        act = algorithm._target_q_compute_action(Batch(obs=obs, info={})).act
    _assert_feasible(env, obs, act.numpy())
    # the noise did move the target actions off the greedy ones
    with torch.no_grad():
        greedy = algorithm.policy.actor(torch.tensor(obs))[0]
    assert (act - greedy).abs().max().item() > 0.05


def _run(tmp_path: Path, algo: str, gradient_steps: int, **hp: object) -> RunConfig:
    return RunConfig(
        algo=algo, gradient_steps=gradient_steps, seed=3, out=tmp_path / algo, progress=False,
        hparams={**TINY, **hp},
    )


OFF = dict(warmup_steps=100, batch_size=32)  # 0.5 gradient steps per environment step
#: algo -> (gradient steps, hparams, environment steps that budget takes, worked by hand).
SMOKE = {
    "alpha-ddpg": (75, OFF, 100 + 75 * 2),
    "alpha-td3": (75, OFF, 100 + 75 * 2),
    "penalty-ddpg": (75, OFF, 100 + 75 * 2),
    "radial-ddpg": (75, OFF, 100 + 75 * 2),
    "proj-ddpg": (75, OFF, 100 + 75 * 2),
    "proj-penalty-ddpg": (75, OFF, 100 + 75 * 2),
    "sac": (75, OFF, 100 + 75 * 2),
    # one update = repeat x ceil(n_steps / batch_size) = 1 x 2 mini-batches per 128 steps
    "ppo": (4, dict(n_steps=128, batch_size=64, repeat=1), 2 * 128),
}


#: Methods whose actor proposes points of the simplex that may break the polytope.
UNPROJECTED = ("penalty-ddpg", "proj-ddpg", "proj-penalty-ddpg")


@pytest.mark.parametrize("algo", list(SMOKE))
def test_smoke_train_and_load(tmp_path: Path, env: gym.Env, algo: str) -> None:
    budget, hp, env_steps = SMOKE[algo]
    run = _run(tmp_path, algo, budget, **hp)
    agent = get_method(algo).train(run)
    ckpt = latest_checkpoint(run.out)
    assert ckpt is not None and ckpt.name == f"ckpt_{env_steps:08d}"
    state = read_checkpoint(ckpt).state
    assert (state["gradient_steps"], state["step"]) == (budget, env_steps)
    assert not list(run.out.rglob("*.pt")) and not list(run.out.rglob("*.pkl"))
    assert (run.out / "curve.csv").exists()
    loaded = get_method(algo).load(ckpt, env)
    obs = _random_obs(env, np.random.default_rng(5), 50)
    a1 = np.stack([agent.act(o, {}) for o in obs])
    a2 = np.stack([loaded.act(o, {}) for o in obs])
    np.testing.assert_array_equal(a1, a2)
    by_dir = get_method(algo).load(run.out, env)  # a run folder: best.safetensors, else latest
    np.testing.assert_array_equal(np.stack([by_dir.act(o, {}) for o in obs]), a1)
    if algo not in UNPROJECTED:
        _assert_feasible(env, obs, a1)
    assert np.allclose(a1.sum(-1), 1.0, atol=1e-6) and a1.min() >= 0


@pytest.mark.skipif(not HAS_CVXPYLAYERS, reason="needs the l2 extra (cvxpylayers)")
def test_smoke_l2_ddpg(tmp_path: Path, env: gym.Env) -> None:
    run = _run(tmp_path, "l2-ddpg", 5, warmup_steps=100, batch_size=4, updates_per_step=0.25)
    agent = get_method("l2-ddpg").train(run)
    obs = _random_obs(env, np.random.default_rng(6), 8)
    _assert_feasible(env, obs, np.stack([agent.act(o, {}) for o in obs]))


def test_resume_is_exact_and_deterministic(tmp_path: Path, env: gym.Env) -> None:
    hp = dict(warmup_steps=800, batch_size=32, checkpoint_every=500, save_buffer=True,
              updates_per_step=1.0)
    # one run of two days: 200 gradient steps after 800 warm-up steps end at environment step
    # 1000 (checkpoints after day 1 at step 937 and at the end)
    full = _run(tmp_path / "full", "alpha-ddpg", 200, **hp)
    get_method("alpha-ddpg").train(full)
    # the same run stopped after day 1 (137 gradient steps: environment step 937), then resumed
    part = _run(tmp_path / "part", "alpha-ddpg", 137, **hp)
    get_method("alpha-ddpg").train(part)
    assert _state(part)["step"] == 937
    part.gradient_steps = 200
    get_method("alpha-ddpg").train(part)
    full_ckpt = read_checkpoint(latest_checkpoint(full.out))
    part_ckpt = read_checkpoint(latest_checkpoint(part.out))
    a, b = full_ckpt.tensors, part_ckpt.tensors
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # the optimisers' moments and the generators too, and the learning curve's rows
    for k in full_ckpt.arrays:
        np.testing.assert_array_equal(full_ckpt.arrays[k], part_ckpt.arrays[k], err_msg=k)
    assert full_ckpt.state["rng"] == part_ckpt.state["rng"]
    assert _curve(full) == _curve(part)
    # every stored action (warm-up and exploration) is feasible for its observation's category
    buffer = full_ckpt.buffer()
    assert len(buffer) == 1000
    _assert_feasible(env, buffer.obs[:1000], buffer.act[:1000])


def _curve(run: RunConfig) -> list[list[str]]:
    """The learning curve's rows without the wall-clock column."""
    import csv

    rows = list(csv.DictReader((run.out / "curve.csv").open()))
    return [[v for k, v in r.items() if k != "wall_s"] for r in rows]


def test_a_resume_refuses_another_runs_checkpoint(tmp_path: Path) -> None:
    from baselines.runs import run_identity

    hp = dict(warmup_steps=100, batch_size=32)
    first = _run(tmp_path, "alpha-ddpg", 10, **hp)
    get_method("alpha-ddpg").train(first)
    state = _state(first)
    assert state["run"] == {"env_id": "tsg/Screening-v1", "instance_seed": 0,
                            "env_kwargs": {}, "seed": 3} == run_identity(first)
    # the same out directory for another instance, seed or env kwargs: refused, not resumed
    for change in ({"instance_seed": 1}, {"seed": 4}, {"env_kwargs": {"risk_slack": 0.1}}):
        other = dataclasses.replace(first, gradient_steps=20, **change)
        with pytest.raises(ValueError, match=f"belongs to another run \\(its {next(iter(change))}"):
            get_method("alpha-ddpg").train(other)
    # the same run with a larger budget resumes
    get_method("alpha-ddpg").train(dataclasses.replace(first, gradient_steps=20))
    assert _state(first)["gradient_steps"] == 20


@pytest.mark.slow
def test_alpha_ddpg_beats_the_centre_policy(tmp_path: Path, env: gym.Env) -> None:
    # the default config (keep_best on the validation days); about 3-6 minutes on 2 cores
    run = RunConfig(algo="alpha-ddpg", gradient_steps=10_000, seed=0, out=tmp_path / "a",
                    progress=False)
    agent = get_method("alpha-ddpg").train(run)
    seeds = [2**31 + i for i in range(3)]
    learned = np.mean([rollout(env, agent, seed=s).mean_wait for s in seeds])
    centre = np.mean([rollout(env, CentreAgent(env), seed=s).mean_wait for s in seeds])
    assert learned < centre


def test_the_committed_alpha_ddpg_checkpoint_beats_the_static_lp() -> None:
    """The attacker panel's α-DDPG for tsg/Screening-v0 (an alias of v1), instance 0."""
    from tsg_envs.rollout import LPAgent

    path = (Path(__file__).resolve().parent.parent / "results" / "attacker_panel" / "alpha-ddpg"
            / "tsg_Screening-v1_i0.safetensors")
    env = gym.make("tsg/Screening-v0", instance_seed=0)
    agent = get_method("alpha-ddpg").load(path, env)
    seeds = [2**31 + i for i in range(3)]  # the leaderboard's evaluation days
    for s in seeds:
        learned = rollout(env, agent, seed=s)
        lp = rollout(env, LPAgent(env), seed=s)
        assert learned.mean_wait < lp.mean_wait, s
        assert learned.proposed_violations == 0


@pytest.mark.slow
def test_alpha_ddpg_trained_from_scratch_beats_the_static_lp(tmp_path: Path) -> None:
    from tsg_envs.rollout import LPAgent

    env = gym.make("tsg/Screening-v0", instance_seed=0)
    run = RunConfig(algo="alpha-ddpg", env_id="tsg/Screening-v0", gradient_steps=10_000, seed=0,
                    out=tmp_path / "a", progress=False)
    agent = get_method("alpha-ddpg").train(run)
    seeds = [2**31 + i for i in range(3)]
    learned = np.mean([rollout(env, agent, seed=s).mean_wait for s in seeds])
    lp = np.mean([rollout(env, LPAgent(env), seed=s).mean_wait for s in seeds])
    assert learned < lp


def test_radial_squash_worked_by_hand() -> None:
    """T = 2, one risk row y_1 <= 0.6 and y >= 0, centre (0.3, 0.7)."""
    from baselines.projection import RadialSquash

    a = np.array([[[1.0, 0.0], [-1.0, 0.0], [0.0, -1.0]]])
    b = np.array([[0.6, 0.0, 0.0]])
    sq = RadialSquash(a, b, np.array([[0.3, 0.7]]), slice(0, 1))
    cat = torch.zeros(3, dtype=torch.long)
    z = torch.tensor([[10.0, 0.0], [0.0, 10.0], [1.0, 1.0]], dtype=torch.float64)
    y = sq(z, cat_B=cat).numpy()
    # z = (10, 0): d = (5, -5), |d| = sqrt(50), toward y_1 = 0.6: rho = 0.3 / (1/sqrt 2)
    t = np.tanh(np.sqrt(50.0)) * (1 - 1e-6)
    np.testing.assert_allclose(y[0], [0.3 + 0.3 * t, 0.7 - 0.3 * t], rtol=0, atol=1e-15)
    # z = (0, 10): toward y_1 = 0, the nonnegativity row: rho = 0.3 * sqrt 2 along (-1, 1)/sqrt 2
    np.testing.assert_allclose(y[1], [0.3 - 0.3 * t, 0.7 + 0.3 * t], rtol=0, atol=1e-15)
    # equal logits: no direction, the centre
    np.testing.assert_allclose(y[2], [0.3, 0.7], rtol=0, atol=1e-15)


def test_radial_actor_is_strictly_feasible_on_every_input(env: gym.Env) -> None:
    """Greedy, explored and extreme logits all land inside the waiting category's polytope."""
    cfg = DDPGConfig(hidden_sizes=(16, 16))
    algorithm, actor = build(env, cfg, "radial-ddpg")
    rng = np.random.default_rng(11)
    obs = _random_obs(env, rng, 300)
    obs_t = torch.tensor(obs)
    with torch.no_grad():
        greedy, _ = actor.from_logits(actor.logits(obs_t), obs_t, double=True)
        extreme = torch.tensor(rng.choice([-1.0, 1.0], size=(300, env.action_space.shape[0])))
        corner, _ = actor.from_logits(extreme, obs_t, double=True)
    explored = _explore(env, algorithm, 0.5, rng)(obs[:50])
    _assert_feasible(env, obs, greedy.numpy())
    _assert_feasible(env, obs, corner.numpy())
    _assert_feasible(env, obs[:50], explored)
    # squashing moves feasible points too: the greedy actions are not the softmax points
    soft = torch.softmax(cfg.beta * actor.logits(obs_t).double(), -1)
    assert (soft - greedy).abs().max().item() > 1e-3


def _buffer_of(run: RunConfig) -> object:
    return read_checkpoint(latest_checkpoint(run.out)).buffer()


VEC = dict(OFF, save_buffer=True, checkpoint_every=10**9)


def test_the_vector_loop_with_one_day_stores_the_one_day_loop_transitions(tmp_path: Path) -> None:
    """N = 1 through the native vector env: the same transitions (floats to rounding)."""
    single = _run(tmp_path / "single", "alpha-ddpg", 60, **VEC)
    vector = _run(tmp_path / "vector", "alpha-ddpg", 60, vector=True, **VEC)
    a_agent = get_method("alpha-ddpg").train(single)
    b_agent = get_method("alpha-ddpg").train(vector)
    a, b = _buffer_of(single), _buffer_of(vector)
    assert len(a) == len(b) == 100 + 60 * 2
    for key in ("obs", "act", "rew", "obs_next", "terminated"):
        np.testing.assert_allclose(np.asarray(getattr(a, key)[: len(a)], dtype=float),
                                   np.asarray(getattr(b, key)[: len(b)], dtype=float),
                                   rtol=0, atol=1e-9, err_msg=key)
    obs = _random_obs(gym.make("tsg/Screening-v1", instance_seed=0), np.random.default_rng(2), 20)
    np.testing.assert_allclose(np.stack([a_agent.act(o, {}) for o in obs]),
                               np.stack([b_agent.act(o, {}) for o in obs]), rtol=0, atol=1e-6)


@pytest.mark.parametrize("algo", ["alpha-ddpg", "radial-ddpg", "proj-ddpg"])
def test_the_vector_loop_collects_several_days_feasibly(tmp_path: Path, env: gym.Env,
                                                        algo: str) -> None:
    run = _run(tmp_path, algo, 40, num_envs=4, **VEC)
    get_method(algo).train(run)
    state = _state(run)
    buf = _buffer_of(run)
    # 4 days at once: warm-up 100 steps, then 2 environment steps per gradient step, in
    # vector steps of 4 transitions (the last one may overshoot by up to 3)
    assert state["gradient_steps"] == 40
    assert 180 <= state["step"] <= 183 and state["step"] % 4 == 0 and len(buf) == state["step"]
    assert state["day"] == 4
    obs = np.asarray(buf.obs[: len(buf)])
    act = np.asarray(buf.act[: len(buf)])
    if algo in UNPROJECTED:
        assert np.allclose(act.sum(-1), 1.0) and act.min() >= 0
    else:
        _assert_feasible(env, obs, act)
    # the 4 days are different days: their first observations differ in the queues or arrivals
    assert len({tuple(np.round(o, 6)) for o in obs[4:8]}) > 1


def test_the_vector_loop_resumes_exactly(tmp_path: Path) -> None:
    """Interrupted at a day boundary and resumed = run straight through."""
    hp = dict(OFF, warmup_steps=800, num_envs=2, checkpoint_every=1, save_buffer=True)
    env_id = "tsg/Screening-Window-5F-v1"  # 450 passengers a day: a checkpoint per 2 days
    straight = RunConfig(algo="alpha-ddpg", env_id=env_id, gradient_steps=70, seed=3,
                         out=tmp_path / "straight", progress=False, hparams={**TINY, **hp})
    a = get_method("alpha-ddpg").train(straight)
    # 2 days of 450 at once: after 800 warm-up steps, 100 transitions give 50 gradient steps
    # exactly at the end of the first pair of days (environment step 900)
    part = RunConfig(algo="alpha-ddpg", env_id=env_id, gradient_steps=50, seed=3,
                     out=tmp_path / "resumed", progress=False, hparams={**TINY, **hp})
    get_method("alpha-ddpg").train(part)
    first = _state(part)
    assert (first["day"], first["step"], first["gradient_steps"]) == (2, 900, 50)
    resumed = RunConfig(**{**part.__dict__, "gradient_steps": 70})
    b = get_method("alpha-ddpg").train(resumed)
    # 800 + 2 x 70 = 940 transitions each: the rows past the resume (900) compared too
    assert len(_buffer_of(straight)) == len(_buffer_of(resumed)) == 940
    obs = np.asarray(_buffer_of(straight).obs[:50])
    np.testing.assert_array_equal(np.asarray(_buffer_of(straight).act[:1100]),
                                  np.asarray(_buffer_of(resumed).act[:1100]))
    np.testing.assert_array_equal(np.stack([a.act(o, {}) for o in obs]),
                                  np.stack([b.act(o, {}) for o in obs]))


def test_ppo_is_deterministic_under_a_seed(tmp_path: Path) -> None:
    """Tianshou shuffles PPO's mini-batches with numpy's global generator; the training runs it
    from its own seeded state (and leaves the caller's alone), so two runs of one seed learn
    the same weights."""
    weights = []
    np.random.seed(0)
    for k in range(2):
        run = RunConfig(algo="ppo", env_id="tsg/Screening-Window-5F-v1", gradient_steps=40,
                        seed=3, out=tmp_path / f"r{k}", instance_seed=0, progress=False,
                        hparams={**TINY, "n_steps": 256, "batch_size": 64, "repeat": 2})
        get_method("ppo").train(run)
        state = _tensors_of(run)
        weights.append(torch.cat([state[k].flatten().float() for k in sorted(state)]))
    assert torch.equal(weights[0], weights[1])
    assert (np.random.get_state()[1] == np.random.RandomState(0).get_state()[1]).all()
