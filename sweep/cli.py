"""The ``twinsweep`` command: thin shells over the public Python APIs (DESIGN.md §1).

Subcommands: ``run`` (one twin run), ``systems`` (named systems and their sources), ``sweep``,
``report`` (see :mod:`sweep.api`), ``incentives`` (:mod:`sweep.incentives`), ``tune``
(:mod:`sweep.tune`), ``validate`` (:mod:`sweep.validate`). Errors from bad input print one clear line and exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import re
import sys
import warnings
from pathlib import Path


#: Options whose value may begin with "-" and a digit (a negative duration or window start): argparse
#: takes such a token for an option of its own ("expected one argument"), so :func:`main` hands it
#: over as ``--flag=value`` and the option's own check names what is wrong with it.
_SIGNED_VALUE_FLAGS: set[str] = set()


def _signed(action):
    """Register ``action`` (what ``add_argument`` returns) in :data:`_SIGNED_VALUE_FLAGS`; returns it."""
    _SIGNED_VALUE_FLAGS.update(action.option_strings)
    return action


def _join_signed_values(argv: list[str]) -> list[str]:
    """``[..., "--start", "-1d", ...]`` -> ``[..., "--start=-1d", ...]`` for :data:`_SIGNED_VALUE_FLAGS`."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok in _SIGNED_VALUE_FLAGS and i + 1 < len(argv) and re.match(r"-[0-9.]", argv[i + 1]):
            out.append(f"{tok}={argv[i + 1]}")
            i += 2
            continue
        out.append(tok)
        i += 1
    return out


#: ``--data`` of the commands that read one trace
_DATA_HELP = ("trace file; a relative path resolves against the data folder ($TWINSWEEP_DATA, else ../shared/data "
              "beside the checkout), and the quickstart's three traces also ship with the package (`twinsweep data list`)")


def _duration(text):
    from twinsweep.core.durations import parse_human_duration
    from twinsweep.core.errors import ConfigError

    try:
        return parse_human_duration(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_duration(text):
    """:func:`_duration` of a length that must be > 0 (a window's duration, a restart period): a
    negative value gets the same message as 0 does."""
    from twinsweep.core.durations import is_negative_duration

    if is_negative_duration(text):
        raise argparse.ArgumentTypeError(f"duration: must be > 0 s, got {text!r}")
    return _duration(text)


def _add_run_parser(sub):
    from twinsweep.core.scheduler import available_backfills, available_policies

    p = sub.add_parser("run", help="one twin run of a trace", description=(
        "Replay or reschedule one trace and write jobs.parquet, timeline.parquet, stats.json and "
        "manifest.json. Times are seconds from the trace epoch; durations accept 3600, 90m, 6h, 7d."))
    p.add_argument("--data", required=True, help=_DATA_HELP)
    p.add_argument("--format", default=None, help="loader name (default: detect)")
    p.add_argument("--tz", default=None, metavar="ZONE",
                   help="IANA time zone of the trace's local wall-clock times (e.g. Europe/Rome), for formats "
                        "with local times (sacct, LAST, Eurora, F-DATA, PM100); wins over a '# tz:' line of the "
                        "file, the system file's timezone and $TWINSWEEP_TZ")
    p.add_argument("--system", default=None, help="system name or TOML path (default: the named system that lists the trace, see `twinsweep systems`; else a generic one from the SWF header)")
    p.add_argument("--policy", required=True, help=f"{', '.join(available_policies())}, or a plug-in named module:Class (docs/plugins.md)")
    p.add_argument("--backfill", default="none", help=f"{', '.join(available_backfills())}, or a plug-in named module:Class (default none)")
    p.add_argument("--scheduler", default=None, metavar="\"CMD ARGS\"",
                   help="with --policy external: the external scheduler, a command speaking the protocol on "
                        "stdin/stdout (e.g. \"python studies/schedulers/fcfs_easy.py\") or inproc:MODULE:NAME "
                        "(MODULE a dotted module or a .py file path, NAME an object or class in it; docs/protocol.md)")
    p.add_argument("--queue-cancelled", action="store_true",
                   help="keep jobs cancelled while queued in the log queued until their cancel time (status "
                        "cancelled; run option queue_cancelled; default: the system file's queue_cancelled, off)")
    _signed(p.add_argument("--start", type=_duration, default=None, help="window start from the trace epoch: seconds or a duration (3600, 90m, 6h, 10d)"))
    _signed(p.add_argument("--duration", type=_positive_duration, default=None, help="window length (e.g. 7d)"))
    _signed(p.add_argument("--sample-period", type=_duration, default=60, help="timeline bin width (default 60 s)"))
    p.add_argument("--seed", type=int, default=0, help="seed of the run-time / submit perturbation (default 0: none)")
    p.add_argument("--runtime-sigma", type=float, default=0.0, help="sigma of log-normal run-time noise, used when seed > 0 (default 0)")
    _signed(p.add_argument("--submit-jitter", type=_duration, default=0, help="submit-time jitter, seconds or a duration, used when seed > 0 (default 0)"))
    p.add_argument("--no-kill", action="store_true", help="do not end jobs at their time limit")
    p.add_argument("--lenient", action="store_true", help="skip malformed trace lines (counted in stats)")
    p.add_argument("--cooling", action="store_true",
                   help="run the cooling model (docs/cooling.md): PUE, coolant temperatures, cooling power")
    p.add_argument("--wetbulb", default=None, metavar="C|CSV",
                   help="outdoor wet bulb for --cooling: constant °C, or a CSV with time and wetbulb_c "
                        "columns (default: the plant's design wet bulb)")
    p.add_argument("--out", required=True, help="output directory (required): a new or empty folder, or an earlier "
                                                "run's folder (its files are replaced)")
    p.add_argument("--force", action="store_true",
                   help="write into a non-empty --out folder that is not a twinsweep run")
    p.add_argument("--accounts-in", default=None, metavar="PATH",
                   help="accounts collected by an earlier run (accounts.json or a run directory) for the "
                        "account-incentive policies (acct_*) and the account factors of 'weighted'; "
                        "'collect:replay' collects them from a replay of the same window first")
    p.add_argument("--accounts-out", default=None, metavar="PATH",
                   help="write this run's per-account/per-user accounts (accounts.json) to PATH")
    p.add_argument("--accounts-merge", action="store_true",
                   help="with --accounts-out: write the accounts of --accounts-in plus this run's")
    p.add_argument("--acct-level", default=None, choices=("account", "user"),
                   help="prioritise by the account table (default) or the user table")
    p.add_argument("--weights", default=None, metavar="F=W,...",
                   help="weights of the 'weighted' policy, e.g. age=1,size=0.5 (factors: age, size, tlimit, "
                        "acct_points, acct_power, acct_edp, fairshare)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="any other policy option (repeatable; numbers and true/false are parsed)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary table")
    p.set_defaults(func=_cmd_run)


def _run_options(args) -> tuple:
    """RunConfig.options from --accounts-in/--acct-level/--weights/--option (sorted pairs)."""
    from twinsweep.core.errors import ConfigError
    from twinsweep.core.policies import parse_weights

    opts: dict = {}
    for item in args.option:
        if "=" not in item:
            raise ConfigError(f"--option: expected KEY=VALUE, got {item!r}")
        k, v = (x.strip() for x in item.split("=", 1))
        low = v.lower()
        if low in ("true", "false"):
            val = low == "true"
        else:
            try:
                val = int(v)
            except ValueError:
                try:
                    val = float(v)
                except ValueError:
                    val = v
        opts[k] = val
    if args.weights:
        opts.update(parse_weights(args.weights))
    if getattr(args, "queue_cancelled", False):
        opts["queue_cancelled"] = True
    if args.accounts_in:
        opts["accounts_in"] = args.accounts_in
    if args.acct_level:
        opts["acct_level"] = args.acct_level
    if args.accounts_merge and not (args.accounts_out and args.accounts_in):
        raise ConfigError("--accounts-merge needs --accounts-in and --accounts-out")
    return tuple(sorted(opts.items()))


def _write_accounts(args, res, console) -> None:
    from twinsweep.core.accounts import accounts_of_run, load_accounts, merge, save_accounts

    acc = accounts_of_run(res)
    if args.accounts_merge:
        if str(args.accounts_in).startswith("collect:"):
            from twinsweep.core.errors import ConfigError

            raise ConfigError("--accounts-merge needs a file in --accounts-in, not a collect: value")
        acc = merge(load_accounts(args.accounts_in), acc)
    path = save_accounts(acc, args.accounts_out)
    if console is not None:  # None: --quiet
        console.print(f"accounts: {path} ({len(acc.accounts)} accounts, {len(acc.users)} users, "
                      f"{len(acc.runs)} run(s))")


def _cmd_run(args) -> int:
    from twinsweep.core.config import Perturbation, RunConfig
    from twinsweep.core.run import prepare_out_dir

    if args.quiet:  # nothing is printed: rich (about 0.1 s of imports) stays out of the process
        console = None
    else:
        from rich.console import Console

        console = Console(stderr=True)
    cfg = RunConfig(
        data=args.data, system=args.system, format=args.format, policy=args.policy,
        backfill=args.backfill, start=args.start, duration=args.duration,
        sample_period=args.sample_period, seed=args.seed, kill=not args.no_kill, lenient=args.lenient,
        perturbation=Perturbation(args.runtime_sigma, args.submit_jitter), options=_run_options(args), tz=args.tz,
        scheduler=args.scheduler,
    )
    if args.wetbulb is not None and not args.cooling:
        from twinsweep.core.errors import ConfigError

        raise ConfigError("--wetbulb needs --cooling")
    if args.cooling:
        import dataclasses

        cfg = dataclasses.replace(cfg, cooling=True, wetbulb=args.wetbulb)
    if args.accounts_out:
        from twinsweep.core.accounts import check_accounts_out

        check_accounts_out(args.accounts_out)  # before any simulation, as --out
    out_dir, created = prepare_out_dir(args.out, force=args.force)  # before any simulation
    try:
        return _simulate_and_write(args, cfg, console, out_dir)
    except BaseException:
        if created:  # leave nothing behind for a run that produced nothing
            try:
                out_dir.rmdir()
            except OSError:
                pass
        raise


def _print_warnings(res) -> None:
    """The run's warnings (a window past the trace's last submission, the trace's own), one line each
    on stderr, also with --quiet: they say the result may not mean what it seems to."""
    for w in res.warnings:
        print(f"twinsweep run: warning: {w}", file=sys.stderr, flush=True)


def _print_window(res) -> None:
    """The simulated window as UTC dates and as offsets, on stdout (what the run covered)."""
    from twinsweep.core.tracespan import utc_text

    w, epoch = res.manifest["window"], res.manifest["workload"]["epoch"]
    print(f"window: {utc_text(epoch, w['start'])} to {utc_text(epoch, w['end'])} "
          f"({w['start']:,} s to {w['end']:,} s from the trace epoch {utc_text(epoch, 0)}; {w['duration'] / 86400:.2f} d)",
          flush=True)


def _simulate_and_write(args, cfg, console, out_dir: Path) -> int:
    from twinsweep.core.run import load_run_inputs, simulate, write_run

    if console is None:  # --quiet
        wl, system = load_run_inputs(cfg)
        res = simulate(cfg, workload=wl, system=system)
        write_run(res, out_dir)
        _print_warnings(res)
        if args.accounts_out:
            _write_accounts(args, res, None)
        return 0
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    # the spinner and the bar are for a terminal: on a pipe or a file rich would leave a blank line
    # (stopping its live display) before an error or the table
    live = console.is_terminal
    with console.status(f"loading {args.data}") if live else contextlib.nullcontext():
        wl, system = load_run_inputs(cfg)
    with Progress(TextColumn("simulating"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                  TimeElapsedColumn(), console=console, transient=True, disable=not live) as prog:
        task = prog.add_task("sim", total=1.0)
        t_first = int(wl.jobs["submit_time"].min()) if len(wl) else 0
        t_last = int(wl.jobs["submit_time"].max()) if len(wl) else 1
        lo = args.start if args.start is not None else t_first

        def progress(t, t_end):
            hi = t_end if t_end >= 0 else t_last
            prog.update(task, completed=min(1.0, max(0.0, (t - lo) / max(1, hi - lo))))

        res = simulate(cfg, workload=wl, system=system, progress=progress)
    out = write_run(res, out_dir)
    if args.accounts_out:
        _write_accounts(args, res, console)
    _print_window(res)  # one line above the table (the table has no window row: it would say it twice)
    _print_summary(res, out)  # the result, on stdout (the spinner and the warnings use stderr)
    _print_warnings(res)
    return 0


def _stdout_console():
    """A rich console on stdout, wide when piped (no 80-column squeeze of the tables)."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 200)


def _print_summary(res, out: Path) -> None:
    from rich.table import Table

    console = _stdout_console()

    s, c = res.stats["system"], res.stats["counts"]
    label = res.stats.get("power_label", "assumed")
    m = res.manifest
    t = Table(title=f"{m['workload']['source']} on {m['system']['name']} — {m['policy']} + {m['backfill']}",
              show_header=False)

    def fmt(v, unit="", scale=1.0, nd=1):
        return "—" if v is None else f"{v / scale:,.{nd}f}{unit}"

    from twinsweep.core.metrics import format_number, si_power

    def sig(v, unit="", scale=1.0):  # 3 significant digits, as the report shows them
        return "—" if v is None else f"{format_number(v / scale, 3)}{unit}"

    def power(v, digits=3):  # in the SI unit of the value (W, kW, MW: core.metrics.si_power)
        if v is None:
            return "—"
        value, unit = si_power(v)
        return f"{format_number(value, digits)} {unit}"

    def peak_mean(peak, mean):  # one more digit while two different values would read the same
        for digits in (3, 4, 5):
            a, b = power(peak, digits), power(mean, digits)
            if a != b or peak == mean:
                break
        return f"{a} / {b}"

    rows = [
        ("jobs", f"{c['jobs_in_window']:,} in window, {c['completed']:,} completed, {c['timeout']:,} killed, "
                 f"{c['rejected']:,} rejected, {c['not_run']:,} never ran, "
                 + (f"{c['cancelled']:,} cancelled while queued, " if c.get("cancelled") else "")
                 + f"{c['still_queued']:,} queued / {c['still_running']:,} running at end"
                 + (f" ({c['running_when_recorded']:,} still running when the trace was recorded)"
                    if c.get("running_when_recorded") else "")),
        ("time limits imputed", f"{c['time_limit_imputed']:,}"),
        *([("trace lines skipped (--lenient)", f"{c['lenient_skipped_lines']:,} (stats.json counts; the loader "
                                                "warned with their line numbers)")]
          if c.get("lenient_skipped_lines") else []),
        ("wait mean / p95", f"{sig(s['wait_mean_s'], ' h', 3600)} / {sig(s['wait_p95_s'], ' h', 3600)}"),
        ("bounded slowdown (τ=10 s), mean", sig(s["bsld_mean"])),
        ("average weighted response time (AWRT)", sig(s["awrt_s"], " h", 3600)),
        ("utilisation", fmt(None if s["utilization"] is None else 100 * s["utilization"], " %", 1, 1)),
        (f"facility energy ({label})", fmt(s["facility_energy_j"], " MWh", 3.6e9, 3)),
        (f"peak / mean power ({label})", peak_mean(s["peak_power_w"], s["mean_power_w"])),
        (f"15-min ramp max ({label})", power(s["ramp_15min_max_w"])),
        *([(f"PUE (energy-weighted; {label})", fmt(s["pue_avg"], "", 1, 3)),  # labelled as the power model, as the report
           (f"cooling energy ({label})", fmt(s["cooling_energy_j"], " MWh", 3.6e9, 3)),
           ("return temp mean / max / swing",
            f"{fmt(s['return_temp_mean_c'], ' °C')} / {fmt(s['return_temp_max_c'], ' °C')} / "
            f"{fmt(s['return_temp_swing_c'], ' K')}"),
           ("tower return temp mean / max",
            f"{fmt(s['tower_return_temp_mean_c'], ' °C')} / {fmt(s['tower_return_temp_max_c'], ' °C')}")]
          if s.get("pue_avg") is not None else []),
        ("simulation wall time", f"{res.wall_time_s:.2f} s (the run itself; start-up and writing not included)"),
        ("output", str(out)),
    ]
    for k, v in rows:
        t.add_row(k, v)
    console.print(t)


def _add_systems_parser(sub):
    p = sub.add_parser("systems", help="list the named systems and the sources of their parameters")
    p.add_argument("--sources", action="store_true", help="print every cited source")
    p.set_defaults(func=_cmd_systems)


def _cmd_systems(args) -> int:
    from rich.table import Table

    from twinsweep.core.system import list_systems

    console = _stdout_console()
    t = Table(title="twinsweep systems (power marked 'assumed' = parameters of comparable hardware; trace procs/node "
                    "= processors per node as the trace counts them, 1 where it counts nodes)")
    for col in ("name", "title", "nodes", "trace procs/node", "power", "traces"):
        # names are copied into --system: never cut; long cells fold onto more lines (no "…")
        t.add_column(col, no_wrap=col == "name", overflow="fold")
    systems = list_systems()
    for s in systems:
        t.add_row(s.name, s.title, f"{s.nodes:,}", str(s.cores_per_node), s.power_label, ", ".join(s.traces))
    console.print(t)
    if args.sources:
        for s in systems:
            console.print(f"[bold]{s.name}[/bold]")
            for src in s.sources:
                console.print(f"  - {src.get('what', '')}: {src.get('cite', '')}")
    return 0


def _add_data_parser(sub):
    p = sub.add_parser("data", help="public datasets: list them, download them (core/fetch.py)")
    dsub = p.add_subparsers(dest="data_command", required=True)
    f = dsub.add_parser("fetch", help="download a dataset (resumable; verified where the catalogue can)",
                        description="Download the public files of a dataset into the data folder "
                                    "(<data>/<folder>, or --dest). An interrupted download resumes. A file is "
                                    "verified against the SHA-256 and size in the catalogue (PWA logs, ALCF Theta "
                                    "job sets, LLNL LAST) or the size and MD5 its Zenodo record publishes; a "
                                    "mismatch is an error and the bytes are removed. A file with nothing to check "
                                    "against is downloaded with a warning (column 'downloads checked by' of `twinsweep data list`).")
    f.add_argument("name", help="dataset name, or one file of it by name (KTH-SP2-1996-2.1-cln); "
                                "see `twinsweep data list`")
    f.add_argument("--dest", default=None, help="target folder (default: the data folder's subfolder)")
    f.add_argument("--file", action="append", default=[], metavar="NAME", help="only this file (repeatable)")
    f.add_argument("--quiet", action="store_true", help="no progress bar")
    f.set_defaults(func=_cmd_data_fetch)
    ls = dsub.add_parser("list", help="the datasets the fetch catalogue knows; with a name, its files",
                         description="Without a name: every dataset of the fetch catalogue. With a dataset "
                                     "name (e.g. pwa-swf): its files, each a name `twinsweep data fetch` takes.")
    ls.add_argument("name", nargs="?", default=None, help="a dataset name: list its files")
    ls.set_defaults(func=_cmd_data_list)


def _cmd_data_fetch(args) -> int:
    from twinsweep.core.fetch import fetch

    paths = fetch(args.name, dest=args.dest, files=args.file or None, progress=not args.quiet)
    for p in paths:
        print(p)
    return 0


def _cmd_data_list(args) -> int:
    from rich.table import Table

    from twinsweep.core.data import DATA_ENV, data_dir
    from twinsweep.core.fetch import list_datasets, present

    console = _stdout_console()
    datasets = list_datasets()
    folder = data_dir()  # resolved once for every dataset
    if args.name is not None:
        match = [d for d in datasets if d.name == args.name]
        if not match:
            print(f"twinsweep: error: unknown dataset {args.name!r}; datasets: "
                  f"{', '.join(d.name for d in datasets)}", file=sys.stderr)
            return 2
        d = match[0]
        t = Table(title=f"files of {d.name} (`twinsweep data fetch NAME` takes each file name, with or without its .swf.gz)")
        for col in ("file", "size", "a download is checked against", "on this machine"):
            t.add_column(col)
        here, wrong, shipped = present(d, folder)
        for f in d.files:
            how = "sha256 + size" if f.sha256 else ("md5 + size" if f.md5 else
                                                   ("the Zenodo record's md5" if d.md5_from else "nothing (warned)"))
            where = ", ".join(w for w, ok in (("data folder", f.name in here),
                                              ("data folder, but not its size: fetch it again", f.name in wrong),
                                              ("package", f.name in shipped)) if ok)
            t.add_row(f.name, "—" if f.size is None else f"{f.size:,} B", how, where or "—")
        if d.manual:
            console.print(f"{d.name}: {d.manual}")
        console.print(t)
        return 0
    t = Table(title="datasets `twinsweep data fetch NAME` knows (`twinsweep data list NAME`: its files)")
    for col in ("name", "title", "files", "in the data folder", "downloads checked by", "loader", "system", "licence"):
        t.add_column(col, no_wrap=col in ("name", "in the data folder"))
    for d in datasets:
        here, wrong, shipped = present(d, folder)
        have = (f"{len(here)}" if d.manual else f"{len(here)} of {len(d.files)}") + (
            f", {len(wrong)} of another size" if wrong else "") + (f" (+{len(shipped)} in the package)" if shipped else "")
        t.add_row(d.name, d.title, "manual" if d.manual else str(len(d.files)), have, d.verification, d.loader,
                  d.system or "by trace", d.licence)
    console.print(t)
    console.print(f"data folder: {folder} (${DATA_ENV} sets it)"
                  + ("" if folder.is_dir() else "; it does not exist yet: `twinsweep data fetch NAME` creates it"))
    return 0


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``twinsweep`` argument parser. ``command``: when it is one of this module's own
    subcommands (:data:`_OWN_COMMANDS`), only that subcommand's parser is built (what
    :func:`main` asks for: `twinsweep run` then skips building the other eight, about 8 ms of
    its start-up; its parsing, help and errors are those of the full parser); otherwise (None,
    an option, a name of ``cli_sweep`` or ``tune``, a typo) every subcommand is built, so the
    top-level help and the invalid-choice error list them all."""
    parser = argparse.ArgumentParser(prog="twinsweep", description=(
        "Digital twin of an HPC batch system and a sweep engine over scheduling policies."))
    from twinsweep import __version__

    parser.add_argument("--version", action="version", version=f"twinsweep {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    if command in _OWN_COMMANDS:
        _OWN_COMMANDS[command](sub)
        return parser
    _add_run_parser(sub)
    _add_systems_parser(sub)
    _add_data_parser(sub)
    from . import cli_sweep  # sweep / report / tune subcommands

    cli_sweep.add_parsers(sub)
    _add_incentives_parser(sub)
    _add_validate_parser(sub)
    from .tune.cli import add_parser as _add_tune_parser  # light: sweep.tune loads its parts on use

    _add_tune_parser(sub)
    return parser


def _add_incentives_parser(sub):
    p = sub.add_parser("incentives", help="incentive-study report: power timelines side by side, per-account gains and costs",
                       description=("Write report/incentives.html for a sweep's results folder (e.g. of "
                                    "studies/incentives.toml): every policy's facility power timeline side by side, "
                                    "and each account's (or user's) mean wait and energy, with its change against "
                                    "the baseline policy, so that one sees who gains and who pays."))
    p.add_argument("results", help="results folder of a sweep")
    p.add_argument("--baseline", default="fcfs", help="policy the others are compared with (default fcfs)")
    p.add_argument("--out", default=None, help="output folder (default RESULTS/report)")
    p.set_defaults(func=_cmd_incentives)


def _cmd_incentives(args) -> int:
    from .incentives import incentive_report

    try:
        path = incentive_report(args.results, out=args.out, baseline=args.baseline)
    except FileNotFoundError as exc:
        print(f"twinsweep incentives: error: {exc}", file=sys.stderr)
        return 2
    print(f"report: {path}")
    return 0


class _Paragraphs(argparse.HelpFormatter):
    """argparse's help formatter, keeping a description's paragraphs (blank-line separated), each
    filled to the terminal's width as argparse fills one."""

    def _fill_text(self, text, width, indent):
        fill = super()._fill_text
        return "\n\n".join(fill(p, width, indent) for p in text.split("\n\n"))


def _add_validate_parser(sub):
    p = sub.add_parser("validate", help="backtest: reschedule a log under its site's policy and compare with its recorded schedule",
                       formatter_class=_Paragraphs,
                       description=(
                           "Reschedule a trace under the site's policy and compare the twin's schedule with the "
                           "recorded one (sweep/validate.py; docs/validation.md): wait, bounded slowdown and per-job "
                           "start errors, wait-distribution distances, hourly occupancy, by mode, with the twin's "
                           "noise floor and every policy x backfill beside them. Writes validation.json and "
                           "validation.html into --out.\n\n"
                           "Windows: constants are fitted on the fitting window (--calibrate, default the first half "
                           "of the trace) and the figures are taken over the reported window (--report-window, "
                           "default what follows the fitting window).\n\n"
                           "Modes: blind (no recorded start, end or placement reaches the twin; one constant fitted "
                           "on the fitting window); informed (a node availability calendar inferred from the "
                           "reported window's busy-node and queued-job counts only, never from which job started "
                           "when; one share fitted on the fitting window's queue; node slots above the machine "
                           "where the busy count shows more held at once); restart (with --restart: re-seeded from "
                           "the recorded state every PERIOD, on the informed machine).\n\n"
                           "The site's scheduler comes from the system file's [site] table (policy, backfill and "
                           "their options, e.g. KTH's clock rules, SDSC's queue classes) unless --policy/--backfill "
                           "is given."))
    p.add_argument("--data", required=True, help=_DATA_HELP)
    p.add_argument("--system", default=None, help="system name or TOML path (default: as `twinsweep run`)")
    p.add_argument("--policy", default=None,
                   help="the site's ordering policy (default: the system file's [site] table, else fcfs)")
    p.add_argument("--backfill", default=None,
                   help="the site's backfill variant (default: the system file's [site] table, else easy)")
    _signed(p.add_argument("--restart", type=_positive_duration, default=None, metavar="PERIOD",
                           help="add the restart mode: re-seed from the recorded state every PERIOD (e.g. 7d)"))
    _signed(p.add_argument("--calibrate", default=None, metavar="START:END",
                           help="fitting window from the trace epoch (e.g. 0:180d); default the first half of the trace"))
    _signed(p.add_argument("--report-window", default=None, metavar="START:END",
                           help="window the figures are taken over (default: what follows the fitting window, "
                                "or what precedes it when it reaches the trace's last submission)"))
    p.add_argument("--noise-seeds", type=int, default=3, help="seeds of the noise floor (default 3; 0 = none)")
    p.add_argument("--no-sensitivity", action="store_true", help="skip the policy x backfill table")
    p.add_argument("--windows", type=int, default=4,
                   help="busiest weeks of the ranking-stability study (Kendall tau blind vs informed; default 4, 0 = none)")
    p.add_argument("--no-kill", action="store_true", help="do not end jobs at their time limit")
    p.add_argument("--queue-cancelled", action="store_true",
                   help="jobs cancelled while queued in the log stay queued until their cancel time (every mode)")
    p.add_argument("--holds-given", action="store_true",
                   help="add the diagnostic mode 'holds': blind, with the jobs the log held queued from their recorded "
                        "start (how close the model is once the holds are known)")
    p.add_argument("--lenient", action="store_true", help="skip malformed trace lines (counted and warned about)")
    p.add_argument("--format", default=None, help="trace format (loader name; default: detected)")
    p.add_argument("--out", required=True, help="output folder for validation.json and validation.html: a new or "
                   "empty folder, or one of an earlier validation (its two files are replaced)")
    p.add_argument("--force", action="store_true",
                   help="write into a non-empty --out folder that holds no earlier validation")
    p.set_defaults(func=_cmd_validate)


def _pct(v) -> str:
    """A relative error for people: ``+12.3 %``, ``n/a`` for None."""
    return "n/a" if v is None else f"{v * 100:+.1f} %"


def _ranking_line(rs: dict) -> str:
    """validate's console line for ``validation.json["ranking_stability"]`` (with windows and a τ):
    the minima after ">=" rounded down to 2 decimals (0.7576 reads 0.75: rounded to nearest, 0.76
    would overstate a minimum), the goal, the top-3 share with one decimal as the page gives it."""
    from twinsweep.sweep.ranking_stability import TAU_GOAL, minimum_text

    n = rs["windows"]
    top3 = "n/a" if rs.get("top3_same_frac") is None else f"{rs['top3_same_frac'] * 100:.1f} %"
    k = rs.get("unranked_window_metrics")
    return (f"rankings over the {n} busiest week{'s' if n != 1 else ''}: Kendall tau blind vs informed >= "
            f"{minimum_text(rs['kendall_tau_min_blind_vs_informed'])} (goal >= {TAU_GOAL:g}; 1 = the same order), "
            f"seeds >= {minimum_text(rs.get('kendall_tau_min_seeds'))}, top-3 the same in {top3} of week x metric pairs"
            + (f" ({k} week x metric pair(s) left out: every variant ties there)" if k else ""))


def _cmd_validate(args) -> int:
    from twinsweep.core.errors import ConfigError
    from twinsweep.core.metrics import format_number

    from .validate import HELD, NOT_HELD, validate, window_text

    if args.windows < 0:
        raise ConfigError(f"--windows must be >= 0, got {args.windows}")
    if args.noise_seeds < 0:
        raise ConfigError(f"--noise-seeds must be >= 0, got {args.noise_seeds}")
    res = validate(args.data, system=args.system, policy=args.policy, backfill=args.backfill, restart=args.restart,
                   calibrate=args.calibrate, report_window=args.report_window, noise_seeds=args.noise_seeds,
                   sensitivity=not args.no_sensitivity, kill=not args.no_kill, lenient=args.lenient, out=args.out,
                   windows=args.windows, format=args.format, queue_cancelled=args.queue_cancelled,
                   holds=args.holds_given, force=args.force)
    for w in res.get("warnings") or ():
        print(f"twinsweep validate: warning: {w}", file=sys.stderr)
    sysd = res.get("system") or {}
    cpn = sysd.get("cores_per_node")
    parts = (res.get("calibration") or {}).get("partitions")
    print(f"system: {sysd.get('name')} ({sysd.get('nodes'):,} nodes x {cpn} core{'' if cpn == 1 else 's'}"
          + (f"; {sysd['derived']}" if sysd.get("derived") else "")
          + (f"; partitions, each scheduled and estimated on its own: "
             + ", ".join(f"{p['name']} {p['nodes']:,} nodes x {p['cores_per_node']} core"
                         f"{'' if p['cores_per_node'] == 1 else 's'} ({p['jobs']:,} jobs)" for p in parts) if parts else "")
          + ")")
    refs = {m: f.get("wait_mean_ref_s") for m, f in res["modes"].items()}
    # a mode compares the jobs it started: informed mode's node slots above the machine may run (and
    # compare) jobs the blind twin rejects, so the log's mean over each mode's jobs may differ
    one_ref = len({format_number(v / 3600, 3) for v in refs.values() if v is not None}) <= 1
    ref = next(iter(refs.values()), None)
    first = next(iter(res["modes"]), None)
    w = res["windows"]
    print(f"twin against the log's recorded schedule, {res['policy']} + {res['backfill']}, jobs submitted in the "
          f"reported window {window_text(w['reported'], w['fitting'])} (fitting window {window_text(w['fitting'], w['reported'])}; from the trace "
          f"epoch{', ' + w['epoch_utc'] if w.get('epoch_utc') else ''}); errors are (twin - log) / log"
          + ((f"; the log's mean wait {format_number(ref / 3600, 3)} h" if ref is not None else "") if one_ref else
             "; the modes compare different jobs, each line gives the log's mean wait over its own"))
    for mode, fig in res["modes"].items():
        def pct(k):
            return _pct(fig.get(k))
        corr = fig.get("occupancy_corr_hourly")
        within = fig.get("start_within_1h_frac")
        print(f"{mode:8s} jobs {fig['jobs_compared']:>7,}  mean wait {pct('wait_mean_rel_error')}  "
              f"p95 wait {pct('wait_p95_rel_error')}  mean bounded slowdown {pct('bsld_mean_rel_error')}  "
              f"starts within 1 h of the log's {'n/a' if within is None else f'{within * 100:.0f} %'}  "
              f"hourly busy-node correlation {'n/a' if corr is None else f'{corr:.2f}'}"
              + ("" if one_ref or refs[mode] is None else
                 f"  (the log's mean wait over these jobs {format_number(refs[mode] / 3600, 3)} h)")
              + (f"  (noise floor of the mean wait: its worst seed moved it {abs(nf) * 100:.1f} %; a smaller error "
                 "means nothing)"
                 if (nf := (fig.get("noise_floor") or {}).get("wait_mean_rel_error_worst")) is not None else ""))
    if res.get("queue_cancelled"):
        print(f"jobs cancelled while queued, kept queued until their cancel time (--queue-cancelled; whole trace): "
              f"{res.get('queue_cancelled_jobs', 0):,}")
    split = next(iter(res["modes"].values()), {}).get("wait_by_log_hold") or {}
    held = split.get(HELD)
    whose = "" if one_ref else f"{first} mode's "
    if held and held.get("ref_wait_share") is not None:
        basis = (res.get("log_holds") or {}).get("overtaken_by", "at least its nodes and its time limit")
        print(f"jobs the log held for a reason of their own (each overtaken by a later job asking for {basis}): "
              f"{held['jobs']:,} of the {whose}compared jobs, "
              f"{held['ref_wait_share'] * 100:.0f} % of "
              "the log's wait; mean wait error without them: "
              + ", ".join(f"{m} {_pct(f['wait_by_log_hold'].get(NOT_HELD, {}).get('wait_mean_rel_error'))}"
                          for m, f in res["modes"].items()))
    rs = res.get("ranking_stability")
    if rs and rs.get("windows") and rs.get("kendall_tau_min_blind_vs_informed") is not None:
        print(_ranking_line(rs))
    elif rs is not None:
        print(f"rankings: {'nothing to compare' if rs.get('windows') else 'not studied'} "
              f"({rs.get('skipped') or 'no window'})")
    print(f"validation: {Path(args.out) / 'validation.json'}, {Path(args.out) / 'validation.html'}")
    return 0


#: Variables OpenBLAS reads for its thread count when it loads (with numpy), first set wins
#: (OpenBLAS ``driver/others/openblas_env.c``).
_BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def _one_blas_thread(argv: list[str]) -> None:
    """Load numpy with one OpenBLAS thread in a ``twinsweep run`` process, unless the user set a
    thread count (any of :data:`_BLAS_THREAD_VARS`) or numpy is loaded already.

    OpenBLAS starts its thread pool (one thread per core) when numpy is imported; on this
    project's 2-core machine that start costs about 0.05 s CPU of the run's ~1 s, for nothing:
    the twin is single-threaded and its one BLAS call is a 10-row vector-matrix product of the
    cooling model (``core/cooling/dynamics.py``, ``--cooling`` only), far below the size at which
    OpenBLAS splits work across threads. Outputs are unchanged (``bench/output_hashes.py``). The
    variable is removed again once numpy has loaded, so processes the run starts (an external
    scheduler) inherit the user's environment, not ours."""
    if not argv or argv[0] != "run" or "numpy" in sys.modules or any(v in os.environ for v in _BLAS_THREAD_VARS):
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401 - OpenBLAS reads its thread count now, once per process
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


#: This module's subcommands, name -> the function adding its parser (see :func:`build_parser`).
_OWN_COMMANDS = {"run": _add_run_parser, "systems": _add_systems_parser, "data": _add_data_parser,
                 "incentives": _add_incentives_parser, "validate": _add_validate_parser}


@contextlib.contextmanager
def _start_up(freeze: bool = False):
    """Imports without the cyclic garbage collector, and (``freeze``) what they loaded kept out of
    its later passes.

    Importing numpy, pandas and pyarrow creates some 10^5 long-lived objects (functions,
    classes, module dicts), none of them garbage, which the collector walks again and again:
    during the imports, and in every full pass of the run after them. The collector is off while
    the modules load; with ``freeze`` the objects alive at the end are moved to the permanent
    generation (:func:`gc.freeze`, the CPython documentation's recipe for a process that
    loads a large set of modules once), so no later pass walks them; reference counting still
    frees them. Counted with callgrind, a `twinsweep run` of the KTH-SP2 week executes 8 % fewer
    instructions (2.02 -> 1.86 G; pausing alone: 2.00 G). The collector is on again (if it was)
    before any work: a run's own objects are collected as always."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if freeze:
                gc.freeze()
            gc.enable()


#: Modules a subcommand needs, loaded during the start-up (:func:`_start_up`).
_COMMAND_MODULES = {"run": ("twinsweep.core.config", "twinsweep.core.run")}


def _lenient_hint(exc, args) -> str:
    """How to skip a malformed trace line, after the error that names it: ``--lenient`` for a
    command that has it, a dataset's ``lenient = true`` for a sweep; "" otherwise."""
    from twinsweep.core.errors import TraceFormatError

    seen = set()  # a sweep names the spec and dataset around it (sweep.expand); a chain may loop
    while exc is not None and not isinstance(exc, TraceFormatError) and id(exc) not in seen:
        seen.add(id(exc))
        exc = exc.__cause__
    if exc is not None and not isinstance(exc, TraceFormatError):
        return ""
    if exc is None or exc.line is None or not exc.skippable:
        return ""  # no line, or a header line: --lenient skips job lines only
    if getattr(args, "lenient", None):  # already given: the line is one --lenient does not skip
        return ""
    if hasattr(args, "lenient"):
        return " (--lenient skips such lines, each counted and warned about)"
    if args.command == "sweep":
        return " (lenient = true in the dataset's table skips such lines, each counted and warned about)"
    return ""


def _one_line_warnings(command: str) -> None:
    """Show each warning as ``twinsweep COMMAND: warning: MESSAGE`` on stderr, once per distinct
    message, instead of Python's ``FILE:LINE: Category: message`` plus a source line, printed again
    for every run and collection that meets it (a sweep's replay runs of one window said the same
    over-subscription three times; helper-56). Run warnings stay recorded in full in each run's
    manifest and the sweep's tables."""
    seen: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        if text in seen:
            return
        seen.add(text)
        print(f"twinsweep {command}: warning: {text}", file=file or sys.stderr, flush=True)

    warnings.showwarning = show


def main(argv=None) -> int:
    """The ``twinsweep`` command; ``argv`` None: the process's own command line (``sys.argv``),
    whose start-up is then frozen out of the garbage collector's passes (:func:`_start_up`; a
    caller passing a list, as tests do, keeps its collector as it was)."""
    freeze = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    with _start_up(freeze):  # numpy, pandas (twinsweep.core), the registries, the parser, the command's modules
        _one_blas_thread(argv)
        from twinsweep.core.errors import TwinError

        parser = build_parser(argv[0] if argv else None)
        args = parser.parse_args(_join_signed_values(argv))
        for module in _COMMAND_MODULES.get(args.command, ()):
            importlib.import_module(module)
    if freeze:  # a real command line: warnings as one line each, once (tests keep pytest's capture)
        _one_line_warnings(args.command)
    try:
        return int(args.func(args) or 0)
    except TwinError as exc:
        msg = str(exc).removeprefix(f"{args.command}: ")  # an API message may name its function ("validate: ...")
        print(f"twinsweep {args.command}: error: {msg}{_lenient_hint(exc, args)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"twinsweep {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
