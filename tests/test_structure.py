"""Structure rules of the repository, checked on its source (no imports of the code under test).

No module reads another's private state: an attribute whose name starts with one underscore may
be reached only through ``self``, ``cls`` or ``super()``, and no module imports an underscored
name from another module. (Underscored *modules* are package-internal and may be imported by
their own package; their names are public to it.)
No source file is over :data:`MAX_LINES` lines. The import contracts of ``pyproject.toml``
(layers, no circles, no torch in ``tsg_envs``) hold: ``lint-imports``, which CI also runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("tsg_envs", "baselines", "leaderboard", "benchmarks", "experiments")
#: The longest a source file may be (a longer one does more than one job: split it).
MAX_LINES = 800

#: Third-party private attributes we rely on, each with its reason.
ALLOWED: set[tuple[str, str]] = set()


def _private_reads(path: Path, root: Path = ROOT) -> list[str]:
    rel = path.relative_to(root).as_posix()
    hits = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute):
            name = node.attr
            if not name.startswith("_") or name.startswith("__"):
                continue
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            if isinstance(owner, ast.Call) and ast.unparse(owner.func) == "super":
                continue
            text = f"{ast.unparse(owner)}.{name}"
            if (rel, text) not in ALLOWED:
                hits.append(f"{rel}:{node.lineno}: {text}")
        elif isinstance(node, ast.ImportFrom):
            hits += [
                f"{rel}:{node.lineno}: from {node.module} import {alias.name}"
                for alias in node.names
                if alias.name.startswith("_") and not alias.name.startswith("__")
            ]
    return hits


def test_the_checker_sees_a_private_read(tmp_path: Path) -> None:
    # The probe lives in tmp_path, never in the package: a test running beside this one (pytest
    # -n) scans the package's files.
    probe = tmp_path / "tsg_envs" / "_probe_for_structure_test.py"
    probe.parent.mkdir()
    probe.write_text("from tsg_envs.x import _y\n\ndef f(env):\n    return env._day\n")
    hits = _private_reads(probe, root=tmp_path)
    assert [h.split(": ", 1)[1] for h in hits] == ["from tsg_envs.x import _y", "env._day"]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_reads_another_modules_private_state(package: str) -> None:
    hits = [h for p in sorted((ROOT / package).rglob("*.py")) for h in _private_reads(p)]
    assert hits == [], "\n".join(hits)


def _sources() -> list[Path]:
    """Every Python file of the repository (tests and examples included), by git."""
    import subprocess

    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                              "*.py"], cwd=ROOT, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / line for line in out.stdout.splitlines() if (ROOT / line).is_file()]


def test_no_source_file_is_over_the_line_limit() -> None:
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in _sources()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    assert long == [], long


def test_the_import_contracts_hold() -> None:
    """pyproject.toml's import-linter contracts: layers, no circles, no torch in tsg_envs."""
    import os
    import shutil
    import subprocess
    import sys

    exe = Path(sys.executable).parent / "lint-imports"
    if not exe.exists():
        exe = shutil.which("lint-imports")
        if exe is None:
            pytest.skip("import-linter is not installed (the dev extra)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    out = subprocess.run([str(exe), "--no-cache"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_the_data_module_imports_nothing_above_it() -> None:
    """tsg_envs/game.py (plain data) may import only the validation module of the package."""
    tree = ast.parse((ROOT / "tsg_envs" / "game.py").read_text(encoding="utf-8"))
    ours = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tsg_envs"):
            ours |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            ours |= {a.name for a in node.names if a.name.startswith("tsg_envs")}
    assert ours == {"tsg_envs.validation"}


def test_the_cache_keeps_the_most_recent_values() -> None:
    from tsg_envs.cache import KeyedCache

    calls = []
    cache = KeyedCache(2)
    for key in ("a", "b", "a", "c", "b", None, None):  # "b" is evicted by "c", then remade
        cache.get_or_make(key, lambda k=key: calls.append(k) or k)
    assert calls == ["a", "b", "c", "b", None, None] and len(cache) == 2
    assert "b" in cache and "c" in cache and "a" not in cache


def test_documents_link_only_inside_the_repository() -> None:
    """A clone holds nothing beside the repository: no Markdown link may leave it."""
    import re

    from experiments.docs_site import FIGURES, generated_pages

    docs = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "LEADERBOARD.md",
            ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
    # what the docs site's build adds under docs/ (the family pages, the figures)
    built = {ROOT / "docs" / p for p in [*generated_pages(), *FIGURES]}
    bad = []
    for doc in docs:
        for target in re.findall(r"\]\(([^)#\s]+)", doc.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            if (doc.parent / target) in built:
                continue
            if not (doc.parent / target).resolve().is_relative_to(ROOT):
                bad.append(f"{doc.name}: {target}")
            elif not (doc.parent / target).exists():
                bad.append(f"{doc.name}: {target} (missing)")
    assert bad == [], bad
