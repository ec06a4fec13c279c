"""Errors raised by the twin. Every error names the file, line, field or option at fault."""

from __future__ import annotations

import difflib
import warnings


class TwinError(Exception):
    """Base class of every error the twin raises on bad input."""


class TraceFormatError(TwinError, ValueError):
    """A trace file cannot be read: names the file and (when known) the 1-based line.

    Attributes: ``path`` (str), ``line`` (int or None), ``detail`` (str), ``skippable`` (bool:
    a job line that lenient reading may skip; False for a header line, which it never skips).
    """

    def __init__(self, path: str, line: int | None, detail: str, skippable: bool = True):
        self.path, self.line, self.detail, self.skippable = str(path), line, detail, skippable
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {detail}")

    def __reduce__(self):  # picklable across processes (a worker's error reaches the driver)
        return (type(self), (self.path, self.line, self.detail, self.skippable))


class ConfigError(TwinError, ValueError):
    """A run option, system file or name is invalid: names the key and the allowed values."""


class UnknownNameError(ConfigError):
    """An unknown name (policy, backfill, system, format, metric, ...): lists the valid names, then
    ``hint`` (text appended as is, e.g. ``"; close names: ..."``), then the valid names closest
    to ``name`` when there are (``"; did you mean 'sjf'?"``: :func:`difflib.get_close_matches`,
    its default cutoff 0.6, at most 3)."""

    def __init__(self, kind: str, name: str, valid, hint: str = ""):
        self.kind, self.name, self.valid, self.hint = kind, name, sorted(valid), hint
        close = difflib.get_close_matches(str(name).strip("'\""), [str(v) for v in self.valid], n=3)
        mean = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        super().__init__(f"unknown {kind} {name!r}; valid {kind} names: {', '.join(self.valid)}{hint}{mean}")

    def __reduce__(self):  # picklable across processes (a worker's error reaches the driver)
        return (type(self), (self.kind, self.name, self.valid, self.hint))


class DiskFullError(TwinError, OSError):
    """The disk (or the user's quota) is full: a file could not be written. Names the file; what was
    written before is kept complete (every output is written atomically, see ``core/atomic.py``)."""

    def __init__(self, message: str):
        import errno

        OSError.__init__(self, errno.ENOSPC, message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):  # picklable across processes (a worker's error reaches the driver)
        return (type(self), (self.message,))


class ClairvoyanceError(TwinError, AttributeError):
    """A scheduler plug-in asked for what a real scheduler cannot know at decision time (a job's
    run time, recorded start or end, energy, ...; DESIGN.md §3.3). Names the attribute and what the
    scheduler may read instead. An AttributeError, so ``hasattr(view, "run_time")`` is False."""


class ProtocolError(TwinError):
    """An external scheduler broke the protocol (docs/protocol.md): a malformed reply, an
    impossible decision (a job not queued, too many nodes, busy or unknown nodes, a wake-up time
    not after now), or the child process exited. Quotes the offending reply and names the
    scheduler and the simulated time; the run stops."""


class PluginError(TwinError, RuntimeError):
    """A plug-in broke its contract while it ran (a policy key that is NaN or not a number, a
    backfill variant whose ``select`` returned something other than a list of distinct queued jobs
    that fit): names the plug-in, the simulated time and the job or value at fault. A
    RuntimeError as well (a bug in the plug-in, not in the run's inputs)."""


#: The errors of a run's own inputs (a bad option, system file or name, an unreadable trace) or of
#: a plug-in's contract (a scheduler reading what it cannot know, a policy or backfill variant
#: breaking its rules), subclasses included. A run is deterministic (same config and seed, same
#: bytes), so a run that raised one of them raises it again at every attempt: a sweep does not
#: retry it (``backends.base.call_safely`` sets ``Outcome.deterministic`` from ``isinstance``).
#: Not among them, so retried: OSErrors (a full disk stops the sweep instead), MemoryError and
#: RecursionError (also raised inside a plug-in: ``core.registry.PASSED_THROUGH``), ProtocolError,
#: a worker that died, any other exception outside a plug-in.
INPUT_ERRORS: tuple[type[TwinError], ...] = (ConfigError, TraceFormatError, PluginError, ClairvoyanceError)


class RunWarning(UserWarning):
    """A warning a plug-in or the engine raises about one run's inputs while it runs (e.g. an
    accounts table that cannot order the run's jobs): :func:`core.run.simulate` records its message
    in the run's ``warnings`` (manifest.json, the sweep's tables) as well as letting it through, so
    that a warning raised in a sweep's worker process is not lost with that process's stderr."""



def let_through(caught: list) -> None:
    """Warn again each warning ``warnings.catch_warnings(record=True)`` recorded (``caught``: its
    list of ``warnings.WarningMessage``), as it was raised — category, file, line — as if it had
    not been recorded: :func:`core.run.simulate` records its RunWarnings and lets every warning
    through; :func:`sweep.runner.execute_run` lets a run's through where no driver collects them."""
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
