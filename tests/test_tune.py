"""``twinsweep tune`` (sweep/tune/): resume without repeating finished trials, Pareto sets,
outputs, spec validation. Tiny synthetic trace, serial local backend."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pandas as pd
import optuna
import pytest

from twinsweep.core.errors import ConfigError
from twinsweep.sweep.tune import load_tune_spec, pareto_front, run_tune
from twinsweep.sweep.tune.study import interrupted_numbers


def _trace(path, n=120, seed=7):
    rng = np.random.default_rng(seed)
    lines = ["; MaxNodes: 16", "; MaxProcs: 16"]
    t = 0
    for i in range(1, n + 1):
        t += int(rng.integers(60, 1400))
        run = int(rng.integers(60, 4000))
        procs = int(rng.choice([1, 2, 4, 8, 16]))
        req = int(run * rng.uniform(1.0, 3.0))
        lines.append(f"{i} {t} -1 {run} {procs} -1 -1 {procs} {req} -1 1 {i % 7} {i % 3} -1 -1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


def _spec(tmp_path, objectives='{ bsld_mean = "min" }', trials=3, extra=""):
    trace = _trace(tmp_path / "tiny.swf")
    p = tmp_path / "tune.toml"
    p.write_text(textwrap.dedent(f"""
        [study]
        name = "tiny-tune"
        output = "{tmp_path / 'out'}"
        seeds = [0, 1]
        [perturbation]
        runtime_sigma = 0.3
        [[datasets]]
        name = "tiny"
        trace = "{trace}"
        windows = [{{ name = "w1", start = "0d", duration = "20h" }}, {{ name = "w2", start = "20h", duration = "20h" }}]
        [grid]
        policy = ["weighted"]
        backfill = ["easy"]
        [backend]
        name = "local"
        workers = 1
        [tune]
        trials = {trials}
        objectives = {objectives}
        sampler_seed = 3
        train_windows = ["w1"]
        {extra}
        [tune.params]
        "options.w_age" = {{ low = 0.0, high = 1.0 }}
        "options.w_size" = {{ low = -1.0, high = 1.0 }}
        "options.w_tlimit" = {{ low = 0.0, high = 1.0 }}
    """))
    return p


class Counter:
    """Run function that records the keys it simulates and can stop the tuning after n calls."""

    def __init__(self, stop_after=None):
        self.keys, self.stop_after = [], stop_after

    def __call__(self, payload, shared):
        from twinsweep.sweep.runner import execute_run

        if self.stop_after is not None and len(self.keys) >= self.stop_after:
            raise KeyboardInterrupt
        self.keys.append(payload["key"])
        return execute_run(payload, shared)


def _study(out, name="tiny-tune"):
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    return optuna.load_study(study_name=name, storage=JournalStorage(JournalFileBackend(str(out / "optuna.journal"))))


def test_resume_without_repeating_finished_trials(tmp_path):
    spec = _spec(tmp_path, trials=3)
    out = tmp_path / "out"
    first = Counter(stop_after=5)  # trials 0 and 1 (2 runs each: w1 x 2 seeds) finish, trial 2 is cut
    with pytest.raises(KeyboardInterrupt):
        run_tune(spec, run_fn=first, test=False)
    study = _study(out)
    states = [t.state for t in study.trials]
    assert states == [optuna.trial.TrialState.COMPLETE] * 2 + [optuna.trial.TrialState.RUNNING]
    done_keys = {k for t in study.trials[:2] for k in t.user_attrs["run_keys"]}
    values_before = [t.values for t in study.trials[:2]]
    cut_params = study.trials[2].params
    assert study.trials[0].user_attrs["seeds"] == [0, 1]
    assert study.trials[0].user_attrs["windows"] == ["tiny/w1"]

    second = Counter()
    res = run_tune(spec, run_fn=second, trials=4, test=False)
    assert res.complete == 4 and not res.interrupted
    assert not done_keys & set(second.keys), "finished trials were run again"
    # the cut trial is evaluated again with its parameters; its finished run is reused: 1 + 2 new runs
    assert len(second.keys) == 3 and res.executed == 3
    study = _study(out)
    assert [t.values for t in study.trials[:2]] == values_before
    assert study.trials[2].state == optuna.trial.TrialState.FAIL and interrupted_numbers(study) == {2}
    # the mark (kept on the study: public Optuna API) shows in trials.csv as a user-attribute column
    trials_csv = pd.read_csv(out / "trials.csv")
    assert trials_csv.set_index("number")["user_attrs_interrupted"].fillna(False).to_dict() == \
        {0: False, 1: False, 2: True, 3: False, 4: False}
    assert study.trials[3].params == cut_params and study.trials[3].user_attrs["resumed_from"] == 2
    # nothing left to do: a third call evaluates no trial and simulates nothing
    third = Counter()
    res = run_tune(spec, run_fn=third, trials=4, test=False)
    assert res.ran_trials == 0 and third.keys == []


def test_multi_objective_pareto(tmp_path):
    spec = _spec(tmp_path, objectives='{ ramp_15min_p95_w = "min", bsld_mean = "min" }', trials=8)
    res = run_tune(spec)
    assert res.complete == 8
    best = res.best
    assert best, "no Pareto set"
    vals = [tuple(b["values"]) for b in best]
    assert sorted(pareto_front(vals, ["minimize", "minimize"])) == list(range(len(vals)))  # mutually non-dominated
    study = _study(tmp_path / "out")
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    numbers = {b["number"] for b in best}
    for t in done:  # every other trial is dominated by a member of the set
        if t.number in numbers:
            continue
        assert any(all(b[k] <= t.values[k] for k in range(2)) and any(b[k] < t.values[k] for k in range(2))
                   for b in vals)
    # test window values for each winner, outputs written
    for b in best:
        assert b["test_windows"] == ["tiny/w2"] and len(b["test_values"]) == 2
    out = tmp_path / "out"
    for name in ("best.json", "trials.csv", "pareto.png", "winners.toml"):
        assert (out / name).exists(), name
    doc = json.loads((out / "best.json").read_text())
    assert doc["sampler"] == "nsga2" and doc["seeds"] == [0, 1] and len(doc["best"]) == len(best)
    # winners.toml is a valid study spec with one grid point per winner, on all windows
    from twinsweep.sweep.api import plan_sweep
    from twinsweep.sweep.spec import load_spec

    _, _, items = plan_sweep(load_spec(out / "winners.toml"))
    assert len(items) == len(best) * 2 * 2  # winners x windows x seeds


def test_single_objective_history_and_sqlite(tmp_path):
    spec = _spec(tmp_path, trials=3)
    url = f"sqlite:///{tmp_path / 'tune.db'}"
    res = run_tune(spec, storage=url)
    assert res.storage == url and res.complete == 3 and len(res.best) == 1
    assert (tmp_path / "out" / "history.png").exists()
    b = res.best[0]
    assert b["values"][0] == min(t.values[0] for t in optuna.load_study(study_name="tiny-tune", storage=url).trials)
    assert len(b["test_values"]) == 1


def test_pareto_front_helper():
    pts = [(1, 5), (2, 2), (5, 1), (3, 3), (2, 2)]
    assert pareto_front(pts, ["minimize", "minimize"]) == [0, 1, 2, 4]
    assert pareto_front([(1, 1), (2, 2)], ["maximize", "maximize"]) == [1]


@pytest.mark.parametrize("extra_grid, params, tune_extra, match", [
    ('policy = ["weighted", "fcfs"]', '"options.w_age" = { low = 0.0, high = 1.0 }', "", "fixes every grid axis"),
    ("", '"w_age" = { low = 0.0, high = 1.0 }', "", "options.<name>"),
    ("", '"options.w_age" = { low = 1.0, high = 0.0 }', "", "low must be < high"),
    ("", '"options.w_age" = { low = 0.0, high = 1.0 }', 'objectives = ["speed"]', "not a metric"),
    ("", '"options.w_age" = { low = 0.0, high = 1.0 }', 'train_windows = ["nope"]', "no window 'nope'"),
    # a misspelt tuned option: refused when the spec is read, as a sweep's grid.options.<name> is
    ("", '"options.w_agee" = { low = 0.0, high = 1.0 }', "", r"tune\.params: .*unknown option 'w_agee'"),
    ("", '"options.backfill_depth" = { low = 0.0, high = 1.0 }', "", r"tune\.params: .*unknown option"),
    # a metric only the cooling model fills, in a study without it: every trial would fail
    ("", '"options.w_age" = { low = 0.0, high = 1.0 }', 'objectives = ["bsld_mean", "pue_avg"]',
     r"bad\.toml: tune\.objectives: 'pue_avg' is filled only by runs with the cooling model, and no grid point has "
     r"cooling = true \(add cooling = \[true\] to \[grid\], or remove it\)$"),
])
def test_spec_errors(tmp_path, extra_grid, params, tune_extra, match):
    trace = _trace(tmp_path / "t.swf", n=10)
    grid = extra_grid or 'policy = ["weighted"]'
    obj = "" if "objectives" in tune_extra else 'objectives = ["bsld_mean"]'
    p = tmp_path / "bad.toml"
    p.write_text(f'[study]\nname = "x"\n[[datasets]]\ntrace = "{trace}"\n[grid]\n{grid}\n'
                 f'[tune]\n{obj}\n{tune_extra}\n[tune.params]\n{params}\n')
    with pytest.raises(ConfigError, match=match):
        load_tune_spec(p)


def test_cli_tune(tmp_path, capsys):
    import re

    from twinsweep.sweep.cli import main

    spec = _spec(tmp_path, objectives='{ bsld_mean = "min", utilization = "max" }', trials=2)
    assert main(["tune", str(spec), "--trials", "2", "--out", str(tmp_path / "cli")]) == 0
    out, err = capsys.readouterr()
    assert "best trial" in out and "optuna-dashboard" in out
    assert (tmp_path / "cli" / "best.json").exists()
    # every objective named (catalogue label, unit), rounded, and "minimise"/"maximise" in words
    for text in (out, err):
        assert "values [" not in text
        assert "mean bounded slowdown" in text and "(minimise)" in text and "(maximise)" in text
    trial_lines = [ln for ln in err.splitlines() if ln.startswith("trial ")]
    assert len(trial_lines) == 2
    for ln in trial_lines:
        bsld = re.search(r"mean bounded slowdown ([0-9,.]+) \(minimise\)", ln).group(1)
        assert len(bsld.replace(",", "").replace(".", "").lstrip("0")) <= 3  # 3 significant digits
        assert re.search(r"utilisation [0-9.]+ % \(maximise\)", ln)
    # optuna-dashboard reads the metric names from the study
    assert _study(tmp_path / "cli").metric_names == ["bsld_mean", "utilization"]


def test_objective_labels_read_as_metrics_not_minutes(tmp_path):
    spec = load_tune_spec(_spec(tmp_path, objectives='{ wait_mean_s = "min", bsld_mean = "min" }'))
    assert spec.objective_label(0) == "mean wait [h] (minimise)"
    assert spec.objective_label(1) == "mean bounded slowdown (minimise)"
    assert spec.objective_value(0, 7200.0) == 2.0  # axes in the display unit
    assert spec.format_values([5400.0, 6.75692]) == "mean wait 1.50 h (minimise); mean bounded slowdown 6.76 (minimise)"


def _misspelt(tmp_path):
    spec = _spec(tmp_path)
    spec.write_text(spec.read_text().replace('"options.w_tlimit"', '"options.w_tlimitt"'))
    return spec


def test_misspelt_tuned_option_stops_before_any_run_or_folder(tmp_path, capsys):
    """Issue trialL item 1: a tuned parameter that names no option of the policy is one error when
    the spec is read (the sweep's option check, sweep.gridcheck), not a failure in every trial;
    nothing is created, nothing runs."""
    from twinsweep.sweep.cli import main

    spec = _misspelt(tmp_path)
    calls = Counter()
    with pytest.raises(ConfigError, match=r"tune\.params: .*unknown option 'w_tlimitt'; valid options: .*w_tlimit"):
        run_tune(spec, run_fn=calls)
    assert calls.keys == [] and not (tmp_path / "out").exists()
    assert main(["tune", str(spec), "--trials", "2"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("twinsweep tune: error: ") and len(err.strip().splitlines()) == 1
    assert str(spec) in err and "tune.params" in err and "w_tlimitt" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


class FailFirst:
    """Run function whose first ``n`` runs raise (serial backend: they are trial 0's runs)."""

    def __init__(self, n):
        from twinsweep.sweep.runner import execute_run

        self.n, self.calls, self.run = n, 0, execute_run  # the real one, before a test patches it

    def __call__(self, payload, shared):
        self.calls += 1
        if self.calls <= self.n:
            raise RuntimeError("boom in a run")
        return self.run(payload, shared)


def test_failed_trials_are_counted_and_make_the_cli_exit_1(tmp_path, capsys, monkeypatch):
    """Issue trialL item 1: trials whose runs failed are counted in the result and the summary
    line, and `twinsweep tune` exits 1 as `twinsweep sweep` does when runs failed (the outputs are
    still written). A later session without failures exits 0 and still shows the study's failed
    trial."""
    from twinsweep.sweep import runner
    from twinsweep.sweep.cli import main

    spec = _spec(tmp_path, trials=2)
    res = run_tune(spec, run_fn=FailFirst(2), test=False)  # trial 0: both its runs (w1 x 2 seeds) fail
    assert res.ran_trials == 2 and res.failed_trials == 1 and res.failed_in_study == 1 and res.complete == 2
    states = [t.state for t in _study(tmp_path / "out").trials]
    assert states == [optuna.trial.TrialState.FAIL, optuna.trial.TrialState.COMPLETE]

    monkeypatch.setattr(runner, "execute_run", FailFirst(2))  # what the CLI runs (serial: in this process)
    assert main(["tune", str(spec), "--trials", "2", "--no-test", "--out", str(tmp_path / "cli")]) == 1
    out, err = capsys.readouterr()
    assert "2 trial(s) evaluated now, 1 failed" in out and "failed:  1 trial(s)" in out
    assert "FAILED" in err and "boom in a run" in err and "Traceback" not in err + out
    assert (tmp_path / "cli" / "trials.csv").exists() and (tmp_path / "cli" / "failed").is_dir()

    monkeypatch.undo()  # the real run function again
    assert main(["tune", str(spec), "--trials", "3", "--no-test", "--out", str(tmp_path / "cli")]) == 0
    out, _ = capsys.readouterr()
    assert "1 trial(s) evaluated now, 0 failed" in out and "3 finished in the study (1 failed)" in out


@pytest.mark.parametrize("url, where, why", [
    ("postgres://nowhere/db", "tune.storage", 'SQLAlchemy has no dialect \'postgres\'.*spells it "postgresql://"'),
    ("sqlite:////nonexistent-folder-twinsweep/sub/tune.db", "tune.storage", "unable to open database file"),
    ("nosuchdialect+x://host/db", "tune.storage", "SQLAlchemy has no dialect"),
])
def test_bad_storage_is_one_error_before_anything_is_created(tmp_path, capsys, url, where, why):
    """Issue trialL item 2: a storage URL that cannot be opened is one line naming tune.storage
    (or --storage) and why, before the output folder exists; no traceback."""
    from twinsweep.sweep.cli import main

    spec = _spec(tmp_path, extra=f'storage = "{url}"')
    calls = Counter()
    with pytest.raises(ConfigError, match=f"{where}: cannot open the Optuna storage .*{why}"):
        run_tune(spec, run_fn=calls)
    assert calls.keys == [] and not (tmp_path / "out").exists()
    assert main(["tune", str(spec), "--trials", "2"]) == 2
    _, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1 and f"{spec}: tune.storage: cannot open" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()
    # the same URL given on the command line is named as the option
    good = _spec(tmp_path)
    assert main(["tune", str(good), "--trials", "2", "--storage", url]) == 2
    _, err = capsys.readouterr()
    assert err.startswith("twinsweep tune: error: --storage: cannot open the Optuna storage")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("param, match", [
    # an integer parameter's step is an integer (int(0.5) would be a step of 0, Optuna's error mid-trial)
    ('{ low = -1, high = 1, int = true, step = 0.5 }',
     r"'options.w_age'.step: an integer parameter needs an integer step, got 0.5"),
    # 1 - (-1) = 2 = 6 x 0.3 + 0.2: Optuna would lower high to 0.8 with a warning only
    ('{ low = -1.0, high = 1.0, step = 0.3 }', r"'options.w_age'.step: high - low = 2 is not a multiple of step 0.3"),
    # step > high - low: Optuna would fix the parameter at low
    ('{ low = 0.0, high = 1.0, step = 5.0 }', r"'options.w_age'.step: high - low = 1 is not a multiple of step 5"),
    ('{ low = 0, high = 7, int = true, step = 2 }',
     r"'options.w_age'.step: high - low = 7 is not a multiple of step 2"),
])
def test_step_that_cannot_reach_high_is_one_error(tmp_path, param, match):
    trace = _trace(tmp_path / "t.swf", n=10)
    p = tmp_path / "bad.toml"
    p.write_text(f'[study]\nname = "x"\n[[datasets]]\ntrace = "{trace}"\n[grid]\npolicy = ["weighted"]\n'
                 f'[tune]\nobjectives = ["bsld_mean"]\n[tune.params]\n"options.w_age" = {param}\n')
    with pytest.raises(ConfigError, match=match):
        load_tune_spec(p)
    # steps that divide the range exactly (2 = 20 x 0.1 in decimals; 6 = 3 x 2) are accepted
    for ok in ('{ low = -1.0, high = 1.0, step = 0.1 }', '{ low = 0, high = 6, int = true, step = 2 }'):
        p.write_text(p.read_text().replace(f'"options.w_age" = {param}', f'"options.w_age" = {ok}'))
        param = ok
        assert load_tune_spec(p).params[0].step in (0.1, 2.0)


def test_unwritable_journal_is_one_error_before_anything_is_created(tmp_path, capsys):
    from twinsweep.sweep.cli import main

    afile = tmp_path / "afile"
    afile.write_text("x")
    cases = [(str(afile / "sub" / "t.journal"), f"{afile} is a file, not a folder"),
             (str(tmp_path), "it is a folder")]
    for path, why in cases:
        spec = _spec(tmp_path, extra=f'storage = "{path}"')
        calls = Counter()
        with pytest.raises(ConfigError, match=f"tune.storage: cannot write the Optuna journal file .*{why}"):
            run_tune(spec, run_fn=calls)
        assert calls.keys == [] and not (tmp_path / "out").exists() and not (afile.parent / "sub").exists()
        assert main(["tune", str(spec), "--trials", "1"]) == 2
        _, err = capsys.readouterr()
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and f"{spec}: tune.storage" in err
        assert not (tmp_path / "out").exists()
    good = _spec(tmp_path)
    assert main(["tune", str(good), "--trials", "1", "--storage", str(afile / "t.journal")]) == 2
    _, err = capsys.readouterr()
    assert err.startswith("twinsweep tune: error: --storage: cannot write the Optuna journal file")
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".twinsweep-probe-*"))
    # a journal file elsewhere in a writable folder (created on the way) works
    res = run_tune(good, trials=1, test=False, storage=str(tmp_path / "j" / "t.journal"))
    assert res.complete == 1 and (tmp_path / "j" / "t.journal").exists()


def test_resume_with_other_seeds_or_windows_is_refused(tmp_path):
    """Trials evaluated on seeds [0, 1] and new ones on [0] would share one best trial / Pareto
    front with incomparable values: the second session is refused, naming what differs."""
    spec = _spec(tmp_path, trials=2)
    run_tune(spec, test=False)
    study = _study(tmp_path / "out")
    assert study.user_attrs["evaluation"]["seeds"] == [0, 1]
    text = spec.read_text()
    spec.write_text(text.replace("seeds = [0, 1]", "seeds = [0]"))
    calls = Counter()
    with pytest.raises(ConfigError, match=r"with other settings \(seeds \[0, 1\], this spec \[0\]\)"):
        run_tune(spec, run_fn=calls, trials=3, test=False)
    spec.write_text(text.replace('"20h", duration = "20h"', '"21h", duration = "20h"').replace(
        'train_windows = ["w1"]', 'train_windows = ["w1", "w2"]'))
    with pytest.raises(ConfigError, match=r"train_windows \['tiny/w1'\], this spec \['tiny/w1', 'tiny/w2'\]"):
        run_tune(spec, run_fn=calls, trials=3, test=False)
    spec.write_text(text.replace("runtime_sigma = 0.3", "runtime_sigma = 0.2"))
    with pytest.raises(ConfigError, match=r"perturbation.runtime_sigma 0.3, this spec 0.2"):
        run_tune(spec, run_fn=calls, trials=3, test=False)
    assert calls.keys == [] and len(_study(tmp_path / "out").trials) == 2
    # the same spec resumes
    spec.write_text(text)
    assert run_tune(spec, run_fn=calls, trials=3, test=False).complete == 3 and len(calls.keys) == 2


def test_summary_counts_the_winners_test_runs(tmp_path):
    """Two trials (1 train window x 2 seeds = 2 runs each, distinct parameters), one objective: one
    winner, run on the test window x 2 seeds = 2 runs more; executed = 2 x 2 + 2 = 6."""
    spec = _spec(tmp_path, trials=2)
    calls = Counter()
    res = run_tune(spec, run_fn=calls)
    assert len(res.best) == 1 and res.best[0]["test_values"] is not None
    assert len(calls.keys) == 6 and res.executed == 6
    assert len(list((tmp_path / "out" / "runs").iterdir())) == 6


def test_winners_keep_the_weights_the_grid_fixes(tmp_path):
    """A grid fixing "options.weights" = ["fairshare=0.5"] and several weight winners: each
    winner's table in winners.toml carries fairshare = 0.5 beside its tuned weights (it replaces
    the grid's value; without it the re-run would drop w_fairshare and give other values)."""
    import tomllib

    from twinsweep.core.policies.weighted import WeightedOptions
    from twinsweep.sweep.tune.winners import write_winners

    spec_path = _spec(tmp_path)
    spec_path.write_text(spec_path.read_text().replace('backfill = ["easy"]',
                                                       'backfill = ["easy"]\n"options.weights" = ["fairshare=0.5"]'))
    spec = load_tune_spec(spec_path)
    best = [{"number": 3, "params": {"options.w_age": 0.25, "options.w_size": -0.5, "options.w_tlimit": 0.0},
             "values": [1.0, 2.0]},
            {"number": 7, "params": {"options.w_age": 1.0, "options.w_size": 0.125, "options.w_tlimit": 0.75},
             "values": [2.0, 1.0]}]
    files = write_winners(spec, tmp_path, best)
    doc = tomllib.loads(files["winners.toml"].read_text())
    assert doc["grid"]["options.weights"] == [
        {"fairshare": 0.5, "age": 0.25, "size": -0.5, "tlimit": 0.0},
        {"fairshare": 0.5, "age": 1.0, "size": 0.125, "tlimit": 0.75}]
    from twinsweep.sweep.api import plan_sweep
    from twinsweep.sweep.spec import load_spec

    _, _, items = plan_sweep(load_spec(files["winners.toml"]))
    folded = {tuple(sorted(WeightedOptions.prepare(dict(it.config.options)).items())) for it in items}
    assert folded == {(("w_age", 0.25), ("w_fairshare", 0.5), ("w_size", -0.5), ("w_tlimit", 0.0)),
                      (("w_age", 1.0), ("w_fairshare", 0.5), ("w_size", 0.125), ("w_tlimit", 0.75))}


@pytest.mark.parametrize("fixed", ['{ fairshare = 0.5 }', '{ w_fairshare = 0.5 }'])
def test_winners_keep_the_weights_a_grid_table_fixes(tmp_path, fixed):
    """As above with the grid's weights given as a table, its factors with or without ``w_``: read
    as the weighted policy reads them (WeightedOptions.prepare), each winner's table carries
    fairshare = 0.5 without the prefix."""
    import tomllib

    from twinsweep.sweep.tune.winners import write_winners

    spec_path = _spec(tmp_path)
    spec_path.write_text(spec_path.read_text().replace('backfill = ["easy"]',
                                                       f'backfill = ["easy"]\n"options.weights" = [{fixed}]'))
    spec = load_tune_spec(spec_path)
    best = [{"number": 3, "params": {"options.w_age": 0.25, "options.w_size": -0.5, "options.w_tlimit": 0.0},
             "values": [1.0, 2.0]},
            {"number": 7, "params": {"options.w_age": 1.0, "options.w_size": 0.125, "options.w_tlimit": 0.75},
             "values": [2.0, 1.0]}]
    doc = tomllib.loads(write_winners(spec, tmp_path, best)["winners.toml"].read_text())
    assert doc["grid"]["options.weights"] == [
        {"fairshare": 0.5, "age": 0.25, "size": -0.5, "tlimit": 0.0},
        {"fairshare": 0.5, "age": 1.0, "size": 0.125, "tlimit": 0.75}]


def test_a_folder_that_is_not_a_tunings_is_refused_and_kept(tmp_path):
    """A tuning writes best.json, trials.csv, winners.toml ... into its output folder: a folder that
    holds such files but no tune.json (the user's own) or a sweep's results (study.json) is refused
    before anything is created in it, naming where the folder came from; its files are kept."""
    spec = _spec(tmp_path, trials=1)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "best.json").write_text("my notes")
    with pytest.raises(ConfigError) as ei:
        run_tune(spec, out=mine, backend="local", test=False)
    assert str(ei.value) == (f"--out {mine}: not a tuning's output folder (no tune.json) but it holds best.json (a "
                             "sweep's results, or files a tuning would overwrite); choose another --out")
    assert sorted(p.name for p in mine.iterdir()) == ["best.json"] and (mine / "best.json").read_text() == "my notes"
    out = tmp_path / "out"
    out.mkdir()
    (out / "study.json").write_text("{}")
    with pytest.raises(ConfigError) as ei:
        run_tune(spec, backend="local", test=False)
    assert str(ei.value).startswith(f"{spec}: study.output {out}: not a tuning's output folder (no tune.json) but it "
                                    "holds study.json")
    assert sorted(p.name for p in out.iterdir()) == ["study.json"]


def test_a_second_study_in_a_tunings_folder_is_refused_before_it_overwrites_the_first(tmp_path):
    """The folder of study 'tiny-tune' (its tune.json): a spec naming another study_name would
    overwrite best.json, trials.csv and winners.toml with its own while the journal keeps both
    (helper-57); it is refused, the first study's outputs kept; the same study goes on."""
    spec = _spec(tmp_path, trials=1)
    res = run_tune(spec, backend="local", test=False)
    before = (res.out / "best.json").read_bytes()
    (tmp_path / "b").mkdir()
    other = _spec(tmp_path / "b", trials=1, extra='study_name = "other-study"')
    with pytest.raises(ConfigError) as ei:
        run_tune(other, out=res.out, backend="local", test=False)
    assert str(ei.value) == (f"--out {res.out}: holds the outputs of tune study 'tiny-tune' (tune.json); "
                             "study 'other-study' would overwrite its best.json, trials.csv and winners.toml: choose "
                             "another --out, or study_name = 'tiny-tune' to go on with that study")
    assert (res.out / "best.json").read_bytes() == before
    assert run_tune(spec, backend="local", test=False).out == res.out  # the same study resumes
