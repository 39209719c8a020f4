"""The native vector env's compiled step (numba) against its numpy step.

``TSG_ENVS_KERNEL`` picks the implementation when the vector env is made (``tsg_envs.kernel``).
Every test steps a numpy vector env and a numba one side by side from the same seeds with the
same proposals: terminations, info keys, dtypes, shapes and every discrete outcome (categories,
teams, masks, which proposals were refused) equal; floats to rounding (relative 1e-12: the
compiled step sums its small products term by term, numpy's batched products in their own
order); reset days bit for bit (the same draws, gathered in place). ``tests/test_vector.py``
checks both paths against ``SyncVectorEnv`` (CI runs it again with ``TSG_ENVS_KERNEL=numpy``).
"""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tsg_envs  # noqa: F401  (registers the ids)
from tsg_envs import kernel

HAS_NUMBA = kernel.kernel_name("auto") == "numba"
pytestmark = pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed (the fast extra)")
ROOT = Path(__file__).resolve().parent.parent
ENV_ID = "tsg/Screening-Window-5F-v1"
DISCRETE = ("category", "theta", "flight", "team")


_kernel = kernel.chosen  # TSG_ENVS_KERNEL while an environment is made


def _pair(n: int, env_id: str = ENV_ID, **kwargs) -> tuple[gym.vector.VectorEnv, ...]:
    with _kernel("numpy"):
        a = gym.make_vec(env_id, num_envs=n, **kwargs)
    with _kernel("numba"):
        b = gym.make_vec(env_id, num_envs=n, **kwargs)
    assert (a.kernel, b.kernel) == ("numpy", "numba")
    return a, b


def _same_days(a, b) -> None:
    """The two envs' days: the same arrivals (bit for bit) and the same position in them."""
    da, db = a.days, b.days
    for name in ("_times", "_cats", "_thetas", "_flights", "_gaps"):
        np.testing.assert_array_equal(getattr(da, name), getattr(db, name), err_msg=name)
    np.testing.assert_array_equal(da.index, db.index)
    np.testing.assert_array_equal(da.history, db.history)
    # The compiled step keeps the queues row-last; DayBatch reads the same values.
    for name in ("queues", "backlog", "team_waits"):
        x, y = getattr(da, name), getattr(db, name)
        assert x.shape == y.shape, name
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12, err_msg=name)


def _close(out_a: tuple, out_b: tuple, what: str) -> None:
    (o1, r1, t1, u1, i1), (o2, r2, t2, u2, i2) = out_a, out_b
    np.testing.assert_array_equal(t1, t2, err_msg=what)
    np.testing.assert_array_equal(u1, u2, err_msg=what)
    assert o1.dtype == o2.dtype == np.float32 and o1.shape == o2.shape
    np.testing.assert_allclose(o1, o2, rtol=1e-6, atol=1e-9, err_msg=what)  # float32 casts
    assert r1.dtype == r2.dtype
    np.testing.assert_allclose(r1, r2, rtol=1e-12, atol=1e-12, err_msg=what)
    assert list(i1) == list(i2), what
    for key in i1:
        x, y = i1[key], i2[key]
        assert x.dtype == y.dtype and x.shape == y.shape, (what, key)
        if key.startswith("_") or key in DISCRETE:
            np.testing.assert_array_equal(x, y, err_msg=f"{what} {key}")
        else:
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12, err_msg=f"{what} {key}")
    if "proposed_violation" in i1:  # the same proposals were outside the tolerance
        np.testing.assert_array_equal(i1["proposed_violation"] > 1e-6,
                                      i2["proposed_violation"] > 1e-6, err_msg=what)


def _proposals(env, info, rng, mode: str, k: int) -> np.ndarray:
    """Feasible proposals, some renormalised, some off the polytope, negative or zero."""
    n = env.num_envs
    a = env.polytopes.sample(np.maximum(info["category"], 0), rng)
    kind = k % 6
    if kind == 1:
        a = a * (1.0 + 4e-7)  # within the tolerance: renormalised (some need re-projecting)
    elif kind == 2:
        a = a.astype(np.float32)
    if mode != "raise":
        off = rng.random(n) < 0.3
        a[off] = rng.dirichlet(np.full(a.shape[1], 0.3), size=int(off.sum()))
        if kind == 3:
            a[0, 0] -= 1e-3  # a negative entry: clipped and renormalised
        if kind == 4:
            a[-1] = 0.0  # nothing to renormalise: the centre
    return a


@pytest.mark.parametrize("queue_mode", ["expected", "sampled"])
@pytest.mark.parametrize("mode", ["project", "penalize", "raise"])
def test_compiled_step_equals_numpy_over_days_and_autoresets(queue_mode: str, mode: str
                                                            ) -> None:
    n = 5
    a, b = _pair(n, queue_mode=queue_mode, invalid_action=mode)
    oa, ia = a.reset(seed=7)
    ob, ib = b.reset(seed=7)
    np.testing.assert_array_equal(oa, ob)
    assert all(np.array_equal(ia[k], ib[k]) for k in ia) and list(ia) == list(ib)
    _same_days(a, b)
    rng = np.random.default_rng(1)
    steps = 2 * (a.game.n_passengers + 1) + 3  # two days, two autoresets
    for k in range(steps):
        act = _proposals(a, ia, rng, mode, k)
        out_a, out_b = a.step(act.copy()), b.step(act.copy())
        _close(out_a, out_b, f"step {k}")
        ia = out_a[4]
    _same_days(a, b)  # the autoreset days too
    # The generators are where numpy left them (sampled mode drew one uniform a step).
    assert [g.random() for g in a.np_random] == [g.random() for g in b.np_random]


def test_rows_reset_apart_take_the_numpy_step_and_come_back() -> None:
    """Reset masks put rows at different passengers: autoresets then come row by row (the
    numpy step), between compiled steps that must read the state the numpy step left."""
    n = 4
    a, b = _pair(n)
    _, ia = a.reset(seed=3)
    b.reset(seed=3)
    rng = np.random.default_rng(2)
    p = a.game.n_passengers
    for k in range(2 * p + 10):
        if k in (17, p // 2, p + 3):
            mask = np.zeros(n, dtype=bool)
            mask[k % n] = True
            ra = a.reset(seed=100 + k, options={"reset_mask": mask})
            rb = b.reset(seed=100 + k, options={"reset_mask": mask.copy()})
            np.testing.assert_array_equal(ra[0], rb[0])
            ia = {**ia, **{key: np.where(mask, ra[1][key], ia[key]) for key in ra[1]
                           if not key.startswith("_")}}
        act = _proposals(a, ia, rng, "project", k)
        out_a, out_b = a.step(act.copy()), b.step(act.copy())
        _close(out_a, out_b, f"step {k}")
        ia = out_a[4]
    assert len(set(b.days.index.tolist())) > 1  # rows apart
    _same_days(a, b)


def test_refusals_and_non_finite_proposals_leave_the_state_as_numpy_does() -> None:
    a, b = _pair(3, invalid_action="raise")
    a.reset(seed=0)
    _, info = b.reset(seed=0)
    rng = np.random.default_rng(0)
    good = b.polytopes.sample(np.maximum(info["category"], 0), rng)
    for bad, err in ((np.full_like(good, 1.0), "violates the polytope"),
                     (np.where(np.arange(3)[:, None] == 1, np.nan, good), "finite"),
                     (np.where(np.arange(3)[:, None] == 2, 1e200, good), "violates")):
        for env in (a, b):
            with pytest.raises(ValueError, match=err):
                env.step(bad)
        _same_days(a, b)
    _close(a.step(good.copy()), b.step(good.copy()), "after the refusals")
    # Huge entries in project mode take the numpy path (its overflow-safe scaling).
    a, b = _pair(3)
    a.reset(seed=0)
    _, info = b.reset(seed=0)
    huge = b.polytopes.sample(np.maximum(info["category"], 0), rng) * 1e160
    _close(a.step(huge.copy()), b.step(huge.copy()), "huge")


def test_never_reset_and_stepping_past_the_day_raise_as_numpy() -> None:
    _, b = _pair(2)
    act = np.full((2, b.single_action_space.shape[0]), 0.1)
    with pytest.raises(RuntimeError, match="reset"):
        b.step(act)


@pytest.mark.parametrize("config_kwargs", [{}, {"horizon": "window"}, {"arrival_std": 0.0}])
def test_compiled_reset_draws_the_same_days_bit_for_bit(config_kwargs: dict) -> None:
    """DayBatch.reset_drawn (the compiled gather) against DayBatch.reset(draw_arrivals_batch)."""
    from tsg_envs import GameConfig, make_game
    from tsg_envs.dynamics import DayBatch, draw_arrivals_batch
    from tsg_envs.numba_vector import arrange_days

    game = make_game(GameConfig(**config_kwargs), 2)
    n = 37  # not a multiple of the compiled gather's block of days
    ref, got = DayBatch(game, n), DayBatch(game, n)
    rows = np.arange(n)[::-1].copy()  # rows in another order than the days
    ref.reset(draw_arrivals_batch(game, [np.random.default_rng(s) for s in range(n)]), rows)
    rngs = [np.random.default_rng(s) for s in range(n)]
    got.reset_drawn(rngs, rows, arrange_days)
    for name in ("_times", "_cats", "_thetas", "_flights", "_gaps"):
        np.testing.assert_array_equal(getattr(ref, name), getattr(got, name), err_msg=name)
    for name in ("category", "theta", "flight", "clock", "index", "queues", "team_waits"):
        np.testing.assert_array_equal(getattr(ref, name), getattr(got, name), err_msg=name)
    again = [np.random.default_rng(s) for s in range(n)]
    draw_arrivals_batch(game, again)
    assert [g.random() for g in rngs] == [g.random() for g in again]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), scale=st.sampled_from([0.0, 1e-9, 1e-7, 1e-5, 1e-2, 1.0]),
       mode=st.sampled_from(["project", "penalize"]))
def test_random_proposals_give_the_same_steps(seed: int, scale: float, mode: str) -> None:
    """Feasible points pushed by noise of every size: within the tolerance, across it, far."""
    a, b = _PAIRS.setdefault(mode, _pair(3, invalid_action=mode))
    _, info = a.reset(seed=seed)
    b.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for k in range(12):
        act = a.polytopes.sample(np.maximum(info["category"], 0), rng)
        act = act + scale * rng.standard_normal(act.shape)
        out_a, out_b = a.step(act.copy()), b.step(act.copy())
        _close(out_a, out_b, f"step {k}")
        info = out_a[4]


_PAIRS: dict[str, tuple] = {}


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_copied_compiled_env_steps_as_the_original(how: str) -> None:
    _, b = _pair(3)
    _, info = b.reset(seed=4)
    rng = np.random.default_rng(0)
    b.step(b.polytopes.sample(np.maximum(info["category"], 0), rng))  # the kernel is loaded
    c = pickle.loads(pickle.dumps(b)) if how == "pickle" else copy.deepcopy(b)
    for k in range(5):
        act = b.polytopes.sample(np.maximum(b.days.category, 0), rng)
        out_b, out_c = b.step(act.copy()), c.step(act.copy())
        for x, y in zip(out_b[:4], out_c[:4], strict=True):
            np.testing.assert_array_equal(x, y, err_msg=f"step {k}")
        assert all(np.array_equal(out_b[4][key], out_c[4][key]) for key in out_b[4])


def test_the_vector_kernel_runs_only_when_asked_for_and_is_imported_at_first_reset() -> None:
    code = (
        "import sys, gymnasium as gym, tsg_envs\n"
        "env = gym.make_vec('tsg/Screening-Window-5F-v1', num_envs=2)\n"
        "made = 'numba' in sys.modules\n"
        "env.reset(seed=0)\n"
        "print(made, 'numba' in sys.modules, env.kernel)\n"
    )
    for choice, expected in (("numba", ["False", "True", "numba"]),
                             ("auto", ["False", "False", "numpy"])):
        env = {**os.environ, "PYTHONPATH": str(ROOT), kernel.KERNEL_ENV_VAR: choice}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, check=True, cwd=ROOT).stdout.split()
        # numba is imported at the first reset only when asked for: auto keeps the vector env
        # on the numpy step (its numbers bit for bit; the compiled one agrees to rounding).
        assert out == expected, choice
