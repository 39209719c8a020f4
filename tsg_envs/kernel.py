"""Which implementation steps the environments: plain numpy, or compiled numba kernels.

The numpy step (:meth:`tsg_envs.ScreeningEnv.step` and :meth:`tsg_envs.ScreeningDay.step`) is
the reference. When numba is installed (``pip install tsg-envs[fast]``; Tianshou, in the
``baselines`` extra, already brings it), the common step (a proposal of the right shape, within
the tolerance of its polytope, expected queue mode) runs as one compiled call that does the
action check, the renormalisation, the queue update and the observation together, with the same
floating-point operations in the same order: every observation, reward, termination and info is
bit for bit the numpy step's (``tests/test_kernel.py`` steps both over many days and
configurations, and a hypothesis property over random proposals). Everything else (proposals
outside the tolerance, sampled queues, the duel's inserted attacker) takes the numpy path.

The native vector environment (:class:`tsg_envs.vector.ScreeningVectorEnv`) has its own compiled
step (``tsg_envs.numba_vector``): every row's action check (every ``invalid_action`` mode),
α-projection, queue update (both queue modes) and observation in two calls, and its resets'
gather of the drawn days in one. Its resets draw the same days bit for bit; its steps make the
same decisions as the numpy vector step and agree with it to rounding (relative 1e-12;
``tests/test_vector_kernel.py``), not bit for bit: numpy's batched products (BLAS, ``einsum``)
sum in an order of their own, which the loops do not copy. So it runs only when asked for,
``TSG_ENVS_KERNEL=numba`` (:func:`vector_kernel_name`): under ``auto`` the vector env, and with
it every evaluation through :mod:`tsg_envs.harness`, keeps the numpy step and the committed
results' numbers bit for bit. Anything unusual (a non-finite or huge entry, a proposal
``"raise"`` refuses, a day that is over, a step in which some days reset while others step)
takes the numpy vector step.

Choose with the environment variable ``TSG_ENVS_KERNEL``, read when an environment is made:

* ``auto`` (default): the single environment's kernel when numba can be imported, else numpy;
  the vector environment's numpy step;
* ``numpy``: always the plain numpy paths;
* ``numba``: both kernels, and an ``ImportError`` at the first step if numba is missing.

``auto`` picks a compiled path only where it gives the numpy path's numbers bit for bit. It is
the default because the single environment's kernel gives the same numbers about twice as fast
(``python -m benchmarks.envs --speed``) and an install without numba loses nothing but speed.
Importing :mod:`tsg_envs` never imports numba: the kernel is imported, and compiled or loaded
from numba's cache (``cache=True``; ``NUMBA_CACHE_DIR`` when the package directory is read-only),
at an environment's first step.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
from collections.abc import Iterator
from typing import Any, Literal

__all__ = ["KERNEL_ENV_VAR", "KernelName", "chosen", "kernel_name", "load_kernel",
           "load_vector_kernel", "vector_kernel_name"]

#: The environment variable that picks the implementation (``auto``, ``numpy`` or ``numba``).
KERNEL_ENV_VAR = "TSG_ENVS_KERNEL"

KernelName = Literal["numpy", "numba"]

_CHOICES = ("auto", "numpy", "numba")


def kernel_name(choice: str | None = None) -> KernelName:
    """The implementation an environment made now uses.

    Args:
        choice: ``auto``, ``numpy`` or ``numba``; None reads ``TSG_ENVS_KERNEL`` (default
            ``auto``).

    Returns:
        ``"numba"`` or ``"numpy"``. ``auto`` gives numba when it is installed (looked up without
        importing it).

    Raises:
        ValueError: An unknown choice (the variable's value is named).
    """
    if choice is None:
        choice = os.environ.get(KERNEL_ENV_VAR, "auto").strip().lower() or "auto"
    if choice not in _CHOICES:
        raise ValueError(f"{KERNEL_ENV_VAR} must be one of {', '.join(_CHOICES)}, got {choice!r}")
    if choice == "auto":
        return "numba" if importlib.util.find_spec("numba") is not None else "numpy"
    return "numba" if choice == "numba" else "numpy"


def vector_kernel_name(choice: str | None = None) -> KernelName:
    """The implementation a vector environment made now uses: numba only when asked for.

    Its compiled step agrees with the numpy vector step to rounding, not bit for bit, so
    ``auto`` keeps numpy there (see the module docstring).

    Args:
        choice: ``auto``, ``numpy`` or ``numba``; None reads ``TSG_ENVS_KERNEL``.

    Raises:
        ValueError: An unknown choice.
    """
    if choice is None:
        choice = os.environ.get(KERNEL_ENV_VAR, "auto").strip().lower() or "auto"
    kernel_name(choice)  # validates
    return "numba" if choice == "numba" else "numpy"


def load_kernel() -> Any:
    """Import the compiled kernel's module (compiling, or loading numba's cache, the first time).

    Raises:
        ImportError: numba is not installed (``pip install tsg-envs[fast]``).
    """
    return _import_compiled("numba_step")


def load_vector_kernel() -> Any:
    """Import the vector environment's compiled step (``tsg_envs.numba_vector``).

    As :func:`load_kernel` imports the single environment's.

    Raises:
        ImportError: numba is not installed (``pip install tsg-envs[fast]``).
    """
    return _import_compiled("numba_vector")


def _import_compiled(module: str) -> Any:
    try:
        return importlib.import_module(f"tsg_envs.{module}")
    except ImportError as exc:  # numba missing or broken
        raise ImportError(
            f"{KERNEL_ENV_VAR}=numba needs numba (pip install 'tsg-envs[fast]'): {exc}"
        ) from exc


@contextlib.contextmanager
def chosen(choice: str) -> Iterator[None]:
    """Set ``TSG_ENVS_KERNEL`` to ``choice`` while environments are made, then restore it.

    The variable is read when an environment is made, so an environment made inside keeps its
    implementation afterwards (the benchmarks and tests make both kinds side by side).
    """
    kernel_name(choice)  # validates
    old = os.environ.get(KERNEL_ENV_VAR)
    os.environ[KERNEL_ENV_VAR] = choice
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(KERNEL_ENV_VAR, None)
        else:
            os.environ[KERNEL_ENV_VAR] = old
