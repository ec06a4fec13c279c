"""``twinsweep sweep --dry-run`` on a 10^7-point grid (prints and records its figure, bench/figures.json; not a test). Issue 11, item 4.

    python bench/bench_dry_run.py [--seeds 10000] [--periods 84]

A tiny SWF trace and a study of ``seeds`` x ``periods`` sample periods x 2 policies x 2 backfill
variants x 3 ``options.w_age`` values of the weighted policy are written to a temporary folder;
then, timed separately (CPU and wall): loading and checking the spec (every grid point:
:mod:`sweep.gridcheck`), and the dry run proper (trace loading, identity check, counting, the
first keys: :func:`sweep.api.dry_run`). Goal: the dry run answers in < 1 s for 10^7 runs (it never
expands the grid; before issue 11 it built every run config, minutes and GBs for such a grid).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from _figures import goal_text, record  # noqa: E402 - after the path set-up


def _timed(fn):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10_000)
    ap.add_argument("--periods", type=int, default=84)
    args = ap.parse_args(argv)

    from test_sweep_support import write_spec
    from twinsweep.sweep.api import dry_run
    from twinsweep.sweep.spec import load_spec

    with tempfile.TemporaryDirectory() as tmp:
        p = write_spec(Path(tmp), seeds=args.seeds, policies=("weighted", "weighted"), backfills=("none", "easy"))
        periods = ", ".join(str(i) for i in range(1, args.periods + 1))
        p.write_text(p.read_text()
                     .replace('policy = ["weighted", "weighted"]', 'policy = ["weighted"]')
                     .replace('sample_period = ["60s"]',
                              f'sample_period = [{periods}]\n"options.w_age" = [0.0, 0.5, 1.0]\n'
                              '"options.w_size" = [0.0, 1.0]'))
        spec, c1, w1 = _timed(lambda: load_spec(p))
        info, c2, w2 = _timed(lambda: dry_run(spec))
    runs = info["runs"]
    print(f"grid: {runs:,} runs ({info['sizes']['grid_points']:,} grid points x {info['sizes']['seeds']:,} seeds)")
    print(f"load + check spec: {c1:.3f} s CPU ({w1:.3f} s wall)")
    print(f"dry run:           {c2:.3f} s CPU ({w2:.3f} s wall)")
    total = w1 + w2
    met = total < 1.0
    print(f"total {total:.3f} s wall {goal_text('< 1 s for 10^7 runs', met)}")
    record("sweep/dry-run", f"twinsweep sweep --dry-run of a {runs:,}-run grid (spec loading with every grid point "
           "checked, then the dry run)", f"{total:.3f} s wall = spec {c1:.3f} s CPU / {w1:.3f} s wall + dry run "
           f"{c2:.3f} s CPU / {w2:.3f} s wall", goal="< 1 s for 10^7 runs", met=met if runs >= 10**7 else None,
           command=f"python bench/bench_dry_run.py --seeds {args.seeds} --periods {args.periods}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
