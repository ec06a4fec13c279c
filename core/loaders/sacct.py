"""``sacct``: Slurm accounting dumps, ``sacct --parsable2`` (``|``-separated, one header line).

Produce one with, e.g.::

    sacct -a -X --parsable2 -S 2024-01-01 -E 2024-02-01 \\
      -o JobID,JobIDRaw,JobName,User,Account,Partition,QOS,Priority,Submit,Eligible,Start,End,\\
Elapsed,ElapsedRaw,Timelimit,TimelimitRaw,NNodes,NCPUS,AllocTRES,NodeList,State,ExitCode,ConsumedEnergyRaw

(``--parsable`` output, with a trailing ``|`` on every line, is read too). Columns are found by
name in the header (case-insensitive); any subset works as long as it has ``JobID``,
``Submit`` and either ``NNodes`` or ``NodeList``. Semantics follow the sacct manual
(https://slurm.schedmd.com/sacct.html):

Rows
    * ``123`` — a job allocation: one Workload job.
    * ``123.batch``, ``123.extern``, ``123.0``, ``123_4.1``, ``123+1.0`` — job **steps**: not jobs.
      When the allocation row has no energy, the largest ``ConsumedEnergyRaw`` of its steps is
      used (the ``extern`` step spans the whole allocation; steps are not summed because they
      overlap). Counted in ``header["sacct_step_rows"]``.
    * ``123_4`` — array task 4 of array job 123: one job (``job_id = "123_4"``, ``array_job_id``
      ``"123"``, ``array_task_id`` 4).
    * ``123_[5-10%2]``, ``123_[5,7,9-10]`` — the **pending remainder** of an array (tasks not yet
      started when sacct ran; ``%N`` is the concurrency throttle): one job per listed task, with
      no start (they never ran in this dump: ``not_run`` in the twin), ``sacct_state = PENDING``.
    * a job id listed more than once (``sacct -D`` shows every requeue): the first row is kept,
      the others are counted in ``header["sacct_duplicate_rows"]``.
    * ``123+0``, ``123+1`` — components of a **heterogeneous job**: merged into one job
      ``"123"`` (Slurm starts all components together): nodes and CPUs summed, node lists joined,
      submit/start the earliest, end the latest, time limit the largest, energy summed; the
      state is the first non-COMPLETED component state (else COMPLETED). ``het_components``
      holds their count.
Values
    * ``Unknown``, ``None``, empty → missing. A job that never started has ``Start = None`` /
      ``Unknown``; a job still running when the dump was taken has ``End = Unknown`` (start kept).
    * ``Timelimit``: ``UNLIMITED``, ``Partition_Limit``, ``INVALID`` → missing (then the system's
      default limit, else the job's run time, is imputed and flagged: DESIGN.md §3.3);
      ``[D-]HH:MM:SS``, ``MM:SS`` or plain minutes (:func:`core.durations.parse_slurm_duration`, the
      parser the Slurm backend uses too). ``TimelimitRaw`` (minutes) wins when numeric,
      except Slurm's INFINITE / NO_VAL (4294967295 / 4294967294) → missing.
    * ``Elapsed``: ``[D-]HH:MM:SS`` / ``MM:SS`` (``ElapsedRaw``, seconds, wins when present). The run
      time is ``End − Start`` when both are known, else (a started job without an end) ``Elapsed``.
      Jobs whose ``End − Start`` differs from ``Elapsed`` are counted in
      ``header["elapsed_mismatch"]`` with one warning (``Workload.warnings``): whole hours are
      the sign of the wrong time zone.
    * Still running when the dump was taken (``End = Unknown`` with a start, or ``State`` RUNNING /
      COMPLETING): trace status ``running``; its run time is ``Elapsed`` (the time it had run when
      sacct printed it), else ``dump time − Start`` (:func:`core.workload.mark_running_at_dump`). The
      dump time is a ``# dump_time: YYYY-MM-DDTHH:MM:SS`` comment line before the header (local
      time, like the rows; ``date +%FT%T`` when sacct ran), else the latest time stamp of the dump
      (its submits, starts, ends and starts + elapsed of running jobs).
    * ``NodeList``: Slurm host lists (``node[001-004,010]``), ``None assigned`` → no nodes;
      :mod:`core.loaders.nodelist` expands them; node indexes are the natural-order rank of each
      hostname among all hostnames of the dump (``header["sacct_node_names"]`` lists them).
    * ``State``: COMPLETED → completed; ``CANCELLED by uid`` → cancelled; FAILED, TIMEOUT,
      NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE, PREEMPTED → failed; RUNNING, COMPLETING →
      running; PENDING, REQUEUED, SUSPENDED … → unknown. The raw state is kept in ``sacct_state``.
    * ``ConsumedEnergyRaw`` (J) → ``energy_j``; ``avg_power_w = energy / run time``.
Times
    sacct prints local wall-clock times without an offset (``YYYY-MM-DDTHH:MM:SS``, in the TZ of
    the host that ran it). The zone (:func:`core.loaders._facility.resolve_timezone`): the one
    requested (``twinsweep run --tz``, a dataset's ``tz`` key, :func:`load_sacct`'s argument),
    else a leading ``# tz: Area/City`` comment line, else the system file's ``timezone``, else
    ``$TWINSWEEP_TZ``, else UTC; ``header["sacct_timezone"]`` / ``["timezone_source"]`` say which. Each time is
    converted with :mod:`zoneinfo`. In the DST fall-back hour a wall time occurs twice: for
    ``Start``/``End`` the pair of occurrences is chosen whose difference equals ``Elapsed``
    (first occurrences otherwise); ``Submit``/``Eligible`` take the occurrence not later than
    the start (first otherwise). Ambiguous and non-existent times are counted in
    ``header["sacct_dst_ambiguous"]`` / ``["sacct_dst_nonexistent"]``.

Columns: ``procs`` = ``nodes`` = ``NNodes`` (``procs_unit = "nodes"``; ``cpus`` holds NCPUS),
``partition`` = Partition, ``priority`` = Priority, ``user``/``account``; extra columns
``job_name``, ``qos``, ``eligible_time``, ``sacct_state``, ``exit_code``, ``hosts`` (hostnames),
``gpus`` (``gres/gpu=`` of AllocTRES), ``array_job_id``, ``array_task_id``, ``het_components``.
"""

from __future__ import annotations

import re
from datetime import datetime

import numpy as np

from ..durations import SLURM_MISSING, SLURM_UNLIMITED, parse_slurm_duration
from ..errors import TraceFormatError
from ..workload import Workload
from ._facility import (
    check_elapsed, int_or_na, is_ambiguous, jobs_frame, resolve_timezone, status_from_slurm, zone, _local_to_utc,
)
from ._registry import TraceText, register_loader
from ._swfcore import obj_array
from .nodelist import HostlistError, NodeIndex, expand_hostlist, natural_key

PROVENANCE = "Slurm accounting (sacct --parsable2) dump"

_MISSING = SLURM_MISSING
_TS_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})$")
_ID_RE = re.compile(r"^(?P<base>\d+)(?:_(?P<task>\d+|\[(?P<pend>[^\]]*)\]))?(?:\+(?P<het>\d+))?(?P<step>\..+)?$")
_TZ_LINE = re.compile(r"^#\s*(?:tz|timezone)\s*[:=]\s*(\S+)\s*$", re.I)
_DUMP_LINE = re.compile(r"^#\s*(?:dump_time|dump|recorded)\s*[:=]\s*(\S+)\s*$", re.I)
#: TimelimitRaw values that mean "no limit" (Slurm's INFINITE and NO_VAL, 32-bit).
_RAW_NO_LIMIT = {4294967295, 4294967294}


def parse_timestamp(text: str | None) -> datetime | None:
    """Naive datetime of a sacct time stamp, None for Unknown/None/empty."""
    if text is None:
        return None
    s = str(text).strip()
    if s.lower() in _MISSING:
        return None
    m = _TS_RE.match(s)
    if not m:
        raise ValueError(f"not a sacct time stamp (YYYY-MM-DDTHH:MM:SS): {text!r}")
    return datetime(*(int(x) for x in m.groups()))


def expand_array_spec(spec: str) -> list[int]:
    """Task ids of a pending array remainder ``5-10%2`` / ``5,7,9-10`` / ``1-9:2``."""
    body = spec.split("%", 1)[0]
    out: list[int] = []
    for part in body.split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", part)
        if not m:
            raise ValueError(f"bad array task spec {spec!r}")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        step = int(m.group(3)) if m.group(3) else 1
        out.extend(range(lo, hi + 1, step))
    return out


def _header_value(trace: TraceText, pattern: re.Pattern) -> str | None:
    """The value of the first leading ``#`` comment line matching ``pattern``."""
    for line in trace.data[:4096].decode("utf-8", "replace").splitlines():
        s = line.strip()
        if not s:
            continue
        if not s.startswith("#"):
            break
        m = pattern.match(s)
        if m:
            return m.group(1)
    return None


def _header_tz(trace: TraceText) -> str | None:
    return _header_value(trace, _TZ_LINE)


def detect_sacct(trace: TraceText) -> float:
    """Score 3 when the first non-comment line is a ``|``-separated header naming ``JobID`` and
    ``Submit`` (sacct --parsable/--parsable2)."""
    for line in trace.data[:65536].decode("utf-8", "replace").splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        cols = {c.strip().lower() for c in s.split("|")}
        return 3.0 if "|" in s and "jobid" in cols and "submit" in cols else 0.0
    return 0.0


def _choose_folds(start: datetime | None, end: datetime | None, elapsed: int | None, tz, counts: dict):
    """Unix seconds of start/end; for ambiguous wall times the occurrences (PEP 495 folds) are
    chosen so that ``end − start == elapsed`` when some choice does (first occurrences else)."""
    amb = [d is not None and is_ambiguous(d, tz) for d in (start, end)]
    counts["sacct_dst_ambiguous"] += sum(amb)
    choices = [(fs, fe) for fs in ((0, 1) if amb[0] else (0,)) for fe in ((0, 1) if amb[1] else (0,))]

    def conv(d, fold):
        if d is None:
            return None, False
        t, gap = _local_to_utc(d, tz, fold)
        return int(round(t)), gap

    best = None
    for fs, fe in choices:
        s, e = conv(start, fs), conv(end, fe)
        if best is None:
            best = (s, e)
        if elapsed is not None and s[0] is not None and e[0] is not None and e[0] - s[0] == elapsed:
            best = (s, e)
            break
    (s_t, gs), (e_t, ge) = best
    counts["sacct_dst_nonexistent"] += int(gs) + int(ge)
    return s_t, e_t


def load_sacct(trace: TraceText, lenient: bool = False, tz: str | None = None) -> Workload:
    """Load a ``sacct --parsable2`` dump (see the module docstring).

    Args:
        trace: the file (:func:`core.loaders.read_trace`).
        lenient: skip malformed rows (listed in ``Workload.skipped_lines``) instead of failing.
        tz: IANA zone of the dump's local times (wins over everything); None = the precedence of
            the module docstring (``trace.tz``, ``# tz:`` line, ``trace.system_tz``,
            ``$TWINSWEEP_TZ``, UTC).

    Raises TraceFormatError(path, line, detail) on a malformed row unless ``lenient``, and for a
    ``# dump_time:`` line that is not a time stamp; ConfigError for an unknown zone.
    """
    tz_name, tz_where = (tz, "requested") if tz else resolve_timezone(trace, _header_tz(trace))
    tzinfo = zone(tz_name)
    dump_text = _header_value(trace, _DUMP_LINE)
    try:
        dump_local = parse_timestamp(dump_text) if dump_text is not None else None
    except ValueError as exc:
        raise TraceFormatError(trace.path, None, f"# dump_time line: {exc}") from None
    lines = trace.data.decode("utf-8", "replace").splitlines()
    hdr_no = None
    for no, line in enumerate(lines, 1):
        if line.strip() and not line.strip().startswith("#"):
            hdr_no = no
            break
    if hdr_no is None:
        raise TraceFormatError(trace.path, None, "empty sacct dump (no header line)")
    header = [c.strip() for c in lines[hdr_no - 1].split("|")]
    trailing = header and header[-1] == ""
    if trailing:
        header = header[:-1]
    col = {c.lower(): i for i, c in enumerate(header)}
    if "jobid" not in col or "submit" not in col or not ({"nnodes", "nodelist"} & set(col)):
        raise TraceFormatError(trace.path, hdr_no, "sacct header needs JobID, Submit and NNodes or NodeList")
    ncol = len(header)
    counts = {"sacct_dst_ambiguous": 0, "sacct_dst_nonexistent": 0}
    skipped: list[tuple[int, str]] = []
    step_rows = 0
    dup_rows = 0

    def g(f, name):
        i = col.get(name)
        return f[i].strip() if i is not None and i < len(f) else None

    jobs: dict[str, dict] = {}  # key -> record (insertion = file order)
    step_energy: dict[str, float] = {}
    for no in range(hdr_no + 1, len(lines) + 1):
        raw = lines[no - 1]
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        f = raw.split("|")
        if trailing and f and f[-1] == "":
            f = f[:-1]
        try:
            if len(f) != ncol:
                raise ValueError(f"expected {ncol} '|'-separated fields, found {len(f)}")
            jid = g(f, "jobid")
            m = _ID_RE.match(jid or "")
            if not m:
                raise ValueError(f"JobID {jid!r} is not a Slurm job id")
            if m.group("step"):
                step_rows += 1
                e = g(f, "consumedenergyraw")
                key = jid.split(".", 1)[0]
                key = key.split("+", 1)[0] if "+" in key else key
                if e not in (None, "") and re.fullmatch(r"\d+(\.\d+)?", e):
                    step_energy[key] = max(step_energy.get(key, 0.0), float(e))
                continue
            submit = parse_timestamp(g(f, "submit"))
            if submit is None:
                raise ValueError("Submit is missing")
            start = parse_timestamp(g(f, "start"))
            end = parse_timestamp(g(f, "end"))
            eligible = parse_timestamp(g(f, "eligible"))
            er = g(f, "elapsedraw")
            elapsed = int(er) if er and re.fullmatch(r"\d+", er) else parse_slurm_duration(g(f, "elapsed"), "Elapsed", missing_ok=True)
            tr = g(f, "timelimitraw")
            if tr and re.fullmatch(r"\d+", tr):
                tl = None if int(tr) in _RAW_NO_LIMIT else int(tr) * 60
            else:
                tl = None if tr and tr.lower() in SLURM_UNLIMITED else parse_slurm_duration(g(f, "timelimit"), "Timelimit",
                                                                                      missing_ok=True)
            nn = g(f, "nnodes")
            nodelist = g(f, "nodelist")
            hosts = expand_hostlist(nodelist) if nodelist is not None else []
            nnodes = int(nn) if nn and re.fullmatch(r"\d+", nn) else (len(hosts) if hosts else None)
            nc = g(f, "ncpus") or g(f, "alloccpus")
            ncpus = int(nc) if nc and re.fullmatch(r"\d+", nc) else None
            tres = g(f, "alloctres") or ""
            gm = re.search(r"gres/gpu=(\d+)", tres)
            gpus = int(gm.group(1)) if gm else None
            en = g(f, "consumedenergyraw")
            energy = float(en) if en and re.fullmatch(r"\d+(\.\d+)?", en) else None
            pr = g(f, "priority")
            prio = float(pr) if pr and re.fullmatch(r"-?\d+(\.\d+)?", pr) else None
        except (ValueError, HostlistError) as exc:
            if not lenient:
                raise TraceFormatError(trace.path, no, str(exc)) from None
            skipped.append((no, str(exc)))
            continue
        s_t, e_t = _choose_folds(start, end, elapsed, tzinfo, counts)
        sub_t = _local_to_utc(submit, tzinfo, 0)[0]
        if is_ambiguous(submit, tzinfo):
            counts["sacct_dst_ambiguous"] += 1
            alt = _local_to_utc(submit, tzinfo, 1)[0]
            if s_t is not None and sub_t > s_t >= alt:
                sub_t = alt
        elig_t = None if eligible is None else _local_to_utc(eligible, tzinfo, 0)[0]
        rec = dict(
            submit=int(round(sub_t)), start=s_t, end=e_t, elapsed=elapsed, time_limit=tl, nodes=nnodes,
            cpus=ncpus, gpus=gpus, hosts=hosts, energy=energy, priority=prio,
            user=g(f, "user") or None, account=g(f, "account") or None, partition=g(f, "partition") or None,
            qos=g(f, "qos") or None, job_name=g(f, "jobname"), state=g(f, "state") or None,
            exit_code=g(f, "exitcode"), eligible=None if elig_t is None else int(round(elig_t)), line=no,
            array_job_id=None, array_task_id=None, het=1,
        )
        base, task, pend, het = m.group("base"), m.group("task"), m.group("pend"), m.group("het")
        if pend is not None:
            try:
                tasks = expand_array_spec(pend)
            except ValueError as exc:
                if not lenient:
                    raise TraceFormatError(trace.path, no, str(exc)) from None
                skipped.append((no, str(exc)))
                continue
            for t in tasks:
                r = dict(rec, start=None, end=None, elapsed=None, hosts=[], energy=None, nodes=rec["nodes"],
                         array_job_id=base, array_task_id=t, state=rec["state"] or "PENDING")
                jobs.setdefault(f"{base}_{t}", r)
            continue
        if task is not None:
            rec["array_job_id"], rec["array_task_id"] = base, int(task)
            key = f"{base}_{task}"
        else:
            key = base
        if het is not None:
            prev = jobs.get(key)
            if prev is None:
                jobs[key] = rec
            else:
                _merge_het(prev, rec)
            continue
        if key in jobs:
            dup_rows += 1  # e.g. `sacct -D` lists every requeue of a job: the first row is kept
            continue
        jobs[key] = rec
    # assemble
    keys = list(jobs)
    n = len(keys)
    names = sorted({h for k in keys for h in jobs[k]["hosts"]}, key=natural_key)
    idx = NodeIndex(names)
    epoch = min((jobs[k]["submit"] for k in keys), default=0)

    def arr(field, default=np.nan):
        return np.array([default if jobs[k][field] is None else jobs[k][field] for k in keys], dtype="float64")

    submit = arr("submit") - epoch
    start = arr("start") - epoch
    end = arr("end") - epoch
    elapsed = arr("elapsed")
    # End − Start; a started job without an end was still running at the dump: the Elapsed it had
    # reached (else core.workload.mark_running_at_dump takes dump − start); without a start, no run
    run = np.where(np.isfinite(start) & np.isfinite(end), end - start,
                   np.where(np.isfinite(start), elapsed, np.nan))
    n_mismatch, mismatch_msg = check_elapsed(trace.path, keys, start, end, elapsed, tz_name, tz_where)
    dump_t = None
    if dump_local is not None:
        dump_t = int(round(_local_to_utc(dump_local, tzinfo, 0)[0])) - int(epoch)
    energy = arr("energy")
    for i, k in enumerate(keys):
        if not np.isfinite(energy[i]) and k in step_energy:
            energy[i] = step_energy[k]
    with np.errstate(divide="ignore", invalid="ignore"):
        avgp = np.where(np.isfinite(energy) & (run > 0), energy / run, np.nan)
    nodes = arr("nodes")
    cols = {
        "job_id": obj_array(keys),
        "trace_index": np.arange(n, dtype=np.int64),
        "user": obj_array([jobs[k]["user"] for k in keys]),
        "account": obj_array([jobs[k]["account"] for k in keys]),
        "submit_time": np.rint(submit).astype(np.int64) if n else np.zeros(0, dtype=np.int64),
        "recorded_start_time": int_or_na(start),
        "recorded_end_time": int_or_na(end),
        "run_time": int_or_na(run),
        "time_limit": int_or_na(arr("time_limit")),
        "procs": int_or_na(nodes),
        "nodes": int_or_na(nodes),
        "avg_power_w": avgp,
        "energy_j": energy,
        "priority": arr("priority"),
        "partition": obj_array([jobs[k]["partition"] for k in keys]),
        "status": obj_array([status_from_slurm(jobs[k]["state"]) for k in keys]),
        "node_ids": obj_array([idx.ids(jobs[k]["hosts"]) if jobs[k]["hosts"] else None for k in keys]),
        "cpus": int_or_na(arr("cpus")),
        "gpus": int_or_na(arr("gpus")),
        "job_name": obj_array([jobs[k]["job_name"] for k in keys]),
        "qos": obj_array([jobs[k]["qos"] for k in keys]),
        "eligible_time": int_or_na(arr("eligible") - epoch),
        "elapsed": int_or_na(elapsed),
        "sacct_state": obj_array([jobs[k]["state"] for k in keys]),
        "exit_code": obj_array([jobs[k]["exit_code"] for k in keys]),
        "hosts": obj_array([list(jobs[k]["hosts"]) or None for k in keys]),
        "array_job_id": obj_array([jobs[k]["array_job_id"] for k in keys]),
        "array_task_id": int_or_na(arr("array_task_id")),
        "het_components": np.array([jobs[k]["het"] for k in keys], dtype=np.int64),
    }
    header = {"sacct_timezone": tz_name, "timezone_source": tz_where, "sacct_step_rows": step_rows,
              "sacct_duplicate_rows": dup_rows, "sacct_node_names": names, "elapsed_mismatch": n_mismatch, **counts}
    return Workload(
        jobs=jobs_frame(cols), epoch=int(epoch), checksum=trace.checksum, source=trace.path, format="sacct",
        header=header, procs_unit="nodes", skipped_lines=skipped, provenance=PROVENANCE,
        dump_time=dump_t, timezone=tz_name, warnings=[mismatch_msg] if mismatch_msg else [],
    )


def _merge_het(a: dict, b: dict) -> None:
    """Merge heterogeneous-job component ``b`` into ``a`` (see the module docstring)."""
    def mn(x, y):
        return y if x is None else (x if y is None else min(x, y))

    def mx(x, y):
        return y if x is None else (x if y is None else max(x, y))

    def add(x, y):
        return y if x is None else (x if y is None else x + y)

    a["submit"] = min(a["submit"], b["submit"])
    a["start"] = mn(a["start"], b["start"])
    a["end"] = mx(a["end"], b["end"])
    a["elapsed"] = mx(a["elapsed"], b["elapsed"])
    a["time_limit"] = mx(a["time_limit"], b["time_limit"])
    a["nodes"] = add(a["nodes"], b["nodes"])
    a["cpus"] = add(a["cpus"], b["cpus"])
    a["gpus"] = add(a["gpus"], b["gpus"])
    a["energy"] = add(a["energy"], b["energy"])
    a["hosts"] = a["hosts"] + [h for h in b["hosts"] if h not in a["hosts"]]
    if (a["state"] or "").upper().startswith("COMPLETED") and b["state"] and not b["state"].upper().startswith("COMPLETED"):
        a["state"] = b["state"]
    a["het"] += 1


register_loader("sacct", detect_sacct, load_sacct)
