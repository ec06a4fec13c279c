"""Aggregation benchmarks (prints figures beside their goals; not a test). Issue 14, item 3.

    python bench/bench_aggregate.py [table] [distributions] [--dir DIR] [--table-runs N] [--runs N]

1. ``table``: exact per-variant summary (``aggregate.parquet``) of a synthetic runs.parquet of
   100,000 runs (``bench/synth_sweep.py --table-only``). Goal: <= 10 s.
2. ``distributions``: the pooled job-level distributions (wait, bounded slowdown, job EDP;
   ``sweep/distributions.py``) of a synthetic 10,000-run sweep (tens of millions of job rows,
   ``bench/synth_sweep.py``; generated once into ``DIR``, about 20 min on 2 busy cores, then reused),
   with Dask's threaded scheduler. Goal: <= 2 min and <= 2 GiB peak memory. Then the same with the
   1-min and 15-min power swings of every timeline sample too (no goal; for the record).

Each measurement runs in a fresh child process, so its peak RSS (``ru_maxrss``) is its own; CPU
time is the child's user + system time (all threads), the fair figure on a shared machine. Each
figure is printed beside its goal and recorded in ``bench/figures.json`` (``bench/_figures.py``);
exit status 1 when a measurement fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _figures import fail, goal_text, record  # noqa: E402 - after the path set-up

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter(); c0 = time.process_time()
what, root = sys.argv[1], sys.argv[2]
if what == "table":
    from twinsweep.sweep.aggregate import aggregate_results
    aggregate_results(root)
    extra = {}
else:
    from twinsweep.sweep.distributions import JOB_METRICS, DIST_METRICS, pooled_distributions
    import pandas as pd
    metrics = JOB_METRICS if what == "jobs" else DIST_METRICS
    p = pooled_distributions(root, metrics=metrics, scheduler=sys.argv[3] if len(sys.argv) > 3 else None,
                             log=lambda s: print(s, file=sys.stderr, flush=True))
    s = pd.read_parquet(p)
    extra = {"values": int(s["n"].sum()), "rows": int(s.loc[s["metric"] == "wait_s", "n"].sum())}
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": ru.ru_utime + ru.ru_stime,
                  "peak_mb": ru.ru_maxrss / 1024, **extra}))
"""


def _child(*args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        fail(f"child {args[:1]} exited {r.returncode}:\n{r.stderr}")
        raise SystemExit(1)
    return json.loads(r.stdout.strip().splitlines()[-1])


def _machine() -> str:
    return f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"


def bench_table(work: Path, runs: int) -> None:
    from synth_sweep import generate

    root = generate(work / f"table{runs}", runs, table_only=True, template=work / "template")
    d = _child("table", str(root))
    fig = f"{d['cpu_s']:.2f} s CPU, {d['wall_s']:.2f} s wall, {d['peak_mb']:.0f} MB peak"
    print(f"[table] runs.parquet summary of {runs:,} runs (exact n/min/mean/median/std/max/q05..q95 per variant "
          f"and metric): {fig} {goal_text('<= 10 s', d['wall_s'] <= 10)} ({_machine()})", flush=True)
    record("aggregate/table", f"runs.parquet summary of {runs:,} runs, exact per-variant statistics (synthetic "
           "runs.parquet)", fig, goal="<= 10 s", met=d["wall_s"] <= 10,
           command=f"python bench/bench_aggregate.py table --table-runs {runs}")


def bench_distributions(work: Path, runs: int, scheduler: str | None) -> None:
    from synth_sweep import generate

    root = generate(work / f"sweep{runs}", runs, template=work / "template")
    d = _child("jobs", str(root), *( [scheduler] if scheduler else []))
    fig = f"{d['cpu_s']:.1f} s CPU, {d['wall_s']:.1f} s wall, {d['peak_mb']:.0f} MB peak"
    met = d["wall_s"] <= 120 and d["peak_mb"] <= 2048
    print(f"[distributions] job-level (wait, bsld, job EDP) of {runs:,} runs, {d['rows']:,} finished-job rows, "
          f"{d['values']:,} values: {fig} {goal_text('<= 120 s, <= 2048 MB', met)} ({_machine()})", flush=True)
    record("aggregate/distributions-jobs", f"pooled job distributions (wait, bounded slowdown, job EDP) of {runs:,} "
           f"synthetic runs, {d['rows']:,} finished jobs, exact quantiles, Dask {scheduler or 'threads'}", fig,
           goal="<= 120 s, <= 2 GiB", met=met, command=f"python bench/bench_aggregate.py distributions --runs {runs}")
    d = _child("all", str(root), *( [scheduler] if scheduler else []))
    fig = f"{d['cpu_s']:.1f} s CPU, {d['wall_s']:.1f} s wall, {d['peak_mb']:.0f} MB peak"
    print(f"[distributions] + 1-min and 15-min power swings of every timeline: {d['values']:,} values: {fig} "
          f"{goal_text(None, None)} ({_machine()})", flush=True)
    record("aggregate/distributions-all", f"the same with the 1-min and 15-min power swings of every timeline sample "
           f"({d['values']:,} values)", fig, command=f"python bench/bench_aggregate.py distributions --runs {runs}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("which", nargs="*", default=["table", "distributions"])
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "twinsweep-bench-aggregate",
                    help="where the synthetic sweeps are generated and kept (default: %(default)s)")
    ap.add_argument("--table-runs", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--scheduler", default=None, help="Dask scheduler of the distributions (default threads)")
    a = ap.parse_args(argv)
    a.dir.mkdir(parents=True, exist_ok=True)
    if "table" in a.which:
        bench_table(a.dir, a.table_runs)
    if "distributions" in a.which:
        bench_distributions(a.dir, a.runs, a.scheduler)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main(sys.argv[1:]))
