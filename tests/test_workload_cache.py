"""The cache of parsed traces (core/loaders/_cache.py): a hit gives exactly the parsed Workload, a
changed file or parser is a miss, a damaged cache file is parsed again, and runs' outputs do not
depend on it. The rest of the suite runs with the cache off (tests/conftest.py), so every other
loader test exercises the parser itself."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest

from conftest import data_path
from twinsweep.core.loaders import BUILTIN_FORMATS, _cache, load_workload
from twinsweep.core.loaders import _registry

FIELDS = ("epoch", "checksum", "source", "format", "header", "procs_unit", "skipped_lines", "provenance", "traces")


def _swf(path: Path, n: int = 6000, seed: int = 1) -> Path:
    """A valid SWF file of ``n`` jobs (above the cache's size floor), with a header, unknown
    fields (-1) and a partition column that varies."""
    lines = ["; Version: 2.2", "; UnixStartTime: 1000000000", "; MaxNodes: 64", "; MaxProcs: 64"]
    for i in range(1, n + 1):
        k = (i * 7919 + seed) % 97
        wait = -1 if k == 3 else k * 11
        lines.append(f"{i} {i * 30} {wait} {k * 13 + 1} {1 + k % 64} -1 -1 {1 + k % 64} {k * 20 + 60} -1 "
                     f"{1 if k % 5 else 0} {1 + k % 7} {1 + k % 3} -1 {1 + k % 2} -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size >= _cache.MIN_BYTES
    return path


def _same(a, b):
    pd.testing.assert_frame_equal(a.jobs, b.jobs, check_exact=True)
    assert a.jobs.dtypes.equals(b.jobs.dtypes)
    for col in a.jobs.columns:  # the Python objects too: str / None / list, not numpy scalars or NaN
        assert a.jobs[col].map(type).tolist() == b.jobs[col].map(type).tolist(), col
    for f in FIELDS:
        assert getattr(a, f) == getattr(b, f), f


@pytest.fixture(name="cache")
def cache_fixture(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("TWINSWEEP_CACHE", str(folder))
    return folder


def test_a_hit_is_exactly_the_parsed_workload_and_skips_the_parser(tmp_path, cache, monkeypatch):
    trace = _swf(tmp_path / "t.swf")
    first = load_workload(trace)  # miss: parsed and written
    files = list(cache.glob("*.arrow"))
    assert len(files) == 1 and files[0].suffix == ".arrow"
    calls = []
    real = _registry.get_loader

    def counting(name):
        calls.append(name)
        return real(name)

    monkeypatch.setattr(_registry, "get_loader", counting)
    second = load_workload(trace)  # hit: no loader looked up, nothing parsed
    assert calls == []
    _same(first, second)
    monkeypatch.setenv("TWINSWEEP_CACHE", "off")
    _same(load_workload(trace), second)


def test_real_trace_round_trips(cache):
    rel = data_path("pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz")
    parsed = load_workload(rel)
    hit = load_workload(rel)
    assert len(list(cache.glob("*.arrow"))) == 1
    _same(parsed, hit)
    assert len(hit) == 28476 and hit.checksum.startswith("sha256:")


def test_changed_bytes_path_or_lenient_are_misses(tmp_path, cache):
    a = _swf(tmp_path / "a.swf")
    load_workload(a)
    load_workload(a, lenient=True)
    assert len(list(cache.glob("*.arrow"))) == 2
    b = tmp_path / "b.swf"
    b.write_bytes(a.read_bytes())  # same bytes elsewhere: its own entry (loaders cite the file name)
    assert load_workload(b).source == str(b)
    assert len(list(cache.glob("*.arrow"))) == 3
    _swf(a, seed=2)  # the file changed in place
    wl = load_workload(a)
    assert len(list(cache.glob("*.arrow"))) == 4
    assert wl.checksum == "sha256:" + hashlib.sha256(a.read_bytes()).hexdigest()


def test_parser_code_is_in_the_key(tmp_path, cache, monkeypatch):
    trace = _swf(tmp_path / "t.swf")
    raw = trace.read_bytes()
    k1 = _cache.cache_path(str(trace), raw, None, False)
    monkeypatch.setattr(_cache, "_code_fingerprint", lambda load: b"another parser")
    assert _cache.cache_path(str(trace), raw, None, False) != k1


def test_damaged_cache_file_is_parsed_again_and_rewritten(tmp_path, cache):
    trace = _swf(tmp_path / "t.swf")
    good = load_workload(trace)
    (f,) = cache.glob("*.arrow")
    f.write_bytes(f.read_bytes()[:100])  # truncated
    _same(load_workload(trace), good)
    assert f.stat().st_size > 100  # rewritten
    _same(load_workload(trace), good)


def test_not_cached_off_small_or_other_formats(tmp_path, cache, monkeypatch):
    small = tmp_path / "small.swf"
    small.write_text("; MaxProcs: 4\n1 0 1 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n")
    load_workload(small)
    assert not cache.exists() or not list(cache.glob("*.arrow"))
    trace = _swf(tmp_path / "t.swf")
    raw = trace.read_bytes()
    assert _cache.cache_path(str(trace), raw, "sacct", False) is None  # reads more than the file: never
    monkeypatch.setenv("TWINSWEEP_CACHE", "off")
    load_workload(trace)
    assert not cache.exists() or not list(cache.glob("*.arrow"))


def test_default_folder_is_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("TWINSWEEP_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _cache.cache_dir() == tmp_path / "twinsweep" / "workloads"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert _cache.cache_dir() == Path.home() / ".cache" / "twinsweep" / "workloads"


def test_run_outputs_do_not_depend_on_the_cache(tmp_path, cache, monkeypatch):
    from twinsweep.core.config import RunConfig
    from twinsweep.core.run import simulate, write_run

    trace = _swf(tmp_path / "t.swf")
    cfg = RunConfig(data=str(trace), policy="sjf", backfill="easy", sample_period=60)
    outs = []
    for mode in ("off", str(cache), str(cache)):  # parsed, miss + write, hit
        monkeypatch.setenv("TWINSWEEP_CACHE", mode)
        d = tmp_path / f"out{len(outs)}"
        write_run(simulate(cfg), d)
        outs.append({p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.name != "timing.json"})
    assert list(cache.glob("*.arrow"))
    assert set(outs[0]) >= {"jobs.parquet", "timeline.parquet", "stats.json", "manifest.json"}
    assert outs[0] == outs[1] == outs[2]


def test_a_hit_in_a_fresh_process_imports_no_loader(tmp_path):
    """A trace read from the cache needs no parser: a new process (as each `twinsweep run` is) that
    loads a cached SWF file imports none of the format modules (core.loaders declares them and
    imports one when its format is looked up, all when a file's format is detected), and gets the
    parsed Workload's checksum and rows. The first process (a miss) detects and parses, so it
    imports them all."""
    import json
    import os
    import subprocess
    import sys

    trace = _swf(tmp_path / "t.swf")
    code = (
        "import json, sys\n"
        "from twinsweep.core.loaders import load_workload, BUILTIN_FORMATS\n"
        f"wl = load_workload({str(trace)!r})\n"
        "mods = sorted({'twinsweep.core.loaders.' + m for _, m in BUILTIN_FORMATS} & set(sys.modules))\n"
        "print(json.dumps({'mods': mods, 'checksum': wl.checksum, 'n': len(wl), 'format': wl.format}))\n"
    )
    env = {**os.environ, "TWINSWEEP_CACHE": str(tmp_path / "cache")}
    runs = [json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                      check=True).stdout.strip().splitlines()[-1]) for _ in range(2)]
    assert runs[0]["mods"] == sorted({f"twinsweep.core.loaders.{m}" for _, m in BUILTIN_FORMATS})  # a miss ...
    assert runs[1]["mods"] == []                                                                   # a hit
    assert runs[0]["checksum"] == runs[1]["checksum"] and runs[0]["n"] == runs[1]["n"] == 6000
    assert runs[1]["format"] == "swf"
