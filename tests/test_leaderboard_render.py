"""Leaderboard rendering: LEADERBOARD.md and the static page hold every result.

The page test (in the docs tier, ``pytest -m docs``, which CI runs) opens the HTML in headless
Chromium (Debian's ``chromium`` package; ``.ci/run`` installs it) and reads the DOM after the
page's script built and sorted the tables. Without Chromium it fails and says how to get it.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from leaderboard.__main__ import main
from leaderboard.evaluate import evaluate_submission
from leaderboard.render import collect_results, render, render_markdown
from leaderboard.runner import Execution
from leaderboard.schema import SchemaError, save_result
from leaderboard.submission import SubmissionSpec
from leaderboard.suites import Days, Suite
from tsg_envs.seeds import LEADERBOARD_SEED_BASE

REPO = Path(__file__).resolve().parent.parent

TINY = Suite(
    name="tiny",
    description="test suite",
    env_ids=("tsg/Screening-Window-5F-v1",),
    instance_seeds=(0,),
    arrival_seeds=(LEADERBOARD_SEED_BASE,),
    risk_max_states=3,
    train_gradient_steps=10,
)

ONEHOT = """
import numpy as np
NAME = "onehot <&> \\"quoted\\""
class A:
    def act(self, obs, info):
        a = np.zeros(10); a[0] = 1.0; return a
def make_agent(env):
    return A()
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four results on the tiny suite: two hard-track, one open-track, one failed."""
    out = tmp_path_factory.mktemp("results")
    subs = tmp_path_factory.mktemp("subs")
    (subs / "onehot.py").write_text(ONEHOT)
    (subs / "broken.py").write_text("import no_such_module_xyz\n")
    specs = [
        SubmissionSpec(str(REPO / "examples" / "submission_centre.py")),
        SubmissionSpec(str(REPO / "examples" / "submission_greedy.py")),
        SubmissionSpec(str(subs / "onehot.py")),
        SubmissionSpec(str(subs / "broken.py")),
    ]
    for spec in specs:
        save_result(evaluate_submission(spec, TINY, Execution(progress=False, reps=100),
                                        days=Days("fresh", TINY.arrival_seeds)), out)
    return out


def expected_rows(results: Path) -> dict[str, dict]:
    return {d["submission"]["name"]: d for d in collect_results(results)}


def test_render_contains_every_result(results: Path, tmp_path: Path) -> None:
    docs = expected_rows(results)
    assert len(docs) == 4
    md_path, html_path, n = render(results, tmp_path / "LB.md", tmp_path / "page.html")
    assert n == 4
    md = md_path.read_text()
    page = html_path.read_text()
    for name, doc in docs.items():
        assert name.replace("|", "\\|") in md
        if doc["status"] == "failed":  # shown Markdown-escaped: the same text once unescaped
            assert doc["error"] in re.sub(r"\\(.)", r"\1", md)
    assert "### Hard track" in md and "### Open track" in md and "### Failed submissions" in md
    # ranks: the hard track is ordered by the IQM ratio vs LP, highest first
    hard = [d for d in docs.values() if d["track"] == "hard"]
    order = sorted(hard, key=lambda d: -d["aggregate"]["ratio_vs_lp"]["iqm"])
    positions = [md.index(f"`{d['submission']['name']}`") for d in order]
    assert positions == sorted(positions)
    # the page embeds every row (escaped) and plots every completed one
    blob = re.search(r'<script id="lb-data" type="application/json">(.*?)</script>', page, re.S)
    data = json.loads(blob.group(1).replace("<\\/", "</"))
    assert {r["agent"] for s in data["suites"] for r in s["rows"]} == set(docs)
    # rliable's interval estimates and performance profile of every completed row
    assert page.count('data-plot="interval-estimates"') == 1
    assert page.count('data-plot="performance-profile"') == 1
    plots = page.split('data-plot="interval-estimates"', 1)[1].split("</section>", 1)[0]
    completed = [n for n, d in docs.items() if d["status"] == "ok"]
    assert len(completed) == 3
    for name in completed:
        assert html.escape(name, quote=False) in plots or name in plots, name
    assert "<&>" not in page.split('<script id="lb-data"')[0]  # escaped outside the JSON


def test_render_refuses_an_invalid_result(results: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(results, bad)
    (bad / "zz--tiny.json").write_text(json.dumps({"schema_version": 1}))
    with pytest.raises(SchemaError, match="zz--tiny.json"):
        render(bad, tmp_path / "LB.md", tmp_path / "page.html")
    assert main(["render", "--results", str(bad), "--markdown", str(tmp_path / "x.md")]) == 2


def test_markdown_of_no_results_is_still_a_page() -> None:
    assert render_markdown([]).startswith("# Leaderboard")


@pytest.mark.docs  # a browser: the docs tier, with the docs site's page tests
def test_page_in_headless_chromium(results: Path, tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail(
            "headless Chromium not found: install Debian's chromium package "
            "(sudo apt-get install chromium) to run the leaderboard page test; .ci/run does"
        )
    _, page, _ = render(results, tmp_path / "LB.md", tmp_path / "page.html")
    url = page.resolve().as_uri() + "#sort=mean_wait:asc"
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    dom = proc.stdout
    assert 'data-rendered="true"' in dom, proc.stderr[-2000:]
    rows = re.findall(r'<tr class="track-(\w+)" data-agent="([^"]*)" data-track="\w+">', dom)
    docs = expected_rows(results)
    unescape = {"&lt;": "<", "&gt;": ">", "&quot;": '"', "&amp;": "&"}
    names = [re.sub("&(lt|gt|quot|amp);", lambda m: unescape[m.group(0)], n) for _, n in rows]
    assert sorted(names) == sorted(docs)  # every result row is on the page
    # sorted by mean wait ascending (from the URL), the failed row (no wait) last
    waits = [docs[n]["aggregate"]["mean_wait"]["iqm"] for n in names[:-1]]
    assert waits == sorted(waits)
    assert rows[-1][0] == "failed"
    assert "no_such_module_xyz" in dom


@pytest.mark.sealed  # a training and four sealed loads with torch
def test_a_checkpoint_row_shows_the_budget_it_was_trained_for(tmp_path: Path) -> None:
    """``--checkpoint`` with ``--train-gradient-steps``: the training column names both."""
    pytest.importorskip("torch")
    from baselines.api import RunConfig, get_method

    run = tmp_path / "run"
    get_method("alpha-ddpg").train(RunConfig(
        algo="alpha-ddpg", env_id="tsg/Screening-Window-5F-v1", gradient_steps=10, seed=0,
        out=run, instance_seed=0, progress=False,
        hparams={"warmup_steps": 50, "batch_size": 16, "eval_every": 0}))
    out = tmp_path / "results"
    for name, steps in (("labelled", 10), ("unlabelled", None)):
        spec = SubmissionSpec("alpha-ddpg", checkpoint=str(run), name=name,
                              train_gradient_steps=steps)
        save_result(evaluate_submission(spec, TINY, Execution(progress=False, reps=100),
                                        days=Days("fresh", TINY.arrival_seeds)), out)
    md = render_markdown(collect_results(out))
    row = {line.split("|")[2].strip(" `"): line for line in md.splitlines()
           if line.startswith("| ") and "`" in line}
    assert "| checkpoint, 10 gradient steps / instance |" in row["labelled"]
    assert "| checkpoint |" in row["unlabelled"]
