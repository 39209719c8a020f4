"""``python -m leaderboard verify RESULT``: evaluate a result's submission again and compare.

Defender and attacker results alike (an attacker's is played again against the same panel).

A result records what produced it: the suite's hash, the submission's fingerprint (the file's
sha256, or the baseline name, budget and checkpoint), package and code versions and whether the
submission's process was isolated. :func:`verify` checks that the suite and the submission are
still the same, evaluates again (sealed, as the evaluator always does) and compares the digest
of the per-episode records (:func:`units_digest`: every unit's episodes, risk and status; the
bootstrap intervals are left out, since they depend on ``--reps``). A match writes a sidecar
``RESULT.verified`` holding the sha256 of the result file's bytes; :func:`is_verified` (used by
``render``) accepts a row only while that sidecar matches the file, so an edited or replaced
result never passes as verified.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from leaderboard.schema import SchemaError, load_result
from leaderboard.sealed import Limits, isolation
from leaderboard.submission import SubmissionError, SubmissionSpec, describe_submission
from leaderboard.suites import get_suite

__all__ = ["Verification", "is_verified", "sidecar_path", "units_digest", "verify"]


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


def verify(result: str | Path, limits: Limits | None = None, workers: int = 1,
           progress: bool = False) -> Verification:
    """Evaluate ``result``'s submission again; see the module docstring."""
    from leaderboard.evaluate import evaluate_submission

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
            from leaderboard.attacker import describe_attacker

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
        from leaderboard.attacker import evaluate_attacker

        again = evaluate_attacker(spec, suite, workers=workers, progress=progress, reps=50,
                                  limits=limits, cache=path.parent / "panel",
                                  panel=tuple(doc["panel"]))
    else:
        again = evaluate_submission(spec, suite, workers=workers, progress=progress, reps=50,
                                    limits=limits)
    want, got = units_digest(doc), units_digest(again)
    if want != got:
        first = next((f"{a['env_id']} instance {a['instance_seed']}"
                      for a, b in zip(doc["units"], again["units"], strict=False) if a != b),
                     "the unit list")
        return Verification(path, False, f"not reproduced: the per-episode records differ "
                            f"(first at {first}; digest {got[:12]} now, {want[:12]} in the file)")
    record = {
        "result_sha256": _file_sha(path),
        "units_digest": got,
        "verified_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "isolation": isolation(limits),
        "provenance": again["provenance"],
    }
    sidecar_path(path).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return Verification(path, True, f"reproduced: {len(doc['units'])} units, digest {got[:12]}")
