"""Per-decision overhead of the external-scheduler protocol (docs/protocol.md). Prints figures; not a test.

Usage: python bench/bench_external.py [--days 7] [--rounds 3]

Runs the KTH-SP2 busy week (7 days from day 144, 60 s timeline, workload loaded) three ways:
built-in ``fcfs`` + ``easy``; ``external`` with ``studies/schedulers/fcfs_easy.py`` in process
(``inproc:``); and the same script as a child process speaking JSON lines. The per-message
overhead of a transport is (its run's cost − the built-in run's cost) / messages exchanged. For the
process transport the cost is the twin's CPU time plus the child's (``RUSAGE_CHILDREN``), and its
wall time (the round trip through the pipes) is given too; the child's start-up (the interpreter
starting and exiting at once on an empty stdin, measured apart) is subtracted and printed apart. Both external runs must give the
built-in's jobs.parquet byte for byte (checked; exit status 1 otherwise). Best of ``--rounds``.
Figures are recorded in ``bench/figures.json`` (``bench/_figures.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import sys
import time
from pathlib import Path

from _figures import children_cpu, fail, record

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "studies" / "schedulers" / "fcfs_easy.py"


def _digest(res) -> str:
    import pyarrow.parquet as pq

    from twinsweep.core.run import _jobs_table

    b = io.BytesIO()
    pq.write_table(_jobs_table(res.jobs), b, compression="zstd")
    return hashlib.sha256(b.getvalue()).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--days", type=float, default=7.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from twinsweep.core.config import RunConfig
    from twinsweep.core.run import load_run_inputs, simulate

    kw = dict(data="pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz", start=144 * 86400, duration=int(args.days * 86400))
    variants = {"builtin": RunConfig(policy="fcfs", backfill="easy", **kw),
                "inproc": RunConfig(policy="external", scheduler=f"inproc:{SCRIPT}:FcfsEasy", **kw),
                "process": RunConfig(policy="external", scheduler=f"{sys.executable} {SCRIPT}", **kw)}
    wl, system = load_run_inputs(variants["builtin"])
    best: dict[str, tuple[float, float]] = {}
    digests, messages = {}, {}
    for _ in range(args.rounds):
        for name, cfg in variants.items():
            c0, w0, k0 = time.process_time(), time.perf_counter(), children_cpu()
            res = simulate(cfg, workload=wl, system=system)
            cpu = time.process_time() - c0 + (children_cpu() - k0)
            wall = time.perf_counter() - w0
            best[name] = min(best.get(name, (cpu, wall)), (cpu, wall))
            digests[name] = _digest(res)
            messages[name] = res.stats["counts"].get("external_messages", 0)
    start_up = None
    for _ in range(args.rounds):
        import subprocess

        c0, w0 = children_cpu(), time.perf_counter()
        subprocess.run([sys.executable, str(SCRIPT)], stdin=subprocess.DEVNULL, check=True)
        su = (children_cpu() - c0, time.perf_counter() - w0)
        start_up = min(start_up or su, su)
    best["process"] = (best["process"][0] - start_up[0], best["process"][1] - start_up[1])
    bad = [n for n in ("inproc", "process") if digests[n] != digests["builtin"]]
    if bad:
        fail(f"external {', '.join(bad)}: jobs.parquet differs from the built-in fcfs + easy")
        return 1
    load = os.getloadavg()[0]
    n = messages["process"]
    base_cpu, base_wall = best["builtin"]
    per = {k: ((best[k][0] - base_cpu) / n * 1e6, (best[k][1] - base_wall) / n * 1e6) for k in ("inproc", "process")}
    print(f"KTH-SP2 {args.days:g} d from day 144, fcfs + easy, {n:,} messages, load average {load:.1f}:")
    for k, (c, w) in best.items():
        print(f"  {k:8} {c:7.3f} s CPU {w:7.3f} s wall" + (" (child start-up excluded)" if k == "process" else ""))
    print(f"  child start-up {start_up[0]:.3f} s CPU {start_up[1]:.3f} s wall (once per run)")
    for k, (c, w) in per.items():
        print(f"  {k:8} overhead per message: {c:6.1f} us CPU, {w:6.1f} us wall")
    record("external/process-per-message", f"external scheduler, process transport (JSON lines over pipes), KTH-SP2 "
           f"{args.days:g} d from day 144, fcfs_easy.py vs built-in fcfs + easy: overhead per message ({n:,} messages; "
           "twin + child CPU, the child's start-up apart)", f"{per['process'][0]:.0f} us CPU, {per['process'][1]:.0f} us wall "
           f"(+ {start_up[0] * 1e3:.0f} ms CPU start-up per run)",
           command="python bench/bench_external.py")
    record("external/inproc-per-message", f"external scheduler, in-process transport, same run: overhead per message",
           f"{per['inproc'][0]:.0f} us CPU, {per['inproc'][1]:.0f} us wall", command="python bench/bench_external.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
