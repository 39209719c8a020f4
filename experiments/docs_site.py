"""The docs site's generated pages, and the MkDocs hook that adds them to the build.

``mkdocs build`` (``mkdocs.yml``: ``hooks: [experiments/docs_site.py]``) calls :func:`on_files`,
which adds to the site, without writing them to ``docs/``:

- one page per environment family, ``environments/{family}.md``, generated from
  ``tsg_envs.PRESETS`` (:func:`family_page`), so no table of ids is copied by hand;
- the figures the pages show, copied from ``results/`` (:data:`FIGURES`).

The number blocks of the committed pages (``docs/*.md``) are filled by ``python -m
experiments.readme`` like the README's.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # mkdocs loads this file by path; the packages sit beside it
    sys.path.insert(0, str(ROOT))

__all__ = ["FIGURES", "family_page", "generated_pages", "on_files"]

#: Files from the repository that the site shows, at the same path under the site's root.
FIGURES = (
    "results/paper/fig1_ratio_vs_flights.png",
    "results/paper/fig2_wait_vs_risk.png",
    "results/paper/fig3_training.png",
    "results/paper/fig4_ratio_vs_sigma.png",
)


def _kwargs_text(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"`{k}={v!r}`" for k, v in kwargs.items())


def family_page(family: str) -> str:
    """The Markdown page of one family of :data:`tsg_envs.registration.FAMILIES`."""
    import tsg_envs
    from tsg_envs.registration import ALIASES, FAMILIES

    title, about = FAMILIES[family]
    presets = [p for p in tsg_envs.PRESETS.values() if p.family == family]
    lines = [f"# {title}", "", about, "",
             "Generated from `tsg_envs.PRESETS` when the site is built. Every id is "
             "`tsg_envs.ScreeningEnv` with the kwargs below ([the arguments](../api.md"
             "#tsg_envs.ScreeningEnv)); any of them can be overridden in `gym.make`.", "",
             "| id | what it varies | `gym.make` kwargs | tier |", "|---|---|---|---|"]
    for p in presets:
        tier = "slow" if p.slow else "default"
        if p.extra:
            tier += f", extra `{p.extra}`"
        lines.append(f"| `{p.id}` | {p.description} | {_kwargs_text(p.kwargs)} | {tier} |")
    aliases = [(a, t) for a, t in ALIASES.items() if tsg_envs.PRESETS[t].family == family]
    if aliases:
        lines += [""] + [f"`{a}` stays registered as an alias of `{t}`." for a, t in aliases]
    first = presets[0].id
    lines += ["", "```python", "import gymnasium as gym", "import tsg_envs  # registers every id",
              "", f'env = gym.make("{first}", instance_seed=0)',
              f'envs = gym.make_vec("{first}", num_envs=8)  # 8 days in lockstep', "```", "",
              "\"Slow\" ids are large: the registry-driven tests run them only in the slow tier "
              "(`pytest -m slow`)."]
    return "\n".join(lines) + "\n"


def generated_pages() -> dict[str, str]:
    """Every generated page: its path under ``docs/`` -> its Markdown."""
    from tsg_envs.registration import FAMILIES

    return {f"environments/{family}.md": family_page(family) for family in FAMILIES}


def on_files(files: Any, config: Any) -> Any:
    """MkDocs hook: add the generated pages and the figures to the build."""
    from mkdocs.structure.files import File

    for uri, text in generated_pages().items():
        files.append(File.generated(config, uri, content=text))
    for rel in FIGURES:
        files.append(File.generated(config, rel, abs_src_path=str(ROOT / rel)))
    return files
