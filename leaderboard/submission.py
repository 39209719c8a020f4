"""Loading a submission: a Python file defining ``make_agent(env)``, or a baseline name.

**File submissions.** A ``.py`` file that defines ``make_agent(env) -> agent``, where ``agent``
has ``act(obs, info) -> action`` (an allocation over the teams, shape (T,)) and optionally
``act_batch(obs_B, infos) -> actions_B`` and ``reset()``. The file may also define ``NAME``
(the board's row label, read as a string literal without running the file; default: the
file's stem) and ``DESCRIPTION``. ``make_agent`` is called
once per (environment id, instance) unit with that unit's environment; ``act`` must be free of
side effects, because the worst-case risk probes it with made-up (obs, info) pairs.

**Baseline submissions.** A name of :func:`baselines.api.method_names`, optionally with a
checkpoint path. The path may contain the placeholders ``{env}`` (the id with ``/`` replaced
by ``_``), ``{instance}`` and ``{seed}`` (the training seed) to pick one checkpoint per unit
and seed, e.g. ``runs/multiseed/alpha-ddpg/{env}_i{instance}/s{seed}``; it is loaded with
``Method.load(path, env)``. Without a checkpoint, ``Method.train`` runs once per unit and seed:
non-learning methods solve their programs, learned ones train for the suite's
``train_gradient_steps`` (seed 0, or each of ``train_seeds``, in a temporary directory, so
nothing resumes from an earlier run). With ``train_seeds``, every seed's policy plays every day
of every unit: the row aggregates over seeds and days.

Nothing here runs a submission's code at import of this module. :func:`load_submission` (which
imports the file) runs only in the submission's own process (:mod:`leaderboard.sealed`); the
evaluator uses :func:`describe_submission`, which runs none of it. Failures are
:class:`SubmissionError` with a one-line reason; the evaluator turns them into a failed row.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = [
    "MAX_CHECKPOINT_BYTES",
    "MAX_SOURCE_BYTES",
    "check_template",
    "checkpoint_path",
    "read_bounded",
    "missing_checkpoints",
    "load_file",
    "sha256_file",
    "literal_name",
    "row_name",
    "SubmissionError",
    "SubmissionSpec",
    "LoadedSubmission",
    "GuardedAgent",
    "describe_submission",
    "load_submission",
    "describe_exception",
]


#: Largest submission file read (bytes).
MAX_SOURCE_BYTES = 16 * 2**20
#: Largest checkpoint file hashed (bytes).
MAX_CHECKPOINT_BYTES = 4 * 2**30
#: The placeholders a checkpoint template may hold.
TEMPLATE_FIELDS = ("env", "instance", "seed")


class SubmissionError(Exception):
    """A submission failed; ``str(err)`` is the one-line reason shown in its row."""


def read_bounded(path: str | Path, limit: int) -> bytes:
    """A regular file's bytes, at most ``limit`` of them, read through one open descriptor.

    A FIFO, a device (``/dev/zero``), a folder or a symbolic link to one of them is refused
    before a byte is read, and so is a file over ``limit``: nothing a user names can make the
    evaluator read without end.

    Raises:
        SubmissionError: not a regular file of at most ``limit`` bytes, or unreadable.
    """
    from leaderboard.schema import read_regular_file

    try:
        return read_regular_file(path, limit)
    except OSError as err:
        raise SubmissionError(f"{path}: {err.strerror}") from None
    except ValueError as err:
        raise SubmissionError(str(err)) from None


def check_template(template: str) -> None:
    """A checkpoint path template: only ``{env}``, ``{instance}`` and ``{seed}`` placeholders.

    Raises:
        ValueError: another placeholder, a conversion or format spec, or an unbalanced brace.
    """
    import string

    try:
        fields = [f for _, f, spec, conv in string.Formatter().parse(template)
                  if f is not None or spec or conv]
        template.format(**{k: 0 for k in TEMPLATE_FIELDS})
    except (ValueError, KeyError, IndexError, AttributeError) as err:
        raise ValueError(f"malformed --checkpoint template {template!r} ({err}); it may hold "
                         "{env}, {instance} and {seed}") from None
    bad = [f for f in fields if f not in TEMPLATE_FIELDS]
    if bad:
        raise ValueError(f"malformed --checkpoint template {template!r}: unknown placeholder "
                         f"{{{bad[0]}}}; it may hold {{env}}, {{instance}} and {{seed}}")


def describe_exception(prefix: str, err: BaseException) -> str:
    """``"prefix: Type: message (at file:line)"`` for a row's reason, with the innermost frame.

    A ``SyntaxError`` (``IndentationError``, ``TabError``) is placed where the compiler found it:
    the submitted file's line, not the harness line that imported the file.
    """
    if isinstance(err, SyntaxError) and err.filename and err.lineno:
        # The compiler's own place (the user's file and line), not the frame that imported it.
        where = f" (at {Path(err.filename).name}:{err.lineno})"
        text = err.msg or type(err).__name__
        return f"{prefix}: {type(err).__name__}: {text}{where}"
    msg = str(err).strip().splitlines()[0] if str(err).strip() else ""
    where = ""
    tb = [f for f in traceback.extract_tb(err.__traceback__) if not f.filename.startswith("<")]
    if tb:
        frame = tb[-1]
        where = f" (at {Path(frame.filename).name}:{frame.lineno})"
    text = f"{type(err).__name__}: {msg}" if msg else type(err).__name__
    return f"{prefix}: {text}{where}"


@dataclass(frozen=True)
class SubmissionSpec:
    """What the user named on the command line (picklable, sent to workers).

    Attributes:
        source: A path to a ``.py`` file, or a baseline method name.
        checkpoint: For a baseline name: checkpoint path (may hold ``{env}``, ``{instance}``).
        name: Row label override (default: the file's ``NAME``, or the method name).
        train_gradient_steps: Override of the suite's training budget for a learned baseline.
        train_seeds: Training seeds of a learned baseline, each evaluated on every unit and
            day (None: seed 0 only, the result lists no seeds); the checkpoint template may then
            hold ``{seed}``.
        train_seed: The seed one submission process trains or loads (set per process by the
            evaluator from ``train_seeds``).
    """

    source: str
    checkpoint: str | None = None
    name: str | None = None
    train_gradient_steps: int | None = None
    train_seeds: tuple[int, ...] | None = None
    train_seed: int = 0

    def __post_init__(self) -> None:
        if self.checkpoint is not None:
            check_template(self.checkpoint)
        if self.train_seeds is not None:
            seeds = tuple(int(x) for x in self.train_seeds)
            if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
                raise ValueError(f"train_seeds must be distinct seeds >= 0, got {seeds}")
            object.__setattr__(self, "train_seeds", seeds)

    @property
    def is_file(self) -> bool:
        """Whether ``source`` names a Python file (else a baseline name)."""
        return self.source.endswith(".py") or "/" in self.source or Path(self.source).is_file()


@dataclass
class LoadedSubmission:
    """A submission ready to build agents.

    Attributes:
        spec: What was asked for.
        name: Row label.
        kind: ``"file"`` or ``"baseline"``.
        description: One line (from the file's ``DESCRIPTION`` or the method's).
        fingerprint: sha256 of the file's bytes, or of the name, checkpoint bytes and budget.
        learned: Whether it is a learned baseline (None for files: unknown).
        make_agent: ``make_agent(env, env_id, instance_seed, env_kwargs, train_gradient_steps)``.
    """

    spec: SubmissionSpec
    name: str
    kind: str
    description: str
    fingerprint: str
    learned: bool | None
    make_agent: Callable[..., Any]

    def info(self) -> dict[str, Any]:
        """The JSON ``submission`` block of a result."""
        return {
            "name": self.name,
            "kind": self.kind,
            "source": self.spec.source,
            "checkpoint": self.spec.checkpoint,
            "train_gradient_steps": self.spec.train_gradient_steps,
            "train_seeds": None if self.spec.train_seeds is None else list(self.spec.train_seeds),
            "description": self.description,
            "fingerprint": self.fingerprint,
            "learned": self.learned,
        }


def sha256_file(path: Path, limit: int = MAX_CHECKPOINT_BYTES) -> str:
    """sha256 (hex) of a regular file's bytes (:func:`read_bounded`: at most ``limit``).

    Raises:
        SubmissionError: not a regular file of at most ``limit`` bytes.
    """
    return hashlib.sha256(read_bounded(path, limit)).hexdigest()


def load_file(spec: SubmissionSpec, factory_name: str = "make_agent") -> LoadedSubmission:
    """Import a file submission (in the submission's own process) and find ``factory_name``."""
    path = Path(spec.source)
    if not path.is_file():
        raise SubmissionError(f"import failed: no such file {spec.source!r}")
    digest = sha256_file(path, MAX_SOURCE_BYTES)
    module_name = f"tsg_submission_{digest[:12]}"
    try:
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        if module_spec is None or module_spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        module_spec.loader.exec_module(module)
    except BaseException as err:  # noqa: BLE001 - an import must never crash its process
        sys.modules.pop(module_name, None)
        raise SubmissionError(describe_exception("import failed", err)) from err
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise SubmissionError(
            f"import failed: {path.name} defines no callable {factory_name}(env)"
        )

    def make_agent(env: gym.Env, **_: Any) -> Any:
        return factory(env)

    return LoadedSubmission(
        spec=spec,
        name=row_name(spec),
        kind="file",
        description=str(getattr(module, "DESCRIPTION", "")),
        fingerprint=digest,
        learned=None,
        make_agent=make_agent,
    )


def checkpoint_path(template: str, env_id: str, instance_seed: int, seed: int = 0) -> Path:
    """A checkpoint template with ``{env}``, ``{instance}`` and ``{seed}`` filled in."""
    return Path(template.format(env=env_id.replace("/", "_"), instance=instance_seed, seed=seed))


def missing_checkpoints(spec: SubmissionSpec, units: Iterable[tuple[str, int]],
                        need_file: bool = False) -> str | None:
    """Why a baseline's checkpoint template misses some of ``units``, or None.

    A template (``{env}``, ``{instance}``, ``{seed}``) is resolved for every unit and training
    seed before anything is evaluated, so a run over many units fails at once instead of when
    it reaches the first unit without a checkpoint. ``need_file``: the checkpoint must be a
    file (an attacker's), not any existing path.

    Returns:
        ``"checkpoint not found: PATH"`` (``"... and N more"``), or None when all are there or
        ``spec`` has no template.
    """
    if spec.is_file or spec.checkpoint is None or "{" not in spec.checkpoint:
        return None
    seeds = spec.train_seeds if spec.train_seeds is not None else (spec.train_seed,)
    missing: list[Path] = []
    for env_id, instance_seed in units:
        for seed in seeds:
            path = checkpoint_path(spec.checkpoint, env_id, instance_seed, seed)
            there = path.is_file() if need_file else path.exists()
            if not there and path not in missing:
                missing.append(path)
    if not missing:
        return None
    more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
    return f"checkpoint not found: {missing[0]}{more}"


def literal_name(path: str | Path) -> str | None:
    """The file's top-level ``NAME = "..."`` string literal, read without running the file."""
    import ast

    try:
        tree = ast.parse(read_bounded(path, MAX_SOURCE_BYTES).decode("utf-8"))
    except (SubmissionError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError,
            MemoryError):
        return None
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "NAME"
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                and node.value.value):
            return node.value.value
    return None


def row_name(spec: SubmissionSpec) -> str:
    """A row's identity: ``--name``, else a file's literal ``NAME``, else its stem or the method.

    It never depends on running the submission, so a failed and a fixed evaluation of the same
    file land on the same row.
    """
    if spec.name:
        return spec.name
    if spec.is_file:
        return literal_name(spec.source) or Path(spec.source).stem
    return spec.source


def _load_baseline(spec: SubmissionSpec) -> LoadedSubmission:
    try:
        from baselines.api import get_method, method_names
    except Exception as err:  # noqa: BLE001 - reported in the row
        raise SubmissionError(describe_exception("baselines unavailable", err)) from err
    if spec.source not in method_names():
        raise SubmissionError(
            f"unknown submission {spec.source!r}: neither a .py file nor one of "
            f"{', '.join(method_names())}"
        )
    try:
        method = get_method(spec.source)
    except (Exception, SystemExit) as err:
        raise SubmissionError(describe_exception(f"import of {spec.source} failed", err)) from err
    h = hashlib.sha256(f"baseline:{spec.source}:{spec.train_gradient_steps}".encode())
    if spec.train_seeds is not None:
        h.update(f"seeds:{','.join(map(str, spec.train_seeds))}".encode())
    if spec.checkpoint is not None:
        h.update(spec.checkpoint.encode())
        if "{" not in spec.checkpoint:
            path = Path(spec.checkpoint)
            if not path.exists():
                raise SubmissionError(f"checkpoint not found: {spec.checkpoint}")
            if not path.is_dir():
                h.update(sha256_file(path).encode())

    def make_agent(
        env: gym.Env,
        *,
        env_id: str,
        instance_seed: int,
        env_kwargs: dict[str, Any],
        train_gradient_steps: int,
    ) -> Any:
        if spec.checkpoint is not None:
            path = checkpoint_path(spec.checkpoint, env_id, instance_seed, spec.train_seed)
            if not path.exists():
                raise FileNotFoundError(f"checkpoint not found: {path}")
            return method.load(path, env)
        from baselines.api import RunConfig

        steps = (spec.train_gradient_steps if spec.train_gradient_steps is not None
                 else train_gradient_steps)
        with tempfile.TemporaryDirectory(prefix="tsg-lb-") as tmp:
            run = RunConfig(
                algo=spec.source,
                env_id=env_id,
                gradient_steps=int(steps),
                seed=int(spec.train_seed),
                out=Path(tmp),
                instance_seed=int(instance_seed),
                env_kwargs=dict(env_kwargs),
                progress=False,
            )
            return method.train(run)

    return LoadedSubmission(
        spec=spec,
        name=spec.name or spec.source,
        kind="baseline",
        description=method.description,
        fingerprint=h.hexdigest(),
        learned=bool(method.learned),
        make_agent=make_agent,
    )


def describe_submission(spec: SubmissionSpec) -> LoadedSubmission:
    """The submission's row information, without running any of its code.

    A file is hashed and its literal ``NAME`` read (its ``DESCRIPTION`` comes later, from the
    submission's own process); a baseline name is looked up in ``baselines`` (our code). The
    returned ``make_agent`` is only for the submission's process (:mod:`leaderboard.sealed`).

    Raises:
        SubmissionError: an unknown baseline name, a missing file or checkpoint.
    """
    if not spec.is_file:
        return _load_baseline(spec)
    if spec.train_seeds is not None:
        raise SubmissionError("train seeds apply to baseline names only; a file submission "
                              "trains (or not) in its own make_agent")
    path = Path(spec.source)
    if not path.exists():
        raise SubmissionError(f"import failed: no such file {spec.source!r}")
    fingerprint = sha256_file(path, MAX_SOURCE_BYTES)

    def not_here(*_: Any, **__: Any) -> Any:
        raise RuntimeError("a file submission's make_agent runs in its own process only")

    return LoadedSubmission(spec=spec, name=row_name(spec), kind="file", description="",
                            fingerprint=fingerprint, learned=None, make_agent=not_here)


def load_submission(spec: SubmissionSpec) -> LoadedSubmission:
    """Load a file or baseline submission.

    Raises:
        SubmissionError: with the reason, when it cannot be imported or named.
    """
    return load_file(spec) if spec.is_file else _load_baseline(spec)


class GuardedAgent:
    """Wraps a submitted agent: every output is checked, every failure becomes a reason.

    ``act`` converts the output to a float64 array and raises :class:`SubmissionError` when
    ``act`` itself raised, or returned something that is not a finite array of shape (T,).
    Infeasible (but finite, well-shaped) actions pass through: the environment measures and
    projects them, and the evaluator reports them (open track). ``act_batch`` is forwarded, with
    the same checks, when the wrapped agent has it.

    Args:
        agent: The submitted agent.
        n_teams: T, the action length.
    """

    def __init__(self, agent: Any, n_teams: int) -> None:
        if not callable(getattr(agent, "act", None)):
            raise SubmissionError(
                f"make_agent returned {type(agent).__name__}, which has no act(obs, info)"
            )
        self.agent = agent
        self.n_teams = int(n_teams)
        self.where = ""
        self.episode_names: list[str] = []
        self.episodes_started = 0
        if callable(getattr(agent, "act_batch", None)):
            self.act_batch = self._act_batch

    def reset(self) -> None:
        """Start an episode (named by ``episode_names``); forward the agent's ``reset()``."""
        if self.episodes_started < len(self.episode_names):
            self.where = self.episode_names[self.episodes_started]
        self.episodes_started += 1
        fn = getattr(self.agent, "reset", None)
        if callable(fn):
            try:
                fn()
            except Exception as err:
                raise SubmissionError(describe_exception("reset raised", err)) from err

    def _check(self, out: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
        try:
            a = np.asarray(out, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise SubmissionError(
                f"{what} returned {type(out).__name__}, not an array of numbers{self.where}"
            ) from err
        if a.shape != shape:
            raise SubmissionError(f"{what} returned shape {a.shape}, expected {shape}{self.where}")
        if not np.all(np.isfinite(a)):
            bad = "NaN" if np.isnan(a).any() else "inf"
            raise SubmissionError(f"{what} returned {bad}{self.where}")
        return a

    def act(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        """The agent's checked action."""
        try:
            out = self.agent.act(obs, info)
        except SubmissionError as err:
            raise SubmissionError(f"{err}{self.where}") from None
        except Exception as err:
            raise SubmissionError(describe_exception("act raised", err) + self.where) from err
        return self._check(out, (self.n_teams,), "act")

    def _act_batch(self, obs_b: np.ndarray, infos: Any) -> np.ndarray:
        try:
            out = self.agent.act_batch(obs_b, infos)
        except SubmissionError as err:
            raise SubmissionError(f"{err}{self.where}") from None
        except Exception as err:
            raise SubmissionError(describe_exception("act_batch raised", err) + self.where) from err
        return self._check(out, (len(obs_b), self.n_teams), "act_batch")
