"""Slurm backend overhead (prints figures; not a test). Needs a usable Slurm (e.g. the local one:
``sudo bash slurm/local-cluster.sh``).

    .venv/bin/python bench/bench_slurm.py [N_RUNS]        (default 32 runs)

A small study (synthetic 16-node SWF trace of 300 jobs; fcfs/sjf x 4 backfills x N_RUNS/8 seeds)
is executed through the backends directly (same tasks, same run function, planning excluded):

- ``local``: serial, and a process pool with as many workers as the Slurm node has CPUs (the same
  parallelism); the faster of the two is the reference;
- ``slurm auto``: default chunking (one array, runs split evenly over min(runs, MaxArraySize,
  2 x parallelism) array tasks), array parallelism = node CPUs;
- ``slurm 1/task``: one run per array task (the worst case: one Python start-up per run).

Per-run overhead = (T_slurm - T_local) / N_RUNS: what Slurm adds per run (submission, queueing,
array-task start-up and imports, loading the shared dataset, outcome files, polling). Also shown:
time spent submitting (sbatch + pickles) and the latency to the first finished run. There is no
goal for the overhead (printed as such); the figure is recorded in ``bench/figures.json``
(``bench/_figures.py``). Exit status 1 when no Slurm is usable or a run fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from _figures import fail, goal_text, record  # noqa: E402 - after the path set-up


def _study(workdir: Path, n_runs: int) -> Path:
    from test_sweep_support import write_spec, write_swf

    policies = ["fcfs", "sjf"]
    backfills = ["none", "firstfit", "easy", "conservative"]
    seeds = max(1, n_runs // (len(policies) * len(backfills)))
    trace = write_swf(workdir / "bench.swf", n_jobs=300, nodes=16, span_s=6 * 3600)
    return write_spec(workdir, name="bench-slurm", seeds=seeds, policies=policies, backfills=backfills, trace=trace)


def _timed(backend, tasks, shared, fn) -> tuple[float, float, int]:
    t0 = time.perf_counter()
    first = None
    n_ok = 0
    with backend as bk:
        for out in bk.run(tasks, fn, shared):
            if first is None:
                first = time.perf_counter() - t0
            n_ok += out.ok
            if not out.ok:
                fail(f"run {out.key}: {out.error}")
    return time.perf_counter() - t0, first or 0.0, n_ok


def main(argv: list[str]) -> int:
    import shutil

    from twinsweep.backends.base import Task, make_backend
    from twinsweep.backends.slurm import slurm_ready
    from twinsweep.sweep.api import plan_sweep
    from twinsweep.sweep.runner import execute_run, make_payload

    ok, why = slurm_ready()
    if not ok:
        print(f"[slurm] no usable Slurm here: {why}; start one with `sudo bash slurm/local-cluster.sh`")
        return 1
    n_runs = int(argv[0]) if argv else 32
    cpus = int(subprocess.run(["sinfo", "-h", "-N", "-o", "%c"], capture_output=True, text=True).stdout.split()[0])
    with tempfile.TemporaryDirectory(prefix="bench-slurm-", dir=os.environ.get("TWINSWEEP_BENCH_DIR")) as tmp:
        work = Path(tmp)
        spec, datasets, items = plan_sweep(_study(work, n_runs))
        shared = {name: (ds.workload, ds.system) for name, ds in datasets.items()}
        n = len(items)

        def tasks(tag: str):
            runs = work / tag / "runs"
            runs.mkdir(parents=True)
            return [Task(it.key, make_payload(it, runs), it.dataset) for it in items]

        t_serial, _, _ = _timed(make_backend("local", workers=1), tasks("serial"), shared, execute_run)
        t_local, first_local, ok_local = _timed(make_backend("local", workers=cpus), tasks("local"), shared,
                                                execute_run)
        print(f"[slurm] study: {n} runs on a 300-job synthetic trace; one run {t_serial / n:.3f} s serial; "
              f"node: {cpus} CPUs")
        print(f"[slurm] local serial:       {t_serial:6.2f} s")
        print(f"[slurm] local ({cpus} workers):    {t_local:6.2f} s  ({ok_local}/{n} ok)")
        n_bad = n - ok_local
        t_local = min(t_local, t_serial)  # compare with the faster local mode
        rows = []
        for label, opts in (("auto chunks", {}), ("1 run/task", {"runs_per_task": 1})):
            submit_s = []
            t_sub = [time.perf_counter()]

            def log(msg, submit_s=submit_s, t_sub=t_sub):
                if msg.startswith("slurm: submitted"):
                    submit_s.append(time.perf_counter() - t_sub[0])

            bk = make_backend("slurm", workers=cpus, folder=str(work / f"slurm-{len(rows)}"), log=log, poll_s=0.5,
                              **opts)
            bk.validate()  # cluster checks (sinfo, sbatch --test-only) counted apart
            tk = tasks(f"slurm-{len(rows)}")
            t_sub[0] = time.perf_counter()
            t, first, n_ok = _timed(bk, tk, shared, execute_run)
            n_bad += n - n_ok
            chunks = len(bk.last_submission["chunks"]) if bk.last_submission else 0
            over = (t - t_local) / n
            rows.append((label, t, over))
            print(f"[slurm] slurm {label:12s} {t:6.2f} s  ({n_ok}/{n} ok, {chunks} array task(s)); submit "
                  f"{sum(submit_s):.2f} s, first run back after {first:.2f} s; "
                  f"overhead per run vs local: {over * 1000:.0f} ms")
        shutil.rmtree(work, ignore_errors=True)
    if n_bad:
        fail(f"{n_bad} runs failed; no figure recorded")
        return 1
    best = min(rows, key=lambda r: r[2])
    fig = f"+{best[2]:.2f} s with {best[0]}, +{rows[1][2]:.2f} s with 1 run per array task"
    print(f"[slurm] per-run overhead of the slurm backend vs local ({n} runs, {cpus} CPUs): {fig} {goal_text(None, None)}")
    record("slurm/overhead", f"Slurm backend overhead per run vs local ({n} runs, single-node Slurm with {cpus} CPUs)",
           fig, command="python bench/bench_slurm.py")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
