"""``python -m leaderboard verify RESULT``: evaluate a result's submission again and compare.

Defender and attacker results alike (an attacker's is played again against the same panel).

A result records what produced it: the suite's hash, the submission's fingerprint (the file's
sha256, or the baseline name, budget and checkpoint), package and code versions and whether the
submission's process was isolated. :func:`verify` checks that the suite and the submission are
still the same, evaluates again (sealed, as the evaluator always does) and compares the digest
of the per-episode records (:func:`units_digest`: every unit's episodes, risk and status; the
bootstrap intervals are left out, since they depend on ``--reps``). Records that differ only in
roundoff (every number within a relative ``rtol``, 1e-6 by default, of the file's, every count,
status and name equal) are reproduced too, and the verdict says how far apart they were: a
change of numpy, of the CPU's vector instructions or of the LP's solver path moves the last bits
of a wait without changing any simulated event. A match writes a sidecar
``RESULT.verified`` holding the sha256 of the result file's bytes (and whether the match was
bit for bit); :func:`is_verified` (used by
``render``) accepts a row only while that sidecar matches the file, so an edited or replaced
result never passes as verified.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from leaderboard.attacker import evaluate_attacker
from leaderboard.evaluate import evaluate_submission
from leaderboard.runner import Execution
from leaderboard.schema import SchemaError, load_result
from leaderboard.sealed import isolation
from leaderboard.submission import SubmissionError, SubmissionSpec, describe_submission
from leaderboard.suites import get_suite
from leaderboard.units import describe_attacker

__all__ = [
    "DEFAULT_RTOL",
    "Verification",
    "is_verified",
    "records_difference",
    "sidecar_path",
    "units_digest",
    "verify",
]

#: Largest relative difference of any number in the per-episode records that still reproduces.
DEFAULT_RTOL = 1e-6
#: Numbers this small (a violation of 2e-16, say) are compared absolutely.
_ATOL = 1e-12


@dataclass(frozen=True)
class Verification:
    """The verdict on one result file.

    Attributes:
        path: The result file.
        ok: Whether a fresh evaluation reproduced its per-episode records.
        message: What was compared, or what differed.
    """

    path: Path
    ok: bool
    message: str


def units_digest(doc: dict[str, Any]) -> str:
    """sha256 of the result's per-unit records (episodes, risk, status) and of its suite hash."""
    blob = json.dumps({"suite": doc["suite"]["hash"], "units": doc["units"]}, sort_keys=True,
                      allow_nan=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def records_difference(want: Any, got: Any) -> float | None:
    """The largest relative difference between two records' numbers, or None if they differ else.

    Two records match when they have the same structure (keys, lengths), the same strings,
    booleans, integers and None, and finite floats at the same places; the value is the largest
    ``|a - b| / max(|a|, |b|)`` over floats that differ by more than 1e-12 (0.0 when none does).
    """
    if isinstance(want, dict) and isinstance(got, dict):
        if want.keys() != got.keys():
            return None
        parts = [records_difference(want[k], got[k]) for k in want]
    elif isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return None
        parts = [records_difference(a, b) for a, b in zip(want, got, strict=True)]
    elif isinstance(want, float) and isinstance(got, float):
        if want == got:
            return 0.0
        if abs(want - got) <= _ATOL:
            return 0.0
        return abs(want - got) / max(abs(want), abs(got))
    else:
        return 0.0 if type(want) is type(got) and want == got else None
    return None if any(p is None for p in parts) else max(parts, default=0.0)


def sidecar_path(result: str | Path) -> Path:
    """Where the verification of ``result`` is recorded (``RESULT.verified``)."""
    result = Path(result)
    return result.with_name(result.name + ".verified")


def _file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def is_verified(result: str | Path) -> bool:
    """Whether ``result`` has a verification that matches its current bytes."""
    result = Path(result)
    side = sidecar_path(result)
    try:
        record = json.loads(side.read_text(encoding="utf-8"))
        return bool(record.get("result_sha256") == _file_sha(result))
    except (OSError, ValueError, AttributeError):
        return False


#: Bootstrap replications of the evaluation run again (its intervals are not compared).
VERIFY_REPS = 50


def verify(result: str | Path, execution: Execution | None = None,
           rtol: float = DEFAULT_RTOL) -> Verification:
    """Evaluate ``result``'s submission again; see the module docstring.

    Args:
        result: The result file.
        execution: Workers, backend and the sealed evaluation's limits of the evaluation run
            again (default :class:`~leaderboard.runner.Execution` without a progress bar; its
            ``reps`` are replaced by :data:`VERIFY_REPS`: the intervals are not compared).
        rtol: The largest relative difference of a number that still reproduces (0: bit for
            bit only).
    """
    run = Execution(progress=False) if execution is None else execution
    run = dataclasses.replace(run, reps=VERIFY_REPS)
    limits = run.limits
    if not 0.0 <= rtol < np.inf:
        raise ValueError(f"rtol must be a finite number >= 0, got {rtol!r}")
    path = Path(result)
    try:
        doc = load_result(path)
    except SchemaError as err:
        return Verification(path, False, str(err))
    sub = doc["submission"]
    try:
        suite = get_suite(doc["suite"]["name"])
    except ValueError as err:
        return Verification(path, False, str(err))
    if suite.digest() != doc["suite"]["hash"]:
        return Verification(path, False, f"suite {suite.name!r} has changed since (hash "
                            f"{suite.digest()} now, {doc['suite']['hash']} in the result)")
    seeds = sub.get("train_seeds")
    spec = SubmissionSpec(source=sub["source"], checkpoint=sub["checkpoint"], name=sub["name"],
                          train_gradient_steps=sub["train_gradient_steps"],
                          train_seeds=None if seeds is None else tuple(seeds))
    attacker = doc.get("track") == "attacker"
    try:
        if attacker:
            described = describe_attacker(spec)
        else:
            described = describe_submission(spec)
    except SubmissionError as err:
        return Verification(path, False, f"the submission cannot be loaded: {err}")
    if described.fingerprint != sub["fingerprint"]:
        return Verification(path, False, "the submission has changed since (fingerprint "
                            f"{described.fingerprint[:12]} now, {sub['fingerprint'][:12]} in "
                            "the result)")
    if attacker:
        again = evaluate_attacker(spec, suite, run, cache=path.parent / "panel",
                                  panel=tuple(doc["panel"]))
    else:
        again = evaluate_submission(spec, suite, run)
    want, got = units_digest(doc), units_digest(again)
    diff = 0.0 if want == got else records_difference(
        {"suite": doc["suite"]["hash"], "units": doc["units"]},
        {"suite": again["suite"]["hash"], "units": again["units"]})
    if diff is None or diff > rtol:
        first = next((f"{a['env_id']} instance {a['instance_seed']}"
                      for a, b in zip(doc["units"], again["units"], strict=False)
                      if (records_difference(a, b) or np.inf) > rtol),
                     "the unit list")
        how = ("" if diff is None else f", numbers up to {diff:.1e} apart (relative; "
               f"--rtol {rtol:g})")
        return Verification(path, False, f"not reproduced: the per-episode records differ "
                            f"(first at {first}{how}; digest {got[:12]} now, {want[:12]} in "
                            "the file)")
    record = {
        "result_sha256": _file_sha(path),
        "units_digest": got,
        "bit_for_bit": want == got,
        "max_relative_difference": diff,
        "verified_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "isolation": isolation(limits),
        "provenance": again["provenance"],
    }
    sidecar_path(path).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    if want == got:
        return Verification(path, True,
                            f"reproduced: {len(doc['units'])} units, digest {got[:12]}")
    return Verification(path, True, f"reproduced: {len(doc['units'])} units, every number within "
                        f"{diff:.1e} (relative) of the file's, not bit for bit (digest "
                        f"{got[:12]} now, {want[:12]} in the file)")
