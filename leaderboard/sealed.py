"""Sealed evaluation: a submission's code runs in its own spawned process, never the evaluator's.

:class:`SealedAgent` starts a fresh Python process (``python -c ...``, so nothing of
the evaluator's memory is inherited) that imports the submission, builds **its own** copy of the
unit's environment, calls ``make_agent`` on it and then answers ``act`` / ``act_batch`` / ``reset``
requests over a socket. The evaluator keeps its environments, references, risk probe, caches and
track decision to itself: the submission sees copies of observations and infos, and whatever it
changes (its environment, the library's functions, global state) stays in its process.

Replies are never unpickled: the child sends a small JSON header and the raw float64 bytes of
the action, so a reply cannot run code in the evaluator. Every request has a time limit
(:class:`Limits`), the whole unit another, and the process a memory limit (``RLIMIT_AS``); a
hang, ``os._exit``, a signal, ``BaseException``, exhausted memory or a malformed reply becomes a
:class:`~leaderboard.submission.SubmissionError` naming what happened, and the process is killed.

Where bubblewrap (``bwrap``) is installed and permitted, the process runs inside it: the whole
file system read-only but a private ``/tmp``, no network (:func:`isolation` says which; every
result records it).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from leaderboard.submission import SubmissionError, SubmissionSpec, describe_exception

__all__ = ["Limits", "SealedAgent", "SealedAttacker", "isolation"]

#: bubblewrap's arguments: the whole file system read-only (a private temporary folder is bound
#: writable per process), no network, and the process killed with its parent.
BWRAP_ARGS = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net",
              "--die-with-parent", "--new-session")

_HEADER = struct.Struct("<I")
#: The child's command line (``python -c``; ``-m leaderboard.sealed`` would import the module
#: twice, once through the package).
_CHILD = "import sys; from leaderboard.sealed import main; raise SystemExit(main(sys.argv[1:]))"
#: Largest reply accepted (bytes): a batch of actions is far smaller.
MAX_REPLY_BYTES = 64 * 2**20


@dataclass(frozen=True)
class Limits:
    """Resource limits of a submission's process.

    Attributes:
        call_s: Seconds one ``act`` / ``act_batch`` / ``reset`` request may take.
        unit_s: Seconds the whole unit may take in the submission's process, ``make_agent``
            (which may train) included.
        memory_mb: Address-space limit of the process (``RLIMIT_AS``), MiB; None: none.
        isolate: Run the process under bubblewrap where it works (:func:`isolation`).
    """

    call_s: float = 60.0
    unit_s: float = 4 * 3600.0
    memory_mb: int | None = 16_384
    isolate: bool = True

    def __post_init__(self) -> None:
        if not self.call_s > 0 or not self.unit_s > 0:
            raise ValueError(f"time limits must be > 0, got {self.call_s}, {self.unit_s}")
        if self.memory_mb is not None and self.memory_mb < 64:
            raise ValueError(f"memory_mb must be >= 64 or None, got {self.memory_mb}")


@functools.cache
def _bwrap() -> tuple[str, ...] | None:
    exe = shutil.which("bwrap")
    if exe is None:
        return None
    cmd = (exe, *BWRAP_ARGS)
    try:
        subprocess.run([*cmd, "--", sys.executable, "-c", "pass"], check=True, timeout=30,
                       capture_output=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return cmd


def isolation(limits: Limits | None = None) -> str:
    """How submissions' processes are isolated here: the result's ``provenance.isolation``."""
    if limits is not None and not limits.isolate:
        return "off (--no-isolation)"
    if _bwrap() is None:
        why = "not installed" if shutil.which("bwrap") is None else "not permitted here"
        return f"off (bubblewrap {why})"
    return "bwrap: read-only file system but a private temporary folder, no network"


def _send(conn: Any, header: dict[str, Any], payload: bytes = b"") -> None:
    blob = json.dumps(header).encode()
    conn.send_bytes(_HEADER.pack(len(blob)) + blob + payload)


def _serve(conn: Any, spec: SubmissionSpec, env_id: str, instance_seed: int,
           env_kwargs: dict[str, Any], train_gradient_steps: int,
           memory_mb: int | None, role: str = "defender") -> None:  # pragma: no cover - child
    """The submission's process: load, build the agent on its own env, answer requests.

    ``role`` is ``"defender"`` (``make_agent``; ``act`` answers an allocation, sent as raw
    float64 bytes) or ``"attacker"`` (``make_attacker`` on an ``AttackerEnv`` of the unit;
    ``act`` answers one integer, sent in the JSON header).
    """
    try:
        if memory_mb is not None:
            import resource

            limit = int(memory_mb) * 2**20
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        if role == "attacker":
            from leaderboard.units import attacker_unit_env, load_attacker

            sub = load_attacker(spec)
            env = attacker_unit_env(env_id, instance_seed, env_kwargs)
        else:
            from leaderboard.submission import load_submission
            from leaderboard.units import make_unit_env

            sub = load_submission(spec)
            env = make_unit_env(env_id, instance_seed, env_kwargs)
        factory = "make_attacker" if role == "attacker" else "make_agent"
        try:
            agent = sub.make_agent(env, env_id=env_id, instance_seed=instance_seed,
                                   env_kwargs=env_kwargs,
                                   train_gradient_steps=train_gradient_steps)
        except BaseException as err:  # noqa: BLE001 - every failure becomes a reason
            _send(conn, {"kind": "error", "reason": describe_exception(f"{factory} raised", err)})
            return
        if not callable(getattr(agent, "act", None)):
            _send(conn, {"kind": "error", "reason": f"{factory} returned "
                         f"{type(agent).__name__}, which has no act(obs, info)"})
            return
        _send(conn, {"kind": "ready", "act_batch": callable(getattr(agent, "act_batch", None)),
                     "reset": callable(getattr(agent, "reset", None)),
                     "description": str(sub.description)})
    except SubmissionError as err:
        _send(conn, {"kind": "error", "reason": str(err)})
        return
    except BaseException as err:  # noqa: BLE001
        _send(conn, {"kind": "error", "reason": describe_exception("set-up failed", err)})
        return
    while True:
        try:
            method, args = conn.recv()
        except (EOFError, OSError):
            return
        if method == "close":
            return
        try:
            out = getattr(agent, method)(*args)
        except BaseException as err:  # noqa: BLE001
            _send(conn, {"kind": "error", "reason": describe_exception(f"{method} raised", err)})
            continue
        if method == "reset":
            _send(conn, {"kind": "ok", "shape": None})
            continue
        if role == "attacker":
            _send(conn, _integer_reply(method, out))
            continue
        try:
            a = np.ascontiguousarray(np.asarray(out, dtype=np.float64))
        except (TypeError, ValueError):
            _send(conn, {"kind": "error", "reason": f"{method} returned "
                         f"{type(out).__name__}, not an array of numbers"})
            continue
        _send(conn, {"kind": "ok", "shape": list(a.shape)}, a.tobytes())


def _integer_reply(method: str, out: Any) -> dict[str, Any]:  # pragma: no cover - child side
    """The header answering an attacker's ``act``: one plain integer, or an error."""
    if isinstance(out, np.ndarray) and out.size == 1:
        out = out.reshape(()).item() if np.issubdtype(out.dtype, np.integer) else out
    if isinstance(out, (bool, np.bool_)) or not isinstance(out, (int, np.integer)):
        return {"kind": "error", "reason": f"{method} returned {type(out).__name__} "
                f"{str(out)[:80]!r}, not an integer action"}
    return {"kind": "ok", "action": int(out)}


class SealedAgent:
    """The evaluator's proxy of an agent that lives in its own process (see the module doc).

    It has ``act(obs, info)``, and ``act_batch(obs_B, infos)`` / ``reset()`` exactly when the
    submitted agent has them. ``queries`` records the first ``record`` answered requests
    (method, arguments, answer) for :meth:`replay`.

    Args:
        spec: The submission.
        env_id: The unit's id.
        instance_seed: The unit's instance.
        env_kwargs: The suite's ``gym.make`` kwargs.
        train_gradient_steps: The suite's training budget (learned baselines).
        limits: Time and memory limits.
        record: How many requests to record for a replay.
        role: ``"defender"`` or ``"attacker"`` (:class:`SealedAttacker`).

    Raises:
        SubmissionError: the submission could not be loaded or built, within the limits.
    """

    def __init__(self, spec: SubmissionSpec, env_id: str, instance_seed: int,
                 env_kwargs: dict[str, Any], train_gradient_steps: int,
                 limits: Limits = Limits(), record: int = 0, role: str = "defender") -> None:
        self.limits = limits
        self._deadline = time.monotonic() + limits.unit_s
        self._record = int(record)
        self.queries: list[tuple[str, tuple[Any, ...], np.ndarray | None]] = []
        ours, theirs = socket.socketpair()
        prefix = _bwrap() if limits.isolate else None
        self.isolated = prefix is not None
        self._tmp = tempfile.mkdtemp(prefix="tsg-submission-")
        sandbox = [*prefix, "--bind", self._tmp, self._tmp, "--"] if prefix else []
        cmd = [*sandbox, sys.executable, "-c", _CHILD, str(theirs.fileno())]
        env = {**os.environ, "TMPDIR": self._tmp, "MPLCONFIGDIR": os.path.join(self._tmp, "mpl"),
               "PYTHONDONTWRITEBYTECODE": "1"}
        self._proc = subprocess.Popen(cmd, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                      env=env, start_new_session=True)
        theirs.close()
        self._conn = Connection(ours.detach())
        self._conn.send((spec, env_id, int(instance_seed), dict(env_kwargs),
                         int(train_gradient_steps), limits.memory_mb, role))
        factory = "make_attacker" if role == "attacker" else "make_agent"
        header, _ = self._receive(limits.unit_s, f"loading the submission and {factory}")
        if header.get("kind") != "ready":
            self.close()
            raise SubmissionError("malformed reply from the submission's process")
        self.description = str(header.get("description", ""))[:500]
        if header.get("act_batch") is True:
            self.act_batch = self._act_batch
        if header.get("reset") is True:
            self.reset = self._reset

    # Plumbing -----------------------------------------------------------------------------------
    def _ended(self, what: str) -> SubmissionError:
        try:
            code = self._proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            code = None
        self.close()
        if code is not None and self.isolated and code > 128:
            code = 128 - code  # bwrap reports a signal as 128 + its number
        if code is not None and code < 0:
            import signal

            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            how = f"killed by {name}" + (" (out of memory?)" if name == "SIGKILL" else "")
        else:
            how = f"exit code {code}"
        return SubmissionError(f"the submission's process ended during {what} ({how})")

    def _receive(self, timeout: float, what: str) -> tuple[dict[str, Any], bytes]:
        left = self._deadline - time.monotonic()
        wait = max(0.0, min(timeout, left))
        try:
            ready = self._conn.poll(wait)
        except (EOFError, OSError):
            ready = True
        if not ready:
            self.close()
            limit = "unit" if left <= timeout else "call"
            return_limit = self.limits.unit_s if limit == "unit" else timeout
            raise SubmissionError(f"{what} exceeded the {limit} time limit of {return_limit:g} s")
        try:
            blob = self._conn.recv_bytes(MAX_REPLY_BYTES)
        except (EOFError, OSError):
            raise self._ended(what) from None
        try:
            (n,) = _HEADER.unpack_from(blob)
            header = json.loads(blob[_HEADER.size:_HEADER.size + n])
            payload = blob[_HEADER.size + n:]
            if not isinstance(header, dict):
                raise ValueError("header is not an object")
        except (struct.error, ValueError, UnicodeDecodeError) as err:
            self.close()
            raise SubmissionError(f"malformed reply from the submission's process during "
                                  f"{what} ({err})") from None
        if header.get("kind") == "error":
            raise SubmissionError(str(header.get("reason", "unknown error"))[:2000])
        return header, payload

    def _call(self, method: str, *args: Any) -> np.ndarray | None:
        try:
            self._conn.send((method, args))
        except (OSError, ValueError):
            raise self._ended(method) from None
        header, payload = self._receive(self.limits.call_s, method)
        shape = header.get("shape")
        if shape is None:
            out = None
        else:
            try:
                out = np.frombuffer(payload, dtype=np.float64).reshape(
                    tuple(int(s) for s in shape)).copy()
            except (TypeError, ValueError):
                raise SubmissionError(f"malformed reply from the submission's process during "
                                      f"{method}") from None
        if method != "reset" and len(self.queries) < self._record:
            self.queries.append((method, args, out))
        return out

    # The agent ----------------------------------------------------------------------------------
    def act(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray | None:
        """The submitted agent's answer (a copy of ``obs`` and ``info`` is sent)."""
        return self._call("act", np.array(obs, copy=True), _plain(info))

    def _act_batch(self, obs_b: np.ndarray, infos: Any) -> np.ndarray | None:
        rows = [_plain(infos[i]) for i in range(len(obs_b))]
        return self._call("act_batch", np.array(obs_b, copy=True), rows)

    def _reset(self) -> None:
        self._call("reset")

    def replay(self, queries: list[tuple[str, tuple[Any, ...], np.ndarray | None]]) -> None:
        """Ask ``queries`` again, in a fixed shuffled order; a different answer fails.

        A deterministic, side-effect-free ``act`` answers a request the same whatever came
        before it; one that keeps state (a counter, a memory of past requests) or draws random
        numbers does not.

        Raises:
            SubmissionError: "stateful act" with the first differing request.
        """
        order = np.random.default_rng(0).permutation(len(queries))
        for i in order:
            method, args, answer = queries[i]
            again = self._call(method, *args)
            if answer is None or again is None or not np.array_equal(again, answer):
                raise SubmissionError(
                    f"stateful act: request {i} ({method}), replayed in a fresh process, got a "
                    "different answer (act must be deterministic and free of side effects)"
                )

    def close(self) -> None:
        """Stop the process (asked first, then killed)."""
        if self._proc.poll() is None:
            try:
                self._conn.send(("close", ()))
            except (OSError, ValueError):
                pass
            try:
                self._proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=5.0)
        self._conn.close()
        shutil.rmtree(self._tmp, ignore_errors=True)


class SealedAttacker(SealedAgent):
    """The evaluator's proxy of a submitted attacker (``make_attacker``) in its own process.

    ``act(obs, info)`` returns the attacker's integer action (checked against the duel by the
    caller); ``reset(seed)`` exists when the submitted attacker has one.
    """

    def __init__(self, spec: SubmissionSpec, env_id: str, instance_seed: int,
                 env_kwargs: dict[str, Any], train_gradient_steps: int,
                 limits: Limits = Limits()) -> None:
        super().__init__(spec, env_id, instance_seed, env_kwargs, train_gradient_steps, limits,
                         role="attacker")
        if hasattr(self, "reset"):
            self.reset = self._reset_seed

    def _ask(self, method: str, *args: Any) -> dict[str, Any]:
        try:
            self._conn.send((method, args))
        except (OSError, ValueError):
            raise self._ended(method) from None
        header, _ = self._receive(self.limits.call_s, method)
        return header

    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> int:  # type: ignore[override]
        """The submitted attacker's action (copies of ``obs`` and ``info`` are sent)."""
        plain_obs = {str(k): np.array(v, copy=True) for k, v in obs.items()}
        header = self._ask("act", plain_obs, _plain(info))
        action = header.get("action")
        if isinstance(action, bool) or not isinstance(action, int):
            raise SubmissionError("malformed reply from the submission's process during act")
        return action

    def _reset_seed(self, seed: int | None = None) -> None:
        self._ask("reset", seed)


def _plain(info: Any) -> dict[str, Any]:
    """A deep, plain copy of an info mapping (numpy arrays copied)."""
    out = {}
    for key in info:
        value = info[key]
        out[str(key)] = np.array(value, copy=True) if isinstance(value, np.ndarray) else value
    return out


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - the child's entry point
    """The child's entry point: serve one submission over the socket ``FD`` (``argv[0]``)."""
    args = sys.argv[1:] if argv is None else argv
    conn = Connection(int(args[0]))
    try:
        setup = conn.recv()
    except (EOFError, OSError):
        return 1
    _serve(conn, *setup)
    return 0


