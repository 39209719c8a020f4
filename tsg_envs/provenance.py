"""Where a result came from: the one provenance helper (commit, versions, machine).

Every results file, benchmark table and leaderboard row records its provenance through these
functions, so a number can be traced to the code and the machine that made it.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["REPO_ROOT", "PACKAGES", "cpu_model", "git", "git_commit", "provenance"]

#: The checkout this package was imported from (where git is asked).
REPO_ROOT = Path(__file__).resolve().parent.parent

#: The packages whose versions a result records.
PACKAGES = (
    "tsg-envs",
    "numpy",
    "scipy",
    "highspy",
    "gymnasium",
    "pettingzoo",
    "torch",
    "tianshou",
    "rliable",
)


def cpu_model() -> str | None:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else ``platform.processor()``)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def git(args: list[str], cwd: Path | None = None) -> str | None:
    """``git ARGS`` in the checkout (stripped stdout), or None when git or the repo is absent."""
    try:
        out = subprocess.run(
            ["git", *args], cwd=cwd or REPO_ROOT, capture_output=True, text=True, timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def git_commit(
    short: int | None = 12, dirty_paths: tuple[str, ...] | None = (), cwd: Path | None = None
) -> str | None:
    """HEAD's hash (``short`` hex digits, or all when None), ``+dirty`` if tracked files differ.

    Args:
        short: Hex digits of the hash (None: the full hash).
        dirty_paths: Paths whose uncommitted changes add ``+dirty`` (``()``: the whole tree);
            None never adds it.
        cwd: The checkout (default: the one this package lives in).

    Returns:
        The hash, or None outside a git checkout.
    """
    commit = git(["rev-parse", "HEAD"], cwd)
    if not commit:
        return None
    if short is not None:
        commit = commit[:short]
    if dirty_paths is not None:
        status = git(["status", "--porcelain", "--untracked-files=no", "--", *dirty_paths], cwd)
        if status:
            commit += "+dirty"
    return commit


#: Paths of generated outputs, left out of the ``git_dirty`` check.
OUTPUT_DIRS = ("results", "runs", "LEADERBOARD.md", "README.md", "docs/leaderboard.html")


def provenance(repo: Path | None = None) -> dict[str, Any]:
    """Package versions, Python, platform, hardware, git commit (None outside a repository).

    ``git_dirty`` says whether tracked code differs from the commit; generated outputs
    (:data:`OUTPUT_DIRS`) are left out, since regenerating them is what a run does.
    """
    packages: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            packages[name] = None
    commit = git(["rev-parse", "HEAD"], repo)
    dirty = None
    if commit is not None:
        # Outputs (results, runs) being regenerated do not make the code dirty.
        status = git(["status", "--porcelain", "--untracked-files=no", "--", ".",
                      *(f":(exclude){p}" for p in OUTPUT_DIRS)], repo)
        dirty = None if status is None else bool(status)
    return {
        "packages": packages,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "hardware": {
            "machine": platform.machine(),
            "processor": cpu_model(),
            "cpu_count": os.cpu_count(),
        },
        "git_commit": commit,
        "git_dirty": dirty,
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
    }
