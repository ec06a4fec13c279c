"""twinsweep: an event-driven digital twin of an HPC batch system and a sweep engine over it.

The distribution is one namespace, ``twinsweep``, while the repository keeps the design card's
top-level folders (``core/``, ``sweep/``, ``backends/``), mapped by ``package-dir`` in
``pyproject.toml``:

==========================  ==========================================================
``twinsweep.core``          the twin: one deterministic simulation run (``core/``)
``twinsweep.backends``      how a batch of runs executes: local, Ray, Slurm (``backends/``)
``twinsweep.sweep``         studies, result store, aggregation, reports, tuning, CLI (``sweep/``)
==========================  ==========================================================

The run API is re-exported here (loaded on first use, so ``import twinsweep`` stays light)::

    from twinsweep import RunConfig, simulate, write_run
    res = simulate(RunConfig(data="pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz", policy="sjf", backfill="easy"))
"""

from __future__ import annotations

import os as _os

__version__ = "0.2.0"

# A source checkout that is not installed (``PYTHONPATH=.``): the sub-packages live beside this
# folder, not in it. An installed copy (wheel or editable) maps them itself and never needs this.
_ROOT = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "core")) \
        and _os.path.isfile(_os.path.join(_ROOT, "core", "__init__.py")):
    __path__.append(_ROOT)  # noqa: F821 - the package's own search path

_LAZY = {
    "RunConfig": "twinsweep.core.config",
    "Perturbation": "twinsweep.core.config",
    "simulate": "twinsweep.core.run",
    "write_run": "twinsweep.core.run",
    "RunResult": "twinsweep.core.run",
    "load_workload": "twinsweep.core.loaders",
    "load_system": "twinsweep.core.system",
    "run_sweep": "twinsweep.sweep.api",
}


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'twinsweep' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(mod), name)


def __dir__():
    return sorted(list(globals()) + list(_LAZY))


__all__ = ["__version__", *_LAZY]
