"""README.md and LEADERBOARD.md hold exactly what their committed sources give.

Every number block of the README (``<!-- name:begin -->`` ... ``<!-- name:end -->``) and the
whole of LEADERBOARD.md is regenerated from the committed results files and compared with the
files (``python -m experiments.readme`` rewrites them; ``python -m leaderboard readme`` the
leaderboard's own blocks).
"""

from __future__ import annotations

import re
from pathlib import Path

from experiments import readme
from leaderboard import readme as board_readme

ROOT = Path(__file__).resolve().parent.parent


def test_readme_and_leaderboard_match_their_sources() -> None:
    assert readme.check(ROOT) == [], "run: python -m experiments.readme"


def test_the_leaderboard_command_checks_its_own_blocks() -> None:
    from leaderboard.__main__ import main

    assert set(board_readme.BLOCKS) < set(readme.BLOCKS)
    assert main(["readme", "--check"]) == 0


def test_every_readme_block_has_a_generator() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    names = set(re.findall(r"<!-- ([a-z-]+):begin -->", text))
    assert names == set(readme.BLOCKS)
