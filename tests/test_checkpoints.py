"""Checkpoints without pickle: safetensors and npz round trips, exact resumes, the numpy returns.

The training loop's arithmetic is Tianshou's; what this file pins is that nothing is lost on the
way to disk and back (weights, optimiser moments, generators, the replay buffer and its sampling
generator), that a resume at a day boundary continues bit for bit (every method family), and that
the returns computed in numpy equal Tianshou's numba kernels bit for bit.
"""

from __future__ import annotations

import csv
import pickle
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tianshou")
pytest.importorskip("safetensors")

from tianshou.data import Batch, ReplayBuffer  # noqa: E402

import tsg_envs  # noqa: E402,F401
from baselines.api import RunConfig, get_method  # noqa: E402
from baselines.checkpoint import (  # noqa: E402
    BEST_NAME,
    convert,
    find_weights,
    latest_checkpoint,
    read_checkpoint,
    read_weights,
    save_checkpoint,
    save_weights,
)
from baselines.ddpg import DDPGConfig, build  # noqa: E402
from baselines.replay import (  # noqa: E402
    ArrayReplayBuffer,
    episodic_return,
    gae,
    nstep_return,
    nstep_targets,
)

ENV_ID = "tsg/Screening-Window-5F-v1"  # 450 passengers a day


def _rows(n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    return (rng.normal(size=(n, 7)).astype(np.float32), rng.normal(size=(n, 4)),
            rng.normal(size=n), rng.random(n) < 0.05, np.zeros(n, bool),
            rng.normal(size=(n, 7)).astype(np.float32))


# Plain arrays ----------------------------------------------------------------------------------
def test_safetensors_round_trip_keeps_tensors_dtypes_and_metadata(tmp_path: Path) -> None:
    tensors = {"a.weight": torch.randn(3, 4), "b": torch.arange(5, dtype=torch.int64),
               "c": torch.tensor([1.5], dtype=torch.float64)}
    path = save_weights(tmp_path / "w.safetensors", tensors, method="m",
                        config={"hidden_sizes": [16, 16], "lr": 1e-4},
                        extra={"gradient_steps": 7})
    got, meta = read_weights(path)
    assert got.keys() == tensors.keys()
    assert all(torch.equal(got[k], tensors[k]) and got[k].dtype == tensors[k].dtype
               for k in tensors)
    assert meta["method"] == "m" and meta["config"] == {"hidden_sizes": [16, 16], "lr": 1e-4}
    assert meta["gradient_steps"] == 7
    # the same tensors and metadata give the same bytes (committed files keep their hashes)
    again = save_weights(tmp_path / "w2.safetensors", tensors, method="m",
                         config={"hidden_sizes": [16, 16], "lr": 1e-4},
                         extra={"gradient_steps": 7})
    assert path.read_bytes() == again.read_bytes()
    # no pickle anywhere: a file that is not safetensors is refused, not unpickled
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(pickle.dumps({"x": 1}))
    with pytest.raises(Exception):  # noqa: B017 - safetensors' own error type
        read_weights(bad)


@pytest.mark.parametrize("maxsize", [40, 1000])  # 40: the buffer wraps around
def test_the_buffer_as_arrays_equals_add_and_pickle(maxsize: int) -> None:
    """add_rows stores what add would; to/from arrays restores rows, counters and sampling."""
    rng = np.random.default_rng(0)
    ref, buf = ReplayBuffer(maxsize), ArrayReplayBuffer(maxsize)
    for _ in range(60):
        obs, act, rew, term, trunc, nxt = _rows(3, rng)
        for i in range(3):
            ref.add(Batch(obs=obs[i], act=act[i], rew=float(rew[i]), terminated=bool(term[i]),
                          truncated=bool(trunc[i]), obs_next=nxt[i], info={}))
        buf.add_rows(obs, act, rew, term, trunc, nxt)
    for key in ("obs", "act", "rew", "terminated", "truncated", "done", "obs_next"):
        assert np.array_equal(ref._meta[key], buf._meta[key])
        assert ref._meta[key].dtype == buf._meta[key].dtype
    pickled = pickle.loads(pickle.dumps(buf))
    restored = ArrayReplayBuffer.from_arrays(*buf.to_arrays())
    assert len(restored) == len(ref) == min(180, maxsize)
    for _ in range(5):
        (b1, i1), (b2, i2), (b3, i3) = ref.sample(16), pickled.sample(16), restored.sample(16)
        assert np.array_equal(i1, i2) and np.array_equal(i1, i3)
        assert np.array_equal(b1.obs_next, b3.obs_next) and np.array_equal(b1.rew, b3.rew)
        assert np.array_equal(b1.obs_next, b2.obs_next)
    assert np.array_equal(ref.next(np.arange(len(ref))), restored.next(np.arange(len(ref))))


def test_numpy_returns_equal_tianshous_numba_kernels_bit_for_bit() -> None:
    from tianshou.algorithm.algorithm_base import Algorithm, _gae, _nstep_return

    rng = np.random.default_rng(1)
    for trial in range(30):
        n = int(rng.integers(1, 200))
        for dtype in (np.float32, np.float64):
            v, v2 = rng.normal(size=n).astype(dtype), rng.normal(size=n).astype(dtype)
            rew, end = rng.normal(size=n), rng.random(n) < 0.1
            gamma, lam = float(rng.uniform(0.5, 1.0)), float(rng.uniform(0.0, 1.0))
            want = _gae(v, v2, rew, end, gamma, lam)
            got = gae(v, v2, rew, end, gamma, lam)
            assert want.dtype == got.dtype and np.array_equal(want, got), trial
        k = int(rng.integers(1, 5))
        idx = rng.integers(0, 300, size=(k, 32))
        rew_b, end_b = rng.normal(size=300), rng.random(300) < 0.05
        q = rng.normal(size=(32, 1)).astype(np.float32)
        assert np.array_equal(_nstep_return(rew_b, end_b, q, idx, 0.95, k),
                              nstep_return(rew_b, end_b, q, idx, 0.95, k))
    # and through the buffer: Algorithm.compute_nstep_return / compute_episodic_return
    buf = ArrayReplayBuffer(500)
    for _ in range(50):
        buf.add_rows(*_rows(7, rng))
    fn = lambda b, i: torch.as_tensor(b.obs_next[i].sum(-1, keepdims=True))  # noqa: E731
    for k in (1, 3):
        batch, idx = buf.sample(64)
        want = Algorithm.compute_nstep_return(batch, buf, idx, fn, 0.9, k).returns
        assert torch.equal(want, nstep_targets(buf, idx, fn, 0.9, k))
    batch, idx = buf.sample(0)
    v_s_ = rng.normal(size=len(idx)).astype(np.float32)
    want = Algorithm.compute_episodic_return(batch, buf, idx, v_s_, None, 0.95, 0.9)
    got = episodic_return(batch, buf, idx, v_s_, None, 0.95, 0.9)
    assert all(np.array_equal(a, b) for a, b in zip(want, got, strict=True))


def test_a_checkpoint_restores_networks_optimisers_and_generators(tmp_path: Path) -> None:
    env = gym.make(ENV_ID, instance_seed=0)
    torch.manual_seed(0)
    algorithm, _ = build(env, DDPGConfig(hidden_sizes=(8,)), "alpha-td3")
    buf = ArrayReplayBuffer(300)
    rng = np.random.default_rng(2)
    obs, _ = env.reset(seed=0)
    for _ in range(200):
        act = env.unwrapped.polytopes.sample([0], rng)[0]
        nxt, rew, term, trunc, _ = env.step(act)
        buf.add_rows(obs[None], act[None], np.array([rew]), np.array([term]), np.array([trunc]),
                     nxt[None])
        obs = nxt
    from tianshou.utils.torch_utils import policy_within_training_step

    with policy_within_training_step(algorithm.policy):
        for _ in range(5):  # the optimisers have moments now
            algorithm.update(buf, 32)
    saved_rng = torch.get_rng_state()
    path = save_checkpoint(tmp_path, 200, method="alpha-td3", run={"seed": 1},
                           config={"hidden_sizes": [8]}, algorithm=algorithm,
                           counters={"step": 200}, rng=rng, buffer=buf)
    ckpt = read_checkpoint(latest_checkpoint(tmp_path))
    assert ckpt.path == path and ckpt.state["step"] == 200
    torch.manual_seed(5)
    fresh, _ = build(env, DDPGConfig(hidden_sizes=(8,)), "alpha-td3")
    ckpt.restore(fresh)
    a, b = algorithm.state_dict(), fresh.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a if k != "_optimizers")
    for oa, ob in zip(a["_optimizers"], b["_optimizers"], strict=True):
        assert oa["param_groups"] == ob["param_groups"]
        for pid, slots in oa["state"].items():
            for name, value in slots.items():
                assert torch.equal(value, ob["state"][pid][name]), (pid, name)
                assert value.dtype == ob["state"][pid][name].dtype
    assert torch.equal(ckpt.torch_rng(), saved_rng)
    twin = np.random.default_rng()
    twin.bit_generator.state = ckpt.state["rng"]
    assert twin.random() == rng.random()
    restored = ckpt.buffer()
    assert np.array_equal(restored.sample(8)[1], buf.sample(8)[1])
    # nothing in the folder is a pickle
    assert sorted(p.name for p in path.iterdir()) == ["arrays.npz", "model.safetensors",
                                                      "state.json"]
    with np.load(path / "arrays.npz", allow_pickle=False) as data:
        assert all(data[k].dtype != object for k in data.files)


def test_legacy_pt_checkpoints_convert_to_the_same_policy(tmp_path: Path) -> None:
    """A pickled ``best.pt`` of the old layout becomes ``best.safetensors``, acting the same."""
    env = gym.make(ENV_ID, instance_seed=0)
    torch.manual_seed(3)
    cfg = DDPGConfig(hidden_sizes=(16, 16))
    algorithm, actor = build(env, cfg, "alpha-ddpg")
    config = {k: getattr(cfg, k) for k in ("hidden_sizes", "actor_lr", "beta", "wait_scale",
                                           "reg_weight")}
    legacy = {"method": "alpha-ddpg", "config": config, "algorithm": algorithm.state_dict(),
              "gradient_steps": 10, "step": 20, "rng": {"numpy": {}, "torch": torch.zeros(3)},
              "buffer": None}
    run = tmp_path / "run"
    run.mkdir()
    torch.save(legacy, run / "best.pt")
    with pytest.raises(FileNotFoundError, match="python -m baselines.checkpoint convert"):
        find_weights(run)
    assert convert(run) == [run / BEST_NAME]
    loaded = get_method("alpha-ddpg").load(run, env)
    obs = np.random.default_rng(0).random((20, env.observation_space.shape[0]), np.float32)
    np.testing.assert_array_equal(loaded.act_batch(obs, [{}] * 20), actor.greedy(obs))


# Exact resumes -----------------------------------------------------------------------------------
OFF = {"hidden_sizes": [16, 16], "eval_every": 20, "eval_days": 1, "warmup_steps": 400,
       "batch_size": 32, "updates_per_step": 1.0, "checkpoint_every": 1, "save_buffer": True}
#: algo -> (hparams, budget ending exactly at the first day's end, a larger budget).
RESUMES = {
    # 400 warm-up steps + 50 gradient steps = 450 environment steps: one day (validations at
    # 0, 20 and 40 gradient steps before the resume, 60 and 80 after it)
    "alpha-td3": (OFF, 50, 80),
    "sac": (OFF, 50, 80),
    # rollouts of 150 steps, 3 mini-batches each: 3 rollouts = 9 gradient steps = one day
    "ppo": ({"hidden_sizes": [16, 16], "eval_every": 6, "eval_days": 1, "n_steps": 150,
             "batch_size": 64, "repeat": 1, "checkpoint_every": 1}, 9, 15),
}


def _curve(out: Path) -> list[list[str]]:
    rows = list(csv.DictReader((out / "curve.csv").open()))
    return [[v for k, v in r.items() if k != "wall_s"] for r in rows]


@pytest.mark.parametrize("algo", list(RESUMES))
def test_a_resume_at_a_day_boundary_is_bit_exact(tmp_path: Path, algo: str) -> None:
    hp, first, total = RESUMES[algo]

    def run(out: str, budget: int) -> RunConfig:
        return RunConfig(algo=algo, env_id=ENV_ID, gradient_steps=budget, seed=5,
                         out=tmp_path / out, progress=False, hparams=dict(hp))

    straight = run("straight", total)
    a = get_method(algo).train(straight)
    get_method(algo).train(run("resumed", first))
    state = read_checkpoint(latest_checkpoint(tmp_path / "resumed")).state
    assert (state["step"], state["day"], state["gradient_steps"]) == (450, 1, first)
    b = get_method(algo).train(run("resumed", total))
    ca = read_checkpoint(latest_checkpoint(straight.out))
    cb = read_checkpoint(latest_checkpoint(tmp_path / "resumed"))
    assert ca.path.name == cb.path.name
    assert all(torch.equal(ca.tensors[k], cb.tensors[k]) for k in ca.tensors)
    assert ca.arrays.keys() == cb.arrays.keys()
    for k in ca.arrays:  # optimiser moments, generators, buffer rows
        np.testing.assert_array_equal(ca.arrays[k], cb.arrays[k], err_msg=k)
    assert _curve(straight.out) == _curve(tmp_path / "resumed")
    env = gym.make(ENV_ID, instance_seed=0)
    obs = np.stack([env.reset(seed=s)[0] for s in range(8)])
    np.testing.assert_array_equal(a.act_batch(obs, [{}] * 8), b.act_batch(obs, [{}] * 8))
