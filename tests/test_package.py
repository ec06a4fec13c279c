"""The distribution is one namespace, ``twinsweep`` (issue 12): nothing called ``core``, ``sweep``
or ``backends`` is installed at the top of site-packages, the package data travels with it, and
``twinsweep --version`` answers."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import twinsweep

REPO = Path(__file__).resolve().parents[1]


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
                 "twinsweep/core/systems/kth-sp2.toml"):
        assert must in names, must


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
