"""``python -m leaderboard verify RESULT``: evaluate a result's submission again and compare.

Defender and attacker results alike (an attacker's is played again against the same panel).

Nothing in the file is taken on trust (SPEC §7). :func:`verify` first checks the file itself:
its schema and digest, and that its stored summary (aggregate, track and notes; an attacker's
per-defender blocks) is exactly what its own episodes give (:func:`leaderboard.summary.summarize`,
the evaluator's own function): a rewritten aggregate or track fails here, before anything runs.
Then it checks that the suite and the submission (its fingerprint: the file's sha256, or the
baseline name, budget and checkpoint) are unchanged, evaluates again, sealed, on the days the
result recorded (fresh days are replayed from their recorded seeds), and compares all of it:
every unit's per-episode records, risk probe and status (:func:`units_digest`), the days, and
the summary the new episodes give, under the file's isolation and with the file's bootstrap
replications. Records that differ only in roundoff (every number within a relative ``rtol``,
1e-6 by default, of the file's; every count, status, name and track equal) are reproduced too,
and the verdict says how far apart they were: a change of numpy, of the CPU's vector
instructions or of the LP's solver path moves the last bits of a wait without changing any
simulated event.

A match writes a sidecar ``RESULT.verified``: the sha256 of the result's signed content, the
units digest, whether the match was bit for bit, the verifier's provenance, signed with this
machine's key (:mod:`leaderboard.signing`). :func:`is_verified` (used by ``render``) accepts a
row only while that sidecar's signature is valid, by a trusted key, and names the result's
current content: an edited result, a hand-written sidecar or one signed by an unknown machine
never passes as verified.
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
from leaderboard.schema import SchemaError, load_result, read_regular_file
from leaderboard.sealed import isolation
from leaderboard.signing import (
    VERIFICATION_DOMAIN,
    SignatureCheck,
    canonical,
    check_signature,
    sign,
    trusted_keys,
)
from leaderboard.submission import SubmissionError, SubmissionSpec, describe_submission
from leaderboard.suites import days_of, get_suite
from leaderboard.summary import SUMMARY_KEYS, recorded_reps, summarize, summary_differences
from leaderboard.units import describe_attacker

__all__ = [
    "DEFAULT_RTOL",
    "Verification",
    "content_sha",
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


def content_sha(doc: dict[str, Any]) -> str:
    """sha256 of a result's signed content (:func:`leaderboard.signing.canonical`)."""
    return hashlib.sha256(canonical(doc)).hexdigest()


#: Largest verification sidecar read (bytes).
MAX_SIDECAR_BYTES = 2**20


def is_verified(result: str | Path, trusted: dict[str, bytes] | None = None,
                doc: dict[str, Any] | None = None) -> SignatureCheck:
    """Whether ``result`` has a verification, signed by a trusted key, of its current content.

    Args:
        result: The result file.
        trusted: The trusted public keys (default :func:`leaderboard.signing.trusted_keys`).
        doc: The result, already loaded (default: read from ``result``).

    Returns:
        A :class:`~leaderboard.signing.SignatureCheck` (``ok`` false with the reason otherwise).
    """
    result = Path(result)
    trusted = trusted_keys() if trusted is None else trusted
    try:
        record = json.loads(read_regular_file(sidecar_path(result), MAX_SIDECAR_BYTES))
        if not isinstance(record, dict):
            raise ValueError("not an object")
    except FileNotFoundError:
        return SignatureCheck(False, None, "not verified")
    except (OSError, ValueError, RecursionError):
        return SignatureCheck(False, None, "unreadable verification")
    check = check_signature(record, trusted, VERIFICATION_DOMAIN)
    if not check.ok:
        return SignatureCheck(False, check.key_id, f"verification {check.why}")
    try:
        doc = load_result(result) if doc is None else doc
    except SchemaError:
        return SignatureCheck(False, check.key_id, "the result is unreadable")
    if record.get("result_sha256") != content_sha(doc):
        return SignatureCheck(False, check.key_id, "the verification names other content (the "
                              "result was edited or replaced since)")
    return SignatureCheck(True, check.key_id, f"verified, signed by trusted key {check.key_id}")


def verify(result: str | Path, execution: Execution | None = None,
           rtol: float = DEFAULT_RTOL) -> Verification:
    """Check ``result`` and evaluate its submission again; see the module docstring.

    Args:
        result: The result file.
        execution: Workers, backend and the sealed evaluation's limits of the evaluation run
            again (default :class:`~leaderboard.runner.Execution` without a progress bar; its
            ``reps`` are replaced by the file's).
        rtol: The largest relative difference of a number that still reproduces (0: bit for
            bit only).
    """
    run = Execution(progress=False) if execution is None else execution
    if not 0.0 <= rtol < np.inf:
        raise ValueError(f"rtol must be a finite number >= 0, got {rtol!r}")
    path = Path(result)
    try:
        doc = load_result(path)
        problems = summary_differences(doc)
        days = days_of(doc)
    except (SchemaError, ValueError) as err:
        return Verification(path, False, str(err))
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return Verification(path, False, f"the file is inconsistent: {problems[0]}{more}; its "
                            "summary was forged or edited by hand")
    sub = doc["submission"]
    try:
        suite = get_suite(doc["suite"]["name"])
    except ValueError as err:
        return Verification(path, False, str(err))
    if suite.digest() != doc["suite"]["hash"]:
        return Verification(path, False, f"suite {suite.name!r} has changed since (hash "
                            f"{suite.digest()} now, {doc['suite']['hash']} in the result)")
    seeds = sub.get("train_seeds")
    try:
        spec = SubmissionSpec(source=sub["source"], checkpoint=sub["checkpoint"],
                              name=sub["name"], train_gradient_steps=sub["train_gradient_steps"],
                              train_seeds=None if seeds is None else tuple(seeds))
    except ValueError as err:
        return Verification(path, False, f"the submission cannot be loaded: {err}")
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
    stored = {k: doc[k] for k in SUMMARY_KEYS["attacker" if attacker else "defender"]}
    block = doc.get("aggregate") or next(iter((doc.get("defenders") or {}).values()), None)
    run = dataclasses.replace(run, reps=recorded_reps(block))
    try:
        if attacker:
            again = evaluate_attacker(spec, suite, run, panel=tuple(doc["panel"]), days=days,
                                      sign=False)
        else:
            again = evaluate_submission(spec, suite, run, days=days, sign=False)
    except ValueError as err:
        return Verification(path, False, f"cannot be evaluated again: {err}")
    again["provenance"] = {**again["provenance"],
                           "isolation": doc["provenance"].get("isolation")}
    if attacker and not (isinstance(block, dict) and "reps" in block):  # written before reps
        again["defenders"] = {k: {kk: vv for kk, vv in v.items() if kk != "reps"}
                              for k, v in (again["defenders"] or {}).items()}
    summary = summarize(again)
    want, got = units_digest(doc), units_digest(again)
    parts_want = {"suite": doc["suite"]["hash"], "days": days.to_dict(), "units": doc["units"],
                  **stored}
    parts_got = {"suite": again["suite"]["hash"], "days": again["days"],
                 "units": again["units"], **summary}
    diff = 0.0 if want == got and stored == summary else records_difference(parts_want,
                                                                           parts_got)
    if diff is None or diff > rtol:
        first = next((f"{a['env_id']} instance {a['instance_seed']}"
                      for a, b in zip(doc["units"], again["units"], strict=False)
                      if (records_difference(a, b) or np.inf) > rtol), None)
        if first is None:
            first = next((f"the {k}" for k in stored
                          if (records_difference(stored[k], summary[k]) or np.inf) > rtol),
                         "the unit list")
        how = ("" if diff is None else f", numbers up to {diff:.1e} apart (relative; "
               f"--rtol {rtol:g})")
        return Verification(path, False, f"not reproduced: the records differ (first at "
                            f"{first}{how}; digest {got[:12]} now, {want[:12]} in the file)")
    exact = want == got and stored == summary
    record = {
        "result_sha256": content_sha(doc),
        "units_digest": got,
        "days": days.to_dict(),
        "bit_for_bit": exact,
        "max_relative_difference": diff,
        "verified_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "isolation": isolation(run.limits),
        "provenance": again["provenance"],
    }
    record["signature"] = sign(record, VERIFICATION_DOMAIN)
    sidecar_path(path).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    signer = f"; verification signed by key {record['signature']['key_id']}"
    if exact:
        return Verification(path, True, f"reproduced: {len(doc['units'])} units, digest "
                            f"{got[:12]}, aggregate, track and notes equal{signer}")
    return Verification(path, True, f"reproduced: {len(doc['units'])} units, every number within "
                        f"{diff:.1e} (relative) of the file's, not bit for bit (digest "
                        f"{got[:12]} now, {want[:12]} in the file){signer}")
