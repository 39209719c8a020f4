"""tsg-envs: online threat screening games as Gymnasium environments.

``import tsg_envs`` registers every environment id (see :mod:`tsg_envs.registration`).
"""

from tsg_envs.dynamics import Arrivals, ScreeningDay, sample_arrivals, team_waits
from tsg_envs.env import ScreeningEnv
from tsg_envs.game import Game, GameConfig
from tsg_envs.instances import make_game
from tsg_envs.lp import WindowLPSolution, solve_window_lp
from tsg_envs.polytope import (
    FEASIBILITY_TOL,
    InfeasibleRiskBoundError,
    Polytope,
    PolytopeSet,
    alpha_project,
    build_polytopes,
)
from tsg_envs.registration import PRESETS, register_all

__version__ = "0.2.0"

__all__ = [
    "Arrivals",
    "FEASIBILITY_TOL",
    "Game",
    "GameConfig",
    "InfeasibleRiskBoundError",
    "PRESETS",
    "Polytope",
    "PolytopeSet",
    "ScreeningDay",
    "ScreeningEnv",
    "WindowLPSolution",
    "alpha_project",
    "build_polytopes",
    "make_game",
    "sample_arrivals",
    "solve_window_lp",
    "team_waits",
]

register_all()
