"""How units are run: in this process, in local worker processes or as Ray tasks.

:class:`Execution` holds the execution parameters every long job takes, once: the defender and
attacker evaluations (:func:`leaderboard.evaluate.evaluate_submission`,
:func:`leaderboard.attacker.evaluate_attacker`), ``verify`` (:func:`leaderboard.verify.verify`)
and the paper's experiments (``experiments.paper.run_paper``). None of them changes a result:
the same units give the same records whatever the backend, the worker count or the progress bar.

:func:`map_units` is the one map over units (:meth:`Execution.map` calls it).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from leaderboard.aggregate import BOOTSTRAP_REPS, MAX_REPS
from leaderboard.sealed import Limits

__all__ = ["BACKENDS", "Execution", "map_units"]

#: Where units run: this process or local worker processes, or Ray tasks.
BACKENDS: tuple[str, ...] = ("local", "ray")


@dataclass(frozen=True, kw_only=True)
class Execution:
    """Where and how a job's units run, and within which limits (never what they compute).

    Attributes:
        workers: Units at once: local worker processes (1: this process), or the CPUs of a
            local Ray.
        backend: ``"local"`` (this process or ``workers`` spawned processes) or ``"ray"`` (one
            Ray task per unit: a local Ray started here, or the cluster at ``address``; every
            node needs this package installed).
        address: The Ray cluster's address (``backend="ray"`` only; None: a local Ray).
        progress: Show a progress bar (tqdm, on stderr).
        limits: Time and memory limits of a submission's sealed processes
            (:class:`leaderboard.sealed.Limits`); jobs that run no submission ignore them.
        reps: Bootstrap replications of a result's intervals (evaluations only).
    """

    workers: int = 1
    backend: str = "local"
    address: str | None = None
    progress: bool = True
    limits: Limits = field(default_factory=Limits)
    reps: int = BOOTSTRAP_REPS

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got "
                             f"{self.backend!r}")
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 1:
            raise ValueError(f"workers must be an integer >= 1, got {self.workers!r}")
        if (isinstance(self.reps, bool) or not isinstance(self.reps, int)
                or not 1 <= self.reps <= MAX_REPS):
            raise ValueError(f"reps must be an integer in [1, {MAX_REPS}], got {self.reps!r}")
        if self.address is not None and self.backend != "ray":
            raise ValueError("address names a Ray cluster: it needs backend='ray'")

    def map(self, fn: Callable[[Any], dict[str, Any]], args: list[Any],
            on_done: Callable[[], None] | None = None,
            local: Callable[[Any], dict[str, Any]] | None = None,
            on_result: Callable[[int, dict[str, Any]], None] | None = None,
            ) -> list[dict[str, Any]]:
        """:func:`map_units` with this execution's workers, backend and address."""
        return map_units(fn, args, workers=self.workers, backend=self.backend,
                         address=self.address, on_done=on_done, local=local,
                         on_result=on_result)


def map_units(fn: Callable[[Any], dict[str, Any]], args: list[Any], workers: int = 1,
              backend: str = "local", address: str | None = None,
              on_done: Callable[[], None] | None = None,
              local: Callable[[Any], dict[str, Any]] | None = None,
              on_result: Callable[[int, dict[str, Any]], None] | None = None,
              ) -> list[dict[str, Any]]:
    """``[fn(a) for a in args]``, in this process, ``workers`` local processes or Ray tasks.

    Results come back in the order of ``args`` whatever the backend, so a result never
    depends on timing. ``fn`` must be a module-level function (it is pickled to the workers).

    Args:
        fn: The unit's work.
        args: One argument per unit.
        workers: Local processes (1: this process), or the CPUs of a local Ray.
        backend: ``"local"`` or ``"ray"`` (a local Ray started here, or the cluster at
            ``address``; every node needs this package installed).
        address: Ray cluster address.
        on_done: Called after each unit completed by a worker or a Ray task.
        local: Replaces ``fn`` when running in this process (e.g. to tick a progress bar).
        on_result: Called with (index, result) as soon as each unit completes, in completion
            order (e.g. to save it, so that an interrupted run keeps its finished units).

    A unit that raises stops the run: the units not yet started are cancelled, those running
    finish and are passed to ``on_result`` (hours of a long run are not thrown away), and then
    the first error is raised. An interrupt (Ctrl-C) cancels the units not yet started.
    """
    on_done = on_done or (lambda: None)
    on_result = on_result or (lambda i, r: None)
    outs: list[dict[str, Any] | None] = [None] * len(args)
    if backend == "ray":
        try:
            import ray
        except ImportError as err:
            raise RuntimeError("--backend ray needs Ray: pip install 'tsg-envs[ray]'") from err
        if not ray.is_initialized():
            if address is None:
                ray.init(num_cpus=max(1, workers), include_dashboard=False, log_to_driver=False)
            else:
                ray.init(address=address, log_to_driver=False)
        task = ray.remote(num_cpus=1, max_retries=0)(fn)
        refs = {task.remote(a): i for i, a in enumerate(args)}
        pending = list(refs)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                i = refs[done[0]]
                outs[i] = ray.get(done[0])
                on_result(i, outs[i])
                on_done()
        except BaseException:
            for ref in pending:  # the tasks not finished: none of them will be collected
                ray.cancel(ref)
            raise
        return outs  # type: ignore[return-value]
    if backend != "local":
        raise ValueError(f"backend must be 'local' or 'ray', got {backend!r}")
    if workers <= 1:
        for i, a in enumerate(args):
            outs[i] = (local or fn)(a)
            on_result(i, outs[i])
        return outs  # type: ignore[return-value]
    from concurrent.futures import as_completed

    ctx = multiprocessing.get_context("spawn")
    error: Exception | None = None
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = {pool.submit(fn, a): i for i, a in enumerate(args)}
        try:
            for fut in as_completed(futures):
                if fut.cancelled():
                    continue
                i = futures[fut]
                try:
                    outs[i] = fut.result()
                except Exception as err:  # keep collecting the units already running
                    if error is None:
                        error = err
                        for f in futures:
                            f.cancel()  # those not started yet
                    continue
                on_result(i, outs[i])
                on_done()
        except BaseException:  # an interrupt: do not wait for the queued units
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    if error is not None:
        raise error
    return outs  # type: ignore[return-value]
