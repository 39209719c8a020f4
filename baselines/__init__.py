"""Baselines for tsg-envs: the paper's α-projected DDPG, its rivals and exact LP policies.

Light on import: methods are loaded lazily through :mod:`baselines.api`, so the LP baselines
never import torch. Train one with ``python -m baselines.train --algo NAME``.
"""

from baselines.api import METHOD_MODULES, Method, RunConfig, get_method, method_names

__all__ = ["METHOD_MODULES", "Method", "RunConfig", "get_method", "method_names"]
