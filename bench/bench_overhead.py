"""Where a sweep's time goes, per run and per phase (prints figures; not a test). Issue 14, item 1.

    python bench/bench_overhead.py [phases] [backends] [outputs] [--spec studies/quickstart.toml] [--rounds 5]

1. ``phases``: the study's runs one after the other in this process, each phase timed (CPU and
   wall): dataset loading (once per dataset, in the driver), then per run: perturbation, window
   selection, node power, the engine, the timeline (binning), the cooling plant, the statistics,
   the rest of ``simulate`` (manifest, tables), the output tables built for Arrow, the parquet
   and JSON writes, and the result store's commit (temporary folder, sweep.json, rename).
2. ``backends``: the run phase on ``local`` and ``ray`` with 2 workers, cold and warm: the runs'
   own time (the run function: simulate + outputs + folder commit, measured per run in the
   worker) against the worker time, both as CPU (the worker processes' CPU in the phase, psutil)
   and as wall (each worker from its start to the phase's end; 2 x the phase's wall beside it);
   goal: runs' own time >= 80 % of the worker time. The
   definitions are in :func:`bench_backends`.
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


def _patches() -> list[tuple]:
    """(object, attribute, phase name) of every run-path function :func:`_instrumented` wraps."""
    import pyarrow.parquet as pq

    from twinsweep.core import cooling, engine, run
    from twinsweep.sweep import runner, store

    return [
        (run, "perturb", "perturb"), (run, "select_window", "window"), (run, "pool_job_node_power_w", "node power"),
        (engine.Engine, "run", "engine"), (run, "build_timeline", "timeline"), (cooling, "apply_cooling", "cooling"),
        (run, "compute_stats", "stats"), (run, "simulate", "simulate (rest)"), (run, "_jobs_table", "Arrow tables"), (run, "_timeline_table", "Arrow tables"),
        (pq, "write_table", "parquet writes"), (run, "to_json", "JSON"), (run, "write_run", "write (rest)"),
        (runner, "commit_run_dir", "store commit"),
    ]


@contextlib.contextmanager
def _instrumented():
    """Wrap the run path's phases (module attributes, restored afterwards)."""
    patches = _patches()
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


def _cpu_of(proc) -> float | None:
    """User + system CPU seconds of a psutil Process (all its threads; None once it is gone)."""
    import psutil

    try:
        t = proc.cpu_times()
        return t.user + t.system
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def _main_thread_cpu(pid: int) -> float | None:
    """User + system CPU seconds of the main thread of process ``pid`` (the thread whose id is the
    pid: where a pool worker and a Ray actor run their tasks), from ``/proc/<pid>/task/<pid>/stat``
    (fields 14-15, clock ticks; proc(5)). None where there is no /proc (not Linux) or the process is gone."""
    try:
        with open(f"/proc/{pid}/task/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _descendants() -> dict:
    """pid -> psutil Process of every process below this one (pool, forkserver, Ray's daemons and workers)."""
    import psutil

    return {p.pid: p for p in psutil.Process().children(recursive=True)}


class _CpuMeter:
    """CPU of the processes of a run phase, from the kernel's per-process counters (psutil).

    ``start()`` notes the CPU each existing descendant process has used so far; ``saw(pid)``
    samples a worker when one of its results arrives (it is alive then: a pool's workers exit at
    the phase's end); ``stop()`` samples every descendant still alive. A worker's CPU in the phase
    is its last sample minus its CPU at ``start`` (0 for a process started in the phase: its
    start-up and imports count).

    Each sample also reads the main thread's CPU (:func:`_main_thread_cpu`), sampled with the
    process's: a worker's CPU off its main thread in the phase (:attr:`off_main_cpu`) is that of
    the threads the backend runs beside the tasks (Ray's core-worker threads: gRPC, I/O service;
    the pool's parent watcher), and of any thread a run starts itself (Arrow's writer threads),
    all counted against the runs."""

    def __init__(self):
        self.before: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.main_before: dict[int, float] = {}
        self.main_last: dict[int, float] = {}
        self.procs: dict = {}
        self.workers: set[int] = set()
        self.born: dict[int, float] = {}  # worker pid -> its process's start (epoch seconds)
        self.ready = 0.0  # when the backend's cluster was up (epoch s; ray.init's return), 0 = no such step

    @staticmethod
    def _read(pid: int, proc) -> tuple[float | None, float | None]:
        """(process CPU, main-thread CPU) of a process, the main thread read first (the process
        figure read after it is never smaller); None where not readable."""
        main = _main_thread_cpu(pid)
        return _cpu_of(proc), main

    def _sample(self, pid: int, proc) -> None:
        c, main = self._read(pid, proc)
        if c is None or c < self.last.get(pid, 0.0):
            return
        self.last[pid] = c  # the latest process figure, with or without a main-thread figure
        if main is None:  # no /proc (not Linux): no off-main-thread figure for this process
            self.main_last.pop(pid, None)
        else:
            self.main_last[pid] = main

    def start(self) -> None:
        self.procs = _descendants()
        for pid, p in self.procs.items():
            c, main = self._read(pid, p)
            if c is not None:
                self.before[pid] = c
                if main is not None:
                    self.main_before[pid] = main
        self.driver0 = time.process_time()
        self.t0 = time.time()

    def saw(self, worker: str) -> None:
        import psutil

        try:
            pid = int(worker.rsplit(":", 1)[1])
        except (IndexError, ValueError):
            return
        self.workers.add(pid)
        proc = self.procs.get(pid)
        if proc is None:
            try:
                proc = self.procs[pid] = psutil.Process(pid)
            except psutil.NoSuchProcess:
                return
        if pid not in self.born:
            try:
                self.born[pid] = proc.create_time()
            except psutil.Error:
                pass
        self._sample(pid, proc)

    def stop(self) -> None:
        self.driver = time.process_time() - self.driver0
        self.t1 = time.time()
        for pid, p in _descendants().items():
            self.procs.setdefault(pid, p)
            self._sample(pid, self.procs[pid])

    def used(self, pids) -> float:
        return sum(max(0.0, self.last.get(pid, 0.0) - self.before.get(pid, 0.0)) for pid in pids)

    @property
    def worker_wall(self) -> float:
        """Wall seconds the workers could work in the phase: each from its process's start (or the
        phase's, if earlier; or the moment ``ray.init`` returned, if later: Ray prestarts its
        workers while its cluster boots, and they wait for it) to the phase's end; a backend's
        own start-up before a worker can be given work (``ray.init``, the forkserver's preload)
        is not in it."""
        return sum(self.t1 - max(self.born.get(pid, self.t0), self.t0, self.ready) for pid in self.workers)

    @property
    def off_main_cpu(self) -> float | None:
        """CPU seconds of the workers' threads other than their main threads in the phase (None
        when a worker's main thread could not be read: no /proc)."""
        if any(pid not in self.main_last for pid in self.workers):
            return None
        return sum(max(0.0, (self.last[pid] - self.before.get(pid, 0.0))
                       - (self.main_last[pid] - self.main_before.get(pid, 0.0))) for pid in self.workers)

    @property
    def worker_cpu(self) -> float:
        return self.used(self.workers)

    @property
    def other_cpu(self) -> float:
        return self.used(set(self.last) - self.workers)


def _run_phase(backend_name: str, spec_path: Path, work: Path, warm: bool) -> dict:
    """The quickstart's run phase on ``backend_name`` with 2 workers (see :func:`bench_backends`)."""
    from twinsweep.backends.base import Task, make_backend
    from twinsweep.sweep.api import plan_sweep
    from twinsweep.sweep.runner import execute_run, make_payload

    spec, datasets, items = plan_sweep(spec_path)
    runs_dir = work / f"{backend_name}-{'warm' if warm else 'cold'}" / "runs"
    runs_dir.mkdir(parents=True)
    shared = {n: (d.workload, d.system) for n, d in datasets.items()}
    tasks = [Task(it.key, make_payload(it, runs_dir), it.dataset) for it in items]
    meter = _CpuMeter()
    start = {"wall": 0.0, "cpu": 0.0}
    ray_mod = None
    if backend_name == "ray":
        import ray as ray_mod

        init = ray_mod.init

        @functools.wraps(init)
        def noted_init(*a, **k):  # the moment the cluster is up: workers prestarted during it wait for it
            try:
                return init(*a, **k)
            finally:
                meter.ready = time.time()

        ray_mod.init = noted_init
    try:
        with make_backend(backend_name, workers=2) as bk:
            if warm:  # start-up: ray.init / the forkserver and one run (the actors, the pool), then the measured phase
                c0, t = time.process_time(), time.perf_counter()
                if ray_mod is not None:
                    ray_mod.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="error")
                warm_outs = list(bk.run(tasks[:1], execute_run, shared))
                start = {"wall": time.perf_counter() - t, "cpu": time.process_time() - c0}
                if not all(o.ok for o in warm_outs):
                    fail(f"{backend_name}: the warm-up run failed: {warm_outs[0].error}")
                    return {}
                tasks = tasks[1:]
            meter.start()
            t0 = time.perf_counter()
            outs = []
            for o in bk.run(tasks, execute_run, shared):
                meter.saw(o.worker)
                outs.append(o)
            wall = time.perf_counter() - t0
            meter.stop()
    finally:
        if ray_mod is not None:
            ray_mod.init = init
            if ray_mod.is_initialized():
                ray_mod.shutdown()
    bad = [o for o in outs if not o.ok]
    if bad:
        fail(f"{backend_name}: {len(bad)} runs failed: {bad[0].error}")
        return {}
    sim = sum(json.loads((runs_dir / o.key / "timing.json").read_text())["wall_time_s"] for o in outs)
    return {"runs": len(outs), "wall": wall, "own_wall": sum(o.wall_s for o in outs), "cpu_by_key": {o.key: o.cpu_s for o in outs},
            "own_cpu": sum(o.cpu_s for o in outs), "sim": sim, "start": start, "worker_cpu": meter.worker_cpu,
            "workers": len(meter.workers), "other_cpu": meter.other_cpu, "driver_cpu": meter.driver,
            "off_main": meter.off_main_cpu, "worker_wall": meter.worker_wall}


def _stop_forkserver() -> None:
    """Stop this process's multiprocessing forkserver, so that the next ``local`` pool starts
    one again, as a sweep in a new process does. ``ForkServer._stop`` is CPython's own hook for
    its tests (private; present in 3.8-3.13): without it, a later round's "cold" phase would find
    the forkserver of the first round still running, preloaded."""
    from multiprocessing import forkserver

    stop = getattr(getattr(forkserver, "_forkserver", None), "_stop", None)
    if stop is None:
        raise RuntimeError("this Python's multiprocessing.forkserver has no _stop(): run with --rounds 1")
    stop()


def bench_backends(spec_path: Path, work: Path, rounds: int = 5) -> int:
    """The run phase of the quickstart on ``local`` and ``ray`` with 2 workers, cold (the backend's
    start-up inside the phase: the forkserver, ``ray.init``, the actors) and warm (started, and
    one run done, before the phase; its cost printed as start-up).

    *The runs' own time* is the run function of each run (``sweep.runner.execute_run``): simulate
    (perturbation, window, engine, power, cooling, statistics) + its outputs (Arrow tables,
    parquet and JSON writes) + the commit of its folder; per run, the worker measures it
    (``Outcome.cpu_s``: CPU, ``Outcome.wall_s``: wall). Everything else a worker spends is
    overhead: process start-up and imports, receiving the datasets, task and result
    (de)serialisation, the backend's own threads, idling.

    *The worker time* is (CPU) the user + system CPU the worker processes (those that ran the
    runs) used during the phase, from the kernel's per-process counters (psutil), start-up
    included for a process started in the phase; (wall) the wall time each worker could work in
    the phase, from its process's start (not before ``ray.init`` returned: Ray prestarts its workers
    while its cluster boots) to the phase's end (:attr:`_CpuMeter.worker_wall`), which
    counts other programs' use of the cores on a loaded machine as overhead too, and a worker's
    idle tail while the other finishes. 2 x the phase's wall is printed beside it: that adds the
    backend's own start-up before any worker exists (``ray.init``: 2-3 s of wall; the forkserver's
    preload), which is the backend's, not worker time. Both shares are
    printed with the load average; the driver's CPU and that of the other processes (forkserver,
    Ray's daemons) are printed beside them (not worker time). The share of simulate alone
    (``timing.json``, the figure recorded before) is printed too.

    ``Outcome.cpu_s`` is the whole worker process's CPU while a run works, which in a Ray actor
    includes Ray's own threads if they work meanwhile. So the goal is checked a second way, in
    the same processes over the same phase: every CPU second the workers spent off their main
    thread (where pool workers and Ray actors run their tasks; :attr:`_CpuMeter.off_main_cpu`,
    from /proc) is taken out of the runs' own time, and the goal holds only when both shares
    reach it ("off-main-thread check"). That over-corrects (a run's own Arrow writer threads are
    taken out too), never under-corrects.

    Before 2026-12-07 the second check was the same runs' own CPU measured on ``local`` in the
    phase just before, against the Ray workers' CPU: it compares CPU seconds taken a minute apart
    on a host whose CPU speed drifts by up to ~30 % within minutes, and read 67-91 % on rounds of
    one code state. It is still printed ("cross-phase"), for information only. Measured per
    thread, Ray's own threads used 0.01-0.05 CPU-s per actor over the whole phase, and the same
    90 runs cost the same CPU in a Ray actor and in a local worker run one after the other
    (ratios 0.97-1.03).

    The four phases run ``rounds`` times, in the order local cold, ray cold, local warm, ray warm,
    and each figure is the median over the rounds (the range beside it). Every cold phase starts
    its backend anew (Ray's cluster, the local pool's forkserver).
    """
    import statistics

    configs = (("local", False), ("ray", False), ("local", True), ("ray", True))
    got: dict[tuple, list[dict]] = {c: [] for c in configs}
    for r in range(rounds):
        local_cpu: dict[bool, dict[str, float]] = {}
        for name, warm in configs:
            if name == "local" and not warm:
                _stop_forkserver()  # cold: the local pool's forkserver (one per driver process) starts again
            load0 = os.getloadavg()[0]
            d = _run_phase(name, spec_path, work / f"round{r}", warm)
            if not d:
                return 1
            d["load"] = (load0 + os.getloadavg()[0]) / 2
            d["share_cpu"] = d["own_cpu"] / d["worker_cpu"] if d["worker_cpu"] > 0 else float("nan")
            d["share_wall"] = d["own_wall"] / d["worker_wall"] if d["worker_wall"] > 0 else float("nan")
            d["share_phase_wall"] = d["own_wall"] / (2 * d["wall"])
            d["share_main"] = (float("nan") if d["off_main"] is None or d["worker_cpu"] <= 0
                               else (d["own_cpu"] - d["off_main"]) / d["worker_cpu"])
            if name == "local":
                local_cpu[warm] = d["cpu_by_key"]
            else:  # the same runs' CPU on the local pool just before: the reference without Ray's threads
                d["ref_cpu"] = sum(local_cpu[warm].get(k, 0.0) for k in d["cpu_by_key"])
                d["cross"] = d["ref_cpu"] / d["worker_cpu"] if d["worker_cpu"] > 0 else float("nan")
            got[(name, warm)].append(d)

    def med(rows, key):
        vals = [x[key] for x in rows]
        return statistics.median(vals), min(vals), max(vals)

    def pct(rows, key):
        m, lo, hi = med(rows, key)
        return f"{100 * m:.0f} %" + (f" ({100 * lo:.0f}–{100 * hi:.0f} %)" if rounds > 1 else "")

    for (name, warm), rows in got.items():
        label = "warm" if warm else "cold"
        own, wcpu = med(rows, "own_cpu")[0], med(rows, "worker_cpu")[0]
        checked = all(x["off_main"] is not None for x in rows)
        # the goal holds only if both say so (without /proc the second check cannot be made: not met)
        met = med(rows, "share_cpu")[0] >= 0.8 and checked and med(rows, "share_main")[0] >= 0.8
        main = (f"; off-main-thread check: ({own:.1f} - {med(rows, 'off_main')[0]:.2f} s off the main threads) = "
                f"{pct(rows, 'share_main')} of the workers' CPU" if checked
                else "; off-main-thread check: n/a (no /proc)")
        cross = ""
        if name != "local":
            cross = (f"; cross-phase (information only: CPU speed drifts between phases), the same runs' own CPU "
                     f"on local just before ({med(rows, 'ref_cpu')[0]:.1f} s) = {pct(rows, 'cross')} of these "
                     "workers' CPU")
        d = rows[len(rows) // 2]
        st = f"; start-up {statistics.median(x['start']['wall'] for x in rows):.1f} s wall" if warm else ""
        load = statistics.median(x["load"] for x in rows)
        print(f"[backends] {name:5} {label}, 2 workers, {d['runs']} runs, {rounds} round(s), load average {load:.1f}: "
              f"CPU: runs' own {own:.1f} s of the workers' {wcpu:.1f} s = {pct(rows, 'share_cpu')} "
              f"{goal_text('>= 80 %, with the off-main-thread check', met)}; wall: runs' own "
              f"{med(rows, 'own_wall')[0]:.1f} s of the workers' {med(rows, 'worker_wall')[0]:.1f} s = "
              f"{pct(rows, 'share_wall')} {goal_text('>= 80 %', med(rows, 'share_wall')[0] >= 0.8)}, of 2 x the "
              f"phase's {med(rows, 'wall')[0]:.1f} s = {pct(rows, 'share_phase_wall')}; simulate alone (timing.json) "
              f"{med(rows, 'sim')[0]:.1f} s; outside the workers: driver {med(rows, 'driver_cpu')[0]:.1f} s CPU, "
              f"other processes {med(rows, 'other_cpu')[0]:.1f} s CPU" + st + main + cross, flush=True)
        record(f"overhead/backends/{name}-{label}",
               f"quickstart run phase ({d['runs']} runs), `{name}`, 2 workers, {label} "
               f"({'started and one run done before' if warm else 'start-up inside the phase'}): the runs' own time "
               "(run function: simulate + outputs + commit) as a share of the worker time (CPU of the worker "
               "processes in the phase; wall: the workers' lifetimes in the phase, and 2 x the phase's wall); median of "
               f"{rounds} round(s), range in brackets",
               f"CPU {pct(rows, 'share_cpu')} ({own:.1f} of {wcpu:.1f} CPU-s), wall {pct(rows, 'share_wall')} "
               f"of the workers' lifetimes, {pct(rows, 'share_phase_wall')} of 2 x the phase "
               f"(phase {med(rows, 'wall')[0]:.1f} s)"
               + main + cross.replace(
                   "; cross-phase (information only: CPU speed drifts between phases),", "; cross-phase (information):")
               + f"; load {load:.1f}",
               goal=">= 80 % (CPU, both checks)", met=met, command="python bench/bench_overhead.py backends")
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
    ap.add_argument("--rounds", type=int, default=5, help="rounds of the backends phases (medians are printed)")
    a = ap.parse_args(argv)
    print(f"[bench_overhead] {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_overhead_") as tmp:
        work = Path(tmp)
        rc = 0
        if "phases" in a.which:
            bench_phases(a.spec, work)
        if "backends" in a.which:
            rc |= bench_backends(a.spec, work, a.rounds)
        if "outputs" in a.which:
            rc |= bench_outputs(a.spec, work)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
