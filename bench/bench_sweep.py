"""Sweep benchmarks (prints figures; not a test).

    .venv/bin/python bench/bench_sweep.py [quickstart] [efficiency] [memory]   (default: all three)

1. ``quickstart``: wall time of ``studies/quickstart.toml`` (ray, 2 workers) from scratch, split
   into runs / aggregation / report.
2. ``efficiency``: Ray parallel efficiency on 2 workers vs serial ``local`` for runs of about 1 s
   (SDSC SP2, 150-day windows): ``T_serial / (2 * T_ray)``; Ray start-up is excluded (reported apart),
   actor creation and dataset transfer are included. Goal >= 0.8.
3. ``memory``: driver RSS while 2,000 small runs stream through the ray backend (sampled every
   0.5 s); goal: flat, peak < 500 MB (judged by the peak; the samples are printed).

Each figure is printed beside its goal and recorded in ``bench/figures.json`` (``bench/_figures.py``).
Exit status 1 when a run fails.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from _figures import fail, goal_text, record  # noqa: E402 - after the path set-up


def rss_mb() -> float:
    """Current resident set size of this process (MB), from /proc."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_quickstart(workdir: Path) -> int:
    from twinsweep.sweep.aggregate import aggregate_results
    from twinsweep.sweep.api import run_sweep
    from twinsweep.sweep.report import build_report

    out = workdir / "quickstart"
    t0 = time.perf_counter()
    res = run_sweep(REPO / "studies" / "quickstart.toml", out=out, report=False)
    t_runs = time.perf_counter() - t0
    if res.failed:  # before the aggregate and report: a failed sweep is not timed further
        print(f"[quickstart] {res.planned} runs ({res.ran} ran, {len(res.failed)} failed), ray, 2 workers")
        fail(f"{len(res.failed)} quickstart runs failed: {sorted(res.failed)[:3]}")
        return 1
    t1 = time.perf_counter()
    aggregate_results(out)
    t_agg = time.perf_counter() - t1
    t2 = time.perf_counter()
    build_report(out)
    t_rep = time.perf_counter() - t2
    total = time.perf_counter() - t0
    print(f"[quickstart] {res.planned} runs ({res.ran} ran, {len(res.failed)} failed), ray, 2 workers")
    if res.failed:
        fail(f"{len(res.failed)} quickstart runs failed: {sorted(res.failed)[:3]}")
        return 1
    fig = (f"{total:.1f} s wall = runs {t_runs:.1f} s (loading and Ray start included) + aggregate {t_agg:.1f} s "
           f"+ report {t_rep:.1f} s")
    print(f"[quickstart] {fig} {goal_text('<= 180 s', total <= 180)}")
    record("sweep/quickstart", f"quickstart study ({res.planned} runs, Ray, 2 workers, cooling on), from scratch",
           fig, goal="<= 180 s", met=total <= 180, command="python bench/bench_sweep.py quickstart")
    return 0


def _efficiency_items(workdir: Path):
    from twinsweep.sweep.api import plan_sweep
    from twinsweep.sweep.spec import parse_spec

    doc = {
        "study": {"name": "eff", "seeds": [0, 1], "output": str(workdir / "eff")},
        "perturbation": {"runtime_sigma": 0.2, "submit_jitter": "5m"},
        "datasets": [{"name": "sdsc-sp2", "trace": "pwa-swf/SDSC-SP2-1998-4.2-cln.swf.gz",
                      "windows": [{"name": "w", "start": "97d", "duration": "150d"}]}],
        "grid": {"policy": ["fcfs", "sjf", "ljf"], "backfill": ["none", "firstfit", "easy", "conservative"]},
    }
    return plan_sweep(parse_spec(doc))


def _time_backend(backend, items, datasets, runs_dir: Path) -> float:
    from twinsweep.backends.base import Task
    from twinsweep.sweep.runner import execute_run, make_payload

    runs_dir.mkdir(parents=True, exist_ok=True)
    shared = {n: (d.workload, d.system) for n, d in datasets.items()}
    tasks = [Task(it.key, make_payload(it, runs_dir), it.dataset) for it in items]
    t0 = time.perf_counter()
    outs = list(backend.run(tasks, execute_run, shared))
    dt = time.perf_counter() - t0
    bad = [o for o in outs if not o.ok]
    if bad:
        raise RuntimeError(f"{len(bad)} runs failed: {bad[0].error}")
    return dt


def bench_efficiency(workdir: Path) -> int:
    import ray

    from twinsweep.backends.local import LocalBackend
    from twinsweep.backends.ray_backend import RayBackend

    spec, datasets, items = _efficiency_items(workdir)
    t_serial = _time_backend(LocalBackend(workers=1), items, datasets, workdir / "eff-serial")
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="error")
    t_start = time.perf_counter() - t0
    try:
        with RayBackend(workers=2) as rb:
            t_cold = _time_backend(rb, items, datasets, workdir / "eff-ray-cold")
            t_warm = _time_backend(rb, items, datasets, workdir / "eff-ray-warm")  # same actors, warm
    finally:
        ray.shutdown()
    per_run = t_serial / len(items)
    print(f"[efficiency] {len(items)} runs of {per_run:.2f} s each: serial local {t_serial:.1f} s; ray 2 workers "
          f"{t_cold:.1f} s cold (actor start + dataset transfer included), {t_warm:.1f} s warm actors "
          f"(+ {t_start:.1f} s Ray start-up, excluded)")
    e_cold, e_warm = t_serial / (2 * t_cold), t_serial / (2 * t_warm)
    print(f"[efficiency] parallel efficiency T1/(2*T2) = {e_cold:.2f} cold, {e_warm:.2f} warm   "
          f"{goal_text('>= 0.8 cold', e_cold >= 0.8)}")
    record("sweep/ray-efficiency", f"Ray parallel efficiency T1/(2·T2), 2 workers, {len(items)} runs of "
           f"{per_run:.2f} s (SDSC-SP2 150-day windows); Ray start-up excluded, actor start and dataset transfer "
           "included (cold)", f"{e_cold:.2f} cold, {e_warm:.2f} warm actors", goal=">= 0.8 cold", met=e_cold >= 0.8,
           command="python bench/bench_sweep.py efficiency")
    print(f"[efficiency] machine load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
          f"(other processes share the cores)")
    return 0


def bench_memory(workdir: Path, n_seeds: int = 167) -> int:
    from twinsweep.sweep.api import run_sweep
    from test_sweep_support import write_spec

    d = workdir / "mem"
    d.mkdir()
    spec = write_spec(d, seeds=n_seeds, backend="ray", policies=("fcfs", "sjf", "ljf"),
                      backfills=("none", "firstfit", "easy", "conservative"), n_jobs=30)
    samples: list[tuple[float, int, float]] = []
    stop = threading.Event()
    runs = d / "out" / "runs"

    def sample():
        t0 = time.perf_counter()
        while not stop.is_set():
            n = sum(1 for _ in os.scandir(runs)) if runs.exists() else 0
            samples.append((time.perf_counter() - t0, n, rss_mb()))
            stop.wait(0.5)

    th = threading.Thread(target=sample, daemon=True)
    base = rss_mb()
    th.start()
    t0 = time.perf_counter()
    res = run_sweep(spec, workers=2, report=False)
    wall = time.perf_counter() - t0
    stop.set()
    th.join()
    print(f"[memory] {res.planned} runs via ray (2 workers) in {wall:.1f} s; driver RSS before {base:.0f} MB")
    if res.failed:
        fail(f"{len(res.failed)} runs failed: {sorted(res.failed)[:3]}")
        return 1
    marks = [int(res.planned * f) for f in (0.1, 0.25, 0.5, 0.75, 1.0)]
    for m in marks:
        s = next((x for x in samples if x[1] >= m), samples[-1])
        print(f"[memory]   after {s[1]:5d} runs: driver RSS {s[2]:.0f} MB")
    after_start = [x[2] for x in samples if x[1] >= marks[0]]
    peak = peak_rss_mb()
    fig = f"{min(after_start):.0f}..{max(after_start):.0f} MB once streaming, peak {peak:.0f} MB"
    print(f"[memory] driver RSS range {fig}   {goal_text('flat, peak < 500 MB', peak < 500)}")
    record("sweep/driver-memory", f"driver RSS while {res.planned} small runs stream through Ray (2 workers)", fig,
           goal="flat, peak < 500 MB", met=peak < 500, command="python bench/bench_sweep.py memory")
    return 0


def main(argv: list[str]) -> int:
    which = set(argv) or {"quickstart", "efficiency", "memory"}
    with tempfile.TemporaryDirectory(prefix="bench_sweep_") as tmp:
        work = Path(tmp)
        rc = 0
        if "quickstart" in which:
            rc |= bench_quickstart(work)
        if "efficiency" in which:
            rc |= bench_efficiency(work)
        if "memory" in which:
            rc |= bench_memory(work)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
