"""Hostile: find the evaluator through ``/proc`` and send it ``__SIGNAL__``.

Sharing the evaluator's PID namespace, a submission SIGSTOPped it (a hang past every limit) or
SIGKILLed it (no row at all). Only the submission's own ancestors that run Python are aimed at
(its evaluator), never another process.
"""

import os
import signal

NAME = "hostile-signals"
SIG = signal.Signals["__SIGNAL__"]


def _ancestors() -> list[tuple[int, str]]:
    out, pid = [], os.getpid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/status") as fh:
                ppid = int(next(x for x in fh if x.startswith("PPid:")).split()[1])
            with open(f"/proc/{ppid}/cmdline", "rb") as fh:
                cmd = fh.read().split(b"\0")[0].decode(errors="replace")
        except (OSError, StopIteration, ValueError):
            break
        if ppid <= 0:
            break
        out.append((ppid, cmd))
        pid = ppid
    return out


def _attack() -> str:
    seen = _ancestors()
    targets = [pid for pid, cmd in seen if "python" in os.path.basename(cmd)]
    notes = [f"ancestors visible: {[cmd.rsplit('/', 1)[-1] for _, cmd in seen]}"]
    for pid in targets[:1]:  # the evaluator: the first Python ancestor
        try:
            os.kill(pid, SIG)
            notes.append(f"__SIGNAL__ sent to {pid}")
        except OSError as err:
            notes.append(f"__SIGNAL__ to {pid}: {err.strerror}")
    try:
        os.kill(os.getppid(), SIG)
        notes.append("__SIGNAL__ sent to the parent")
    except OSError as err:
        notes.append(f"__SIGNAL__ to the parent: {err.strerror}")
    return "; ".join(notes)


DESCRIPTION = _attack()


class Centre:
    def __init__(self, env):
        self.centers = env.unwrapped.polytopes.centers.copy()

    def act(self, obs, info):
        return self.centers[info["category"]].copy()


def make_agent(env):
    return Centre(env)
