"""Fingerprints of run outputs, to show that a change keeps them byte-identical.

Runs a fixed set of varied configs (policies, backfill variants, kill off, cooling with a wet
bulb, accounts collected by a replay, a 1 s timeline, a perturbation seed) on the traces of the
data folder (or the bundled quickstart traces) and prints, per config, SHA-256 digests of:

- ``jobs`` / ``timeline``: the Arrow data of ``jobs.parquet`` / ``timeline.parquet`` with the
  schema metadata removed (so a change that only adds documented metadata keeps the digest), and
  the digest of the file bytes themselves;
- ``stats``: ``stats.json`` as written;
- ``manifest``: ``manifest.json`` without its ``versions`` and ``wall_time_s`` entries.

Usage::

    python bench/output_hashes.py --save /tmp/before.json      # on the old code
    python bench/output_hashes.py --check /tmp/before.json     # on the new code: exit 1 on a change
    python bench/output_hashes.py --check /tmp/before.json --ignore file   # data only

``--ignore file`` compares the data digests only (for a change that adds parquet metadata on
purpose); ``--ignore stats,manifest`` likewise skips those files. Exit status 1 when a digest
differs or a run fails.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

KTH = "pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz"
SDSC = "pwa-swf/SDSC-SP2-1998-4.2-cln.swf.gz"

#: (name, RunConfig keyword arguments)
CONFIGS = [
    ("kth-fcfs-easy", dict(data=KTH, policy="fcfs", backfill="easy", start=144 * 86400, duration=3 * 86400)),
    ("kth-sjf-cons", dict(data=KTH, policy="sjf", backfill="conservative", start=144 * 86400, duration=3 * 86400)),
    ("kth-ljf-firstfit-nokill", dict(data=KTH, policy="ljf", backfill="firstfit", start=100 * 86400,
                                     duration=3 * 86400, kill=False)),
    ("kth-fcfs-none-1s", dict(data=KTH, policy="fcfs", backfill="none", start=144 * 86400, duration=2 * 86400,
                              sample_period=1)),
    ("kth-replay", dict(data=KTH, policy="replay", backfill="none", start=144 * 86400, duration=3 * 86400)),
    ("sdsc-fcfs-easy-cooling", dict(data=SDSC, policy="fcfs", backfill="easy", start=200 * 86400,
                                    duration=3 * 86400, cooling=True, wetbulb=22.0)),
    ("sdsc-acct-edp", dict(data=SDSC, policy="acct_edp", backfill="easy", start=200 * 86400, duration=3 * 86400,
                           options={"accounts_in": "collect:replay"})),
    ("sdsc-weighted-seed", dict(data=SDSC, policy="weighted", backfill="conservative", start=100 * 86400,
                                duration=3 * 86400, seed=3, options={"w_age": 1.0, "w_size": 0.5})),
]


def _digest(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _table_digest(path: Path) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    t = t.replace_schema_metadata(None)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return _digest(sink.getvalue().to_pybytes())


def fingerprints(names: list[str] | None = None) -> dict[str, dict[str, str]]:
    from twinsweep.core.config import RunConfig, Perturbation
    from twinsweep.core.run import simulate, write_run

    out = {}
    for name, kw in CONFIGS:
        if names and name not in names:
            continue
        kw = dict(kw)
        if "options" in kw:
            kw["options"] = tuple(sorted(kw["options"].items()))
        if "seed" in kw:
            kw["perturbation"] = Perturbation(runtime_sigma=0.1)
        try:
            cfg = RunConfig(**kw)
        except TypeError as exc:  # a RunConfig field renamed on purpose: say so, do not guess
            raise SystemExit(f"{name}: RunConfig({kw}) failed: {exc}")
        with tempfile.TemporaryDirectory() as d:
            res = simulate(cfg)
            write_run(res, d, timing=False)
            p = Path(d)
            man = json.loads((p / "manifest.json").read_text())
            man.pop("versions", None)
            man.pop("wall_time_s", None)
            out[name] = {
                "jobs": _table_digest(p / "jobs.parquet"),
                "jobs_file": _digest((p / "jobs.parquet").read_bytes()),
                "timeline": _table_digest(p / "timeline.parquet"),
                "timeline_file": _digest((p / "timeline.parquet").read_bytes()),
                "stats": _digest((p / "stats.json").read_bytes()),
                "manifest": _digest(json.dumps(man, sort_keys=True).encode()),
            }
        print(f"{name}: " + " ".join(f"{k}={v[:12]}" for k, v in out[name].items()), flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--save", help="write the fingerprints to this JSON file")
    ap.add_argument("--check", help="compare with fingerprints saved earlier; exit 1 on a difference")
    ap.add_argument("--ignore", default="", help="comma list of: file (parquet file bytes), stats, manifest")
    ap.add_argument("--only", default="", help="comma list of config names")
    a = ap.parse_args(argv)
    names = [x for x in a.only.split(",") if x] or None
    fp = fingerprints(names)
    if a.save:
        Path(a.save).write_text(json.dumps(fp, indent=1, sort_keys=True))
    if a.check:
        ref = json.loads(Path(a.check).read_text())
        ignore = {x.strip() for x in a.ignore.split(",") if x.strip()}
        bad = 0
        for name, got in fp.items():
            want = ref.get(name)
            if want is None:
                print(f"{name}: not in {a.check}", file=sys.stderr)
                bad += 1
                continue
            for k, v in got.items():
                if k.endswith("_file") and "file" in ignore or k in ignore:
                    continue
                if want.get(k) != v:
                    print(f"CHANGED {name} {k}: {want.get(k, '-')[:12]} -> {v[:12]}", file=sys.stderr)
                    bad += 1
        print("all unchanged" if not bad else f"{bad} difference(s)")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
