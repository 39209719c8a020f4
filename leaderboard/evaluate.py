"""Evaluate one submission on one suite: per-episode SPEC §5 metrics, references, risk, rows.

For every unit (environment id, instance seed) of the suite:

1. ``make_agent(env)`` is called once with the unit's environment (``invalid_action="project"``:
   an infeasible proposal is measured, then α-projected and executed; it never crashes the day).
2. For every arrival seed, one day is rolled out with the agent (through the evaluation harness,
   :func:`tsg_envs.harness.evaluate`) and, on the same instance and day, with the two references:
   the static window LP
   (:class:`tsg_envs.rollout.LPAgent`) and slack-guided (``baselines`` method
   ``"slack-guided"``; when it cannot be loaded, its ratio is null and the row says why).
3. The worst-case risk (:func:`tsg_envs.risk.worst_case_risk`) probes the agent with every
   category on the day of the first arrival seed, at ``suite.risk_max_states`` evenly spaced
   states (the whole day when None).

A failure of the submission (import, ``make_agent``, ``act`` raising, NaN/inf or a wrong shape)
fails its unit with the reason; the remaining units still run and the row is reported as
failed with the first reason. No exception a submission raises (``SystemExit`` included) stops
the run, and a submission never writes another result file. The submission runs sealed in its
own process (:mod:`leaderboard.sealed`), within the time and memory limits of
:class:`~leaderboard.sealed.Limits`: a hang, an exhausted memory or a killed process fails its
unit too. The metrics are deterministic: the same submission and suite give the same
``metrics_digest``, whatever the :class:`~leaderboard.runner.Execution` (workers, backend).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym

import tsg_envs  # noqa: F401  (registers the ids)
from leaderboard.runner import Execution
from leaderboard.sandbox import weakest
from leaderboard.schema import RESULT_KIND, SCHEMA_VERSION, metrics_digest
from leaderboard.sealed import Limits, SealedAgent, isolation
from leaderboard.signing import sign_result
from leaderboard.submission import (
    GuardedAgent,
    LoadedSubmission,
    SubmissionError,
    SubmissionSpec,
    describe_exception,
    describe_submission,
    missing_checkpoints,
)
from leaderboard.suites import Days, Suite
from leaderboard.summary import summarize
from leaderboard.units import make_unit_env
from tsg_envs.harness import EpisodeRecord, Unit
from tsg_envs.harness import evaluate as harness_evaluate
from tsg_envs.provenance import provenance
from tsg_envs.risk import worst_case_risk
from tsg_envs.rollout import Agent, LPAgent

__all__ = [
    "REFERENCE_LP",
    "run_episodes",
    "evaluate_unit",
    "evaluate_submission",
]

#: How the LP reference is described in every result.
REFERENCE_LP = "static window LP (tsg_envs.rollout.LPAgent) with the environment's LP windows"

Tick = Callable[[int], None]

#: Requests of the episodes recorded per unit and replayed in the risk probe's fresh process.
REPLAY_REQUESTS = 64


def _episode_record(rec: EpisodeRecord) -> dict[str, Any]:
    """A result's episode (:data:`leaderboard.schema.SCHEMA`) from the harness's record.

    ``rec`` carries the LP's and (when it could be loaded) slack-guided's mean wait of the same
    day (:meth:`~tsg_envs.harness.EpisodeRecord.with_references`).
    """
    sg_wait = rec.reference_mean_wait.get("slack-guided")
    return {
        "arrival_seed": int(rec.day_seed),
        "mean_wait": float(rec.mean_wait),
        "p95_wait": float(rec.p95_wait),
        "max_wait": float(rec.max_wait),
        "proposed_violations": int(rec.proposed_violations),
        "executed_violations": int(rec.executed_violations),
        "max_violation": float(rec.max_violation),
        "lp_mean_wait": float(rec.reference_mean_wait["lp"]),
        "ratio_vs_lp": rec.ratio("lp"),
        "slack_guided_mean_wait": None if sg_wait is None else float(sg_wait),
        "ratio_vs_slack_guided": rec.ratio("slack-guided"),
    }


def _slack_guided_factory() -> tuple[Callable[[gym.Env], Agent] | None, str]:
    """The slack-guided reference's factory and ``"ok"``, or None and why it is missing."""
    try:
        from baselines.evaluate import REFERENCES

        return REFERENCES["slack-guided"], "ok"
    except Exception as err:  # noqa: BLE001 - a missing optional reference is reported
        return None, describe_exception("slack-guided unavailable", err)


def run_episodes(
    agent: Agent,
    env_id: str,
    instance_seed: int,
    seeds: list[int],
    env_kwargs: dict[str, Any],
    tick: Tick,
) -> tuple[list[dict[str, Any]], str]:
    """Roll ``agent`` out on each day of ``seeds`` beside the LP and slack-guided references.

    One call of the evaluation harness (:func:`tsg_envs.harness.evaluate`) with the agent and
    the references' factories, on the same instance and days. Slack-guided lives in
    ``baselines``; when that cannot be imported its ratio is null and the reason is returned.

    Returns:
        (episode records, ``"ok"`` or the reason slack-guided is missing).
    """
    sg, sg_status = _slack_guided_factory()
    factories: dict[str, Callable[[gym.Env], Agent]] = {"agent": lambda e: agent, "lp": LPAgent}
    if sg is not None:
        factories["slack-guided"] = sg
    unit = Unit.of(env_id, int(instance_seed), **env_kwargs)
    records = harness_evaluate(factories, [unit], seeds)
    by = {(r.agent, r.day_seed): r for r in records}
    out = []
    for seed in seeds:
        refs = {name: by[(name, seed)].mean_wait for name in factories if name != "agent"}
        out.append(_episode_record(by[("agent", seed)].with_references(refs)))
    tick(len(seeds))
    return out, sg_status


def _risk_block(report: Any, env: gym.Env, seed: int, max_states: int | None) -> dict[str, Any]:
    return {
        "risk": float(report.risk),
        "bound": float(report.bound),
        "per_theta": [float(x) for x in report.per_theta],
        "psi": [float(x) for x in env.unwrapped.risk_bound],
        "within_bound": bool(report.within_bound),
        "states_probed": int(report.states_probed),
        "max_states": max_states,
        "arrival_seed": int(seed),
    }


def evaluate_unit(
    spec: SubmissionSpec,
    suite: Suite,
    env_id: str,
    instance_seed: int,
    tick: Tick | None = None,
    limits: Limits | None = None,
    seeds: tuple[int, ...] | None = None,
) -> dict[str, Any]:
    """Evaluate a submission on one (environment id, instance) unit, sealed.

    The submission runs in its own process (:class:`~leaderboard.sealed.SealedAgent`) on its
    own copy of the unit's environment. A file submission's worst-case-risk probe runs in a
    second, fresh process that first replays the episodes' first requests: a different answer
    fails the unit as stateful. (A baseline, our own deterministic code, is probed in the
    process that played the episodes, so a learned one is not trained twice.)

    Args:
        spec: The submission.
        suite: The suite (arrival seeds, risk subsample, training budget, env kwargs).
        env_id: Registered id.
        instance_seed: Game instance.
        tick: Called with 1 after each episode and after the risk probe (progress bar).
        limits: Time and memory limits of the submission's process (default :class:`Limits`).
        seeds: The arrival seeds to play (default: the suite's public days); the risk probe
            plays the first. The submission's process never receives them.

    Returns:
        ``{"unit": <unit record>, "timing": {...}, "slack_guided": <"ok" or reason>,
        "description": <the file's DESCRIPTION>}``; a failure of the submission sets the unit's
        ``status`` to ``"failed"`` with ``error``.
    """
    limits = Limits() if limits is None else limits
    proxies: list[SealedAgent] = []
    try:
        return _evaluate_unit(spec, suite, env_id, instance_seed, tick, limits, proxies,
                              tuple(suite.arrival_seeds) if seeds is None else tuple(seeds))
    finally:
        for proxy in proxies:
            proxy.close()


def _evaluate_unit(
    spec: SubmissionSpec,
    suite: Suite,
    env_id: str,
    instance_seed: int,
    tick: Tick | None,
    limits: Limits,
    proxies: list[SealedAgent],
    day_seeds: tuple[int, ...],
) -> dict[str, Any]:
    tick = tick or (lambda n: None)
    kwargs = suite.kwargs()
    seeds = list(day_seeds)
    t_unit = time.perf_counter()
    unit: dict[str, Any] = {
        "env_id": env_id,
        "instance_seed": int(instance_seed),
        "status": "ok",
        "error": None,
        "n_passengers": None,
        "risk_slack": None,
        "episodes": [],
        "risk": None,
        "lp_risk": None,
    }
    timing: dict[str, Any] = {"env_id": env_id, "instance_seed": int(instance_seed)}
    where = f"{env_id} instance {instance_seed}"

    per_seed = len(seeds) + 1
    n_seeds = 1 if spec.train_seeds is None else len(spec.train_seeds)

    def fail(reason: str, done_ticks: int) -> dict[str, Any]:
        unit["status"] = "failed"
        unit["error"] = reason
        unit["episodes"] = []
        unit["risk"] = None
        tick(per_seed * n_seeds - done_ticks)
        timing["total_s"] = time.perf_counter() - t_unit
        return {"unit": unit, "timing": timing, "slack_guided": "not run", "description": "",
                "isolation": weakest(ran, limits)}

    env = make_unit_env(env_id, instance_seed, kwargs)
    unit["n_passengers"] = int(env.unwrapped.game.n_passengers)
    unit["risk_slack"] = float(env.unwrapped.risk_slack)
    n_teams = int(env.action_space.shape[0])

    train_seeds = list(spec.train_seeds) if spec.train_seeds is not None else [None]
    episodes: list[dict[str, Any]] = []
    risks: list[dict[str, Any]] = []
    sg_status = "not run"
    description = ""
    ran: list[str] = []  # how each of its sandboxes ran
    for k, train_seed in enumerate(train_seeds):
        one = spec if train_seed is None else dataclasses.replace(spec, train_seed=train_seed)
        tag = "" if train_seed is None else f", train seed {train_seed}"
        done = k * (len(seeds) + 1)
        t0 = time.perf_counter()

        def start(record: int, one: SubmissionSpec = one) -> SealedAgent:
            proxy = SealedAgent(one, env_id, int(instance_seed), kwargs,
                                suite.train_gradient_steps, limits, record=record)
            proxies.append(proxy)
            ran.append(proxy.isolation)
            return proxy

        try:
            played = start(REPLAY_REQUESTS if spec.is_file else 0)
            agent = GuardedAgent(played, n_teams)
        except SubmissionError as err:
            return fail(str(err) + ("" if not tag else f" ({where}{tag})"), done)
        timing[f"make_agent_s{tag and '_' + str(train_seed)}"] = time.perf_counter() - t0
        description = played.description

        # Episodes, beside the references on the same days -------------------------------------
        t0 = time.perf_counter()
        agent.episode_names = [f" ({where}, arrival seed {seed}{tag})" for seed in seeds]
        try:
            eps, sg_status = run_episodes(agent, env_id, instance_seed, seeds, kwargs, tick)
        except SubmissionError as err:
            return fail(str(err), done + agent.episodes_started - 1)
        except (Exception, SystemExit) as err:
            return fail(describe_exception("episode failed", err) + agent.where,
                        done + agent.episodes_started - 1)
        if train_seed is not None:
            eps = [{**e, "train_seed": int(train_seed)} for e in eps]
        episodes += eps
        timing["episodes_s"] = timing.get("episodes_s", 0.0) + time.perf_counter() - t0

        t0 = time.perf_counter()
        probe_where = f" ({where}, worst-case risk probe, arrival seed {seeds[0]}{tag})"
        try:
            if spec.is_file:  # a fresh process: the episodes' requests again, then the probe's
                fresh = start(0)
                fresh.replay(played.queries)
                played.close()
                agent = GuardedAgent(fresh, n_teams)
            agent.where = probe_where
            report = worst_case_risk(env, agent, seed=seeds[0], max_states=suite.risk_max_states)
        except SubmissionError as err:
            return fail(str(err), done + len(seeds))
        except (Exception, SystemExit) as err:
            return fail(describe_exception("risk probe failed", err) + agent.where,
                        done + len(seeds))
        block = _risk_block(report, env, seeds[0], suite.risk_max_states)
        if train_seed is not None:
            block["train_seed"] = int(train_seed)
        risks.append(block)
        timing["risk_s"] = timing.get("risk_s", 0.0) + time.perf_counter() - t0
        for proxy in proxies:
            proxy.close()
        proxies.clear()
        tick(1)
    unit["episodes"] = episodes
    # the unit's risk is its worst seed's (every seed's is listed when there are several)
    unit["risk"] = max(risks, key=lambda r: (r["risk"] / r["bound"] if r["bound"] > 0
                                             else r["risk"]))
    if spec.train_seeds is not None:
        unit["risk_per_seed"] = risks
    ref_env = make_unit_env(env_id, instance_seed, kwargs)
    lp_report = worst_case_risk(
        ref_env, LPAgent(ref_env), seed=seeds[0], max_states=suite.risk_max_states
    )
    unit["lp_risk"] = float(lp_report.risk)
    timing["total_s"] = time.perf_counter() - t_unit
    return {"unit": unit, "timing": timing, "slack_guided": sg_status,
            "description": description, "isolation": weakest(ran, limits)}


def _worker_unit(args: tuple[Any, ...]) -> dict[str, Any]:
    spec, suite, env_id, instance_seed, limits, seeds = args
    return evaluate_unit(spec, suite, env_id, instance_seed, limits=limits, seeds=seeds)


def _submission_name(spec: SubmissionSpec) -> str:
    from leaderboard.submission import row_name

    return row_name(spec)


def evaluate_submission(
    spec: SubmissionSpec,
    suite: Suite,
    execution: Execution | None = None,
    days: Days | None = None,
    sign: bool = True,
) -> dict[str, Any]:
    """Evaluate ``spec`` on every unit of ``suite`` and build the result document.

    The submission's code never runs in this process: each unit starts its own sealed process
    (:func:`evaluate_unit`).

    Args:
        spec: The submission.
        suite: The suite.
        execution: Workers, backend, progress bar, the sealed processes' limits and the
            bootstrap's replications (default :class:`~leaderboard.runner.Execution`). The
            per-episode records do not depend on it.
        days: The days every unit plays (:class:`~leaderboard.suites.Days`; default: the
            suite's public days, labelled so; the command line's default is fresh days, drawn
            before any submission's process starts). Recorded in the result's ``days``.
        sign: Sign the result with this machine's key (:mod:`leaderboard.signing`).

    Returns:
        A result document that conforms to :data:`leaderboard.schema.SCHEMA`.
    """
    from tqdm.auto import tqdm

    t_start = time.perf_counter()
    days = Days("public", tuple(suite.arrival_seeds)) if days is None else days
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": RESULT_KIND,
        "submission": {
            "name": _submission_name(spec),
            "kind": "file" if spec.is_file else "baseline",
            "source": spec.source,
            "checkpoint": spec.checkpoint,
            "train_gradient_steps": spec.train_gradient_steps,
            "train_seeds": None if spec.train_seeds is None else list(spec.train_seeds),
            "description": "",
            "fingerprint": "",
            "learned": None,
        },
        "suite": {"name": suite.name, "hash": suite.digest(), "definition": suite.to_dict()},
        "days": days.to_dict(),
        "status": "ok",
        "error": None,
        "track": None,
        "notes": [],
        "references": {"lp": REFERENCE_LP, "slack_guided": "not run"},
        "units": [],
        "aggregate": None,
    }
    run = Execution() if execution is None else execution
    limits = run.limits
    loaded: LoadedSubmission | None = None
    try:
        loaded = describe_submission(spec)
        doc["submission"] = loaded.info()
        missing = missing_checkpoints(spec, suite.units)
        if missing is not None:
            raise SubmissionError(missing)
    except SubmissionError as err:
        doc["status"] = "failed"
        doc["error"] = str(err)
        loaded = None

    timings: list[dict[str, Any]] = []
    if loaded is not None:
        units = suite.units
        n_seeds = 1 if spec.train_seeds is None else len(spec.train_seeds)
        per_unit = n_seeds * (len(days.seeds) + 1)
        bar = tqdm(
            total=len(units) * per_unit,
            desc=f"{doc['submission']['name']} on {suite.name}",
            unit=" ep+probe",
            disable=not run.progress,
        )
        outs = run.map(
            _worker_unit, [(spec, suite, e, i, limits, days.seeds) for e, i in units],
            on_done=lambda: bar.update(per_unit),
            local=lambda a: evaluate_unit(*a[:4], tick=bar.update, limits=a[4], seeds=a[5]),
        )
        bar.close()
        doc["units"] = [o["unit"] for o in outs]
        how = weakest([o.get("isolation") for o in outs], limits)
        described = [o["description"] for o in outs if o.get("description")]
        if spec.is_file and described:
            doc["submission"]["description"] = described[0]
        timings = [o["timing"] for o in outs]
        sg = sorted({o["slack_guided"] for o in outs if o["slack_guided"] != "not run"})
        if sg:
            doc["references"]["slack_guided"] = (
                "baselines slack-guided (same ψ, same days)"
                if sg == ["ok"]
                else "missing: " + "; ".join(s for s in sg if s != "ok")
            )
        failed = [u for u in doc["units"] if u["status"] == "failed"]
        if failed:
            doc["status"] = "failed"
            first = failed[0]
            more = f" (and {len(failed) - 1} more of {len(units)} units)" if len(failed) > 1 else ""
            doc["error"] = f"{first['error']}{more}"
        else:
            doc["aggregate"] = {"reps": run.reps}  # the replications summarize uses
        doc["provenance"] = {**provenance(), "isolation": how}  # the track reads it
        doc.update(summarize(doc))

    doc["metrics_digest"] = metrics_digest(doc)
    doc["provenance"] = doc.pop("provenance", None) or {**provenance(),
                                                        "isolation": isolation(limits)}
    doc["timing"] = {"wall_time_s": time.perf_counter() - t_start, "units": timings}
    return sign_result(doc) if sign else doc
