"""The single-window families read against the achievability bracket (SPEC §8, §9).

``python -m benchmarks.bracket`` computes, for every (window id, instance seed) unit and every
day, the static LP's wait, the bracket (:func:`tsg_envs.bracket.bracket`: a clairvoyant plan
and a proven lower bound on any policy's wait) and the waits of the static slack LP,
slack-guided and myopic on the same days; each unit is cached as JSON under ``--out``/units as
it finishes (reruns reuse it, so a run resumes), and the summary (``summary.json`` and the
``bracket`` block of docs/bracket.md) gives per id the medians over instances with 95% bootstrap
intervals, the binding of the LP's capacity, and the bracket's cost per day at each flight
count.

Ratios are LP wait / x wait on the same day (higher: x waits less): ``plan`` is what a
clairvoyant plan gains over the LP, ``bound`` the most any policy could (the LP's wait over the
proven lower bound), and ``bound / plan`` how tight the bracket is.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import tsg_envs
from tsg_envs.bracket import bracket
from tsg_envs.instances import draw_instance
from tsg_envs.lp import solve_window_lp
from tsg_envs.provenance import provenance
from tsg_envs.seeds import EVAL_SEED_BASE

ROOT = Path(__file__).resolve().parent.parent
#: The ids of the docs' bracket table: the v1 and v2 10-flight single-window ids.
DEFAULT_IDS = ("tsg/Screening-Window-10F-v1", "tsg/Screening-Window-10F-v2")
#: The agents every day is played with (besides the LP and the bracket's own plans).
AGENTS = ("slack-lp", "slack-guided", "myopic")
#: Bootstrap resamples of the medians' intervals (seeded).
BOOTSTRAP = 2000


def _factories() -> dict[str, Any]:
    from baselines import myopic, slack_guided, slack_lp

    return {"slack-lp": slack_lp.make_agent, "slack-guided": slack_guided.make_agent,
            "myopic": myopic.make_agent}


def capacity_loss(game: Any) -> float:
    """Share of the single-window LP's value lost to its planned capacity (0: not binding).

    The same LP with rates a million times larger (capacity that binds nowhere) against the
    game's own: (V_inf − V) / |V_inf| with V = Σ_θ P_θ u_θ.
    """
    sol = solve_window_lp(game, None)
    free = solve_window_lp(dataclasses.replace(game, rates=game.rates * 1e6, key=None), None)
    v, v_inf = (float(game.attacker_prior @ s.utility[0]) for s in (sol, free))
    return (v_inf - v) / max(abs(v_inf), 1e-12)


def unit(env_id: str, instance: int, days: Sequence[int]) -> dict[str, Any]:
    """One (id, instance): binding, and per day the LP, the agents and the bracket."""
    env = gym.make(env_id, instance_seed=int(instance)).unwrapped
    game = env.game
    draw = draw_instance(game.config, int(instance))
    sol = env.lp_solution
    rows = []
    factories = _factories()
    for day in days:
        b = bracket(env, int(day), candidates=factories)
        rows.append({
            "day": int(day), "n_passengers": game.n_passengers, "lp": b.lp_wait,
            "plan": b.plan_wait, "bound": b.bound_wait, "plan_source": b.plan_source,
            **{name: b.candidate_waits[name] for name in AGENTS},
            "weights": [float(w) for w in b.weights], "seconds": b.seconds,
        })
    return {
        "env_id": env_id, "instance_seed": int(instance), "draws": draw.draws,
        "capacity_loss": capacity_loss(game), "stretch": float(sol.stretch.max()),
        "planning_utilisation": float(game.planning_utilisation), "days": rows,
    }


def _slug(env_id: str) -> str:
    return env_id.replace("/", "_")


def unit_path(out: Path, env_id: str, instance: int) -> Path:
    """Where a unit is cached."""
    return out / "units" / _slug(env_id) / f"i{int(instance)}.json"


def _run_unit(args: tuple[str, int, tuple[int, ...], str]) -> str:
    env_id, instance, days, out = args
    path = unit_path(Path(out), env_id, instance)
    start = time.time()
    doc = unit(env_id, instance, days)
    doc["wall_seconds"] = time.time() - start
    doc["provenance"] = provenance()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return f"{env_id} i{instance}: {doc['wall_seconds']:.0f} s"


def run_units(ids: Sequence[str], instances: Sequence[int], days: Sequence[int], out: Path,
              workers: int = 1) -> None:
    """Compute every missing unit (cached ones with the same days are reused)."""
    todo = []
    for env_id in ids:
        for i in instances:
            path = unit_path(out, env_id, i)
            if path.exists():
                doc = json.loads(path.read_text(encoding="utf-8"))
                if [d["day"] for d in doc["days"]] == list(days):
                    continue
            todo.append((env_id, int(i), tuple(int(d) for d in days), str(out)))
    if not todo:
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=len(todo), desc="bracket units", unit="unit")
    if workers <= 1:
        for args in todo:
            bar.set_postfix_str(_run_unit(args))
            bar.update()
    else:
        with ProcessPoolExecutor(workers) as pool:
            for msg in pool.map(_run_unit, todo):
                bar.set_postfix_str(msg)
                bar.update()
    bar.close()


def median_interval(values: Sequence[float], seed: int = 0) -> tuple[float, float, float]:
    """Median with a 95% percentile-bootstrap interval over the values (seeded)."""
    x = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    meds = np.median(x[rng.integers(0, len(x), size=(BOOTSTRAP, len(x)))], axis=1)
    lo, hi = np.percentile(meds, [2.5, 97.5])
    return float(np.median(x)), float(lo), float(hi)


def summarise(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """One id's summary over its instances (each instance's numbers averaged over its days)."""
    def per_instance(key: str, of: str = "lp") -> list[float]:
        out = []
        for d in docs:
            num = np.mean([r[of] for r in d["days"]])
            den = np.mean([r[key] for r in d["days"]])
            out.append(float(num / den))
        return out

    stats: dict[str, Any] = {
        "instances": len(docs),
        "days": len(docs[0]["days"]),
        "lp_wait": median_interval([np.mean([r["lp"] for r in d["days"]]) for d in docs]),
        "plan_ratio": median_interval(per_instance("plan")),
        "bound_ratio": median_interval(per_instance("bound")),
        "bound_over_plan": median_interval(per_instance("plan", of="bound")),
    }
    for name in AGENTS:
        stats[f"{name}_ratio"] = median_interval(per_instance(name))
    stats["binding_min"] = float(min(d["capacity_loss"] for d in docs))
    stats["binding_median"] = float(np.median([d["capacity_loss"] for d in docs]))
    stats["stretch_max"] = float(max(d["stretch"] for d in docs))
    stats["bracket_seconds"] = float(np.median([r["seconds"] for d in docs for r in d["days"]]))
    return stats


def _ci(triple: Sequence[float], digits: int = 2) -> str:
    v, lo, hi = triple
    return f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def format_table(summary: dict[str, dict[str, Any]]) -> str:
    """The docs' bracket table: one row per id."""
    head = ("| id | instances × days | LP wait, min | plan | bound | bound / plan | static slack "
            "LP | slack-guided | myopic | capacity loss, min / median | stretch |")
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for env_id, s in summary.items():
        lines.append(
            f"| `{env_id}` | {s['instances']} × {s['days']} | {_ci(s['lp_wait'], 1)} "
            f"| {_ci(s['plan_ratio'])} | {_ci(s['bound_ratio'])} | {_ci(s['bound_over_plan'])} "
            f"| {_ci(s['slack-lp_ratio'])} | {_ci(s['slack-guided_ratio'])} "
            f"| {_ci(s['myopic_ratio'])} | {s['binding_min']:.1%} / {s['binding_median']:.1%} "
            f"| {s['stretch_max']:g} |"
        )
    return "\n".join(lines)


def cost_row(env_id: str, instance: int = 0, day: int = EVAL_SEED_BASE) -> dict[str, Any]:
    """The bracket's CPU cost on one day of an id (no candidate agents)."""
    env = gym.make(env_id, instance_seed=instance).unwrapped
    _ = env.lp_solution  # construction is not the bracket's cost
    b = bracket(env, day)
    return {"env_id": env_id, "n_passengers": env.game.n_passengers, "seconds": b.seconds,
            "plan_ratio": b.plan_ratio, "bound_over_plan": b.bound_wait / b.plan_wait}


def format_cost(rows: list[dict[str, Any]]) -> str:
    """The bracket's cost per day at each flight count."""
    lines = ["| id | passengers | bracket, CPU s per day | plan | bound / plan |",
             "|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| `{r['env_id']}` | {r['n_passengers']:,} | {r['seconds']:.1f} "
                     f"| {r['plan_ratio']:.2f} | {r['bound_over_plan']:.2f} |")
    return "\n".join(lines)


def _range(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.bracket``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bracket", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ids", nargs="+", default=list(DEFAULT_IDS), help="window ids")
    parser.add_argument("--instances", default="0-29", type=_range,
                        help="instance seeds, A-B inclusive (default 0-29)")
    parser.add_argument("--days", type=int, default=5, help="days per instance (default 5)")
    parser.add_argument("--day-base", type=int, default=EVAL_SEED_BASE,
                        help=f"first day seed (default {EVAL_SEED_BASE}, the evaluation days)")
    parser.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bracket",
                        help="results folder (default results/bracket)")
    parser.add_argument("--cost", nargs="*", type=int, default=None, metavar="FLIGHTS",
                        help="also time one day of Window-{N}F-v2 per flight count given, "
                        "into cost.json")
    parser.add_argument("--render-only", action="store_true",
                        help="summarise the cached units only")
    args = parser.parse_args(argv)
    for env_id in args.ids:
        if env_id not in gym.registry:
            parser.error(f"unknown id {env_id!r} (import tsg_envs registers the tsg/ ids)")
    days = list(range(args.day_base, args.day_base + args.days))
    if not args.render_only:
        run_units(args.ids, args.instances, days, args.out, args.workers)
    summary = {}
    for env_id in args.ids:
        docs = [json.loads(unit_path(args.out, env_id, i).read_text(encoding="utf-8"))
                for i in args.instances if unit_path(args.out, env_id, i).exists()]
        if docs:
            summary[env_id] = summarise(docs)
    args.out.mkdir(parents=True, exist_ok=True)
    if summary:
        payload = {"command": "python -m benchmarks.bracket " + " ".join(argv or sys.argv[1:]),
                   "machine": provenance(), "ids": summary, "table": format_table(summary)}
        (args.out / "summary.json").write_text(json.dumps(payload, indent=1) + "\n",
                                               encoding="utf-8")
        print(payload["table"])
    if args.cost:
        rows = [cost_row(f"tsg/Screening-Window-{n}F-v2") for n in args.cost]
        cost = {"command": "python -m benchmarks.bracket --cost " + " ".join(map(str, args.cost)),
                "machine": provenance(), "rows": rows, "table": format_cost(rows)}
        (args.out / "cost.json").write_text(json.dumps(cost, indent=1) + "\n", encoding="utf-8")
        print(cost["table"])
    return 0


if __name__ == "__main__":
    assert tsg_envs  # registers the ids
    raise SystemExit(main())
