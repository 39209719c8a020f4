"""Offline data: ``python -m leaderboard dataset`` (Minari) and the ``bc`` baseline reading it."""

from __future__ import annotations

import os
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tsg_envs  # noqa: F401
from leaderboard import datasets
from leaderboard.__main__ import main
from tsg_envs.bracket import replay
from tsg_envs.polytope import FEASIBILITY_TOL
from tsg_envs.seeds import training_day_seed

minari = pytest.importorskip("minari")

ENV_ID = "tsg/Screening-Window-5F-v2"  # 450 passengers: a fast day
DATASET = "tsg-test/window-5f-v2/lp-v0"


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """MINARI_DATASETS_PATH and HOME inside tmp_path (nothing may be written outside the first)."""
    store, home = tmp_path / "minari", tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(store))
    monkeypatch.setenv("HOME", str(home))
    # matplotlib (imported by tianshou, which a learned expert's module imports) keeps its font
    # cache under HOME: a library's cache, not the command's output.
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))
    monkeypatch.chdir(home)
    return store, home


@pytest.fixture(scope="module")
def two_days(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two LP days written once by the CLI; (MINARI_DATASETS_PATH, HOME) it ran with."""
    base = tmp_path_factory.mktemp("two-days")
    store, home = base / "minari", base / "home"
    home.mkdir()
    old = {k: os.environ.get(k) for k in ("MINARI_DATASETS_PATH", "HOME")}
    cwd = Path.cwd()
    os.environ.update(MINARI_DATASETS_PATH=str(store), HOME=str(home))
    os.chdir(home)
    try:
        code = main(["dataset", "--agent", "lp", "--env", ENV_ID, "--days", "2", "--dataset-id",
                     DATASET, "--instance", "1", "--seed", "3", "--no-progress"])
    finally:
        os.chdir(cwd)
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert code == 0
    return store, home


@pytest.fixture
def loaded(two_days, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(two_days[0]))
    return minari.load_dataset(DATASET)


def test_two_days_read_back_with_feasible_actions(loaded):
    env = gym.make(ENV_ID, instance_seed=1)
    n = env.unwrapped.game.n_passengers
    assert loaded.total_episodes == 2 and loaded.total_steps == 2 * n
    for ep in loaded.iterate_episodes():
        cats = ep.infos["category"]
        assert ep.observations.shape == (n + 1, env.observation_space.shape[0])
        assert ep.actions.shape == (n, env.unwrapped.game.n_teams)
        assert ep.actions.dtype == np.float64
        assert cats[-1] == -1 and (cats[:-1] >= 0).all()
        for a, c in zip(ep.actions, cats[:-1], strict=True):
            p = env.unwrapped.polytope(int(c))
            assert (p.A_ub @ a - p.b_ub).max() <= FEASIBILITY_TOL
            assert abs(a.sum() - 1.0) <= FEASIBILITY_TOL and a.min() >= -FEASIBILITY_TOL
        # The category in the infos is the observation's one-hot.
        onehot = ep.observations[:-1, env.unwrapped.obs_layout["category"]]
        np.testing.assert_array_equal(onehot.argmax(axis=1), cats[:-1])
        assert ep.terminations[-1] and not ep.terminations[:-1].any()
        assert not ep.truncations.any()


def test_rewards_are_the_negated_waits_of_an_independent_replay(loaded):
    env = gym.make(ENV_ID, instance_seed=1)
    meta = loaded.storage.metadata["tsg_envs"]
    seeds = [training_day_seed(3, k) for k in range(2)]
    assert meta["seeds"] == seeds
    for seed, ep in zip(seeds, loaded.iterate_episodes(), strict=True):
        obs, _ = env.reset(seed=seed)
        np.testing.assert_array_equal(obs, ep.observations[0])
        waits = []
        for i, a in enumerate(ep.actions):
            obs, _, _, _, info = env.step(a)
            waits.append(info["wait"])
            # The environment renormalises what it executes (Σπ = 1 in floating point), so a
            # stored executed action replays to itself within a few ulps, its wait within 1e-12.
            np.testing.assert_allclose(obs, ep.observations[i + 1], rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(info["executed_action"], a, rtol=0, atol=1e-15)
        np.testing.assert_allclose(ep.rewards, -np.asarray(waits), rtol=1e-12, atol=1e-12)
        # ... and the bracket's replay (another path through the same dynamics) agrees.
        mean_wait, _ = replay(gym.make(ENV_ID, instance_seed=1), seed, ep.actions)
        assert mean_wait == pytest.approx(-ep.rewards.mean(), rel=1e-12)


def test_metadata_names_what_the_days_are(loaded):
    meta = loaded.storage.metadata["tsg_envs"]
    assert meta["env_id"] == ENV_ID and meta["env_version"] == 2
    assert meta["instance_seed"] == 1 and meta["expert"] == "lp" and meta["seed"] == 3
    assert meta["package"] == "tsg-envs" and meta["package_version"] == tsg_envs.__version__
    assert meta["env_kwargs"]["instance_seed"] == 1
    assert loaded.storage.metadata["algorithm_name"] == "lp"
    # Minari recovers the same instance from the stored spec.
    env = loaded.recover_environment()
    assert env.unwrapped.game.key == gym.make(ENV_ID, instance_seed=1).unwrapped.game.key


def test_nothing_is_written_outside_minari_datasets_path(two_days):
    store, home = two_days
    assert list(home.iterdir()) == []
    assert {p.relative_to(store).as_posix() for p in store.rglob("*") if p.is_file()} == {
        "tsg-test/namespace_metadata.json", "tsg-test/window-5f-v2/namespace_metadata.json",
        f"{DATASET}/data/main_data.hdf5", f"{DATASET}/data/metadata.json"}


def test_digests_are_the_datas(two_days, monkeypatch: pytest.MonkeyPatch):
    """The content digest covers the arrays: the same days give it, another day changes it."""
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(two_days[0]))
    row = datasets.describe_dataset(DATASET)
    assert row["bytes"] == sum(f["bytes"] for f in row["files"].values())
    data = minari.load_dataset(DATASET)
    meta = data.storage.metadata["tsg_envs"]
    eps = list(data.iterate_episodes())
    assert datasets.content_digest(meta, eps) == row["content_sha256"]
    assert datasets.content_digest(meta, eps[::-1]) != row["content_sha256"]
    assert datasets.content_digest({**meta, "expert": "x"}, eps) != row["content_sha256"]


def test_existing_dataset_is_kept_without_force(two_days, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(two_days[0]))
    before = datasets.describe_dataset(DATASET)
    assert main(["dataset", "--agent", "centre", "--env", ENV_ID, "--days", "1",
                 "--dataset-id", DATASET]) == 2
    assert "--force" in capsys.readouterr().err
    assert datasets.describe_dataset(DATASET) == before


@pytest.mark.parametrize("argv, says", [
    (["--agent", "lp", "--env", "tsg/Nope-v1"], "not a registered id"),
    (["--agent", "lp", "--env", "CartPole-v1"], "not a tsg-envs id"),
    (["--agent", "dqn"], "unknown expert"),
    (["--agent", "alpha-ddpg"], "give its --checkpoint"),
    (["--agent", "alpha-ddpg", "--checkpoint", "missing.safetensors"], "no checkpoint"),
    (["--agent", "clairvoyant", "--checkpoint", "x"], "takes no --checkpoint"),
    (["--dataset-id", "ns/../up-v0"], "not a Minari id"),
    (["--dataset-id", "/abs/path-v0"], "not a Minari id"),
    (["--dataset-id", "ns/noversion"], "not a Minari id"),
    (["--days", "0"], "--days"),
    (["--days", "5001"], "--days"),
    (["--days", "two"], "--days"),
    (["--seed", "-1"], "--seed"),
    (["--seed", "2148"], "reserved seeds"),
    (["--instance", "-2"], "--instance"),
])
def test_bad_inputs_are_one_line_usage_errors(argv, says, roots, capsys):
    store, home = roots
    base = {"--agent": "lp", "--env": ENV_ID, "--days": "2", "--dataset-id": "ns/x-v0"}
    flags = dict(base)
    extra = []
    it = iter(argv)
    for flag in it:
        value = next(it)
        if flag in flags:
            flags[flag] = value
        else:
            extra += [flag, value]
    words = ["dataset", *[w for kv in flags.items() for w in kv], *extra]
    try:
        code = main(words)
    except SystemExit as err:  # argparse's own errors
        code = err.code
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and says in err, err
    assert not store.exists() or not any(store.rglob("*.hdf5"))
    assert list(home.iterdir()) == []


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 3_000), days=st.integers(-5, 6_000))
def test_day_plans_never_touch_reserved_seeds(seed, days):
    """Accepted plans stay out of every reserved range; refused ones are ValueErrors."""
    try:
        datasets.check_days(seed, days)
    except ValueError:
        lo, hi = training_day_seed(seed, 0), training_day_seed(seed, max(days, 1) - 1)
        assert not 1 <= days <= datasets.MAX_DAYS or any(
            lo < b and a <= hi for a, b in datasets.RESERVED_SEEDS)
        return
    for s in datasets.day_seeds(seed, days):
        assert not any(a <= s < b for a, b in datasets.RESERVED_SEEDS)


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet="ab-_/.v0123 ~", min_size=1, max_size=16))
def test_accepted_dataset_ids_stay_inside_the_root(text):
    """An id is accepted only if Minari would take it, and then it names a folder under the root."""
    try:
        datasets.check_dataset_id(text)
    except ValueError:
        return
    root = Path("/r")
    path = (root / text).resolve()
    assert path.is_relative_to(root) and path != root
    assert ".." not in Path(text).parts and not text.startswith("/")


# The offline agent ------------------------------------------------------------------------------
def _bc_run(tmp_path: Path, **hparams):
    from baselines.api import RunConfig

    return RunConfig(algo="bc", env_id=ENV_ID, instance_seed=1, gradient_steps=40, seed=0,
                     out=tmp_path / "bc", progress=False,
                     hparams={"dataset": DATASET, "hidden_sizes": "16,16", "log_every": "10",
                              **hparams})


def test_bc_learns_from_the_dataset_alone_and_plays_feasibly(two_days, tmp_path, monkeypatch):
    import csv

    from baselines.api import get_method
    from tsg_envs.rollout import rollout

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(two_days[0]))
    method = get_method("bc")
    assert method.learned
    run = _bc_run(tmp_path)
    agent = method.train(run)
    with (run.out / "curve.csv").open() as f:
        losses = [float(r["actor_loss"]) for r in csv.DictReader(f)]
    assert len(losses) == 4 and losses[-1] < losses[0]
    env = gym.make(ENV_ID, instance_seed=1)
    stats = rollout(env, agent, seed=10_000)  # an evaluation day, not a dataset day
    assert stats.proposed_violations == 0 and stats.executed_violations == 0
    # Feasible by construction: even untrained weights play inside every polytope.
    from baselines.bc import BCConfig, BCPolicy

    torch = pytest.importorskip("torch")
    policy = BCPolicy(env, BCConfig(hidden_sizes=(8,)))
    with torch.no_grad():
        for p in policy.net.parameters():
            p.normal_(0, 30)
    obs, info = env.reset(seed=5)
    polys = env.unwrapped.polytopes
    cats = np.arange(polys.A_ub.shape[0])
    obs_b = np.repeat(obs[None], len(cats), axis=0)
    y = policy(obs_b, torch.as_tensor(cats)).detach().numpy()
    assert polys.violation(y, cats).max() <= FEASIBILITY_TOL
    # The checkpoint is safetensors and loads back to the identical policy.
    assert (run.out / "best.safetensors").is_file()
    again = method.load(run.out, env)
    np.testing.assert_array_equal(again.act_batch(obs_b, []), agent.act_batch(obs_b, []))
    # A finished run is loaded, not retrained; another run's folder is refused.
    assert method.train(run).act(obs, info).tolist() == agent.act(obs, info).tolist()
    with pytest.raises(ValueError, match="another run"):
        method.train(_bc_run(tmp_path, lr="0.1"))


def test_bc_refuses_a_dataset_of_another_instance(two_days, tmp_path, monkeypatch):
    from baselines.api import RunConfig, get_method

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(two_days[0]))
    run = RunConfig(algo="bc", env_id=ENV_ID, instance_seed=0, gradient_steps=2, seed=0,
                    out=tmp_path, progress=False, hparams={"dataset": DATASET})
    with pytest.raises(ValueError, match="holds days of"):
        get_method("bc").train(run)
