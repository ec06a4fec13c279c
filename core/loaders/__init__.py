"""Trace loaders: a registry of formats and :func:`load_workload`.

Built-in formats (detected from the first lines when ``format`` is None; highest score wins):

===================  ========================================================================
``swf``              Parallel Workloads Archive SWF: >= 80 % of the first 20 job lines have 18
                     numeric fields (score 1); a header-only SWF file scores 0.5; SWF header
                     keys with job lines of another shape 0.25 (the load names the bad line)
``swf-theta``        ALCF Theta DRAS job sets: 19 fields (first 18 numeric) and the header
                     mentions Theta or DRAS (score 2)
``swf-metacentrum``  MetaCentrum/Alea dialect: 21 fields, field 19 a ``{id,...}`` node list
                     (score 3)
``swf-frontier``     Frontier's public SWF variant: 21 fields, the 21st a ``name:mode:NxC``
                     descriptor (score 3)
``sacct``            Slurm ``sacct --parsable2`` dumps: a ``|`` header with JobID and Submit (3)
``pm100``            PM100 / Marconi100 ``job_table.parquet`` with power arrays (score 2)
``adastra``          the same table for Adastra MI250 (file name names Adastra/MI250; 2.5)
``fdata``            F-DATA (Fugaku) monthly parquet: adt/sdt/edt/nnumr/elpl columns (score 3)
``lassen-last``      LLNL LAST allocation-history CSV (+ per-node history beside it) (score 3)
``lassen-raps``      the RAPS Lassen snapshot (parquet / summary CSV) (score 3)
``eurora``           CINECA Eurora PA-HPC-SIM job lines (``…__node;…#__…``) (score 3)
===================  ========================================================================

Node lists: :mod:`core.loaders.nodelist`. Add a format with :func:`register_loader` (one module
that registers itself when imported; the built-ins are declared in :data:`BUILTIN_FORMATS` and
imported on first use), or as an installed plug-in through the ``twinsweep.loaders``
entry-point group (docs/plugins.md, "Add a trace format"). A format with a sample file runs the
shared conformance suite (``twinsweep.testing.conformance.LoaderConformance``; the built-ins with a
bundled sample in ``tests/test_loader_conformance.py``, a plug-in in its own tests).
"""

from ._registry import (
    LOADERS, Loader, TraceText, available_formats, detect_format, get_loader, load_workload, read_trace,
    register_loader,
)
#: The built-in formats, name -> the module that registers it, in the order that breaks detection
#: ties (:func:`detect_format`). Declared, not imported: a module loads when its format is looked up
#: or a file's format is detected, so a trace read from the parse cache imports no loader at all
#: (about 15 ms of imports of a `twinsweep run`).
BUILTIN_FORMATS = (
    ("swf", "swf"), ("swf-theta", "theta"), ("swf-metacentrum", "metacentrum"), ("sacct", "sacct"),
    ("pm100", "pm100"), ("adastra", "pm100"), ("fdata", "fdata"), ("lassen-last", "lassen"),
    ("lassen-raps", "lassen"), ("swf-frontier", "frontier_swf"), ("eurora", "eurora"),
)
for _name, _module in BUILTIN_FORMATS:
    LOADERS.declare(_name, f"{__name__}.{_module}")
del _name, _module

__all__ = [
    "LOADERS", "Loader", "TraceText", "available_formats", "detect_format", "get_loader", "load_workload",
    "read_trace", "register_loader",
]
