"""Benchmarks exit non-zero when a run fails and record nothing for it (issue 16 item 5): bench_sweep,
bench_overhead, bench_aggregate and bench_slurm, each on a monkeypatched failure (no real run).
(bench_twin's is tests/test_readme_figures.py::test_bench_twin_exits_nonzero_when_a_run_fails.)"""

import importlib
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


@pytest.fixture
def figures(tmp_path, monkeypatch):
    path = tmp_path / "figures.json"
    monkeypatch.setenv("TWINSWEEP_BENCH_FIGURES", str(path))
    return path


def _failed_sweep(*a, **k):
    return types.SimpleNamespace(planned=2, ran=1, failed={"k1": "ValueError: boom"}, out=Path("."))


@pytest.mark.parametrize("module, which", [("bench_sweep", "quickstart"), ("bench_sweep", "memory"),
                                           ("bench_overhead", "outputs")])
def test_failed_sweep_exits_nonzero(module, which, figures, monkeypatch, capsys):
    import twinsweep.sweep.api as api

    monkeypatch.setattr(api, "run_sweep", _failed_sweep)
    mod = importlib.import_module(module)
    assert mod.main([which]) == 1
    assert "FAILED" in capsys.readouterr().err and not figures.exists()


def test_bench_aggregate_failed_child_exits_nonzero(tmp_path, figures, monkeypatch, capsys):
    mod = importlib.import_module("bench_aggregate")
    synth = importlib.import_module("synth_sweep")
    monkeypatch.setattr(synth, "generate", lambda root, *a, **k: root)
    monkeypatch.setattr(mod.subprocess, "run",
                        lambda *a, **k: subprocess.CompletedProcess(a, 3, stdout="", stderr="child crashed"))
    with pytest.raises(SystemExit) as exc:
        mod.main(["table", "--dir", str(tmp_path)])
    assert exc.value.code == 1
    assert "FAILED: child ('table',) exited 3" in capsys.readouterr().err and not figures.exists()


def test_bench_slurm_without_slurm_exits_nonzero(figures, monkeypatch):
    import twinsweep.backends.slurm as slurm

    monkeypatch.setattr(slurm, "slurm_ready", lambda *a, **k: (False, "no sinfo (test)"))
    assert importlib.import_module("bench_slurm").main([]) == 1
    assert not figures.exists()


def test_bench_phases_times_every_phase_it_names(tmp_path, figures):
    """Each phase bench_overhead wraps still exists on the run path and is called (a renamed function
    once broke ``phases`` with an AttributeError no test saw): two runs of one quickstart dataset (the
    window, its perturbation and node power are prepared once and shared by both)."""
    spec = tmp_path / "tiny.toml"
    spec.write_text('[study]\nname = "tiny"\noutput = "out"\nseeds = 1\n\n'
                    '[[datasets]]\nname = "kth-sp2"\ntrace = "pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz"\n'
                    'windows = [{ name = "day144", start = "144d", duration = "1d" }]\n\n'
                    '[grid]\npolicy = ["fcfs"]\nbackfill = ["none", "easy"]\nsample_period = ["1m"]\n'
                    'cooling = [true]\n')
    mod = importlib.import_module("bench_overhead")
    mod.bench_phases(spec, tmp_path / "work")
    names = {name for _, _, name in mod._patches()}
    calls = {name: rec[2] for name, rec in mod._T.items()}
    assert names == set(calls) and min(calls.values()) >= 1 and calls["engine"] == 2, calls
