"""The experiments' scripts (``experiments/``, not installed): tiny-budget smoke runs.

The paper's experiments have their own file, ``test_paper.py``; the README's blocks are checked
in ``test_readme.py``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest


def test_multiseed_runs_each_unit_and_seed_once_with_its_budget(tmp_path: Path, capsys) -> None:
    """The resumable multi-seed runner: one run per (method, unit, seed), a per-method budget,
    finished runs skipped, and a finished run with another budget refused."""
    import json

    pytest.importorskip("torch")
    pytest.importorskip("tianshou")
    from experiments import multiseed

    out = tmp_path / "ms"
    assert multiseed.main(["--suite", "micro", "--plan", "alpha-ddpg=2@20", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "0 of 2 runs done; training 2"
    done = sorted(out.glob("alpha-ddpg/*/s*/done.json"))
    assert [p.parent.name for p in done] == ["s0", "s1"]
    assert {json.loads(p.read_text())["gradient_steps"] for p in done} == {20}
    assert done[0].parent.parent.name == "tsg_Screening-Window-5F-v1_i0"
    assert multiseed.main(["--suite", "micro", "--plan", "alpha-ddpg=2@20", "--out", str(out)]) == 0
    assert capsys.readouterr().out.splitlines() == ["2 of 2 runs done; training 0"]
    with pytest.raises(SystemExit):
        multiseed.main(["--suite", "micro", "--plan", "alpha-ddpg=1@30", "--out", str(out)])
    assert "trained for 20 gradient steps, not 30" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        multiseed.main(["--suite", "micro", "--plan", "alpha-ddpg=two", "--out", str(out)])


def test_duel_table_script_smoke(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("tianshou")
    from experiments import duel_table

    out = tmp_path / "duel.csv"
    duel_table.main([
        "--defenders", "lp,centre", "--days", "1", "--dqn-steps", "300",
        "--dqn-attackers-per-day", "16", "--out", str(out), "--runs-dir", str(tmp_path / "runs"),
        "--small",
    ])
    rows = list(csv.DictReader(out.open()))
    assert [r["defender"] for r in rows] == ["lp", "centre"]
    for r in rows:
        assert r["within_bound"] == "True"
        assert float(r["worst_case_risk"]) <= float(r["bound"]) + 1e-5
        assert 0.0 <= float(r["random_fraction"]) <= 1.0 + 1e-9
        assert 0.0 <= float(r["dqn_fraction"]) <= 1.0 + 1e-9
