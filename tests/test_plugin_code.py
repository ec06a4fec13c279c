"""A run's key covers the code of the plug-ins it uses that are not twinsweep's own
(core/plugin_code.py): an edited plug-in never reuses the results of its old code, and the run's
manifest says which plug-in code produced it. Built-in runs keep the keys they had."""

from __future__ import annotations

import hashlib
import sys

import pytest

from twin_helpers import write_swf_rows
from twinsweep.core import plugin_code
from twinsweep.core.config import RunConfig, run_key
from twinsweep.core.loaders import load_workload
from twinsweep.core.metrics import plugin_metrics
from twinsweep.core.plugin_code import code_identity, plugins_identity
from twinsweep.core.policies import FCFS, POLICIES
from twinsweep.core.run import simulate
from twinsweep.core.system import system_from_swf_header

POLICY_SRC = '''
from twinsweep.core.policies import Policy


class Newest(Policy):
    """Newest submission first (a test plug-in)."""

    def key(self, job):
        return -self.jobs.submit[job]
'''


@pytest.fixture()
def plugin_pkg(tmp_path, monkeypatch):
    """A package ``tsplugtest`` on sys.path with a policy module and a helper module."""
    pkg = tmp_path / "tsplugtest"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "pol.py").write_text(POLICY_SRC)
    (pkg / "helpers.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin_code._package_digest.cache_clear()
    yield pkg
    for name in [m for m in sys.modules if m == "tsplugtest" or m.startswith("tsplugtest.")]:
        del sys.modules[name]
    POLICIES.unregister("tsplugtest.pol:Newest")
    plugin_code._package_digest.cache_clear()


def _digest(pkg) -> str:
    """The package's hash computed independently: each file's path below the package's parent
    and its bytes, in sorted order, NUL-separated."""
    h = hashlib.sha256()
    for p in sorted(pkg.rglob("*.py"), key=lambda p: f"{pkg.name}/{p.relative_to(pkg).as_posix()}"):
        h.update(f"{pkg.name}/{p.relative_to(pkg).as_posix()}".encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def _installed_metrics() -> dict:
    """The identity of the metric plug-ins installed where the suite runs (none in CI): every run
    computes them, so every run's key and manifest name their code, built-in policy or not."""
    return {f"metric:{m.name}": code_identity(m) for m in plugin_metrics()}


def test_built_ins_have_no_code_identity_and_keep_their_keys(tmp_path):
    assert code_identity(FCFS) is None
    cfg = RunConfig(data="x.swf", policy="sjf", backfill="easy")
    extra = ",".join(f"{k}={v['scope']}:{v['sha256']}" for k, v in sorted(_installed_metrics().items()))
    assert plugins_identity(cfg, "swf") == extra  # "" without installed metric plug-ins: keys as before
    assert plugins_identity(RunConfig(data="x.swf", policy="replay"), "swf") == extra
    assert plugins_identity(cfg, "no-such-format") == extra  # a Workload built in code names no loader


def test_an_edited_plug_in_changes_the_run_key_and_the_manifest_names_its_code(plugin_pkg, tmp_path):
    log = write_swf_rows(tmp_path / "t.swf", [(1, 0, 0, 100, 8), (2, 10, 0, 100, 8), (3, 20, 0, 50, 8)], max_nodes=8)
    wl = load_workload(log)
    system = system_from_swf_header(wl.header, str(log))
    cfg = RunConfig(data=str(log), policy="tsplugtest.pol:Newest", backfill="none")
    ident = code_identity(POLICIES.get(cfg.policy))
    assert ident == {"module": "tsplugtest.pol", "scope": "package", "sha256": _digest(plugin_pkg),
                     "distribution": None, "version": None}
    key = run_key(cfg, wl, system)
    assert key != run_key(RunConfig(data=str(log), policy="fcfs", backfill="none"), wl, system)
    res = simulate(cfg, wl, system)
    assert res.manifest["run_key"] == key
    assert res.manifest["plugins"] == {"policy:tsplugtest.pol:Newest": ident, **_installed_metrics()}
    assert res.jobs.sort_values("start_time")["job_id"].tolist() == ["1", "3", "2"]  # the plug-in ran: newest first
    builtin = simulate(RunConfig(data=str(log), policy="fcfs", backfill="none"), wl, system).manifest
    assert builtin.get("plugins", {}) == _installed_metrics()  # no "plugins" key without metric plug-ins

    # a helper beside the policy is edited: a new process (a cleared cache) keys the run anew
    (plugin_pkg / "helpers.py").write_text("X = 2\n")
    assert run_key(cfg, wl, system) == key  # this process still runs the code it imported
    plugin_code._package_digest.cache_clear()
    assert run_key(cfg, wl, system) != key
    assert code_identity(POLICIES.get(cfg.policy))["sha256"] == _digest(plugin_pkg)
