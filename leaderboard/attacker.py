"""The attacker track: a submitted attacker against a fixed panel of defenders, sealed.

**Submissions.** A ``.py`` file defining ``make_attacker(env) -> attacker``, where ``env`` is an
:class:`tsg_envs.attacker_env.AttackerEnv` of the unit (its spaces, its ``game`` with the public
schedule, losses and prior, and ``attacker_obs_layout``; stepping it plays against the static
LP, a placeholder: the panel's defenders are never reachable) and ``attacker`` has
``act(obs, info) -> int`` in the duel attacker's action space (0 wait, ``1 + flight·M +
method`` strike) and optionally ``reset(seed)``, called at the start of every day with a seed for
the attacker's own randomness (derived from the day and the level, not the day's arrival seed:
an attacker learns the day only by watching it). The file may define ``NAME`` (read without
running it) and ``DESCRIPTION``. Or a baseline name of
:data:`leaderboard.units.ATTACKER_BASELINES` (the attacker's environment and its loading live in
:mod:`leaderboard.units`, below the sandbox that builds them):

* ``random``: :class:`baselines.attackers.RandomAttacker`.
* ``dqn``: :class:`baselines.dqn_attacker.DQNAttacker`, trained in its own process on each unit
  against the placeholder (the static LP, which is public) for the suite's budget in gradient
  steps (or ``--train-gradient-steps``; ``--checkpoint`` with ``{env}``/``{instance}`` loads one
  per unit instead): a transfer attacker that then faces every panel defender.
* ``best-response``: :class:`baselines.attackers.BestResponseAttacker`, the exact best response
  to each panel defender on each day (it knows the defender and the day: the upper bound, our
  own code, run in the evaluator).

**Protocol.** For every unit of the suite, every panel defender (:data:`PANEL`), every arrival
seed and every attacker level θ (weighted by the prior P_θ), one day of
:class:`tsg_envs.duel.DuelParallelEnv` is played: the attacker's code answers in its own
process (:class:`leaderboard.sealed.SealedAttacker`) until it strikes; the defender (our code)
plays in the evaluator. The day's score is the attacker's gain Σ_θ P_θ g_θ, beside the exact
best response's Σ_θ P_θ g*_θ on the same day (:func:`tsg_envs.risk.worst_case_risk` over the
states the attacker can reach), and their ratio, the **fraction of the best response**. In
expected queue mode gains are deterministic and the fraction is at most 1.

**The panel.** The static window LP, slack-guided (frozen at μ = 1 min), the centre policy and
α-DDPG. α-DDPG's checkpoints are committed per unit of the micro, demo and quick suites under
``results/attacker_panel/alpha-ddpg/`` (trained at the paper's budget, 10,000 gradient steps,
seed 0; ``python -m leaderboard panel --suite S`` retrains them and rewrites their committed
hashes, ``leaderboard/panel_checkpoints.json``). Nothing else is loaded: each checkpoint is checked
against its committed sha256 before it is read (safetensors: tensors only, never code)
(:func:`panel_checkpoint`), and a suite with a unit that has none cannot face α-DDPG (its panel
must leave it out) until its checkpoints are trained and committed.

**Aggregation.** Per defender, the (days, units) matrices of the gain, the best response's gain
and the fraction get rliable's IQM and mean with 95% stratified-bootstrap intervals
(:func:`leaderboard.aggregate.iqm_interval`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import tsg_envs  # noqa: F401  (registers the ids)
from leaderboard.aggregate import aggregate_defenders  # noqa: F401  (re-exported)
from leaderboard.runner import Execution
from leaderboard.schema import RESULT_KIND, SCHEMA_VERSION, metrics_digest
from leaderboard.sealed import Limits, SealedAttacker, isolation
from leaderboard.signing import sign_result
from leaderboard.submission import (
    LoadedSubmission,
    SubmissionError,
    SubmissionSpec,
    describe_exception,
    missing_checkpoints,
    read_bounded,
    row_name,
    sha256_file,
)
from leaderboard.suites import Days, Suite
from leaderboard.summary import summarize
from leaderboard.units import describe_attacker, duel_kwargs
from tsg_envs.duel import ATTACKER, DEFENDER, WAIT, DuelParallelEnv
from tsg_envs.provenance import provenance
from tsg_envs.rollout import Agent, LPAgent

__all__ = [
    "PANEL",
    "PANEL_DIR",
    "PANEL_GRADIENT_STEPS",
    "PANEL_MANIFEST",
    "attacker_seed",
    "missing_panel",
    "panel_checkpoint",
    "panel_hashes",
    "write_panel_manifest",
    "panel_defender",
    "evaluate_attacker_unit",
    "evaluate_attacker",
]

#: The defenders every attacker faces, in table order, with one line each.
PANEL: dict[str, str] = {
    "lp": "static window LP (tsg_envs.rollout.LPAgent)",
    "slack-guided": "slack-guided LP, frozen at mu = 1 min (baselines slack-guided)",
    "centre": "centre of the risk polytope, ignores the queues (baselines centre)",
    "alpha-ddpg": "alpha-projected DDPG, 10,000 gradient steps, seed 0 (baselines alpha-ddpg)",
}

#: Committed α-DDPG checkpoints of the panel: ``alpha-ddpg/{env}_i{instance}.safetensors``.
PANEL_DIR: Path = Path(__file__).resolve().parent.parent / "results" / "attacker_panel"
#: The committed sha256 of every panel checkpoint (package data): nothing else is loaded.
PANEL_MANIFEST: Path = Path(__file__).resolve().parent / "panel_checkpoints.json"
#: Largest panel checkpoint read (bytes).
MAX_CHECKPOINT_BYTES = 256 * 2**20
#: The panel's α-DDPG training budget: the paper's 10,000 gradient steps (mini-batches).
PANEL_GRADIENT_STEPS: int = 10_000
#: Entropy word of the attackers' per-day seeds.
_ATTACKER_STREAM = 0xA77AC


def attacker_seed(arrival_seed: int, theta: int) -> int:
    """The seed given to ``reset`` of an attacker on day ``arrival_seed`` at level ``theta``."""
    seq = np.random.SeedSequence([int(arrival_seed), int(theta), _ATTACKER_STREAM])
    return int(seq.generate_state(1)[0])


# The panel ------------------------------------------------------------------------------------
def _panel_name(env_id: str, instance_seed: int) -> str:
    return f"{env_id.replace('/', '_')}_i{int(instance_seed)}.safetensors"


def panel_hashes() -> dict[str, str]:
    """The committed panel checkpoints' sha256, by file name (:data:`PANEL_MANIFEST`)."""
    import json

    if not PANEL_MANIFEST.is_file():
        return {}
    data = json.loads(PANEL_MANIFEST.read_text(encoding="utf-8"))
    return {name: entry["sha256"] for name, entry in data.get("alpha-ddpg", {}).items()}


def missing_panel(units: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The units of ``units`` that have no committed α-DDPG panel checkpoint."""
    hashes = panel_hashes()
    return [(e, i) for e, i in units if _panel_name(e, i) not in hashes]


def panel_checkpoint(env_id: str, instance_seed: int) -> Path:
    """α-DDPG's committed checkpoint for a unit, after checking it against its committed hash.

    The panel's checkpoints come only from the package's committed files
    (``results/attacker_panel/alpha-ddpg/``), each checked against the sha256 that
    :data:`PANEL_MANIFEST` (package data, beside this module) holds for it before anything loads
    it, and then read as safetensors (tensors only): nothing from a results folder or
    a submission is ever unpickled (SPEC §7). A unit without one is not played against α-DDPG:
    ``python -m leaderboard panel --suite S`` trains and commits them (maintainers).

    Raises:
        ValueError: no committed checkpoint for the unit, or its bytes do not match the hash.
    """
    import hashlib

    name = _panel_name(env_id, instance_seed)
    want = panel_hashes().get(name)
    path = PANEL_DIR / "alpha-ddpg" / name
    if want is None:
        raise ValueError(f"no committed alpha-DDPG panel checkpoint for {env_id} instance "
                         f"{instance_seed} (python -m leaderboard panel --suite S trains and "
                         "commits them)")
    try:
        got = hashlib.sha256(read_bounded(path, MAX_CHECKPOINT_BYTES)).hexdigest()
    except SubmissionError as err:
        raise ValueError(f"panel checkpoint {path}: {err}") from None
    if got != want:
        raise ValueError(f"panel checkpoint {path} does not match its committed sha256 "
                         f"({got[:12]} now, {want[:12]} committed): refusing to load it")
    return path


def train_panel_checkpoint(env_id: str, instance_seed: int, target: Path,
                           progress: bool = False) -> Path:
    """Train the panel's α-DDPG on one unit and write its returned weights to ``target``."""
    import shutil
    import tempfile

    from baselines.api import RunConfig, get_method

    method = get_method("alpha-ddpg")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tsg-panel-") as tmp:
        run = RunConfig(algo="alpha-ddpg", env_id=env_id, gradient_steps=PANEL_GRADIENT_STEPS,
                        seed=0, out=Path(tmp), instance_seed=int(instance_seed),
                        progress=progress)
        method.train(run)
        part = target.with_name(target.name + ".part")
        shutil.copyfile(Path(tmp) / "best.safetensors", part)
        part.replace(target)
    return target


def write_panel_manifest() -> Path:
    """Write :data:`PANEL_MANIFEST`: every panel checkpoint under ``PANEL_DIR`` and its sha256.

    Run by ``python -m leaderboard panel``; commit the two together.
    """
    import json

    files = sorted((PANEL_DIR / "alpha-ddpg").glob("*.safetensors"))
    entries = {}
    for path in files:
        stem = path.stem
        env, _, inst = stem.rpartition("_i")
        entries[path.name] = {"env_id": env.replace("_", "/", 1), "instance_seed": int(inst),
                              "gradient_steps": PANEL_GRADIENT_STEPS, "seed": 0,
                              "sha256": sha256_file(path)}
    out = PANEL_MANIFEST
    out.write_text(json.dumps({
        "what": "alpha-DDPG checkpoints of the attacker track's panel (weights train returned)",
        "command": "python -m leaderboard panel --suite micro --suite demo --suite quick --force",
        "alpha-ddpg": entries,
    }, indent=1) + "\n", encoding="utf-8")
    return out


def panel_defender(name: str, screening: Any, env_id: str, instance_seed: int
                   ) -> tuple[Agent, str]:
    """Build panel defender ``name`` on the duel's ``screening`` env; returns (agent, what).

    ``what`` names what was built (for α-DDPG, the checkpoint's sha256), so a result records
    the exact panel it faced.
    """
    if name == "lp":
        return LPAgent(screening), "LPAgent"
    if name == "slack-guided":
        from baselines.evaluate import REFERENCES

        return REFERENCES["slack-guided"](screening), "slack-guided mu=1"
    if name == "centre":
        from baselines.centre import make_agent

        return make_agent(screening), "centre"
    if name == "alpha-ddpg":
        from baselines.api import get_method

        path = panel_checkpoint(env_id, instance_seed)
        return get_method("alpha-ddpg").load(path, screening), f"sha256:{sha256_file(path)}"
    raise ValueError(f"unknown panel defender {name!r}; the panel is {', '.join(PANEL)}")


# Playing --------------------------------------------------------------------------------------
def _play(duel: DuelParallelEnv, attacker: Any, defender: Agent, seed: int, theta: int,
          reset_seed: int | None) -> dict[str, Any]:
    """One day at level ``theta``, played until the attacker is screened or the day ends."""
    obs, infos = duel.reset(seed=int(seed), options={"attacker_theta": int(theta)})
    if hasattr(attacker, "reset"):
        attacker.reset(reset_seed)
    if hasattr(defender, "reset"):
        defender.reset()
    gain = 0.0
    step, strike_step = 0, -1
    while duel.agents and not duel.screened:
        if duel.struck:
            a = WAIT
        else:
            a = attacker.act(obs[ATTACKER], infos[ATTACKER])
            try:
                duel.check_action(ATTACKER, a)
            except (TypeError, ValueError) as err:
                raise SubmissionError(f"invalid attack at step {step} (arrival seed {seed}, "
                                      f"level {theta}): {err}") from None
        d = defender.act(obs[DEFENDER], infos[DEFENDER])
        obs, rewards, _, _, infos = duel.step({ATTACKER: a, DEFENDER: d})
        gain += float(rewards[ATTACKER])
        if duel.attacker_waiting:
            strike_step = int(duel.screening.day.index)
        step += 1
    info = infos[ATTACKER]
    return {"gain": gain, "struck": bool(info["struck"]), "strike_step": strike_step,
            "flight": int(info["flight"]), "method": int(info["method"])}


def _fraction(gain: float, best: float) -> float | None:
    return gain / best if best > 0 else None


def evaluate_attacker_unit(
    spec: SubmissionSpec,
    suite: Suite,
    env_id: str,
    instance_seed: int,
    tick: Callable[[int], None] | None = None,
    limits: Limits | None = None,
    panel: tuple[str, ...] = tuple(PANEL),
    seeds: tuple[int, ...] | None = None,
) -> dict[str, Any]:
    """Play the attacker against every panel defender on one unit (see the module doc).

    Returns:
        ``{"unit": <unit record>, "timing": {...}, "description": <the file's DESCRIPTION>}``;
        a failure of the attacker sets the unit's ``status`` to ``"failed"`` with ``error``.
    """
    tick = tick or (lambda n: None)
    limits = Limits() if limits is None else limits
    kwargs = suite.kwargs()
    dkw = duel_kwargs(env_id, instance_seed, kwargs)
    seeds = list(suite.arrival_seeds if seeds is None else seeds)
    t_unit = time.perf_counter()
    duel = DuelParallelEnv(**dkw)
    game = duel.game
    prior = np.asarray(game.attacker_prior, dtype=float)
    unit: dict[str, Any] = {
        "env_id": env_id, "instance_seed": int(instance_seed), "status": "ok", "error": None,
        "n_passengers": int(game.n_passengers), "queue_mode": str(duel.queue_mode),
        "prior": [float(p) for p in prior], "panel": {}, "defenders": {},
    }
    timing: dict[str, Any] = {"env_id": env_id, "instance_seed": int(instance_seed)}
    proxy: SealedAttacker | None = None
    description = ""
    done = 0
    try:
        if spec.source != "best-response" or spec.is_file:
            t0 = time.perf_counter()
            proxy = SealedAttacker(spec, env_id, int(instance_seed), kwargs,
                                   suite.train_gradient_steps, limits)
            description = proxy.description
            timing["make_attacker_s"] = time.perf_counter() - t0
        from baselines.attackers import BestResponseAttacker

        for name in panel:
            t0 = time.perf_counter()
            defender, what = panel_defender(name, duel.screening, env_id, instance_seed)
            unit["panel"][name] = what
            best = BestResponseAttacker(defender, **dkw)
            attacker = best if proxy is None else proxy
            episodes = []
            for seed in seeds:
                report = best.plan(int(seed))
                rows = [_play(duel, attacker, defender, seed, theta,
                              int(seed) if proxy is None else attacker_seed(seed, theta))
                        for theta in range(game.n_risk_levels)]
                got = np.array([r["gain"] for r in rows])
                opt = np.asarray(report.best_gain, dtype=float)
                gain, best_gain = float(got @ prior), float(opt @ prior)
                episodes.append({
                    "arrival_seed": int(seed),
                    "gain": gain,
                    "best_response_gain": best_gain,
                    "fraction_of_best_response": _fraction(gain, best_gain),
                    "per_theta_gain": [float(x) for x in got],
                    "per_theta_best": [float(x) for x in opt],
                    "strike_step": [r["strike_step"] for r in rows],
                    "flight": [r["flight"] for r in rows],
                    "method": [r["method"] for r in rows],
                })
                tick(1)
                done += 1
            unit["defenders"][name] = {"episodes": episodes}
            timing[f"{name}_s"] = time.perf_counter() - t0
    except SubmissionError as err:
        unit.update(status="failed", error=str(err), defenders={})
    except (Exception, SystemExit) as err:  # noqa: BLE001 - the run goes on
        unit.update(status="failed", error=describe_exception("duel failed", err), defenders={})
    finally:
        if proxy is not None:
            proxy.close()
    tick(len(panel) * len(seeds) - done)
    timing["total_s"] = time.perf_counter() - t_unit
    return {"unit": unit, "timing": timing, "description": description}


def _worker(args: tuple[Any, ...]) -> dict[str, Any]:
    spec, suite, env_id, instance_seed, limits, panel, seeds = args
    return evaluate_attacker_unit(spec, suite, env_id, instance_seed, limits=limits, panel=panel,
                                  seeds=seeds)


def evaluate_attacker(
    spec: SubmissionSpec,
    suite: Suite,
    execution: Execution | None = None,
    panel: tuple[str, ...] | None = None,
    days: Days | None = None,
    sign: bool = True,
) -> dict[str, Any]:
    """Evaluate an attacker on every unit of ``suite`` against the panel; the result document.

    Args:
        spec: The attacker (file or :data:`leaderboard.units.ATTACKER_BASELINES` name).
        suite: The suite.
        execution: Workers, backend, progress bar, the attacker's processes' limits and the
            bootstrap's replications (default :class:`~leaderboard.runner.Execution`).
        panel: A subset of :data:`PANEL` (None: all of it; the board uses all of it).
        days: The days played (default: the suite's public days; see
            :func:`leaderboard.evaluate.evaluate_submission`).
        sign: Sign the result with this machine's key (:mod:`leaderboard.signing`).

    Raises:
        ValueError: ``panel`` is not a subset of :data:`PANEL`, or α-DDPG is in it and a unit
            has no committed checkpoint (:func:`missing_panel`).
    """
    from tqdm.auto import tqdm

    run = Execution() if execution is None else execution
    progress = run.progress
    panel = tuple(PANEL) if panel is None else tuple(panel)
    unknown = [p for p in panel if p not in PANEL]
    if unknown or not panel:
        raise ValueError(f"panel must be a non-empty subset of {', '.join(PANEL)}, got {panel}")
    missing = missing_panel(suite.units) if "alpha-ddpg" in panel else []
    if missing:
        raise ValueError(f"no committed alpha-DDPG panel checkpoint for {len(missing)} units of "
                         f"suite {suite.name!r} (first {missing[0][0]} instance {missing[0][1]})"
                         f"; python -m leaderboard panel --suite {suite.name} trains them")
    days = Days("public", tuple(suite.arrival_seeds)) if days is None else days
    t_start = time.perf_counter()
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": RESULT_KIND,
        "track": "attacker",
        "submission": {
            "name": row_name(spec), "kind": "file" if spec.is_file else "baseline",
            "source": spec.source, "checkpoint": spec.checkpoint,
            "train_gradient_steps": spec.train_gradient_steps, "description": "",
            "fingerprint": "", "learned": None,
        },
        "suite": {"name": suite.name, "hash": suite.digest(), "definition": suite.to_dict()},
        "days": days.to_dict(),
        "status": "ok",
        "error": None,
        "notes": [],
        "panel": {p: PANEL[p] for p in panel},
        "units": [],
        "defenders": None,
    }
    limits = run.limits
    loaded: LoadedSubmission | None = None
    try:
        loaded = describe_attacker(spec)
        doc["submission"] = loaded.info()
        missing = missing_checkpoints(spec, suite.units, need_file=True)
        if missing is not None:
            raise SubmissionError(missing)
    except SubmissionError as err:
        doc["status"], doc["error"] = "failed", str(err)
        loaded = None
    timings: list[dict[str, Any]] = []
    if loaded is not None:
        units = suite.units
        per_unit = len(panel) * len(days.seeds)
        bar = tqdm(total=len(units) * per_unit, desc=f"{doc['submission']['name']} (attacker) "
                   f"on {suite.name}", unit=" day", disable=not progress)
        outs = run.map(_worker, [(spec, suite, e, i, limits, panel, days.seeds)
                                 for e, i in units],
                       on_done=lambda: bar.update(per_unit),
                       local=lambda a: evaluate_attacker_unit(*a[:4], tick=bar.update,
                                                              limits=a[4], panel=a[5],
                                                              seeds=a[6]))
        bar.close()
        doc["units"] = [o["unit"] for o in outs]
        described = [o["description"] for o in outs if o.get("description")]
        if spec.is_file and described:
            doc["submission"]["description"] = described[0]
        timings = [o["timing"] for o in outs]
        failed = [u for u in doc["units"] if u["status"] == "failed"]
        if failed:
            more = f" (and {len(failed) - 1} more of {len(units)} units)" if len(failed) > 1 else ""
            doc["status"], doc["error"] = "failed", f"{failed[0]['error']}{more}"
        else:
            doc["defenders"] = {"_": {"reps": run.reps}}  # the replications summarize uses
    doc.update(summarize(doc))
    doc["metrics_digest"] = metrics_digest(doc)
    doc["provenance"] = {**provenance(), "isolation": isolation(limits)}
    doc["timing"] = {"wall_time_s": time.perf_counter() - t_start, "units": timings}
    return sign_result(doc) if sign else doc
