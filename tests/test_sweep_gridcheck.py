"""Every grid point checked when the spec is loaded (issue 11, item 4): bad options, non-finite or
non-numeric values, missing wet-bulb files and unresolvable policy names fail before any run, with
one error naming the spec file, the axis or option and the grid point; each check runs once per
distinct value / scheduler combination; ``--dry-run`` counts a grid without expanding it; a grid
axis of mixed types goes through a whole sweep into runs.parquet."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from twinsweep.core.errors import ConfigError
from twinsweep.sweep.api import dry_run, run_sweep
from twinsweep.sweep.spec import load_spec
from test_sweep_support import write_spec

REPO = Path(__file__).resolve().parents[1]


def _spec(tmp_path: Path, grid_extra: str, policies=("fcfs",), backfills=("easy",), seeds: int = 1) -> Path:
    """The tiny test study with ``grid_extra`` lines appended to its [grid] table."""
    p = write_spec(tmp_path, seeds=seeds, policies=policies, backfills=backfills)
    p.write_text(p.read_text().replace('sample_period = ["60s"]', 'sample_period = ["60s"]\n' + grid_extra))
    return p


def _wetbulb_csv(path: Path, body: str = "time,wetbulb_c\n0,18.0\n3600,22.0\n") -> Path:
    path.write_text(body)
    return path


@pytest.mark.parametrize("policies, grid, needles", [
    # a misspelt weight of the weighted policy
    (("weighted",), '"options.w_agee" = [1.0]',
     ["grid point (policy='weighted', backfill='easy', options.w_agee=1.0)", "w_agee"]),
    # an option fcfs does not take (only the second policy has it)
    (("weighted", "fcfs"), '"options.w_age" = [0.5]',
     ["grid point (policy='fcfs', backfill='easy', options.w_age=0.5)", "unknown option 'w_age'"]),
    # a non-numeric weight, second value of its axis
    (("weighted",), '"options.w_age" = [1.0, "abc"]',
     ["grid point (policy='weighted', backfill='easy', options.w_age='abc')", "w_age", "expected a number"]),
    # NaN / inf, also inside a weight table
    (("weighted",), '"options.w_age" = [1.0, nan]', ["grid.options.w_age: value nan is not a finite number"]),
    (("weighted",), '"options.weights" = [{age = 1.0}, {age = 1.0, size = -inf}]',
     ["grid.options.weights: value {'age': 1.0, 'size': -inf} holds -inf", "not a finite number"]),
    # a policy name that resolves to nothing
    (("fcfs", "plugin:nowhere"), "",
     ["grid.policy: unknown policy 'plugin:nowhere'", "cannot import module 'plugin'", "fcfs"]),
    # a wet bulb file that does not exist
    (("fcfs",), 'cooling = [true]\nwetbulb = [20.0, "no-such-wetbulb.csv"]',
     ["grid.wetbulb: value 'no-such-wetbulb.csv'", "CSV file not found: no-such-wetbulb.csv"]),
    # wet bulbs where no run uses them, or where some runs ignore them (identical runs)
    (("fcfs",), "wetbulb = [20.0]", ["grid.wetbulb:", "no grid point has cooling = true"]),
    (("fcfs",), "cooling = [true, false]\nwetbulb = [20.0, 25.0]", ["grid.wetbulb:", "give identical runs"]),
    # two spellings of one value
    (("fcfs",), 'cooling = [true]\nwetbulb = [20, "20.0"]', ["grid.wetbulb: values 20 and '20.0' give the same run"]),
    (("fcfs",), 'cooling = [true]\nwetbulb = [99.0]', ["grid.wetbulb: value 99.0", "not a wet-bulb temperature"]),
])
def test_bad_grid_point_is_one_error_at_load_naming_file_axis_and_point(tmp_path, policies, grid, needles):
    p = _spec(tmp_path, grid, policies=policies)
    with pytest.raises(ConfigError) as ei:
        load_spec(p)
    msg = str(ei.value)
    assert msg.startswith(f"{p}: "), msg
    for n in needles:
        assert n in msg, msg


def test_dry_run_cli_refuses_a_bad_grid_point_and_writes_nothing(tmp_path):
    p = _spec(tmp_path, '"options.w_agee" = [1.0, 2.0]', policies=("weighted",))
    r = subprocess.run([sys.executable, "-m", "twinsweep", "sweep", str(p), "--dry-run"], capture_output=True,
                       text=True, cwd=REPO)
    assert r.returncode == 2, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "spec.toml: grid point (policy='weighted'" in lines[0] and "w_agee" in lines[0]
    assert "runs" not in r.stdout and not (tmp_path / "out").exists()


def test_wetbulb_csv_content_is_checked_at_load(tmp_path):
    _wetbulb_csv(tmp_path / "wb.csv", "time,temp\n0,18\n")
    p = _spec(tmp_path, f'cooling = [true]\nwetbulb = ["{tmp_path / "wb.csv"}"]')
    with pytest.raises(ConfigError, match=r"grid.wetbulb: value .*wb.csv.*needs a column 'wetbulb_c'"):
        load_spec(p)


def test_good_option_grid_loads(tmp_path):
    p = _spec(tmp_path, '"options.w_age" = [0.0, 1]\n"options.size_norm" = [16]', policies=("weighted",))
    spec = load_spec(p)
    assert dict(spec.grid)["options.w_age"] == (0.0, 1)


def test_each_check_runs_once_per_distinct_value_and_scheduler_combination(tmp_path, monkeypatch):
    """1 policy x 2 backfills x 3 option values = 6 schedulers built, however many sample periods,
    wet bulbs and seeds multiply the grid (here x 40 x 2 x 7 seeds); each wet-bulb CSV read once."""
    import twinsweep.core.cooling.wetbulb as cooling
    import twinsweep.core.scheduler as scheduler

    wb = _wetbulb_csv(tmp_path / "wb.csv")
    built, read = [], []
    real_check, real_read = scheduler.validate_scheduler, cooling._read_wetbulb_csv
    monkeypatch.setattr(scheduler, "validate_scheduler",
                        lambda p, b, o: built.append((p, dict(o))) or real_check(p, b, o))
    monkeypatch.setattr(cooling, "_read_wetbulb_csv", lambda p, e: read.append(p) or real_read(p, e))
    periods = ", ".join(str(60 * (i + 1)) for i in range(40))
    p = _spec(tmp_path, f'cooling = [true]\nwetbulb = [21.0, "{wb}"]\n"options.w_age" = [0.0, 0.5, 1.0]',
              policies=("weighted",), backfills=("easy", "none"), seeds=7)
    p.write_text(p.read_text().replace('sample_period = ["60s"]', f"sample_period = [{periods}]"))
    spec = load_spec(p)
    assert len(dict(spec.grid)["sample_period"]) == 40
    assert len(built) == 1 * 2 * 3 and read == [str(wb)]
    assert sorted(o["w_age"] for _, o in built) == [0.0, 0.0, 0.5, 0.5, 1.0, 1.0]


def test_dry_run_of_a_ten_million_point_grid_does_not_expand_it(tmp_path):
    """10^4 seeds x 1000 sample periods = 10^7 runs: the dry run counts them and shows the first
    keys without building 10^7 run configs (that took minutes and GBs before; the time goal, < 1 s,
    is printed by bench/bench_dry_run.py). The guard here is a generous timeout."""
    periods = ", ".join(str(i) for i in range(1, 1001))
    p = _spec(tmp_path, "", seeds=10_000)
    p.write_text(p.read_text().replace('sample_period = ["60s"]', f"sample_period = [{periods}]"))
    r = subprocess.run([sys.executable, "-m", "twinsweep", "sweep", str(p), "--dry-run"], capture_output=True,
                       text=True, cwd=REPO, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "1 window(s) x 1000 grid point(s) x 10000 seed(s) = 10000000 runs" in r.stdout
    assert "0 complete, 10000000 to run" in r.stdout
    assert "sample_period=1 seed=4" in r.stdout and "(9999995 more)" in r.stdout
    assert not (tmp_path / "out").exists()


def test_dry_run_counts_complete_runs_of_the_plan_only(tmp_path):
    """The complete runs are counted from the run folders: a run of another plan in the same
    folder (here: a seed the spec no longer has) is not counted."""
    p = write_spec(tmp_path, seeds=2, policies=("fcfs",), backfills=("none", "easy"))
    res = run_sweep(p, report=False)
    assert res.ran == 4
    info = dry_run(p)
    assert (info["runs"], info["done"], info["missing"]) == (4, 4, 0)
    p.write_text(p.read_text().replace("seeds = 2", "seeds = [1, 2]"))
    info = dry_run(p)
    assert (info["runs"], info["done"], info["missing"]) == (4, 2, 2)
    assert [k["seed"] for k in info["keys"]] == [1, 2, 1, 2]


def test_identical_windows_are_found_by_the_dry_run(tmp_path):
    p = write_spec(tmp_path, windows='[{name = "a", start = 0, duration = "1h"}, {name = "b", start = 0, duration = "1h"}]')
    with pytest.raises(ConfigError, match="tiny/a and tiny/b give identical runs"):
        dry_run(p)


def test_mixed_type_axis_sweep_end_to_end(tmp_path):
    """``wetbulb = [20.0, "<file>.csv"]``: both runs complete, runs.parquet stores the axis as
    text (explicit Arrow schema), and the aggregate groups by it."""
    from twinsweep.sweep.aggregate import aggregate_results

    wb = _wetbulb_csv(tmp_path / "wb.csv")
    p = _spec(tmp_path, f'cooling = [true]\nwetbulb = [20.0, "{wb}"]')
    res = run_sweep(p, report=False)
    assert res.ran == 2 and not res.failed
    table = tmp_path / "out" / "runs.parquet"
    assert str(pq.read_schema(table).field("wetbulb").type) == "string"
    assert sorted(pq.read_table(table).column("wetbulb").to_pylist()) == sorted(["20.0", str(wb)])
    import pandas as pd

    agg = pd.read_parquet(aggregate_results(tmp_path / "out"))
    assert set(agg["wetbulb"]) == {"20.0", str(wb)}
