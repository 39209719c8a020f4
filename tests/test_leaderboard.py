"""Leaderboard: suites, aggregation, end-to-end evaluation, broken submissions, schema, CLI."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from conftest import tiered
from hypothesis import given
from hypothesis import strategies as st

import tsg_envs  # noqa: F401
from leaderboard.__main__ import main
from leaderboard.aggregate import iqm_interval
from leaderboard.evaluate import evaluate_submission
from leaderboard.runner import Execution
from leaderboard.schema import (
    ResultExistsError,
    SchemaError,
    load_result,
    metrics_digest,
    save_result,
    validate,
)
from leaderboard.submission import SubmissionSpec
from leaderboard.suites import SUITES, Days, Suite
from leaderboard.summary import summarize
from tsg_envs.harness import delay_ratio
from tsg_envs.risk import worst_case_risk
from tsg_envs.rollout import CentreAgent, LPAgent, rollout
from tsg_envs.seeds import LEADERBOARD_SEED_BASE

REPO = Path(__file__).resolve().parent.parent
#: Bootstrap replications in tests (intervals are checked for order, not width).
REPS = 200
#: No progress bar and few bootstrap replications: what every evaluation here runs with.
QUIET = Execution(progress=False, reps=REPS)

#: A two-day, one-instance suite on the smallest window id (450 passengers a day).
TINY = Suite(
    name="tiny",
    description="test suite",
    env_ids=("tsg/Screening-Window-5F-v1",),
    instance_seeds=(0,),
    arrival_seeds=(LEADERBOARD_SEED_BASE, LEADERBOARD_SEED_BASE + 1),
    risk_max_states=5,
    train_gradient_steps=10,
)
#: TINY's days, labelled fresh (as if drawn now): what a hard-track row needs.
FRESH = Days("fresh", TINY.arrival_seeds)

CENTRE = """
NAME = "tiny-centre"

class Centre:
    def __init__(self, env):
        self.centers = env.unwrapped.polytopes.centers

    def act(self, obs, info):
        return self.centers[info["category"]].copy()

def make_agent(env):
    return Centre(env)
"""


def write(tmp_path: Path, name: str, source: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return str(path)


# Suites -------------------------------------------------------------------------------------
def test_suites_are_data_with_evaluation_seeds_above_training_seeds() -> None:
    assert LEADERBOARD_SEED_BASE == 2**31
    for suite in SUITES.values():
        assert min(suite.arrival_seeds) >= 2**31
        assert len(set(suite.arrival_seeds)) == len(suite.arrival_seeds)
        assert suite.n_episodes == len(suite.env_ids) * len(suite.instance_seeds) * len(
            suite.arrival_seeds
        )
        for env_id in suite.env_ids:
            assert env_id in gym.registry
    # baselines' training days: seed * 1_000_003 + k (tsg_envs.seeds) stays below 2**31 for
    # any run seed < 2147 and any k < 1_000_003
    from tsg_envs.seeds import training_day_seed

    assert training_day_seed(2146, 1_000_002) < LEADERBOARD_SEED_BASE
    with pytest.raises(ValueError, match="below LEADERBOARD_SEED_BASE"):
        Suite("bad", "", ("tsg/Screening-v1",), (0,), (1_000,))


def test_suite_digest_covers_every_field() -> None:
    base = TINY.digest()
    assert base == Suite(**{**TINY.__dict__}).digest()
    assert Suite(**{**TINY.__dict__, "risk_max_states": 6}).digest() != base
    assert Suite(**{**TINY.__dict__, "instance_seeds": (1,)}).digest() != base
    assert Suite(**{**TINY.__dict__, "env_kwargs": (("risk_slack", 0.05),)}).digest() != base


# Aggregation --------------------------------------------------------------------------------
def test_iqm_interval_hand_computed() -> None:
    # 4 runs x 1 task: the IQM drops the lowest and highest quarter (1 value each):
    # mean(2, 3) = 2.5; the mean is (1 + 2 + 3 + 100) / 4 = 26.5
    iv = iqm_interval(np.array([[1.0], [2.0], [3.0], [100.0]]), reps=REPS)
    assert iv["iqm"] == 2.5
    assert iv["mean"] == 26.5
    assert iv["iqm_low"] <= 2.5 <= iv["iqm_high"]
    assert iv["mean_low"] <= 26.5 <= iv["mean_high"]
    # 4 runs x 2 tasks, values 1..8: the IQM keeps 3, 4, 5, 6 -> 4.5
    iv = iqm_interval(np.arange(1.0, 9.0).reshape(4, 2), reps=REPS)
    assert iv["iqm"] == 4.5
    # constant scores: nothing to resample, the interval collapses on the point
    iv = iqm_interval(np.full((3, 2), 7.0))
    assert iv["iqm_low"] == iv["iqm_high"] == iv["iqm"] == 7.0


def test_iqm_interval_is_deterministic_whatever_the_global_rng() -> None:
    # rliable 1.2.0 draws its bootstrap indices from the global np.random even when given a
    # random_state; our bootstrap must not depend on it
    scores = np.random.default_rng(3).random((6, 3))
    np.random.seed(1)
    a = iqm_interval(scores, reps=REPS)
    np.random.seed(2)
    b = iqm_interval(scores, reps=REPS)
    assert a == b
    assert a["iqm_low"] < a["iqm"] < a["iqm_high"]



# End to end ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def centre_doc(tmp_path_factory: pytest.TempPathFactory) -> dict:
    path = write(tmp_path_factory.mktemp("sub"), "centre.py", CENTRE)
    return evaluate_submission(SubmissionSpec(path), TINY, QUIET, days=FRESH)


def test_end_to_end_metrics_match_direct_rollouts(centre_doc: dict) -> None:
    doc = centre_doc
    validate(doc)
    assert doc["status"] == "ok" and doc["error"] is None
    assert doc["track"] == "hard"
    assert doc["submission"]["name"] == "tiny-centre"
    assert doc["suite"]["hash"] == TINY.digest()
    assert doc["references"]["slack_guided"].startswith("baselines slack-guided")
    (unit,) = doc["units"]
    env = gym.make("tsg/Screening-Window-5F-v1", instance_seed=0)
    for ep, seed in zip(unit["episodes"], TINY.arrival_seeds, strict=True):
        # peer check: the same days rolled out directly (the harness batches days through the
        # vector env, equal to rounding)
        assert ep["arrival_seed"] == seed
        direct = rollout(env, CentreAgent(env), seed=seed).mean_wait
        assert ep["mean_wait"] == pytest.approx(direct, rel=1e-12)
        lp_direct = rollout(env, LPAgent(env), seed=seed).mean_wait
        assert ep["lp_mean_wait"] == pytest.approx(lp_direct, rel=1e-12)
        assert ep["ratio_vs_lp"] == ep["lp_mean_wait"] / ep["mean_wait"]
        assert ep["ratio_vs_slack_guided"] == ep["slack_guided_mean_wait"] / ep["mean_wait"]
        assert ep["proposed_violations"] == 0 and ep["executed_violations"] == 0
    report = worst_case_risk(env, CentreAgent(env), seed=TINY.arrival_seeds[0], max_states=5)
    assert unit["risk"]["risk"] == report.risk
    assert unit["risk"]["states_probed"] == 5
    assert unit["risk"]["within_bound"]
    agg = doc["aggregate"]
    assert agg["n_tasks"] == 1 and agg["n_runs"] == 2 and agg["n_episodes"] == 2
    # two runs: the IQM of two values is their mean
    waits = [ep["mean_wait"] for ep in unit["episodes"]]
    assert agg["mean_wait"]["iqm"] == pytest.approx(np.mean(waits), rel=1e-12)
    assert metrics_digest(doc) == doc["metrics_digest"]
    prov = doc["provenance"]
    assert prov["packages"]["tsg-envs"] and prov["python"] and prov["hardware"]["cpu_count"]


def test_lp_submission_has_ratio_one(tmp_path: Path) -> None:
    doc = evaluate_submission(SubmissionSpec("lp"), TINY, QUIET, days=FRESH)
    assert doc["status"] == "ok" and doc["track"] == "hard"
    assert doc["submission"]["kind"] == "baseline"
    # The same actions on the same days; the sealed agent plays one day per batch and the
    # reference all days in one, and the expected-queue products of a batch of 1 and of 2 (BLAS
    # gemv and gemm) may round the last bit of a wait differently.
    for ep in doc["units"][0]["episodes"]:
        assert ep["ratio_vs_lp"] == pytest.approx(1.0, rel=1e-14)
    assert doc["aggregate"]["ratio_vs_lp"]["iqm"] == pytest.approx(1.0, rel=1e-14)


def test_deterministic_across_workers_and_never_overwrites(
    centre_doc: dict, tmp_path: Path
) -> None:
    path = Path(centre_doc["submission"]["source"])
    again = evaluate_submission(SubmissionSpec(str(path)), TINY,
                                Execution(workers=2, progress=False, reps=REPS), days=FRESH)
    assert again["metrics_digest"] == centre_doc["metrics_digest"]
    out = save_result(centre_doc, tmp_path)
    assert load_result(out)["metrics_digest"] == centre_doc["metrics_digest"]
    save_result(again, tmp_path)  # the same metrics: replacing is allowed
    before = out.read_bytes()
    other = json.loads(json.dumps(again))
    other["units"][0]["episodes"][0]["mean_wait"] += 1.0
    other["metrics_digest"] = metrics_digest(other)
    with pytest.raises(ResultExistsError, match="different result"):
        save_result(other, tmp_path)
    assert out.read_bytes() == before
    save_result(other, tmp_path, force=True)
    assert load_result(out)["metrics_digest"] == other["metrics_digest"]


# Broken submissions -------------------------------------------------------------------------
BROKEN = {
    "syntax": ("def make_agent(:\n", "import failed: SyntaxError"),
    "import_raises": (
        "raise RuntimeError('boom at import')\n",
        "import failed: RuntimeError: boom at import",
    ),
    "exits": ("import sys\nsys.exit(3)\n", "import failed: SystemExit"),
    "no_make_agent": ("X = 1\n", "defines no callable make_agent(env)"),
    "make_agent_raises": (
        "def make_agent(env):\n    raise ValueError('no agent')\n",
        "make_agent raised: ValueError: no agent",
    ),
    "no_act": ("def make_agent(env):\n    return object()\n", "has no act(obs, info)"),
    "act_raises": (
        "class A:\n    def act(self, obs, info):\n        return {}['missing']\n"
        "def make_agent(env):\n    return A()\n",
        "act raised: KeyError: 'missing'",
    ),
    "nan": (
        "import numpy as np\nclass A:\n    def act(self, obs, info):\n"
        "        return np.full(10, np.nan)\ndef make_agent(env):\n    return A()\n",
        "act returned NaN",
    ),
    "shape": (
        "import numpy as np\nclass A:\n    def act(self, obs, info):\n"
        "        return np.ones(3) / 3\ndef make_agent(env):\n    return A()\n",
        "act returned shape (3,), expected (10,)",
    ),
    "not_numbers": (
        "class A:\n    def act(self, obs, info):\n        return 'left'\n"
        "def make_agent(env):\n    return A()\n",
        "act returned str, not an array of numbers",
    ),
}


#: One case of each kind by default: an import that raises, make_agent raising, and act raising
#: or answering NaN (the evaluator's checks of an action); the rest in the hostile tier.
BROKEN_DEFAULT = {"import_raises", "make_agent_raises", "act_raises", "nan"}


@pytest.fixture(scope="module")
def good_result(tmp_path_factory: pytest.TempPathFactory, centre_doc: dict) -> Path:
    out = tmp_path_factory.mktemp("results")
    return save_result(centre_doc, out)


@pytest.mark.parametrize("case", tiered(BROKEN, BROKEN_DEFAULT))
def test_broken_submission_is_reported_in_its_row(
    case: str, tmp_path: Path, good_result: Path
) -> None:
    source, reason = BROKEN[case]
    path = write(tmp_path, f"{case}.py", source)
    before = good_result.read_bytes()
    doc = evaluate_submission(SubmissionSpec(path), TINY, QUIET)
    validate(doc)
    assert doc["status"] == "failed"
    assert reason in doc["error"], doc["error"]
    assert doc["aggregate"] is None and doc["track"] is None
    if case in ("act_raises", "nan", "shape", "not_numbers"):
        # the reason names the unit and the day
        where = f"tsg/Screening-Window-5F-v1 instance 0, arrival seed {LEADERBOARD_SEED_BASE}"
        assert where in doc["error"]
    written = save_result(doc, good_result.parent)
    assert written != good_result
    assert good_result.read_bytes() == before  # other results are never touched


def test_infeasible_submission_completes_in_the_open_track(tmp_path: Path) -> None:
    # one-hot on team 0: outside the near-point polytopes of the risky categories
    path = write(
        tmp_path,
        "onehot.py",
        "import numpy as np\nclass A:\n    def act(self, obs, info):\n"
        "        a = np.zeros(10); a[0] = 1.0; return a\n"
        "def make_agent(env):\n    return A()\n",
    )
    doc = evaluate_submission(SubmissionSpec(path), TINY, QUIET)
    assert doc["status"] == "ok"
    assert doc["track"] == "open"
    agg = doc["aggregate"]
    assert agg["proposed_violations"] > 0 and agg["max_violation"] > 1e-6
    assert agg["executed_violations"] == 0  # the environment projected them
    assert any(n.startswith("infeasible actions:") for n in doc["notes"])
    assert not agg["risk"]["within_bound"]  # the probe sees the proposals themselves


def test_unknown_baseline_name_and_missing_checkpoint() -> None:
    doc = evaluate_submission(SubmissionSpec("no-such-method"), TINY, QUIET)
    assert doc["status"] == "failed" and "neither a .py file nor one of" in doc["error"]
    doc = evaluate_submission(SubmissionSpec("lp", checkpoint="/nonexistent/ckpt.json"), TINY,
                              QUIET)
    assert doc["status"] == "failed" and "checkpoint not found" in doc["error"]


# Schema -------------------------------------------------------------------------------------
def test_schema_is_checked_on_load(centre_doc: dict, tmp_path: Path) -> None:
    good = save_result(centre_doc, tmp_path / "ok")
    load_result(good)

    def broken(edit: object, name: str) -> Path:
        doc = json.loads(good.read_text())
        edit(doc)
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        return path

    path = broken(lambda d: d.pop("aggregate"), "missing.json")
    with pytest.raises(SchemaError, match=r"missing required key 'aggregate'"):
        load_result(path)
    path = broken(lambda d: d.update(schema_version="1"), "version.json")
    with pytest.raises(SchemaError, match=r"\$\.schema_version: expected 1"):
        load_result(path)
    path = broken(lambda d: d["units"][0]["episodes"][0].update(mean_wait="fast"), "type.json")
    with pytest.raises(SchemaError, match=r"episodes\[0\]\.mean_wait: expected number"):
        load_result(path)
    path = broken(lambda d: d.update(track="gold"), "track.json")
    with pytest.raises(SchemaError, match="'gold' is not one of"):
        load_result(path)
    # a hand-edited metric no longer matches its digest
    path = broken(lambda d: d["aggregate"]["mean_wait"].update(iqm=0.0), "edited.json")
    with pytest.raises(SchemaError, match="metrics_digest does not match"):
        load_result(path)
    (tmp_path / "garbage.json").write_text("{not json")
    with pytest.raises(SchemaError, match="not JSON"):
        load_result(tmp_path / "garbage.json")
    # NaN is not strict JSON: refused with the file's name, never a traceback in render
    nan = tmp_path / "nan.json"
    nan.write_text(good.read_text().replace('"mean_wait": ', '"mean_wait": NaN, "x": ', 1))
    with pytest.raises(SchemaError, match=r"nan\.json: holds NaN"):
        load_result(nan)
    (tmp_path / "truncated.json").write_text(good.read_text()[:200])
    with pytest.raises(SchemaError, match="truncated.json: not JSON"):
        load_result(tmp_path / "truncated.json")


def test_failed_row_is_replaced_and_concurrent_saves_never_corrupt(
    centre_doc: dict, tmp_path: Path
) -> None:
    import threading

    failed = json.loads(json.dumps(centre_doc))
    failed.update(status="failed", error="act raised", aggregate=None, track=None)
    failed["metrics_digest"] = metrics_digest(failed)
    path = save_result(failed, tmp_path)
    # the fixed submission replaces its failed row without --force
    assert save_result(centre_doc, tmp_path) == path
    assert load_result(path)["status"] == "ok"
    # many writers of the same (identical) result at once: one valid file, no leftovers
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            save_result(centre_doc, tmp_path)
        except BaseException as err:  # noqa: BLE001 - collected for the assertion
            errors.append(err)

    threads = [threading.Thread(target=writer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert load_result(path)["metrics_digest"] == centre_doc["metrics_digest"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".tmp") == []


def test_row_name_is_read_without_running_the_file(tmp_path: Path) -> None:
    from leaderboard.submission import row_name

    path = write(tmp_path, "crashes.py", 'NAME = "my-agent"\nraise SystemExit(3)\n')
    assert row_name(SubmissionSpec(path)) == "my-agent"
    doc = evaluate_submission(SubmissionSpec(path), TINY, QUIET)
    assert doc["status"] == "failed" and doc["submission"]["name"] == "my-agent"
    computed = write(tmp_path, "computed.py", 'NAME = "a" + "b"\n')
    assert row_name(SubmissionSpec(computed)) == "computed"  # not a literal: the stem
    assert row_name(SubmissionSpec(path, name="override")) == "override"


# CLI ----------------------------------------------------------------------------------------
def test_cli_evaluate_prints_the_row_beside_the_lp(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example = str(REPO / "examples" / "submission_centre.py")
    args = ["evaluate", "--agent", example, "--suite", "micro", "--out", str(tmp_path)]
    args += ["--reps", "100", "--no-progress"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "example-centre" in out and "static LP (reference)" in out
    path = tmp_path / "example-centre--micro.json"
    assert load_result(path)["status"] == "ok"
    # an existing ok result is never replaced without --force: a usage error before any work
    doc = json.loads(path.read_text())
    doc["units"][0]["episodes"][0]["mean_wait"] += 1
    doc["metrics_digest"] = metrics_digest(doc)
    path.write_text(json.dumps(doc))
    assert main(args) == 2
    assert "pass --force to replace it" in capsys.readouterr().err
    # a failed submission writes its row and exits non-zero
    bad = write(tmp_path, "bad.py", "def make_agent(env):\n    raise ValueError('no')\n")
    assert main(["evaluate", "--agent", bad, "--suite", "micro", "--out", str(tmp_path),
                 "--reps", "100", "--no-progress"]) == 1
    assert "failed" in capsys.readouterr().err
    assert load_result(tmp_path / "bad--micro.json")["status"] == "failed"
    assert main(["suites"]) == 0
    assert "quick" in capsys.readouterr().out


@pytest.mark.sealed  # five sealed evaluations; verify's default cases are in tests/test_trust.py
def test_verify_passes_on_a_fresh_result_and_fails_on_an_edited_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from leaderboard.render import collect_results, result_row
    from leaderboard.verify import is_verified, sidecar_path

    example = str(REPO / "examples" / "submission_centre.py")
    assert main(["evaluate", "--agent", example, "--suite", "micro", "--out", str(tmp_path),
                 "--reps", "50", "--no-progress"]) == 0
    path = tmp_path / "example-centre--micro.json"
    assert not is_verified(path)
    assert main(["verify", str(path), "--no-progress"]) == 0
    assert "verified: " in capsys.readouterr().out
    assert is_verified(path) and sidecar_path(path).exists()
    (doc,) = collect_results(tmp_path)
    assert result_row(doc)["verified"] == "yes"
    # Roundoff (one wait moved by 1e-9, relative) reproduces, and the verdict says it is not bit
    # for bit; with --rtol 0 it does not reproduce.
    honest = path.read_text()
    nudged = json.loads(honest)
    ep = nudged["units"][0]["episodes"][0]
    ep["mean_wait"] *= 1 + 1e-9
    ep["ratio_vs_lp"] = delay_ratio(ep["lp_mean_wait"], ep["mean_wait"])
    ep["ratio_vs_slack_guided"] = delay_ratio(ep["slack_guided_mean_wait"], ep["mean_wait"])
    nudged.update(summarize(nudged))  # a consistent file: only its numbers moved
    nudged["metrics_digest"] = metrics_digest(nudged)
    path.write_text(json.dumps(nudged))
    assert main(["verify", str(path), "--rtol", "0", "--no-progress"]) == 1
    assert "up to 1.0e-09 apart" in capsys.readouterr().out
    assert main(["verify", str(path), "--no-progress"]) == 0
    assert "not bit for bit" in capsys.readouterr().out and is_verified(path)
    assert json.loads(sidecar_path(path).read_text())["bit_for_bit"] is False
    with pytest.raises(SystemExit) as stop:
        main(["verify", str(path), "--rtol", "-1", "--no-progress"])
    assert stop.value.code == 2
    path.write_text(honest)
    # A forged result (an episode edited, its digest recomputed) loads but is not reproduced,
    # and its old verification no longer counts.
    forged = json.loads(path.read_text())
    forged["units"][0]["episodes"][0]["mean_wait"] *= 0.5
    forged["metrics_digest"] = metrics_digest(forged)
    path.write_text(json.dumps(forged))
    assert not is_verified(path)
    assert main(["verify", str(path), "--no-progress"]) == 1
    assert "NOT VERIFIED" in capsys.readouterr().out and not is_verified(path)


@pytest.mark.sealed  # a Ray cluster's start and sealed runs in its workers: CI's sealed tier
def test_ray_backend_gives_the_local_digest(centre_doc: dict) -> None:
    ray = pytest.importorskip("ray")
    path = Path(centre_doc["submission"]["source"])
    try:
        doc = evaluate_submission(SubmissionSpec(str(path)), TINY,
                                  Execution(workers=2, progress=False, reps=REPS, backend="ray"),
                                  days=FRESH)
    finally:
        ray.shutdown()
    assert doc["status"] == "ok"
    assert doc["metrics_digest"] == centre_doc["metrics_digest"]


@pytest.mark.sealed  # four sealed trainings with torch (the in-process twin is below)
def test_several_training_seeds_each_play_every_day(tmp_path: Path) -> None:
    """A learned baseline with train_seeds: every seed's policy on every day, one row."""
    spec = SubmissionSpec("alpha-ddpg", train_seeds=(0, 1), train_gradient_steps=4)
    doc = evaluate_submission(spec, TINY, QUIET)
    assert doc["status"] == "ok", doc["error"]
    assert doc["submission"]["train_seeds"] == [0, 1]
    unit = doc["units"][0]
    seeds = [(e["train_seed"], e["arrival_seed"]) for e in unit["episodes"]]
    days = list(TINY.arrival_seeds)
    assert seeds == [(0, days[0]), (0, days[1]), (1, days[0]), (1, days[1])]
    # two different policies: seed 1 is not seed 0 replayed
    waits = [e["mean_wait"] for e in unit["episodes"]]
    assert waits[:2] != waits[2:]
    # the LP reference is the same on a day whatever the seed
    assert [e["lp_mean_wait"] for e in unit["episodes"][:2]] == [
        e["lp_mean_wait"] for e in unit["episodes"][2:]]
    assert [r["train_seed"] for r in unit["risk_per_seed"]] == [0, 1]
    worst = max(unit["risk_per_seed"], key=lambda r: r["risk"] / r["bound"])
    assert unit["risk"] == worst
    assert doc["aggregate"]["n_runs"] == 4 and doc["aggregate"]["n_episodes"] == 4
    validate(doc)


def test_seed_0_of_several_trains_as_the_default_seed(monkeypatch) -> None:
    """In-process twin of the slow test below: the trainer gets the same run for both specs.

    The evaluator plays seed k of ``train_seeds`` as the spec with ``train_seed=k``; training
    under a seed is deterministic (tests/test_torch_baselines.py), so equal runs mean equal
    policies and equal episodes.
    """
    import dataclasses

    import baselines.api as api
    from leaderboard.submission import describe_submission

    runs: list = []

    class Recorder:
        description, learned = "records its runs", True

        def train(self, run):
            runs.append(dataclasses.replace(run, out=None))  # a fresh temporary folder each
            return "agent"

    monkeypatch.setattr(api, "get_method", lambda name: Recorder())
    several = SubmissionSpec("alpha-ddpg", train_seeds=(0, 1), train_gradient_steps=4)
    for spec in (dataclasses.replace(several, train_seed=0),
                 SubmissionSpec("alpha-ddpg", train_gradient_steps=4)):
        assert describe_submission(spec).make_agent(
            None, env_id=TINY.env_ids[0], instance_seed=0, env_kwargs={},
            train_gradient_steps=TINY.train_gradient_steps) == "agent"
    assert runs[0] == runs[1]
    assert (runs[0].seed, runs[0].gradient_steps, runs[0].algo) == (0, 4, "alpha-ddpg")


@pytest.mark.slow  # a third sealed training: each costs a process start with torch's import
def test_training_seed_0_of_several_is_the_default_seed() -> None:
    """Seed 0 alone gives the first two episodes of seeds (0, 1) exactly: same training, days."""
    several = evaluate_submission(
        SubmissionSpec("alpha-ddpg", train_seeds=(0, 1), train_gradient_steps=4), TINY, QUIET)
    one = evaluate_submission(SubmissionSpec("alpha-ddpg", train_gradient_steps=4), TINY, QUIET)
    waits = [e["mean_wait"] for e in several["units"][0]["episodes"]]
    assert [e["mean_wait"] for e in one["units"][0]["episodes"]] == waits[:2]


@pytest.mark.sealed  # two trainings and four sealed loads with torch
def test_a_checkpoint_template_picks_each_seed(tmp_path: Path) -> None:
    from baselines.api import RunConfig, get_method

    for seed in (0, 3):
        get_method("alpha-ddpg").train(RunConfig(
            algo="alpha-ddpg", env_id=TINY.env_ids[0], gradient_steps=4, seed=seed,
            out=tmp_path / f"s{seed}", progress=False,
            hparams={"warmup_steps": 50, "batch_size": 16, "eval_every": 0}))
    spec = SubmissionSpec("alpha-ddpg", checkpoint=str(tmp_path / "s{seed}"),
                          train_seeds=(0, 3))
    doc = evaluate_submission(spec, TINY, QUIET)
    assert doc["status"] == "ok", doc["error"]
    assert sorted({e["train_seed"] for e in doc["units"][0]["episodes"]}) == [0, 3]
    missing = SubmissionSpec("alpha-ddpg", checkpoint=str(tmp_path / "s{seed}"),
                             train_seeds=(0, 1))
    doc = evaluate_submission(missing, TINY, QUIET)
    assert doc["status"] == "failed" and "checkpoint not found" in doc["error"]
    assert "s1" in doc["error"]
    assert doc["units"] == []  # found missing before seed 0 was evaluated, not after


def test_missing_checkpoints_are_found_before_any_unit_runs(tmp_path: Path) -> None:
    from leaderboard.submission import missing_checkpoints

    template = str(tmp_path / "{env}-i{instance}-s{seed}")
    units = [("tsg/Screening-Window-5F-v1", 0), ("tsg/Screening-Window-5F-v1", 1)]
    (tmp_path / "tsg_Screening-Window-5F-v1-i0-s0").mkdir()
    spec = SubmissionSpec("alpha-ddpg", checkpoint=template, train_seeds=(0, 1))
    # Of the 2 units x 2 seeds only (i0, s0) is there: the first missing is (i0, s1).
    assert missing_checkpoints(spec, units) == (
        f"checkpoint not found: {tmp_path / 'tsg_Screening-Window-5F-v1-i0-s1'} and 2 more")
    for i, seed in ((0, 1), (1, 0), (1, 1)):
        (tmp_path / f"tsg_Screening-Window-5F-v1-i{i}-s{seed}").mkdir()
    assert missing_checkpoints(spec, units) is None
    # An attacker's checkpoint must be a file: a folder of that name does not count.
    attacker = SubmissionSpec("dqn", checkpoint=template)
    assert missing_checkpoints(attacker, units, need_file=True) == (
        f"checkpoint not found: {tmp_path / 'tsg_Screening-Window-5F-v1-i0-s0'} and 1 more")
    # No template: nothing to resolve here (a plain path is checked when it is described).
    assert missing_checkpoints(SubmissionSpec("alpha-ddpg", checkpoint="x"), units) is None
    assert missing_checkpoints(SubmissionSpec("alpha-ddpg"), units) is None


@pytest.mark.parametrize(("text", "seeds"), [("0-4", (0, 1, 2, 3, 4)), ("0,2,5", (0, 2, 5)),
                                             ("0-2,7", (0, 1, 2, 7)), ("3", (3,))])
def test_train_seed_lists(text: str, seeds: tuple[int, ...]) -> None:
    from leaderboard.__main__ import _seed_list

    assert _seed_list(text) == seeds


def test_bad_train_seeds_are_refused(tmp_path: Path, capsys) -> None:
    with pytest.raises(ValueError, match="distinct"):
        SubmissionSpec("alpha-ddpg", train_seeds=(1, 1))
    code = main(["evaluate", "--agent", "alpha-ddpg", "--train-seeds", "2,2", "--suite", "micro",
                 "--out", str(tmp_path), "--no-progress"])
    assert code == 2 and "distinct" in capsys.readouterr().err
    path = write(tmp_path, "f", CENTRE)
    doc = evaluate_submission(SubmissionSpec(path, train_seeds=(0, 1)), TINY, QUIET)
    assert doc["status"] == "failed" and "baseline names only" in doc["error"]


def test_records_difference_by_hand() -> None:
    from leaderboard.verify import records_difference

    a = {"units": [{"status": "ok", "n": 3, "w": [2.0, 4.0, 1e-16], "e": None}]}
    b = {"units": [{"status": "ok", "n": 3, "w": [2.0, 4.0 * (1 + 1e-8), 3e-16], "e": None}]}
    assert records_difference(a, a) == 0.0
    # |4 - 4(1 + 1e-8)| / (4(1 + 1e-8)) = 1e-8 / (1 + 1e-8); the 1e-16 vs 3e-16 pair is absolute.
    assert records_difference(a, b) == pytest.approx(1e-8 / (1 + 1e-8), rel=1e-6)
    for other in ({"units": [{"status": "failed", "n": 3, "w": [2.0, 4.0, 1e-16], "e": None}]},
                  {"units": [{"status": "ok", "n": 4, "w": [2.0, 4.0, 1e-16], "e": None}]},
                  {"units": [{"status": "ok", "n": 3, "w": [2.0, 4.0], "e": None}]},
                  {"units": [{"status": "ok", "n": 3, "w": [2.0, 4.0, 1e-16], "e": 0.0}]},
                  {"units": [{"status": "ok", "n": 3.0, "w": [2.0, 4.0, 1e-16], "e": None}]},
                  {"units": [{"status": "ok", "n": 3, "w": [2.0, 4.0, 1e-16]}]}):
        assert records_difference(a, other) is None


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner,
                                                                   max_size=4),
    max_leaves=20,
)


@given(_JSON, _JSON)
def test_records_difference_is_zero_on_itself_and_symmetric(a, b) -> None:
    from leaderboard.verify import records_difference

    assert records_difference(a, a) == 0.0
    assert records_difference(a, b) == records_difference(b, a)


# Command-line counts ------------------------------------------------------------------------
COUNT_FLAGS = [
    (["evaluate", "--agent", "lp"], "--workers", 1),
    (["evaluate", "--agent", "lp"], "--reps", 1),
    (["evaluate", "--agent", "lp"], "--train-gradient-steps", 1),
    (["evaluate", "--agent", "lp"], "--memory-mb", 0),
    (["verify", "x.json"], "--workers", 1),
    (["frontier", "--agent", "lp"], "--days", 1),
    (["frontier", "--agent", "lp"], "--instance", 0),
    (["frontier", "--agent", "lp"], "--gradient-steps", 1),
]


@pytest.mark.parametrize(("argv", "flag", "low"), COUNT_FLAGS)
@given(below=st.integers(1, 10**12))
def test_counts_below_their_bound_are_usage_errors(argv, flag, low, below) -> None:
    # Every count is checked when the command line is parsed, before anything runs.
    import contextlib
    import io

    err = io.StringIO()
    with pytest.raises(SystemExit) as exc, contextlib.redirect_stderr(err):
        main([*argv, flag, str(low - below)])
    assert exc.value.code == 2
    assert f"argument {flag}: must be an integer >= {low}, got {low - below}" in err.getvalue()


@pytest.mark.parametrize("text", ["x", "1.5", ""])
def test_counts_that_are_not_integers_are_usage_errors(text, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["frontier", "--agent", "lp", "--days", text])
    assert exc.value.code == 2 and f"not an integer: {text!r}" in capsys.readouterr().err


def test_the_paper_command_says_where_it_moved(capsys) -> None:
    # The paper's experiments are not part of the installed package any more.
    assert main(["paper", "--quick", "--render-only"]) == 2
    assert "python -m experiments.paper" in capsys.readouterr().err


def test_an_execution_refuses_what_cannot_run() -> None:
    assert Execution().backend == "local" and Execution().workers == 1
    with pytest.raises(ValueError, match="backend"):
        Execution(backend="slurm")
    with pytest.raises(ValueError, match="workers"):
        Execution(workers=0)
    with pytest.raises(ValueError, match="needs backend='ray'"):
        Execution(address="auto")


def _pool_unit(arg: str) -> dict:
    """A unit for :func:`leaderboard.runner.map_units`'s pool (module level: pickled)."""
    import time

    if arg == "fail":
        raise ValueError("unit failed")
    if arg == "slow":
        time.sleep(3.0)
    if arg.startswith("queued"):
        # Long enough that a loaded machine's evaluator, slow to see the failure, still cancels
        # most of them (instant units all ran before it reacted, beside two busy processes).
        time.sleep(0.25)
    return {"arg": arg}


def test_a_failing_unit_stops_the_pool_but_keeps_the_running_ones() -> None:
    from leaderboard.runner import map_units

    saved: dict[int, dict] = {}
    args = ["slow", "fail", *(f"queued{k}" for k in range(30))]
    with pytest.raises(ValueError, match="unit failed"):
        map_units(_pool_unit, args, workers=2, on_result=saved.__setitem__)
    # The unit running beside the failure finished and was handed over (a long run keeps it);
    # the queued ones were cancelled, bar the few already passed to the workers.
    assert saved[0] == {"arg": "slow"}
    assert 1 not in saved and len(saved) < 10
    # Without a failure every unit comes back, in the order of the arguments.
    outs = map_units(_pool_unit, ["a", "b", "c"], workers=2)
    assert outs == [{"arg": "a"}, {"arg": "b"}, {"arg": "c"}]
