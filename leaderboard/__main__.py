"""``python -m leaderboard``: evaluate a submission, verify a result, render the board.

Subcommands:

* ``evaluate --agent FILE|NAME --suite micro|demo|quick|screening|full [--workers N] --out DIR``
  evaluates a submission (a ``.py`` file defining ``make_agent(env)``, or a baseline name,
  optionally with ``--checkpoint``), writes its result JSON under ``DIR`` and prints its row
  beside the static LP's, signed with this machine's key (:mod:`leaderboard.signing`). It
  plays fresh days by default (``--days fresh``: arrival seeds drawn now and recorded);
  ``--days public`` (the suite's own seeds) and ``--days S1,S2,...`` are labelled and never
  rank on the hard track. A result never silently replaces a different one (``--force`` to do
  it on purpose). Every mistake on the command line (an unknown suite or agent, a missing or
  irregular file, a malformed template, a non-finite limit, an ``--out`` that cannot receive
  the result) exits 2 with one line, before anything runs or is written.
  ``evaluate --attacker FILE|NAME ...`` evaluates an attacker (a file defining
  ``make_attacker(env)``, or ``random``, ``dqn``, ``best-response``) against the panel of
  defenders (:mod:`leaderboard.attacker`); its result is ``NAME--SUITE--attacker.json``.
* ``panel --suite S`` trains (again) the panel's committed α-DDPG checkpoints of a suite.
* ``frontier --agent NAME [--scales ...] [--weight W ...]`` builds the risk–delay Pareto
  frontier of a policy re-solved or retrained per ψ and the ψ each weight selects
  (:mod:`leaderboard.frontier`, the paper's Theorem 1).
* ``render [--results DIR] [--markdown FILE] [--html FILE] [--trust local|committed]`` writes
  ``LEADERBOARD.md`` and the static page from the results, each recomputed from its episodes and
  its signature checked (a missing folder is a usage error).
* ``verify RESULT...`` checks a result and evaluates it again on its recorded days
  (:mod:`leaderboard.verify`); a match writes a signed ``RESULT.verified``.
* ``key`` prints this machine's signing key's path and id (creating it on first use) and the
  entry that trusts it; ``sign RESULT...`` re-signs checked results (maintainers).
* ``readme [--check] [--main-job]`` regenerates the leaderboard's number blocks of ``README.md``
  (the main job, the boards, the id table) and ``LEADERBOARD.md`` from the committed results
  files (``--check``: exit 1 if they differ; ``--main-job``: first rerun the README's main job
  into ``results/main_job.txt``). Every block, benchmarks' and experiments' included:
  ``python -m experiments.readme`` from the repository's root.
* The paper's experiments moved out of the package: ``python -m experiments.paper`` from the
  repository's root (``paper`` here only says so).
* ``dataset --agent NAME --env ID --days N --dataset-id ID [--instance I] [--seed S]`` writes
  a Minari dataset of N expert days (``lp``, ``slack-guided``, ``clairvoyant`` or a baseline
  with ``--checkpoint``) under ``MINARI_DATASETS_PATH`` (:mod:`leaderboard.datasets`); its
  mistakes, like ``evaluate``'s, exit 2 with one line before anything runs.
* ``suites`` lists the suites; ``schema`` prints the result JSON Schema.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from leaderboard.aggregate import MAX_REPS
from leaderboard.runner import BACKENDS, Execution
from leaderboard.sealed import Limits
from leaderboard.suites import SUITES
from tsg_envs.validation import cli_int, cli_real

__all__ = ["main", "format_rows", "format_attacker_rows"]


def _fmt(block: dict[str, float] | None, key: str = "iqm", digits: int = 2) -> str:
    if block is None:
        return "–"
    lo, hi = block[key + "_low"], block[key + "_high"]
    return f"{block[key]:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def format_rows(doc: dict[str, Any]) -> str:
    """The result's row beside the static LP's (and slack-guided's), as aligned text."""
    name = doc["submission"]["name"]
    head = (
        f"{'agent':<22} {'track':<6} {'ratio vs LP (IQM)':>22} {'vs slack-guided (IQM)':>22} "
        f"{'mean wait, min (IQM)':>24} {'viol.':>6} {'risk/bound':>10}"
    )
    if doc["status"] != "ok":
        return f"{head}\n{name:<22} FAILED: {doc['error']}"
    agg = doc["aggregate"]
    risk = agg["risk"]
    lines = [head]
    lines.append(
        f"{name:<22} {doc['track']:<6} {_fmt(agg['ratio_vs_lp']):>22} "
        f"{_fmt(agg['ratio_vs_slack_guided']):>22} {_fmt(agg['mean_wait']):>24} "
        f"{agg['proposed_violations']:>6d} "
        f"{'–' if risk is None else format(risk['max_over_bound'], '.4f'):>10}"
    )
    lp_wait = agg.get("lp_mean_wait")
    units = doc["units"]
    lp_over = max(
        (u["lp_risk"] / u["risk"]["bound"] for u in units if u.get("lp_risk") is not None),
        default=None,
    )
    # The reference row's columns hold the statistic of the agent's row (IQM, 95% interval over
    # the same days and units), so the LP's ratio vs slack-guided is comparable with an agent's.
    sg_ratio = None
    eps = [e for u in units for e in u["episodes"]]
    if eps and all(e["slack_guided_mean_wait"] is not None for e in eps):
        import numpy as np

        from leaderboard.aggregate import iqm_interval

        days_units = np.array([[e["slack_guided_mean_wait"] / e["lp_mean_wait"]
                                for e in u["episodes"]] for u in units]).T
        sg_ratio = iqm_interval(days_units, reps=agg.get("reps", 2_000))
    lines.append(
        f"{'static LP (reference)':<22} {'hard':<6} {'1.00':>22} "
        f"{_fmt(sg_ratio):>22} "
        f"{_fmt(lp_wait):>24} {0:>6d} {'–' if lp_over is None else format(lp_over, '.4f'):>10}"
    )
    for note in doc["notes"]:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def format_attacker_rows(doc: dict[str, Any]) -> str:
    """An attacker's result: one line per panel defender (gain, best response, fraction)."""
    name = doc["submission"]["name"]
    head = (f"{'attacker':<16} {'defender':<14} {'gain (IQM)':>22} {'best response (IQM)':>22} "
            f"{'fraction of best response (IQM)':>32} {'struck':>7}")
    if doc["status"] != "ok":
        return f"{head}\n{name:<16} FAILED: {doc['error']}"
    lines = [head]
    for defender, block in doc["defenders"].items():
        lines.append(
            f"{name:<16} {defender:<14} {_fmt(block['gain'], digits=3):>22} "
            f"{_fmt(block['best_response_gain'], digits=3):>22} "
            f"{_fmt(block['fraction_of_best_response'], digits=3):>32} "
            f"{block['struck']:>7.2f}"
        )
    for note in doc["notes"]:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def _seed_list(text: str) -> tuple[int, ...]:
    """``"0-4"`` or ``"0,2,5"`` (or a mix, ``"0-2,7"``) as a tuple of seeds."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            seeds += list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a seed list: {text!r} (e.g. 0-4 or 0,2,5)") from None
    if not seeds:
        raise argparse.ArgumentTypeError("no seeds")
    return tuple(seeds)


def _usage(message: str) -> int:
    """A usage error: one line on stderr, exit status 2 (nothing has run or been written)."""
    print(f"error: {' '.join(str(message).split())}", file=sys.stderr)
    return 2


def _out_problem(out: str) -> str | None:
    """Why ``--out`` cannot receive results (checked before anything runs), or None."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        return f"--out {out} exists and is not a folder"
    existing = path
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        return f"--out {out}: {existing} is not a folder"
    ro = bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
    if ro or not os.access(existing, os.W_OK | os.X_OK):
        return f"--out {out} is not writable ({existing})"
    return None


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from leaderboard.evaluate import evaluate_submission
    from leaderboard.schema import ResultExistsError, result_filename, save_result
    from leaderboard.submission import SubmissionError, SubmissionSpec, missing_checkpoints
    from leaderboard.suites import get_suite, parse_days
    from leaderboard.units import describe_attacker

    # Every check first: a mistake exits 2 before anything runs or is written.
    suite = get_suite(args.suite)
    attacker = bool(args.attacker)
    sources = args.attacker if attacker else args.agent
    try:
        limits = Limits(call_s=args.call_timeout, unit_s=args.unit_timeout,
                        memory_mb=args.memory_mb or None, isolate=not args.no_isolation,
                        max_procs=args.max_procs, scratch_mb=args.scratch_mb)
        run = Execution(workers=args.workers, backend=args.backend, address=args.address,
                        progress=not args.no_progress, limits=limits, reps=args.reps)
        days = parse_days(args.days, suite)  # fresh days: drawn here, before any sandbox
    except ValueError as err:
        return _usage(str(err))
    if len(sources) > 1 and (args.name or args.checkpoint):
        return _usage("--name and --checkpoint need a single --agent or --attacker")
    problem = _out_problem(args.out)
    if problem:
        return _usage(problem)
    specs = []
    for agent in sources:
        try:
            spec = SubmissionSpec(source=agent, checkpoint=args.checkpoint, name=args.name,
                                  train_gradient_steps=args.train_gradient_steps,
                                  train_seeds=args.train_seeds)
            described = describe_attacker(spec) if attacker else _describe(spec)
            missing = missing_checkpoints(spec, suite.units, need_file=attacker)
        except (ValueError, SubmissionError) as err:
            return _usage(str(err))
        if missing:
            return _usage(missing)
        target = Path(args.out) / result_filename(described.name, suite.name,
                                                  "attacker" if attacker else None)
        if days.kind != "public" and not args.force and _holds_ok_result(target):
            return _usage(f"{target} holds an ok result and a row on {days.kind} days never "
                          "repeats it: pass --force to replace it or choose another --out")
        specs.append(spec)
    if attacker:
        from leaderboard.attacker import missing_panel

        gaps = missing_panel(suite.units)
        if gaps:
            return _usage(f"the attacker panel has no committed alpha-DDPG checkpoint for "
                          f"{len(gaps)} units of suite {suite.name} (first {gaps[0][0]} "
                          f"instance {gaps[0][1]}): python -m leaderboard panel --suite "
                          f"{suite.name} trains them (maintainers)")
    code = 0
    for spec in specs:  # in one process: the references' episodes are computed once
        if attacker:
            from leaderboard.attacker import evaluate_attacker

            doc = evaluate_attacker(spec, suite, run, days=days)
            print(format_attacker_rows(doc))
        else:
            doc = evaluate_submission(spec, suite, run, days=days)
            print(format_rows(doc))
        try:
            path = save_result(doc, args.out, force=args.force)
        except ResultExistsError as err:
            print(f"error: {err}", file=sys.stderr)
            code = 3
            continue
        print(
            f"{doc['suite']['name']} suite ({doc['suite']['hash']}), "
            f"{doc['timing']['wall_time_s']:.1f} s; result written to {path}"
        )
        if doc["status"] != "ok":
            print(f"error: {doc['submission']['name']} failed: {doc.get('error')}",
                  file=sys.stderr)
            code = code or 1
    return code


def _describe(spec: Any) -> Any:
    from leaderboard.submission import describe_submission

    return describe_submission(spec)


def _holds_ok_result(path: Path) -> bool:
    from leaderboard.schema import SchemaError, load_result

    try:
        return path.exists() and load_result(path)["status"] == "ok"
    except SchemaError:
        return False


def _result_paths(paths: list[str]) -> str | None:
    """Why one of ``paths`` is not a result file (a regular file of bounded size), or None."""
    from leaderboard.schema import MAX_RESULT_BYTES, read_regular_file

    for path in paths:
        try:
            read_regular_file(path, MAX_RESULT_BYTES)
        except OSError as err:
            return f"{path}: {err.strerror}"
        except ValueError as err:
            return str(err)
    return None


def _cmd_verify(args: argparse.Namespace) -> int:
    from leaderboard.verify import verify

    try:
        run = Execution(workers=args.workers, backend=args.backend, address=args.address,
                        progress=not args.no_progress,
                        limits=Limits(call_s=args.call_timeout, unit_s=args.unit_timeout))
    except ValueError as err:
        return _usage(str(err))
    problem = _result_paths(args.results)
    if problem:
        return _usage(problem)
    code = 0
    for path in args.results:
        v = verify(path, run, rtol=args.rtol)
        print(f"{'verified' if v.ok else 'NOT VERIFIED'}: {v.path}: {v.message}")
        code = code if v.ok else 1
    return code


def _cmd_render(args: argparse.Namespace) -> int:
    from leaderboard.render import render
    from leaderboard.schema import SchemaError
    from leaderboard.signing import committed_keys, trusted_keys

    for flag, path in (("--markdown", args.markdown), ("--html", args.html)):
        if Path(path).is_dir():
            return _usage(f"{flag} {path} is a folder")
    if not Path(args.results).is_dir():
        return _usage(f"--results {args.results}: no such folder of results")
    try:
        trusted = committed_keys() if args.trust == "committed" else trusted_keys()
        md, page, n = render(args.results, args.markdown, args.html, trusted)
    except SchemaError as err:
        return _usage(str(err))
    print(f"{n} results from {args.results} -> {md}, {page}")
    return 0


def _cmd_key(args: argparse.Namespace) -> int:
    import base64

    from leaderboard.signing import key_id, key_path, load_key, public_bytes

    try:
        public = public_bytes(load_key(create=True))
    except (OSError, ValueError) as err:
        return _usage(f"{key_path()}: {err}")
    kid = key_id(public)
    print(f"private key: {key_path()} (never commit it; mode 0600)")
    print(f"key id: {kid}")
    print("to trust it on the committed board, add to leaderboard/trusted_keys.json's \"keys\":")
    print(json.dumps({kid: {"public_key": base64.b64encode(public).decode(),
                            "owner": "WHO", "added": "YYYY-MM-DD"}}, indent=1))
    return 0


def _cmd_sign(args: argparse.Namespace) -> int:
    from leaderboard.schema import SchemaError, load_result, metrics_digest
    from leaderboard.signing import sign_result
    from leaderboard.suites import days_of
    from leaderboard.summary import summarize, summary_differences

    problem = _result_paths(args.results)
    if problem:
        return _usage(problem)
    docs = []
    for path in args.results:  # every file checked before any is rewritten
        try:
            doc = load_result(path)
            if args.recompute:  # the rules changed: the summary again, from the same episodes
                doc["days"] = days_of(doc).to_dict()
                doc.update(summarize(doc))
                doc["metrics_digest"] = metrics_digest(doc)
            problems = summary_differences(doc)
        except (SchemaError, ValueError) as err:
            return _usage(str(err))
        if problems:
            return _usage(f"{path}: not signed: {problems[0]}")
        docs.append((path, doc))
    for path, doc in docs:
        signed = sign_result(doc)
        Path(path).write_text(json.dumps(signed, indent=1, allow_nan=False) + "\n",
                              encoding="utf-8")
        print(f"signed {path} with key {signed['signature']['key_id']}")
    return 0


#: Where the paper's experiments went (they are not part of the installed package).
PAPER_MOVED = ("the paper's experiments moved out of the leaderboard package: run "
               "python -m experiments.paper [--quick] [--train-adaptive] [--render-only] ... "
               "from the repository's root (python -m experiments.paper --help)")


def _cmd_paper(args: argparse.Namespace) -> int:
    print(f"error: {PAPER_MOVED}", file=sys.stderr)
    return 2


def _cmd_panel(args: argparse.Namespace) -> int:
    from leaderboard.attacker import PANEL_DIR, train_panel_checkpoint, write_panel_manifest
    from leaderboard.suites import get_suite

    units = sorted({u for name in args.suite for u in get_suite(name).units})
    for env_id, instance in units:
        target = (PANEL_DIR / "alpha-ddpg"
                  / f"{env_id.replace('/', '_')}_i{instance}.safetensors")
        if target.is_file() and not args.force:
            print(f"kept {target}")
            continue
        train_panel_checkpoint(env_id, instance, target, progress=not args.no_progress)
        print(f"trained {target}")
    print(f"wrote {write_panel_manifest()}")
    return 0


def _cmd_frontier(args: argparse.Namespace) -> int:
    import gymnasium as gym

    import tsg_envs  # noqa: F401  (registers the ids)
    from leaderboard.frontier import main_frontier

    try:
        gym.spec(args.env)
    except gym.error.Error:
        return _usage(f"--env {args.env} is not a registered id")
    problem = _out_problem(args.out)
    if problem:
        return _usage(problem)
    main_frontier(args.agent, args.env, args.instance, list(args.scales), list(args.weight),
                  Path(args.out), args.days, args.gradient_steps, progress=not args.no_progress)
    return 0


def _cmd_dataset(args: argparse.Namespace) -> int:
    import gymnasium as gym

    import tsg_envs  # noqa: F401  (registers the ids)

    try:
        from leaderboard import datasets
    except ImportError as err:  # pragma: no cover - the module imports nothing optional
        return _usage(str(err))
    try:
        import minari  # noqa: F401
    except ImportError:
        return _usage(f"python -m leaderboard dataset needs minari: {datasets.MINARI_EXTRA}")
    from baselines.experts import check_expert

    try:
        spec = gym.spec(args.env)
    except gym.error.Error:
        return _usage(f"--env {args.env} is not a registered id")
    if not spec.id.startswith("tsg/"):
        return _usage(f"--env {args.env} is not a tsg-envs id")
    try:
        datasets.check_dataset_id(args.dataset_id)
        datasets.check_days(args.seed, args.days)
        check_expert(args.agent, args.checkpoint)
    except ValueError as err:
        return _usage(str(err))
    target = datasets.dataset_path(args.dataset_id)
    if target.exists() and not args.force:
        return _usage(f"dataset {args.dataset_id} exists at {target}: pass --force to replace "
                      "it or choose another --dataset-id")
    problem = _out_problem(str(datasets.datasets_root()))
    if problem:
        return _usage(problem.replace("--out", "MINARI_DATASETS_PATH"))
    wrap = None
    if not args.no_progress:
        from tqdm.auto import tqdm

        def wrap(it: Any) -> Any:
            return tqdm(it, desc=args.agent, unit="day")

    row = datasets.write_dataset(args.dataset_id, args.env, args.agent, args.days,
                                 instance_seed=args.instance, seed=args.seed,
                                 checkpoint=args.checkpoint, force=args.force, progress=wrap)
    print(f"wrote {row['dataset_id']} at {target}: {row['episodes']} days, {row['steps']} "
          f"steps, {row['bytes']:,} bytes, expert mean wait {row['mean_wait']:.3f} min, "
          f"content sha256 {row['content_sha256']}")
    return 0


def _cmd_suites(args: argparse.Namespace) -> int:
    from leaderboard.suites import SUITES
    from tsg_envs.seeds import LEADERBOARD_SEED_BASE

    for s in SUITES.values():
        print(
            f"{s.name:<6} {s.digest()}  {len(s.units)} units x {len(s.arrival_seeds)} days, "
            f"risk probe {s.risk_max_states} states/unit, "
            f"train {s.train_gradient_steps} gradient steps: {s.description}"
        )
    print(f"(arrival seeds start at {LEADERBOARD_SEED_BASE}; training must use seeds below it)")
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    from leaderboard.schema import SCHEMA

    print(json.dumps(SCHEMA, indent=2))
    return 0


def _cmd_readme(args: argparse.Namespace) -> int:
    from leaderboard import readme

    if args.check:
        stale = readme.check()
        for name in stale:
            print(f"{name} differs from its sources: run python -m leaderboard readme")
        return 1 if stale else 0
    if args.main_job:
        print(readme.run_main_job(), end="")
    for name in readme.update():
        print(f"rewrote {name}")
    return 0


#: Seconds of a time limit: finite and > 0.
_SECONDS = cli_real(0.0, low_open=True)


def _reps(text: str) -> int:
    value = cli_int(1)(text)
    if value > MAX_REPS:
        raise argparse.ArgumentTypeError(f"must be an integer in [1, {MAX_REPS}], got {value}")
    return value


class _Parser(argparse.ArgumentParser):
    """``argparse`` whose usage errors are one line (``error: ...``) and exit status 2."""

    def error(self, message: str) -> Any:  # noqa: D102 - argparse's
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = _Parser(
        prog="python -m leaderboard",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("evaluate", help="evaluate a submission on a suite")
    who = ev.add_mutually_exclusive_group(required=True)
    who.add_argument(
        "--agent",
        action="append",
        help="a defender: a .py file defining make_agent(env), or a baseline name "
        "(python -m leaderboard evaluate --agent lp ...); repeat to evaluate several",
    )
    who.add_argument(
        "--attacker",
        action="append",
        help="an attacker: a .py file defining make_attacker(env), or random, dqn or "
        "best-response; it plays the panel of defenders (lp, slack-guided, centre, "
        "alpha-ddpg); repeat to evaluate several",
    )
    ev.add_argument(
        "--suite",
        default="quick",
        choices=list(SUITES),
        help="micro (the smallest: 1 instance x 2 days of a 5-flight window, a smoke test), "
        "demo, quick, screening or full; without --suite: quick (python -m leaderboard suites "
        "lists them with their sizes)",
    )
    ev.add_argument("--days", default="fresh", metavar="fresh|public|S1,S2,...",
                    help="the days played: fresh (default) draws the arrival seeds now, from "
                    "the operating system's entropy, and records them (official rows); public: "
                    "the suite's own seeds (development, the README's main job); S1,S2,...: "
                    "chosen seeds (in [2**31, 2**63)); public and chosen rows are labelled and "
                    "never rank on the hard track")
    ev.add_argument("--out", default="runs/leaderboard", help="directory for the result JSON")
    ev.add_argument("--workers", type=cli_int(1), default=1, help="processes (units in parallel)")
    ev.add_argument(
        "--checkpoint",
        default=None,
        help="checkpoint of a learned baseline (or of the dqn attacker); may hold {env} and "
        "{instance} to pick one per unit",
    )
    ev.add_argument(
        "--train-gradient-steps",
        type=cli_int(1),
        default=None,
        help="training budget of a learned baseline, in gradient steps (mini-batches; default: "
        "the suite's); with --checkpoint, the budget the checkpoints were trained for, shown on "
        "the board",
    )
    ev.add_argument("--train-seeds", type=_seed_list, default=None, metavar="SEEDS",
                    help="training seeds of a learned baseline, e.g. 0-4 or 0,2,5: every "
                    "seed's policy plays every unit and day, the row aggregates over seeds and "
                    "days; a --checkpoint template may hold {seed} (default: seed 0, unlisted)")
    ev.add_argument("--call-timeout", type=_SECONDS, default=Limits.call_s, metavar="S",
                    help="seconds one act/act_batch request may take (default %(default)g)")
    ev.add_argument("--unit-timeout", type=_SECONDS, default=Limits.unit_s, metavar="S",
                    help="seconds the submission's process may take per unit, make_agent "
                    "(training) included (default %(default)g)")
    ev.add_argument("--memory-mb", type=cli_int(0), default=Limits.memory_mb, metavar="MIB",
                    help="memory of the submission's whole process tree, /tmp and /dev/shm "
                    "included (default %(default)s; 0: none)")
    ev.add_argument("--max-procs", type=cli_int(8), default=Limits.max_procs, metavar="N",
                    help="processes and threads the submission's tree may hold (default "
                    "%(default)s)")
    ev.add_argument("--scratch-mb", type=cli_int(1), default=Limits.scratch_mb, metavar="MIB",
                    help="size of the submission's private /tmp and /dev/shm, each (default "
                    "%(default)s)")
    ev.add_argument("--backend", choices=BACKENDS, default="local",
                    help="local processes (--workers) or one Ray task per unit (default "
                    "%(default)s)")
    ev.add_argument("--address", default=None,
                    help="Ray cluster address for --backend ray (default: start a local Ray "
                    "with --workers CPUs)")
    ev.add_argument("--no-isolation", action="store_true",
                    help="do not seal the submission's process tree with bubblewrap (the "
                    "result records it as unsealed; it never ranks on the hard track)")
    ev.add_argument("--name", default=None, help="row label (default: NAME or the file stem)")
    ev.add_argument("--force", action="store_true", help="replace a different existing result")
    ev.add_argument("--no-progress", action="store_true", help="no progress bar")
    ev.add_argument("--reps", type=_reps, default=2000,
                    help=f"bootstrap replications (at most {MAX_REPS:,})")
    ev.set_defaults(func=_cmd_evaluate)

    vf = sub.add_parser("verify", help="evaluate a result's submission again and compare its "
                        "per-episode records (writes RESULT.verified on a match)")
    vf.add_argument("results", nargs="+", help="result JSON files")
    vf.add_argument("--workers", type=cli_int(1), default=1, help="parallel unit processes")
    vf.add_argument("--backend", choices=BACKENDS, default="local",
                    help="local processes or one Ray task per unit (default %(default)s)")
    vf.add_argument("--address", default=None, help="Ray cluster address (--backend ray)")
    vf.add_argument("--call-timeout", type=_SECONDS, default=Limits.call_s, metavar="S")
    vf.add_argument("--unit-timeout", type=_SECONDS, default=Limits.unit_s, metavar="S")
    from leaderboard.verify import DEFAULT_RTOL

    vf.add_argument("--rtol", type=cli_real(0.0), default=DEFAULT_RTOL, metavar="R",
                    help="largest relative difference of any per-episode number that still "
                    f"reproduces (default {DEFAULT_RTOL:g}; 0: bit for bit only)")
    vf.add_argument("--no-progress", action="store_true", help="no progress bar")
    vf.set_defaults(func=_cmd_verify)

    rd = sub.add_parser("render", help="write LEADERBOARD.md and the static page")
    rd.add_argument("--results", default="results/leaderboard", help="result JSON directory")
    rd.add_argument("--markdown", default="LEADERBOARD.md", help="markdown output")
    rd.add_argument("--html", default="docs/leaderboard.html", help="HTML output")
    rd.add_argument("--trust", choices=("local", "committed"), default="local",
                    help="the keys whose signatures count: the committed ones and this "
                    "machine's own (local, default), or the committed ones only (the committed "
                    "board)")
    rd.set_defaults(func=_cmd_render)

    sub.add_parser("paper", help="moved: python -m experiments.paper (from the repository's "
                   "root)").set_defaults(func=_cmd_paper)

    rm = sub.add_parser("readme", help="regenerate README.md's number blocks and LEADERBOARD.md")
    rm.add_argument("--check", action="store_true",
                    help="change nothing; exit 1 if a file differs from its sources")
    rm.add_argument("--main-job", action="store_true",
                    help="rerun the README's main job into results/main_job.txt first")
    rm.set_defaults(func=_cmd_readme)

    fr = sub.add_parser("frontier", help="the risk-delay Pareto frontier of a policy re-solved "
                        "or retrained per psi, and the psi a weight w selects (Theorem 1)")
    fr.add_argument("--agent", required=True,
                    help="lp, slack-lp, slack-guided, myopic, centre, or a learned method "
                    "(alpha-ddpg, ...) trained per point")
    fr.add_argument("--env", default="tsg/Screening-Window-10F-v1", help="registered id")
    fr.add_argument("--instance", type=cli_int(0), default=0, help="instance seed")
    fr.add_argument("--scales", type=cli_real(1.0, low_open=True), nargs="+",
                    default=[1.01, 1.05, 1.1, 1.25, 1.5, 2.0], help="s in psi = s * psi^LP")
    fr.add_argument("--weight", type=cli_real(0.0), action="append", default=None,
                    help="trade-off weight w of the mean wait (repeatable; default 0.01 0.1 1)")
    fr.add_argument("--days", type=cli_int(1), default=5, help="evaluation days per point")
    fr.add_argument("--gradient-steps", type=cli_int(1), default=10_000,
                    help="training budget of a learned agent per point (mini-batches)")
    fr.add_argument("--out", default="results/frontier", help="output directory")
    fr.add_argument("--no-progress", action="store_true", help="no progress bar")
    fr.set_defaults(func=_cmd_frontier)

    pn = sub.add_parser("panel", help="train the attacker track's committed alpha-DDPG "
                        "checkpoints (10,000 gradient steps, seed 0) for the units of suites")
    pn.add_argument("--suite", action="append", required=True, choices=list(SUITES),
                    help="suite (repeatable)")
    pn.add_argument("--force", action="store_true", help="retrain existing checkpoints")
    pn.add_argument("--no-progress", action="store_true", help="no progress bar")
    pn.set_defaults(func=_cmd_panel)

    ky = sub.add_parser("key", help="this machine's signing key: where it is, its id, the line "
                        "that trusts it (created on first use)")
    ky.set_defaults(func=_cmd_key)
    sg = sub.add_parser("sign", help="re-sign result files with this machine's key (a "
                        "maintainer's attestation; each file is checked first)")
    sg.add_argument("results", nargs="+", help="result JSON files")
    sg.add_argument("--recompute", action="store_true",
                    help="first recompute each result's summary (aggregate, track, notes) from "
                    "its episodes under the current rules and record its days explicitly "
                    "(after a change of the rules; the episodes are never touched)")
    sg.set_defaults(func=_cmd_sign)

    ds = sub.add_parser("dataset", help="write a Minari dataset of an expert's days (under "
                        "MINARI_DATASETS_PATH; minari.load_dataset reads it)")
    ds.add_argument("--agent", required=True,
                    help="the expert: lp, slack-guided, clairvoyant (the bracket's plan of each "
                    "day) or a baseline name (a learned one with --checkpoint)")
    ds.add_argument("--env", required=True, help="registered id, e.g. tsg/Screening-v1")
    ds.add_argument("--days", required=True, type=cli_int(1), help="days to collect")
    ds.add_argument("--dataset-id", required=True,
                    help="Minari id, (namespace/)name-vN, e.g. tsg/window-10f-v2/lp-v0")
    ds.add_argument("--instance", type=cli_int(0), default=0, help="instance seed (default 0)")
    ds.add_argument("--seed", type=cli_int(0), default=0,
                    help="run seed: the days are its training days (default 0)")
    ds.add_argument("--checkpoint", default=None, help="a learned expert's checkpoint")
    ds.add_argument("--force", action="store_true", help="replace an existing dataset")
    ds.add_argument("--no-progress", action="store_true", help="no progress bar")
    ds.set_defaults(func=_cmd_dataset)

    sub.add_parser("suites", help="list the suites").set_defaults(func=_cmd_suites)
    sub.add_parser("schema", help="print the result JSON Schema").set_defaults(func=_cmd_schema)

    words = sys.argv[1:] if argv is None else list(argv)
    if words[:1] == ["paper"]:  # whatever its options were: say where the command went
        return _cmd_paper(argparse.Namespace())
    args = parser.parse_args(words)
    if getattr(args, "command", None) == "frontier" and args.weight is None:
        args.weight = [0.01, 0.1, 1.0]
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
