"""The versioned JSON format of a leaderboard result: schema, provenance, load and save.

A result file holds one submission evaluated on one suite. Its top-level keys:

| key | meaning |
|---|---|
| ``schema_version`` | :data:`SCHEMA_VERSION`; bumped on any incompatible change |
| ``kind`` | the constant ``"tsg-envs leaderboard result"`` |
| ``submission`` | name, kind (file / baseline), source, checkpoint, fingerprint (sha256) |
| ``suite`` | name, hash (:meth:`Suite.digest`) and the full definition |
| ``days`` | ``kind`` (fresh / public / chosen) and the arrival ``seeds`` played |
| ``status`` | ``"ok"`` or ``"failed"``; ``error`` holds the reason of a failed row |
| ``track`` | ``"hard"`` (no proposed violation, risk within bound), ``"open"``, or null; |
|  | ``"attacker"`` for an attacker's result (:data:`ATTACKER_SCHEMA`) |
| ``notes`` | lines shown beside the row (violations, missing references) |
| ``units`` | per (id, instance): status, error, risk probe, per-episode metrics |
| ``aggregate`` | IQM / mean with 95% intervals (:mod:`leaderboard.aggregate`), or null |
| ``metrics_digest`` | sha256 of everything above except timings: equal digests = same result |
| ``provenance`` | package versions, Python, platform, hardware, git commit, UTC time |
| ``timing`` | wall time of the whole run and per unit (not part of the digest) |
| ``signature`` | Ed25519 signature of everything else (:mod:`leaderboard.signing`) |

The summary fields (``aggregate``, ``track``, ``notes``; an attacker's ``defenders``) are what
the evaluator computed; ``render`` and ``verify`` never trust them, but recompute them from the
units (:mod:`leaderboard.summary`).

:data:`SCHEMA` is the JSON Schema (draft 2020-12 subset) of that layout;
:func:`validate` checks a document against it (the subset of keywords used here: ``type``,
``required``, ``properties``, ``additionalProperties``, ``items``, ``enum``, ``const``,
``minimum``), and :func:`load_result` refuses a file that does not conform.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from tsg_envs.provenance import provenance

__all__ = [
    "SCHEMA_VERSION",
    "RESULT_KIND",
    "SCHEMA",
    "ATTACKER_SCHEMA",
    "SchemaError",
    "ResultExistsError",
    "validate",
    "metrics_digest",
    "provenance",
    "load_result",
    "save_result",
    "result_filename",
    "read_regular_file",
    "MAX_RESULT_BYTES",
]

#: Version of the result layout.
SCHEMA_VERSION: int = 1
#: The ``kind`` constant of every result file.
RESULT_KIND: str = "tsg-envs leaderboard result"

_NUM = ["number"]
_NUM_OR_NULL = ["number", "null"]

_INTERVAL = {
    "type": ["object", "null"],
    "required": ["iqm", "iqm_low", "iqm_high", "mean", "mean_low", "mean_high"],
    "properties": {
        k: {"type": _NUM} for k in ("iqm", "iqm_low", "iqm_high", "mean", "mean_low", "mean_high")
    },
}

_EPISODE = {
    "type": "object",
    "required": [
        "arrival_seed",
        "mean_wait",
        "p95_wait",
        "max_wait",
        "proposed_violations",
        "executed_violations",
        "max_violation",
        "lp_mean_wait",
        "ratio_vs_lp",
        "slack_guided_mean_wait",
        "ratio_vs_slack_guided",
    ],
    "properties": {
        "arrival_seed": {"type": "integer", "minimum": 0},
        "mean_wait": {"type": _NUM, "minimum": 0},
        "p95_wait": {"type": _NUM, "minimum": 0},
        "max_wait": {"type": _NUM, "minimum": 0},
        "proposed_violations": {"type": "integer", "minimum": 0},
        "executed_violations": {"type": "integer", "minimum": 0},
        "max_violation": {"type": _NUM, "minimum": 0},
        "lp_mean_wait": {"type": _NUM, "minimum": 0},
        "ratio_vs_lp": {"type": _NUM_OR_NULL},
        "slack_guided_mean_wait": {"type": _NUM_OR_NULL},
        "ratio_vs_slack_guided": {"type": _NUM_OR_NULL},
    },
}

_RISK = {
    "type": ["object", "null"],
    "required": [
        "risk",
        "bound",
        "per_theta",
        "psi",
        "within_bound",
        "states_probed",
        "max_states",
        "arrival_seed",
    ],
    "properties": {
        "risk": {"type": _NUM, "minimum": 0},
        "bound": {"type": _NUM, "minimum": 0},
        "per_theta": {"type": "array", "items": {"type": _NUM}},
        "psi": {"type": "array", "items": {"type": _NUM}},
        "within_bound": {"type": "boolean"},
        "states_probed": {"type": "integer", "minimum": 0},
        "max_states": {"type": ["integer", "null"]},
        "arrival_seed": {"type": "integer"},
    },
}

_UNIT = {
    "type": "object",
    "required": ["env_id", "instance_seed", "status", "error", "episodes", "risk", "risk_slack"],
    "properties": {
        "env_id": {"type": "string"},
        "instance_seed": {"type": "integer"},
        "status": {"enum": ["ok", "failed"]},
        "error": {"type": ["string", "null"]},
        "n_passengers": {"type": "integer"},
        "risk_slack": {"type": _NUM_OR_NULL},
        "episodes": {"type": "array", "items": _EPISODE},
        "risk": _RISK,
        "lp_risk": {"type": _NUM_OR_NULL},
    },
}

#: The days a row played (:class:`leaderboard.suites.Days`; absent: the suite's public days).
_DAYS = {
    "type": "object",
    "required": ["kind", "seeds"],
    "additionalProperties": False,
    "properties": {
        "kind": {"enum": ["fresh", "public", "chosen"]},
        "seeds": {"type": "array", "items": {"type": "integer", "minimum": 0}},
    },
}

#: The evaluator's or a maintainer's Ed25519 signature (:mod:`leaderboard.signing`).
_SIGNATURE = {
    "type": "object",
    "required": ["algorithm", "key_id", "public_key", "value"],
    "additionalProperties": False,
    "properties": {k: {"type": "string"} for k in ("algorithm", "key_id", "public_key", "value")},
}

#: JSON Schema of a result file.
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "tsg-envs leaderboard result",
    "type": "object",
    "required": [
        "schema_version",
        "kind",
        "submission",
        "suite",
        "status",
        "error",
        "track",
        "notes",
        "references",
        "units",
        "aggregate",
        "metrics_digest",
        "provenance",
        "timing",
    ],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "kind": {"const": RESULT_KIND},
        "submission": {
            "type": "object",
            "required": ["name", "kind", "source", "fingerprint"],
            "properties": {
                "name": {"type": "string"},
                "kind": {"enum": ["file", "baseline"]},
                "source": {"type": "string"},
                "checkpoint": {"type": ["string", "null"]},
                "train_gradient_steps": {"type": ["integer", "null"]},
                "train_seeds": {"type": ["array", "null"], "items": {"type": "integer"}},
                "description": {"type": "string"},
                "fingerprint": {"type": "string"},
                "learned": {"type": ["boolean", "null"]},
            },
        },
        "suite": {
            "type": "object",
            "required": ["name", "hash", "definition"],
            "properties": {
                "name": {"type": "string"},
                "hash": {"type": "string"},
                "definition": {"type": "object"},
            },
        },
        "days": _DAYS,
        "signature": _SIGNATURE,
        "status": {"enum": ["ok", "failed"]},
        "error": {"type": ["string", "null"]},
        "track": {"enum": ["hard", "open", None]},
        "notes": {"type": "array", "items": {"type": "string"}},
        "references": {
            "type": "object",
            "required": ["lp", "slack_guided"],
            "properties": {"lp": {"type": "string"}, "slack_guided": {"type": "string"}},
        },
        "units": {"type": "array", "items": _UNIT},
        "aggregate": {
            "type": ["object", "null"],
            "required": [
                "n_tasks",
                "n_runs",
                "n_episodes",
                "mean_wait",
                "p95_wait",
                "ratio_vs_lp",
                "ratio_vs_slack_guided",
                "max_wait",
                "proposed_violations",
                "max_violation",
                "risk",
            ],
            "properties": {
                "n_tasks": {"type": "integer", "minimum": 1},
                "n_runs": {"type": "integer", "minimum": 1},
                "n_episodes": {"type": "integer", "minimum": 1},
                "mean_wait": _INTERVAL,
                "p95_wait": _INTERVAL,
                "ratio_vs_lp": _INTERVAL,
                "ratio_vs_slack_guided": _INTERVAL,
                "lp_mean_wait": _INTERVAL,
                "ratio_vs_lp_best": {"type": _NUM_OR_NULL},
                "max_wait": {"type": _NUM},
                "proposed_violations": {"type": "integer", "minimum": 0},
                "executed_violations": {"type": "integer", "minimum": 0},
                "max_violation": {"type": _NUM},
                "risk": {
                    "type": ["object", "null"],
                    "required": ["mean", "mean_bound", "max_over_bound", "within_bound"],
                },
            },
        },
        "metrics_digest": {"type": "string"},
        "provenance": {
            "type": "object",
            "required": [
                "packages",
                "python",
                "platform",
                "hardware",
                "git_commit",
                "created_utc",
            ],
            "properties": {
                "packages": {"type": "object"},
                "python": {"type": "string"},
                "platform": {"type": "string"},
                "hardware": {"type": "object"},
                "git_commit": {"type": ["string", "null"]},
                "git_dirty": {"type": ["boolean", "null"]},
                "created_utc": {"type": "string"},
            },
        },
        "timing": {
            "type": "object",
            "required": ["wall_time_s"],
            "properties": {"wall_time_s": {"type": _NUM, "minimum": 0}},
        },
    },
}


_ATTACKER_EPISODE = {
    "type": "object",
    "required": ["arrival_seed", "gain", "best_response_gain", "fraction_of_best_response",
                 "per_theta_gain", "per_theta_best", "strike_step", "flight", "method"],
    "properties": {
        "arrival_seed": {"type": "integer", "minimum": 0},
        "gain": {"type": _NUM, "minimum": 0},
        "best_response_gain": {"type": _NUM, "minimum": 0},
        "fraction_of_best_response": {"type": _NUM_OR_NULL, "minimum": 0},
        "per_theta_gain": {"type": "array", "items": {"type": _NUM}},
        "per_theta_best": {"type": "array", "items": {"type": _NUM}},
        "strike_step": {"type": "array", "items": {"type": "integer"}},
        "flight": {"type": "array", "items": {"type": "integer"}},
        "method": {"type": "array", "items": {"type": "integer"}},
    },
}

_ATTACKER_DEFENDER = {
    "type": "object",
    "required": ["gain", "best_response_gain", "fraction_of_best_response",
                 "fraction_of_means", "struck", "n_episodes"],
    "properties": {
        "gain": _INTERVAL,
        "best_response_gain": _INTERVAL,
        "fraction_of_best_response": _INTERVAL,
        "fraction_of_means": {"type": _NUM_OR_NULL},
        "struck": {"type": _NUM, "minimum": 0},
        "n_episodes": {"type": "integer", "minimum": 1},
    },
}

#: JSON Schema of an attacker-track result (``"track": "attacker"``): the same envelope
#: (submission, suite, status, digest, provenance, timing), the panel it faced, per-unit duels
#: per defender, and per-defender aggregates.
ATTACKER_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "tsg-envs leaderboard result (attacker track)",
    "type": "object",
    "required": ["schema_version", "kind", "track", "submission", "suite", "status", "error",
                 "notes", "panel", "units", "defenders", "metrics_digest", "provenance",
                 "timing"],
    "additionalProperties": False,
    "properties": {
        **{k: SCHEMA["properties"][k] for k in (
            "schema_version", "kind", "submission", "suite", "days", "signature", "status",
            "error", "notes", "metrics_digest", "provenance", "timing")},
        "track": {"const": "attacker"},
        "panel": {"type": "object"},
        "units": {"type": "array", "items": {
            "type": "object",
            "required": ["env_id", "instance_seed", "status", "error", "prior", "panel",
                         "defenders"],
            "properties": {
                "env_id": {"type": "string"},
                "instance_seed": {"type": "integer"},
                "status": {"enum": ["ok", "failed"]},
                "error": {"type": ["string", "null"]},
                "n_passengers": {"type": "integer"},
                "queue_mode": {"type": "string"},
                "prior": {"type": "array", "items": {"type": _NUM, "minimum": 0}},
                "panel": {"type": "object"},
                "defenders": {"type": "object", "additionalProperties": {
                    "type": "object", "required": ["episodes"],
                    "properties": {"episodes": {"type": "array", "items": _ATTACKER_EPISODE}},
                }},
            },
        }},
        "defenders": {"type": ["object", "null"], "additionalProperties": _ATTACKER_DEFENDER},
    },
}


class SchemaError(ValueError):
    """A result document does not conform to :data:`SCHEMA`."""


#: Largest result file read (bytes; the full suite's results are about 1 MiB).
MAX_RESULT_BYTES = 256 * 2**20


def read_regular_file(path: str | Path, limit: int) -> bytes:
    """A regular file's bytes, at most ``limit`` of them, read through one open descriptor.

    A FIFO, a device (``/dev/zero``), a folder or a symbolic link to one of them is refused
    before a byte is read, and so is a file over ``limit``: nothing a user names can make the
    evaluator read without end or wait on a pipe.

    Raises:
        OSError: it cannot be opened.
        ValueError: not a regular file of at most ``limit`` bytes.
    """
    import os
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO's open must not wait
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path} is not a regular file")
        if st.st_size > limit:
            raise ValueError(f"{path} is larger than {limit / 2**20:g} MiB")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path} is larger than {limit / 2**20:g} MiB")
    return data


class ResultExistsError(FileExistsError):
    """A different result already sits at the target path."""


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "null": (type(None),),
    "integer": (int,),
    "number": (int, float),
}


def _is_type(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[name])


def _check(value: Any, schema: dict[str, Any], path: str, errors: list[str]) -> None:
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: expected {schema['const']!r}, got {value!r}")
        return
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
        return
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is_type(value, n) for n in names):
            errors.append(f"{path}: expected {' or '.join(names)}, got {type(value).__name__}")
            return
    if "minimum" in schema and _is_type(value, "number") and value < schema["minimum"]:
        errors.append(f"{path}: {value} < minimum {schema['minimum']}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing required key {key!r}")
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        if extra is False:
            for key in value:
                if key not in props:
                    errors.append(f"{path}: unexpected key {key!r}")
        elif isinstance(extra, dict):
            for key in value:
                if key not in props:
                    _check(value[key], extra, f"{path}.{key}", errors)
        for key, sub in props.items():
            if key in value:
                _check(value[key], sub, f"{path}.{key}", errors)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _check(item, schema["items"], f"{path}[{i}]", errors)


def validate(doc: Any) -> None:
    """Check ``doc`` against :data:`SCHEMA` (:data:`ATTACKER_SCHEMA` for the attacker track).

    Raises:
        SchemaError: listing (up to 10 of) the problems, each with its JSON path.
    """
    errors: list[str] = []
    attacker = isinstance(doc, dict) and doc.get("track") == "attacker"
    _check(doc, ATTACKER_SCHEMA if attacker else SCHEMA, "$", errors)
    if errors:
        more = f" (+{len(errors) - 10} more)" if len(errors) > 10 else ""
        raise SchemaError("result does not match the schema: " + "; ".join(errors[:10]) + more)


def metrics_digest(doc: dict[str, Any]) -> str:
    """sha256 of a result without ``provenance``, ``timing``, ``signature`` and the digest."""
    core = {k: v for k, v in doc.items()
            if k not in ("provenance", "timing", "metrics_digest", "signature", "_path")}
    blob = json.dumps(core, sort_keys=True, allow_nan=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def result_filename(submission_name: str, suite_name: str, track: str | None = None) -> str:
    """``{submission}--{suite}.json`` (``...--attacker.json`` on the attacker track).

    The name is reduced to ``[A-Za-z0-9._-]``.
    """
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in submission_name)
    tail = "--attacker" if track == "attacker" else ""
    return f"{safe}--{suite_name}{tail}.json"


def load_result(path: str | Path) -> dict[str, Any]:
    """Read and validate one result file.

    Raises:
        SchemaError: if it is not valid JSON for :data:`SCHEMA`, or its digest does not match.
    """
    def refuse(token: str) -> Any:
        raise SchemaError(f"{path}: holds {token}, which strict JSON (and a result) cannot")

    try:
        doc = json.loads(read_regular_file(path, MAX_RESULT_BYTES).decode("utf-8"),
                         parse_constant=refuse)
    except json.JSONDecodeError as err:
        raise SchemaError(f"{path}: not JSON ({err})") from err
    except (OSError, ValueError, RecursionError) as err:  # UnicodeDecodeError is a ValueError
        raise SchemaError(f"{path}: unreadable ({err})") from err
    try:
        validate(doc)
    except SchemaError as err:
        raise SchemaError(f"{path}: {err}") from err
    if metrics_digest(doc) != doc["metrics_digest"]:
        raise SchemaError(f"{path}: metrics_digest does not match its content (edited by hand?)")
    return doc


def save_result(doc: dict[str, Any], out_dir: str | Path, force: bool = False) -> Path:
    """Validate ``doc`` and write it to ``out_dir/result_filename(...)``, atomically.

    A file already there is replaced if it holds the same metrics (same digest: a re-run with new
    timings or provenance), if it records a failed evaluation (a later run may fix a failed
    row), or if ``force`` is set; a different ok result raises. The check and the replacement
    happen under an exclusive lock on ``out_dir/.lock``, and the document is written to a
    unique temporary file first, so concurrent evaluations never lose or corrupt a result.

    Raises:
        SchemaError: if ``doc`` does not conform.
        ResultExistsError: if a different ok result is already at the path.
    """
    import fcntl
    import os
    import tempfile

    validate(doc)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / result_filename(doc["submission"]["name"], doc["suite"]["name"],
                                 doc.get("track"))
    text = json.dumps(doc, indent=1, sort_keys=False, allow_nan=False) + "\n"
    with open(out / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists() and not force:
            try:
                old = json.loads(path.read_text(encoding="utf-8"))
                replaceable = (old.get("metrics_digest") == doc["metrics_digest"]
                               or old.get("status") != "ok")
            except (json.JSONDecodeError, AttributeError, OSError, UnicodeDecodeError):
                replaceable = False
            if not replaceable:
                raise ResultExistsError(
                    f"{path} holds a different result (metrics digest differs); pass --force "
                    f"to replace it or choose another --out"
                )
        fd, tmp = tempfile.mkstemp(dir=out, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return path
