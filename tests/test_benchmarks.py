"""The benchmarks (``benchmarks/``, not installed): quick smoke runs of each, on tiny sizes.

Timings are never asserted beyond sanity bounds (speed targets live in the benchmarks' own
ratios, measured against a named competitor in the same run).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tsg_envs.kernel import kernel_name

HAS_CVXPYLAYERS = importlib.util.find_spec("cvxpylayers") is not None


# benchmarks.envs ------------------------------------------------------------------------------
def test_bench_quick_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import envs as bench

    assert bench.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "Machine: cpu" in out and "git commit" in out
    assert "| `CartPole-v1` |" in out
    for kernel in bench.speed_kernels():  # numpy, and numba where it is installed
        row = next(line for line in out.splitlines()
                   if line.startswith(f"| `tsg/Screening-v1` | {kernel} |"))
        ratio = float(row.split("| **")[1].split("**")[0])
        assert ratio > 0.05  # a sanity bound only: timings on a shared CI box vary
    lp_rows = [line for line in out.splitlines() if line.startswith("| 10 |")
               or line.startswith("| 20 |")]
    assert len(lp_rows) == 2
    # passengers and categories of the 10- and 20-flight day games (default generator, seed 0)
    assert lp_rows[0].split("|")[2].strip() == "937" and lp_rows[0].split("|")[3].strip() == "50"


def test_bench_bound_corner_in_a_fresh_process(tmp_path) -> None:
    """One corner of the input bounds, measured as the README's table is (a child process)."""
    from benchmarks import envs as bench

    (row,) = bench.construction_costs(("passengers",))
    # 100 flights of exactly 1,000 passengers: the passenger bound, 5 levels x 100 flights.
    assert (row.n_passengers, row.n_categories, row.n_teams) == (100_000, 500, 10)
    assert row.wall_seconds > 0 and row.peak_mib > 0
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- bounds:begin -->\nold\n<!-- bounds:end -->\nb\n")
    bench.replace_block(readme, "bounds", bench.format_bounds([row]))
    text = readme.read_text()
    assert "old" not in text and "| 100,000 | 500 x 10 |" in text
    assert text.startswith("a\n<!-- bounds:begin -->\n| corner") and text.endswith("end -->\nb\n")


def test_bench_vector_and_harness_rows_are_well_formed() -> None:
    from benchmarks import envs as bench

    rows = bench.vector_speeds("tsg/Screening-Window-5F-v1", sizes=(1, 2), infeasible=(0.0,),
                               days=1.0, blocks=2)
    kernels = ["numpy", "numba"] if kernel_name("auto") == "numba" else ["numpy"]
    # One row per size and native step, each native env made with that step.
    assert [(r.n, r.kernel) for r in rows] == [(n, k) for n in (1, 2) for k in kernels]
    assert all(r.native_sps > 0 and r.sync_sps > 0 and r.ratio > 0 for r in rows)
    # one day's end and reset per sub-environment
    assert [r.resets for r in rows] == [n for n in (1, 2) for _ in kernels]
    table = bench.format_vector(rows)
    assert ("| 2 | numba | 0% |" in table) if len(kernels) == 2 else ("| 2 | 0% |" in table)
    (h,) = bench.harness_speeds("tsg/Screening-Window-5F-v1", days=2, agents=("lp",))
    assert h.agent == "lp" and h.days == 2 and h.speedup == pytest.approx(
        h.loop_s_per_day / h.harness_s_per_day)
    (c,) = bench.agent_costs("tsg/Screening-Window-5F-v1", days=2, repeats=1, agents=("centre",))
    assert c.agent == "centre" and c.days == 2 and c.ratio == pytest.approx(
        c.s_per_day / c.lp_s_per_day) and c.cold_ratio > 0
    assert "| centre | 2 |" in bench.format_agents([c])



def test_bench_lp_stages_rows_are_well_formed() -> None:
    # Both paths construct the same env; the stages add up to the construction, the fast path's
    # answer is the reference's (the LP is unique), and the wrapped functions are put back.
    from benchmarks import lp as bench
    from tsg_envs import env as env_mod
    from tsg_envs import lp, qp

    before = (lp.run_stage, qp.solve_qp, vars(env_mod)["build_polytopes"])
    rows = bench.lp_stages("tsg/Screening-Window-5F-v1")
    assert (lp.run_stage, qp.solve_qp, vars(env_mod)["build_polytopes"]) == before
    assert [r.path for r in rows] == ["reference", "fast", "lean"]
    for r in rows:
        assert set(r.seconds) == set(bench.LP_STAGES)
        assert all(v >= -1e-3 for v in r.seconds.values())
        parts = sum(v for k, v in r.seconds.items() if k != "total")
        assert parts == pytest.approx(r.seconds["total"], abs=1e-6)
    assert rows[0].policy_diff == rows[0].psi_diff == rows[0].centre_diff == 0.0
    for r in rows[1:]:
        assert r.policy_diff <= 1e-7 and r.psi_diff <= 1e-9
    assert "| **construction** |" in bench.format_lp_stages(rows)

# benchmarks.training --------------------------------------------------------------------------
def test_training_bench_quick_smoke(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("tianshou")
    import json

    from benchmarks.training import main

    out = tmp_path / "bench.json"
    result = main(["--quick", "--flights", "10", "--grad-steps", "50", "--json", str(out)])
    assert json.loads(out.read_text())["machine"] == result["machine"]
    proj = result["projection"]
    assert proj["alpha_s"] > 0
    if HAS_CVXPYLAYERS:
        assert proj["speedup"] > 1.0  # the α-projection is cheaper than a QP per sample
    (row,) = result["training"]
    assert row["flights"] == 10 and row["obs_dim"] == 116 and row["train_s"] > 0


def test_training_bench_loops_quick_smoke(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("tianshou")
    import json

    from benchmarks.training import main as bench_main

    result = bench_main(["--loops", "--quick", "--methods", "alpha-ddpg", "--num-envs", "1", "2",
                         "--grad-steps", "20", "--json", str(tmp_path / "loops.json")])
    rows = result["loops"]
    assert [(r["method"], r["num_envs"]) for r in rows] == [("alpha-ddpg", 1), ("alpha-ddpg", 2)]
    for r in rows:
        assert r["gradient_steps"] == 20
        # 200 warm-up steps, then 2 environment steps per gradient step (n days at a time)
        assert 240 <= r["env_steps"] <= 240 + r["num_envs"] - 1
        assert r["overhead_ratio"] == pytest.approx(
            r["cpu_s"] / r["gradient_steps"] / r["bare_update_cpu_s"])
        assert r["wall_ratio"] == pytest.approx(
            r["loop_s"] / r["gradient_steps"] / r["bare_update_s"])
        assert 0 < r["loop_s"] <= r["wall_s"]  # the loop's own clock, inside the train call
        # the bare update's buffer: the loop's mean over its updates, from 200 (the warm-up)
        # to 200 + 20 / 0.5 = 240 transitions: 220
        assert r["bare_buffer_size"] == 220
        # the run's own updates, timed inside it: fewer CPU seconds than the whole run
        assert 0 < r["in_run_update_cpu_s"] * r["gradient_steps"] < r["cpu_s"]
        assert r["in_run_ratio"] == pytest.approx(
            r["cpu_s"] / (r["in_run_update_cpu_s"] * r["gradient_steps"]))
    # start-up: the phases the child measured add up to no more than the whole launch
    s = result["startup"]
    assert s["method"] == "alpha-ddpg" and s["python_s"] > 0
    assert s["startup_s"] == pytest.approx(s["python_s"] + s["tianshou_import_s"]
                                           + s["method_import_s"] + s["env_s"]
                                           + s["build_s"] + s["first_update_s"])
    p = result["projection_share"]
    for step in ("actor_update", "explore"):
        assert p[f"{step}_s"] > 0 and p[f"{step}_unprojected_s"] > 0
        assert p[f"{step}_projection_share"] == pytest.approx(
            1 - p[f"{step}_unprojected_s"] / p[f"{step}_s"])
    from benchmarks.training import loops_block

    payload = json.loads((tmp_path / "loops.json").read_text())
    block = loops_block(payload)
    assert "| alpha-ddpg | 2 | 20 |" in block and "process start-up" in block
    assert s["dependencies_floor_s"] > 0 and "the dependencies alone" in block
    assert "bare update on a buffer of 220 transitions" in block
    import tianshou.algorithm.algorithm_base as base

    assert base.OffPolicyAlgorithm.update.__name__ == "update"  # the timing wrapper is gone
    assert base.OffPolicyAlgorithm.update.__qualname__.startswith("OffPolicyAlgorithm")


def test_training_bench_startup_only_keeps_the_loop_rows(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    import json

    import benchmarks.training as training

    path = tmp_path / "loops.json"
    rows = [{"method": "alpha-ddpg", "num_envs": 1}]
    path.write_text(json.dumps({"machine": "m", "config": {"grad_steps": 5}, "loops": rows,
                                "startup": {"old": True}}))
    monkeypatch.setattr(training, "bench_startup", lambda method, repeats: {"new": method})
    monkeypatch.setattr(training, "bench_projection_share", lambda hp, repeats: {"p": 1})
    monkeypatch.setattr(training, "loops_block", lambda payload: "block")
    training.main(["--loops", "--startup-only", "--json", str(path)])
    saved = json.loads(path.read_text())
    assert saved["loops"] == rows and saved["startup"] == {"new": "alpha-ddpg"}
    assert saved["projection_share"] == {"p": 1}
    with pytest.raises(SystemExit):  # nothing to update
        training.main(["--loops", "--startup-only", "--json", str(tmp_path / "missing.json")])
