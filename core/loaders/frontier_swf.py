"""``swf-frontier``: the public Frontier (OLCF) workload trace in its 21-field SWF variant.

Source: V. Maheshwari, D. Klusáček, F. Suter, W. Brewer, "Workload Traces from the Frontier
Exascale Supercomputer", JSSPP 2026 (files ``frontier-2024.swf``, ``frontier-2025.swf``). The
field layout below is the one ExaDigiT/RAPS ``raps/dataloaders/frontier_swf.py`` reads; the paper
itself was not available here to check it against.

Fields (whitespace-separated, ``;`` header with ``UnixStartTime``): 1-18 as standard SWF (field 2
= submit time relative to ``UnixStartTime``), then 19 used GPUs (-1 = unknown), 20 soft walltime,
21 a site **descriptor** ``<system>:<mode>:<N>x<cores>`` (e.g. ``frontier:excl:2500x112``).

Node count: field 5 ("allocated nodes or cores") is inconsistent with Frontier's size (values up
to 589,824), while the descriptor's ``N`` divides the used-GPU count almost always, so ``nodes``
= ``procs`` = ``N`` (``procs_unit = "nodes"``); when a descriptor does not parse, field 5 (else
field 8) is used and the row is counted in ``header["loader_descriptor_fallbacks"]``. Extra
columns: ``gpus`` (field 19), ``soft_walltime`` (field 20), ``descriptor``, ``node_mode`` (the
descriptor's middle part, e.g. ``excl``), ``cores_per_node`` (its last number). No node lists,
no power. Otherwise the standard SWF mapping (:func:`core.loaders._swfcore.swf_jobs_frame`).
"""

from __future__ import annotations

import re

import numpy as np

from ..workload import Workload
from ._registry import TraceText, register_loader
from ._swfcore import (
    build_frame, header_epoch, int_col, obj_array, parse_table, read_swf_header, swf_jobs_frame,
)
from .swf import _share_with_fields

FRONTIER_FIELDS = 21
DESCRIPTOR_RE = re.compile(r"^([^:\s]+):([^:\s]+):(\d+)x(\d+)$")
PROVENANCE = ("Frontier (OLCF) public workload trace, SWF variant (Maheshwari, Klusáček, Suter, Brewer, "
              "JSSPP 2026)")


def detect_frontier_swf(trace: TraceText) -> float:
    """Score 3 when >= 80 % of the first job lines have 21 fields, the first 20 numeric and the
    21st a ``name:mode:NxC`` descriptor."""
    jobs = trace.sample_jobs
    if _share_with_fields(jobs, FRONTIER_FIELDS, 20) < 0.8:
        return 0.0
    ok = sum(1 for s in jobs if len(s.split()) == FRONTIER_FIELDS and DESCRIPTOR_RE.match(s.split()[20]))
    return 3.0 if ok >= 0.8 * len(jobs) else 0.0


def load_frontier_swf(trace: TraceText, lenient: bool = False) -> Workload:
    """Load a Frontier SWF file (21 fields). Raises TraceFormatError on a bad header (see
    :func:`core.loaders._swfcore.read_swf_header`) and, unless ``lenient``, on a malformed line.
    ``UnixStartTime: -1`` (unknown) is treated as absent (epoch 0), with a warning."""
    header, notes = read_swf_header(trace)
    df, skipped = parse_table(trace, FRONTIER_FIELDS, (20,), lenient)
    a = df[list(range(20))].to_numpy(dtype=np.float64)
    desc = df[20].astype(str).tolist() if len(df) else []
    cols, _ = swf_jobs_frame(a[:, :18], 0)
    n = len(a)
    parsed = [DESCRIPTOR_RE.match(d) for d in desc]
    nodes_d = np.array([float(m.group(3)) if m else np.nan for m in parsed], dtype=np.float64)
    fallback = np.isnan(nodes_d)
    alt = np.where(a[:, 4] > 0, a[:, 4], np.where(a[:, 7] > 0, a[:, 7], np.nan)) if n else np.zeros(0)
    nodes = np.where(fallback, alt, nodes_d)
    nodes_int = int_col(np.where(np.isnan(nodes), 0, nodes), ~np.isnan(nodes))
    cols["procs"] = nodes_int
    cols["nodes"] = int_col(np.where(np.isnan(nodes), 0, nodes), ~np.isnan(nodes))
    cols["cpu_util"] = np.full(n, np.nan)  # field 6 relates to field 5, not to the descriptor's nodes
    gpus = a[:, 18] if n else np.zeros(0)
    cols["gpus"] = int_col(gpus, gpus >= 0)
    soft = a[:, 19] if n else np.zeros(0)
    cols["soft_walltime"] = int_col(soft, soft > 0)
    cols["descriptor"] = obj_array(desc)
    cols["node_mode"] = obj_array([m.group(2) if m else None for m in parsed])
    cpn = np.array([float(m.group(4)) if m else np.nan for m in parsed], dtype=np.float64)
    cols["cores_per_node"] = int_col(np.where(np.isnan(cpn), 0, cpn), ~np.isnan(cpn))
    cols["swf_procs"] = int_col(a[:, 4] if n else np.zeros(0), (a[:, 4] > 0) if n else np.zeros(0, dtype=bool))
    header["loader_descriptor_fallbacks"] = int(fallback.sum())
    return Workload(
        jobs=build_frame(cols), epoch=header_epoch(header) or 0, checksum=trace.checksum,
        source=trace.path, format="swf-frontier", header=header, procs_unit="nodes", skipped_lines=skipped,
        provenance=PROVENANCE, finished_only=True,  # an SWF log records jobs as they end
        warnings=notes,
    )


register_loader("swf-frontier", detect_frontier_swf, load_frontier_swf)
