"""The rough edges a newcomer hits, each fixed and held here (issue 37).

A syntax error in a submission is reported at the submission's line; the vector environment's
end-of-day error says what to do; an id without ``import tsg_envs`` works through Gymnasium's
``module:id`` form; ``--help`` names the default and the smallest suite; the CLI's LP reference
row uses the agent row's statistic; the page renders the same bytes from the same results, with
one (colour, line style) per agent; figure 3's statistic is worked by hand; the families, the
changelog and the version agree with the registry and the docstrings.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import tsg_envs
from experiments.docs_site import generated_pages
from experiments.paper.statistics import rising_at
from leaderboard.aggregate import profile_interval
from leaderboard.render import agent_styles, collect_results, render_html, render_markdown
from leaderboard.schema import load_result
from leaderboard.submission import SubmissionError, SubmissionSpec, load_file
from tsg_envs.registration import FAMILIES

REPO = Path(__file__).resolve().parent.parent


# -- a submission's syntax error, at its own line ----------------------------------------------

@pytest.mark.parametrize(("source", "where", "kind"), [
    ('NAME = "x"\n\ndef make_agent(env):\n    return (\n', "bad.py:4", "SyntaxError"),
    ("x = 1\nif x\n    pass\n", "bad.py:2", "SyntaxError"),
    ("def make_agent(env):\nreturn 1\n", "bad.py:2", "IndentationError"),
])
def test_a_syntax_error_is_reported_at_the_submissions_line(tmp_path: Path, source: str,
                                                          where: str, kind: str) -> None:
    path = tmp_path / "bad.py"
    path.write_text(source)
    with pytest.raises(SubmissionError) as err:
        load_file(SubmissionSpec(str(path)))
    text = str(err.value)
    assert text.startswith(f"import failed: {kind}: ")
    assert text.endswith(f"(at {where})")
    assert "submission.py" not in text  # not the harness line that imported it


def test_an_error_raised_while_importing_names_the_submissions_frame(tmp_path: Path) -> None:
    path = tmp_path / "raises.py"
    path.write_text("import math\n\nx = math.sqrt(-1)\n")
    with pytest.raises(SubmissionError, match=r"ValueError: math domain error \(at raises.py:3\)"):
        load_file(SubmissionSpec(str(path)))


# -- the vector environment at the day's end ---------------------------------------------------

def test_the_end_of_day_error_says_how_to_step_a_finished_day() -> None:
    envs = gym.make_vec("tsg/Screening-Window-5F-v1", num_envs=2)
    obs, info = envs.reset(seed=0)
    polys = envs.unwrapped.polytopes
    rng = np.random.default_rng(0)
    n = envs.unwrapped.game.n_passengers
    for _ in range(n):
        obs, reward, done, _, info = envs.step(polys.sample(info["category"], rng))
    assert done.all() and (info["category"] == -1).all()
    with pytest.raises(IndexError) as err:
        polys.sample(info["category"], rng)
    msg = str(err.value)
    assert "no passenger is waiting" in msg and "NEXT_STEP" in msg
    assert "np.maximum(info['category'], 0)" in msg
    # ... and doing what it says works: the step resets the days, ignoring their actions
    obs, reward, done, _, info = envs.step(polys.sample(np.maximum(info["category"], 0), rng))
    assert (reward == 0).all() and (info["category"] >= 0).all() and not done.any()


# -- an id without ``import tsg_envs`` ----------------------------------------------------------

def test_an_id_works_without_importing_tsg_envs_through_the_module_form() -> None:
    code = ("import gymnasium as gym\n"
            "env = gym.make('tsg_envs:tsg/Screening-Window-5F-v1')\n"
            "envs = gym.make_vec('tsg_envs:tsg/Screening-Window-5F-v1', num_envs=2)\n"
            "print(type(env.unwrapped).__name__, envs.num_envs)\n"
            "try:\n"
            "    gym.make('tsg/Screening-Window-5F-v2x')\n"
            "except gym.error.Error as err:\n"
            "    print(type(err).__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[:2] == ["ScreeningEnv", "2"]
    assert out[2] == "NameNotFound"  # the tsg namespace is registered now (not NamespaceNotFound)


# -- the CLI ------------------------------------------------------------------------------------

def test_evaluate_help_names_the_default_and_the_smallest_suite(
        capsys: pytest.CaptureFixture[str]) -> None:
    from leaderboard.__main__ import main

    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "micro (the smallest" in text
    assert "without --suite: quick" in text


def test_the_lp_reference_row_uses_the_agent_rows_statistic() -> None:
    """On the lp row itself the two rows are the same policy on the same days: same numbers."""
    from leaderboard.__main__ import format_rows

    doc = load_result(REPO / "results" / "leaderboard" / "lp--quick.json")
    lines = format_rows(doc).splitlines()
    assert "(IQM)" in lines[0] and "(mean)" not in format_rows(doc)
    agent = re.findall(r"\d+\.\d+ \[\d+\.\d+, \d+\.\d+\]", lines[1])
    reference = re.findall(r"\d+\.\d+ \[\d+\.\d+, \d+\.\d+\]", lines[2])
    assert lines[2].startswith("static LP (reference)")
    # vs slack-guided and mean wait: the agent row's IQM [interval] on both rows
    assert agent[1:] == reference and len(reference) == 2


# -- the rendered board -------------------------------------------------------------------------

def test_render_gives_the_same_bytes_for_the_same_results_and_counts_alike() -> None:
    docs = [d for d in collect_results(REPO / "results" / "leaderboard")
            if d["suite"]["name"] in ("screening", "full")]
    first, second = render_html(docs), render_html(docs)
    assert first == second  # the performance profiles' bands come from a seeded bootstrap
    n_html = int(re.search(r"from (\d+) results", first).group(1))
    n_md = int(re.search(r"from (\d+) results", render_markdown(docs)).group(1))
    assert n_html == n_md == len(docs)


def test_every_agent_has_its_own_colour_and_line_style() -> None:
    names = [f"agent-{k}" for k in range(30)]
    styles = agent_styles(names)
    assert len(set(styles.values())) == 30
    assert styles["agent-0"] == ("#1f77b4", "-") and styles["agent-10"] == ("#1f77b4", "--")


def test_the_committed_pages_legend_tells_its_fourteen_agents_apart() -> None:
    page = (REPO / "docs" / "leaderboard.html").read_text()
    svg = page.split('data-plot="performance-profile" data-suite="quick">', 1)[1]
    svg = svg.split("</figure>", 1)[0]
    legend = svg.split('<g id="legend_1">', 1)[1]
    entries = re.findall(r'<path d="M [^"]*"\s+style="([^"]*)"', legend)
    strokes = [(re.search(r"stroke: (#[0-9a-f]{6})", s).group(1),
                (re.search(r"stroke-dasharray: ([^;]*)", s) or re.match("", "")).group(0))
               for s in entries]
    assert len(strokes) == 14
    assert len(set(strokes)) == 14


def test_profile_interval_by_hand() -> None:
    # scores (2 runs x 2 tasks): 1, 2, 3, 4. Fraction above τ = 0: 4/4; above 2.5: 2/4.
    profile, band = profile_interval(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([0.0, 2.5]),
                                     reps=50)
    assert profile.tolist() == [1.0, 0.5]
    assert band.shape == (2, 2) and band[0, 0] == band[1, 0] == 1.0
    again = profile_interval(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([0.0, 2.5]), reps=50)
    assert np.array_equal(band, again[1])


# -- figure 3 -----------------------------------------------------------------------------------

def test_rising_at_by_hand() -> None:
    assert rising_at([(0, 1.0), (5, 2.0), (10, 3.0)], 10) is True  # 3 > 2
    assert rising_at([(0, 1.0), (5, 3.0), (10, 3.0)], 10) is False  # flat into 10
    assert rising_at([(0, 1.0), (8, 3.0), (12, 2.0)], 10) is False  # 2.5 at 10 < 3 at 8
    assert rising_at([(0, 1.0), (5, 2.0)], 10) is None  # stops short
    assert rising_at([(10, 1.0), (12, 2.0)], 10) is None  # nothing logged before


# -- families, versions, the changelog ----------------------------------------------------------

def test_every_preset_is_in_one_family_page() -> None:
    pages = generated_pages()
    assert set(pages) == {f"environments/{f}.md" for f in FAMILIES}
    for preset in tsg_envs.PRESETS.values():
        holders = [p for p, text in pages.items() if f"| `{preset.id}` |" in text]
        assert holders == [f"environments/{preset.family}.md"], preset.id
    assert tsg_envs.PRESETS["tsg/Screening-Window-10F-v2"].family == "window-v2"
    assert tsg_envs.PRESETS["tsg/Screening-Window-10F-v1"].family == "window-v1"
    assert tsg_envs.PRESETS["tsg/Screening-Shift-10F-v1"].family == "shift"
    assert tsg_envs.PRESETS["tsg/Screening-v1"].family == "default"
    assert tsg_envs.PRESETS["tsg/Screening-JFK-20130715-20F-v1"].family == "jfk"


def _section(text: str, heading: str) -> str:
    body = text.split(f"\n## {heading}\n", 1)[1]
    return body.split("\n## ", 1)[0]


def test_the_changelog_keeps_step_with_the_docstrings_and_the_version() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text()
    ids = _section(changelog, "Environment ids")
    listed = re.findall(r"^### (v\d+)$", ids, re.M)
    doc = tsg_envs.ScreeningEnv.__doc__ or ""
    history = doc.split("## Version History", 1)[1]
    documented = re.findall(r"^\s*\* (v\d+):", history, re.M)
    assert listed == documented  # the same versions, newest first
    assert {f"v{p.version}" for p in tsg_envs.PRESETS.values()} <= set(listed)
    from tsg_envs.duel import DuelParallelEnv

    duel = _section(changelog, "The duel and the attacker environment")
    assert f"### {DuelParallelEnv.metadata['name']}" in duel
    package = _section(changelog, "Package")
    newest = re.findall(r"^### (\d+\.\d+\.\d+)$", package, re.M)[0]
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert newest == project["version"] == tsg_envs.__version__
    # the newest id version arrived with the newest package version
    assert f"Package {newest}." in ids.split(f"### {listed[0]}", 1)[1]


def test_the_installed_packages_carry_their_type_hints() -> None:
    for pkg in ("tsg_envs", "baselines", "leaderboard"):
        assert (REPO / pkg / "py.typed").is_file()
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert data["package-data"] == {"tsg_envs": ["py.typed"], "baselines": ["py.typed"],
                                    "leaderboard": ["py.typed", "trusted_keys.json",
                                                    "panel_checkpoints.json"]}
    assert tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]["strict"]


def test_the_readme_is_short_and_keeps_its_two_commands() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text) < 15_000
    for command in (
        "bash scripts/setup.sh && .venv/bin/python -m leaderboard evaluate --agent alpha-ddpg "
        "--suite demo --days public --out runs/demo",
        "bash scripts/setup.sh && .venv/bin/python -m pytest -q",
    ):
        assert f"\n{command}\n" in text
    assert "![" in text and "results/" in text.split("![", 1)[1].split(")", 1)[0]
