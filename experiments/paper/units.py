"""One (experiment, point, instance) unit: its computation, its cache key and its file.

:func:`paper_unit` computes a unit (the set-up, α-DDPG's training when asked, every agent's
days through the one evaluation harness, :func:`tsg_envs.harness.evaluate`); :func:`unit_key`
is the sha256 of everything the unit depends on (the configuration's fields that reach it, never
a module's name or the code's location), so a cached unit is reused, wherever the code lives,
while its key matches; :func:`unit_path` is where it is cached, ``OUT/units/FIG/SLUG/iN.json``.
"""

from __future__ import annotations

import csv
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import tsg_envs  # noqa: F401  (registers the ids)
from baselines.api import build_agent
from experiments.paper.config import BASE_ID, PaperConfig, Setting, agent_names
from tsg_envs.harness import Unit, delay_ratio
from tsg_envs.harness import evaluate as harness_evaluate
from tsg_envs.provenance import provenance
from tsg_envs.rollout import Agent
from tsg_envs.seeds import LEADERBOARD_SEED_BASE

__all__ = [
    "UNIT_VERSION",
    "UNRECORDED",
    "unit_key",
    "unit_kwargs",
    "train_path",
    "paper_unit",
    "unit_path",
    "load_unit",
    "save_unit",
    "unit_seconds",
    "unit_machine",
    "read_curves",
]


#: Version of a paper unit's content; part of every unit's key.
UNIT_VERSION = 1


def unit_kwargs(setting: Setting, inst: int) -> dict[str, Any]:
    """The setting's ``gym.make`` kwargs for one instance (ψ scaled for experiment 2)."""
    kwargs = dict(setting.kwargs)
    if setting.risk_scale is not None:
        base = gym.make(BASE_ID, instance_seed=inst, **kwargs)
        psi = base.unwrapped.lp_solution.psi * setting.risk_scale
        kwargs["risk_bound"] = [float(x) for x in psi]
    return kwargs


def unit_key(cfg: PaperConfig, setting: Setting, inst: int) -> str:
    """sha256 (16 hex) of what one (point, instance) unit computes: reuse it only if equal."""
    import hashlib
    import json

    blob = json.dumps({
        "version": UNIT_VERSION, "base": BASE_ID, "slug": setting.slug, "x": setting.x,
        "kwargs": setting.kwargs, "risk_scale": setting.risk_scale, "instance": int(inst),
        "days": cfg.days, "agents": agent_names(cfg),
        "adaptive_checkpoint": cfg.adaptive_checkpoint,
        "adaptive_gradient_steps": cfg.adaptive_gradient_steps,
    }, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def train_path(cfg: PaperConfig, setting: Setting, inst: int) -> Path:
    """The unit's α-DDPG run folder, ``TRAIN_DIR/SLUG/iINSTANCE-KEY``.

    Named by the unit's key, so that a run of another protocol or budget (a ``--quick`` or
    ``--gradient-steps`` run, say) never mixes with this unit's.
    """
    return Path(cfg.train_dir) / setting.slug / f"i{inst}-{unit_key(cfg, setting, inst)}"


def _train_adaptive(cfg: PaperConfig, setting: Setting, inst: int,
                    kwargs: dict[str, Any]) -> tuple[Agent, float]:
    """α-DDPG trained on the unit from scratch; (agent, training seconds).

    The unit's run folder is emptied first: a training interrupted with its unit starts again
    rather than resume, so every unit is one uninterrupted training (a resume without the
    replay buffer trains differently, and checkpoints with it take gigabytes per unit). The
    finished run stays (its checkpoint, ``best.safetensors`` and learning curve).
    """
    import shutil

    from baselines.api import RunConfig, get_method

    out = train_path(cfg, setting, inst)
    shutil.rmtree(out, ignore_errors=True)
    run = RunConfig(algo="alpha-ddpg", env_id=BASE_ID,
                    gradient_steps=int(cfg.adaptive_gradient_steps or 0), seed=0,
                    out=out, instance_seed=inst,
                    env_kwargs={k: (np.asarray(v) if k == "risk_bound" else v)
                                for k, v in kwargs.items()},
                    progress=False)
    t = time.perf_counter()
    agent = get_method("alpha-ddpg").train(run)
    return agent, time.perf_counter() - t


def _training_curve(cfg: PaperConfig, setting: Setting, inst: int) -> list[list[float | None]]:
    """The unit's α-DDPG learning curve, ``[gradient steps, wall s, actor loss or None]`` rows.

    ``wall_s`` counts the training's own time across resumptions (it is saved in every
    checkpoint), so the curve is the same whether the run was trained at once or in chunks.
    """
    path = train_path(cfg, setting, inst) / "curve.csv"
    out: list[list[float | None]] = []
    for r in read_curves([path]):
        loss = r.get("actor_loss")
        out.append([float(r["gradient_steps"]), float(r["wall_s"]),
                    float(loss) if loss not in (None, "") else None])
    out.sort(key=lambda row: (row[0], row[1]))
    return out


def paper_unit(args: tuple[PaperConfig, Setting, int]) -> dict[str, Any]:
    """One (point, instance) unit: the LP and every agent on every day; its rows and timings.

    A module-level function of one picklable argument (local workers and Ray tasks run it).
    """
    cfg, setting, inst = args
    names = ["lp", *agent_names(cfg)]
    t0 = time.perf_counter()
    kwargs = unit_kwargs(setting, inst)
    env_kwargs = {k: (np.asarray(v) if k == "risk_bound" else v) for k, v in kwargs.items()}
    env = gym.make(BASE_ID, instance_seed=inst, **env_kwargs)
    agents: dict[str, Agent] = {}
    missing: dict[str, str] = {}
    train_s = None
    for name in names:
        try:
            if name == "alpha-ddpg" and cfg.adaptive_gradient_steps is not None:
                agents[name], train_s = _train_adaptive(cfg, setting, inst, kwargs)
                continue
            ckpt = None
            if name == "alpha-ddpg" and cfg.adaptive_checkpoint:
                ckpt = cfg.adaptive_checkpoint.format(env=setting.slug, instance=inst)
            agents[name] = build_agent(name, env, ckpt)
        except RuntimeError as err:
            missing.setdefault(name, str(err))
    setup = time.perf_counter() - t0 - (train_s or 0.0)
    curve = None
    if "alpha-ddpg" in agents and cfg.adaptive_gradient_steps is not None:
        curve = _training_curve(cfg, setting, inst)
        if curve:  # the training's own wall time, also when it was resumed or already done
            train_s = max(row[1] for row in curve)
    t0 = time.perf_counter()
    seeds = [LEADERBOARD_SEED_BASE + d for d in range(cfg.days)]
    unit = Unit.of(BASE_ID, inst, **env_kwargs)
    factories = {name: (lambda e, a=a: a) for name, a in agents.items()}
    waits = {(r.agent, r.day_seed): r.mean_wait
             for r in harness_evaluate(factories, [unit], seeds)}
    rows = []
    for seed in seeds:
        lp_wait = waits[("lp", seed)]
        for name in agents:
            w = waits[(name, seed)]
            ratio = delay_ratio(lp_wait, w)
            rows.append({"x": setting.x, "setting": setting.slug, "agent": name,
                         "instance_seed": inst, "arrival_seed": seed, "mean_wait": w,
                         "lp_mean_wait": lp_wait,
                         "ratio_vs_lp": None if ratio is None else ratio})
    return {"key": unit_key(cfg, setting, inst), "slug": setting.slug, "instance_seed": inst,
            "rows": rows, "missing": missing, "setup_s": setup,
            "rolling_s": time.perf_counter() - t0, "n_days": len(seeds),
            "passengers": int(env.unwrapped.game.n_passengers), "train_s": train_s,
            "curve": curve, "provenance": provenance()}


def unit_path(out: Path, fig: str, setting: Setting, inst: int) -> Path:
    """Where a unit's result is cached: ``OUT/units/FIG/SLUG/iINSTANCE.json``."""
    return Path(out) / "units" / fig / setting.slug / f"i{inst}.json"


def load_unit(path: Path, key: str) -> dict[str, Any] | None:
    """The unit cached at ``path`` if its key is ``key``, else None (missing or stale)."""
    import json

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("key") == key else None


def save_unit(path: Path, doc: dict[str, Any]) -> None:
    """Write a unit to ``path`` atomically (a temporary file, then a rename)."""
    import json
    import os
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)


def unit_seconds(unit: dict[str, Any]) -> float:
    """A unit's process time: set-up, training and rollouts."""
    return unit["setup_s"] + unit["rolling_s"] + (unit.get("train_s") or 0.0)


#: How the summary names the machine of units that did not record theirs.
UNRECORDED = "machine not recorded"


def unit_machine(unit: dict[str, Any]) -> str:
    """The machine a unit was computed on, ``CPU model (N CPUs)``, for grouping its timings."""
    prov = unit.get("provenance")
    if not isinstance(prov, dict):
        return UNRECORDED
    hw = prov.get("hardware") or {}
    return f"{hw.get('processor') or 'unknown CPU'} ({hw.get('cpu_count')} CPUs)"


def read_curves(files: list[Path]) -> list[dict[str, Any]]:
    """Rows of the baselines' learning-curve CSVs with a ``gradient_steps`` column.

    Curves written before the budget was counted in gradient steps (only ``step``, environment
    steps) are skipped: their x axis is not the paper's mini-batches.
    """
    rows = []
    for path in files:
        if path.suffix != ".csv":
            continue
        try:
            with path.open() as f:
                for r in csv.DictReader(f):
                    if r.get("gradient_steps") not in (None, "") and "wall_s" in r:
                        r["_file"] = str(path)
                        rows.append(r)
        except (OSError, csv.Error, UnicodeDecodeError):
            continue
    return rows
