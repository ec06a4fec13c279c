"""Validate the twin on every PWA trace of the data folder that records a schedule (issue 15 item 5).

    python bench/validate_all.py [--traces KTH-SP2-1996-2.1-cln.swf.gz ...] [--restart 7d]
                                 [--max-jobs 60000] [--windows 4] [--parallel 3] [--out out/validate-all]

Runs :func:`twinsweep.sweep.validate.validate` per trace with the site's scheduler as its system
file's ``[site]`` table declares it (else ``fcfs`` + ``easy``), one estimator and one set of
constants for every trace (core/availability.py), the reported window the second half of each
(possibly cut) log, the noise floor (3 seeds), the ranking-stability study (``--windows``
busiest weeks) and the diagnostic mode ``holds`` (blind with the log's holds given; no goal: its
figures on the jobs the log did not hold are the last column of the per-trace table; ``--no-holds``
leaves it out). Traces with more than ``--max-jobs`` jobs are cut to their first that many jobs
in trace order (the cut is printed; the fitting and reported windows are then the halves of
the cut span). Writes each trace's validation.json / validation.html under ``--out`` and
``table.md`` there: the markdown tables of docs/validation.md and the README, each figure beside
its goal (informed and restart |mean wait err| <= 20 %, |p95| <= 25 %, hourly occupancy corr
>= 0.5; blind ranking tau >= 0.7 on every window), with the CPU time of each trace and the load
average. A trace records a schedule when most of its jobs have a recorded wait (SWF field 3 !=
-1); the others (LCG, LLNL-Atlas, NASA-iPSC) are listed as skipped with that reason.

``--render-only --docs README.md docs/validation.md`` also writes the tables into those files,
between the ``<!-- validate-all table -->`` and ``<!-- /validate-all table -->`` markers: the
rows of every trace with a validation.json under ``--out`` are replaced (or added), the rows of
the other traces are kept as they stand (a run of some traces updates their rows only), in
:data:`ORDER`. Each trace's label gives its submit span and job count (a cut trace: the cut).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path

from twinsweep.core.atomic import atomic_write_text
from twinsweep.core.data import data_dir
from twinsweep.core.loaders import load_workload
from twinsweep.sweep.ranking_stability import minimum_text
from twinsweep.sweep.validate import HELD, NOT_HELD, validate, write_validation
from twinsweep.sweep.ranking_stability import TAU_GOAL

#: Share of jobs with a recorded start a log needs to count as recording its schedule.
MIN_RECORDED = 0.5
#: Goals of issue 15 (informed and restart modes; ranking stability of blind mode).
GOAL_MEAN, GOAL_P95, GOAL_CORR, GOAL_TAU = 0.20, 0.25, 0.5, TAU_GOAL
#: Traces in the order they are run: smallest first, largest last (the brief's order).
ORDER = ("KTH-SP2-1996-2.1-cln", "SDSC-SP2-1998-4.2-cln", "SDSC-Par-1996-3.1-cln", "OSC-Clust-2000-3.1-cln",
         "LANL-CM5-1994-4.1-cln", "HPC2N-2002-2.2-cln", "SDSC-BLUE-2000-4.2-cln", "CEA-Curie-2011-2.1-cln",
         "RICC-2010-2")


def _pct(v):
    return "–" if v is None else f"{v * 100:+.0f} %"


def _ok(v, goal, absolute=True):
    if v is None:
        return "–"
    return "met" if (abs(v) <= goal if absolute else v >= goal) else "NOT met"


def _one(name: str, args) -> dict:
    """Validate one trace; returns its table rows, notes and CPU time (run in a worker process)."""
    folder = data_dir() / "pwa-swf"
    wl = load_workload(folder / name)
    rec = float(wl.jobs["recorded_start_time"].notna().mean())
    if rec < MIN_RECORDED:
        return {"skipped": f"{name}: only {rec:.0%} of jobs have a recorded start (no schedule to compare with)"}
    note = None
    if len(wl) > args.max_jobs:
        note = f"{name}: cut to its first {args.max_jobs:,} jobs of {len(wl):,} (trace order)"
        wl = dataclasses.replace(wl, jobs=wl.jobs.iloc[:args.max_jobs].reset_index(drop=True))
    cpu0, t0 = time.process_time(), time.perf_counter()
    folder_out = Path(args.out) / name.removesuffix(".swf.gz")
    v = validate(f"pwa-swf/{name}", restart=args.restart, sensitivity=args.sensitivity, workload=wl,
                 noise_seeds=args.noise_seeds, windows=args.windows, holds=not args.no_holds)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    v["cpu_s"], v["load_avg"] = round(cpu, 1), [round(x, 1) for x in os.getloadavg()]
    if note:
        v["cut"] = note
    write_validation(v, folder_out)
    print(f"{name}: {cpu:.1f} s CPU, {wall:.1f} s wall ({v['timing_s']})", flush=True)
    return {**_render(v, _label(v), f"{cpu:.0f} s CPU"), "note": note}


def _render(v: dict, label: str, cost: str) -> dict:
    """The table rows of one validation.json."""
    site = f"{v['policy']} + {v['backfill']}"
    rows = []
    for mode, f in v["modes"].items():
        if mode == "holds":  # a diagnostic whose held jobs are inputs: its not-held figures go to the per-trace table
            continue
        nf = (f.get("noise_floor") or {}).get("wait_mean_rel_error_worst")  # as the console says it
        corr = f.get("occupancy_corr_hourly")
        med = f.get("start_error_median_s")
        goals = "" if mode in ("blind", "holds") else (
            f"{_ok(f.get('wait_mean_rel_error'), GOAL_MEAN)} / {_ok(f.get('wait_p95_rel_error'), GOAL_P95)} / "
            f"{_ok(corr, GOAL_CORR, absolute=False)}")
        split = f.get("wait_by_log_hold") or {}
        held, free = split.get(HELD) or {}, split.get(NOT_HELD) or {}
        share = held.get("ref_wait_share", 0.0 if free else None)
        rows.append(f"| {label} | {site} | {mode} | {_pct(f.get('wait_mean_rel_error'))} | "
                    f"{_pct(f.get('wait_p95_rel_error'))} | {_pct(f.get('bsld_mean_rel_error'))} | "
                    f"{(f.get('start_within_1h_frac') or 0):.0%} | "
                    f"{'–' if med is None else f'{med / 3600:.1f} h'} | "
                    f"{'–' if corr is None else f'{corr:.2f}'} | {_pct(nf)} | {goals} | "
                    f"{'–' if share is None else f'{share:.0%}'} | "
                    f"{_pct(free.get('wait_mean_rel_error'))} / {_pct(free.get('wait_p95_rel_error'))} |")
    rs = v.get("ranking_stability") or {}
    tau = rs.get("kendall_tau_min_blind_vs_informed")
    tau_s, top3 = rs.get("kendall_tau_min_seeds"), rs.get("top3_same_frac")
    cal = v["calibration"]
    held_given = ((v["modes"].get("holds") or {}).get("wait_by_log_hold") or {}).get(NOT_HELD) or {}
    rank_row = (f"| {label} | {rs.get('windows', 0)} | {'–' if tau is None else minimum_text(tau)} | "
                f"{'no ranking: every variant ties' if rs.get('windows') and tau is None else _ok(tau, GOAL_TAU, absolute=False)} | "
                f"{'–' if tau_s is None else minimum_text(tau_s)} | {'–' if top3 is None else f'{top3:.0%}'} | "
                f"{cal['kill_grace_s']} s | {cal['blind_nodes_down']} | {cal['informed_down_node_frac']:.1%} | "
                f"{cost} | {_pct(held_given.get('wait_mean_rel_error'))} / {_pct(held_given.get('wait_p95_rel_error'))} | "
                f"{_removed(v.get('archive_cleaning'))} |")
    return {"rows": rows, "rank_row": rank_row}


def _removed(ac: dict | None) -> str:
    """``44,615 (72 %)``: jobs the archive's cleaning removed from the reported window, and their
    share of what the machine received then (validation.json ``archive_cleaning``); ``–`` when
    not measured, ``not a cleaned log`` when its header has no cleaning note, ``0`` when nothing
    was removed."""
    if ac and not ac.get("cleaned"):
        return "not a cleaned log"
    if not ac or ac.get("removed_in_window") is None:
        return "–"
    n, share = ac["removed_in_window"], ac.get("removed_share_in_window")
    return "0" if n == 0 else f"{n:,}" + ("" if share is None else f" ({share:.0%})")


#: Headers of the two tables (figures by mode; ranking stability and calibration).
HEAD_MODES = ("| trace | site scheduler | mode | mean wait err | p95 wait err | bsld err | starts within 1 h | "
              "median \\|start err\\| | hourly occupancy corr | noise floor of the mean wait err (worst seed) | goals (mean / p95 / corr) | "
              "log's wait in jobs it held | mean / p95 wait err, jobs the log did not hold |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
HEAD_RANK = ("| trace | weeks | τ blind vs informed (min) | goal τ ≥ 0.7 | τ seeds (min) | top-3 same | kill grace "
             "fitted | blind nodes down | node-hours inferred down | cost (all modes, noise floor, rankings) | "
             "holds given (diagnostic): mean / p95 wait err, jobs the log did not hold | jobs the archive's cleaning "
             "removed from the reported window (share of what the machine received) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|")
MARK_START, MARK_END = "<!-- validate-all table -->", "<!-- /validate-all table -->"


def _label(v: dict) -> str:
    """``NAME (D days, N jobs)``: the trace's submit span and its job count as validated (a cut
    trace: the cut), from validation.json (compared jobs plus every exclusion)."""
    span = v["windows"]["trace_submit_span"]
    blind = v["modes"]["blind"]
    n = blind["jobs_compared"] + sum(blind.get("exclusions", {}).values())
    return f"{Path(v['trace']).name.removesuffix('.swf.gz')} ({(span[1] - span[0]) / 86400:.0f} days, {n:,} jobs)"


def _key(row: str) -> str:
    """The trace name of a table row (its first cell without the parenthesised span)."""
    return row.split("|")[1].split(" (")[0].strip()


def _order(name: str) -> tuple:
    return (ORDER.index(name) if name in ORDER else len(ORDER), name)


def _pad(row: str, separator: str) -> str:
    """A kept row written when its table had fewer columns, padded with ``–`` (not measured then)
    to the columns of ``separator`` (a row with as many or more cells is returned as it is)."""
    missing = separator.count("|") - row.count("|")
    return row + " – |" * missing if missing > 0 else row


def merge_block(text: str, rows: list[str], rank_rows: list[str], where: str) -> str:
    """``text`` with the tables between :data:`MARK_START` and :data:`MARK_END` replaced: rows of
    the traces in ``rows`` / ``rank_rows`` replace theirs, the other traces' rows are kept (a kept
    row from a table with fewer columns is padded with ``–``: :func:`_pad`). Raises SystemExit
    naming ``where`` when the markers are missing."""
    a, b = text.find(MARK_START), text.find(MARK_END)
    if a < 0 or b < a:
        raise SystemExit(f"{where}: no {MARK_START} ... {MARK_END} block to write the tables into")
    lines = text[a + len(MARK_START):b].splitlines()
    # the second table starts at its header; rows above it are the modes table's
    cut = next((i for i, ln in enumerate(lines) if ln.startswith(HEAD_RANK[0].split(" | ")[0] + " | weeks")), len(lines))
    rows_of = lambda part: [ln for ln in part if ln.startswith("| ") and not ln.startswith("| trace |")]  # noqa: E731
    old_modes = [_pad(r, HEAD_MODES[1]) for r in rows_of(lines[:cut])]
    old_rank = [_pad(r, HEAD_RANK[1]) for r in rows_of(lines[cut:])]

    def merged(old_rows, new_rows):
        new_keys = {_key(r) for r in new_rows}
        keep = [r for r in old_rows if _key(r) not in new_keys]
        return sorted(keep + new_rows, key=lambda r: _order(_key(r)))  # stable: a trace's modes keep their order

    body = [*HEAD_MODES, *merged(old_modes, rows), "", *HEAD_RANK, *merged(old_rank, rank_rows)]
    return text[:a] + MARK_START + "\n" + "\n".join(body) + "\n\n" + text[b:]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", nargs="*", default=None, help="file names under pwa-swf/ (default: all)")
    ap.add_argument("--restart", default="7d")
    ap.add_argument("--max-jobs", type=int, default=60000, help="cut larger traces to their first N jobs")
    ap.add_argument("--windows", type=int, default=4, help="busiest weeks of the ranking-stability study")
    ap.add_argument("--noise-seeds", type=int, default=3)
    ap.add_argument("--sensitivity", action="store_true", help="also the policy x backfill table (slow)")
    ap.add_argument("--no-holds", action="store_true",
                    help="leave out the diagnostic mode 'holds' (blind with the log's holds given)")
    ap.add_argument("--parallel", type=int, default=1, help="traces validated at once (worker processes)")
    ap.add_argument("--out", default="out/validate-all")
    ap.add_argument("--render-only", action="store_true",
                    help="validate nothing: render table.md from the validation.json files already under --out")
    ap.add_argument("--docs", nargs="*", default=[], metavar="FILE",
                    help="with --render-only: write the tables into these files' validate-all block "
                         "(README.md docs/validation.md), replacing the rows of the traces rendered")
    args = ap.parse_args(argv)
    if args.docs and not args.render_only:
        ap.error("--docs goes with --render-only (render the tables from the validation.json files written)")
    folder = data_dir() / "pwa-swf"
    names = args.traces or sorted((p.name for p in folder.glob("*.swf.gz")),
                                  key=lambda n: (_order(n.removesuffix(".swf.gz"))[0], n))
    if args.render_only:
        import json

        results = []
        for n in names:
            f = Path(args.out) / n.removesuffix(".swf.gz") / "validation.json"
            if f.exists():
                v = json.loads(f.read_text())
                cpu = v.get("cpu_s")  # written by a run of this script (validate() records wall times only)
                results.append(_render(v, _label(v), f"{cpu:.0f} s CPU" if cpu is not None else
                                       f"{v['timing_s']['total_s']:.0f} s wall"))
    elif args.parallel > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.parallel) as ex:
            results = list(ex.map(_one, names, [args] * len(names)))
    else:
        results = [_one(n, args) for n in names]
    rows = [r for res in results for r in res.get("rows", [])]
    rank_rows = [res["rank_row"] for res in results if "rank_row" in res]
    notes = [res["note"] for res in results if res.get("note")]
    skipped = [res["skipped"] for res in results if "skipped" in res]
    load = os.getloadavg()
    out = [*HEAD_MODES, *rows, "", *HEAD_RANK, *rank_rows, "",
           f"Load average at the end: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min); "
           f"{args.parallel} trace(s) at once.",
           *[f"- {n}" for n in notes], *[f"- skipped: {s}" for s in skipped]]
    text = "\n".join(out) + "\n"
    Path(args.out).mkdir(parents=True, exist_ok=True)
    atomic_write_text(Path(args.out) / "table.md", text)
    print("\n" + text)
    for doc in args.docs:
        p = Path(doc)
        atomic_write_text(p, merge_block(p.read_text(), rows, rank_rows, doc))
        print(f"tables written into {doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
