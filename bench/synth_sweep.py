"""A synthetic large sweep for the aggregation benchmarks (``bench/bench_aggregate.py``).

    python bench/synth_sweep.py OUT --runs 10000 [--workers 2]        # run folders + runs.parquet
    python bench/synth_sweep.py OUT --runs 100000 --table-only       # runs.parquet only

Realistic files, not copies of one run: first a small *template* sweep of real traces is simulated
with the twin (``TEMPLATE_SPEC``: KTH-SP2, SDSC-SP2 and CEA-Curie, 7-day windows, 1-min timeline,
fcfs/sjf/ljf × none/firstfit/easy/conservative, seed 0; cached in ``OUT/template``). Each synthetic
run belongs to one template variant (dataset × policy × backfill) and a seed, and perturbs that
variant's real distributions with its own random stream (``numpy.random.default_rng`` of the key):

- jobs: the template's job rows resampled with replacement (count × exp(0.05·Z)), each finished
  job's wait × exp(0.3·Z_run + 0.5·Z_job) and run time × exp(0.2·Z_job), start/end/wait/energy
  recomputed (energy = the job's power × its new run time), every other column as resampled;
- timeline: a block bootstrap of the template's timeline (1-hour blocks drawn with replacement,
  each scaled by exp(0.01·Z_block)), on the template's time grid;
- manifest.json, sweep.json, stats.json as the template's with the synthetic coordinates;
- runs.parquet: the template's row with every metric × exp(0.1·Z) and the synthetic job count.

Files are written with pyarrow (zstd), as ``twinsweep.core.run.write_run`` writes them. A folder
that already holds the requested number of runs is reused.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]

TEMPLATE_SPEC = """
[study]
name = "synthetic-template"
output = "{out}"
seeds = [0]
retries = 0

[[datasets]]
name = "kth-sp2"
trace = "pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz"
windows = [{{ name = "day144", start = "144d", duration = "7d" }}]

[[datasets]]
name = "sdsc-sp2"
trace = "pwa-swf/SDSC-SP2-1998-4.2-cln.swf.gz"
windows = [{{ name = "day97", start = "97d", duration = "7d" }}]

[[datasets]]
name = "cea-curie"
trace = "pwa-swf/CEA-Curie-2011-2.1-cln.swf.gz"
windows = [{{ name = "day406", start = "406d", duration = "7d" }}]

[grid]
policy = ["fcfs", "sjf", "ljf"]
backfill = ["none", "firstfit", "easy", "conservative"]
sample_period = ["1m"]

[backend]
name = "local"
workers = {workers}
"""

_TEMPLATES: dict = {}


def build_template(tdir: Path, workers: int) -> Path:
    """Simulate the template sweep into ``tdir`` (once; reused when complete). Returns ``tdir``."""
    from twinsweep.sweep.api import run_sweep

    if (tdir / "runs.parquet").exists() and len(pd.read_parquet(tdir / "runs.parquet")) == 36:
        return tdir
    tdir.mkdir(parents=True, exist_ok=True)
    spec = tdir / "template.toml"
    spec.write_text(TEMPLATE_SPEC.format(out=tdir, workers=workers))
    t0 = time.perf_counter()
    res = run_sweep(spec, report=False)
    if res.failed:
        raise SystemExit(f"template runs failed: {res.failed}")
    print(f"[synth] template sweep: {res.planned} real runs simulated in {time.perf_counter() - t0:.1f} s", flush=True)
    return tdir


def _load_templates(tdir: Path) -> dict:
    table = pd.read_parquet(tdir / "runs.parquet")
    out = {}
    for i, row in enumerate(table.itertuples(index=False)):
        d = tdir / "runs" / row.key
        out[i] = {
            "row": row._asdict(),
            "jobs": pq.read_table(d / "jobs.parquet"),
            "timeline": pq.read_table(d / "timeline.parquet"),
            "manifest": json.loads((d / "manifest.json").read_text()),
            "sweep": json.loads((d / "sweep.json").read_text()),
            "stats": json.loads((d / "stats.json").read_text()),
        }
    return out


def synth_key(variant: int, seed: int) -> str:
    """The synthetic run's key: 16 hex digits of sha256 of its coordinates."""
    return hashlib.sha256(f"synthetic:{variant}:{seed}".encode()).hexdigest()[:16]


def _rng(key: str) -> np.random.Generator:
    return np.random.default_rng(int(key, 16))


def _col(t: pa.Table, name: str) -> np.ndarray:
    return t.column(name).to_numpy(zero_copy_only=False).astype("float64")


def synth_jobs(tpl: pa.Table, rng: np.random.Generator) -> pa.Table:
    """Resampled and perturbed job rows (see the module doc), same schema as ``tpl``."""
    n = tpl.num_rows
    if n == 0:
        raise ValueError("a template run holds no jobs (check TEMPLATE_SPEC's windows)")
    n2 = max(1, int(round(n * np.exp(0.05 * rng.standard_normal()))))
    idx = np.sort(rng.integers(0, n, n2))
    t = tpl.take(pa.array(idx))
    submit, start, end = _col(t, "submit_time"), _col(t, "start_time"), _col(t, "end_time")
    fin = np.isfinite(start) & np.isfinite(end)
    wait = start - submit
    run = end - start
    z_run = rng.standard_normal()
    wait2 = np.round(wait * np.exp(0.3 * z_run + 0.5 * rng.standard_normal(n2)))
    run2 = np.round(run * np.exp(0.2 * rng.standard_normal(n2)))
    start2 = np.where(np.isfinite(start), submit + np.where(np.isfinite(wait2), wait2, 0), np.nan)
    end2 = np.where(fin, start2 + run2, np.nan)
    power = _col(t, "avg_power_w")
    energy = np.where(fin, power * run2, _col(t, "energy_j"))

    def ints(a):
        return pa.array(np.where(np.isfinite(a), a, 0).astype("int64"), mask=~np.isfinite(a))

    for name, arr in (("start_time", ints(start2)), ("end_time", ints(end2)),
                      ("wait_time", ints(np.where(np.isfinite(start2), start2 - submit, np.nan))),
                      ("energy_j", pa.array(energy))):
        t = t.set_column(t.schema.get_field_index(name), name, arr.cast(t.schema.field(name).type))
    return t


def synth_timeline(tpl: pa.Table, rng: np.random.Generator, block: int = 60) -> pa.Table:
    """Block bootstrap of the template timeline (see the module doc), same schema and time grid."""
    n = tpl.num_rows
    nb = -(-n // block)
    starts = rng.integers(0, max(n - block, 0) + 1, nb)
    idx = (starts[:, None] + np.arange(block)[None, :]).ravel()[:n]
    idx = np.minimum(idx, n - 1)
    scale = np.repeat(np.exp(0.01 * rng.standard_normal(nb)), block)[:n]
    cols = []
    for name in tpl.column_names:
        a = tpl.column(name).to_numpy(zero_copy_only=False)
        if name == "time" or a.dtype.kind != "f":
            cols.append(tpl.column(name))
            continue
        v = a[idx]
        if name.endswith("_w") or name in ("busy_nodes", "utilization", "queued_jobs", "running_jobs"):
            v = v * scale
        cols.append(pa.array(v, type=tpl.schema.field(name).type))
    return pa.Table.from_arrays(cols, schema=tpl.schema)


def synth_row(tpl_row: dict, key: str, seed: int, n_jobs: int, rng: np.random.Generator) -> dict:
    """runs.parquet row of a synthetic run (template metrics × exp(0.1·Z))."""
    row = dict(tpl_row)
    row.update(key=key, seed=seed)
    for k, v in tpl_row.items():
        if isinstance(v, float) and np.isfinite(v) and not k.startswith("count_") and k not in ("start", "duration"):
            row[k] = v * float(np.exp(0.1 * rng.standard_normal()))
    row["count_jobs_in_window"] = n_jobs
    return row


def _init(tdir: str) -> None:
    _TEMPLATES.update(_load_templates(Path(tdir)))


def _write_one(args) -> dict:
    variant, seed, runs_dir = args
    tpl = _TEMPLATES[variant]
    key = synth_key(variant, seed)
    rng = _rng(key)
    jobs = synth_jobs(tpl["jobs"], rng)
    row = synth_row(tpl["row"], key, seed, jobs.num_rows, rng)
    d = Path(runs_dir) / key
    if (d / "sweep.json").exists():
        return row
    tmp = Path(runs_dir) / f".tmp-{key}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    pq.write_table(jobs, tmp / "jobs.parquet", compression="zstd")
    pq.write_table(synth_timeline(tpl["timeline"], rng), tmp / "timeline.parquet", compression="zstd")
    man = dict(tpl["manifest"], run_key=key, seed=seed)
    man["config"] = dict(man["config"], seed=seed)
    (tmp / "manifest.json").write_text(json.dumps(man, sort_keys=True, indent=2) + "\n")
    (tmp / "stats.json").write_text(json.dumps(tpl["stats"], sort_keys=True, indent=2) + "\n")
    sw = dict(tpl["sweep"], key=key, seed=seed)
    (tmp / "sweep.json").write_text(json.dumps(sw, sort_keys=True, indent=1) + "\n")
    os.replace(tmp, d)
    return row


def _copy_meta(tdir: Path, out: Path, keys_rows: list[dict]) -> None:
    for name in ("study.json", "datasets.json"):
        shutil.copyfile(tdir / name, out / name)
    plan = pd.read_csv(tdir / "plan.csv", dtype=str, keep_default_na=False)
    cols = list(plan.columns)
    rows = pd.DataFrame(keys_rows)
    pd.DataFrame({c: rows[c].astype(str) if c in rows.columns else "" for c in cols}).to_csv(out / "plan.csv", index=False)
    table = rows.sort_values("key", kind="mergesort").reset_index(drop=True)
    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), out / "runs.parquet")


def generate(out: Path, runs: int, workers: int = 2, table_only: bool = False, template: Path | None = None) -> Path:
    """Write a synthetic sweep of ``runs`` runs into ``out`` (see the module doc); returns ``out``.
    ``template``: the template sweep's folder (default ``out/template``; simulated when missing)."""
    out = Path(out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    tdir = build_template(Path(template).absolute() if template else out / "template", workers)
    templates = _load_templates(tdir)
    nv = len(templates)
    coords = [(i % nv, i // nv + 1) for i in range(runs)]
    done = out / "runs.parquet"
    if done.exists() and len(pq.ParquetFile(done).read(columns=["key"])) == runs and (
            table_only or (out / "runs").is_dir() and sum(1 for _ in os.scandir(out / "runs")) >= runs):
        print(f"[synth] {out}: {runs} synthetic runs already there", flush=True)
        return out
    t0 = time.perf_counter()
    if table_only:
        rows = []
        for v, s in coords:
            key = synth_key(v, s)
            rng = _rng(key)
            n_jobs = max(1, int(round(templates[v]["jobs"].num_rows * np.exp(0.05 * rng.standard_normal()))))
            rows.append(synth_row(templates[v]["row"], key, s, n_jobs, rng))
    else:
        runs_dir = out / "runs"
        runs_dir.mkdir(exist_ok=True)
        args = [(v, s, str(runs_dir)) for v, s in coords]
        if workers > 1:
            with multiprocessing.get_context("fork").Pool(workers, initializer=_init, initargs=(str(tdir),)) as pool:
                rows = []
                for i, r in enumerate(pool.imap(_write_one, args, chunksize=16)):
                    rows.append(r)
                    if (i + 1) % 1000 == 0:
                        print(f"[synth] {i + 1}/{runs} runs written ({time.perf_counter() - t0:.0f} s)", flush=True)
        else:
            _TEMPLATES.update(templates)
            rows = [_write_one(a) for a in args]
    _copy_meta(tdir, out, rows)
    print(f"[synth] {runs} synthetic runs{' (table only)' if table_only else ''} in {time.perf_counter() - t0:.1f} s "
          f"-> {out}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--table-only", action="store_true", help="write runs.parquet (+ study.json, plan.csv) only")
    ap.add_argument("--template", type=Path, default=None, help="template sweep folder (default OUT/template)")
    a = ap.parse_args(argv)
    generate(a.out, a.runs, a.workers, a.table_only, a.template)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
