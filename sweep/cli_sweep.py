"""The ``sweep`` and ``report`` subcommands of ``twinsweep`` (registered by :mod:`sweep.cli`).

Thin shells over :func:`sweep.api.run_sweep`, :func:`sweep.api.dry_run` and
:func:`sweep.api.report`.
"""

from __future__ import annotations

import sys


def add_parsers(sub) -> None:
    """Add the ``sweep`` and ``report`` subparsers to an argparse subparsers object."""
    p = sub.add_parser("sweep", help="run a study (grid of policies x backfill x datasets x seeds)", description=(
        "Run or resume the study described by a TOML spec (see studies/example.toml). Only runs missing from "
        "the output folder are executed; failing runs are recorded in failed/<key>/error.json and retried. "
        "Ends by building the report."))
    p.add_argument("spec", help="study spec (TOML)")
    p.add_argument("--out", default=None, help="output folder (overrides [study] output)")
    p.add_argument("--backend", default=None, choices=("local", "ray"), help="overrides [backend] name")
    p.add_argument("--workers", type=int, default=None, help="parallel workers (overrides [backend] workers)")
    p.add_argument("--address", default=None, help="Ray cluster address (default: embedded local Ray)")
    p.add_argument("--retries", type=int, default=None, help="extra attempts of a failing run (overrides [study] retries)")
    p.add_argument("--dry-run", action="store_true", help="print the grid size and a few run keys; run nothing")
    p.add_argument("--no-report", action="store_true", help="do not build the report at the end")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_sweep)

    r = sub.add_parser("report", help="build the HTML report of a sweep's results folder", description=(
        "Aggregate runs.parquet (exact statistics with Dask) and write report/index.html with PNGs and CSVs."))
    r.add_argument("results", help="results folder of a sweep")
    r.set_defaults(func=_cmd_report)


def _cmd_sweep(args) -> int:
    from rich.console import Console

    from .api import dry_run, run_sweep
    from .spec import load_spec

    console = Console(stderr=True)
    spec = load_spec(args.spec)
    if args.dry_run:
        info = dry_run(spec.with_overrides(backend=args.backend, workers=args.workers, address=args.address),
                       out=args.out)
        s = info["sizes"]
        print(f"study {spec.name}: {s['datasets']} dataset(s), {s['windows']} window(s) x {s['grid_points']} grid "
              f"point(s) x {s['seeds']} seed(s) = {info['runs']} runs")
        print(f"output {info['out']}: {info['done']} complete, {info['missing']} to run")
        for k in info["keys"]:
            coords = " ".join(f"{a}={v}" for a, v in k.items() if a != "key")
            print(f"  {k['key']}  {coords}")
        if info["runs"] > len(info["keys"]):
            print(f"  ... ({info['runs'] - len(info['keys'])} more)")
        return 0
    try:
        res = run_sweep(spec, out=args.out, backend=args.backend, workers=args.workers, address=args.address,
                        retries=args.retries, progress=not args.no_progress and sys.stderr.isatty(),
                        report=not args.no_report)
    except KeyboardInterrupt:
        console.print("interrupted: the complete runs are kept; run the same command again to resume")
        raise
    print(f"{res.ran} run(s) done now, {res.skipped} already complete, {len(res.failed)} failed "
          f"(of {res.planned}) in {res.wall_s:.1f} s")
    print(f"results: {res.out}")
    print(f"table:   {res.table_path}")
    if res.failed:
        print(f"failed:  {res.out / 'failed'} ({', '.join(res.failed[:5])}{' ...' if len(res.failed) > 5 else ''})")
    if res.report:
        print(f"report:  {res.report}")
    return 1 if res.failed else 0


def _cmd_report(args) -> int:
    from .api import report

    try:
        path = report(args.results)
    except FileNotFoundError as exc:
        print(f"twinsweep report: error: {exc}", file=sys.stderr)
        return 2
    print(f"report: {path}")
    return 0
