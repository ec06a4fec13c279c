"""Speed of one twin run (issue: the twin). Prints figures; not a test.

Usage: python bench/bench_twin.py [--traces SDSC,CURIE,RICC,KTH] [--backfills none,easy,...] [--week]

For each trace × backfill variant under fcfs, runs the full trace with a 60 s timeline in a fresh
subprocess (so the peak RSS is that run's own) and prints: load time, simulation wall time, simulated
seconds per wall second, jobs per second and peak memory. Goals (issue 14): full SDSC-SP2 fcfs+easy
<= 1.5 s in-process; full CEA-Curie fcfs+easy <= 10 s and <= 1 GiB peak.

``--week``: the KTH-SP2 busy week (7 days from day 144, fcfs + easy) with a 1 s timeline, in-process
with the workload already loaded as inside a sweep (best of 5 rounds of 5 runs, CPU time; goal
<= 25 ms), and ``twinsweep run`` of that week as a whole process (CPU time of the child: imports,
loading, simulation, outputs; goal <= 0.4 s), printed beside the floor of this machine (the CPU of
a process that only imports numpy and pyarrow, and with pandas, which the Workload is built on) and
split by phase (start-up + imports / load / simulate / write). The project's bytecode is written
first (``compileall``, as an installed copy has it; where ``PYTHONDONTWRITEBYTECODE`` is set the
interpreter would otherwise compile every module at every start). The first conservative
run on a machine also compiles the profile pass (numba, a few seconds; cached afterwards).

Each figure is printed beside its goal and recorded in ``bench/figures.json`` (``bench/_figures.py``;
the README's table is rendered from it by ``bench/readme_figures.py``). Exit status 1 when a run fails.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from _figures import children_cpu, fail, goal_text, record

TRACES = {
    "SDSC": ("pwa-swf/SDSC-SP2-1998-4.2-cln.swf.gz", "sdsc-sp2"),
    "KTH": ("pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz", "kth-sp2"),
    "CURIE": ("pwa-swf/CEA-Curie-2011-2.1-cln.swf.gz", "cea-curie"),
    "RICC": ("pwa-swf/RICC-2010-2.swf.gz", "ricc"),  # 447,794 jobs; fcfs queues reach ~20,000 jobs
}
LABELS = {"SDSC": "SDSC-SP2", "KTH": "KTH-SP2", "CURIE": "CEA-Curie", "RICC": "RICC"}
#: goals of issue 14 for whole traces, fcfs + backfill: (CPU s, peak MB or None)
GOALS = {("SDSC", "easy"): (1.5, None), ("CURIE", "easy"): (10.0, 1024.0)}
#: runs per trace in one child process, the best CPU reported (the first run of a process also pays
#: one-time costs: lazy imports, allocator growth; this shared machine's run-to-run noise is ±20 %);
#: the prepared-window cache (core.run._WINDOWS) is cleared before each, so every run prepares its window
REPEATS = {"SDSC": 3, "KTH": 3, "CURIE": 2}  # CEA-Curie: ~9 s a run; its first also loads numba (core._nodearray)

CHILD = r"""
import json, resource, sys, time
from twinsweep.core.config import RunConfig
from twinsweep.core.run import load_run_inputs, simulate
data, system, backfill = sys.argv[1:4]
cfg = RunConfig(data=data, system=system, policy="fcfs", backfill=backfill, sample_period=60)
t0 = time.perf_counter(); wl, sysm = load_run_inputs(cfg); t_load = time.perf_counter() - t0
import twinsweep.core.run as _run
t_sim = c_sim = float("inf")
res = None
for _ in range(int(sys.argv[4])):  # best of N in one process, each run preparing its window afresh
    _run._WINDOWS.clear()
    res = None  # the last run's tables are freed first: the peak is one run's
    t0 = time.perf_counter(); c0 = time.process_time(); res = simulate(cfg, workload=wl, system=sysm)
    t_sim, c_sim = min(t_sim, time.perf_counter() - t0), min(c_sim, time.process_time() - c0)
w = res.manifest["window"]
print(json.dumps({"load_s": t_load, "sim_s": t_sim, "cpu_s": c_sim, "jobs": len(res.jobs), "span_s": w["duration"],
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "wait_mean_s": res.stats["system"]["wait_mean_s"]}))
"""


WEEK = r"""
import sys, time
from twinsweep.core.config import RunConfig
from twinsweep.core.run import load_run_inputs, simulate
cfg = RunConfig(data="pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz", policy="fcfs", backfill="easy", start=144 * 86400,
                duration=7 * 86400, sample_period=1)
wl, sysm = load_run_inputs(cfg)
for _ in range(3):
    simulate(cfg, workload=wl, system=sysm)
best_c = best_w = 1e9
for _ in range(5):
    c, w = time.process_time(), time.perf_counter()
    for _ in range(5):
        simulate(cfg, workload=wl, system=sysm)
    best_c, best_w = min(best_c, (time.process_time() - c) / 5), min(best_w, (time.perf_counter() - w) / 5)
print(best_c, best_w)
"""


#: ``twinsweep run`` of the KTH week, as the bench runs it (``--out`` is appended)
WEEK_RUN = ["run", "--data", "pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz", "--policy", "fcfs", "--backfill", "easy",
            "--start", "144d", "--duration", "7d", "--quiet"]

#: The same command in one process, with the CPU time (``getrusage``, all threads, interpreter start
#: included) read at each phase boundary: start-up + imports (argument parsing, numpy, pandas,
#: pyarrow, the twin's modules) / load (trace from the parse cache, system) / simulate / write.
PHASES = r"""
import json, resource, sys
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
import twinsweep.sweep.cli as cli  # light: the command's own start-up imports numpy, pandas, the twin
marks = []
def probe(run, name):
    f = getattr(run, name)
    def timed(*a, **k):
        marks.append(cpu())
        out = f(*a, **k)
        marks.append(cpu())
        return out
    setattr(run, name, timed)
work = cli._simulate_and_write
def probed(*a, **k):  # core.run is loaded by now (the run command's start-up); time its three steps
    import twinsweep.core.run as run
    for name in ("load_run_inputs", "simulate", "write_run"):
        probe(run, name)
    return work(*a, **k)
cli._simulate_and_write = probed
rc = cli.main()  # the command line of this process, as `python -m twinsweep` runs it
end = cpu()
(l0, l1, s0, s1, w0, w1) = marks
print(json.dumps({"rc": rc, "imports": l0, "load": l1 - l0, "simulate": s1 - s0, "write": w1 - w0,
                  "rest": (s0 - l1) + (w0 - s1) + (end - w1), "total": end}))
"""


def _child_cpu(cmd: list[str], env: dict | None = None) -> tuple[float, float, subprocess.CompletedProcess]:
    """``(CPU s, wall s, completed process)`` of one child process (user + system time of the child
    and its threads, from ``getrusage(RUSAGE_CHILDREN)``)."""
    import time

    before = children_cpu()
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    return children_cpu() - before, wall, r


def _best_cpu(cmd: list[str], n: int = 3, env: dict | None = None,
              spread: list | None = None) -> tuple[float, float] | str:
    """Best (lowest CPU) of ``n`` runs of ``cmd``: ``(CPU s, wall s)``, or the error text of a failed
    run. ``spread``: a list that receives every run's CPU s (to print the range beside the best)."""
    best = None
    for _ in range(n):
        cpu, wall, r = _child_cpu(cmd, env)
        if r.returncode != 0:
            return f"exit {r.returncode}: {r.stderr.strip()}"
        best = min(best or (cpu, wall), (cpu, wall))
        if spread is not None:
            spread.append(cpu)
    return best


def _compile_sources() -> bool:
    """Write the bytecode of the project's modules (as ``pip install`` does for an installed
    copy) so that the figure is that of an installed ``twinsweep``, not of an interpreter that
    compiles some fifty modules at every start. Needed where ``PYTHONDONTWRITEBYTECODE`` is set
    (the interpreter then never writes it); up-to-date files are left alone. True when every
    module compiled (False: a read-only checkout, the figure then includes compiling)."""
    import compileall
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    return all(compileall.compile_dir(str(root / d), quiet=2) for d in ("twinsweep", "core", "sweep", "backends"))


def bench_week() -> int:
    import os
    import tempfile

    r = subprocess.run([sys.executable, "-c", WEEK], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"the in-process KTH week: {r.stderr.strip()}")
        return 1
    c, w = (float(x) for x in r.stdout.split())
    fig = f"{1e3 * c:.1f} ms CPU, {1e3 * w:.1f} ms wall"
    print(f"[week] KTH-SP2 busy week (7 d from day 144), fcfs+easy, 1 s timeline (604,800 bins), in-process, "
          f"workload loaded: {fig} {goal_text('<= 25 ms', c <= 0.025)} ({os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f})", flush=True)
    record("twin/week/in-process", "KTH-SP2 busy week (7 d from day 144), fcfs + easy, **1 s** timeline, in-process, "
           "workload already loaded (best of 5 × 5 runs)", fig, goal="<= 25 ms", met=c <= 0.025,
           command="python bench/bench_twin.py --week")
    compiled = _compile_sources()
    with tempfile.TemporaryDirectory() as tmp:
        run_cmd = [sys.executable, "-m", "twinsweep", *WEEK_RUN]
        cpus: list[float] = []
        best = _best_cpu(run_cmd + ["--out", f"{tmp}/kth", "--force"], n=5, spread=cpus)  # the first run also fills the parse cache
        if isinstance(best, str):
            fail(f"`twinsweep run` of the KTH week: {best}")
            return 1
        _, _, r = _child_cpu([sys.executable, "-c", PHASES, *WEEK_RUN, "--out", f"{tmp}/phases"])
        if r.returncode != 0:
            fail(f"`twinsweep run` of the KTH week, by phase: {r.stderr.strip()}")
            return 1
        ph = json.loads(r.stdout.strip().splitlines()[-1])
    # what any process that reads a trace with pyarrow costs before doing anything of ours; pandas
    # on top: the Workload is a pandas frame (DESIGN.md §2), so a run cannot go below this one
    # (and that floor with the start-up `twinsweep run` gives itself, sweep.cli: one OpenBLAS
    # thread, imports without the garbage collector, then frozen: what our own work is measured against)
    floors = {}
    like_run = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    for label, code, env in (("numpy+pyarrow", "import numpy, pyarrow, pyarrow.parquet", None),
                             ("+pandas", "import numpy, pyarrow, pyarrow.parquet, pandas", None),
                             ("+pandas, run's start-up", "import gc; gc.disable(); import numpy, pyarrow, "
                              "pyarrow.parquet, pandas; gc.freeze(); gc.enable()", like_run),
                             ("python", "pass", None)):
        f = _best_cpu([sys.executable, "-c", code], env=env)
        if isinstance(f, str):
            fail(f"the import floor ({code}): {f}")
            return 1
        floors[label] = f[0]
    fig = f"{best[0]:.3f} s CPU, {best[1]:.2f} s wall (the 5 runs: {min(cpus):.3f}–{max(cpus):.3f} s CPU)"
    floor = (f"floor on this machine: `python -c pass` {floors['python']:.2f} s, `import numpy, pyarrow, "
             f"pyarrow.parquet` {floors['numpy+pyarrow']:.2f} s, + pandas {floors['+pandas']:.2f} s CPU")
    split = (f"phases: start-up + imports {ph['imports']:.2f} s, load {ph['load']:.3f} s, simulate "
             f"{ph['simulate']:.3f} s, write {ph['write']:.3f} s, rest {ph['rest']:.3f} s (of {ph['total']:.2f} s)")
    like = floors["+pandas, run's start-up"]
    note = "" if compiled else " (bytecode could not be written: the figure includes compiling the modules)"
    print(f"[week] `twinsweep run` of that week (60 s timeline), whole process: {fig}, best of 5 "
          f"{goal_text('<= 0.4 s CPU', best[0] <= 0.4)}{note}; {floor}; ours above the pandas floor: "
          f"{best[0] - like:.2f} s (that floor with the run's start-up: {like:.2f} s); {split} (load average {os.getloadavg()[0]:.1f})", flush=True)
    record("twin/week/twinsweep-run", "`twinsweep run` of that week (60 s timeline) as a whole process: imports, "
           "loading, simulation, outputs (best of 5)",
           f"{fig} (floor: numpy + pyarrow {floors['numpy+pyarrow']:.2f} s, + pandas {floors['+pandas']:.2f} s CPU)",
           goal="<= 0.4 s CPU", met=best[0] <= 0.4, command="python bench/bench_twin.py --week")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", default="SDSC,CURIE")
    ap.add_argument("--backfills", default="none,firstfit,easy,conservative")
    ap.add_argument("--week", action="store_true", help="only the KTH week figures (see the module doc)")
    args = ap.parse_args()
    if args.week:
        return bench_week()
    failed = 0
    print(f"{'trace':6} {'backfill':12} {'load s':>7} {'sim s':>7} {'cpu s':>7} {'sim-s/wall-s':>13} {'jobs/s':>9} "
          f"{'peak MB':>8}  goal")
    for name in args.traces.split(","):
        data, system = TRACES[name]
        for bf in args.backfills.split(","):
            r = subprocess.run([sys.executable, "-c", CHILD, data, system, bf, str(REPEATS.get(name, 1))],
                               capture_output=True, text=True)
            if r.returncode != 0:
                lines = r.stderr.strip().splitlines() or [f"exit status {r.returncode}"]
                print(f"{name:6} {bf:12} FAILED: {lines[-1]}", flush=True)
                fail(f"{name} fcfs+{bf}: {lines[-1]}")
                failed += 1
                continue
            d = json.loads(r.stdout.strip().splitlines()[-1])
            goal, met = None, None
            if (name, bf) in GOALS:
                g_cpu, g_mb = GOALS[name, bf]
                goal = f"<= {g_cpu:g} s CPU" + (f", <= {g_mb / 1024:g} GiB peak" if g_mb else "")
                met = d["cpu_s"] <= g_cpu and (g_mb is None or d["peak_rss_mb"] <= g_mb)
            print(f"{name:6} {bf:12} {d['load_s']:7.2f} {d['sim_s']:7.2f} {d['cpu_s']:7.2f} "
                  f"{d['span_s'] / d['sim_s']:13.3g} {d['jobs'] / d['sim_s']:9.0f} {d['peak_rss_mb']:8.0f}  "
                  f"{goal_text(goal, met)}", flush=True)
            record(f"twin/{name}/{bf}", f"{LABELS[name]} whole trace ({d['jobs']:,} jobs), fcfs + {bf}, 60 s timeline, "
                   "workload loaded" + (f", best of {REPEATS[name]} runs in one process" if REPEATS.get(name, 1) > 1
                                        else ", one run"), f"{d['cpu_s']:.2f} s CPU, {d['sim_s']:.2f} s wall, {d['peak_rss_mb']:,.0f} MB peak "
                   f"(loading {d['load_s']:.1f} s apart)", goal=goal, met=met,
                   command=f"python bench/bench_twin.py --traces {name} --backfills {bf}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
