"""What the paper's full protocol costs, per unit type: ``python -m experiments.paper.cost``.

Times a small sample of each kind of work a unit of the paper's experiments does
(:func:`~experiments.paper.units.paper_unit`), in CPU seconds of this process
(``time.process_time``: a busy machine stretches wall time, not CPU time), at every flight count
of experiment 1, and extrapolates them to the whole protocol (:class:`PaperConfig`'s defaults:
30 instances x 100 days per flight count for figure 1, 10 x 100 per point for figures 2 and 4,
α-DDPG trained per unit at 10,000 gradient steps). The unit types:

- **set-up**, measured whole: the unit's environment (game, polytopes, static LP), each agent's
  construction (``build_agent``: the slack LP's solve, the per-passenger LP agents' structure)
  and the two vector environments the harness makes for a unit's 100 days (64 and 36 rows).
- **training** (α-DDPG), measured at two reduced budgets with validation off and extrapolated
  linearly in gradient steps (``fixed + per_step x 10,000``: the slope between the two budgets,
  the warm-up and the environments in the intercept), plus the run's six validations (at 0,
  2,000, ..., 10,000 gradient steps, each ``eval_days = 2`` days through the harness), one
  measured and counted six times.
- **evaluation** per agent: the harness's :func:`~tsg_envs.harness.roll_days` timed at two
  batch sizes (days rolled at once), fitted as ``per_batch + per_day x days`` and summed over
  the chunks the harness cuts a unit's 100 days into (64, then 36).

Experiments 2 and 4 (10 flights, other risk allowances and arrival spreads) are not timed
apart: each of their points costs the 10-flight unit scaled linearly in passengers (as
``summary.md``'s runtime table scales), with the passenger count of the point's instance 0.
Every figure in the output says whether it was measured or extrapolated. Each flight count's
measurements are written to the JSON as soon as they are done and reused by a later run with the
same sample (``--fresh`` measures again), so the bench resumes; at the default sample it takes
about ten CPU minutes. ``docs/paper.md``'s ``paper-cost`` block is drawn from the JSON
(``python -m experiments.readme``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["SAMPLE", "VALIDATIONS", "warm_up", "measure_flights", "derive", "protocol_cost",
           "block_text", "run", "main"]

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")

#: The default sample: the instance timed, the two training budgets (gradient steps) and the two
#: evaluation batch sizes (days rolled at once) per flight count, and the harness's batch.
SAMPLE: dict[str, Any] = {"instance": 0, "train_steps": [100, 600], "days": [4, 16],
                          "harness_batch": 64}

#: α-DDPG's validations in one paper training: at 0 and every ``eval_every`` = 2,000 gradient
#: steps up to the budget of 10,000 (:class:`baselines.offpolicy.OffPolicyConfig`).
VALIDATIONS = 6


def _cpu(fn: Callable[[], T]) -> tuple[T, float]:
    """``fn()`` and the process CPU seconds it took."""
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def _affine(x: list[int], y: list[float]) -> tuple[float, float]:
    """(intercept, slope) of the line through two points ``x[0] < x[1]``, neither negative.

    Timing noise can tilt the line of two nearly equal times: a negative slope is taken as
    none, with the larger time as the intercept (the costlier reading); a negative intercept
    as none, with the slope kept.
    """
    slope = (y[1] - y[0]) / (x[1] - x[0])
    if slope < 0:
        return max(y), 0.0
    return max(y[0] - slope * x[0], 0.0), slope


def _chunks(days: int, batch: int) -> list[int]:
    """The sizes of the harness's chunks of ``days`` days (:func:`tsg_envs.harness.evaluate`)."""
    return [min(batch, days - s) for s in range(0, days, batch)]


def warm_up() -> float:
    """Pay this process's one-time costs on a game the bench does not time; its CPU seconds.

    Imports, torch's first calls and the schedules' data file, on 5 flights, instance 99,999.
    """
    import gymnasium as gym

    from baselines.api import RunConfig, build_agent, get_method
    from experiments.paper.config import BASE_ID, PaperConfig
    from tsg_envs.harness import roll_days

    def work() -> None:
        kwargs: dict[str, Any] = {"n_flights": 5, "instance_seed": 99_999}
        env = gym.make(BASE_ID, **kwargs)
        scratch = Path(tempfile.mkdtemp(prefix="paper-cost-"))
        try:
            agent = get_method("alpha-ddpg").train(RunConfig(
                algo="alpha-ddpg", env_id=BASE_ID, gradient_steps=20, out=scratch,
                instance_seed=99_999, env_kwargs={"n_flights": 5}, hparams={"eval_every": 0},
                progress=False))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        vec = gym.make_vec(BASE_ID, num_envs=2, vectorization_mode="vector_entry_point",
                           **kwargs)
        for a in [agent, *(build_agent(n, env) for n in ["lp", *PaperConfig().agents])]:
            roll_days(vec, a, [0, 1])
        vec.close()

    return _cpu(work)[1]


def measure_flights(n_flights: int, sample: dict[str, Any] | None = None,
                    gradient_steps: int = 10_000, days: int = 100) -> dict[str, Any]:
    """Time one unit's kinds of work at ``n_flights`` flights (CPU seconds of this process).

    The instance must not have been built in this process before (its set-up would hit the
    caches): every flight count is another game.

    Returns:
        ``passengers``, ``setup`` (seconds per part), ``train`` (the two budgets' times, the
        fitted fixed and per-step costs, the validation's and the extrapolated full training)
        and ``evaluate`` (per agent: the two batch sizes' times, the fit and the extrapolated
        ``unit_s`` for ``days`` days), plus ``sample_cpu_s``, what measuring took.
    """
    import gymnasium as gym

    from baselines.api import RunConfig, build_agent, get_method
    from baselines.runs import validate
    from experiments.paper.config import BASE_ID, PaperConfig, Setting, agent_names
    from experiments.paper.units import unit_kwargs
    from tsg_envs.harness import roll_days
    from tsg_envs.seeds import LEADERBOARD_SEED_BASE

    sample = dict(SAMPLE if sample is None else sample)
    t_all = time.process_time()
    inst = int(sample["instance"])
    setting = Setting(n_flights, f"window-{n_flights}F", {"n_flights": n_flights})
    setup: dict[str, float] = {}

    def make_env() -> Any:
        kwargs = unit_kwargs(setting, inst)
        return gym.make(BASE_ID, instance_seed=inst, **kwargs)

    env, setup["environment"] = _cpu(make_env)
    agents: dict[str, Any] = {}
    for name in ["lp", *PaperConfig().agents]:
        agents[name], setup[name] = _cpu(partial(build_agent, name, env))
    batch = int(sample["harness_batch"])

    def make_vec(n: int) -> Any:
        return gym.make_vec(BASE_ID, num_envs=n, vectorization_mode="vector_entry_point",
                            instance_seed=inst, **setting.kwargs)

    sizes = sorted(set(_chunks(days, batch)), reverse=True)
    for n in sizes:
        vec, secs = _cpu(partial(make_vec, n))
        setup["harness environments"] = setup.get("harness environments", 0.0) + secs
        vec.close()

    # training: two reduced budgets, validation off; then one validation timed apart
    steps = [int(s) for s in sample["train_steps"]]
    train_s: list[float] = []
    trained: Any = None
    scratch = Path(tempfile.mkdtemp(prefix="paper-cost-"))
    try:
        for g in steps:
            run_cfg = RunConfig(algo="alpha-ddpg", env_id=BASE_ID, gradient_steps=g, seed=0,
                                out=scratch / f"g{g}", instance_seed=inst,
                                env_kwargs=dict(setting.kwargs),
                                hparams={"eval_every": 0}, progress=False)
            trained, secs = _cpu(partial(get_method("alpha-ddpg").train, run_cfg))
            train_s.append(secs)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    eval_env = gym.make(BASE_ID, instance_seed=inst, **setting.kwargs)
    _, validation_s = _cpu(lambda: validate(eval_env, trained, 2))
    train = {"gradient_steps": steps, "cpu_s": train_s, "validation_s": validation_s}
    agents["alpha-ddpg"] = trained

    # evaluation: each agent's days rolled at two batch sizes through the harness's roll_days
    n_days = [int(d) for d in sample["days"]]
    evaluation: dict[str, dict[str, Any]] = {}
    vecs = {n: make_vec(n) for n in n_days}
    for name in ["lp", *agent_names(PaperConfig(adaptive_gradient_steps=gradient_steps))]:
        times: list[float] = []
        for n in n_days:
            seeds = [LEADERBOARD_SEED_BASE + d for d in range(n)]
            times.append(_cpu(partial(roll_days, vecs[n], agents[name], seeds))[1])
        evaluation[name] = {"days": n_days, "cpu_s": times}
    for v in vecs.values():
        v.close()
    size: dict[str, Any] = {"flights": n_flights, "instance": inst,
            "passengers": int(env.unwrapped.game.n_passengers), "setup": setup,
            "train": train, "evaluate": evaluation,
            "sample_cpu_s": time.process_time() - t_all}
    return derive(size, gradient_steps, days, batch)


def derive(size: dict[str, Any], gradient_steps: int = 10_000, days: int = 100,
           batch: int = 64) -> dict[str, Any]:
    """Add to one flight count's measurements (``cpu_s``) the fits and one unit's extrapolation.

    Training: ``fixed_s + per_step_s x gradient_steps + validations x validation_s``. Each
    agent's evaluation: ``per_batch_s + per_day_s x n`` summed over the harness's chunks of
    ``days`` days (``batch`` at most). The fits are recomputed from the raw times on every run,
    so a resumed bench applies the current extrapolation to its cached measurements.
    """
    train = size["train"]
    fixed, per_step = _affine(train["gradient_steps"], train["cpu_s"])
    train.update(fixed_s=fixed, per_step_s=per_step, validations=VALIDATIONS,
                 unit_s=fixed + per_step * gradient_steps + VALIDATIONS * train["validation_s"])
    for e in size["evaluate"].values():
        per_batch, per_day = _affine(e["days"], e["cpu_s"])
        e.update(per_batch_s=per_batch, per_day_s=per_day,
                 unit_s=sum(per_batch + per_day * c for c in _chunks(days, batch)))
    size["unit_s"] = (sum(size["setup"].values()) + train["unit_s"]
                      + sum(e["unit_s"] for e in size["evaluate"].values()))
    return size


def protocol_cost(sizes: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """The full protocol's CPU hours from :func:`measure_flights`'s results, per unit type.

    Experiment 1's points are their own flight count's unit times its instances; the points of
    experiments 2 and 4 scale the 10-flight unit linearly in passengers (each point's instance
    0, :func:`experiments.paper.summary.point_passengers`).
    """
    from experiments.paper.config import PaperConfig, experiment_instances, experiment_settings
    from experiments.paper.summary import point_passengers

    full = PaperConfig()
    by_type: dict[str, float] = {}
    by_exp: dict[str, float] = {}
    points = []
    for fig, settings in experiment_settings(full).items():
        n_inst = len(experiment_instances(full, fig))
        for st in settings:
            k = int(st.kwargs["n_flights"])
            ref = sizes[k]
            if fig == "fig1":
                scale, how = 1.0, "measured"
            else:
                scale = point_passengers(k, st.kwargs.get("arrival_std")) / ref["passengers"]
                how = f"{k}F unit x passengers"
            parts = {"set-up": sum(ref["setup"].values()),
                     "training": ref["train"]["unit_s"],
                     **{f"evaluation: {a}": e["unit_s"] for a, e in ref["evaluate"].items()}}
            secs = 0.0
            for part, s in parts.items():
                by_type[part] = by_type.get(part, 0.0) + s * scale * n_inst
                secs += s * scale * n_inst
            by_exp[fig] = by_exp.get(fig, 0.0) + secs
            points.append({"experiment": fig, "point": st.slug, "instances": n_inst,
                           "scale": scale, "how": how, "cpu_h": secs / 3600})
    evaluation = sum(v for k, v in by_type.items() if k.startswith("evaluation"))
    return {"by_type_h": {k: v / 3600 for k, v in by_type.items()},
            "by_experiment_h": {k: v / 3600 for k, v in by_exp.items()},
            "evaluation_h": evaluation / 3600, "total_h": sum(by_type.values()) / 3600,
            "points": points}


def run(out: Path, sample: dict[str, Any] | None = None, fresh: bool = False,
        flights: tuple[int, ...] | None = None, progress: bool = True) -> dict[str, Any]:
    """Measure every flight count missing from ``out`` (or all: ``fresh``) and write the JSON.

    A flight count already in ``out`` with the same sample is kept (the bench resumes); the
    protocol's extrapolation is recomputed from whatever is there once all are measured.
    """
    from benchmarks.envs import machine_info
    from experiments.paper.config import PaperConfig

    sample = dict(SAMPLE if sample is None else sample)
    flights = flights or PaperConfig().flights
    doc: dict[str, Any] = {}
    if out.exists():
        doc = json.loads(out.read_text(encoding="utf-8"))
        if doc.get("sample") != sample:
            doc = {}
    sizes = {int(k): v for k, v in doc.get("sizes", {}).items()
             if not (fresh and int(k) in flights)}
    doc.update({"command": "python -m experiments.paper.cost", "sample": sample,
                "protocol": {"fig1": "30 instances x 100 days per flight count",
                             "fig2, fig4": "10 instances x 100 days per point",
                             "alpha-ddpg": "trained per unit, 10,000 gradient steps"}})
    warm = False
    for k in sorted(flights):
        if k in sizes:
            continue
        if not warm:
            warm_up()
            warm = True
        if progress:
            print(f"measuring {k} flights ...", flush=True)
        sizes[k] = measure_flights(k, sample)
        sizes[k]["machine"] = machine_info()
        doc["sizes"] = {str(n): sizes[n] for n in sorted(sizes)}
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    for size in sizes.values():
        derive(size, batch=int(sample["harness_batch"]))
    if all(k in sizes for k in PaperConfig().flights):
        doc["cost"] = protocol_cost(sizes)
    doc["sizes"] = {str(n): sizes[n] for n in sorted(sizes)}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return doc


def block_text(doc: dict[str, Any], json_path: str = "results/paper/cost.json") -> str:
    """``docs/paper.md``'s ``paper-cost`` block from :func:`run`'s JSON."""
    sizes = doc["sizes"]
    cost = doc.get("cost")
    if cost is None:
        return f"(not all flight counts measured yet: `{doc['command']}`)"
    agents = list(next(iter(sizes.values()))["evaluate"])
    head = ("| flights | passengers | set-up s | training s (fixed + per step x 10,000 "
            "+ 6 validations) | " + " | ".join(f"{a} s / 100 days" for a in agents)
            + " | unit s |")
    lines = [head, "|" + "---:|" * (5 + len(agents))]
    for k, s in sizes.items():
        t = s["train"]
        lines.append(
            f"| {k} | {s['passengers']:,} | {sum(s['setup'].values()):.1f} | "
            f"{t['unit_s']:.0f} ({t['fixed_s']:.1f} + {t['per_step_s'] * 1e3:.2f} ms x "
            f"10,000 + 6 x {t['validation_s']:.2f}) | "
            + " | ".join(f"{s['evaluate'][a]['unit_s']:.1f}" for a in agents)
            + f" | {s['unit_s']:.0f} |")
    lines += ["", "| unit type | full protocol, CPU hours | share |", "|---|---:|---:|"]
    total = cost["total_h"]
    for part, h in sorted(cost["by_type_h"].items(), key=lambda kv: -kv[1]):
        lines.append(f"| {part} | {h:.2f} | {h / total:.0%} |")
    lines.append(f"| **all** (fig1 {cost['by_experiment_h']['fig1']:.2f}, fig2 "
                 f"{cost['by_experiment_h']['fig2']:.2f}, fig4 "
                 f"{cost['by_experiment_h']['fig4']:.2f}) | **{total:.2f}** | |")
    m = next(iter(sizes.values()))["machine"]
    sample = doc["sample"]
    lines += ["", f"(CPU seconds of one process. Measured, per flight count on instance "
              f"{sample['instance']}: the set-up whole; α-DDPG's training at "
              f"{' and '.join(map(str, sample['train_steps']))} gradient steps without "
              "validation and one 2-day validation; each agent's rollouts of "
              f"{' and '.join(map(str, sample['days']))} days at once. Extrapolated: the "
              "training linearly in gradient steps to 10,000 plus 6 validations, the rollouts "
              "linearly in days to the harness's chunks of a unit's 100 days (64 + 36), every "
              "point to its instances, and experiments 2 and 4 from the 10-flight unit "
              f"linearly in passengers. The sample took "
              f"{sum(s['sample_cpu_s'] for s in sizes.values()) / 60:.1f} CPU minutes on "
              f"{m['cpu']}, {m['cores']} cores, shared with other work "
              f"while it ran; commit {m['git commit']}; `{json_path}` from "
              f"`{doc['command']}`)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m experiments.paper.cost``."""
    parser = argparse.ArgumentParser(prog="python -m experiments.paper.cost", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, default=ROOT / "results" / "paper" / "cost.json",
                        help="where to write (and resume from); default results/paper/cost.json")
    parser.add_argument("--fresh", action="store_true", help="measure every flight count again")
    parser.add_argument("--flights", nargs="+", type=int, default=None,
                        help="measure only these flight counts (the rest stay as they are)")
    args = parser.parse_args(argv)
    import warnings

    # the paper's single-window v1 ids are kept on purpose (the figures' family)
    warnings.filterwarnings("ignore", message=".*is out of date.*")
    doc = run(args.json, fresh=args.fresh,
              flights=tuple(args.flights) if args.flights else None)
    print(block_text(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
