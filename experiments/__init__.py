"""The experiments of tsg-envs: the paper's, the studies behind the README's tables, its blocks.

Not installed (``pip install`` ships ``tsg_envs``, ``baselines`` and ``leaderboard`` only): run
each from the repository's root, ``python -m experiments.<name>``. They stand above every
installed package (``tsg_envs`` < ``baselines`` < ``leaderboard`` < ``benchmarks`` <
``experiments``; the import contract in ``pyproject.toml``) and write what the README and
``results/`` show:

* ``experiments.paper``: the paper's four experiments in resumable units (``results/paper/``);
* ``experiments.multiseed``: learned baselines trained on every unit of a suite with several
  seeds (the leaderboard's checkpoints);
* ``experiments.nonlearning_results``, ``experiments.duel_table``, ``experiments.gamma_study``,
  ``experiments.es_ablation``, ``experiments.mu_sweep``: the studies behind the docs' tables;
* ``experiments.readme``: every number block of the README and the docs pages (and
  ``LEADERBOARD.md``) from the committed results files.
"""
