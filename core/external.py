"""External schedulers over a protocol (docs/protocol.md): the twin simulates, another program decides.

At each scheduling pass the twin sends one message — ``now``, the events since the last message
(submissions with their requests, ends, cancellations, availability changes, requested calls)
and the free resources — and the scheduler replies with its decisions (start job X now,
optionally on nodes Y; reject X with a reason) and optional wake-up calls. Modelled on Batsim's
protocol (docs/protocol.rst of oar-team/batsim: one message per scheduling point with ``now`` and
time-ordered events; decisions cannot be in the past; the same protocol as a library call or
over a socket). Two transports carry the one protocol:

* :class:`ProcessTransport` — a child process speaking JSON lines over its stdin/stdout (a
  scheduler in any language): ``scheduler = "python studies/schedulers/fcfs_easy.py"``;
* :class:`InProcessTransport` — a Python object with ``handle(message: dict) -> dict``, given as
  ``scheduler = "inproc:MODULE:NAME"`` (``MODULE`` a dotted module name or a ``.py`` file path;
  ``NAME`` a class, called without arguments, or an object).

:class:`ExternalScheduler` implements the engine's scheduler contract (:mod:`core.scheduler`)
over a transport and checks every decision; an impossible one raises
:class:`~twinsweep.core.errors.ProtocolError` quoting the reply. The scheduler sees what a real
one would: requests, limits, submit times, owners, priorities, and ends when they happen —
never a run time (the process boundary makes this airtight).
"""

from __future__ import annotations

import heapq
import importlib
import importlib.util
import json
import math
import os
import select
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from .errors import ConfigError, ProtocolError
from .jobview import JobView, SchedulerContext
from .registry import raised_at

__all__ = ["PROTOCOL_VERSION", "ExternalScheduler", "ProcessTransport", "InProcessTransport", "connect",
           "check_scheduler", "parse_node_set", "format_node_set"]

#: Version of the protocol (docs/protocol.md), sent in ``SIMULATION_BEGINS``.
PROTOCOL_VERSION = 1

#: Decision types a reply may hold.
DECISIONS = ("EXECUTE_JOB", "REJECT_JOB", "CALL_ME_LATER")
#: Keys a reply may hold (docs/protocol.md, "Replies"); any other is a ProtocolError.
REPLY_KEYS = ("events", "now", "options")

_QUOTE_MAX = 400  # characters of a reply quoted in an error

#: Seconds the twin waits for one reply of a child-process scheduler before it stops the run with a
#: ProtocolError (a hung or deadlocked scheduler; :class:`ProcessTransport` ``reply_timeout``). Ten
#: minutes: far above any real scheduling pass (Slurm's own backfill cycle is capped at
#: ``bf_max_time``, default 30 s; slurm.conf(5)), so only a scheduler that stopped answering meets it.
REPLY_TIMEOUT_S = 600.0
#: Environment variable that overrides :data:`REPLY_TIMEOUT_S` for runs started from the CLI or a
#: sweep (seconds > 0; it does not change a run's results, so it is not part of the run identity).
TIMEOUT_ENV = "TWINSWEEP_SCHEDULER_TIMEOUT_S"


def _quote(text: str) -> str:
    text = text.rstrip("\n")
    return text if len(text) <= _QUOTE_MAX else text[:_QUOTE_MAX] + f"... ({len(text)} characters)"


def format_node_set(ranges) -> str:
    """Inclusive ``(first, last)`` ranges as an interval set: ``[(0, 3), (7, 7)]`` -> ``"0-3 7"``."""
    return " ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges)


def parse_node_set(v) -> list[int]:
    """Node ids from an interval set (``"0-3 7"``) or a list of ints. Raises ValueError."""
    if isinstance(v, str):
        out: list[int] = []
        for part in v.split():
            a, sep, b = part.partition("-")
            if not a.isdigit() or (sep and not b.isdigit()):
                raise ValueError(f"not an interval set of node ids: {v!r}")
            lo, hi = int(a), int(b) if sep else int(a)
            if hi < lo:
                raise ValueError(f"empty range {part!r} in {v!r}")
            out.extend(range(lo, hi + 1))
        return out
    if isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        return list(v)
    raise ValueError(f"alloc must be an interval set such as \"0-3 7\" or a list of node ids, got {v!r}")


# -- transports --------------------------------------------------------------------------------------
class ProcessTransport:
    """A child process speaking the protocol as JSON lines: one message per line on its stdin, one
    reply per line on its stdout (flushed after each). Its stderr goes to a temporary file whose
    last lines are quoted when it fails.

    Args: ``argv`` (the command as a list), ``label`` (the command as written, for messages),
    ``reply_timeout`` (s, > 0; default :data:`REPLY_TIMEOUT_S`): the longest wait for one reply.
    Raises ConfigError when the command cannot be started.
    """

    def __init__(self, argv: list[str], label: str | None = None, reply_timeout: float = REPLY_TIMEOUT_S):
        if not reply_timeout > 0:
            raise ConfigError(f"scheduler reply timeout: expected seconds > 0, got {reply_timeout!r}")
        self.label = label or shlex.join(argv)
        self.reply_timeout = float(reply_timeout)
        self._err = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        try:
            # binary pipes, unbuffered reads: replies are read from the file descriptor into our own
            # line buffer, so a wait for the next line can time out (select) without data hidden in
            # a Python-side buffer
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err,
                                         bufsize=0)
        except OSError as exc:
            self._err.close()
            raise ConfigError(f"scheduler {self.label!r}: cannot start it ({exc.strerror or exc})") from None
        self._out_fd = self.proc.stdout.fileno()
        self._buf = b""

    def _readline(self, now) -> bytes:
        """The child's next reply line (with its newline), b"" at end of output. Raises ProtocolError
        when no full line arrives within ``reply_timeout`` (the child is killed)."""
        while b"\n" not in self._buf:
            ready, _, _ = select.select([self._out_fd], [], [], self.reply_timeout)
            if not ready:
                self.proc.kill()
                raise ProtocolError(f"external scheduler {self.label!r} did not reply to the message at now = {now} "
                                    f"within {self.reply_timeout:g} s (stopped){self._stderr_tail()}")
            chunk = os.read(self._out_fd, 1 << 16)
            if not chunk:
                line, self._buf = self._buf, b""
                return line
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line + b"\n"

    def _stderr_tail(self) -> str:
        try:
            self._err.seek(0)
            lines = self._err.read().strip().splitlines()[-5:]
        except (OSError, ValueError):
            return ""
        return ("; its last stderr lines: " + " | ".join(lines)) if lines else ""

    def _died(self, what: str) -> ProtocolError:
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        status = f"exited with status {code}" if code is not None else "closed its output"
        return ProtocolError(f"external scheduler {self.label!r} {status} {what}{self._stderr_tail()}")

    def exchange(self, message: dict) -> tuple[Any, str]:
        """Send ``message``, return ``(reply, reply text)``. Raises ProtocolError when the child
        exits, does not reply within ``reply_timeout``, or its reply is not one JSON object on one
        line (UTF-8)."""
        line = json.dumps(message, separators=(",", ":"))
        try:
            data = memoryview((line + "\n").encode("utf-8"))
            while data:  # an unbuffered pipe write may take part of a long message
                data = data[self.proc.stdin.write(data):]
        except (BrokenPipeError, OSError):
            raise self._died(f"before the message at now = {message.get('now')}") from None
        raw = self._readline(message.get("now"))
        text = raw.decode("utf-8", errors="replace")
        if not raw:
            raise self._died(f"without replying to the message at now = {message.get('now')}")
        try:
            return json.loads(text), text
        except json.JSONDecodeError as exc:
            raise ProtocolError(f"external scheduler {self.label!r}: its reply to the message at now = "
                                f"{message.get('now')} is not JSON ({exc.msg}): {_quote(text)!r}") from None

    def close(self) -> None:
        """Close the child's stdin and wait for it (killed after 5 s)."""
        p = self.proc
        try:
            if p.stdin and not p.stdin.closed:
                p.stdin.close()
        except OSError:
            pass
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        for f in (p.stdout, self._err):
            try:
                f.close()
            except OSError:
                pass


class InProcessTransport:
    """An object in this process speaking the protocol: ``obj.handle(message: dict) -> dict``
    (the same messages and replies as the JSON lines, as Python dicts)."""

    def __init__(self, obj, label: str | None = None):
        if not callable(getattr(obj, "handle", None)):
            raise ConfigError(f"scheduler {label or obj!r}: an in-process scheduler needs a handle(message) method")
        self.obj = obj
        self.label = label or type(obj).__name__

    def exchange(self, message: dict) -> tuple[Any, str | None]:
        """``obj.handle(message)``. An exception raised by the scheduler's own code is a
        ProtocolError naming the scheduler, the exception and where it was raised (as a child
        process that crashes is), not a traceback through the twin."""
        try:
            return self.obj.handle(message), None
        except ProtocolError:
            raise
        except Exception as exc:  # noqa: BLE001 - the scheduler's own failure, named and re-raised
            raise ProtocolError(f"external scheduler {self.label!r} raised {type(exc).__name__}: {exc}{raised_at(exc)} "
                                f"while handling the message at now = {message.get('now')}") from exc

    def close(self) -> None:
        close = getattr(self.obj, "close", None)
        if callable(close):
            close()


def _load_inproc(spec: str):
    """The object named by ``inproc:MODULE:NAME`` (a class is called without arguments)."""
    rest = spec[len("inproc:"):]
    mod_name, sep, attr = rest.rpartition(":")
    if not sep or not mod_name or not attr:
        raise ConfigError(f"scheduler {spec!r}: expected inproc:MODULE:NAME (a module or .py file, and a name in it)")
    if mod_name.endswith(".py"):
        path = Path(mod_name)
        if not path.is_file():
            raise ConfigError(f"scheduler {spec!r}: no file {path}")
        loader_spec = importlib.util.spec_from_file_location(f"_twinsweep_sched_{path.stem}", path)
        module = importlib.util.module_from_spec(loader_spec)
        try:
            loader_spec.loader.exec_module(module)
        except Exception as exc:  # a broken scheduler file: one clear error
            raise ConfigError(f"scheduler {spec!r}: cannot load {path} ({type(exc).__name__}: {exc})") from None
    else:
        try:
            module = importlib.import_module(mod_name)
        except ImportError as exc:
            raise ConfigError(f"scheduler {spec!r}: cannot import {mod_name!r} ({exc})") from None
    try:
        obj = getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"scheduler {spec!r}: {mod_name} has no {attr!r}") from None
    return obj() if isinstance(obj, type) else obj


def _argv(spec: str) -> list[str]:
    try:
        argv = shlex.split(spec)
    except ValueError as exc:
        raise ConfigError(f"scheduler {spec!r}: not a command line ({exc})") from None
    if not argv:
        raise ConfigError("scheduler: empty command")
    return argv


def check_scheduler(spec: Any) -> None:
    """Check a run's ``scheduler`` value without starting it (spec loading, :func:`core.run.simulate`).

    A command line: its program must exist (on PATH, or as an executable file), and when the
    program is a Python interpreter, its script argument must be a file. ``inproc:MODULE:NAME``:
    the module (or file) must load and hold ``NAME``. Raises ConfigError naming the value and what
    is missing.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"scheduler: expected a command line or inproc:MODULE:NAME, got {spec!r}")
    if spec.startswith("inproc:"):
        _load_inproc(spec)
        return
    argv = _argv(spec)
    prog = argv[0]
    found = shutil.which(prog)
    if found is None:
        where = "is not an executable file" if os.sep in prog else "is not found on PATH"
        raise ConfigError(f"scheduler {spec!r}: the program {prog!r} {where}")
    if Path(prog).name.startswith("python"):
        script = next((a for a in argv[1:] if not a.startswith("-")), None)
        if "-c" not in argv[1:] and "-m" not in argv[1:] and script is not None and not Path(script).is_file():
            raise ConfigError(f"scheduler {spec!r}: no script file {script!r} (relative to {os.getcwd()})")


def reply_timeout_s() -> float:
    """The reply timeout of child-process schedulers: ``$TWINSWEEP_SCHEDULER_TIMEOUT_S`` (seconds
    > 0) when set, else :data:`REPLY_TIMEOUT_S`. Raises ConfigError for a value that is not a
    positive number."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return REPLY_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not (value > 0 and math.isfinite(value)):
        raise ConfigError(f"${TIMEOUT_ENV}={raw!r}: expected the seconds to wait for a scheduler's reply (> 0)")
    return value


def connect(spec: Any, reply_timeout: float | None = None):
    """A transport for a run's ``scheduler``: a command line (:class:`ProcessTransport`, waiting at
    most ``reply_timeout`` s for each reply; default :func:`reply_timeout_s`), ``inproc:MODULE:NAME``
    or an object with ``handle`` (:class:`InProcessTransport`), or a transport (an object with
    ``exchange`` and ``close``) as it is. Raises ConfigError."""
    if isinstance(spec, str):
        if spec.startswith("inproc:"):
            return InProcessTransport(_load_inproc(spec), spec)
        check_scheduler(spec)
        return ProcessTransport(_argv(spec), spec,
                                reply_timeout=reply_timeout_s() if reply_timeout is None else reply_timeout)
    if callable(getattr(spec, "exchange", None)) and callable(getattr(spec, "close", None)):
        return spec
    return InProcessTransport(spec)


# -- the scheduler of the engine ------------------------------------------------------------------------
class ExternalScheduler:
    """The engine's scheduler contract (:mod:`core.scheduler`) over a protocol transport.

    Args: ``jobs`` (the run's :class:`~twinsweep.core.jobview.JobView`), ``context`` (system size,
    default limit, kill), ``transport`` (:func:`connect`).

    Attributes: ``rejected`` (job -> reason given by the scheduler; the engine reports those jobs
    ``rejected``), ``stats`` (``external_messages``: messages exchanged). Every method may raise
    :class:`~twinsweep.core.errors.ProtocolError`.
    """

    def __init__(self, jobs: JobView, context: SchedulerContext, transport):
        self.jobs = jobs
        self.context = context
        self.transport = transport
        self.label = getattr(transport, "label", "external")
        self.rejected: dict[int, str] = {}
        self.stats = {"external_messages": 0}
        self._queued: dict[int, None] = {}  # insertion-ordered set: submission order
        self._events: list[dict] = []
        self._began = False
        self._node_ids = False
        self._wakes: list[int] = []  # requested calls not yet made (heap)
        self._n = len(jobs)

    # -- events the engine reports -------------------------------------------------------------------
    def _job_data(self, job: int) -> dict:
        v = self.jobs
        pr = v.priority[job]
        return {"job_id": job, "trace_job_id": v.job_id[job], "nodes": v.nodes[job], "time_limit": v.time_limit[job],
                "time_limit_imputed": v.time_limit_imputed[job], "submit_time": v.submit[job],
                "user": v.user[job], "account": v.account[job], "partition": v.partition[job],
                "priority": None if pr is None or (isinstance(pr, float) and math.isnan(pr)) else pr,
                "trace_index": v.trace_index[job]}

    def submit(self, job: int, now: int):
        self._queued[job] = None
        self._events.append({"timestamp": now, "type": "JOB_SUBMITTED", "data": self._job_data(job)})
        return None

    def job_prepopulated(self, job: int, start: int) -> None:
        """A job already running at the window start (placed at its recorded start by the engine)."""
        data = self._job_data(job)
        data["start_time"] = start
        self._events.append({"timestamp": start, "type": "JOB_RUNNING", "data": data})

    def job_ended(self, job: int, now: int) -> None:
        self._events.append({"timestamp": now, "type": "JOB_ENDED", "data": {"job_id": job}})

    def cancel(self, job: int, now: int) -> bool:
        if job not in self._queued:
            return False
        del self._queued[job]
        self._events.append({"timestamp": now, "type": "JOB_CANCELLED", "data": {"job_id": job}})
        return True

    def nodes_down(self, count: int, until: int, now: int) -> None:
        self._events.append({"timestamp": now, "type": "NODES_DOWN", "data": {"count": count, "until": until}})

    def nodes_up(self, count: int, until: int, now: int) -> None:
        self._events.append({"timestamp": now, "type": "NODES_UP", "data": {"count": count, "until": until}})

    def queued(self) -> int:
        return len(self._queued)

    def queue(self) -> list[int]:
        return list(self._queued)

    # -- one message per pass ------------------------------------------------------------------------
    def _message(self, now: int, cluster, extra: list[dict] = ()) -> dict:
        events = self._events
        self._events = []
        while self._wakes and self._wakes[0] <= now:
            w = heapq.heappop(self._wakes)
            if not self._wakes or self._wakes[0] != w:
                events.append({"timestamp": w, "type": "REQUESTED_CALL", "data": {}})
        if not self._began:
            self._began = True
            c = self.context
            events.insert(0, {"timestamp": now, "type": "SIMULATION_BEGINS", "data": {
                "protocol": PROTOCOL_VERSION, "nodes": cluster.total_nodes, "time_unit": "s", "kill": c.kill,
                "default_time_limit": c.default_time_limit, "source": c.source}})
        events.extend(extra)
        msg = {"now": now, "free_nodes": cluster.free_nodes, "events": events}
        if self._node_ids:
            msg["free_node_ids"] = format_node_set(cluster.free_node_ranges())
        return msg

    def _send(self, msg: dict):
        reply, text = self.transport.exchange(msg)
        self.stats["external_messages"] += 1
        return reply, text

    def _error(self, now: int, what: str, reply, text) -> ProtocolError:
        if text is None:
            try:
                text = json.dumps(reply, default=repr)
            except (TypeError, ValueError):
                text = repr(reply)
        return ProtocolError(f"external scheduler {self.label!r} at now = {now}: {what}; its reply: {_quote(text)!r}")

    def _decisions(self, now: int, reply, text) -> list[dict]:
        if not isinstance(reply, dict):
            raise self._error(now, "a reply must be a JSON object", reply, text)
        unknown = sorted(str(k) for k in reply if k not in REPLY_KEYS)
        if unknown:  # a misspelt "events" would otherwise be a reply without decisions: nothing starts, silently
            raise self._error(now, f"unknown reply key(s) {unknown} (valid: {', '.join(REPLY_KEYS)})", reply, text)
        if "now" in reply and reply["now"] != now:
            raise self._error(now, f"reply 'now' is {reply['now']!r}; decisions are taken at now = {now} "
                                   "(never in the past, and they take no simulated time)", reply, text)
        if self.stats["external_messages"] == 1 and isinstance(reply.get("options"), dict):
            self._node_ids = bool(reply["options"].get("free_node_ids", False))
        events = reply.get("events", [])
        if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
            raise self._error(now, "'events' must be a list of objects", reply, text)
        for e in events:
            if e.get("type") not in DECISIONS:
                raise self._error(now, f"unknown decision type {e.get('type')!r} (valid: {', '.join(DECISIONS)})",
                                  reply, text)
            if "timestamp" in e and e["timestamp"] != now:
                raise self._error(now, f"decision timestamp {e['timestamp']!r} is not now ({now}): decisions "
                                       "cannot be in the past or the future", reply, text)
            if not isinstance(e.get("data", {}), dict):
                raise self._error(now, "a decision's 'data' must be an object", reply, text)
        return events

    def _job_of(self, now: int, data: dict, reply, text) -> int:
        job = data.get("job_id")
        if isinstance(job, bool) or not isinstance(job, int):
            raise self._error(now, f"job_id must be an integer, got {job!r}", reply, text)
        if job not in self._queued:
            state = "not a job of this run" if not 0 <= job < self._n else "not queued (not submitted yet, already " \
                                                                             "started, rejected or cancelled)"
            raise self._error(now, f"job {job} is {state}", reply, text)
        return job

    def schedule(self, now: int, cluster):
        """Send the message of this pass, apply the decisions through ``cluster``; returns the
        earliest requested call still to come (s) or None."""
        reply, text = self._send(self._message(now, cluster))
        for e in self._decisions(now, reply, text):
            data = e.get("data", {})
            kind = e["type"]
            if kind == "CALL_ME_LATER":
                t = data.get("timestamp")
                if isinstance(t, bool) or not isinstance(t, int) or t <= now:
                    raise self._error(now, f"CALL_ME_LATER timestamp must be an integer time after now ({now}), "
                                           f"got {t!r}", reply, text)
                heapq.heappush(self._wakes, t)
                continue
            job = self._job_of(now, data, reply, text)
            if kind == "REJECT_JOB":
                reason = data.get("reason", "")
                del self._queued[job]
                self.rejected[job] = f"rejected by the external scheduler: {reason}" if reason else \
                    "rejected by the external scheduler"
                continue
            need = self.jobs.nodes[job]
            if need > cluster.free_nodes:
                raise self._error(now, f"job {job} needs {need} nodes; {cluster.free_nodes} are free", reply, text)
            ids = None
            if data.get("alloc") is not None:
                try:
                    ids = parse_node_set(data["alloc"])
                except ValueError as exc:
                    raise self._error(now, str(exc), reply, text) from None
            try:
                cluster.start(job, ids)
            except ValueError as exc:
                raise self._error(now, str(exc), reply, text) from None
            del self._queued[job]
        return self._wakes[0] if self._wakes else None

    def finish(self, now: int) -> None:
        """The run is over: send ``SIMULATION_ENDS`` (the reply must hold no decision)."""
        if not self._began:
            return
        msg = {"now": now, "free_nodes": None, "events": self._events + [
            {"timestamp": now, "type": "SIMULATION_ENDS", "data": {}}]}
        self._events = []
        reply, text = self._send(msg)
        if not isinstance(reply, dict) or reply.get("events"):
            raise self._error(now, "the reply to SIMULATION_ENDS must be an object without decisions", reply, text)

    def close(self) -> None:
        self.transport.close()
