"""The risk–delay frontier (the paper's Theorem 1): Pareto front and the ψ a weight selects."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from leaderboard.__main__ import main
from leaderboard.frontier import FrontierPoint, pareto_front, select, sweep, write_frontier


def _p(scale: float, risk: float, wait: float) -> FrontierPoint:
    return FrontierPoint(scale=scale, psi=(risk,), risk=risk, bound=risk, mean_wait=wait,
                         days=1, agent="hand")


# Worked by hand: A (risk 1.0, wait 10), B (1.2, 6), C (1.5, 5), D (1.3, 7) and E (1.0, 12).
# D is beaten by B in both (1.2 < 1.3, 6 < 7), E by A (same risk, 10 < 12): the front is A, B, C.
A, B, C, D, E = _p(1.01, 1.0, 10.0), _p(1.1, 1.2, 6.0), _p(2.0, 1.5, 5.0), _p(1.25, 1.3, 7.0), \
    _p(1.05, 1.0, 12.0)
POINTS = [D, C, A, E, B]


def test_the_pareto_front_worked_by_hand() -> None:
    assert pareto_front(POINTS) == [A, B, C]


@pytest.mark.parametrize(("weight", "chosen"), [
    # objective -R - w W:   A          B          C
    (0.0, A),    # w = 0:   -1.0       -1.2       -1.5     -> the least risk
    (0.01, A),   # 0.01:    -1.10      -1.26      -1.55
    (0.1, B),    # 0.1:     -2.00      -1.80      -2.00
    (1.0, C),    # 1:       -11.0      -7.2       -6.5
])
def test_the_weight_selects_the_point_worked_by_hand(weight: float, chosen: FrontierPoint) -> None:
    assert select(POINTS, weight) == chosen
    assert chosen.objective(weight) == pytest.approx(-chosen.risk - weight * chosen.mean_wait)


def test_ties_go_to_the_lower_risk_and_bad_input_is_refused() -> None:
    # w = 0.05: A -1.5, B -1.5, C -1.75: A and B tie, A has the lower risk
    assert select(POINTS, 0.05) == A
    with pytest.raises(ValueError, match="no frontier points"):
        select([], 1.0)
    with pytest.raises(ValueError, match=">= 0"):
        select(POINTS, -1.0)


def test_a_sweep_of_a_resolved_policy_stays_within_each_bound(tmp_path: Path) -> None:
    points = sweep("slack-lp", "tsg/Screening-Window-5F-v1", 0, [1.05, 2.0], days=1,
                   risk_max_states=5, progress=False)
    assert [p.scale for p in points] == [1.05, 2.0]
    for p in points:
        assert p.risk <= p.bound + 1e-6  # re-solved inside the polytopes of its own ψ
    assert points[1].bound == pytest.approx(points[0].bound * 2.0 / 1.05)
    paths = write_frontier(points, [0.0, 1.0], tmp_path)
    assert [p.name for p in paths] == ["frontier.csv", "selection.csv", "frontier.png"]
    with (tmp_path / "selection.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [float(r["weight"]) for r in rows] == [0.0, 1.0]
    # w = 0 asks for the least risk: the tighter bound
    assert float(rows[0]["scale"]) == 1.05


def test_the_frontier_cli_refuses_bad_scales(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["frontier", "--agent", "slack-lp", "--scales", "0.9", "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "must be a finite number > 1, got 0.9" in capsys.readouterr().err
