"""The ``sweep``, ``report`` and ``status`` subcommands of ``twinsweep`` (registered by :mod:`sweep.cli`).

Thin shells over :func:`sweep.api.run_sweep`, :func:`sweep.api.dry_run`, :func:`sweep.api.report`
and :func:`sweep.api.sweep_status`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def backend_name(text: str) -> str:
    """argparse ``type`` of ``--backend``: a name of the backend registry (built-in or an
    installed plug-in); any other is an argparse error that lists the valid names."""
    from twinsweep.backends.base import BACKENDS  # lazy: CLI start-up (importing the backends)
    from twinsweep.core.errors import ConfigError

    try:
        return BACKENDS.resolve(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parsers(sub) -> None:
    """Add the ``sweep`` and ``report`` subparsers to an argparse subparsers object."""
    p = sub.add_parser("sweep", help="run a study (grid of policies x backfill x datasets x seeds)", description=(
        "Run or resume the study described by a TOML spec (see studies/example.toml). Only runs missing from "
        "the output folder are executed; failing runs are recorded in failed/<key>/error.json and retried. "
        "Ends by building the report."))
    p.add_argument("spec", help="study spec (TOML)")
    add_backend_args(p, workers_help="parallel workers (overrides [backend] workers)")
    p.add_argument("--retries", type=int, default=None, help="extra attempts of a failing run (overrides [study] retries)")
    p.add_argument("--dry-run", action="store_true", help="print the grid size and a few run keys; run nothing")
    p.add_argument("--no-report", action="store_true", help="do not build the report at the end")
    p.add_argument("--no-progress", action="store_true", help="no progress (default: a bar on a terminal, else a line per tenth of the runs on stderr)")
    p.add_argument("--replace-plan", action="store_true",
                   help="accept a spec whose plan (datasets and their traces, grid, seeds, perturbation, systems) or "
                        "name differs from the one the --out folder's study.json records, and make it the folder's "
                        "(a spec that only adds seeds, grid values, windows or datasets needs no flag)")
    add_slurm_args(p, detach=True)
    p.set_defaults(func=_cmd_sweep)

    st = sub.add_parser("status", help="progress of a sweep's results folder (also a detached Slurm sweep)",
                        description=(
        "Show how many runs of a sweep are complete, missing and failed; for a Slurm sweep also its array "
        "tasks (pending / running / ended) and the failed tasks with their log files. When every run is "
        "complete and runs.parquet is stale, it is rebuilt (then `twinsweep report RESULTS` builds the report). "
        "Exit status, for scripts that wait for a detached sweep: 0 every planned run complete; 3 in progress "
        "(Slurm array tasks queued or running, or a sweep writing here); 1 runs failed or missing with nothing "
        "queued (run the sweep again); 2 not a results folder."))
    st.add_argument("results", help="results folder of a sweep")
    st.set_defaults(func=_cmd_status)

    r = sub.add_parser("report", help="build the HTML report of a sweep's results folder", description=(
        "Summarise runs.parquet (exact statistics per variant), compute the pooled distributions over every "
        "job and timeline sample of every run with Dask (docs/aggregation.md), and write report/index.html "
        "(charts inline SVG) with the charts as SVG files and the tables as CSVs beside it."))
    r.add_argument("results", help="results folder of a sweep")
    r.add_argument("--include-incomplete", action="store_true",
                   help="also rank blocks (dataset, window, seed) that miss planned runs; their missing variants "
                        "rank last, and the page says so (default: such blocks are left out of the rankings)")
    r.add_argument("--dask-scheduler", default=None, metavar="NAME",
                   help="where Dask computes the distributions: threads (default), processes, synchronous, "
                        "distributed (with --dask-address), ray (Dask on Ray), inline (no Dask)")
    r.add_argument("--dask-address", default=None, metavar="ADDR",
                   help="a dask.distributed scheduler (tcp://host:8786, e.g. from dask-jobqueue on Slurm) or, "
                        "with --dask-scheduler ray, a Ray cluster")
    r.set_defaults(func=_cmd_report)


def add_backend_args(p, workers_help: str) -> None:
    """The options ``sweep`` and ``tune`` share before their own: ``--out`` (overrides ``[study]
    output``), ``--backend`` (checked against the backend registry), ``--workers`` (help text
    ``workers_help``) and ``--address`` (a Ray cluster)."""
    p.add_argument("--out", default=None, help="output folder (overrides [study] output)")
    p.add_argument("--backend", default=None, type=backend_name, metavar="NAME",
                   help="local, ray, slurm or an installed backend plug-in (overrides [backend] name)")
    p.add_argument("--workers", type=int, default=None, help=workers_help)
    p.add_argument("--address", default=None, help="Ray cluster address (default: embedded local Ray)")


def add_slurm_args(p, detach: bool = False) -> None:
    """The Slurm options of ``sweep`` / ``tune`` (they override ``[backend.slurm]``)."""
    g = p.add_argument_group("Slurm (with --backend slurm; override [backend.slurm])")
    g.add_argument("--partition", default=None, help="Slurm partition (checked against sinfo before submitting)")
    g.add_argument("--account", default=None, help="Slurm account")
    g.add_argument("--qos", default=None, help="Slurm QOS")
    g.add_argument("--time", default=None, metavar="LIMIT",
                   help="time limit per array task: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS")
    g.add_argument("--mem", default=None, help="memory per array task's node, e.g. 4G")
    g.add_argument("--cpus-per-task", type=int, default=None, help="CPUs per array task")
    g.add_argument("--array-parallelism", type=int, default=None,
                   help="array tasks running at once (default: --workers, else no cap)")
    g.add_argument("--runs-per-task", type=int, default=None, help="runs per array task (default: automatic)")
    g.add_argument("--sbatch", action="append", default=[], metavar="OPT[=VALUE]",
                   help="extra sbatch option, e.g. --sbatch constraint=cpu --sbatch exclusive (repeatable)")
    if detach:
        g.add_argument("--detach", action="store_true",
                       help="submit the missing runs and return at once; follow with `twinsweep status OUT`")


def slurm_overrides(args) -> dict:
    """The Slurm options given on the command line (``{}`` when none)."""
    from twinsweep.backends.slurm import parse_sbatch_items

    d = {k: getattr(args, k, None) for k in ("partition", "account", "qos", "time", "mem", "cpus_per_task",
                                               "array_parallelism", "runs_per_task")}
    d = {k: v for k, v in d.items() if v is not None}
    if getattr(args, "sbatch", None):
        d["sbatch"] = parse_sbatch_items(args.sbatch)
    return d


def _check_slurm_cli(args, spec) -> dict:
    from twinsweep.core.errors import ConfigError

    over = slurm_overrides(args)
    name = args.backend or spec.backend.name
    if (over or getattr(args, "detach", False)) and name != "slurm":
        given = ", ".join("--" + k.replace("_", "-") for k in over) or "--detach"
        raise ConfigError(f"{given}: Slurm options need the slurm backend (--backend slurm); this sweep uses {name!r}")
    return over


def _cmd_sweep(args) -> int:
    from rich.console import Console

    from .api import dry_run, run_sweep
    from .spec import load_spec

    console = Console(stderr=True)
    spec = load_spec(args.spec)
    slurm = _check_slurm_cli(args, spec)
    if args.dry_run:
        info = dry_run(spec.with_overrides(backend=args.backend, workers=args.workers, address=args.address),
                       out=args.out)
        s = info["sizes"]
        rep = (f" ({s['repeats']} point(s) left out: a policy runs once over the axes it ignores, with their first "
               "values; replay ignores the backfill, kill and rescheduling options, the others replay_oversubscribe)"
               if s.get("repeats") else "")
        print(f"study {spec.name}: {s['datasets']} dataset(s), {s['windows']} window(s) x {s['grid_points']} grid "
              f"point(s){rep} x {s['seeds']} seed(s) = {info['runs']} runs")
        print(f"output {info['out']}: {info['done']} complete, {info['missing']} to run")
        for w in info.get("warnings", ()):
            print(f"twinsweep sweep: warning: {w}", file=sys.stderr, flush=True)
        for k in info["keys"]:
            coords = " ".join(f"{a}={v}" for a, v in k.items() if a != "key")
            print(f"  {k['key']}  {coords}")
        if info["runs"] > len(info["keys"]):
            print(f"  ... ({info['runs'] - len(info['keys'])} more)")
        return 0
    try:
        res = run_sweep(spec, out=args.out, backend=args.backend, workers=args.workers, address=args.address,
                        retries=args.retries, progress=False if args.no_progress else (True if sys.stderr.isatty() else "lines"),
                        report=not args.no_report, slurm=slurm or None, detach=args.detach,
                        log=_warn_line("sweep"), replace_plan=args.replace_plan)
    except KeyboardInterrupt:
        console.print("interrupted: the complete runs are kept; run the same command again to resume")
        raise
    if res.slurm is not None:
        s = res.slurm
        jobs = ", ".join(s["jobs"]) or "none"
        print(f"submitted {s['tasks']} run(s) as Slurm array(s) {jobs}"
              + (f"; {s['adopted']} run(s) already queued by an earlier submission" if s["adopted"] else "")
              + f" ({res.skipped} of {res.planned} already complete)")
        print(f"results: {res.out}")
        print(f"follow:  twinsweep status {res.out}")
        print(f"logs:    {s['folder']}")
        return 0
    print(f"{res.ran} run(s) done now, {res.skipped} already complete, {len(res.failed)} failed "
          f"(of {res.planned}) in {res.wall_s:.1f} s: {_time_split(res)}")
    print(f"results: {res.out}")
    print(f"table:   {res.table_path}")
    if res.failed:
        print(f"failed:  {res.out / 'failed'} ({', '.join(res.failed[:5])}{' ...' if len(res.failed) > 5 else ''})")
        _print_failures(res)
    if res.report:
        print(f"report:  {res.report}")
    return 1 if res.failed else 0


def _print_failures(res, most: int = 3) -> None:
    """The error of the first ``most`` failed runs, a line each (their whole record, traceback
    included, is in ``failed/<key>/error.json``)."""
    from .store import ResultStore

    docs = ResultStore(res.out).failures(res.failed[:most])  # an unreadable record is left out
    for key in res.failed[:most]:
        doc = docs.get(key)
        error = (str(doc.get("error") or "").splitlines() or ["(no error text)"])[0][:300] if doc is not None \
            else "(its error.json cannot be read)"
        print(f"  {key}: {error}")
    if len(res.failed) > most:
        print(f"  ... {len(res.failed) - most} more (each in failed/<key>/error.json; `twinsweep status` lists them)")


def _time_split(res) -> str:
    """Where a sweep's wall time went, e.g. ``"runs 31.0 s (as the progress bar timed them); loading
    traces, planning, starting and stopping the backend 1.2 s; tables and report 5.3 s"``: the progress
    bar times the runs only, so the total alone would not match it."""
    setup = max(res.wall_s - res.runs_s - res.outputs_s, 0.0)
    return (f"runs {res.runs_s:.1f} s (as the progress bar timed them); loading traces, planning, starting and "
            f"stopping the backend {setup:.1f} s; tables and report {res.outputs_s:.1f} s")


def _warn_line(command: str):
    """A ``log`` callable printing one line per message to stderr."""
    def log(msg: str) -> None:
        print(f"twinsweep {command}: {msg}", file=sys.stderr, flush=True)

    return log


def _cmd_status(args) -> int:
    from .api import sweep_status

    try:
        st = sweep_status(args.results)
    except FileNotFoundError as exc:
        print(f"twinsweep status: error: {exc}", file=sys.stderr)
        return 2
    print(f"results: {st['out']}" + (f" (study {st['study']})" if st["study"] else ""))
    print(f"runs:    {st['done']} of {st['planned']} complete, {st['missing']} missing, {len(st['failed'])} failed")
    for d in st["damaged"][:20]:
        print(f"unreadable run {d['key']}: {d['problem']} (not counted; the next sweep sets it aside and runs it again)")
    if len(st["damaged"]) > 20:
        print(f"... {len(st['damaged']) - 20} more unreadable run(s)")
    ti = st.get("table_info")
    if ti is not None and not ti.get("complete"):
        why = "the sweep was interrupted" if ti.get("interrupted") else "runs are missing or failed"
        print(f"table:   runs.parquet is partial: {ti.get('runs')} of {ti.get('planned')} planned runs ({why})")
    if st["busy"]:
        print(f"a sweep is writing here: {st['busy']}")
    sl = st["slurm"]
    if sl is not None:
        jobs = [j for s in sl["submissions"] for j in s["jobs"]]
        tasks = ", ".join(f"{n} {state.lower()}" for state, n in sorted(sl["tasks"].items())) or "none waiting"
        print(f"slurm:   {len(sl['submissions'])} submission(s), array(s) {', '.join(jobs) or 'none'}; "
              f"array tasks with runs to do: {tasks}; runs running {sl['running_runs']}, queued {sl['queued_runs']}")
        if not sl["squeue"]:
            print("         (squeue could not be asked: job states unknown)")
        for f in sl["failed_tasks"]:
            print(f"failed task {f['slurm_id']}: {f['state']}, {f['missing']} run(s) not done; log {f['log']}")
        for t in sl.get("timeouts", []):
            print(f"TIMEOUT  task {t['slurm_id']}: {_timeout_line(t)}")
    for f in st["failed"][:50]:
        where = f"log {f['log']}" if f.get("log") else f"record {f.get('record')}"
        print(f"failed run {f['key']}: {f['error']}; {where}")
    if len(st["failed"]) > 50:
        print(f"... {len(st['failed']) - 50} more failed run(s)")
    if st["complete"]:
        page = Path(st["out"]) / "report" / "index.html"
        fresh = st["table"] and page.exists() and page.stat().st_mtime >= Path(st["table"]).stat().st_mtime
        print(f"complete. table: {st['table']}; report: " + (str(page) if fresh else f"twinsweep report {st['out']}"))
        return 0
    if (sl is not None and sl["active"]) or st["busy"]:
        print("in progress: run this again to follow, or `twinsweep sweep SPEC --backend slurm` to wait for the end")
        return STATUS_IN_PROGRESS
    print("not complete and nothing queued: run the same `twinsweep sweep` command again to run what is missing")
    return 1


#: ``twinsweep status``'s exit status while the sweep is in progress (as ``systemctl status`` for a
#: unit not running: neither done, 0, nor failed, 1).
STATUS_IN_PROGRESS = 3


def _timeout_line(t: dict) -> str:
    """One ``twinsweep status`` line about an array task that reached its time limit."""
    from twinsweep.backends.slurm.task import time_limit_hint, time_limit_text

    n = t.get("timeouts")
    what = f"reached its time limit of {time_limit_text(t.get('time_min'))}" + (f" {n} time(s)" if n else "")
    if t.get("requeued"):
        what += f", requeued (now {(t.get('state') or 'gone').lower()})"
    else:
        what += ", not requeued" + (f" ({t['why']})" if t.get("why") else "")
    if t.get("run"):
        what += f"; it was running {t['run']}"
    return f"{what}; {time_limit_hint()}"


def _cmd_report(args) -> int:
    from twinsweep.core.errors import ConfigError

    from .api import report

    try:
        path = report(args.results, include_incomplete=args.include_incomplete, log=_warn_line("report"),
                      scheduler=args.dask_scheduler, address=args.dask_address)
    except (FileNotFoundError, ConfigError) as exc:
        print(f"twinsweep report: error: {exc}", file=sys.stderr)
        return 2
    print(f"report: {path}")
    return 0
