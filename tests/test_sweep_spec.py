"""Study specs: parsing, clear errors for bad specs, deterministic expansion and stable keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from twinsweep.core.errors import ConfigError
from twinsweep.sweep.expand import expand, grid_size, load_datasets
from twinsweep.sweep.spec import load_spec, parse_spec
from test_sweep_support import write_spec, write_swf

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def _doc(**over):
    doc = {
        "study": {"name": "s", "seeds": 2},
        "datasets": [{"name": "d", "trace": "x.swf", "windows": [{"name": "w", "start": "1h", "duration": "2d"}]}],
        "grid": {"policy": ["fcfs", "sjf"], "backfill": ["none", "easy"]},
    }
    for k, v in over.items():
        doc[k] = v
    return doc


def test_parse_full_spec(tmp_path):
    spec = parse_spec(_doc(perturbation={"runtime_sigma": 0.2, "submit_jitter": "5m"},
                           rank={"wait_mean_s": "min", "utilization": "max"},
                           backend={"name": "local", "workers": 2}))
    assert spec.seeds == (0, 1)
    assert spec.perturbation.runtime_sigma == 0.2 and spec.perturbation.submit_jitter_s == 300
    assert spec.datasets[0].windows[0].start == 3600 and spec.datasets[0].windows[0].duration == 172800
    assert spec.rank == (("wait_mean_s", "min"), ("utilization", "max"))
    assert spec.primary_metric == ("wait_mean_s", "min")
    assert spec.axis_names == ("policy", "backfill")
    assert spec.backend.name == "local" and spec.backend.workers == 2
    assert spec.with_overrides(output="o", backend="ray").backend.name == "ray"


def test_example_and_quickstart_specs_parse():
    for name in ("example.toml", "quickstart.toml"):
        spec = load_spec(REPO / "studies" / name)
        assert spec.datasets and grid_size(spec)["runs"] > 0


def test_the_example_specs_commented_axes_are_valid_grid_values():
    """Every commented ``"options.<name>" = [...]`` example of example.toml loads beside the
    policy the comment names (it once showed a weight factor, ``wait``, that weighted refuses)."""
    import re
    import tomllib

    text = " ".join(line.lstrip("#").strip() for line in (REPO / "studies" / "example.toml").read_text().splitlines())
    examples = re.findall(r'(?:with policy = (\[[^\]]*\]): )?("options\.[a-z_]+" = \[.*?\])\)', text)
    assert examples, "example.toml shows no options axis"
    for policies, axis in examples:
        from twinsweep.core.scheduler import validate_scheduler  # what the grid check runs per point

        for policy in tomllib.loads(f"p = {policies}")["p"] if policies else ["weighted"]:  # (weights: weighted's)
            for name, values in tomllib.loads(axis).items():
                for v in values:
                    validate_scheduler(policy, "easy", {name.split(".", 1)[1]: v})


@pytest.mark.parametrize("over, needle", [
    ({"grid": {"policy": ["fifo"]}}, "grid.policy: 'fifo' is not allowed; allowed:"),
    ({"grid": {"backfill": ["eazy"]}}, "grid.backfill: 'eazy' is not allowed; allowed: conservative, easy, firstfit, none"),
    ({"grid": {"colour": ["red"]}}, "grid: unknown axis 'colour'; allowed: policy, backfill, kill, sample_period"),
    ({"grid": {"kill": ["yes"]}}, "grid.kill: values must be true or false"),
    ({"grid": {"sample_period": ["1 fortnight"]}}, "grid.sample_period"),
    ({"rank": {"wait": "min"}}, "rank: 'wait' is not a metric; valid metric names: awrt_s, awwt_s, bsld_mean"),
    ({"rank": {"wait_mean_s": "down"}}, "rank.wait_mean_s: 'down' is not allowed; allowed: min, max"),
    ({"backend": {"name": "dask"}}, "backend.name: 'dask' is not allowed; allowed: local, ray"),
    ({"backend": {"name": "local", "address": "auto"}}, "backend.address"),
    ({"backend": {"name": "ray", "address": 5}}, "backend.address: expected a cluster address string "
                                                  "(e.g. \"auto\" or \"ray://head:10001\"), got 5"),
    ({"study": {"description": ["a"]}}, "study.description: expected a string, got ['a']"),
    ({"study": {"description": 5}}, "study.description: expected a string, got 5"),
    ({"datasets": [{"trace": "a", "format": "swff"}]}, "datasets[0].format: 'swff' is not allowed; allowed: adastra, eurora"),
    ({"backend": {"workers": 0}}, "backend.workers: must be >= 1"),
    ({"study": {"seeds": 0}}, "study.seeds: must be >= 1"),
    ({"study": {"seeds": [1, 1]}}, "study.seeds: need distinct seeds"),
    ({"study": {"retries": -1}}, "study.retries: must be >= 0"),
    ({"study": {"bogus": 1}}, "study: unknown key(s) ['bogus']; allowed: name, description, output, seeds, retries"),
    ({"perturbation": {"runtime_sigma": -1}}, "perturbation.runtime_sigma: expected a number >= 0"),
    ({"perturbation": {"runtime_sigma": float("nan")}}, "perturbation.runtime_sigma: expected a number >= 0, got nan "
                                                         "(not a finite number)"),
    ({"perturbation": {"runtime_sigma": float("inf")}}, "perturbation.runtime_sigma: expected a number >= 0, got inf "
                                                         "(not a finite number)"),
    ({"perturbation": {"jitter": 3}}, "perturbation: unknown key(s) ['jitter']"),
    ({"datasets": []}, "datasets: the study needs at least one"),
    ({"datasets": [{"name": "d"}]}, "datasets[0]: missing required key 'trace'"),
    ({"datasets": [{"trace": "a", "windows": [{"start": "yesterday"}]}]}, "datasets[0].windows[0].start"),
    ({"datasets": [{"trace": "a", "windows": [{"duration": 0}]}]}, "datasets[0].windows[0].duration: must be > 0"),
    ({"datasets": [{"trace": "a", "name": "x"}, {"trace": "b", "name": "x"}]}, "duplicate dataset name(s) ['x']"),
    ({"report": {"timeline": {"dataset": "nope"}}}, "report.timeline.dataset: 'nope' is not allowed; allowed: d"),
    ({"report": {"timeline": {"seed": 9}}}, "report.timeline.seed: 9 is not allowed; allowed: 0, 1"),
    ({"extra": {}}, "study spec: unknown key(s) ['extra']"),
    ({"report": {"tradeoff": {"bsld": 1}}}, "report.tradeoff: 'bsld' is not a metric; valid metric names:"),
    ({"report": {"tradeoff": {"bsld_mean": 0}}}, "report.tradeoff.bsld_mean: the weight must be a number > 0"),
    ({"report": {"pareto": ["bsld_mean"]}}, "report.pareto: expected two different metrics [x, y]"),
    ({"report": {"pareto": ["bsld_mean", "ramp"]}}, "report.pareto: 'ramp' is not a metric"),
    ({"report": {"baseline": "fcfs+conservative"}}, "report.baseline: 'fcfs+conservative' names backfill "
                                                    "'conservative', which the grid does not have (none, easy)"),
    ({"report": {"baseline": "fcfs+easy+x"}}, "report.baseline: 'fcfs+easy+x': 'x' is not axis=value of a grid axis "
                                              "that varies (none: no other axis varies); write it as "
                                              "policy+backfill[+axis=value...], e.g. \"fcfs+easy\""),
    ({"grid": {"policy": ["fcfs"], "backfill": ["easy"], "kill": [True, False]}, "report": {"baseline": "fcfs+easy+kill=no"}},
     "report.baseline: 'fcfs+easy+kill=no': 'kill=no' is not axis=value of a grid axis that varies (kill=<True|False>)"),
    ({"rank": {"bsld_mean": "min", "pue_avg": "min"}},
     "rank: 'pue_avg' is filled only by runs with the cooling model, and no grid point has cooling = true (add "
     "cooling = [true] to [grid], or remove it)"),
    ({"grid": {"policy": ["fcfs"], "cooling": [False]}, "report": {"tradeoff": ["bsld_mean", "supply_temp_max_c", "cooling_energy_j"]}},
     "report.tradeoff: 'supply_temp_max_c', 'cooling_energy_j' are filled only by runs with the cooling model, and no "
     "grid point has cooling = true (add cooling = [true] to [grid], or remove them)"),
    ({"report": {"pareto": ["bsld_mean", "pue_avg"]}}, "report.pareto: 'pue_avg' is filled only by runs with the cooling model"),
    ({"report": {"validation": {"d": "/no/such/validation.json"}}}, "report.validation.d: /no/such/validation.json "
                                                                     "is not a file"),
])
def test_bad_specs_name_key_and_allowed_values(over, needle):
    with pytest.raises(ConfigError) as ei:
        parse_spec(_doc(**over))
    assert needle in str(ei.value)


def test_plug_in_names_are_checked_when_the_spec_is_loaded():
    """Backend and loader names come from their registries (core.registry): a registered plug-in is
    accepted by name or as a 'module:object' path, a misspelt one fails at load, naming the key."""
    from twinsweep.backends.base import BACKENDS
    from twinsweep.backends.local import LocalBackend
    from twinsweep.core.loaders import LOADERS

    class SpecTestBackend(LocalBackend):
        name = "spec-test"

    BACKENDS.register("spec-test", SpecTestBackend)
    try:
        assert parse_spec(_doc(backend={"name": "spec-test"})).backend.name == "spec-test"
        assert parse_spec(_doc()).with_overrides(backend="spec-test").backend.name == "spec-test"
        with pytest.raises(ConfigError, match="backend.name: 'spec-tset' is not allowed; allowed: .*spec-test"):
            parse_spec(_doc(backend={"name": "spec-tset"}))
    finally:
        BACKENDS.unregister("spec-test")
    path = "twinsweep.backends.local:LocalBackend"
    assert parse_spec(_doc(backend={"name": path})).backend.name == path
    with pytest.raises(ConfigError, match=r"backend.name: backend 'twinsweep.backends.local:Nope'.*no attribute"):
        parse_spec(_doc(backend={"name": "twinsweep.backends.local:Nope"}))
    for fmt in LOADERS.names():
        assert parse_spec(_doc(datasets=[{"trace": "a", "format": fmt}])).datasets[0].format == fmt


def test_report_keys(tmp_path):
    v = tmp_path / "validation.json"
    v.write_text("{}")
    spec = parse_spec(_doc(rank={"wait_mean_s": "min", "bsld_mean": "min"},  # pue_avg: runs with cooling fill it
                           grid={"policy": ["fcfs", "sjf"], "backfill": ["none", "easy"], "cooling": [True]},
                           report={"tradeoff": {"bsld_mean": 2, "ramp_15min_p95_w": 1}, "pareto": ["bsld_mean", "pue_avg"],
                                   "baseline": "fcfs+easy", "validation": {"d": str(v)}}))
    r = spec.report
    assert r.tradeoff == (("bsld_mean", 2.0), ("ramp_15min_p95_w", 1.0)) and r.pareto == ("bsld_mean", "pue_avg")
    assert r.baseline == "fcfs+easy" and r.validation == (("d", str(v.resolve())),)
    # cooling on and off: the runs without the model have no PUE and would rank last on it for that
    with pytest.raises(ConfigError, match=r"^rank: 'pue_avg' is filled only by runs with the cooling model, and the "
                                          r"grid's cooling = false points leave it empty: their variants would rank "
                                          r"last on it for having no value, not for a worse one \(set cooling = \[true\]"):
        parse_spec(_doc(grid={"policy": ["fcfs"], "cooling": [False, True]}, rank={"pue_avg": "min"}))
    assert parse_spec(_doc(grid={"policy": ["fcfs"], "cooling": [False, True]}, rank={"wait_mean_s": "min"})).rank == \
        (("wait_mean_s", "min"),)  # on and off is fine for a metric every run fills
    assert parse_spec(_doc(grid={"policy": ["fcfs"], "backfill": ["easy"], "kill": [True, False]},
                           report={"baseline": "fcfs+easy+kill=False"})).report.baseline == "fcfs+easy+kill=False"
    assert parse_spec(_doc(report={"tradeoff": ["bsld_mean", "utilization"]})).report.tradeoff == \
        (("bsld_mean", 1.0), ("utilization", 1.0))
    from twinsweep.sweep.spec import study_metrics

    assert study_metrics(spec.to_dict()) == ["wait_mean_s", "bsld_mean", "ramp_15min_p95_w", "pue_avg"]
    # the default ranks energy per unit of work, never a window total
    assert dict(parse_spec(_doc()).rank) == {"bsld_mean": "min", "wait_mean_s": "min", "utilization": "max",
                                             "facility_j_per_node_h": "min"}


def test_bad_toml_file_names_file(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[study\nname = 1")
    with pytest.raises(ConfigError, match="bad.toml: not valid TOML"):
        load_spec(p)
    p.write_text('[grid]\npolicy = ["fifo"]\n[[datasets]]\ntrace = "x"\n')
    with pytest.raises(ConfigError, match=r"bad.toml: grid.policy: 'fifo'"):
        load_spec(p)


def test_cli_bad_spec_exits_2_with_message(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('[[datasets]]\ntrace = "x"\n[backend]\nname = "slurmish"\n')
    r = subprocess.run([sys.executable, "-m", "twinsweep", "sweep", str(p), "--dry-run"], capture_output=True,
                       text=True, cwd=REPO)
    assert r.returncode == 2
    assert "backend.name: 'slurmish' is not allowed; allowed: local, ray" in r.stderr


def test_missing_trace_is_a_config_error(tmp_path):
    spec = parse_spec(_doc(datasets=[{"name": "d", "trace": str(tmp_path / "nope.swf")}]))
    with pytest.raises(ConfigError, match=r"^dataset 'd' \(trace = '.*nope.swf'\): .*nope.swf"):
        load_datasets(spec)


def _keys_in_subprocess(spec_path: Path) -> list[str]:
    code = textwrap.dedent(f"""
        import json
        from twinsweep.sweep.api import plan_sweep
        _, _, items = plan_sweep({str(spec_path)!r})
        print(json.dumps([[it.key, it.dataset, it.window, dict(it.axes), it.seed] for it in items]))
    """)
    env = dict(os.environ, PYTHONHASHSEED="123")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, check=True)
    return json.loads(r.stdout)


def test_expansion_order_and_keys_stable_across_processes(tmp_path):
    spec_path = write_spec(tmp_path, seeds=2, windows='[{name = "a", start = 0, duration = "1h"}, '
                                                     '{name = "b", start = "30m", duration = "1h"}]')
    spec = load_spec(spec_path)
    items = expand(spec, load_datasets(spec))
    assert len(items) == grid_size(spec)["runs"] == 2 * 2 * 2 * 2
    here = [[it.key, it.dataset, it.window, dict(it.axes), it.seed] for it in items]
    # order: window, then policy, backfill (last axis fastest), then seed
    assert [(r[2], r[3]["policy"], r[3]["backfill"], r[4]) for r in here[:5]] == [
        ("a", "fcfs", "none", 0), ("a", "fcfs", "none", 1), ("a", "fcfs", "easy", 0), ("a", "fcfs", "easy", 1),
        ("a", "sjf", "none", 0)]
    assert len({r[0] for r in here}) == len(here)
    assert _keys_in_subprocess(spec_path) == json.loads(json.dumps(here))
    # the key is run_key(config, workload, system) and changes with the trace's content
    ds = load_datasets(spec)["tiny"]
    from twinsweep.core.config import run_key

    assert items[0].key == run_key(items[0].config, ds.workload, ds.system)
    write_swf(tmp_path / "tiny.swf", n_jobs=41)
    assert expand(spec, load_datasets(spec))[0].key != items[0].key


def test_a_sweep_and_simulate_key_a_run_alike(tmp_path):
    """One run identity (core.config.run_key): the key a sweep plans is the manifest's ``run_key``
    of the same run, for a system named by the trace's file name, a generic system from the SWF
    header and a system TOML given relative to the spec's folder."""
    import shutil

    from twinsweep.core.run import simulate
    from twinsweep.core.system import SYSTEMS_DIR

    write_swf(tmp_path / "KTH-SP2-1996-2.1-cln.swf", n_jobs=12, nodes=16)
    write_swf(tmp_path / "tiny.swf", n_jobs=12)
    shutil.copy(SYSTEMS_DIR / "kth-sp2.toml", tmp_path / "mine.toml")
    win = [{"name": "w", "start": 0, "duration": "1h"}]
    spec = parse_spec(_doc(study={"name": "s", "seeds": 1}, grid={"policy": ["fcfs"], "backfill": ["easy"]},
                           datasets=[{"name": "named", "trace": "KTH-SP2-1996-2.1-cln.swf", "windows": win},
                                     {"name": "generic", "trace": "tiny.swf", "windows": win},
                                     {"name": "file", "trace": "tiny.swf", "system": "mine.toml", "windows": win}]),
                      source=str(tmp_path / "spec.toml"))
    datasets = load_datasets(spec)
    assert [datasets[d].system_ref for d in ("named", "generic", "file")] == ["kth-sp2", None, "mine.toml"]
    for item in expand(spec, datasets):
        ds = datasets[item.dataset]
        # simulate resolves the system itself where it can (by name, or from the header)
        given = ds.system if item.dataset == "file" else None
        assert simulate(item.config, workload=ds.workload, system=given).manifest["run_key"] == item.key
    # the config as `twinsweep run` builds it (no system given) keys like the sweep's (system named)
    from twinsweep.core.config import RunConfig, run_key

    named = datasets["named"]
    plain = RunConfig(data="KTH-SP2-1996-2.1-cln.swf", policy="fcfs", backfill="easy", start=0, duration=3600,
                      perturbation=spec.perturbation)
    assert run_key(plain, named.workload, named.system) == expand(spec, datasets)[0].key


def test_identical_windows_rejected(tmp_path):
    spec_path = write_spec(tmp_path, windows='[{name = "a", start = 0, duration = "1h"}, '
                                             '{name = "b", start = 0, duration = "1h"}]')
    spec = load_spec(spec_path)
    with pytest.raises(ConfigError, match="identical runs"):
        expand(spec, load_datasets(spec))


def test_dry_run_cli_prints_size_and_keys(tmp_path):
    spec_path = write_spec(tmp_path, seeds=2)
    r = subprocess.run([sys.executable, "-m", "twinsweep", "sweep", str(spec_path), "--dry-run"],
                       capture_output=True, text=True, cwd=REPO, check=True)
    assert "1 window(s) x 4 grid point(s) x 2 seed(s) = 8 runs" in r.stdout
    assert "0 complete, 8 to run" in r.stdout
    assert not (tmp_path / "out").exists()


def test_datetime_window_and_option_axes(tmp_path):
    # UnixStartTime of the test trace is 1000000000 = 2001-09-09T01:46:40Z
    spec_path = write_spec(tmp_path, seeds=1, windows='[{name = "d", start = 2001-09-09T02:16:40Z, duration = "1h"}]',
                           policies=("weighted",))
    text = spec_path.read_text().replace('sample_period = ["60s"]',
                                         'sample_period = ["60s"]\nkill = [true, false]\n"options.w_age" = [1, 2]')
    spec_path.write_text(text)
    spec = load_spec(spec_path)
    assert spec.axis_names == ("policy", "backfill", "sample_period", "kill", "options.w_age")
    items = expand(spec, load_datasets(spec))
    assert len(items) == 1 * 2 * 2 * 2
    assert {it.config.start for it in items} == {1800}
    assert {it.config.options for it in items} == {(("w_age", 1),), (("w_age", 2),)}
    assert {it.config.kill for it in items} == {True, False}
    assert items[0].label()["options.w_age"] == 1


def test_real_trace_window_end_to_end(tmp_path, data_path):
    data_path("pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz")  # skips locally when the data is absent
    from twinsweep.sweep.api import run_sweep

    p = tmp_path / "kth.toml"
    p.write_text(textwrap.dedent(f"""
        [study]
        output = "{tmp_path / 'out'}"
        [[datasets]]
        name = "kth"
        trace = "pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz"
        windows = [{{ name = "d", start = "144d", duration = "12h" }}]
        [grid]
        policy = ["fcfs"]
        backfill = ["none", "easy"]
        [backend]
        name = "local"
    """))
    res = run_sweep(p, report=False)
    assert res.ran == 2 and not res.failed
    ds = json.loads((tmp_path / "out" / "datasets.json").read_text())["kth"]
    assert ds["system"]["name"] == "kth-sp2"  # the named system listing this trace
    assert "Parallel Workloads Archive" in ds["provenance"]
    t = res.table()
    assert list(t["backfill"].sort_values()) == ["easy", "none"] and (t["start"] == 144 * 86400).all()


def test_replay_runs_once_whatever_the_backfill_axis(tmp_path):
    """replay ignores the backfill, so replay x [none, easy, conservative] is one replay run per
    window and seed (the axis's first value), counted alike by grid_size, expand and the dry run;
    the queue policies keep every backfill value."""
    from twinsweep.sweep.api import dry_run
    from twinsweep.sweep.expand import planned_item
    from twinsweep.sweep.gridcheck import repeats_a_run

    spec = load_spec(write_spec(tmp_path, seeds=2, policies=("replay", "fcfs"),
                                backfills=("none", "easy", "conservative")))
    datasets = load_datasets(spec)
    items = expand(spec, datasets)
    sizes = grid_size(spec)
    assert sizes["repeats"] == 2 and sizes["grid_points"] == 4  # replay+none, fcfs x 3
    assert len(items) == sizes["runs"] == 4 * 2
    assert sorted({(dict(it.axes)["policy"], dict(it.axes)["backfill"]) for it in items}) == [
        ("fcfs", "conservative"), ("fcfs", "easy"), ("fcfs", "none"), ("replay", "none")]
    firsts = {a: v[0] for a, v in spec.grid}
    assert repeats_a_run({"policy": "replay", "backfill": "easy"}, firsts)
    assert not repeats_a_run({"policy": "fcfs", "backfill": "easy"}, firsts)
    coords = {"dataset": items[0].dataset, "window": items[0].window, "seed": 0,
              "axes": {"policy": "replay", "backfill": "easy"}}
    assert planned_item(spec, datasets, coords) is None  # a repeated replay point is not in the plan
    assert dry_run(spec)["runs"] == 8
    # the first backfill value decides which replay point runs
    (tmp_path / "b").mkdir()
    spec2 = load_spec(write_spec(tmp_path / "b", seeds=1, policies=("replay",), backfills=("easy", "none")))
    (it,) = expand(spec2, load_datasets(spec2))
    assert dict(it.axes)["backfill"] == "easy" and grid_size(spec2)["runs"] == 1


def test_a_sweep_refused_for_its_trace_leaves_no_results_folder(tmp_path):
    """A spec whose trace does not exist fails with one error before any run; the results folder
    the sweep would have made is not left behind (empty runs/ and failed/), and an existing folder
    with files of its own keeps them."""
    from twinsweep.sweep.api import run_sweep

    spec = parse_spec(_doc(datasets=[{"name": "d", "trace": str(tmp_path / "nope.swf"),
                                      "windows": [{"name": "w", "start": "1h", "duration": "2d"}]}]))
    out = tmp_path / "results"
    with pytest.raises(ConfigError, match="nope.swf"):
        run_sweep(spec, out=out, backend="local", workers=1, report=False)
    assert not out.exists()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(ConfigError, match="nope.swf"):
        run_sweep(spec, out=mine, backend="local", workers=1, report=False)
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]  # no empty runs/ failed/ left in it


def test_a_policy_runs_once_over_every_axis_it_ignores(tmp_path):
    """replay ignores kill and the rescheduling run options too, and the queue policies ignore
    replay_oversubscribe: policy [replay, fcfs] x backfill [none, easy] x kill [true, false] x
    options.replay_oversubscribe [false, true] x options.queue_cancelled [false, true] is, by hand,
    replay 1 x 1 x 1 x 2 x 1 = 2 points and fcfs 2 x 2 x 1 x 2 = 8 points (of 32), each counted alike
    by grid_size and expand. The grid check does not build fcfs with replay_oversubscribe = true
    (it refuses that point), but does when true comes first, naming the point."""
    from twinsweep.core.errors import ConfigError

    axes = ('kill = [true, false]\n"options.replay_oversubscribe" = [false, true]\n'
            '"options.queue_cancelled" = [false, true]\n')
    path = write_spec(tmp_path, seeds=1, policies=("replay", "fcfs"), backfills=("none", "easy"))
    path.write_text(path.read_text().replace('sample_period = ["60s"]\n', 'sample_period = ["60s"]\n' + axes))
    spec = load_spec(path)
    sizes = grid_size(spec)
    assert (sizes["grid_points"], sizes["repeats"]) == (10, 22)
    items = expand(spec, load_datasets(spec))
    assert len(items) == sizes["runs"] == 10
    replay = [dict(it.axes) for it in items if dict(it.axes)["policy"] == "replay"]
    assert sorted(a["options.replay_oversubscribe"] for a in replay) == [False, True]
    assert all(a["backfill"] == "none" and a["kill"] is True and a["options.queue_cancelled"] is False for a in replay)
    fcfs = [dict(it.axes) for it in items if dict(it.axes)["policy"] == "fcfs"]
    assert len(fcfs) == 8 and all(a["options.replay_oversubscribe"] is False for a in fcfs)
    path.write_text(path.read_text().replace('"options.replay_oversubscribe" = [false, true]',
                                             '"options.replay_oversubscribe" = [true, false]'))
    with pytest.raises(ConfigError, match=r"policy=\'fcfs\'.*replay_oversubscribe applies to policy \'replay\' only, "
                                          r"not \'fcfs\'.*give false first"):
        load_spec(path)



@pytest.mark.parametrize("dataset, needle", [
    ('trace = "sub"', "spec.toml: dataset 'tiny' (trace = 'sub'): {tmp}/sub: cannot read trace file: Is a directory"),
    ('trace = "junk.swf"', "spec.toml: dataset 'tiny' (trace = 'junk.swf'): {tmp}/junk.swf: cannot detect the trace format"),
    ('trace = "tiny.swf"\nformat = "sacct"', "spec.toml: dataset 'tiny' (trace = 'tiny.swf', format = 'sacct'): "
                                             "{tmp}/tiny.swf:1: sacct header needs"),
    ('trace = "tiny.swf"\nsystem = "no-such-machine"', "spec.toml: dataset 'tiny' (system = 'no-such-machine'): "
                                                       "unknown system 'no-such-machine'; valid system names:"),
    ('trace = "tiny.swf"\nwindows = [{name = "w", start = 1990-01-01T00:00:00Z}]',
     "spec.toml: dataset 'tiny' (tiny.swf): window 'w': start 1990-01-01T00:00:00+00:00 is before the trace epoch"),
    ('trace = "tiny.swf"\nwindows = [{name = "a", start = 0, duration = "1h"}, {name = "b", start = 0, duration = "1h"}]',
     "spec.toml: datasets: tiny/a and tiny/b give identical runs"),
])
def test_an_error_found_when_the_datasets_load_names_the_spec_file_dataset_and_key(tmp_path, dataset, needle):
    """What only the trace can tell (a trace that is a folder or no trace, a format or system that
    does not fit, a window outside the trace, two windows that are one) is one error naming the spec
    file, the dataset and its key, from the dry run and the sweep alike, and the sweep writes nothing."""
    from test_sweep_support import write_swf

    write_swf(tmp_path / "tiny.swf")
    (tmp_path / "sub").mkdir()
    (tmp_path / "junk.swf").write_text("hello\nworld\n")
    spec = tmp_path / "spec.toml"
    spec.write_text(f'[study]\nname = "s"\noutput = "{tmp_path / "out"}"\n[[datasets]]\nname = "tiny"\n{dataset}\n'
                    '[grid]\npolicy = ["fcfs"]\n[backend]\nname = "local"\n')
    want = needle.format(tmp=tmp_path)
    for extra in (["--dry-run"], ["--no-progress"]):
        r = subprocess.run([sys.executable, "-m", "twinsweep", "sweep", str(spec), *extra], capture_output=True,
                           text=True, cwd=REPO)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr.startswith(f"twinsweep sweep: error: {tmp_path}/{want}"), r.stderr
        assert not (tmp_path / "out").exists()
