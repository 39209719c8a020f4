"""Sealed evaluation: a submission's code runs in its own sandboxed process, never the evaluator's.

:class:`SealedAgent` (a defender) and :class:`SealedAttacker` are thin role wrappers over
:class:`leaderboard.sandbox.Sandbox`: a fresh process (nothing of the evaluator's memory is
inherited) imports the submission, builds **its own** copy of the unit's environment, calls
``make_agent`` (or ``make_attacker``) on it and then answers ``act`` / ``act_batch`` / ``reset``
requests. The evaluator keeps its environments, references, risk probe, caches and track decision
to itself: the submission sees copies of observations and infos, and whatever it changes (its
environment, the library's functions, global state) stays in its process.

Replies are never unpickled: the process sends a small JSON header and the raw float64 bytes of
the action. Every request has a time limit (:class:`~leaderboard.sandbox.Limits`), the whole
unit another, and the whole process tree limits on memory, processes and output; a hang,
``os._exit``, a signal, ``BaseException``, exhausted memory, a stopped process or a malformed,
partial or oversized reply becomes a :class:`~leaderboard.submission.SubmissionError` naming what
happened, and the tree is killed. Where bubblewrap works (as root too), the tree is sealed (see
:mod:`leaderboard.sandbox`; :func:`isolation` says how, and every result records it).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

import numpy as np

from leaderboard.sandbox import MAX_REPLY_BYTES, Limits, Sandbox, SandboxError, isolation
from leaderboard.submission import (
    MAX_SOURCE_BYTES,
    SubmissionError,
    SubmissionSpec,
    checkpoint_path,
    describe_exception,
    read_bounded,
)

__all__ = ["MAX_REPLY_BYTES", "Limits", "SealedAgent", "SealedAttacker", "isolation", "serve"]

#: The entry point the sandboxed process runs (:func:`serve`).
ENTRY = "leaderboard.sealed:serve"


def serve(channel: Any, setup: tuple[Any, ...]) -> None:  # pragma: no cover - sandboxed side
    """The submission's process: load, build the agent on its own env, answer requests.

    ``setup`` is ``(spec, env_id, instance_seed, env_kwargs, train_gradient_steps, role)``, the
    spec as the mapping of its fields (requests are plain data, never pickles);
    ``role`` is ``"defender"`` (``make_agent``; ``act`` answers an allocation, sent as raw
    float64 bytes) or ``"attacker"`` (``make_attacker`` on an ``AttackerEnv`` of the unit;
    ``act`` answers one integer, sent in the JSON header).
    """
    fields, env_id, instance_seed, env_kwargs, train_gradient_steps, role = setup
    factory = "make_attacker" if role == "attacker" else "make_agent"
    try:
        spec = SubmissionSpec(**fields)
        if role == "attacker":
            from leaderboard.units import attacker_unit_env, load_attacker

            sub = load_attacker(spec)
            env = attacker_unit_env(env_id, instance_seed, env_kwargs)
        else:
            from leaderboard.submission import load_submission
            from leaderboard.units import make_unit_env

            sub = load_submission(spec)
            env = make_unit_env(env_id, instance_seed, env_kwargs)
        try:
            agent = sub.make_agent(env, env_id=env_id, instance_seed=instance_seed,
                                   env_kwargs=env_kwargs,
                                   train_gradient_steps=train_gradient_steps)
        except BaseException as err:  # noqa: BLE001 - every failure becomes a reason
            channel.reply({"kind": "error",
                           "reason": describe_exception(f"{factory} raised", err)})
            return
        if not callable(getattr(agent, "act", None)):
            channel.reply({"kind": "error", "reason": f"{factory} returned "
                           f"{type(agent).__name__}, which has no act(obs, info)"})
            return
        channel.reply({"kind": "ready", "act_batch": callable(getattr(agent, "act_batch", None)),
                       "reset": callable(getattr(agent, "reset", None)),
                       "description": str(sub.description)[:2000]})
    except SubmissionError as err:
        channel.reply({"kind": "error", "reason": str(err)})
        return
    except BaseException as err:  # noqa: BLE001
        channel.reply({"kind": "error", "reason": describe_exception("set-up failed", err)})
        return
    while True:
        request = channel.recv()
        if request is None:
            return
        method, args = request
        try:
            out = getattr(agent, method)(*args)
        except BaseException as err:  # noqa: BLE001
            channel.reply({"kind": "error",
                           "reason": describe_exception(f"{method} raised", err)})
            continue
        if method == "reset":
            channel.reply({"kind": "ok", "shape": None})
        elif role == "attacker":
            channel.reply(_integer_reply(method, out))
        else:
            try:
                a = np.asarray(out, dtype=np.float64)  # a 0-d answer keeps its shape ()
            except (TypeError, ValueError):
                channel.reply({"kind": "error", "reason": f"{method} returned "
                               f"{type(out).__name__}, not an array of numbers"})
                continue
            channel.reply({"kind": "ok", "shape": list(a.shape)}, a.tobytes())


def _integer_reply(method: str, out: Any) -> dict[str, Any]:  # pragma: no cover - child side
    """The header answering an attacker's ``act``: one plain integer, or an error."""
    if isinstance(out, np.ndarray) and out.size == 1:
        out = out.reshape(()).item() if np.issubdtype(out.dtype, np.integer) else out
    if isinstance(out, (bool, np.bool_)) or not isinstance(out, (int, np.integer)):
        return {"kind": "error", "reason": f"{method} returned {type(out).__name__} "
                f"{str(out)[:80]!r}, not an integer action"}
    return {"kind": "ok", "action": int(out)}


def _read_source(path: str) -> bytes:
    """The submission file's bytes (a regular file of at most :data:`MAX_SOURCE_BYTES`)."""
    try:
        return read_bounded(path, MAX_SOURCE_BYTES)
    except SubmissionError as err:
        raise SubmissionError(f"import failed: {err}") from None


class SealedAgent:
    """The evaluator's proxy of an agent that lives in its own sandboxed process (module doc).

    It has ``act(obs, info)``, and ``act_batch(obs_B, infos)`` / ``reset()`` exactly when the
    submitted agent has them. ``queries`` records the first ``record`` answered requests
    (method, arguments, answer) for :meth:`replay`.

    Args:
        spec: The submission.
        env_id: The unit's id.
        instance_seed: The unit's instance.
        env_kwargs: The suite's ``gym.make`` kwargs.
        train_gradient_steps: The suite's training budget (learned baselines).
        limits: The limits of its process tree.
        record: How many requests to record for a replay.
        role: ``"defender"`` or ``"attacker"`` (:class:`SealedAttacker`).

    Attributes:
        isolated: Whether its process runs sealed.
        isolation: How (a result's ``provenance.isolation``).
        sandbox: Its :class:`~leaderboard.sandbox.Sandbox`.

    Raises:
        SubmissionError: the submission could not be loaded or built, within the limits.
    """

    def __init__(self, spec: SubmissionSpec, env_id: str, instance_seed: int,
                 env_kwargs: dict[str, Any], train_gradient_steps: int,
                 limits: Limits | None = None, record: int = 0, role: str = "defender") -> None:
        self.limits = limits = Limits() if limits is None else limits
        self._record = int(record)
        self.queries: list[tuple[str, tuple[Any, ...], np.ndarray | None]] = []
        files: dict[str, bytes] = {}
        read_only: list[str] = []
        if spec.is_file:
            source = os.path.abspath(spec.source)
            files[source] = _read_source(source)
            read_only.append(os.path.dirname(source))  # files beside it, where others may read
            spec = dataclasses.replace(spec, source=source)
        elif spec.checkpoint is not None:
            template = os.path.abspath(spec.checkpoint)
            spec = dataclasses.replace(spec, checkpoint=template)
            read_only.append(str(checkpoint_path(template, env_id, int(instance_seed),
                                                 spec.train_seed)))
        factory = "make_attacker" if role == "attacker" else "make_agent"
        setup = (dataclasses.asdict(spec), env_id, int(instance_seed), dict(env_kwargs),
                 int(train_gradient_steps), role)
        try:
            self.sandbox = Sandbox(ENTRY, setup, limits, read_only=tuple(read_only), files=files)
        except SandboxError as err:
            raise SubmissionError(str(err)) from None
        self.isolated, self.isolation = self.sandbox.sealed, self.sandbox.isolation
        try:
            header = self._receive(f"loading the submission and {factory}", limits.unit_s)
        except SubmissionError:
            self.close()  # nothing of it outlives a failed start
            raise
        if header.get("kind") != "ready":
            self.close()
            raise SubmissionError("malformed reply from the submission's process")
        self.description = str(header.get("description", ""))[:500]
        if header.get("act_batch") is True:
            self.act_batch = self._act_batch
        if header.get("reset") is True:
            self.reset = self._reset

    # Plumbing -----------------------------------------------------------------------------------
    def _receive(self, what: str, timeout: float | None = None) -> dict[str, Any]:
        try:
            header, self._payload = self.sandbox.receive(what, timeout)
        except SandboxError as err:
            raise SubmissionError(str(err)) from None
        if header.get("kind") == "error":
            raise SubmissionError(str(header.get("reason", "unknown error"))[:2000])
        return header

    def _ask(self, method: str, *args: Any) -> dict[str, Any]:
        try:
            header, self._payload = self.sandbox.request((method, args), method)
        except SandboxError as err:
            raise SubmissionError(str(err)) from None
        if header.get("kind") == "error":
            raise SubmissionError(str(header.get("reason", "unknown error"))[:2000])
        return header

    def _call(self, method: str, *args: Any) -> np.ndarray | None:
        header = self._ask(method, *args)
        shape = header.get("shape")
        out = None
        if shape is not None:
            try:
                dims = tuple(int(s) for s in shape)
                out = np.frombuffer(self._payload, dtype=np.float64).reshape(dims).copy()
            except (TypeError, ValueError):
                self.close()
                raise SubmissionError(f"malformed reply from the submission's process during "
                                      f"{method} (shape {str(shape)[:80]} and "
                                      f"{len(self._payload)} bytes)") from None
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
        """End its process tree; what it wrote to stdout and stderr goes, capped, to stderr."""
        box = getattr(self, "sandbox", None)
        if box is None:
            return
        box.close()
        if box.output.total and not getattr(self, "_echoed", False):
            self._echoed = True
            kib = self.limits.output_kib
            lines = box.output.text().splitlines()
            print(f"[sandbox] output of the submission's process ({box.output.total} bytes; the "
                  f"first and last {kib} KiB kept, every line marked):", file=sys.stderr)
            print("\n".join(f"  | {line}" for line in lines), file=sys.stderr, flush=True)


class SealedAttacker(SealedAgent):
    """The evaluator's proxy of a submitted attacker (``make_attacker``) in its own process.

    ``act(obs, info)`` returns the attacker's integer action (checked against the duel by the
    caller); ``reset(seed)`` exists when the submitted attacker has one.
    """

    def __init__(self, spec: SubmissionSpec, env_id: str, instance_seed: int,
                 env_kwargs: dict[str, Any], train_gradient_steps: int,
                 limits: Limits | None = None) -> None:
        super().__init__(spec, env_id, instance_seed, env_kwargs, train_gradient_steps, limits,
                         role="attacker")
        if hasattr(self, "reset"):
            self.reset = self._reset_seed

    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> int:  # type: ignore[override]
        """The submitted attacker's action (copies of ``obs`` and ``info`` are sent)."""
        plain_obs = {str(k): np.array(v, copy=True) for k, v in obs.items()}
        action = self._ask("act", plain_obs, _plain(info)).get("action")
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
