"""Speed of one twin run (issue: the twin). Prints figures; not a test.

Usage: python bench/bench_twin.py [--traces SDSC,CURIE,RICC,KTH] [--backfills none,easy,...]

For each trace × backfill variant under fcfs, runs the full trace with a 60 s timeline in a fresh
subprocess (so the peak RSS is that run's own) and prints: load time, simulation wall time, simulated
seconds per wall second, jobs per second and peak memory. Goals (issue #2): full SDSC-SP2 fcfs+easy
<= 3 s on one core; full CEA-Curie fcfs+easy <= 60 s and <= 1 GiB peak. The first conservative
run on a machine also compiles the profile pass (numba, a few seconds; cached afterwards).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

TRACES = {
    "SDSC": ("pwa-swf/SDSC-SP2-1998-4.2-cln.swf.gz", "sdsc-sp2"),
    "KTH": ("pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz", "kth-sp2"),
    "CURIE": ("pwa-swf/CEA-Curie-2011-2.1-cln.swf.gz", "cea-curie"),
    "RICC": ("pwa-swf/RICC-2010-2.swf.gz", "ricc"),  # 447,794 jobs; fcfs queues reach ~20,000 jobs
}

CHILD = r"""
import json, resource, sys, time
from twinsweep.core.config import RunConfig
from twinsweep.core.run import load_run_workload, resolve_system, simulate
data, system, backfill = sys.argv[1:4]
cfg = RunConfig(data=data, system=system, policy="fcfs", backfill=backfill, sample_period=60)
t0 = time.perf_counter(); wl = load_run_workload(cfg); sysm = resolve_system(cfg, wl); t_load = time.perf_counter() - t0
t0 = time.perf_counter(); c0 = time.process_time(); res = simulate(cfg, workload=wl, system=sysm); t_sim = time.perf_counter() - t0; c_sim = time.process_time() - c0
w = res.manifest["window"]
print(json.dumps({"load_s": t_load, "sim_s": t_sim, "cpu_s": c_sim, "jobs": len(res.jobs), "span_s": w["duration"],
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "wait_mean_s": res.stats["system"]["wait_mean_s"]}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", default="SDSC,CURIE")
    ap.add_argument("--backfills", default="none,firstfit,easy,conservative")
    args = ap.parse_args()
    print(f"{'trace':6} {'backfill':12} {'load s':>7} {'sim s':>7} {'cpu s':>7} {'sim-s/wall-s':>13} {'jobs/s':>9} {'peak MB':>8}")
    for name in args.traces.split(","):
        data, system = TRACES[name]
        for bf in args.backfills.split(","):
            r = subprocess.run([sys.executable, "-c", CHILD, data, system, bf], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{name:6} {bf:12} FAILED: {r.stderr.strip().splitlines()[-1]}")
                continue
            d = json.loads(r.stdout.strip().splitlines()[-1])
            print(f"{name:6} {bf:12} {d['load_s']:7.2f} {d['sim_s']:7.2f} {d['cpu_s']:7.2f} {d['span_s'] / d['sim_s']:13.3g} "
                  f"{d['jobs'] / d['sim_s']:9.0f} {d['peak_rss_mb']:8.0f}", flush=True)


if __name__ == "__main__":
    main()
