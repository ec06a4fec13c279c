"""``swf-metacentrum``: the MetaCentrum / CERIT-SC "wagap" dialect of SWF used by the Alea simulator.

Source: MetaCentrum/CERIT-SC job log shipped with Alea (Klusáček, Tóth & Podolníková, "Complex
job scheduling simulations with Alea 4", SIMUTools 2016; https://jsspp.org/workload/).

Format: no ``;`` header; 21 whitespace-separated fields: the 18 SWF fields (field 2 = submit as an
**absolute** Unix time; fields 6, 7, 14, 16-18 are placeholders, field 10 = requested memory in
bytes, field 11 always 1), then 19 ``{id,id,…}`` = the physical node id of every allocated CPU
(one entry per CPU), 20 = queue name, 21 = PBS node spec (``1:ppn=16:cl_zewura`` …). A sibling
``<name>.swf.machines`` file (TAB separated: ``cluster_id name nodes cpus_per_node speed ram_KB``)
lists the clusters: zewura 20 × 80 cores, zegox 48 × 12 cores.

Column mapping: the standard SWF mapping (:func:`core.loaders._swfcore.swf_jobs_frame`) with

* ``epoch`` = the smallest submit time in the file, ``submit_time = field2 - epoch``;
* ``cpu_util`` NaN (field 6 is a placeholder 1, not CPU time);
* ``partition`` = ``queue`` = field 20 (``q_1d`` …); extra columns ``pbs_spec`` (field 21) and
  ``hosts`` (distinct physical node ids of field 19, list[int]);
* a negative run time (2 jobs: -(submit+1), i.e. the end was never recorded) is an impossible
  value, not a malformed line: ``run_time``/``recorded_end_time`` <NA>, ``status`` ``unknown``.

**Core-granular model and recorded placement.** Jobs share nodes here (many 1-core jobs run on
one 80-core zewura node), so the twin models this system with one *slot* per core:
``core/systems/metacentrum-wagap.toml`` has ``nodes = 2176`` slots and ``cores_per_node = 1``;
``procs`` = allocated CPUs and ``nodes = procs`` (slots). ``node_ids`` translates the recorded
physical placement into slot indexes:

1. Slot blocks follow the ``.machines`` order: cluster ``c`` node ``j`` owns slots
   ``[base_c + j·cpus_c, base_c + (j+1)·cpus_c)`` (zewura 0-1599, zegox 1600-2175).
2. Each physical node id is given a cluster: among the clusters whose cores per node hold the
   node's peak concurrent CPU count (from the recorded start/end times), the one named most
   often by ``cl_<name>`` properties (not ``^cl_…``) in the PBS specs of jobs that ran there;
   with no such vote, the smallest fitting cluster. In wagap-2013 the 44 distinct ids split into
   18 zewura nodes (1129-1135, 1238-1248; peak 80 CPUs) and 26 zegox nodes (1255-1288; peak 12).
3. Within a cluster, physical ids in ascending order take node blocks 0, 1, 2 …
4. Slots are assigned by replaying the recorded schedule: jobs in (recorded start, trace order);
   a job's slots are freed at its recorded end (a zero-length job keeps them through its start
   second, as the engine does); its ``k`` CPUs on physical node X take the ``k`` lowest free
   slots of X's block. So concurrently running jobs never share a slot, and a replay can use the
   recorded placement. Should a block be overfull (never in wagap-2013), the job gets the first
   slots of its blocks without holding them and the engine falls back to free slots; such jobs
   are counted in ``header["loader_placement"]["collisions"]``.

Jobs with no usable start or node list get ``node_ids = None``. Without a ``.machines`` file
the wagap-2013 layout above is assumed (``header["loader_placement"]["machines"] == "assumed"``).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np

from ..errors import TraceFormatError
from ..workload import Workload
from ._registry import TraceText, register_loader
from .nodelist import replay_slots
from ._swfcore import (
    build_frame, int_col, job_line_numbers, obj_array, parse_table, subset_cols, swf_jobs_frame, swf_ranges,
)
from .swf import _share_with_fields

MC_FIELDS = 21
#: (cluster_id, name, nodes, cpus_per_node) of wagap-2013, used when no ``.machines`` file is found.
DEFAULT_MACHINES = ((0, "zewura", 20, 80), (1, "zegox", 48, 12))
PROVENANCE = (
    "MetaCentrum/CERIT-SC 'wagap' job log (Czech national grid), via the Alea simulator data set "
    "(Klusáček, Tóth & Podolníková, SIMUTools 2016; jsspp.org/workload)"
)
_CL_RE = re.compile(r"(?<![\^\w])cl_([A-Za-z0-9]+)")


def detect_metacentrum(trace: TraceText) -> float:
    """Score 3.0 when >= 80 % of the first job lines have 21 fields, the first 18 numeric, and the
    19th is a ``{…}`` node list."""
    jobs = trace.sample_jobs
    if _share_with_fields(jobs, MC_FIELDS, 18) < 0.8:
        return 0.0
    braces = sum(1 for s in jobs if len(s.split()) == MC_FIELDS and s.split()[18].startswith("{") and s.split()[18].endswith("}"))
    return 3.0 if braces >= 0.8 * len(jobs) else 0.0


def machines_path(source: str) -> Path | None:
    """The sibling ``.machines`` file of a trace (``x.swf.gz`` -> ``x.swf.machines``), or None."""
    p = Path(source)
    names = [p.name + ".machines"]
    if p.suffix == ".gz":
        names.insert(0, p.name[:-3] + ".machines")
    for n in names:
        q = p.with_name(n)
        if q.exists():
            return q
    return None


def read_machines(path: Path) -> tuple[tuple[int, str, int, int], ...]:
    """Parse an Alea ``.machines`` file: ``(cluster_id, name, nodes, cpus_per_node)`` per line.

    Raises TraceFormatError naming the file and line when a line is not
    ``id name nodes cpus_per_node …`` (TAB or space separated).
    """
    out = []
    for no, line in enumerate(path.read_text(encoding="utf-8-sig", errors="replace").splitlines(), 1):
        s = line.strip()
        if not s or s.startswith((";", "#")):
            continue
        f = s.split()
        try:
            out.append((int(f[0]), f[1], int(f[2]), int(f[3])))
        except (IndexError, ValueError):
            raise TraceFormatError(str(path), no, "expected 'cluster_id name nodes cpus_per_node ...'") from None
        if out[-1][2] < 1 or out[-1][3] < 1:
            raise TraceFormatError(str(path), no, "nodes and cpus_per_node must be >= 1")
    if not out:
        raise TraceFormatError(str(path), None, "no cluster lines")
    return tuple(out)


def _parse_hosts(field: str) -> list[int]:
    body = field.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise ValueError("field 19 is not a {id,id,...} node list")
    inner = body[1:-1].strip()
    if not inner:
        return []
    return [int(x) for x in inner.split(",")]


def assign_slots(start, release, host_counts, specs, clusters):
    """Translate physical placements into collision-free slot indexes (see the module docstring).

    Args:
        start: recorded start per job (int, or None when unknown).
        release: time from which the job's slots are free again (int; = start for unknown end).
        host_counts: per job, ``{physical_id: cpus}`` (insertion-ordered).
        specs: per job, the PBS spec str (for ``cl_<name>`` votes).
        clusters: ``(cluster_id, name, nodes, cpus_per_node)`` tuples, slot blocks in this order.

    Returns:
        ``(node_ids, info)``: per job a sorted list of slot indexes or None; ``info`` describes the
        host -> (cluster, node, first slot) map, total slots and collision counts.
    """
    n = len(start)
    # peak concurrent CPUs per physical host
    events = []
    for j in range(n):
        if start[j] is None:
            continue
        for h, k in host_counts[j].items():
            events.append((release[j], 0, h, -k))
            events.append((start[j], 1, h, k))
    events.sort()
    cur: Counter = Counter()
    peak: Counter = Counter()
    for _, _, h, k in events:
        cur[h] += k
        if cur[h] > peak[h]:
            peak[h] = cur[h]
    votes: dict[int, Counter] = {}
    names = {c[1]: c for c in clusters}
    for j in range(n):
        vs = [m for m in _CL_RE.findall(specs[j] or "") if m in names]
        for h in host_counts[j]:
            votes.setdefault(h, Counter()).update(vs)
    all_hosts = sorted({h for hc in host_counts for h in hc})
    assigned: dict[str, list[int]] = {c[1]: [] for c in clusters}
    order = sorted(clusters, key=lambda c: (c[3], c[0]))  # smallest node first
    for h in all_hosts:
        p = peak.get(h, 0)
        cands = [c for c in order if c[3] >= p]
        v = votes.get(h, Counter())
        if cands:
            voted = [c for c in cands if v.get(c[1], 0) > 0]
            choice = max(voted, key=lambda c: (v[c[1]], -c[0])) if voted else cands[0]
        else:
            choice = max(clusters, key=lambda c: (c[3], -c[0]))
        assigned[choice[1]].append(h)
    host_map: dict[int, tuple[str, int, int, int]] = {}  # host -> (cluster, node index, first slot, cpus)
    base = 0
    overflow: list[int] = []
    for cid, name, nodes, cpus in clusters:
        hs = assigned[name]
        for idx, h in enumerate(hs):
            if idx < nodes:
                host_map[h] = (name, idx, base + idx * cpus, cpus)
            else:
                overflow.append(h)
        base += nodes * cpus
    total_slots = base
    # hosts beyond a cluster's node count: a free block of another cluster that fits their peak
    used = {(v[0], v[1]) for v in host_map.values()}
    for h in overflow:
        base = 0
        for cid, name, nodes, cpus in clusters:
            if cpus >= peak.get(h, 0):
                free_idx = next((i for i in range(nodes) if (name, i) not in used), None)
                if free_idx is not None:
                    host_map[h] = (name, free_idx, base + free_idx * cpus, cpus)
                    used.add((name, free_idx))
                    break
            base += nodes * cpus
    node_ids, collisions, unplaced = replay_slots(start, release, host_counts,
                                                  {h: (v[2], v[3]) for h, v in host_map.items()})
    info = {
        "slots": total_slots,
        "clusters": [{"id": c[0], "name": c[1], "nodes": c[2], "cpus_per_node": c[3]} for c in clusters],
        "hosts": {str(h): {"cluster": v[0], "node": v[1], "first_slot": v[2], "peak_cpus": int(peak.get(h, 0))}
                  for h, v in sorted(host_map.items())},
        "collisions": collisions,
        "unplaced_jobs": unplaced,
    }
    return node_ids, info


def load_metacentrum(trace: TraceText, lenient: bool = False) -> Workload:
    """Load a MetaCentrum/Alea SWF file (21 fields) and its sibling ``.machines`` file.

    See the module docstring for the mapping and the slot model of ``node_ids``.

    Raises TraceFormatError(path, line, detail) on a malformed job line (including a bad node
    list in field 19) unless ``lenient``.
    """
    df, skipped = parse_table(trace, MC_FIELDS, (18, 19, 20), lenient,
                              swf_ranges(absolute_submit=True, negative_run_time=True))
    a = df[list(range(18))].to_numpy(dtype=np.float64)
    hosts_txt = df[18].astype(str).tolist()
    queue = np.array(df[19].astype(str).tolist(), dtype=object)
    spec = np.array(df[20].astype(str).tolist(), dtype=object)
    n = len(a)
    host_lists: list[list[int] | None] = []
    bad_rows = []
    for i, txt in enumerate(hosts_txt):
        try:
            host_lists.append(_parse_hosts(txt))
        except ValueError:
            host_lists.append(None)
            bad_rows.append(i)
    keep = np.ones(n, dtype=bool)
    run = a[:, 3]
    neg = np.flatnonzero(run < -1)  # impossible negative run time (end never recorded)
    # row i of ``a`` came from line lines[i] (the lines parse_table left out aside): one scan of the file
    lines = job_line_numbers(trace.data, skipped) if bad_rows or neg.size else None
    if bad_rows:
        if not lenient:
            raise TraceFormatError(trace.path, int(lines[bad_rows[0]]),
                                   f"field 19 is not a {{id,id,...}} node list: {hosts_txt[bad_rows[0]][:40]!r}")
        skipped = sorted(skipped + [(int(lines[i]), "field 19 is not a {id,id,...} node list") for i in bad_rows])
        keep[bad_rows] = False
    epoch = int(np.rint(a[keep, 1].min())) if keep.any() else 0
    cols, code = swf_jobs_frame(a, epoch)
    cols["status"][run < -1] = "unknown"
    notes = []
    neg = neg[keep[neg]]  # a row lenient mode dropped above is said there, not here
    if neg.size:  # said, not dropped silently: such a job is in no figure of a run
        at = lines[neg]
        notes.append(f"{Path(trace.path).name}: {neg.size:,} job(s) have a negative run time (line(s) "
                     f"{', '.join(str(int(x)) for x in at[:5])}{' ...' if neg.size > 5 else ''}; MetaCentrum writes "
                     "-(submit + 1) when the end was never recorded): read with status 'unknown' and no run time, so "
                     "no run of the twin starts them")
    cols["cpu_util"] = np.full(n, np.nan)
    cols["partition"] = queue
    cols["queue"] = queue
    cols["pbs_spec"] = spec
    procs = cols["procs"]
    cols["nodes"] = int_col(procs.to_numpy(dtype=np.float64, na_value=np.nan), ~procs.isna())
    host_counts = [dict(Counter(h)) if h else {} for h in host_lists]
    cols["hosts"] = obj_array([list(hc) if hc else None for hc in host_counts])
    # placement
    mpath = machines_path(trace.path)
    clusters = read_machines(mpath) if mpath else DEFAULT_MACHINES
    st = cols["recorded_start_time"]
    rt = cols["run_time"]
    start = [None if (pd_na or not k) else int(s) for s, pd_na, k in zip(st.to_numpy(dtype=np.float64, na_value=0),
                                                                        st.isna(), keep)]
    rt_np = rt.to_numpy(dtype=np.float64, na_value=0)
    release = [None if s is None else (s + int(r) if r > 0 else s + 1) for s, r in zip(start, rt_np)]
    node_ids, info = assign_slots(start, release, host_counts, spec.tolist(), clusters)
    info["machines"] = str(mpath) if mpath else "assumed"
    cols["node_ids"] = obj_array(node_ids)
    if not keep.all():
        cols = subset_cols(cols, keep)
    return Workload(
        jobs=build_frame(cols),
        epoch=epoch,
        checksum=trace.checksum,
        source=trace.path,
        format="swf-metacentrum",
        header={"loader_placement": info},
        procs_unit="cores",
        skipped_lines=skipped,
        provenance=PROVENANCE,
        finished_only=True,  # an SWF log records jobs as they end (twinsweep.core.workload)
        warnings=notes,
    )


register_loader("swf-metacentrum", detect_metacentrum, load_metacentrum)
