"""Trace loaders: a registry of formats and :func:`load_workload`.

Built-in formats (detected from the first lines when ``format`` is None; highest score wins):

===================  ========================================================================
``swf``              Parallel Workloads Archive SWF: >= 80 % of the first 20 job lines have 18
                     numeric fields (score 1); a header-only SWF file scores 0.5
``swf-theta``        ALCF Theta DRAS job sets: 19 fields (first 18 numeric) and the header
                     mentions Theta or DRAS (score 2)
``swf-metacentrum``  MetaCentrum/Alea dialect: 21 fields, field 19 a ``{id,...}`` node list
                     (score 3)
===================  ========================================================================

Add a format with :func:`register_loader`.
"""

from ._registry import (
    TraceText, available_formats, detect_format, load_workload, read_trace, register_loader,
)
from . import swf as _swf  # noqa: F401  (registers "swf")
from . import theta as _theta  # noqa: F401  (registers "swf-theta")
from . import metacentrum as _metacentrum  # noqa: F401  (registers "swf-metacentrum")

__all__ = [
    "TraceText", "available_formats", "detect_format", "load_workload", "read_trace", "register_loader",
]
