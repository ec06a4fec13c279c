"""Trace loaders: a registry of formats and :func:`load_workload`.

Built-in formats (detected from the first lines when ``format`` is None; highest score wins):

===================  ========================================================================
``swf``              Parallel Workloads Archive SWF: >= 80 % of the first 20 job lines have 18
                     numeric fields (score 1); a header-only SWF file scores 0.5
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
that registers itself when imported), or as an installed plug-in through the ``twinsweep.loaders``
entry-point group (docs/plugins.md, "Add a trace format"). A format with a sample file runs the
shared conformance suite (``twinsweep.testing.conformance.LoaderConformance``; the built-ins with a
bundled sample in ``tests/test_loader_conformance.py``, a plug-in in its own tests).
"""

from ._registry import (
    LOADERS, Loader, TraceText, available_formats, detect_format, get_loader, load_workload, read_trace,
    register_loader,
)
from . import swf as _swf  # noqa: F401  (registers "swf")
from . import theta as _theta  # noqa: F401  (registers "swf-theta")
from . import metacentrum as _metacentrum  # noqa: F401  (registers "swf-metacentrum")
from . import sacct as _sacct  # noqa: F401  (registers "sacct")
from . import pm100 as _pm100  # noqa: F401  (registers "pm100", "adastra")
from . import fdata as _fdata  # noqa: F401  (registers "fdata")
from . import lassen as _lassen  # noqa: F401  (registers "lassen-last", "lassen-raps")
from . import frontier_swf as _frontier_swf  # noqa: F401  (registers "swf-frontier")
from . import eurora as _eurora  # noqa: F401  (registers "eurora")

__all__ = [
    "LOADERS", "Loader", "TraceText", "available_formats", "detect_format", "get_loader", "load_workload",
    "read_trace", "register_loader",
]
