"""README.md, the docs pages and LEADERBOARD.md hold exactly what their committed sources give.

Every number block of the README and of the docs pages (``<!-- name:begin -->`` ... ``<!--
name:end -->``, each in whichever page shows it) and the whole of LEADERBOARD.md is regenerated
from the committed results files and compared with the files (``python -m experiments.readme``
rewrites them; ``python -m leaderboard readme`` the leaderboard's own blocks). The whole check
is in the docs tier (``pytest -m docs``, which CI runs); the leaderboard's own blocks are checked
in the default tier too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from experiments import readme
from leaderboard import readme as board_readme

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.docs  # every block of every page regenerated (about 14 CPU s): the docs tier
def test_readme_and_leaderboard_match_their_sources() -> None:
    assert readme.check(ROOT) == [], "run: python -m experiments.readme"


def test_the_leaderboard_command_checks_its_own_blocks() -> None:
    from leaderboard.__main__ import main

    assert set(board_readme.BLOCKS) < set(readme.BLOCKS)
    assert main(["readme", "--check"]) == 0


def test_every_block_of_every_page_has_a_generator_and_is_shown_once() -> None:
    shown: list[str] = []
    for page in board_readme.pages(ROOT):
        text = page.read_text(encoding="utf-8")
        names = re.findall(r"<!-- ([a-z0-9-]+):begin -->", text)
        assert sorted(names) == sorted(re.findall(r"<!-- ([a-z0-9-]+):end -->", text)), page
        shown += names
    assert sorted(shown) == sorted(readme.BLOCKS)  # each block on exactly one page
    assert ROOT / "README.md" in board_readme.pages(ROOT)
    assert ROOT / "docs" / "board.md" in board_readme.pages(ROOT)
