"""``python -m experiments.paper``: the four figures, their CSVs and the summary."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import experiments.paper.run as paper_run
import experiments.paper.summary as paper_summary
from experiments.paper import PaperConfig, run_paper, verify_units
from experiments.paper import statistics as paper_stats
from experiments.paper.__main__ import main
from experiments.paper.config import experiment_settings
from experiments.paper.units import train_path, unit_key, unit_path
from leaderboard.runner import Execution
from tsg_envs.seeds import LEADERBOARD_SEED_BASE

#: summary.point_passengers itself (the module's fixture replaces it while the tests run).
REAL_POINT_PASSENGERS = paper_summary.point_passengers
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module", autouse=True)
def _small_passenger_counts() -> Iterator[None]:
    """Passenger counts of the full protocol's points: real up to 10 flights, 100 a flight above.

    Every summary extrapolates its runtime to the full protocol's points, whose passenger counts
    draw their games (300 flights: about 20 CPU s of calibration LPs). No test of this module
    asserts the extrapolated hours; :func:`test_point_passengers_are_the_games` checks the real
    function.
    """
    real = REAL_POINT_PASSENGERS
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(paper_summary, "point_passengers",
                   lambda n, sigma: real(n, sigma) if n <= 10 else 100 * n)
        yield
#: Every run here: in this process, no progress bar.
QUIET = Execution(progress=False)
FIGURES = (
    "fig1_ratio_vs_flights.png",
    "fig2_wait_vs_risk.png",
    "fig3_training.png",
    "fig4_ratio_vs_sigma.png",
)


def read(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def write_curve(path: Path, env_id: str, steps: list[int], walls: list[float]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            ["method", "env_id", "instance_seed", "seed", "gradient_steps", "wall_s",
             "eval_mean_wait"]
        )
        for s, t in zip(steps, walls, strict=True):
            w.writerow(["alpha-ddpg", env_id, 0, 0, s, t, 10.0 - s / 10_000])


def test_paper_writes_four_figures_csvs_and_summary(tmp_path: Path) -> None:
    curves = tmp_path / "curves"
    # wall time at 10,000 steps by linear interpolation: 10F: halfway between 50 s at 5,000
    # and 150 s at 15,000 -> 100 s; 20F: 0 s at 0 and 400 s at 20,000 -> 200 s
    write_curve(
        curves / "a" / "curve.csv",
        "tsg/Screening-Window-10F-v1",
        [0, 5000, 15000],
        [0.0, 50.0, 150.0],
    )
    write_curve(curves / "b" / "curve.csv", "tsg/Screening-Window-20F-v1", [0, 20000], [0.0, 400.0])
    # benchmarks.training --json: 200 gradient steps in 3 s at 50 flights -> 150 s per 10,000
    (curves / "bench.json").write_text(
        '{"config": {"grad_steps": 200}, "training": [{"flights": 50, "train_s": 3.0}]}'
    )
    # a run that never reached 10,000 steps is drawn but not timed
    write_curve(curves / "c" / "curve.csv", "tsg/Screening-Window-5F-v1", [0, 2000], [0.0, 9.0])
    cfg = PaperConfig(
        instances=(0,),
        days=1,
        flights=(5,),
        risk_scales=(1.01, 2.0),
        risk_flights=5,
        sigmas=(15.0, 45.0),
        sigma_flights=5,
        curve_dirs=(str(curves),),
        quick=True,
    )
    out = tmp_path / "paper"
    written = run_paper(cfg, out, QUIET)
    for name in FIGURES:
        assert (out / name).read_bytes()[:8] == PNG_MAGIC
        assert out / name in written
    fig1 = read(out / "fig1_ratio_vs_flights.csv")
    assert {r["agent"] for r in fig1} == {"lp", "slack-lp", "myopic", "slack-guided"}
    lp = [r for r in fig1 if r["agent"] == "lp"]
    assert float(lp[0]["mean"]) == 1.0  # the LP against itself
    episodes = read(out / "fig1_ratio_vs_flights_episodes.csv")
    for r in episodes:
        assert float(r["ratio_vs_lp"]) == pytest.approx(
            float(r["lp_mean_wait"]) / float(r["mean_wait"]), rel=1e-12
        )
    fig2 = read(out / "fig2_wait_vs_risk_episodes.csv")
    for r in fig2:
        if float(r["x"]) == 1.01:
            assert float(r["fraction_of_base"]) == 1.0
    # the LP's policy ignores psi: the same wait at every allowance
    lp_waits = {r["mean_wait"] for r in fig2 if r["agent"] == "lp"}
    assert len(lp_waits) == 1
    fig3 = read(out / "fig3_training.csv")
    timed = {(r["source"], int(r["flights"])): float(r["seconds_to_10k_steps"]) for r in fig3}
    assert timed == {("curve", 10): 100.0, ("curve", 20): 200.0, ("bench", 50): 150.0}
    fig4 = read(out / "fig4_ratio_vs_sigma.csv")
    assert sorted({float(r["x"]) for r in fig4}) == [0.5, 1.5]  # 2 sigma in hours
    summary = (out / "summary.md").read_text()
    assert "1.25 average, 2.0 best" in summary
    assert "Runtime of the full protocol" in summary and " h (one process)" in summary
    assert ("Training time against flights (fig3): 3 runs timed to 10,000 mini-batches at "
            "3 flight counts (10, 20, 50)." in summary)


def test_point_passengers_are_the_games() -> None:
    import gymnasium as gym

    from tsg_envs.registration import PRESETS

    real = REAL_POINT_PASSENGERS  # the module's fixture stands in for it above 10 flights
    for n, sigma in ((5, None), (10, 150.0)):
        kwargs = {"n_flights": n} if sigma is None else {"n_flights": n, "arrival_std": sigma}
        env = gym.make("tsg/Screening-Window-10F-v1", instance_seed=0, **kwargs)
        assert real(n, sigma) == env.unwrapped.game.n_passengers
    assert PRESETS["tsg/Screening-Window-10F-v1"].arrival_std != 150.0  # sigma reaches the game


def test_training_figure_says_missing_without_logs(tmp_path: Path) -> None:
    cfg = PaperConfig(
        instances=(0,),
        days=1,
        flights=(5,),
        risk_scales=(1.01,),
        risk_flights=5,
        sigmas=(45.0,),
        sigma_flights=5,
        agents=(),
        curve_dirs=(str(tmp_path / "none"),),
    )
    run_paper(cfg, tmp_path / "out", QUIET)
    rows = read(tmp_path / "out" / "fig3_training.csv")
    assert [r["status"] for r in rows] == ["missing", "missing"]
    assert (tmp_path / "out" / "fig3_training.png").read_bytes()[:8] == PNG_MAGIC


@pytest.mark.slow
def test_paper_quick_cli(tmp_path: Path) -> None:
    assert main(["--quick", "--out", str(tmp_path), "--no-progress"]) == 0
    for name in FIGURES:
        assert (tmp_path / name).read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize(("argv", "flag", "low"), [
    ([], "--instances", 1), ([], "--other-instances", 1), ([], "--days", 1),
    ([], "--workers", 1), (["--train-adaptive"], "--gradient-steps", 1), ([], "--flights", 1),
    ([], "--verify", 1), ([], "--verify-seed", 0),
])
def test_counts_below_their_bound_are_usage_errors(argv, flag, low, capsys) -> None:
    # Every count is checked when the command line is parsed, before anything runs.
    with pytest.raises(SystemExit) as exc:
        main([*argv, flag, str(low - 1)])
    assert exc.value.code == 2
    assert f"argument {flag}: must be an integer >= {low}, got {low - 1}" in (
        capsys.readouterr().err)
    with pytest.raises(SystemExit) as exc:
        main([*argv, flag, "1.5"])
    assert exc.value.code == 2 and "not an integer: '1.5'" in capsys.readouterr().err


def test_paper_gradient_steps_needs_train_adaptive(capsys) -> None:
    assert main(["--gradient-steps", "5", "--out", "unused"]) == 2
    assert "needs --train-adaptive" in capsys.readouterr().err


TINY_PAPER = PaperConfig(instances=(0,), days=1, flights=(5,), risk_scales=(1.01,),
                         sigmas=(45.0,), agents=("slack-lp",), quick=True,
                         curve_dirs=("no-such-dir",))


def _units(out: Path) -> dict[str, dict]:
    import json

    return {str(p.relative_to(out)): json.loads(p.read_text())
            for p in sorted((out / "units").rglob("*.json"))}


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("paper-local")
    run_paper(TINY_PAPER, out, QUIET)
    return out


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_paper_units_are_cached_and_reused(local_run: Path, tmp_path: Path, monkeypatch) -> None:
    first = _units(local_run)
    assert sorted(first) == ["units/fig1/window-5F/i0.json",
                             "units/fig2/window-10F-psi1.01/i0.json",
                             "units/fig4/window-10F-sigma45/i0.json"]
    for doc in first.values():
        assert {r["agent"] for r in doc["rows"]} == {"lp", "slack-lp"}
        assert doc["n_days"] == 1 and doc["key"]
    rows = read(local_run / "fig1_ratio_vs_flights.csv")
    assert {(r["n_instances"], r["n_days"]) for r in rows} == {("1", "1")}
    out = _copy(local_run, tmp_path / "again")

    def boom(args):
        raise AssertionError("a cached unit was computed again")

    monkeypatch.setattr(paper_run, "paper_unit", boom)
    run_paper(TINY_PAPER, out, QUIET)  # every unit cached: nothing computed
    assert _units(out) == first
    # another protocol (2 days) is another key: the units are computed again
    with pytest.raises(AssertionError, match="computed again"):
        run_paper(TINY_PAPER.replace(days=2), out, QUIET)


def test_an_interrupted_paper_run_keeps_its_finished_units(local_run: Path, tmp_path: Path,
                                                          monkeypatch) -> None:
    out = _copy(local_run, tmp_path / "resume")
    first = _units(local_run)
    for name in ("units/fig1/window-5F/i0.json", "units/fig4/window-10F-sigma45/i0.json"):
        (out / name).unlink()
    real = paper_run.paper_unit
    calls = []

    def second_fails(args):
        calls.append(args[1].slug)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(args)

    monkeypatch.setattr(paper_run, "paper_unit", second_fails)
    with pytest.raises(KeyboardInterrupt):
        run_paper(TINY_PAPER, out, QUIET)
    assert calls == ["window-5F", "window-10F-sigma45"]
    kept = _units(out)
    assert "units/fig4/window-10F-sigma45/i0.json" not in kept
    assert kept["units/fig1/window-5F/i0.json"]["rows"] == first[
        "units/fig1/window-5F/i0.json"]["rows"]


def test_units_are_dispatched_instance_by_instance(tmp_path: Path, monkeypatch) -> None:
    import leaderboard.runner as runner

    class Stop(Exception):
        pass

    dispatched = []

    def record(fn, args, **kwargs):
        dispatched.extend((a[1].slug, a[2]) for a in args)
        raise Stop

    monkeypatch.setattr(runner, "map_units", record)
    cfg = TINY_PAPER.replace(instances=(0, 1), flights=(5, 10), figures=("fig1",))
    with pytest.raises(Stop):
        run_paper(cfg, tmp_path, QUIET)
    # Every point of instance 0, then of instance 1: a run stopped part-way leaves whole
    # instances, not one point far ahead of the others.
    assert dispatched == [("window-5F", 0), ("window-10F", 0),
                          ("window-5F", 1), ("window-10F", 1)]


@pytest.mark.slow  # a local Ray start and a second paper run: about a minute on 2 cores
def test_paper_on_ray_gives_the_local_units(local_run: Path, tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    try:
        run_paper(TINY_PAPER, tmp_path / "ray",
                  Execution(progress=False, backend="ray", workers=2))
    finally:
        ray.shutdown()
    strip = ("setup_s", "rolling_s", "train_s", "provenance")
    local = {k: {f: v for f, v in d.items() if f not in strip}
             for k, d in _units(local_run).items()}
    remote = {k: {f: v for f, v in d.items() if f not in strip}
              for k, d in _units(tmp_path / "ray").items()}
    assert local == remote and len(local) == 3


def test_figures_restricts_which_units_are_computed(local_run: Path, tmp_path: Path,
                                                    monkeypatch) -> None:
    out = _copy(local_run, tmp_path / "only")
    (out / "units/fig2/window-10F-psi1.01/i0.json").unlink()
    computed = []
    real = paper_run.paper_unit

    def spy(args):
        computed.append(args[1].slug)
        return real(args)

    monkeypatch.setattr(paper_run, "paper_unit", spy)
    run_paper(TINY_PAPER.replace(figures=("fig1", "fig4")), out, QUIET)
    assert computed == []  # fig2's missing unit is not fig1's or fig4's business
    assert not read(out / "fig2_wait_vs_risk.csv")  # drawn from no unit: empty, no error
    assert (out / "fig2_wait_vs_risk.png").read_bytes()[:8] == PNG_MAGIC
    run_paper(TINY_PAPER.replace(figures=("fig2",)), out, QUIET)
    assert computed == ["window-10F-psi1.01"]


def test_a_trained_unit_carries_its_curve_into_figure_3(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    curves = tmp_path / "curves"  # a stand-in log that must be ignored once units have curves
    write_curve(curves / "a" / "curve.csv", "tsg/Screening-Window-10F-v1", [0, 10_000],
                [0.0, 50.0])
    cfg = TINY_PAPER.replace(adaptive_gradient_steps=20, train_dir=str(tmp_path / "train"),
                             figures=("fig1",), curve_dirs=(str(curves),))
    out = tmp_path / "paper"
    # a unit's training starts from scratch: whatever its folder holds is not resumed
    stale = train_path(cfg, experiment_settings(cfg)["fig1"][0], 0)
    stale.mkdir(parents=True)
    (stale / "ckpt_00000100.pt").write_bytes(b"not a checkpoint")
    run_paper(cfg, out, QUIET)
    assert not (stale / "ckpt_00000100.pt").exists()
    unit = _units(out)["units/fig1/window-5F/i0.json"]
    assert {r["agent"] for r in unit["rows"]} == {"lp", "slack-lp", "alpha-ddpg"}
    curve = unit["curve"]
    assert curve and curve[-1][0] == 20  # gradient steps, the budget reached
    walls = [row[1] for row in curve]
    assert walls == sorted(walls) and unit["train_s"] == max(walls)
    # a second run reuses the unit, and its training time is the run's, not a resume's ~0 s
    run_paper(cfg, out, QUIET)
    assert _units(out)["units/fig1/window-5F/i0.json"]["train_s"] == unit["train_s"]
    rows = read(out / "fig3_training.csv")
    assert not [r for r in rows if r.get("file", "").startswith(str(curves))]
    assert [r["source"] for r in rows if r["status"] == "missing"] == ["time"]  # 20 < 10,000
    summary = (out / "summary.md").read_text()
    fig1 = {r["agent"]: r for r in read(out / "fig1_ratio_vs_flights.csv")}
    ours = fig1["alpha-ddpg"]
    claim = next(line for line in summary.splitlines() if line.startswith("| fig 1: α-DDPG's"))
    assert (f"5F: {float(ours['mean']):.2f} [{float(ours['mean_low']):.2f}, "
            f"{float(ours['mean_high']):.2f}]") in claim
    assert "stand-in" not in fig1["slack-lp"]["label"] + summary  # α-DDPG itself is there
    # computed again from scratch (α-DDPG retrained in a scratch folder): the same bits
    (check,) = verify_units(cfg, out, execution=QUIET)
    assert check.ok and check.exact, check.message
    # its training lives in a folder named by the unit's key: another budget's run never
    # mixes with it
    (run,) = (tmp_path / "train" / "window-5F").iterdir()
    assert run.name == f"i0-{unit['key']}" and (run / "curve.csv").exists()


def test_render_only_and_flights_options(local_run: Path, tmp_path: Path, monkeypatch,
                                         capsys) -> None:
    out = _copy(local_run, tmp_path / "render")

    def boom(args):
        raise AssertionError("--render-only computed a unit")

    monkeypatch.setattr(paper_run, "paper_unit", boom)
    monkeypatch.setattr(PaperConfig, "quick_config",
                        classmethod(lambda cls: TINY_PAPER))
    # Experiment 1 at 5 and 10 flights: only 5 is cached, so 10 is drawn from no instance.
    assert main(["--quick", "--render-only", "--flights", "10", "5", "--out", str(out),
                 "--no-progress"]) == 0
    rows = read(out / "fig1_ratio_vs_flights.csv")
    assert {r["x"] for r in rows} == {"5"} and {r["n_instances"] for r in rows} == {"1"}
    assert main(["--quick", "--flights", "7", "--out", str(out), "--no-progress"]) == 2
    assert "not registered: [7]" in capsys.readouterr().err
    assert main(["--quick", "--flights", "5", "5", "--out", str(out),
                 "--no-progress"]) == 2


def test_a_point_with_more_instances_keeps_the_others(local_run: Path, tmp_path: Path,
                                                      monkeypatch) -> None:
    # A run in chunks: experiment 1 at 5 flights has instances 0 and 1, at 10 flights only 0.
    # Both points are drawn, each from the instances it has, and the summary says so.
    import json

    out = _copy(local_run, tmp_path / "chunks")
    cfg = TINY_PAPER.replace(instances=(0, 1), other_instances=1, flights=(5, 10), figures=())
    five, ten = experiment_settings(cfg)["fig1"]
    base = (out / "units/fig1/window-5F/i0.json").read_text()
    for setting, inst in ((five, 1), (ten, 0)):
        unit = json.loads(base)
        unit["instance_seed"], unit["slug"] = inst, setting.slug
        unit["key"] = unit_key(cfg, setting, inst)
        for row in unit["rows"]:
            row["instance_seed"], row["x"] = inst, setting.x
        path = unit_path(out, "fig1", setting, inst)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(unit))
    monkeypatch.setattr(paper_run, "paper_unit", lambda args: pytest.fail("computed a unit"))
    run_paper(cfg, out, QUIET)
    rows = read(out / "fig1_ratio_vs_flights.csv")
    got = {(r["x"], r["n_instances"]) for r in rows}
    assert got == {("5", "2"), ("10", "1")}
    # Two instances: the t-interval over their means (the copies are equal: zero width); one
    # instance: its days-only bootstrap.
    for r in rows:
        if r["x"] == "5":
            assert r["interval"] == "instances"
            assert float(r["mean_low"]) == float(r["mean"]) == float(r["mean_high"])
        else:
            assert r["interval"] == "days"
            assert (r["mean_low"], r["mean_high"]) == (r["mean_low_days"], r["mean_high_days"])
    assert {r["n_instances"] for r in read(out / "fig4_ratio_vs_sigma.csv")} == {"1"}
    assert ("Protocol: 2 instances at 5 flights, 1 at 10 flights (experiment 1; 1 for"
            in (out / "summary.md").read_text())


def test_trend_is_a_rank_test_over_instances_worked_by_hand() -> None:
    import math

    from scipy import stats

    def result(points: dict[float, list[float]]) -> dict:
        """One day per instance: each instance's mean is its one value."""
        col = paper_stats.Collector()
        for x, ys in points.items():
            for i, y in enumerate(ys):
                col.rows.append({"x": x, "agent": "a", "instance_seed": i,
                                 "arrival_seed": LEADERBOARD_SEED_BASE, "ratio_vs_lp": y})
        return {"collector": col}

    cfg = PaperConfig(days=1)

    def pts(points: dict[float, list[float]]) -> list:
        return paper_stats.trend_points(cfg, result(points), "a")

    # Three points of two instances, strictly falling: the 12 pairs across points all fall and
    # the 3 within a point are tied in x, so S = -12, τ_b = -12 / sqrt(12 * 15) = -2 / sqrt(5);
    # Var S = (6*5*17 - 3 * 2*1*9) / 18 = 76 / 3, p = erfc(12 / sqrt(76/3) / sqrt(2)) = 0.0171.
    three = pts({0.0: [6, 5], 1.0: [4, 3], 2.0: [2, 1]})
    tau, p = paper_stats.kendall(three)
    assert tau == pytest.approx(-2 / math.sqrt(5))
    assert p == pytest.approx(math.erfc(12 / math.sqrt(76 / 3) / math.sqrt(2)))
    assert p == pytest.approx(0.01712, abs=5e-5)
    assert paper_stats.trend_direction(three) == "falls"
    assert (paper_stats.trend_text(three)
            == "falls (τ = -0.89 over 6 instances, p = 0.017; 5.50 at 0 to 1.50 at 2)")
    # A point weighs as many instances as it has. Five points of five instances, every
    # instance below the point before, and a sixth point of two instances out of line (between
    # the third and the fourth): the six point means fall but for two inversions, which
    # Kendall's τ of the means cannot call (τ = -11/15, exact p = 2 * 20 / 6! = 0.056). Over
    # instances: 250 + 30 pairs fall and 20 rise, S = -260; pairs untied in x:
    # 27*26/2 - 5*10 - 1 = 300, so τ_b = -260 / sqrt(300 * 351).
    five = {float(k): [10.0 * (5 - k) + j for j in range(5)] for k in range(5)}
    means = [np.mean(v) for v in five.values()] + [25.5]
    old = stats.kendalltau(range(6), means)
    assert old.statistic == pytest.approx(-11 / 15) and old.pvalue == pytest.approx(40 / 720)
    lagging = pts({**five, 5.0: [25.0, 26.0]})
    tau, p = paper_stats.kendall(lagging)
    assert tau == pytest.approx(-260 / math.sqrt(300 * 351))
    assert p < 1e-6 and paper_stats.trend_direction(lagging) == "falls"
    # A point with one instance is shown but not tested: adding one out of line changes nothing.
    assert paper_stats.kendall(pts({**five, 5.0: [25.0, 26.0], 6.0: [99.0]})) == (tau, p)
    assert paper_stats.falls_verdict("falls", below_one=True).startswith("direction only")
    assert paper_stats.falls_verdict("falls") == "agrees"
    # Rising: the mirror image.
    assert paper_stats.trend_direction(pts({0.0: [1, 2], 1.0: [3, 4], 2.0: [5, 6]})) == "rises"
    # Zig-zag: across any two points one pair rises, one falls and two tie: S = 0, p = 1.
    zig = pts({0.0: [1, 3], 1.0: [1, 3], 2.0: [1, 3]})
    assert paper_stats.kendall(zig) == (pytest.approx(0.0), pytest.approx(1.0))
    assert paper_stats.trend_direction(zig) == "no clear trend"
    assert paper_stats.falls_verdict("no clear trend") == "not shown: no significant trend"
    # Two points are not a trend.
    assert paper_stats.trend_direction(pts({0.0: [6, 5], 1.0: [2, 1]})) == "n/a"
    assert paper_stats.falls_verdict("n/a") == "n/a"


def test_t_interval_and_mean_over_points_by_hand() -> None:
    # 1, 2, 3: mean 2, sample sd 1, standard error 1/sqrt(3); t(0.975, 2 df) = 4.303 (table),
    # so the half-width is 4.303 / sqrt(3) = 2.484.
    mean, low, high = paper_stats.t_interval(np.array([1.0, 2.0, 3.0]))
    assert mean == 2.0 and low == pytest.approx(2 - 2.484, abs=1e-3)
    assert high == pytest.approx(2 + 2.484, abs=1e-3)
    assert paper_stats.t_interval(np.array([5.0, 5.0])) == (5.0, 5.0, 5.0)
    with pytest.raises(ValueError, match="two samples"):
        paper_stats.t_interval(np.array([1.0]))
    # Point A: instances 0 and 1 on one day, scoring 1 and 3; point B: instances 0-2, 2 on
    # every day; point C: one instance (left out). Per instance common to A and B, the mean
    # over the points: (1 + 2) / 2 = 1.5 and (3 + 2) / 2 = 2.5; their mean 2, sd 0.7071,
    # standard error 0.5, t(0.975, 1 df) = 12.706: [2 - 6.353, 2 + 6.353].
    avg = paper_stats.mean_over_points([([0, 1], np.array([[1.0, 3.0]])),
                                   ([0, 1, 2], np.full((5, 3), 2.0)),
                                   ([5], np.array([[100.0]]))])
    assert avg["mean"] == 2.0 and (avg["n_points"], avg["n_instances"]) == (2, 2)
    assert avg["n_instances_max"] == 3  # B keeps its third instance (it varies not at all)
    assert avg["low"] == pytest.approx(2 - 6.353, abs=1e-3)
    assert avg["high"] == pytest.approx(2 + 6.353, abs=1e-3)
    # Points sharing no instance are independent: A on instances 0, 1 scoring 1 and 3, B on
    # 2, 3 scoring 2 and 4. Mean (2 + 3) / 2 = 2.5; each point's sample variance 2, so the
    # variance of the average is (2/2 + 2/2) / 4 = 0.5 (se 0.7071); each of the four
    # instances carries a quarter of it, n_eff = 4 and t(0.975, 3 df) = 3.182:
    # 2.5 -+ 3.182 x 0.7071 = [0.250, 4.750].
    avg = paper_stats.mean_over_points([([0, 1], np.array([[1.0, 3.0]])),
                                   ([2, 3], np.array([[2.0, 4.0]]))])
    assert avg["mean"] == 2.5 and avg["low"] == pytest.approx(0.250, abs=1e-3)
    assert avg["high"] == pytest.approx(4.750, abs=1e-3)
    assert paper_stats.mean_over_points([([0, 1], np.ones((2, 2))),
                                    ([1, 2], np.ones((2, 2)))])["high"] == 1.0
    assert paper_stats.mean_over_points([([0], np.ones((2, 1)))]) is None


def test_mean_over_points_reduces_to_the_paired_interval_and_covers() -> None:
    rng = np.random.default_rng(7)
    # Every point on the same 6 instances: exactly the t-interval of the 6 per-instance
    # averages over the points (the paired interval, 5 degrees of freedom).
    x = rng.normal(1.0, 0.2, size=(6, 4))
    avg = paper_stats.mean_over_points([(list(range(6)), x[:, j][None, :]) for j in range(4)])
    assert (avg["mean"], avg["low"], avg["high"]) == pytest.approx(
        paper_stats.t_interval(x.mean(axis=1)), rel=1e-12)
    # Coverage: 6 correlated points, five with 12-11 instances and one lagging with 2 (a run
    # in chunks). Over 1,000 draws the interval covers the true average 95% of the time,
    # within three binomial standard errors (0.007); the intersection of instances (2) would
    # give a t(1) interval about 5 times as wide.
    mu, sd = np.linspace(0.9, 0.7, 6), np.linspace(0.15, 0.06, 6)
    cov = 0.5 * np.outer(sd, sd) + np.diag(0.5 * sd**2)
    counts = (12, 12, 12, 11, 11, 2)
    hits = 0
    for _ in range(1000):
        draws = rng.multivariate_normal(mu, cov, size=12)
        avg = paper_stats.mean_over_points([(list(range(n)), draws[:n, j][None, :])
                                       for j, n in enumerate(counts)])
        hits += avg["low"] <= mu.mean() <= avg["high"]
    assert abs(hits / 1000 - 0.95) <= 3 * np.sqrt(0.95 * 0.05 / 1000)


def test_progress_counts_units_against_the_full_protocol() -> None:
    # Experiment 1 has two units at 5 flights (100 s and 200 s): 2 of 6 points x 30 instances
    # done, 300 s spent; the other 28 at 5 flights would take 28 x 150 s = 4,200 s = 1.2 h, and
    # the five other flight counts have no unit to estimate from.
    col = paper_stats.Collector(unit_s={"window-5F": [100.0, 200.0]})
    from experiments.paper.summary import progress_table

    lines = progress_table({"fig1": {"collector": col}, "fig2": {}, "fig4": {}})
    assert lines[-2] == ("| fig1 | 2 / 180 | 0.1 | 1.2 h + 5 point(s) not started (window-10F, "
                         "window-20F, window-50F, window-100F, window-300F) |")


def test_units_keep_their_provenance_and_the_summary_groups_them(local_run: Path) -> None:
    from experiments.paper.summary import provenance_table

    docs = _units(local_run)
    for doc in docs.values():
        prov = doc["provenance"]
        assert prov["packages"]["numpy"] == np.__version__
        assert prov["hardware"]["cpu_count"] >= 1 and prov["python"]
    assert "## Where the units were computed" in (local_run / "summary.md").read_text()

    def unit(cpu: str, torch: str, commit: str, when: str, secs: float) -> dict:
        return {"setup_s": secs, "rolling_s": 0.0, "train_s": None, "provenance": {
            "hardware": {"processor": cpu, "cpu_count": 2, "machine": "x86_64"},
            "packages": {"torch": torch, "numpy": "2.0", "scipy": "1.0", "highspy": "1.0",
                         "tianshou": "2.0.1"},
            "python": "3.11.7", "git_commit": commit, "git_dirty": False,
            "created_utc": when}}

    units = [unit("EPYC", "2.13.0", "bbbbbbbbb", "2026-01-02", 3600.0),
             unit("EPYC", "2.13.0", "aaaaaaaaa", "2026-01-01", 1800.0),
             unit("Xeon", "2.11.0", "ccccccccc", "2026-01-03", 360.0),
             {"setup_s": 7200.0, "rolling_s": 0.0, "train_s": 3600.0}]
    lines = provenance_table(units)
    soft = "Python 3.11.7; torch {}, numpy 2.0, scipy 1.0, highspy 1.0, tianshou 2.0.1"
    epyc = f"| EPYC (2 CPUs) | {soft.format('2.13.0')} | aaaaaaa, bbbbbbb | 2 | 1.5 |"
    assert lines[4] == epyc  # commits in the order first used; 1800 s + 3600 s
    assert lines[5] == f"| Xeon (2 CPUs) | {soft.format('2.11.0')} | ccccccc | 1 | 0.1 |"
    assert lines[6] == ("| machine not recorded (units computed before they kept their "
                        "provenance) | - | - | 1 | 3.0 |")


def test_verify_computes_cached_units_again_and_compares(local_run: Path, tmp_path: Path,
                                                         capsys) -> None:
    import json

    out = _copy(local_run, tmp_path / "verify")
    checks = verify_units(TINY_PAPER, out, count=5, execution=QUIET)  # all three units
    assert len(checks) == 3 and all(c.ok and c.exact for c in checks)
    assert {c.message for c in checks} == {"reproduced bit for bit (2 rows)"}  # lp, slack-lp
    name = out / "units/fig1/window-5F/i0.json"
    doc = json.loads(name.read_text())
    wait = doc["rows"][1]["mean_wait"]
    fig1 = TINY_PAPER.replace(figures=("fig1",))
    for scale, ok in ((1 + 1e-9, True), (1 + 1e-3, False)):
        doc["rows"][1]["mean_wait"] = wait * scale
        name.write_text(json.dumps(doc))
        (check,) = verify_units(fig1, out, execution=QUIET)
        assert check.path == name and check.ok is ok and not check.exact
        # row 1 is slack-lp's: the LP's rows still reproduce bit for bit
        assert check.message == (
            "reproduced within 1e-06: rows of slack-lp to a relative 1.0e-09; bit for bit: "
            "counts, rows of lp, α-DDPG's training (2 rows)" if ok else
            "differs: rows of slack-lp by a relative 1.0e-03 (over 1e-06; 2 rows); bit for "
            "bit: counts, rows of lp, α-DDPG's training")
    doc["rows"].pop()
    name.write_text(json.dumps(doc))
    (check,) = verify_units(fig1, out, execution=QUIET)
    assert not check.ok and check.message.startswith("differs: rows of slack-lp: only in the "
                                                     "fresh unit")
    with pytest.raises(ValueError, match="no cached unit of fig1"):
        verify_units(fig1.replace(days=2), out, execution=QUIET)  # another key
    # the command line: a usage error, not a run
    assert main(["--verify", "1", "--render-only", "--out", str(out)]) == 2
    assert main(["--verify", "1", "--out", str(tmp_path / "empty"),
                 "--no-progress"]) == 2
    assert "no cached unit" in capsys.readouterr().err


def test_training_time_is_fitted_through_three_flight_counts_or_more() -> None:
    # Means 100, 220, 300 s at 10, 20, 30 flights: slope (300 - 100) / 20 = 10 s per flight;
    # intercept 206.67 - 10 * 20 = 6.67 s; residuals -6.67, 13.33, -6.67, so SS_res = 266.67,
    # SS_tot = 106.67² + 13.33² + 93.33² = 20266.67 and R² = 1 - 266.67 / 20266.67 = 0.987.
    assert paper_stats.time_fit_text({10: [90.0, 110.0], 20: [220.0], 30: [300.0]}) == (
        "10F: 100 s; 20F: 220 s; 30F: 300 s to 10,000 mini-batches; "
        "least squares 7 s + 10.00 s × flights, R² = 0.99")
    # Two means: any line through them has R² = 1, so none is drawn.
    assert paper_stats.time_fit_text({5: [100.0], 10: [130.0, 150.0]}) == (
        "5F: 100 s; 10F: 140 s to 10,000 mini-batches (2 flight counts: too few to fit a line)")
