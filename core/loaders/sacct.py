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
      overlap). Counted in ``header["sacct_step_rows"]``. A job whose steps are listed but not its
      allocation row is not loaded (it has no submit, size or limit): counted in
      ``header["sacct_step_only_jobs"]`` and said in one warning.
    * ``123_4`` — array task 4 of array job 123: one job (``job_id = "123_4"``, ``array_job_id``
      ``"123"``, ``array_task_id`` 4).
    * ``123_[5-10%2]``, ``123_[5,7,9-10]`` — the **pending remainder** of an array (tasks not yet
      started when sacct ran; ``%N`` is the concurrency throttle): one job per listed task, with
      no start (they never ran in this dump: ``not_run`` in the twin), ``sacct_state = PENDING``.
    * a job id listed more than once (``sacct -D`` shows every requeue): the first row is kept,
      the others are counted in ``header["sacct_duplicate_rows"]`` and said in one warning
      (``Workload.warnings``: the count and the lines of one example).
    * A pending remainder's task indexes are capped at :data:`MAX_ARRAY_INDEX` (4,000,000: Slurm's
      ``MaxArraySize`` may not exceed 4000001 and indexes are below it); a larger index is a
      malformed row. Its tasks share one record until the table is built (about 10 s and 1 GB for
      a 1,000,000-task remainder, most of it the million job ids and the table's columns).
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
    * ``NNodes``, ``NCPUS`` (else ``AllocCPUS``): whole numbers; older sacct without ``--noconvert``
      prints them in units of 1024 with a suffix (``1K`` = 1024 nodes, ``1.50K`` = 1536), read back
      when whole (:func:`parse_count`). A missing ``NNodes`` is the number of hosts ``NodeList`` names.
    * ``NodeList``: Slurm host lists (``node[001-004,010]``), ``None assigned`` → no nodes;
      :mod:`core.loaders.nodelist` expands them; node indexes are the natural-order rank of each
      hostname among all hostnames of the dump (``header["sacct_node_names"]`` lists them).
    * ``State``: COMPLETED → completed; ``CANCELLED by uid`` → cancelled; FAILED, TIMEOUT,
      NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE, PREEMPTED → failed; RUNNING, COMPLETING →
      running; PENDING, REQUEUED, SUSPENDED … → unknown. The raw state is kept in ``sacct_state``.
    * ``ConsumedEnergyRaw`` (J) → ``energy_j``; ``avg_power_w = energy / run time``. ``0`` (no
      AcctGatherEnergyType plugin measured the job) and values >= 2**63 (Slurm's NO_VAL64 =
      0xfffffffffffffffe and INFINITE64 = 0xffffffffffffffff, ``slurm.h``: "no value") are
      missing, so the system's node power model gives the job's power; such jobs are counted in
      ``header["sacct_energy_unset"]`` and said in one warning. Steps with such values are ignored
      too; a heterogeneous job with an unset component has no recorded energy.
    * ``Start`` before ``Submit``: kept as recorded (the job is submitted at Submit and runs
      ``End − Start``), counted in ``header["sacct_start_before_submit"]`` and said in one warning
      naming a job and its line: the dump is not contradictory enough to refuse, but it is odd.
Malformed rows
    A TraceFormatError naming the file and 1-based line (under ``lenient`` the row is skipped and
    listed in ``Workload.skipped_lines``): a field count other than the header's; a JobID that is
    not a Slurm job id; a time stamp that is not ``YYYY-MM-DDTHH:MM:SS`` or not a real date
    (``2024-02-30``); a bad duration or host list; ``End`` before ``Start`` (compared as instants,
    after the zone and DST conversion); ``NNodes`` differing from the number of hosts ``NodeList``
    names; an ``NNodes`` / ``NCPUS`` that is not a count (``2-4``, ``1.23K``); a ``ConsumedEnergyRaw`` that is
    not a number >= 0; a bad or too large array spec.
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
from ..errors import ConfigError, TraceFormatError
from ..workload import Workload
from ._facility import (
    check_elapsed, int_or_na, is_ambiguous, jobs_frame, parse_naive_timestamp, resolve_timezone, status_from_slurm,
    zone, _local_to_utc,
)
from ._registry import TraceText, register_loader
from ._swfcore import obj_array
from .nodelist import HostlistError, NodeIndex, expand_hostlist, natural_key

PROVENANCE = "Slurm accounting (sacct --parsable2) dump"

_MISSING = SLURM_MISSING
_ID_RE = re.compile(r"^(?P<base>\d+)(?:_(?P<task>\d+|\[(?P<pend>[^\]]*)\]))?(?:\+(?P<het>\d+))?(?P<step>\..+)?$")
_TZ_LINE = re.compile(r"^#\s*(?:tz|timezone)\s*[:=]\s*(\S+)\s*$", re.I)
_DUMP_LINE = re.compile(r"^#\s*(?:dump_time|dump|recorded)\s*[:=]\s*(\S+)\s*$", re.I)
#: TimelimitRaw values that mean "no limit" (Slurm's INFINITE and NO_VAL, 32-bit).
_RAW_NO_LIMIT = {4294967295, 4294967294}
#: ConsumedEnergyRaw values from here up are "no value" (:func:`parse_energy`): 2**63 (J).
_ENERGY_UNSET_FROM = float(2 ** 63)


def parse_timestamp(text: str | None, field: str = "time") -> datetime | None:
    """Naive datetime of a sacct time stamp, None for Unknown/None/empty (:data:`_MISSING`).
    Raises ValueError naming ``field`` for another shape or an impossible date (``2024-02-30``)."""
    return parse_naive_timestamp(text, field, _MISSING)


#: Largest array task index Slurm can give: ``MaxArraySize`` (slurm.conf) may not exceed 4000001 and
#: task indexes are below it (https://slurm.schedmd.com/slurm.conf.html#OPT_MaxArraySize,
#: https://slurm.schedmd.com/job_array.html).
MAX_ARRAY_INDEX = 4000000


def expand_array_spec(spec: str) -> list[int]:
    """Task ids of a pending array remainder ``5-10%2`` / ``5,7,9-10`` / ``1-9:2`` (in the order
    listed, each once). Raises ValueError for another shape, a step of 0, a range whose end is before
    its start, an index above :data:`MAX_ARRAY_INDEX` or more than ``MAX_ARRAY_INDEX + 1`` tasks in
    all (no Slurm array has them: such a spec is corrupt, and expanding it would take without bound)."""
    body = spec.split("%", 1)[0]
    ranges: list[range] = []
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
        if hi > MAX_ARRAY_INDEX:
            raise ValueError(f"array task spec {spec!r}: index {hi:,} is above {MAX_ARRAY_INDEX:,}, the largest a "
                             "Slurm array can have (MaxArraySize <= 4000001)")
        if step < 1 or hi < lo:
            raise ValueError(f"bad array task spec {spec!r}: range {part!r} is empty or has step 0")
        ranges.append(range(lo, hi + 1, step))
    if sum(len(r) for r in ranges) > MAX_ARRAY_INDEX + 1:
        raise ValueError(f"array task spec {spec!r} lists more than {MAX_ARRAY_INDEX + 1:,} tasks, more than a Slurm "
                         "array can have (MaxArraySize <= 4000001)")
    if len(ranges) == 1:
        return list(ranges[0])
    out: list[int] = []
    seen: set[int] = set()
    for r in ranges:
        for t in r:
            if t not in seen:
                seen.add(t)
                out.append(t)
    return out


def parse_energy(text: str | None) -> tuple[float | None, bool]:
    """``(joules or None, unset)`` of a ``ConsumedEnergyRaw`` value (J, an unsigned integer).

    Empty / Unknown → ``(None, False)``: nothing recorded (a pending job, a column left empty).
    ``0`` → ``(None, True)``: sacct prints 0 when no AcctGatherEnergyType plugin measured the job
    (https://slurm.schedmd.com/acct_gather.conf.html). A value >= 2**63 → ``(None, True)``: Slurm's
    NO_VAL64 (0xfffffffffffffffe) and INFINITE64 (0xffffffffffffffff) from ``slurm.h``, "no value",
    and any other value that large is a negative 64-bit counter printed unsigned, not an energy
    (2**63 J is 2.6e12 kWh). Raises ValueError for text that is not a non-negative number.
    """
    if text is None:
        return None, False
    t = text.strip()
    if t.lower() in _MISSING:
        return None, False
    if not re.fullmatch(r"\d+(\.\d+)?", t):
        raise ValueError(f"ConsumedEnergyRaw {t!r} is not an energy (a whole number of joules >= 0)")
    v = float(t)
    if v == 0 or v >= _ENERGY_UNSET_FROM:
        return None, True
    return v, False


#: Slurm's unit suffixes of a count (``convert_num_unit``, divisor 1024): K, M, G, T, P.
_COUNT_UNITS = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4, "P": 1024 ** 5}


def parse_count(text: str | None, field: str) -> int | None:
    """A count (NNodes, NCPUS …) as sacct prints it: a whole number, or, from a sacct run without
    ``--noconvert`` on older Slurm, the number in units of 1024 with a suffix (Slurm's
    ``convert_num_unit``: 1024 nodes print as ``1K``, 1536 as ``1.50K``). None for a missing value
    (:data:`_MISSING`: empty, Unknown …). Raises ValueError naming ``field`` for anything else
    (``2-4``, ``-1``) and for a suffixed value that is not a whole number (``1.23K``: sacct
    rounded it to two decimals, so the count is lost)."""
    t = (text or "").strip()
    if t.lower() in _MISSING:
        return None
    if t.isascii() and t.isdigit():
        return int(t)
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGTP])", t)
    if not m:
        raise ValueError(f"{field} {t!r} is not a count (a whole number, or one with Slurm's unit suffix K, M, G …)")
    unit = _COUNT_UNITS[m.group(2)]
    x = float(m.group(1)) * unit
    if x != int(x):
        raise ValueError(f"{field} {t!r} is {x:g} as sacct rounded it (unit {m.group(2)} = {unit:,}): not a whole number; "
                         "export with sacct --noconvert, which prints counts in full")
    return int(x)


def _header_line(trace: TraceText, pattern: re.Pattern) -> tuple[str | None, int | None]:
    """``(value, 1-based line)`` of the first leading ``#`` comment line matching ``pattern``
    (``(None, None)`` when there is none)."""
    for no, line in enumerate(trace.data[:4096].decode("utf-8", "replace").splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        if not s.startswith("#"):
            break
        m = pattern.match(s)
        if m:
            return m.group(1), no
    return None, None


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

    Raises TraceFormatError(path, line, detail) on a malformed row unless ``lenient`` (the module
    docstring, "Malformed rows"), and for a ``# dump_time:`` line that is not a time stamp or a
    ``# tz:`` line naming an unknown zone; ConfigError for an unknown zone given as ``tz``.
    """
    file_zone, tz_line = _header_line(trace, _TZ_LINE)
    if file_zone and not tz and not getattr(trace, "tz", None):
        try:  # the file's own `# tz:` line names an unknown zone: the file is wrong, say where
            zone(file_zone)
        except ConfigError as exc:
            raise TraceFormatError(trace.path, tz_line, f"# tz line: {exc}", skippable=False) from None
    tz_name, tz_where = (tz, "requested") if tz else resolve_timezone(trace, file_zone)
    tzinfo = zone(tz_name)
    dump_text, dump_line = _header_line(trace, _DUMP_LINE)
    try:
        dump_local = parse_timestamp(dump_text, "# dump_time") if dump_text is not None else None
    except ValueError as exc:
        raise TraceFormatError(trace.path, dump_line, str(exc), skippable=False) from None
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

    # Jobs in file order: job_keys[j] is job j's id, recs[job_rec[j]] its record; a pending array
    # remainder keeps ONE record for all its tasks (job_task[j] = the task id), so a 1M-task
    # remainder costs a key and two list slots per task, not a dict per task.
    recs: list[dict] = []
    job_keys: list[str] = []
    job_rec: list[int] = []
    job_task: list[float] = []
    pos: dict[str, int] = {}
    dup_example: tuple | None = None
    step_energy: dict[str, float] = {}
    step_line: dict[str, int] = {}  # job key -> the line of its first step row
    early = []  # (job key, line, seconds Start is before Submit)
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
                e, _unset = parse_energy(g(f, "consumedenergyraw"))
                key = jid.split(".", 1)[0]
                key = key.split("+", 1)[0] if "+" in key else key
                if e is not None:
                    step_energy[key] = max(step_energy.get(key, 0.0), e)
                step_line.setdefault(key, no)
                continue
            submit = parse_timestamp(g(f, "submit"), "Submit")
            if submit is None:
                raise ValueError("Submit is missing")
            start = parse_timestamp(g(f, "start"), "Start")
            end = parse_timestamp(g(f, "end"), "End")
            eligible = parse_timestamp(g(f, "eligible"), "Eligible")
            er = g(f, "elapsedraw")
            elapsed = int(er) if er and re.fullmatch(r"\d+", er) else parse_slurm_duration(g(f, "elapsed"), "Elapsed", missing_ok=True)
            tr = g(f, "timelimitraw")
            if tr and re.fullmatch(r"\d+", tr):
                tl = None if int(tr) in _RAW_NO_LIMIT else int(tr) * 60
            else:
                tl = None if tr and tr.lower() in SLURM_UNLIMITED else parse_slurm_duration(g(f, "timelimit"), "Timelimit",
                                                                                      missing_ok=True)
            nodelist = g(f, "nodelist")
            hosts = expand_hostlist(nodelist) if nodelist is not None else []
            nnodes = parse_count(g(f, "nnodes"), "NNodes")
            nnodes = len(hosts) if nnodes is None and hosts else nnodes
            if hosts and nnodes != len(hosts):
                raise ValueError(f"NNodes {nnodes} but NodeList {nodelist!r} names {len(hosts)} node(s)")
            ncpus = (parse_count(g(f, "ncpus"), "NCPUS") if g(f, "ncpus")
                     else parse_count(g(f, "alloccpus"), "AllocCPUS"))
            tres = g(f, "alloctres") or ""
            gm = re.search(r"gres/gpu=(\d+)", tres)
            gpus = int(gm.group(1)) if gm else None
            energy, energy_unset = parse_energy(g(f, "consumedenergyraw"))
            pr = g(f, "priority")
            prio = float(pr) if pr and re.fullmatch(r"-?\d+(\.\d+)?", pr) else None
            s_t, e_t = _choose_folds(start, end, elapsed, tzinfo, counts)
            if s_t is not None and e_t is not None and e_t < s_t:
                raise ValueError(f"End {g(f, 'end')} is before Start {g(f, 'start')} ({e_t - s_t:,} s, times read as "
                                 f"{tz_name})")
            base, task, pend, het = m.group("base"), m.group("task"), m.group("pend"), m.group("het")
            tasks = expand_array_spec(pend) if pend is not None else None
        except (ValueError, HostlistError) as exc:
            if not lenient:
                raise TraceFormatError(trace.path, no, str(exc)) from None
            skipped.append((no, str(exc)))
            continue
        sub_t = _local_to_utc(submit, tzinfo, 0)[0]
        if is_ambiguous(submit, tzinfo):
            counts["sacct_dst_ambiguous"] += 1
            alt = _local_to_utc(submit, tzinfo, 1)[0]
            if s_t is not None and sub_t > s_t >= alt:
                sub_t = alt
        elig_t = None if eligible is None else _local_to_utc(eligible, tzinfo, 0)[0]
        rec = dict(
            submit=int(round(sub_t)), start=s_t, end=e_t, elapsed=elapsed, time_limit=tl, nodes=nnodes,
            cpus=ncpus, gpus=gpus, hosts=hosts, energy=energy, energy_unset=energy_unset, priority=prio,
            user=g(f, "user") or None, account=g(f, "account") or None, partition=g(f, "partition") or None,
            qos=g(f, "qos") or None, job_name=g(f, "jobname"), state=g(f, "state") or None,
            exit_code=g(f, "exitcode"), eligible=None if elig_t is None else int(round(elig_t)), line=no,
            array_job_id=None, het=1, pending=False, key=None,
        )
        if tasks is not None:
            rec.update(start=None, end=None, elapsed=None, hosts=[], energy=None, energy_unset=False,
                       array_job_id=base, state=rec["state"] or "PENDING", pending=True)
            r_i = len(recs)
            recs.append(rec)
            new_keys = [f"{base}_{t}" for t in tasks]  # distinct (expand_array_spec)
            if pos.keys().isdisjoint(new_keys):  # the usual case: no task id seen before
                j0 = len(job_keys)
                pos.update(zip(new_keys, range(j0, j0 + len(new_keys))))
                job_keys.extend(new_keys)
                job_rec.extend([r_i] * len(new_keys))
                job_task.extend(map(float, tasks))
                continue
            for t in tasks:
                k = f"{base}_{t}"
                if k in pos:
                    dup_rows += 1
                    dup_example = dup_example or (k, recs[job_rec[pos[k]]]["line"], no)
                    continue
                pos[k] = len(job_keys)
                job_keys.append(k)
                job_rec.append(r_i)
                job_task.append(float(t))
            continue
        if task is not None:
            rec["array_job_id"] = base
            key = f"{base}_{task}"
        else:
            key = base
        rec["key"] = key
        if key in pos:
            prev = recs[job_rec[pos[key]]]
            if het is not None and not prev["pending"]:
                _merge_het(prev, rec)
            else:  # e.g. `sacct -D` lists every requeue of a job: the first row is kept
                dup_rows += 1
                dup_example = dup_example or (key, prev["line"], no)
            continue
        if s_t is not None and s_t < rec["submit"]:
            early.append((key, no, rec["submit"] - s_t))
        pos[key] = len(job_keys)
        job_keys.append(key)
        job_rec.append(len(recs))
        job_task.append(float(task) if task is not None else np.nan)
        recs.append(rec)
    # assemble: per-record values (few) gathered to per-job arrays (job_rec)
    n = len(job_keys)
    rid = np.asarray(job_rec, dtype=np.int64)
    for r in recs:  # no energy on the allocation: the largest of its steps (steps overlap)
        if r["energy"] is None and r["key"] in step_energy:
            r["energy"], r["energy_unset"] = step_energy[r["key"]], False
    names = sorted({h for r in recs for h in r["hosts"]}, key=natural_key)
    idx = NodeIndex(names)
    epoch = min((r["submit"] for r in recs), default=0)

    def arr(field, default=np.nan):
        per_rec = np.array([default if r[field] is None else r[field] for r in recs], dtype="float64")
        return per_rec[rid] if n else np.zeros(0, dtype="float64")

    def objs(values):
        per_rec = obj_array(values)
        return per_rec[rid] if n else np.empty(0, dtype=object)

    submit = arr("submit") - epoch
    start = arr("start") - epoch
    end = arr("end") - epoch
    elapsed = arr("elapsed")
    # End − Start; a started job without an end was still running at the dump: the Elapsed it had
    # reached (else core.workload.mark_running_at_dump takes dump − start); without a start, no run
    run = np.where(np.isfinite(start) & np.isfinite(end), end - start,
                   np.where(np.isfinite(start), elapsed, np.nan))
    n_mismatch, mismatch_msg = check_elapsed(trace.path, job_keys, start, end, elapsed, tz_name, tz_where)
    dump_t = None
    if dump_local is not None:
        dump_t = int(round(_local_to_utc(dump_local, tzinfo, 0)[0])) - int(epoch)
    energy = arr("energy")
    with np.errstate(divide="ignore", invalid="ignore"):
        avgp = np.where(np.isfinite(energy) & (run > 0), energy / run, np.nan)
    nodes = arr("nodes")
    cols = {
        "job_id": np.array(job_keys, dtype=object) if n else np.empty(0, dtype=object),
        "trace_index": np.arange(n, dtype=np.int64),
        "user": objs([r["user"] for r in recs]),
        "account": objs([r["account"] for r in recs]),
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
        "partition": objs([r["partition"] for r in recs]),
        "status": objs([status_from_slurm(r["state"]) for r in recs]),
        "node_ids": objs([idx.ids(r["hosts"]) if r["hosts"] else None for r in recs]),
        "cpus": int_or_na(arr("cpus")),
        "gpus": int_or_na(arr("gpus")),
        "job_name": objs([r["job_name"] for r in recs]),
        "qos": objs([r["qos"] for r in recs]),
        "eligible_time": int_or_na(arr("eligible") - epoch),
        "elapsed": int_or_na(elapsed),
        "sacct_state": objs([r["state"] for r in recs]),
        "exit_code": objs([r["exit_code"] for r in recs]),
        "hosts": objs([list(r["hosts"]) or None for r in recs]),
        "array_job_id": objs([r["array_job_id"] for r in recs]),
        "array_task_id": int_or_na(np.asarray(job_task, dtype="float64")),
        "het_components": np.array([r["het"] for r in recs], dtype=np.int64)[rid] if n else np.zeros(0, np.int64),
    }
    warnings = [mismatch_msg] if mismatch_msg else []
    unset = [r for r in recs if r["energy_unset"] and r["energy"] is None]
    if unset:
        warnings.append(
            f"{trace.path}: {len(unset):,} job(s) have no recorded energy (ConsumedEnergyRaw 0, i.e. no energy "
            f"plugin, or Slurm's NO_VAL64/INFINITE64 'no value'), e.g. job {unset[0]['key']} (line {unset[0]['line']}): "
            "their power comes from the system's node power model")
    if dup_rows:
        k, first, again = dup_example
        warnings.append(
            f"{trace.path}: {dup_rows:,} row(s) repeat a job id already read and were dropped (the first row of each "
            f"job is kept; `sacct -D` lists every requeue), e.g. job {k}: line {first} kept, line {again} dropped")
    step_only = [(k, no) for k, no in step_line.items() if k not in pos]
    if step_only:
        k, no = step_only[0]
        warnings.append(
            f"{trace.path}: {len(step_only):,} job(s) appear only as job steps, without their allocation row (sacct "
            f"prints one per job: its submit, size and limit), so they are not loaded, e.g. job {k} (its first step "
            f"row: line {no}); a --name or --state filter of sacct leaves allocation rows out, and so does a dump cut "
            "short at its top")
    if early:
        k, line_no, ds = early[0]
        warnings.append(
            f"{trace.path}: {len(early):,} job(s) have Start before Submit, e.g. job {k} (line {line_no}): Start is "
            f"{ds:,} s before Submit; kept as recorded (the twin submits each job at its Submit and runs it for "
            f"End − Start); the times were read as {tz_name} ({tz_where})")
    header = {"sacct_timezone": tz_name, "timezone_source": tz_where, "sacct_step_rows": step_rows,
              "sacct_step_only_jobs": len(step_only),
              "sacct_duplicate_rows": dup_rows, "sacct_node_names": names, "elapsed_mismatch": n_mismatch,
              "sacct_energy_unset": len(unset), "sacct_start_before_submit": len(early), **counts}
    return Workload(
        jobs=jobs_frame(cols), epoch=int(epoch), checksum=trace.checksum, source=trace.path, format="sacct",
        header=header, procs_unit="nodes", skipped_lines=skipped, provenance=PROVENANCE,
        dump_time=dump_t, timezone=tz_name, warnings=warnings,
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
    # a component whose energy is unset (0 / NO_VAL64: not measured) leaves the job's total unknown
    a["energy_unset"] = a["energy_unset"] or b["energy_unset"]
    a["energy"] = None if a["energy_unset"] else add(a["energy"], b["energy"])
    a["hosts"] = a["hosts"] + [h for h in b["hosts"] if h not in a["hosts"]]
    if (a["state"] or "").upper().startswith("COMPLETED") and b["state"] and not b["state"].upper().startswith("COMPLETED"):
        a["state"] = b["state"]
    a["het"] += 1


register_loader("sacct", detect_sacct, load_sacct)
