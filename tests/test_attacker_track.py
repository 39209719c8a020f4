"""The attacker track: submitted attackers play, sealed, against the panel of defenders.

End to end on a one-unit, one-day suite: the exact best response scores exactly 1; a file
attacker scores what the duel itself gives the same strategy (played directly with
``baselines.attackers.play_duel``, a separate loop); no attacker beats the best response in
expected queue mode; cheats score what the honest attacker scores; crashing, hanging, exiting
and malformed attackers each get a failed row with the reason; results validate, render,
verify, and the Ray backend gives the local digest.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import tiered

from leaderboard.__main__ import main as cli
from leaderboard.attacker import PANEL, attacker_seed, evaluate_attacker
from leaderboard.render import render_markdown
from leaderboard.runner import Execution
from leaderboard.schema import SchemaError, load_result, metrics_digest, save_result, validate
from leaderboard.sealed import Limits
from leaderboard.submission import SubmissionSpec
from leaderboard.suites import Suite
from leaderboard.units import dqn_config, duel_kwargs
from leaderboard.verify import is_verified, verify
from tsg_envs.seeds import LEADERBOARD_SEED_BASE

TINY = Suite(
    name="tiny",
    description="test suite",
    env_ids=("tsg/Screening-Window-5F-v1",),
    instance_seeds=(0,),
    arrival_seeds=(LEADERBOARD_SEED_BASE,),
    risk_max_states=3,
    train_gradient_steps=10,
)
FAST = Limits(call_s=10.0, unit_s=300.0, memory_mb=4096)
CHEAP = ("lp", "centre")

#: Strikes at arrival 10 + 20θ as a passenger of flight θ mod K with method 0 (stateful within
#: a day, as attackers are: it counts its decisions).
HONEST = """
NAME = "{name}"

class StrikeAt:
    def __init__(self, env):
        self.k = env.game.n_flights
        self.m = env.game.n_methods
        self.i = 0

    def reset(self, seed=None):
        self.i = 0

    def act(self, obs, info):
        {act_extra}
        i = self.i
        self.i += 1
        theta = int(info["theta"])
        if i == 10 + 20 * theta:
            return 1 + (theta % self.k) * self.m
        return 0

def make_attacker(env):
    {make_extra}
    return StrikeAt(env)
"""


def _write(tmp_path: Path, name: str, source: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return str(path)


def _honest(tmp_path: Path, name: str, act_extra: str = "pass", make_extra: str = "pass",
            head: str = "") -> str:
    return _write(tmp_path, name, head + HONEST.format(name=name, act_extra=act_extra,
                                                       make_extra=make_extra))


def _run(source: str, panel: tuple[str, ...] = CHEAP, limits: Limits = FAST, **kw) -> dict:
    """The attacker on TINY; ``kw``: more of its :class:`Execution` (backend, workers)."""
    return evaluate_attacker(SubmissionSpec(source), TINY,
                             Execution(progress=False, reps=50, limits=limits, **kw), panel=panel)


@pytest.fixture(scope="module")
def honest_doc(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _run(_honest(tmp_path_factory.mktemp("honest"), "honest"))


def _gains(doc: dict) -> list:
    return [(name, e["per_theta_gain"], e["strike_step"]) for u in doc["units"]
            for name, block in u["defenders"].items() for e in block["episodes"]]


def test_the_best_response_scores_exactly_one_against_every_panel_defender() -> None:
    doc = _run("best-response", panel=tuple(PANEL))
    assert doc["status"] == "ok", doc["error"]
    assert doc["track"] == "attacker" and list(doc["defenders"]) == list(PANEL)
    for name, block in doc["defenders"].items():
        assert block["fraction_of_best_response"]["iqm"] == pytest.approx(1.0, abs=1e-12), name
        assert block["struck"] == 1.0
    for unit in doc["units"]:
        assert unit["panel"]["alpha-ddpg"].startswith("sha256:")  # the committed checkpoint
        for name, block in unit["defenders"].items():
            for ep in block["episodes"]:
                np.testing.assert_allclose(ep["per_theta_gain"], ep["per_theta_best"],
                                           rtol=0, atol=1e-12, err_msg=name)
    validate(doc)


def test_a_file_attacker_scores_what_the_duel_gives_its_strategy(honest_doc, tmp_path) -> None:
    """The sealed evaluation against the LP equals the strategy played in the duel directly."""
    from baselines.attackers import play_duel
    from tsg_envs.attacker_env import AttackerEnv
    from tsg_envs.duel import DuelParallelEnv
    from tsg_envs.rollout import LPAgent

    assert honest_doc["status"] == "ok", honest_doc["error"]
    namespace: dict = {}
    exec(HONEST.format(name="x", act_extra="pass", make_extra="pass"), namespace)  # noqa: S102
    kw = duel_kwargs(TINY.env_ids[0], 0, {})
    strategy = namespace["make_attacker"](AttackerEnv(LPAgent, **kw))
    duel = DuelParallelEnv(**kw)
    defender = LPAgent(duel.screening)
    prior = np.asarray(duel.game.attacker_prior)
    ep = honest_doc["units"][0]["defenders"]["lp"]["episodes"][0]
    direct = [play_duel(duel, strategy, defender, LEADERBOARD_SEED_BASE, theta=t)
              for t in range(duel.game.n_risk_levels)]
    np.testing.assert_allclose(ep["per_theta_gain"], [o.gain for o in direct], rtol=0,
                               atol=1e-12)
    assert ep["strike_step"] == [o.strike_step for o in direct]
    assert ep["gain"] == pytest.approx(float(np.dot(prior, [o.gain for o in direct])), abs=1e-12)
    # it strikes at 10 + 20θ: it cuts in ahead of passenger 11 + 20θ of the day
    assert ep["strike_step"] == [11 + 20 * t for t in range(duel.game.n_risk_levels)]
    assert ep["flight"] == [t % duel.game.n_flights for t in range(duel.game.n_risk_levels)]


@pytest.fixture(scope="module")
def random_doc() -> dict:
    return _run("random")


def test_no_attacker_beats_the_best_response_in_expected_mode(honest_doc, random_doc) -> None:
    for doc in (honest_doc, random_doc):
        for unit in doc["units"]:
            assert unit["queue_mode"] == "expected"
            for block in unit["defenders"].values():
                for ep in block["episodes"]:
                    assert np.all(np.asarray(ep["per_theta_gain"])
                                  <= np.asarray(ep["per_theta_best"]) + 1e-12)
                    assert 0.0 <= ep["fraction_of_best_response"] <= 1.0 + 1e-12


@pytest.mark.sealed  # a second sealed run of the random attacker; the Ray test compares digests
def test_the_random_attacker_is_reproducible_and_seeded_per_day_and_level(random_doc) -> None:
    a, b = random_doc, _run("random")
    assert a["status"] == b["status"] == "ok", (a["error"], b["error"])  # e.g. a time limit
    assert a["metrics_digest"] == b["metrics_digest"]
    steps = a["units"][0]["defenders"]["lp"]["episodes"][0]["strike_step"]
    assert len(set(steps)) > 1  # each level gets its own seed
    assert attacker_seed(LEADERBOARD_SEED_BASE, 0) != attacker_seed(LEADERBOARD_SEED_BASE, 1)
    assert attacker_seed(LEADERBOARD_SEED_BASE, 0) != LEADERBOARD_SEED_BASE


CHEATS = {
    # Its own copies only: the evaluator's duel never sees these changes.
    "mutates_obs_and_info": dict(act_extra="obs['observation'][:] = 0; "
                                 "obs['action_mask'][:] = 1; info['struck'] = True"),
    "patches_the_duel": dict(head="import tsg_envs.duel as d\n"
                             "d.DuelParallelEnv._resolve = lambda self, info: 1e9\n"),
    "patches_the_best_response": dict(
        head="import baselines.attackers as b\nb.worst_case_risk = None\n"
             "import tsg_envs.risk as r\nr.worst_case_risk = None\n"),
    "mutates_its_env": dict(make_extra="env.game.attack_loss.setflags(write=True); "
                            "env.game.attack_loss[:] = 1e9"),
}


#: One cheat by default: every cheat meets the same defence (the attacker's own process).
@pytest.mark.parametrize("case", tiered(CHEATS, {"patches_the_duel"}))
def test_a_cheat_scores_what_the_honest_attacker_scores(case, tmp_path, honest_doc) -> None:
    doc = _run(_honest(tmp_path, case, **CHEATS[case]))
    assert doc["status"] == "ok", doc["error"]
    assert _gains(doc) == _gains(honest_doc)
    assert doc["defenders"] == honest_doc["defenders"]


FAILURES = {
    "raises": (dict(act_extra="raise RuntimeError('boom')"), "act raised: RuntimeError: boom"),
    "hangs": (dict(act_extra="import time; time.sleep(60)"), "call time limit of 2 s"),
    "exits": (dict(act_extra="import os; os._exit(0)"), "process ended during act"),
    "base_exception_at_import": (dict(head="raise KeyboardInterrupt\n"),
                                 "import failed: KeyboardInterrupt"),
    "returns_text": (dict(act_extra="return 'strike'"), "act returned str"),
    "returns_a_float": (dict(act_extra="return 1.0"), "act returned float"),
    "out_of_range": (dict(act_extra="return 10**6"), "out of range"),
    "no_make_attacker": (dict(head="make_attacker = None\n"), "no callable make_attacker"),
}


#: By default an exception and an action out of range (the evaluator's own check); the limits
#: and a process that ends meet the sandbox's defences, whose default cases are in
#: tests/test_sealed.py.
@pytest.mark.parametrize("case", tiered(FAILURES, {"raises", "out_of_range"}))
def test_a_failing_attacker_gets_a_failed_row_with_its_reason(case, tmp_path) -> None:
    kw, reason = FAILURES[case]
    if case == "no_make_attacker":
        path = _write(tmp_path, case, "NAME = 'x'\nmake_attacker = None\n")
    else:
        path = _honest(tmp_path, case, **kw)
    limits = Limits(call_s=2.0, unit_s=120.0, memory_mb=4096)
    doc = _run(path, panel=("lp",), limits=limits)
    assert doc["status"] == "failed"
    assert reason in doc["error"], doc["error"]
    assert doc["units"][0]["status"] == "failed" and doc["defenders"] is None
    validate(doc)


def test_results_save_render_and_verify(honest_doc, tmp_path) -> None:
    path = save_result(honest_doc, tmp_path)
    assert path.name == "honest--tiny--attacker.json"
    assert load_result(path)["defenders"] == honest_doc["defenders"]
    md = render_markdown([{**load_result(path), "_path": str(path)}])
    assert "### Attacker track" in md and "`honest`" in md and "vs `centre`" in md
    # verify: re-evaluated (sealed) against the same panel, same records
    import leaderboard.suites as suites

    suites.SUITES["tiny"] = TINY
    try:
        v = verify(path, Execution(limits=FAST))
        assert v.ok, v.message
        assert is_verified(path)
        doc = json.loads(path.read_text())
        doc["units"][0]["defenders"]["lp"]["episodes"][0]["gain"] += 0.1
        doc["metrics_digest"] = metrics_digest(doc)
        path.write_text(json.dumps(doc))
        assert not is_verified(path)
        v = verify(path, Execution(limits=FAST))  # its summary no longer matches its episodes
        assert not v.ok and "forged or edited" in v.message
    finally:
        del suites.SUITES["tiny"]


def test_a_truncated_attacker_result_is_refused(honest_doc, tmp_path) -> None:
    path = save_result(honest_doc, tmp_path)
    path.write_text(path.read_text()[:-200])
    with pytest.raises(SchemaError, match="not JSON"):
        load_result(path)
    doc = dict(honest_doc)
    doc.pop("panel")
    with pytest.raises(SchemaError, match="panel"):
        validate(doc)


def test_the_cli_writes_the_attacker_row_and_exits_1_on_failure(tmp_path, capsys) -> None:
    bad = _honest(tmp_path, "bad", act_extra="raise ValueError('no')")
    code = cli(["evaluate", "--attacker", bad, "--suite", "micro", "--out", str(tmp_path),
                "--no-progress", "--reps", "20", "--call-timeout", "5"])
    out = capsys.readouterr()
    assert code == 1
    assert "FAILED: act raised: ValueError: no" in out.out
    assert (tmp_path / "bad--micro--attacker.json").is_file()
    # a misspelt attacker is a usage error before any work, and writes no row
    assert cli(["evaluate", "--attacker", "nobody", "--suite", "micro", "--out",
                str(tmp_path), "--no-progress"]) == 2
    assert "unknown attacker 'nobody'" in capsys.readouterr().err
    assert not (tmp_path / "nobody--micro--attacker.json").exists()


def test_the_example_attacker_runs() -> None:
    root = Path(__file__).resolve().parent.parent
    doc = _run(str(root / "examples" / "attacker_late_striker.py"), panel=("lp",))
    assert doc["status"] == "ok", doc["error"]
    assert doc["submission"]["name"] == "late-striker"
    assert doc["submission"]["description"].startswith("strikes at the middle arrival")
    n = doc["units"][0]["n_passengers"]
    # it waits n // 2 arrivals, then cuts in ahead of passenger n // 2 + 1 (0-based)
    assert set(doc["units"][0]["defenders"]["lp"]["episodes"][0]["strike_step"]) == {n // 2 + 1}


@pytest.mark.sealed  # torch in the sealed process (tests/test_attackers.py trains it in-process)
def test_the_dqn_attacker_trains_in_its_own_process_and_plays() -> None:
    doc = _run("dqn", panel=("lp",))  # the suite's 10 gradient steps: a smoke test
    assert doc["status"] == "ok", doc["error"]
    assert doc["submission"]["learned"] is True
    assert 0.0 <= doc["defenders"]["lp"]["fraction_of_means"] <= 1.0 + 1e-12


def test_dqn_budget_is_counted_in_gradient_steps() -> None:
    cfg = dqn_config(10_000)
    # warm-up transitions, then one gradient step per 1 / updates_per_step transitions
    assert cfg.steps == cfg.warmup_steps + 100_000
    assert dqn_config(200).steps == cfg.warmup_steps + 2_000
    assert dqn_config(200).eps_decay_steps == (cfg.warmup_steps + 2_000) // 2


@pytest.mark.sealed  # a Ray cluster's start and sealed runs in its workers: CI's sealed tier
def test_ray_backend_gives_the_local_attacker_digest(honest_doc) -> None:
    ray = pytest.importorskip("ray")
    try:
        doc = _run(honest_doc["submission"]["source"], backend="ray")
    finally:
        ray.shutdown()
    assert doc["metrics_digest"] == honest_doc["metrics_digest"]


def test_a_missing_attacker_checkpoint_fails_before_any_unit(tmp_path: Path) -> None:
    spec = SubmissionSpec("dqn", checkpoint=str(tmp_path / "{env}-{instance}.pt"))
    doc = evaluate_attacker(spec, TINY, Execution(progress=False, reps=50))
    assert doc["status"] == "failed" and doc["units"] == []
    assert doc["error"] == (
        f"checkpoint not found: {tmp_path / 'tsg_Screening-Window-5F-v1-0.pt'}")
