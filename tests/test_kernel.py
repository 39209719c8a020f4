"""The optional numba kernel of the single env's step: the same numbers as the numpy path.

``TSG_ENVS_KERNEL`` picks the implementation when an environment is made (``tsg_envs.kernel``).
Every test here steps a numpy env and a numba env side by side from the same seeds and asserts
that every observation, reward, termination and info entry is bit for bit the same (bytes, so
even the sign of a zero counts), over the common step, renormalised proposals, proposals that
need the α-projection, every invalid-action mode, the duel's inserted attacker, and random
proposals (a hypothesis property).
"""

from __future__ import annotations

import functools
import math
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tsg_envs import duel, kernel
from tsg_envs.duel import ATTACKER, DEFENDER, WAIT, encode_attack

HAS_NUMBA = kernel.kernel_name("auto") == "numba"
needs_numba = pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed (the fast extra)")
ROOT = Path(__file__).resolve().parent.parent


_kernel = kernel.chosen  # TSG_ENVS_KERNEL while an environment is made


def _pair(env_id: str = "tsg/Screening-v1", **kwargs) -> tuple[gym.Env, gym.Env]:
    with _kernel("numpy"):
        a = gym.make(env_id, **kwargs)
    with _kernel("numba"):
        b = gym.make(env_id, **kwargs)
    assert a.unwrapped.kernel == "numpy"
    assert b.unwrapped.kernel == ("numba" if kwargs.get("queue_mode") != "sampled" else "numpy")
    return a, b


def _same(x, y, what: str) -> None:
    """Bit for bit: the same type of value, the same dtype and shape, the same bytes."""
    if isinstance(x, dict):
        assert isinstance(y, dict) and x.keys() == y.keys(), what
        for key in x:
            _same(x[key], y[key], f"{what}[{key!r}]")
        return
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        assert isinstance(x, np.ndarray) and isinstance(y, np.ndarray), what
        assert x.dtype == y.dtype and x.shape == y.shape, what
        assert x.tobytes() == y.tobytes(), f"{what}: {x!r} != {y!r}"
    else:
        assert type(x) is type(y), f"{what}: {type(x)} != {type(y)}"
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), f"{what}: {x!r} != {y!r}"


def _same_step(out_a, out_b, k: int) -> None:
    obs_a, r_a, te_a, tr_a, info_a = out_a
    obs_b, r_b, te_b, tr_b, info_b = out_b
    _same(obs_a, obs_b, f"step {k} observation")
    _same(r_a, r_b, f"step {k} reward")
    assert (te_a, tr_a) == (te_b, tr_b), f"step {k}"
    assert info_a.keys() == info_b.keys()
    for key in info_a:
        _same(info_a[key], info_b[key], f"step {k} info[{key!r}]")


def _run_both(a: gym.Env, b: gym.Env, steps: int, seed: int, propose) -> int:
    """Step both envs with the same proposals; return how many steps the kernel took."""
    rng = np.random.default_rng(seed)
    obs_a, info_a = a.reset(seed=seed)
    obs_b, info_b = b.reset(seed=seed)
    _same(obs_a, obs_b, "reset")
    fused = 0
    for k in range(steps):
        action = propose(rng, a.unwrapped, info_a)
        before = b.unwrapped._pool_row
        out_a, out_b = a.step(action.copy()), b.step(action.copy())
        fused += b.unwrapped._pool_row != before
        _same_step(out_a, out_b, k)
        info_a = out_a[4]
        if out_a[2]:
            obs_a, info_a = a.reset()
            obs_b, _ = b.reset()
            _same(obs_a, obs_b, "reset")
    return fused


def _table(env: gym.Env, seed: int = 0) -> np.ndarray:
    polys = env.unwrapped.polytopes
    return polys.sample(np.arange(polys.n_categories), np.random.default_rng(seed))


# The kernel's choice ----------------------------------------------------------------------------
def test_kernel_name_reads_the_variable_and_refuses_unknown_values(monkeypatch) -> None:
    monkeypatch.setenv(kernel.KERNEL_ENV_VAR, "numpy")
    assert kernel.kernel_name() == "numpy"
    monkeypatch.setenv(kernel.KERNEL_ENV_VAR, "NumBa ")
    assert kernel.kernel_name() == "numba"
    monkeypatch.delenv(kernel.KERNEL_ENV_VAR)
    assert kernel.kernel_name() == ("numba" if HAS_NUMBA else "numpy")
    monkeypatch.setenv(kernel.KERNEL_ENV_VAR, "cuda")
    with pytest.raises(ValueError, match="TSG_ENVS_KERNEL must be one of auto, numpy, numba"):
        gym.make("tsg/Screening-Window-5F-v1")


def test_auto_is_numpy_without_numba(monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "numba" else real(name, *a))
    assert kernel.kernel_name("auto") == "numpy"
    env = gym.make("tsg/Screening-Window-5F-v1")
    assert env.unwrapped.kernel == "numpy"


def test_forcing_numba_without_it_fails_at_the_first_step_naming_the_extra(monkeypatch) -> None:
    import tsg_envs

    monkeypatch.setitem(sys.modules, "tsg_envs.numba_step", None)  # import fails
    monkeypatch.delattr(tsg_envs, "numba_step", raising=False)  # even if loaded before
    with _kernel("numba"):
        env = gym.make("tsg/Screening-Window-5F-v1")
    _, info = env.reset(seed=0)
    with pytest.raises(ImportError, match=r"tsg-envs\[fast\]"):
        env.step(env.unwrapped.polytopes.centers[info["category"]].copy())


def test_importing_and_making_an_env_does_not_import_numba() -> None:
    code = (
        "import sys, gymnasium as gym, tsg_envs\n"
        "env = gym.make('tsg/Screening-Window-5F-v1'); obs, info = env.reset(seed=0)\n"
        "print('numba' in sys.modules, env.unwrapped.kernel)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), kernel.KERNEL_ENV_VAR: "auto"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True, cwd=ROOT).stdout.split()
    assert out == ["False", "numba" if HAS_NUMBA else "numpy"]


# Bit for bit ------------------------------------------------------------------------------------
@needs_numba
@pytest.mark.parametrize(
    ("env_id", "kwargs", "noise"),
    [
        ("tsg/Screening-v1", {}, 0.0),  # the common step: feasible proposals on the simplex
        ("tsg/Screening-v1", {}, 1e-7),  # off the simplex within the tolerance: renormalised
        ("tsg/Screening-v1", {}, 1e-3),  # outside: the numpy path projects them
        ("tsg/Screening-v1", {"invalid_action": "penalize"}, 1e-3),
        ("tsg/Screening-Window-10F-v2", {}, 1e-8),
        ("tsg/Screening-Day-20F-v1", {"risk_slack": 1e-4}, 1e-9),  # rows near their bound
        ("tsg/Screening-Shift-10F-Sigma30-v1", {"instance_seed": 3}, 0.0),
    ],
)
def test_traced_days_are_bit_identical(env_id: str, kwargs: dict, noise: float) -> None:
    a, b = _pair(env_id, **kwargs)
    table = _table(a)

    def propose(rng, env, info):
        p = table[info["category"]]
        return p + rng.normal(scale=noise, size=p.shape) if noise else p

    steps = 1000  # past the end of a day (937 passengers on tsg/Screening-v1)
    fused = _run_both(a, b, steps, seed=7, propose=propose)
    if noise < 1e-3:
        assert fused > steps * 0.9  # the kernel did the work
    else:
        assert fused < steps  # and some steps went through the numpy path


@needs_numba
def test_raise_mode_refuses_the_same_proposals_and_keeps_the_same_state() -> None:
    a, b = _pair("tsg/Screening-v1", invalid_action="raise")
    table = _table(a)
    rng = np.random.default_rng(3)
    _, info = a.reset(seed=1)
    b.reset(seed=1)
    refused = 0
    for k in range(600):
        p = table[info["category"]] + rng.normal(scale=3e-6, size=table.shape[1])
        errors = []
        for env in (a, b):
            try:
                out = env.step(p.copy())
            except ValueError as exc:
                errors.append(str(exc))
            else:
                errors.append(out)
        if isinstance(errors[0], str):
            assert errors[0] == errors[1]
            refused += 1
            continue
        _same_step(errors[0], errors[1], k)
        info = errors[0][4]
        if errors[0][2]:
            _, info = a.reset()
            b.reset()
    assert refused > 0


@needs_numba
def test_the_duel_with_an_inserted_attacker_is_bit_identical() -> None:
    games = []
    for name in ("numpy", "numba"):
        with _kernel(name):
            games.append(duel.parallel_env())
    table = _table(games[0].screening)
    outs: list[list] = [[], []]
    for game, out in zip(games, outs, strict=True):
        obs, infos = game.reset(seed=4, options={"attacker_theta": 1})
        k = 0
        while game.agents:
            # Strike once, part-way through the day (flight 2, method 1).
            attack = encode_attack(2, 1, game.screening.game.n_methods) if k == 300 else WAIT
            d = table[infos[DEFENDER]["category"]]
            obs, rewards, terms, _, infos = game.step({ATTACKER: attack, DEFENDER: d})
            out.append((obs, rewards, terms, infos))
            k += 1
    assert len(outs[0]) == len(outs[1]) > 300
    for k, (x, y) in enumerate(zip(*outs, strict=True)):
        for agent in x[0]:
            _same(x[0][agent], y[0][agent], f"{k} obs {agent}")
            _same(x[1][agent], y[1][agent], f"{k} reward {agent}")
            assert x[2] == y[2]
            for key in x[3][agent]:
                _same(x[3][agent][key], y[3][agent][key], f"{k} info {agent} {key}")


@needs_numba
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31 - 1),
    kind=st.lists(st.sampled_from(["table", "scaled", "random", "corner", "nan", "huge"]),
                  min_size=30, max_size=30),
    scale=st.sampled_from([1e-12, 1e-9, 1e-7, 1e-6, 3e-6, 1e-4]),
)
def test_random_proposals_give_the_same_steps(seed: int, kind: list[str], scale: float) -> None:
    """Proposals of every kind (on, near and off the polytope, corners, NaN, huge entries)."""
    a, b = _envs()
    table = _table(a, seed % 7)
    it = iter(kind * 10)

    def propose(rng, env, info):
        p = table[info["category"]].copy()
        how = next(it)
        if how == "scaled":
            return p * (1.0 + rng.normal(scale=scale))
        if how == "random":
            return p + rng.normal(scale=scale, size=p.shape)
        if how == "corner":
            return np.eye(p.shape[0])[rng.integers(p.shape[0])]
        if how == "nan":
            p[rng.integers(p.shape[0])] = math.nan
        if how == "huge":
            p[rng.integers(p.shape[0])] = 1e200
        return p

    rng = np.random.default_rng(seed)
    obs_a, info = a.reset(seed=seed)
    obs_b, _ = b.reset(seed=seed)
    _same(obs_a, obs_b, "reset")
    for k in range(len(kind) * 10):
        action = propose(rng, a.unwrapped, info)
        outs = []
        for env in (a, b):
            try:
                outs.append(env.step(action.copy()))
            except ValueError as exc:
                outs.append(str(exc))
        if isinstance(outs[0], str):
            assert outs[0] == outs[1]
            continue
        _same_step(outs[0], outs[1], k)
        info = outs[0][4]
        if outs[0][2]:
            _, info = a.reset()
            b.reset()


@functools.cache
def _envs() -> tuple[gym.Env, gym.Env]:
    return _pair("tsg/Screening-Window-10F-v1")


@needs_numba
@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1e100, allow_nan=False), max_size=24))
def test_fsum_is_pythons(values: list[float]) -> None:
    from tsg_envs.numba_step import fsum

    got = fsum(np.array(values, dtype=np.float64))
    assert np.float64(got).tobytes() == np.float64(math.fsum(values)).tobytes()


@needs_numba
def test_outputs_are_fresh_arrays_never_written_again() -> None:
    """The kernel hands out rows of arrays it made: each step's own, never changed afterwards."""
    _, env = _pair("tsg/Screening-Window-5F-v1")
    table = _table(env)
    obs, info = env.reset(seed=0)
    kept = []
    for _ in range(700):  # more than one block of output rows
        action = table[info["category"]].copy()
        obs, reward, terminated, _, info = env.step(action)
        kept.append((obs, obs.copy(), info["queues"], info["queues"].copy(),
                     info["executed_action"], info["executed_action"].copy()))
        assert not np.shares_memory(info["executed_action"], action)
        if terminated:
            obs, info = env.reset()
    for obs, obs0, q, q0, e, e0 in kept:
        np.testing.assert_array_equal(obs, obs0)
        np.testing.assert_array_equal(q, q0)
        np.testing.assert_array_equal(e, e0)
    assert not np.shares_memory(kept[-1][0], kept[-2][0])
    day = env.unwrapped.day
    queues = day.queues.copy()
    kept[-1][2][:] = -1.0  # writing into a returned array leaves the state alone
    np.testing.assert_array_equal(day.queues, queues)


@needs_numba
def test_a_non_contiguous_or_float32_action_takes_the_numpy_path_with_the_same_result() -> None:
    a, b = _pair("tsg/Screening-Window-5F-v1")
    table = _table(a)
    _, info = a.reset(seed=2)
    b.reset(seed=2)
    for k in range(50):
        wide = np.zeros((table.shape[1], 2))
        wide[:, 0] = table[info["category"]]
        action = wide[:, 0] if k % 2 else table[info["category"]].astype(np.float32)
        out_a, out_b = a.step(action), b.step(action)
        _same_step(out_a, out_b, k)
        info = out_a[4]


@needs_numba
@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_copied_env_steps_as_the_original(how: str) -> None:
    """Pickled or deep-copied mid-day, the copy's state is its own buffer's, and steps alike."""
    import copy
    import pickle

    a, b = _pair("tsg/Screening-Window-5F-v1")
    env = b.unwrapped
    table = _table(a)
    _, info = env.reset(seed=5)
    for _ in range(30):
        _, _, _, _, info = env.step(table[info["category"]].copy())
    twin = pickle.loads(pickle.dumps(env)) if how == "pickle" else copy.deepcopy(env)
    assert np.shares_memory(twin.day.queues, twin._buffer)
    assert not np.shares_memory(twin.day.queues, env.day.queues)
    rng = np.random.default_rng(0)
    for k in range(80):
        # every third proposal is outside the tolerance: the numpy path, on the same state
        noise = 1e-3 if k % 3 == 0 else 0.0
        p = table[info["category"]] + rng.normal(scale=noise, size=table.shape[1])
        out = env.step(p.copy())
        _same_step(out, twin.step(p.copy()), k)
        info = out[4]
        if out[2]:
            break
