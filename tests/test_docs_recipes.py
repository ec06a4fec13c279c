"""docs/plugins.md: every recipe, followed step by step.

The page's code blocks marked ``# file: NAME`` are written out exactly as shown; each test then
does what the page says with them, in a child process (so the plug-ins never enter this test
process's registries), and checks the outcome against values computed by hand.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from twin_helpers import write_swf_rows

DOC = Path(__file__).resolve().parent.parent / "docs" / "plugins.md"
BLOCK = re.compile(r"```(?:python|toml)\n# file: (\S+)\n(.*?)```", re.S)


def recipe_files() -> dict[str, str]:
    """``{file name: text}`` of the page's ``# file:`` blocks (the marker line dropped)."""
    files = {name: body for name, body in BLOCK.findall(DOC.read_text(encoding="utf-8"))}
    assert files, f"no '# file:' blocks in {DOC}"
    return files


def _write(folder: Path, *names: str) -> None:
    files = recipe_files()
    for n in names:
        (folder / n).parent.mkdir(parents=True, exist_ok=True)
        (folder / n).write_text(files[n], encoding="utf-8")


def _run(args, cwd: Path, pythonpath: Path, check=True) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    p = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"{args} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def _twinsweep(*args) -> list[str]:
    return [sys.executable, "-m", "twinsweep.sweep.cli", *args]


def _starts(out: Path) -> dict[str, int]:
    jobs = pd.read_parquet(out / "jobs.parquet")
    return {str(k): (None if pd.isna(v) else int(v)) for k, v in zip(jobs["job_id"], jobs["start_time"])}


# A 4-node machine. J1 takes every node for [0, 100); J2 (2 nodes, limit 100), J3 (3 nodes,
# limit 100) and J4 (1 node, limit 20) queue behind it (requested time = 2 x run time).
AREA_ROWS = [(1, 0, 0, 100, 4), (2, 10, 0, 50, 2), (3, 20, 0, 50, 3), (4, 30, 0, 10, 1)]


def test_the_page_has_a_recipe_for_every_kind():
    text = DOC.read_text(encoding="utf-8")
    for title in ("## Add a policy", "## Add a backfill variant", "## Add a trace format", "## Add a backend",
                  "## Add a metric", "## Add an external scheduler"):
        assert title in text
    assert {"area_first.py", "pyproject.toml", "short_firstfit.py", "use_short_firstfit.py", "csv_jobs.py",
            "csv-jobs/pyproject.toml", "inline_backend.py", "jobs_per_mwh.py"} <= set(recipe_files())


def test_policy_recipe_by_module_path_and_as_an_installed_entry_point(tmp_path):
    _write(tmp_path, "area_first.py")
    write_swf_rows(tmp_path / "jobs.swf", AREA_ROWS, max_nodes=4)
    # the page's command, as written
    cmd = re.search(r"PYTHONPATH=\. (twinsweep run .*)", DOC.read_text(encoding="utf-8")).group(1).split()
    _run(_twinsweep(*cmd[1:]), tmp_path, tmp_path)
    # at 100 J1 ends: area order J3 (300 node-s), J2 (200), J4 (20); backfill none starts J3 and
    # stops at J2 (2 > 1 free); J3 ends at 150, then J2 and J4 start (fcfs would start J2 at 100)
    assert _starts(tmp_path / "out" / "area") == {"1": 0, "2": 150, "3": 100, "4": 150}

    # installed: a dist-info with the page's entry point, found by importlib.metadata on the path
    site = tmp_path / "site"
    site.mkdir()
    _write(site, "area_first.py")
    _install_entry_points(site)
    _run(_twinsweep("run", "--data", "jobs.swf", "--policy", "area_first", "--backfill", "none",
                    "--out", "out/installed", "--quiet"), tmp_path, site)
    assert _starts(tmp_path / "out" / "installed") == {"1": 0, "2": 150, "3": 100, "4": 150}


def _install_entry_points(site: Path, recipe: str = "pyproject.toml") -> None:
    """The page's ``recipe`` pyproject.toml as an installed distribution: a dist-info with its entry
    points in ``site`` (found by importlib.metadata on the path, as pip would leave it)."""
    meta = tomllib.loads(recipe_files()[recipe])
    name, version = meta["project"]["name"], meta["project"]["version"]
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    eps = meta["project"]["entry-points"]
    (info / "entry_points.txt").write_text(
        "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in items.items()) for group, items in eps.items()))


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_an_installed_policy_is_present_in_every_worker(tmp_path, backend):
    """The installed plug-in runs in a sweep's pool processes and Ray actors by its plain name,
    with nothing imported by hand (issue 12: present in every worker of every backend)."""
    site = tmp_path / "site"
    site.mkdir()
    _write(site, "area_first.py")
    _install_entry_points(site)
    write_swf_rows(tmp_path / "jobs.swf", AREA_ROWS, max_nodes=4)
    (tmp_path / "study.toml").write_text(textwrap.dedent("""
        [study]
        name = "installed"
        output = "res"
        seeds = 2
        [perturbation]
        runtime_sigma = 0.1
        [[datasets]]
        name = "tiny"
        trace = "jobs.swf"
        [grid]
        policy = ["area_first", "fcfs"]
        backfill = ["none"]
        """))
    _run(_twinsweep("sweep", "study.toml", "--backend", backend, "--workers", "2"), tmp_path, site)
    runs = pd.read_parquet(tmp_path / "res" / "runs.parquet")
    assert sorted(runs["policy"]) == ["area_first", "area_first", "fcfs", "fcfs"]
    key = runs.loc[(runs["policy"] == "area_first") & (runs["seed"] == 0), "key"].iloc[0]
    assert _starts(tmp_path / "res" / "runs" / key) == {"1": 0, "2": 150, "3": 100, "4": 150}


def test_backfill_recipe_and_its_option_check(tmp_path):
    _write(tmp_path, "short_firstfit.py", "use_short_firstfit.py")
    # J1: 3 of 4 nodes for [0, 100) (limit 200). J2 (4 nodes) is the blocked head from 10. J3 (1
    # node, limit 20 <= 30) starts at its submit, 20; J4 (1 node, limit 80 > 30) does not pass J2:
    # J2 runs [100, 150), then J4 starts at 150.
    write_swf_rows(tmp_path / "jobs.swf", [(1, 0, 0, 100, 3), (2, 10, 0, 50, 4), (3, 20, 0, 10, 1),
                                           (4, 30, 0, 40, 1)], max_nodes=4)
    p = _run([sys.executable, "use_short_firstfit.py"], tmp_path, tmp_path)
    got = {int(j): int(s) for j, s in re.findall(r"^\s*\d+\s+(\d+)\s+(\d+)\s*$", p.stdout, re.M)}
    assert got == {1: 0, 2: 100, 3: 20, 4: 150}
    bad = _run([sys.executable, "-c", textwrap.dedent("""
        from twinsweep import RunConfig, simulate
        simulate(RunConfig(data="jobs.swf", backfill="short_firstfit:ShortFirstFit", options=(("max_limit_s", -1.0),)))
        """)], tmp_path, tmp_path, check=False)
    assert bad.returncode != 0 and "max_limit_s" in bad.stderr and "> 0" in bad.stderr


def test_loader_recipe_detects_loads_and_names_a_bad_line(tmp_path):
    _write(tmp_path, "csv_jobs.py")
    (tmp_path / "log.csv").write_text("job_id,submit_time,run_time,time_limit,nodes,user\n"
                                      "a,0,100,200,60,u1\nb,10,50,100,60,u2\n")
    code = textwrap.dedent("""
        import json, csv_jobs
        from twinsweep import RunConfig, simulate
        from twinsweep.core.loaders import load_workload
        w = load_workload("log.csv")
        res = simulate(RunConfig(data="log.csv", system="kth-sp2", policy="fcfs", backfill="easy"))
        print(json.dumps({"format": w.format, "n": len(w.jobs),
                          "starts": [int(x) for x in res.jobs["start_time"]]}))
        """)
    out = json.loads(_run([sys.executable, "-c", code], tmp_path, tmp_path).stdout.strip().splitlines()[-1])
    # KTH SP2 has 100 nodes: b (60 nodes) waits for a's end at 100
    assert out == {"format": "csv-jobs", "n": 2, "starts": [0, 100]}
    (tmp_path / "bad.csv").write_text("job_id,submit_time,run_time,time_limit,nodes,user\na,0,100,200,60,u1\nb,x\n")
    bad = _run([sys.executable, "-c", "import csv_jobs\nfrom twinsweep.core.loaders import load_workload\n"
                "load_workload('bad.csv')"], tmp_path, tmp_path, check=False)
    assert bad.returncode != 0 and "bad.csv" in bad.stderr and "line 3" in bad.stderr


def test_loader_recipe_installed_by_its_entry_point_and_named_by_module_object(tmp_path):
    """The page's csv_jobs.py installed with the page's entry point (``csv-jobs = "csv_jobs"``, the
    module registering itself at import): `twinsweep run` detects the format with nothing imported
    by hand, and an SWF trace is still detected in that environment (detection loads every
    installed format). Not installed, ``--format csv_jobs:LOADER`` names it."""
    site = tmp_path / "site"
    site.mkdir()
    _write(site, "csv_jobs.py")
    _install_entry_points(site, "csv-jobs/pyproject.toml")
    (tmp_path / "log.csv").write_text("job_id,submit_time,run_time,time_limit,nodes,user\n"
                                      "a,0,100,200,60,u1\nb,10,50,100,60,u2\n")
    write_swf_rows(tmp_path / "jobs.swf", AREA_ROWS, max_nodes=4)
    run = ["--system", "kth-sp2", "--policy", "fcfs", "--backfill", "easy", "--quiet"]
    p = _run(_twinsweep("run", "--data", "log.csv", "--out", "out/installed", *run), tmp_path, site)
    assert "Warning" not in p.stderr and "error" not in p.stderr, p.stderr
    # KTH SP2 has 100 nodes: b (60 nodes) waits for a's end at 100
    assert _starts(tmp_path / "out" / "installed") == {"a": 0, "b": 100}
    _run(_twinsweep("run", "--data", "jobs.swf", "--policy", "fcfs", "--backfill", "none", "--out", "out/swf",
                    "--quiet"), tmp_path, site)
    # fcfs, no backfill: J2 at J1's end (100); J3 (3 nodes) waits for J2's end (150), J4 behind it
    assert _starts(tmp_path / "out" / "swf") == {"1": 0, "2": 100, "3": 150, "4": 150}
    _write(tmp_path, "csv_jobs.py")
    _run(_twinsweep("run", "--data", "log.csv", "--format", "csv_jobs:LOADER", "--out", "out/by-object", *run),
         tmp_path, tmp_path)
    assert _starts(tmp_path / "out" / "by-object") == {"a": 0, "b": 100}


def test_backend_recipe_runs_a_sweep(tmp_path):
    _write(tmp_path, "inline_backend.py")
    write_swf_rows(tmp_path / "jobs.swf", AREA_ROWS, max_nodes=4)
    (tmp_path / "study.toml").write_text(textwrap.dedent("""
        [study]
        name = "recipe"
        output = "res"
        [[datasets]]
        name = "tiny"
        trace = "jobs.swf"
        [grid]
        policy = ["fcfs", "sjf"]
        backfill = ["easy"]
        """))
    _run(_twinsweep("sweep", "study.toml", "--backend", "inline_backend:Inline"), tmp_path, tmp_path)
    runs = pd.read_parquet(tmp_path / "res" / "runs.parquet")
    assert sorted(runs["policy"]) == ["fcfs", "sjf"] and len(runs) == 2


def test_metric_recipe_is_computed_with_the_run(tmp_path):
    _write(tmp_path, "jobs_per_mwh.py")
    write_swf_rows(tmp_path / "jobs.swf", AREA_ROWS, max_nodes=4)
    code = textwrap.dedent("""
        import json, jobs_per_mwh
        from twinsweep import RunConfig, simulate
        s = simulate(RunConfig(data="jobs.swf", policy="fcfs", backfill="easy")).stats["system"]
        print(json.dumps({"m": s["jobs_per_mwh"], "e": s["facility_energy_j"]}))
        """)
    out = json.loads(_run([sys.executable, "-c", code], tmp_path, tmp_path).stdout.strip().splitlines()[-1])
    assert out["m"] == pytest.approx(4 / (out["e"] / 3.6e9), rel=1e-12)  # all 4 jobs finish


def test_a_plug_in_runs_the_shipped_conformance_suite(tmp_path):
    """The page's conformance test for the policy recipe passes (run with pytest in a child)."""
    _write(tmp_path, "area_first.py", "test_area_first.py")
    _install_entry_points(tmp_path)
    p = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_area_first.py"],
             tmp_path, tmp_path, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert re.search(r"\b(\d+) passed\b", p.stdout) and " failed" not in p.stdout
