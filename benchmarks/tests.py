"""How long the README's test command takes, on this machine: ``python -m benchmarks.tests``.

Runs the default test tier exactly as the README's second set-up command does (``python -m
pytest -q`` from the repository's root, after set-up) in a child process, and writes its wall
time, the CPU time of all its processes (pytest-xdist's workers included, and the sealed
submissions' processes, which die outside the process tree: each test process reports theirs
through ``TSG_TESTS_SEALED_CPU_DIR``, see ``tests/conftest.py``), the load average when it
ended and pytest's closing line to ``results/bench_tests.json`` with the machine it ran on;
``python -m experiments.readme`` puts them in the README's ``test-time`` block. A busy machine
stretches the wall time, not the CPU time: the block states both, and how many cores there were.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["run", "block_text", "main"]


def run(args: tuple[str, ...] = ("-q",)) -> dict[str, Any]:
    """Run ``python -m pytest ARGS`` from the root; its times, closing line and machine.

    ``cpu_s`` is every process's CPU time, the sealed submissions' (``sealed_cpu_s``) included.
    """
    from benchmarks.envs import machine_info

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before = os.getloadavg()[0]  # the other work on the machine as the run starts
    with tempfile.TemporaryDirectory(prefix="tsg-test-cpu-") as sealed_dir:
        env = {**os.environ, "TSG_TESTS_SEALED_CPU_DIR": sealed_dir}
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        sealed = sum(float(p.read_text()) for p in Path(sealed_dir).iterdir())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    tree = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [ln.strip("= ").strip() for ln in proc.stdout.splitlines() if ln.strip()]
    closing = next((ln for ln in reversed(lines) if " in " in ln and ("passed" in ln
                                                                      or "failed" in ln)), "")
    return {"command": "python -m pytest " + " ".join(args), "returncode": proc.returncode,
            "wall_s": wall, "cpu_s": tree + sealed, "sealed_cpu_s": sealed,
            "closing_line": closing, "load_average_at_end": list(os.getloadavg()),
            "load_average_at_start": load_before,
            "machine": machine_info()}


def block_text(payload: dict[str, Any], json_path: str = "results/bench_tests.json") -> str:
    """The README's ``test-time`` block from a :func:`run` payload."""
    m = payload["machine"]
    sealed = payload.get("sealed_cpu_s")
    of_which = "" if sealed is None else f" ({sealed / 60:.1f} of it sealed submissions')"
    load, start = payload.get("load_average_at_end"), payload.get("load_average_at_start")
    parts = ([] if start is None else [f"{start:.1f} as it started (other work)"]) + (
        [] if load is None else [f"{load[2]:.1f} over the 15 minutes before it ended (its own "
                                 f"{m['cores']} workers included)"])
    busy = f", load average {', '.join(parts)}" if parts else ""
    return (f"| command | wall time | CPU time (all processes) | pytest's summary |\n"
            f"|---|---:|---:|---|\n"
            f"| `{payload['command']}` | {payload['wall_s'] / 60:.1f} min "
            f"| {payload['cpu_s'] / 60:.1f} min{of_which} | {payload['closing_line']} |\n\n"
            f"({m['cpu']}, {m['cores']} cores{busy}; "
            f"commit {m['git commit']}; `{json_path}` from `python -m benchmarks.tests`)")


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.tests``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tests", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, default=ROOT / "results" / "bench_tests.json",
                        help="where to write the times (default results/bench_tests.json)")
    args = parser.parse_args(argv)
    payload = run()
    args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(block_text(payload))
    return 0 if payload["returncode"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
