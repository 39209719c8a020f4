"""What each hostile submission of tests/hostile/ reaches against a given copy of the code.

    python scripts/hostile_report.py CODE [CASE ...] > report.jsonl

CODE is a folder holding ``leaderboard``, ``tsg_envs`` and ``baselines`` (this checkout, or an
older commit's: ``git archive COMMIT leaderboard tsg_envs baselines | tar -x -C /tmp/old``).
Each case evaluates one attack on a one-unit suite (``--call-timeout 5 --unit-timeout 20``,
``--memory-mb 512`` unless the case says otherwise) in an evaluator subprocess, watches that
evaluator (stopped? its tree's resident memory and processes, /dev/shm), and prints one JSON
line: the row (status, error, the attack's own DESCRIPTION), the evaluator's fate and wall
time, processes left behind, files written outside, what was left in /dev/shm and the size of
the evaluator's log. Run it as root with bubblewrap installed (as CI runs the hostile tier).

The committed ``results/hostile/before-bc01ccf.jsonl`` (the code before the sealed sandbox,
commit bc01ccf) and ``results/hostile/after.jsonl`` (this code) came from this script, as root on
a shared 2-core machine with bubblewrap 0.8.0.

Safe by construction: every attack aims at its own evaluator only, sizes are small, and only
processes carrying this run's marker or canary are killed afterwards (others are reported).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOSTILE = Path(__file__).resolve().parent.parent / "tests" / "hostile"
LIMITS = {"call_s": 5, "unit_s": 20, "memory_mb": 512}
CASES = {
    "remount": ("remount.py", {}, LIMITS),
    "sigstop": ("signals.py", {"__SIGNAL__": "SIGSTOP"}, LIMITS),
    "sigkill": ("signals.py", {"__SIGNAL__": "SIGKILL"}, LIMITS),
    "proc_read": ("proc_read.py", {}, LIMITS),
    "fork_bomb": ("fork_bomb.py", {"__N__": "600"}, LIMITS),
    "orphan": ("orphan.py", {"__DELAY__": "2"}, LIMITS),
    "memory_children": ("memory_children.py", {"__MB__": "1000"}, {**LIMITS, "memory_mb": 2048}),
    "shm_fill": ("shm_fill.py", {"__DIR__": "/dev/shm", "__MB__": "1024"}, LIMITS),
    "tmp_fill": ("shm_fill.py", {"__DIR__": "TMPDIR", "__MB__": "1024"}, LIMITS),
    "output_flood": ("output_flood.py", {"__MB__": "64"}, LIMITS),
    "partial_frame": ("reply.py", {"__KIND__": "partial"}, LIMITS),
    "oversized_frame": ("reply.py", {"__KIND__": "oversized"}, LIMITS),
    "frame_flood": ("reply.py", {"__KIND__": "flood"}, LIMITS),
    "zero_d": ("reply.py", {"__KIND__": "zero_d"}, LIMITS),
    "stop_self": ("reply.py", {"__KIND__": "stop"}, LIMITS),
}
DRIVER = """
import json, sys, time
from leaderboard.evaluate import evaluate_submission
from leaderboard.sealed import Limits
from leaderboard.submission import SubmissionSpec
from leaderboard.runner import Execution
from leaderboard.suites import Days, Suite
from tsg_envs.seeds import LEADERBOARD_SEED_BASE
tiny = Suite(name="tiny", description="one unit", env_ids=("tsg/Screening-Window-5F-v1",),
             instance_seeds=(0,), arrival_seeds=(LEADERBOARD_SEED_BASE,), risk_max_states=3,
             train_gradient_steps=10)
t0 = time.monotonic()
doc = evaluate_submission(SubmissionSpec(sys.argv[1]), tiny,
                          Execution(progress=False, reps=50,
                                    limits=Limits(**json.loads(sys.argv[2]))),
                          days=Days("fresh", tiny.arrival_seeds))
print("RESULT " + json.dumps({"status": doc["status"], "error": doc["error"],
      "track": doc["track"], "description": doc["submission"]["description"],
      "isolation": doc["provenance"]["isolation"], "wall_s": round(time.monotonic() - t0, 2)}),
      flush=True)
"""
SANDBOX_UIDS = range(2_000_000_000, 2_000_000_000 + 2**20)


def _procs() -> dict[int, tuple[int, str, int]]:
    out = {}
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            text = Path(f"/proc/{p}/stat").read_text()
            rest = text[text.rindex(")") + 2:].split()
            out[int(p)] = (int(rest[1]), rest[0], int(rest[21]) * os.sysconf("SC_PAGE_SIZE"))
        except (OSError, ValueError, IndexError):
            pass
    return out


def _tree(root: int, table: dict[int, tuple[int, str, int]]) -> list[int]:
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += kids.get(pid, [])
    return out


def _survivors(canary: str, mark: str) -> tuple[list[int], list[int]]:
    """(processes with this run's marker or canary, live processes of a sandbox's user id)."""
    ours, sandboxed = [], []
    table = _procs()
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            if int(p) == os.getpid() or table.get(int(p), (0, "Z"))[1] == "Z":
                continue
            cmd = Path(f"/proc/{p}/cmdline").read_bytes()
            env = Path(f"/proc/{p}/environ").read_bytes()
            uid = os.stat(f"/proc/{p}").st_uid
        except OSError:
            continue
        if mark.encode() in cmd or canary.encode() in env:
            ours.append(int(p))
        elif uid in SANDBOX_UIDS:
            sandboxed.append(int(p))
    return ours, sandboxed


def _shm_used() -> int:
    st = os.statvfs("/dev/shm")
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def run(code: str, case: str) -> dict:
    """Mount one case against ``code``; what it reached."""
    fname, subs, limits = CASES[case]
    work = Path(tempfile.mkdtemp(prefix=f"hostile-{case}-"))
    mark = f"86400.{random.randrange(10**8):08d}"
    canary = f"secret-{mark}"
    text = (HOSTILE / fname).read_text()
    for key, value in {"__MARK__": mark, "__OUT__": str(work), **subs}.items():
        text = text.replace(key, value)
    sub = work / fname
    sub.write_text(text)
    env = {**os.environ, "PYTHONPATH": code, "TSG_CANARY": canary}
    shm0, t0 = _shm_used(), time.monotonic()
    log = work / "evaluator.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(sub), json.dumps(limits)],
                                env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        peak_mem = peak_n = peak_shm = 0
        stopped_at = None
        while proc.poll() is None and time.monotonic() - t0 < 90:
            table = _procs()
            members = [p for p in _tree(proc.pid, table) if p in table and p != proc.pid]
            peak_mem = max(peak_mem, sum(table[p][2] for p in members))
            peak_n = max(peak_n, len(members))
            peak_shm = max(peak_shm, _shm_used() - shm0)
            if table.get(proc.pid, (0, ""))[1] == "T" and stopped_at is None:
                stopped_at = round(time.monotonic() - t0, 1)
            if stopped_at is not None and time.monotonic() - t0 > stopped_at + 30:
                os.kill(proc.pid, signal.SIGCONT)  # waited 30 s: the hang is the finding
            time.sleep(0.05)
        wall = time.monotonic() - t0
        hung = proc.poll() is None
        if hung:
            os.kill(proc.pid, signal.SIGCONT)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    time.sleep(3)  # late writers
    result = None
    for line in log.read_bytes().splitlines():
        if line.startswith(b"RESULT "):
            result = json.loads(line[7:])
    ours, sandboxed = _survivors(canary, mark)
    escaped = sorted(p.name for p in work.iterdir() if p.name not in (fname, "evaluator.log"))
    left_shm = 0
    for f in Path("/dev/shm").glob(f"hostile-{mark}"):
        left_shm += f.stat().st_size
        f.unlink()
    for pid in ours:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    report = {
        "case": case, "wall_s": round(wall, 1),
        "evaluator": "hung (killed after 90 s)" if hung else f"exit {proc.returncode}",
        "evaluator_stopped_at_s": stopped_at, "row": result,
        "peak_tree_resident_mib": round(peak_mem / 2**20), "peak_tree_processes": peak_n,
        "peak_dev_shm_growth_mib": round(peak_shm / 2**20),
        "survivors": len(ours), "sandbox_user_processes_alive": len(sandboxed),
        "written_outside": escaped, "left_in_dev_shm_mib": round(left_shm / 2**20),
        "evaluator_log_bytes": log.stat().st_size,
    }
    shutil.rmtree(work, ignore_errors=True)
    return report


def main(argv: list[str]) -> None:
    """Run the cases named in ``argv[1:]`` (default: all) against the code at ``argv[0]``."""
    code = os.path.abspath(argv[0])
    for case in argv[1:] or CASES:
        print(json.dumps(run(code, case)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
