"""Hostile submissions against the sealed sandbox, as CI runs them: as root, under bubblewrap.

Each test mounts one attack of ``tests/hostile/`` (its README says how) and asserts the outcome:
a failed row with a true reason or an ordinary row, nothing written outside the sandbox, no
process left behind, and the evaluator alive and answering within its limits (a generous
bound on the wall time: a liveness check, not a speed target). Small limits keep each to a few
seconds. Opt in with ``python -m pytest -q -m hostile`` (``.ci/run`` runs them after the default
tier); without a sealed sandbox they fail, they do not skip.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from leaderboard.evaluate import evaluate_submission, make_unit_env
from leaderboard.runner import Execution
from leaderboard.sandbox import isolation
from leaderboard.sandbox_linux import owned_by, state
from leaderboard.sealed import Limits, SealedAgent
from leaderboard.submission import GuardedAgent, SubmissionError, SubmissionSpec
from leaderboard.suites import Days, Suite
from tsg_envs.seeds import LEADERBOARD_SEED_BASE

pytestmark = [pytest.mark.hostile, pytest.mark.timeout(240)]

HOSTILE = Path(__file__).parent / "hostile"
ROOT = Path(__file__).resolve().parent.parent
TINY = Suite(name="tiny", description="test suite", env_ids=("tsg/Screening-Window-5F-v1",),
             instance_seeds=(0,), arrival_seeds=(LEADERBOARD_SEED_BASE,), risk_max_states=3,
             train_gradient_steps=10)
UNIT = ("tsg/Screening-Window-5F-v1", 0)
SMALL = Limits(call_s=3.0, unit_s=90.0, memory_mb=1024, max_procs=64, scratch_mb=256)


@pytest.fixture(scope="module", autouse=True)
def sealed() -> str:
    state_ = isolation()
    if not state_.startswith("sealed"):
        pytest.fail(f"the hostile tier needs the sealed sandbox (bubblewrap with namespaces; "
                    f".ci/run installs it): {state_}", pytrace=False)
    return state_


def _hostile(tmp_path: Path, name: str, **subs: object) -> tuple[str, str, Path]:
    """The attack ``name`` with its placeholders filled: (file, its marker, the outside folder)."""
    mark = f"86400.{uuid.uuid4().int % 10**9:09d}"  # a unique `sleep` duration
    out = tmp_path / "outside"
    out.mkdir()
    text = (HOSTILE / f"{name}.py").read_text()
    for key, value in {"MARK": mark, "OUT": out, **subs}.items():
        text = text.replace(f"__{key}__", str(value))
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return str(path), mark, out


def _marked(mark: str) -> list[int]:
    """Live processes whose command line holds ``mark``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if (mark.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
                    and state(int(pid)) not in ("", "Z")):
                found.append(int(pid))
        except OSError:
            pass
    return found


def _start(path: str, limits: Limits = SMALL) -> SealedAgent:
    return SealedAgent(SubmissionSpec(path), *UNIT, TINY.kwargs(), 10, limits)


def _obs() -> tuple[np.ndarray, dict]:
    return make_unit_env(*UNIT, TINY.kwargs()).reset(seed=LEADERBOARD_SEED_BASE)


def _assert_gone(agent: SealedAgent, mark: str | None = None) -> None:
    """After close: no process of its tree, its user id or its marker is left."""
    box = agent.sandbox
    agent.close()
    assert box.init_pid is None or state(box.init_pid) in ("", "Z")  # gone, or dead and unreaped
    if box.uid is not None:
        assert owned_by(box.uid) == []
    if mark is not None:
        assert _marked(mark) == []


def test_remount_and_writes_outside_fail_and_the_row_stays_ordinary(tmp_path, sealed) -> None:
    path, _, out = _hostile(tmp_path, "remount")
    doc = evaluate_submission(SubmissionSpec(path), TINY,
                              Execution(progress=False, reps=50, limits=SMALL),
                              days=Days("fresh", TINY.arrival_seeds))
    assert doc["status"] == "ok" and doc["track"] == "hard", doc["error"]
    assert doc["provenance"]["isolation"] == sealed
    said = doc["submission"]["description"]
    assert "remount /: Operation not permitted" in said, said  # no CAP_SYS_ADMIN, no mount()
    assert "write outside: ok" not in said, said
    assert list(out.iterdir()) == []


def test_the_signing_key_cannot_be_read(tmp_path, monkeypatch, sealed) -> None:
    """The key sits where the sandbox's read-only view would show it: it reads an empty file."""
    import hashlib

    from leaderboard import signing

    folder = Path(tempfile.mkdtemp(prefix=".hostile-key-", dir=ROOT))  # visible, read-only
    try:
        key = folder / "signing_key"
        monkeypatch.setenv(signing.KEY_ENV, str(key))
        signing.load_key(create=True)
        # Readable by anyone, in a folder anyone may enter: only the sandbox's mask stops the read.
        folder.chmod(0o755)
        key.chmod(0o644)
        secret = hashlib.sha256(key.read_bytes()).hexdigest()
        path, _, _ = _hostile(tmp_path, "key_read", KEY=key)
        agent = _start(path)
        said = agent.description
        _assert_gone(agent)
    finally:
        shutil.rmtree(folder)
    assert secret not in said, said
    assert f"{key}: read 0 bytes" in said, said  # an empty file where the key is


_EVALUATOR = """
import json, sys
from leaderboard.sealed import Limits, SealedAgent
from leaderboard.submission import SubmissionSpec
agent = SealedAgent(SubmissionSpec(sys.argv[1]), "tsg/Screening-Window-5F-v1", 0,
                    {}, 10, Limits(call_s=3.0, unit_s=60.0, memory_mb=1024))
print("DESCRIPTION " + agent.description, flush=True)
agent.close()
"""


@pytest.mark.parametrize("sig", ["SIGSTOP", "SIGKILL"])
def test_the_evaluator_cannot_be_seen_or_signalled(sig, tmp_path) -> None:
    # The evaluator runs in a child process here, so that a stop or a kill would show as a
    # failure of this test rather than stopping or killing the test run itself.
    path, _, _ = _hostile(tmp_path, "signals", SIGNAL=sig)
    proc = subprocess.Popen([sys.executable, "-c", _EVALUATOR, path], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stopped_since = None
    end = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < end:
        stopped = state(proc.pid) == "T"
        stopped_since = (stopped_since or time.monotonic()) if stopped else None
        if stopped_since is not None and time.monotonic() - stopped_since > 3:
            break
        time.sleep(0.05)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGCONT)
        proc.kill()
        proc.communicate()
        pytest.fail(f"the evaluator was {'stopped' if stopped_since else 'stuck'}")
    out, err = proc.communicate()
    assert proc.returncode == 0, err[-2000:]
    said = next(x for x in out.splitlines() if x.startswith("DESCRIPTION "))
    assert "ancestors visible: ['bwrap']" in said, said  # its namespace: bubblewrap's init only
    assert f"{sig} to the parent: Operation not permitted" in said, said
    assert f"{sig} sent" not in said, said


def test_proc_shows_nothing_of_the_evaluator(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TSG_CANARY", "evaluator-secret-7f3a")
    path, _, _ = _hostile(tmp_path, "proc_read")
    agent = _start(path)
    said = agent.description
    _assert_gone(agent)
    assert "processes visible: 2" in said and "no evaluator visible" in said, said
    assert "/proc/1/environ: Permission denied" in said, said  # bubblewrap's init, not its own
    assert "evaluator-secret" not in said


def test_a_fork_bomb_is_capped_and_leaves_nothing(tmp_path) -> None:
    path, mark, _ = _hostile(tmp_path, "fork_bomb", N=400)
    try:
        agent = _start(path)
    except SubmissionError as err:  # its sleepers hold the cap: the set-up could not start threads
        assert "Resource temporarily unavailable" in str(err), err
    else:
        said = agent.description
        forked = int(said.split()[1])
        assert forked < SMALL.max_procs and "Resource temporarily unavailable" in said, said
        _assert_gone(agent, mark)
    assert _marked(mark) == []


def test_an_orphaned_daemon_dies_with_the_unit(tmp_path) -> None:
    path, mark, out = _hostile(tmp_path, "orphan", DELAY=1.5)
    agent = _start(path)
    assert agent.act(*_obs()).shape == (10,)
    _assert_gone(agent, mark)
    time.sleep(2.5)  # past the daemon's moment to write
    assert list(out.iterdir()) == []
    assert _marked(mark) == []


def test_memory_spread_over_children_kills_the_tree(tmp_path) -> None:
    path, _, _ = _hostile(tmp_path, "memory_children", MB=300)  # 4 x 300 MiB, each under 1 GiB
    t0 = time.monotonic()
    with pytest.raises(SubmissionError, match="over the memory limit of 1024 MiB") as err:
        _start(path)
    assert "the process tree held" in str(err.value)
    assert time.monotonic() - t0 < 60


@pytest.mark.parametrize("folder", ["/dev/shm", "TMPDIR"])
def test_a_scratch_fill_counts_as_memory_and_leaves_nothing(folder, tmp_path) -> None:
    path, mark, _ = _hostile(tmp_path, "shm_fill", DIR=folder, MB=700)
    limits = Limits(call_s=3.0, unit_s=90.0, memory_mb=512, scratch_mb=1024)
    with pytest.raises(SubmissionError, match="over the memory limit of 512 MiB"):
        _start(path, limits)
    assert not Path(f"/dev/shm/hostile-{mark}").exists()
    assert not list(Path("/tmp").glob(f"hostile-{mark}"))


def test_the_scratch_folders_are_small(tmp_path) -> None:
    path, mark, _ = _hostile(tmp_path, "shm_fill", DIR="/dev/shm", MB=100)
    agent = _start(path, Limits(call_s=3.0, unit_s=90.0, memory_mb=2048, scratch_mb=32))
    said = agent.description
    _assert_gone(agent)
    assert said.startswith("wrote ") and int(said.split()[1]) <= 32, said
    assert "No space left on device" in said or "File too large" in said, said
    assert not Path(f"/dev/shm/hostile-{mark}").exists()


def test_an_output_flood_is_capped_and_marked(tmp_path, capfd) -> None:
    path, _, _ = _hostile(tmp_path, "output_flood", MB=8)
    agent = _start(path)
    assert agent.act(*_obs()).shape == (10,)
    agent.close()
    out, err = capfd.readouterr()
    assert out == "" and len(err) < 4 * 1024 * SMALL.output_kib, len(err)
    assert "bytes dropped" in err
    spoofs = [x for x in err.splitlines() if "hard track, ratio vs LP 1.82" in x]
    assert spoofs and all(x.startswith("  | ") for x in spoofs)  # never a line of its own


REPLIES = {
    "partial": "act exceeded the call time limit of 3 s (its reply was incomplete",
    "oversized": "act: reply of 104857600 bytes exceeds the 64 MiB limit",
    "stop": "act exceeded the call time limit of 3 s (the submission's process is stopped",
}


@pytest.mark.parametrize("kind", sorted(REPLIES))
def test_a_bad_reply_fails_within_the_call_limit(kind, tmp_path) -> None:
    path, _, _ = _hostile(tmp_path, "reply", KIND=kind)
    agent = _start(path)
    obs, info = _obs()
    t0 = time.monotonic()
    with pytest.raises(SubmissionError) as err:
        agent.act(obs, info)
    assert REPLIES[kind] in str(err.value), err.value
    assert time.monotonic() - t0 < SMALL.call_s + 10
    _assert_gone(agent)


def test_a_flooded_reply_channel_fails_the_call(tmp_path) -> None:
    path, _, _ = _hostile(tmp_path, "reply", KIND="flood")
    agent = _start(path)
    with pytest.raises(SubmissionError) as err:
        for _ in range(20):
            agent.act(*_obs())
    assert any(x in str(err.value) for x in ("out of sequence", "exceeds the 64 MiB limit",
                                             "malformed reply")), err.value
    _assert_gone(agent)


def test_a_0d_action_is_reported_as_shape_0d(tmp_path) -> None:
    path, _, _ = _hostile(tmp_path, "reply", KIND="zero_d")
    agent = _start(path)
    answer = agent.act(*_obs())
    assert np.shape(answer) == ()
    with pytest.raises(SubmissionError, match=r"act returned shape \(\), expected \(10,\)"):
        GuardedAgent(agent, 10).act(*_obs())
    _assert_gone(agent)


def test_the_hostile_files_are_all_mounted() -> None:
    # The lookahead is a results attack, mounted in tests/test_trust.py.
    tested = Path(__file__).read_text() + (Path(__file__).parent / "test_trust.py").read_text()
    for path in HOSTILE.glob("*.py"):
        assert f'"{path.stem}"' in tested or f'"{path.name}"' in tested, f"{path.name} has no test"
