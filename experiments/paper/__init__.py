"""The paper's four experiments (Shah et al., AAAI 2020, "Experiments"), as PNG and CSV.

``python -m experiments.paper [--quick] --out DIR`` (from the repository's root: this package
is not installed) writes, for each experiment, a figure
(``figN_*.png``), its summary (``figN_*.csv``: one row per x value and agent, with means, IQMs
and 95% intervals: ``mean_low``/``mean_high`` a Student-t interval over the instances' means,
``*_days`` rliable's bootstrap over the days of each instance) and its per-episode data
(``figN_*_episodes.csv``), plus ``summary.md`` (our numbers beside the paper's, and the
runtime of the full protocol, measured and extrapolated).

1. **Static vs adaptive** (paper Fig. "Static vs. Adaptive"): delay ratio LP / agent against
   the number of flights, single time window (``tsg/Screening-Window-*``, whose LP is one window
   over the day, as in the paper).
2. **Delay vs risk**: mean wait against the risk allowance ψ = s · ψ^LP (the ratio of ψ_θ
   across θ kept, as in the paper), s from 1.01 up, on the 10-flight window; also as a fraction
   of the same agent's wait at the smallest allowance (the paper's y axis).
3. **Scalability**: the training curve and the wall time to 10,000 gradient steps (the paper's
   mini-batches) against the number of flights, read from the baselines' logs
   (the learning curves experiment 1's units carry; without them ``results/curves/**/curve.csv``
   written by ``baselines`` training runs, or ``python -m benchmarks.training --json`` output
   under ``results/bench*``); when none are found the figure says so and its CSV has
   ``status=missing``.
4. **Delay vs variance**: the delay ratio against the arrival spread 2σ (hours), 10-flight
   window.

**Agents.** The paper's adaptive agent is α-DDPG, trained per instance: with
``adaptive_gradient_steps`` (``--train-adaptive``) it is trained on every (point, instance) unit
at that budget (the paper's 10,000 mini-batches), or ``adaptive_checkpoint`` names trained
policies (a path template with ``{env}``, a slug of the setting, and ``{instance}``); without
either, the non-learning *online* baselines stand in for it and are labelled so: ``slack-
guided`` and ``myopic`` (they are always shown beside it). Every figure also shows the **static
slack LP** (``slack-lp``): it spends the risk budget the LP leaves unused in its non-worst
windows without adapting to queues, so the gap LP → slack LP is the gain from the unused budget,
and slack LP → online the gain from adapting. In the single-window setting the LP has one window
and no unused budget across windows: there the slack LP's gain comes from the polytope slack
(``risk_slack``) and from balancing load across resources.

**Protocol.** Full: 30 instances x 100 arrival samples per point (the paper's), days
``LEADERBOARD_SEED_BASE + d`` (:mod:`tsg_envs.seeds`). ``--quick``: 2 instances x 2 days on fewer
points, for CI.

**Units.** Each (experiment, point, instance) is one unit (:func:`paper_unit`): its set-up, its
α-DDPG training when asked, and every agent's days. A finished unit is cached under
``OUT/units/`` with a key of everything it depends on and reused while the key matches, so runs
resume, can be completed in chunks, and spread over local processes or Ray tasks
(``--workers``, ``--backend ray [--address ADDR]``); the figures are drawn from whatever units
the configuration names.

**Modules**, each one job, from the bottom up: ``config`` (the protocol and the points),
``units`` (a unit, its cache key and file), ``statistics`` (intervals, averages over points,
trend tests), ``figures`` (PNG and CSV), ``summary`` (``summary.md``), ``run`` (compute what is
missing, then draw), ``verify`` (compute cached units again and compare), ``__main__`` (the
command line) and ``cost`` (``python -m experiments.paper.cost``: what the full protocol costs
per unit type, timed on a small sample and extrapolated; ``results/paper/cost.json``).
"""

from experiments.paper.config import AGENT_LABELS, PAPER, PaperConfig
from experiments.paper.run import run_paper
from experiments.paper.units import UNIT_VERSION, paper_unit, unit_key, unit_path
from experiments.paper.verify import UnitCheck, verify_units

__all__ = ["PAPER", "PaperConfig", "run_paper", "AGENT_LABELS", "paper_unit", "unit_key",
           "unit_path", "UNIT_VERSION", "UnitCheck", "verify_units"]

