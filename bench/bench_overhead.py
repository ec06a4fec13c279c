"""Where a sweep's time goes, per run and per phase (prints figures; not a test). Issue 14, item 1.

    python bench/bench_overhead.py [phases] [backends] [outputs] [--spec studies/quickstart.toml]

1. ``phases``: the study's runs one after the other in this process, each phase timed (CPU and
   wall): dataset loading (once per dataset, in the driver), then per run: perturbation, window
   selection, node power, the engine, the timeline (binning), the cooling plant, the statistics,
   the rest of ``simulate`` (manifest, tables), the output tables built for Arrow, the parquet
   and JSON writes, and the result store's commit (temporary folder, sweep.json, rename).
2. ``backends``: the run phase on ``local`` and ``ray`` with 2 workers: wall time, worker time
   (workers × wall), the time the run function took in the workers, and the runs' own time (the
   sum of their ``timing.json``); goal: runs' own time >= 80 % of the worker time. Figures with
   and without the backend's start-up (process pool spawn / ``ray.init``).
3. ``outputs``: the table and report phase: runs.parquet, aggregate.parquet, the pooled
   distributions and the HTML report; goal: table + report <= 3 s.

CPU time (``time.process_time``) is the fair figure on a shared machine; wall is printed beside it.
Each figure is printed beside its goal (``phases`` has none) and recorded in ``bench/figures.json``
(``bench/_figures.py``). Exit status 1 when a run fails (a run's exception propagates in ``phases``).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from _figures import fail, goal_text, record  # noqa: E402 - after the path set-up

_T: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0])  # name -> [cpu, wall, calls]
_STACK: list[str] = []


def _timed(name: str, fn):
    """``fn`` wrapped to add its own time (exclusive of nested timed calls) to ``_T[name]``."""

    @functools.wraps(fn)
    def wrapper(*a, **k):
        c0, w0 = time.process_time(), time.perf_counter()
        _STACK.append(name)
        try:
            return fn(*a, **k)
        finally:
            _STACK.pop()
            dc, dw = time.process_time() - c0, time.perf_counter() - w0
            rec = _T[name]
            rec[0] += dc
            rec[1] += dw
            rec[2] += 1
            if _STACK:  # exclusive times: take this call out of the caller's
                parent = _T[_STACK[-1]]
                parent[0] -= dc
                parent[1] -= dw

    return wrapper


@contextlib.contextmanager
def _instrumented():
    """Wrap the run path's phases (module attributes, restored afterwards)."""
    import pyarrow.parquet as pq

    from twinsweep.core import cooling, engine, run
    from twinsweep.sweep import runner, store

    patches = [
        (run, "perturb", "perturb"), (run, "select_window", "window"), (run, "job_node_power_w", "node power"),
        (engine.Engine, "run", "engine"), (run, "build_timeline", "timeline"), (cooling, "apply_cooling", "cooling"),
        (run, "compute_stats", "stats"), (run, "simulate", "simulate (rest)"), (run, "_jobs_table", "Arrow tables"), (run, "_timeline_table", "Arrow tables"),
        (pq, "write_table", "parquet writes"), (run, "to_json", "JSON"), (run, "write_run", "write (rest)"),
        (runner, "commit_run_dir", "store commit"),
    ]
    saved = [(obj, attr, getattr(obj, attr)) for obj, attr, _ in patches]
    try:
        for obj, attr, name in patches:
            setattr(obj, attr, _timed(name, getattr(obj, attr)))
        yield
    finally:
        for obj, attr, orig in saved:
            setattr(obj, attr, orig)


def bench_phases(spec_path: Path, work: Path) -> None:
    from twinsweep.sweep.api import plan_sweep
    from twinsweep.sweep.runner import execute_run, make_payload

    c0, w0 = time.process_time(), time.perf_counter()
    spec, datasets, items = plan_sweep(spec_path)
    load_c, load_w = time.process_time() - c0, time.perf_counter() - w0
    runs_dir = work / "phases" / "runs"
    runs_dir.mkdir(parents=True)
    _T.clear()
    with _instrumented():
        c0, w0 = time.process_time(), time.perf_counter()
        for it in items:
            execute_run(make_payload(it, runs_dir), (datasets[it.dataset].workload, datasets[it.dataset].system))
        tot_c, tot_w = time.process_time() - c0, time.perf_counter() - w0
    n = len(items)
    print(f"[phases] {n} runs of {spec.name}, serial in-process; datasets loaded once in the driver: "
          f"{load_c:.2f} s CPU, {load_w:.2f} s wall ({len(datasets)} datasets, plan included)")
    print(f"[phases] {'phase':<18} {'CPU s':>8} {'wall s':>8} {'ms/run':>8} {'share':>6}")
    known_c = sum(v[0] for v in _T.values())
    rows = sorted(_T.items(), key=lambda kv: -kv[1][0]) + [("run fn (rest)", [tot_c - known_c, tot_w - sum(
        v[1] for v in _T.values()), n])]
    for name, (c, w, _) in rows:
        print(f"[phases] {name:<18} {c:8.2f} {w:8.2f} {1e3 * c / n:8.1f} {100 * c / tot_c:5.0f}%")
    print(f"[phases] {'total':<18} {tot_c:8.2f} {tot_w:8.2f} {1e3 * tot_c / n:8.1f}  ({os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}) {goal_text(None, None)}", flush=True)
    top = ", ".join(f"{name} {100 * c / tot_c:.0f} %" for name, (c, _, _) in rows[:4])
    record("overhead/phases", f"{n} runs of {spec.name} serially in-process (datasets loaded once): CPU per run and "
           "the largest phases", f"{1e3 * tot_c / n:.1f} ms CPU per run: {top}",
           command="python bench/bench_overhead.py phases")


def _run_phase(backend_name: str, spec_path: Path, work: Path, warm: bool) -> dict:
    import ray

    from twinsweep.backends.base import Task, make_backend
    from twinsweep.sweep.api import plan_sweep
    from twinsweep.sweep.runner import execute_run, make_payload

    spec, datasets, items = plan_sweep(spec_path)
    runs_dir = work / f"{backend_name}-{'warm' if warm else 'cold'}" / "runs"
    runs_dir.mkdir(parents=True)
    shared = {n: (d.workload, d.system) for n, d in datasets.items()}
    tasks = [Task(it.key, make_payload(it, runs_dir), it.dataset) for it in items]
    t_start = 0.0
    if warm and backend_name == "ray":
        t = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="error")
        t_start = time.perf_counter() - t
    try:
        with make_backend(backend_name, workers=2) as bk:
            t0 = time.perf_counter()
            outs = list(bk.run(tasks, execute_run, shared))
            wall = time.perf_counter() - t0
    finally:
        if ray.is_initialized():
            ray.shutdown()
    bad = [o for o in outs if not o.ok]
    if bad:
        fail(f"{backend_name}: {len(bad)} runs failed: {bad[0].error}")
        return {}
    own = sum(json.loads((runs_dir / o.key / "timing.json").read_text())["wall_time_s"] for o in outs)
    return {"runs": len(outs), "wall": wall, "fn": sum(o.wall_s for o in outs), "own": own, "start": t_start}


def bench_backends(spec_path: Path, work: Path) -> int:
    for name in ("local", "ray"):
        for warm in ((False,) if name == "local" else (False, True)):  # local starts its pool in every run()
            d = _run_phase(name, spec_path, work, warm)
            if not d:
                return 1
            wt = 2 * d["wall"]
            share = d["own"] / wt
            label = "backend already started" if warm else "backend start-up included"
            print(f"[backends] {name:5} 2 workers, {label}: run phase {d['wall']:.1f} s wall = {wt:.1f} worker-s; "
                  f"run function {d['fn']:.1f} s; runs' own time (timing.json) {d['own']:.1f} s = "
                  f"{100 * share:.0f} % of the worker time {goal_text('>= 80 %', share >= 0.8)}; hand-off "
                  f"{wt - d['fn']:.1f} worker-s" + (f"; start-up {d['start']:.1f} s" if warm else ""), flush=True)
            record(f"overhead/backends/{name}-{'warm' if warm else 'cold'}",
                   f"quickstart run phase ({d['runs']} runs), `{name}`, 2 workers, {label}: runs' own time "
                   "(timing.json) as a share of the worker time (2 × wall)",
                   f"{100 * share:.0f} % ({d['own']:.1f} of {wt:.1f} worker-s; run phase {d['wall']:.1f} s wall)",
                   goal=">= 80 %", met=share >= 0.8, command="python bench/bench_overhead.py backends")
    return 0


def bench_outputs(spec_path: Path, work: Path) -> int:
    from twinsweep.sweep.aggregate import aggregate_results
    from twinsweep.sweep.api import run_sweep
    from twinsweep.sweep.distributions import pooled_distributions
    from twinsweep.sweep.report import build_report
    from twinsweep.sweep.store import ResultStore

    res = run_sweep(spec_path, out=work / "outputs", backend="local", workers=2, report=False)
    if res.failed:
        fail(f"{len(res.failed)} runs failed: {sorted(res.failed)[:3]}")
        return 1
    root = res.out
    steps = [("runs.parquet", lambda: ResultStore(root).write_table()), ("aggregate", lambda: aggregate_results(root)),
             ("distributions", lambda: pooled_distributions(root)), ("report", lambda: build_report(root))]
    tot_c = tot_w = 0.0
    parts = []
    for name, fn in steps:
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        c, w = time.process_time() - c0, time.perf_counter() - w0
        tot_c += c
        tot_w += w
        parts.append(f"{name} {c:.2f}/{w:.2f}")
    print(f"[outputs] {res.planned} runs: table + report {tot_c:.2f} s CPU, {tot_w:.2f} s wall "
          f"{goal_text('<= 3 s', tot_c <= 3)} = " + ", ".join(parts) + " (CPU/wall s, imports included where first "
          "used)", flush=True)
    record("overhead/outputs", f"quickstart outputs after the runs ({res.planned} runs): runs.parquet, aggregate, "
           "pooled distributions, HTML report (imports included where first used)",
           f"{tot_c:.2f} s CPU, {tot_w:.2f} s wall = " + ", ".join(parts) + " (CPU/wall s)", goal="<= 3 s CPU",
           met=tot_c <= 3, command="python bench/bench_overhead.py outputs")
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("which", nargs="*", default=["phases", "backends", "outputs"])
    ap.add_argument("--spec", type=Path, default=REPO / "studies" / "quickstart.toml")
    a = ap.parse_args(argv)
    print(f"[bench_overhead] {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_overhead_") as tmp:
        work = Path(tmp)
        rc = 0
        if "phases" in a.which:
            bench_phases(a.spec, work)
        if "backends" in a.which:
            rc |= bench_backends(a.spec, work)
        if "outputs" in a.which:
            rc |= bench_outputs(a.spec, work)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
