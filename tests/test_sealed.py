"""Sealed evaluation: the submission runs in its own process and cannot reach the evaluator.

Every case runs end to end on a one-unit suite: honest, cheating, crashing, hanging, exiting and
malformed submissions each get their row, and a cheat scores exactly what the honest policy
scores.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest
from conftest import tiered

from leaderboard.evaluate import evaluate_submission
from leaderboard.runner import Execution
from leaderboard.sealed import Limits
from leaderboard.submission import SubmissionSpec
from leaderboard.suites import Days, Suite
from tsg_envs.seeds import LEADERBOARD_SEED_BASE

TINY = Suite(
    name="tiny",
    description="test suite",
    env_ids=("tsg/Screening-Window-5F-v1",),
    instance_seeds=(0,),
    arrival_seeds=(LEADERBOARD_SEED_BASE,),
    risk_max_states=3,
    train_gradient_steps=10,
)
FAST = Limits(call_s=10.0, unit_s=120.0, memory_mb=4096)
#: TINY's days, labelled fresh (as if drawn now): what a hard-track row needs.
FRESH = Days("fresh", TINY.arrival_seeds)

HONEST = """
NAME = "{name}"

class Centre:
    def __init__(self, env):
        self.centers = env.unwrapped.polytopes.centers.copy()

    def act(self, obs, info):
        {act_extra}
        return self.centers[info["category"]].copy()

def make_agent(env):
    {make_extra}
    return Centre(env)
"""


def _write(tmp_path: Path, name: str, source: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return str(path)


def _honest(tmp_path: Path, name: str, act_extra: str = "pass", make_extra: str = "pass",
            head: str = "") -> str:
    return _write(tmp_path, name, head + HONEST.format(name=name, act_extra=act_extra,
                                                       make_extra=make_extra))


def _run(path: str, limits: Limits = FAST) -> dict:
    return evaluate_submission(SubmissionSpec(path), TINY,
                               Execution(progress=False, reps=50, limits=limits), days=FRESH)


@pytest.fixture(scope="module")
def honest_doc(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _run(_honest(tmp_path_factory.mktemp("honest"), "honest"))


def _episodes(doc: dict) -> list:
    return [{k: e[k] for k in ("mean_wait", "lp_mean_wait", "proposed_violations")}
            for u in doc["units"] for e in u["episodes"]]


CHEATS = {
    # Shrinks the waits it is handed and the env's risk bound: its own copies only.
    "mutates_its_env": dict(make_extra="env.unwrapped.risk_bound.setflags(write=True); "
                            "env.unwrapped.risk_bound[:] = 1e9"),
    "mutates_obs_and_info": dict(act_extra="obs[:] = 0; info['time'] = -1.0"),
    # Reaches every live environment it can find from inside act (on its first and every 50th
    # call: a sweep of every object is slow) and loosens its bound: in its own process, it finds
    # only its own.
    "reaches_live_objects": dict(head="CALLS = [0]\n", act_extra=(
        "import gc; CALLS[0] += 1; [setattr(o, 'risk_slack', 99.0) for o in "
        "(gc.get_objects() if CALLS[0] % 50 == 1 else ()) "
        "if type(o).__name__ in ('ScreeningEnv', 'ScreeningVectorEnv')]")),
    # Replaces library functions at import: the evaluator's copies are untouched.
    "patches_the_library": dict(head=(
        "import tsg_envs.harness, tsg_envs.rollout, leaderboard.evaluate\n"
        "tsg_envs.harness.delay_ratio = lambda ref, agent: (70.0, None)\n"
        "leaderboard.evaluate.worst_case_risk = lambda *a, **k: None\n"
        "tsg_envs.rollout.LPAgent.act = lambda self, obs, info: 1 / 0\n"
    )),
}


#: One cheat by default: every cheat meets the same defence (the submission's own process).
@pytest.mark.parametrize("case", tiered(CHEATS, {"reaches_live_objects"}))
def test_a_cheat_scores_what_the_honest_policy_scores(case, tmp_path, honest_doc) -> None:
    doc = _run(_honest(tmp_path, case, **CHEATS[case]))
    assert doc["status"] == "ok", doc["error"]
    assert _episodes(doc) == _episodes(honest_doc)
    assert doc["units"][0]["risk"]["risk"] == honest_doc["units"][0]["risk"]["risk"]
    assert doc["track"] == honest_doc["track"] == "hard"


FAILURES = {
    "hangs": (dict(act_extra="import time; time.sleep(60)"), Limits(call_s=2.0, unit_s=120.0),
              "act exceeded the call time limit of 2 s"),
    "exits_in_act": (dict(act_extra="import os; os._exit(0)"), FAST,
                     "the submission's process ended during act (exit code 0)"),
    "killed": (dict(act_extra="import os, signal; os.kill(os.getpid(), signal.SIGTERM)"), FAST,
               "ended during act (killed by SIGTERM)"),
    "keyboard_interrupt_at_import": (dict(head="raise KeyboardInterrupt\n"), FAST,
                                     "import failed: KeyboardInterrupt"),
    "base_exception_in_act": (dict(act_extra="raise BaseException('out')"), FAST,
                              "act raised: BaseException: out"),
    "exhausts_memory": (dict(make_extra="x = bytearray(3 * 2**30)"),
                        Limits(call_s=10.0, unit_s=120.0, memory_mb=1024),
                        "make_agent raised: MemoryError"),
    "slow_make_agent": (dict(make_extra="import time; time.sleep(60)"),
                        Limits(call_s=10.0, unit_s=5.0),
                        "exceeded the unit time limit of 5 s"),
    # A well-framed reply (the right sequence number) whose header is not JSON.
    "malformed_reply": (dict(act_extra=(
        "import gc, struct; [c._sock.sendall(struct.pack('<III', c._seq, 7, 0) + b'garbage') "
        "for c in gc.get_objects() if type(c).__name__ == 'Channel']"
    )), FAST, "malformed reply"),
}


#: One case of each defence by default: the call time limit (the unit's, slow_make_agent, in the
#: hostile tier), a process that ends (killed: hostile), BaseException (at import: hostile), the
#: memory limit and a malformed reply.
@pytest.mark.parametrize("case", tiered(FAILURES, {
    "hangs", "exits_in_act", "base_exception_in_act", "exhausts_memory", "malformed_reply"}))
def test_a_failing_submission_gets_a_failed_row_with_its_reason(case, tmp_path) -> None:
    kwargs, limits, reason = FAILURES[case]
    doc = _run(_honest(tmp_path, case, **kwargs), limits)
    assert doc["status"] == "failed"
    assert reason in doc["error"], doc["error"]
    assert doc["submission"]["name"] == case  # the literal NAME, read without running it


def test_a_stateful_act_is_caught(tmp_path) -> None:
    # Answers depend on how many requests came before: the fresh probe process replays the
    # episode's first requests and gets different answers.
    head = "import numpy as np\nCOUNT = [0]\n"
    path = _honest(tmp_path, "stateful", head=head,
                   act_extra="COUNT[0] += 1; return np.roll(self.centers[info['category']], "
                             "COUNT[0] // 50)")
    doc = _run(path)
    assert doc["status"] == "failed" and "stateful act" in doc["error"], doc["error"]


def test_the_description_comes_from_the_submission_process(tmp_path) -> None:
    from leaderboard.sandbox import sealed_cpu_seconds
    from leaderboard.sealed import isolation

    # It also burns half a CPU second in make_agent, in each of its two processes: the sealed
    # trees' CPU time that the evaluator counts (python -m benchmarks.tests adds it) holds it.
    path = _honest(tmp_path, "described", head='DESCRIPTION = "the centre, sealed"\n',
                   make_extra=("import time; t = time.process_time()\n"
                               "    while time.process_time() - t < 0.5: pass"))
    before = sealed_cpu_seconds()
    doc = _run(path)
    assert doc["status"] == "ok" and doc["submission"]["description"] == "the centre, sealed"
    if isolation().startswith("sealed"):
        assert sealed_cpu_seconds() - before >= 2 * 0.5


def test_a_process_cpu_time_is_read_from_proc() -> None:
    from leaderboard.sandbox_linux import cpu_seconds

    t = os.times()
    got = cpu_seconds([os.getpid()])
    after = os.times()
    tick = 1 / os.sysconf("SC_CLK_TCK")
    assert sum(t[:4]) - 4 * tick <= got <= sum(after[:4]) + 4 * tick  # its children's too


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="time limits"):
        Limits(call_s=0.0)
    with pytest.raises(ValueError, match="memory_mb"):
        Limits(memory_mb=1)


@pytest.mark.hostile  # the memory limit's default case is exhausts_memory (torch: 4 CPU s more)
def test_the_memory_limit_holds_for_a_torch_agent(tmp_path) -> None:
    pytest.importorskip("torch")
    big = _honest(tmp_path, "torch_big", head="import torch\n",
                  make_extra="x = torch.ones(512, 2**20)  # 2 GiB")
    small = _honest(tmp_path, "torch_small", head="import torch\n",
                    make_extra="x = torch.ones(16, 2**20)  # 64 MiB")
    limits = Limits(call_s=10.0, unit_s=120.0, memory_mb=1536)
    doc = _run(big, limits)
    assert doc["status"] == "failed" and "can't allocate memory" in doc["error"], doc["error"]
    assert _run(small, limits)["status"] == "ok"


def test_isolation_read_only_file_system_and_no_network(tmp_path) -> None:
    from leaderboard.sealed import isolation

    state = isolation()
    if os.environ.get("CI") and shutil.which("apt-get"):
        assert shutil.which("bwrap"), "CI installs bubblewrap (.ci/run)"
        assert state.startswith("sealed"), state
    if not state.startswith("sealed"):  # e.g. a container that refuses namespaces
        pytest.skip(f"isolation is {state}")
    outside = tmp_path / "written.txt"
    writes = _honest(tmp_path, "writes", make_extra=f"open({str(outside)!r}, 'w').write('x')")
    doc = _run(writes)
    assert doc["status"] == "failed", doc
    assert "Read-only file system" in doc["error"] or "Permission denied" in doc["error"]
    assert not outside.exists()
    assert doc["provenance"]["isolation"] == state
    own_tmp = _honest(tmp_path, "own_tmp", make_extra=(
        "import tempfile, pathlib; pathlib.Path(tempfile.mkdtemp(), 'x').write_text('ok')"))
    assert _run(own_tmp)["status"] == "ok"  # its private temporary folder is writable
    net = _honest(tmp_path, "net", make_extra=(
        "import socket; socket.create_connection(('192.0.2.1', 9), timeout=2)"))
    doc = _run(net)
    assert doc["status"] == "failed" and "Network is unreachable" in doc["error"], doc["error"]


def test_an_unsealed_run_is_recorded_and_never_ranks_hard(tmp_path, honest_doc) -> None:
    from leaderboard.render import result_row

    off = Limits(call_s=10.0, unit_s=120.0, isolate=False)
    doc = evaluate_submission(SubmissionSpec(_honest(tmp_path, "plain")), TINY,
                              Execution(progress=False, reps=50, limits=off), days=FRESH)
    assert doc["status"] == "ok" and _episodes(doc) == _episodes(honest_doc)
    assert doc["provenance"]["isolation"] == "unsealed: --no-isolation"
    assert doc["track"] == "open" and any(n.startswith("unsealed") for n in doc["notes"])
    # A stored result that claims hard but ran unsealed shows on the open track.
    forged = {**honest_doc, "track": "hard",
              "provenance": {**honest_doc["provenance"], "isolation": "unsealed: forged"}}
    assert result_row(forged)["track"] == "open"
    assert result_row(honest_doc)["track"] == "hard"


def test_requests_are_plain_frames_that_decode_to_equal_values_of_the_same_types() -> None:
    """What the evaluator sends (a request of an act): no pickle, the same values back."""
    import numpy as np

    from leaderboard.sandbox_child import decode, encode

    obs = np.arange(6, dtype=np.float32).reshape(2, 3)[:, ::2]  # not contiguous: sent in C order
    info = {"category": 3, "time": 1.5, "struck": True, "none": None, "nan": float("nan"),
            "queues": np.array([0.25, -np.inf]), "n": np.int64(7), "ok": np.bool_(False),
            "mask": np.zeros((0, 4), np.int8), "nested": [1, (2, "x")]}
    head, payload = encode(("act", (obs, info)))
    assert b"pickle" not in head and len(payload) == 4 * 4 + 2 * 8 + 8 + 1
    method, (obs2, info2) = decode(head, payload)
    assert method == "act" and obs2.dtype == np.float32 and obs2.flags.writeable
    np.testing.assert_array_equal(obs2, obs)
    assert list(info2) == list(info)
    for key, value in info.items():
        got = info2[key]
        assert type(got) is type(value), key
        if isinstance(value, (np.ndarray, np.generic)):
            assert got.dtype == value.dtype and got.shape == value.shape
            np.testing.assert_array_equal(got, value)
        elif key == "nan":
            assert got != got
        else:
            assert got == value
    for bad in (object(), np.array(["text"]), np.array([None], dtype=object), {1, 2}):
        with pytest.raises(TypeError, match="cannot send"):
            encode(bad)


def test_the_submission_process_imports_none_of_the_evaluators_modules() -> None:
    """``leaderboard.sealed`` (what a sandbox imports) pulls in no evaluation, runner or stats."""
    import json
    import subprocess
    import sys

    code = ("import json, sys, leaderboard.sealed, leaderboard.units; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('leaderboard'))))")
    root = str(Path(__file__).resolve().parents[1])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": root})
    loaded = set(json.loads(out.stdout))
    assert loaded.isdisjoint({"leaderboard.evaluate", "leaderboard.runner",
                              "leaderboard.aggregate", "leaderboard.attacker"}), loaded
    assert "leaderboard.sealed" in loaded
