"""Validate the twin on every PWA trace of the data folder that records a schedule (issue 15 item 5).

    python bench/validate_all.py [--traces KTH-SP2-1996-2.1-cln.swf.gz ...] [--restart 7d] [--out out/validate-all]

Runs :func:`twinsweep.sweep.validate.validate` (site policy ``fcfs`` + ``easy``, reported window
the second half of each log, noise floor 3 seeds) per trace, writes each trace's validation.json
and validation.html under ``--out``, and prints one markdown table (the one in docs/validation.md
and the README) with the wall time of each trace. A trace records a schedule when most of its jobs
have a recorded wait (SWF field 3 != -1); the others (LCG, LLNL-Atlas, NASA-iPSC) are listed as
skipped with that reason. Goals (issue 15): informed and restart |mean wait err| <= 20 %,
|p95| <= 25 %, hourly occupancy corr >= 0.5; whole KTH with --restart 7d and the noise floor
under a minute.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from twinsweep.core.data import data_dir
from twinsweep.core.loaders import load_workload
from twinsweep.sweep.validate import validate

#: Share of jobs with a recorded start a log needs to count as recording its schedule.
MIN_RECORDED = 0.5


def _pct(v):
    return "–" if v is None else f"{v * 100:+.0f} %"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", nargs="*", default=None, help="file names under pwa-swf/ (default: all)")
    ap.add_argument("--restart", default="7d")
    ap.add_argument("--sensitivity", action="store_true", help="also the policy x backfill table (slow)")
    ap.add_argument("--out", default="out/validate-all")
    args = ap.parse_args(argv)
    folder = data_dir() / "pwa-swf"
    names = args.traces or sorted(p.name for p in folder.glob("*.swf.gz"))
    rows, skipped = [], []
    for name in names:
        wl = load_workload(folder / name)
        rec = float(wl.jobs["recorded_start_time"].notna().mean())
        if rec < MIN_RECORDED:
            skipped.append(f"{name}: only {rec:.0%} of jobs have a recorded start (no schedule to compare with)")
            continue
        t = time.perf_counter()
        v = validate(f"pwa-swf/{name}", restart=args.restart, sensitivity=args.sensitivity, workload=wl,
                     out=Path(args.out) / name.removesuffix(".swf.gz"))
        wall = time.perf_counter() - t
        for mode, f in v["modes"].items():
            nf = (f.get("noise_floor") or {}).get("wait_mean_rel_error")
            corr = f.get("occupancy_corr_hourly")
            med = f.get("start_error_median_s")
            rows.append(f"| {name.removesuffix('.swf.gz')} | {mode} | {_pct(f.get('wait_mean_rel_error'))} | "
                        f"{_pct(f.get('wait_p95_rel_error'))} | {_pct(f.get('bsld_mean_rel_error'))} | "
                        f"{(f.get('start_within_1h_frac') or 0):.0%} | "
                        f"{'–' if med is None else f'{med / 3600:.1f} h'} | "
                        f"{'–' if corr is None else f'{corr:.2f}'} | {_pct(nf)} |")
        print(f"{name}: {wall:.1f} s wall ({v['timing_s']})", flush=True)
    print("\n| trace | mode | mean wait err | p95 wait err | bsld err | starts within 1 h | median \\|start err\\| "
          "| hourly occupancy corr | noise floor of the mean wait err |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    for s in skipped:
        print(f"skipped: {s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
