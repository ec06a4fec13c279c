"""``twinsweep tune SPEC``: the subcommand's arguments and its console output."""

from __future__ import annotations

import sys

from twinsweep.core.errors import ConfigError

from ..cli_sweep import add_backend_args, add_slurm_args, slurm_overrides

__all__ = ["add_parser"]


def add_parser(sub) -> None:
    """Add the ``tune`` subcommand to an argparse subparsers object."""
    p = sub.add_parser("tune", help="Optuna search over priority / incentive weights (resumable)", description=(
        "Tune the numeric run options of a tune spec (a study spec + [tune]) with Optuna: TPE for one objective, "
        "NSGA-II (Pareto front) for several. Each trial runs on every train window x seed through the sweep "
        "backends; running the same command again resumes the study. Writes best.json, trials.csv, "
        "pareto.png/history.png, importances, and winners.toml (a sweep spec re-running the winners)."))
    p.add_argument("spec", help="tune spec (TOML), e.g. studies/tune-incentives.toml")
    add_backend_args(p, workers_help="parallel workers (overrides [backend] workers; slurm: Optuna worker array "
                                     "tasks, default 4)")
    p.add_argument("--trials", type=int, default=None, help="finished trials wanted (overrides tune.trials)")
    p.add_argument("--storage", default=None,
                   help="Optuna storage: a journal file path or a SQLAlchemy URL (overrides tune.storage)")
    p.add_argument("--no-test", action="store_true", help="do not evaluate the winners on the test windows")
    add_slurm_args(p)
    p.set_defaults(func=_cmd_tune)


def _params_text(params) -> str:
    return ", ".join(f"{k.replace('options.', '')}={v:.4g}" for k, v in (params or {}).items())


def _cmd_tune(args) -> int:
    from .run import run_tune  # lazy: Optuna, the study spec and the backends only when tune runs
    from .spec import load_tune_spec

    spec = load_tune_spec(args.spec)

    def on_trial(number, params, values, errors):
        what = spec.format_values(values) if values else f"FAILED {'; '.join(errors)[:200]}"
        print(f"trial {number}: {_params_text(params)} -> {what}", file=sys.stderr, flush=True)

    slurm = slurm_overrides(args)
    if slurm and args.backend not in (None, "slurm"):
        raise ConfigError(f"Slurm options ({', '.join('--' + k.replace('_', '-') for k in slurm)}) need --backend slurm")
    try:
        res = run_tune(spec, out=args.out, backend=args.backend, trials=args.trials, workers=args.workers,
                       address=args.address, storage=args.storage, test=not args.no_test, on_trial=on_trial,
                       slurm=slurm or None, log=lambda msg: print(msg, file=sys.stderr, flush=True))
    except KeyboardInterrupt:
        print("interrupted: finished trials and runs are kept; run the same command again to resume", file=sys.stderr)
        raise
    in_study = f" ({res.failed_in_study} failed)" if res.failed_in_study else ""
    print(f"{res.ran_trials} trial(s) evaluated now, {res.failed_trials} failed ({res.executed} run(s) simulated), "
          f"{res.complete} finished in the study{in_study}, {res.wall_s:.1f} s")
    for b in res.best:
        test = b.get("test_values")
        print(f"best trial {b['number']}: {_params_text(b['params'])}\n  train: {spec.format_values(b['values'])}"
              + (f"\n  test:  {spec.format_values(test)}" if test is not None else ""))
    print(f"storage: {res.storage}  (optuna-dashboard {res.storage})")
    for name, path in res.files.items():
        print(f"{name}: {path}")
    if res.failed_trials:
        print(f"failed:  {res.failed_trials} trial(s) (their errors above and in trials.csv, column user_attrs_error; "
              f"failed runs in {res.out / 'failed'})")
    # as `twinsweep sweep` when runs failed: the outputs are written, the exit status says not all went well
    return 1 if res.failed_trials or res.worker_errors else 0
