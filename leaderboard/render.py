"""Render the committed results as ``LEADERBOARD.md`` and a self-contained static HTML page.

Every ``*.json`` under the results directory is loaded and validated
(:func:`leaderboard.schema.load_result`); an invalid file stops the render with its path and
reason rather than being skipped. Results are grouped by suite. Within a suite the **hard**
track (no proposed violation, worst-case risk within the bound) comes first, then the **open**
track, each ranked by the IQM delay ratio against the static LP (higher is better); failed
submissions are listed with their reasons.

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

from leaderboard.schema import load_result
from leaderboard.verify import is_verified

__all__ = ["COLUMNS", "collect_results", "result_row", "render_markdown", "render_html", "render"]

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


def collect_results(results_dir: str | Path) -> list[dict[str, Any]]:
    """Load and validate every result under ``results_dir`` (sorted by path).

    Raises:
        leaderboard.schema.SchemaError: naming the first invalid file.
    """
    paths = sorted(Path(results_dir).rglob("*.json"))
    docs = []
    for path in paths:
        doc = load_result(path)
        doc["_path"] = str(path)
        docs.append(doc)
    return docs


def _iv(block: dict[str, float] | None, key: str = "iqm") -> tuple[Any, Any, Any]:
    if block is None:
        return None, None, None
    return block[key], block[f"{key}_low"], block[f"{key}_high"]


def result_row(doc: dict[str, Any]) -> dict[str, Any]:
    """Flat scalar fields of one result, for the tables and the plot."""
    agg = doc.get("aggregate")
    row: dict[str, Any] = {
        "agent": doc["submission"]["name"],
        "kind": doc["submission"]["kind"],
        "suite": doc["suite"]["name"],
        "suite_hash": doc["suite"]["hash"],
        "status": doc["status"],
        "track": doc["track"] if doc["status"] == "ok" else "failed",
        "error": doc["error"],
        "notes": list(doc["notes"]),
        "commit": _commit(doc),
        "verified": "yes" if doc.get("_path") and is_verified(doc["_path"]) else "no",
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


def _commit(doc: dict[str, Any]) -> str:
    """Short git commit of the result (``+dirty`` when the tracked tree had changes)."""
    prov = doc["provenance"]
    commit = (prov.get("git_commit") or "unknown")[:7]
    return commit + ("+dirty" if prov.get("git_dirty") else "")


def _training(doc: dict[str, Any]) -> str:
    """How the agent was obtained: a checkpoint, a per-instance training budget, or neither."""
    sub = doc["submission"]
    if sub.get("checkpoint"):
        return "checkpoint"
    if sub.get("learned"):
        definition = doc["suite"]["definition"]
        steps = sub.get("train_gradient_steps") or definition.get("train_gradient_steps")
        if steps is None:  # a result of protocol 1, whose budgets were environment steps
            old = sub.get("train_steps") or definition.get("train_steps")
            return f"{old:,} env steps / instance" if old else "unknown"
        # Gradient steps (mini-batches), the paper's unit: its budget is 10,000 of them.
        return f"{steps:,} gradient steps / instance"
    return "file" if sub["kind"] == "file" else "none (solved)"


def _rank_key(row: dict[str, Any]) -> tuple:
    order = {"hard": 0, "open": 1, "failed": 2}
    ratio = row.get("ratio_lp")
    return (order.get(row["track"], 3), -(ratio if ratio is not None else -math.inf), row["agent"])


def _suites(docs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        groups.setdefault(doc["suite"]["name"], []).append(result_row(doc))
    order = {"quick": 0, "full": 1, "demo": 2, "micro": 3}
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


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


_MD_INTRO = """\
Each row is one submission evaluated on every (environment id, instance) unit of a suite, on
the same days of arrivals as every other row (`python -m leaderboard evaluate`). **Ratios** are
per-episode delay ratios, reference mean wait / agent mean wait on the same instance and day
(higher is better): against the static window LP (the paper's metric; the paper reports 1.25
on average, 2.0 at best) and against slack-guided, the strongest non-learning baseline at the
same ψ. Aggregates are interquartile means over (days × instances) with 95% stratified-bootstrap
intervals in brackets (rliable; days are the runs, instances the tasks). **Worst-case risk /
bound**: the largest, over instances, of the probed worst-case risk divided by Σ_θ ψ_θ.
**Hard track**: no proposed action outside its polytope and risk within the bound; **open**:
everything else that completed (infeasible proposals were α-projected by the environment).
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
                f"`{_md_escape(r['agent'])}`",
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
            lines += [f"- `{_md_escape(a)}`: {_md_escape(n)}" for a, n in notes]
        lines.append("")
    failed = [r for r in rows if r["track"] == "failed"]
    if failed:
        lines += ["### Failed submissions", "", "| agent | reason |", "|---|---|"]
        lines += [
            f"| `{_md_escape(r['agent'])}` | {_md_escape(r['error'] or '')} |" for r in failed
        ]
        lines.append("")
    return "\n".join(lines)


def render_markdown(docs: list[dict[str, Any]], source: str = "results/leaderboard") -> str:
    """``LEADERBOARD.md`` for the given results."""
    from leaderboard.suites import SUITES

    lines = [
        "# Leaderboard",
        "",
        f"Generated by `python -m leaderboard render` from {len(docs)} results in `{source}/`.",
        "Do not edit by hand.",
        "",
        _MD_INTRO,
    ]
    for suite, rows in _suites(docs).items():
        hashes = sorted({r["suite_hash"] for r in rows})
        desc = SUITES[suite].description if suite in SUITES else ""
        lines += [f"## Suite `{suite}`", ""]
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
    return "\n".join(lines).rstrip() + "\n"


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw)
    start = math.ceil(lo / step) * step
    out = []
    x = start
    while x <= hi + 1e-12:
        out.append(round(x, 10))
        x += step
    return out


def _tick_label(t: float, lo: float, hi: float) -> str:
    """``t`` with enough decimals to tell neighbouring ticks of [lo, hi] apart."""
    step = (hi - lo) / 5 if hi > lo else 1.0
    digits = max(0, 1 - math.floor(math.log10(step)))
    return f"{t:.{digits}f}"


def _svg_plot(rows: list[dict[str, Any]], suite: str) -> str:
    """Mean wait (IQM, with its interval) against mean worst-case risk, one point per agent."""
    pts = [r for r in rows if r.get("mean_wait") is not None and r.get("risk") is not None]
    w, h, ml, mr, mt, mb = 900, 420, 70, 150, 20, 50
    if not pts:
        return f'<p class="empty">No completed result on suite {html.escape(suite)} to plot.</p>'
    xs = [r["risk"] for r in pts] + [r["bound"] for r in pts]
    ys = [r["mean_wait_low"] for r in pts] + [r["mean_wait_high"] for r in pts]
    x0, x1 = min(xs), max(xs)
    pad = max((x1 - x0) * 0.08, abs(x1) * 0.01) or 1.0  # at least 1% of the scale
    x0, x1 = x0 - pad, x1 + pad
    y0, y1 = 0.0, max(ys) * 1.1 or 1.0

    def sx(x: float) -> float:
        return ml + (x - x0) / (x1 - x0) * (w - ml - mr)

    def sy(y: float) -> float:
        return h - mb - (y - y0) / (y1 - y0) * (h - mt - mb)

    out = [
        f'<svg class="plot" data-suite="{html.escape(suite)}" viewBox="0 0 {w} {h}" '
        f'width="{w}" height="{h}" role="img" aria-label="mean wait against worst-case risk">',
        f'<rect x="{ml}" y="{mt}" width="{w - ml - mr}" height="{h - mt - mb}" '
        'fill="none" stroke="#999"/>',
    ]
    for t in _ticks(x0, x1):
        out.append(
            f'<line x1="{sx(t):.1f}" y1="{h - mb}" x2="{sx(t):.1f}" y2="{h - mb + 5}" '
            'stroke="#333"/>'
            f'<text x="{sx(t):.1f}" y="{h - mb + 18}" text-anchor="middle">'
            f"{_tick_label(t, x0, x1)}</text>"
        )
    for t in _ticks(y0, y1):
        out.append(
            f'<line x1="{ml - 5}" y1="{sy(t):.1f}" x2="{ml}" y2="{sy(t):.1f}" stroke="#333"/>'
            f'<text x="{ml - 8}" y="{sy(t) + 4:.1f}" text-anchor="end">'
            f"{_tick_label(t, y0, y1)}</text>"
        )
    out.append(
        f'<text x="{(ml + w - mr) / 2}" y="{h - 10}" text-anchor="middle">worst-case risk '
        "(attacker's expected gain, mean over instances)</text>"
        f'<text transform="translate(16 {(mt + h - mb) / 2}) rotate(-90)" '
        'text-anchor="middle">mean wait, minutes (IQM, 95% CI)</text>'
    )
    bound = sum(r["bound"] for r in pts) / len(pts)
    out.append(
        f'<line x1="{sx(bound):.1f}" y1="{mt}" x2="{sx(bound):.1f}" y2="{h - mb}" '
        'stroke="#c00" stroke-dasharray="5 4"/>'
        f'<text x="{sx(bound) - 4:.1f}" y="{h - mb - 6}" fill="#c00" text-anchor="end">'
        "bound Σψ</text>"
    )
    colors = {"hard": "#1f77b4", "open": "#ff7f0e"}
    # labels to the right of their points, pushed apart vertically (with a leader line)
    placed: list[tuple[float, float]] = []  # (x, y) of labels already placed
    for r in sorted(pts, key=lambda r: sy(r["mean_wait"])):
        cx, cy = sx(r["risk"]), sy(r["mean_wait"])
        ly = cy - 6
        for px, py in sorted(placed, key=lambda p: p[1]):
            if abs(px - (cx + 10)) < 120 and abs(py - ly) < 13:
                ly = py + 13
        placed.append((cx + 10, ly))
        color = colors.get(r["track"], "#777")
        name = html.escape(r["agent"])
        leader = (
            f'<line x1="{cx + 3:.1f}" y1="{cy:.1f}" x2="{cx + 9:.1f}" y2="{ly - 4:.1f}" '
            'stroke="#aaa"/>'
            if abs(ly - (cy - 6)) > 3
            else ""
        )
        out.append(
            f'<g class="point" data-agent="{name}">'
            f'<line x1="{cx:.1f}" y1="{sy(r["mean_wait_low"]):.1f}" x2="{cx:.1f}" '
            f'y2="{sy(r["mean_wait_high"]):.1f}" stroke="{color}"/>'
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="{color}">'
            f"<title>{name}: {r['mean_wait']:.2f} min, risk {r['risk']:.4f}</title></circle>"
            f'{leader}<text x="{cx + 10:.1f}" y="{ly:.1f}" class="lbl">{name}</text></g>'
        )
    lx = w - mr + 15
    out.append(
        f'<circle cx="{lx}" cy="{mt + 10}" r="5" fill="{colors["hard"]}"/>'
        f'<text x="{lx + 10}" y="{mt + 14}">hard track</text>'
        f'<circle cx="{lx}" cy="{mt + 30}" r="5" fill="{colors["open"]}"/>'
        f'<text x="{lx + 10}" y="{mt + 34}">open track</text>'
    )
    out.append("</svg>")
    return "".join(out)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:1500px;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}
th,td{border:1px solid #ccc;padding:.3rem .5rem;text-align:right;white-space:nowrap}
td.agent,td.track,td.reason,td.training,td.commit{text-align:left}td.reason{white-space:normal;max-width:60rem}
.scroll{overflow-x:auto}
th{background:#f3f3f3;cursor:pointer;user-select:none}
th.sorted-asc::after{content:" \\25B2"}th.sorted-desc::after{content:" \\25BC"}
tr.track-open td.track{color:#b35900}tr.track-failed td{color:#a00}
tr.track-hard td.track{color:#1f5fa0}
.ci{color:#777;font-size:.8em}svg.plot{font-size:11px}svg .lbl{font-size:11px}
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
    """Escape ``text`` and turn its ``**bold**`` and backtick spans into HTML."""
    out = html.escape(text.replace("\n", " "))
    out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", out)


def render_html(docs: list[dict[str, Any]], source: str = "results/leaderboard") -> str:
    """The static page: embedded rows, sortable tables (JavaScript) and an SVG plot per suite."""
    from leaderboard.suites import SUITES

    suites = _suites(docs)
    payload = {
        "columns": [list(c) for c in COLUMNS],
        "suites": [{"name": name, "rows": rows} for name, rows in suites.items()],
    }
    blob = json.dumps(payload, allow_nan=False).replace("</", "<\\/")
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>tsg-envs leaderboard</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>tsg-envs leaderboard</h1>",
        f"<p>Generated by <code>python -m leaderboard render</code> from {len(docs)} results "
        f"in <code>{html.escape(source)}/</code>. Click a column header to sort.</p>",
        f'<p class="notes">{_md_inline(_MD_INTRO)}</p>',
        "<noscript><p>The tables need JavaScript; LEADERBOARD.md holds the same rows.</p>"
        "</noscript>",
    ]
    for name, rows in suites.items():
        desc = SUITES[name].description if name in SUITES else ""
        parts += [
            f'<section id="suite-{html.escape(name)}"><h2>Suite {html.escape(name)}</h2>',
            f"<p>{html.escape(desc)}</p>" if desc else "",
            f'<div class="scroll" id="table-{html.escape(name)}"></div>',
            "<h3>Mean wait against worst-case risk</h3>",
            _svg_plot(rows, name),
        ]
        notes = [(r["agent"], n) for r in rows for n in r["notes"]]
        if notes:
            parts.append('<ul class="notes">')
            parts += [f"<li><code>{html.escape(a)}</code>: {html.escape(n)}</li>" for a, n in notes]
            parts.append("</ul>")
        parts.append("</section>")
    parts += [
        f'<script id="lb-data" type="application/json">{blob}</script>',
        f"<script>{_JS}</script>",
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"


def render(
    results_dir: str | Path = "results/leaderboard",
    markdown: str | Path = "LEADERBOARD.md",
    html_path: str | Path = "docs/leaderboard.html",
) -> tuple[Path, Path, int]:
    """Write ``markdown`` and ``html_path`` from every result under ``results_dir``.

    Returns:
        (markdown path, html path, number of results).
    """
    docs = collect_results(results_dir)
    source = Path(results_dir).as_posix()
    md, page = Path(markdown), Path(html_path)
    md.parent.mkdir(parents=True, exist_ok=True)
    page.parent.mkdir(parents=True, exist_ok=True)
    md.write_text(render_markdown(docs, source))
    page.write_text(render_html(docs, source))
    return md, page, len(docs)
