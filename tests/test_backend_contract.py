"""What varies between backends lives in the Backend class (issue 12, item 1: a backend is one
file): the sweep and the tuning ask the class (``study_options``, ``batch_queue``,
``distributions_scheduler``, ``ships_files``), never the backend's name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from twinsweep.backends.base import BACKENDS, Backend, register_backend
from twinsweep.core.errors import ConfigError
from twinsweep.sweep import api
from twinsweep.sweep.spec import parse_spec
from twinsweep.sweep.store import ResultStore

ROOT = Path(__file__).resolve().parent.parent


class _Mine(Backend):
    """A plug-in backend that keeps files in the cache folder and computes distributions on its cluster."""

    name = "mine-contract"
    takes_address = True
    distributions_scheduler = "distributed"

    @classmethod
    def study_options(cls, table, results_dir, cache_dir, log=None):
        return {"scratch": str(Path(cache_dir) / "mine"), "results": str(results_dir)}

    def __init__(self, workers=None, address=None, scratch=None, results=None):
        super().__init__(workers)
        self.scratch, self.results = scratch, results

    def run(self, tasks, fn, shared=None):
        yield from ()


@pytest.fixture
def mine():
    register_backend(_Mine.name, _Mine, replace=True)
    yield _Mine
    BACKENDS.unregister(_Mine.name)


def _spec(name, **backend):
    return parse_spec({"study": {"name": "s", "seeds": 1},
                       "datasets": [{"name": "d", "trace": "x.swf"}],
                       "grid": {"policy": ["fcfs"], "backfill": ["none"]},
                       "backend": {"name": name, **backend}})


def test_a_plug_in_backend_gets_its_own_options_without_a_name_check(tmp_path, mine):
    store = ResultStore(tmp_path / "out")
    opts = api._backend_options(_spec(mine.name), store, {"extra": 1}, None)
    assert opts == {"scratch": str(store.cache_dir / "mine"), "results": str(store.root.absolute()), "extra": 1}


def test_built_in_backends_declare_what_the_sweep_used_to_test_by_name(tmp_path):
    store = ResultStore(tmp_path / "out")
    assert api._backend_options(_spec("local"), store, None, None) == {"cache_dir": str(store.cache_dir)}
    log = print
    slurm = api._backend_options(_spec("slurm", slurm={"partition": "debug"}), store, None, log)
    assert slurm == {"partition": "debug", "folder": str(store.root.absolute() / "slurm"), "log": log}
    assert api._backend_options(_spec("ray"), store, None, None) == {}
    assert [n for n in ("local", "ray", "slurm") if BACKENDS.get(n).batch_queue] == ["slurm"]
    assert [n for n in ("local", "ray", "slurm") if BACKENDS.get(n).distributions_scheduler] == ["ray"]


def test_distributions_run_where_the_backend_class_says(tmp_path, mine):
    store = ResultStore(tmp_path).create()
    store.write_json("study.json", {"backend": {"name": mine.name, "address": "tcp://h:8786"}})
    assert api.dask_target(tmp_path) == ("distributed", "tcp://h:8786")
    store.write_json("study.json", {"backend": {"name": "ray", "address": "ray://h:10001"}})
    assert api.dask_target(tmp_path) == ("ray", "ray://h:10001")
    store.write_json("study.json", {"backend": {"name": "local", "address": None}})
    assert api.dask_target(tmp_path) == (None, None)
    store.write_json("study.json", {"backend": {"name": "not-installed-here", "address": "x:1"}})
    assert api.dask_target(tmp_path) == (None, None)


def test_detach_needs_a_batch_queue_backend(tmp_path):
    with pytest.raises(ConfigError, match=r"--detach needs a batch-queue backend \(slurm\); this sweep uses 'local'"):
        api.run_sweep(_spec("local"), out=tmp_path / "o", detach=True)


def test_no_backend_name_is_tested_in_the_sweep_and_tuning_drivers():
    pat = re.compile(r"""backend\.name\s*[!=]=\s*["']|\.get\("name"\)\s*[!=]=\s*["']""")
    for rel in ("sweep/api.py", "sweep/tune/run.py", "sweep/tune/slurm_workers.py"):
        hits = [f"{rel}:{n}: {line.strip()}" for n, line in enumerate((ROOT / rel).read_text().splitlines(), 1)
                if pat.search(line)]
        assert not hits, hits


class _Checks(Backend):
    """A plug-in (not a batch queue) whose validate refuses an option; counts its calls."""

    name = "checks-contract"
    calls = 0

    def validate(self):
        type(self).calls += 1
        raise ConfigError("checks-contract option speed: 11 is more than this machine's 10")

    def run(self, tasks, fn, shared=None):
        yield from ()


def test_every_backend_s_validate_runs_before_the_sweep_writes_anything(tmp_path):
    """Backend.validate is a documented no-op hook that the sweep calls on every backend (not only
    on batch-queue ones), when some run is still to do, before the results folder is written."""
    from test_sweep_support import write_spec

    assert BACKENDS.get("local")().validate() is None and BACKENDS.get("ray")().validate() is None
    register_backend(_Checks.name, _Checks, replace=True)
    try:
        spec = write_spec(tmp_path, seeds=1, policies=("fcfs",), backfills=("none",))
        with pytest.raises(ConfigError, match="checks-contract option speed: 11"):
            api.run_sweep(spec, backend=_Checks.name, report=False)
        assert _Checks.calls == 1 and not (tmp_path / "out").exists()
        assert api.run_sweep(spec, backend="local", report=False).ran == 1
        res = api.run_sweep(spec, backend=_Checks.name, report=False)  # complete: nothing to check
        assert (res.ran, res.skipped, _Checks.calls) == (0, 1, 1)
    finally:
        BACKENDS.unregister(_Checks.name)
