"""``eurora``: CINECA Eurora (2014) job traces of PA-HPC-SIM, with per-job predicted power.

Source: A. Borghesi (Univ. Bologna), ``AndreaBorghesi/PA-HPC-SIM`` (Apache-2.0), historical job
instances of the 64-node CINECA/Eurotech Eurora prototype, Mar-Apr 2014; power predictions from
Borghesi et al., "Predictive Modeling for Job Power Consumption in HPC Systems", ISC 2016 (model
outputs, **not** measurements). See ``eurora-cineca-2014/PROVENANCE.md``.

Line format (``;``-separated; the node block between ``__`` markers)::

    job_id;exe;user;queue;SUBMIT__NODE;CORES;GPUS;MICS;MEM#NODE;…#__START;END;req_nodes;req_cores;req_mem;HH:MM;NA;NA;STATE;apptype

* SUBMIT/START/END: ``YYYY-MM-DD HH:MM:SS`` local time of Bologna (Europe/Rome; converted with
  zoneinfo, so DST is honoured; a requested zone, the system file's ``timezone`` or
  ``$TWINSWEEP_TZ`` overrides: :func:`core.loaders._facility.resolve_timezone`).
* The node block lists every node used: node number (1..64), cores, GPUs, MICs and memory (KB);
  a node can appear more than once in a block (its cores then add up).
* Line checks (a TraceFormatError naming the file and 1-based line; under ``lenient`` the line is
  skipped and listed in ``Workload.skipped_lines``): the layout above with exactly 10 fields after
  the node block (a line cut short has fewer: a truncated file), SUBMIT/START/END each a valid
  ``YYYY-MM-DD HH:MM:SS`` (``2014-13-45 08:51:10`` is not), END not before START (compared as
  instants, after the zone conversion), req_nodes/req_cores/req_mem and apptype whole numbers,
  HH:MM a walltime, STATE an upper-case word.
* HH:MM is the requested walltime (→ ``time_limit``); STATE is always COMPLETED in this data (its
  README says so; kept as ``completed``); exe/user are anonymised (``xxx``/``yyy``), apptype is
  synthetic.

**Core-slot model.** Eurora jobs share nodes (2,852 of the 5,930 jobs use one core), so the twin
models it with one slot per core, like MetaCentrum: ``core/systems/eurora.toml`` has
64 × 16 = 1,024 slots and ``cores_per_node = 1``; ``procs`` = ``nodes`` = the job's cores (sum of the
node block; ``procs_unit = "nodes"``). ``node_ids`` are core slots: node ``k`` (1-based) owns slots
``[16(k−1), 16k)``; the recorded placement is replayed (jobs by recorded start, the ``c`` cores on
node ``k`` take the lowest free slots of its block, freed at the recorded end;
:func:`core.loaders.nodelist.assign_core_slots`), so concurrent jobs never share a slot; collisions
are counted in ``header["loader_slot_collisions"]``: 1 in the shipped data (job 508073
lists node 8 twice, 16 cores, while job 508018 holds 8 of its cores), which the replay places on free
slots (1 ``placement_fallbacks``). Extra columns:
``hosts`` (node numbers), ``gpus``, ``mics``, ``queue``, ``req_nodes``, ``req_cores``.

**Power.** The sibling ``eurora_job_power_predictions.csv.gz`` (``<jobid>.node129;<W>``) gives each
job's predicted average power; it is taken as the job's total (it grows with the job's cores:
median ~15 W for 1 core, ~60 W for 5-16 cores) → ``avg_power_w``; predictions ≤ 0 W (for 25 % of the
17-64-core jobs) are treated as missing (then the node model applies). ``energy_j`` = that × run
time. Jobs without a prediction keep NaN.
"""

from __future__ import annotations

import gzip
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import TraceFormatError
from ..workload import Workload
from ._facility import BadRows, int_or_na, jobs_frame, parse_naive_timestamp, resolve_timezone, to_epoch_seconds
from ._registry import TraceText, register_loader
from ._swfcore import obj_array
from .nodelist import assign_core_slots

EURORA_NODES = 64
EURORA_CORES = 16
DEFAULT_TZ = "Europe/Rome"
PREDICTIONS = "eurora_job_power_predictions.csv.gz"
PROVENANCE = ("CINECA Eurora 2014 job traces from PA-HPC-SIM (A. Borghesi, Apache-2.0); predicted job power: "
              "Borghesi et al., ISC 2016 (model outputs, not measurements)")


#: The fields after the node block (PA-HPC-SIM's historical job lines).
_TAIL = ("start", "end", "req_nodes", "req_cores", "req_mem", "HH:MM", "NA", "NA", "state", "apptype")


#: The fields of one node entry of the node block.
_NODE_FIELDS = ("node", "cores", "gpus", "mics", "mem")


def _node_field(name: str, text: str, entry: str, kind):
    """One node-entry field as ``kind`` (int or float); a ValueError naming the field otherwise."""
    try:
        return kind(text)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise ValueError(f"node entry {entry!r}: {name} {text!r} is not {what}") from None


def _split(line: str):
    parts = line.strip().split("__")
    if len(parts) != 3:
        raise ValueError("expected two '__' markers around the node block")
    head = parts[0].split(";")
    if len(head) != 5:
        raise ValueError("expected 'id;exe;user;queue;submit' before the node block")
    blocks = []
    for b in parts[1].split("#"):
        if not b.strip():
            continue
        f = b.split(";")
        if len(f) != 5:
            raise ValueError(f"node entry {b!r} is not 'node;cores;gpus;mics;mem'")
        blocks.append(tuple(_node_field(name, x, b, int) for name, x in zip(_NODE_FIELDS, f[:4]))
                      + (_node_field("mem", f[4], b, float),))
    tail = parts[2].split(";")
    if len(tail) != len(_TAIL):
        raise ValueError(f"expected {len(_TAIL)} ';'-separated fields after the node block "
                         f"({';'.join(_TAIL)}), found {len(tail)}"
                         + (" (the line is cut short: a truncated file?)" if len(tail) < len(_TAIL) else ""))
    return head, blocks, tail


def detect_eurora(trace: TraceText) -> float:
    """Score 3 when >= 80 % of the first lines split into Eurora's ``…__nodes#__…`` layout."""
    lines = [s for s in trace.data[:65536].decode("utf-8", "replace").splitlines()[:20] if s.strip()]
    if not lines:
        return 0.0
    ok = 0
    for s in lines:
        try:
            _split(s)
            ok += 1
        except ValueError:
            pass
    return 3.0 if ok >= 0.8 * len(lines) else 0.0


def _hhmm(s: str) -> float:
    """Seconds of a requested walltime ``HH:MM`` (or plain minutes). Raises ValueError otherwise."""
    t = s.strip()
    m = re.fullmatch(r"(\d+):([0-5]\d)|(\d+)", t)
    if not m:
        raise ValueError(f"walltime (HH:MM) {t!r} is not HH:MM")
    if m.group(3) is not None:
        return float(int(m.group(3)) * 60)
    return float(int(m.group(1)) * 3600 + int(m.group(2)) * 60)


def _check_line(head, blocks, tail) -> dict:
    """The checked values of one split line (ValueError naming the field otherwise): the three time
    stamps (naive datetimes), the walltime (s), req_nodes/req_cores/req_mem (ints) and the state."""
    if not head[0].strip():
        raise ValueError("job_id is empty")
    if any(not (1 <= b[0] <= EURORA_NODES) for b in blocks):
        raise ValueError(f"node number outside 1..{EURORA_NODES}")
    if any(b[1] < 0 or b[2] < 0 or b[3] < 0 for b in blocks):
        raise ValueError("a node entry has a negative count of cores, GPUs or MICs")
    times = {}
    for name, text in (("SUBMIT", head[4]), ("START", tail[0]), ("END", tail[1])):
        t = parse_naive_timestamp(text, name)
        if t is None:
            raise ValueError(f"{name} is missing")
        times[name] = t
    req = {}
    for k, name in ((2, "req_nodes"), (3, "req_cores"), (4, "req_mem")):
        if not tail[k].strip().isdigit():
            raise ValueError(f"{name} {tail[k]!r} is not a whole number")
        req[name] = int(tail[k])
    state = tail[8].strip()
    if not re.fullmatch(r"[A-Z_]+", state):
        raise ValueError(f"state {tail[8]!r} is not a job state (e.g. COMPLETED)")
    if not tail[9].strip().isdigit():
        raise ValueError(f"apptype {tail[9]!r} is not a whole number (the line is cut short?)")
    return dict(times=times, walltime=_hhmm(tail[5]), state=state, **req)


def load_predictions(path: Path) -> dict[str, float]:
    """``{job id: predicted W}`` from ``<id>.<host>;<W>`` lines (plain or gzip)."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    df = pd.read_csv(io.BytesIO(raw), sep=";", header=None, names=["id", "w"], dtype={"id": str})
    ids = df["id"].astype(str).str.split(".").str[0]
    return dict(zip(ids, pd.to_numeric(df["w"], errors="coerce")))


def load_eurora(trace: TraceText, lenient: bool = False) -> Workload:
    """Load a Eurora historical job file (see the module docstring)."""
    tz, tz_where = resolve_timezone(trace, None, DEFAULT_TZ)
    rows = []
    lines: list[int] = []
    skipped: list[tuple[int, str]] = []
    for no, line in enumerate(trace.data.decode("utf-8", "replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            head, blocks, tail = _split(line)
            checked = _check_line(head, blocks, tail)
        except ValueError as exc:
            if not lenient:
                raise TraceFormatError(trace.path, no, str(exc)) from None
            skipped.append((no, str(exc)))
            continue
        rows.append((head, blocks, tail, checked))
        lines.append(no)
    # local times -> Unix s (zoneinfo rules through pandas: DST honoured)
    sub_abs = to_epoch_seconds([r[0][4].strip() for r in rows], tz)
    st_abs = to_epoch_seconds([r[2][0].strip() for r in rows], tz)
    en_abs = to_epoch_seconds([r[2][1].strip() for r in rows], tz)
    bad = BadRows(trace.path, len(rows), lines, [r[0][0].strip() for r in rows])
    bad.add(en_abs < st_abs, lambda i: f"END {rows[i][2][1].strip()} is before START {rows[i][2][0].strip()}"
                                       f" ({tz} times)")
    keep = bad.resolve(lenient, skipped)
    if not keep.all():
        rows = [r for r, k in zip(rows, keep) if k]
        sub_abs, st_abs, en_abs = sub_abs[keep], st_abs[keep], en_abs[keep]
    n = len(rows)
    epoch = int(np.floor(np.min(sub_abs))) if n else 0
    submit = np.rint(sub_abs - epoch)
    start = np.rint(st_abs - epoch)
    end = np.rint(en_abs - epoch)
    run = end - start
    cores = np.array([sum(b[1] for b in r[1]) for r in rows], dtype="float64")
    host_cores = []
    for r in rows:  # a node may appear more than once in a block: its cores add up
        hc: dict[int, int] = {}
        for b in r[1]:
            hc[b[0] - 1] = hc.get(b[0] - 1, 0) + b[1]
        host_cores.append(hc)
    st_list = [None if not np.isfinite(s) else int(s) for s in start]
    rel = [None if s is None else (s + int(r) if np.isfinite(r) and r > 0 else s + 1) for s, r in zip(st_list, run)]
    slots, collisions = assign_core_slots(st_list, rel, host_cores, EURORA_CORES, EURORA_NODES)
    pred_path = Path(trace.path).with_name(PREDICTIONS)
    preds = load_predictions(pred_path) if pred_path.exists() else {}
    ids = [r[0][0].strip() for r in rows]
    avg = np.array([preds.get(i, np.nan) for i in ids], dtype="float64")
    avg = np.where(avg > 0, avg, np.nan)
    energy = np.where(np.isfinite(run), avg * run, np.nan)

    def state(s):
        s = s.strip().upper()
        return "completed" if s == "COMPLETED" else ("failed" if s == "FAILED" else "unknown")

    cols = {
        "job_id": obj_array(ids),
        "user": obj_array([r[0][2] or None for r in rows]),
        "account": obj_array([r[0][2] or None for r in rows]),
        "submit_time": submit.astype(np.int64) if n else np.zeros(0, dtype=np.int64),
        "recorded_start_time": int_or_na(start),
        "recorded_end_time": int_or_na(end),
        "run_time": int_or_na(run),
        "time_limit": int_or_na(np.array([r[3]["walltime"] for r in rows], dtype="float64")),
        "procs": int_or_na(cores),
        "nodes": int_or_na(cores),
        "avg_power_w": avg,
        "energy_j": energy,
        "partition": obj_array([r[0][3] for r in rows]),
        "status": obj_array([state(r[3]["state"]) for r in rows]),
        "node_ids": obj_array(slots),
        "hosts": obj_array([sorted({b[0] for b in r[1]}) or None for r in rows]),
        "gpus": np.array([sum(b[2] for b in r[1]) for r in rows], dtype=np.int64),
        "mics": np.array([sum(b[3] for b in r[1]) for r in rows], dtype=np.int64),
        "queue": obj_array([r[0][3] for r in rows]),
        "req_nodes": int_or_na(np.array([r[3]["req_nodes"] for r in rows], dtype="float64")),
        "req_cores": int_or_na(np.array([r[3]["req_cores"] for r in rows], dtype="float64")),
    }
    header = {"timezone": tz, "timezone_source": tz_where, "loader_slot_collisions": collisions, "power_predictions": str(pred_path)
              if preds else None, "slots": EURORA_NODES * EURORA_CORES}
    return Workload(jobs=jobs_frame(cols), epoch=epoch, checksum=trace.checksum, source=trace.path,
                    format="eurora", header=header, procs_unit="nodes", skipped_lines=skipped,
                    provenance=PROVENANCE, timezone=tz)


register_loader("eurora", detect_eurora, load_eurora)
