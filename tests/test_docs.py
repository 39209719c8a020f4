"""The docs tier (``pytest -m docs``; CI runs it after the default tier).

The docs site is built strictly (``mkdocs build --strict``: a warning is an error) and offline
(no page loads a stylesheet, script or font from the network); pages are opened in headless
Chromium at 1400 px, screenshotted, and their layout measured in the browser: no table wider
than the page, no two labels of a figure overlapping, notes under their own table. Every python
block of README.md runs as written from the repository's root and prints what the README shows.
Chromium is Debian's ``chromium`` package (``.ci/run`` installs it); without it these fail.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tsg_envs

pytestmark = pytest.mark.docs

REPO = Path(__file__).resolve().parent.parent
WIDTH = 1400

#: Measures the laid-out page and writes the result into ``body[data-layout]`` (JSON).
MEASURE_JS = r"""
(function(){
  const out = {tables: [], overlaps: [], viewport: document.documentElement.clientWidth,
               page_width: document.documentElement.scrollWidth, order: []};
  for (const t of document.querySelectorAll('table')) {
    const r = t.getBoundingClientRect();
    out.tables.push({id: t.id || t.className || '', right: r.right, width: t.scrollWidth,
                     host: (t.closest('.scroll') || t.parentElement).clientWidth});
  }
  for (const fig of document.querySelectorAll('figure.plot')) {
    const texts = Array.from(fig.querySelectorAll('text')).filter(e => e.textContent.trim())
      .map(e => ({t: e.textContent.trim(), b: e.getBoundingClientRect()}));
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
      const a = texts[i].b, b = texts[j].b;
      const ix = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const iy = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (ix > 1 && iy > 1)
        out.overlaps.push([fig.dataset.plot, fig.dataset.suite, texts[i].t, texts[j].t]);
    }
  }
  for (const e of document.querySelectorAll('[data-notes], table.attacker, figure.plot'))
    out.order.push(e.matches('[data-notes]') ? 'notes' :
                   (e.matches('table.attacker') ? 'attacker' : 'plot'));
  document.body.dataset.layout = JSON.stringify(out);
})();
"""


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("headless Chromium not found: install Debian's chromium package "
                    "(apt-get install chromium); .ci/run does")
    return found


def _browse(page: Path, tmp: Path, shot: str) -> dict:
    """Open a copy of ``page`` (same folder) at WIDTH px: its measured layout; a screenshot."""
    probe = page.with_name(f"_probe_{page.name}")
    (tmp / "measure.js").write_text(MEASURE_JS)
    text = page.read_text(encoding="utf-8")
    tag = f'<script src="{(tmp / "measure.js").as_uri()}"></script></body>'
    probe.write_text(text.replace("</body>", tag, 1) if "</body>" in text else text + tag)
    try:
        base = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--allow-file-access-from-files", f"--window-size={WIDTH},1600"]
        dom = subprocess.run([*base, "--dump-dom", probe.as_uri()], capture_output=True,
                             text=True, timeout=120).stdout
        subprocess.run([*base, f"--screenshot={tmp / shot}", probe.as_uri()],
                       capture_output=True, timeout=120, check=True)
    finally:
        probe.unlink()
    m = re.search(r'data-layout="([^"]*)"', dom)
    assert m, dom[-2000:]
    assert (tmp / shot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return json.loads(html.unescape(m.group(1)))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The docs site, built strictly into a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=REPO,
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def test_the_site_builds_strictly_with_every_page(site: Path) -> None:
    for page in ("index", "model", "environments", "vector", "duel", "baselines", "board",
                 "submissions", "bracket", "datasets", "paper", "benchmarks", "api",
                 "changelog"):
        assert (site / f"{page}.html").is_file(), page
    for family in tsg_envs.registration.FAMILIES:
        text = (site / "environments" / f"{family}.html").read_text()
        for preset in tsg_envs.PRESETS.values():
            if preset.family == family:
                assert preset.id in text
    api = (site / "api.html").read_text()
    assert 'id="tsg_envs.ScreeningEnv"' in api and "Version History" in api
    assert (site / "results" / "paper" / "fig1_ratio_vs_flights.png").is_file()
    assert (site / "leaderboard.html").is_file()  # the rendered board, as a static file
    changelog = (site / "changelog.html").read_text()
    assert tsg_envs.__version__ in changelog


def test_the_site_loads_nothing_from_the_network(site: Path) -> None:
    remote = re.compile(r'<(?:link|script|img)\b[^>]*\b(?:href|src)="(?:https?:)?//', re.I)
    for page in site.rglob("*.html"):
        assert not remote.search(page.read_text(encoding="utf-8")), page
    for sheet in site.rglob("*.css"):
        assert "@import url(http" not in sheet.read_text(encoding="utf-8"), sheet


def test_a_docs_page_in_headless_chromium(site: Path, tmp_path: Path) -> None:
    """The window-v2 family page at 1400 px: laid out within the page, every id in its table."""
    page = site / "environments" / "window-v2.html"
    layout = _browse(page, tmp_path, "window-v2.png")
    assert layout["page_width"] <= layout["viewport"]  # nothing pushes the page sideways
    assert layout["tables"] and all(t["right"] <= WIDTH for t in layout["tables"])


def test_the_leaderboard_page_at_1400_px(tmp_path: Path) -> None:
    """The committed page: tables fit, no overlapping labels, notes under their own table."""
    work = tmp_path / "page"
    work.mkdir()
    shutil.copy(REPO / "docs" / "leaderboard.html", work / "leaderboard.html")
    layout = _browse(work / "leaderboard.html", tmp_path, "leaderboard.png")
    for t in layout["tables"]:
        assert t["width"] <= t["host"], t  # the attacker table used to overflow its box
    assert layout["overlaps"] == []  # tick labels vs axis titles, legend entries
    order = layout["order"]
    # the quick suite's defender notes come before its plots and its attacker table
    assert order.index("notes") < order.index("plot") < order.index("attacker")


def test_every_python_block_of_the_readme_runs_as_written() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```(.*?)(?=```python|\Z)", text, re.S)
    assert len(blocks) >= 2
    for code, after in blocks:
        proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        shown = re.search(r"```text\n(.*?)\n```", after, re.S)
        assert shown, "a README block's output follows it"
        assert proc.stdout.rstrip() == shown.group(1)
