"""``python -m experiments.paper.cost``: the full protocol's cost from a timed sample."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import experiments.paper.summary as paper_summary
from experiments.paper import cost
from experiments.paper.config import PaperConfig
from experiments.readme import BLOCKS


def test_fits_and_chunks_by_hand() -> None:
    # two budgets: 2 s at 100 steps, 7 s at 600 -> 10 ms a step on 1 s fixed
    fixed, slope = cost._affine([100, 600], [2.0, 7.0])
    assert fixed == pytest.approx(1.0) and slope == pytest.approx(0.01)
    # a negative intercept (noise) is floored at zero, the slope kept
    fixed, slope = cost._affine([4, 16], [0.1, 1.3])
    assert fixed == 0.0 and slope == pytest.approx(0.1)
    # a negative slope (two nearly equal readings) is none, on the costlier reading
    assert cost._affine([4, 16], [0.8, 0.7]) == (0.8, 0.0)
    # the harness's chunks of a unit's days (tsg_envs.harness.evaluate, batch 64)
    assert cost._chunks(100, 64) == [64, 36]
    assert cost._chunks(10, 64) == [10]
    assert cost._chunks(128, 64) == [64, 64]


def test_derive_extrapolates_one_unit_by_hand() -> None:
    size: dict[str, Any] = {"setup": {"environment": 1.0, "lp": 0.5},
            "train": {"gradient_steps": [100, 600], "cpu_s": [2.0, 7.0], "validation_s": 0.5},
            "evaluate": {"lp": {"days": [4, 16], "cpu_s": [1.0, 2.2]}}}
    cost.derive(size)
    # training: 1 s fixed + 10 ms x 10,000 gradient steps + 6 validations x 0.5 s
    assert size["train"]["unit_s"] == pytest.approx(1.0 + 100.0 + 3.0)
    # rollouts: 0.6 s a batch + 0.1 s a day, over the harness's chunks of 64 and 36 days
    assert size["evaluate"]["lp"]["per_batch_s"] == pytest.approx(0.6)
    assert size["evaluate"]["lp"]["unit_s"] == pytest.approx(2 * 0.6 + 100 * 0.1)
    assert size["unit_s"] == pytest.approx(1.5 + 104.0 + 11.2)
    # 30 days fit in one chunk
    cost.derive(size, gradient_steps=100, days=30)
    assert size["evaluate"]["lp"]["unit_s"] == pytest.approx(0.6 + 30 * 0.1)
    assert size["train"]["unit_s"] == pytest.approx(1.0 + 1.0 + 3.0)


def _size(k: int, x: float = 1.0) -> dict[str, Any]:
    return {"flights": k, "passengers": 100, "setup": {"environment": 1.0 * x},
            "train": {"unit_s": 2.0 * x, "fixed_s": 0.5, "per_step_s": 1e-4,
                      "validation_s": 0.1},
            "evaluate": {"lp": {"unit_s": 0.5 * x}}, "unit_s": 3.5 * x, "sample_cpu_s": 6.0,
            "machine": {"cpu": "test CPU", "cores": "2", "git commit": "abc"}}


def test_protocol_cost_extrapolates_every_point_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    # every point of experiments 2 and 4 has twice the 10-flight sample's passengers
    monkeypatch.setattr(paper_summary, "point_passengers", lambda n, sigma: 200)
    sizes = {k: _size(k) for k in PaperConfig().flights}
    out = cost.protocol_cost(sizes)
    # fig1: 6 flight counts x 30 instances x 3.5 s; fig2: 6 points x 10 x 3.5 x 2; fig4: 7 x 10
    assert out["by_experiment_h"]["fig1"] * 3600 == pytest.approx(6 * 30 * 3.5)
    assert out["by_experiment_h"]["fig2"] * 3600 == pytest.approx(6 * 10 * 7.0)
    assert out["by_experiment_h"]["fig4"] * 3600 == pytest.approx(7 * 10 * 7.0)
    assert out["total_h"] * 3600 == pytest.approx(630 + 420 + 490)
    assert out["by_type_h"]["set-up"] * 3600 == pytest.approx(180 + 120 + 140)
    assert out["by_type_h"]["training"] * 3600 == pytest.approx(2 * 440)
    assert out["evaluation_h"] == pytest.approx(out["by_type_h"]["evaluation: lp"])
    assert out["evaluation_h"] * 3600 == pytest.approx(0.5 * 440)
    hows = {p["experiment"]: p["how"] for p in out["points"]}
    assert hows["fig1"] == "measured" and hows["fig2"] == "10F unit x passengers"


def test_block_says_what_was_measured_and_extrapolated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paper_summary, "point_passengers", lambda n, sigma: 100)
    sizes = {k: _size(k, 10.0) for k in PaperConfig().flights}  # 35 s a unit
    doc = {"command": "python -m experiments.paper.cost", "sample": cost.SAMPLE,
           "sizes": {str(k): v for k, v in sizes.items()}, "cost": cost.protocol_cost(sizes)}
    text = cost.block_text(doc)
    assert "Measured" in text and "Extrapolated" in text
    assert "The sample took 0.6 CPU minutes" in text  # 6 flight counts x 6 s
    # fig1: 6 x 30 x 35 s = 1.75 h; fig2: 6 x 10 x 35 s = 0.58 h; fig4: 7 x 10 x 35 s = 0.68 h
    assert "| **all** (fig1 1.75, fig2 0.58, fig4 0.68) | **3.01** | |" in text
    # training: 20 s of each 35 s unit, 310 units
    assert "| training | 1.72 | 57% |" in text
    # a document missing flight counts says so rather than extrapolating from some
    doc.pop("cost")
    assert "not all flight counts measured" in cost.block_text(doc)


def test_the_committed_cost_covers_the_protocol() -> None:
    path = Path(__file__).resolve().parent.parent / "results" / "paper" / "cost.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert {int(k) for k in doc["sizes"]} == set(PaperConfig().flights)
    by_type = doc["cost"]["by_type_h"]
    assert doc["cost"]["total_h"] == pytest.approx(sum(by_type.values()))
    for s in doc["sizes"].values():
        assert s["unit_s"] == pytest.approx(sum(s["setup"].values()) + s["train"]["unit_s"]
                                            + sum(e["unit_s"] for e in s["evaluate"].values()))
    assert "paper-cost" in BLOCKS


@pytest.mark.slow  # a real sample at 5 flights: about 15 CPU s
def test_measure_flights_times_every_unit_type() -> None:
    s = cost.measure_flights(5, {"instance": 7, "train_steps": [4, 8], "days": [1, 2],
                                 "harness_batch": 64}, gradient_steps=20, days=3)
    assert set(s["setup"]) >= {"environment", "lp", "slack-lp", "myopic", "slack-guided",
                               "harness environments"}
    assert set(s["evaluate"]) == {"lp", "slack-lp", "myopic", "slack-guided", "alpha-ddpg"}
    t = s["train"]
    assert t["unit_s"] == pytest.approx(t["fixed_s"] + 20 * t["per_step_s"]
                                        + 6 * t["validation_s"])
    for e in s["evaluate"].values():  # 3 days fit in one chunk of the harness
        assert e["unit_s"] == pytest.approx(e["per_batch_s"] + 3 * e["per_day_s"])
    assert s["passengers"] > 0 and s["sample_cpu_s"] > 0
