"""Results you can trust (SPEC §7): each attack of the adversarial review, mounted against the code.

* a forged aggregate and track (digest recomputed) is shown as its episodes say, and ``verify``
  refuses it before anything runs;
* a forged ``.verified`` sidecar (the sha256 anyone can compute, or a signature by an unknown
  key) never makes a row verified; an edited signed result loses its signature;
* a planted checkpoint (a pickle that runs code) is never loaded: the panel's are hash-checked,
  every load is ``weights_only=True``, and no load path in the leaderboard or the baselines
  unpickles a file;
* a lookahead over the public days gains nothing on the board: only fresh days rank hard;
* every bad command line and input exits 2 with one line, before anything runs or is written.
"""

from __future__ import annotations

import ast
import base64
import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from leaderboard import signing
from leaderboard.aggregate import iqm_interval, rliable_interval
from leaderboard.evaluate import evaluate_submission
from leaderboard.render import _md_code, _md_escape, collect_results, render_html, result_row
from leaderboard.runner import Execution
from leaderboard.schema import load_result, metrics_digest, save_result
from leaderboard.submission import SubmissionSpec, check_template
from leaderboard.suites import Days, fresh_days, get_suite, parse_days
from leaderboard.summary import summarize, summary_differences
from leaderboard.units import make_unit_env
from leaderboard.verify import content_sha, is_verified, sidecar_path, verify
from tsg_envs.rollout import CentreAgent, rollout
from tsg_envs.seeds import LEADERBOARD_SEED_BASE
from tsg_envs.validation import cli_real

ROOT = Path(__file__).resolve().parent.parent
MICRO = get_suite("micro")
RUN = Execution(progress=False, reps=200)
INFEASIBLE = """
import numpy as np
NAME = "one-team"
class A:
    def act(self, obs, info):
        a = np.zeros(10); a[0] = 1.0; return a
def make_agent(env):
    return A()
"""


def _write(doc: dict, path: Path) -> None:
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def _redigest(doc: dict) -> dict:
    doc["metrics_digest"] = metrics_digest(doc)
    return doc


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Signed results on the micro suite: the LP on fresh days, an infeasible file on fresh days."""
    out = tmp_path_factory.mktemp("board")
    subs = tmp_path_factory.mktemp("subs")
    (subs / "one_team.py").write_text(INFEASIBLE)
    lp = evaluate_submission(SubmissionSpec("lp"), MICRO, RUN, days=fresh_days(2))
    bad = evaluate_submission(SubmissionSpec(str(subs / "one_team.py")), MICRO, RUN,
                              days=fresh_days(2))
    return {"lp": save_result(lp, out), "bad": save_result(bad, out), "dir": out}


# Signatures and recomputation -----------------------------------------------------------------
def test_an_evaluation_is_signed_and_records_fresh_days(board):
    doc = load_result(board["lp"])
    assert doc["days"]["kind"] == "fresh" and len(doc["days"]["seeds"]) == 2
    assert all(LEADERBOARD_SEED_BASE <= s < 2**63 for s in doc["days"]["seeds"])
    assert [e["arrival_seed"] for e in doc["units"][0]["episodes"]] == doc["days"]["seeds"]
    assert doc["units"][0]["risk"]["arrival_seed"] == doc["days"]["seeds"][0]
    check = signing.check_signature(doc, signing.trusted_keys())
    assert check.ok, check.why
    # the test process's own key: trusted on this machine, not by the committed board
    assert not signing.check_signature(doc, signing.committed_keys()).ok
    assert summary_differences(doc) == []  # the evaluator's summary is what summarize gives
    row = result_row({**doc, "_path": str(board["lp"])})
    assert (row["track"], row["verified"]) == ("hard", "signed")


def test_forged_aggregate_and_track_are_recomputed_and_refused(board, tmp_path):
    """The review's forgery: an open row with violations rewritten as hard, 0 violations."""
    doc = load_result(board["bad"])
    assert doc["track"] == "open" and doc["aggregate"]["proposed_violations"] > 0
    forged = json.loads(json.dumps(doc))
    forged["aggregate"]["proposed_violations"] = 0
    forged["aggregate"]["ratio_vs_lp"]["iqm"] = 3.03
    forged["track"], forged["notes"] = "hard", []
    path = tmp_path / "one-team--micro.json"
    _write(_redigest(forged), path)
    loaded = load_result(path)  # the digest matches: the file itself is well formed
    assert "stored aggregate differs from what its episodes give" in summary_differences(loaded)
    [shown] = collect_results(tmp_path)
    assert shown["track"] == "open" and shown["_verified"] == "no"
    assert shown["aggregate"]["proposed_violations"] == doc["aggregate"]["proposed_violations"]
    assert shown["aggregate"]["ratio_vs_lp"] == doc["aggregate"]["ratio_vs_lp"]
    v = verify(path, RUN)
    assert not v.ok and "forged or edited" in v.message
    assert not sidecar_path(path).exists()


def test_forged_episode_ratio_is_caught(board, tmp_path):
    doc = load_result(board["lp"])
    doc["units"][0]["episodes"][0]["ratio_vs_lp"] = 3.0  # its waits say 1.0
    doc.update(summarize(doc))  # a careful forger makes the aggregate agree
    path = tmp_path / "lp--micro.json"
    _write(_redigest(doc), path)
    problems = summary_differences(load_result(path))
    assert any("ratio_vs_lp 3.0 is not lp_mean_wait / mean_wait" in p for p in problems)
    assert not verify(path, RUN).ok


def test_edited_signed_result_loses_its_signature(board, tmp_path):
    doc = load_result(board["lp"])
    ep = doc["units"][0]["episodes"][0]
    ep["mean_wait"] = ep["mean_wait"] / 2  # the agent "waits half as long"
    ep["ratio_vs_lp"] = ep["lp_mean_wait"] / ep["mean_wait"]
    ep["ratio_vs_slack_guided"] = ep["slack_guided_mean_wait"] / ep["mean_wait"]
    doc.update(summarize(doc))  # everything consistent, but the signature is the old one
    path = tmp_path / "lp--micro.json"
    _write(_redigest(doc), path)
    check = signing.check_signature(load_result(path), signing.trusted_keys())
    assert not check.ok and "edited after signing" in check.why
    [shown] = collect_results(tmp_path)
    assert (shown["track"], shown["_verified"]) == ("open", "no")
    assert any(n.startswith("unverified (signature by key") for n in shown["notes"])


def test_a_result_signed_by_an_unknown_key_is_unverified(board, tmp_path, monkeypatch):
    doc = load_result(board["lp"])
    monkeypatch.setenv(signing.KEY_ENV, str(tmp_path / "stranger" / "key"))
    stranger = signing.sign_result(doc)
    monkeypatch.undo()
    check = signing.check_signature(stranger, signing.trusted_keys())
    assert not check.ok and "does not trust" in check.why
    (tmp_path / "r").mkdir()
    _write(stranger, tmp_path / "r" / "lp--micro.json")
    [shown] = collect_results(tmp_path / "r")
    assert (shown["track"], shown["_verified"]) == ("open", "no")


def test_hand_written_sidecars_never_verify(board, tmp_path):
    doc = load_result(board["lp"])
    path = tmp_path / "lp--micro.json"
    _write(doc, path)
    side = sidecar_path(path)
    # the old sidecar: the sha256 of the file, which anyone can compute
    import hashlib

    side.write_text(json.dumps({"result_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                                "bit_for_bit": True}))
    assert not is_verified(path).ok
    # the new layout with the right content hash, unsigned
    record = {"result_sha256": content_sha(doc), "bit_for_bit": True}
    side.write_text(json.dumps(record))
    assert is_verified(path).why == "verification unsigned"
    # signed by a key nobody trusts
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    key = Ed25519PrivateKey.generate()
    pub = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    record["signature"] = {
        "algorithm": "ed25519", "key_id": signing.key_id(pub),
        "public_key": base64.b64encode(pub).decode(),
        "value": base64.b64encode(key.sign(signing.VERIFICATION_DOMAIN
                                           + signing.canonical(record))).decode()}
    side.write_text(json.dumps(record))
    check = is_verified(path)
    assert not check.ok and "does not trust" in check.why
    assert collect_results(tmp_path)[0]["_verified"] == "signed"  # the result's own signature


def test_verify_replays_fresh_days_and_signs_its_sidecar(board, tmp_path):
    doc = load_result(board["lp"])
    path = tmp_path / "lp--micro.json"
    _write(doc, path)
    v = verify(path, RUN)
    assert v.ok, v.message
    assert "aggregate, track and notes equal" in v.message
    record = json.loads(sidecar_path(path).read_text())
    assert record["days"] == doc["days"] and record["result_sha256"] == content_sha(doc)
    assert is_verified(path).ok
    assert collect_results(tmp_path)[0]["_verified"] == "yes"
    # the committed board does not trust this machine's key
    assert collect_results(tmp_path, signing.committed_keys())[0]["_verified"] == "no"
    # an edit after verification: no longer verified (and no longer signed)
    doc["submission"]["description"] = "edited"
    _write(_redigest(doc), path)
    assert not is_verified(path).ok
    assert collect_results(tmp_path)[0]["_verified"] == "no"


def test_the_committed_board_is_signed_by_the_committed_key():
    """Every committed result: signed by a committed key, its summary what its episodes give."""
    trusted = signing.committed_keys()
    docs = collect_results(ROOT / "results" / "leaderboard", trusted)
    assert docs
    for doc in docs:
        raw = load_result(doc["_path"])  # the file as signed (the render's doc carries notes)
        assert signing.check_signature(raw, trusted).ok, doc["_path"]
        assert doc["_verified"] in ("yes", "signed"), doc["_path"]
        assert summary_differences(raw) == [], doc["_path"]
        if doc["_verified"] == "yes":
            assert is_verified(doc["_path"], trusted).ok


def test_the_vectorised_bootstrap_is_rliables():
    rng = np.random.default_rng(3)
    for shape in ((5, 6), (2, 1), (20, 9), (3, 3)):
        scores = rng.gamma(2.0, 1.0, size=shape)
        assert iqm_interval(scores, reps=300, seed=1) == rliable_interval(scores, reps=300, seed=1)


@settings(max_examples=40, deadline=None)
@given(runs=st.integers(1, 40), tasks=st.integers(1, 6), reps=st.integers(1, 30),
       seed=st.integers(0, 2**32 - 1))
def test_one_call_draws_the_replications_rliable_draws_one_by_one(runs, tasks, reps, seed):
    # What iqm_interval relies on: choice(runs, shape) once per replication (rliable's draws) is
    # integers(0, runs, (reps, runs, tasks)) in one call, and leaves the generator where it was.
    one_by_one, at_once = np.random.default_rng(seed), np.random.default_rng(seed)
    draws = np.stack([one_by_one.choice(runs, (runs, tasks), replace=True) for _ in range(reps)])
    np.testing.assert_array_equal(draws, at_once.integers(0, runs, size=(reps, runs, tasks)))
    assert one_by_one.integers(0, 2**62) == at_once.integers(0, 2**62)


# Planted checkpoints ---------------------------------------------------------------------------
class _Planted:
    """Runs ``Path(marker).touch()`` when unpickled."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def _plant(path: Path, marker: Path) -> Path:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"method": "alpha-ddpg", "algorithm": _Planted(marker)}, path)
    return path


def test_a_planted_panel_checkpoint_is_never_loaded(tmp_path, monkeypatch):
    from leaderboard import attacker

    marker = tmp_path / "pwned"
    name = next(iter(attacker.panel_hashes()))
    monkeypatch.setattr(attacker, "PANEL_DIR", tmp_path / "panel")
    _plant(tmp_path / "panel" / "alpha-ddpg" / name, marker)
    env, _, inst = Path(name).stem.rpartition("_i")
    with pytest.raises(ValueError, match="does not match its committed sha256"):
        attacker.panel_checkpoint(env.replace("_", "/", 1), int(inst))
    assert not marker.exists()
    with pytest.raises(ValueError, match="no committed alpha-DDPG panel checkpoint"):
        attacker.panel_checkpoint("tsg/Screening-v1", 99)


def test_checkpoint_loads_refuse_code(tmp_path):
    import pickle

    from baselines.checkpoint import convert
    from baselines.ddpg import load

    marker = tmp_path / "pwned"
    path = _plant(tmp_path / "run" / "best.pt", marker)
    with pytest.raises(FileNotFoundError, match="old pickled format"):
        load(tmp_path / "run", None)
    with pytest.raises(pickle.UnpicklingError):  # the one-off converter reads weights only
        convert(path)
    assert not marker.exists()


#: Loads that unpickle on purpose: a training run resuming its own replay buffer / ES state from
#: its own output folder (never a result's or a submission's).
RESUME_UNPICKLES = {("baselines/es_guided.py", "loads")}


def test_no_load_path_unpickles_a_file():
    """Every torch.load says weights_only=True; pickle.load(s) only where a run resumes itself.

    The sandbox's requests and replies are plain frames both ways: no pickle in the leaderboard.
    """
    found = []
    for package in ("leaderboard", "baselines", "tsg_envs"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                    continue
                owner = getattr(node.func.value, "id", None)
                if owner == "torch" and node.func.attr == "load":
                    kw = {k.arg: k.value for k in node.keywords}
                    ok = isinstance(kw.get("weights_only"), ast.Constant) and \
                        kw["weights_only"].value is True
                    found.append((rel, "torch.load", ok))
                elif owner == "pickle" and node.func.attr in ("load", "loads"):
                    found.append((rel, node.func.attr, (rel, node.func.attr) in RESUME_UNPICKLES))
                elif owner == "np" and node.func.attr == "load":
                    kw = {k.arg: k.value for k in node.keywords}
                    safe = "allow_pickle" not in kw or (  # numpy's default refuses pickles
                        isinstance(kw["allow_pickle"], ast.Constant)
                        and kw["allow_pickle"].value is False)
                    found.append((rel, "np.load", safe))
    bad = [f for f in found if not f[2]]
    assert not bad, bad
    assert any(f[1] == "torch.load" for f in found)
    assert not [p for p in (ROOT / "leaderboard").rglob("*.py")
                if "import pickle" in p.read_text(encoding="utf-8")]


# Fresh days and the lookahead --------------------------------------------------------------------
def test_fresh_days_are_drawn_fresh():
    a, b = fresh_days(5), fresh_days(5)
    assert a.kind == "fresh" and len(set(a.seeds)) == 5 and a.seeds != b.seeds
    assert all(LEADERBOARD_SEED_BASE <= s < 2**63 for s in a.seeds + b.seeds)
    assert parse_days("public", MICRO) == Days("public", MICRO.arrival_seeds)
    assert parse_days(f"{2**31},{2**31 + 7}", MICRO) == Days("chosen", (2**31, 2**31 + 7))


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.text(max_size=30), st.lists(st.integers(-5, 2**64), min_size=1,
                                                 max_size=4).map(lambda s: ",".join(map(str, s)))))
def test_parse_days_accepts_only_valid_days(text):
    try:
        days = parse_days(text, MICRO)
    except ValueError:
        return
    assert days.kind in ("fresh", "public", "chosen")
    assert all(LEADERBOARD_SEED_BASE <= s < 2**63 for s in days.seeds)
    assert len(set(days.seeds)) == len(days.seeds) >= 1


def test_a_result_on_public_days_never_ranks_hard_whatever_it_claims(board, tmp_path):
    """The lookahead's defence in the default tier (the attack itself is in the hostile tier).

    The LP's fresh-day row relabelled as played on the suite's public days, the kind of days a
    lookahead can replay, and claiming the hard track (digest recomputed): shown on the open
    track with the public-days note, as the evaluator itself writes such a row.
    """
    doc = load_result(board["lp"])
    assert doc["track"] == "hard"
    doc["days"] = {**doc["days"], "kind": "public"}
    assert summarize(doc)["track"] == "open"
    assert any(n.startswith("the suite's public days") for n in summarize(doc)["notes"])
    path = tmp_path / "lp--micro.json"
    _write(_redigest(doc), path)  # still claims hard
    assert summary_differences(load_result(path))
    [shown] = collect_results(tmp_path)
    assert shown["track"] == "open" and result_row(shown)["track"] == "open"


@pytest.mark.hostile  # four sealed runs replaying five days each (its defence: the test above)
def test_a_lookahead_over_public_days_gains_nothing_on_the_board(tmp_path):
    src = str(ROOT / "tests" / "hostile" / "lookahead.py")
    spec = SubmissionSpec(src)
    public = evaluate_submission(spec, MICRO, RUN, days=parse_days("public", MICRO))
    fresh = evaluate_submission(spec, MICRO, RUN, days=fresh_days(2))
    assert public["status"] == fresh["status"] == "ok"
    # On the public days it plays like the LP (it replayed them); on fresh days like the centre
    # (peer check: the centre rolled out directly on the same days, equal to rounding, as in
    # test_leaderboard's end-to-end test).
    assert public["aggregate"]["ratio_vs_lp"]["iqm"] == pytest.approx(1.0, abs=1e-9)
    (unit,) = MICRO.units
    env = make_unit_env(*unit, MICRO.kwargs())
    for ep, seed in zip(fresh["units"][0]["episodes"], fresh["days"]["seeds"], strict=True):
        assert ep["arrival_seed"] == seed
        direct = rollout(env, CentreAgent(env), seed=seed).mean_wait
        assert ep["mean_wait"] == pytest.approx(direct, rel=1e-12)
    assert fresh["aggregate"]["ratio_vs_lp"]["iqm"] < 0.8
    assert public["track"] == "open"
    assert any(n.startswith("the suite's public days") for n in public["notes"])
    save_result(public, tmp_path)
    (tmp_path / "f").mkdir()
    rows = [result_row(d) for d in collect_results(tmp_path)]
    assert [r["track"] for r in rows] == ["open"]  # never on the hard track


# Command lines ---------------------------------------------------------------------------------
def _cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "leaderboard", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


BAD_EVALUATIONS = [
    ["--agent", "lp", "--suite", "nope"],
    ["--agent", "lp", "--unit-timeout", "inf"],
    ["--agent", "lp", "--call-timeout", "nan"],
    ["--agent", "lp", "--call-timeout", "-1"],
    ["--agent", "lp", "--unit-timeout", "0"],
    ["--agent", "lp", "--memory-mb", "10"],
    ["--agent", "lp", "--reps", "0"],
    ["--agent", "alpha-ddpg", "--checkpoint", "ckpt/{nope}"],
    ["--agent", "alpha-ddpg", "--checkpoint", "ckpt/{"],
    ["--agent", "alpha-ddpg", "--checkpoint", "ckpt/{env!r}"],
    ["--agent", "alpha-ddpg", "--checkpoint", "ckpt/{env}_i{instance}/missing"],
    ["--agent", "alpah-ddpg"],
    ["--agent", "missing.py"],
    ["--agent", "zero.py"],
    ["--agent", "fifo.py"],
    ["--agent", "big.py"],
    ["--attacker", "nope"],
    ["--agent", "lp", "--days", "12"],
    ["--agent", "lp", "--days", "tomorrow"],
    ["--agent", "lp", "--days", f"{2**31},{2**31}"],
    ["--agent", "lp", "--out", "a_file"],
    ["--agent", "lp", "--out", "a_file/below"],
    ["--agent", "lp", "--backend", "local", "--address", "x:1"],
]


@pytest.fixture()
def cli_dir(tmp_path: Path) -> Path:
    (tmp_path / "a_file").write_text("x")
    os.symlink("/dev/zero", tmp_path / "zero.py")
    os.mkfifo(tmp_path / "fifo.py")
    with open(tmp_path / "big.py", "wb") as fh:
        fh.truncate(17 * 2**20)  # sparse: over the 16 MiB bound
    return tmp_path


def _cli_here(*argv: str, cwd: Path, monkeypatch: pytest.MonkeyPatch,
              capsys: pytest.CaptureFixture[str]) -> subprocess.CompletedProcess:
    """``python -m leaderboard ARGV`` run by its ``main`` in this process (no start-up to pay)."""
    from leaderboard.__main__ import main as leaderboard_main

    monkeypatch.chdir(cwd)
    try:
        code = leaderboard_main(list(argv))
    except SystemExit as stop:  # argparse's usage errors
        code = stop.code if isinstance(stop.code, int) else 1
    out = capsys.readouterr()
    return subprocess.CompletedProcess(list(argv), code, out.out, out.err)


def _check_bad_evaluation(argv: list[str], cli_dir: Path, run: Any) -> None:
    before = sorted(p.name for p in cli_dir.iterdir())
    out = run("evaluate", *([] if "--suite" in argv else ["--suite", "micro"]),
              *([] if "--out" in argv else ["--out", "results_out"]), *argv)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert sorted(p.name for p in cli_dir.iterdir()) == before  # nothing written


def _check_bad_command(argv: list[str], cli_dir: Path, run: Any) -> None:
    before = sorted(p.name for p in cli_dir.iterdir())
    out = run(*argv)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert sorted(p.name for p in cli_dir.iterdir()) == before


# The default tier runs every bad command line through ``main`` in this process, and the first
# of each list as a user runs it (its own process: start-up, imports, exit status); the slow tier
# runs them all in processes of their own (about 2 CPU s each).
@pytest.mark.timeout(300)
@pytest.mark.parametrize("argv", BAD_EVALUATIONS, ids=lambda a: " ".join(a)[:40])
def test_bad_evaluate_command_lines_exit_2_before_any_work(argv, cli_dir, monkeypatch, capsys):
    _check_bad_evaluation(argv, cli_dir, partial(_cli_here, cwd=cli_dir,
                                                 monkeypatch=monkeypatch, capsys=capsys))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("argv", BAD_EVALUATIONS[:1], ids=lambda a: " ".join(a)[:40])
def test_a_bad_evaluate_command_line_exits_2_in_its_own_process(argv, cli_dir):
    _check_bad_evaluation(argv, cli_dir, partial(_cli, cwd=cli_dir))


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("argv", BAD_EVALUATIONS, ids=lambda a: " ".join(a)[:40])
def test_bad_evaluate_command_lines_exit_2_in_their_own_processes(argv, cli_dir):
    _check_bad_evaluation(argv, cli_dir, partial(_cli, cwd=cli_dir))


BAD_COMMANDS = [
    ["render", "--results", "no_such_folder"],
    ["render", "--results", "a_file"],
    ["render", "--results", ".", "--markdown", "."],
    ["verify", "no_such.json"],
    ["verify", "zero.py"],
    ["verify", "--rtol", "inf", "x.json"],
    ["frontier", "--agent", "lp", "--scales", "inf"],
    ["frontier", "--agent", "lp", "--weight", "nan"],
    ["frontier", "--agent", "lp", "--env", "tsg/Nope-v9"],
    ["panel", "--suite", "nope"],
    ["sign", "no_such.json"],
]


@pytest.mark.parametrize("argv", BAD_COMMANDS, ids=lambda a: " ".join(a)[:40])
def test_bad_command_lines_exit_2(argv, cli_dir, monkeypatch, capsys):
    _check_bad_command(argv, cli_dir, partial(_cli_here, cwd=cli_dir, monkeypatch=monkeypatch,
                                              capsys=capsys))


@pytest.mark.parametrize("argv", BAD_COMMANDS[:1], ids=lambda a: " ".join(a)[:40])
def test_a_bad_command_line_exits_2_in_its_own_process(argv, cli_dir):
    _check_bad_command(argv, cli_dir, partial(_cli, cwd=cli_dir))


@pytest.mark.slow
@pytest.mark.parametrize("argv", BAD_COMMANDS, ids=lambda a: " ".join(a)[:40])
def test_bad_command_lines_exit_2_in_their_own_processes(argv, cli_dir):
    _check_bad_command(argv, cli_dir, partial(_cli, cwd=cli_dir))


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr),
                 st.text(max_size=12)))
def test_time_limits_are_finite_and_positive(text):
    import argparse

    parse = cli_real(0.0, low_open=True)
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is not None and np.isfinite(value) and value > 0:
        assert parse(text) == value
    else:
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="{}!:r0aenvistcd_/", max_size=16))
def test_checkpoint_templates(template):
    try:
        check_template(template)
    except ValueError:
        with pytest.raises(ValueError):  # malformed: a template fills or it is refused
            SubmissionSpec("alpha-ddpg", checkpoint=template)
        return
    template.format(env="e", instance=0, seed=1)  # never raises once accepted


# Escaping ---------------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_names_cannot_escape_their_code_span(name):
    cell = _md_code(name)
    fence = cell[:len(cell) - len(cell.lstrip("`"))]
    inner = cell[len(fence):-len(fence)]
    assert cell.endswith(fence) and "\n" not in cell and "\r" not in cell
    assert fence not in inner  # no run of backticks as long as the fence inside
    assert "|" not in inner.replace("\\|", "")  # the table's pipes are escaped
    text = _md_escape(name)
    for ch in "`*_[]<>|":
        assert all(text[i - 1] == "\\" for i, c in enumerate(text) if c == ch and i > 0) and \
            not text.startswith(ch)


def test_names_reach_the_board_escaped(board, tmp_path):
    doc = load_result(board["lp"])
    doc["submission"]["name"] = "x` | <script>alert(1)</script> [a](javascript:b) $\\frac$"
    doc = signing.sign_result(_redigest(doc))
    _write(doc, tmp_path / "x.json")
    [shown] = collect_results(tmp_path)
    from leaderboard.render import render_markdown

    md = render_markdown([shown])
    # One code span (a fence longer than the name's backtick run): literal text in Markdown.
    cell = "| ``x` \\| <script>alert(1)</script> [a](javascript:b) $\\frac$`` |"
    assert cell in md and md.count("<script>") == 1
    page = render_html([shown])
    blob = page.split('<script id="lb-data" type="application/json">')[1].split("</script>")[0]
    assert "<" not in blob and json.loads(blob)["suites"][0]["rows"][0]["agent"] == \
        doc["submission"]["name"]


# The environment ------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hnp.arrays(dtype=st.sampled_from(["c16", "?", "U4", "M8[s]", "m8[s]", "O"]),
                  shape=10))
def test_step_refuses_actions_that_are_not_real_numbers(action):
    import gymnasium as gym

    env = gym.make("tsg/Screening-Window-5F-v1").unwrapped
    env.reset(seed=0)
    with pytest.raises(TypeError, match="must be an array of real numbers"):
        env.step(action)


def test_vector_step_refuses_complex_actions():
    import gymnasium as gym

    import tsg_envs  # noqa: F401

    env = gym.make_vec("tsg/Screening-Window-5F-v1", num_envs=2,
                       vectorization_mode="vector_entry_point")
    env.reset(seed=0)
    with pytest.raises(TypeError, match="must be an array of real numbers"):
        env.step(np.full((2, 10), 0.1) + 0j)
    with pytest.raises(TypeError, match="must be an array of real numbers"):
        env.step(np.ones((2, 10), dtype=bool))


@pytest.mark.timeout(60)
def test_schedules_must_be_regular_files(tmp_path):
    from tsg_envs.schedules import ScheduleError, load_departures_csv

    os.mkfifo(tmp_path / "fifo.csv")  # an open() would wait for a writer forever
    os.symlink("/dev/zero", tmp_path / "zero.csv")  # a read would never end
    for name in ("fifo.csv", "zero.csv"):
        with pytest.raises(ScheduleError, match="must be a regular file"):
            load_departures_csv(tmp_path / name)
    import gymnasium as gym

    with pytest.raises(ScheduleError, match="must be a regular file"):
        gym.make("tsg/Screening-v1", schedule=f"csv:{tmp_path / 'zero.csv'}", n_flights=None)
