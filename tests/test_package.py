"""The distribution is one namespace, ``twinsweep`` (issue 12): nothing called ``core``, ``sweep``
or ``backends`` is installed at the top of site-packages, the package data travels with it (the
quickstart's three traces included, issue 11: found by an editable and by a wheel install with no
data folder), and ``twinsweep --version`` answers."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import twinsweep

REPO = Path(__file__).resolve().parents[1]
#: The quickstart's traces as installed package data (studies/quickstart.toml's order).
QUICKSTART_BUNDLED = ["twinsweep/core/bundled/pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz",
                      "twinsweep/core/bundled/pwa-swf/SDSC-SP2-1998-4.2-cln.swf.gz",
                      "twinsweep/core/bundled/alcf-theta-dras-jobsets/real_week_1.swf.gz"]


def test_wheel_installs_only_the_twinsweep_namespace(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(REPO)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    (wheel,) = tmp_path.glob("twinsweep-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"twinsweep", f"twinsweep-{twinsweep.__version__}.dist-info"}, tops
    for must in ("twinsweep/__init__.py", "twinsweep/core/engine.py", "twinsweep/sweep/cli.py",
                 "twinsweep/backends/base.py", "twinsweep/core/loaders/swf.py",
                 "twinsweep/core/systems/kth-sp2.toml", *QUICKSTART_BUNDLED):
        assert must in names, must
    # installed from the wheel (not editable), with an empty data folder and no ../shared beside it,
    # the quickstart's traces resolve to the installed package data and load
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    empty = tmp_path / "empty"
    empty.mkdir()
    code = ("import twinsweep, json; from twinsweep.sweep.spec import load_spec; "
            "from twinsweep.sweep.expand import load_datasets; "
            f"ds = load_datasets(load_spec({str(REPO / 'studies' / 'quickstart.toml')!r})); "
            "print(json.dumps([twinsweep.__file__] + [d.path for d in ds.values()]))")
    env = dict(os.environ, PYTHONPATH=str(target), TWINSWEEP_DATA=str(empty))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=empty, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    import json

    paths = json.loads(r.stdout)
    assert paths[0].startswith(str(target))
    assert [p[len(str(target)) + 1:] for p in paths[1:]] == QUICKSTART_BUNDLED


def test_public_api_and_version():
    from twinsweep import RunConfig, simulate, write_run  # noqa: F401
    from twinsweep.core import RunConfig as R2

    assert RunConfig is R2
    r = subprocess.run([sys.executable, "-m", "twinsweep", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == f"twinsweep {twinsweep.__version__}"


def test_no_top_level_core_module_outside_the_checkout(tmp_path):
    code = "import importlib.util as u; print(u.find_spec('core'), u.find_spec('sweep'), u.find_spec('backends'))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                       env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["None", "None", "None"]


def test_quickstart_traces_resolve_to_the_bundled_copies_without_a_data_folder(tmp_path, monkeypatch):
    """TWINSWEEP_DATA at an empty folder: the quickstart's datasets are the shipped copies, which
    are the files PROVENANCE.md lists (SHA-256) and cites (archive and donors)."""
    from twinsweep.core.data import BUNDLED_DIR, resolve_data_path
    from twinsweep.sweep.expand import resolve_trace
    from twinsweep.sweep.spec import load_spec

    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("TWINSWEEP_DATA", str(data))
    monkeypatch.chdir(tmp_path)
    spec = load_spec(REPO / "studies" / "quickstart.toml")
    got = [resolve_trace(d.trace, REPO / "studies") for d in spec.datasets]
    assert [str(p.relative_to(BUNDLED_DIR)) for p in got] == [p.split("bundled/")[1] for p in QUICKSTART_BUNDLED]
    prov = (BUNDLED_DIR / "PROVENANCE.md").read_text()
    for p in got:
        assert f"`{p.relative_to(BUNDLED_DIR)}`" in prov
        assert hashlib.sha256(p.read_bytes()).hexdigest() in prov
    for cite in ("Feitelson", "Lars Malinowsky", "Victor Hazlewood", "Argonne Leadership Computing Facility"):
        assert cite in prov
    # a copy in the data folder takes precedence over the shipped one
    mine = data / "pwa-swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
    mine.parent.mkdir()
    mine.write_bytes(got[0].read_bytes())
    assert resolve_data_path("pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz") == mine
    assert not re.search(r"\bTODO\b", prov)
