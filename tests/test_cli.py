"""The training CLI: ``python -m baselines.train`` for every method name, tiny budgets."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from baselines.api import METHOD_MODULES, get_method
from baselines.evaluate import clear_reference_cache
from baselines.train import main, parse_assignments

ENV_ID = "tsg/Screening-Window-5F-v1"  # 450 passengers, one LP window: a fast day
NON_LEARNING = ["lp", "slack-lp", "slack-guided", "myopic", "centre"]
LEARNED = [name for name in METHOD_MODULES if name not in NON_LEARNING]
ROOT = Path(__file__).resolve().parents[1]
#: A tiny budget per learned method: a few gradient steps after a short warm-up.
#: Learned methods skip the learning curve's validation (``eval_every=0``) and run small nets.
_SMALL = ["--set", "eval_every=0", "--set", "hidden_sizes=16,16"]
TINY_BUDGET = {
    "ppo": ["--gradient-steps", "2", "--set", "n_steps=128", "--set", "batch_size=64",
            "--set", "repeat=1", *_SMALL],
    "l2-ddpg": ["--gradient-steps", "2", "--set", "warmup_steps=100", "--set", "batch_size=4",
                *_SMALL],
    # Behaviour cloning: one slack-guided day collected in memory, a few mini-batches.
    "bc": ["--gradient-steps", "5", "--set", "expert_days=1", "--set", "hidden_sizes=16,16"],
    # CMA-ES: no gradient steps; one generation of two candidates on one day.
    "es-guided": ["--set", "generations=1", "--set", "popsize=2", "--set", "days_per_generation=1",
                  "--set", "validation_days=0"],
}
OFF_POLICY_TINY = ["--gradient-steps", "20", "--set", "warmup_steps=100",
                   "--set", "batch_size=32", *_SMALL]


def _require(name: str) -> None:
    """Skip when a method's module (part B of issue 3: torch methods) does not exist yet."""
    module = METHOD_MODULES[name]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} (method {name!r}) is not written yet")
    if name in LEARNED and importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")


def _run(name: str, out: Path, *extra: str, capsys=None, subprocess_run: bool = False
         ) -> tuple[dict, str]:
    argv = ["--algo", name, "--env", ENV_ID, "--seed", "3", "--out", str(out),
            "--eval-days", "1", "--no-progress", *extra]
    if subprocess_run:  # the CLI as a user runs it: its own process, imports and start-up
        res = subprocess.run([sys.executable, "-m", "baselines.train", *argv],
                             capture_output=True, text=True, cwd=ROOT, timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
        return json.loads((out / "eval.json").read_text()), res.stdout
    assert main(argv) == 0
    text = capsys.readouterr().out if capsys is not None else ""
    return json.loads((out / "eval.json").read_text()), text


#: Methods the default tier runs in a process of their own (``python -m baselines.train``: the CLI
#: as a user runs it, imports and start-up included); it runs the others' tiny budgets in this
#: process, through the same ``main``. The slow tier runs every method in its own process.
OWN_PROCESS = ("lp", "alpha-ddpg")


@pytest.mark.parametrize("name", NON_LEARNING + LEARNED)
def test_tiny_budget_run_of_every_method(name, tmp_path: Path, capsys):
    """Every method's tiny budget through the CLI; ``OWN_PROCESS`` in a process of its own."""
    _check_tiny_run(name, tmp_path, subprocess_run=name in OWN_PROCESS, capsys=capsys)


@pytest.mark.slow  # a process per method: about 2 CPU minutes of imports and start-ups
@pytest.mark.parametrize("name", NON_LEARNING + LEARNED)
def test_tiny_budget_run_of_every_method_in_its_own_process(name, tmp_path: Path):
    """Every method as a user runs it: ``python -m baselines.train`` in a process of its own."""
    _check_tiny_run(name, tmp_path, subprocess_run=True)


def _check_tiny_run(name: str, tmp_path: Path, subprocess_run: bool, capsys=None) -> None:
    _require(name)
    budget = TINY_BUDGET.get(name, OFF_POLICY_TINY) if name in LEARNED else []
    record, text = _run(name, tmp_path, *budget, capsys=capsys, subprocess_run=subprocess_run)
    s = record["summary"]
    assert record["algo"] == name and record["env_id"] == ENV_ID
    assert record["eval_seeds"] == [10_000]
    assert s["n_episodes"] == 1 and s["mean_wait"] >= 0
    assert s["ratio_lp"] == pytest.approx(s["lp_mean_wait"] / s["mean_wait"])
    lines = text.splitlines()
    assert f"proposed_violations: {s['proposed_violations']}" in lines
    assert f"executed_violations: {s['executed_violations']}" in lines
    assert any(line.startswith("mean_wait: ") for line in lines)
    assert any(line.startswith("delay_ratio_lp: ") for line in lines)
    if name != "penalty-ddpg":
        assert s["executed_violations"] == 0
    if name in NON_LEARNING:
        assert s["proposed_violations"] == 0
    # The checkpoint loads back to the identical policy.
    method = get_method(name)
    if name in NON_LEARNING:
        import gymnasium as gym

        from tsg_envs.rollout import rollout

        env = gym.make(ENV_ID, instance_seed=0)
        agent = method.load(tmp_path, env)
        assert rollout(env, agent, seed=10_000).mean_wait == pytest.approx(
            s["mean_wait"], abs=1e-12)


@pytest.mark.parametrize("name", ["lp", "slack-guided"])
def test_reference_methods_have_ratio_one_against_themselves(name, tmp_path: Path):
    record, _ = _run(name, tmp_path)
    key = "ratio_lp" if name == "lp" else "ratio_slack_guided"
    assert record["summary"][key] == 1.0


def test_cli_is_deterministic_under_a_seed(tmp_path: Path):
    a, _ = _run("slack-guided", tmp_path / "a", "--set", "mu=0.5")
    clear_reference_cache()  # recompute the LP and slack-guided references too
    b, _ = _run("slack-guided", tmp_path / "b", "--set", "mu=0.5")
    assert a["summary"] == b["summary"] and a["episodes"] == b["episodes"]
    assert a["hparams"] == {"mu": 0.5}


def test_cli_resumes_from_its_checkpoint(tmp_path: Path):
    _run("slack-lp", tmp_path)
    ckpt = tmp_path / "checkpoint.json"
    mtime = ckpt.stat().st_mtime_ns
    _run("slack-lp", tmp_path)
    assert ckpt.stat().st_mtime_ns == mtime


def test_env_kwargs_and_eval_seeds_reach_the_evaluation(tmp_path: Path):
    record, _ = _run("centre", tmp_path, "--env-kwarg", "risk_slack=0.05",
                     "--eval-seed", "123", "--eval-days", "2", "--instance-seed", "1")
    assert record["env_kwargs"] == {"risk_slack": 0.05}
    assert record["eval_seeds"] == [123, 124] and record["instance_seed"] == 1
    ckpt = json.loads((tmp_path / "checkpoint.json").read_text())
    assert ckpt["env_kwargs"] == {"risk_slack": 0.05} and ckpt["instance_seed"] == 1


def test_unknown_method_and_bad_assignment_exit_with_usage_error(tmp_path: Path):
    with pytest.raises(SystemExit) as err:
        main(["--algo", "dqn", "--out", str(tmp_path)])
    assert err.value.code == 2
    with pytest.raises(SystemExit) as err:
        main(["--algo", "lp", "--out", str(tmp_path), "--set", "novalue"])
    assert err.value.code == 2


def test_parse_assignments_keeps_texts_and_the_method_types_them(tmp_path: Path):
    got = parse_assignments(["a=3e-4", "b=None", "c=[1, 2]", "e-f='x=y'"], "--set")
    assert got == {"a": "3e-4", "b": "None", "c": "[1, 2]", "e_f": "'x=y'"}
    # typed against the method's config fields, never evaluated
    from baselines.train import build_parser, run_config_from_args

    args = build_parser().parse_args([
        "--algo", "alpha-td3", "--out", str(tmp_path), "--set", "actor_lr=3e-4",
        "--set", "hidden-sizes=[64, 32]", "--set", "keep_best=false", "--set", "n_step=3",
        "--env-kwarg", "risk_slack=0.05", "--env-kwarg", "risk_bound=1,2.5,3,4,5",
        "--env-kwarg", "lp_window_minutes=auto", "--env-kwarg", "arrival_std=None"])
    run = run_config_from_args(args)
    assert run.hparams == {"actor_lr": 3e-4, "hidden_sizes": (64, 32), "keep_best": False,
                           "n_step": 3}
    assert run.env_kwargs["risk_slack"] == 0.05 and run.env_kwargs["arrival_std"] is None
    assert run.env_kwargs["lp_window_minutes"] == "auto"
    assert run.env_kwargs["risk_bound"].tolist() == [1.0, 2.5, 3.0, 4.0, 5.0]


@pytest.mark.parametrize("bad", [
    ["--set", "batch_size=1e3"],          # an int field: no float text
    ["--set", "keep_best=maybe"],          # a bool field
    ["--set", "policy_noise=0.2"],         # a TD3 field: alpha-ddpg does not take it
    ["--set", "__import__('os')=1"],       # not a field
    ["--set", "gamma=__import__('os')"],   # text is parsed, never evaluated
    ["--env-kwarg", "risk_slack=abc"],
    ["--env-kwarg", "no_such_kwarg=1"],
])
def test_bad_values_are_usage_errors(tmp_path: Path, bad: list[str], capsys):
    with pytest.raises(SystemExit) as err:
        main(["--algo", "alpha-ddpg", "--out", str(tmp_path), *bad])
    assert err.value.code == 2
    assert "error:" in capsys.readouterr().err
    assert not (tmp_path / "run.json").exists()


def test_show_config_lists_fields_with_docstrings(capsys):
    assert main(["--algo", "alpha-td3", "--set", "policy_noise=0.3", "--show-config"]) == 0
    text = capsys.readouterr().out
    assert "policy_noise: float = 0.3" in text and "target-smoothing noise" in text
    assert "exploration_sigma: float = 0.1" in text
    assert main(["--algo", "alpha-ddpg", "--show-config"]) == 0
    assert "policy_noise" not in capsys.readouterr().out


def test_module_entry_point_prints_the_violation_lines(tmp_path: Path):
    res = subprocess.run(
        [sys.executable, "-m", "baselines.train", "--algo", "centre", "--env", ENV_ID,
         "--out", str(tmp_path), "--eval-days", "1", "--no-progress"],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=True,
    )
    lines = res.stdout.splitlines()
    assert "proposed_violations: 0" in lines and "executed_violations: 0" in lines
    assert (tmp_path / "eval.json").exists() and (tmp_path / "run.json").exists()
