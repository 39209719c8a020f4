"""Render the committed results as ``LEADERBOARD.md`` and a self-contained static HTML page.

Every ``*.json`` under the results directory is loaded and validated
(:func:`leaderboard.schema.load_result`); an invalid file stops the render with its path and
reason rather than being skipped. Nothing stored is trusted (SPEC §7): each result's aggregate,
track and notes are recomputed from its episodes (:func:`leaderboard.summary.summarize`, the
evaluator's function), and its signature is checked (:mod:`leaderboard.signing`). The
*verified* column says ``yes`` for a result whose ``verify`` sidecar is signed by a trusted key
and names its current content, ``signed`` for a result signed by a trusted key, ``no``
otherwise; a row that is neither ranks on the open track whatever its numbers. Results are
grouped by suite. Within a suite the **hard** track (no proposed violation, worst-case risk
within the bound, sealed, fresh days, signed) comes first, then the **open** track, each ranked
by the IQM delay ratio against the static LP (higher is better); failed submissions are listed
with their reasons. Names, reasons and notes are escaped in the Markdown and the HTML.

The HTML page needs no network: the rows are embedded as JSON, a small script builds one
sortable table per suite (click a header; ``#sort=KEY`` or ``#sort=KEY:asc`` in the URL sets the
initial order), and an inline SVG plots each agent's mean wait against its worst-case risk, with
the bound Σ_θ ψ_θ as a dashed line.
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from leaderboard.schema import SchemaError, load_result
from leaderboard.signing import check_signature, trusted_keys
from leaderboard.summary import summary_differences, trusted_view
from leaderboard.verify import is_verified

__all__ = ["COLUMNS", "assess", "collect_results", "result_row", "render_markdown", "render_html",
           "render"]

#: (key, header, higher_is_better) of the table columns, in order.
COLUMNS: tuple[tuple[str, str, bool | None], ...] = (
    ("agent", "agent", None),
    ("track", "track", None),
    ("ratio_lp", "ratio vs LP (IQM)", True),
    ("ratio_sg", "ratio vs slack-guided (IQM)", True),
    ("mean_wait", "mean wait, min (IQM)", False),
    ("p95_wait", "p95 wait (IQM)", False),
    ("max_wait", "max wait", False),
    ("violations", "violations", False),
    ("risk_over_bound", "risk / bound", False),
    ("episodes", "episodes", None),
    ("training", "training", None),
    ("commit", "commit", None),
    ("verified", "verified", None),
)


def assess(doc: dict[str, Any], trusted: dict[str, bytes] | None = None) -> dict[str, Any]:
    """A result as the board shows it: its summary recomputed, its signatures checked.

    Returns a copy of ``doc`` whose ``aggregate``, ``track`` and ``notes`` (an attacker's
    ``defenders``) are what its episodes give, with ``_verified`` (``"yes"``: a trusted
    verification of this content; ``"signed"``: signed by a trusted key; ``"no"``) and, for a
    row that is neither, the hard track withheld and a note saying why. ``doc["_path"]`` (when
    set) locates the ``verify`` sidecar.

    Args:
        doc: A loaded result.
        trusted: The public keys trusted (default :func:`leaderboard.signing.trusted_keys`: the
            committed ones and this machine's own).
    """
    if "_verified" in doc:
        return doc
    trusted = trusted_keys() if trusted is None else trusted
    problems = summary_differences(doc)
    out = trusted_view(doc)
    sig = check_signature(doc, trusted)
    ver = is_verified(doc["_path"], trusted, doc) if doc.get("_path") else None
    out["_verified"] = "yes" if ver is not None and ver.ok else ("signed" if sig.ok else "no")
    notes = list(out["notes"])
    if problems:
        notes.append("its stored summary differs from what its episodes give (shown: the "
                     "episodes')")
    if out["_verified"] == "no" and out.get("status") == "ok":
        if out.get("track") == "hard":
            out["track"] = "open"
        notes.append(f"unverified ({sig.why}): it never ranks on the hard track")
    out["notes"] = notes
    return out


def collect_results(results_dir: str | Path,
                    trusted: dict[str, bytes] | None = None) -> list[dict[str, Any]]:
    """Load, validate and :func:`assess` every result under ``results_dir`` (sorted by path).

    Args:
        results_dir: The folder (searched recursively for ``*.json``).
        trusted: The public keys trusted (default: the committed ones and this machine's own).

    Raises:
        leaderboard.schema.SchemaError: naming the first invalid file, or a missing folder.
    """
    root = Path(results_dir)
    if not root.is_dir():
        raise SchemaError(f"{results_dir}: no such folder of results")
    trusted = trusted_keys() if trusted is None else trusted
    docs = []
    for path in sorted(root.rglob("*.json")):
        doc = load_result(path)
        doc["_path"] = str(path)
        try:
            docs.append(assess(doc, trusted))
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as err:
            raise SchemaError(f"{path}: its episodes cannot be summarised ({err})") from err
    return docs


def _iv(block: dict[str, float] | None, key: str = "iqm") -> tuple[Any, Any, Any]:
    if block is None:
        return None, None, None
    return block[key], block[f"{key}_low"], block[f"{key}_high"]


def result_row(doc: dict[str, Any]) -> dict[str, Any]:
    """Flat scalar fields of one result, assessed (:func:`assess`), for the tables and plot."""
    doc = assess(doc)
    agg = doc.get("aggregate")
    row: dict[str, Any] = {
        "agent": doc["submission"]["name"],
        "kind": doc["submission"]["kind"],
        "suite": doc["suite"]["name"],
        "suite_hash": doc["suite"]["hash"],
        "status": doc["status"],
        "track": _track(doc),
        "error": doc["error"],
        "notes": list(doc["notes"]),
        "commit": _commit(doc),
        "verified": doc["_verified"],
        "date": doc["provenance"].get("created_utc", "")[:10],
        "wall_time_s": doc["timing"]["wall_time_s"],
        "training": _training(doc),
    }
    if agg is None:
        return row
    row["ratio_lp"], row["ratio_lp_low"], row["ratio_lp_high"] = _iv(agg["ratio_vs_lp"])
    row["ratio_lp_mean"] = None if agg["ratio_vs_lp"] is None else agg["ratio_vs_lp"]["mean"]
    row["ratio_lp_best"] = agg.get("ratio_vs_lp_best")
    row["ratio_sg"], row["ratio_sg_low"], row["ratio_sg_high"] = _iv(agg["ratio_vs_slack_guided"])
    row["mean_wait"], row["mean_wait_low"], row["mean_wait_high"] = _iv(agg["mean_wait"])
    row["p95_wait"] = agg["p95_wait"]["iqm"]
    row["max_wait"] = agg["max_wait"]
    row["violations"] = agg["proposed_violations"]
    row["max_violation"] = agg["max_violation"]
    risk = agg["risk"]
    row["risk"] = None if risk is None else risk["mean"]
    row["bound"] = None if risk is None else risk["mean_bound"]
    row["risk_over_bound"] = None if risk is None else risk["max_over_bound"]
    row["episodes"] = agg["n_episodes"]
    return row


def _track(doc: dict[str, Any]) -> str:
    """A row's track: ``"failed"``, or the one :func:`assess` gave it."""
    return "failed" if doc["status"] != "ok" else doc["track"]


def _commit(doc: dict[str, Any]) -> str:
    """Short git commit of the result (``+dirty`` when the tracked tree had changes)."""
    prov = doc["provenance"]
    commit = (prov.get("git_commit") or "unknown")[:7]
    return commit + ("+dirty" if prov.get("git_dirty") else "")


def _training(doc: dict[str, Any]) -> str:
    """How the agent was obtained: a checkpoint, a per-instance training budget, or neither."""
    sub = doc["submission"]
    seeds = sub.get("train_seeds")
    if sub.get("checkpoint"):
        label = "checkpoint" + (f"s × {len(seeds)} seeds" if seeds else "")
        if sub.get("train_gradient_steps"):  # the budget the checkpoints were trained for
            label += f", {sub['train_gradient_steps']:,} gradient steps / instance"
        return label
    if sub.get("learned"):
        definition = doc["suite"]["definition"]
        steps = sub.get("train_gradient_steps") or definition.get("train_gradient_steps")
        if steps is None:  # a result of protocol 1, whose budgets were environment steps
            old = sub.get("train_steps") or definition.get("train_steps")
            return f"{old:,} env steps / instance" if old else "unknown"
        # Gradient steps (mini-batches), the paper's unit: its budget is 10,000 of them.
        n = f" × {len(seeds)} seeds" if seeds else " × 1 seed"
        return f"{steps:,} gradient steps / instance{n}"
    return "file" if sub["kind"] == "file" else "none (solved)"


def _rank_key(row: dict[str, Any]) -> tuple:
    order = {"hard": 0, "open": 1, "failed": 2}
    ratio = row.get("ratio_lp")
    return (order.get(row["track"], 3), -(ratio if ratio is not None else -math.inf), row["agent"])


def _suites(docs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        groups.setdefault(doc["suite"]["name"], []).append(result_row(doc))
    order = {"quick": 0, "screening": 1, "full": 2, "demo": 3, "micro": 4}
    return {
        name: sorted(rows, key=_rank_key)
        for name, rows in sorted(groups.items(), key=lambda kv: (order.get(kv[0], 9), kv[0]))
    }


def _num(x: Any, digits: int = 2) -> str:
    if x is None:
        return "–"
    if isinstance(x, int):
        return str(x)
    return f"{x:.{digits}f}"


def _with_ci(x: Any, lo: Any, hi: Any, digits: int = 2) -> str:
    if x is None:
        return "–"
    return f"{x:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|~#!])")
_MD_UNESCAPE = re.compile(r"\\([\\`*_{}\[\]<>|~#!])")


def _oneline(text: str) -> str:
    """``text`` on one line, without control characters."""
    return "".join(" " if ch in "\r\n\t" else ch for ch in str(text)
                   if ch.isprintable() or ch in "\r\n\t")


def _md_escape(text: str) -> str:
    """Plain text for a Markdown table cell or list, on one line.

    Every character that could start markup (emphasis, a link, raw HTML, a code span, a table
    pipe) is backslash-escaped.
    """
    return _MD_SPECIAL.sub(r"\\\1", _oneline(text))


def _md_code(text: str) -> str:
    """``text`` as an inline code span on one line, which its own backticks cannot close.

    A table's pipes are escaped (GitHub's tables split on them even inside code spans).
    """
    text = _oneline(text).replace("|", "\\|")
    runs = [len(m) for m in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


_MD_INTRO = """\
Each row is one submission evaluated on every (environment id, instance) unit of a suite
(`python -m leaderboard evaluate`), on days of arrivals drawn fresh when its evaluation started
(recorded in its result; `--days public` rows, on the suite's published days, are labelled
and never rank on the hard track). **Ratios** are
per-episode delay ratios, reference mean wait / agent mean wait on the same instance and day
(higher is better): against the static window LP (the paper's metric; the paper reports 1.25
on average, 2.0 at best) and against slack-guided, the strongest non-learning baseline at the
same ψ. Aggregates are interquartile means over (days × instances) with 95% stratified-bootstrap
intervals in brackets (rliable; days are the runs, instances the tasks). **Worst-case risk /
bound**: the largest, over instances, of the probed worst-case risk divided by Σ_θ ψ_θ.
**Hard track**: no proposed action outside its polytope, risk within the bound, sealed, fresh
days, and signed by a trusted key; **open**: everything else that completed (infeasible
proposals were α-projected by the environment). Every summary is recomputed from the result's
episodes. **Verified**: `yes`, reproduced by `python -m leaderboard verify` under a trusted key;
`signed`, signed by a trusted key's evaluator; `no`, neither.
"""


def suite_tables(rows_or_docs: list[dict[str, Any]]) -> str:
    """The hard-track, open-track and failed tables of one suite's rows (or result docs)."""
    rows = [r if "track" in r and "agent" in r else result_row(r) for r in rows_or_docs]
    rows.sort(key=_rank_key)
    headers = [h for _, h, _ in COLUMNS if h != "track"]
    lines: list[str] = []
    for track, title in (("hard", "Hard track"), ("open", "Open track")):
        sel = [r for r in rows if r["track"] == track]
        if not sel:
            continue
        lines += [f"### {title}", "", "| # | " + " | ".join(headers) + " |"]
        lines.append("|" + "---|" * (len(headers) + 1))
        for k, r in enumerate(sel, 1):
            cells = [
                str(k),
                _md_code(r['agent']),
                _with_ci(r["ratio_lp"], r["ratio_lp_low"], r["ratio_lp_high"]),
                _with_ci(r["ratio_sg"], r["ratio_sg_low"], r["ratio_sg_high"]),
                _with_ci(r["mean_wait"], r["mean_wait_low"], r["mean_wait_high"]),
                _num(r["p95_wait"], 1),
                _num(r["max_wait"], 1),
                _num(r["violations"]),
                _num(r["risk_over_bound"], 4),
                _num(r["episodes"]),
                r["training"],
                f"`{r['commit']}`",
                r["verified"],
            ]
            lines.append("| " + " | ".join(cells) + " |")
        notes = [(r["agent"], n) for r in sel for n in r["notes"]]
        if notes:
            lines.append("")
            lines += [f"- {_md_code(a)}: {_md_escape(n)}" for a, n in notes]
        lines.append("")
    failed = [r for r in rows if r["track"] == "failed"]
    if failed:
        lines += ["### Failed submissions", "", "| agent | reason |", "|---|---|"]
        lines += [
            f"| {_md_code(r['agent'])} | {_md_escape(r['error'] or '')} |" for r in failed
        ]
        lines.append("")
    return "\n".join(lines)


_ATTACKER_INTRO = """\
**Attacker track** (`python -m leaderboard evaluate --attacker FILE|NAME`): each row is one
attacker played, sealed, against a fixed panel of defenders on every unit and day of the suite,
at every attacker level θ weighted by its prior. A cell is the attacker's **fraction of the
best response**: its gain Σ_θ P_θ g_θ over the gain of the exact best response to that defender
on the same day (1 = as damaging as an attacker that knows the defender and the day), IQM with
a 95% stratified-bootstrap interval, then the mean gain in parentheses.
"""


def _is_attacker(doc: dict[str, Any]) -> bool:
    return doc.get("track") == "attacker"


def attacker_tables(docs: list[dict[str, Any]]) -> str:
    """The attacker table of one suite's attacker results (attackers x panel defenders)."""
    from leaderboard.attacker import PANEL

    docs = [assess(d) for d in docs]
    ok = [d for d in docs if d["status"] == "ok"]
    panel = [p for p in PANEL if all(p in d["defenders"] for d in ok)] if ok else list(PANEL)

    def mean_fraction(d: dict[str, Any]) -> float:
        vals = [d["defenders"][p]["fraction_of_best_response"] for p in panel]
        return float(np.mean([v["iqm"] for v in vals if v is not None] or [0.0]))

    ok.sort(key=lambda d: (-mean_fraction(d), d["submission"]["name"]))
    lines = ["### Attacker track", ""]
    if ok:
        lines += ["| # | attacker | " + " | ".join(f"vs `{p}`" for p in panel)
                  + " | training | commit | verified |"]
        lines.append("|" + "---|" * (len(panel) + 5))
        for k, d in enumerate(ok, 1):
            cells = [str(k), _md_code(d['submission']['name'])]
            for p in panel:
                b = d["defenders"][p]
                f = b["fraction_of_best_response"]
                cells.append(("–" if f is None else _with_ci(f["iqm"], f["iqm_low"],
                                                              f["iqm_high"]))
                             + f" (gain {b['gain']['mean']:.3f})")
            cells += [_attacker_training(d), f"`{_commit(d)}`", d["_verified"]]
            lines.append("| " + " | ".join(cells) + " |")
        notes = [(d["submission"]["name"], n) for d in ok for n in d["notes"]]
        if notes:
            lines.append("")
            lines += [f"- {_md_code(a)}: {_md_escape(n)}" for a, n in notes]
        lines.append("")
    failed = [d for d in docs if d["status"] != "ok"]
    if failed:
        lines += ["Failed attackers:", "", "| attacker | reason |", "|---|---|"]
        lines += [f"| {_md_code(d['submission']['name'])} | {_md_escape(d['error'] or '')} |"
                  for d in failed]
        lines.append("")
    return "\n".join(lines)


def _attacker_training(doc: dict[str, Any]) -> str:
    sub = doc["submission"]
    seeds = sub.get("train_seeds")
    if sub.get("checkpoint"):
        return "checkpoint" + (f"s × {len(seeds)} seeds" if seeds else "")
    if sub.get("learned"):
        steps = sub.get("train_gradient_steps") or doc["suite"]["definition"].get(
            "train_gradient_steps")
        return f"{steps:,} gradient steps / instance (vs the LP)"
    return "file" if sub["kind"] == "file" else "none"


def _suite_order(names: set[str]) -> list[str]:
    order = {"quick": 0, "screening": 1, "full": 2, "demo": 3, "micro": 4}
    return sorted(names, key=lambda n: (order.get(n, 9), n))


def render_markdown(docs: list[dict[str, Any]], source: str = "results/leaderboard") -> str:
    """``LEADERBOARD.md`` for the given results."""
    from leaderboard.suites import SUITES

    docs = [assess(d) for d in docs]
    attackers = [d for d in docs if _is_attacker(d)]
    defenders = [d for d in docs if not _is_attacker(d)]

    lines = [
        "# Leaderboard",
        "",
        f"Generated by `python -m leaderboard render` from {len(docs)} results in `{source}/`.",
        "Do not edit by hand.",
        "",
        _MD_INTRO,
    ]
    if attackers:
        lines += [_ATTACKER_INTRO]
    by_suite = _suites(defenders)
    for suite in _suite_order(set(by_suite) | {d["suite"]["name"] for d in attackers}):
        rows = by_suite.get(suite, [])
        att = [d for d in attackers if d["suite"]["name"] == suite]
        hashes = sorted({r["suite_hash"] for r in rows} | {d["suite"]["hash"] for d in att})
        desc = SUITES[suite].description if suite in SUITES else ""
        lines += [f"## Suite {_md_code(suite)}", ""]
        if desc:
            lines += [f"{desc}. Suite hash `{', '.join(hashes)}`.", ""]
        current = SUITES[suite].digest() if suite in SUITES else None
        if current is not None and any(h != current for h in hashes):
            lines += [
                f"Note: some rows were produced under another definition of this suite "
                f"(current hash `{current}`).",
                "",
            ]
        lines += suite_tables(rows).split("\n")
        if att:
            lines += attacker_tables(att).split("\n")
    return "\n".join(lines).rstrip() + "\n"


def _episode_ratios(doc: dict[str, Any]) -> np.ndarray | None:
    """Per-episode ratios vs LP as an (days, units) matrix, or None when one is undefined."""
    units = doc.get("units") or []
    try:
        cols = [[float(e["ratio_vs_lp"]) for e in u["episodes"]] for u in units]
    except (TypeError, KeyError):
        return None
    if not cols or len({len(c) for c in cols}) != 1 or not cols[0]:
        return None
    return np.array(cols).T


def _plot_label(name: str) -> str:
    """A row's name as matplotlib draws it verbatim (no mathtext from a ``$`` in the name)."""
    return _oneline(name).replace("$", "\\$")


#: Ten distinct colours (matplotlib's tab10) and three line styles: an agent's (colour, style) is
#: unique among 30 agents, so a legend of 14 entries never shows two agents alike.
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf")
_LINESTYLES = ("-", "--", ":")


def agent_styles(names: list[str]) -> dict[str, tuple[str, str]]:
    """Each agent's (colour, line style) in both plots of a suite, in the order given.

    The first ten agents get ten distinct colours with solid lines; the next ten the same
    colours dashed, then dotted; so every pair is told apart up to 30 agents.
    """
    n = len(_PALETTE)
    return {name: (_PALETTE[k % n], _LINESTYLES[(k // n) % len(_LINESTYLES)])
            for k, name in enumerate(names)}


def _rliable_svg(docs: list[dict[str, Any]], suite: str) -> str:
    """Rliable's interval estimates of the IQM ratio vs LP and the performance profile, as SVG.

    One row per completed submission (hard and open track); the profile is the fraction of
    episodes whose ratio vs the LP exceeds τ, with 95% stratified-bootstrap bands drawn from a
    seeded generator (:func:`leaderboard.aggregate.profile_interval`), so the same results
    always give the same bytes.
    """
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from rliable import plot_utils

    from leaderboard.aggregate import profile_interval

    done = [d for d in docs if d.get("status") == "ok" and d.get("aggregate")]
    scores = {_plot_label(d["submission"]["name"]): _episode_ratios(d) for d in done}
    scores = {k: v for k, v in scores.items() if v is not None}
    if not scores:
        return f'<p class="empty">No completed result on suite {html.escape(suite)} to plot.</p>'
    names = sorted(scores, key=lambda n: (-float(np.median(scores[n])), n))
    styles = agent_styles(names)
    colors = {n: styles[n][0] for n in names}
    agg = {_plot_label(d["submission"]["name"]): d["aggregate"]["ratio_vs_lp"] for d in done}
    points = {n: np.array([agg[n]["iqm"]]) for n in names}
    intervals = {n: np.array([[agg[n]["iqm_low"]], [agg[n]["iqm_high"]]]) for n in names}
    hi = max(float(np.max(v)) for v in scores.values())
    taus = np.linspace(0.0, max(2.0, hi), 61)
    profiles, bands = {}, {}
    for n in names:
        profiles[n], bands[n] = profile_interval(scores[n], taus, reps=200)
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "tsg-envs",
                         "font.size": 9}):
        # The x label goes on the axes (below its tick labels), not at rliable's fixed figure
        # coordinate, which overlapped the ticks on short figures.
        fig_iv, ax_iv = plot_utils.plot_interval_estimates(
            points, intervals, metric_names=["IQM ratio vs LP (95% CI)"], algorithms=names,
            colors=colors, xlabel="", subfigure_width=4.5, row_height=0.3)
        ax_iv = np.atleast_1d(ax_iv)[0]
        fig_iv.set_size_inches(4.5, 0.9 + 0.28 * len(names))  # room for title and label
        ax_iv.set_title("IQM ratio vs LP (95% CI)", fontsize=10)
        ax_iv.set_xlabel("ratio vs static LP (higher is better)", fontsize=9)
        ax_iv.tick_params(labelsize=8)
        for label in ax_iv.get_yticklabels():
            label.set_fontsize(9)
        fig_pp, ax = plt.subplots(figsize=(6.4, 3.6))
        plot_utils.plot_performance_profiles(
            profiles, taus, performance_profile_cis=bands, ax=ax, colors=colors,
            linestyles={n: styles[n][1] for n in names},
            xlabel="ratio vs static LP τ",  # plain text: one <text> per label in the SVG
            ylabel="fraction of episodes with ratio > τ", labelsize="medium",
            ticklabelsize="small")
        lines = list(ax.lines[:len(names)])  # one line per agent, in the profiles' order
        ax.axvline(1.0, color="#999", lw=0.8, ls="--")
        ax.legend(lines, names, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8,
                  frameon=False, handlelength=2.6)
        out = []
        for fig, label in ((fig_iv, "interval-estimates"), (fig_pp, "performance-profile")):
            buf = io.StringIO()
            fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
            plt.close(fig)
            svg = buf.getvalue()
            svg = svg[svg.index("<svg"):]
            out.append(f'<figure class="plot" data-plot="{label}" '
                       f'data-suite="{html.escape(suite)}">{svg}</figure>')
    return "".join(out)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:1500px;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:1rem 0;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.25rem .4rem;text-align:right;white-space:nowrap}
th{white-space:normal;max-width:7.5rem;vertical-align:bottom}
td.agent,td.track,td.reason,td.training,td.commit{text-align:left}td.reason{white-space:normal;max-width:60rem}
td.training{white-space:normal;min-width:9rem;max-width:16rem}
table.attacker td{white-space:normal;min-width:6rem}table.attacker td:nth-child(2){text-align:left}
.scroll{overflow-x:auto;max-width:100%}
th{background:#f3f3f3;cursor:pointer;user-select:none}
th.sorted-asc::after{content:" \\25B2"}th.sorted-desc::after{content:" \\25BC"}
tr.track-open td.track{color:#b35900}tr.track-failed td{color:#a00}
tr.track-hard td.track{color:#1f5fa0}
.ci{color:#777;font-size:.8em;display:block}
.plots{display:flex;flex-wrap:wrap;align-items:flex-start;gap:1rem 2rem}
figure.plot{margin:0 0 1rem 0;max-width:100%}figure.plot svg{max-width:100%;height:auto}
.notes{font-size:.85rem;color:#555}
"""

_JS = r"""
(function(){
  const data = JSON.parse(document.getElementById('lb-data').textContent);
  const cols = data.columns;
  const fmt = (v, d) => (v === null || v === undefined) ? '\u2013' :
    (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(d)) : String(v));
  const ci = (r, k, d) => (r[k] === null || r[k] === undefined) ? '\u2013' :
    r[k].toFixed(d) + ' <span class="ci">[' + r[k + '_low'].toFixed(d) + ', ' +
    r[k + '_high'].toFixed(d) + ']</span>';
  const trackOrder = {hard: 0, open: 1, failed: 2};
  function cell(r, key){
    if (key === 'agent') return document.createTextNode(r.agent);
    if (key === 'ratio_lp' || key === 'ratio_sg' || key === 'mean_wait') {
      const s = document.createElement('span'); s.innerHTML = ci(r, key, 2); return s; }
    if (key === 'risk_over_bound') return document.createTextNode(fmt(r[key], 4));
    if (key === 'p95_wait' || key === 'max_wait') return document.createTextNode(fmt(r[key], 1));
    return document.createTextNode(fmt(r[key], 2));
  }
  function compare(key, dir){
    return function(a, b){
      let x = a[key], y = b[key];
      if (key === 'track') { x = trackOrder[x]; y = trackOrder[y]; }
      const nx = (x === null || x === undefined), ny = (y === null || y === undefined);
      if (nx || ny) return nx === ny ? a.agent.localeCompare(b.agent) : (nx ? 1 : -1);
      const c = (typeof x === 'string') ? x.localeCompare(y) : (x - y);
      return c === 0 ? a.agent.localeCompare(b.agent) : dir * c;
    };
  }
  function initialSort(){
    const m = /sort=([a-z_0-9]+)(?::(asc|desc))?/.exec(window.location.hash || '');
    if (!m) return null;
    return {key: m[1], dir: m[2] === 'asc' ? 1 : (m[2] === 'desc' ? -1 : null)};
  }
  function defaultDir(key){
    const c = cols.find(c => c[0] === key);
    return (c && c[2] === true) ? -1 : 1;
  }
  for (const suite of data.suites) {
    const host = document.getElementById('table-' + suite.name);
    const table = document.createElement('table');
    table.id = 'lb-' + suite.name;
    const thead = table.createTHead(); const hr = thead.insertRow();
    const tbody = table.createTBody();
    let state = {key: null, dir: 1};
    function draw(){
      const rows = suite.rows.slice();
      if (state.key) rows.sort(compare(state.key, state.dir));
      tbody.innerHTML = '';
      rows.forEach(function(r, i){
        const tr = tbody.insertRow();
        tr.className = 'track-' + r.track; tr.dataset.agent = r.agent; tr.dataset.track = r.track;
        const rank = tr.insertCell(); rank.textContent = String(i + 1);
        for (const c of cols) {
          const td = tr.insertCell(); td.className = c[0];
          if (r.track === 'failed' && c[0] === 'track') {
            td.className = 'reason'; td.colSpan = cols.length - 1;
            td.textContent = 'failed: ' + (r.error || '');
            break;
          }
          td.appendChild(cell(r, c[0]));
        }
      });
      for (const th of hr.cells) {
        th.classList.remove('sorted-asc', 'sorted-desc');
        if (th.dataset.key && th.dataset.key === state.key)
          th.classList.add(state.dir > 0 ? 'sorted-asc' : 'sorted-desc');
      }
    }
    const th0 = document.createElement('th'); th0.textContent = '#'; hr.appendChild(th0);
    for (const c of cols) {
      const th = document.createElement('th'); th.textContent = c[1]; th.dataset.key = c[0];
      th.addEventListener('click', function(){
        state = {key: c[0], dir: state.key === c[0] ? -state.dir : defaultDir(c[0])};
        draw();
      });
      hr.appendChild(th);
    }
    const init = initialSort();
    if (init && cols.some(c => c[0] === init.key))
      state = {key: init.key, dir: init.dir === null ? defaultDir(init.key) : init.dir};
    draw();
    host.appendChild(table);
  }
  document.body.dataset.rendered = 'true';
})();
"""


def _md_inline(text: str) -> str:
    """Escape ``text`` and turn its ``**bold**`` and backtick spans into HTML.

    The Markdown's backslash escapes (:func:`_md_escape`) are undone first: HTML-escaping makes
    every character plain text here.
    """
    out = html.escape(_MD_UNESCAPE.sub(r"\1", text.replace("\n", " ")))
    out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", out)


def render_html(docs: list[dict[str, Any]], source: str = "results/leaderboard") -> str:
    """The static page: embedded rows, sortable tables (JavaScript) and an SVG plot per suite."""
    from leaderboard.suites import SUITES

    docs = [assess(d) for d in docs]
    n_results = len(docs)  # every result, attackers' included (as LEADERBOARD.md counts them)
    attackers = [d for d in docs if _is_attacker(d)]
    docs = [d for d in docs if not _is_attacker(d)]
    suites = _suites(docs)
    payload = {
        "columns": [list(c) for c in COLUMNS],
        "suites": [{"name": name, "rows": rows} for name, rows in suites.items()],
    }
    # Inside <script>, no "<" at all: a name cannot close the element or open a comment.
    blob = (json.dumps(payload, allow_nan=False).replace("<", "\\u003c")
            .replace(">", "\\u003e").replace("&", "\\u0026"))
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>tsg-envs leaderboard</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>tsg-envs leaderboard</h1>",
        f"<p>Generated by <code>python -m leaderboard render</code> from {n_results} results "
        f"in <code>{html.escape(source)}/</code>. Click a column header to sort.</p>",
        f'<p class="notes">{_md_inline(_MD_INTRO)}</p>',
        "<noscript><p>The tables need JavaScript; LEADERBOARD.md holds the same rows.</p>"
        "</noscript>",
    ]
    if attackers:
        parts.append(f'<p class="notes">{_md_inline(_ATTACKER_INTRO)}</p>')
    att_suites = {d["suite"]["name"] for d in attackers}
    for name in _suite_order(set(suites) | att_suites):
        rows = suites.get(name, [])
        desc = SUITES[name].description if name in SUITES else ""
        parts += [
            f'<section id="suite-{html.escape(name)}"><h2>Suite {html.escape(name)}</h2>',
            f"<p>{html.escape(desc)}</p>" if desc else "",
        ]
        if rows:
            parts.append(f'<div class="scroll" id="table-{html.escape(name)}"></div>')
        # The defender rows' notes sit right under their table (as in LEADERBOARD.md).
        notes = [(r["agent"], n) for r in rows for n in r["notes"]]
        if notes:
            parts.append('<ul class="notes" data-notes="defenders">')
            parts += [f"<li><code>{html.escape(a)}</code>: {html.escape(n)}</li>" for a, n in notes]
            parts.append("</ul>")
        if rows:
            parts += [
                "<h3>Ratio vs the static LP: IQM with 95% intervals, and performance profiles"
                "</h3>",
                '<div class="plots">',
                _rliable_svg([d for d in docs if d["suite"]["name"] == name], name),
                "</div>",
            ]
        att = [d for d in attackers if d["suite"]["name"] == name]
        if att:
            parts.append(_attacker_html(att))
        parts.append("</section>")
    parts += [
        f'<script id="lb-data" type="application/json">{blob}</script>',
        f"<script>{_JS}</script>",
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"


def _attacker_html(docs: list[dict[str, Any]]) -> str:
    """The attacker table as static HTML (from the markdown table's rows)."""
    md = attacker_tables(docs).split("\n")
    out = ['<h3>Attacker track: fraction of the best response (IQM, 95% interval)</h3>']
    rows = [line for line in md if line.startswith("|") and not line.startswith("|---")]
    if rows:
        out.append('<div class="scroll"><table class="attacker">')
        for k, line in enumerate(rows):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            tag = "th" if k == 0 else "td"
            out.append("<tr>" + "".join(f"<{tag}>{_attacker_cell(c)}</{tag}>" for c in cells)
                       + "</tr>")
        out.append("</table></div>")
    items = [line[2:] for line in md if line.startswith("- ")]
    if items:
        out.append('<ul class="notes">' + "".join(f"<li>{_md_inline(i)}</li>" for i in items)
                   + "</ul>")
    return "\n".join(out)


def _attacker_cell(text: str) -> str:
    """A cell of the attacker table: a fraction's interval and gain on a second, small line."""
    m = re.fullmatch(r"(\S+) (\[[^]]*\]) \(gain ([^)]*)\)", text)
    if m is None:
        return _md_inline(text)
    return (f'{html.escape(m.group(1))} <span class="ci">{html.escape(m.group(2))} '
            f"gain {html.escape(m.group(3))}</span>")


def render(
    results_dir: str | Path = "results/leaderboard",
    markdown: str | Path = "LEADERBOARD.md",
    html_path: str | Path = "docs/leaderboard.html",
    trusted: dict[str, bytes] | None = None,
) -> tuple[Path, Path, int]:
    """Write ``markdown`` and ``html_path`` from every result under ``results_dir``.

    Args:
        results_dir: The results folder (it must exist).
        markdown: The Markdown board's path.
        html_path: The static page's path.
        trusted: The public keys trusted (default: the committed ones and this machine's own;
            :func:`leaderboard.signing.committed_keys` for the committed board).

    Returns:
        (markdown path, html path, number of results).

    Raises:
        leaderboard.schema.SchemaError: a missing folder or an invalid result (nothing written).
    """
    docs = collect_results(results_dir, trusted)
    source = Path(results_dir).as_posix()
    md, page = Path(markdown), Path(html_path)
    md.parent.mkdir(parents=True, exist_ok=True)
    page.parent.mkdir(parents=True, exist_ok=True)
    md.write_text(render_markdown(docs, source))
    page.write_text(render_html(docs, source))
    return md, page, len(docs)
