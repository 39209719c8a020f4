"""What a result's episodes say: its aggregate, track and notes, computed from them (SPEC §7).

One function, :func:`summarize`, for everyone who needs a result's summary: the evaluators
(:mod:`leaderboard.evaluate`, :mod:`leaderboard.attacker`) fill a new result with it, and
``render`` and ``verify`` recompute it from the episodes of every result they load, so no stored
aggregate, track or note is ever trusted (:func:`trusted_view` puts the recomputed ones in
place; :func:`summary_differences` says where a file's stored ones differ, which ``verify``
refuses).

The track of a completed defender result is ``"hard"`` when all of these hold, else ``"open"``,
with one note per reason:

* no proposed action outside its polytope;
* the probed worst-case risk within the bound on every unit (``within_bound`` recomputed from
  each unit's per-level risk and ψ);
* the submission ran sealed (``provenance.isolation``, :func:`leaderboard.sandbox.is_unsealed`);
* it played fresh days (:class:`leaderboard.suites.Days`; public or chosen days are labelled).

The board adds one more condition, outside the result: a valid signature by a trusted key
(:mod:`leaderboard.signing`). Before the track, :func:`episode_problems` checks what each
episode derives from its own numbers (the delay ratios are the references' waits over the
agent's, every risk's ``within_bound``): a result whose derived fields disagree is refused.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from leaderboard.aggregate import (
    BOOTSTRAP_REPS,
    MAX_REPS,
    aggregate_defenders,
    aggregate_units,
)
from leaderboard.sandbox import is_unsealed
from leaderboard.suites import days_of
from tsg_envs import FEASIBILITY_TOL
from tsg_envs.harness import delay_ratio

__all__ = ["SUMMARY_KEYS", "cached_summary", "episode_problems", "recorded_reps", "summarize",
           "summary_differences", "trusted_view"]

#: The stored fields :func:`summarize` recomputes, per track.
SUMMARY_KEYS = {"defender": ("aggregate", "track", "notes"),
                "attacker": ("defenders", "notes")}


def recorded_reps(stored: Any) -> int:
    """The bootstrap replications a stored summary block records (the default if none or odd)."""
    reps = stored.get("reps", BOOTSTRAP_REPS) if isinstance(stored, dict) else BOOTSTRAP_REPS
    ok = isinstance(reps, int) and not isinstance(reps, bool) and 1 <= reps <= MAX_REPS
    return reps if ok else BOOTSTRAP_REPS


def _within(risk: dict[str, Any]) -> bool:
    """A unit's risk probe within its bound, from its per-level risks and ψ (not its flag)."""
    per, psi = risk.get("per_theta"), risk.get("psi")
    if per and psi and len(per) == len(psi):
        return bool(np.all(np.asarray(per, dtype=float)
                           <= np.asarray(psi, dtype=float) + FEASIBILITY_TOL))
    return bool(risk["risk"] <= risk["bound"] + FEASIBILITY_TOL * max(1, len(per or ())))


def episode_problems(doc: dict[str, Any]) -> list[str]:
    """What a defender result's episodes and risk blocks derive wrongly from their own numbers.

    Each episode's ``ratio_vs_lp`` must be :func:`~tsg_envs.harness.delay_ratio` of its
    ``lp_mean_wait`` over its ``mean_wait`` (and likewise for slack-guided), and every risk
    block's ``within_bound`` what its per-level risks and ψ give. Empty when all agree.
    """
    if doc.get("track") == "attacker":
        return []
    problems = []
    for unit in doc["units"]:
        where = f"{unit['env_id']} instance {unit['instance_seed']}"
        for ep in unit["episodes"]:
            for key, ref in (("ratio_vs_lp", "lp_mean_wait"),
                             ("ratio_vs_slack_guided", "slack_guided_mean_wait")):
                want = delay_ratio(ep[ref], ep["mean_wait"])
                if ep[key] != want:
                    problems.append(f"{where}, arrival seed {ep['arrival_seed']}: {key} "
                                    f"{ep[key]!r} is not {ref} / mean_wait ({want!r})")
        for risk in [unit.get("risk"), *unit.get("risk_per_seed", [])]:
            if risk is not None and bool(risk["within_bound"]) != _within(risk):
                problems.append(f"{where}: the risk probe's within_bound says "
                                f"{risk['within_bound']}, its per-level risks and psi say "
                                f"{_within(risk)}")
    return problems


def _defender_track(doc: dict[str, Any], agg: dict[str, Any]) -> tuple[str, list[str]]:
    notes: list[str] = []
    hard = True
    if agg["proposed_violations"] > 0:
        hard = False
        notes.append(
            f"infeasible actions: {agg['proposed_violations']} proposed actions violated their "
            f"polytope (max violation {agg['max_violation']:.3g}); the environment α-projected "
            f"them before executing"
        )
    risks = [u["risk"] for u in doc["units"] if u.get("risk") is not None]
    if agg["risk"] is not None and not all(_within(r) for r in risks):
        hard = False
        notes.append(
            f"worst-case risk exceeds the bound: risk / bound up to "
            f"{agg['risk']['max_over_bound']:.4f} (the probe's made-up states include "
            f"infeasible proposals)"
        )
    how = doc.get("provenance", {}).get("isolation")
    if is_unsealed(how):
        hard = False
        notes.append(f"unsealed: the submission ran without the sandbox ({how}); an unsealed "
                     "row never ranks on the hard track")
    days = days_of(doc)
    if days.kind != "fresh":
        hard = False
        notes.append(_days_note(days))
    if agg["ratio_vs_slack_guided"] is None:
        notes.append(f"ratio vs slack-guided unavailable ({doc['references']['slack_guided']})")
    return ("hard" if hard else "open"), notes


def _days_note(days: Any) -> str:
    return (f"{days.label()}: a development row (a submission may know these days in advance); "
            "it never ranks on the hard track (evaluate --days fresh for an official row)")


def summarize(doc: dict[str, Any]) -> dict[str, Any]:
    """The summary fields of a result, computed from its units, provenance and days.

    A defender result gives ``{"aggregate", "track", "notes"}`` (a failed one: ``None``,
    ``None``, ``[]``); an attacker result ``{"defenders", "notes"}``. The bootstrap runs with
    the result's recorded replications (``aggregate.reps``; the default where none is recorded
    or it is out of range), so an honest result's summary comes back bit for bit.
    """
    attacker = doc.get("track") == "attacker"
    days = days_of(doc)
    if attacker:
        if doc["status"] != "ok":
            return {"defenders": None, "notes": []}
        stored = doc.get("defenders") or {}
        first = next(iter(stored.values()), None)
        with_reps = isinstance(first, dict) and "reps" in first
        notes = []
        modes = sorted({u.get("queue_mode") for u in doc["units"]})
        if modes != ["expected"]:
            notes.append("sampled queues on some units: detections are drawn, so a day's gain "
                         "can exceed the best response's expected gain")
        if days.kind != "fresh":
            notes.append(_days_note(days))
        return {"defenders": aggregate_defenders(doc["units"], reps=recorded_reps(first),
                                                 with_reps=with_reps),
                "notes": notes}
    if doc["status"] != "ok":
        return {"aggregate": None, "track": None, "notes": []}
    agg = aggregate_units(doc["units"], reps=recorded_reps(doc.get("aggregate")))
    track, notes = _defender_track(doc, agg)
    return {"aggregate": agg, "track": track, "notes": notes}


_MEMO: dict[str, dict[str, Any]] = {}


def _memo_key(doc: dict[str, Any]) -> str:
    import hashlib

    core = {k: v for k, v in doc.items() if k not in ("signature", "_path", "timing")}
    blob = json.dumps(core, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def cached_summary(doc: dict[str, Any]) -> dict[str, Any]:
    """:func:`summarize`, memoised in this process by the content's sha256 (never on disk)."""
    key = _memo_key(doc)
    if key not in _MEMO:
        _MEMO[key] = summarize(doc)
    return json.loads(json.dumps(_MEMO[key]))  # a fresh copy each time


def summary_differences(doc: dict[str, Any]) -> list[str]:
    """The summary fields whose stored value differs from what the episodes give (empty: none).

    Also lists :func:`episode_problems`.
    """
    fresh = cached_summary(doc)
    diff = [f"stored {key} differs from what its episodes give" for key, value in fresh.items()
            if doc.get(key) != value]
    return diff + episode_problems(doc)


def trusted_view(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with its summary fields replaced by those its episodes give."""
    return {**doc, **cached_summary(doc)}
